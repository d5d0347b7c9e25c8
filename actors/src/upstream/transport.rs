//! One Streamable HTTP exchange with an upstream: POST a JSON-RPC message, read the reply as
//! JSON or as an SSE stream, enforce the size cap. No session logic here (see `session`).
//!
//! Header hygiene lives in [`post`]: the only headers sent upstream are the ones built here.

use std::time::{Duration, Instant};

use awc::http::header;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use super::error::UpstreamError;
use crate::mcp::jsonrpc::{RequestId, RpcError};
use crate::mcp::sse;

/// Per-request header values the session layer decides.
#[derive(Debug, Default, Clone)]
pub struct RequestHeaders<'a> {
    pub bearer: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub protocol_version: Option<&'a str>,
    /// Modern era: `Mcp-Method`.
    pub method: Option<&'a str>,
    /// Modern era: `Mcp-Name` (already encoded).
    pub name: Option<&'a str>,
    /// Modern era: `Mcp-Param-*` headers (already encoded).
    pub params: &'a [(String, String)],
    /// Safe to send twice: when a pooled keep-alive connection turns out to have been closed by
    /// the upstream (no reply at all), the message is sent once more on a fresh connection.
    pub idempotent: bool,
}

/// The parts of an upstream reply the session layer needs.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// `Mcp-Session-Id` of the reply, when present.
    pub session_id: Option<String>,
    /// The JSON-RPC response whose id matched the request (absent for notifications).
    pub message: Option<Value>,
}

/// Sink for notifications that arrive on a request's SSE stream before its response
/// (`notifications/progress`, `notifications/message`).
pub type NotificationSink<'a> = Option<&'a dyn Fn(Value)>;

/// POSTs one JSON-RPC message and reads its reply.
///
/// `expect_id` is the id of a request (whose response is awaited) or `None` for a
/// notification (any 2xx, normally 202, is success). HTTP error statuses are returned as
/// `Ok(Reply)` with the status set and the JSON-RPC error body (if any) in `message`, so the
/// session layer can tell "session expired" from other failures.
pub async fn post(
    client: &awc::Client,
    url: &str,
    headers: &RequestHeaders<'_>,
    body: Bytes,
    expect_id: Option<&RequestId>,
    max_bytes: usize,
    on_notification: NotificationSink<'_>,
) -> Result<Reply, UpstreamError> {
    let started = Instant::now();
    let build = || {
        let mut req = client
            .post(url)
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .insert_header((header::ACCEPT, "application/json, text/event-stream"));
        if let Some(token) = headers.bearer {
            req = req.insert_header((header::AUTHORIZATION, format!("Bearer {token}")));
        }
        if let Some(sid) = headers.session_id {
            req = req.insert_header(("Mcp-Session-Id", sid));
        }
        if let Some(v) = headers.protocol_version {
            req = req.insert_header(("MCP-Protocol-Version", v));
        }
        if let Some(m) = headers.method {
            req = req.insert_header(("Mcp-Method", m));
        }
        if let Some(n) = headers.name {
            req = req.insert_header(("Mcp-Name", n));
        }
        for (k, v) in headers.params {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        req
    };
    // An upstream closes idle keep-alive connections on its own schedule; one closed just as it
    // is reused yields no reply at all (awc: `Disconnected`). Such a message never reached the
    // upstream, so an idempotent one is sent again; a `tools/call` is not (it reports the error).
    let mut resp = match build().send_body(body.clone()).await {
        Err(awc::error::SendRequestError::Connect(awc::error::ConnectError::Disconnected)) if headers.idempotent => {
            build().send_body(body).await.map_err(|e| send_error(e, started))?
        }
        r => r.map_err(|e| send_error(e, started))?,
    };
    let status = resp.status().as_u16();
    let session_id = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();

    if content_type.starts_with("text/event-stream") {
        let mut read = read_sse(&mut resp, expect_id, max_bytes, on_notification).await?;
        // 2025-11-25 (SEP-1699): a server may close the stream before the response, after an
        // event id and a `retry` hint; the client resumes with GET + Last-Event-ID.
        let mut resumptions = 0;
        while expect_id.is_some() && read.message.is_none() && (200..300).contains(&status) {
            let Some(last_id) = read.last_event_id.clone() else {
                break;
            };
            if resumptions == MAX_RESUMPTIONS {
                break;
            }
            resumptions += 1;
            let wait = Duration::from_millis(read.retry_ms.unwrap_or(DEFAULT_RETRY_MS).min(MAX_RETRY_MS));
            tokio::time::sleep(wait).await;
            let mut get = client
                .get(url)
                .insert_header((header::ACCEPT, "text/event-stream"))
                .insert_header(("Last-Event-ID", last_id.as_str()));
            if let Some(token) = headers.bearer {
                get = get.insert_header((header::AUTHORIZATION, format!("Bearer {token}")));
            }
            if let Some(sid) = headers.session_id {
                get = get.insert_header(("Mcp-Session-Id", sid));
            }
            if let Some(v) = headers.protocol_version {
                get = get.insert_header(("MCP-Protocol-Version", v));
            }
            let mut again = get.send().await.map_err(|e| send_error(e, started))?;
            if !again.status().is_success() {
                break;
            }
            let next = read_sse(&mut again, expect_id, max_bytes, on_notification).await?;
            read = SseRead {
                last_event_id: next.last_event_id.or(read.last_event_id),
                retry_ms: next.retry_ms.or(read.retry_ms),
                message: next.message,
            };
        }
        if expect_id.is_some() && read.message.is_none() && (200..300).contains(&status) {
            return Err(UpstreamError::InvalidReply(
                "the SSE stream ended without a response to the request".into(),
            ));
        }
        return Ok(Reply {
            status,
            session_id,
            message: read.message,
        });
    }

    let bytes = resp
        .body()
        .limit(max_bytes)
        .await
        .map_err(|e| payload_error(e, max_bytes))?;
    let message = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => Some(v),
            Err(e) if (200..300).contains(&status) && expect_id.is_some() => {
                return Err(UpstreamError::InvalidReply(format!("body is not JSON ({e})")))
            }
            // An error status with a non-JSON body: keep a readable excerpt for the message.
            Err(_) => Some(Value::String(excerpt(&bytes))),
        }
    };
    if expect_id.is_some() && message.is_none() && (200..300).contains(&status) {
        return Err(UpstreamError::InvalidReply(format!("empty body with HTTP {status}")));
    }
    Ok(Reply {
        status,
        session_id,
        message,
    })
}

