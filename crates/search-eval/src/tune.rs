//! The query encoder's training loop, over data already gathered (see [`crate::train_encoder`]
//! for where the data comes from): examples (a request's tokens, its catalog, its gold groups)
//! and catalogs (their tools' frozen vectors).
//!
//! The loss of an example is the listwise softmax the fusion trainer uses, over the example's
//! **whole catalog**: for each gold group g, `−log Σ_{t∈g} e^{s_t/τ} / Σ_{t∉other groups}
//! e^{s_t/τ}` with s the cosine of the request's vector to a tool's, averaged over the
//! example's groups (every needed tool is pulled up, as R@k counts groups), and weighted by the
//! example's weight. Every tool of the catalog is a negative, so the hard ones (the cosine
//! neighbours, and the lexical neighbours, which share the request's words and so sit near it)
//! are always in the denominator, and the softmax gives them most of the gradient.
//!
//! AdamW on the pairs, a linear warm-up over the first steps and a linear decay to zero; the
//! order of examples is a seeded shuffle per epoch, so a run is reproducible from its seed (on
//! the same machine and thread count: the matrix products' sums are not ordered across
//! thread counts).

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use embed::tune::{SplitMix, TrainableEncoder};
use tool_search::eval::{score_query, summarize, Summary};

/// A catalog's tools: their names and frozen, unit-length vectors.
pub struct Catalog {
    pub name: String,
    pub names: Vec<String>,
    /// (dim, tools): the vectors as columns, ready to multiply.
    columns: Tensor,
}

impl Catalog {
    /// `vectors`: one unit-length row per tool, in `names`' order.
    pub fn new(name: impl Into<String>, names: Vec<String>, vectors: &[Vec<f32>]) -> Result<Self> {
        let dim = vectors.first().map_or(0, Vec::len);
        if vectors.len() != names.len() || vectors.iter().any(|v| v.len() != dim) || dim == 0 {
            candle_core::bail!("a catalog needs one vector of one size per tool");
        }
        let flat: Vec<f32> = vectors.iter().flatten().copied().collect();
        let columns = Tensor::from_vec(flat, (names.len(), dim), &Device::Cpu)?
            .t()?
            .contiguous()?;
        Ok(Self {
            name: name.into(),
            names,
            columns,
        })
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// One training request.
#[derive(Clone, Debug)]
pub struct Example {
    /// The request's token ids (special tokens included, cut as the service cuts queries).
    pub ids: Vec<u32>,
    /// Index into the catalogs.
    pub catalog: usize,
    /// The gold groups, as tool positions in the catalog; at least one, none empty.
    pub groups: Vec<Vec<usize>>,
    /// The example's weight in the loss (its source's share).
    pub weight: f32,
    /// Where it comes from (a set's name, `bfcl`, `self-supervised`), for the curve.
    pub source: String,
}

/// The loop's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub epochs: usize,
    pub batch: usize,
    pub learning_rate: f64,
    pub weight_decay: f64,
    /// τ: the cosines are divided by it before the softmax.
    pub temperature: f64,
    /// Share of all steps the learning rate rises over.
    pub warmup: f64,
    pub seed: u64,
    /// A progress line every this many steps.
    pub log_every: usize,
    /// At most this many tokens in a batch, padding included (a batch of long requests holds
    /// fewer of them: memory grows with a batch's tokens, and attention's with their square).
    pub batch_tokens: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            epochs: 3,
            batch: 64,
            learning_rate: 1e-3,
            weight_decay: 0.01,
            temperature: 0.05,
            warmup: 0.05,
            seed: 1,
            log_every: 25,
            batch_tokens: 4096,
        }
    }
}

