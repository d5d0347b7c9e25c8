//! proxy-metrics: the proxy's metrics: one [`Metrics`] per process, its families registered
//! once, shared as `Arc<Metrics>` by the HTTP layer (requests, calls, searches, retrieval), the
//! upstream actors (errors by kind, session resets) and the catalog actor (refresh outcomes);
//! served as OpenMetrics text on `GET /metrics` ([`Metrics::encode`]).
//!
//! # Why `prometheus-client`
//! It is the Prometheus project's own Rust client (maintained under the `prometheus` GitHub
//! organisation), writes the OpenMetrics text format that Prometheus scrapes natively, and its
//! counters and gauges are plain atomics: recording is a few atomic adds on the caller's
//! thread, no message and no actor. (A histogram takes its own short mutex per observation, and
//! a family takes a read lock to find a label set's series; neither is state of the proxy.) The
//! older `prometheus` crate keeps a global default registry and pulls in `protobuf`; the
//! `metrics` facade would add an exporter crate and its own registry layer for nothing here.
//!
//! # Bounded labels
//! Every label value comes from a closed set or from configuration: `method` from the MCP
//! methods the proxy serves (else `other`, [`method_label`]); `tool` only for names present in
//! the current catalog (the caller passes the catalog's own name, else [`OTHER`]); `upstream`
//! from the configured labels; `kind` from [`UpstreamErrorKind`] (the one mapping from an
//! `UpstreamError` to its kind is where errors are counted, in proxy-actors' upstream actor,
//! so this crate needs nothing of the HTTP client); `outcome`, `reason` and `rank` from fixed
//! lists. Catalog gauges (tools per source, stale upstreams and their age) are computed from
//! the snapshot at each scrape, so a source that disappears disappears from `/metrics` too;
//! sources beyond [`MAX_SOURCE_SERIES`] are summed into `other`.
//!
//! Of the proxy's other crates it uses only `proxy-core`, for the [`Snapshot`] the catalog
//! gauges are computed from.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use proxy_core::catalog::Snapshot;

/// The `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The label value for anything outside a label's bounded set.
pub const OTHER: &str = "other";

/// The label value for "no upstream" (a call that never reached one).
pub const NO_UPSTREAM: &str = "none";

/// At most this many `source` series in `mcp_proxy_catalog_tools` (the largest; the rest are
/// summed into `other`).
pub const MAX_SOURCE_SERIES: usize = 100;

/// Kinds of upstream failure, the `kind` label of `mcp_proxy_upstream_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamErrorKind {
    /// No complete answer within the upstream timeout.
    Timeout,
    /// The TCP connection could not be made or broke.
    Connect,
    /// The TLS handshake or certificate check failed.
    Tls,
    /// An HTTP error status.
    HttpStatus,
    /// A redirect (never followed).
    Redirect,
    /// A JSON-RPC error object for the request.
    RpcError,
    /// Not a valid MCP reply.
    InvalidReply,
    /// A reply over the size cap.
    TooLarge,
    /// The upstream's session was lost (404/expired, or it changed era) and re-initialized.
    SessionReset,
    /// The proxy's own actor for the upstream is gone (shutting down).
    Unavailable,
}

impl UpstreamErrorKind {
    pub const ALL: [UpstreamErrorKind; 10] = [
        UpstreamErrorKind::Timeout,
        UpstreamErrorKind::Connect,
        UpstreamErrorKind::Tls,
        UpstreamErrorKind::HttpStatus,
        UpstreamErrorKind::Redirect,
        UpstreamErrorKind::RpcError,
        UpstreamErrorKind::InvalidReply,
        UpstreamErrorKind::TooLarge,
        UpstreamErrorKind::SessionReset,
        UpstreamErrorKind::Unavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamErrorKind::Timeout => "timeout",
            UpstreamErrorKind::Connect => "connect",
            UpstreamErrorKind::Tls => "tls",
            UpstreamErrorKind::HttpStatus => "http_status",
            UpstreamErrorKind::Redirect => "redirect",
            UpstreamErrorKind::RpcError => "rpc_error",
            UpstreamErrorKind::InvalidReply => "invalid_reply",
            UpstreamErrorKind::TooLarge => "too_large",
            UpstreamErrorKind::SessionReset => "session_reset",
            UpstreamErrorKind::Unavailable => "unavailable",
        }
    }
}

/// The MCP methods the proxy serves; any other method is counted as [`OTHER`].
const METHODS: [&str; 5] = ["initialize", "ping", "tools/list", "tools/call", "server/discover"];

