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
//!   actor of the upstream that owns the tool, with the client's trace, progress sink and
//!   cancel token;
//! - `mcp_refresh`: a message to the catalog actor.
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
use proxy_actors::catalog::{CatalogActor, Refresh, RefreshReason};
use proxy_actors::embedding::{EmbedQueries, Phase, SemanticIndex, SemanticState};
use proxy_actors::retrieval::{self, ClientKey, RetrievalTracker};
use proxy_actors::upstream::{CallTool, CancelToken, UpstreamActor};
use proxy_core::catalog::resolve::{resolve, Resolution};
use proxy_core::catalog::Snapshot;
use proxy_core::tools::{
    self, CallOutcome, CallRequest, DescribeRequest, Prepared, RefreshOutcome, SearchAnswer, SearchRequest,
    ToolOutcome, ToolRequest, UpstreamFailure, UsageError,
};
use proxy_metrics::{self as metrics, FallbackReason, Metrics, NO_UPSTREAM, OTHER};
use upstream_http::UpstreamError;

/// How long a search waits for its query vectors before it answers lexically.
pub const QUERY_EMBEDDING_TIMEOUT: Duration = Duration::from_secs(2);

/// The application service: the actors it talks to and what they publish.
pub struct App {
    pub catalog: Addr<CatalogActor>,
    /// The catalog's current snapshot (see [`App::snapshot`]).
    snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Upstream actors by label (the catalog routes tool → label).
    upstreams: HashMap<String, Addr<UpstreamActor>>,
    /// The process's metrics (shared with the actors).
    pub metrics: Arc<Metrics>,
    /// Remembers each client's last search for retrieval telemetry.
    retrieval: Addr<RetrievalTracker>,
    /// The semantic arm, published by the embedding actor: the query embedder and the tool
    /// vectors of a snapshot generation (or why it is off).
    pub semantic: watch::Receiver<SemanticState>,
}

/// What a call carries besides its request: where its notifications go, how it is cancelled,
/// its trace, and who is calling.
#[derive(Default)]
pub struct CallContext {
    /// The client's `params._meta` (what of it goes upstream: `mcp_wire::modern::passthrough_meta`).
    pub meta: Option<Value>,
    /// Receives the upstream's notifications (progress) that precede the result.
    pub events: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    /// Cancels the upstream call (its handle is the HTTP request's).
    pub cancel: Option<CancelToken>,
    /// The call's trace.
    pub trace: Option<CallTrace>,
    /// Who is calling, for retrieval telemetry (`None`: not recorded).
    pub client: Option<ClientKey>,
}

impl App {
    /// Must run inside an actix `System` (it starts the retrieval tracker).
    pub fn new(
        catalog: Addr<CatalogActor>,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        upstreams: HashMap<String, Addr<UpstreamActor>>,
        metrics: Arc<Metrics>,
        semantic: watch::Receiver<SemanticState>,
    ) -> App {
        App {
            catalog,
            snapshots,
            upstreams,
            retrieval: actix::Actor::start(RetrievalTracker::new(metrics.clone())),
            metrics,
            semantic,
        }
    }

