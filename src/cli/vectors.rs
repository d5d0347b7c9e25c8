//! Vectors for the `eval` command's semantic arm, kept between runs in a cache folder (one
//! store for tool texts, one for queries; see `embed::store`), so a change to the fusion is
//! measured in seconds once every visible set was embedded once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use embed::store::{text_key, VectorStore};
use embed::Embedder;
use tool_search::model::CatalogTool;
use tool_search::semantic::{embedding_text, Vectors};
pub use tool_search::semantic::{QUERY_MAX_TOKENS, TOOL_MAX_TOKENS};

pub struct EvalEmbedder {
    embedder: Embedder,
    dir: PathBuf,
    tools: VectorStore,
    queries: VectorStore,
    /// Refuse to embed: every vector must come from the cache (tests in debug builds, where
    /// running the model would take hours).
    cache_only: bool,
}

impl EvalEmbedder {
    pub fn open(model: &Path, cache: &Path) -> Result<Self, String> {
        let embedder = Embedder::load(model).map_err(|e| format!("{}: {e}", model.display()))?;
        let dim = embedder.dim();
        let (tools, _) = VectorStore::load(&cache.join("tools.bin"), &embedder.fingerprint(TOOL_MAX_TOKENS), dim);
        // query vectors come from the queries' own path (8-bit where the CPU has a VNNI unit),
        // cached under its own fingerprint
        let (queries, _) = VectorStore::load(
            &cache.join("queries.bin"),
            &embedder.query_fingerprint(QUERY_MAX_TOKENS),
            dim,
        );
        Ok(Self {
            embedder,
            dir: cache.to_owned(),
            tools,
            queries,
            cache_only: false,
        })
    }

    /// [`Self::open`], but every vector must already be in `cache` (filled by
    /// `mcp-search-proxy eval --all-visible --embed-model DIR` from a release build); a
    /// missing one is an error naming that command.
    pub fn open_cache_only(model: &Path, cache: &Path) -> Result<Self, String> {
        let mut e = Self::open(model, cache)?;
        e.cache_only = true;
        Ok(e)
    }

    /// The tools' vectors, embedding (and caching) the ones not seen before.
    pub fn tool_vectors(&mut self, tools: &[CatalogTool]) -> Result<Vectors, String> {
        let texts: Vec<String> = tools.iter().map(embedding_text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.check_cached(&self.tools, &refs, "tool")?;
        let embedder = &self.embedder;
        fill(
            |t| embedder.embed_at(t, TOOL_MAX_TOKENS),
            &mut self.tools,
            &refs,
            &self.dir.join("tools.bin"),
            "tools",
        )?;
        let keys: Vec<_> = refs.iter().map(|t| text_key(t)).collect();
        Ok(Vectors::build(tools.len(), self.tools.dim(), |i| {
            self.tools.get(&keys[i])
        }))
    }

    /// Each query text's vector, embedding (and caching) the ones not seen before.
    pub fn query_vectors(&mut self, texts: &[&str]) -> Result<HashMap<String, Vec<f32>>, String> {
        self.check_cached(&self.queries, texts, "query")?;
        let embedder = &self.embedder;
        fill(
            |t| embedder.embed_queries_at(t, QUERY_MAX_TOKENS),
            &mut self.queries,
            texts,
            &self.dir.join("queries.bin"),
            "queries",
        )?;
        Ok(texts
            .iter()
            .filter_map(|t| Some((t.to_string(), self.queries.get(&text_key(t))?.to_vec())))
            .collect())
    }
}

impl EvalEmbedder {
    fn check_cached(&self, store: &VectorStore, texts: &[&str], what: &str) -> Result<(), String> {
        let missing = texts.iter().filter(|t| !store.contains(&text_key(t))).count();
        if self.cache_only && missing > 0 {
            return Err(format!(
                "{missing} {what} texts are not in the vector cache {}: fill it with a release build, `cargo run --release -- eval --all-visible --embed-model models/all-MiniLM-L6-v2` (scripts/test.sh does)",
                self.dir.display()
            ));
        }
        Ok(())
    }
}

/// Embeds what `store` lacks of `texts`, saving every 1,000 texts (an interrupted run keeps
/// its progress) and at the end.
fn fill(
    mut embed: impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, embed::EmbedError>,
    store: &mut VectorStore,
    texts: &[&str],
    path: &Path,
    what: &str,
) -> Result<(), String> {
    let started = std::time::Instant::now();
    let missing: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| !store.contains(&text_key(t)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut done = 0;
    for part in missing.chunks(1000) {
        store
            .fill_missing(&mut embed, part, 64, |_, _| {})
            .map_err(|e| e.to_string())?;
        store.save(path).map_err(|e| format!("{}: {e}", path.display()))?;
        done += part.len();
        eprintln!(
            "embedded {done} of {} {what} in {:.0} s",
            missing.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
