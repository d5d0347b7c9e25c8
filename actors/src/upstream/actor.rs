//! The actor, its messages and their handlers, and what they do over the [`Connection`]: the
//! listing and the call. All per-upstream state lives in the `Connection` (see
//! `connection.rs`), shared by the actor and its request futures.
//!
//! # Listing
//! `tools/list` is read page by page within the limits below; a definition equal to one of the
//! previous listing is that very `Arc`. A modern upstream's tool whose `x-mcp-header`
//! annotations are invalid is skipped, as is any definition that is not a valid tool.
//!
//! # Calls: progress, timeouts, cancellation
//! `notifications/progress` arriving on a call's SSE stream are forwarded to the caller as they
//! come, and each one extends the call's timeout (by one upstream timeout, up to four times
//! the timeout for one exchange; a 2026-07-28 round is a new exchange, and time a question
//! waits on the client is not counted). A timeout error states how long the request really ran. If the
//! caller's receiver is dropped (its client went away), the call is abandoned: the upstream
//! stream is closed (the modern era's cancellation) and a legacy upstream is also sent
//! `notifications/cancelled` for the request.
//!
//! # Calls: questions for the client
//! A request the upstream sends on a call's stream (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) is answered alongside the call, under the
//! upstream's id: with the client's answer when the call's [`Interaction`] can ask its client
//! (see `ask.rs`), else with an error at once (the tool then returns its own declined or error
//! result). `ping` is answered by the proxy. A 2026-07-28 `input_required` result is either
//! returned as it came (the client takes the round itself), or its questions are asked the
//! same way and the call is retried with their answers (`inputResponses` and the upstream's
//! `requestState`), at most 16 rounds; without a way to ask it is
//! [`UpstreamError::InputRequired`]. While a question waits on the client, the call's timeout
//! is stopped: the question has its own (`ELICITATION_TIMEOUT_SEC`).
//!
//! `EndSession` does not handshake: it ends a sticky legacy session (`SessionState::ended`)
//! and sends its `DELETE`, bounded by the upstream's timeout and at most 2 s.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use futures_util::future::join_all;
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::ask::{alongside, Ask, Interaction, Reply, Round, MAX_QUESTIONS};
use super::cancel::CancelToken;
use super::connection::{Connection, RequestOptions, UpstreamSpec};
use super::error::{CancelReason, UpstreamError};
use super::list_changes::{self, ToolsChanged};
use super::session::{Ready, SessionState};
use mcp_wire::asks;
use mcp_wire::jsonrpc::{self, RpcError};
use mcp_wire::raw::RawObject;
use mcp_wire::trace::TraceHeaders;
use mcp_wire::types::Tool;
use mcp_wire::{modern, Era};
use proxy_metrics::AskedOutcome;
use upstream_http::transport::Envelope;
use upstream_http::WireError;

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

/// `tools/call` of one upstream tool; the upstream's `result` object is returned unchanged,
/// read one level deep (its members are the raw JSON the upstream sent).
#[derive(Message)]
#[rtype(result = "Result<RawObject, UpstreamError>")]
pub struct CallTool {
    pub name: String,
    pub arguments: Value,
    /// The tool's input schema (modern era: which arguments are mirrored into `Mcp-Param-*`).
    pub input_schema: Arc<Value>,
    /// Client `_meta` to pass on (e.g. `progressToken`), reserved keys already removed.
    pub meta: Map<String, Value>,
    /// Where `notifications/*` that precede the result are forwarded (bounded: see
    /// [`NOTIFICATION_BUFFER`]).
    pub notifications: Option<tokio::sync::mpsc::Sender<Value>>,
    /// Abandons the call when its handle cancels it or is dropped (see [`cancel`](super::cancel)).
    pub cancel: Option<CancelToken>,
    /// The call's trace: sent as the `traceparent`/`tracestate` headers (the caller also put it
    /// in `meta`).
    pub trace: Option<TraceHeaders>,
    /// What the call may ask its client, and how the client takes part in upstream rounds.
    pub interaction: Interaction,
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
        ctx.spawn(async move { list_changes::follow(&conn, msg.to).await }.into_actor(self));
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
            let out = conn.with_timeout(list_tools(&conn, &msg.previous)).await;
            // The pages' parse trees are garbage now: hand their pages back before the catalog
            // builds on another thread (see the heap crate).
            heap::release();
            let ms = started.elapsed().as_millis() as u64;
            match &out {
                Ok(l) => {
                    log::debug!(upstream = conn.spec.label.as_str(), tools = l.tools.len(), latency_ms = ms; "upstream listed")
                }
                Err(e) => {
                    count_error(&conn.spec, e);
                    log::warn!(upstream = conn.spec.label.as_str(), error = e.to_string().as_str(), latency_ms = ms; "upstream list failed")
                }
            }
            out
        })
    }
}

