//! A query delta: low-rank (LoRA) changes to the linear layers of the *query* encoder, learned
//! by `search-eval train-encoder` so that a request's vector lands nearer the tools that serve
//! it. The tools' encoder is never changed: every tool vector (and every persisted vector
//! store) stays valid, and a catalog is never re-embedded for a delta.
//!
//! For a base matrix `W` (outer × inner) a delta holds `A` (rank × inner) and `B` (outer ×
//! rank); the query encoder runs on `W + scale · B·A`, merged once when the model loads
//! ([`QueryDelta::merge_into`]), so a query costs what it cost without one (the 8-bit path
//! quantizes the merged matrix).
//!
//! # The file
//!
//! A safetensors file (the format the model itself comes in; read with the `safetensors`
//! crate, which checks every offset and length against the header before a byte is used):
//!
//! - tensors `<base weight name>.lora_a` (rank × inner) and `<base weight name>.lora_b`
//!   (outer × rank), f32 or f16, for base names of the linear layers of a BERT encoder layer
//!   (`encoder.layer.N.attention.self.{query,key,value}.weight`,
//!   `encoder.layer.N.attention.output.dense.weight`, `encoder.layer.N.intermediate.dense.weight`,
//!   `encoder.layer.N.output.dense.weight`);
//! - metadata: `format` ([`FORMAT`]), `rank`, `scale`, `base` (the digest of the model files
//!   it was trained on: [`crate::Embedder::files_digest`]) and `provenance` (a JSON object:
//!   the command, data, seed and held-out figures that made it).
//!
//! A file is refused (with the reason) when it is larger than [`MAX_DELTA_BYTES`], is not
//! safetensors, lacks a field, names another layer, has a pair without its other half, a shape
//! that does not fit, a rank over [`MAX_RANK`], or a value that is not finite.
//!
//! Its fingerprint ([`QueryDelta::fingerprint`]) is the file's SHA-256: it marks the query
//! vectors' fingerprint, `/readyz` and the log line of the loaded model.

use std::collections::{BTreeMap, HashMap};

use candle_core::{DType, Device, Tensor};
use half::f16;
use sha2::{Digest, Sha256};

/// The `format` of a delta file's metadata.
pub const FORMAT: &str = "mcp-search-proxy query delta v1";

/// The largest delta file accepted (a rank-16 delta of every linear layer of MiniLM is ~2.4 MB
/// in f32).
pub const MAX_DELTA_BYTES: usize = 16 << 20;

/// The highest rank accepted.
pub const MAX_RANK: usize = 256;

/// The linear layers of one encoder layer a delta may change, by their base weight names'
/// part after `encoder.layer.N.`.
pub const LINEAR_PARTS: [&str; 6] = [
    "attention.self.query.weight",
    "attention.self.key.weight",
    "attention.self.value.weight",
    "attention.output.dense.weight",
    "intermediate.dense.weight",
    "output.dense.weight",
];

/// One low-rank pair: the change to a base matrix (outer × inner) is `scale · B·A`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoraPair {
    /// rank × inner, row-major.
    pub a: Vec<f32>,
    /// outer × rank, row-major.
    pub b: Vec<f32>,
    pub outer: usize,
    pub inner: usize,
}

impl LoraPair {
    /// `scale · B·A` (outer × inner, row-major).
    pub fn product(&self, rank: usize, scale: f32) -> Vec<f32> {
        let mut out = vec![0f32; self.outer * self.inner];
        for o in 0..self.outer {
            let row = &mut out[o * self.inner..(o + 1) * self.inner];
            for r in 0..rank {
                let w = scale * self.b[o * rank + r];
                if w == 0.0 {
                    continue;
                }
                for (x, a) in row.iter_mut().zip(&self.a[r * self.inner..(r + 1) * self.inner]) {
                    *x += w * a;
                }
            }
        }
        out
    }
}

/// A query delta (see the module docs).
#[derive(Clone, Debug)]
pub struct QueryDelta {
    pub rank: usize,
    pub scale: f32,
    /// The digest of the model files the delta was trained on.
    pub base: String,
    /// What made it: a JSON object (command, data, seed, held-out figures).
    pub provenance: serde_json::Value,
    /// Base weight name → its pair, in name order.
    pub pairs: BTreeMap<String, LoraPair>,
    /// SHA-256 of the file it was read from (hex, first 8 bytes); empty until written or read.
    fingerprint: String,
}

