//! What a call of the proxy's tools produced, typed: the application returns a
//! [`ToolOutcome`], metrics and retrieval telemetry read it, and the HTTP layer turns it into
//! the MCP tool result ([`ToolOutcome::into_tool_result`]) at the very end.

use mcp_wire::raw::RawObject;
use serde_json::{json, Map, Value};

use super::call::CallOutcome;
use super::describe::DescribeAnswer;
use super::request::UsageError;
use super::search::SearchAnswer;
use crate::catalog::report::{RefreshFailure, RefreshReport};

/// A tool result: `content` with one text block, plus `structuredContent`.
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

/// An `isError` result for a mistake in the call that the model can correct.
pub fn usage_error(message: impl Into<String>) -> Value {
    result(json!({"error": {"side": "client", "message": message.into()}}), true)
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
                let mut v = serde_json::to_value(&failure).unwrap_or(Value::Null);
                v["side"] = Value::from("upstream");
                result(json!({"error": v}), true)
            }
            ToolOutcome::Refresh(RefreshOutcome::CatalogGone) => result(
                json!({"error": {"side": "proxy", "message": "the catalog is shutting down"}}),
                true,
            ),
            ToolOutcome::Usage(e) => usage_error(e.message),
        }
    }
}

impl CallOutcome {
    /// The tool result the client gets: the relayed result as it is, else an `isError`
    /// result whose structured error says which side failed and what to do.
    pub fn into_result(self) -> Value {
        let error = match self {
            CallOutcome::Relayed { result, .. } => return result.to_value(),
            CallOutcome::InputRequired { requests, state, .. } => {
                return json!({"resultType": mcp_wire::modern::INPUT_REQUIRED, "inputRequests": requests, "requestState": state})
            }
            CallOutcome::StateRefused { tool, message } => {
                json!({"error": {"side": "client", "tool": tool, "message": format!("mcp_call of {tool} not resumed: {message}.")}})
            }
            CallOutcome::Failed(f) => {
                // the upstream's own words may end a sentence already
                let error = f.error.trim_end_matches('.');
                let (side, msg) = if f.client_side {
                    let msg = format!(
                        "Calling {} (upstream {:?}) ended: {error}. {}.",
                        f.tool, f.upstream, f.advice
                    );
                    ("client", msg)
                } else {
                    let msg = format!(
                        "Upstream {:?} failed calling {}: {error}. {}.",
                        f.upstream, f.tool, f.advice
                    );
                    ("upstream", msg)
                };
                json!({"error": {"side": side, "upstream": f.upstream, "tool": f.tool, "message": msg, "retryable": f.retryable}})
            }
            CallOutcome::Rejected { rejection, .. } => rejection.to_json(),
            CallOutcome::UnknownTool { name, did_you_mean } => {
                let mut msg =
                    format!("Unknown tool {name:?}: no connected server offers it (the tool list was re-checked).");
                if did_you_mean.is_empty() {
                    msg.push_str(" Use mcp_search to find the right tool.");
                } else {
                    msg.push_str(&format!(
                        " Closest names: {}. Use one of them, or mcp_search.",
                        did_you_mean.join(", ")
                    ));
                }
                json!({"error": {"side": "client", "message": msg, "did_you_mean": did_you_mean}})
            }
            CallOutcome::NoRoute { upstream, .. } => {
                json!({"error": {"side": "proxy", "message": format!("no route to upstream {upstream:?}")}})
            }
        };
        result(error, true)
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
            "mcp_call of t not resumed: requestState has expired."
        );
    }
}