impl Handler<CallTool> for UpstreamActor {
    type Result = ResponseFuture<Result<RawObject, UpstreamError>>;

    fn handle(&mut self, mut msg: CallTool, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let started = Instant::now();
            let out = call_tool(&conn, &mut msg).await;
            let ms = started.elapsed().as_millis() as u64;
            let tool = msg.name.as_str();
            let trace_id = msg.trace.as_ref().and_then(|t| t.trace_id()).unwrap_or("");
            match &out {
                Ok(_) => {
                    // Debug: every call already has its info line (`mcp request`); two lines per call
                    // cost ~10% of the proxy's throughput at the default level.
                    log::debug!(upstream = conn.spec.label.as_str(), tool = tool, latency_ms = ms, trace_id = trace_id; "upstream call")
                }
                Err(e) => {
                    count_error(&conn.spec, e);
                    log::warn!(upstream = conn.spec.label.as_str(), tool = tool, error = e.to_string().as_str(), latency_ms = ms, trace_id = trace_id; "upstream call failed")
                }
            }
            out
        })
    }
}

impl Handler<GetStatus> for UpstreamActor {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _: GetStatus, _: &mut Self::Context) -> Self::Result {
        let label = self.conn.spec.label.clone();
        MessageResult(self.conn.session.read(|s| {
            let ready = s.context().map(|c| c.session);
            UpstreamStatus {
                label,
                initialized: ready.is_some(),
                era: s.era(),
                has_session: ready.as_ref().is_some_and(Ready::has_session_id),
                protocol_version: ready.as_ref().map(|r| r.protocol_version().to_string()),
                generation: s.generation(),
            }
        }))
    }
}

