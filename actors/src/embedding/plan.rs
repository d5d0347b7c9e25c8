//! The pure core of the embedding actor: what a snapshot's tools are embedded as, which of
//! them the store lacks, the one job that fills them in (chunked, stoppable), and the vectors
//! aligned with the snapshot's index. No actor and no model here: the job takes the embedding
//! function as an argument, so it is unit-tested with a fake one.

use embed::store::{text_key, Key, VectorStore};
use tool_search::model::CatalogTool;
use tool_search::semantic::{embedding_text, Vectors};

/// The texts and keys of a snapshot's tools, aligned with `Snapshot::tools` (and so with its
/// index's documents).
#[derive(Debug, Clone, Default)]
pub struct ToolTexts {
    pub texts: Vec<String>,
    pub keys: Vec<Key>,
}

impl ToolTexts {
    pub fn of(tools: &[CatalogTool]) -> ToolTexts {
        let texts: Vec<String> = tools.iter().map(embedding_text).collect();
        let keys = texts.iter().map(|t| text_key(t)).collect();
        ToolTexts { texts, keys }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Positions of the texts `store` has no vector for, each text once (two tools with the
    /// same text share one vector).
    pub fn missing(&self, store: &VectorStore) -> Vec<usize> {
        let mut seen = std::collections::HashSet::new();
        (0..self.keys.len())
            .filter(|&i| !store.contains(&self.keys[i]) && seen.insert(self.keys[i]))
            .collect()
    }

    /// The tools' vectors from `store`, one row per tool (a tool without one has none).
    pub fn vectors(&self, store: &VectorStore) -> Vectors {
        Vectors::build(self.keys.len(), store.dim(), |i| store.get(&self.keys[i]))
    }

    /// Drops from `store` every vector no tool of this snapshot uses.
    pub fn retain_in(&self, store: &mut VectorStore) {
        let current: std::collections::HashSet<&Key> = self.keys.iter().collect();
        store.retain(|k| current.contains(k));
    }
}

/// How one embedding job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    /// Texts that had no vector when the job started.
    pub missing: usize,
    /// Of those, how many were embedded (and are in the store now).
    pub embedded: usize,
    /// A newer snapshot arrived: the job stopped between chunks (what it embedded is kept).
    pub superseded: bool,
    /// The embedding failed on a chunk (the job stopped; the chunk is retried next time).
    pub error: Option<String>,
}

impl JobReport {
    /// Every missing text was embedded.
    pub fn complete(&self) -> bool {
        !self.superseded && self.error.is_none() && self.embedded == self.missing
    }
}

/// Embeds the texts of `tools` that `store` lacks, `chunk` at a time, with `embed`; before
/// each chunk asks `stop` (a newer snapshot supersedes this one), after each calls
/// `after_chunk` with the store and the running count (progress, checkpoints). Never panics: an error or a wrong number of vectors ends the
/// job with the error, keeping what was embedded before.
pub fn fill(
    store: &mut VectorStore,
    tools: &ToolTexts,
    chunk: usize,
    mut embed: impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, String>,
    stop: impl Fn() -> bool,
    mut after_chunk: impl FnMut(&VectorStore, usize),
) -> JobReport {
    // shortest texts first: each chunk's texts are alike in length, so a forward pass pads
    // little (the embedder sorts within a chunk only)
    let mut missing = tools.missing(store);
    missing.sort_by_key(|&i| tools.texts[i].len());
    let mut report = JobReport {
        missing: missing.len(),
        embedded: 0,
        superseded: false,
        error: None,
    };
    for part in missing.chunks(chunk.max(1)) {
        if stop() {
            report.superseded = true;
            break;
        }
        let texts: Vec<&str> = part.iter().map(|&i| tools.texts[i].as_str()).collect();
        match embed(&texts) {
            Ok(vectors) if vectors.len() == part.len() => {
                for (&i, v) in part.iter().zip(vectors) {
                    if !store.insert(tools.keys[i], v) {
                        report.error = Some("the model returned a vector of the wrong size".into());
                        return report;
                    }
                    report.embedded += 1;
                }
                after_chunk(store, report.embedded);
            }
            Ok(vectors) => {
                report.error = Some(format!("{} vectors for {} texts", vectors.len(), part.len()));
                break;
            }
            Err(e) => {
                report.error = Some(e);
                break;
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::types::Tool;
    use std::cell::Cell;
    use std::sync::Arc;

    fn tool(name: &str, description: &str) -> CatalogTool {
        let v = serde_json::json!({"name": name, "description": description, "inputSchema": {"type": "object"}});
        CatalogTool {
            tool: Arc::new(serde_json::from_value::<Tool>(v).unwrap()),
            source: "s".into(),
            upstream: "u".into(),
        }
    }

    /// A fake model: a unit vector from the text's length.
    fn fake(texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts
            .iter()
            .map(|t| {
                let a = t.len() as f32;
                let n = (a * a + 1.0).sqrt();
                vec![a / n, 1.0 / n]
            })
            .collect())
    }

    fn catalog() -> Vec<CatalogTool> {
        vec![
            tool("a", "Send mail."),
            tool("b", "Read mail."),
            tool("c", "Send mail."),
            tool("a2", "Send mail."),
        ]
    }

    #[test]
    fn only_missing_texts_are_embedded_and_each_once() {
        let tools = ToolTexts::of(&catalog());
        let mut store = VectorStore::new("m", 2);
        let calls = Cell::new(0);
        let r = fill(
            &mut store,
            &tools,
            2,
            |t| {
                calls.set(calls.get() + t.len());
                fake(t)
            },
            || false,
            |_, _| {},
        );
        assert_eq!(r.missing, 4, "four distinct texts (names differ)");
        assert!(r.complete());
        assert_eq!(calls.get(), 4);
        // the same catalog again: nothing to embed
        let r = fill(
            &mut store,
            &tools,
            2,
            |_| panic!("nothing is missing"),
            || false,
            |_, _| {},
        );
        assert_eq!((r.missing, r.embedded), (0, 0));
        // one description changed: only that tool
        let mut changed = catalog();
        changed[1] = tool("b", "Read all mail.");
        let tools = ToolTexts::of(&changed);
        assert_eq!(tools.missing(&store), vec![1]);
        let r = fill(&mut store, &tools, 2, fake, || false, |_, _| {});
        assert_eq!(r.embedded, 1);
        tools.retain_in(&mut store);
        assert_eq!(store.len(), 4, "the old text of b is dropped");
    }

    #[test]
    fn duplicate_texts_share_one_vector() {
        let tools = ToolTexts::of(&[tool("a", "x"), tool("a", "x")]);
        let store = VectorStore::new("m", 2);
        assert_eq!(tools.missing(&store), vec![0]);
    }

    #[test]
    fn vectors_are_aligned_with_the_tools() {
        let tools = ToolTexts::of(&catalog());
        let mut store = VectorStore::new("m", 2);
        // embed only the first chunk, then stop
        let asked = Cell::new(0);
        let r = fill(
            &mut store,
            &tools,
            1,
            fake,
            || {
                asked.set(asked.get() + 1);
                asked.get() > 2
            },
            |_, _| {},
        );
        assert!(r.superseded);
        assert_eq!(r.embedded, 2, "what was embedded before the stop is kept");
        let v = tools.vectors(&store);
        assert_eq!(v.len(), 4);
        assert_eq!(v.count(), 2);
        assert!(v.has(0) && v.has(1) && !v.has(2) && !v.has(3));
    }

    #[test]
    fn an_embedding_error_or_a_bad_answer_ends_the_job_without_a_panic() {
        let tools = ToolTexts::of(&catalog());
        let mut store = VectorStore::new("m", 2);
        let r = fill(&mut store, &tools, 2, |_| Err("boom".into()), || false, |_, _| {});
        assert_eq!(r.error.as_deref(), Some("boom"));
        assert!(!r.complete());
        let r = fill(&mut store, &tools, 2, |_| Ok(vec![vec![1.0, 0.0]]), || false, |_, _| {});
        assert!(r.error.is_some(), "one vector for two texts");
        let r = fill(
            &mut store,
            &tools,
            2,
            |t| Ok(vec![vec![1.0]; t.len()]),
            || false,
            |_, _| {},
        );
        assert!(r.error.is_some(), "vectors of the wrong size");
        assert!(store.is_empty());
    }

    #[test]
    fn progress_counts_embedded_texts() {
        let tools = ToolTexts::of(&catalog());
        let mut store = VectorStore::new("m", 2);
        let mut seen = Vec::new();
        fill(&mut store, &tools, 3, fake, || false, |_, n| seen.push(n));
        assert_eq!(seen, vec![3, 4]);
    }
}
