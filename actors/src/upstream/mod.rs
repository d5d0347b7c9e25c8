//! `UpstreamActor`: one per configured upstream MCP server.
//!
//! The actor owns everything that is per-upstream state: the awc client (created on the
//! actor's own arbiter thread, never shared across threads), the bearer token, the timeout and
//! the legacy session (`Mcp-Session-Id`, negotiated protocol version). Requests run
//! concurrently: each message handler returns a future on the actor's thread, so a slow
//! `tools/call` never blocks a `tools/list` or another call.
//!
//! Session state machine (single-flight; `generation` counts initializations):
//!
//! ```text
//!  Unready ──first request──► Initializing ──ok──► Ready{session?, version}
//!     ▲                             │ error: the request fails, state stays Unready
//!     │                             ▼
//!     └──────── reset(gen) ◄── a request that carried the session got 404/400/"session expired"
//!               (only if nobody else reset since `gen`; then the request is retried once)
//! ```
//!
//! An upstream whose `initialize` reply carries no `Mcp-Session-Id` is stateless: no session
//! header is ever sent and a 400 is an ordinary error, never a reset.

pub mod error;
pub mod transport;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use serde_json::{json, Value};

pub use error::UpstreamError;
use transport::{NotificationSink, RequestHeaders};

use crate::mcp::jsonrpc::{self, RequestId, RpcError};
use crate::mcp::types::Tool;
use crate::mcp::version;

/// Static description of one upstream, from configuration.
#[derive(Debug, Clone)]
pub struct UpstreamSpec {
    /// Short unique name used in logs, sources and the manifest.
    pub label: String,
    pub url: String,
    /// Bearer token; never logged.
    pub token: Option<String>,
    /// Hard limit for one request, including initialization and reading the reply.
    pub timeout: Duration,
    /// Replies larger than this are refused instead of buffered.
    pub max_response_bytes: usize,
}

/// Result of listing an upstream's tools.
#[derive(Debug, Clone)]
pub struct Listing {
    pub tools: Vec<Tool>,
    /// The upstream's `instructions` from its initialize result, if any.
    pub instructions: Option<String>,
}

/// `tools/list`, all pages.
#[derive(Message)]
#[rtype(result = "Result<Listing, UpstreamError>")]
pub struct ListTools;

/// `tools/call` of one upstream tool; the upstream's `result` object is returned unchanged.
#[derive(Message)]
#[rtype(result = "Result<Value, UpstreamError>")]
pub struct CallTool {
    pub name: String,
    pub arguments: Value,
    /// Client `_meta` to pass through (e.g. `progressToken`).
    pub meta: Option<Value>,
    /// Where `notifications/*` that precede the result are forwarded (progress relaying).
    pub notifications: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
}

/// Current session facts, for logs and tests (never contains the session id itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamStatus {
    pub label: String,
    pub initialized: bool,
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

impl Handler<EndSession> for UpstreamActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: EndSession, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let (sid, version) = {
                let mut s = conn.session.borrow_mut();
                s.ready = false;
                (s.session_id.take(), s.protocol_version.clone())
            };
            let Some(sid) = sid else { return };
            let mut req = conn
                .client
                .delete(&conn.spec.url)
                .insert_header(("Mcp-Session-Id", sid));
            if let Some(t) = &conn.spec.token {
                req = req.insert_header(("Authorization", format!("Bearer {t}")));
            }
            if !version.is_empty() {
                req = req.insert_header(("MCP-Protocol-Version", version));
            }
            let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
            log::debug!(upstream = conn.spec.label.as_str(); "upstream session ended");
        })
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

    /// Starts the actor on the current arbiter.
    pub fn start_here(spec: UpstreamSpec) -> Addr<UpstreamActor> {
        UpstreamActor {
            conn: Rc::new(Connection::new(spec)),
        }
        .start()
    }
}

impl Actor for UpstreamActor {
    type Context = Context<Self>;
}

impl Handler<ListTools> for UpstreamActor {
    type Result = ResponseFuture<Result<Listing, UpstreamError>>;

    fn handle(&mut self, _: ListTools, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let started = Instant::now();
            let out = conn.with_timeout(conn.list_tools()).await;
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
            let out = conn.with_timeout(conn.call_tool(msg)).await;
            let ms = started.elapsed().as_millis() as u64;
            match &out {
                Ok(_) => {
                    log::info!(upstream = conn.spec.label.as_str(), tool = tool.as_str(), latency_ms = ms; "upstream call")
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
            has_session: s.session_id.is_some(),
            protocol_version: s.ready.then(|| s.protocol_version.clone()),
            generation: s.generation,
        })
    }
}