    /// The catalog's current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    /// Whether `name` is a pinned upstream tool (called by its own name).
    pub fn is_pinned(&self, name: &str) -> bool {
        tools::is_pinned(&self.snapshot(), name)
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

    /// `mcp_call` (or a pinned tool): prepared against the snapshot, with one refresh and one
    /// more try for a name the catalog lacks; sent to the owning upstream actor.
    pub async fn call(&self, req: CallRequest, ctx: CallContext) -> CallOutcome {
        let CallRequest {
            name,
            arguments,
            pinned,
        } = req;
        let mut snap = self.snapshot();
        // A name the catalog lacks (even after repairs) asks for one refresh first.
        if matches!(resolve(&snap, &name), Resolution::Unknown) {
            let _ = self
                .catalog
                .send(Refresh {
                    reason: RefreshReason::UnknownTool,
                    seen_generation: Some(snap.generation),
                })
                .await;
            snap = self.snapshot();
        }
        let prepared = tools::prepare(&snap, &name, arguments);
        // A pinned tool is called by name, without searching: not retrieval telemetry.
        if let Some(client) = ctx.client.clone().filter(|_| !pinned) {
            let tool = match &prepared {
                Prepared::Ready { index, .. } | Prepared::Rejected { index, .. } => {
                    snap.tools[*index].tool.name.clone()
                }
                Prepared::Unknown => name.clone(),
            };
            self.retrieval.do_send(retrieval::Called { client, tool });
        }
        let outcome = match prepared {
            Prepared::Ready {
                index,
                arguments,
                repairs,
                input_schema,
            } => {
                let call = CallTool {
                    name: snap.tools[index].tool.name.clone(),
                    arguments,
                    input_schema,
                    meta: mcp_wire::modern::passthrough_meta(ctx.meta.as_ref()),
                    notifications: ctx.events,
                    cancel: ctx.cancel,
                    trace: ctx.trace.map(|t| t.upstream),
                };
                return self.relay(&snap.tools[index].upstream, call, &repairs).await;
            }
            Prepared::Unknown => CallOutcome::unknown_tool(&snap, &name),
            Prepared::Rejected { index, rejection } => CallOutcome::Rejected {
                upstream: snap.tools[index].upstream.clone(),
                tool: snap.tools[index].tool.name.clone(),
                rejection,
            },
        };
        self.count(&outcome, None);
        outcome
    }

    /// Sends a prepared call to the actor of `upstream` and waits for how it ended.
    async fn relay(&self, upstream: &str, mut call: CallTool, repairs: &[String]) -> CallOutcome {
        let tool = call.name.clone();
        let Some(addr) = self.upstreams.get(upstream) else {
            let outcome = CallOutcome::NoRoute {
                upstream: upstream.to_string(),
                tool,
            };
            self.count(&outcome, None);
            return outcome;
        };
        if let Some(trace) = &call.trace {
            trace.stamp(&mut call.meta);
        }
        let pending = PendingCall::start(&self.metrics, upstream, &tool);
        let answer = addr.send(call).await.unwrap_or(Err(UpstreamError::Unavailable));
        let outcome = match answer {
            Ok(result) => CallOutcome::relayed(upstream, &tool, result, repairs),
            Err(e) => CallOutcome::Failed(UpstreamFailure {
                upstream: upstream.to_string(),
                tool,
                error: e.to_string(),
                advice: e.advice().to_string(),
                retryable: e.retryable(),
                cancelled: matches!(e, UpstreamError::Cancelled(_)),
            }),
        };
        pending.finish(metric_of(&outcome));
        outcome
    }

    /// Counts a call that ended without being sent.
    fn count(&self, outcome: &CallOutcome, latency: Option<Duration>) {
        let (upstream, tool) = match outcome {
            CallOutcome::Relayed { upstream, tool, .. }
            | CallOutcome::Rejected { upstream, tool, .. }
            | CallOutcome::NoRoute { upstream, tool } => (upstream.as_str(), tool.as_str()),
            CallOutcome::Failed(f) => (f.upstream.as_str(), f.tool.as_str()),
            CallOutcome::UnknownTool { .. } => (NO_UPSTREAM, OTHER),
        };
        self.metrics.call(upstream, tool, metric_of(outcome), latency);
    }

    /// `mcp_refresh`: the catalog re-lists every upstream (or says why it did not).
    pub async fn refresh(&self) -> RefreshOutcome {
        let asked = self.catalog.send(Refresh {
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

/// The metric label of how a call ended.
fn metric_of(outcome: &CallOutcome) -> metrics::CallOutcome {
    match outcome {
        CallOutcome::Relayed { tool_error: true, .. } => metrics::CallOutcome::ToolError,
        CallOutcome::Relayed { .. } => metrics::CallOutcome::Ok,
        CallOutcome::Failed(f) if f.cancelled => metrics::CallOutcome::Cancelled,
        CallOutcome::Failed(_) | CallOutcome::NoRoute { .. } => metrics::CallOutcome::UpstreamError,
        CallOutcome::Rejected { .. } => metrics::CallOutcome::Rejected,
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
