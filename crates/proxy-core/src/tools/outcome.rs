//! What a call of the proxy's tools produced, typed: the application returns a
//! [`ToolOutcome`], metrics and retrieval telemetry read it, and the HTTP layer turns it into
//! the MCP tool result ([`ToolOutcome::into_tool_result`]) at the very end.

use mcp_wire::raw::RawObject;
use serde_json::{json, Map, Value};

use super::call::CallOutcome;
use super::describe::DescribeAnswer;
use super::request::{ToolKind, UsageError};
use super::search::SearchAnswer;
use crate::catalog::report::{RefreshFailure, RefreshReport};
use crate::catalog::snapshot::clip;

/// An `isError` text is at most this many characters: a sentence or three a client can wrap
/// (`{"error": "<text>"}`) and a model can read, never a JSON document. The details (the
/// violations, the schema) are in `structuredContent`.
pub const ERROR_TEXT_CHARS: usize = 600;

/// A tool result: `content` with one text block (the structured content as JSON), plus
/// `structuredContent`.
pub fn result(structured: Value, is_error: bool) -> Value {
    let text = structured.to_string();
    let mut m = Map::new();
    m.insert("content".into(), json!([{"type": "text", "text": text}]));
    m.insert("structuredContent".into(), structured);
    if is_error {
        m.insert("isError".into(), Value::Bool(true));
    }
    Value::Object(m)
}

/// An `isError` result: `message` (what went wrong and what to do, in words, clipped to
/// [`ERROR_TEXT_CHARS`]) as the text, and `{"error": details}` with the same message as the
/// structured content.
pub fn error_result(message: &str, details: Value) -> Value {
    let text = clip(message, ERROR_TEXT_CHARS);
    let mut error = match details {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    error.insert("message".into(), Value::String(text.clone()));
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"error": error},
        "isError": true,
    })
}

/// An `isError` result for a mistake in the call that the model can correct.
pub fn usage_error(tool: ToolKind, message: &str) -> Value {
    let role = match tool {
        ToolKind::Search => "The search tool (mcp_search)",
        ToolKind::Describe => "The describe tool (mcp_describe)",
        ToolKind::Call => "The call tool (mcp_call)",
        ToolKind::Refresh => "The refresh tool (mcp_refresh)",
        ToolKind::Pinned => "The tool",
    };
    error_result(
        &format!("{role} did nothing: {}.", message.trim_end_matches('.')),
        json!({"side": "client"}),
    )
}

/// A tool result ready to be written: built by the proxy, or an upstream's, relayed with its
/// members as they came (never parsed into a tree).
#[derive(Debug)]
pub enum ToolResult {
    Built(Value),
    Relayed(RawObject),
}

/// The outcome of one call of the proxy's tools.
#[derive(Debug)]
pub enum ToolOutcome {
    Search(SearchAnswer),
    Describe(DescribeAnswer),
    Call(CallOutcome),
    Refresh(RefreshOutcome),
    /// The call's arguments were unusable; nothing was done.
    Usage(UsageError),
}

/// How `mcp_refresh` ended.
#[derive(Debug, Clone)]
pub enum RefreshOutcome {
    /// The catalog as it is now (re-listed, or not, as the report says).
    Done(RefreshReport),
    /// No upstream answered; the catalog is unchanged.
    Failed(RefreshFailure),
    /// The catalog actor is gone (the process is stopping).
    CatalogGone,
}

impl ToolOutcome {
    /// Whether the client gets an `isError` result.
    pub fn is_error(&self) -> bool {
        match self {
            ToolOutcome::Search(_) | ToolOutcome::Describe(_) => false,
            ToolOutcome::Call(c) => c.is_error(),
            ToolOutcome::Refresh(r) => !matches!(r, RefreshOutcome::Done(_)),
            ToolOutcome::Usage(_) => true,
        }
    }

