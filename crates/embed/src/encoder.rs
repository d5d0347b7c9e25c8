//! The encoder: BERT's forward pass over a batch of tokenized texts, giving mean-pooled,
//! L2-normalised embeddings, with the matrices of its linear layers held in f16 (the catalog's
//! tools: widened to f32 for each product), in 8 bits (queries, GGML `Q8_0`: blocks of 32
//! weights sharing one scale, where the CPU multiplies those faster than floats) or in f32
//! ([`Precision`]).
//!
//! It follows candle-transformers' BERT (`BertModel`, which the tests compare it with: equal
//! to 1e-4 with f32 weights) with three differences that make it faster or smaller and change
//! its output only by float rounding:
//!
//! - **No padding**: a batch's texts are packed one after the other; the linear layers run over
//!   all their tokens, attention text by text over the text's own tokens (no mask, and at most
//!   one text's scores at a time).
//!
//! - **GELU by a rational approximation of erf** ([`gelu`]): BERT's exact GELU,
//!   `x·(1 + erf(x/√2))/2`, was candle's scalar `erf` from `libm` (branches and an `expf` per
//!   value), a quarter of the time of embedding a catalog. The approximation (the odd/even
//!   polynomial ratio Eigen and XLA use for `float` erf, inputs clamped to ±4) is within
//!   10⁻⁶ of the exact GELU and is plain arithmetic the compiler vectorizes.
//! - **Query, key and value as one product** (their weights stacked), and every linear layer
//!   over the batch's tokens as one (tokens, hidden) matrix.
//!
//! # Why 8-bit queries
//!
//! A query is 5–20 tokens. At that size the f32 matrix products (gemm) run at ~35 GFLOP/s on a
//! core — packing each weight matrix anew per call costs as much as the arithmetic — and one
//! query's pass took 8.4 ms. candle's quantized matmul has an x86 kernel for `Q8_0` weights
//! that multiplies 8-bit integers (AVX-512 VNNI or AVX-VNNI `vpdpbusd`, 4 products per lane
//! per instruction) on weights packed once; it applies when the inner dimension is a multiple
//! of 256. MiniLM's is 384 for five of the six matrices of a layer, so those are padded with
//! zero columns to 512 (the activations with zeros to match: the products are unchanged).
//! Measured on this project's 2-core machine for one layer at 12 tokens, one thread: f32
//! 1.6–1.7 ms, 8-bit 0.6–0.67 ms (2.6–2.8×); relative error of each product 0.9%.
//!
//! Without a VNNI unit the same `Q8_0` product runs 3× *slower* than f32 (candle's generic
//! path), so [`Encoder::int8_worthwhile`] says whether to build an 8-bit encoder at all; the
//! catalog's batches (hundreds of rows, where f32 gemm reaches its speed and the 8-bit kernel
//! gains nothing) always run in f32 arithmetic over the f16 weights, so persisted tool vectors
//! do not depend on the CPU.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{CpuStorage, DType, InplaceOp1, Layout, Module, Result, Storage, Tensor, D};
use candle_nn::LayerNorm;
use half::f16;
use half::slice::HalfFloatSliceExt;
use std::collections::HashMap;

/// Inner dimensions are padded to a multiple of this for the 8-bit kernel.
const KERNEL_BLOCK: usize = 256;

/// erf(x) for every `f32`, within ~5e-7 in `f32` arithmetic (7e-8 in exact arithmetic): the
/// ratio of an odd degree-13 and an even degree-8 polynomial (the coefficients of Eigen's and
/// XLA's `float` erf), the input clamped to ±4, beyond which erf is ±1 in `f32`. Branch-free,
/// so a loop over a slice vectorizes.
#[inline]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_6e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329e-3;
    q = q * x2 - 1.426_474e-2;
    x * p / q
}

