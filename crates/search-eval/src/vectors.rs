//! Vectors for the evaluation's semantic arm (and `search --embed-model`), kept between runs in a cache folder (one
//! store for tool texts, one for queries; see `embed::store`), so a change to the fusion is
//! measured in seconds once every visible set was embedded once.
//!
//! They can also come from outside ([`EvalEmbedder::external`]): another model's vectors of
//! the very texts this search embeds (written by `eval --export-texts`, embedded by any tool,
//! e.g. `scripts/embed-external.py` with sentence-transformers), so a candidate model is
//! measured through the same fusion before anyone teaches `embed` its architecture.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use embed::store::{text_key, VectorStore};
use embed::{Embedder, QueryDeltaChoice};
use tool_search::model::CatalogTool;
use tool_search::semantic::{embedding_text, Vectors};
pub use tool_search::semantic::{QUERY_MAX_TOKENS, TOOL_MAX_TOKENS};

pub struct EvalEmbedder {
    source: Source,
}

enum Source {
    /// The model in `embed`, its vectors cached (boxed: the model is large, the other variant
    /// small).
    Model(Box<Cached>),
    /// Vectors computed elsewhere, by text.
    External(ExternalVectors),
}

struct Cached {
    embedder: Embedder,
    /// The query vectors' file in `dir`: `queries.bin`, or `queries-<delta>.bin` with a query
    /// delta (so runs with and without one keep their own).
    queries_file: String,
    dir: PathBuf,
    tools: VectorStore,
    queries: VectorStore,
    /// Refuse to embed: every vector must come from the cache (tests in debug builds, where
    /// running the model would take hours).
    cache_only: bool,
}

impl EvalEmbedder {
    /// The model in `model` with the query delta the service would run with
    /// (`EMBED_QUERY_DELTA`, else the built-in one when it fits the model).
    pub fn open(model: &Path, cache: &Path) -> Result<Self, String> {
        Self::open_with(model, cache, &QueryDeltaChoice::from_env())
    }

    /// The model in `model` without a query delta (the base model's own vectors; the tool
    /// vectors are these whatever the delta).
    pub fn open_base(model: &Path, cache: &Path) -> Result<Self, String> {
        Self::open_with(model, cache, &QueryDeltaChoice::None)
    }

    /// The model in `model` with the query delta `delta` names.
    pub fn open_with(model: &Path, cache: &Path, delta: &QueryDeltaChoice) -> Result<Self, String> {
        Ok(Self {
            source: Source::Model(Box::new(Cached::open(model, cache, delta)?)),
        })
    }

    /// The digest of the model's files (`None` for external vectors).
    pub fn files_digest(&self) -> Option<&str> {
        match &self.source {
            Source::Model(c) => Some(c.embedder.files_digest()),
            Source::External(_) => None,
        }
    }

    /// The query delta's fingerprint, when the model runs with one.
    pub fn query_delta(&self) -> Option<&str> {
        match &self.source {
            Source::Model(c) => c.embedder.query_delta(),
            Source::External(_) => None,
        }
    }

    /// `text`'s token ids cut at `max_tokens` (the model's tokenizer; `None` for external
    /// vectors, which have none).
    pub fn token_ids(&self, text: &str, max_tokens: usize) -> Option<Vec<u32>> {
        match &self.source {
            Source::Model(c) => c.embedder.token_ids(&[text], max_tokens).ok()?.pop(),
            Source::External(_) => None,
        }
    }

    /// The tools' vectors as rows, in order (as [`Self::tool_vectors`]).
    pub fn tool_rows(&mut self, tools: &[CatalogTool]) -> Result<Vec<Vec<f32>>, String> {
        let texts: Vec<String> = tools.iter().map(embedding_text).collect();
        match &mut self.source {
            Source::Model(c) => {
                c.tool_vectors(tools)?;
                texts
                    .iter()
                    .map(|t| {
                        c.tools
                            .get(&text_key(t))
                            .map(<[f32]>::to_vec)
                            .ok_or_else(|| "a tool vector is missing from the cache".to_owned())
                    })
                    .collect()
            }
            Source::External(x) => {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                x.check(&refs, "tool")?;
                Ok(refs.iter().filter_map(|t| x.get(t).map(<[f32]>::to_vec)).collect())
            }
        }
    }

