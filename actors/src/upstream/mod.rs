//! `UpstreamActor`: one per configured upstream MCP server, speaking either protocol era.
//!
//! The actor owns everything that is per-upstream state: the awc client (created on the
//! actor's own arbiter thread, never shared across threads), the bearer token, the timeout,
//! the protocol era and the legacy session (`Mcp-Session-Id`, negotiated version). Requests run
//! concurrently: each message handler returns a future on the actor's thread, so a slow
//! `tools/call` never blocks a `tools/list` or another call.
//!
//! # Era and session state machine (single-flight; `generation` counts (re)initializations)
//!
//! ```text
//!  Unready ──first request──► probe: POST server/discover (2026-07-28 _meta + headers)
//!     ▲                          │ result listing 2026-07-28, or a modern 400 (-32020/-32021/-32602)
//!     │                          ├──────────────► Ready{Modern}: every request stamped, no session
//!     │                          │ anything else (400/404/405 non-modern error, -32601, -32022)
//!     │                          └──────────────► initialize + notifications/initialized
//!     │                                               └──► Ready{Legacy, session?, version}
//!     ├── timeout: the handshake (waiting for the one in flight included) took longer than the
//!     │   upstream's timeout; the lock is released and the next request handshakes anew
//!     └── reset(gen) ◄── Legacy: a request that carried the session got 404/400/"session expired"
//!                    ◄── Modern: a request got a non-modern refusal (the upstream changed era)
//!         (only if nobody else reset since `gen`; then the request is retried once)
//! ```
//! Every way into a handshake (a request's `ensure_ready`, `reset`, the list-change follower)
//! is bounded by the upstream's timeout, so a handshake the upstream never answers cannot hold
//! the init lock past that; `EndSession` does not handshake and its `DELETE` is bounded too
//! (by the upstream's timeout, and at most 2 s).
//! The era found is reported with each listing, stored in the manifest, and given back as a
//! hint at the next start (a legacy hint skips the probe). A legacy upstream whose
//! `initialize` reply carries no `Mcp-Session-Id` is stateless: no session header is ever
//! sent and a 400 is an ordinary error, never a reset.
//!
//! # Calls: progress, timeouts, cancellation
//! `notifications/progress` arriving on a call's SSE stream are forwarded to the caller as they
//! come, and each one extends the call's timeout (by one upstream timeout, up to four times
//! the timeout in all). A timeout error states how long the request really ran. If the
//! caller's receiver is dropped (its client went away), the call is abandoned: the upstream
//! stream is closed (the modern era's cancellation) and a legacy upstream is also sent
//! `notifications/cancelled` for the request.
//!
//! # What an upstream is not trusted with
//! Redirects are never followed (see [`transport`]). Everything an upstream sends that the
//! proxy would hold or loop on is bounded, and a refusal names its limit: a reply's size
//! (`max_response_bytes`, all SSE streams of one reply together), the pages (1000), tools
//! (50,000) and bytes (128 MiB) of one listing, a `nextCursor` (4 KiB), the `Mcp-Session-Id`
//! (1 KiB), an event of the list-change stream (64 KiB), a reply head read directly (64 KiB,
//! see `raw.rs`). The `instructions` text is not refused but cut to 8 KiB at a character
//! boundary, with a note saying so; an upstream's error message is repeated (in errors, logs
//! and to the model) up to 1000 characters.

pub mod cancel;
pub mod error;
mod raw;
pub mod transport;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
pub use mcp_wire::Era;
use serde_json::{json, Map, Value};

pub use cancel::{cancel_pair, CancelHandle, CancelReason, CancelToken};
pub use error::UpstreamError;
use transport::{Envelope, Message, NotificationSink};

use mcp_wire::jsonrpc::{self, RequestId, RpcError};
use mcp_wire::types::Tool;
use mcp_wire::{modern, version};

/// Static description of one upstream, from configuration.
#[derive(Debug, Clone)]
pub struct UpstreamSpec {
    /// Short unique name used in logs, sources and the manifest.
    pub label: String,
    pub url: String,
    /// Bearer token; never logged.
    pub token: Option<String>,
    /// Limit for one request (initialization and reading the reply included); progress
    /// notifications extend it up to four times.
    pub timeout: Duration,
    /// Replies larger than this are refused instead of buffered.
    pub max_response_bytes: usize,
    /// The era found last time (from the manifest); `Legacy` skips the discovery probe.
    pub era_hint: Option<Era>,
}

/// Result of listing an upstream's tools.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Definitions equal to one of [`ListTools::previous`] are that very `Arc`.
    pub tools: Vec<Arc<Tool>>,
    /// The upstream's `instructions` (from `initialize` or `server/discover`), if any.
    pub instructions: Option<String>,
    pub era: Era,
    pub protocol_version: String,
    /// Modern upstreams: the smallest positive `ttlMs` of the listing's pages.
    pub ttl_ms: Option<u64>,
}

/// `tools/list`, all pages.
#[derive(Message, Default)]
#[rtype(result = "Result<Listing, UpstreamError>")]
pub struct ListTools {
    /// The previous listing of this upstream. A definition that has not changed is not kept
    /// twice: the listing reuses the previous `Arc` (with its cached hash) as each page is
    /// read, so a refresh of an unchanged catalog holds one copy of the definitions.
    pub previous: Vec<Arc<Tool>>,
}

/// `tools/call` of one upstream tool; the upstream's `result` object is returned unchanged.
#[derive(Message)]
#[rtype(result = "Result<Value, UpstreamError>")]
pub struct CallTool {
    pub name: String,
    pub arguments: Value,
    /// The tool's input schema (modern era: which arguments are mirrored into `Mcp-Param-*`).
    pub input_schema: Arc<Value>,
    /// Client `_meta` to pass on (e.g. `progressToken`), reserved keys already removed.
    pub meta: Map<String, Value>,
    /// Where `notifications/*` that precede the result are forwarded.
    pub notifications: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    /// Abandons the call when its handle cancels it or is dropped (see [`cancel`]).
    pub cancel: Option<CancelToken>,
}