impl Handler<EndSession> for UpstreamActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: EndSession, _: &mut Self::Context) -> Self::Result {
        let conn = self.conn.clone();
        Box::pin(async move {
            let Some((sid, version)) = conn.session.ended() else {
                return;
            };
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

/// Counts a failed exchange by its kind (cancellations are not counted).
fn count_error(spec: &UpstreamSpec, e: &UpstreamError) {
    if let Some(kind) = e.kind() {
        spec.metrics.upstream_error_kind(&spec.label, kind);
    }
}

/// Notifications one call may have waiting for its client (a slow reader, or a 2026-07-28
/// client between its rounds); more are dropped.
pub const NOTIFICATION_BUFFER: usize = 256;

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

/// One `tools/list` result, read straight from its JSON: each definition kept as its raw text
/// until it is read into a [`Tool`] (no tree of the page is built).
#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    tools: Option<Vec<Box<RawValue>>>,
    #[serde(default, rename = "nextCursor")]
    next_cursor: Option<Value>,
    #[serde(default, rename = "ttlMs")]
    ttl_ms: Option<Value>,
}

/// `tools/list`, all pages, within the limits above (see the module docs).
async fn list_tools(conn: &Connection, previous: &[Arc<Tool>]) -> Result<Listing, UpstreamError> {
    let previous: std::collections::HashMap<&str, &Arc<Tool>> = previous.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen_cursors = std::collections::HashSet::new();
    let mut ttl_ms: Option<u64> = None;
    let received = Cell::new(0usize);
    let max_bytes = MAX_LISTING_BYTES.max(conn.spec.max_response_bytes);
    let opts = RequestOptions {
        received: Some(&received),
        ..Default::default()
    };
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let (result, ctx) = conn.request("tools/list", params.as_ref(), opts).await?;
        if received.get() > max_bytes {
            return Err(UpstreamError::invalid_reply(format!(
                "tools/list pages add up to more than {max_bytes} bytes (the proxy's limit for one listing)"
            )));
        }
        let result: Page = serde_json::from_str(result.get())
            .map_err(|e| UpstreamError::invalid_reply(format!("tools/list result is not a page of tools ({e})")))?;
        let Some(page) = result.tools else {
            return Err(UpstreamError::invalid_reply(
                "tools/list result has no tools array".into(),
            ));
        };
        if tools.len() + page.len() > MAX_LISTED_TOOLS {
            return Err(UpstreamError::invalid_reply(format!(
                "tools/list returned more than {MAX_LISTED_TOOLS} tools (the proxy's limit for one upstream)"
            )));
        }
        let modern_era = ctx.era() == Era::Modern;
        for t in page {
            match serde_json::from_str::<Tool>(t.get()) {
                Ok(tool) if tool.name.is_empty() => {
                    log::warn!(upstream = conn.spec.label.as_str(); "upstream tool skipped: empty name")
                }
                Ok(tool)
                    if modern_era
                        && tool.rest().input_schema_raw().contains("x-mcp-header")
                        && !modern::x_mcp_headers_valid(&tool.input_schema()) =>
                {
                    log::warn!(upstream = conn.spec.label.as_str(), tool = tool.name.as_str(); "upstream tool skipped: invalid x-mcp-header annotations")
                }
                Ok(tool) => tools.push(reuse_unchanged(&previous, tool)),
                Err(_) => {
                    log::warn!(upstream = conn.spec.label.as_str(); "upstream tool skipped: not a valid tool definition")
                }
            }
        }
        if let Some(t) = result.ttl_ms.as_ref().and_then(Value::as_u64).filter(|t| *t > 0) {
            ttl_ms = Some(ttl_ms.map_or(t, |m| m.min(t)));
        }
        match result.next_cursor.as_ref().and_then(Value::as_str) {
            Some(next) => {
                if next.len() > MAX_CURSOR_BYTES {
                    return Err(UpstreamError::invalid_reply(format!(
                        "tools/list nextCursor is {} bytes, longer than the proxy's {MAX_CURSOR_BYTES}-byte limit",
                        next.len()
                    )));
                }
                if !seen_cursors.insert(next.to_string()) {
                    return Err(UpstreamError::invalid_reply(
                        "tools/list pagination repeats a cursor".into(),
                    ));
                }
                cursor = Some(next.to_string());
            }
            None => {
                return Ok(Listing {
                    tools,
                    instructions: conn.session.read(|s| s.instructions().map(str::to_string)),
                    era: ctx.era(),
                    protocol_version: ctx.session.protocol_version().to_string(),
                    ttl_ms,
                });
            }
        }
    }
    Err(UpstreamError::invalid_reply(format!(
        "tools/list has more than {MAX_PAGES} pages"
    )))
}

/// Rounds of 2026-07-28 `input_required` one call may go through on its client's behalf.
const MAX_ROUNDS: usize = 16;
/// A round that asks nothing (only a `requestState`: "come back shortly") is retried after
/// this long.
const EMPTY_ROUND_PAUSE: Duration = Duration::from_millis(100);
/// An answer the caller was asked for is waited on a little longer than the question timeout
/// (the caller enforces that one and replies `TimedOut`); this only guards against a caller
/// that never replies at all.
const ASK_GRACE: Duration = Duration::from_secs(5);

/// A call's clock: the last sign of life of the upstream, and the questions waiting on the
/// client. While a question waits the clock stops (a person may be answering; the question has
/// its own timeout), and the wall-clock time during which any question waited is added to the
/// progress cap (once, however many waited together).
struct Clock {
    last_activity: Cell<Instant>,
    waiting: Cell<usize>,
    /// Since when at least one question has been waiting.
    since: Cell<Option<Instant>>,
    waited: Cell<Duration>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            last_activity: Cell::new(Instant::now()),
            waiting: Cell::new(0),
            since: Cell::new(None),
            waited: Cell::new(Duration::ZERO),
        }
    }

    /// A question starts waiting; it stops when the guard is dropped (answered, or its future
    /// dropped with the exchange it came on), so the count never stays up.
    fn wait(&self) -> Waiting<'_> {
        if self.waiting.get() == 0 {
            self.since.set(Some(Instant::now()));
        }
        self.waiting.set(self.waiting.get() + 1);
        Waiting(self)
    }

    fn is_waiting(&self) -> bool {
        self.waiting.get() > 0
    }
}

