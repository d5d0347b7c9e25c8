//! `mcp_search` over a snapshot: each query ranked by the index (lexical, or hybrid when the
//! semantic arm's vectors are passed in), answered as hits the model can act on.
//!
//! Computing vectors needs a model, which runs elsewhere (the embedding actors); this stays
//! pure: [`search`] takes them as [`SearchVectors`].

use std::sync::Arc;

use serde_json::{json, Value};

use super::definitions::HIT_DESCRIPTION_CHARS;
use super::request::SearchRequest;
use super::signature::signature;
use crate::catalog::snapshot::clip;
use crate::catalog::Snapshot;

/// The semantic arm's input to one `mcp_search` call: the tools' vectors (built for the
/// snapshot searched) and one vector per query, in the request's order.
#[derive(Debug, Clone, Copy)]
pub struct SearchVectors<'a> {
    pub tools: &'a tool_search::semantic::Vectors,
    pub queries: &'a [Arc<[f32]>],
}

/// What `mcp_search` found: per query, the catalog positions of its hits in rank order, over
/// the snapshot searched (kept, so the answer names exactly the tools that were ranked).
#[derive(Debug, Clone)]
pub struct SearchAnswer {
    snapshot: Arc<Snapshot>,
    /// Whether the client sent a list of queries.
    pub many: bool,
    pub queries: Vec<QueryHits>,
}

/// One query's hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryHits {
    pub query: String,
    /// Positions in the snapshot's `tools`, best first.
    pub docs: Vec<usize>,
}

/// Ranks each query of `req` over `snap`: hybrid when `vectors` is given (a query without a
/// vector, or vectors not built for this snapshot's index, is searched lexically).
pub fn search(snap: &Arc<Snapshot>, req: &SearchRequest, vectors: Option<SearchVectors<'_>>) -> SearchAnswer {
    let queries = req
        .queries
        .iter()
        .enumerate()
        .map(|(i, query)| {
            let semantic = vectors.and_then(|v| {
                v.queries.get(i).map(|q| tool_search::Semantic {
                    vectors: v.tools,
                    query: q,
                })
            });
            let hits = match semantic {
                Some(sem) => snap.index.search_hybrid(query, req.limit, Some(sem)),
                None => snap.index.search(query, req.limit),
            };
            QueryHits {
                query: query.clone(),
                docs: hits.iter().map(|h| h.doc).filter(|&d| d < snap.tools.len()).collect(),
            }
        })
        .collect();
    SearchAnswer {
        snapshot: snap.clone(),
        many: req.many,
        queries,
    }
}

impl SearchAnswer {
    /// The hit names of each query, in rank order.
    pub fn names(&self) -> Vec<Vec<String>> {
        self.queries
            .iter()
            .map(|q| {
                q.docs
                    .iter()
                    .map(|&d| self.snapshot.tools[d].tool.name.clone())
                    .collect()
            })
            .collect()
    }

    /// How many queries found nothing.
    pub fn empty_queries(&self) -> usize {
        self.queries.iter().filter(|q| q.docs.is_empty()).count()
    }

    /// The structured content: one query's answer, or `{"queries": [...]}` for a list.
    pub fn to_json(&self) -> Value {
        let mut answers = self.queries.iter().map(|q| self.query_json(q));
        if self.many {
            json!({"queries": answers.collect::<Vec<_>>()})
        } else {
            answers.next().unwrap_or(Value::Null)
        }
    }

    /// A query's hits (name, source, clipped description, the parameters' line: see
    /// [`super::signature`]); with no hit, the sources there are and a hint on what to do.
    fn query_json(&self, q: &QueryHits) -> Value {
        let snap = &self.snapshot;
        if q.docs.is_empty() {
            let sources: Vec<Value> = snap
                .sources
                .iter()
                .map(|s| json!({"source": s.source, "tools": s.tools}))
                .collect();
            let hint = if snap.tools.is_empty() {
                "The catalog is empty: no upstream has answered yet. Try the refresh tool (mcp_refresh), or retry shortly."
            } else {
                "No tool matches. Rephrase with other words (an action and an object, e.g. \"create calendar event\"), or search for one of the sources above. If nothing fits, the capability is not available."
            };
            return json!({"query": q.query, "results": [], "available_sources": sources, "hint": hint});
        }
        let results: Vec<Value> = q
            .docs
            .iter()
            .map(|&d| {
                let t = &snap.tools[d];
                json!({
                    "name": t.tool.name,
                    "source": t.source,
                    "description": clip(t.tool.description_str(), HIT_DESCRIPTION_CHARS),
                    "params": signature(&t.tool.input_schema()),
                })
            })
            .collect();
        json!({"query": q.query, "results": results})
    }
}
