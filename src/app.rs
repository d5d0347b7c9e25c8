//! The application: what the proxy does with a parsed tool call, between the HTTP layer and
//! the actors.
//!
//! [`App::run`] takes a [`ToolRequest`] (parsed once by `proxy_core::tools`) and returns a
//! typed [`ToolOutcome`]; the HTTP layer renders it as JSON at the very end. In between:
//! - `mcp_search`: the semantic arm's query vectors when it has vectors for the snapshot
//!   searched (a bounded wait, [`QUERY_EMBEDDING_TIMEOUT`]; else lexical), then
//!   `proxy_core::tools::search`;
//! - `mcp_describe`: `proxy_core::tools::describe` over the current snapshot;
//! - `mcp_call`: prepare against the snapshot (resolve → repair → validate); an unknown name
//!   asks the catalog for one refresh and is prepared once more; then the call goes to the
//!   actor of the upstream that owns the tool, with the client's trace, progress sink, cancel
//!   token and [`Talk`] (what the tool may ask the client, and how);
//! - `mcp_refresh`: a message to the catalog actor.
//!
//! # Tools that ask (elicitation, sampling, roots)
//! How a tool's question reaches the client depends on the client's era ([`Asking`]):
//! - **2025 era** ([`Asking::Stream`]): the HTTP layer relays each question on the call's SSE
//!   stream and routes the client's POSTed response back; the actor answers the upstream
//!   (a 2025 upstream under its own id; a 2026-07-28 upstream's `input_required` round by
//!   retrying with the answers).
//! - **2026-07-28** ([`Asking::Rounds`]): the client answers in `input_required` rounds. A
//!   2026-07-28 upstream's round is passed through with the proxy's sealed `requestState`
//!   (`proxy_core::request_state`: the upstream's state, the tool, a digest of the arguments,
//!   an expiry); the retry opens it and continues the upstream's round. A 2025 upstream asks on
//!   its open call: the call runs as a task, and when it asks, it is held
//!   (`proxy_actors::held`) under an id the sealed state names, and its questions go to the
//!   client as an `input_required` result; the retry takes it, answers the questions, and
//!   waits again. A held call not resumed within `ELICITATION_TIMEOUT_SEC` expires: its
//!   questions time out (the upstream is told so), and a call still running 2 s later is
//!   cancelled upstream. The sealed state names the client group it was issued to.
//!
//! Measured here, from the typed outcomes (never from a reply's JSON): each relayed call by
//! upstream, tool and outcome, its latency and the calls in flight; each search's queries,
//! empty answers and latency; the query embedding's wait and the searches that fell back to
//! lexical; and, through the [`RetrievalTracker`], how calls relate to the caller's last
//! search.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Addr;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch};

use mcp_wire::asks::{self, Askable};
use mcp_wire::jsonrpc::{self, RpcError};
use mcp_wire::trace::CallTrace;
use proxy_actors::catalog::{CatalogActor, Refresh, RefreshReason};
use proxy_actors::embedding::{EmbedQueries, Phase, SemanticIndex, SemanticState};
use proxy_actors::held::{Expire, HeldCalls, HeldLimits, Hold, Take};
use proxy_actors::retrieval::{self, ClientKey, RetrievalTracker};
use proxy_actors::upstream::{
    cancel_pair, Ask, Asker, CallTool, CancelHandle, CancelToken, Interaction, Reply, Round, UpstreamActor,
};
use proxy_core::catalog::resolve::{resolve, Resolution};
use proxy_core::catalog::Snapshot;
use proxy_core::request_state::{self, Claims, Resume, Sealer};
use proxy_core::tools::{
    self, CallOutcome, CallRequest, DescribeRequest, Prepared, RefreshOutcome, SearchAnswer, SearchRequest,
    ToolOutcome, ToolRequest, UpstreamFailure, UsageError,
};
use proxy_metrics::{self as metrics, FallbackReason, Metrics, NO_UPSTREAM, OTHER};
use upstream_http::UpstreamError;

/// How long a search waits for its query vectors before it answers lexically.
pub const QUERY_EMBEDDING_TIMEOUT: Duration = Duration::from_secs(2);

mod peers;
#[cfg(test)]
mod tests;

pub use peers::{Actors, Peers};

