//! Runs the four tools: the pure parts come from `proxy_core::tools`; relaying a call to the
//! upstream actor that owns the tool and refreshing the catalog are messages to actors.
//!
//! `mcp_search` asks the query embedder for its queries' vectors (bounded wait, see
//! [`QUERY_EMBEDDING_TIMEOUT`]) when the semantic arm has vectors for the snapshot searched,
//! and otherwise searches lexically.
//!
//! Measured here: each relayed call by upstream, tool and outcome, its latency and the calls in
//! flight; each search's queries, empty answers and latency; the query embedding's wait and the
//! searches that fell back to lexical; and, through the
//! [`retrieval`] tracker, how calls relate to the caller's last search. A
//! relayed call carries its trace upstream (`traceparent` header and `_meta`, see
//! `mcp_wire::trace`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use mcp_wire::trace::CallTrace;
use proxy_actors::catalog::{Refresh, RefreshReason};
use proxy_actors::embedding::{EmbedQueries, Phase, SemanticIndex};
use proxy_actors::upstream::{CallTool, CancelToken};
use proxy_core::catalog::Snapshot;
use proxy_core::tools::{self, Prepared, CALL, DESCRIBE, REFRESH, SEARCH};
use proxy_metrics::{CallOutcome, FallbackReason, NO_UPSTREAM, OTHER};
use upstream_http::UpstreamError;

use super::retrieval::{self, ClientKey};
use super::AppState;

/// What a relayed call carries besides its arguments.
#[derive(Default)]
pub struct Relay {
    /// Receives the upstream's notifications (progress) that precede the result.
    pub events: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
    /// Cancels the upstream call (its handle is the HTTP request's).
    pub cancel: Option<CancelToken>,
    /// The call's trace (see [`call_trace`]).
    pub trace: Option<CallTrace>,
    /// Who is calling, for retrieval telemetry (`None`: not recorded).
    pub client: Option<ClientKey>,
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

/// Dispatches a `tools/call` of one of the four tools, or of a pinned upstream tool. `None` =
/// no such tool here.
pub async fn call(state: &AppState, name: &str, args: Value, meta: Option<Value>, relay: Relay) -> Option<Value> {
    let args = match tools::tool_arguments(args) {
        Ok(a) => a,
        Err(e) => return Some(e),
    };
    Some(match name {
        SEARCH => {
            let started = Instant::now();
            let snap = state.snapshot();
            let semantic = query_vectors(state, &snap, &args).await;
            let vectors = semantic.as_ref().map(|(index, queries)| tools::SearchVectors {
                tools: &index.vectors,
                queries,
            });
            let result = tools::search_with(&snap, &args, vectors);
            record_search(state, &result, started, relay.client);
            result
        }
        DESCRIBE => tools::describe(&state.snapshot(), &args),
        CALL => call_upstream(state, &args, meta, relay).await,
        REFRESH => refresh(state).await,
        other => {
            if !tools::is_pinned(&state.snapshot(), other) {
                return None;
            }
            let mut call_args = Map::new();
            call_args.insert("name".into(), Value::from(other));
            call_args.insert("arguments".into(), Value::Object(args));
            // A pinned tool is called by name, without searching: not retrieval telemetry.
            let relay = Relay { client: None, ..relay };
            call_upstream(state, &call_args, meta, relay).await
        }
    })
}

/// `mcp_call`: prepare against the snapshot (one re-list and retry for an unknown name), send
/// to the owning upstream actor, shape its outcome.
async fn call_upstream(state: &AppState, args: &Map<String, Value>, meta: Option<Value>, relay: Relay) -> Value {
    let metrics = &state.metrics;
    let (name, arguments) = match tools::call_request(args) {
        Ok(r) => r,
        Err(e) => {
            metrics.call(NO_UPSTREAM, OTHER, CallOutcome::Rejected, None);
            return e;
        }
    };
    let mut snap = state.snapshot();
    let mut prepared = tools::prepare(&snap, &name, arguments.clone());
    if matches!(prepared, Prepared::Unknown) {
        let _ = state
            .catalog
            .send(Refresh {
                reason: RefreshReason::UnknownTool,
                seen_generation: Some(snap.generation),
            })
            .await;
        snap = state.snapshot();
        prepared = tools::prepare(&snap, &name, arguments);
    }
    // The labels: the catalog's own names (a name the catalog lacks is `other`).
    let known = match &prepared {
        Prepared::Ready { index, .. } => snap.tools.get(*index),
        _ => snap.get(&name),
    };
    let (upstream_label, tool_label) =
        known.map_or((NO_UPSTREAM, OTHER), |t| (t.upstream.as_str(), t.tool.name.as_str()));
    if let Some(client) = relay.client.clone() {
        state.retrieval.do_send(retrieval::Called {
            client,
            tool: known.map_or_else(|| name.clone(), |t| t.tool.name.clone()),
        });
    }
    let (index, arguments, repairs, input_schema) = match prepared {
        Prepared::Ready {
            index,
            arguments,
            repairs,
            input_schema,
        } => (index, arguments, repairs, input_schema),
        Prepared::Unknown => {
            metrics.call(NO_UPSTREAM, OTHER, CallOutcome::UnknownTool, None);
            return tools::unknown_tool(&snap, &name);
        }
        Prepared::Rejected(r) => {
            metrics.call(upstream_label, tool_label, CallOutcome::Rejected, None);
            return r;
        }
    };
    let tool = &snap.tools[index];
    let Some(addr) = state.upstreams.get(&tool.upstream) else {
        metrics.call(upstream_label, tool_label, CallOutcome::UpstreamError, None);
        return tools::no_route(&tool.upstream);
    };
    let mut call_meta = mcp_wire::modern::passthrough_meta(meta.as_ref());
    if let Some(trace) = &relay.trace {
        trace.upstream.stamp(&mut call_meta);
    }
    let pending = PendingCall::start(state, upstream_label, tool_label);
    let outcome = addr
        .send(CallTool {
            name: tool.tool.name.clone(),
            arguments,
            input_schema,
            meta: call_meta,
            notifications: relay.events,
            cancel: relay.cancel,
            trace: relay.trace.map(|t| t.upstream),
        })
        .await
        .unwrap_or(Err(UpstreamError::Unavailable));
    pending.finish(match &outcome {
        Ok(r) if r.get("isError") == Some(&Value::Bool(true)) => CallOutcome::ToolError,
        Ok(_) => CallOutcome::Ok,
        Err(UpstreamError::Cancelled(_)) => CallOutcome::Cancelled,
        Err(_) => CallOutcome::UpstreamError,
    });
    match outcome {
        Ok(r) => tools::relayed(r, &repairs),
        Err(e) => tools::upstream_failure(
            &tool.upstream,
            &tool.tool.name,
            &e.to_string(),
            e.advice(),
            e.retryable(),
        ),
    }
}

/// A call sent upstream, counted in flight until it ends. A request dropped before its call
/// ended (the client went away, or the shutdown cut it) counts the call as cancelled.
struct PendingCall {
    metrics: std::sync::Arc<proxy_metrics::Metrics>,
    upstream: String,
    tool: String,
    started: Instant,
    in_flight: Option<proxy_metrics::InFlight>,
}

impl PendingCall {
    fn start(state: &AppState, upstream: &str, tool: &str) -> PendingCall {
        PendingCall {
            in_flight: Some(state.metrics.call_in_flight(upstream)),
            metrics: state.metrics.clone(),
            upstream: upstream.to_string(),
            tool: tool.to_string(),
            started: Instant::now(),
        }
    }