/// What one SSE stream yielded: the response (if it came) and what resuming needs.
struct SseRead {
    message: Option<Value>,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

/// Resuming a stream that closed before its response: at most this many times, waiting the
/// server's `retry` hint (default 1 s, at most 10 s) before each.
const MAX_RESUMPTIONS: usize = 3;
const DEFAULT_RETRY_MS: u64 = 1000;
const MAX_RETRY_MS: u64 = 10_000;

async fn read_sse<S>(
    stream: &mut S,
    expect_id: Option<&RequestId>,
    max_bytes: usize,
    on_notification: NotificationSink<'_>,
) -> Result<SseRead, UpstreamError>
where
    S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    let mut decoder = sse::Decoder::new();
    let mut seen = 0usize;
    let mut out = SseRead {
        message: None,
        last_event_id: None,
        retry_ms: None,
    };
    let handle = |ev: sse::Event, out: &mut SseRead| -> bool {
        if let Some(id) = ev.id.as_ref().filter(|i| !i.is_empty()) {
            out.last_event_id = Some(id.clone());
        }
        if ev.retry_ms.is_some() {
            out.retry_ms = ev.retry_ms;
        }
        if ev.data.trim().is_empty() {
            return false; // priming event or keep-alive
        }
        let Ok(msg) = serde_json::from_str::<Value>(&ev.data) else {
            return false;
        };
        let is_response = msg.get("result").is_some() || msg.get("error").is_some();
        if is_response {
            let id: Option<RequestId> = msg.get("id").and_then(|v| serde_json::from_value(v.clone()).ok());
            if expect_id.is_none() || id.as_ref() == expect_id {
                out.message = Some(msg);
                return true;
            }
            return false;
        }
        if msg.get("id").is_none() {
            if let Some(sink) = on_notification {
                sink(msg);
            }
        }
        // A server-to-client request: the proxy declares no client capabilities, so a
        // conforming upstream never sends one; it is ignored.
        false
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| payload_error(e, max_bytes))?;
        seen += chunk.len();
        if seen > max_bytes {
            return Err(UpstreamError::TooLarge { limit: max_bytes });
        }
        for ev in decoder.feed(&chunk) {
            if handle(ev, &mut out) {
                return Ok(out);
            }
        }
        if decoder.pending_len() > max_bytes {
            return Err(UpstreamError::TooLarge { limit: max_bytes });
        }
    }
    if let Some(ev) = decoder.finish() {
        handle(ev, &mut out);
    }
    Ok(out)
}

/// Extracts a JSON-RPC error object from a reply body, if it carries one.
pub fn rpc_error_of(message: &Value) -> Option<RpcError> {
    message
        .get("error")
        .and_then(|e| serde_json::from_value(e.clone()).ok())
}

/// A short human-readable excerpt of an upstream body for error messages.
pub fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.chars().count() > 200 {
        let mut out: String = s.chars().take(200).collect();
        out.push('…');
        out
    } else {
        s.to_string()
    }
}

fn send_error(e: awc::error::SendRequestError, started: Instant) -> UpstreamError {
    use awc::error::SendRequestError as E;
    match e {
        E::Timeout => UpstreamError::Timeout {
            elapsed: started.elapsed(),
        },
        E::Connect(c) => UpstreamError::Connect(c.to_string()),
        other => UpstreamError::Connect(other.to_string()),
    }
}

fn payload_error(e: awc::error::PayloadError, max_bytes: usize) -> UpstreamError {
    use awc::error::PayloadError as P;
    match e {
        P::Overflow => UpstreamError::TooLarge { limit: max_bytes },
        other => UpstreamError::InvalidReply(format!("reading the body failed: {other}")),
    }
}

/// Builds the shared awc client of one upstream actor. The overall per-request timeout is
/// enforced by the caller (it must also cover reading a streamed body), so awc's own timeout
/// only guards connection setup.
pub fn build_client(connect_timeout: Duration) -> awc::Client {
    awc::Client::builder()
        .disable_timeout()
        .connector(
            awc::Connector::new()
                .timeout(connect_timeout)
                .conn_keep_alive(POOL_IDLE),
        )
        .finish()
}

/// How long an idle pooled connection is reused: shorter than the 5 s after which uvicorn,
/// actix-web and Node close idle keep-alive connections, so the proxy drops them first (awc's
/// default, 15 s, let a request race the upstream's close and fail with no reply).
const POOL_IDLE: Duration = Duration::from_secs(4);