/// The application service: the actors it talks to and what they publish.
pub struct App<P: Peers = Actors> {
    /// The catalog and the upstreams (the catalog routes tool → upstream label).
    peers: P,
    /// The catalog's current snapshot (see [`App::snapshot`]).
    snapshots: watch::Receiver<Arc<Snapshot>>,
    /// The process's metrics (shared with the actors).
    pub metrics: Arc<Metrics>,
    /// Remembers each client's last search for retrieval telemetry.
    retrieval: Addr<RetrievalTracker>,
    /// The semantic arm, published by the embedding actor: the query embedder and the tool
    /// vectors of a snapshot generation (or why it is off).
    pub semantic: watch::Receiver<SemanticState>,
    /// Seals and opens the `requestState` of 2026-07-28 rounds.
    sealer: Sealer,
    /// Calls held for 2026-07-28 clients between a question and its answers.
    held: Addr<HeldCalls<Held>>,
    /// How long a question waits for its answer (`ELICITATION_TIMEOUT_SEC`).
    question_timeout: Duration,
}

/// What a call carries besides its request: where its notifications go, how it is cancelled,
/// its trace, and who is calling.
#[derive(Default)]
pub struct CallContext {
    /// The client's `params._meta` (what of it goes upstream: `mcp_wire::modern::passthrough_meta`).
    pub meta: Option<Value>,
    /// Receives the upstream's notifications (progress) that precede the result.
    pub events: Option<tokio::sync::mpsc::Sender<Value>>,
    /// Cancels the upstream call (its handle is the HTTP request's).
    pub cancel: Option<CancelToken>,
    /// The call's trace.
    pub trace: Option<CallTrace>,
    /// Who is calling, for retrieval telemetry (`None`: not recorded).
    pub client: Option<ClientKey>,
    /// What the tool may ask the client, and how.
    pub talk: Talk,
}

/// What a call's tool may ask its client, and how the question reaches it.
#[derive(Default)]
pub struct Talk {
    /// What the client declared it can answer.
    pub askable: Askable,
    pub asking: Asking,
    /// A 2026-07-28 client's `_meta` log level opt-in, passed upstream.
    pub log_level: Option<String>,
    /// A 2026-07-28 client's retry: its `inputResponses` and the `requestState` it was given.
    pub retry: Option<Retry>,
    /// Who holds the call's questions, for the per-client bound of held calls (the token
    /// group; all unauthenticated clients share one).
    pub holder: String,
}

/// How a tool's questions reach the client.
#[derive(Default)]
pub enum Asking {
    /// They cannot: each is answered with an error at once.
    #[default]
    Never,
    /// 2025 era: on the call's stream (the HTTP layer relays them and routes the answers).
    Stream(Asker),
    /// 2026-07-28: in `input_required` rounds the client answers on its retry.
    Rounds,
}

/// A 2026-07-28 client's retry of an `mcp_call` that needed input.
pub struct Retry {
    pub responses: Option<Value>,
    pub state: Option<String>,
}

/// A call held for a 2026-07-28 client while it answers the call's questions (see the module
/// docs): the running call's outcome, its questions (asked and waiting, and the next ones),
/// its notifications, and the handle whose drop cancels it upstream.
pub struct Held {
    outcome: oneshot::Receiver<CallOutcome>,
    questions: mpsc::Receiver<Ask>,
    waiting: Vec<(String, Ask)>,
    next_key: u32,
    events: mpsc::Receiver<Value>,
    cancel: CancelHandle,
    upstream: String,
    tool: String,
}

impl Held {
    /// Takes `ask` and any more questions already sent, each under its key (`q1`, `q2`, …),
    /// and drops the waiting questions the call stopped waiting for (timed out on its side).
    fn take_questions(&mut self, ask: Ask) {
        let mut asked = vec![ask];
        while let Ok(more) = self.questions.try_recv() {
            asked.push(more);
        }
        for ask in asked {
            let key = format!("q{}", self.next_key);
            self.next_key += 1;
            self.waiting.push((key, ask));
        }
        self.waiting.retain(|(_, ask)| !ask.reply.is_closed());
    }
}

/// How long an expired held call may take to end of itself once its questions were told they
/// timed out, before it is cancelled upstream.
const EXPIRY_GRACE: Duration = Duration::from_secs(2);

impl Expire for Held {
    /// As for a 2025-era client that does not answer: the questions time out (the upstream is
    /// told so and its tool may end as it sees fit); a call still running after
    /// [`EXPIRY_GRACE`] is cancelled.
    fn expire(mut self) {
        for (_, ask) in self.waiting.drain(..) {
            let _ = ask.reply.send(Reply::TimedOut);
        }
        actix::spawn(async move {
            let _ = tokio::time::timeout(EXPIRY_GRACE, &mut self.outcome).await;
            self.cancel.cancel(upstream_http::CancelReason::Unanswered);
        });
    }
}

