//! `POST /mcp`: the Streamable HTTP endpoint, dual-era on one URL.
//!
//! The era is chosen per request from its version claim, never from the method name: a
//! request whose body carries `_meta["io.modelcontextprotocol/protocolVersion"]`, or whose
//! `MCP-Protocol-Version` header is not a 2025-era version, is served as 2026-07-28
//! ("modern": stateless, `server/discover`, header checks, `resultType`); anything else as the
//! 2025 era (`initialize`, `ping`; a missing header means 2025-03-26).
//!
//! Order of checks, each with its own precise answer (an [`HttpError`]):
//! 1. origin, client token, body size and time, `Accept` and `Content-Type` ([`checks`]),
//! 2. JSON-RPC shape (400 with -32700/-32600; the id is echoed when it could be read, the
//!    `id` member is omitted otherwise, never `null`),
//! 3. version: an unknown `MCP-Protocol-Version` gets 400/-32022 listing what is supported;
//!    modern requests then have their `_meta` (400/-32602) and `Mcp-Method`/`Mcp-Name`
//!    headers (400/-32020) checked against the body,
//! 4. the method (modern: 404/-32601 for removed or unknown methods).
//!
//! The proxy's own tools are stateless. A 2025-era `initialize` still mints an
//! `Mcp-Session-Id` so the client can end it (`DELETE`), cancel its own calls
//! (`notifications/cancelled`) and be asked what tools ask (the capabilities it declared ride
//! in the id), but no request ever needs one (see `sessions`); the modern era ignores it.
//! `GET` (no standalone stream) answers 405. A `tools/call` from a client that accepts SSE is
//! answered as an SSE stream ([`stream`]) when it carries a `progressToken` or a `logLevel`
//! opt-in (the upstream's notifications are relayed as they arrive), or when it comes on a
//! 2025-era session that can be asked something: the questions a tool asks (elicitation,
//! sampling, roots) are then sent on that stream under proxy-owned ids
//! (`proxy_actors::asking::relay_questions`, framed by [`stream::CallStream`]), and the
//! client's response, POSTed on its session, is delivered to the waiting call at the asking
//! desk (`proxy_actors::asking::Deliver`).
//! A 2026-07-28 client is asked in `input_required` rounds instead (see `crate::app`): its
//! `_meta` capabilities and log level, and a retry's `inputResponses`/`requestState`, are read
//! here and handed to the application.
//!
//! Every upstream call has a cancel handle held by its request: the handle is dropped when the
//! request is (its client went away, or cancelled it), which cancels the call upstream; at
//! shutdown, a request still running when the grace period ends is cancelled with that reason
//! and answered with a JSON-RPC error saying so (not cut off mid-reply).

use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use mcp_wire::asks::Askable;
use mcp_wire::call::{self as tool_call, ToolCall};
use mcp_wire::jsonrpc::{self, Incoming, Request, RequestId, RpcError};
use mcp_wire::raw::RawObject;
use mcp_wire::trace::CallTrace;
use mcp_wire::{modern, version, Era};
use proxy_actors::asking::{alongside, relay_questions, Deliver, EndSession};
use proxy_actors::retrieval::ClientKey;
use proxy_actors::sessions;
use proxy_actors::upstream::{cancel_pair, CancelHandle, CancelReason};
use proxy_core::asking::{self, LEGACY_LOG_LEVEL};
use proxy_core::tools::{ToolOutcome, ToolRequest, ToolResult};

use super::checks;
use super::error::HttpError;
use super::{stream, AppState};
use crate::app::{Asking, CallContext, Retry, Talk};

/// How long clients may cache our `tools/list` (the four schemas never change) and
/// `server/discover` (its instructions follow the catalog).
const TOOLS_LIST_TTL_MS: u64 = 24 * 3600 * 1000;
const PINNED_TOOLS_LIST_TTL_MS: u64 = 60 * 1000;
const DISCOVER_TTL_MS: u64 = 60 * 1000;