/// BERT's GELU, `x·(1 + erf(x/√2))/2`, with [`erf`]: within 1e-6 of the exact value (of its
/// size, beyond 1). Below -5.5 the exact GELU is within 1e-7 of 0 and is returned as 0: there
/// `1 + erf` is below the approximation's error, which `x` would otherwise scale up.
#[inline]
pub fn gelu(x: f32) -> f32 {
    let y = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
    if x < -5.5 {
        0.0
    } else {
        y
    }
}

/// [`gelu`] applied in place to a contiguous f32 tensor.
struct Gelu;

impl InplaceOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-rational-erf"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets()) else {
            candle_core::bail!("gelu: a contiguous f32 tensor was expected");
        };
        for v in &mut values[start..end] {
            *v = gelu(*v);
        }
        Ok(())
    }
}

/// How an encoder holds the matrices of its linear layers and its word embeddings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 (the word embeddings stay as given, f16 in the service): the forward pass checked
    /// against candle-transformers' BERT; single queries where the CPU has no VNNI unit.
    F32,
    /// f16, widened to f32 a matrix at a time for each product (the activations stay f32): half
    /// the memory of f32; the catalog's tools (see the crate docs for what it changes).
    F16,
    /// GGML `Q8_0` with inner dimensions padded to the kernel's block (the word embeddings
    /// stay as given, f16 in the service): single queries on a CPU with a VNNI unit.
    Q8,
}

/// A linear layer's weight matrix, (outer, inner).
enum Weight {
    /// f32 or f16 held as a tensor; an f16 one is widened to f32 for each product.
    Dense(Tensor),
    /// `Q8_0`, inner dimension zero-padded by `pad` columns (the input is padded to match).
    Quantized { matrix: QMatMul, pad: usize },
}

/// A linear layer `x Wᵀ + b`.
struct Linear {
    weight: Weight,
    bias: Tensor,
}

impl Linear {
    fn new(weight: &Tensor, bias: &Tensor, precision: Precision) -> Result<Self> {
        let weight = match precision {
            Precision::F32 => Weight::Dense(weight.to_dtype(DType::F32)?),
            Precision::F16 => Weight::Dense(weight.to_dtype(DType::F16)?.contiguous()?),
            Precision::Q8 => {
                let k = weight.dim(1)?;
                let pad = k.div_ceil(KERNEL_BLOCK) * KERNEL_BLOCK - k;
                let padded = weight.to_dtype(DType::F32)?.pad_with_zeros(1, 0, pad)?;
                let matrix = QMatMul::from_qtensor(QTensor::quantize(&padded, GgmlDType::Q8_0)?)?;
                Weight::Quantized { matrix, pad }
            }
        };
        Ok(Self {
            weight,
            bias: bias.to_dtype(DType::F32)?,
        })
    }

    /// `x`: (rows, inner) → (rows, outer).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let product = match &self.weight {
            Weight::Dense(w) => x.matmul(&widened(w)?.t()?)?,
            Weight::Quantized { matrix, pad } => {
                let x = if *pad > 0 {
                    x.pad_with_zeros(D::Minus1, 0, *pad)?
                } else {
                    x.clone()
                };
                matrix.forward(&x)?
            }
        };
        product.broadcast_add(&self.bias)
    }
}

/// `t` as f32: itself when it is f32, else its values widened into a new tensor (an f16 one
/// through `half`'s slice conversion, which uses the CPU's F16C instructions where present).
fn widened(t: &Tensor) -> Result<Tensor> {
    if t.dtype() == DType::F32 {
        return Ok(t.clone());
    }
    if t.dtype() != DType::F16 {
        return t.to_dtype(DType::F32);
    }
    let wide = {
        let (storage, layout) = t.storage_and_layout();
        let (Storage::Cpu(cpu), Some((start, end))) = (&*storage, layout.contiguous_offsets()) else {
            candle_core::bail!("a contiguous f16 tensor on the CPU was expected");
        };
        let half = &cpu.as_slice::<f16>()?[start..end];
        let mut wide = vec![0f32; half.len()];
        half.convert_to_f32_slice(&mut wide);
        wide
    };
    Tensor::from_vec(wide, t.shape(), t.device())
}

