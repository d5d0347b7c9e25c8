//! Runs the four tools: the pure parts come from `proxy_core::tools`; relaying a call to the
//! upstream actor that owns the tool and refreshing the catalog are messages to actors.

use serde_json::{json, Map, Value};

use proxy_actors::catalog::{Refresh, RefreshReason};
use proxy_actors::upstream::{CallTool, CancelToken, UpstreamError};
use proxy_core::tools::{self, Prepared, CALL, DESCRIBE, REFRESH, SEARCH};

use super::AppState;

/// What a relayed call carries besides its arguments.
#[derive(Default)]
pub struct Relay {
    /// Receives the upstream's notifications (progress) that precede the result.
    pub events: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    /// Cancels the upstream call (its handle is the HTTP request's).
    pub cancel: Option<CancelToken>,
}

/// Dispatches a `tools/call` of one of the four tools, or of a pinned upstream tool. `None` =
/// no such tool here.
pub async fn call(state: &AppState, name: &str, args: Value, meta: Option<Value>, relay: Relay) -> Option<Value> {
    let args = match tools::tool_arguments(args) {
        Ok(a) => a,
        Err(e) => return Some(e),
    };
    Some(match name {
        SEARCH => tools::search(&state.snapshot(), &args),
        DESCRIBE => tools::describe(&state.snapshot(), &args),
        CALL => call_upstream(state, &args, meta, relay).await,
        REFRESH => refresh(state).await,
        other => {
            if !tools::is_pinned(&state.snapshot(), other) {
                return None;
            }
            let mut call_args = Map::new();
            call_args.insert("name".into(), Value::from(other));
            call_args.insert("arguments".into(), Value::Object(args));
            call_upstream(state, &call_args, meta, relay).await
        }
    })
}

/// `mcp_call`: prepare against the snapshot (one re-list and retry for an unknown name), send
/// to the owning upstream actor, shape its outcome.
async fn call_upstream(state: &AppState, args: &Map<String, Value>, meta: Option<Value>, relay: Relay) -> Value {
    let (name, arguments) = match tools::call_request(args) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut snap = state.snapshot();
    let mut prepared = tools::prepare(&snap, &name, arguments.clone());
    if matches!(prepared, Prepared::Unknown) {
        let _ = state
            .catalog
            .send(Refresh {
                reason: RefreshReason::UnknownTool,
                seen_generation: Some(snap.generation),
            })
            .await;
        snap = state.snapshot();
        prepared = tools::prepare(&snap, &name, arguments);
    }
    let (index, arguments, repairs, input_schema) = match prepared {
        Prepared::Ready {
            index,
            arguments,
            repairs,
            input_schema,
        } => (index, arguments, repairs, input_schema),
        Prepared::Unknown => return tools::unknown_tool(&snap, &name),
        Prepared::Rejected(r) => return r,
    };
    let tool = &snap.tools[index];
    let Some(addr) = state.upstreams.get(&tool.upstream) else {
        return tools::no_route(&tool.upstream);
    };
    let outcome = addr
        .send(CallTool {
            name: tool.tool.name.clone(),
            arguments,
            input_schema,
            meta: mcp_wire::modern::passthrough_meta(meta.as_ref()),
            notifications: relay.events,
            cancel: relay.cancel,
        })
        .await
        .unwrap_or(Err(UpstreamError::Unavailable));
    match outcome {
        Ok(r) => tools::relayed(r, &repairs),
        Err(e) => tools::upstream_failure(
            &tool.upstream,
            &tool.tool.name,
            &e.to_string(),
            e.advice(),
            e.retryable(),
        ),
    }
}

async fn refresh(state: &AppState) -> Value {
    match state
        .catalog
        .send(Refresh {
            reason: RefreshReason::Explicit,
            seen_generation: None,
        })
        .await
    {
        Ok(Ok(report)) => tools::result(serde_json::to_value(&report).unwrap_or(Value::Null), false),
        Ok(Err(failure)) => {
            let mut v = serde_json::to_value(&failure).unwrap_or(Value::Null);
            v["side"] = Value::from("upstream");
            tools::result(json!({"error": v}), true)
        }
        Err(_) => tools::result(
            json!({"error": {"side": "proxy", "message": "the catalog is shutting down"}}),
            true,
        ),
    }
}
