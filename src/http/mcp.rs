//! `POST /mcp`: the Streamable HTTP endpoint, dual-era on one URL.
//!
//! The era is chosen per request from its version claim, never from the method name: a
//! request whose body carries `_meta["io.modelcontextprotocol/protocolVersion"]`, or whose
//! `MCP-Protocol-Version` header is not a 2025-era version, is served as 2026-07-28
//! ("modern": stateless, `server/discover`, header checks, `resultType`); anything else as the
//! 2025 era (`initialize`, `ping`; a missing header means 2025-03-26).
//!
//! Order of checks, each with its own precise answer:
//! 1. `Origin` (403 for a foreign origin: DNS-rebinding protection), then the client's
//!    bearer token when `PROXY_TOKENS` is set (401 with `WWW-Authenticate: Bearer`),
//! 2. body size (413, checked on `Content-Length` and while streaming) and the time the body
//!    takes to arrive (408 after `BODY_TIMEOUT_SEC`: a stalled body cannot hold a connection),
//! 3. `Accept` (406) and `Content-Type` (415),
//! 4. JSON-RPC shape (400 with -32700/-32600; the id is echoed when it could be read, the
//!    `id` member is omitted otherwise, never `null`),
//! 5. version: an unknown `MCP-Protocol-Version` gets 400/-32022 listing what is supported;
//!    modern requests then have their `_meta` (400/-32602) and `Mcp-Method`/`Mcp-Name`
//!    headers (400/-32020) checked against the body,
//! 6. the method (modern: 404/-32601 for removed or unknown methods).
//!
//! The proxy's own tools are stateless. A 2025-era `initialize` still mints an
//! `Mcp-Session-Id` so the client can end it (`DELETE`) and cancel its own calls
//! (`notifications/cancelled`), but no request ever needs one (see `sessions`); the modern era
//! ignores it. `GET` (no standalone stream) answers 405. A `tools/call` that carries a
//! `progressToken` from a client that accepts SSE is answered as an SSE stream that relays
//! the upstream's `notifications/progress` as they arrive; a client that goes away cancels
//! the upstream call. At shutdown, a request still running when the grace period ends is
//! answered with a JSON-RPC error saying so (not cut off mid-reply).

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use mcp_wire::jsonrpc::{self, Incoming, Request, RequestId, RpcError};
use mcp_wire::{modern, sse, version};
use proxy_actors::upstream::{cancel_pair, CancelHandle, CancelReason};

use super::{sessions, tools, AppState, HttpSettings};

/// What the client's `Accept` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    pub json: bool,
    pub sse: bool,
}

/// Which protocol era a request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Legacy,
    Modern,
}

/// How long clients may cache our `tools/list` (the four schemas never change) and
/// `server/discover` (its instructions follow the catalog).
const TOOLS_LIST_TTL_MS: u64 = 24 * 3600 * 1000;
const PINNED_TOOLS_LIST_TTL_MS: u64 = 60 * 1000;
const DISCOVER_TTL_MS: u64 = 60 * 1000;