/// The `method` label of a request.
pub fn method_label(method: &str) -> &'static str {
    METHODS.iter().copied().find(|m| *m == method).unwrap_or(OTHER)
}

/// The `outcome` label of a request answered with JSON-RPC error `code`.
pub fn error_code_label(code: i64) -> &'static str {
    match code {
        -32700 => "parse_error",
        -32600 => "invalid_request",
        -32601 => "method_not_found",
        -32602 => "invalid_params",
        -32603 => "internal_error",
        -32800 => "cancelled",
        -32099..=-32000 => "server_error",
        _ => "other_error",
    }
}

/// How a relayed call ended (the `outcome` label of `mcp_proxy_tool_calls_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The upstream answered with a result.
    Ok,
    /// The upstream answered with `isError: true`.
    ToolError,
    /// The exchange with the upstream failed (see `mcp_proxy_upstream_errors_total`).
    UpstreamError,
    /// Cancelled (client gone, or shutdown).
    Cancelled,
    /// No tool by that name (after one re-list); never sent.
    UnknownTool,
    /// Refused by the proxy (arguments invalid, ambiguous or typo'd name, policy, a refused
    /// `requestState`); never sent.
    Rejected,
    /// 2026-07-28: the tool asked the client something; the call goes on in the client's retry.
    InputRequired,
    /// The client gave no usable answer to the tool's question, which ended the call.
    Unanswered,
}

impl CallOutcome {
    const COUNT: usize = 8;

    fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::ToolError => "tool_error",
            CallOutcome::UpstreamError => "upstream_error",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::UnknownTool => "unknown_tool",
            CallOutcome::Rejected => "rejected",
            CallOutcome::InputRequired => "input_required",
            CallOutcome::Unanswered => "unanswered",
        }
    }
}

/// A refresh's outcome: every upstream listed, some did, none did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshOutcome {
    Ok,
    Partial,
    Failed,
}

impl RefreshOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshOutcome::Ok => "ok",
            RefreshOutcome::Partial => "partial",
            RefreshOutcome::Failed => "failed",
        }
    }
}

/// Where the called tool stood in the caller's last search results (the `rank` label of
/// `mcp_proxy_retrieval_calls_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankBucket {
    /// At this 1-based rank, bucketed: 1, 2, 3, 4-5, 6-10, 11+.
    Rank(usize),
    /// Not among the last search's results.
    Miss,
    /// The caller had not searched (as far as the proxy remembers).
    NoSearch,
}

impl RankBucket {
    pub fn as_str(self) -> &'static str {
        match self {
            RankBucket::Rank(0 | 1) => "1",
            RankBucket::Rank(2) => "2",
            RankBucket::Rank(3) => "3",
            RankBucket::Rank(4 | 5) => "4-5",
            RankBucket::Rank(6..=10) => "6-10",
            RankBucket::Rank(_) => "11+",
            RankBucket::Miss => "miss",
            RankBucket::NoSearch => "no_search",
        }
    }
}

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    upstream: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLatencyLabels {
    upstream: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    upstream: String,
    kind: &'static str,
}

/// What became of a request an upstream sent during a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedOutcome {
    /// Answered: by the client with a result, or by the proxy itself (`ping`).
    Answered,
    /// The client answered with an error.
    Refused,
    /// Answered with an error at once by the proxy (the client cannot be asked: no such
    /// capability, no stream, too many questions), or an `input_required` round not passed on.
    Declined,
    /// The client did not answer within `ELICITATION_TIMEOUT_SEC`.
    TimedOut,
    /// The question was dropped unanswered: its client went away or the call ended first.
    Abandoned,
    /// A 2026-07-28 round passed to a 2026-07-28 client as it came (its answers come back on
    /// the client's retry, not through the proxy's waiting).
    Passed,
}

impl AskedOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AskedOutcome::Answered => "answered",
            AskedOutcome::Refused => "refused",
            AskedOutcome::Declined => "declined",
            AskedOutcome::TimedOut => "timed_out",
            AskedOutcome::Abandoned => "abandoned",
            AskedOutcome::Passed => "passed",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AskedLabels {
    upstream: String,
    method: &'static str,
    outcome: &'static str,
}

