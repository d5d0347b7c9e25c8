//! Persisted embeddings: text key → vector, for one model.
//!
//! Embedding a catalog is the semantic arm's one large cost (minutes for ten thousand tools),
//! so vectors outlive the process: the service keeps them in a file beside its manifest, the
//! `eval` command in a cache folder. A vector is keyed by the SHA-256 of the exact text that
//! was embedded ([`text_key`]); a tool whose text did not change keeps its vector, one whose
//! text changed is embedded again, and nothing else decides.
//!
//! # File format
//!
//! ```text
//! "MCPVEC01"                      8 bytes, magic and version
//! header length                   u32, little-endian
//! header                          JSON: {"model": "<Embedder::fingerprint>", "dim": 384, "count": n}
//! n × (key, vector)               32-byte key, then dim × f32 little-endian
//! ```
//!
//! A file written for another model (or another dimension or truncation) is ignored whole:
//! vectors of different models are not comparable. Reading is bounded by the file's own
//! length (a header claiming more entries than the file holds is rejected), and a file that
//! is malformed in any way is reported and treated as empty: the vectors are a cache, and
//! losing them costs only time. Writing goes to a temporary file in the same folder that is
//! then renamed over the old one, so a crash leaves the old file or the new one, never half.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"MCPVEC01";
/// A header is a few dozen bytes; anything longer is not one of ours.
const MAX_HEADER: usize = 4096;
/// The widest embedding accepted from a file (the largest common sentence models have 1024).
pub const MAX_DIM: usize = 4096;

/// The key of an embedded text: SHA-256 of its UTF-8 bytes.
pub type Key = [u8; 32];

/// The key of `text`.
pub fn text_key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    model: String,
    dim: usize,
    count: usize,
}

/// Vectors of one model, by text key.
#[derive(Debug, Clone, Default)]
pub struct VectorStore {
    model: String,
    dim: usize,
    vectors: HashMap<Key, Box<[f32]>>,
}

/// Why a file's vectors were not used (the store starts empty instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadNote {
    /// No file yet.
    Missing,
    /// The file holds another model's vectors.
    OtherModel { found: String },
    /// The file could not be read or is malformed.
    Unreadable(String),
}

impl std::fmt::Display for LoadNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => write!(f, "no vector file yet"),
            Self::OtherModel { found } => write!(f, "the vector file is for another model ({found})"),
            Self::Unreadable(e) => write!(f, "the vector file is unreadable: {e}"),
        }
    }
}

impl VectorStore {
    /// An empty store for `model`'s vectors of `dim` numbers.
    pub fn new(model: impl Into<String>, dim: usize) -> Self {
        Self {
            model: model.into(),
            dim,
            vectors: HashMap::new(),
        }
    }