pub async fn post(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = check_origin(&req, &state.settings) {
        return *resp;
    }
    let client = match authenticate(&req, &state.settings) {
        Ok(group) => group,
        Err(resp) => return *resp,
    };
    let body = match read_body(&req, payload, &state.settings).await {
        Ok(b) => b,
        Err(resp) => return *resp,
    };
    let accepts = match accepts(&req) {
        Ok(m) => m,
        Err(resp) => return *resp,
    };
    if let Some(ct) = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
        if !ct.trim().to_ascii_lowercase().starts_with("application/json") {
            return http_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("Content-Type must be application/json, not {ct:?}"),
                ),
            );
        }
    }
    let msg = match Incoming::parse(&body) {
        Ok(m) => m,
        Err(bad) => return http_error(StatusCode::BAD_REQUEST, bad.id, bad.error),
    };
    let header_version = header_str(&req, "mcp-protocol-version");
    let (id, method, params) = match &msg {
        Incoming::Request(r) => (Some(r.id.clone()), r.method.as_str(), r.params.as_ref()),
        Incoming::Notification { method, params } => (None, method.as_str(), params.as_ref()),
        // A client's response (to a request this server never sends) needs no answer.
        Incoming::Response { .. } => return HttpResponse::Accepted().finish(),
    };
    // An unknown version claim is refused with the list of what is supported.
    if let Some(v) = header_version {
        if !version::is_supported_legacy(v) && !modern::is_modern(v) {
            return refusal_response(id, modern::unsupported_version(v));
        }
    }
    let era = if modern::meta_version(params).is_some() || header_version.is_some_and(modern::is_modern) {
        Era::Modern
    } else {
        Era::Legacy
    };
    if era == Era::Modern {
        let headers = modern::RequestHeaders {
            protocol_version: header_version,
            method: header_str(&req, "mcp-method"),
            name: header_str(&req, "mcp-name"),
        };
        if let Err(refusal) = modern::check_request(&headers, method, params) {
            return refusal_response(id, refusal);
        }
    }
    // Legacy sessions: minted at initialize, never required; an ended one gets 404.
    let session = match era {
        Era::Legacy => header_str(&req, "mcp-session-id").map(str::to_string),
        Era::Modern => None,
    };
    if let Some(sid) = &session {
        if method != "initialize" && state.ended_sessions.contains(sid) {
            return http_error(
                StatusCode::NOT_FOUND,
                id,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "Session not found: it was ended; initialize a new one",
                ),
            );
        }
    }
    let request = match msg {
        Incoming::Request(r) => r,
        Incoming::Notification { method, params } => {
            if let (Some(sid), "notifications/cancelled") = (&session, method.as_str()) {
                if let Some(rid) = params.as_ref().and_then(|p| p.get("requestId")) {
                    let request_id = request_id_key(rid);
                    state.sessions.do_send(sessions::Cancel {
                        session: sid.clone(),
                        request_id,
                    });
                }
            }
            // Notifications (initialized, cancelled, …) need no answer.
            return HttpResponse::Accepted().finish();
        }
        Incoming::Response { .. } => return HttpResponse::Accepted().finish(),
    };
    let progress_token = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("progressToken"))
        .is_some();
    if request.method == "tools/call" && progress_token && accepts.sse {
        return stream_call(state, request, era, client);
    }
    let started = std::time::Instant::now();
    // Dropping `cancel` (this handler ends, or is dropped because the client left) cancels
    // an upstream call still running; `until_cut` cancels it for the shutdown.
    let (cancel, token) = cancel_pair();
    let relay = tools::Relay {
        events: None,
        cancel: Some(token),
    };
    let outcome = match (&session, request.method.as_str()) {
        // A legacy client may cancel its own call with notifications/cancelled.
        (Some(sid), "tools/call") => {
            // Most calls end before a client could cancel them, so a call joins the session
            // table (two messages to another thread) only when it is still running after
            // `TRACK_AFTER`; a cancel that comes earlier is held by the table and applied when
            // the call joins.
            let call = until_cut(&state, &cancel, dispatch(&state, &request, era, relay));
            tokio::pin!(call);
            tokio::select! {
                r = &mut call => r,
                _ = tokio::time::sleep(sessions::TRACK_AFTER) => {
                    let (cancel_tx, cancel_rx) = tokio::sync::oneshot::channel::<()>();
                    let request_id = request.id.to_string();
                    state.sessions.do_send(sessions::Track {
                        session: sid.clone(),
                        request_id: request_id.clone(),
                        cancel: cancel_tx,
                    });
                    let outcome = tokio::select! {
                        r = &mut call => r,
                        _ = cancel_rx => Err(Failure::Rpc(RpcError::new(REQUEST_CANCELLED, "Request cancelled by the client"))),
                    };
                    state.sessions.do_send(sessions::Untrack {
                        session: sid.clone(),
                        request_id,
                    });
                    outcome
                }
            }
        }
        _ => until_cut(&state, &cancel, dispatch(&state, &request, era, relay)).await,
    };
    log_request(&request, &outcome, started.elapsed(), client.as_deref());
    let mut resp = match outcome {
        Ok(result) => reply(accepts, &jsonrpc::result_response(&request.id, result)),
        Err(Failure::Rpc(e)) => reply(accepts, &jsonrpc::error_response(Some(&request.id), &e)),
        Err(Failure::Http(status, e)) => http_error(status, Some(request.id.clone()), e),
    };
    if era == Era::Legacy && request.method == "initialize" && resp.status().is_success() {
        if let Ok(v) = header::HeaderValue::from_str(&sessions::mint_id()) {
            resp.headers_mut()
                .insert(header::HeaderName::from_static("mcp-session-id"), v);
        }
    }
    resp
}

