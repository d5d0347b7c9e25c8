//! The four tools the proxy exposes (`mcp_search`, `mcp_describe`, `mcp_call`,
//! `mcp_refresh`): their fixed definitions, a call parsed once into a typed request, and the
//! typed outcome of each, computed over a catalog [`Snapshot`].
//!
//! # Layout
//!
//! - [`definitions`]: the four tools' names, `tools/list` definitions and argument bounds;
//!   [`names`]: checks of a client's tool name, and the closest names of an unknown one.
//! - [`request`]: [`ToolRequest::parse`]: tool name + JSON arguments → [`ToolRequest`] or a
//!   [`UsageError`] the model can act on. The only place the arguments' JSON is read.
//! - [`search`]: `mcp_search` (lexical, or hybrid with the semantic arm's vectors passed in
//!   as [`SearchVectors`]) → [`SearchAnswer`]; [`signature`]: a hit's parameters as one line
//!   a model can call from (`to: string[], subject: string, cc?: string[]`).
//! - [`describe`]: `mcp_describe` → [`DescribeAnswer`].
//! - [`call`]: `mcp_call`'s preparation (resolve → repair → validate, [`prepare`]) and how a
//!   call ended ([`CallOutcome`]).
//! - [`outcome`]: [`ToolOutcome`], the one result type of a tool call, and its rendering as
//!   the MCP tool result ([`ToolOutcome::into_result`]), the only place JSON is produced.
//!
//! What needs the network or a model (relaying a call, refreshing, embedding queries) is the
//! application's (`src/app.rs`): it sequences these pure steps with messages to the actors.
//! Errors the model can fix come back as `isError` results that say what to do next.

pub mod call;
pub mod definitions;
pub mod describe;
pub mod names;
pub mod outcome;
pub mod request;
pub mod search;
pub mod signature;