/// One question waiting on the client (see [`Clock::wait`]).
struct Waiting<'a>(&'a Clock);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let clock = self.0;
        clock.waiting.set(clock.waiting.get().saturating_sub(1));
        let now = Instant::now();
        if clock.waiting.get() == 0 {
            if let Some(since) = clock.since.take() {
                clock.waited.set(clock.waited.get() + (now - since));
            }
        }
        clock.last_activity.set(now);
    }
}

/// `tools/call`, with progress, questions, timeouts and cancellation (see the module docs).
/// The call's arguments are taken out of `msg` (sent, not copied).
async fn call_tool(conn: &Connection, msg: &mut CallTool) -> Result<RawObject, UpstreamError> {
    let mut params = Map::new();
    params.insert("name".into(), Value::from(msg.name.as_str()));
    params.insert("arguments".into(), std::mem::take(&mut msg.arguments));
    let mut params = Value::Object(params);
    let msg = &*msg;
    let talk = &msg.interaction;
    let clock = Clock::new();
    let envelope = envelope(talk);
    let mut round = talk.round.clone();
    for _ in 0..MAX_ROUNDS {
        if let (Some(r), Value::Object(p)) = (round.take(), &mut params) {
            p.remove("inputResponses");
            p.remove("requestState");
            if let Some(responses) = r.responses {
                p.insert("inputResponses".into(), responses);
            }
            if let Some(state) = r.state {
                p.insert("requestState".into(), Value::from(state));
            }
        }
        let result = call_once(conn, msg, &params, &clock, &envelope).await?;
        let Some((questions, state)) = input_round(&result) else {
            return Ok(result);
        };
        if questions.len() > MAX_QUESTIONS {
            // not cut short: the upstream's retry would lack the answers it asked for
            return Err(UpstreamError::invalid_reply(format!(
                "input_required asks {} questions in one round, more than the proxy's {MAX_QUESTIONS}",
                questions.len()
            )));
        }
        if talk.pass_input_required || talk.asker.is_none() {
            let outcome = if talk.pass_input_required {
                AskedOutcome::Passed
            } else {
                AskedOutcome::Declined
            };
            for q in &questions {
                count_asked(conn, &q.method, outcome);
            }
            if talk.pass_input_required {
                return Ok(result);
            }
            let mut methods: Vec<String> = questions.into_iter().map(|q| q.method).collect();
            methods.sort();
            return Err(UpstreamError::InputRequired { methods });
        }
        if questions.is_empty() {
            tokio::time::sleep(EMPTY_ROUND_PAUSE).await;
        }
        let replies = join_all(
            questions
                .iter()
                .map(|q| ask(conn, talk, &q.method, q.params.clone(), &clock)),
        )
        .await;
        let mut responses = Map::new();
        for (q, reply) in questions.into_iter().zip(replies) {
            match reply {
                Reply::Result(v) => {
                    responses.insert(q.key, v);
                }
                other => {
                    return Err(UpstreamError::Unanswered {
                        method: q.method,
                        why: why_unanswered(&other, talk.question_timeout),
                    })
                }
            }
        }
        round = Some(Round {
            responses: (!responses.is_empty()).then_some(Value::Object(responses)),
            state,
        });
    }
    Err(UpstreamError::invalid_reply(format!(
        "the tool asked for input in more than {MAX_ROUNDS} rounds in a row"
    )))
}