/// JSON-RPC code for a request the client cancelled.
const REQUEST_CANCELLED: i64 = -32800;

/// Runs a request unless the shutdown grace period ends first; then it is abandoned (an
/// upstream call in it is cancelled) and answered with an error that says why.
async fn until_cut(
    state: &AppState,
    cancel: &CancelHandle,
    work: impl std::future::Future<Output = Result<Value, Failure>>,
) -> Result<Value, Failure> {
    tokio::select! {
        r = work => r,
        _ = state.cut() => {
            cancel.cancel(CancelReason::ShuttingDown);
            Err(Failure::Rpc(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                "The proxy is shutting down and stopped this request at the end of its grace period; the upstream call was cancelled. Retry against a running instance.",
            )))
        }
    }
}

/// The client's group when `PROXY_TOKENS` is set (`None` when authentication is off); a 401
/// with `WWW-Authenticate: Bearer` otherwise.
fn authenticate(req: &HttpRequest, settings: &HttpSettings) -> Result<Option<String>, Box<HttpResponse>> {
    use super::auth::Refusal;
    let header = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    match settings.auth.check(header) {
        Ok(group) => Ok(group.map(str::to_string)),
        Err(refusal) => {
            let (challenge, message) = match refusal {
                Refusal::Missing => (
                    r#"Bearer realm="mcp-search-proxy""#,
                    "Unauthorized: this proxy needs a bearer token (Authorization: Bearer <token>); ask its operator for one",
                ),
                Refusal::Invalid => (
                    r#"Bearer realm="mcp-search-proxy", error="invalid_token""#,
                    "Unauthorized: the bearer token is not valid for this proxy",
                ),
            };
            log::warn!(reason = if refusal == Refusal::Missing { "missing" } else { "invalid" }; "client refused: authentication");
            let mut resp = http_error(
                StatusCode::UNAUTHORIZED,
                None,
                RpcError::new(jsonrpc::INVALID_REQUEST, message),
            );
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static(challenge));
            Err(Box::new(resp))
        }
    }
}

/// A request id as text, the way `notifications/cancelled` names it (`5` and `"5"` alike).
fn request_id_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A request that failed: a JSON-RPC error in a 200 reply, or one with its own HTTP status.
enum Failure {
    Rpc(RpcError),
    Http(StatusCode, RpcError),
}

impl From<RpcError> for Failure {
    fn from(e: RpcError) -> Self {
        Failure::Rpc(e)
    }
}