/// Rows `ids` of the (vocabulary, hidden) table `table` (f32 or f16), as one f32 (ids, hidden)
/// tensor; an id beyond the table is an error.
fn rows(table: &Tensor, ids: &[u32]) -> Result<Tensor> {
    let (vocabulary, hidden) = table.dims2()?;
    if let Some(id) = ids.iter().find(|&&id| id as usize >= vocabulary) {
        candle_core::bail!("token id {id} is beyond the vocabulary of {vocabulary}");
    }
    if table.dtype() != DType::F16 {
        let ids = Tensor::from_slice(ids, ids.len(), table.device())?;
        return table.index_select(&ids, 0)?.to_dtype(DType::F32);
    }
    let wide = {
        let (storage, layout) = table.storage_and_layout();
        let (Storage::Cpu(cpu), Some((start, end))) = (&*storage, layout.contiguous_offsets()) else {
            candle_core::bail!("a contiguous f16 table on the CPU was expected");
        };
        let half = &cpu.as_slice::<f16>()?[start..end];
        let mut wide = vec![0f32; ids.len() * hidden];
        for (row, &id) in wide.chunks_exact_mut(hidden).zip(ids) {
            let at = id as usize * hidden;
            half[at..at + hidden].convert_to_f32_slice(row);
        }
        wide
    };
    Tensor::from_vec(wide, (ids.len(), hidden), table.device())
}