/// How many calls all client groups together may have held.
const MAX_HELD_TOTAL: usize = 1024;

/// The `mcp_call` a sealed state belongs to: the tool name the client gave, and the digest of
/// that name and the arguments.
struct CallId {
    name: String,
    digest: String,
    /// The client group the state is issued to (see [`Talk::holder`]).
    holder: String,
}

impl CallId {
    fn of(req: &CallRequest, talk: &Talk) -> CallId {
        CallId {
            digest: request_state::call_digest(&req.name, &req.arguments),
            name: req.name.clone(),
            holder: talk.holder.clone(),
        }
    }
}

/// What a 2026-07-28 retry continues, its `requestState` opened.
enum Opened {
    /// No state: a fresh call.
    Fresh,
    /// An upstream's round: the upstream it was sealed for, and the round to continue.
    Upstream((String, Round)),
    /// A call held by this proxy, and the client's answers to its questions.
    Held { held: String, responses: Option<Value> },
    /// A state not issued by this proxy for this call ([`CallOutcome::StateRefused`]).
    Refused(CallOutcome),
}

/// A call prepared against the snapshot ([`App::prepare`]): the snapshot's tool `index`, its
/// repaired and validated arguments.
struct Ready {
    /// The name the client gave.
    name: String,
    index: usize,
    arguments: Value,
    repairs: Vec<String>,
    input_schema: Arc<Value>,
}

/// A call that ends before it is sent (unknown tool, refused arguments or state, no route):
/// its outcome, boxed (a rare path).
type Unsent = Box<CallOutcome>;

/// A prepared call with its route ([`App::route`]): the owning upstream, and the round it
/// continues.
struct Routed<P: Peers> {
    ready: Ready,
    round: Option<Round>,
    to: P::Upstream,
}

impl App {
    /// Must run inside an actix `System` (it starts the retrieval tracker).
    pub fn new(
        catalog: Addr<CatalogActor>,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        upstreams: HashMap<String, Addr<UpstreamActor>>,
        metrics: Arc<Metrics>,
        semantic: watch::Receiver<SemanticState>,
        asking: &crate::config::Asking,
    ) -> App {
        App::with_peers(Actors { catalog, upstreams }, snapshots, metrics, semantic, asking)
    }
}

impl<P: Peers> App<P> {
    /// An application over `peers` (the actors, or fakes in tests). Must run inside an
    /// actix `System` (it starts the retrieval tracker and the held calls).
    pub fn with_peers(
        peers: P,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        metrics: Arc<Metrics>,
        semantic: watch::Receiver<SemanticState>,
        asking: &crate::config::Asking,
    ) -> App<P> {
        let held = HeldCalls::new(HeldLimits {
            per_client: asking.max_pending,
            total: MAX_HELD_TOTAL,
        });
        App {
            peers,
            snapshots,
            retrieval: actix::Actor::start(RetrievalTracker::new(metrics.clone())),
            metrics,
            semantic,
            sealer: Sealer::new(asking.state_secret.as_deref()),
            held: actix::Actor::start(held),
            question_timeout: asking.timeout,
        }
    }

    /// How long a tool's question waits for the client's answer.
    pub fn question_timeout(&self) -> Duration {
        self.question_timeout
    }

    /// The catalog's current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    /// Runs one tool call.
    pub async fn run(&self, request: ToolRequest, ctx: CallContext) -> ToolOutcome {
        match request {
            ToolRequest::Search(req) => ToolOutcome::Search(self.search(&req, ctx.client).await),
            ToolRequest::Describe(req) => ToolOutcome::Describe(self.describe(&req)),
            ToolRequest::Call(req) => ToolOutcome::Call(self.call(req, ctx).await),
            ToolRequest::Refresh => ToolOutcome::Refresh(self.refresh().await),
        }
    }

    /// A call whose arguments were unusable: counted (a refused `mcp_call` is a rejected
    /// call) and answered as it is.
    pub fn refuse(&self, error: UsageError) -> ToolOutcome {
        if matches!(error.tool, tools::ToolKind::Call | tools::ToolKind::Pinned) {
            self.metrics
                .call(NO_UPSTREAM, OTHER, metrics::CallOutcome::Rejected, None);
        }
        ToolOutcome::Usage(error)
    }