/// The modern `_meta` envelope keys that describe the call's client: what it can be asked,
/// and its log level opt-in. Empty for a client that declared neither (the proxy's own
/// defaults then say the same, at no cost per call).
fn envelope(talk: &Interaction) -> Map<String, Value> {
    let mut m = Map::new();
    if talk.askable.is_empty() && talk.log_level.is_none() {
        return m;
    }
    m.insert(modern::META_CLIENT_CAPABILITIES.into(), talk.askable.capabilities());
    if let Some(level) = &talk.log_level {
        m.insert(modern::META_LOG_LEVEL.into(), Value::from(level.as_str()));
    }
    m
}

/// One `tools/call` exchange: progress and log notifications forwarded, requests the upstream
/// sends on the call's stream answered alongside (`ping` by the proxy, the rest by the
/// client through [`ask`]), timeouts, cancellation.
async fn call_once(
    conn: &Connection,
    msg: &CallTool,
    params: &Value,
    clock: &Clock,
    envelope: &Map<String, Value>,
) -> Result<RawObject, UpstreamError> {
    let current_id: Cell<Option<i64>> = Cell::new(None);
    // requests the upstream sends on the call's stream, answered alongside (module docs)
    let asked: RefCell<Vec<ServerRequest>> = RefCell::new(Vec::new());
    let asking = tokio::sync::Notify::new();
    let forward = |v: Value| {
        if let Some(request) = server_request(&v) {
            clock.last_activity.set(Instant::now());
            asked.borrow_mut().push(request);
            asking.notify_one();
            return;
        }
        if v.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            clock.last_activity.set(Instant::now());
        }
        if let Some(tx) = &msg.notifications {
            // a client that does not keep up loses notifications, never the proxy's memory
            let _ = tx.try_send(v);
        }
    };
    let answer = async {
        // nothing is allocated for the (usual) call that asks nothing
        asking.notified().await;
        let mut running = FuturesUnordered::new();
        loop {
            let pending = std::mem::take(&mut *asked.borrow_mut());
            for request in pending {
                if running.len() >= MAX_UNANSWERED {
                    // the upstream's own timeout ends what it keeps asking beyond this
                    count_asked(conn, &request.method, AskedOutcome::Declined);
                    continue;
                }
                running.push(respond(conn, &msg.interaction, request, clock));
            }
            tokio::select! {
                () = asking.notified() => {}
                Some(()) = running.next(), if !running.is_empty() => {}
            }
        }
    };
    let opts = RequestOptions {
        name: Some(&msg.name),
        input_schema: Some(&msg.input_schema),
        meta: Some(&msg.meta),
        sink: Some(&forward),
        current_id: Some(&current_id),
        received: None,
        trace: msg.trace.as_ref(),
        envelope: (!envelope.is_empty()).then_some(envelope),
    };
    // boxed: the exchange's future (~14 KB) would otherwise be held, and moved, twice in this one
    let call = Box::pin(conn.request("tools/call", Some(params), opts));
    let mut token = msg.cancel.clone();
    let cancelled = async {
        match token.as_mut() {
            Some(t) => t.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        r = alongside(with_progress_timeout(conn, call, clock), answer) => r,
        reason = cancelled => {
            cancel_upstream(conn, current_id.get(), reason).await;
            return Err(UpstreamError::Cancelled(reason));
        }
    };
    let (result, _) = outcome?;
    let result = RawObject::parse(result.get())
        .map_err(|_| UpstreamError::invalid_reply("tools/call result is not an object".into()))?;
    if let Some((_, Some(state))) = asks::input_round(&result) {
        if state.len() > asks::MAX_UPSTREAM_STATE {
            return Err(UpstreamError::invalid_reply(format!(
                "input_required requestState is {} bytes, longer than the proxy's {}-byte limit",
                state.len(),
                asks::MAX_UPSTREAM_STATE
            )));
        }
    }
    Ok(result)
}

