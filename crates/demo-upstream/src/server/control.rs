//! [`UpstreamControl`]: what a test switches while the server runs (outages, expired sessions,
//! tool changes, slow calls and listings, listings held at a gate), and the [`Stats`] of what the
//! server has seen.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use super::state::{index_by_name, Shared, Stats};

impl Stats {
    /// A header of the latest `tools/call`, by case-insensitive name.
    pub fn last_header(&self, name: &str) -> Option<&str> {
        self.last_headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// Drives a running upstream from test code (any thread): faults, tool changes, statistics.
#[derive(Clone)]
pub struct UpstreamControl {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for UpstreamControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamControl")
            .field("name", &self.shared.config.name)
            .finish_non_exhaustive()
    }
}

impl UpstreamControl {
    /// A snapshot of the counters and of the latest `tools/call`.
    pub fn stats(&self) -> Stats {
        let state = self.shared.lock();
        Stats {
            live_sessions: state.sessions.len(),
            ..state.stats.clone()
        }
    }

    /// Forgets every session, as a restarted server would: old session ids now get 404
    /// `Session not found` and their counters are gone.
    pub fn expire_sessions(&self) {
        self.shared.lock().sessions.clear();
    }

    /// While down, every request gets HTTP 503 before anything else is looked at.
    pub fn set_down(&self, down: bool) {
        self.shared.lock().down = down;
    }

    /// Replaces the tools served by `tools/list` and accepted by `tools/call`.
    pub fn set_tools(&self, tools: Vec<Value>) {
        let mut state = self.shared.lock();
        state.by_name = index_by_name(&tools);
        state.tools = tools;
        // Tell every open GET stream; closed ones are dropped.
        let note = Bytes::from(
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        );
        state.listeners.retain(|tx| tx.send(note.clone()).is_ok());
    }

    /// Makes every `tools/call` wait this long before its response is sent (zero: no wait).
    pub fn set_call_delay(&self, delay: Duration) {
        self.shared.lock().call_delay = delay;
    }

    /// Makes every `tools/list` page wait this long before its response is sent.
    pub fn set_list_delay(&self, delay: Duration) {
        self.shared.lock().list_delay = delay;
    }

    /// Closes the list gate: from now on every `tools/list` request is counted and answered as
    /// usual, but nothing of its answer is sent until [`UpstreamControl::open_list_gate`]. A test
    /// that needs a listing in flight until it has done something else closes it, instead of
    /// guessing a delay long enough.
    pub fn close_list_gate(&self) {
        self.shared.list_gate.send_replace(false);
    }

    /// Opens the list gate: the held `tools/list` answers go out, and later ones are not held.
    pub fn open_list_gate(&self) {
        self.shared.list_gate.send_replace(true);
    }
}
