//! The query encoder made trainable: BERT's forward pass written in candle's differentiable
//! tensor operations, its base weights held as constants and low-rank (LoRA) pairs on chosen
//! linear layers held as [`Var`]s, so that `loss.backward()` gives the pairs' gradients and
//! nothing else's. `search-eval train-encoder` drives it; what it learns is a [`QueryDelta`],
//! which the service merges into its query encoder ([`QueryDelta::merge_into`]).
//!
//! It computes what [`crate::encoder::Encoder`] computes (the tests hold the two within 1e-4
//! with the pairs merged), in the form training needs:
//!
//! - a batch of texts is padded to its longest text, and padding is masked out of attention
//!   (an additive mask on the keys) and out of the mean;
//! - layer norm, softmax and GELU are candle's differentiable primitives (the exact erf GELU,
//!   `gelu_erf`; the inference encoder's rational approximation is within 1e-6 of it), not the
//!   fused kernels that have no backward pass;
//! - the pairs' product is applied beside the base matrix, `x·Wᵀ + scale·(x·Aᵀ)·Bᵀ`, never
//!   merged, so the base weights are never copied per step.
//!
//! Gradients flow only where a pair is: layers under the lowest pair run as constants.
//! Everything is seeded ([`LoraSpec::seed`]): `A` starts uniform in ±1/√inner (as LoRA's
//! reference implementation starts it) from a SplitMix64 stream, `B` at zero, so an untrained
//! delta changes nothing.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Result, Tensor, Var, D};
use candle_transformers::models::bert::{Config, HiddenAct, PositionEmbeddingType};

use crate::delta::{LoraPair, QueryDelta, LINEAR_PARTS};
use crate::EmbedError;

/// Which linear layers get a low-rank pair, of what rank, and how they start.
#[derive(Clone, Debug)]
pub struct LoraSpec {
    pub rank: usize,
    /// The pairs' product is scaled by `alpha / rank` (LoRA's convention: a rank change does
    /// not change the step size a learning rate means).
    pub alpha: f32,
    /// Encoder layers that get pairs (by index); empty: every layer.
    pub layers: Vec<usize>,
    /// Parts of a layer that get pairs ([`LINEAR_PARTS`] names); empty: all six.
    pub parts: Vec<String>,
    pub seed: u64,
    /// `B`'s starting spread: 0 in training (the delta starts as no change); the gradient check
    /// starts it random so that `A` has a gradient too.
    pub b_std: f64,
}

impl Default for LoraSpec {
    fn default() -> Self {
        Self {
            rank: 8,
            alpha: 16.0,
            layers: Vec::new(),
            parts: Vec::new(),
            seed: 1,
            b_std: 0.0,
        }
    }
}

/// SplitMix64: a small, seeded, platform-independent random stream.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A linear layer: base weight and bias as constants, and maybe a trainable pair.
struct Linear {
    /// The base weight's name in the model (`encoder.layer.N.…weight`, no prefix).
    name: String,
    weight: Tensor,
    bias: Tensor,
    /// (A: rank × inner, B: outer × rank).
    pair: Option<(Var, Var)>,
}

impl Linear {
    /// `x`: (rows, inner) → (rows, outer); with `track`, differentiable in the pair.
    fn forward(&self, x: &Tensor, scale: f64, track: bool) -> Result<Tensor> {
        let y = x.matmul(&self.weight.t()?)?.broadcast_add(&self.bias)?;
        let Some((a, b)) = &self.pair else {
            return Ok(y);
        };
        let (a, b) = if track {
            (a.as_tensor().clone(), b.as_tensor().clone())
        } else {
            (a.as_tensor().detach(), b.as_tensor().detach())
        };
        y + (x.matmul(&a.t()?)?.matmul(&b.t()?)? * scale)?
    }
}

struct Norm {
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}