/// Answers one request an upstream sent on a call's stream, under the upstream's id: `ping`
/// by the proxy, anything else with the client's answer (or an error saying why there is
/// none).
async fn respond(conn: &Connection, talk: &Interaction, request: ServerRequest, clock: &Clock) {
    let ServerRequest { method, id, params } = request;
    let reply = if method == "ping" {
        count_asked(conn, &method, AskedOutcome::Answered);
        Reply::Result(json!({}))
    } else {
        ask(conn, talk, &method, params, clock).await
    };
    let body = match reply {
        Reply::Result(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        other => {
            let error = match other {
                Reply::Error(e) => e,
                Reply::TimedOut => RpcError::new(
                    REQUEST_TIMED_OUT,
                    format!("Request timed out: {}", why_unanswered(&other, talk.question_timeout)),
                ),
                _ => RpcError::new(
                    jsonrpc::REQUEST_CANCELLED,
                    format!("Request cancelled: {}", why_unanswered(&other, talk.question_timeout)),
                ),
            };
            json!({"jsonrpc": "2.0", "id": id, "error": error})
        }
    };
    conn.post_in_session(&body, Duration::from_secs(5)).await;
}

/// The JSON-RPC code of a question the client did not answer in time (the SDKs' "request
/// timeout").
const REQUEST_TIMED_OUT: i64 = -32001;

/// Asks the call's client one question and waits for its reply (see [`Clock`]); a question
/// the client cannot take is answered with an error at once. Counted and logged by outcome.
async fn ask(conn: &Connection, talk: &Interaction, method: &str, params: Option<Value>, clock: &Clock) -> Reply {
    // -32021 only for a capability the client lacks; the proxy's own limits are its errors
    let declined = |message: String, missing: Option<Value>| {
        let code = if missing.is_some() {
            asks::MISSING_CAPABILITY
        } else {
            jsonrpc::INTERNAL_ERROR
        };
        let mut e = RpcError::new(code, message);
        e.data = missing.map(|m| json!({ "requiredCapabilities": m }));
        (AskedOutcome::Declined, Reply::Error(e))
    };
    // counted however this ends: a question dropped mid-wait (its call was cancelled or ended)
    // counts as abandoned
    let mut counted = Counted {
        conn,
        method,
        outcome: AskedOutcome::Abandoned,
    };
    let (outcome, reply) = match (talk.askable.allows(method, params.as_ref()), &talk.asker) {
        (Err(asks::Missing(needed)), _) => declined(
            format!("The proxy's client for this call did not declare the capability {method} needs ({needed}), so it cannot be asked"),
            Some(needed),
        ),
        (Ok(()), None) => declined(
            format!("The proxy's client for this call cannot be asked ({method}): it takes no stream the question could go on"),
            None,
        ),
        (Ok(()), Some(asker)) => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let question = Ask {
                method: method.to_string(),
                params,
                reply: tx,
            };
            if asker.try_send(question).is_err() {
                declined(
                    format!("The proxy's client for this call has {MAX_QUESTIONS} questions unanswered already ({method} not asked)"),
                    None,
                )
            } else {
                let waiting = clock.wait();
                let reply = match tokio::time::timeout(talk.question_timeout + ASK_GRACE, rx).await {
                    Ok(Ok(reply)) => reply,
                    Ok(Err(_)) => Reply::Gone,
                    Err(_) => Reply::TimedOut,
                };
                drop(waiting);
                let outcome = match reply {
                    Reply::Result(_) => AskedOutcome::Answered,
                    Reply::Error(_) => AskedOutcome::Refused,
                    Reply::TimedOut => AskedOutcome::TimedOut,
                    Reply::Gone => AskedOutcome::Abandoned,
                };
                (outcome, reply)
            }
        }
    };
    counted.outcome = outcome;
    reply
}

/// Counts one question by its outcome when dropped (see [`ask`]).
struct Counted<'a> {
    conn: &'a Connection,
    method: &'a str,
    outcome: AskedOutcome,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        count_asked(self.conn, self.method, self.outcome);
    }
}

/// Why a question has no usable answer, in words.
fn why_unanswered(reply: &Reply, timeout: Duration) -> String {
    match reply {
        Reply::Result(_) => "answered".into(),
        Reply::Error(e) => format!("the client answered with error {}: {}", e.code, e.message),
        Reply::TimedOut => format!(
            "the client did not answer within {} s (ELICITATION_TIMEOUT_SEC)",
            timeout.as_secs()
        ),
        Reply::Gone => "the client went away before answering".into(),
    }
}