    /// The MCP tool result to write: a relayed call's is the upstream's, as relayed.
    pub fn into_tool_result(self) -> ToolResult {
        match self {
            ToolOutcome::Call(CallOutcome::Relayed { result, .. }) => ToolResult::Relayed(result),
            other => ToolResult::Built(other.into_result()),
        }
    }

    /// The MCP tool result (`content`, `structuredContent`, `isError`) as a value; a relayed
    /// call's result is the upstream's, as relayed.
    pub fn into_result(self) -> Value {
        match self {
            ToolOutcome::Search(answer) => result(answer.to_json(), false),
            ToolOutcome::Describe(answer) => result(answer.to_json(), false),
            ToolOutcome::Call(outcome) => outcome.into_result(),
            ToolOutcome::Refresh(RefreshOutcome::Done(report)) => {
                result(serde_json::to_value(&report).unwrap_or(Value::Null), false)
            }
            ToolOutcome::Refresh(RefreshOutcome::Failed(failure)) => {
                let mut details = serde_json::to_value(&failure).unwrap_or(Value::Null);
                details["side"] = Value::from("upstream");
                let failed: Vec<String> = failure
                    .upstreams
                    .iter()
                    .filter(|u| !u.ok)
                    .map(|u| format!("{} ({})", u.label, u.error.as_deref().unwrap_or("no answer")))
                    .collect();
                let message = format!(
                    "The refresh changed nothing: {}. Upstreams that failed: {}. The search still answers from the last good catalog; try again later.",
                    failure.message.trim_end_matches('.'),
                    if failed.is_empty() { "none named".to_owned() } else { failed.join("; ") }
                );
                error_result(&message, details)
            }
            ToolOutcome::Refresh(RefreshOutcome::CatalogGone) => error_result(
                "The refresh did not run: the proxy is shutting down. Try again on a running instance.",
                json!({"side": "proxy"}),
            ),
            ToolOutcome::Usage(e) => usage_error(e.tool, &e.message),
        }
    }
}