/// Current session facts, for logs and tests (never contains the session id itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamStatus {
    pub label: String,
    pub initialized: bool,
    pub era: Option<Era>,
    pub has_session: bool,
    pub protocol_version: Option<String>,
    pub generation: u64,
}

#[derive(Message)]
#[rtype(result = "UpstreamStatus")]
pub struct GetStatus;

/// Ends the legacy session politely (`DELETE` with the session id; 405 is fine), e.g. at
/// shutdown, so a stateful upstream can free what it keeps per session.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndSession;

/// Tells the catalog that an upstream's tool list changed (it re-lists, debounced).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct ToolsChanged {
    pub label: String,
}

/// Starts following the upstream's list changes, if it advertises `tools.listChanged`: the
/// GET stream of a legacy upstream, a `subscriptions/listen` stream of a modern one. Each
/// `notifications/tools/list_changed` is reported to `to`. The stream is reopened with
/// back-off when it breaks; an upstream without the capability (or that refuses the stream)
/// is left alone, and the TTL and the unknown-tool re-list keep its catalog current.
#[derive(Message)]
#[rtype(result = "()")]
pub struct FollowListChanges {
    pub to: Recipient<ToolsChanged>,
}

impl Handler<FollowListChanges> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: FollowListChanges, ctx: &mut Self::Context) {
        let conn = self.conn.clone();
        ctx.spawn(async move { conn.follow_list_changes(msg.to).await }.into_actor(self));
    }
}

/// The actor. All state lives in `conn`, shared with the request futures on this thread.
pub struct UpstreamActor {
    conn: Rc<Connection>,
}

impl UpstreamActor {
    /// Starts the actor on its own arbiter (thread), creating the awc client there.
    pub fn start_on_new_arbiter(spec: UpstreamSpec) -> (Addr<UpstreamActor>, actix::Arbiter) {
        let arbiter = actix::Arbiter::new();
        let addr = UpstreamActor::start_in_arbiter(&arbiter.handle(), move |_| UpstreamActor {
            conn: Rc::new(Connection::new(spec)),
        });
        (addr, arbiter)
    }
}

impl Actor for UpstreamActor {
    type Context = Context<Self>;
}

/// `tool`, or the previous listing's equal definition.
fn reuse_unchanged(previous: &std::collections::HashMap<&str, &Arc<Tool>>, tool: Tool) -> Arc<Tool> {
    match previous.get(tool.name.as_str()) {
        Some(prev) if ***prev == tool => Arc::clone(prev),
        _ => Arc::new(tool),
    }
}

impl Handler<ListTools> for UpstreamActor {
    type Result = ResponseFuture<Result<Listing, UpstreamError>>;

    fn handle(&mut self, msg: ListTools, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let started = Instant::now();
            let out = conn.with_timeout(conn.list_tools(&msg.previous)).await;
            let ms = started.elapsed().as_millis() as u64;
            match &out {
                Ok(l) => {
                    log::debug!(upstream = conn.spec.label.as_str(), tools = l.tools.len(), latency_ms = ms; "upstream listed")
                }
                Err(e) => {
                    log::warn!(upstream = conn.spec.label.as_str(), error = e.to_string().as_str(), latency_ms = ms; "upstream list failed")
                }
            }
            out
        })
    }
}

impl Handler<CallTool> for UpstreamActor {
    type Result = ResponseFuture<Result<Value, UpstreamError>>;

    fn handle(&mut self, msg: CallTool, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let started = Instant::now();
            let tool = msg.name.clone();
            let out = conn.call_tool(msg).await;
            let ms = started.elapsed().as_millis() as u64;
            match &out {
                Ok(_) => {
                    // Debug: every call already has its info line (`mcp request`); two lines per call
                    // cost ~10% of the proxy's throughput at the default level.
                    log::debug!(upstream = conn.spec.label.as_str(), tool = tool.as_str(), latency_ms = ms; "upstream call")
                }
                Err(e) => {
                    log::warn!(upstream = conn.spec.label.as_str(), tool = tool.as_str(), error = e.to_string().as_str(), latency_ms = ms; "upstream call failed")
                }
            }
            out
        })
    }
}

impl Handler<GetStatus> for UpstreamActor {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _: GetStatus, _: &mut Self::Context) -> Self::Result {
        let s = self.conn.session.borrow();
        MessageResult(UpstreamStatus {
            label: self.conn.spec.label.clone(),
            initialized: s.ready,
            era: s.era,
            has_session: s.session_id.is_some(),
            protocol_version: s.ready.then(|| s.protocol_version.clone()),
            generation: s.generation,
        })
    }
}

impl Handler<EndSession> for UpstreamActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: EndSession, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let (sid, version) = {
                let mut s = conn.session.borrow_mut();
                if s.session_id.is_some() {
                    s.ready = false;
                }
                (s.session_id.take(), s.protocol_version.clone())
            };
            let Some(sid) = sid else { return };
            let envelope = Envelope::Legacy {
                session_id: Some(&sid),
                version: &version,
            };
            // Bounded like everything sent upstream: by the upstream's timeout, and at most 2 s
            // (it runs at shutdown).
            let bound = conn.spec.timeout.min(END_SESSION_TIMEOUT);
            let end = conn.client.end_session(envelope);
            let _ = tokio::time::timeout(bound, end).await;
            log::debug!(upstream = conn.spec.label.as_str(); "upstream session ended");
        })
    }
}