/// The `method` label of `mcp_proxy_upstream_requests_total`: the requests MCP defines from a
/// server to its client, anything else `other` (an upstream's method names are not trusted to
/// stay few).
pub fn server_request_method(method: &str) -> &'static str {
    match method {
        "elicitation/create" => "elicitation/create",
        "sampling/createMessage" => "sampling/createMessage",
        "roots/list" => "roots/list",
        "ping" => "ping",
        _ => "other",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefreshLabels {
    outcome: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RankLabels {
    rank: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn call_histogram() -> Histogram {
    Histogram::new(CALL_BUCKETS)
}

fn refresh_histogram() -> Histogram {
    Histogram::new(REFRESH_BUCKETS)
}

/// Every metric of the process. Cheap to record from any thread; see the module docs.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    tool_calls: Family<CallLabels, Counter>,
    tool_call_duration: HistogramFamily<CallLatencyLabels>,
    tool_calls_in_flight: Family<UpstreamLabels, Gauge>,
    upstream_errors: Family<ErrorLabels, Counter>,
    upstream_requests: Family<AskedLabels, Counter>,
    refreshes: Family<RefreshLabels, Counter>,
    refresh_duration: HistogramFamily<OutcomeLabels>,
    searches: Counter,
    searches_empty: Counter,
    search_duration: Histogram,
    retrieval_calls: Family<RankLabels, Counter>,
    searches_per_call: Histogram,
    semantic_tools_embedded: Gauge,
    semantic_tools: Gauge,
    query_embedding_duration: Histogram,
    searches_lexical_fallback: Family<ReasonLabels, Counter>,
    /// The call series of each (upstream, tool) called so far, resolved once (see [`CallSeries`]).
    call_series: RwLock<HashMap<String, HashMap<String, Arc<CallSeries>>>>,
}

/// The series one (upstream, tool) records its calls in, resolved once: a call looks them up
/// by two borrowed names under a read lock, with no label built, hashed into a family or
/// allocated. A series appears in `/metrics` when first recorded, as through the families.
#[derive(Debug)]
pub struct CallSeries {
    upstream: String,
    tool: String,
    in_flight: Gauge,
    outcomes: [OnceLock<Counter>; CallOutcome::COUNT],
    latency: OnceLock<Histogram>,
}

/// Why a search with the semantic arm configured was answered lexically only, the `reason`
/// label of `mcp_proxy_searches_lexical_fallback_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackReason {
    /// The model is loading, or the vectors of the searched catalog are not ready yet.
    NotReady,
    /// The query vector did not come within the timeout.
    Timeout,
    /// Embedding the query failed.
    Error,
}

impl FallbackReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackReason::NotReady => "not_ready",
            FallbackReason::Timeout => "timeout",
            FallbackReason::Error => "error",
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every family (once; the names are the `/metrics` contract, see docs/operations.md).
    pub fn new() -> Metrics {
        // Registered in this order: the order of the families in the OpenMetrics text.
        let mut registry = Registry::with_prefix("mcp_proxy");
        let requests = registered(
            &mut registry,
            "requests",
            "MCP requests answered, by JSON-RPC method and outcome (ok, tool_error, or the JSON-RPC error class)",
            Family::default(),
        );
        let tool_calls = registered(&mut registry, "tool_calls", "Upstream tool calls (mcp_call and pinned tools), by upstream, tool (catalog names only, else other) and outcome", Family::default());
        let tool_call_duration: HistogramFamily<CallLatencyLabels> = registered(
            &mut registry,
            "tool_call_duration_seconds",
            "Latency of tool calls sent upstream, by upstream and tool",
            Family::new_with_constructor(call_histogram),
        );
        let tool_calls_in_flight = registered(
            &mut registry,
            "tool_calls_in_flight",
            "Tool calls waiting for their upstream now",
            Family::default(),
        );
        let upstream_errors = registered(
            &mut registry,
            "upstream_errors",
            "Failed exchanges with upstreams (calls and listings) and session resets, by upstream and kind",
            Family::default(),
        );
        let upstream_requests = registered(
            &mut registry,
            "upstream_requests",
            "Requests an upstream sent to the proxy during a tool call (elicitation, sampling, roots), by upstream, method and outcome",
            Family::default(),
        );
        let refreshes = registered(
            &mut registry,
            "refreshes",
            "Catalog fan-out refreshes, by outcome (ok: every upstream listed; partial; failed: none did) and reason",
            Family::default(),
        );
        let refresh_duration: HistogramFamily<OutcomeLabels> = registered(
            &mut registry,
            "refresh_duration_seconds",
            "Duration of catalog fan-out refreshes, by outcome",
            Family::new_with_constructor(refresh_histogram),
        );
        let searches = registered(
            &mut registry,
            "searches",
            "mcp_search queries answered (a call with a list of queries counts each)",
            Counter::default(),
        );
        let searches_empty = registered(
            &mut registry,
            "searches_empty",
            "mcp_search queries answered with no result",
            Counter::default(),
        );
        let search_duration = registered(
            &mut registry,
            "search_duration_seconds",
            "Latency of mcp_search calls (all their queries)",
            Histogram::new(SEARCH_BUCKETS),
        );
        let retrieval_calls = registered(&mut registry, "retrieval_calls", "mcp_calls by the called tool's rank in the caller's last mcp_search results (1, 2, 3, 4-5, 6-10, 11+, miss) or no_search", Family::default());
        let searches_per_call = registered(
            &mut registry,
            "retrieval_searches_per_call",
            "mcp_search calls a caller made since its previous mcp_call, observed at each mcp_call",
            Histogram::new(SEARCHES_PER_CALL_BUCKETS),
        );
        let semantic_tools_embedded = registered(&mut registry, "semantic_tools_embedded", "Tools of the catalog the semantic arm searches that have a vector (0 while the first vectors are computed, or without EMBED_MODEL)", Gauge::default());
        let semantic_tools = registered(
            &mut registry,
            "semantic_tools",
            "Tools of the newest catalog the embedding actor has taken up",
            Gauge::default(),
        );
        let query_embedding_duration = registered(
            &mut registry,
            "query_embedding_duration_seconds",
            "Time an mcp_search waited for its query vectors (cache hits included; timeouts counted at the timeout)",
            Histogram::new(QUERY_EMBEDDING_BUCKETS),
        );
        let searches_lexical_fallback = registered(&mut registry, "searches_lexical_fallback", "mcp_search calls answered lexically only although EMBED_MODEL is set, by reason (not_ready, timeout, error)", Family::default());
        Metrics {
            registry,
            semantic_tools_embedded,
            semantic_tools,
            query_embedding_duration,
            searches_lexical_fallback,
            requests,
            tool_calls,
            tool_call_duration,
            tool_calls_in_flight,
            upstream_errors,
            upstream_requests,
            refreshes,
            refresh_duration,
            searches,
            searches_empty,
            search_duration,
            retrieval_calls,
            searches_per_call,
            call_series: RwLock::default(),
        }
    }

    /// The series of calls of `tool` (a catalog name, or [`OTHER`]) on `upstream`.
    pub fn call_series(&self, upstream: &str, tool: &str) -> Arc<CallSeries> {
        let found = self
            .call_series
            .read()
            .ok()
            .and_then(|m| m.get(upstream).and_then(|t| t.get(tool)).cloned());
        if let Some(series) = found {
            return series;
        }
        let series = Arc::new(CallSeries {
            upstream: upstream.to_string(),
            tool: tool.to_string(),
            in_flight: self.tool_calls_in_flight.get_or_create_owned(&UpstreamLabels {
                upstream: upstream.to_string(),
            }),
            outcomes: Default::default(),
            latency: OnceLock::new(),
        });
        let Ok(mut map) = self.call_series.write() else {
            return series;
        };
        map.entry(upstream.to_string())
            .or_default()
            .entry(tool.to_string())
            .or_insert(series)
            .clone()
    }

    /// A call of `series` is about to be sent: counted in flight until the guard drops.
    pub fn series_in_flight(&self, series: &CallSeries) -> InFlight {
        series.in_flight.inc();
        InFlight(series.in_flight.clone())
    }

    /// A call of `series` ended (what [`Metrics::call`] records, without the lookups).
    pub fn series_call(&self, series: &CallSeries, outcome: CallOutcome, latency: Option<Duration>) {
        series.outcomes[outcome.index()]
            .get_or_init(|| {
                self.tool_calls.get_or_create_owned(&CallLabels {
                    upstream: series.upstream.clone(),
                    tool: series.tool.clone(),
                    outcome: outcome.as_str(),
                })
            })
            .inc();
        if let Some(l) = latency {
            series
                .latency
                .get_or_init(|| {
                    self.tool_call_duration.get_or_create_owned(&CallLatencyLabels {
                        upstream: series.upstream.clone(),
                        tool: series.tool.clone(),
                    })
                })
                .observe(l.as_secs_f64());
        }
    }

    /// One MCP request answered: `method` as received (bounded here), `outcome` from
    /// [`error_code_label`] or `ok` / `tool_error`.
    pub fn request(&self, method: &str, outcome: &'static str) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method_label(method),
                outcome,
            })
            .inc();
    }

    /// A tool call is about to be sent to `upstream`: counted in flight until the guard drops
    /// (also when the request is dropped mid-call).
    pub fn call_in_flight(&self, upstream: &str) -> InFlight {
        let gauge = self.tool_calls_in_flight.get_or_create_owned(&UpstreamLabels {
            upstream: upstream.to_string(),
        });
        gauge.inc();
        InFlight(gauge)
    }

    /// A tool call ended. `tool` must be a catalog name (or [`OTHER`]); `latency` is given for
    /// calls that were sent upstream.
    pub fn call(&self, upstream: &str, tool: &str, outcome: CallOutcome, latency: Option<Duration>) {
        self.tool_calls
            .get_or_create(&CallLabels {
                upstream: upstream.to_string(),
                tool: tool.to_string(),
                outcome: outcome.as_str(),
            })
            .inc();
        if let Some(l) = latency {
            self.tool_call_duration
                .get_or_create(&CallLatencyLabels {
                    upstream: upstream.to_string(),
                    tool: tool.to_string(),
                })
                .observe(l.as_secs_f64());
        }
    }

    /// An exchange with `upstream` failed, or its session was reset (cancellations are not
    /// upstream errors: the caller does not count them).
    pub fn upstream_error_kind(&self, upstream: &str, kind: UpstreamErrorKind) {
        self.upstream_errors
            .get_or_create(&ErrorLabels {
                upstream: upstream.to_string(),
                kind: kind.as_str(),
            })
            .inc();
    }

    /// `upstream` sent a request during a tool call, and the proxy answered it (`ping`) or
    /// declined it (anything it does not relay to its clients).
    pub fn upstream_request(&self, upstream: &str, method: &str, outcome: AskedOutcome) {
        self.upstream_requests
            .get_or_create(&AskedLabels {
                upstream: upstream.to_string(),
                method: server_request_method(method),
                outcome: outcome.as_str(),
            })
            .inc();
    }

    /// A fan-out refresh ended.
    pub fn refresh(&self, outcome: RefreshOutcome, reason: &'static str, duration: Duration) {
        self.refreshes
            .get_or_create(&RefreshLabels {
                outcome: outcome.as_str(),
                reason,
            })
            .inc();
        self.refresh_duration
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            })
            .observe(duration.as_secs_f64());
    }

    /// An `mcp_search` answered `queries` queries, `empty` of them with no result.
    pub fn search(&self, queries: u64, empty: u64, latency: Duration) {
        self.searches.inc_by(queries);
        self.searches_empty.inc_by(empty);
        self.search_duration.observe(latency.as_secs_f64());
    }

    /// The semantic arm published vectors for a catalog of `tools` tools, `embedded` of which
    /// have one.
    pub fn semantic_coverage(&self, embedded: usize, tools: usize) {
        self.semantic_tools_embedded.set(embedded as i64);
        self.semantic_tools.set(tools as i64);
    }

    /// The embedding actor took up a catalog of `tools` tools.
    pub fn semantic_tools(&self, tools: usize) {
        self.semantic_tools.set(tools as i64);
    }

    /// An `mcp_search` waited `latency` for its query vectors.
    pub fn query_embedding(&self, latency: Duration) {
        self.query_embedding_duration.observe(latency.as_secs_f64());
    }

    /// An `mcp_search` was answered lexically only although the semantic arm is configured.
    pub fn lexical_fallback(&self, reason: FallbackReason) {
        self.searches_lexical_fallback
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .inc();
    }

    /// An `mcp_call`, seen against the caller's last search.
    pub fn retrieval(&self, rank: RankBucket, searches_before: u32) {
        self.retrieval_calls
            .get_or_create(&RankLabels { rank: rank.as_str() })
            .inc();
        self.searches_per_call.observe(f64::from(searches_before));
    }

    /// The OpenMetrics text of every metric, with the catalog gauges computed from `snap` (its
    /// listings' ages against `now_ms`, Unix ms).
    pub fn encode(&self, snap: &Snapshot, now_ms: u64) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; a family that could not be encoded is left out.
        let _ = text::encode_registry(&mut out, &self.registry);
        let _ = text::encode_registry(&mut out, &catalog_registry(snap, now_ms));
        let _ = text::encode_eof(&mut out);
        out
    }
}

