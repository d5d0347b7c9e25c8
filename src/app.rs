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
//!   (by the asking desk, `proxy_actors::asking`) under an id the sealed state names, and its questions go to the
//!   client as an `input_required` result; the retry takes it, answers the questions, and
//!   waits again. A held call not resumed within `ELICITATION_TIMEOUT_SEC` expires: its
//!   questions time out (the upstream is told so), and a call still running 2 s later is
//!   cancelled upstream. The sealed state names the client group it was issued to.
//!
//! # Layout
//! - `app.rs`: [`App`] and what a call carries ([`CallContext`]; its [`Talk`], [`Asking`]
//!   and [`Retry`] are the asking home's, `proxy_actors::asking` and `proxy_core::asking`,
//!   re-exported); the search, describe and refresh tools; counting an outcome.
//! - `app/call.rs`: `App::call` in its steps (open a retry's state, resolve, prepare, route,
//!   relay) and the relayed call's metrics.
//! - `app/held.rs`: a 2026-07-28 client's call that may be held while it asks: its task
//!   started, driven (`proxy_actors::asking::drive`), and what was driven told as its
//!   outcome, its round sealed.
//! - `app/peers.rs`: [`Peers`], the catalog and upstreams as a call reaches them ([`Actors`]
//!   in the proxy; fakes in `app/tests.rs`, the unit tests of `App::call`).
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
use serde_json::Value;
use tokio::sync::watch;

use mcp_wire::trace::CallTrace;
use proxy_actors::asking::Desk;
pub use proxy_actors::asking::{Asking, Talk};
use proxy_actors::catalog::{CatalogActor, Refresh, RefreshReason};
use proxy_actors::embedding::{EmbedQueries, Phase, SemanticIndex, SemanticState};
use proxy_actors::retrieval::{self, ClientKey, RetrievalTracker};
use proxy_actors::upstream::{CancelToken, UpstreamActor, UpstreamError};
pub use proxy_core::asking::Retry;
use proxy_core::asking::Timeouts;
use proxy_core::catalog::Snapshot;
use proxy_core::request_state::Sealer;
use proxy_core::tools::{
    self, CallOutcome, DescribeRequest, RefreshOutcome, SearchAnswer, SearchRequest, ToolOutcome, ToolRequest,
    UpstreamFailure, UsageError,
};
use proxy_metrics::{self as metrics, FallbackReason, Metrics, NO_UPSTREAM, OTHER};

/// How long a search waits for its query vectors before it answers lexically.
pub const QUERY_EMBEDDING_TIMEOUT: Duration = Duration::from_secs(2);

mod call;
mod held;
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
    /// What waits on a client: the questions posted to 2025-era sessions, and the calls held
    /// for 2026-07-28 clients between a question and its answers.
    desk: Addr<Desk>,
    /// How long a question waits for its answer (`ELICITATION_TIMEOUT_SEC`).
    timeouts: Timeouts,
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
    /// actix `System` (it starts the retrieval tracker and the asking desk).
    pub fn with_peers(
        peers: P,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        metrics: Arc<Metrics>,
        semantic: watch::Receiver<SemanticState>,
        asking: &crate::config::Asking,
    ) -> App<P> {
        let timeouts = Timeouts::new(asking.timeout);
        App {
            peers,
            snapshots,
            retrieval: actix::Actor::start(RetrievalTracker::new(metrics.clone())),
            metrics,
            semantic,
            sealer: Sealer::new(asking.state_secret.as_deref()),
            desk: actix::Actor::start(Desk::new(timeouts, asking.max_pending)),
            timeouts,
        }
    }

    /// How long a tool's question waits for the client's answer.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// The asking desk (see `proxy_actors::asking`): the HTTP layer posts a 2025-era
    /// client's questions there and delivers its answers.
    pub fn desk(&self) -> &Addr<Desk> {
        &self.desk
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
                log::debug!(error = error.to_string().as_str(); "query embedding failed; lexical search");
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

/// How an upstream error is told to the client.
fn failure(upstream: &str, tool: &str, e: UpstreamError) -> UpstreamFailure {
    UpstreamFailure {
        upstream: upstream.to_string(),
        tool: tool.to_string(),
        error: crate::advice::describe(&e),
        advice: crate::advice::advice(&e).to_string(),
        retryable: e.retryable(),
        cancelled: matches!(e, UpstreamError::Cancelled(_)),
        client_side: matches!(
            e,
            UpstreamError::Unanswered { .. } | UpstreamError::InputRequired { .. }
        ),
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
