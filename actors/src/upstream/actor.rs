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
//! (the actor hands the question over and takes the answer back: `crate::asking`), else with an error at once (the tool then returns its own declined or error
//! result). `ping` is answered by the proxy. A 2026-07-28 `input_required` result is read once
//! ([`Round::read`]) and either returned as it came ([`Called::Round`]: the client takes the
//! round itself), or its questions are asked the
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

use super::cancel::CancelToken;
use super::connection::{Connection, RequestOptions, UpstreamSpec};
use super::error::{CancelReason, UpstreamError};
use super::list_changes::{self, ToolsChanged};
use super::session::{Ready, SessionState};
use crate::asking::{alongside, asked_outcome, Interaction};
use mcp_wire::jsonrpc;
use mcp_wire::raw::RawObject;
use mcp_wire::trace::TraceHeaders;
use mcp_wire::types::Tool;
use mcp_wire::{modern, Era};
use proxy_core::asking::{self, Answer, Keyed, Method, Question, Round, UpstreamRequest};
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
/// read one level deep (its members are the raw JSON the upstream sent), or the 2026-07-28
/// round the caller takes itself ([`Interaction::pass_input_required`]).
#[derive(Message)]
#[rtype(result = "Result<Called, UpstreamError>")]
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

/// How a [`CallTool`] ended.
#[derive(Debug)]
pub enum Called {
    /// The upstream's result.
    Done(RawObject),
    /// A 2026-07-28 `input_required` round, passed to the caller as it came.
    Round(Round),
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
    type Result = ResponseFuture<Result<Called, UpstreamError>>;

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
async fn call_tool(conn: &Connection, msg: &mut CallTool) -> Result<Called, UpstreamError> {
    let mut params = Map::new();
    params.insert("name".into(), Value::from(msg.name.as_str()));
    params.insert("arguments".into(), std::mem::take(&mut msg.arguments));
    let mut params = Value::Object(params);
    let msg = &*msg;
    let talk = &msg.interaction;
    let clock = Clock::new();
    let envelope = talk.upstream_meta();
    let mut answers = talk.round.clone();
    for _ in 0..asking::MAX_ROUNDS {
        if let (Some(a), Value::Object(p)) = (answers.take(), &mut params) {
            a.apply(p);
        }
        let round = match call_once(conn, msg, &params, &clock, &envelope).await? {
            Called::Round(round) => round,
            done => return Ok(done),
        };
        let questions = round.questions();
        if questions.len() > asking::MAX_QUESTIONS {
            // not cut short: the upstream's retry would lack the answers it asked for
            return Err(UpstreamError::invalid_reply(format!(
                "input_required asks {} questions in one round, more than the proxy's {}",
                questions.len(),
                asking::MAX_QUESTIONS
            )));
        }
        if talk.pass_input_required || talk.asker.is_none() {
            return not_asked(conn, talk, round, questions);
        }
        if questions.is_empty() {
            tokio::time::sleep(asking::EMPTY_ROUND_PAUSE).await;
        }
        let asked = questions.iter().map(|q| ask(conn, talk, q.item.clone(), &clock));
        let replies = join_all(asked).await;
        let next = round.answered(questions, replies, &talk.timeouts);
        answers = Some(next.map_err(|u| UpstreamError::Unanswered {
            method: u.method,
            why: u.why,
        })?);
    }
    Err(UpstreamError::invalid_reply(format!(
        "the tool asked for input in more than {} rounds in a row",
        asking::MAX_ROUNDS
    )))
}

/// A round the actor does not ask: passed to a 2026-07-28 client as it came, or (a call
/// that cannot ask) the call ends needing input. Its questions are counted either way.
fn not_asked(
    conn: &Connection,
    talk: &Interaction,
    round: Round,
    questions: Vec<Keyed<Question>>,
) -> Result<Called, UpstreamError> {
    let outcome = if talk.pass_input_required {
        AskedOutcome::Passed
    } else {
        AskedOutcome::Declined
    };
    for q in &questions {
        count_asked(conn, q.item.method.as_str(), outcome);
    }
    if talk.pass_input_required {
        return Ok(Called::Round(round));
    }
    let mut methods: Vec<String> = questions.iter().map(|q| q.item.method.as_str().to_string()).collect();
    methods.sort();
    Err(UpstreamError::InputRequired { methods })
}

/// One `tools/call` exchange: progress and log notifications forwarded, requests the upstream
/// sends on the call's stream answered alongside (`ping` by the proxy, the rest by the
/// client through [`ask`]), timeouts, cancellation. A 2026-07-28 round is read here, once.
async fn call_once(
    conn: &Connection,
    msg: &CallTool,
    params: &Value,
    clock: &Clock,
    envelope: &Map<String, Value>,
) -> Result<Called, UpstreamError> {
    let current_id: Cell<Option<i64>> = Cell::new(None);
    // requests the upstream sends on the call's stream, answered alongside (module docs)
    let asked: RefCell<Vec<UpstreamRequest>> = RefCell::new(Vec::new());
    let asking = tokio::sync::Notify::new();
    let forward = |v: Value| {
        if let Some(request) = UpstreamRequest::read(&v) {
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
                if running.len() >= asking::MAX_UNANSWERED {
                    // the upstream's own timeout ends what it keeps asking beyond this
                    count_asked(conn, request.question.method.as_str(), AskedOutcome::Declined);
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
    match Round::read(&result) {
        None => Ok(Called::Done(result)),
        Some(Ok(round)) => Ok(Called::Round(round)),
        Some(Err(too_long)) => Err(UpstreamError::invalid_reply(too_long.to_string())),
    }
}

/// Answers one request an upstream sent on a call's stream, under the upstream's id: `ping`
/// by the proxy, anything else with the client's answer (or an error saying why there is
/// none).
async fn respond(conn: &Connection, talk: &Interaction, request: UpstreamRequest, clock: &Clock) {
    let UpstreamRequest { id, question } = request;
    let answer = if question.method == Method::Ping {
        count_asked(conn, "ping", AskedOutcome::Answered);
        Answer::Result(json!({}))
    } else {
        ask(conn, talk, question, clock).await
    };
    let body = asking::upstream_response(&id, answer, &talk.timeouts);
    conn.post_in_session(&body, Duration::from_secs(5)).await;
}

/// Hands one question to the call's client and takes the answer back (the upstream's clock
/// stopped meanwhile, see [`Clock`]); a question the client cannot take is declined at once.
/// Counted and logged by outcome.
async fn ask(conn: &Connection, talk: &Interaction, question: Question, clock: &Clock) -> Answer {
    // counted however this ends: a question dropped mid-wait (its call was cancelled or ended)
    // counts as abandoned
    let mut counted = Counted {
        conn,
        method: question.method.as_str().to_string(),
        outcome: AskedOutcome::Abandoned,
    };
    let answer = match talk.pose(question) {
        Err(declined) => Answer::Declined(declined),
        Ok(pending) => {
            let _waiting = clock.wait();
            pending.answer().await
        }
    };
    counted.outcome = asked_outcome(&answer);
    answer
}

/// Counts one question by its outcome when dropped (see [`ask`]).
struct Counted<'a> {
    conn: &'a Connection,
    method: String,
    outcome: AskedOutcome,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        count_asked(self.conn, &self.method, self.outcome);
    }
}

/// One upstream request during a call: one log line and one count, by method and outcome.
fn count_asked(conn: &Connection, method: &str, outcome: AskedOutcome) {
    log::info!(upstream = conn.spec.label.as_str(), method = method, outcome = outcome.as_str(); "upstream request on a call");
    conn.spec.metrics.upstream_request(&conn.spec.label, method, outcome);
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