/// Legacy session state.
#[derive(Debug, Default)]
struct Session {
    ready: bool,
    session_id: Option<String>,
    protocol_version: String,
    instructions: Option<String>,
    generation: u64,
}

/// How one attempt ended, before the retry decision.
enum Attempt {
    Done(Result<Value, UpstreamError>),
    /// The request carried a session the upstream no longer knows.
    SessionLost,
}

/// Per-upstream connection state, shared by the actor and its in-flight request futures
/// (all on the actor's thread, hence `Rc`/`RefCell`; no borrow is held across an await).
struct Connection {
    spec: UpstreamSpec,
    client: awc::Client,
    session: RefCell<Session>,
    /// Serialises (re-)initialization so concurrent requests share one handshake.
    init_lock: tokio::sync::Mutex<()>,
    next_id: Cell<i64>,
}

const CLIENT_NAME: &str = "mcp-search-proxy";
const MAX_PAGES: usize = 1000;

impl Connection {
    fn new(spec: UpstreamSpec) -> Self {
        let connect_timeout = spec.timeout.min(Duration::from_secs(10));
        Connection {
            client: transport::build_client(connect_timeout),
            spec,
            session: RefCell::new(Session::default()),
            init_lock: tokio::sync::Mutex::new(()),
            next_id: Cell::new(1),
        }
    }