/// One upstream request during a call: one log line and one count, by method and outcome.
fn count_asked(conn: &Connection, method: &str, outcome: AskedOutcome) {
    log::info!(upstream = conn.spec.label.as_str(), method = method, outcome = outcome.as_str(); "upstream request on a call");
    conn.spec.metrics.upstream_request(&conn.spec.label, method, outcome);
}

/// A 2026-07-28 `input_required` result: its questions (in the map's order) and its
/// `requestState`. `None` for any other result.
fn input_round(result: &RawObject) -> Option<(Vec<asks::InputRequest>, Option<String>)> {
    let (requests, state) = asks::input_round(result)?;
    Some((asks::input_requests(&requests, usize::MAX), state))
}

/// Like `with_timeout`, but each progress notification restarts the clock, within
/// `PROGRESS_TIMEOUT_FACTOR` timeouts for this exchange (plus the time its questions waited on
/// the client), and the clock stops while a question waits on the client.
async fn with_progress_timeout<T>(
    conn: &Connection,
    fut: impl std::future::Future<Output = Result<T, UpstreamError>>,
    clock: &Clock,
) -> Result<T, UpstreamError> {
    let timeout = conn.spec.timeout;
    let started = Instant::now();
    // waits of earlier exchanges (rounds) do not extend this one
    let waited_before = clock.waited.get();
    let cap = timeout * PROGRESS_TIMEOUT_FACTOR;
    let hard_cap = || started + cap + (clock.waited.get() - waited_before);
    tokio::pin!(fut);
    loop {
        let now = Instant::now();
        let deadline = if clock.is_waiting() {
            now + timeout
        } else {
            (clock.last_activity.get() + timeout).min(hard_cap())
        };
        tokio::select! {
            r = &mut fut => return r,
            _ = tokio::time::sleep_until(deadline.into()) => {
                let now = Instant::now();
                if clock.is_waiting() {
                    continue;
                }
                if now >= hard_cap() || clock.last_activity.get() + timeout <= now {
                    return Err(UpstreamError::Wire(WireError::Timeout { elapsed: started.elapsed() }));
                }
            }
        }
    }
}

/// Requests an upstream may have unanswered on one call at a time: more are answered with an
/// error at once.
const MAX_UNANSWERED: usize = 64;

/// A request an upstream sent on a call's stream.
#[derive(Debug, PartialEq)]
struct ServerRequest {
    method: String,
    id: Value,
    params: Option<Value>,
}

/// A server-to-client request (`elicitation/create`, `sampling/createMessage`, `roots/list`,
/// `ping`, …): a message with a method and a string or number id.
fn server_request(v: &Value) -> Option<ServerRequest> {
    let method = v.get("method")?.as_str()?;
    let id = v.get("id").filter(|id| id.is_string() || id.is_number())?;
    Some(ServerRequest {
        method: method.to_string(),
        id: id.clone(),
        params: v.get("params").cloned(),
    })
}

