//! The pure part of a refresh: merging a fan-out's listings into a new snapshot
//! ([`apply_fanout`]), the change journal, the reports a refresh returns, and the timing rules
//! (the effective TTL and its jitter). The actor (see [`super::actor`]) only sequences these.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proxy_core::catalog::report::{upstream_reports, RefreshFailure, RefreshReason, RefreshReport};
use proxy_core::catalog::snapshot::{self, Snapshot, UpstreamState};
use proxy_core::catalog::{index_file, ingest, manifest};
use proxy_core::policy::Policy;

use crate::upstream::Listing;
use crate::upstream::{Describe, UpstreamError};

/// The shortest background refresh period an upstream's `ttlMs` can ask for.
const MIN_TTL: Duration = Duration::from_secs(30);

/// `CATALOG_TTL_SEC` shortened to the smallest positive `ttlMs` hint, but not below `MIN_TTL`
/// (nor above the configured period); `None` when background refresh is off.
pub(super) fn effective_ttl(configured: Option<Duration>, hints_ms: impl Iterator<Item = u64>) -> Option<Duration> {
    let ttl = configured?;
    Some(match hints_ms.filter(|h| *h > 0).min().map(Duration::from_millis) {
        Some(h) => h.clamp(MIN_TTL.min(ttl), ttl),
        None => ttl,
    })
}

/// Merges a fan-out's results into a new snapshot (pure apart from the manifest write). Each
/// result names its upstream's label and goes to the snapshot entry of that label; an entry
/// without a result is kept as it was.
pub(super) fn apply_fanout(
    previous: &Snapshot,
    results: Vec<(String, Result<Listing, UpstreamError>)>,
    reason: RefreshReason,
    started: Instant,
    manifest_path: Option<&std::path::Path>,
    policy: &Policy,
    describe: Describe,
) -> Result<(Snapshot, RefreshReport), RefreshFailure> {
    let now = now_ms();
    let mut states = previous.upstreams.clone();
    let mut any_ok = false;
    let mut results: HashMap<String, Result<Listing, UpstreamError>> = results.into_iter().collect();
    for state in states.iter_mut() {
        if let Some(result) = results.remove(&state.label) {
            any_ok |= apply_listing(state, result, now, describe);
        }
    }
    if !any_ok {
        let upstreams = upstream_reports(&states, now);
        log::error!(reason = reason.as_str(), upstreams = states.len(); "catalog refresh failed: no upstream answered; cached catalog kept");
        return Err(RefreshFailure {
            message: "no upstream answered; the cached catalog is unchanged".into(),
            upstreams,
        });
    }
    let snapshot = Snapshot::rebuild(states, previous.generation + 1, policy, previous);
    let (added, removed, modified) = journal(previous, &snapshot);
    for name in &modified {
        let upstream = snapshot.get(name).map(|t| t.upstream.as_str()).unwrap_or("");
        log::warn!(tool = name.as_str(), upstream = upstream; "tool definition changed upstream");
    }
    for c in &snapshot.collisions {
        log::warn!(tool = c.name.as_str(), kept = c.kept.as_str(), dropped = c.dropped.as_str(); "tool name collision");
    }
    if let Some(path) = manifest_path {
        let m = manifest::Manifest::from_snapshot(&snapshot, now);
        if let Err(e) = manifest::store(path, &m) {
            log::error!(path = path.display().to_string().as_str(), error = e.to_string().as_str(); "manifest write failed");
        }
        if snapshot.index_built && !snapshot.tools.is_empty() {
            persist_index(path, &snapshot);
        }
    }
    let report = fanout_report(previous, &snapshot, (added, removed, modified), reason, started, now);
    Ok((snapshot, report))
}

/// Writes the snapshot's index beside the manifest at `manifest` (failures are logged: the
/// file is only a cache).
pub(super) fn persist_index(manifest: &std::path::Path, snapshot: &Snapshot) {
    if let Err(e) = index_file::store(
        manifest,
        index_file::build_identity(),
        &snapshot.index_key,
        &snapshot.index,
    ) {
        let path = index_file::path_for(manifest).display().to_string();
        log::warn!(path = path.as_str(), error = e.to_string().as_str(); "search index write failed");
    }
}

