//! The demo upstream's Streamable HTTP endpoint (MCP 2025-era) and its control handle.
//!
//! It behaves like the SDK servers the proxy meets in production (spec 2025-11-25, also
//! accepting 2025-06-18 and 2025-03-26 clients), strict where the spec says MUST, so that the
//! proxy's client side is tested against the rules rather than against itself.
//!
//! # Wire behaviour
//! - One endpoint, `POST /mcp`. `GET` gets 405: the server never sends unsolicited messages,
//!   so it offers no standalone stream. `DELETE` with a live session ends it (200; the session
//!   id then gets 404); without sessions, `DELETE` gets 405.
//! - A POST is checked in this order, the first failure answering: simulated outage (503),
//!   bearer token (401), `Origin` not on loopback (403), `Accept` without both
//!   `application/json` and `text/event-stream` (406), `Content-Type` not JSON (415), body not
//!   JSON (400, -32700), array or non-JSON-RPC body (400, -32600; batches were removed in
//!   2025-06-18 and are refused for every version), session (stateful mode: 400 when missing,
//!   404 `Session not found` when unknown), `MCP-Protocol-Version` header (400 when present and
//!   unsupported; absent means 2025-03-26, which changes nothing here).
//! - `initialize` negotiates (echoes a supported version, otherwise answers the latest) and, in
//!   stateful mode, mints a 32-hex-digit `Mcp-Session-Id` from the OS random source. An
//!   `initialize` carrying a session id is refused (404 unknown, 400 already initialised): a
//!   client re-initialising after a 404 must drop its old id, as the spec requires.
//! - Notifications and client responses get 202 with no body; `ping` gets `{}`; unknown methods
//!   get -32601; errors of unreadable requests omit `id`.
//! - Requests are answered as `application/json`, or in SSE mode as `text/event-stream`: a
//!   priming event (`id` and empty `data`, SEP-1699) sent at once, then the response event. The
//!   `tools/call` delay falls between the two, as with a real slow tool.
//! - `tools/list` pages with an opaque `nextCursor` when a page size is set; `tools/call` runs
//!   the tool (see `super::tools`) before waiting out the configured delay.
//!
//! Handlers never hold the state lock across an `.await`; the lock is a plain `Mutex` so that
//! test code on any thread can drive [`UpstreamControl`].

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::header::{self, HeaderMap};
use actix_web::http::StatusCode;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use tokio::task::JoinHandle;

/// Protocol versions this server speaks, newest first (the first is the negotiation fallback).
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// Request bodies above this size get 413; far above any real `tools/call`.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
/// Implementation-defined range, used by the SDKs for transport-level refusals.
const SERVER_ERROR: i64 = -32000;
const SESSION_NOT_FOUND: i64 = -32001;

/// How a demo upstream behaves; everything a test may want to vary is here.
#[derive(Debug, Clone)]
pub struct UpstreamOptions {
    /// Tool definitions served by `tools/list`, verbatim.
    pub tools: Vec<Value>,
    /// Mint `Mcp-Session-Id` on `initialize` and require it afterwards (400 missing, 404
    /// unknown); when false no session header is ever sent and any received one is ignored.
    pub stateful: bool,
    /// Answer requests as `text/event-stream` (priming event, then the response) instead of
    /// `application/json`.
    pub sse: bool,
    /// Split `tools/list` into pages of this many tools, linked by `nextCursor`.
    pub page_size: Option<usize>,
    /// `instructions` of the `initialize` result.
    pub instructions: Option<String>,
    /// `serverInfo.name` of the `initialize` result.
    pub name: String,
    /// When set, every request must carry `Authorization: Bearer <token>` or gets 401.
    pub bearer_token: Option<String>,
    /// Advertise `tools.listChanged` and serve a GET stream that carries
    /// `notifications/tools/list_changed` whenever the tools are replaced (and opens with a
    /// `ping` request the client must answer, as Playwright MCP does).
    pub list_changed: bool,
}

impl Default for UpstreamOptions {
    /// No tools, stateful, JSON replies, one page, no auth: tests override what they exercise.
    fn default() -> Self {
        UpstreamOptions {
            tools: Vec::new(),
            stateful: true,
            sse: false,
            page_size: None,
            instructions: None,
            name: "demo-upstream".to_string(),
            bearer_token: None,
            list_changed: false,
        }
    }
}