/// Decrements the in-flight gauge when dropped.
#[derive(Debug)]
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The catalog gauges of one scrape, from the snapshot (a registry of their own, built per
/// scrape: nothing to clear when a source or an upstream goes away).
fn catalog_registry(snap: &Snapshot, now_ms: u64) -> Registry {
    let mut r = Registry::with_prefix("mcp_proxy");
    let catalog_tools: Family<SourceLabels, Gauge> = Family::default();
    for (source, tools) in bounded_sources(snap.sources.iter().map(|s| (s.source.as_str(), s.tools))) {
        catalog_tools.get_or_create(&SourceLabels { source }).set(tools as i64);
    }
    r.register("catalog_tools", "Tools in the served catalog, by source", catalog_tools);
    let upstream_tools: Family<UpstreamLabels, Gauge> = Family::default();
    let up: Family<UpstreamLabels, Gauge> = Family::default();
    let stale: Family<UpstreamLabels, Gauge> = Family::default();
    let age: Family<UpstreamLabels, Gauge<f64, AtomicU64>> = Family::default();
    let mut stale_count = 0i64;
    for u in &snap.upstreams {
        let labels = UpstreamLabels {
            upstream: u.label.clone(),
        };
        upstream_tools.get_or_create(&labels).set(u.tools.len() as i64);
        let ok = u.last_error.is_none() && u.listed_at_ms.is_some();
        up.get_or_create(&labels).set(i64::from(ok));
        let is_stale = u.last_error.is_some() && !u.tools.is_empty();
        stale_count += i64::from(is_stale);
        stale.get_or_create(&labels).set(i64::from(is_stale));
        if let Some(at) = u.listed_at_ms {
            age.get_or_create(&labels)
                .set(now_ms.saturating_sub(at) as f64 / 1000.0);
        }
    }
    r.register(
        "upstream_tools",
        "Tools each upstream contributes (its last good listing)",
        upstream_tools,
    );
    r.register(
        "upstream_up",
        "1 when the upstream's last listing succeeded, else 0 (never answered, or its last refresh failed)",
        up,
    );
    r.register(
        "upstream_stale",
        "1 when the upstream's tools are served from an earlier listing because its last refresh failed",
        stale,
    );
    r.register(
        "upstream_listing_age_seconds",
        "Age of the upstream's last good listing (absent until it answered once)",
        age,
    );
    let stale_total: Gauge = Gauge::default();
    stale_total.set(stale_count);
    r.register("stale_upstreams", "Upstreams whose tools are served stale", stale_total);
    r
}

/// The `source` series: the [`MAX_SOURCE_SERIES`] largest sources by name, the rest summed
/// into `other` (a source named `other` joins it).
fn bounded_sources<'a>(sources: impl Iterator<Item = (&'a str, usize)>) -> Vec<(String, usize)> {
    let mut all: Vec<(&str, usize)> = sources.collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out: Vec<(String, usize)> = Vec::new();
    let mut rest = 0usize;
    for (i, (name, n)) in all.into_iter().enumerate() {
        if i < MAX_SOURCE_SERIES && name != OTHER {
            out.push((name.to_string(), n));
        } else {
            rest += n;
        }
    }
    if rest > 0 {
        out.push((OTHER.to_string(), rest));
    }
    out
}