/// Era and session state.
#[derive(Debug, Default)]
struct Session {
    /// Known era (from a probe, or the manifest's hint before the first probe).
    era: Option<Era>,
    ready: bool,
    session_id: Option<String>,
    protocol_version: String,
    instructions: Option<String>,
    generation: u64,
    /// Whether the upstream advertises `tools.listChanged` (it can tell us when to re-list).
    list_changed: bool,
}

/// How one attempt ended, before the retry decision.
enum Attempt {
    Done(Result<Value, UpstreamError>),
    /// Legacy: the request carried a session the upstream no longer knows.
    SessionLost,
    /// Modern: the upstream refused in a way that says it no longer speaks this era.
    EraChanged,
}

/// Per-upstream connection state, shared by the actor and its in-flight request futures
/// (all on the actor's thread, hence `Rc`/`RefCell`; no borrow is held across an await).
struct Connection {
    spec: UpstreamSpec,
    client: transport::Client,
    session: RefCell<Session>,
    /// Serialises (re-)initialization so concurrent requests share one handshake.
    init_lock: tokio::sync::Mutex<()>,
    next_id: Cell<i64>,
}

/// What a request needs besides method and params.
#[derive(Default, Clone, Copy)]
struct RequestOptions<'a> {
    /// `Mcp-Name` (tools/call).
    name: Option<&'a str>,
    /// Tool input schema, for `Mcp-Param-*` (modern) headers.
    input_schema: Option<&'a Value>,
    /// Caller's `_meta` to include.
    meta: Option<&'a Map<String, Value>>,
    /// Receives notifications that precede the response.
    sink: NotificationSink<'a>,
    /// Records the id of the attempt in flight (for `notifications/cancelled`).
    current_id: Option<&'a Cell<Option<i64>>>,
    /// Adds up the body bytes of the replies read (a listing's budget across its pages).
    received: Option<&'a Cell<usize>>,
}

const CLIENT_NAME: &str = "mcp-search-proxy";
/// Progress can stretch a call to at most this many upstream timeouts.
const PROGRESS_TIMEOUT_FACTOR: u32 = 4;
/// `EndSession` runs at shutdown: its `DELETE` waits at most this long (and at most the
/// upstream's timeout).
const END_SESSION_TIMEOUT: Duration = Duration::from_secs(2);

// What an upstream can make the proxy hold or loop on (it is trusted no more than a client).
// Each refusal is an `InvalidReply` that names its limit.

/// Pages of one `tools/list` listing.
const MAX_PAGES: usize = 1000;
/// Tools of one listing, all pages together.
const MAX_LISTED_TOOLS: usize = 50_000;
/// Bytes of one listing's replies, all pages together (or one page's cap, if larger). A real
/// catalog of 11,739 tools is ~16 MB of JSON.
const MAX_LISTING_BYTES: usize = 128 * 1024 * 1024;
/// A `nextCursor` (kept for the repeat check, sent back on the next page).
const MAX_CURSOR_BYTES: usize = 4096;
/// The `Mcp-Session-Id` sent back with every request of the session.
const MAX_SESSION_ID_BYTES: usize = 1024;
/// The upstream's `instructions`: a longer text is cut (at a character boundary) and says so.
const MAX_INSTRUCTIONS_BYTES: usize = 8192;
/// An upstream's error message, as repeated in the proxy's errors and logs.
const MAX_ERROR_MESSAGE_CHARS: usize = 1000;
/// One event (or unfinished line) of the list-change stream, which only ever carries short
/// notifications and pings (and at most the reply cap).
const MAX_STREAM_EVENT_BYTES: usize = 64 * 1024;

impl Connection {
    fn new(spec: UpstreamSpec) -> Self {
        let connect_timeout = spec.timeout.min(Duration::from_secs(10));
        let session = Session {
            era: spec.era_hint,
            ..Default::default()
        };
        Connection {
            client: transport::Client::new(spec.url.clone(), spec.token.clone(), connect_timeout),
            spec,
            session: RefCell::new(session),
            init_lock: tokio::sync::Mutex::new(()),
            next_id: Cell::new(1),
        }
    }