/// The loss of a batch of examples (see the module docs): the weighted mean over the batch.
pub fn loss(encoder: &TrainableEncoder, catalogs: &[Catalog], batch: &[&Example], temperature: f64) -> Result<Tensor> {
    let ids: Vec<&[u32]> = batch.iter().map(|e| e.ids.as_slice()).collect();
    let queries = encoder.forward(&ids)?;
    let total_weight: f32 = batch.iter().map(|e| e.weight).sum::<f32>().max(1e-12);
    let mut parts = Vec::new();
    for (c, catalog) in catalogs.iter().enumerate() {
        // one row per (example, gold group) of this catalog
        let mut rows = Vec::new();
        let mut other = Vec::new();
        let mut own = Vec::new();
        let mut weights = Vec::new();
        for (i, e) in batch.iter().enumerate().filter(|(_, e)| e.catalog == c) {
            for (g, group) in e.groups.iter().enumerate() {
                rows.push(i as u32);
                let mut o = vec![0f32; catalog.len()];
                let mut m = vec![-1e9f32; catalog.len()];
                for (h, other_group) in e.groups.iter().enumerate() {
                    if h != g {
                        other_group.iter().for_each(|&t| o[t] = -1e9);
                    }
                }
                for &t in group {
                    o[t] = 0.0;
                    m[t] = 0.0;
                }
                other.extend(o);
                own.extend(m);
                weights.push(e.weight / e.groups.len() as f32 / total_weight);
            }
        }
        if rows.is_empty() {
            continue;
        }
        let r = rows.len();
        let dev = &Device::Cpu;
        let q = queries.index_select(&Tensor::from_vec(rows, r, dev)?, 0)?;
        let logits = (q.matmul(&catalog.columns)? / temperature)?;
        let logits = logits.add(&Tensor::from_vec(other, (r, catalog.len()), dev)?)?;
        let all = logits.log_sum_exp(1)?;
        let gold = logits
            .add(&Tensor::from_vec(own, (r, catalog.len()), dev)?)?
            .log_sum_exp(1)?;
        let w = Tensor::from_vec(weights, r, dev)?;
        parts.push(((all - gold)? * w)?.sum_all()?);
    }
    if parts.is_empty() {
        return Tensor::zeros((), DType::F32, &Device::Cpu);
    }
    Tensor::stack(&parts, 0)?.sum_all()
}

/// R@k of the cosine ranking alone (the semantic arm's nearest tools), as the evaluation
/// scores them: `examples` embedded by `encoder`, ranked over their catalogs.
pub fn cosine_recall(encoder: &TrainableEncoder, catalogs: &[Catalog], examples: &[Example]) -> Result<Summary> {
    let mut scores = Vec::with_capacity(examples.len());
    // by length, so that a batch is padded little
    let mut sorted: Vec<&Example> = examples.iter().collect();
    sorted.sort_by_key(|e| e.ids.len());
    for chunk in sorted.chunks(64) {
        let ids: Vec<&[u32]> = chunk.iter().map(|e| e.ids.as_slice()).collect();
        let q = encoder.embed(&ids)?;
        for (i, e) in chunk.iter().enumerate() {
            let catalog = &catalogs[e.catalog];
            let cosines: Vec<f32> = q
                .get(i)?
                .unsqueeze(0)?
                .matmul(&catalog.columns)?
                .squeeze(0)?
                .to_vec1()?;
            let mut order: Vec<usize> = (0..cosines.len()).collect();
            order.sort_by(|&a, &b| cosines[b].total_cmp(&cosines[a]).then(a.cmp(&b)));
            let ranked: Vec<String> = order.iter().take(10).map(|&t| catalog.names[t].clone()).collect();
            let groups: Vec<Vec<String>> = e
                .groups
                .iter()
                .map(|g| g.iter().map(|&t| catalog.names[t].clone()).collect())
                .collect();
            scores.push(score_query(&groups, &ranked));
        }
    }
    Ok(summarize(&scores))
}

/// How many batches' worth of shuffled examples are sorted by length together.
const BUCKET_BATCHES: usize = 32;