/// Runs one request. `relay` receives the notifications (progress) that precede the result
/// and carries the token that cancels an upstream call in flight.
async fn dispatch(state: &AppState, req: &Request, era: Era, relay: tools::Relay) -> Result<Value, Failure> {
    let snapshot = || async { state.snapshot() };
    match (era, req.method.as_str()) {
        (Era::Legacy, "initialize") => {
            let params = req.params_object()?;
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            let snap = snapshot().await;
            Ok(json!({
                "protocolVersion": version::negotiate_legacy(requested),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": server_info(),
                "instructions": instructions(&snap, state.settings.listing_max_chars),
            }))
        }
        (Era::Legacy, "ping") => Ok(json!({})),
        (Era::Modern, "server/discover") => {
            let snap = snapshot().await;
            Ok(modern_result(json!({
                "supportedVersions": modern::all_supported_versions(),
                "capabilities": {"tools": {}},
                "instructions": instructions(&snap, state.settings.listing_max_chars),
                "ttlMs": DISCOVER_TTL_MS,
                "cacheScope": "public",
            })))
        }
        (_, "tools/list") => {
            let snap = snapshot().await;
            let list = tools::list(state, &snap);
            Ok(match era {
                Era::Legacy => list,
                Era::Modern => {
                    let mut r = modern_result(list);
                    let ttl = if snap.pinned.is_empty() {
                        TOOLS_LIST_TTL_MS
                    } else {
                        PINNED_TOOLS_LIST_TTL_MS
                    };
                    r["ttlMs"] = json!(ttl);
                    r["cacheScope"] = json!("public");
                    r
                }
            })
        }
        (_, "tools/call") => {
            let params = req.params_object()?;
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::new(jsonrpc::INVALID_PARAMS, "tools/call needs params.name"))?;
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            let meta = params.get("_meta").cloned();
            match tools::call(state, name, args, meta, relay).await {
                Some(result) if era == Era::Modern => Ok(modern_result(result)),
                Some(result) => Ok(result),
                None => Err(Failure::Rpc(RpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    format!(
                        "Unknown tool: {name}. This server exposes mcp_search, mcp_describe, mcp_call and mcp_refresh; call upstream tools through mcp_call."
                    ),
                ))),
            }
        }
        (Era::Legacy, other) => Err(Failure::Rpc(RpcError::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        ))),
        (Era::Modern, other) => Err(Failure::Http(
            StatusCode::NOT_FOUND,
            RpcError::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!("Method not found: {other} (not part of protocol version 2026-07-28 on this server)"),
            ),
        )),
    }
}

/// Stamps a modern result: `resultType` and the server's identity in `_meta`.
fn modern_result(mut result: Value) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.insert("resultType".into(), json!("complete"));
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert(modern::META_SERVER_INFO.into(), server_info());
        }
    }
    result
}

/// Answers a `tools/call` as an SSE stream: the notifications the upstream sends while it
/// works (progress) as they arrive, then the result. The call runs inside the response stream,
/// so a client that disconnects drops it, which cancels the upstream request.
fn stream_call(state: web::Data<AppState>, request: Request, era: Era, client: Option<String>) -> HttpResponse {
    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    let id = request.id.clone();
    let call = Box::pin(async move {
        let started = std::time::Instant::now();
        // Dropping the stream (the client left) drops `cancel`, which cancels the call.
        let (cancel, token) = cancel_pair();
        let relay = tools::Relay {
            events: Some(tx),
            cancel: Some(token),
        };
        let outcome = until_cut(&state, &cancel, dispatch(&state, &request, era, relay)).await;
        log_request(&request, &outcome, started.elapsed(), client.as_deref());
        match outcome {
            Ok(result) => jsonrpc::result_response(&request.id, result),
            Err(Failure::Rpc(e)) | Err(Failure::Http(_, e)) => jsonrpc::error_response(Some(&request.id), &e),
        }
    });
    enum Phase<F> {
        Running(F, mpsc::UnboundedReceiver<Value>),
        Done,
    }
    let events = futures_util::stream::unfold(Phase::Running(call, rx), move |phase| async move {
        let Phase::Running(mut call, mut rx) = phase else {
            return None;
        };
        tokio::select! {
            biased;
            Some(note) = rx.recv() => {
                let text = sse::encode_event(&note.to_string(), None);
                Some((Ok::<_, actix_web::Error>(Bytes::from(text)), Phase::Running(call, rx)))
            }
            response = &mut call => {
                // Flush notifications that raced the result, then the result itself.
                let mut text = String::new();
                while let Ok(note) = rx.try_recv() {
                    text.push_str(&sse::encode_event(&note.to_string(), None));
                }
                text.push_str(&sse::encode_event(&response.to_string(), None));
                Some((Ok(Bytes::from(text)), Phase::Done))
            }
        }
    });
    log::debug!(id = id.to_string().as_str(); "tools/call answered as a stream");
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(events)
}