/// The `tools/list` results without pinned tools, serialised once per era (the four
/// definitions are constants): a listing costs a string copy, not a JSON build.
#[derive(Debug, Clone)]
pub struct ToolsList {
    legacy: Arc<str>,
    modern: Arc<str>,
}

impl Default for ToolsList {
    fn default() -> Self {
        ToolsList {
            legacy: tools_list_result(Era::Legacy, &[]).to_string().into(),
            modern: tools_list_result(Era::Modern, &[]).to_string().into(),
        }
    }
}

/// The `tools/list` result in `era`, with `pinned` upstream tool definitions after the four.
fn tools_list_result(era: Era, pinned: &[Value]) -> Value {
    let mut tools = proxy_core::tools::definitions();
    if let Some(arr) = tools.as_array_mut() {
        arr.extend(pinned.iter().cloned());
    }
    let list = json!({ "tools": tools });
    match era {
        Era::Legacy => list,
        Era::Modern => {
            let mut r = modern_result(list);
            r["ttlMs"] = json!(if pinned.is_empty() {
                TOOLS_LIST_TTL_MS
            } else {
                PINNED_TOOLS_LIST_TTL_MS
            });
            r["cacheScope"] = json!("public");
            r
        }
    }
}

/// A request's result: built for this request, serialised in advance, or the typed outcome
/// of a tool call (rendered in the request's era at the very end).
enum Answer {
    Value(Value),
    Text(Arc<str>),
    Tool(ToolOutcome, Era),
}

/// A request that failed: a JSON-RPC error in a 200 reply, or a refusal with its own status.
enum Failure {
    Rpc(RpcError),
    Http(HttpError),
}

impl From<RpcError> for Failure {
    fn from(e: RpcError) -> Self {
        Failure::Rpc(e)
    }
}