    /// [`Self::open`], but every vector must already be in `cache` (filled by
    /// `search-eval --all-visible --embed-model DIR` from a release build); a missing one is an
    /// error naming that command.
    pub fn open_cache_only(model: &Path, cache: &Path) -> Result<Self, String> {
        let mut c = Cached::open(model, cache, &QueryDeltaChoice::from_env())?;
        c.cache_only = true;
        Ok(Self {
            source: Source::Model(Box::new(c)),
        })
    }

    /// From now on every vector must come from the cache (see [`Self::open_cache_only`]).
    pub fn set_cache_only(&mut self) {
        if let Source::Model(c) = &mut self.source {
            c.cache_only = true;
        }
    }

    /// Vectors computed elsewhere, read from `dir` ([`ExternalVectors::load`]).
    pub fn external(dir: &Path) -> Result<Self, String> {
        Ok(Self {
            source: Source::External(ExternalVectors::load(dir)?),
        })
    }

    /// The tools' vectors: from the cache, embedding the ones not seen before, or from the
    /// external vectors (where a missing one is an error).
    pub fn tool_vectors(&mut self, tools: &[CatalogTool]) -> Result<Vectors, String> {
        match &mut self.source {
            Source::Model(c) => c.tool_vectors(tools),
            Source::External(x) => {
                let texts: Vec<String> = tools.iter().map(embedding_text).collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                x.check(&refs, "tool")?;
                Ok(Vectors::build(tools.len(), x.dim, |i| x.get(refs[i])))
            }
        }
    }

    /// Each query text's vector (as [`Self::tool_vectors`]).
    pub fn query_vectors(&mut self, texts: &[&str]) -> Result<HashMap<String, Vec<f32>>, String> {
        match &mut self.source {
            Source::Model(c) => c.query_vectors(texts),
            Source::External(x) => {
                x.check(texts, "query")?;
                Ok(texts
                    .iter()
                    .filter_map(|t| Some((t.to_string(), x.get(t)?.to_vec())))
                    .collect())
            }
        }
    }
}

/// The embedders of a run over several sets: one for every set, and one per set that
/// `--query-delta-for SET=FILE` gives its own query delta (a delta trained without that set's
/// requests: its figures are then held out).
pub struct SetEmbedders {
    default: EvalEmbedder,
    per_set: Vec<(String, EvalEmbedder)>,
}

impl SetEmbedders {
    /// The model with `default`'s delta, and one more per `SET=FILE` of `per_set`.
    pub fn open(model: &Path, cache: &Path, default: &QueryDeltaChoice, per_set: &[String]) -> Result<Self, String> {
        let mut own = Vec::new();
        for entry in per_set {
            let Some((set, file)) = entry.split_once('=') else {
                return Err(format!("--query-delta-for {entry}: expected SET=FILE"));
            };
            let e = EvalEmbedder::open_with(model, cache, &QueryDeltaChoice::File(PathBuf::from(file)))?;
            own.push((set.to_owned(), e));
        }
        Ok(Self {
            default: EvalEmbedder::open_with(model, cache, default)?,
            per_set: own,
        })
    }

    /// One embedder for every set.
    pub fn one(e: EvalEmbedder) -> Self {
        Self {
            default: e,
            per_set: Vec::new(),
        }
    }

    /// The query delta of the sets without one of their own.
    pub fn default_delta(&self) -> Option<&str> {
        self.default.query_delta()
    }

    /// The embedder of `set`.
    pub fn for_set(&mut self, set: &str) -> &mut EvalEmbedder {
        match self.per_set.iter().position(|(s, _)| s == set) {
            Some(i) => &mut self.per_set[i].1,
            None => &mut self.default,
        }
    }
}