impl UpstreamOptions {
    /// The embedded demo catalog, served the way LiteLLM serves it: stateful, SSE replies.
    pub fn demo() -> Self {
        UpstreamOptions {
            tools: super::demo_tools(),
            stateful: true,
            sse: true,
            // Several pages, so the demo also exercises the proxy's pagination.
            page_size: Some(25),
            instructions: Some(
                "Demo upstream of mcp-search-proxy. Tools are named provider-tool_name. Only the \
                 demo-* tools do real work (echo, add, a per-session counter, a failing tool, an \
                 image); the other providers are invented SaaS services whose tools only report \
                 the arguments they received."
                    .to_string(),
            ),
            name: "mcp-search-proxy-demo".to_string(),
            bearer_token: None,
            list_changed: false,
        }
    }
}

/// What the server has seen so far; a snapshot taken by [`UpstreamControl::stats`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// `initialize` requests answered with a result.
    pub initialize: u64,
    /// `notifications/cancelled` received.
    pub cancelled_notifications: u64,
    /// `notifications/initialized` received.
    pub initialized_notifications: u64,
    /// `tools/list` requests (one per page) answered.
    pub tools_list: u64,
    /// `tools/call` requests accepted (counted before the call delay, and for unknown tools).
    pub tools_call: u64,
    /// `ping` requests answered.
    pub ping: u64,
    /// Session ids handed out by `initialize`.
    pub sessions_minted: u64,
    /// Sessions ended by a client `DELETE`.
    pub sessions_deleted: u64,
    /// Sessions alive at snapshot time.
    pub live_sessions: usize,
    /// Requests answered 404 `Session not found`: shows a client hit an expired session.
    pub session_not_found: u64,
    /// GET streams opened (list-changed mode).
    pub get_streams: u64,
    /// Client responses received (answers to the server's pings).
    pub client_responses: u64,
    /// Requests answered 401.
    pub unauthorized: u64,
    /// Name and arguments of the latest `tools/call`.
    pub last_call: Option<(String, Value)>,
    /// Headers of the latest `tools/call`, names lower-cased, repeated values joined by ", ".
    pub last_headers: BTreeMap<String, String>,
}

impl Stats {
    /// A header of the latest `tools/call`, by case-insensitive name.
    pub fn last_header(&self, name: &str) -> Option<&str> {
        self.last_headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// Drives a running upstream from test code (any thread): faults, tool changes, statistics.
#[derive(Clone)]
pub struct UpstreamControl {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for UpstreamControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamControl")
            .field("name", &self.shared.config.name)
            .finish_non_exhaustive()
    }
}

impl UpstreamControl {
    /// A snapshot of the counters and of the latest `tools/call`.
    pub fn stats(&self) -> Stats {
        let state = self.shared.lock();
        Stats {
            live_sessions: state.sessions.len(),
            ..state.stats.clone()
        }
    }

    /// Forgets every session, as a restarted server would: old session ids now get 404
    /// `Session not found` and their counters are gone.
    pub fn expire_sessions(&self) {
        self.shared.lock().sessions.clear();
    }

    /// While down, every request gets HTTP 503 before anything else is looked at.
    pub fn set_down(&self, down: bool) {
        self.shared.lock().down = down;
    }

    /// Replaces the tools served by `tools/list` and accepted by `tools/call`.
    pub fn set_tools(&self, tools: Vec<Value>) {
        let mut state = self.shared.lock();
        state.by_name = index_by_name(&tools);
        state.tools = tools;
        // Tell every open GET stream; closed ones are dropped.
        let note = Bytes::from(
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        );
        state.listeners.retain(|tx| tx.send(note.clone()).is_ok());
    }

    /// Makes every `tools/call` wait this long before its response is sent (zero: no wait).
    pub fn set_call_delay(&self, delay: Duration) {
        self.shared.lock().call_delay = delay;
    }