    /// `mcp_search`: hybrid when the semantic arm is ready for the snapshot searched.
    pub async fn search(&self, req: &SearchRequest, client: Option<ClientKey>) -> SearchAnswer {
        let started = Instant::now();
        let snap = self.snapshot();
        let semantic = self.query_vectors(&snap, req).await;
        let vectors = semantic.as_ref().map(|(index, queries)| tools::SearchVectors {
            tools: &index.vectors,
            queries,
        });
        let answer = tools::search(&snap, req, vectors);
        self.metrics.search(
            answer.queries.len() as u64,
            answer.empty_queries() as u64,
            started.elapsed(),
        );
        if let Some(client) = client {
            self.retrieval.do_send(retrieval::Searched {
                client,
                hits: answer.names(),
            });
        }
        answer
    }

    pub fn describe(&self, req: &DescribeRequest) -> tools::DescribeAnswer {
        tools::describe(&self.snapshot(), req)
    }

    /// `mcp_call` (or a pinned tool), in steps: a 2026-07-28 client's retry first opens its
    /// `requestState` (a held call is resumed, an upstream's round continued); then
    /// [resolve](Self::resolve) (a name the catalog lacks: one refresh, and one more try),
    /// [prepare](Self::prepare) (repair, validate), [route](Self::route) (the owning
    /// upstream) and [relay](Self::relay_call). Each outcome that was never sent is counted
    /// once, here.
    pub async fn call(&self, req: CallRequest, mut ctx: CallContext) -> CallOutcome {
        let id = matches!(ctx.talk.asking, Asking::Rounds).then(|| CallId::of(&req, &ctx.talk));
        let mut round = None;
        if let (Some(retry), Some(id)) = (ctx.talk.retry.take(), &id) {
            match self.open(retry, id) {
                Opened::Fresh => {}
                Opened::Upstream(sealed) => round = Some(sealed),
                // boxed: a rare path whose state would otherwise enlarge every call's future
                Opened::Held { held, responses } => return Box::pin(self.resume_held(&held, responses, ctx, id)).await,
                Opened::Refused(refused) => return self.counted(refused),
            }
        }
        let snap = self.resolve(&req.name).await;
        let steps = self
            .prepare(&snap, req, ctx.client.take())
            .and_then(|ready| self.route(&snap, ready, round));
        match steps {
            Ok(routed) => self.relay_call(&snap, routed, ctx, id).await,
            Err(outcome) => self.counted(*outcome),
        }
    }

    /// A 2026-07-28 retry's `requestState`, opened: what the call continues.
    fn open(&self, retry: Retry, id: &CallId) -> Opened {
        let Some(state) = &retry.state else {
            return Opened::Fresh;
        };
        match self
            .sealer
            .open(state, &id.name, &id.digest, &id.holder, request_state::unix_now())
        {
            Err(refused) => Opened::Refused(state_refused(&id.name, refused.message().to_string())),
            Ok(Claims {
                resume: Resume::Held { id: held },
                ..
            }) => Opened::Held {
                held,
                responses: retry.responses,
            },
            Ok(Claims {
                resume: Resume::Upstream { upstream, state },
                ..
            }) => Opened::Upstream((
                upstream,
                Round {
                    responses: retry.responses,
                    state,
                },
            )),
        }
    }

    /// Resolve, retrying once: the snapshot to prepare `name` against. A name it lacks (even
    /// after repairs) asks the catalog for one refresh first, and the call is prepared
    /// against the snapshot after it.
    async fn resolve(&self, name: &str) -> Arc<Snapshot> {
        let snap = self.snapshot();
        if !matches!(resolve(&snap, name), Resolution::Unknown) {
            return snap;
        }
        let _ = self
            .peers
            .refresh(Refresh {
                reason: RefreshReason::UnknownTool,
                seen_generation: Some(snap.generation),
            })
            .await;
        self.snapshot()
    }

    /// Prepare: the arguments repaired and validated against `snap`'s tool
    /// (`tools::prepare`), the call told to retrieval telemetry (unless pinned: called by
    /// name, without searching). An unknown tool or refused arguments end here, unsent.
    fn prepare(&self, snap: &Snapshot, req: CallRequest, client: Option<ClientKey>) -> Result<Ready, Unsent> {
        let CallRequest {
            name,
            arguments,
            pinned,
        } = req;
        let prepared = tools::prepare(snap, &name, arguments);
        if let Some(client) = client.filter(|_| !pinned) {
            let tool = match &prepared {
                Prepared::Ready { index, .. } | Prepared::Rejected { index, .. } => {
                    snap.tools[*index].tool.name.clone()
                }
                Prepared::Unknown => name.clone(),
            };
            self.retrieval.do_send(retrieval::Called { client, tool });
        }
        match prepared {
            Prepared::Ready {
                index,
                arguments,
                repairs,
                input_schema,
            } => Ok(Ready {
                name,
                index,
                arguments,
                repairs,
                input_schema,
            }),
            Prepared::Unknown => Err(Box::new(CallOutcome::unknown_tool(snap, &name))),
            Prepared::Rejected { index, rejection } => Err(Box::new(CallOutcome::Rejected {
                upstream: snap.tools[index].upstream.clone(),
                tool: snap.tools[index].tool.name.clone(),
                rejection,
            })),
        }
    }