/// Applies one upstream's listing (or its failure) to its snapshot entry; whether it answered.
/// A failure keeps the previous tools (served stale) and records the error; one empty listing
/// after a non-empty one is not believed yet.
fn apply_listing(
    state: &mut UpstreamState,
    result: Result<Listing, UpstreamError>,
    now: u64,
    describe: Describe,
) -> bool {
    match result {
        Ok(listing) => {
            let (tools, dropped) = ingest::admit(&state.label, listing.tools);
            state.dropped = dropped;
            if tools.is_empty() && !state.tools.is_empty() && !state.suspect_empty {
                // An aggregator restarting before its backends connect lists nothing for
                // a while: one empty listing does not erase the catalog and the manifest.
                log::warn!(
                    upstream = state.label.as_str(),
                    kept_tools = state.tools.len();
                    "upstream listed no tools; previous tools kept until an empty listing repeats"
                );
                state.suspect_empty = true;
                state.last_error = Some(format!(
                    "listed no tools (had {}); the previous tools are kept until the next refresh confirms the empty list",
                    state.tools.len()
                ));
                return true;
            }
            state.suspect_empty = false;
            state.tools = tools;
            state.instructions = listing.instructions.as_deref().map(ingest::admit_instructions);
            state.listed_at_ms = Some(now);
            state.last_error = None;
            state.era = Some(listing.era);
            state.protocol_version = Some(listing.protocol_version);
            state.ttl_ms = listing.ttl_ms;
            true
        }
        Err(e) => {
            let age = state.listed_at_ms.map(|t| now.saturating_sub(t) / 1000);
            log::warn!(
                upstream = state.label.as_str(),
                error = e.to_string().as_str(),
                kept_tools = state.tools.len(),
                listing_age_sec = age.unwrap_or(0);
                "upstream skipped in refresh"
            );
            state.last_error = Some(describe(&e));
            false
        }
    }
}

/// What a fan-out that produced `snapshot` did, logged as one `catalog refreshed` line.
fn fanout_report(
    previous: &Snapshot,
    snapshot: &Snapshot,
    (added, removed, modified): (Vec<String>, Vec<String>, Vec<String>),
    reason: RefreshReason,
    started: Instant,
    now: u64,
) -> RefreshReport {
    let report = RefreshReport {
        reason,
        ran: true,
        fingerprint: snapshot.fingerprint.clone(),
        previous_fingerprint: previous.fingerprint.clone(),
        changed: snapshot.fingerprint != previous.fingerprint,
        total_tools: snapshot.tools.len(),
        sources: snapshot.counts_by_source(),
        upstreams: upstream_reports(&snapshot.upstreams, now),
        collisions: snapshot.collisions.clone(),
        added,
        removed,
        modified,
        duration_ms: started.elapsed().as_millis() as u64,
        note: None,
    };
    let sources = serde_json::to_string(&report.sources).unwrap_or_default();
    log::info!(
        reason = reason.as_str(),
        tools = report.total_tools,
        sources = sources.as_str(),
        fingerprint = report.fingerprint.as_str(),
        changed = report.changed,
        added = report.added.len(),
        removed = report.removed.len(),
        modified = report.modified.len(),
        latency_ms = report.duration_ms;
        "catalog refreshed"
    );
    report
}

