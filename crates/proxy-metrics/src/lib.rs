//! proxy-metrics: the proxy's metrics: one [`Metrics`] per process, its families registered
//! once, shared as `Arc<Metrics>` by the HTTP layer (requests, calls, searches, retrieval), the
//! upstream actors (errors by kind, session resets) and the catalog actor (refresh outcomes);
//! served as OpenMetrics text on `GET /metrics` ([`Metrics::encode`]).
//!
//! # Layout
//!
//! - lib.rs: [`Metrics`] (the families, the recording methods, [`Metrics::encode`]),
//!   [`CallSeries`] (one upstream tool's series, resolved once), [`InFlight`], [`sample`].
//! - `labels.rs`: the label values, each a closed set ([`UpstreamErrorKind`], [`CallOutcome`],
//!   [`RefreshOutcome`], [`RankBucket`], [`AskedOutcome`], [`FallbackReason`], [`method_label`],
//!   [`error_code_label`], [`server_request_method`]; re-exported here), and the families'
//!   label sets.
//! - `families.rs`: the families registered in groups (calls, upstreams, refreshes, searches,
//!   the semantic arm), in the order of the OpenMetrics text, with their histogram buckets.
//! - `catalog.rs`: the catalog gauges, computed from the [`Snapshot`] at each scrape.
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

mod catalog;
mod families;
mod labels;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use proxy_core::catalog::Snapshot;

use catalog::catalog_registry;
use families::{registered, CallFamilies, RefreshFamilies, SearchFamilies, SemanticFamilies, UpstreamFamilies};
pub use labels::{
    error_code_label, method_label, server_request_method, AskedOutcome, CallOutcome, FallbackReason, RankBucket,
    RefreshOutcome, UpstreamErrorKind,
};
use labels::{
    AskedLabels, CallLabels, CallLatencyLabels, ErrorLabels, OutcomeLabels, RankLabels, ReasonLabels, RefreshLabels,
    RequestLabels, UpstreamLabels,
};

/// The `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The label value for anything outside a label's bounded set.
pub const OTHER: &str = "other";

/// The label value for "no upstream" (a call that never reached one).
pub const NO_UPSTREAM: &str = "none";

/// At most this many `source` series in `mcp_proxy_catalog_tools` (the largest; the rest are
/// summed into `other`).
pub const MAX_SOURCE_SERIES: usize = 100;

/// Every metric of the process. Cheap to record from any thread; see the module docs.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    calls: CallFamilies,
    upstream: UpstreamFamilies,
    refresh: RefreshFamilies,
    search: SearchFamilies,
    semantic: SemanticFamilies,
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
        let calls = CallFamilies::register(&mut registry);
        let upstream = UpstreamFamilies::register(&mut registry);
        let refresh = RefreshFamilies::register(&mut registry);
        let search = SearchFamilies::register(&mut registry);
        let semantic = SemanticFamilies::register(&mut registry);
        Metrics {
            registry,
            requests,
            calls,
            upstream,
            refresh,
            search,
            semantic,
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
            in_flight: self.calls.in_flight.get_or_create_owned(&UpstreamLabels {
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
                self.calls.calls.get_or_create_owned(&CallLabels {
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
                    self.calls.duration.get_or_create_owned(&CallLatencyLabels {
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
        let gauge = self.calls.in_flight.get_or_create_owned(&UpstreamLabels {
            upstream: upstream.to_string(),
        });
        gauge.inc();
        InFlight(gauge)
    }

    /// A tool call ended. `tool` must be a catalog name (or [`OTHER`]); `latency` is given for
    /// calls that were sent upstream.
    pub fn call(&self, upstream: &str, tool: &str, outcome: CallOutcome, latency: Option<Duration>) {
        self.calls
            .calls
            .get_or_create(&CallLabels {
                upstream: upstream.to_string(),
                tool: tool.to_string(),
                outcome: outcome.as_str(),
            })
            .inc();
        if let Some(l) = latency {
            self.calls
                .duration
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
        self.upstream
            .errors
            .get_or_create(&ErrorLabels {
                upstream: upstream.to_string(),
                kind: kind.as_str(),
            })
            .inc();
    }

    /// `upstream` sent a request during a tool call, and the proxy answered it (`ping`) or
    /// declined it (anything it does not relay to its clients).
    pub fn upstream_request(&self, upstream: &str, method: &str, outcome: AskedOutcome) {
        self.upstream
            .requests
            .get_or_create(&AskedLabels {
                upstream: upstream.to_string(),
                method: server_request_method(method),
                outcome: outcome.as_str(),
            })
            .inc();
    }

    /// A fan-out refresh ended.
    pub fn refresh(&self, outcome: RefreshOutcome, reason: &'static str, duration: Duration) {
        self.refresh
            .refreshes
            .get_or_create(&RefreshLabels {
                outcome: outcome.as_str(),
                reason,
            })
            .inc();
        self.refresh
            .duration
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            })
            .observe(duration.as_secs_f64());
    }

    /// An `mcp_search` answered `queries` queries, `empty` of them with no result.
    pub fn search(&self, queries: u64, empty: u64, latency: Duration) {
        self.search.searches.inc_by(queries);
        self.search.empty.inc_by(empty);
        self.search.duration.observe(latency.as_secs_f64());
    }

    /// The semantic arm published vectors for a catalog of `tools` tools, `embedded` of which
    /// have one.
    pub fn semantic_coverage(&self, embedded: usize, tools: usize) {
        self.semantic.tools_embedded.set(embedded as i64);
        self.semantic.tools.set(tools as i64);
    }

    /// The embedding actor took up a catalog of `tools` tools.
    pub fn semantic_tools(&self, tools: usize) {
        self.semantic.tools.set(tools as i64);
    }

    /// An `mcp_search` waited `latency` for its query vectors.
    pub fn query_embedding(&self, latency: Duration) {
        self.semantic.query_embedding_duration.observe(latency.as_secs_f64());
    }

    /// An `mcp_search` was answered lexically only although the semantic arm is configured.
    pub fn lexical_fallback(&self, reason: FallbackReason) {
        self.semantic
            .lexical_fallback
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .inc();
    }

    /// An `mcp_call`, seen against the caller's last search.
    pub fn retrieval(&self, rank: RankBucket, searches_before: u32) {
        self.search
            .retrieval_calls
            .get_or_create(&RankLabels { rank: rank.as_str() })
            .inc();
        self.search.searches_per_call.observe(f64::from(searches_before));
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

#[cfg(test)]
mod tests {
    use super::catalog::bounded_sources;
    use super::*;

    /// Every family with one series: their order, names, help texts, types and buckets are
    /// the `/metrics` contract (docs/operations.md), pinned here as a whole text.
    #[test]
    fn the_families_are_the_contract() {
        let m = Metrics::new();
        let _in_flight = m.call_in_flight("up");
        m.request("tools/call", "ok");
        m.call("up", "t", CallOutcome::Ok, Some(Duration::from_millis(3)));
        m.upstream_error_kind("up", UpstreamErrorKind::Connect);
        m.upstream_request("up", "elicitation/create", AskedOutcome::Declined);
        m.refresh(RefreshOutcome::Partial, "startup", Duration::from_millis(20));
        m.search(3, 1, Duration::from_micros(40));
        m.retrieval(RankBucket::Rank(4), 2);
        m.semantic_coverage(5, 7);
        m.query_embedding(Duration::from_millis(12));
        m.lexical_fallback(FallbackReason::Timeout);
        let text = m.encode(&Snapshot::default(), 0);
        assert_eq!(text, include_str!("testdata/scrape.txt"));
    }

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