pub use call::{prepare, CallOutcome, Prepared, Rejection, UpstreamFailure, REPAIRS_META_KEY};
pub use definitions::*;
pub use describe::{describe, DescribeAnswer};
pub use names::{check_name, closest_names, BadName};
pub use outcome::{error_result, result, usage_error, RefreshOutcome, ToolOutcome, ToolResult, ERROR_TEXT_CHARS};
pub use request::{CallRequest, DescribeRequest, SearchRequest, ToolKind, ToolRequest, UsageError};
pub use search::{search, SearchAnswer, SearchVectors};

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::*;
    use crate::catalog::{Snapshot, UpstreamState};
    use mcp_wire::types::Tool;

    fn snap() -> Arc<Snapshot> {
        let tools: Vec<Tool> = serde_json::from_value(json!([
            {"name": "mail-send_message", "description": "Send an email message to recipients.", "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}}, "required": ["to"]}},
            {"name": "mail-list_messages", "description": "List email messages in the inbox.", "inputSchema": {"type": "object"}},
            {"name": "cal-create_event", "description": "Create a calendar event.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false}},
            {"name": "cal-list_events", "description": "List calendar events.", "inputSchema": {"type": "object"}}
        ]))
        .unwrap();
        Arc::new(Snapshot::build(
            vec![UpstreamState {
                label: "agg".into(),
                url: "u".into(),
                tools: tools.into_iter().map(Arc::new).collect(),
                ..Default::default()
            }],
            1,
            &Default::default(),
        ))
    }

    /// The request a valid call of `name` with `args` parses into.
    fn request(name: &str, args: Value) -> ToolRequest {
        match ToolRequest::parse(name, args, crate::catalog::PinnedNames::NONE) {
            Some(Ok(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    fn search_request(args: Value) -> SearchRequest {
        match request(SEARCH, args) {
            ToolRequest::Search(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// `mcp_search`'s tool result for `args` (lexical).
    fn search_result(s: &Arc<Snapshot>, args: Value) -> Value {
        ToolOutcome::Search(search(s, &search_request(args), None)).into_result()
    }

    #[test]
    fn search_with_vectors_reaches_tools_lexical_search_cannot() {
        let s = snap();
        // A query sharing no word with any tool: lexical search answers nothing; with a query
        // vector equal to `cal-list_events`'s, the semantic arm finds it.
        let rows: Vec<Vec<f32>> = (0..s.tools.len())
            .map(|i| (0..4).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        let doc = s.by_name["cal-list_events"];
        let vectors = tool_search::semantic::Vectors::build(s.tools.len(), 4, |i| Some(&rows[i][..]));
        let query: Arc<[f32]> = Arc::from(rows[doc].clone());
        let req = search_request(json!({"query": "what is on my agenda"}));
        assert!(search(&s, &req, None).queries[0].docs.is_empty());
        let queries = [query];
        let with = SearchVectors {
            tools: &vectors,
            queries: &queries,
        };
        let answer = search(&s, &req, Some(with));
        assert_eq!(answer.names(), vec![vec!["cal-list_events".to_string()]]);
        let r = ToolOutcome::Search(answer).into_result();
        assert_eq!(r["structuredContent"]["results"][0]["name"], "cal-list_events", "{r}");
        // vectors built for another catalog are not used
        let other = tool_search::semantic::Vectors::build(2, 4, |i| Some(&rows[i][..]));
        let with_other = SearchVectors {
            tools: &other,
            queries: &queries,
        };
        assert!(search(&s, &req, Some(with_other)).queries[0].docs.is_empty());
    }

    #[test]
    fn the_workflow_names_each_tool_by_its_role_first() {
        // a client shows the tools under a prefix (`x_mcp_search`): a bare name copied from the
        // text would be a tool the client does not know, so each is named after its role
        let descriptions: Vec<String> = definitions()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["description"].as_str().unwrap().to_owned())
            .collect();
        for text in descriptions.iter().map(String::as_str).chain([WORKFLOW]) {
            for (at, _) in text.match_indices("mcp_") {
                let before = &text[..at];
                assert!(
                    before.ends_with("tool (") || before.ends_with("e.g. x_"),
                    "a bare tool name in {text:?} at {at}"
                );
            }
        }
        for role in [
            "search tool (mcp_search)",
            "describe tool (mcp_describe)",
            "call tool (mcp_call)",
        ] {
            assert!(WORKFLOW.contains(role), "{role}");
        }
    }

    #[test]
    fn definitions_are_small_and_stable() {
        let text = definitions().to_string();
        eprintln!("tools/list: {} characters", text.len());
        assert!(text.len() <= 2000, "tools/list is {} chars", text.len());
        assert_eq!(text, definitions().to_string());
        for t in definitions().as_array().unwrap() {
            assert_eq!(t["inputSchema"]["type"], "object");
        }
    }

    #[test]
    fn search_returns_hits_with_required_params() {
        let s = snap();
        let r = search_result(&s, json!({"query": "mail-send_message"}));
        let hit = &r["structuredContent"]["results"][0];
        assert_eq!(hit["name"], "mail-send_message");
        assert_eq!(hit["source"], "mail");
        assert_eq!(hit["params"], json!("to: string, subject?: string"));
        assert!(r.get("isError").is_none());
        assert_eq!(
            r["content"][0]["text"].as_str().unwrap(),
            r["structuredContent"].to_string()
        );
    }

    #[test]
    fn search_without_hits_lists_sources_and_a_hint() {
        let s = snap();
        let answer = search(&s, &search_request(json!({"query": "xyzzy plugh"})), None);
        assert_eq!(answer.empty_queries(), 1);
        let r = ToolOutcome::Search(answer).into_result();
        let sc = &r["structuredContent"];
        assert_eq!(sc["results"], json!([]));
        assert_eq!(
            sc["available_sources"],
            json!([{"source": "cal", "tools": 2}, {"source": "mail", "tools": 2}])
        );
        assert!(sc["hint"].as_str().unwrap().contains("Rephrase"));
    }

    #[test]
    fn a_list_of_queries_is_answered_query_by_query() {
        let s = snap();
        let answer = search(
            &s,
            &search_request(json!({"query": ["mail-send_message", "xyzzy"], "limit": 1})),
            None,
        );
        assert_eq!(answer.names(), vec![vec!["mail-send_message".to_string()], vec![]]);
        assert_eq!(answer.empty_queries(), 1);
        let r = ToolOutcome::Search(answer).into_result();
        assert_eq!(r["structuredContent"]["queries"].as_array().unwrap().len(), 2);
        assert_eq!(r["structuredContent"]["queries"][1]["query"], "xyzzy");
    }

    #[test]
    fn a_usage_error_says_the_client_can_fix_it() {
        let Some(Err(e)) = ToolRequest::parse(SEARCH, json!({"query": 3}), crate::catalog::PinnedNames::NONE) else {
            panic!("a usage error")
        };
        let outcome = ToolOutcome::Usage(e);
        assert!(outcome.is_error());
        let r = outcome.into_result();
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"]["side"], "client");
    }

    #[test]
    fn describe_returns_full_definitions_and_not_found() {
        let s = snap();
        let ToolRequest::Describe(req) = request(
            DESCRIBE,
            json!({"names": ["cal-create_event", "nope", "mail-send_mesage"]}),
        ) else {
            panic!("describe")
        };
        let answer = describe(&s, &req);
        assert_eq!(answer.not_found, ["nope", "mail-send_mesage"]);
        let r = ToolOutcome::Describe(answer).into_result();
        let sc = &r["structuredContent"];
        assert_eq!(sc["tools"][0]["name"], "cal-create_event");
        assert_eq!(sc["tools"][0]["inputSchema"], json!({"type": "object"}));
        assert_eq!(sc["tools"][0]["annotations"], json!({"readOnlyHint": false}));
        assert_eq!(sc["not_found"], json!(["nope", "mail-send_mesage"]));
        assert_eq!(sc["did_you_mean"]["mail-send_mesage"][0], "mail-send_message");
    }

    #[test]
    fn a_call_is_prepared_rejected_or_unknown() {
        let s = snap();
        match prepare(&s, "Mail_Send-Message", json!({"to": "a@b"})) {
            Prepared::Ready { index, repairs, .. } => {
                assert_eq!(s.tools[index].tool.name, "mail-send_message");
                assert_eq!(repairs.len(), 1, "{repairs:?}");
            }
            other => panic!("{other:?}"),
        }
        let Prepared::Rejected { rejection, .. } = prepare(&s, "mail-send_message", json!({"subject": "x"})) else {
            panic!("rejected")
        };
        let e = rejection.to_json();
        assert_eq!(e["missing"], json!(["to"]));
        assert_eq!(e["side"], "client");
        assert_eq!(
            rejection.message(),
            "mail-send_message was not called: the required argument to is missing. Its parameters: to: string, subject?: string. Call it again with them."
        );
        assert!(matches!(prepare(&s, "nothing_like_it", json!({})), Prepared::Unknown));
        let r = CallOutcome::unknown_tool(&s, "mail-send_mesage").into_result();
        assert_eq!(r["structuredContent"]["error"]["did_you_mean"][0], "mail-send_message");
    }

    /// The text of an `isError` result: words, not a JSON document, within the bound.
    fn error_text(r: &Value) -> String {
        assert_eq!(r["isError"], true);
        let text = r["content"][0]["text"].as_str().unwrap().to_owned();
        assert!(
            serde_json::from_str::<Value>(&text).is_err(),
            "a JSON document as the text: {text}"
        );
        assert!(
            text.chars().count() <= ERROR_TEXT_CHARS,
            "{} characters: {text}",
            text.chars().count()
        );
        assert_eq!(r["structuredContent"]["error"]["message"], text.as_str());
        text
    }

    #[test]
    fn error_texts_are_sentences_within_the_bound_and_the_details_are_structured() {
        let s = snap();
        // missing and invalid arguments: the tool, what is wrong, its parameters
        let Prepared::Rejected { rejection, .. } = prepare(&s, "mail-send_message", json!({"subject": "x"})) else {
            panic!("rejected")
        };
        let out = CallOutcome::Rejected {
            upstream: "up".into(),
            tool: "mail-send_message".into(),
            rejection,
        };
        let r = out.into_result();
        let text = error_text(&r);
        assert!(
            text.starts_with("mail-send_message was not called") && text.contains("to: string"),
            "{text}"
        );
        assert!(r["structuredContent"]["error"]["inputSchema"].is_object());
        let huge = "x".repeat(5000);
        let Prepared::Rejected { rejection, .. } =
            prepare(&s, "mail-send_message", json!({"to": 5, "subject": [huge]}))
        else {
            panic!("rejected")
        };
        let r = CallOutcome::Rejected {
            upstream: "up".into(),
            tool: "mail-send_message".into(),
            rejection,
        }
        .into_result();
        let text = error_text(&r);
        assert!(
            text.contains("do not match its schema (") && text.contains("to: 5 is not of type"),
            "{text}"
        );
        assert_eq!(
            r["structuredContent"]["error"]["violations"].as_array().unwrap().len(),
            2
        );
        // an unknown tool, a failed upstream with a long error, a usage error
        let text = error_text(&CallOutcome::unknown_tool(&s, "mail-send_mesage").into_result());
        assert!(
            text.contains("\"mail-send_mesage\"") && text.contains("mail-send_message"),
            "{text}"
        );
        let r = CallOutcome::Failed(UpstreamFailure {
            upstream: "up".into(),
            tool: "mail-send_message".into(),
            error: format!("HTTP 500: {}", "trace ".repeat(500)),
            advice: "Retry later".into(),
            retryable: true,
            cancelled: false,
            client_side: false,
        })
        .into_result();
        let text = error_text(&r);
        assert!(
            text.starts_with("Upstream \"up\" failed calling mail-send_message: HTTP 500"),
            "{text}"
        );
        assert!(
            text.ends_with("Retry later."),
            "the advice survives a long error: {text}"
        );
        let Some(Err(e)) = ToolRequest::parse(SEARCH, json!({"query": 3}), crate::catalog::PinnedNames::NONE) else {
            panic!("a usage error")
        };
        let text = error_text(&ToolOutcome::Usage(e).into_result());
        assert!(
            text.starts_with("The search tool (mcp_search) did nothing: query must be"),
            "{text}"
        );
    }

    #[test]
    fn missing_required_names_each_absent_parameter() {
        let s = snap();
        let t = s.get("mail-send_message").unwrap();
        let schema = t.tool.input_schema();
        assert_eq!(
            call::missing_required(&schema, &json!({"subject": "x"})),
            vec!["to".to_string()]
        );
        assert!(call::missing_required(&schema, &json!({"to": "a@b"})).is_empty());
    }
}
