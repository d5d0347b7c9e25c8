//! What a refresh reports: why it ran ([`RefreshReason`]), what it did ([`RefreshReport`], or
//! [`RefreshFailure`] when no upstream answered) and each upstream's state
//! ([`UpstreamReport`]: its tools, its last error, and when it is tried again). The catalog
//! actor builds them; `mcp_refresh` answers with them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ingest;
use super::snapshot::{Collision, UpstreamState};

/// Why a refresh was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshReason {
    Startup,
    Ttl,
    Explicit,
    UnknownTool,
    ListChanged,
    /// Some upstream has never answered yet.
    Retry,
}

impl RefreshReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshReason::Startup => "startup",
            RefreshReason::Ttl => "ttl",
            RefreshReason::Explicit => "explicit",
            RefreshReason::UnknownTool => "unknown_tool",
            RefreshReason::ListChanged => "list_changed",
            RefreshReason::Retry => "retry",
        }
    }
}

/// Per-upstream outcome of a refresh.
#[derive(Debug, Clone, Serialize)]
pub struct UpstreamReport {
    pub label: String,
    pub ok: bool,
    pub tools: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// True when the tools served for this upstream come from an earlier listing.
    pub stale: bool,
    /// Age in seconds of the listing served for this upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing_age_sec: Option<u64>,
    /// The protocol era the upstream spoke at its last good listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub era: Option<mcp_wire::Era>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Tools of the last listing that were not admitted, by reason (see `catalog::ingest`).
    #[serde(skip_serializing_if = "ingest::Dropped::is_empty")]
    pub dropped: ingest::Dropped,
    /// For an upstream whose last attempt failed: seconds until the catalog tries it again
    /// (its retry, or the next background refresh); absent when nothing is scheduled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_in_sec: Option<u64>,
}

/// What a completed refresh did.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshReport {
    pub reason: RefreshReason,
    /// False when no fan-out ran because the catalog was already fresh.
    pub ran: bool,
    pub fingerprint: String,
    pub previous_fingerprint: String,
    pub changed: bool,
    pub total_tools: usize,
    pub sources: BTreeMap<String, usize>,
    pub upstreams: Vec<UpstreamReport>,
    pub collisions: Vec<Collision>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub modified: Vec<String>,
    pub duration_ms: u64,
    /// Why no fan-out ran, when `ran` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A refresh in which no upstream answered: the catalog was left as it was.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshFailure {
    pub message: String,
    pub upstreams: Vec<UpstreamReport>,
}

/// Each upstream's report from its snapshot state (`now`: Unix ms, for the listing ages).
pub fn upstream_reports(states: &[UpstreamState], now: u64) -> Vec<UpstreamReport> {
    states
        .iter()
        .map(|s| UpstreamReport {
            label: s.label.clone(),
            ok: s.last_error.is_none() && s.listed_at_ms.is_some(),
            tools: s.tools.len(),
            error: s.last_error.clone(),
            stale: s.last_error.is_some() && !s.tools.is_empty(),
            listing_age_sec: s.listed_at_ms.map(|t| now.saturating_sub(t) / 1000),
            era: s.era,
            protocol_version: s.protocol_version.clone(),
            dropped: s.dropped,
            retry_in_sec: None,
        })
        .collect()
}

/// The error of each upstream's most recent listing attempt, kept across fan-outs, also across
/// those that changed nothing because no upstream answered (their errors never reach a
/// snapshot): so every report, also one answered without a fan-out, says why an upstream is
/// missing.
#[derive(Debug, Default, Clone)]
pub struct LastErrors(std::collections::HashMap<String, String>);

impl LastErrors {
    /// Takes in a fan-out's per-upstream outcomes: an error replaces the last one, a good
    /// listing clears it.
    pub fn record(&mut self, reports: &[UpstreamReport]) {
        for r in reports {
            match &r.error {
                Some(e) => {
                    self.0.insert(r.label.clone(), e.clone());
                }
                None => {
                    self.0.remove(&r.label);
                }
            }
        }
    }

    /// Completes reports with the last errors, and with `retry_in` (when the catalog tries
    /// again) for every upstream that is not ok.
    pub fn apply(&self, reports: &mut [UpstreamReport], retry_in: Option<std::time::Duration>) {
        for r in reports {
            if let Some(e) = self.0.get(&r.label) {
                r.ok = false;
                r.stale = r.tools > 0;
                r.error = Some(e.clone());
            }
            if !r.ok {
                r.retry_in_sec = retry_in.map(|d| d.as_secs_f64().ceil() as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn report(label: &str, tools: usize, error: Option<&str>) -> UpstreamReport {
        UpstreamReport {
            label: label.into(),
            ok: error.is_none(),
            tools,
            error: error.map(str::to_string),
            stale: false,
            listing_age_sec: None,
            era: None,
            protocol_version: None,
            dropped: Default::default(),
            retry_in_sec: None,
        }
    }

    #[test]
    fn the_last_error_and_the_next_attempt_reach_every_report() {
        let mut last = LastErrors::default();
        // a fan-out in which nothing answered: its errors are kept
        last.record(&[
            report("sec", 0, Some("certificate not trusted; set UPSTREAM_CA_FILE")),
            report("ok", 3, None),
        ]);
        // a later report built from a snapshot that never saw them
        let mut fresh = vec![report("sec", 0, None), report("ok", 3, None)];
        fresh[0].ok = false; // never listed
        last.apply(&mut fresh, Some(Duration::from_millis(1500)));
        assert_eq!(
            fresh[0].error.as_deref(),
            Some("certificate not trusted; set UPSTREAM_CA_FILE")
        );
        assert_eq!(fresh[0].retry_in_sec, Some(2), "rounded up");
        assert!(!fresh[0].stale, "no tools served");
        assert!(fresh[1].ok);
        assert_eq!(fresh[1].retry_in_sec, None, "an ok upstream is not retried");
        let json = serde_json::to_value(&fresh[0]).unwrap();
        assert_eq!(json["retry_in_sec"], 2);
        assert_eq!(serde_json::to_value(&fresh[1]).unwrap().get("retry_in_sec"), None);
        // an upstream that serves tools from an earlier listing is stale while it fails
        last.record(&[report("ok", 3, Some("timed out"))]);
        let mut again = vec![report("ok", 3, None)];
        last.apply(&mut again, None);
        assert!(again[0].stale && !again[0].ok);
        assert_eq!(again[0].retry_in_sec, None, "nothing scheduled");
        // a good listing clears the error
        last.record(&[report("ok", 3, None), report("sec", 1, None)]);
        let mut good = vec![report("ok", 3, None), report("sec", 1, None)];
        last.apply(&mut good, Some(Duration::from_secs(5)));
        assert!(good
            .iter()
            .all(|r| r.ok && r.error.is_none() && r.retry_in_sec.is_none()));
    }
}