    /// The store persisted at `path` when it holds `model`'s vectors of `dim` numbers;
    /// otherwise an empty one and why.
    pub fn load(path: &Path, model: &str, dim: usize) -> (Self, Option<LoadNote>) {
        let empty = Self::new(model, dim);
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (empty, Some(LoadNote::Missing)),
            Err(e) => return (empty, Some(LoadNote::Unreadable(e.to_string()))),
        };
        match Self::decode(&bytes, model, dim) {
            Ok(store) => (store, None),
            Err(note) => (empty, Some(note)),
        }
    }

    /// Parses a file's bytes (see the module docs for the format).
    pub fn decode(bytes: &[u8], model: &str, dim: usize) -> Result<Self, LoadNote> {
        let bad = |m: &str| LoadNote::Unreadable(m.to_owned());
        let rest = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or_else(|| bad("not a vector file"))?;
        let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(|| bad("truncated header"))?;
        let len = u32::from_le_bytes(*len) as usize;
        if len > MAX_HEADER || len > rest.len() {
            return Err(bad("header length out of range"));
        }
        let (header, body) = rest.split_at(len);
        let header: Header = serde_json::from_slice(header).map_err(|e| bad(&format!("header: {e}")))?;
        if header.model != model || header.dim != dim {
            return Err(LoadNote::OtherModel {
                found: format!("{} with {} dimensions", header.model, header.dim),
            });
        }
        if dim == 0 || dim > MAX_DIM {
            return Err(bad("dimension out of range"));
        }
        let entry = 32 + 4 * dim;
        if header.count.checked_mul(entry) != Some(body.len()) {
            return Err(bad("length does not match the header's count"));
        }
        let mut vectors = HashMap::with_capacity(header.count);
        for chunk in body.chunks_exact(entry) {
            let (key, values) = chunk.split_at(32);
            let key: Key = key.try_into().map_err(|_| bad("key"))?;
            let v: Box<[f32]> = values
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(bad("a vector holds a non-finite number"));
            }
            vectors.insert(key, v);
        }
        Ok(Self {
            model: model.to_owned(),
            dim,
            vectors,
        })
    }

    /// The file's bytes (see the module docs), entries in key order (same store, same bytes).
    pub fn encode(&self) -> Vec<u8> {
        let header = serde_json::to_vec(&Header {
            model: self.model.clone(),
            dim: self.dim,
            count: self.vectors.len(),
        })
        .unwrap_or_default();
        let mut keys: Vec<&Key> = self.vectors.keys().collect();
        keys.sort_unstable();
        let mut out = Vec::with_capacity(12 + header.len() + keys.len() * (32 + 4 * self.dim));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        for k in keys {
            out.extend_from_slice(k);
            for x in self.vectors[k].iter() {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    /// Writes the store to `path` atomically (a temporary file in the same folder, renamed).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&self.encode())?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    pub fn get(&self, key: &Key) -> Option<&[f32]> {
        self.vectors.get(key).map(|v| &v[..])
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.vectors.contains_key(key)
    }

    /// Adds (or replaces) a vector; one of another length is refused (`false`).
    pub fn insert(&mut self, key: Key, vector: Vec<f32>) -> bool {
        if vector.len() != self.dim || vector.iter().any(|x| !x.is_finite()) {
            return false;
        }
        self.vectors.insert(key, vector.into_boxed_slice());
        true
    }

    /// Embeds with `embed` (`|texts| embedder.embed_at(texts, max_tokens)` for tools,
    /// `embed_queries_at` for queries) the texts of `texts` that have no vector yet, in chunks
    /// of `chunk`, calling `progress(done, missing)` after each; returns how many were
    /// embedded. Stops at the first error (what was embedded before it is kept).
    pub fn fill_missing(
        &mut self,
        mut embed: impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, crate::EmbedError>,
        texts: &[&str],
        chunk: usize,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<usize, crate::EmbedError> {
        let mut seen = std::collections::HashSet::new();
        let missing: Vec<(Key, &str)> = texts
            .iter()
            .map(|t| (text_key(t), *t))
            .filter(|(k, _)| !self.contains(k) && seen.insert(*k))
            .collect();
        let mut done = 0;
        for part in missing.chunks(chunk.max(1)) {
            let batch: Vec<&str> = part.iter().map(|(_, t)| *t).collect();
            let vectors = embed(&batch)?;
            for ((k, _), v) in part.iter().zip(vectors) {
                self.insert(*k, v);
            }
            done += part.len();
            progress(done, missing.len());
        }
        Ok(done)
    }

    /// Keeps only the vectors whose key `keep` accepts (the tools still in the catalog).
    pub fn retain(&mut self, mut keep: impl FnMut(&Key) -> bool) {
        self.vectors.retain(|k, _| keep(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> VectorStore {
        let mut s = VectorStore::new("m1", 3);
        assert!(s.insert(text_key("a"), vec![1.0, 0.0, 0.0]));
        assert!(s.insert(text_key("b"), vec![0.0, 0.6, 0.8]));
        s
    }

    #[test]
    fn round_trips_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/vectors.bin");
        store().save(&path).unwrap();
        let (back, note) = VectorStore::load(&path, "m1", 3);
        assert_eq!(note, None);
        assert_eq!(back.len(), 2);
        assert_eq!(back.get(&text_key("b")), Some(&[0.0, 0.6, 0.8][..]));
        assert_eq!(back.encode(), store().encode(), "same store, same bytes");
    }

    #[test]
    fn another_model_or_dimension_is_ignored_whole() {
        let bytes = store().encode();
        assert!(matches!(
            VectorStore::decode(&bytes, "m2", 3),
            Err(LoadNote::OtherModel { .. })
        ));
        assert!(matches!(
            VectorStore::decode(&bytes, "m1", 4),
            Err(LoadNote::OtherModel { .. })
        ));
    }

    #[test]
    fn malformed_files_are_reported_not_trusted() {
        let good = store().encode();
        // every truncation, and a few corruptions, are refused without a panic
        for cut in 0..good.len() {
            assert!(VectorStore::decode(&good[..cut], "m1", 3).is_err(), "cut at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(VectorStore::decode(&extra, "m1", 3).is_err());
        // a header claiming a huge count is refused by the length check, not allocated
        let header = br#"{"model":"m1","dim":3,"count":18446744073709551615}"#;
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&(header.len() as u32).to_le_bytes());
        huge.extend_from_slice(header);
        assert!(VectorStore::decode(&huge, "m1", 3).is_err());
        // a NaN inside a vector
        let mut nan = good.clone();
        let at = nan.len() - 4;
        nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(VectorStore::decode(&nan, "m1", 3).is_err());
    }

    #[test]
    fn a_missing_file_is_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let (s, note) = VectorStore::load(&dir.path().join("none.bin"), "m1", 3);
        assert!(s.is_empty());
        assert_eq!(note, Some(LoadNote::Missing));
    }

    #[test]
    fn vectors_of_the_wrong_length_or_not_finite_are_refused() {
        let mut s = VectorStore::new("m1", 3);
        assert!(!s.insert(text_key("x"), vec![1.0, 0.0]));
        assert!(!s.insert(text_key("x"), vec![f32::INFINITY, 0.0, 0.0]));
        assert!(s.is_empty());
    }

    #[test]
    fn retain_drops_what_the_catalog_no_longer_has() {
        let mut s = store();
        let keep = text_key("a");
        s.retain(|k| *k == keep);
        assert_eq!(s.len(), 1);
        assert!(s.contains(&keep));
    }
}