impl Cached {
    fn open(model: &Path, cache: &Path, delta: &QueryDeltaChoice) -> Result<Self, String> {
        let embedder = Embedder::load_choosing(model, delta).map_err(|e| format!("{}: {e}", model.display()))?;
        let dim = embedder.dim();
        let (tools, _) = VectorStore::load(&cache.join("tools.bin"), &embedder.fingerprint(TOOL_MAX_TOKENS), dim);
        // query vectors come from the queries' own path (8-bit where the CPU has a VNNI unit,
        // with the query delta if any), cached under its own fingerprint, in a file of each
        // path's own (an f32 run does not overwrite the 8-bit vectors)
        let precision = match embedder.query_precision() {
            "f32" => "-f32",
            _ => "",
        };
        let queries_file = match embedder.query_delta() {
            Some(d) => format!("queries{precision}-{d}.bin"),
            None => format!("queries{precision}.bin"),
        };
        let (queries, _) = VectorStore::load(
            &cache.join(&queries_file),
            &embedder.query_fingerprint(QUERY_MAX_TOKENS),
            dim,
        );
        Ok(Self {
            embedder,
            queries_file,
            dir: cache.to_owned(),
            tools,
            queries,
            cache_only: false,
        })
    }

    /// The tools' vectors, embedding (and caching) the ones not seen before.
    fn tool_vectors(&mut self, tools: &[CatalogTool]) -> Result<Vectors, String> {
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
    fn query_vectors(&mut self, texts: &[&str]) -> Result<HashMap<String, Vec<f32>>, String> {
        self.check_cached(&self.queries, texts, "query")?;
        let embedder = &self.embedder;
        fill(
            |t| embedder.embed_queries_at(t, QUERY_MAX_TOKENS),
            &mut self.queries,
            texts,
            &self.dir.join(&self.queries_file),
            "queries",
        )?;
        Ok(texts
            .iter()
            .filter_map(|t| Some((t.to_string(), self.queries.get(&text_key(t))?.to_vec())))
            .collect())
    }
}

impl Cached {
    fn check_cached(&self, store: &VectorStore, texts: &[&str], what: &str) -> Result<(), String> {
        let missing = texts.iter().filter(|t| !store.contains(&text_key(t))).count();
        if self.cache_only && missing > 0 {
            return Err(format!(
                "{missing} {what} texts are not in the vector cache {}: fill it with a release build, `cargo run --release -p search-eval -- --all-visible --embed-model models/all-MiniLM-L6-v2 --vector-cache {}` (scripts/test.sh does)",
                self.dir.display(),
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

/// Another model's vectors, by the text they embed: `DIR/texts.jsonl` (one JSON string per
/// line) and `DIR/vectors.f32` (one row per line of `texts.jsonl`, little-endian `f32`s, every
/// row the same length). The texts are the ones `eval --export-texts` writes: a tool's
/// [`embedding_text`] and a query's [`tool_search::semantic::query_text`]. A text listed twice
/// (a query spelled like a tool's text) keeps its last row.
pub struct ExternalVectors {
    dim: usize,
    rows: HashMap<String, Vec<f32>>,
}

impl ExternalVectors {
    /// Reads and checks `dir`'s two files; each row is L2-normalised (the arm ranks by dot
    /// product). An all-zero or non-finite row, or a vector file whose length is not a whole
    /// number of rows, is an error naming the file.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let texts_path = dir.join(EXTERNAL_TEXTS);
        let vectors_path = dir.join(EXTERNAL_VECTORS);
        let texts = std::fs::read_to_string(&texts_path).map_err(|e| format!("{}: {e}", texts_path.display()))?;
        let texts: Vec<String> = texts
            .lines()
            .enumerate()
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{} line {}: {e}", texts_path.display(), i + 1)))
            .collect::<Result<_, _>>()?;
        let bytes = std::fs::read(&vectors_path).map_err(|e| format!("{}: {e}", vectors_path.display()))?;
        let floats = bytes.len() / 4;
        if texts.is_empty() || bytes.len() % 4 != 0 || floats % texts.len() != 0 || floats == 0 {
            return Err(format!(
                "{}: {} bytes are not {} rows of little-endian f32s (one per line of {})",
                vectors_path.display(),
                bytes.len(),
                texts.len(),
                texts_path.display()
            ));
        }
        let dim = floats / texts.len();
        let mut rows = HashMap::with_capacity(texts.len());
        for (i, (text, row)) in texts.into_iter().zip(bytes.chunks_exact(dim * 4)).enumerate() {
            let mut v: Vec<f32> = row
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
            if !norm.is_finite() || norm == 0.0 {
                return Err(format!(
                    "{}: row {} (of `{}`) is zero or not finite",
                    vectors_path.display(),
                    i + 1,
                    text.chars().take(60).collect::<String>()
                ));
            }
            for x in &mut v {
                *x = (f64::from(*x) / norm) as f32;
            }
            rows.insert(text, v);
        }
        Ok(Self { dim, rows })
    }

    fn get(&self, text: &str) -> Option<&[f32]> {
        self.rows.get(text).map(Vec::as_slice)
    }

    /// Every text has a vector, or an error saying how many lack one and how to make them.
    fn check(&self, texts: &[&str], what: &str) -> Result<(), String> {
        let missing = texts.iter().filter(|t| !self.rows.contains_key(**t)).count();
        if missing > 0 {
            return Err(format!(
                "{missing} of {} {what} texts have no external vector: embed the texts `search-eval --export-texts DIR` writes for the same sets (e.g. scripts/embed-external.py MODEL DIR)",
                texts.len()
            ));
        }
        Ok(())
    }
}

/// The texts of [`ExternalVectors`] and the vectors of its rows.
pub const EXTERNAL_TEXTS: &str = "texts.jsonl";
pub const EXTERNAL_VECTORS: &str = "vectors.f32";
/// What `eval --export-texts DIR` writes: the tool texts (embedded at
/// [`TOOL_MAX_TOKENS`]) and the query texts (at [`QUERY_MAX_TOKENS`]), one JSON string per
/// line, each once.
pub const EXPORTED_TOOLS: &str = "tools.jsonl";
pub const EXPORTED_QUERIES: &str = "queries.jsonl";

/// Texts to embed, collected over one or more sets, each kept once in first-seen order.
#[derive(Default)]
pub struct TextExport {
    tools: Vec<String>,
    queries: Vec<String>,
    seen: std::collections::HashSet<(bool, String)>,
}

impl TextExport {
    /// The embedding texts of a catalog's tools.
    pub fn add_tools(&mut self, tools: &[CatalogTool]) {
        for t in tools {
            let text = embedding_text(t);
            if self.seen.insert((true, text.clone())) {
                self.tools.push(text);
            }
        }
    }

    /// The semantic arm's texts of raw query texts.
    pub fn add_queries<'a>(&mut self, texts: impl IntoIterator<Item = &'a str>) {
        for t in texts {
            let text = tool_search::semantic::query_text(t);
            if self.seen.insert((false, text.clone())) {
                self.queries.push(text);
            }
        }
    }

    /// Writes [`EXPORTED_TOOLS`] and [`EXPORTED_QUERIES`] into `dir` (created if missing);
    /// returns how many texts of each.
    pub fn write(&self, dir: &Path) -> Result<(usize, usize), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, texts) in [(EXPORTED_TOOLS, &self.tools), (EXPORTED_QUERIES, &self.queries)] {
            let path = dir.join(name);
            let mut out = String::new();
            for t in texts {
                out.push_str(&serde_json::to_string(t).map_err(|e| e.to_string())?);
                out.push('\n');
            }
            std::fs::write(&path, out).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok((self.tools.len(), self.queries.len()))
    }
}