fn header_str<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn refusal_response(id: Option<RequestId>, r: modern::Refusal) -> HttpResponse {
    let mut e = RpcError::new(r.code, r.message);
    e.data = r.data;
    http_error(StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST), id, e)
}

/// One line per request: method, the proxy tool for `tools/call`, outcome, latency and the
/// client's group (when tokens are configured). Arguments and tokens are never logged.
fn log_request(req: &Request, outcome: &Result<Value, Failure>, elapsed: std::time::Duration, client: Option<&str>) {
    let tool = if req.method == "tools/call" {
        req.params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
    } else {
        ""
    };
    let outcome_kind = match outcome {
        Ok(r) if r.get("isError") == Some(&Value::Bool(true)) => "tool_error",
        Ok(_) => "ok",
        Err(_) => "rpc_error",
    };
    let latency_us = elapsed.as_micros() as u64;
    let client = client.unwrap_or("");
    if req.method == "tools/call" {
        log::info!(method = req.method.as_str(), tool = tool, outcome = outcome_kind, latency_us = latency_us, client = client; "mcp request");
    } else {
        log::debug!(method = req.method.as_str(), outcome = outcome_kind, latency_us = latency_us, client = client; "mcp request");
    }
}

/// `GET`, `DELETE` and anything else on `/mcp`. A `DELETE` that names a legacy session ends
/// it; there is no standalone server-to-client stream.
pub async fn other_method(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = check_origin(&req, &state.settings) {
        return *resp;
    }
    if let Err(resp) = authenticate(&req, &state.settings) {
        return *resp;
    }
    let modern_claim = header_str(&req, "mcp-protocol-version").is_some_and(modern::is_modern);
    if req.method() == actix_web::http::Method::DELETE && !modern_claim {
        if let Some(sid) = header_str(&req, "mcp-session-id") {
            // Awaited: a request sent after the DELETE's reply must see the session ended.
            return match state.sessions.send(sessions::End(sid.to_string())).await {
                Ok(()) => HttpResponse::Ok().finish(),
                Err(_) => http_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    RpcError::new(jsonrpc::INTERNAL_ERROR, "Session table unavailable; retry the DELETE"),
                ),
            };
        }
    }
    let mut resp = http_error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "Method Not Allowed: {} /mcp; this server has no standalone stream and no sessions, use POST",
                req.method()
            ),
        ),
    );
    resp.headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
    resp
}

pub fn server_info() -> Value {
    json!({"name": "mcp-search-proxy", "version": env!("CARGO_PKG_VERSION")})
}

/// The `instructions` text: the workflow, then the tier-1 listing of sources.
pub fn instructions(snap: &proxy_core::catalog::Snapshot, listing_max_chars: usize) -> String {
    let mut s = String::from(
        "This server gives access to the tools of other MCP servers through four tools. \
         Workflow: mcp_search (find tools by what you want to do) -> mcp_describe (full schema) -> mcp_call (run it). \
         Call mcp_call directly when you already know the exact tool name and arguments.\n",
    );
    if snap.tools.is_empty() {
        s.push_str("No tools are available yet (no upstream has answered); try mcp_refresh.\n");
    } else {
        s.push_str(&format!("Tool sources ({} tools):\n", snap.tools.len()));
        s.push_str(&snap.listing(listing_max_chars));
    }
    s
}

/// 403 for a present `Origin` that is neither loopback nor configured.
fn check_origin(req: &HttpRequest, settings: &HttpSettings) -> Result<(), Box<HttpResponse>> {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .unwrap_or("")
        .trim()
        .trim_end_matches('/')
        .to_ascii_lowercase();
    if origin_allowed(&origin, &settings.allowed_origins) {
        return Ok(());
    }
    Err(Box::new(http_error(
        StatusCode::FORBIDDEN,
        None,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "Forbidden: Origin {origin:?} is not allowed; add it to ALLOWED_ORIGINS if this client is legitimate"
            ),
        ),
    )))
}