/// One epoch's batches (example positions): a seeded shuffle, cut into buckets of
/// [`BUCKET_BATCHES`] batches, each sorted by length and cut into batches of at most `batch`
/// examples and `tokens` padded tokens, and the batches shuffled again. A batch is padded to its longest request, so requests of like length
/// together cost what their tokens cost (a 250-token request among 15-token ones made a
/// batch 16× dearer), while each batch is still a random draw of the data.
fn batches(examples: &[Example], batch: usize, tokens: usize, random: &mut SplitMix) -> Vec<Vec<usize>> {
    let shuffle = |v: &mut Vec<usize>, random: &mut SplitMix| {
        for i in (1..v.len()).rev() {
            v.swap(i, random.below(i + 1));
        }
    };
    let mut order: Vec<usize> = (0..examples.len()).collect();
    shuffle(&mut order, random);
    let mut out: Vec<Vec<usize>> = Vec::with_capacity(examples.len().div_ceil(batch));
    for bucket in order.chunks(batch * BUCKET_BATCHES) {
        let mut bucket = bucket.to_vec();
        bucket.sort_by_key(|&i| examples[i].ids.len());
        let mut current: Vec<usize> = Vec::new();
        for i in bucket {
            // sorted by length: this example is the longest so far
            let padded = (current.len() + 1) * examples[i].ids.len();
            if !current.is_empty() && (current.len() == batch || padded > tokens) {
                out.push(std::mem::take(&mut current));
            }
            current.push(i);
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    let mut positions: Vec<usize> = (0..out.len()).collect();
    shuffle(&mut positions, random);
    positions.into_iter().map(|p| std::mem::take(&mut out[p])).collect()
}

/// One line of the learning curve.
#[derive(Clone, Debug)]
pub struct Point {
    pub step: usize,
    pub epoch: usize,
    /// Mean loss over the steps since the previous point.
    pub loss: f64,
    pub seconds: f64,
}

/// Trains `encoder`'s pairs on `examples`; `after_epoch` is called after each epoch (to print
/// held-out figures) and `progress` with each point of the curve. Returns the curve.
pub fn train(
    encoder: &TrainableEncoder,
    catalogs: &[Catalog],
    examples: &[Example],
    s: &Settings,
    mut progress: impl FnMut(&Point),
    mut after_epoch: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<Point>> {
    let vars = encoder.vars();
    let mut optimizer = AdamW::new(
        vars,
        ParamsAdamW {
            lr: s.learning_rate,
            weight_decay: s.weight_decay,
            ..ParamsAdamW::default()
        },
    )?;
    let mut random = SplitMix(s.seed ^ 0x5eed);
    let plan: Vec<Vec<Vec<usize>>> = (0..s.epochs)
        .map(|_| batches(examples, s.batch.max(1), s.batch_tokens.max(1), &mut random))
        .collect();
    let total = plan.iter().map(Vec::len).sum::<usize>().max(1);
    let warmup = ((total as f64 * s.warmup).ceil() as usize).max(1);
    let started = Instant::now();
    let mut curve = Vec::new();
    let (mut step, mut since, mut sum) = (0usize, 0usize, 0f64);
    for (epoch, epoch_batches) in plan.into_iter().enumerate() {
        for chunk in epoch_batches {
            let rate = if step < warmup {
                s.learning_rate * (step + 1) as f64 / warmup as f64
            } else {
                s.learning_rate * total.saturating_sub(step) as f64 / (total - warmup).max(1) as f64
            };
            optimizer.set_learning_rate(rate);
            let batch: Vec<&Example> = chunk.iter().map(|&i| &examples[i]).collect();
            let l = loss(encoder, catalogs, &batch, s.temperature)?;
            sum += f64::from(l.to_scalar::<f32>()?);
            optimizer.backward_step(&l)?;
            step += 1;
            since += 1;
            if step % s.log_every.max(1) == 0 || step == total {
                let p = Point {
                    step,
                    epoch,
                    loss: sum / since as f64,
                    seconds: started.elapsed().as_secs_f64(),
                };
                progress(&p);
                curve.push(p);
                (since, sum) = (0, 0.0);
            }
        }
        after_epoch(epoch)?;
    }
    Ok(curve)
}

#[cfg(test)]
mod tests {
    use super::*;
    use embed::tune::LoraSpec;

    /// Six "tools" (random unit vectors) and twelve requests, two per tool, whose tokens the
    /// untrained encoder maps anywhere.
    fn toy() -> (Vec<Catalog>, Vec<Example>) {
        let mut random = SplitMix(11);
        let vectors: Vec<Vec<f32>> = (0..6)
            .map(|_| {
                let v: Vec<f32> = (0..8).map(|_| random.normal() as f32).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.into_iter().map(|x| x / n).collect()
            })
            .collect();
        let names = (0..6).map(|i| format!("tool{i}")).collect();
        let catalog = Catalog::new("toy", names, &vectors).unwrap();
        let examples = (0..12)
            .map(|i| Example {
                ids: vec![1, 3 + (i as u32 % 6) * 4, 4 + (i as u32 / 6), 2],
                catalog: 0,
                groups: vec![vec![i % 6]],
                weight: 1.0,
                source: "toy".into(),
            })
            .collect();
        (vec![catalog], examples)
    }

    #[test]
    fn the_loss_falls_on_a_toy_set_and_the_requests_find_their_tools() {
        let (tensors, config) = embed::tune::tiny_bert(30, 7);
        let spec = LoraSpec {
            rank: 4,
            alpha: 8.0,
            ..LoraSpec::default()
        };
        let encoder = TrainableEncoder::build(&tensors, &config, &spec, DType::F32)
            .unwrap()
            .unwrap();
        let (catalogs, examples) = toy();
        let all: Vec<&Example> = examples.iter().collect();
        let before = loss(&encoder, &catalogs, &all, 0.1)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        let recall_before = cosine_recall(&encoder, &catalogs, &examples).unwrap().r1;
        let settings = Settings {
            epochs: 60,
            batch: 4,
            learning_rate: 2e-2,
            temperature: 0.1,
            log_every: 30,
            ..Settings::default()
        };
        let mut epochs = 0;
        let curve = train(
            &encoder,
            &catalogs,
            &examples,
            &settings,
            |_| {},
            |_| {
                epochs += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(epochs, 60);
        assert_eq!(curve.last().unwrap().step, 180, "12 examples in batches of 4, 60 times");
        let after = loss(&encoder, &catalogs, &all, 0.1)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        let recall_after = cosine_recall(&encoder, &catalogs, &examples).unwrap().r1;
        assert!(after < before * 0.5, "loss {before} → {after}");
        assert!(
            recall_after > recall_before && recall_after >= 0.75,
            "R@1 {recall_before} → {recall_after}"
        );
        assert!(curve.first().unwrap().loss > curve.last().unwrap().loss);
    }

    #[test]
    fn the_same_seed_trains_the_same_pairs() {
        let (catalogs, examples) = toy();
        let run = || {
            let (tensors, config) = embed::tune::tiny_bert(30, 7);
            let encoder = TrainableEncoder::build(&tensors, &config, &LoraSpec::default(), DType::F32)
                .unwrap()
                .unwrap();
            let s = Settings {
                epochs: 2,
                batch: 5,
                ..Settings::default()
            };
            train(&encoder, &catalogs, &examples, &s, |_| {}, |_| Ok(())).unwrap();
            encoder.delta("00", serde_json::json!({})).unwrap().pairs
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn other_gold_groups_are_not_negatives_and_each_group_counts() {
        // a request needing tools 0 and 1: its loss is the mean of the two groups' losses,
        // each over its own tool and the non-gold ones
        let (tensors, config) = embed::tune::tiny_bert(30, 7);
        let encoder = TrainableEncoder::build(&tensors, &config, &LoraSpec::default(), DType::F32)
            .unwrap()
            .unwrap();
        let (catalogs, _) = toy();
        let e = Example {
            ids: vec![1, 5, 6, 2],
            catalog: 0,
            groups: vec![vec![0], vec![1]],
            weight: 1.0,
            source: "toy".into(),
        };
        let got = loss(&encoder, &catalogs, &[&e], 0.1)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        let q = encoder.forward(&[&e.ids]).unwrap();
        let s: Vec<f32> = (q.matmul(&catalogs[0].columns).unwrap() / 0.1)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1()
            .unwrap();
        let lse = |idx: &[usize]| idx.iter().map(|&i| s[i].exp()).sum::<f32>().ln();
        let expected = 0.5 * (lse(&[0, 2, 3, 4, 5]) - s[0]) + 0.5 * (lse(&[1, 2, 3, 4, 5]) - s[1]);
        assert!((got - expected).abs() < 1e-4, "{got} vs {expected}");
    }
}
