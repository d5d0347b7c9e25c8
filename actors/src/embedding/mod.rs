//! The semantic arm of the search, as a service: tool vectors computed in the background after
//! the proxy is ready, query vectors per search, both from a local sentence-embedding model
//! (the `embed` crate; nothing is fetched at run time).
//!
//! # Layout
//!
//! - `plan.rs`: the pure core: a snapshot's tool texts and keys ([`ToolTexts`]), which the
//!   store lacks, the chunked, stoppable fill ([`plan::fill`]) and the vectors aligned with the
//!   snapshot's index. Unit-tested with a fake model.
//! - `jobs.rs`: which snapshot is embedded next, as a pure state machine (one job at a time,
//!   the newest snapshot waiting wins, the running job told when it is superseded).
//! - `actor.rs`: [`EmbeddingActor`]: loads the model on a blocking thread, owns the
//!   [`VectorStore`](embed::store::VectorStore), follows the catalog's `watch` channel and, for
//!   each new generation, embeds only the texts it has no vector for (one job at a time, on a
//!   blocking thread, in chunks; a newer snapshot stops the job between chunks and what it
//!   embedded is kept), then publishes a [`SemanticIndex`] for that generation and writes the
//!   store (current keys only, atomically) beside the manifest.
//! - `query.rs`: [`QueryEmbedder`]: query vectors on a `SyncArbiter` thread, sharing the model,
//!   with a small LRU cache (`cache.rs`, [`QueryCache`]).
//! - `state.rs`: what is published ([`SemanticState`]) and the `/readyz` report of it.
//!
//! A search uses the semantic index only when it was built for the very snapshot searched
//! (same generation): until the vectors of a new catalog are ready, searches are lexical.
//! Nothing here can stop the service: a model that cannot be loaded turns the arm off (one
//! WARN line), an embedding error is logged and retried at the next catalog change.

mod actor;
pub mod cache;
mod jobs;
pub mod plan;
mod query;
mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix::Actor;
use tokio::sync::watch;

use proxy_core::catalog::Snapshot;
use proxy_metrics::Metrics;

pub use actor::EmbeddingActor;
pub use cache::QueryCache;
pub use plan::ToolTexts;
pub use query::{EmbedQueries, QueryEmbedError, QueryEmbedder};
pub use state::{Phase, Progress, SearchReport, SemanticIndex, SemanticState};

/// Settings of the semantic arm.
#[derive(Debug, Clone, Default)]
pub struct EmbeddingConfig {
    /// The model directory (`EMBED_MODEL`); `None` = lexical only.
    pub model: Option<PathBuf>,
    /// Where the tool vectors are persisted (see [`vectors_path`]); `None` = in memory only.
    pub vectors_path: Option<PathBuf>,
}

/// The vector file that goes with a manifest: `<manifest>.vectors`.
pub fn vectors_path(manifest: &Path) -> PathBuf {
    let mut name = manifest.as_os_str().to_owned();
    name.push(".vectors");
    PathBuf::from(name)
}

/// Starts the semantic arm (or says once why it is off) and returns what it publishes. Must
/// run inside an actix `System`.
pub fn start(
    cfg: EmbeddingConfig,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    metrics: Arc<Metrics>,
) -> watch::Receiver<SemanticState> {
    let Some(model) = cfg.model else {
        log::info!(reason = "EMBED_MODEL unset", mode = "lexical"; "semantic search off");
        return watch::channel(SemanticState::off("EMBED_MODEL unset")).1;
    };
    let mut initial = SemanticState::off("");
    initial.phase = Phase::Loading;
    let (tx, rx) = watch::channel(initial);
    EmbeddingActor::new(model, cfg.vectors_path, metrics, snapshots, tx).start();
    rx
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_vector_file_sits_beside_the_manifest() {
        assert_eq!(
            super::vectors_path(std::path::Path::new("/data/manifest.json")),
            std::path::PathBuf::from("/data/manifest.json.vectors")
        );
    }
}