    /// Runs `fut` within the upstream's timeout; a timeout states the real elapsed time.
    async fn with_timeout<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, UpstreamError>>,
    ) -> Result<T, UpstreamError> {
        let started = Instant::now();
        match tokio::time::timeout(self.spec.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout {
                elapsed: started.elapsed(),
            }),
        }
    }

    fn fresh_id(&self) -> i64 {
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        id
    }

    /// The list-changes loop (see [`FollowListChanges`]).
    async fn follow_list_changes(&self, to: Recipient<ToolsChanged>) {
        let mut backoff = Duration::from_secs(1);
        loop {
            let opened = Instant::now();
            let outcome = match self.ensure_ready().await {
                Ok(_) if !self.session.borrow().list_changed => return,
                Ok(_) => self.listen_once(&to).await,
                Err(e) => Err(e),
            };
            match outcome {
                // The upstream has no such stream: nothing to follow.
                Ok(false) => {
                    log::debug!(upstream = self.spec.label.as_str(); "upstream offers no list-change stream");
                    return;
                }
                Ok(true) => {}
                Err(e) => {
                    log::debug!(upstream = self.spec.label.as_str(), error = e.to_string().as_str(); "list-change stream failed")
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

    /// Opens one list-change stream and reads it until it ends. `Ok(false)` when the upstream
    /// refuses such streams (405, -32601).
    async fn listen_once(&self, to: &Recipient<ToolsChanged>) -> Result<bool, UpstreamError> {
        let (era, session_id, version) = {
            let s = self.session.borrow();
            (
                s.era.unwrap_or(Era::Legacy),
                s.session_id.clone(),
                s.protocol_version.clone(),
            )
        };
        // Opening the stream is bounded like any request; reading it is not (it is meant to
        // stay open), but each of its events is.
        let open = match era {
            Era::Legacy => {
                let envelope = Envelope::Legacy {
                    session_id: session_id.as_deref(),
                    version: &version,
                };
                self.with_timeout(self.client.open_stream(envelope, None)).await
            }
            Era::Modern => {
                let id = RequestId::Num(self.fresh_id());
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
                let open = self
                    .client
                    .open_stream(Envelope::Modern, Some((message, Bytes::from(body.to_string()))));
                self.with_timeout(open).await
            }
        };
        let mut resp = open?;
        let status = resp.status;
        let is_sse = resp.is_sse();
        if status == 404 && era == Era::Legacy && session_id.is_some() {
            // The session is gone: the next ensure_ready re-initializes.
            self.session.borrow_mut().ready = false;
            return Err(UpstreamError::Http {
                status,
                detail: "session not found".into(),
            });
        }
        if status == 405 || !is_sse || !(200..300).contains(&status) {
            let refused = status == 405 || (200..300).contains(&status) || status == 404;
            return if refused {
                Ok(false)
            } else {
                Err(UpstreamError::Http {
                    status,
                    detail: String::new(),
                })
            };
        }
        log::debug!(upstream = self.spec.label.as_str(), era = era.as_str(); "following upstream list changes");
        let max_event = MAX_STREAM_EVENT_BYTES.min(self.spec.max_response_bytes);
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
                return Err(UpstreamError::InvalidReply(format!(
                    "an event on the list-change stream exceeds {max_event} bytes"
                )));
            }
            for ev in events {
                let Ok(msg) = serde_json::from_str::<Value>(&ev.data) else {
                    continue;
                };
                match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                    (Some("notifications/tools/list_changed"), None) => {
                        log::info!(upstream = self.spec.label.as_str(); "upstream tool list changed");
                        to.do_send(ToolsChanged {
                            label: self.spec.label.clone(),
                        });
                    }
                    // Requests on the standalone stream (pings) must be answered, or some
                    // servers end the session.
                    (Some(method), Some(id)) => self.answer_server_request(method, id.clone()).await,
                    _ => {}
                }
            }
        }
        Ok(true)
    }

    /// Answers a server-to-client request: `ping` with `{}`, anything else with -32601 (the
    /// proxy declares no client capabilities).
    async fn answer_server_request(&self, method: &str, id: Value) {
        let body = if method == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": jsonrpc::METHOD_NOT_FOUND, "message": format!("Method not found: {method}")}})
        };
        self.post_in_session(&body, Duration::from_secs(5)).await;
    }

    /// Fire-and-forget POST of a notification or a response within the legacy session,
    /// bounded by `timeout`; failures are not interesting to anyone.
    async fn post_in_session(&self, message: &Value, timeout: Duration) {
        let (era, session_id, version) = {
            let s = self.session.borrow();
            (s.era, s.session_id.clone(), s.protocol_version.clone())
        };
        let envelope = match era {
            Some(Era::Modern) => Envelope::Modern,
            _ => Envelope::Legacy {
                session_id: session_id.as_deref(),
                version: &version,
            },
        };
        let what = Message {
            method: message.get("method").and_then(Value::as_str),
            ..Default::default()
        };
        let body = Bytes::from(message.to_string());
        let send = self.client.post(envelope, what, body, None, 64 * 1024, None);
        let _ = tokio::time::timeout(timeout.min(self.spec.timeout), send).await;
    }

    async fn list_tools(&self, previous: &[Arc<Tool>]) -> Result<Listing, UpstreamError> {
        let previous: std::collections::HashMap<&str, &Arc<Tool>> =
            previous.iter().map(|t| (t.name.as_str(), t)).collect();
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen_cursors = std::collections::HashSet::new();
        let mut ttl_ms: Option<u64> = None;
        let received = Cell::new(0usize);
        let max_bytes = MAX_LISTING_BYTES.max(self.spec.max_response_bytes);
        let opts = RequestOptions {
            received: Some(&received),
            ..Default::default()
        };
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let mut result = self.request("tools/list", params, opts).await?;
            if received.get() > max_bytes {
                return Err(UpstreamError::InvalidReply(format!(
                    "tools/list pages add up to more than {max_bytes} bytes (the proxy's limit for one listing)"
                )));
            }
            let page = match result.get_mut("tools").map(Value::take) {
                Some(Value::Array(page)) => page,
                _ => {
                    return Err(UpstreamError::InvalidReply(
                        "tools/list result has no tools array".into(),
                    ))
                }
            };
            if tools.len() + page.len() > MAX_LISTED_TOOLS {
                return Err(UpstreamError::InvalidReply(format!(
                    "tools/list returned more than {MAX_LISTED_TOOLS} tools (the proxy's limit for one upstream)"
                )));
            }
            let modern_era = self.session.borrow().era == Some(Era::Modern);
            for t in page {
                match serde_json::from_value::<Tool>(t) {
                    Ok(tool) if tool.name.is_empty() => {
                        log::warn!(upstream = self.spec.label.as_str(); "upstream tool skipped: empty name")
                    }
                    Ok(tool)
                        if modern_era
                            && tool.rest().input_schema_raw().contains("x-mcp-header")
                            && !modern::x_mcp_headers_valid(&tool.input_schema()) =>
                    {
                        log::warn!(upstream = self.spec.label.as_str(), tool = tool.name.as_str(); "upstream tool skipped: invalid x-mcp-header annotations")
                    }
                    Ok(tool) => tools.push(reuse_unchanged(&previous, tool)),
                    Err(_) => {
                        log::warn!(upstream = self.spec.label.as_str(); "upstream tool skipped: not a valid tool definition")
                    }
                }
            }
            if let Some(t) = result.get("ttlMs").and_then(Value::as_u64).filter(|t| *t > 0) {
                ttl_ms = Some(ttl_ms.map_or(t, |m| m.min(t)));
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => {
                    if next.len() > MAX_CURSOR_BYTES {
                        return Err(UpstreamError::InvalidReply(format!(
                            "tools/list nextCursor is {} bytes, longer than the proxy's {MAX_CURSOR_BYTES}-byte limit",
                            next.len()
                        )));
                    }
                    if !seen_cursors.insert(next.to_string()) {
                        return Err(UpstreamError::InvalidReply(
                            "tools/list pagination repeats a cursor".into(),
                        ));
                    }
                    cursor = Some(next.to_string());
                }
                None => {
                    let s = self.session.borrow();
                    return Ok(Listing {
                        tools,
                        instructions: s.instructions.clone(),
                        era: s.era.unwrap_or(Era::Legacy),
                        protocol_version: s.protocol_version.clone(),
                        ttl_ms,
                    });
                }
            }
        }
        Err(UpstreamError::InvalidReply(format!(
            "tools/list has more than {MAX_PAGES} pages"
        )))
    }

    async fn call_tool(&self, msg: CallTool) -> Result<Value, UpstreamError> {
        let params = json!({ "name": msg.name, "arguments": msg.arguments });
        let last_activity = Cell::new(Instant::now());
        let current_id: Cell<Option<i64>> = Cell::new(None);
        let forward = |v: Value| {
            if v.get("method").and_then(Value::as_str) == Some("notifications/progress") {
                last_activity.set(Instant::now());
            }
            if let Some(tx) = &msg.notifications {
                let _ = tx.send(v);
            }
        };
        let opts = RequestOptions {
            name: Some(&msg.name),
            input_schema: Some(&msg.input_schema),
            meta: Some(&msg.meta),
            sink: Some(&forward),
            current_id: Some(&current_id),
            received: None,
        };
        let call = self.request("tools/call", Some(params), opts);
        let mut token = msg.cancel.clone();
        let cancelled = async {
            match token.as_mut() {
                Some(t) => t.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            r = self.with_progress_timeout(call, &last_activity) => r,
            reason = cancelled => {
                self.cancel_upstream(current_id.get(), reason).await;
                return Err(UpstreamError::Cancelled(reason));
            }
        };
        let result = outcome?;
        if !result.is_object() {
            return Err(UpstreamError::InvalidReply("tools/call result is not an object".into()));
        }
        Ok(result)
    }

    /// Like `with_timeout`, but each progress notification restarts the clock, within
    /// `PROGRESS_TIMEOUT_FACTOR` timeouts in all.
    async fn with_progress_timeout<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, UpstreamError>>,
        last_activity: &Cell<Instant>,
    ) -> Result<T, UpstreamError> {
        let timeout = self.spec.timeout;
        let started = Instant::now();
        let hard_cap = started + timeout * PROGRESS_TIMEOUT_FACTOR;
        tokio::pin!(fut);
        loop {
            let deadline = (last_activity.get() + timeout).min(hard_cap);
            tokio::select! {
                r = &mut fut => return r,
                _ = tokio::time::sleep_until(deadline.into()) => {
                    let now = Instant::now();
                    if now >= hard_cap || last_activity.get() + timeout <= now {
                        return Err(UpstreamError::Timeout { elapsed: started.elapsed() });
                    }
                }
            }
        }
    }

    /// A legacy upstream is told the request is cancelled (the modern era's cancellation is
    /// the closed stream itself, already done by dropping the request).
    async fn cancel_upstream(&self, id: Option<i64>, reason: CancelReason) {
        let era = self.session.borrow().era;
        log::info!(upstream = self.spec.label.as_str(), era = era.map(Era::as_str).unwrap_or("unknown"), reason = reason.as_str(); "upstream call cancelled");
        let (Some(Era::Legacy), Some(id)) = (era, id) else {
            return;
        };
        let note = jsonrpc::notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": reason.message()})),
        );
        self.post_in_session(&note, Duration::from_secs(2)).await;
    }

    /// One request with the era and session rules: get ready if needed; on a lost session or
    /// a changed era reset once and retry once.
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions<'_>,
    ) -> Result<Value, UpstreamError> {
        let generation = self.ensure_ready().await?;
        match self.attempt(method, params.clone(), opts).await {
            Attempt::Done(r) => r,
            lost @ (Attempt::SessionLost | Attempt::EraChanged) => {
                let forget_era = matches!(lost, Attempt::EraChanged);
                log::info!(upstream = self.spec.label.as_str(), method = method, reprobe = forget_era; "upstream session lost, re-initializing");
                self.reset(generation, forget_era).await?;
                match self.attempt(method, params, opts).await {
                    Attempt::Done(r) => r,
                    Attempt::SessionLost | Attempt::EraChanged => Err(UpstreamError::Http {
                        status: 404,
                        detail: "the upstream rejected a freshly initialized session".into(),
                    }),
                }
            }
        }
    }

    async fn attempt(&self, method: &str, params: Option<Value>, opts: RequestOptions<'_>) -> Attempt {
        let id = self.fresh_id();
        if let Some(c) = opts.current_id {
            c.set(Some(id));
        }
        let rid = RequestId::Num(id);
        let (era, session_id, version) = {
            let s = self.session.borrow();
            (
                s.era.unwrap_or(Era::Legacy),
                s.session_id.clone(),
                s.protocol_version.clone(),
            )
        };
        let mut params = params;
        let envelope = match era {
            Era::Legacy => {
                if let (Some(meta), Some(Value::Object(p))) = (opts.meta, params.as_mut()) {
                    if !meta.is_empty() {
                        p.insert("_meta".into(), Value::Object(meta.clone()));
                    }
                }
                Envelope::Legacy {
                    session_id: session_id.as_deref(),
                    version: &version,
                }
            }
            Era::Modern => {
                let mut meta = opts.meta.cloned().unwrap_or_default();
                meta.extend(modern::request_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION")));
                let p = params.get_or_insert_with(|| json!({}));
                if let Value::Object(p) = p {
                    p.insert("_meta".into(), Value::Object(meta));
                }
                Envelope::Modern
            }
        };
        let body = jsonrpc::request(&rid, method, params);
        let message = Message {
            method: Some(method),
            name: opts.name,
            mirror: opts.input_schema.zip(body.pointer("/params/arguments")),
            idempotent: method != "tools/call",
        };
        let reply = match self
            .client
            .post(
                envelope,
                message,
                Bytes::from(body.to_string()),
                Some(&rid),
                self.spec.max_response_bytes,
                opts.sink,
            )
            .await
        {
            Ok(r) => r,
            Err(e) => return Attempt::Done(Err(e)),
        };
        if let Some(received) = opts.received {
            received.set(received.get() + reply.bytes);
        }
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        match era {
            Era::Legacy if session_id.is_some() && session_lost(reply.status, rpc_error.as_ref()) => {
                Attempt::SessionLost
            }
            Era::Modern if modern_refusal_means_other_era(reply.status, rpc_error.as_ref()) => Attempt::EraChanged,
            _ => Attempt::Done(interpret(reply, rpc_error)),
        }
    }

    /// Gets ready unless ready; returns the generation the caller works with. Waiting for a
    /// handshake in flight and making one are bounded together by the upstream's timeout, so a
    /// hung handshake ends (and frees the lock for the next one) within that time, whoever
    /// started it.
    async fn ensure_ready(&self) -> Result<u64, UpstreamError> {
        {
            let s = self.session.borrow();
            if s.ready {
                return Ok(s.generation);
            }
        }
        self.with_timeout(async {
            let _guard = self.init_lock.lock().await;
            {
                let s = self.session.borrow();
                if s.ready {
                    return Ok(s.generation);
                }
            }
            self.connect().await
        })
        .await
    }

    /// Drops the state seen at `generation` (and, if asked, the era) and connects anew,
    /// unless another request already did so since. Bounded like [`Self::ensure_ready`].
    async fn reset(&self, generation: u64, forget_era: bool) -> Result<u64, UpstreamError> {
        self.with_timeout(async {
            let _guard = self.init_lock.lock().await;
            {
                let mut s = self.session.borrow_mut();
                if s.ready && s.generation != generation {
                    return Ok(s.generation);
                }
                s.ready = false;
                s.session_id = None;
                if forget_era {
                    s.era = None;
                }
            }
            self.connect().await
        })
        .await
    }

    /// Probes the era when unknown (a legacy hint skips the probe), then initializes.
    async fn connect(&self) -> Result<u64, UpstreamError> {
        let known = self.session.borrow().era;
        let era = match known {
            Some(Era::Legacy) => Era::Legacy,
            _ => self.probe().await?,
        };
        if era == Era::Legacy {
            match self.initialize().await {
                Ok(g) => return Ok(g),
                // A legacy hint from the manifest may be stale: a refusal of `initialize`
                // can mean the upstream moved to the modern era; probe and try again.
                Err(e) if known == Some(Era::Legacy) && e.may_mean_other_era() => {
                    self.session.borrow_mut().era = None;
                    if self.probe().await? == Era::Legacy {
                        return self.initialize().await;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let mut s = self.session.borrow_mut();
        s.generation += 1;
        s.ready = true;
        s.session_id = None;
        s.protocol_version = modern::LATEST_MODERN.to_string();
        log::info!(upstream = self.spec.label.as_str(), era = "modern", protocol = modern::LATEST_MODERN, generation = s.generation; "upstream initialized");
        Ok(s.generation)
    }

    /// `server/discover` with the modern envelope: which era does the upstream speak?
    async fn probe(&self) -> Result<Era, UpstreamError> {
        let id = RequestId::Num(self.fresh_id());
        let params = json!({ "_meta": modern::request_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION")) });
        let body = jsonrpc::request(&id, "server/discover", Some(params));
        let reply = match self
            .post_handshake(Envelope::Modern, "server/discover", &body, Some(&id))
            .await
        {
            Ok(r) => r,
            // A 2xx reply that is not valid MCP (e.g. an SSE stream without an answer) is a
            // legacy server that does not know the method; transport errors propagate.
            Err(UpstreamError::InvalidReply(_)) => return Ok(self.found(Era::Legacy, None, false)),
            Err(e) => return Err(e),
        };
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        let era = classify_probe(reply.status, reply.message.as_ref(), rpc_error.as_ref())?;
        let result = reply.message.as_ref().and_then(|m| m.get("result"));
        let instructions = result
            .and_then(|r| r.get("instructions"))
            .and_then(Value::as_str)
            .map(capped_instructions);
        let list_changed = result.is_some_and(advertises_list_changed);
        Ok(self.found(era, instructions, list_changed))
    }

    /// One handshake message (probe, `initialize`, `notifications/initialized`) of `method`
    /// in `envelope`; safe to resend on a stale pooled connection.
    async fn post_handshake(
        &self,
        envelope: Envelope<'_>,
        method: &str,
        message: &Value,
        expect_id: Option<&RequestId>,
    ) -> Result<transport::Reply, UpstreamError> {
        let what = Message {
            method: Some(method),
            idempotent: true,
            ..Default::default()
        };
        let body = Bytes::from(message.to_string());
        self.client
            .post(envelope, what, body, expect_id, self.spec.max_response_bytes, None)
            .await
    }

    fn found(&self, era: Era, instructions: Option<String>, list_changed: bool) -> Era {
        let mut s = self.session.borrow_mut();
        s.era = Some(era);
        if era == Era::Modern {
            s.instructions = instructions;
            s.list_changed = list_changed;
        }
        log::debug!(upstream = self.spec.label.as_str(), era = era.as_str(); "upstream era probed");
        era
    }

    async fn initialize(&self) -> Result<u64, UpstreamError> {
        let id = RequestId::Num(self.fresh_id());
        let params = json!({
            "protocolVersion": version::LATEST_LEGACY,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        });
        let body = jsonrpc::request(&id, "initialize", Some(params));
        let reply = self
            .post_handshake(Envelope::Bare, "initialize", &body, Some(&id))
            .await?;
        let session_id = reply.session_id.clone();
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        let result = interpret(reply, rpc_error)?;
        let negotiated = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| UpstreamError::InvalidReply("initialize result has no protocolVersion".into()))?
            .to_string();
        if !version::is_supported_legacy(&negotiated) {
            return Err(UpstreamError::InvalidReply(format!(
                "the upstream negotiated protocol version {negotiated}, which this proxy does not speak"
            )));
        }
        if let Some(sid) = &session_id {
            if sid.len() > MAX_SESSION_ID_BYTES {
                return Err(UpstreamError::InvalidReply(format!(
                    "Mcp-Session-Id is {} bytes, longer than the proxy's {MAX_SESSION_ID_BYTES}-byte limit",
                    sid.len()
                )));
            }
            if sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                return Err(UpstreamError::InvalidReply(
                    "Mcp-Session-Id is not visible ASCII".into(),
                ));
            }
        }
        let instructions = result
            .get("instructions")
            .and_then(Value::as_str)
            .map(capped_instructions);
        let list_changed = advertises_list_changed(&result);

        // notifications/initialized completes the handshake.
        let note = jsonrpc::notification("notifications/initialized", None);
        let envelope = Envelope::Legacy {
            session_id: session_id.as_deref(),
            version: &negotiated,
        };
        let ack = self
            .post_handshake(envelope, "notifications/initialized", &note, None)
            .await?;
        if !(200..300).contains(&ack.status) {
            return Err(UpstreamError::Http {
                status: ack.status,
                detail: "notifications/initialized was refused".into(),
            });
        }

        let mut s = self.session.borrow_mut();
        s.era = Some(Era::Legacy);
        s.generation += 1;
        s.ready = true;
        s.session_id = session_id;
        s.protocol_version = negotiated;
        s.instructions = instructions;
        s.list_changed = list_changed;
        log::info!(
            upstream = self.spec.label.as_str(),
            era = "legacy",
            protocol = s.protocol_version.as_str(),
            session = if s.session_id.is_some() { "sticky" } else { "stateless" },
            generation = s.generation;
            "upstream initialized"
        );
        Ok(s.generation)
    }
}

/// The upstream's `instructions`, cut at a character boundary to at most
/// [`MAX_INSTRUCTIONS_BYTES`] (plus a note saying so): long instructions are kept usable rather
/// than refused, since an upstream is not broken for being verbose.
fn capped_instructions(text: &str) -> String {
    if text.len() <= MAX_INSTRUCTIONS_BYTES {
        return text.to_string();
    }
    let mut end = MAX_INSTRUCTIONS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[truncated by {CLIENT_NAME}: the upstream's instructions exceed {MAX_INSTRUCTIONS_BYTES} bytes]",
        &text[..end]
    )
}

/// An upstream's error message as the proxy repeats it (in errors, logs and to the model): at
/// most [`MAX_ERROR_MESSAGE_CHARS`] characters, then `…`.
fn capped_message(message: &str) -> String {
    match message.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        None => message.to_string(),
        Some((end, _)) => format!("{}…", &message[..end]),
    }
}

/// Whether an initialize/discover result advertises `capabilities.tools.listChanged`.
fn advertises_list_changed(result: &Value) -> bool {
    result
        .pointer("/capabilities/tools/listChanged")
        .and_then(Value::as_bool)
        == Some(true)
}

/// Reads the answer to the discovery probe. Modern: a result listing 2026-07-28, or a 400
/// carrying one of the modern envelope errors. Legacy: any other refusal. Errors: auth
/// failures and server errors (the era cannot be known yet).
fn classify_probe(status: u16, message: Option<&Value>, error: Option<&RpcError>) -> Result<Era, UpstreamError> {
    if status == 401 || status == 403 || status >= 500 {
        let detail = error.map(|e| capped_message(&e.message)).unwrap_or_default();
        return Err(UpstreamError::Http { status, detail });
    }
    if (200..300).contains(&status) {
        let result = message.and_then(|m| m.get("result"));
        let modern_listed = result
            .and_then(|r| r.get("supportedVersions"))
            .and_then(Value::as_array)
            .is_some_and(|vs| vs.iter().filter_map(Value::as_str).any(modern::is_modern));
        return Ok(if modern_listed { Era::Modern } else { Era::Legacy });
    }
    // -32022 listing a modern version we speak: the upstream is modern (retry at that version).
    let offers_modern = error.is_some_and(|e| {
        e.code == modern::UNSUPPORTED_VERSION
            && e.data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|vs| vs.iter().filter_map(Value::as_str).any(modern::is_modern))
    });
    if offers_modern {
        return Ok(Era::Modern);
    }
    let modern_envelope_error = error.is_some_and(|e| {
        matches!(e.code, modern::HEADER_MISMATCH | modern::MISSING_CLIENT_CAPABILITY)
            || (e.code == jsonrpc::INVALID_PARAMS && status == 400)
    });
    Ok(if status == 400 && modern_envelope_error {
        Era::Modern
    } else {
        Era::Legacy
    })
}

/// Whether a modern request's refusal says the upstream does not (or no longer) speak the
/// modern era: a 400 that is not a modern envelope error, a 404/405 without a JSON-RPC
/// "method not found", or -32022 (our version is not supported).
fn modern_refusal_means_other_era(status: u16, error: Option<&RpcError>) -> bool {
    match (status, error) {
        (_, Some(e)) if e.code == modern::UNSUPPORTED_VERSION => true,
        (400, Some(e)) => !matches!(
            e.code,
            modern::HEADER_MISMATCH | modern::MISSING_CLIENT_CAPABILITY | jsonrpc::INVALID_PARAMS
        ),
        (400, None) => true,
        (404, Some(e)) => e.code != jsonrpc::METHOD_NOT_FOUND,
        (404, None) | (405, _) => true,
        _ => false,
    }
}

/// Whether a reply to a request that carried a session id means the session is gone.
fn session_lost(status: u16, error: Option<&RpcError>) -> bool {
    if status == 404 || status == 400 {
        return true;
    }
    error.is_some_and(|e| {
        let m = e.message.to_ascii_lowercase();
        m.contains("session")
            && (m.contains("not found") || m.contains("expired") || m.contains("invalid") || m.contains("unknown"))
    })
}

/// Turns a reply into the request's result or a precise error.
fn interpret(reply: transport::Reply, rpc_error: Option<RpcError>) -> Result<Value, UpstreamError> {
    if !(200..300).contains(&reply.status) {
        let detail = match (&rpc_error, &reply.message) {
            (Some(e), _) => capped_message(&e.message),
            (None, Some(Value::String(s))) => s.clone(),
            _ => String::new(),
        };
        return Err(UpstreamError::Http {
            status: reply.status,
            detail,
        });
    }
    if let Some(mut e) = rpc_error {
        e.message = capped_message(&e.message);
        return Err(UpstreamError::Rpc(e));
    }
    match reply.message {
        Some(Value::Object(mut m)) => m
            .remove("result")
            .ok_or_else(|| UpstreamError::InvalidReply("response has neither result nor error".into())),
        _ => Err(UpstreamError::InvalidReply("response is not a JSON-RPC object".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_definitions_are_taken_from_the_previous_listing() {
        let parse = |v: Value| -> Tool { serde_json::from_value(v).unwrap() };
        let old: Vec<Arc<Tool>> = vec![
            Arc::new(parse(json!({"name": "a", "description": "1"}))),
            Arc::new(parse(json!({"name": "b", "description": "1"}))),
        ];
        let previous: std::collections::HashMap<&str, &Arc<Tool>> = old.iter().map(|t| (t.name.as_str(), t)).collect();
        let a = reuse_unchanged(&previous, parse(json!({"name": "a", "description": "1"})));
        let b = reuse_unchanged(&previous, parse(json!({"name": "b", "description": "2"})));
        let c = reuse_unchanged(&previous, parse(json!({"name": "c"})));
        assert!(Arc::ptr_eq(&a, &old[0]), "unchanged: the old definition");
        assert!(!Arc::ptr_eq(&b, &old[1]), "changed: the new one");
        assert_eq!(b.description.as_deref(), Some("2"));
        assert_eq!(c.name, "c");
    }

    #[test]
    fn long_instructions_are_cut_at_a_character_boundary_and_say_so() {
        assert_eq!(capped_instructions("Use the tools."), "Use the tools.");
        let long = "é".repeat(MAX_INSTRUCTIONS_BYTES); // two bytes each
        let cut = capped_instructions(&long);
        let (kept, note) = cut.split_once('\n').unwrap();
        assert_eq!(kept.len(), MAX_INSTRUCTIONS_BYTES);
        assert!(kept.chars().all(|c| c == 'é'));
        assert!(note.contains("truncated") && note.contains("8192 bytes"), "{note}");
        let odd = format!("a{}", "é".repeat(MAX_INSTRUCTIONS_BYTES));
        let (kept, _) = capped_instructions(&odd)
            .split_once('\n')
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .unwrap();
        assert_eq!(kept.len(), MAX_INSTRUCTIONS_BYTES - 1, "never half a character");
    }

    #[test]
    fn session_loss_is_recognised_by_status_and_message() {
        assert!(session_lost(404, None));
        assert!(session_lost(400, None));
        assert!(!session_lost(500, None));
        assert!(session_lost(
            200,
            Some(&RpcError::new(jsonrpc::SERVER_ERROR, "Session not found"))
        ));
        assert!(!session_lost(
            200,
            Some(&RpcError::new(jsonrpc::INVALID_PARAMS, "Unknown tool"))
        ));
    }

    #[test]
    fn interpret_separates_http_rpc_and_invalid_replies() {
        let r = |status, message| transport::Reply {
            status,
            session_id: None,
            message,
            bytes: 0,
        };
        let ok = interpret(r(200, Some(json!({"jsonrpc":"2.0","id":1,"result":{"x":1}}))), None);
        assert_eq!(ok.unwrap(), json!({"x":1}));
        let http = interpret(r(503, Some(Value::String("busy".into()))), None).unwrap_err();
        assert_eq!(
            http,
            UpstreamError::Http {
                status: 503,
                detail: "busy".into()
            }
        );
        let e = RpcError::new(jsonrpc::INVALID_PARAMS, "bad");
        let rpc = interpret(r(200, None), Some(e.clone())).unwrap_err();
        assert_eq!(rpc, UpstreamError::Rpc(e));
        let long = RpcError::new(jsonrpc::SERVER_ERROR, "ü".repeat(5000));
        let Err(UpstreamError::Rpc(cut)) = interpret(r(200, None), Some(long)) else {
            panic!("an RPC error")
        };
        assert_eq!(cut.message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
        assert!(cut.message.ends_with('…'));
        assert!(matches!(
            interpret(r(200, Some(json!([]))), None),
            Err(UpstreamError::InvalidReply(_))
        ));
    }
}