impl CallOutcome {
    /// The tool result the client gets: the relayed result as it is, else an `isError`
    /// result whose text says in words what went wrong and what to do, and whose structured
    /// error says which side failed.
    pub fn into_result(self) -> Value {
        match self {
            CallOutcome::Relayed { result, .. } => result.to_value(),
            CallOutcome::InputRequired { requests, state, .. } => {
                json!({"resultType": mcp_wire::modern::INPUT_REQUIRED, "inputRequests": requests, "requestState": state})
            }
            CallOutcome::StateRefused { tool, message } => error_result(
                &format!("The call of {tool} was not resumed: {}.", message.trim_end_matches('.')),
                json!({"side": "client", "tool": tool}),
            ),
            CallOutcome::Failed(f) => {
                // the upstream's own words may be long, or end a sentence already
                let error = clip(f.error.trim_end_matches('.'), 300);
                let error = error.trim_end_matches('.');
                let advice = f.advice.trim_end_matches('.');
                let (side, message) = if f.client_side {
                    (
                        "client",
                        format!("Calling {} (upstream {:?}) ended: {error}. {advice}.", f.tool, f.upstream),
                    )
                } else {
                    (
                        "upstream",
                        format!("Upstream {:?} failed calling {}: {error}. {advice}.", f.upstream, f.tool),
                    )
                };
                error_result(
                    &message,
                    json!({"side": side, "upstream": f.upstream, "tool": f.tool, "retryable": f.retryable}),
                )
            }
            CallOutcome::Rejected { rejection, .. } => error_result(&rejection.message(), rejection.to_json()),
            CallOutcome::UnknownTool { name, did_you_mean } => {
                let mut message =
                    format!("Unknown tool {name:?}: no connected server offers it (the tool list was re-checked).");
                if did_you_mean.is_empty() {
                    message.push_str(" Find the right one with the search tool (mcp_search).");
                } else {
                    message.push_str(&format!(
                        " Closest names: {}. Use one of them, or find the right one with the search tool (mcp_search).",
                        did_you_mean.join(", ")
                    ));
                }
                error_result(&message, json!({"side": "client", "did_you_mean": did_you_mean}))
            }
            CallOutcome::NoRoute { upstream, tool } => error_result(
                &format!(
                    "{tool} was not called: its upstream {upstream:?} is not configured on this proxy any more. Search again with the search tool (mcp_search)."
                ),
                json!({"side": "proxy", "upstream": upstream, "tool": tool}),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::call::{UpstreamFailure, REPAIRS_META_KEY};

    #[test]
    fn a_relayed_result_notes_repairs_and_whether_the_tool_failed() {
        let raw = |v: Value| RawObject::parse(&v.to_string()).unwrap();
        let out = CallOutcome::relayed("up", "t", raw(json!({"content": [], "isError": true})), &["r".into()]);
        assert!(out.is_error());
        assert_eq!(
            out.into_result(),
            json!({"content": [], "isError": true, "_meta": {REPAIRS_META_KEY: ["r"]}})
        );
        let out = CallOutcome::relayed("up", "t", raw(json!({"content": []})), &[]);
        assert!(!out.is_error());
        let ToolResult::Relayed(relayed) = ToolOutcome::Call(out).into_tool_result() else {
            panic!("a relayed result is written as it came")
        };
        assert_eq!(serde_json::to_string(&relayed).unwrap(), r#"{"content":[]}"#);
    }

    #[test]
    fn a_failed_call_says_which_side_failed() {
        let out = CallOutcome::Failed(UpstreamFailure {
            upstream: "up".into(),
            tool: "t".into(),
            error: "timed out".into(),
            advice: "retry later".into(),
            retryable: true,
            cancelled: false,
            client_side: false,
        });
        let r = out.into_result();
        assert_eq!(r["isError"], true);
        let e = &r["structuredContent"]["error"];
        assert_eq!(e["side"], "upstream");
        assert_eq!(e["retryable"], true);
        assert_eq!(
            e["message"],
            "Upstream \"up\" failed calling t: timed out. retry later."
        );
        // an error that ends a sentence itself gets no second full stop
        let out = CallOutcome::Failed(UpstreamFailure {
            upstream: "up".into(),
            tool: "t".into(),
            error: "HTTP 400: no back-channel.".into(),
            advice: "fix it".into(),
            retryable: false,
            cancelled: false,
            client_side: false,
        });
        let r = out.into_result();
        assert_eq!(
            r["structuredContent"]["error"]["message"],
            "Upstream \"up\" failed calling t: HTTP 400: no back-channel. fix it."
        );
        let r = CallOutcome::NoRoute {
            upstream: "gone".into(),
            tool: "t".into(),
        }
        .into_result();
        assert_eq!(r["structuredContent"]["error"]["side"], "proxy");
    }

    #[test]
    fn a_question_round_and_the_clients_failures_are_told_as_such() {
        let out = CallOutcome::InputRequired {
            upstream: "up".into(),
            tool: "t".into(),
            requests: json!({"q1": {"method": "roots/list"}}),
            state: "sealed".into(),
        };
        assert!(!out.is_error());
        assert_eq!(
            out.into_result(),
            json!({"resultType": "input_required", "inputRequests": {"q1": {"method": "roots/list"}}, "requestState": "sealed"})
        );
        let r = CallOutcome::Failed(UpstreamFailure {
            upstream: "up".into(),
            tool: "t".into(),
            error: "the tool asked the client (roots/list) and got no usable answer: gone".into(),
            advice: "answer it".into(),
            retryable: true,
            cancelled: false,
            client_side: true,
        })
        .into_result();
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"]["side"], "client");
        let r = CallOutcome::StateRefused {
            tool: "t".into(),
            message: "requestState has expired".into(),
        }
        .into_result();
        assert_eq!(r["structuredContent"]["error"]["side"], "client");
        assert_eq!(
            r["structuredContent"]["error"]["message"],
            "The call of t was not resumed: requestState has expired."
        );
    }
}