pub async fn post(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, HttpError> {
    checks::origin(&req, &state.settings)?;
    let client = checks::authenticate(&req, &state.settings)?;
    let body = checks::body(&req, payload, &state.settings).await?;
    let accepts = checks::accepts(&req)?;
    checks::content_type(&req)?;
    let msg =
        Incoming::parse(&body).map_err(|bad| HttpError::rpc(StatusCode::BAD_REQUEST, bad.error).with_id(bad.id))?;
    let msg = match msg {
        // A client's response to a question the proxy relayed: routed to the call waiting for it.
        Incoming::Response { id, result, error } => {
            if header_str(&req, "mcp-session-id").is_some_and(|sid| state.ended_sessions.contains(sid)) {
                return Err(HttpError::invalid_request(
                    StatusCode::NOT_FOUND,
                    "Session not found: it was ended; its questions were withdrawn",
                ));
            }
            answered(&req, &state, id, result, error).await;
            return Ok(HttpResponse::Accepted().finish());
        }
        other => other,
    };
    let (era, session) = match &msg {
        Incoming::Request(r) => admit(&req, &state, Some(&r.id), &r.method, r.params.as_ref())?,
        Incoming::Notification { method, params } => admit(&req, &state, None, method, params.as_ref())?,
        Incoming::Response { .. } => return Ok(HttpResponse::Accepted().finish()),
    };
    let mut request = match msg {
        Incoming::Request(r) => r,
        Incoming::Notification { method, params } => {
            notified(&state, session.as_deref(), &method, params.as_ref());
            return Ok(HttpResponse::Accepted().finish());
        }
        Incoming::Response { .. } => return Ok(HttpResponse::Accepted().finish()),
    };
    // a tools/call's params, read once
    let params = (request.method == "tools/call").then(|| ToolCall::parse(request.params.take()));
    let call = Call::of(&req, params, era, session, client);
    if call.trace.is_some() && accepts.sse && (call.progress || call.asked_on_stream()) {
        return Ok(stream_call(state, request, call));
    }
    // What a 2025-era client can be asked rides in the session id it is given.
    let initialize = (era == Era::Legacy && request.method == "initialize").then(|| {
        let caps = request.params.as_ref().and_then(|p| p.get("capabilities"));
        Askable::from_capabilities(caps)
    });
    let text = answer(&state, &request, call).await?;
    let mut resp = stream::reply(accepts, text);
    if let Some(askable) = initialize {
        if let Some(v) = sessions::mint_id(askable).and_then(|id| header::HeaderValue::from_str(&id).ok()) {
            resp.headers_mut()
                .insert(header::HeaderName::from_static("mcp-session-id"), v);
        }
    }
    Ok(resp)
}

/// The era a request is served in, once its version claim and (modern) header rules check
/// out, and its legacy session id, unless that session was ended (404).
fn admit(
    req: &HttpRequest,
    state: &AppState,
    id: Option<&RequestId>,
    method: &str,
    params: Option<&Value>,
) -> Result<(Era, Option<String>), HttpError> {
    let header_version = header_str(req, "mcp-protocol-version");
    // An unknown version claim is refused with the list of what is supported.
    if let Some(v) = header_version {
        if !version::is_supported_legacy(v) && !modern::is_modern(v) {
            return Err(refusal(id.cloned(), modern::unsupported_version(v)));
        }
    }
    if modern::meta_version(params).is_some() || header_version.is_some_and(modern::is_modern) {
        let headers = modern::RequestHeaders {
            protocol_version: header_version,
            method: header_str(req, "mcp-method"),
            name: header_str(req, "mcp-name"),
        };
        modern::check_request(&headers, method, params).map_err(|r| refusal(id.cloned(), r))?;
        return Ok((Era::Modern, None));
    }
    // Legacy sessions: minted at initialize, never required; an ended one gets 404.
    let session = header_str(req, "mcp-session-id").map(str::to_string);
    if let Some(sid) = &session {
        if method != "initialize" && state.ended_sessions.contains(sid) {
            return Err(HttpError::invalid_request(
                StatusCode::NOT_FOUND,
                "Session not found: it was ended; initialize a new one",
            )
            .with_id(id.cloned()));
        }
    }
    Ok((Era::Legacy, session))
}

/// A notification: `notifications/cancelled` on a legacy session cancels the client's own
/// call; the others (initialized, …) need nothing.
fn notified(state: &AppState, session: Option<&str>, method: &str, params: Option<&Value>) {
    if let (Some(sid), "notifications/cancelled") = (session, method) {
        if let Some(rid) = params.and_then(|p| p.get("requestId")) {
            state.sessions.do_send(sessions::Cancel {
                session: sid.to_string(),
                request_id: request_id_key(rid),
            });
        }
    }
}

/// What the endpoint knows of a request besides its body: era, session, caller, trace, and
/// what the client can be asked.
struct Call {
    /// A `tools/call`'s params, read once (`None` for the other methods; taken by
    /// [`dispatch`]).
    params: Option<Result<ToolCall, RpcError>>,
    /// Its `params.name`, moved out of them: the tool for [`dispatch`] and the log line.
    tool: Option<String>,
    era: Era,
    session: Option<String>,
    /// The client's token group (`PROXY_TOKENS`), for logs and telemetry.
    client: Option<String>,
    /// A `tools/call`'s trace: the client's continued, or a new one.
    trace: Option<CallTrace>,
    /// A `tools/call` that asked for notifications: progress (`_meta.progressToken`), or log
    /// lines (a 2026-07-28 `_meta` `logLevel`).
    progress: bool,
    /// What the client can be asked: the capabilities its 2025-era session id carries, or its
    /// 2026-07-28 `_meta` `clientCapabilities`.
    askable: Askable,
    /// A 2026-07-28 `_meta` `logLevel`.
    log_level: Option<String>,
}

impl Call {
    fn of(
        req: &HttpRequest,
        mut params: Option<Result<ToolCall, RpcError>>,
        era: Era,
        session: Option<String>,
        client: Option<String>,
    ) -> Call {
        let is_call = params.is_some();
        let tool = params
            .as_mut()
            .and_then(|p| p.as_mut().ok())
            .and_then(|p| p.name.take());
        let read = params.as_ref().and_then(|p| p.as_ref().ok());
        let (askable, log_level) = match era {
            Era::Legacy => (session.as_deref().map_or(Askable::NONE, Askable::of_session_id), None),
            Era::Modern => (
                read.map_or(Askable::NONE, ToolCall::client_capabilities),
                read.and_then(ToolCall::log_level).map(str::to_string),
            ),
        };
        let meta = read.and_then(|p| p.meta.as_ref());
        let trace = is_call.then(|| call_trace(meta, header_str(req, "traceparent"), header_str(req, "tracestate")));
        let progress = is_call && (read.and_then(ToolCall::progress_token).is_some() || log_level.is_some());
        Call {
            params,
            tool,
            era,
            trace,
            progress,
            session,
            client,
            askable,
            log_level,
        }
    }

    /// A 2025-era call whose questions go on its stream.
    fn asked_on_stream(&self) -> bool {
        self.era == Era::Legacy && self.session.is_some() && !self.askable.is_empty()
    }

    /// The application's context of this call: no notification sink (see [`stream_call`]);
    /// a 2026-07-28 client is asked in rounds, a 2025-era one only on a stream (set there).
    fn context(&self, cancel: proxy_actors::upstream::CancelToken) -> CallContext {
        CallContext {
            meta: None,
            events: None,
            cancel: Some(cancel),
            trace: self.trace.clone(),
            client: Some(ClientKey::of(self.session.as_deref(), self.client.as_deref())),
            talk: Talk {
                askable: self.askable,
                asking: match self.era {
                    Era::Modern => Asking::Rounds,
                    Era::Legacy => Asking::Never,
                },
                log_level: self.log_level.clone(),
                retry: None,
                // only a 2026-07-28 call may be held
                holder: match self.era {
                    Era::Modern => self.client.clone().unwrap_or_default(),
                    Era::Legacy => String::new(),
                },
            },
        }
    }
}

/// A client's response to a question relayed on one of its session's streams: handed to the
/// call waiting for it (nothing happens for an unknown id, or without a session).
async fn answered(
    req: &HttpRequest,
    state: &AppState,
    id: Option<RequestId>,
    result: Option<Value>,
    error: Option<RpcError>,
) {
    let (Some(session), Some(RequestId::Str(id))) = (header_str(req, "mcp-session-id"), id) else {
        log::debug!("client response without a session or a proxy-owned id: ignored");
        return;
    };
    let delivered = state
        .app
        .desk()
        .send(Deliver {
            session: session.to_string(),
            id,
            answer: asking::Answer::from_response(result, error),
        })
        .await
        .unwrap_or(false);
    if !delivered {
        log::debug!("client response to a question no call waits for: ignored");
    }
}

/// Runs a request and returns its JSON-RPC response text (logged and counted). Dropping the
/// cancel handle (this ends, or is dropped because the client left) cancels an upstream call
/// still running; `until_cut` cancels it for the shutdown.
async fn answer(state: &AppState, request: &Request, mut call: Call) -> Result<String, HttpError> {
    let started = std::time::Instant::now();
    let (cancel, token) = cancel_pair();
    let params = call.params.take();
    // boxed: the request's future (~9 KB, the application's) is not moved through each layer
    // that awaits it (memmove was 8% of the proxy's CPU)
    let work = until_cut(
        state,
        &cancel,
        Box::pin(dispatch(state, request, params, &call, call.context(token))),
    );
    let outcome = match (&call.session, request.method.as_str()) {
        // A legacy client may cancel its own call with notifications/cancelled.
        (Some(sid), "tools/call") => cancellable(state, sid, &request.id, work).await,
        _ => work.await,
    };
    log_request(state, request, &outcome, started.elapsed(), &call);
    match outcome {
        Ok(answer) => Ok(result_text(&request.id, answer)),
        Err(Failure::Rpc(e)) => Ok(jsonrpc::error_response(Some(&request.id), &e).to_string()),
        Err(Failure::Http(e)) => Err(e.with_id(Some(request.id.clone()))),
    }
}

/// The trace of a `tools/call`: the client's `traceparent` from `params._meta` or the header
/// (continued with a new span id of the proxy's), else a new trace.
pub fn call_trace(meta: Option<&Value>, traceparent: Option<&str>, tracestate: Option<&str>) -> CallTrace {
    let mut random = [0u8; 24];
    if getrandom::fill(&mut random).is_err() {
        // No OS randomness (practically never): ids from the clock, still unique enough to
        // tell calls apart in logs.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        random[..16].copy_from_slice(&nanos.to_le_bytes());
        random[16..].copy_from_slice(&nanos.to_be_bytes()[8..]);
    }
    mcp_wire::trace::call_trace(meta, traceparent, tracestate, random)
}

/// Runs a legacy session's call so that the client can cancel it. Most calls end before a
/// client could cancel them, so a call joins the session table (two messages to another
/// thread) only when it is still running after `TRACK_AFTER`; a cancel that comes earlier is
/// held by the table and applied when the call joins.
async fn cancellable(
    state: &AppState,
    session: &str,
    id: &RequestId,
    call: impl std::future::Future<Output = Result<Answer, Failure>>,
) -> Result<Answer, Failure> {
    tokio::pin!(call);
    tokio::select! {
        r = &mut call => r,
        _ = tokio::time::sleep(sessions::TRACK_AFTER) => {
            let (cancel_tx, cancel_rx) = tokio::sync::oneshot::channel::<()>();
            let request_id = id.to_string();
            state.sessions.do_send(sessions::Track {
                session: session.to_string(),
                request_id: request_id.clone(),
                cancel: cancel_tx,
            });
            let outcome = tokio::select! {
                r = &mut call => r,
                _ = cancel_rx => Err(Failure::Rpc(RpcError::new(jsonrpc::REQUEST_CANCELLED, "Request cancelled by the client"))),
            };
            state.sessions.do_send(sessions::Untrack {
                session: session.to_string(),
                request_id,
            });
            outcome
        }
    }
}

/// The response text for a result. A relayed tool result is written as it came (its
/// members raw), stamped for a modern client.
fn result_text(id: &RequestId, answer: Answer) -> String {
    match answer {
        Answer::Value(v) => jsonrpc::result_response_text(id, &v),
        // The same bytes `result_response` would give (member order jsonrpc, id, result).
        Answer::Text(result) => {
            let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
        }
        Answer::Tool(outcome, era) => match outcome.into_tool_result() {
            ToolResult::Built(v) if era == Era::Modern => jsonrpc::result_response_text(id, &modern_result(v)),
            ToolResult::Built(v) => jsonrpc::result_response_text(id, &v),
            ToolResult::Relayed(mut raw) => {
                if era == Era::Modern {
                    modern_stamp_raw(&mut raw);
                }
                jsonrpc::result_response_text(id, &raw)
            }
        },
    }
}

/// Runs a request unless the shutdown grace period ends first; then its upstream call is
/// cancelled (reason: shutting down) and it is answered with an error that says why.
async fn until_cut(
    state: &AppState,
    cancel: &CancelHandle,
    work: impl std::future::Future<Output = Result<Answer, Failure>>,
) -> Result<Answer, Failure> {
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

/// A request id as text, the way `notifications/cancelled` names it (`5` and `"5"` alike).
fn request_id_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs one request (a `tools/call` with its `params`, read once, and the tool's name kept by
/// `request`, the endpoint's [`Call`]). `call`'s sink receives the notifications (progress)
/// that precede the result, and its token cancels an upstream call in flight.
async fn dispatch(
    state: &AppState,
    req: &Request,
    params: Option<Result<ToolCall, RpcError>>,
    request: &Call,
    call: CallContext,
) -> Result<Answer, Failure> {
    let era = request.era;
    match (era, req.method.as_str()) {
        (Era::Legacy, "initialize") => {
            let params = req.params_object()?;
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            let snap = state.snapshot();
            Ok(Answer::Value(json!({
                "protocolVersion": version::negotiate_legacy(requested),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": server_info(),
                "instructions": instructions(&snap, state.settings.listing_max_chars),
            })))
        }
        (Era::Legacy, "ping") => Ok(Answer::Value(json!({}))),
        (Era::Modern, "server/discover") => {
            let snap = state.snapshot();
            Ok(Answer::Value(modern_result(json!({
                "supportedVersions": modern::all_supported_versions(),
                "capabilities": {"tools": {}},
                "instructions": instructions(&snap, state.settings.listing_max_chars),
                "ttlMs": DISCOVER_TTL_MS,
                "cacheScope": "public",
            }))))
        }
        (_, "tools/list") => {
            let snap = state.snapshot();
            if snap.pinned.is_empty() {
                return Ok(Answer::Text(match era {
                    Era::Legacy => state.tools_list.legacy.clone(),
                    Era::Modern => state.tools_list.modern.clone(),
                }));
            }
            let pinned: Vec<Value> = snap
                .pinned
                .iter()
                .map(|&i| serde_json::to_value(&snap.tools[i].tool).unwrap_or(Value::Null))
                .collect();
            Ok(Answer::Value(tools_list_result(era, &pinned)))
        }
        (_, "tools/call") => {
            let params = params.unwrap_or_else(|| ToolCall::parse(None))?;
            let name = request.tool.as_deref().ok_or_else(tool_call::missing_name)?;
            tools_call(state, era, name, params, call).await
        }
        (Era::Legacy, other) => Err(Failure::Rpc(RpcError::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        ))),
        (Era::Modern, other) => Err(Failure::Http(HttpError::new(
            StatusCode::NOT_FOUND,
            jsonrpc::METHOD_NOT_FOUND,
            format!("Method not found: {other} (not part of protocol version 2026-07-28 on this server)"),
        ))),
    }
}

/// A `tools/call` of `name`, its params read once: parsed against the snapshot's pinned
/// tools and run by the application (a 2026-07-28 client's retry with the answers to the
/// tool's questions).
async fn tools_call(
    state: &AppState,
    era: Era,
    name: &str,
    mut params: ToolCall,
    call: CallContext,
) -> Result<Answer, Failure> {
    // a 2026-07-28 client's retry with the answers to the tool's questions
    let retry = (era == Era::Modern && params.is_retry()).then(|| Retry {
        state: params.request_state_str().map(str::to_string),
        responses: params.input_responses.take(),
    });
    let app = &state.app;
    let parsed = ToolRequest::parse(name, params.arguments, state.snapshot().pinned_names());
    let outcome = match parsed {
        Some(Ok(request)) => {
            let mut call = CallContext {
                meta: params.meta,
                ..call
            };
            call.talk.retry = retry;
            app.run(request, call).await
        }
        Some(Err(usage)) => app.refuse(usage),
        None => return Err(Failure::Rpc(RpcError::new(
            jsonrpc::INVALID_PARAMS,
            format!(
                "Unknown tool: {name}. This server has four tools: the search tool (mcp_search), the describe tool (mcp_describe), the call tool (mcp_call) and the refresh tool (mcp_refresh); run an upstream tool through the call tool."
            ),
        ))),
    };
    Ok(Answer::Tool(outcome, era))
}

/// Stamps a modern result: `resultType` (`complete` unless it says otherwise: an
/// `input_required` round) and the server's identity in `_meta`.
fn modern_result(mut result: Value) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.entry("resultType").or_insert_with(|| json!("complete"));
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert(modern::META_SERVER_INFO.into(), server_info());
        }
    }
    result
}