/// Why a delta was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaError {
    /// The file is not a delta this crate reads, or does not fit the model's tensors.
    Refused(String),
    /// The delta was trained on another model (another files digest).
    OtherModel { trained_on: String, model: String },
}

impl DeltaError {
    pub(crate) fn other_model(trained_on: &str, model: &str) -> Self {
        Self::OtherModel {
            trained_on: trained_on.to_owned(),
            model: model.to_owned(),
        }
    }

    /// Whether the delta was refused only for being another model's.
    pub fn is_other_model(&self) -> bool {
        matches!(self, Self::OtherModel { .. })
    }
}

impl std::fmt::Display for DeltaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(why) => write!(f, "query delta: {why}"),
            Self::OtherModel { trained_on, model } => write!(
                f,
                "query delta was trained on the model {trained_on}, not on this one ({model})"
            ),
        }
    }
}

impl std::error::Error for DeltaError {}

/// A delta file's metadata, checked.
struct Header {
    rank: usize,
    scale: f32,
    base: String,
    provenance: serde_json::Value,
}

impl Header {
    fn read(bytes: &[u8]) -> Result<Self, DeltaError> {
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes)
            .map_err(|e| DeltaError::Refused(format!("not a safetensors file: {e}")))?;
        let meta = header.metadata().clone().unwrap_or_default();
        let field = |name: &str| {
            meta.get(name)
                .map(String::as_str)
                .ok_or_else(|| DeltaError::Refused(format!("metadata field `{name}` is missing")))
        };
        if field("format")? != FORMAT {
            return refuse(format!("format `{}`, expected `{FORMAT}`", field("format")?));
        }
        let rank: usize = field("rank")?
            .parse()
            .map_err(|_| DeltaError::Refused("metadata `rank` is not a whole number".into()))?;
        if rank == 0 || rank > MAX_RANK {
            return refuse(format!("rank {rank} is outside 1..={MAX_RANK}"));
        }
        let scale: f32 = field("scale")?
            .parse()
            .map_err(|_| DeltaError::Refused("metadata `scale` is not a number".into()))?;
        if !scale.is_finite() {
            return refuse("metadata `scale` is not finite");
        }
        let base = field("base")?.to_owned();
        if base.is_empty() || base.len() > 128 || !base.bytes().all(|b| b.is_ascii_hexdigit()) {
            return refuse("metadata `base` is not a model digest");
        }
        let provenance: serde_json::Value = serde_json::from_str(field("provenance")?)
            .map_err(|e| DeltaError::Refused(format!("metadata `provenance` is not JSON: {e}")))?;
        Ok(Self {
            rank,
            scale,
            base,
            provenance,
        })
    }
}

/// One tensor of a delta file: the base weight it changes, whether it is the pair's `A`, and
/// its values (checked: a matrix, f32 or f16, finite).
fn read_half<'a>(
    name: &'a str,
    view: &safetensors::tensor::TensorView<'_>,
) -> Result<(&'a str, bool, Vec<f32>), DeltaError> {
    let (base_name, is_a) = if let Some(b) = name.strip_suffix(".lora_a") {
        (b, true)
    } else if let Some(b) = name.strip_suffix(".lora_b") {
        (b, false)
    } else {
        return refuse(format!("tensor `{name}` is neither a `.lora_a` nor a `.lora_b`"));
    };
    if !is_linear_weight(base_name) {
        return refuse(format!("tensor `{name}` names no linear layer of an encoder layer"));
    }
    let values: Vec<f32> = match view.dtype() {
        safetensors::Dtype::F32 => view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        safetensors::Dtype::F16 => view
            .data()
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        other => return refuse(format!("tensor `{name}` is {other:?}; f32 or f16 expected")),
    };
    if values.iter().any(|v| !v.is_finite()) {
        return refuse(format!("tensor `{name}` holds a value that is not finite"));
    }
    if view.shape().len() != 2 {
        return refuse(format!("tensor `{name}` is not a matrix"));
    }
    Ok((base_name, is_a, values))
}

fn refuse<T>(message: impl Into<String>) -> Result<T, DeltaError> {
    Err(DeltaError::Refused(message.into()))
}