/// Loopback origins (any scheme and port) are always allowed; others only when configured.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin || a == "*") {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if scheme != "http" && scheme != "https" {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().map(|h| format!("[{h}]")).unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or("").to_string()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// Reads the body within the size cap and the body timeout.
async fn read_body(
    req: &HttpRequest,
    payload: web::Payload,
    settings: &HttpSettings,
) -> Result<Bytes, Box<HttpResponse>> {
    let timeout = settings.body_timeout;
    match tokio::time::timeout(timeout, read_body_capped(req, payload, settings.max_body_bytes)).await {
        Ok(r) => r,
        Err(_) => {
            log::warn!(timeout_sec = timeout.as_secs(); "client refused: request body too slow");
            let mut resp = http_error(
                StatusCode::REQUEST_TIMEOUT,
                None,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    format!(
                        "Request Timeout: the request body did not arrive within {} s (BODY_TIMEOUT_SEC)",
                        timeout.as_secs()
                    ),
                ),
            );
            resp.headers_mut()
                .insert(header::CONNECTION, header::HeaderValue::from_static("close"));
            Err(Box::new(resp))
        }
    }
}

async fn read_body_capped(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<Bytes, Box<HttpResponse>> {
    let too_large = || {
        Box::new(http_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            RpcError::new(
                jsonrpc::INVALID_REQUEST,
                format!("Request body exceeds the {limit}-byte limit (MAX_BODY_BYTES); send smaller arguments"),
            ),
        ))
    };
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > limit {
            return Err(too_large());
        }
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            Box::new(http_error(
                StatusCode::BAD_REQUEST,
                None,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("could not read the request body: {e}"),
                ),
            ))
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// What the client's `Accept` allows; neither JSON nor SSE is 406.
fn accepts(req: &HttpRequest) -> Result<Accepts, Box<HttpResponse>> {
    let accept = req
        .headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    if accept.trim().is_empty() {
        return Ok(Accepts { json: true, sse: false });
    }
    let types: Vec<&str> = accept
        .split(',')
        .map(|t| t.split(';').next().unwrap_or("").trim())
        .collect();
    let any = types.contains(&"*/*");
    let json = any || types.iter().any(|t| matches!(*t, "application/json" | "application/*"));
    let sse = any || types.iter().any(|t| matches!(*t, "text/event-stream" | "text/*"));
    if json || sse {
        return Ok(Accepts { json, sse });
    }
    Err(Box::new(http_error(
        StatusCode::NOT_ACCEPTABLE,
        None,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            "Not Acceptable: Accept must include application/json and text/event-stream",
        ),
    )))
}

/// JSON when the client accepts it (or said nothing), else a one-event SSE stream.
fn reply(accepts: Accepts, body: &Value) -> HttpResponse {
    if accepts.json {
        return HttpResponse::Ok()
            .content_type("application/json")
            .body(body.to_string());
    }
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .body(sse::encode_event(&body.to_string(), None))
}

/// An HTTP error status with a JSON-RPC error body.
pub fn http_error(status: StatusCode, id: Option<RequestId>, error: RpcError) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("application/json")
        .body(jsonrpc::error_response(id.as_ref(), &error).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_configured_origins_are_allowed() {
        let none: Vec<String> = vec![];
        assert!(origin_allowed("http://localhost:3000", &none));
        assert!(origin_allowed("http://127.0.0.1", &none));
        assert!(origin_allowed("https://[::1]:8443", &none));
        assert!(!origin_allowed("http://evil.example.com", &none));
        assert!(!origin_allowed("http://localhost.evil.com", &none));
        assert!(!origin_allowed("null", &none));
        assert!(origin_allowed(
            "https://chat.example.com",
            &["https://chat.example.com".to_string()]
        ));
    }
}
