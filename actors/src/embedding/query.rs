//! `QueryEmbedder`: query vectors for searches, on a `SyncArbiter` thread of its own (a forward
//! pass is milliseconds of CPU and must not run on an actix arbiter or an HTTP worker). It
//! shares the loaded model (`Arc<Embedder>`, whose methods take `&self`) with the tool
//! embedding job, and keeps a small LRU cache of recent queries ([`super::cache`]). Queries go
//! through `Embedder::embed_queries_at`: the 8-bit query encoder on a CPU with a VNNI unit
//! (~2.5× faster for a short query), the f32 model elsewhere (`embed::encoder`).

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use embed::{EmbedError, Embedder};
use tool_search::semantic::QUERY_MAX_TOKENS;

use super::cache::{QueryCache, QUERY_CACHE_ENTRIES};

pub struct QueryEmbedder {
    embedder: Arc<Embedder>,
    cache: QueryCache,
}

impl QueryEmbedder {
    pub fn new(embedder: Arc<Embedder>) -> QueryEmbedder {
        QueryEmbedder {
            embedder,
            cache: QueryCache::new(QUERY_CACHE_ENTRIES),
        }
    }

    /// Starts one on a thread of its own (one thread: query embedding is a latency path, and
    /// the model's matrix products already use the cores).
    pub fn start(embedder: Arc<Embedder>) -> Addr<QueryEmbedder> {
        SyncArbiter::start(1, move || QueryEmbedder::new(embedder.clone()))
    }
}

impl Actor for QueryEmbedder {
    type Context = SyncContext<Self>;
}

/// The vectors of a search's queries (each read as `tool_search::semantic::query_text`: clipped,
/// without its literal values, up to `QUERY_MAX_TOKENS` tokens), in order. A request still queued at `deadline` is answered with
/// an error without being computed: its search has already gone on without it.
#[derive(Message)]
#[rtype(result = "Result<Vec<Arc<[f32]>>, QueryEmbedError>")]
pub struct EmbedQueries {
    pub queries: Vec<String>,
    pub deadline: Instant,
}

/// Why a search's queries have no vectors (the search then ranks lexically).
#[derive(Debug)]
pub enum QueryEmbedError {
    /// Still queued at its deadline: not computed.
    Expired,
    /// The model failed on the queries.
    Model(EmbedError),
    /// The model returned another number of vectors than it was given queries.
    WrongCount,
    /// A query was left without a vector.
    Missing,
}

impl std::fmt::Display for QueryEmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Expired => f.write_str("expired while queued"),
            Self::Model(e) => e.fmt(f),
            Self::WrongCount => f.write_str("the model returned a wrong number of vectors"),
            Self::Missing => f.write_str("a query has no vector"),
        }
    }
}

impl std::error::Error for QueryEmbedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Model(e) => Some(e),
            _ => None,
        }
    }
}

impl Handler<EmbedQueries> for QueryEmbedder {
    type Result = Result<Vec<Arc<[f32]>>, QueryEmbedError>;

    fn handle(&mut self, msg: EmbedQueries, _: &mut Self::Context) -> Self::Result {
        if Instant::now() >= msg.deadline {
            return Err(QueryEmbedError::Expired);
        }
        // the same text `eval` embeds: what the floors measure is what the service ranks
        let texts: Vec<String> = msg
            .queries
            .iter()
            .map(|q| tool_search::semantic::query_text(q))
            .collect();
        let clipped: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut out: Vec<Option<Arc<[f32]>>> = clipped.iter().map(|q| self.cache.get(q)).collect();
        let missing: Vec<usize> = (0..out.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let texts: Vec<&str> = missing.iter().map(|&i| clipped[i]).collect();
            let vectors = self
                .embedder
                .embed_queries_at(&texts, QUERY_MAX_TOKENS)
                .map_err(QueryEmbedError::Model)?;
            if vectors.len() != texts.len() {
                return Err(QueryEmbedError::WrongCount);
            }
            for (&i, v) in missing.iter().zip(vectors) {
                let v: Arc<[f32]> = Arc::from(v);
                self.cache.insert(clipped[i], v.clone());
                out[i] = Some(v);
            }
        }
        out.into_iter().map(|v| v.ok_or(QueryEmbedError::Missing)).collect()
    }
}