/// A legacy upstream is told the request is cancelled (the modern era's cancellation is
/// the closed stream itself, already done by dropping the request).
async fn cancel_upstream(conn: &Connection, id: Option<i64>, reason: CancelReason) {
    let era = conn.session.read(SessionState::era);
    log::info!(upstream = conn.spec.label.as_str(), era = era.map(Era::as_str).unwrap_or("unknown"), reason = reason.as_str(); "upstream call cancelled");
    let (Some(Era::Legacy), Some(id)) = (era, id) else {
        return;
    };
    let note = jsonrpc::notification(
        "notifications/cancelled",
        Some(json!({"requestId": id, "reason": reason.message()})),
    );
    conn.post_in_session(&note, Duration::from_secs(2)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_required_result_gives_its_questions_and_state() {
        let raw = |v: Value| RawObject::parse(&v.to_string()).unwrap();
        let r = raw(
            json!({"resultType": "input_required", "requestState": "s", "inputRequests": {
                "b": {"method": "sampling/createMessage", "params": {"maxTokens": 3}},
                "a": {"method": "elicitation/create"},
                "bad": {"params": {}},
            }}),
        );
        let (questions, state) = input_round(&r).unwrap();
        assert_eq!(state.as_deref(), Some("s"));
        let methods: Vec<(&str, &str)> = questions.iter().map(|q| (q.key.as_str(), q.method.as_str())).collect();
        assert_eq!(methods, [("b", "sampling/createMessage"), ("a", "elicitation/create")]);
        assert_eq!(questions[0].params, Some(json!({"maxTokens": 3})));
        assert_eq!(
            input_round(&raw(json!({"resultType": "input_required"}))),
            Some((vec![], None))
        );
        for v in [
            json!({"resultType": "complete", "content": []}),
            json!({"content": [], "inputRequests": {"a": {"method": "roots/list"}}}),
            json!({"resultType": 5}),
        ] {
            assert_eq!(input_round(&raw(v.clone())), None, "{v}");
        }
        let many: Map<String, Value> = (0..1000)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect();
        let r = raw(json!({"resultType": "input_required", "inputRequests": many}));
        assert_eq!(
            input_round(&r).map(|(q, _)| q.len()),
            Some(1000),
            "all read: more than 16 fail the call"
        );
    }

    #[test]
    fn a_server_request_has_a_method_and_a_string_or_number_id() {
        let v = json!({"jsonrpc": "2.0", "id": "q", "method": "elicitation/create", "params": {"message": "ok?"}});
        assert_eq!(
            server_request(&v),
            Some(ServerRequest {
                method: "elicitation/create".into(),
                id: json!("q"),
                params: Some(json!({"message": "ok?"}))
            })
        );
        let v = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
        assert_eq!(
            server_request(&v),
            Some(ServerRequest {
                method: "ping".into(),
                id: json!(3),
                params: None
            })
        );
        // notifications, responses and malformed ids are not requests to answer
        for v in [
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            json!({"jsonrpc": "2.0", "id": null, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        ] {
            assert_eq!(server_request(&v), None, "{v}");
        }
    }

    #[test]
    fn the_envelope_tells_a_modern_upstream_what_the_client_can_be_asked_and_its_log_level() {
        let talk = Interaction {
            askable: asks::Askable::from_capabilities(Some(&json!({"sampling": {}}))),
            log_level: Some("debug".into()),
            ..Interaction::default()
        };
        assert_eq!(
            Value::Object(envelope(&talk)),
            json!({modern::META_CLIENT_CAPABILITIES: {"sampling": {}}, modern::META_LOG_LEVEL: "debug"})
        );
        assert!(
            envelope(&Interaction::default()).is_empty(),
            "the proxy's defaults say it"
        );
        let roots = Interaction {
            askable: asks::Askable::from_capabilities(Some(&json!({"roots": {}}))),
            ..Interaction::default()
        };
        assert_eq!(
            Value::Object(envelope(&roots)),
            json!({modern::META_CLIENT_CAPABILITIES: {"roots": {}}})
        );
    }

    #[test]
    fn questions_that_wait_together_stop_the_clock_once_and_never_leave_it_stopped() {
        let clock = Clock::new();
        let a = clock.wait();
        let b = clock.wait();
        std::thread::sleep(Duration::from_millis(30));
        drop(a);
        assert!(clock.is_waiting());
        drop(b);
        assert!(!clock.is_waiting());
        let waited = clock.waited.get();
        assert!(
            waited >= Duration::from_millis(30) && waited < Duration::from_millis(60),
            "{waited:?}: once, not twice"
        );
        // a question whose future is dropped mid-wait (its exchange ended) stops waiting too
        let fut = async {
            let _w = clock.wait();
            std::future::pending::<()>().await;
        };
        let mut fut = Box::pin(fut);
        let waker = futures_util::task::noop_waker();
        let _ = std::future::Future::poll(fut.as_mut(), &mut std::task::Context::from_waker(&waker));
        assert!(clock.is_waiting());
        drop(fut);
        assert!(!clock.is_waiting());
    }

    #[test]
    fn an_unanswered_question_says_why() {
        let t = Duration::from_secs(300);
        assert!(why_unanswered(&Reply::TimedOut, t).contains("within 300 s"));
        assert!(why_unanswered(&Reply::Gone, t).contains("went away"));
        assert!(why_unanswered(&Reply::Error(RpcError::new(-1, "no")), t).contains("error -1: no"));
    }

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
}