impl Norm {
    /// Layer norm over the last dimension, from differentiable primitives.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let centred = x.broadcast_sub(&x.mean_keepdim(D::Minus1)?)?;
        let variance = centred.sqr()?.mean_keepdim(D::Minus1)?;
        centred
            .broadcast_div(&(variance + self.eps)?.sqrt()?)?
            .broadcast_mul(&self.weight)?
            .broadcast_add(&self.bias)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

impl Layer {
    fn linears(&self) -> [&Linear; 6] {
        [
            &self.query,
            &self.key,
            &self.value,
            &self.attention_out,
            &self.intermediate,
            &self.output,
        ]
    }
}

/// The trainable query encoder (see the module docs).
pub struct TrainableEncoder {
    word_embeddings: Tensor,
    position_embeddings: Tensor,
    token_type: Tensor,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    rank: usize,
    scale: f64,
    dtype: DType,
}

/// The softmax over the last dimension, its maximum subtracted as a constant.
fn softmax_last(x: &Tensor) -> Result<Tensor> {
    let shifted = x.broadcast_sub(&x.max_keepdim(D::Minus1)?.detach())?;
    let e = shifted.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

impl TrainableEncoder {
    /// The model in `dir` (its `model.safetensors` and `config.json`, read as the embedder
    /// reads them) with the pairs `spec` names, in f32.
    pub fn load(dir: &Path, spec: &LoraSpec) -> std::result::Result<Self, EmbedError> {
        let config: Config = crate::read_json_opt(&dir.join("config.json"))?.unwrap_or_else(crate::minilm_l6_config);
        let (tensors, _) = crate::weights::load(&dir.join("model.safetensors"), DType::F32)?;
        Self::build(&tensors, &config, spec, DType::F32)?.ok_or_else(|| EmbedError::Config {
            path: dir.join("config.json"),
            message: "not a BERT the trainable encoder runs".to_owned(),
        })
    }

    /// Whether the model is one this encoder runs (a BERT with GELU and absolute positions)
    /// and `spec` asks for pairs it can hold; a part that is no linear layer is an error.
    fn fits(config: &Config, spec: &LoraSpec) -> Result<bool> {
        if config.hidden_act != HiddenAct::Gelu
            || config.position_embedding_type != PositionEmbeddingType::Absolute
            || config.num_attention_heads == 0
            || config.hidden_size % config.num_attention_heads != 0
            || spec.rank == 0
        {
            return Ok(false);
        }
        if let Some(bad) = spec.parts.iter().find(|p| !LINEAR_PARTS.contains(&p.as_str())) {
            candle_core::bail!("no linear layer part `{bad}` (the parts: {})", LINEAR_PARTS.join(", "));
        }
        Ok(true)
    }

    /// The encoder over `tensors` (a BERT's, named as [`crate::encoder::Encoder::build`] reads
    /// them) in `dtype` (f32; f64 for the gradient check), with the pairs `spec` names. `None`
    /// when a tensor is missing or the model is not a plain BERT.
    pub fn build(
        tensors: &HashMap<String, Tensor>,
        config: &Config,
        spec: &LoraSpec,
        dtype: DType,
    ) -> Result<Option<Self>> {
        if !Self::fits(config, spec)? {
            return Ok(None);
        }
        let prefix = if tensors.contains_key("embeddings.word_embeddings.weight") {
            ""
        } else {
            "bert."
        };
        let get = |name: &str| -> Result<Option<Tensor>> {
            tensors
                .get(&format!("{prefix}{name}"))
                .map(|t| t.to_dtype(dtype)?.contiguous())
                .transpose()
        };
        let norm = |name: &str| -> Result<Option<Norm>> {
            let (weight, bias) = (get(&format!("{name}.weight"))?, get(&format!("{name}.bias"))?);
            Ok(weight.zip(bias).map(|(weight, bias)| Norm {
                weight,
                bias,
                eps: config.layer_norm_eps,
            }))
        };
        let mut random = SplitMix(spec.seed);
        let mut linear = |layer: usize, part: &str| -> Result<Option<Linear>> {
            let base = part.strip_suffix(".weight").unwrap_or(part);
            let (Some(weight), Some(bias)) = (
                get(&format!("encoder.layer.{layer}.{part}"))?,
                get(&format!("encoder.layer.{layer}.{base}.bias"))?,
            ) else {
                return Ok(None);
            };
            let wanted = (spec.layers.is_empty() || spec.layers.contains(&layer))
                && (spec.parts.is_empty() || spec.parts.iter().any(|p| p == part));
            let pair = wanted
                .then(|| initial_pair(&weight, spec, &mut random, dtype))
                .transpose()?;
            Ok(Some(Linear {
                name: format!("encoder.layer.{layer}.{part}"),
                weight,
                bias,
                pair,
            }))
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let (Some(query), Some(key), Some(value), Some(attention_out), Some(intermediate), Some(output)) = (
                linear(i, LINEAR_PARTS[0])?,
                linear(i, LINEAR_PARTS[1])?,
                linear(i, LINEAR_PARTS[2])?,
                linear(i, LINEAR_PARTS[3])?,
                linear(i, LINEAR_PARTS[4])?,
                linear(i, LINEAR_PARTS[5])?,
            ) else {
                return Ok(None);
            };
            let (Some(attention_norm), Some(output_norm)) = (
                norm(&format!("encoder.layer.{i}.attention.output.LayerNorm"))?,
                norm(&format!("encoder.layer.{i}.output.LayerNorm"))?,
            ) else {
                return Ok(None);
            };
            layers.push(Layer {
                query,
                key,
                value,
                attention_out,
                attention_norm,
                intermediate,
                output,
                output_norm,
            });
        }
        let (Some(word_embeddings), Some(position_embeddings), Some(token_types), Some(embedding_norm)) = (
            get("embeddings.word_embeddings.weight")?,
            get("embeddings.position_embeddings.weight")?,
            get("embeddings.token_type_embeddings.weight")?,
            norm("embeddings.LayerNorm")?,
        ) else {
            return Ok(None);
        };
        Ok(Some(Self {
            word_embeddings,
            position_embeddings,
            token_type: token_types.get(0)?,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
            hidden: config.hidden_size,
            rank: spec.rank,
            scale: f64::from(spec.alpha) / spec.rank as f64,
            dtype,
        }))
    }

    /// The trainable pairs (`A` then `B` of each), for the optimiser.
    pub fn vars(&self) -> Vec<Var> {
        self.layers
            .iter()
            .flat_map(|l| l.linears())
            .filter_map(|l| l.pair.as_ref())
            .flat_map(|(a, b)| [a.clone(), b.clone()])
            .collect()
    }

    /// How many numbers are trained.
    pub fn trained_parameters(&self) -> usize {
        self.vars().iter().map(|v| v.elem_count()).sum()
    }

    /// The mean-pooled, L2-normalised embeddings of a batch of tokenized texts (special tokens
    /// included), one row each: (texts, hidden), differentiable in the pairs.
    pub fn forward(&self, texts: &[&[u32]]) -> Result<Tensor> {
        self.run(texts, true)
    }

    /// [`Self::forward`] without the graph the gradient needs: each step's activations are
    /// freed as soon as the next is computed (evaluation).
    pub fn embed(&self, texts: &[&[u32]]) -> Result<Tensor> {
        self.run(texts, false)
    }

    fn run(&self, texts: &[&[u32]], track: bool) -> Result<Tensor> {
        let n = texts.len();
        let len = texts.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
        let positions = self.position_embeddings.dim(0)?;
        if len > positions {
            candle_core::bail!("a text of {len} tokens is longer than the model's {positions} positions");
        }
        let hidden = self.hidden;
        let dev = &Device::Cpu;
        let mut ids = vec![0u32; n * len];
        let mut present = vec![0f32; n * len];
        for (i, t) in texts.iter().enumerate() {
            ids[i * len..i * len + t.len()].copy_from_slice(t);
            present[i * len..i * len + t.len()].iter_mut().for_each(|p| *p = 1.0);
        }
        let present = Tensor::from_vec(present, (n, len), dev)?.to_dtype(self.dtype)?;
        // padding is never attended to: -1e9 on its keys before the softmax
        let key_mask = ((present.clone() - 1.0)? * 1e9)?.reshape((n, 1, 1, len))?;
        let ids = Tensor::from_vec(ids, n * len, dev)?;
        let x = self
            .word_embeddings
            .index_select(&ids, 0)?
            .reshape((n, len, hidden))?
            .broadcast_add(&self.position_embeddings.narrow(0, 0, len)?)?
            .broadcast_add(&self.token_type)?;
        let mut x = self.embedding_norm.forward(&x)?.reshape((n * len, hidden))?;
        let head_dim = hidden / self.heads;
        let attention_scale = 1.0 / (head_dim as f64).sqrt();
        let heads =
            |t: Tensor| -> Result<Tensor> { t.reshape((n, len, self.heads, head_dim))?.transpose(1, 2)?.contiguous() };
        for layer in &self.layers {
            let q = heads(layer.query.forward(&x, self.scale, track)?)?;
            let k = heads(layer.key.forward(&x, self.scale, track)?)?;
            let v = heads(layer.value.forward(&x, self.scale, track)?)?;
            let scores = (q.matmul(&k.t()?.contiguous()?)? * attention_scale)?.broadcast_add(&key_mask)?;
            let context = softmax_last(&scores)?
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((n * len, hidden))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context, self.scale, track)? + &x)?)?;
            let inner = layer.intermediate.forward(&attended, self.scale, track)?.gelu_erf()?;
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&inner, self.scale, track)? + attended)?)?;
        }
        // the sum of each text's own tokens, scaled to unit length (the mean's count cancels)
        let summed = x
            .reshape((n, len, hidden))?
            .broadcast_mul(&present.unsqueeze(2)?)?
            .sum(1)?;
        let norm = (summed.sqr()?.sum_keepdim(1)? + 1e-12)?.sqrt()?;
        summed.broadcast_div(&norm)
    }

    /// The pairs as a [`QueryDelta`] for the model whose files digest is `base`.
    pub fn delta(&self, base: &str, provenance: serde_json::Value) -> Result<QueryDelta> {
        let mut d = QueryDelta::new(self.rank, self.scale as f32, base);
        d.provenance = provenance;
        for l in self.layers.iter().flat_map(|l| l.linears()) {
            let Some((a, b)) = &l.pair else { continue };
            let (outer, inner) = l.weight.dims2()?;
            let values = |v: &Var| -> Result<Vec<f32>> { v.as_tensor().to_dtype(DType::F32)?.flatten_all()?.to_vec1() };
            d.pairs.insert(
                l.name.clone(),
                LoraPair {
                    a: values(a)?,
                    b: values(b)?,
                    outer,
                    inner,
                },
            );
        }
        Ok(d)
    }

    /// Sets the pairs to those of `delta` (to continue from a delta, or to check one). Every
    /// pair of the delta must have a trainable pair of its shape here, and the ranks and
    /// scales must agree.
    pub fn load_delta(&self, delta: &QueryDelta) -> Result<()> {
        if delta.rank != self.rank || (f64::from(delta.scale) - self.scale).abs() > 1e-6 {
            candle_core::bail!(
                "the delta has rank {} and scale {}, this encoder {} and {}",
                delta.rank,
                delta.scale,
                self.rank,
                self.scale
            );
        }
        for (name, pair) in &delta.pairs {
            let Some((a, b)) = self
                .layers
                .iter()
                .flat_map(|l| l.linears())
                .find(|l| &l.name == name)
                .and_then(|l| l.pair.as_ref())
            else {
                candle_core::bail!("no trainable pair for `{name}`");
            };
            a.set(&Tensor::from_vec(pair.a.clone(), a.dims(), &Device::Cpu)?.to_dtype(self.dtype)?)?;
            b.set(&Tensor::from_vec(pair.b.clone(), b.dims(), &Device::Cpu)?.to_dtype(self.dtype)?)?;
        }
        Ok(())
    }
}