/// The delta the service runs with unless told otherwise: `crates/embed/query-delta.safetensors`
/// (its provenance says how it was made), built into the binary.
const BUILTIN: &[u8] = include_bytes!("../query-delta.safetensors");

/// The built-in delta.
pub fn builtin() -> Result<QueryDelta, DeltaError> {
    QueryDelta::from_bytes(BUILTIN)
}

/// Reads a delta file.
pub fn read(path: &std::path::Path) -> Result<QueryDelta, crate::EmbedError> {
    let bytes = std::fs::read(path).map_err(|source| crate::EmbedError::Io {
        path: path.to_owned(),
        source,
    })?;
    QueryDelta::from_bytes(&bytes).map_err(|e| {
        crate::EmbedError::Delta(DeltaError::Refused(format!(
            "{}: {}",
            path.display(),
            e.to_string().trim_start_matches("query delta: ")
        )))
    })
}

/// Which query delta a model loads with ([`crate::Embedder::load_choosing`]).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum QueryDeltaChoice {
    /// The built-in one, when it was trained on the model loaded (else none).
    #[default]
    Builtin,
    /// None: the model's own query encoder.
    None,
    /// The delta in this file (it must fit the model).
    File(std::path::PathBuf),
}

impl QueryDeltaChoice {
    /// The environment variable that chooses: unset or `builtin`, `none`, or a file's path.
    pub const VARIABLE: &'static str = "EMBED_QUERY_DELTA";

    /// The choice `EMBED_QUERY_DELTA` makes.
    pub fn from_env() -> Self {
        std::env::var(Self::VARIABLE)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    }
}

impl std::str::FromStr for QueryDeltaChoice {
    type Err = std::convert::Infallible;

    /// `builtin` (or empty), `none` (or `off`), else a file's path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "" | "builtin" => Self::Builtin,
            "none" | "off" => Self::None,
            path => Self::File(std::path::PathBuf::from(path)),
        })
    }
}

/// Whether `name` is a linear layer's base weight a delta may change: `encoder.layer.N.` and
/// one of [`LINEAR_PARTS`] (with or without a `bert.` prefix, as the model's own names).
pub fn is_linear_weight(name: &str) -> bool {
    let name = name.strip_prefix("bert.").unwrap_or(name);
    let Some(rest) = name.strip_prefix("encoder.layer.") else {
        return false;
    };
    let Some((layer, part)) = rest.split_once('.') else {
        return false;
    };
    !layer.is_empty() && layer.bytes().all(|b| b.is_ascii_digit()) && layer.len() <= 3 && LINEAR_PARTS.contains(&part)
}

fn fingerprint_of(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..8].iter().map(|b| format!("{b:02x}")).collect()
}

impl QueryDelta {
    /// A delta of no pairs (changes nothing) for the model whose files digest is `base`.
    pub fn new(rank: usize, scale: f32, base: impl Into<String>) -> Self {
        Self {
            rank,
            scale,
            base: base.into(),
            provenance: serde_json::Value::Object(Default::default()),
            pairs: BTreeMap::new(),
            fingerprint: String::new(),
        }
    }

    /// The file's SHA-256 (hex, first 8 bytes): the delta's name in fingerprints, logs and
    /// `/readyz`. Empty for a delta neither read nor written.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// How many numbers the delta holds.
    pub fn parameters(&self) -> usize {
        self.pairs.values().map(|p| p.a.len() + p.b.len()).sum()
    }

