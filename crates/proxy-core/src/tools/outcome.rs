//! What a call of the proxy's tools produced, typed: the application returns a
//! [`ToolOutcome`], metrics and retrieval telemetry read it, and the HTTP layer turns it into
//! the MCP tool result ([`ToolOutcome::into_result`]) at the very end.

use serde_json::{json, Value};

use super::call::CallOutcome;
use super::describe::DescribeAnswer;
use super::request::UsageError;
use super::search::SearchAnswer;
use crate::catalog::report::{RefreshFailure, RefreshReport};

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

    /// The MCP tool result (`content`, `structuredContent`, `isError`); a relayed call's
    /// result is the upstream's, as relayed.
    pub fn into_result(self) -> Value {
        match self {
            ToolOutcome::Search(answer) => super::result(answer.to_json(), false),
            ToolOutcome::Describe(answer) => super::result(answer.to_json(), false),
            ToolOutcome::Call(outcome) => outcome.into_result(),
            ToolOutcome::Refresh(RefreshOutcome::Done(report)) => {
                super::result(serde_json::to_value(&report).unwrap_or(Value::Null), false)
            }
            ToolOutcome::Refresh(RefreshOutcome::Failed(failure)) => {
                let mut v = serde_json::to_value(&failure).unwrap_or(Value::Null);
                v["side"] = Value::from("upstream");
                super::result(json!({"error": v}), true)
            }
            ToolOutcome::Refresh(RefreshOutcome::CatalogGone) => super::result(
                json!({"error": {"side": "proxy", "message": "the catalog is shutting down"}}),
                true,
            ),
            ToolOutcome::Usage(e) => super::usage_error(e.message),
        }
    }
}