/// A tiny BERT with seeded random weights (hidden 8, 2 heads, 2 layers, 16 positions, the
/// given vocabulary), named as a real one: for the tests of code that runs or trains an
/// encoder, where the real model would take seconds per step.
pub fn tiny_bert(vocabulary: usize, seed: u64) -> (HashMap<String, Tensor>, Config) {
    let mut config = crate::minilm_l6_config();
    config.vocab_size = vocabulary;
    config.hidden_size = 8;
    config.num_attention_heads = 2;
    config.num_hidden_layers = 2;
    config.intermediate_size = 16;
    config.max_position_embeddings = 16;
    let mut random = SplitMix(seed);
    let mut t = HashMap::new();
    let mut add = |name: String, dims: &[usize], mean: f64, std: f64| {
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|_| (mean + std * random.normal()) as f32).collect();
        if let Ok(tensor) = Tensor::from_vec(v, dims, &Device::Cpu) {
            t.insert(name, tensor);
        }
    };
    let h = 8;
    add("embeddings.word_embeddings.weight".into(), &[vocabulary, h], 0.0, 0.5);
    add("embeddings.position_embeddings.weight".into(), &[16, h], 0.0, 0.1);
    add("embeddings.token_type_embeddings.weight".into(), &[2, h], 0.0, 0.1);
    add("embeddings.LayerNorm.weight".into(), &[h], 1.0, 0.1);
    add("embeddings.LayerNorm.bias".into(), &[h], 0.0, 0.1);
    for l in 0..2 {
        for (part, outer, inner) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", 16, h),
            ("output.dense", h, 16),
        ] {
            add(format!("encoder.layer.{l}.{part}.weight"), &[outer, inner], 0.0, 0.4);
            add(format!("encoder.layer.{l}.{part}.bias"), &[outer], 0.0, 0.1);
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            add(format!("encoder.layer.{l}.{norm}.weight"), &[h], 1.0, 0.1);
            add(format!("encoder.layer.{l}.{norm}.bias"), &[h], 0.0, 0.1);
        }
    }
    (t, config)
}