/// [`modern_result`] for a relayed result, whose members stay raw.
fn modern_stamp_raw(result: &mut RawObject) {
    result.insert_value("resultType", "complete");
    let mut meta = result.object("_meta").unwrap_or_default();
    meta.insert(modern::META_SERVER_INFO.into(), server_info());
    result.insert_value("_meta", &meta);
}

/// Answers a `tools/call` as an SSE stream (see [`stream::notifications_then`]). Dropping the
/// stream (the client left) drops the call's cancel handle, which cancels it upstream. On a
/// 2025-era session that can be asked, the tool's questions go on the stream too
/// (`proxy_actors::asking::relay_questions`).
fn stream_call(state: web::Data<AppState>, request: Request, mut call: Call) -> HttpResponse {
    let (tx, rx) = mpsc::channel::<Value>(proxy_actors::upstream::NOTIFICATION_BUFFER);
    let keepalive = state.settings.sse_keepalive;
    log::debug!(id = request.id.to_string().as_str(); "tools/call answered as a stream");
    let reply = Box::pin(async move {
        let started = std::time::Instant::now();
        let (cancel, token) = cancel_pair();
        let mut context = CallContext {
            events: Some(tx.clone()),
            ..call.context(token)
        };
        let questions = match (&call.session, call.asked_on_stream()) {
            (Some(session), true) => {
                let (asker, questions) = proxy_actors::asking::asker();
                context.talk.asking = Asking::Stream(asker);
                // a 2025-era client gets the log lines a 2025 upstream sends unasked; a
                // 2026-07-28 upstream is asked for them at every level, the same
                context.talk.log_level = Some(LEGACY_LOG_LEVEL.into());
                Some((session.clone(), questions))
            }
            _ => None,
        };
        let params = call.params.take();
        let work = until_cut(
            &state,
            &cancel,
            Box::pin(dispatch(&state, &request, params, &call, context)),
        );
        // a legacy client may cancel its own call with notifications/cancelled
        let work = async {
            match &call.session {
                Some(sid) => cancellable(&state, sid, &request.id, work).await,
                None => work.await,
            }
        };
        let outcome = match questions {
            Some((session, questions)) => {
                let stream = stream::CallStream(tx);
                let app = &state.app;
                alongside(
                    work,
                    relay_questions(app.desk(), app.timeouts(), &session, questions, &stream),
                )
                .await
            }
            None => {
                drop(tx);
                work.await
            }
        };
        log_request(&state, &request, &outcome, started.elapsed(), &call);
        match outcome {
            Ok(answer) => result_text(&request.id, answer),
            Err(Failure::Rpc(e)) => jsonrpc::error_response(Some(&request.id), &e).to_string(),
            Err(Failure::Http(e)) => jsonrpc::error_response(Some(&request.id), e.rpc_error()).to_string(),
        }
    });
    stream::notifications_then(reply, rx, keepalive)
}

