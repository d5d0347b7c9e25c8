//! What the embedding side publishes for the HTTP layer: the semantic index of a snapshot
//! generation, the query embedder's address, and where the work stands (for `/readyz`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use actix::Addr;
use serde::Serialize;
use tool_search::semantic::Vectors;

use super::query::QueryEmbedder;

/// The tools' vectors of one snapshot generation, aligned with its index.
#[derive(Debug)]
pub struct SemanticIndex {
    /// The snapshot generation the vectors were built for: a search uses them only on that
    /// snapshot (else the rows would not line up with the index's tools).
    pub generation: u64,
    pub vectors: Vectors,
    /// The model's fingerprint (`Embedder::fingerprint` at the tool cut).
    pub model: String,
}

/// Where the semantic arm stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Not in use, and why (`EMBED_MODEL` unset, or the model could not be loaded).
    Off(String),
    /// The model is being loaded (a fraction of a second to a few seconds).
    Loading,
    /// The model is loaded; vectors are computed for each new snapshot.
    On,
}

/// Counters the embedding job updates while it runs (read by `/readyz`).
#[derive(Debug, Default)]
pub struct Progress {
    /// Texts embedded so far by the job in flight (or the last one).
    pub done: AtomicUsize,
    /// Texts the job in flight (or the last one) had to embed.
    pub todo: AtomicUsize,
    /// Texts embedded by this process since it started (a restart with an unchanged catalog
    /// and its vector file embeds none).
    pub embedded_since_start: AtomicU64,
}

/// The published state (one writer: the embedding actor, or the start-up code when off).
#[derive(Debug, Clone)]
pub struct SemanticState {
    pub phase: Phase,
    /// The newest semantic index (possibly of an older generation than the current snapshot).
    pub index: Option<Arc<SemanticIndex>>,
    /// Where query vectors are computed; `None` until the model is loaded.
    pub query: Option<Addr<QueryEmbedder>>,
    pub model: Option<String>,
    /// The fingerprint of the query delta merged into the query encoder, if one is.
    pub query_delta: Option<String>,
    pub progress: Arc<Progress>,
}

impl SemanticState {
    pub fn off(reason: impl Into<String>) -> SemanticState {
        SemanticState {
            phase: Phase::Off(reason.into()),
            index: None,
            query: None,
            model: None,
            query_delta: None,
            progress: Arc::default(),
        }
    }

    /// The index to search snapshot `generation` with, if it was built for it.
    pub fn index_for(&self, generation: u64) -> Option<&Arc<SemanticIndex>> {
        self.index
            .as_ref()
            .filter(|i| i.generation == generation && self.query.is_some() && self.phase == Phase::On)
    }

    /// The search mode of snapshot `generation` with `tools` tools, as `/readyz` reports it.
    pub fn report(&self, generation: u64, tools: usize) -> SearchReport {
        let ready = self.index_for(generation);
        let semantic = match (&self.phase, ready) {
            (Phase::Off(reason), _) => format!("off ({reason})"),
            (Phase::Loading, _) => "loading model".to_owned(),
            (Phase::On, Some(_)) => "ready".to_owned(),
            (Phase::On, None) => format!(
                "embedding {}/{}",
                self.progress.done.load(Ordering::Relaxed),
                self.progress.todo.load(Ordering::Relaxed)
            ),
        };
        SearchReport {
            mode: if ready.is_some() { "hybrid" } else { "lexical" },
            semantic,
            model: self.model.clone(),
            query_delta: self.query_delta.clone(),
            tools_embedded: ready.map_or(0, |i| i.vectors.count()),
            tools,
            embedded_since_start: self.progress.embedded_since_start.load(Ordering::Relaxed),
        }
    }
}

/// The `search` object of `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchReport {
    /// `hybrid` when searches of the current snapshot use the semantic arm, else `lexical`.
    pub mode: &'static str,
    /// `off (<reason>)`, `loading model`, `embedding <done>/<to do>`, or `ready`.
    pub semantic: String,
    pub model: Option<String>,
    /// The query delta's fingerprint (`crates/embed/query-delta.safetensors` unless
    /// `EMBED_QUERY_DELTA` names another), or `None`.
    pub query_delta: Option<String>,
    /// Tools of the current snapshot with a vector (0 unless `mode` is `hybrid`).
    pub tools_embedded: usize,
    /// Tools of the current snapshot.
    pub tools: usize,
    /// Texts this process embedded since it started.
    pub embedded_since_start: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_reports_lexical_with_the_reason() {
        let s = SemanticState::off("EMBED_MODEL unset");
        let r = s.report(3, 10);
        assert_eq!(r.mode, "lexical");
        assert_eq!(r.semantic, "off (EMBED_MODEL unset)");
        assert_eq!(r.tools_embedded, 0);
    }

    #[test]
    fn an_index_of_another_generation_is_not_used() {
        let mut s = SemanticState::off("x");
        s.phase = Phase::On;
        s.index = Some(Arc::new(SemanticIndex {
            generation: 1,
            vectors: Vectors::build(2, 1, |_| Some(&[1.0][..])),
            model: "m".into(),
        }));
        s.progress.done.store(1, Ordering::Relaxed);
        s.progress.todo.store(5, Ordering::Relaxed);
        // no query embedder yet: not usable either
        assert!(s.index_for(1).is_none());
        assert_eq!(s.report(2, 2).semantic, "embedding 1/5");
        assert_eq!(s.report(2, 2).mode, "lexical");
    }
}