/// The value of the series `name{labels}` in an OpenMetrics text, `labels` written as in the
/// text (`a="1",b="2"`, or empty for none); for tests and checks of a scrape.
pub fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let mut key = String::from(name);
    if !labels.is_empty() {
        let _ = write!(key, "{{{labels}}}");
    }
    text.lines()
        .find_map(|l| l.strip_prefix(key.as_str())?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Registers `metric` under `name` with its `help` text and returns it (the registry keeps a
/// clone; both share the same atomics).
fn registered<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_kind_has_its_own_label() {
        let names: std::collections::HashSet<&str> = UpstreamErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), UpstreamErrorKind::ALL.len());
        assert!(names.contains("tls") && names.contains("session_reset"));
    }

    #[test]
    fn labels_stay_in_their_sets() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("resources/list"), OTHER);
        assert_eq!(method_label(&"x".repeat(1000)), OTHER);
        assert_eq!(error_code_label(-32601), "method_not_found");
        assert_eq!(error_code_label(-32020), "server_error");
        assert_eq!(error_code_label(1), "other_error");
        assert_eq!(error_code_label(-32001), "server_error");
        let ranks: Vec<&str> = [1, 2, 3, 4, 5, 6, 10, 11, 50]
            .into_iter()
            .map(|r| RankBucket::Rank(r).as_str())
            .collect();
        assert_eq!(ranks, ["1", "2", "3", "4-5", "4-5", "6-10", "6-10", "11+", "11+"]);
        assert_eq!(RankBucket::Miss.as_str(), "miss");
        assert_eq!(RankBucket::NoSearch.as_str(), "no_search");
    }

    #[test]
    fn sources_beyond_the_cap_are_summed_into_other() {
        let names: Vec<String> = (0..MAX_SOURCE_SERIES + 5).map(|i| format!("s{i:03}")).collect();
        let out = bounded_sources(names.iter().enumerate().map(|(i, n)| (n.as_str(), 1000 - i)));
        assert_eq!(out.len(), MAX_SOURCE_SERIES + 1);
        assert_eq!(out[0], ("s000".to_string(), 1000));
        let rest: usize = (MAX_SOURCE_SERIES..MAX_SOURCE_SERIES + 5).map(|i| 1000 - i).sum();
        assert_eq!(out.last(), Some(&(OTHER.to_string(), rest)));
        assert_eq!(
            bounded_sources([("other", 2), ("a", 1)].into_iter()),
            vec![("a".to_string(), 1), (OTHER.to_string(), 2)]
        );
    }

    #[test]
    fn a_call_series_records_what_the_families_record() {
        let (by_series, by_family) = (Metrics::new(), Metrics::new());
        let series = by_series.call_series("up", "t");
        assert!(Arc::ptr_eq(&series, &by_series.call_series("up", "t")), "resolved once");
        {
            let _g = by_series.series_in_flight(&series);
            let _h = by_family.call_in_flight("up");
            let (a, b) = (
                by_series.encode(&Snapshot::default(), 0),
                by_family.encode(&Snapshot::default(), 0),
            );
            assert_eq!(a, b, "one series each");
            assert_eq!(
                sample(&a, "mcp_proxy_tool_calls_in_flight", r#"upstream="up""#),
                Some(1.0)
            );
        }
        for (outcome, latency) in [
            (CallOutcome::Ok, Some(Duration::from_millis(3))),
            (CallOutcome::Ok, Some(Duration::from_millis(40))),
            (CallOutcome::Cancelled, None),
        ] {
            by_series.series_call(&series, outcome, latency);
            by_family.call("up", "t", outcome, latency);
        }
        let other = by_series.call_series("up", "u");
        by_series.series_call(&other, CallOutcome::ToolError, None);
        by_family.call("up", "u", CallOutcome::ToolError, None);
        let text = by_series.encode(&Snapshot::default(), 0);
        // The same lines (a family's series come in hash order, which differs between two).
        let lines = |t: &str| {
            let mut l: Vec<String> = t.lines().map(str::to_string).collect();
            l.sort();
            l
        };
        assert_eq!(lines(&text), lines(&by_family.encode(&Snapshot::default(), 0)));
        assert_eq!(
            sample(
                &text,
                "mcp_proxy_tool_calls_total",
                r#"upstream="up",tool="t",outcome="ok""#
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, "mcp_proxy_tool_calls_in_flight", r#"upstream="up""#),
            Some(0.0)
        );
    }

    #[test]
    fn recorded_values_appear_in_the_text() {
        let m = Metrics::new();
        m.request("tools/call", "ok");
        m.request("bogus/method", "method_not_found");
        {
            let _g = m.call_in_flight("up");
            let text = m.encode(&Snapshot::default(), 0);
            assert_eq!(
                sample(&text, "mcp_proxy_tool_calls_in_flight", r#"upstream="up""#),
                Some(1.0)
            );
        }
        m.call("up", "t", CallOutcome::Ok, Some(Duration::from_millis(3)));
        m.upstream_error_kind("up", UpstreamErrorKind::Connect);
        m.upstream_error_kind("up", UpstreamErrorKind::SessionReset);
        m.upstream_request("up", "elicitation/create", AskedOutcome::Declined);
        m.upstream_request("up", "x/made-up-by-the-upstream", AskedOutcome::Declined);
        m.upstream_request("up", "ping", AskedOutcome::Answered);
        m.refresh(RefreshOutcome::Partial, "startup", Duration::from_millis(20));
        m.search(3, 1, Duration::from_micros(40));
        m.retrieval(RankBucket::Rank(4), 2);
        let text = m.encode(&Snapshot::default(), 0);
        let s = |n: &str, l: &str| sample(&text, n, l);
        assert_eq!(
            s("mcp_proxy_requests_total", r#"method="tools/call",outcome="ok""#),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_requests_total",
                r#"method="other",outcome="method_not_found""#
            ),
            Some(1.0)
        );
        assert_eq!(s("mcp_proxy_tool_calls_in_flight", r#"upstream="up""#), Some(0.0));
        assert_eq!(
            s("mcp_proxy_tool_calls_total", r#"upstream="up",tool="t",outcome="ok""#),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_tool_call_duration_seconds_count",
                r#"upstream="up",tool="t""#
            ),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_tool_call_duration_seconds_bucket",
                r#"le="0.005",upstream="up",tool="t""#
            )
            .or_else(|| s(
                "mcp_proxy_tool_call_duration_seconds_bucket",
                r#"upstream="up",tool="t",le="0.005""#
            )),
            Some(1.0)
        );
        assert_eq!(
            s("mcp_proxy_upstream_errors_total", r#"upstream="up",kind="connect""#),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_upstream_requests_total",
                r#"upstream="up",method="elicitation/create",outcome="declined""#
            ),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_upstream_requests_total",
                r#"upstream="up",method="other",outcome="declined""#
            ),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_upstream_requests_total",
                r#"upstream="up",method="ping",outcome="answered""#
            ),
            Some(1.0)
        );
        assert_eq!(
            s(
                "mcp_proxy_upstream_errors_total",
                r#"upstream="up",kind="session_reset""#
            ),
            Some(1.0)
        );
        assert_eq!(
            s("mcp_proxy_refreshes_total", r#"outcome="partial",reason="startup""#),
            Some(1.0)
        );
        assert_eq!(s("mcp_proxy_searches_total", ""), Some(3.0));
        assert_eq!(s("mcp_proxy_searches_empty_total", ""), Some(1.0));
        assert_eq!(s("mcp_proxy_search_duration_seconds_count", ""), Some(1.0));
        assert_eq!(s("mcp_proxy_retrieval_calls_total", r#"rank="4-5""#), Some(1.0));
        assert_eq!(s("mcp_proxy_retrieval_searches_per_call_sum", ""), Some(2.0));
        assert_eq!(s("mcp_proxy_stale_upstreams", ""), Some(0.0));
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn catalog_gauges_follow_the_snapshot() {
        use mcp_wire::types::Tool;
        use proxy_core::catalog::UpstreamState;
        let tool = |n: &str| -> std::sync::Arc<Tool> {
            std::sync::Arc::new(serde_json::from_value(serde_json::json!({"name": n})).unwrap())
        };
        let states = vec![
            UpstreamState {
                label: "good".into(),
                tools: vec![tool("a"), tool("b")],
                listed_at_ms: Some(10_000),
                ..Default::default()
            },
            UpstreamState {
                label: "flaky".into(),
                tools: vec![tool("c")],
                listed_at_ms: Some(4_000),
                last_error: Some("connection failed".into()),
                ..Default::default()
            },
            UpstreamState {
                label: "never".into(),
                ..Default::default()
            },
        ];
        let snap = Snapshot::build(states, 1, &Default::default());
        let text = Metrics::new().encode(&snap, 70_000);
        let s = |n: &str, l: &str| sample(&text, n, l);
        assert_eq!(s("mcp_proxy_catalog_tools", r#"source="good""#), Some(2.0));
        assert_eq!(s("mcp_proxy_catalog_tools", r#"source="flaky""#), Some(1.0));
        assert_eq!(s("mcp_proxy_upstream_up", r#"upstream="good""#), Some(1.0));
        assert_eq!(s("mcp_proxy_upstream_up", r#"upstream="flaky""#), Some(0.0));
        assert_eq!(s("mcp_proxy_upstream_up", r#"upstream="never""#), Some(0.0));
        assert_eq!(s("mcp_proxy_upstream_stale", r#"upstream="flaky""#), Some(1.0));
        assert_eq!(s("mcp_proxy_upstream_stale", r#"upstream="never""#), Some(0.0));
        assert_eq!(
            s("mcp_proxy_upstream_listing_age_seconds", r#"upstream="good""#),
            Some(60.0)
        );
        assert_eq!(
            s("mcp_proxy_upstream_listing_age_seconds", r#"upstream="flaky""#),
            Some(66.0)
        );
        assert_eq!(s("mcp_proxy_upstream_listing_age_seconds", r#"upstream="never""#), None);
        assert_eq!(s("mcp_proxy_stale_upstreams", ""), Some(1.0));
    }
}