    /// Makes every `tools/list` page wait this long before its response is sent.
    pub fn set_list_delay(&self, delay: Duration) {
        self.shared.lock().list_delay = delay;
    }
}

/// A started upstream. Dropping it stops the server too; [`RunningUpstream::stop`] also waits.
pub struct RunningUpstream {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp` (loopback even when bound to 0.0.0.0).
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// Fault injection and statistics.
    pub control: UpstreamControl,
    handle: ServerHandle,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for RunningUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningUpstream")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RunningUpstream {
    /// Stops accepting, drops open connections (in-flight calls included) and waits until the
    /// server has shut down.
    pub async fn stop(mut self) {
        self.handle.stop(false).await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RunningUpstream {
    fn drop(&mut self) {
        if self.task.is_some() {
            // The stop command is sent when `stop` is called; the returned future only waits.
            drop(self.handle.stop(false));
        }
    }
}

/// Starts an upstream on `bind` (e.g. `127.0.0.1:0`) and returns once it is listening.
///
/// Call from inside a Tokio or Actix runtime; the server itself runs on its own worker thread,
/// so the caller's runtime only has to stay alive.
pub async fn start(opts: UpstreamOptions, bind: &str) -> io::Result<RunningUpstream> {
    let shared = Arc::new(Shared::new(opts));
    let data = web::Data::from(Arc::clone(&shared));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .service(
                web::resource("/mcp")
                    .route(web::post().to(post_mcp))
                    .route(web::delete().to(delete_mcp))
                    .default_service(web::to(other_method)),
            )
    })
    // One worker is plenty: handlers never block, and tests start many servers.
    .workers(1)
    .disable_signals()
    .shutdown_timeout(1)
    .bind(bind)?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| io::Error::new(io::ErrorKind::AddrNotAvailable, "bind produced no address"))?;
    let server = server.run();
    let handle = server.handle();
    let task = tokio::spawn(server);

    let shown_ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let url = format!("http://{}/mcp", SocketAddr::new(shown_ip, addr.port()));
    log::info!("demo upstream listening; url={url}");
    Ok(RunningUpstream {
        url,
        addr,
        control: UpstreamControl { shared },
        handle,
        task: Some(task),
    })
}

// ---------------------------------------------------------------------------------------------
// State

/// The immutable part of the options.
#[derive(Debug)]
struct Config {
    stateful: bool,
    sse: bool,
    page_size: Option<usize>,
    instructions: Option<String>,
    name: String,
    bearer_token: Option<String>,
    list_changed: bool,
}

#[derive(Debug)]
struct Shared {
    config: Config,
    state: Mutex<State>,
    /// Numbers SSE streams, so event ids are unique across the server's lifetime.
    next_stream: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    tools: Vec<Value>,
    /// Tool name → position in `tools` (a real server finds its tool without a scan; with
    /// 11,739 tools the scan cost more than everything else in a call).
    by_name: HashMap<String, usize>,
    /// Live session id → that session's counter.
    sessions: HashMap<String, u64>,
    /// The counter of stateless mode.
    process_counter: u64,
    down: bool,
    call_delay: Duration,
    list_delay: Duration,
    /// Open GET streams (list-changed mode).
    listeners: Vec<tokio::sync::mpsc::UnboundedSender<Bytes>>,
    stats: Stats,
}

impl Shared {
    fn new(opts: UpstreamOptions) -> Self {
        Shared {
            config: Config {
                stateful: opts.stateful,
                sse: opts.sse,
                page_size: opts.page_size.map(|size| size.max(1)),
                instructions: opts.instructions,
                name: opts.name,
                bearer_token: opts.bearer_token,
                list_changed: opts.list_changed,
            },
            state: Mutex::new(State {
                by_name: index_by_name(&opts.tools),
                tools: opts.tools,
                ..State::default()
            }),
            next_stream: AtomicU64::new(1),
        }
    }

    /// A panicking test thread must not wedge the server, so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The checks every method shares: outage, bearer token, Origin.
    fn admit(&self, req: &HttpRequest) -> Result<(), Refusal> {
        if self.lock().down {
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_ERROR,
                "Service unavailable (simulated outage)",
            ));
        }
        if let Some(token) = &self.config.bearer_token {
            // The scheme name is case-insensitive (RFC 9110 §11.1), the token is not.
            let presented = header_str(req.headers(), header::AUTHORIZATION.as_str())
                .and_then(|value| value.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, presented)| presented.trim());
            if presented != Some(token.as_str()) {
                self.lock().stats.unauthorized += 1;
                return Err(refuse(
                    StatusCode::UNAUTHORIZED,
                    SERVER_ERROR,
                    "Unauthorized: missing or invalid bearer token",
                ));
            }
        }
        if let Some(origin) = header_str(req.headers(), header::ORIGIN.as_str()) {
            if !origin_is_loopback(origin) {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    SERVER_ERROR,
                    "Forbidden: Origin not allowed",
                ));
            }
        }
        Ok(())
    }

    /// The session a non-`initialize` message belongs to (`None` when stateless).
    fn session_of(&self, req: &HttpRequest) -> Result<Option<String>, Refusal> {
        if !self.config.stateful {
            return Ok(None);
        }
        let Some(session) = header_str(req.headers(), SESSION_HEADER) else {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            ));
        };
        let mut state = self.lock();
        if state.sessions.contains_key(session) {
            Ok(Some(session.to_string()))
        } else {
            state.stats.session_not_found += 1;
            Err(session_not_found())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

/// One parsed JSON-RPC message.
enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
    },
    /// A client's answer to a server request; this server never sends any, so it is ignored.
    Response,
}

/// A JSON-RPC error object.
struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }
}

/// What a request produced, before it is framed as JSON or SSE.
struct Reply {
    outcome: Result<Value, RpcError>,
    /// Set on a stateful `initialize`.
    new_session: Option<String>,
    /// Set on `tools/call`: wait this long before the response.
    delay: Duration,
    /// Set on a `tools/call` that carried a progress token: in SSE mode, progress
    /// notifications are sent while the delay runs.
    progress_token: Option<Value>,
}

impl Reply {
    fn now(outcome: Result<Value, RpcError>) -> Self {
        Reply {
            outcome,
            new_session: None,
            delay: Duration::ZERO,
            progress_token: None,
        }
    }
}

async fn post_mcp(req: HttpRequest, body: Bytes, shared: web::Data<Shared>) -> HttpResponse {
    match handle_post(&req, &body, &shared) {
        Ok(Handled::Reply(id, reply)) => respond(&shared, id, *reply).await,
        Ok(Handled::Accepted) => HttpResponse::Accepted().finish(),
        Err(refusal) => refusal.into_response(),
    }
}

/// How a POST that passed every check ends.
enum Handled {
    /// A request: its id and what to answer.
    Reply(Value, Box<Reply>),
    /// A notification or a client response: 202, no body.
    Accepted,
}

/// Everything up to the point where a request has a [`Reply`].
fn handle_post(req: &HttpRequest, body: &[u8], shared: &Shared) -> Result<Handled, Refusal> {
    shared.admit(req)?;
    let headers = req.headers();
    if !accepts_json_and_sse(header_str(headers, header::ACCEPT.as_str()).unwrap_or("")) {
        return Err(refuse(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    let content_type = header_str(headers, header::CONTENT_TYPE.as_str()).unwrap_or("");
    if !media_type_is(content_type, "application/json") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| refuse(StatusCode::BAD_REQUEST, PARSE_ERROR, format!("Parse error: {err}")))?;
    let message = parse_message(value)?;

    if let Message::Request { id, method, params } = &message {
        if method == "initialize" {
            return initialize(req, shared, params).map(|reply| Handled::Reply(id.clone(), Box::new(reply)));
        }
    }
    let session = shared.session_of(req)?;
    if let Some(version) = header_str(headers, VERSION_HEADER) {
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!(
                    "Bad Request: Unsupported protocol version: {version} (supported: {})",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            ));
        }
    }
    match message {
        Message::Request { id, method, params } => {
            let reply = dispatch(req, shared, session.as_deref(), &method, &params);
            Ok(Handled::Reply(id, Box::new(reply)))
        }
        Message::Notification { method } => {
            if method == "notifications/cancelled" {
                shared.lock().stats.cancelled_notifications += 1;
            }
            if method == "notifications/initialized" {
                shared.lock().stats.initialized_notifications += 1;
            }
            Ok(Handled::Accepted)
        }
        Message::Response => {
            shared.lock().stats.client_responses += 1;
            Ok(Handled::Accepted)
        }
    }
}

/// Sorts a JSON value into request / notification / response, or answers 400.
fn parse_message(value: Value) -> Result<Message, Refusal> {
    let Value::Object(mut object) = value else {
        let message = if value.is_array() {
            "Invalid Request: batch requests are not supported"
        } else {
            "Invalid Request: expected a JSON-RPC object"
        };
        return Err(refuse(StatusCode::BAD_REQUEST, INVALID_REQUEST, message));
    };
    // MCP forbids null ids; a request with one must not pass for a notification (202).
    let id = match object.remove("id") {
        None => None,
        Some(id) if id.is_string() || id.is_i64() || id.is_u64() => Some(id),
        Some(_) => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or an integer",
            ))
        }
    };
    let invalid = |id: Option<Value>, why: &str| Refusal {
        id: id.map(Box::new),
        ..refuse(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        )
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request {
            id,
            method,
            params: object.remove("params").unwrap_or(Value::Null),
        }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method }),
        (Some(_), id) => Err(invalid(id, "method must be a string")),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => Ok(Message::Response),
        (None, id) => Err(invalid(id, "no method")),
    }
}

fn initialize(req: &HttpRequest, shared: &Shared, params: &Value) -> Result<Reply, Refusal> {
    let mut state = shared.lock();
    if shared.config.stateful {
        if let Some(session) = header_str(req.headers(), SESSION_HEADER) {
            // A client re-initialising must start without its old id (spec: "without a
            // session ID attached"); real SDK servers refuse it the same way.
            if state.sessions.contains_key(session) {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    INVALID_REQUEST,
                    "Bad Request: Server already initialized for this session",
                ));
            }
            state.stats.session_not_found += 1;
            return Err(session_not_found());
        }
    }
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        return Ok(Reply::now(Err(RpcError::new(
            INVALID_PARAMS,
            "Invalid params: protocolVersion is required",
        ))));
    };
    let negotiated = if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested) {
        requested
    } else {
        SUPPORTED_PROTOCOL_VERSIONS[0]
    };
    let new_session = shared.config.stateful.then(|| {
        let session = mint_session_id();
        state.sessions.insert(session.clone(), 0);
        state.stats.sessions_minted += 1;
        session
    });
    state.stats.initialize += 1;

    let mut result = json!({
        "protocolVersion": negotiated,
        "capabilities": {"tools": {"listChanged": shared.config.list_changed}},
        "serverInfo": {"name": shared.config.name, "version": env!("CARGO_PKG_VERSION")},
    });
    if let Some(instructions) = &shared.config.instructions {
        result["instructions"] = json!(instructions);
    }
    Ok(Reply {
        outcome: Ok(result),
        new_session,
        delay: Duration::ZERO,
        progress_token: None,
    })
}

/// Runs a post-`initialize` request.
fn dispatch(req: &HttpRequest, shared: &Shared, session: Option<&str>, method: &str, params: &Value) -> Reply {
    match method {
        "ping" => {
            shared.lock().stats.ping += 1;
            Reply::now(Ok(json!({})))
        }
        "tools/list" => {
            let delay = shared.lock().list_delay;
            Reply {
                delay,
                ..Reply::now(list_tools(shared, params))
            }
        }
        "tools/call" => call_tool(req, shared, session, params),
        _ => Reply::now(Err(RpcError::new(METHOD_NOT_FOUND, "Method not found"))),
    }
}

fn list_tools(shared: &Shared, params: &Value) -> Result<Value, RpcError> {
    let mut state = shared.lock();
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => decode_cursor(cursor)
            .filter(|offset| *offset <= state.tools.len())
            .ok_or_else(|| RpcError::new(INVALID_PARAMS, "Invalid params: invalid cursor"))?,
        Some(_) => return Err(RpcError::new(INVALID_PARAMS, "Invalid params: cursor must be a string")),
    };
    let end = match shared.config.page_size {
        Some(size) => offset.saturating_add(size).min(state.tools.len()),
        None => state.tools.len(),
    };
    let mut result = json!({"tools": &state.tools[offset..end]});
    if end < state.tools.len() {
        result["nextCursor"] = json!(encode_cursor(end));
    }
    state.stats.tools_list += 1;
    Ok(result)
}

fn call_tool(req: &HttpRequest, shared: &Shared, session: Option<&str>, params: &Value) -> Reply {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Reply::now(Err(RpcError::new(
            INVALID_PARAMS,
            "Invalid params: name must be a string",
        )));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            return Reply::now(Err(RpcError::new(
                INVALID_PARAMS,
                "Invalid params: arguments must be an object",
            )))
        }
    };

    let mut state = shared.lock();
    let state = &mut *state;
    state.stats.tools_call += 1;
    state.stats.last_call = Some((name.to_string(), Value::Object(arguments.clone())));
    state.stats.last_headers = header_snapshot(req.headers());
    let delay = state.call_delay;
    let Some(definition) = state.by_name.get(name).map(|&i| &state.tools[i]) else {
        return Reply::now(Err(RpcError::new(INVALID_PARAMS, format!("Unknown tool: {name}"))));
    };
    // An expired session cannot reach here (checked above), but stay total anyway.
    let counter = match session.and_then(|id| state.sessions.get_mut(id)) {
        Some(counter) => counter,
        None => &mut state.process_counter,
    };
    let result = super::tools::call(definition, &arguments, counter);
    Reply {
        outcome: Ok(result),
        new_session: None,
        delay,
        progress_token: params.get("_meta").and_then(|m| m.get("progressToken")).cloned(),
    }
}

/// Frames a [`Reply`] as one JSON body or as an SSE stream.
async fn respond(shared: &Shared, id: Value, reply: Reply) -> HttpResponse {
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

/// `DELETE /mcp`: ends the named session (stateful mode) so that its id gets 404 afterwards.
async fn delete_mcp(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    if let Err(refusal) = shared.admit(&req) {
        return refusal.into_response();
    }
    if !shared.config.stateful {
        return method_not_allowed(&shared);
    }
    match shared.session_of(&req) {
        Ok(Some(session)) => {
            let mut state = shared.lock();
            state.sessions.remove(&session);
            state.stats.sessions_deleted += 1;
            HttpResponse::Ok().finish()
        }
        Ok(None) => method_not_allowed(&shared),
        Err(refusal) => refusal.into_response(),
    }
}

/// Any other method on `/mcp`, GET included: this server offers no standalone SSE stream.
async fn other_method(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    if let Err(refusal) = shared.admit(&req) {
        return refusal.into_response();
    }
    if req.method() != actix_web::http::Method::GET || !shared.config.list_changed {
        return method_not_allowed(&shared);
    }
    if let Err(refusal) = shared.session_of(&req) {
        return refusal.into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let ping = Bytes::from("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-ping-1\",\"method\":\"ping\"}\n\n");
    let _ = tx.send(ping);
    {
        let mut state = shared.lock();
        state.listeners.push(tx);
        state.stats.get_streams += 1;
    }
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(body)
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn method_not_allowed(shared: &Shared) -> HttpResponse {
    let allow = if shared.config.stateful { "POST, DELETE" } else { "POST" };
    let mut response = refuse(StatusCode::METHOD_NOT_ALLOWED, SERVER_ERROR, "Method Not Allowed").into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static(allow));
    response
}

fn session_not_found() -> Refusal {
    refuse(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found")
}

/// A refusal whose body will carry no `id` (the request's id is unknown).
fn refuse(status: StatusCode, code: i64, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        error: RpcError::new(code, message),
        id: None,
    }
}

/// A message refused before dispatch: an HTTP error status with a JSON-RPC error body.
struct Refusal {
    status: StatusCode,
    error: RpcError,
    /// The request's id when it could be read (boxed: refusals travel in `Result::Err`).
    id: Option<Box<Value>>,
}

impl Refusal {
    fn into_response(self) -> HttpResponse {
        let mut body = json!({
            "jsonrpc": "2.0",
            "error": {"code": self.error.code, "message": self.error.message},
        });
        if let Some(id) = self.id {
            body["id"] = *id;
        }
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        response.json(body)
    }
}

/// A header as text; absent and non-ASCII values are treated alike.
fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn header_snapshot(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut snapshot: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers.iter() {
        let value = String::from_utf8_lossy(value.as_bytes());
        snapshot
            .entry(name.as_str().to_string())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    snapshot
}

/// Position of each tool by name; the first of duplicate names wins, as the scan did.
fn index_by_name(tools: &[Value]) -> HashMap<String, usize> {
    let mut by_name = HashMap::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            by_name.entry(name.to_string()).or_insert(i);
        }
    }
    by_name
}

/// Whether an `Accept` value admits both reply types (wildcards count).
fn accepts_json_and_sse(accept: &str) -> bool {
    let types: Vec<String> = accept
        .split(',')
        .map(|part| part.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .collect();
    let admits = |exact: &str, family: &str| types.iter().any(|t| t == exact || t == family || t == "*/*");
    admits("application/json", "application/*") && admits("text/event-stream", "text/*")
}

/// Whether a `Content-Type` value names `media_type`, ignoring parameters and case.
fn media_type_is(content_type: &str, media_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(media_type))
}

/// DNS-rebinding protection (spec: servers MUST validate `Origin`): this server is local, so
/// only loopback origins are allowed.
fn origin_is_loopback(origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split([':', '/']).next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}

/// 128 random bits from the OS as 32 hex digits (visible ASCII, as the spec requires).
fn mint_session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Cursors are opaque to clients; inside they are the hex of `offset:N`.
fn encode_cursor(offset: usize) -> String {
    hex(format!("offset:{offset}").as_bytes())
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    if cursor.len() % 2 != 0 || !cursor.is_ascii() {
        return None;
    }
    let bytes = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&cursor[i..i + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()?.strip_prefix("offset:")?.parse().ok()
}

#[cfg(test)]
mod tests;