    fn finish(mut self, outcome: CallOutcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: CallOutcome) {
        if self.in_flight.take().is_some() {
            let latency = Some(self.started.elapsed());
            self.metrics.call(&self.upstream, &self.tool, outcome, latency);
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        self.record(CallOutcome::Cancelled);
    }
}

/// How long a search waits for its query vectors before it answers lexically.
pub const QUERY_EMBEDDING_TIMEOUT: Duration = Duration::from_secs(2);

/// The semantic arm's input for an `mcp_search` on `snap`: the tool vectors built for it and
/// the queries' vectors from the query embedder. `None` (lexical) when the arm is off, its
/// vectors are not ready for this snapshot, or the query vectors fail or are late (counted,
/// logged at debug; never an error to the client).
async fn query_vectors(
    state: &AppState,
    snap: &Snapshot,
    args: &Map<String, Value>,
) -> Option<(Arc<SemanticIndex>, Vec<Arc<[f32]>>)> {
    let (index, embedder) = {
        let sem = state.semantic.borrow();
        if matches!(sem.phase, Phase::Off(_)) {
            return None;
        }
        match (sem.index_for(snap.generation), &sem.query) {
            (Some(index), Some(query)) => (index.clone(), query.clone()),
            _ => {
                if tools::search_queries(args).is_some() {
                    state.metrics.lexical_fallback(FallbackReason::NotReady);
                }
                return None;
            }
        }
    };
    let queries = tools::search_queries(args)?;
    let started = Instant::now();
    let asked = embedder.send(EmbedQueries {
        queries,
        deadline: started + QUERY_EMBEDDING_TIMEOUT,
    });
    let outcome = tokio::time::timeout(QUERY_EMBEDDING_TIMEOUT, asked).await;
    state.metrics.query_embedding(started.elapsed());
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
    state.metrics.lexical_fallback(reason);
    None
}

/// Counts a search's queries and empty answers, its latency, and tells the retrieval tracker
/// what the client was shown. A usage error is not a search.
fn record_search(state: &AppState, result: &Value, started: Instant, client: Option<ClientKey>) {
    let Some(hits) = retrieval::search_hits(result) else {
        return;
    };
    let empty = hits.iter().filter(|h| h.is_empty()).count() as u64;
    state.metrics.search(hits.len() as u64, empty, started.elapsed());
    if let Some(client) = client {
        state.retrieval.do_send(retrieval::Searched { client, hits });
    }
}

async fn refresh(state: &AppState) -> Value {
    match state
        .catalog
        .send(Refresh {
            reason: RefreshReason::Explicit,
            seen_generation: None,
        })
        .await
    {
        Ok(Ok(report)) => tools::result(serde_json::to_value(&report).unwrap_or(Value::Null), false),
        Ok(Err(failure)) => {
            let mut v = serde_json::to_value(&failure).unwrap_or(Value::Null);
            v["side"] = Value::from("upstream");
            tools::result(json!({"error": v}), true)
        }
        Err(_) => tools::result(
            json!({"error": {"side": "proxy", "message": "the catalog is shutting down"}}),
            true,
        ),
    }
}