/// A request header's value, trimmed. `name` is a lower-case literal: looked up as a static
/// header name (a `&str` name would be parsed, and allocated, on every lookup).
fn header_str<'a>(req: &'a HttpRequest, name: &'static str) -> Option<&'a str> {
    req.headers()
        .get(header::HeaderName::from_static(name))
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// A refusal of the modern era's rules as an HTTP error.
fn refusal(id: Option<RequestId>, r: modern::Refusal) -> HttpError {
    let mut e = RpcError::new(r.code, r.message);
    e.data = r.data;
    HttpError::rpc(StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST), e).with_id(id)
}

/// One line per request: method, the proxy tool for `tools/call`, outcome, latency, the
/// client's group (when tokens are configured) and, for `tools/call`, the trace id. Arguments
/// and tokens are never logged. The request is also counted by method and outcome.
fn log_request(
    state: &AppState,
    req: &Request,
    outcome: &Result<Answer, Failure>,
    elapsed: std::time::Duration,
    call: &Call,
) {
    let outcome_kind = match outcome {
        Ok(Answer::Tool(o, _)) if o.is_error() => "tool_error",
        Ok(_) => "ok",
        Err(_) => "rpc_error",
    };
    state.app.metrics.request(
        &req.method,
        match outcome {
            Err(Failure::Rpc(e)) => proxy_metrics::error_code_label(e.code),
            Err(Failure::Http(e)) => proxy_metrics::error_code_label(e.rpc_error().code),
            Ok(_) => outcome_kind,
        },
    );
    let latency_us = elapsed.as_micros() as u64;
    let client = call.client.as_deref().unwrap_or("");
    if let Some(trace) = &call.trace {
        let tool = call.tool.as_deref().unwrap_or("");
        let trace_id = trace.trace_id.as_str();
        log::info!(method = req.method.as_str(), tool = tool, outcome = outcome_kind, latency_us = latency_us, client = client, trace_id = trace_id; "mcp request");
    } else {
        log::debug!(method = req.method.as_str(), outcome = outcome_kind, latency_us = latency_us, client = client; "mcp request");
    }
}

