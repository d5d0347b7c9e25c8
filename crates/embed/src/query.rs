//! The query encoder: the same BERT forward pass as the catalog's, for one short text at a
//! time, with the matrices of its linear layers in 8 bits (GGML `Q8_0`: blocks of 32 weights
//! sharing one scale) where the CPU multiplies those faster than floats.
//!
//! # Why
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
//! path), so [`QueryEncoder::worthwhile`] says whether to build one at all; the catalog's
//! batches (hundreds of rows, where f32 gemm reaches its speed and the 8-bit kernel gains
//! nothing) always run in f32, so persisted tool vectors do not depend on the CPU.
//!
//! Everything else — embeddings, attention, layer norms, GELU, mean pooling — is f32 and
//! follows candle-transformers' BERT exactly; with `GgmlDType::F32` weights the encoder equals
//! that model to 1e-5 (`tests/embed.rs`), which checks the forward pass apart from the
//! quantization.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Module, Result, Tensor, D};
use candle_nn::LayerNorm;
use std::collections::HashMap;

/// Inner dimensions are padded to a multiple of this for the 8-bit kernel.
const KERNEL_BLOCK: usize = 256;

/// A linear layer `x Wᵀ + b` over a (possibly quantized) weight matrix whose inner dimension
/// may be zero-padded.
struct QLinear {
    weight: QMatMul,
    bias: Tensor,
    /// Zero columns added to the weights' inner dimension (and so to the input's).
    pad: usize,
}

impl QLinear {
    fn new(weight: &Tensor, bias: &Tensor, dtype: GgmlDType) -> Result<Self> {
        let k = weight.dim(1)?;
        let pad = if dtype == GgmlDType::F32 {
            0
        } else {
            k.div_ceil(KERNEL_BLOCK) * KERNEL_BLOCK - k
        };
        let padded = if pad > 0 {
            weight.pad_with_zeros(1, 0, pad)?
        } else {
            weight.clone()
        };
        Ok(Self {
            weight: QMatMul::from_qtensor(QTensor::quantize(&padded, dtype)?)?,
            bias: bias.clone(),
            pad,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = if self.pad > 0 {
            x.pad_with_zeros(D::Minus1, 0, self.pad)?
        } else {
            x.clone()
        };
        self.weight.forward(&x)?.broadcast_add(&self.bias)
    }
}

struct Layer {
    /// Query, key and value projections as one product (their weights stacked).
    qkv: QLinear,
    attention_out: QLinear,
    attention_norm: LayerNorm,
    intermediate: QLinear,
    output: QLinear,
    output_norm: LayerNorm,
}

/// BERT for one text at a time, its linear layers in `Q8_0` (see the module docs).
pub struct QueryEncoder {
    word_embeddings: Tensor,
    position_embeddings: Tensor,
    /// The token-type-0 embedding (every token of a single text has type 0).
    token_type: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
}

impl QueryEncoder {
    /// Whether this CPU multiplies 8-bit weights faster than floats (an AVX-512 VNNI or AVX-VNNI
    /// unit: candle's 8-bit kernel); without one, queries run in f32.
    pub fn worthwhile() -> bool {
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
    /// without a `bert.` prefix), its linear layers' weights in `dtype` (`Q8_0`; `F32` to check
    /// the forward pass). `None` when a tensor is missing or the model is not a plain BERT.
    pub fn build(
        tensors: &HashMap<String, Tensor>,
        config: &candle_transformers::models::bert::Config,
        dtype: GgmlDType,
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
        let norm = |name: &str| -> Option<LayerNorm> {
            Some(LayerNorm::new(
                get(&format!("{name}.weight"))?,
                get(&format!("{name}.bias"))?,
                config.layer_norm_eps,
            ))
        };
        let linear = |name: &str| -> Result<Option<QLinear>> {
            match (get(&format!("{name}.weight")), get(&format!("{name}.bias"))) {
                (Some(w), Some(b)) => Ok(Some(QLinear::new(&w, &b, dtype)?)),
                _ => Ok(None),
            }
        };
        let (Some(word_embeddings), Some(position_embeddings), Some(token_types), Some(embedding_norm)) = (
            get("embeddings.word_embeddings.weight"),
            get("embeddings.position_embeddings.weight"),
            get("embeddings.token_type_embeddings.weight"),
            norm("embeddings.LayerNorm"),
        ) else {
            return Ok(None);
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
            let qkv = QLinear::new(&Tensor::cat(&weights, 0)?, &Tensor::cat(&biases, 0)?, dtype)?;
            let (Some(attention_out), Some(attention_norm), Some(intermediate), Some(output), Some(output_norm)) = (
                linear(&at("attention.output.dense"))?,
                norm(&at("attention.output.LayerNorm")),
                linear(&at("intermediate.dense"))?,
                linear(&at("output.dense"))?,
                norm(&at("output.LayerNorm")),
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
        let n = ids.len();
        let device = self.word_embeddings.device();
        let ids = Tensor::from_slice(ids, n, device)?;
        let x = self
            .word_embeddings
            .index_select(&ids, 0)?
            .add(&self.position_embeddings.narrow(0, 0, n)?)?
            .broadcast_add(&self.token_type)?;
        let mut x = self.embedding_norm.forward(&x)?;
        let head_dim = self.hidden / self.heads;
        let scale = 1.0 / (head_dim as f64).sqrt();
        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x)?;
            // (tokens, hidden) → (heads, tokens, head_dim)
            let split = |i: usize| -> Result<Tensor> {
                qkv.narrow(1, i * self.hidden, self.hidden)?
                    .reshape((n, self.heads, head_dim))?
                    .transpose(0, 1)?
                    .contiguous()
            };
            let (q, k, v) = (split(0)?, split(1)?, split(2)?);
            let scores = (q.matmul(&k.t()?)? * scale)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs.matmul(&v)?.transpose(0, 1)?.reshape((n, self.hidden))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let inner = layer.intermediate.forward(&attended)?.gelu_erf()?;
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&inner)? + &attended)?)?;
        }
        let mean = x.mean(0)?;
        let norm = mean.sqr()?.sum_all()?.sqrt()?.to_scalar::<f32>()?.max(1e-12);
        Ok(mean.to_vec1::<f32>()?.into_iter().map(|v| v / norm).collect())
    }
}