/// A pair's starting values: `A` uniform in ±1/√inner (as a linear layer's weights start), `B`
/// normal with `spec.b_std` (0 by default, so training starts from the model itself).
fn initial_pair(weight: &Tensor, spec: &LoraSpec, random: &mut SplitMix, dtype: DType) -> Result<(Var, Var)> {
    let (outer, inner) = weight.dims2()?;
    let bound = 1.0 / (inner as f64).sqrt();
    let a: Vec<f64> = (0..spec.rank * inner)
        .map(|_| (2.0 * random.unit() - 1.0) * bound)
        .collect();
    let b: Vec<f64> = (0..outer * spec.rank).map(|_| random.normal() * spec.b_std).collect();
    let a = Tensor::from_vec(a, (spec.rank, inner), &Device::Cpu)?.to_dtype(dtype)?;
    let b = Tensor::from_vec(b, (outer, spec.rank), &Device::Cpu)?.to_dtype(dtype)?;
    Ok((Var::from_tensor(&a)?, Var::from_tensor(&b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoder::{Encoder, Precision};

    fn tiny() -> (HashMap<String, Tensor>, Config) {
        tiny_bert(40, 42)
    }

    const TEXTS: [&[u32]; 3] = [&[1, 5, 9, 2], &[1, 7, 2], &[1, 3, 4, 6, 8, 11, 2]];

    fn rows(t: &Tensor) -> Vec<Vec<f32>> {
        t.to_dtype(DType::F32).unwrap().to_vec2().unwrap()
    }

    fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
        a.iter()
            .flatten()
            .zip(b.iter().flatten())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn untrained_it_equals_the_inference_encoder_and_padding_changes_nothing() {
        let (tensors, config) = tiny();
        let trainable = TrainableEncoder::build(&tensors, &config, &LoraSpec::default(), DType::F32)
            .unwrap()
            .unwrap();
        let encoder = Encoder::build(&tensors, &config, Precision::F32).unwrap().unwrap();
        let batch = rows(&trainable.forward(&TEXTS).unwrap());
        let reference = encoder.embed_batch(&TEXTS).unwrap();
        assert!(max_diff(&batch, &reference) < 1e-4, "{batch:?} vs {reference:?}");
        // each text alone (no padding) gives its row of the padded batch
        for (i, t) in TEXTS.iter().enumerate() {
            let alone = rows(&trainable.forward(&[t]).unwrap());
            assert!(max_diff(&alone, &batch[i..=i]) < 1e-5);
        }
    }

    #[test]
    fn with_its_pairs_merged_the_inference_encoder_computes_the_same() {
        let (mut tensors, config) = tiny();
        let spec = LoraSpec {
            rank: 3,
            alpha: 6.0,
            b_std: 0.3,
            layers: vec![1],
            ..LoraSpec::default()
        };
        let trainable = TrainableEncoder::build(&tensors, &config, &spec, DType::F32)
            .unwrap()
            .unwrap();
        assert_eq!(trainable.vars().len(), 12, "six linear layers of layer 1, A and B each");
        let trained = rows(&trainable.forward(&TEXTS).unwrap());
        let mut delta = trainable.delta("00", serde_json::json!({})).unwrap();
        let delta = QueryDelta::from_bytes(&delta.to_bytes().unwrap()).unwrap();
        let untouched = Encoder::build(&tensors, &config, Precision::F32).unwrap().unwrap();
        delta.merge_into(&mut tensors).unwrap();
        let merged = Encoder::build(&tensors, &config, Precision::F32).unwrap().unwrap();
        let merged = merged.embed_batch(&TEXTS).unwrap();
        assert!(max_diff(&trained, &merged) < 1e-4, "{trained:?} vs {merged:?}");
        assert!(
            max_diff(&merged, &untouched.embed_batch(&TEXTS).unwrap()) > 1e-3,
            "the delta changes something"
        );

        // and loaded back into a fresh trainable encoder, the same vectors
        let again = TrainableEncoder::build(
            &tiny().0,
            &config,
            &LoraSpec {
                b_std: 0.0,
                seed: 9,
                ..spec
            },
            DType::F32,
        )
        .unwrap()
        .unwrap();
        again.load_delta(&delta).unwrap();
        assert!(max_diff(&rows(&again.forward(&TEXTS).unwrap()), &trained) < 1e-5);
    }

    #[test]
    fn the_gradient_equals_the_finite_difference() {
        let (tensors, config) = tiny();
        let spec = LoraSpec {
            rank: 2,
            alpha: 2.0,
            b_std: 0.5,
            ..LoraSpec::default()
        };
        let enc = TrainableEncoder::build(&tensors, &config, &spec, DType::F64)
            .unwrap()
            .unwrap();
        // a fixed projection of every row: a loss that touches every output
        let direction = Tensor::from_vec(
            (0..8).map(|i| (i as f64 * 0.7).sin()).collect::<Vec<f64>>(),
            (8, 1),
            &Device::Cpu,
        )
        .unwrap();
        let loss = |e: &TrainableEncoder| -> Tensor {
            e.forward(&TEXTS)
                .unwrap()
                .matmul(&direction)
                .unwrap()
                .sqr()
                .unwrap()
                .sum_all()
                .unwrap()
        };
        let grads = loss(&enc).backward().unwrap();
        let mut checked = 0;
        let mut random = SplitMix(3);
        for var in enc.vars() {
            let grad: Vec<f64> = grads
                .get(var.as_tensor())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            let values: Vec<f64> = var.as_tensor().flatten_all().unwrap().to_vec1().unwrap();
            for _ in 0..3 {
                let i = random.below(values.len());
                let at = |delta: f64| -> f64 {
                    let mut v = values.clone();
                    v[i] += delta;
                    var.set(&Tensor::from_vec(v, var.dims(), &Device::Cpu).unwrap())
                        .unwrap();
                    loss(&enc).to_scalar::<f64>().unwrap()
                };
                let h = 1e-5;
                let numeric = (at(h) - at(-h)) / (2.0 * h);
                at(0.0);
                let tolerance = 1e-6 + 1e-4 * numeric.abs().max(grad[i].abs());
                assert!(
                    (numeric - grad[i]).abs() < tolerance,
                    "element {i}: backward {} against finite difference {numeric}",
                    grad[i]
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 2 * 12 * 3, "every pair of both layers checked");
    }

    #[test]
    fn a_spec_names_only_known_parts() {
        let (tensors, config) = tiny();
        let spec = LoraSpec {
            parts: vec!["attention.self.query.weight".into(), "output.dense.weight".into()],
            ..LoraSpec::default()
        };
        let enc = TrainableEncoder::build(&tensors, &config, &spec, DType::F32)
            .unwrap()
            .unwrap();
        assert_eq!(enc.vars().len(), 2 * 2 * 2);
        let bad = LoraSpec {
            parts: vec!["pooler.dense.weight".into()],
            ..LoraSpec::default()
        };
        assert!(TrainableEncoder::build(&tensors, &config, &bad, DType::F32).is_err());
    }
}