    async fn with_timeout<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, UpstreamError>>,
    ) -> Result<T, UpstreamError> {
        match tokio::time::timeout(self.spec.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout {
                secs: self.spec.timeout.as_secs().max(1),
            }),
        }
        .map_err(|e| match e {
            // awc's own timeout carries no duration; report the configured one.
            UpstreamError::Timeout { secs: 0 } => UpstreamError::Timeout {
                secs: self.spec.timeout.as_secs().max(1),
            },
            other => other,
        })
    }

    fn fresh_id(&self) -> RequestId {
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        RequestId::Num(id)
    }

    async fn list_tools(&self) -> Result<Listing, UpstreamError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen_cursors = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let result = self.request("tools/list", params, None).await?;
            let page = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| UpstreamError::InvalidReply("tools/list result has no tools array".into()))?;
            for t in page {
                match serde_json::from_value::<Tool>(t.clone()) {
                    Ok(tool) if !tool.name.is_empty() => tools.push(tool),
                    _ => {
                        log::warn!(upstream = self.spec.label.as_str(); "upstream tool definition skipped: not a valid tool")
                    }
                }
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => {
                    if !seen_cursors.insert(next.to_string()) {
                        return Err(UpstreamError::InvalidReply(
                            "tools/list pagination repeats a cursor".into(),
                        ));
                    }
                    cursor = Some(next.to_string());
                }
                None => {
                    let instructions = self.session.borrow().instructions.clone();
                    return Ok(Listing { tools, instructions });
                }
            }
        }
        Err(UpstreamError::InvalidReply(format!(
            "tools/list has more than {MAX_PAGES} pages"
        )))
    }

    async fn call_tool(&self, msg: CallTool) -> Result<Value, UpstreamError> {
        let mut params = json!({ "name": msg.name, "arguments": msg.arguments });
        if let Some(meta) = msg.meta {
            params["_meta"] = meta;
        }
        let forward = msg.notifications.map(|tx| {
            move |v: Value| {
                let _ = tx.send(v);
            }
        });
        let sink: NotificationSink<'_> = forward.as_ref().map(|f| f as &dyn Fn(Value));
        let result = self.request("tools/call", Some(params), sink).await?;
        if !result.is_object() {
            return Err(UpstreamError::InvalidReply("tools/call result is not an object".into()));
        }
        Ok(result)
    }

    /// One request with the session rules: initialize if needed, and on a lost session reset
    /// once and retry once.
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        sink: NotificationSink<'_>,
    ) -> Result<Value, UpstreamError> {
        let generation = self.ensure_ready().await?;
        match self.attempt(method, params.clone(), sink).await {
            Attempt::Done(r) => r,
            Attempt::SessionLost => {
                log::info!(upstream = self.spec.label.as_str(), method = method; "upstream session lost, re-initializing");
                self.reset(generation).await?;
                match self.attempt(method, params, sink).await {
                    Attempt::Done(r) => r,
                    Attempt::SessionLost => Err(UpstreamError::Http {
                        status: 404,
                        detail: "the upstream rejected a freshly initialized session".into(),
                    }),
                }
            }
        }
    }

    async fn attempt(&self, method: &str, params: Option<Value>, sink: NotificationSink<'_>) -> Attempt {
        let id = self.fresh_id();
        let body = jsonrpc::request(&id, method, params);
        let (session_id, version) = {
            let s = self.session.borrow();
            (s.session_id.clone(), s.protocol_version.clone())
        };
        let headers = RequestHeaders {
            bearer: self.spec.token.as_deref(),
            session_id: session_id.as_deref(),
            protocol_version: Some(&version),
        };
        let reply = match transport::post(
            &self.client,
            &self.spec.url,
            &headers,
            Bytes::from(body.to_string()),
            Some(&id),
            self.spec.max_response_bytes,
            sink,
        )
        .await
        {
            Ok(r) => r,
            Err(e) => return Attempt::Done(Err(e)),
        };
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        if session_id.is_some() && session_lost(reply.status, rpc_error.as_ref()) {
            return Attempt::SessionLost;
        }
        Attempt::Done(interpret(reply, rpc_error))
    }

    /// Initializes unless ready; returns the generation the caller works with.
    async fn ensure_ready(&self) -> Result<u64, UpstreamError> {
        {
            let s = self.session.borrow();
            if s.ready {
                return Ok(s.generation);
            }
        }
        let _guard = self.init_lock.lock().await;
        {
            let s = self.session.borrow();
            if s.ready {
                return Ok(s.generation);
            }
        }
        self.initialize().await
    }

    /// Drops the session seen at `generation` and initializes anew, unless another request
    /// already did so since.
    async fn reset(&self, generation: u64) -> Result<u64, UpstreamError> {
        let _guard = self.init_lock.lock().await;
        {
            let mut s = self.session.borrow_mut();
            if s.ready && s.generation != generation {
                return Ok(s.generation);
            }
            s.ready = false;
            s.session_id = None;
        }
        self.initialize().await
    }

    async fn initialize(&self) -> Result<u64, UpstreamError> {
        let id = self.fresh_id();
        let params = json!({
            "protocolVersion": version::LATEST_LEGACY,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        });
        let body = jsonrpc::request(&id, "initialize", Some(params));
        let headers = RequestHeaders {
            bearer: self.spec.token.as_deref(),
            ..Default::default()
        };
        let reply = transport::post(
            &self.client,
            &self.spec.url,
            &headers,
            Bytes::from(body.to_string()),
            Some(&id),
            self.spec.max_response_bytes,
            None,
        )
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
            if sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                return Err(UpstreamError::InvalidReply(
                    "Mcp-Session-Id is not visible ASCII".into(),
                ));
            }
        }
        let instructions = result.get("instructions").and_then(Value::as_str).map(str::to_string);

        // notifications/initialized completes the handshake.
        let note = jsonrpc::notification("notifications/initialized", None);
        let headers = RequestHeaders {
            bearer: self.spec.token.as_deref(),
            session_id: session_id.as_deref(),
            protocol_version: Some(&negotiated),
        };
        let ack = transport::post(
            &self.client,
            &self.spec.url,
            &headers,
            Bytes::from(note.to_string()),
            None,
            self.spec.max_response_bytes,
            None,
        )
        .await?;
        if !(200..300).contains(&ack.status) {
            return Err(UpstreamError::Http {
                status: ack.status,
                detail: "notifications/initialized was refused".into(),
            });
        }

        let mut s = self.session.borrow_mut();
        s.generation += 1;
        s.ready = true;
        s.session_id = session_id;
        s.protocol_version = negotiated;
        s.instructions = instructions;
        log::info!(
            upstream = self.spec.label.as_str(),
            protocol = s.protocol_version.as_str(),
            session = if s.session_id.is_some() { "sticky" } else { "stateless" },
            generation = s.generation;
            "upstream initialized"
        );
        Ok(s.generation)
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
            (Some(e), _) => e.message.clone(),
            (None, Some(Value::String(s))) => s.clone(),
            _ => String::new(),
        };
        return Err(UpstreamError::Http {
            status: reply.status,
            detail,
        });
    }
    if let Some(e) = rpc_error {
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
    fn session_loss_is_recognised_by_status_and_message() {
        assert!(session_lost(404, None));
        assert!(session_lost(400, None));
        assert!(!session_lost(500, None));
        assert!(session_lost(200, Some(&RpcError::new(-32000, "Session not found"))));
        assert!(!session_lost(200, Some(&RpcError::new(-32602, "Unknown tool"))));
    }

    #[test]
    fn interpret_separates_http_rpc_and_invalid_replies() {
        let r = |status, message| transport::Reply {
            status,
            session_id: None,
            message,
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
        let e = RpcError::new(-32602, "bad");
        let rpc = interpret(r(200, None), Some(e.clone())).unwrap_err();
        assert_eq!(rpc, UpstreamError::Rpc(e));
        assert!(matches!(
            interpret(r(200, Some(json!([]))), None),
            Err(UpstreamError::InvalidReply(_))
        ));
    }
}