    /// Reads and checks a delta file's bytes (see the module docs for what is refused).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DeltaError> {
        if bytes.len() > MAX_DELTA_BYTES {
            return refuse(format!(
                "{} bytes, more than the {MAX_DELTA_BYTES} accepted",
                bytes.len()
            ));
        }
        let file = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| DeltaError::Refused(format!("not a safetensors file: {e}")))?;
        let Header {
            rank,
            scale,
            base,
            provenance,
        } = Header::read(bytes)?;

        // base name → (A, B), each its values and shape
        type Half = Option<(Vec<f32>, Vec<usize>)>;
        let mut halves: HashMap<String, (Half, Half)> = HashMap::new();
        for (name, view) in file.tensors() {
            let (base_name, is_a, values) = read_half(&name, &view)?;
            let entry = halves.entry(base_name.to_owned()).or_default();
            let slot = if is_a { &mut entry.0 } else { &mut entry.1 };
            *slot = Some((values, view.shape().to_vec()));
        }
        let mut pairs = BTreeMap::new();
        for (name, halves) in halves {
            let (Some((a, a_shape)), Some((b, b_shape))) = halves else {
                return refuse(format!("`{name}` has only one of its two tensors"));
            };
            let (a_rank, inner) = (a_shape[0], a_shape[1]);
            let (outer, b_rank) = (b_shape[0], b_shape[1]);
            if a_rank != rank || b_rank != rank || inner == 0 || outer == 0 {
                return refuse(format!(
                    "`{name}`: shapes {a_shape:?} and {b_shape:?} do not fit rank {rank}"
                ));
            }
            pairs.insert(name, LoraPair { a, b, outer, inner });
        }
        if pairs.is_empty() {
            return refuse("no low-rank pair");
        }
        Ok(Self {
            rank,
            scale,
            base,
            provenance,
            pairs,
            fingerprint: fingerprint_of(bytes),
        })
    }

    /// The delta as a file (f32 tensors); the fingerprint becomes that file's.
    pub fn to_bytes(&mut self) -> Result<Vec<u8>, DeltaError> {
        let mut data: Vec<(String, Vec<u8>, Vec<usize>)> = Vec::new();
        for (name, p) in &self.pairs {
            if p.a.len() != self.rank * p.inner || p.b.len() != p.outer * self.rank {
                return refuse(format!("`{name}`: the pair's lengths do not fit rank {}", self.rank));
            }
            let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
            data.push((format!("{name}.lora_a"), bytes(&p.a), vec![self.rank, p.inner]));
            data.push((format!("{name}.lora_b"), bytes(&p.b), vec![p.outer, self.rank]));
        }
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = data
            .iter()
            .map(|(n, bytes, shape)| {
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
                    .map(|v| (n.clone(), v))
                    .map_err(|e| DeltaError::Refused(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let meta: HashMap<String, String> = [
            ("format", FORMAT.to_owned()),
            ("rank", self.rank.to_string()),
            ("scale", self.scale.to_string()),
            ("base", self.base.clone()),
            ("provenance", self.provenance.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let bytes = safetensors::serialize(views, Some(meta)).map_err(|e| DeltaError::Refused(e.to_string()))?;
        self.fingerprint = fingerprint_of(&bytes);
        Ok(bytes)
    }

    /// Changes the base weights in `tensors` (the model's tensors, by name, with or without a
    /// `bert.` prefix) to `W + scale · B·A`, each in the dtype it had. Every pair must name a
    /// tensor of `tensors` of its shape.
    pub fn merge_into(&self, tensors: &mut HashMap<String, Tensor>) -> Result<(), DeltaError> {
        for (name, pair) in &self.pairs {
            let key = if tensors.contains_key(name) {
                name.clone()
            } else {
                format!("bert.{name}")
            };
            let Some(w) = tensors.get(&key) else {
                return refuse(format!("the model has no tensor `{name}`"));
            };
            let dims = w.dims().to_vec();
            if dims != [pair.outer, pair.inner] {
                return refuse(format!(
                    "`{name}` is {dims:?} in the model, {}×{} in the delta",
                    pair.outer, pair.inner
                ));
            }
            let dtype = w.dtype();
            let merged = (|| {
                let change = Tensor::from_vec(
                    pair.product(self.rank, self.scale),
                    (pair.outer, pair.inner),
                    &Device::Cpu,
                )?;
                (w.to_dtype(DType::F32)? + change)?.to_dtype(dtype)
            })()
            .map_err(|e: candle_core::Error| DeltaError::Refused(format!("merging `{name}`: {e}")))?;
            tensors.insert(key, merged);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(outer: usize, inner: usize, rank: usize, seed: f32) -> LoraPair {
        LoraPair {
            a: (0..rank * inner)
                .map(|i| (i as f32 * 0.37 + seed).sin() * 0.1)
                .collect(),
            b: (0..outer * rank)
                .map(|i| (i as f32 * 0.11 - seed).cos() * 0.1)
                .collect(),
            outer,
            inner,
        }
    }

    fn sample() -> QueryDelta {
        let mut d = QueryDelta::new(2, 0.5, "00ff");
        d.provenance = serde_json::json!({"command": "search-eval train-encoder", "seed": 7});
        d.pairs
            .insert("encoder.layer.0.attention.self.query.weight".into(), pair(4, 3, 2, 1.0));
        d.pairs
            .insert("encoder.layer.1.output.dense.weight".into(), pair(3, 5, 2, 2.0));
        d
    }

    #[test]
    fn the_built_in_delta_is_small_and_says_how_it_was_made() {
        assert!(BUILTIN.len() <= 8 << 20, "the shipped delta is at most 8 MB");
        let d = builtin().expect("the shipped delta parses");
        assert_eq!(d.rank, 8);
        // every linear layer of all six encoder layers: a query costs what it cost without it
        assert_eq!(d.pairs.len(), 6 * LINEAR_PARTS.len());
        let p = &d.provenance;
        let command = p["command"].as_str().unwrap();
        assert!(command.starts_with("search-eval train-encoder "), "{command}");
        assert!(
            !command.contains("/work/"),
            "the command names paths relative to the repository"
        );
        assert!(p["seed"].is_u64());
        // trained only on what may train it; the others only judged
        let held: Vec<&str> = p["held_out"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        for judge in ["mcp_flow-dev", "mcptoolbench", "toollens"] {
            assert!(held.contains(&judge), "{judge} is held out");
        }
        for set in ["demo-dev", "deployment-dev", "metatool-dev", "mcp_flow-dev", "toollens"] {
            assert!(p["visible"][set]["r5"].is_f64(), "{set}'s figures are recorded");
        }
    }

    #[test]
    fn a_delta_round_trips_through_its_file() {
        let mut d = sample();
        let bytes = d.to_bytes().unwrap();
        let back = QueryDelta::from_bytes(&bytes).unwrap();
        assert_eq!(back.rank, 2);
        assert_eq!(back.scale, 0.5);
        assert_eq!(back.base, "00ff");
        assert_eq!(back.provenance, d.provenance);
        assert_eq!(back.pairs, d.pairs);
        assert_eq!(back.fingerprint(), d.fingerprint());
        assert_eq!(back.fingerprint().len(), 16);
        assert_eq!(back.parameters(), 2 * 3 + 4 * 2 + 2 * 5 + 3 * 2);
    }

    /// The file of `d` after `edit` changed its metadata or tensors.
    fn file_with(
        edit: impl FnOnce(&mut HashMap<String, String>, &mut Vec<(String, Vec<u8>, Vec<usize>, safetensors::Dtype)>),
    ) -> Vec<u8> {
        let d = sample();
        let mut meta: HashMap<String, String> = [
            ("format", FORMAT.to_owned()),
            ("rank", "2".to_owned()),
            ("scale", "0.5".to_owned()),
            ("base", "00ff".to_owned()),
            ("provenance", "{}".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut tensors = Vec::new();
        for (name, p) in &d.pairs {
            tensors.push((
                format!("{name}.lora_a"),
                f32s(&p.a),
                vec![2, p.inner],
                safetensors::Dtype::F32,
            ));
            tensors.push((
                format!("{name}.lora_b"),
                f32s(&p.b),
                vec![p.outer, 2],
                safetensors::Dtype::F32,
            ));
        }
        edit(&mut meta, &mut tensors);
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
            .iter()
            .map(|(n, b, s, t)| {
                (
                    n.clone(),
                    safetensors::tensor::TensorView::new(*t, s.clone(), b).unwrap(),
                )
            })
            .collect();
        safetensors::serialize(views, Some(meta)).unwrap()
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let refused = |bytes: &[u8], why: &str| {
            let e = QueryDelta::from_bytes(bytes).unwrap_err().to_string();
            assert!(e.contains(why), "{e:?} should say {why:?}");
        };
        assert!(QueryDelta::from_bytes(&file_with(|_, _| {})).is_ok());
        refused(b"not a file", "not a safetensors file");
        refused(&vec![0u8; MAX_DELTA_BYTES + 1], "more than");
        refused(&file_with(|m, _| drop(m.remove("base"))), "`base` is missing");
        refused(
            &file_with(|m, _| drop(m.insert("format".into(), "other".into()))),
            "format `other`",
        );
        refused(&file_with(|m, _| drop(m.insert("rank".into(), "0".into()))), "rank 0");
        refused(
            &file_with(|m, _| drop(m.insert("rank".into(), "3".into()))),
            "do not fit rank 3",
        );
        refused(
            &file_with(|m, _| drop(m.insert("scale".into(), "inf".into()))),
            "not finite",
        );
        refused(
            &file_with(|m, _| drop(m.insert("base".into(), "not hex".into()))),
            "not a model digest",
        );
        refused(
            &file_with(|m, _| drop(m.insert("provenance".into(), "{".into()))),
            "not JSON",
        );
        refused(
            &file_with(|_, t| t[0].0 = "encoder.layer.0.attention.self.query.weight.other".into()),
            "neither",
        );
        refused(
            &file_with(|_, t| {
                t[0].0 = "embeddings.word_embeddings.weight.lora_a".into();
            }),
            "names no linear layer",
        );
        refused(&file_with(|_, t| drop(t.remove(1))), "only one of its two");
        refused(
            &file_with(|_, t| {
                t[0].1[0..4].copy_from_slice(&f32::NAN.to_le_bytes());
            }),
            "not finite",
        );
        refused(&file_with(|_, t| t.clear()), "no low-rank pair");
        refused(
            &file_with(|_, t| {
                t[0].3 = safetensors::Dtype::I32;
            }),
            "f32 or f16 expected",
        );
    }

    #[test]
    fn merged_weights_equal_base_plus_the_scaled_product() {
        let d = sample();
        let mut tensors = HashMap::new();
        let base_q: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let base_o: Vec<f32> = (0..15).map(|i| -(i as f32)).collect();
        tensors.insert(
            "bert.encoder.layer.0.attention.self.query.weight".to_owned(),
            Tensor::from_vec(base_q.clone(), (4, 3), &Device::Cpu).unwrap(),
        );
        tensors.insert(
            "encoder.layer.1.output.dense.weight".to_owned(),
            Tensor::from_vec(base_o.clone(), (3, 5), &Device::Cpu)
                .unwrap()
                .to_dtype(DType::F16)
                .unwrap(),
        );
        d.merge_into(&mut tensors).unwrap();
        let q = &d.pairs["encoder.layer.0.attention.self.query.weight"];
        let merged: Vec<f32> = tensors["bert.encoder.layer.0.attention.self.query.weight"]
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        // by hand: W[o][i] + scale Σ_r B[o][r] A[r][i]
        for o in 0..4 {
            for i in 0..3 {
                let change: f32 = (0..2).map(|r| q.b[o * 2 + r] * q.a[r * 3 + i]).sum::<f32>() * 0.5;
                assert!((merged[o * 3 + i] - (base_q[o * 3 + i] + change)).abs() < 1e-6);
            }
        }
        let o = &tensors["encoder.layer.1.output.dense.weight"];
        assert_eq!(o.dtype(), DType::F16, "a merged weight keeps its dtype");
        let expected: Vec<f32> = base_o
            .iter()
            .zip(d.pairs["encoder.layer.1.output.dense.weight"].product(2, 0.5))
            .map(|(w, c)| f16::from_f32(w + c).to_f32())
            .collect();
        assert_eq!(
            o.to_dtype(DType::F32)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap(),
            expected
        );

        let mut missing = HashMap::new();
        assert!(d
            .merge_into(&mut missing)
            .unwrap_err()
            .to_string()
            .contains("has no tensor"));
        let mut wrong = HashMap::new();
        wrong.insert(
            "encoder.layer.0.attention.self.query.weight".to_owned(),
            Tensor::zeros((3, 4), DType::F32, &Device::Cpu).unwrap(),
        );
        wrong.insert(
            "encoder.layer.1.output.dense.weight".to_owned(),
            Tensor::zeros((3, 5), DType::F32, &Device::Cpu).unwrap(),
        );
        assert!(d
            .merge_into(&mut wrong)
            .unwrap_err()
            .to_string()
            .contains("in the model"));
    }

    #[test]
    fn only_the_linear_layers_of_encoder_layers_are_named() {
        assert!(is_linear_weight("encoder.layer.0.attention.self.query.weight"));
        assert!(is_linear_weight("bert.encoder.layer.11.output.dense.weight"));
        assert!(!is_linear_weight("encoder.layer.0.output.LayerNorm.weight"));
        assert!(!is_linear_weight("encoder.layer.x.output.dense.weight"));
        assert!(!is_linear_weight("embeddings.word_embeddings.weight"));
        assert!(!is_linear_weight("encoder.layer.0.output.dense.bias"));
    }
}