    /// Route: the upstream that owns the prepared tool. A round sealed for another upstream
    /// is refused first; an upstream without an actor is no route.
    fn route(&self, snap: &Snapshot, ready: Ready, round: Option<(String, Round)>) -> Result<Routed<P>, Unsent> {
        let owner = &snap.tools[ready.index];
        let round = match round {
            Some((sealed_for, _)) if sealed_for != owner.upstream => {
                let upstream = &owner.upstream;
                return Err(Box::new(state_refused(
                    &ready.name,
                    format!("requestState was issued for upstream {sealed_for:?}, and the tool is now served by {upstream:?}; call it again without requestState"),
                )));
            }
            other => other.map(|(_, r)| r),
        };
        let Some(to) = self.peers.upstream(&owner.upstream) else {
            return Err(Box::new(CallOutcome::NoRoute {
                upstream: owner.upstream.clone(),
                tool: owner.tool.name.clone(),
            }));
        };
        Ok(Routed { ready, round, to })
    }

    /// Relay: the [`CallTool`] built and sent to the upstream. A 2026-07-28 client's call is
    /// sealed for its retry when it needs input; one that can be asked runs as a task that may
    /// be held between the client's requests while it asks (module docs).
    async fn relay_call(
        &self,
        snap: &Snapshot,
        routed: Routed<P>,
        mut ctx: CallContext,
        id: Option<CallId>,
    ) -> CallOutcome {
        let Routed { ready, round, to } = routed;
        let owner = &snap.tools[ready.index];
        let talk = std::mem::take(&mut ctx.talk);
        let (asker, questions) = match talk.asking {
            Asking::Stream(asker) => (Some(asker), None),
            Asking::Rounds if !talk.askable.is_empty() => {
                let (tx, rx) = mpsc::channel(proxy_actors::upstream::ask::MAX_QUESTIONS);
                (Some(tx), Some(rx))
            }
            Asking::Rounds | Asking::Never => (None, None),
        };
        let mut call = CallTool {
            name: owner.tool.name.clone(),
            arguments: ready.arguments,
            input_schema: ready.input_schema,
            meta: mcp_wire::modern::passthrough_meta(ctx.meta.as_ref()),
            notifications: ctx.events.take(),
            cancel: ctx.cancel.take(),
            trace: ctx.trace.take().map(|t| t.upstream),
            interaction: Interaction {
                asker,
                askable: talk.askable,
                log_level: talk.log_level,
                pass_input_required: id.is_some(),
                round,
                question_timeout: self.question_timeout,
            },
        };
        if let Some(trace) = &call.trace {
            trace.stamp(&mut call.meta);
        }
        let upstream = owner.upstream.as_str();
        let metrics = self.metrics.clone();
        match (questions, id) {
            (Some(questions), Some(id)) => {
                let (held, events, cancel) = spawn_held::<P>(metrics, to, upstream, call, ready.repairs, questions);
                Box::pin(self.drive(held, events, cancel, talk.holder, &id)).await
            }
            (_, Some(id)) => self.sealed(relay::<P>(metrics, to, upstream, call, ready.repairs).await, &id),
            (_, None) => relay::<P>(metrics, to, upstream, call, ready.repairs).await,
        }
    }

