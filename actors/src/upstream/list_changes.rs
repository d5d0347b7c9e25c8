//! The list-change follower: after the handshake, an upstream that advertises
//! `tools.listChanged` is followed on a stream of its own (the legacy era's `GET`, the modern
//! era's `subscriptions/listen` POST), and each `notifications/tools/list_changed` is reported
//! to the catalog ([`ToolsChanged`]). The stream is reopened with back-off (1 s doubling to
//! 60 s) when it breaks; an upstream that refuses the stream is left alone. Pings on the stream
//! are answered (some servers end a session whose pings go unanswered); any other request is
//! refused with "method not found" (the proxy declares no client capabilities). A legacy `GET`
//! that finds its session gone (404) reports it lost (`SessionState::lost`), so the next
//! handshake makes a new one.

use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use serde_json::{json, Value};

use super::connection::Connection;
use super::error::UpstreamError;
use super::session::{Ready, RequestContext, SessionState, CLIENT_NAME};
use mcp_wire::jsonrpc::{self, RequestId};
use mcp_wire::modern;
use proxy_metrics::AskedOutcome;
use upstream_http::transport::Message;
use upstream_http::WireError;

/// Tells the catalog that an upstream's tool list changed (it re-lists, debounced).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct ToolsChanged {
    pub label: String,
}

/// One event (or unfinished line) of the list-change stream, which only ever carries short
/// notifications and pings (and at most the reply cap).
const MAX_STREAM_EVENT_BYTES: usize = 64 * 1024;

/// The list-changes loop (see [`FollowListChanges`](super::FollowListChanges)).
pub(super) async fn follow(conn: &Connection, to: Recipient<ToolsChanged>) {
    let mut backoff = Duration::from_secs(1);
    loop {
        let opened = Instant::now();
        let outcome = match conn.ensure_ready().await {
            Ok(_) if !conn.session.read(SessionState::list_changed) => return,
            Ok(ctx) => listen_once(conn, &ctx, &to).await,
            Err(e) => Err(e),
        };
        match outcome {
            // The upstream has no such stream: nothing to follow.
            Ok(false) => {
                log::debug!(upstream = conn.spec.label.as_str(); "upstream offers no list-change stream");
                return;
            }
            Ok(true) => {}
            Err(e) => {
                log::debug!(upstream = conn.spec.label.as_str(), error = e.to_string().as_str(); "list-change stream failed")
            }
        }
        // A stream that lived a while resets the back-off.
        if opened.elapsed() > Duration::from_secs(60) {
            backoff = Duration::from_secs(1);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(60));
    }
}

/// Opens one list-change stream in the session `ctx` and reads it until it ends.
/// `Ok(false)` when the upstream refuses such streams (404, 405, or a 2xx that is not a
/// stream, such as a JSON-RPC "method not found").
async fn listen_once(
    conn: &Connection,
    ctx: &RequestContext,
    to: &Recipient<ToolsChanged>,
) -> Result<bool, UpstreamError> {
    // Opening the stream is bounded like any request; reading it is not (it is meant to
    // stay open), but each of its events is.
    let open = match &ctx.session {
        Ready::Legacy { .. } => conn.with_timeout(conn.client.open_stream(ctx.envelope(), None)).await,
        Ready::Modern => {
            let id = RequestId::Num(conn.fresh_id());
            let params = json!({
                "notifications": {"toolsListChanged": true},
                "_meta": modern::request_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
            });
            let body = jsonrpc::request(&id, "subscriptions/listen", Some(params));
            let message = Message {
                method: Some("subscriptions/listen"),
                idempotent: true,
                ..Default::default()
            };
            let open = conn
                .client
                .open_stream(ctx.envelope(), Some((message, Bytes::from(body.to_string()))));
            conn.with_timeout(open).await
        }
    };
    let mut resp = open?;
    let status = resp.status;
    let is_sse = resp.is_sse();
    if status == 404 && ctx.session.has_session_id() {
        // The session is gone: the next ensure_ready re-initializes.
        conn.session.lost(ctx.generation, false);
        return Err(UpstreamError::Wire(WireError::Http {
            status,
            detail: "session not found".into(),
        }));
    }
    if status == 405 || !is_sse || !(200..300).contains(&status) {
        let refused = status == 405 || (200..300).contains(&status) || status == 404;
        return if refused {
            Ok(false)
        } else {
            Err(UpstreamError::Wire(WireError::Http {
                status,
                detail: String::new(),
            }))
        };
    }
    log::debug!(upstream = conn.spec.label.as_str(), era = ctx.era().as_str(); "following upstream list changes");
    let max_event = MAX_STREAM_EVENT_BYTES.min(conn.spec.max_response_bytes);
    let mut decoder = mcp_wire::sse::Decoder::new();
    // Bytes fed since the last complete event (within one chunk of the truth): bounds the
    // decoder's unfinished line and event.
    let mut since_event = 0usize;
    while let Some(chunk) = futures_util::StreamExt::next(&mut resp.body).await {
        let Ok(chunk) = chunk else { break };
        since_event += chunk.len();
        let events = decoder.feed(&chunk);
        if !events.is_empty() {
            since_event = decoder.pending_len();
        }
        if since_event > max_event {
            return Err(UpstreamError::invalid_reply(format!(
                "an event on the list-change stream exceeds {max_event} bytes"
            )));
        }
        for ev in events {
            let Ok(msg) = serde_json::from_str::<Value>(&ev.data) else {
                continue;
            };
            match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                (Some("notifications/tools/list_changed"), None) => {
                    log::info!(upstream = conn.spec.label.as_str(); "upstream tool list changed");
                    to.do_send(ToolsChanged {
                        label: conn.spec.label.clone(),
                    });
                }
                // Requests on the standalone stream (pings) must be answered, or some
                // servers end the session.
                (Some(method), Some(id)) => {
                    answer_server_request(conn, method, id.clone()).await;
                }
                _ => {}
            }
        }
    }
    Ok(true)
}

/// Answers a request on the standalone stream: `ping` with `{}`; anything else (a
/// `roots/list` not related to a call, …) with an error, since the session is shared by all
/// the proxy's clients and no single one owns the question. Counted and logged like the
/// requests on a call's stream.
async fn answer_server_request(conn: &Connection, method: &str, id: Value) {
    let (body, outcome) = if method == "ping" {
        (
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            AskedOutcome::Answered,
        )
    } else {
        let message = format!(
            "{method} is not answered outside a tool call: this session is shared by all the clients of mcp-search-proxy, so no single client owns the request; ask during the tools/call it is for (related to its request id)"
        );
        (
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": jsonrpc::METHOD_NOT_FOUND, "message": message}}),
            AskedOutcome::Declined,
        )
    };
    log::info!(upstream = conn.spec.label.as_str(), method = method, outcome = outcome.as_str(); "upstream request outside a call");
    conn.spec.metrics.upstream_request(&conn.spec.label, method, outcome);
    conn.post_in_session(&body, Duration::from_secs(5)).await;
}