/// `GET`, `DELETE` and anything else on `/mcp`. A `DELETE` that names a legacy session ends
/// it; there is no standalone server-to-client stream.
pub async fn other_method(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, HttpError> {
    checks::origin(&req, &state.settings)?;
    checks::authenticate(&req, &state.settings)?;
    let modern_claim = header_str(&req, "mcp-protocol-version").is_some_and(modern::is_modern);
    if req.method() == actix_web::http::Method::DELETE && !modern_claim {
        if let Some(sid) = header_str(&req, "mcp-session-id") {
            // Awaited: a request sent after the DELETE's reply must see the session ended
            // (published first), and its questions withdrawn.
            let ended = match state.sessions.send(sessions::End(sid.to_string())).await {
                Ok(()) => state.app.desk().send(EndSession(sid.to_string())).await,
                Err(e) => Err(e),
            };
            return match ended {
                Ok(()) => Ok(HttpResponse::Ok().finish()),
                Err(_) => Err(HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    jsonrpc::INTERNAL_ERROR,
                    "Session table unavailable; retry the DELETE",
                )),
            };
        }
    }
    Err(HttpError::invalid_request(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "Method Not Allowed: {} /mcp; this server has no standalone stream and no sessions, use POST",
            req.method()
        ),
    )
    .with_header(header::ALLOW, "POST"))
}

pub fn server_info() -> Value {
    json!({"name": "mcp-search-proxy", "version": env!("CARGO_PKG_VERSION")})
}

/// The `instructions` text: the workflow, then the tier-1 listing of sources.
pub fn instructions(snap: &proxy_core::catalog::Snapshot, listing_max_chars: usize) -> String {
    let mut s = format!("{}\n", proxy_core::tools::WORKFLOW);
    if snap.tools.is_empty() {
        s.push_str("No tools are available yet (no upstream has answered); try the refresh tool (mcp_refresh).\n");
    } else {
        s.push_str(&format!("Tool sources ({} tools):\n", snap.tools.len()));
        s.push_str(&snap.listing(listing_max_chars));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_serialised_in_advance_are_the_bytes_of_a_fresh_build() {
        let cached = ToolsList::default();
        for (era, text) in [(Era::Legacy, &cached.legacy), (Era::Modern, &cached.modern)] {
            for id in [RequestId::Num(7), RequestId::Str("a\"b".into())] {
                assert_eq!(
                    result_text(&id, Answer::Text(text.clone())),
                    jsonrpc::result_response(&id, tools_list_result(era, &[])).to_string()
                );
            }
        }
    }
}