struct Layer {
    /// Query, key and value projections as one product (their weights stacked).
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// BERT over a batch of texts, its weights held in one of the [`Precision`]s (see the module
/// docs).
pub struct Encoder {
    /// (vocabulary, hidden), f32 or f16 (shared with another encoder built from the same
    /// tensors: candle's tensors are reference counted).
    word_embeddings: Tensor,
    position_embeddings: Tensor,
    /// The token-type-0 embedding (every token of a single text has type 0).
    token_type: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
}

impl Encoder {
    /// Whether this CPU multiplies 8-bit weights faster than floats (an AVX-512 VNNI or AVX-VNNI
    /// unit: candle's 8-bit kernel); without one, queries run in f32.
    pub fn int8_worthwhile() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            (std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vnni"))
                || (std::arch::is_x86_feature_detected!("avxvnni") && std::arch::is_x86_feature_detected!("avx2"))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Builds the encoder from a BERT's tensors (the names of the `bert-base` layout, with or
    /// without a `bert.` prefix), its weights held in `precision` (`Q8`; `F32` to check
    /// the forward pass, and for the catalog's tools). `None` when a tensor is missing or the model is
    /// not a plain BERT (absolute positions, GELU).
    pub fn build(
        tensors: &HashMap<String, Tensor>,
        config: &candle_transformers::models::bert::Config,
        precision: Precision,
    ) -> Result<Option<Self>> {
        use candle_transformers::models::bert::{HiddenAct, PositionEmbeddingType};
        if config.hidden_act != HiddenAct::Gelu
            || config.position_embedding_type != PositionEmbeddingType::Absolute
            || config.num_attention_heads == 0
            || config.hidden_size % config.num_attention_heads != 0
        {
            return Ok(None);
        }
        let prefix = if tensors.contains_key("embeddings.word_embeddings.weight") {
            ""
        } else {
            "bert."
        };
        let get = |name: &str| tensors.get(&format!("{prefix}{name}")).cloned();
        // what is not a matrix of a linear layer nor the word embeddings is small, and f32
        let get_f32 = |name: &str| -> Result<Option<Tensor>> { get(name).map(|t| t.to_dtype(DType::F32)).transpose() };
        let norm = |name: &str| -> Result<Option<LayerNorm>> {
            Ok(
                match (get_f32(&format!("{name}.weight"))?, get_f32(&format!("{name}.bias"))?) {
                    (Some(weight), Some(bias)) => Some(LayerNorm::new(weight, bias, config.layer_norm_eps)),
                    _ => None,
                },
            )
        };
        let linear = |name: &str| -> Result<Option<Linear>> {
            match (get(&format!("{name}.weight")), get(&format!("{name}.bias"))) {
                (Some(w), Some(b)) => Ok(Some(Linear::new(&w, &b, precision)?)),
                _ => Ok(None),
            }
        };
        let (Some(word_embeddings), Some(position_embeddings), Some(token_types), Some(embedding_norm)) = (
            get("embeddings.word_embeddings.weight"),
            get_f32("embeddings.position_embeddings.weight")?,
            get_f32("embeddings.token_type_embeddings.weight")?,
            norm("embeddings.LayerNorm")?,
        ) else {
            return Ok(None);
        };
        // f16 for the f16 encoder; as given (f32 or f16) for the others: the rows a text needs
        // are widened as they are read, and an f16 table is shared, not copied
        let word_embeddings = match precision {
            Precision::F16 => word_embeddings.to_dtype(DType::F16)?.contiguous()?,
            Precision::F32 | Precision::Q8 => word_embeddings.contiguous()?,
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let at = |part: &str| format!("encoder.layer.{i}.{part}");
            let projections: Option<Vec<(Tensor, Tensor)>> = ["query", "key", "value"]
                .iter()
                .map(|p| {
                    Some((
                        get(&at(&format!("attention.self.{p}.weight")))?,
                        get(&at(&format!("attention.self.{p}.bias")))?,
                    ))
                })
                .collect();
            let Some(projections) = projections else {
                return Ok(None);
            };
            let (weights, biases): (Vec<Tensor>, Vec<Tensor>) = projections.into_iter().unzip();
            let qkv = Linear::new(&Tensor::cat(&weights, 0)?, &Tensor::cat(&biases, 0)?, precision)?;
            let (Some(attention_out), Some(attention_norm), Some(intermediate), Some(output), Some(output_norm)) = (
                linear(&at("attention.output.dense"))?,
                norm(&at("attention.output.LayerNorm"))?,
                linear(&at("intermediate.dense"))?,
                linear(&at("output.dense"))?,
                norm(&at("output.LayerNorm"))?,
            ) else {
                return Ok(None);
            };
            layers.push(Layer {
                qkv,
                attention_out,
                attention_norm,
                intermediate,
                output,
                output_norm,
            });
        }
        Ok(Some(Self {
            word_embeddings,
            position_embeddings,
            token_type: token_types.get(0)?,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
            hidden: config.hidden_size,
        }))
    }

    /// The mean-pooled, L2-normalised embedding of one tokenized text (its ids, special tokens
    /// included; at most the model's position count).
    pub fn embed(&self, ids: &[u32]) -> Result<Vec<f32>> {
        Ok(self.embed_batch(&[ids])?.pop().unwrap_or_default())
    }

    /// [`Self::embed`] for several texts in one pass. The texts' tokens are packed one after
    /// the other, without padding: every linear step runs over all of them as one (tokens,
    /// hidden) matrix, and attention runs text by text over the text's own tokens, so a text's
    /// embedding does not depend on the others (up to float rounding, ~1e-6) and no step holds
    /// more than one text's attention scores.
    pub fn embed_batch(&self, texts: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let hidden = self.hidden;
        let total: usize = texts.iter().map(|t| t.len()).sum();
        if total == 0 {
            return Ok(vec![vec![0.0; hidden]; texts.len()]);
        }
        let positions = self.position_embeddings.dim(0)?;
        if let Some(long) = texts.iter().find(|t| t.len() > positions) {
            candle_core::bail!(
                "a text of {} tokens is longer than the model's {positions} positions",
                long.len()
            );
        }
        let ids: Vec<u32> = texts.iter().flat_map(|t| t.iter().copied()).collect();
        let placed: Vec<Tensor> = texts
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| self.position_embeddings.narrow(0, 0, t.len()))
            .collect::<Result<_>>()?;
        let x = (rows(&self.word_embeddings, &ids)? + Tensor::cat(&placed, 0)?)?.broadcast_add(&self.token_type)?;
        let mut x = self.embedding_norm.forward(&x)?;
        // each text's first row in the packed matrix
        let starts: Vec<usize> = texts
            .iter()
            .scan(0, |at, t| {
                let start = *at;
                *at += t.len();
                Some(start)
            })
            .collect();
        let head_dim = hidden / self.heads;
        let scale = 1.0 / (head_dim as f64).sqrt();
        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x)?;
            let mut contexts = Vec::with_capacity(texts.len());
            for (t, &start) in texts.iter().zip(&starts) {
                let len = t.len();
                if len == 0 {
                    continue;
                }
                let own = qkv.narrow(0, start, len)?;
                // (len, hidden) → (heads, len, head_dim)
                let split = |i: usize| -> Result<Tensor> {
                    own.narrow(1, i * hidden, hidden)?
                        .contiguous()?
                        .reshape((len, self.heads, head_dim))?
                        .transpose(0, 1)?
                        .contiguous()
                };
                let (q, k, v) = (split(0)?, split(1)?, split(2)?);
                let scores = (q.matmul(&k.t()?)? * scale)?;
                let probs = candle_nn::ops::softmax_last_dim(&scores)?;
                contexts.push(
                    probs
                        .matmul(&v)?
                        .transpose(0, 1)?
                        .contiguous()?
                        .reshape((len, hidden))?,
                );
            }
            let context = Tensor::cat(&contexts, 0)?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let inner = layer.intermediate.forward(&attended)?.contiguous()?;
            inner.inplace_op1(&Gelu)?;
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&inner)? + &attended)?)?;
        }
        // the mean of each text's tokens, scaled to unit length (the sum scaled to unit length:
        // the division by the count cancels)
        let x = x.flatten_all()?.to_vec1::<f32>()?;
        Ok(texts
            .iter()
            .zip(&starts)
            .map(|(t, &start)| {
                let mut sum = vec![0f32; hidden];
                for row in x[start * hidden..(start + t.len()) * hidden].chunks_exact(hidden) {
                    for (s, v) in sum.iter_mut().zip(row) {
                        *s += v;
                    }
                }
                let norm = sum.iter().map(|s| s * s).sum::<f32>().sqrt();
                if norm > 0.0 {
                    sum.iter_mut().for_each(|s| *s /= norm);
                }
                sum
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_is_within_1e6_of_the_exact_one() {
        // the exact GELU in f64, erf by its Maclaurin series (|x| < 3) or its asymptotic
        // continued fraction (beyond), each converged far below f32 precision
        fn erf64(x: f64) -> f64 {
            if x.abs() < 3.0 {
                let (mut term, mut sum, mut k) = (x, x, 0.0);
                while term.abs() > 1e-17 {
                    k += 1.0;
                    term *= -x * x / k;
                    sum += term / (2.0 * k + 1.0);
                }
                sum * 2.0 / std::f64::consts::PI.sqrt()
            } else {
                // erfc(x) = exp(-x²)/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...))))
                let a = x.abs();
                let mut f = a;
                for k in (1..60).rev() {
                    f = a + (k as f64 / 2.0) / f;
                }
                let erfc = (-a * a).exp() / std::f64::consts::PI.sqrt() / f;
                (1.0 - erfc).copysign(x)
            }
        }
        let (mut worst, mut at) = (0.0f64, 0.0);
        for i in -200_000..=200_000 {
            let x = f64::from((i as f64 / 10_000.0) as f32); // -20 … 20
            let exact = 0.5 * x * (1.0 + erf64(x / std::f64::consts::SQRT_2));
            let error = (f64::from(gelu(x as f32)) - exact).abs() / exact.abs().max(1.0);
            if error > worst {
                (worst, at) = (error, x);
            }
        }
        assert!(worst < 1e-6, "worst error {worst} at {at}");
        assert_eq!(gelu(0.0), 0.0);
        assert_eq!(gelu(-1e30), 0.0);
        assert!((gelu(1e30) / 1e30 - 1.0).abs() < 1e-6);
        assert!(gelu(f32::NAN).is_nan());
    }
}
