//! The families of [`crate::Metrics`], registered in groups, each group in the order of its
//! families in the OpenMetrics text (the `/metrics` contract, docs/operations.md).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::labels::{
    AskedLabels, CallLabels, CallLatencyLabels, ErrorLabels, OutcomeLabels, RankLabels, ReasonLabels, RefreshLabels,
    UpstreamLabels,
};

/// Latency buckets of calls through upstreams, in seconds: 1 ms to 2 min.
const CALL_BUCKETS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];
/// Search latency buckets, in seconds: 10 µs to 100 ms (a search is in-memory).
const SEARCH_BUCKETS: [f64; 13] = [
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
];
/// Refresh duration buckets, in seconds: 10 ms to 5 min.
const REFRESH_BUCKETS: [f64; 13] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Query embedding latency buckets, in seconds: 1 ms to 2.5 s (the search's timeout is 2 s).
const QUERY_EMBEDDING_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
/// Searches a caller made before a call.
const SEARCHES_PER_CALL_BUCKETS: [f64; 7] = [0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0];

pub(crate) type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

pub(crate) fn call_histogram() -> Histogram {
    Histogram::new(CALL_BUCKETS)
}

fn refresh_histogram() -> Histogram {
    Histogram::new(REFRESH_BUCKETS)
}

/// The calls relayed to upstreams: counted by outcome, timed, and in flight.
pub(crate) struct CallFamilies {
    pub(crate) calls: Family<CallLabels, Counter>,
    pub(crate) duration: HistogramFamily<CallLatencyLabels>,
    pub(crate) in_flight: Family<UpstreamLabels, Gauge>,
}

impl CallFamilies {
    pub(crate) fn register(r: &mut Registry) -> Self {
        CallFamilies {
            calls: registered(r, "tool_calls", "Upstream tool calls (mcp_call and pinned tools), by upstream, tool (catalog names only, else other) and outcome", Family::default()),
            duration: registered(
                r,
                "tool_call_duration_seconds",
                "Latency of tool calls sent upstream, by upstream and tool",
                Family::new_with_constructor(call_histogram),
            ),
            in_flight: registered(
                r,
                "tool_calls_in_flight",
                "Tool calls waiting for their upstream now",
                Family::default(),
            ),
        }
    }
}

/// What went wrong with upstreams, and what they asked of the proxy.
pub(crate) struct UpstreamFamilies {
    pub(crate) errors: Family<ErrorLabels, Counter>,
    pub(crate) requests: Family<AskedLabels, Counter>,
}

impl UpstreamFamilies {
    pub(crate) fn register(r: &mut Registry) -> Self {
        UpstreamFamilies {
            errors: registered(
                r,
                "upstream_errors",
                "Failed exchanges with upstreams (calls and listings) and session resets, by upstream and kind",
                Family::default(),
            ),
            requests: registered(
                r,
                "upstream_requests",
                "Requests an upstream sent to the proxy during a tool call (elicitation, sampling, roots), by upstream, method and outcome",
                Family::default(),
            ),
        }
    }
}

/// The catalog's fan-out refreshes.
pub(crate) struct RefreshFamilies {
    pub(crate) refreshes: Family<RefreshLabels, Counter>,
    pub(crate) duration: HistogramFamily<OutcomeLabels>,
}

impl RefreshFamilies {
    pub(crate) fn register(r: &mut Registry) -> Self {
        RefreshFamilies {
            refreshes: registered(
                r,
                "refreshes",
                "Catalog fan-out refreshes, by outcome (ok: every upstream listed; partial; failed: none did) and reason",
                Family::default(),
            ),
            duration: registered(
                r,
                "refresh_duration_seconds",
                "Duration of catalog fan-out refreshes, by outcome",
                Family::new_with_constructor(refresh_histogram),
            ),
        }
    }
}

/// The searches, and how the calls that followed them stood in their results.
pub(crate) struct SearchFamilies {
    pub(crate) searches: Counter,
    pub(crate) empty: Counter,
    pub(crate) duration: Histogram,
    pub(crate) retrieval_calls: Family<RankLabels, Counter>,
    pub(crate) searches_per_call: Histogram,
}

impl SearchFamilies {
    pub(crate) fn register(r: &mut Registry) -> Self {
        SearchFamilies {
            searches: registered(
                r,
                "searches",
                "mcp_search queries answered (a call with a list of queries counts each)",
                Counter::default(),
            ),
            empty: registered(
                r,
                "searches_empty",
                "mcp_search queries answered with no result",
                Counter::default(),
            ),
            duration: registered(
                r,
                "search_duration_seconds",
                "Latency of mcp_search calls (all their queries)",
                Histogram::new(SEARCH_BUCKETS),
            ),
            retrieval_calls: registered(r, "retrieval_calls", "mcp_calls by the called tool's rank in the caller's last mcp_search results (1, 2, 3, 4-5, 6-10, 11+, miss) or no_search", Family::default()),
            searches_per_call: registered(
                r,
                "retrieval_searches_per_call",
                "mcp_search calls a caller made since its previous mcp_call, observed at each mcp_call",
                Histogram::new(SEARCHES_PER_CALL_BUCKETS),
            ),
        }
    }
}

/// The semantic arm: its coverage, its query vectors' wait, and the searches it missed.
pub(crate) struct SemanticFamilies {
    pub(crate) tools_embedded: Gauge,
    pub(crate) tools: Gauge,
    pub(crate) query_embedding_duration: Histogram,
    pub(crate) lexical_fallback: Family<ReasonLabels, Counter>,
}

impl SemanticFamilies {
    pub(crate) fn register(r: &mut Registry) -> Self {
        SemanticFamilies {
            tools_embedded: registered(r, "semantic_tools_embedded", "Tools of the catalog the semantic arm searches that have a vector (0 while the first vectors are computed, or without EMBED_MODEL)", Gauge::default()),
            tools: registered(
                r,
                "semantic_tools",
                "Tools of the newest catalog the embedding actor has taken up",
                Gauge::default(),
            ),
            query_embedding_duration: registered(
                r,
                "query_embedding_duration_seconds",
                "Time an mcp_search waited for its query vectors (cache hits included; timeouts counted at the timeout)",
                Histogram::new(QUERY_EMBEDDING_BUCKETS),
            ),
            lexical_fallback: registered(r, "searches_lexical_fallback", "mcp_search calls answered lexically only although EMBED_MODEL is set, by reason (not_ready, timeout, error)", Family::default()),
        }
    }
}

/// Registers `metric` under `name` with its `help` text and returns it (the registry keeps a
/// clone; both share the same atomics).
pub(crate) fn registered<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}
