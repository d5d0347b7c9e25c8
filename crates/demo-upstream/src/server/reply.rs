//! A request's outcome framed as one JSON body or, in SSE mode, as a stream: a priming event,
//! progress notifications while a slow call runs, then the response event.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::messages::RpcError;
use super::state::Shared;
use super::wire::SESSION_HEADER;

/// What a request produced, before it is framed as JSON or SSE.
pub(super) struct Reply {
    pub(super) outcome: Result<Value, RpcError>,
    /// Set on a stateful `initialize`.
    pub(super) new_session: Option<String>,
    /// Set on `tools/call` and `tools/list`: wait this long before the response.
    pub(super) delay: Duration,
    /// Set on `tools/list`: nothing is sent while the list gate is closed.
    pub(super) gated: bool,
    /// Set on a `tools/call` that carried a progress token: in SSE mode, progress
    /// notifications are sent while the delay runs.
    pub(super) progress_token: Option<Value>,
}

impl Reply {
    pub(super) fn now(outcome: Result<Value, RpcError>) -> Self {
        Reply {
            outcome,
            new_session: None,
            delay: Duration::ZERO,
            gated: false,
            progress_token: None,
        }
    }
}

/// Frames a [`Reply`] as one JSON body or as an SSE stream.
pub(super) async fn respond(shared: &Shared, id: Value, reply: Reply) -> HttpResponse {
    if reply.gated {
        shared.list_gate_open().await;
    }
    let envelope = match reply.outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": error.code, "message": error.message},
        }),
    };
    let mut builder = HttpResponse::Ok();
    if let Some(session) = &reply.new_session {
        builder.insert_header((SESSION_HEADER, session.as_str()));
    }
    if !shared.config.sse {
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        return builder.json(envelope);
    }

    let stream = shared.next_stream.fetch_add(1, Ordering::Relaxed);
    let priming = Bytes::from(format!("id: {stream}-0\ndata: \n\n"));
    let event = Bytes::from(format!("event: message\nid: {stream}-1\ndata: {envelope}\n\n"));
    // With a progress token, the delay is split into quarters with a progress notification
    // after each of the first three, as a long-running tool would report.
    let delay = reply.delay;
    let steps: u64 = if reply.progress_token.is_some() && !delay.is_zero() {
        3
    } else {
        0
    };
    let token = reply.progress_token.unwrap_or(Value::Null);
    let progress = futures_util::stream::iter(1..=steps).then(move |i| {
        let token = token.clone();
        async move {
            tokio::time::sleep(delay / 4).await;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": i, "total": steps, "message": format!("step {i} of {steps}")}});
            Ok::<_, Infallible>(Bytes::from(format!("event: message\ndata: {note}\n\n")))
        }
    });
    let rest = if steps > 0 { delay / 4 } else { delay };
    let body = futures_util::stream::once(async move { Ok::<_, Infallible>(priming) })
        .chain(progress)
        .chain(futures_util::stream::once(async move {
            if !rest.is_zero() {
                tokio::time::sleep(rest).await;
            }
            Ok::<_, Infallible>(event)
        }));
    builder
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(body)
}