/// Names added, removed and modified between two snapshots (sorted).
pub(super) fn journal(old: &Snapshot, new: &Snapshot) -> (Vec<String>, Vec<String>, Vec<String>) {
    // names of `a`'s tools that `b` lacks
    let missing = |a: &Snapshot, b: &Snapshot| -> Vec<String> {
        a.tools
            .iter()
            .filter(|t| b.get(&t.tool.name).is_none())
            .map(|t| t.tool.name.clone())
            .collect()
    };
    let mut added = missing(new, old);
    let mut removed = missing(old, new);
    let mut modified: Vec<String> = new
        .tools
        .iter()
        .filter(|t| {
            old.hash_of(&t.tool.name)
                .is_some_and(|h| h != snapshot::tool_hash_u64(&t.tool))
        })
        .map(|t| t.tool.name.clone())
        .collect();
    added.sort();
    removed.sort();
    modified.sort();
    (added, removed, modified)
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `ttl` ± 10%, so many proxies started together do not refresh in lock-step.
pub(super) fn jitter(ttl: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let unit = (h.finish() % 2001) as f64 / 1000.0 - 1.0; // [-1, 1]
    ttl.mul_f64(1.0 + 0.1 * unit).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_hints_shorten_the_period_within_bounds() {
        let min = Duration::from_secs;
        assert_eq!(effective_ttl(None, [60_000].into_iter()), None, "off stays off");
        assert_eq!(effective_ttl(Some(min(1800)), std::iter::empty()), Some(min(1800)));
        assert_eq!(
            effective_ttl(Some(min(1800)), [300_000, 600_000].into_iter()),
            Some(min(300))
        );
        assert_eq!(
            effective_ttl(Some(min(1800)), [1_000].into_iter()),
            Some(MIN_TTL),
            "never below the minimum"
        );
        assert_eq!(
            effective_ttl(Some(min(1800)), [0].into_iter()),
            Some(min(1800)),
            "0 is no hint"
        );
        assert_eq!(
            effective_ttl(Some(min(600)), [3_600_000].into_iter()),
            Some(min(600)),
            "never above the setting"
        );
        assert_eq!(effective_ttl(Some(min(10)), [1_000].into_iter()), Some(min(10)));
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        for _ in 0..100 {
            let j = jitter(Duration::from_secs(100));
            assert!(j >= Duration::from_secs(90) && j <= Duration::from_secs(110), "{j:?}");
        }
    }

    #[test]
    fn listings_go_to_the_entry_of_their_label_whatever_their_order() {
        use mcp_wire::types::Tool;
        use mcp_wire::Era;
        use std::sync::Arc;
        let tool = |n: &str| -> Arc<Tool> { Arc::new(serde_json::from_value(serde_json::json!({"name": n})).unwrap()) };
        let state = |label: &str| UpstreamState {
            label: label.into(),
            url: format!("http://{label}/mcp"),
            ..Default::default()
        };
        let listing = |name: &str| Listing {
            tools: vec![tool(name)],
            instructions: None,
            era: Era::Legacy,
            protocol_version: "2025-06-18".into(),
            ttl_ms: None,
        };
        let previous = Snapshot::build(vec![state("a"), state("b"), state("c")], 1, &Default::default());
        let results = vec![
            ("c".to_string(), Err(UpstreamError::Unavailable)),
            ("b".to_string(), Ok(listing("from_b"))),
            ("a".to_string(), Ok(listing("from_a"))),
        ];
        let (snapshot, report) = apply_fanout(
            &previous,
            results,
            RefreshReason::Explicit,
            Instant::now(),
            None,
            &Default::default(),
            |e| e.to_string(),
        )
        .unwrap();
        let tools_of = |label: &str| -> Vec<String> {
            let entry = snapshot.upstreams.iter().find(|u| u.label == label).unwrap();
            entry.tools.iter().map(|t| t.name.clone()).collect()
        };
        assert_eq!(tools_of("a"), ["from_a"]);
        assert_eq!(tools_of("b"), ["from_b"]);
        assert!(tools_of("c").is_empty());
        let c = report.upstreams.iter().find(|u| u.label == "c").unwrap();
        assert!(!c.ok && c.error.is_some(), "{c:?}");
        assert_eq!(snapshot.get("from_a").map(|t| t.upstream.as_str()), Some("a"));
    }

    #[test]
    fn journal_reports_added_removed_and_modified() {
        use mcp_wire::types::Tool;
        use std::sync::Arc;
        let t = |n: &str, d: &str| -> Arc<Tool> {
            Arc::new(serde_json::from_value(serde_json::json!({"name": n, "description": d})).unwrap())
        };
        let st = |tools| {
            vec![UpstreamState {
                label: "u".into(),
                url: "x".into(),
                tools,
                ..Default::default()
            }]
        };
        let old = Snapshot::build(st(vec![t("a", "1"), t("b", "1")]), 1, &Default::default());
        let new = Snapshot::build(st(vec![t("b", "2"), t("c", "1")]), 2, &Default::default());
        assert_eq!(
            journal(&old, &new),
            (vec!["c".to_string()], vec!["a".to_string()], vec!["b".to_string()])
        );
    }
}
