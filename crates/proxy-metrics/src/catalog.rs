//! The catalog gauges, computed from the snapshot at each scrape.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use proxy_core::catalog::Snapshot;

use crate::labels::{SourceLabels, UpstreamLabels};
use crate::{MAX_SOURCE_SERIES, OTHER};

/// The catalog gauges of one scrape, from the snapshot (a registry of their own, built per
/// scrape: nothing to clear when a source or an upstream goes away).
pub(crate) fn catalog_registry(snap: &Snapshot, now_ms: u64) -> Registry {
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
pub(crate) fn bounded_sources<'a>(sources: impl Iterator<Item = (&'a str, usize)>) -> Vec<(String, usize)> {
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