    /// Waits for a 2026-07-28 client's call (running as a task) to end or to ask something;
    /// its notifications go to the client's request meanwhile. When it asks, it is held and
    /// its questions become the client's `input_required` round.
    async fn drive(
        &self,
        mut held: Held,
        events: Option<mpsc::Sender<Value>>,
        mut cancel: Option<CancelToken>,
        holder: String,
        id: &CallId,
    ) -> CallOutcome {
        let cancelled = async {
            match cancel.as_mut() {
                Some(t) => t.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            tokio::select! {
                // an ended call is never held for one more useless round
                biased;
                outcome = &mut held.outcome => {
                    while let Ok(note) = held.events.try_recv() {
                        forward(&events, note);
                    }
                    let outcome = outcome.unwrap_or_else(|_| gone(&held));
                    return self.sealed(outcome, id);
                }
                Some(note) = held.events.recv() => forward(&events, note),
                // the client's request went away (dropping `held` cancels the call upstream)
                _ = &mut cancelled => return gone(&held),
                Some(ask) = held.questions.recv() => match self.hold(held, ask, &holder, id).await {
                    Ok(outcome) => return outcome,
                    Err(back) => held = back,
                },
            }
        }
    }

    /// A held call's new questions (`ask`, and any more already sent): the call is held and
    /// its waiting questions become the client's `input_required` round. `Err`: the call goes
    /// on being driven (its questions were all closed, or declined: too many calls held for
    /// this client).
    async fn hold(&self, mut held: Held, ask: Ask, holder: &str, id: &CallId) -> Result<CallOutcome, Held> {
        held.take_questions(ask);
        if held.waiting.is_empty() {
            return Err(held);
        }
        let requests: Vec<asks::InputRequest> = held
            .waiting
            .iter()
            .map(|(key, ask)| asks::InputRequest {
                key: key.clone(),
                method: ask.method.clone(),
                params: ask.params.clone(),
            })
            .collect();
        let (upstream, tool) = (held.upstream.clone(), held.tool.clone());
        let hold = Hold {
            client: holder.to_string(),
            item: held,
            ttl: self.question_timeout,
        };
        match self.held.send(hold).await {
            Ok(Ok(held_id)) => Ok(CallOutcome::InputRequired {
                state: self.seal(id, Resume::Held { id: held_id }),
                upstream,
                tool,
                requests: asks::input_requests_map(&requests),
            }),
            Ok(Err(mut back)) => {
                // too many calls held for this client: its questions are declined
                for (_, ask) in back.waiting.drain(..) {
                    let _ = ask.reply.send(Reply::Error(RpcError::new(
                        jsonrpc::INTERNAL_ERROR,
                        "The proxy's client has too many calls waiting for its answers (MAX_PENDING_QUESTIONS); this question was not asked",
                    )));
                }
                Err(back)
            }
            Err(_) => Ok(CallOutcome::Failed(failure(
                &upstream,
                &tool,
                UpstreamError::Unavailable,
            ))),
        }
    }

    /// A 2026-07-28 client's retry of a held call: its answers go to the waiting questions
    /// (a question it did not answer gets an error), and the call is driven on.
    async fn resume_held(&self, held_id: &str, responses: Option<Value>, ctx: CallContext, id: &CallId) -> CallOutcome {
        let Ok(Some(mut held)) = self.held.send(Take::<Held>::new(held_id)).await else {
            return self.counted(state_refused(
                &id.name,
                "the call that asked is no longer held: it expired (ELICITATION_TIMEOUT_SEC), was resumed already, or is held by another instance of the proxy (keep a client on one instance); call the tool again without requestState".into(),
            ));
        };
        let responses = match responses {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        for (key, ask) in held.waiting.drain(..) {
            let reply = match responses.get(&key) {
                Some(answer) => Reply::Result(answer.clone()),
                None => Reply::Error(RpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    format!("The client's retry carried no answer for this question (inputResponses has no {key:?})"),
                )),
            };
            let _ = ask.reply.send(reply);
        }
        self.drive(held, ctx.events, ctx.cancel, ctx.talk.holder, id).await
    }

    /// A 2026-07-28 upstream's `input_required` round, passed through: the upstream's state
    /// sealed in the proxy's own.
    fn sealed(&self, outcome: CallOutcome, id: &CallId) -> CallOutcome {
        match outcome {
            CallOutcome::InputRequired {
                upstream,
                tool,
                requests,
                state,
            } => {
                let resume = Resume::Upstream {
                    upstream: upstream.clone(),
                    state: (!state.is_empty()).then_some(state),
                };
                CallOutcome::InputRequired {
                    state: self.seal(id, resume),
                    upstream,
                    tool,
                    requests,
                }
            }
            other => other,
        }
    }

    fn seal(&self, id: &CallId, resume: Resume) -> String {
        self.sealer.seal(&Claims {
            tool: id.name.clone(),
            digest: id.digest.clone(),
            holder: id.holder.clone(),
            resume,
            expires: request_state::unix_now() + self.question_timeout.as_secs(),
        })
    }

    /// A call that ended without being sent, counted.
    fn counted(&self, outcome: CallOutcome) -> CallOutcome {
        self.count(&outcome, None);
        outcome
    }

    /// Counts a call that ended without being sent.
    fn count(&self, outcome: &CallOutcome, latency: Option<Duration>) {
        let (upstream, tool) = match outcome {
            CallOutcome::Relayed { upstream, tool, .. }
            | CallOutcome::Rejected { upstream, tool, .. }
            | CallOutcome::NoRoute { upstream, tool } => (upstream.as_str(), tool.as_str()),
            CallOutcome::InputRequired { upstream, tool, .. } => (upstream.as_str(), tool.as_str()),
            CallOutcome::Failed(f) => (f.upstream.as_str(), f.tool.as_str()),
            CallOutcome::UnknownTool { .. } | CallOutcome::StateRefused { .. } => (NO_UPSTREAM, OTHER),
        };
        self.metrics.call(upstream, tool, metric_of(outcome), latency);
    }

    /// `mcp_refresh`: the catalog re-lists every upstream (or says why it did not).
    pub async fn refresh(&self) -> RefreshOutcome {
        let asked = self.peers.refresh(Refresh {
            reason: RefreshReason::Explicit,
            seen_generation: None,
        });
        match asked.await {
            Ok(Ok(report)) => RefreshOutcome::Done(report),
            Ok(Err(failure)) => RefreshOutcome::Failed(failure),
            Err(_) => RefreshOutcome::CatalogGone,
        }
    }

    /// The semantic arm's input for a search on `snap`: the tool vectors built for it and the
    /// queries' vectors from the query embedder. `None` (lexical) when the arm is off, its
    /// vectors are not ready for this snapshot, or the query vectors fail or are late
    /// (counted, logged at debug; never an error to the client).
    async fn query_vectors(
        &self,
        snap: &Snapshot,
        req: &SearchRequest,
    ) -> Option<(Arc<SemanticIndex>, Vec<Arc<[f32]>>)> {
        let (index, embedder) = {
            let sem = self.semantic.borrow();
            if matches!(sem.phase, Phase::Off(_)) {
                return None;
            }
            match (sem.index_for(snap.generation), &sem.query) {
                (Some(index), Some(query)) => (index.clone(), query.clone()),
                _ => {
                    self.metrics.lexical_fallback(FallbackReason::NotReady);
                    return None;
                }
            }
        };
        let started = Instant::now();
        let asked = embedder.send(EmbedQueries {
            queries: req.queries.clone(),
            deadline: started + QUERY_EMBEDDING_TIMEOUT,
        });
        let outcome = tokio::time::timeout(QUERY_EMBEDDING_TIMEOUT, asked).await;
        self.metrics.query_embedding(started.elapsed());
        let reason = match outcome {
            Ok(Ok(Ok(vectors))) => return Some((index, vectors)),
            Ok(Ok(Err(error))) => {
                log::debug!(error = error.as_str(); "query embedding failed; lexical search");
                FallbackReason::Error
            }
            Ok(Err(_)) => {
                log::debug!(error = "query embedder stopped"; "query embedding failed; lexical search");
                FallbackReason::Error
            }
            Err(_) => {
                log::debug!(timeout_ms = QUERY_EMBEDDING_TIMEOUT.as_millis() as u64; "query embedding timed out; lexical search");
                FallbackReason::Timeout
            }
        };
        self.metrics.lexical_fallback(reason);
        None
    }
}

/// A retry that cannot be resumed (counted as a rejected call).
fn state_refused(name: &str, message: String) -> CallOutcome {
    CallOutcome::StateRefused {
        tool: name.to_string(),
        message,
    }
}

/// Sends a prepared call to the actor of `upstream` and waits for how it ended (counted). A
/// 2026-07-28 `input_required` result comes back as [`CallOutcome::InputRequired`] holding the
/// upstream's own state (`""` for none), which the caller seals.
async fn relay<P: Peers>(
    metrics: Arc<Metrics>,
    to: P::Upstream,
    upstream: &str,
    call: CallTool,
    repairs: Vec<String>,
) -> CallOutcome {
    let tool = call.name.clone();
    let pending = PendingCall::start(&metrics, upstream, &tool);
    let answer = P::call(to, call).await.unwrap_or(Err(UpstreamError::Unavailable));
    let outcome = match answer {
        Ok(result) => match asks::input_round(&result) {
            Some((requests, state)) => CallOutcome::InputRequired {
                upstream: upstream.to_string(),
                tool,
                requests: Value::Object(requests),
                state: state.unwrap_or_default(),
            },
            None => CallOutcome::relayed(upstream, &tool, result, &repairs),
        },
        Err(e) => CallOutcome::Failed(failure(upstream, &tool, e)),
    };
    pending.finish(metric_of(&outcome));
    outcome
}

/// A 2026-07-28 client's call that can be asked, started as a task ([`relay`]) that may be
/// held between the client's requests: the [`Held`] call (its outcome, questions,
/// notifications and the handle whose drop cancels it), and the client's own notification
/// sink and cancel token, which [`App::drive`] serves.
fn spawn_held<P: Peers>(
    metrics: Arc<Metrics>,
    to: P::Upstream,
    upstream: &str,
    mut call: CallTool,
    repairs: Vec<String>,
    questions: mpsc::Receiver<Ask>,
) -> (Held, Option<mpsc::Sender<Value>>, Option<CancelToken>) {
    let (tx_events, events) = mpsc::channel(proxy_actors::upstream::NOTIFICATION_BUFFER);
    let client_events = call.notifications.replace(tx_events);
    let (cancel, token) = cancel_pair();
    let client_cancel = call.cancel.replace(token);
    let (done, outcome) = oneshot::channel();
    let tool = call.name.clone();
    actix_web::rt::spawn({
        let upstream = upstream.to_string();
        async move {
            let _ = done.send(relay::<P>(metrics, to, &upstream, call, repairs).await);
        }
    });
    let held = Held {
        outcome,
        questions,
        waiting: Vec::new(),
        next_key: 1,
        events,
        cancel,
        upstream: upstream.to_string(),
        tool,
    };
    (held, client_events, client_cancel)
}

/// How an upstream error is told to the client.
fn failure(upstream: &str, tool: &str, e: UpstreamError) -> UpstreamFailure {
    UpstreamFailure {
        upstream: upstream.to_string(),
        tool: tool.to_string(),
        error: e.to_string(),
        advice: e.advice().to_string(),
        retryable: e.retryable(),
        cancelled: matches!(e, UpstreamError::Cancelled(_)),
        client_side: matches!(
            e,
            UpstreamError::Unanswered { .. } | UpstreamError::InputRequired { .. }
        ),
    }
}

/// A held call whose task ended without an outcome, or whose client went away.
fn gone(held: &Held) -> CallOutcome {
    CallOutcome::Failed(failure(
        &held.upstream,
        &held.tool,
        UpstreamError::Cancelled(upstream_http::CancelReason::ClientGone),
    ))
}

/// A notification of a held call, to the client's current request (if it takes them).
fn forward(events: &Option<mpsc::Sender<Value>>, note: Value) {
    if let Some(tx) = events {
        let _ = tx.try_send(note);
    }
}

/// The metric label of how a call ended.
fn metric_of(outcome: &CallOutcome) -> metrics::CallOutcome {
    match outcome {
        CallOutcome::Relayed { tool_error: true, .. } => metrics::CallOutcome::ToolError,
        CallOutcome::Relayed { .. } => metrics::CallOutcome::Ok,
        CallOutcome::InputRequired { .. } => metrics::CallOutcome::InputRequired,
        CallOutcome::Failed(f) if f.cancelled => metrics::CallOutcome::Cancelled,
        CallOutcome::Failed(f) if f.client_side => metrics::CallOutcome::Unanswered,
        CallOutcome::Failed(_) | CallOutcome::NoRoute { .. } => metrics::CallOutcome::UpstreamError,
        CallOutcome::Rejected { .. } | CallOutcome::StateRefused { .. } => metrics::CallOutcome::Rejected,
        CallOutcome::UnknownTool { .. } => metrics::CallOutcome::UnknownTool,
    }
}

/// A call sent upstream, counted in flight until it ends. A request dropped before its call
/// ended (the client went away, or the shutdown cut it) counts the call as cancelled. Its
/// series are resolved once per tool ([`metrics::CallSeries`]): recording a call builds no label.
struct PendingCall {
    metrics: Arc<Metrics>,
    series: Arc<metrics::CallSeries>,
    started: Instant,
    in_flight: Option<metrics::InFlight>,
}

impl PendingCall {
    fn start(metrics: &Arc<Metrics>, upstream: &str, tool: &str) -> PendingCall {
        let series = metrics.call_series(upstream, tool);
        PendingCall {
            in_flight: Some(metrics.series_in_flight(&series)),
            metrics: metrics.clone(),
            series,
            started: Instant::now(),
        }
    }

    fn finish(mut self, outcome: metrics::CallOutcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: metrics::CallOutcome) {
        if self.in_flight.take().is_some() {
            let latency = Some(self.started.elapsed());
            self.metrics.series_call(&self.series, outcome, latency);
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        self.record(metrics::CallOutcome::Cancelled);
    }
}
