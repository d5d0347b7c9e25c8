//! The fitting arithmetic of `search-eval train`: the ranker's terms by Adam on the listwise
//! softmax loss, and regression trees boosted on its scores by the same loss's Newton steps
//! (the loss's gradient and hessian per candidate in [`softmax_gradient`]). What the trainer
//! fits on and how it judges the result stay in `train.rs`.

use tool_search::fusion::{Candidates, FusionModel, Node, Term, Tree, N_FEATURES, N_INPUTS};

use super::{ranker_only, SetData};

/// Adam on the whole batch.
struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
    rate: f64,
}

impl Adam {
    fn new(n: usize, rate: f64) -> Adam {
        Adam {
            m: vec![0.0; n],
            v: vec![0.0; n],
            t: 0,
            rate,
        }
    }

    fn step(&mut self, w: &mut [f64], g: &[f64]) {
        let (b1, b2) = (0.9, 0.999);
        self.t += 1;
        for i in 0..w.len() {
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * g[i];
            self.v[i] = b2 * self.v[i] + (1.0 - b2) * g[i] * g[i];
            let mh = self.m[i] / (1.0 - b1.powi(self.t));
            let vh = self.v[i] / (1.0 - b2.powi(self.t));
            w[i] -= self.rate * mh / (vh.sqrt() + 1e-8);
        }
    }
}

/// The terms' weights minimising the weighted listwise softmax loss over `sets`' texts that
/// have a gold candidate. A text's score of a candidate is its features times the feature
/// weights its signals give ([`FusionModel::feature_weights`]), so a term's gradient is its
/// feature's gradient times its signal.
pub(super) fn fit_ranker(sets: &[&SetData], terms: &[Term], iterations: usize, l2: f64) -> Vec<Term> {
    // (candidates, gold groups, weight) per text
    let mut samples: Vec<(&Candidates, &[u64], f64)> = Vec::new();
    for s in sets {
        let w = s.weight();
        for texts in &s.texts {
            let per = w / texts.len().max(1) as f64;
            for (c, gold) in texts {
                if gold.iter().any(|&g| g != 0) {
                    samples.push((c, gold, per));
                }
            }
        }
    }
    let total: f64 = samples.iter().map(|s| s.2).sum::<f64>().max(1e-12);
    let mut model = ranker_only(terms.to_vec());
    let mut theta = vec![0.0; terms.len()];
    let mut adam = Adam::new(terms.len(), 0.05);
    let mut scores: Vec<f64> = Vec::new();
    let (mut gr, mut hr) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        for (t, w) in model.terms.iter_mut().zip(&theta) {
            t.weight = *w;
        }
        let mut grad = vec![0.0; terms.len()];
        for (c, gold, weight) in &samples {
            let fw = model.feature_weights(&c.signals);
            scores.clear();
            scores.extend(
                c.features
                    .iter()
                    .map(|r| r.iter().zip(&fw).map(|(a, b)| a * b).sum::<f64>()),
            );
            softmax_gradient(&scores, gold, &mut gr, &mut hr);
            let mut gf = [0.0; N_FEATURES];
            for (r, p) in c.features.iter().zip(&gr) {
                if *p != 0.0 {
                    for k in 0..N_FEATURES {
                        gf[k] += p * r[k];
                    }
                }
            }
            for (g, t) in grad.iter_mut().zip(terms) {
                *g += weight * gf[t.feature] * t.signal.map_or(1.0, |s| c.signals[s]);
            }
        }
        for (g, w) in grad.iter_mut().zip(&theta) {
            *g = *g / total + l2 * w;
        }
        adam.step(&mut theta, &grad);
    }
    for (t, w) in model.terms.iter_mut().zip(&theta) {
        t.weight = *w;
    }
    model.terms
}

/// How the trees are grown.
#[derive(Debug, Clone, Copy)]
pub struct TreeParams {
    pub trees: usize,
    pub depth: usize,
    pub rate: f64,
    /// L2 on a leaf's value (Newton step −G / (H + λ)).
    pub lambda: f64,
    /// A split needs this much hessian on each side.
    pub min_hessian: f64,
}

/// Cut points of each input: up to 31 quantiles of its values (every 7th row sampled).
fn cut_points(rows: &[[f64; N_INPUTS]]) -> Vec<Vec<f64>> {
    (0..N_INPUTS)
        .map(|k| {
            let mut v: Vec<f64> = rows.iter().step_by(7).map(|r| r[k]).collect();
            v.sort_by(f64::total_cmp);
            let mut cuts: Vec<f64> = (1..32).filter_map(|q| v.get(q * v.len() / 32).copied()).collect();
            cuts.dedup();
            cuts
        })
        .collect()
}

/// Each row's bin per input: how many of the input's cut points lie below its value.
fn bin_rows(rows: &[[f64; N_INPUTS]], cuts: &[Vec<f64>]) -> Vec<[u8; N_INPUTS]> {
    rows.iter()
        .map(|r| std::array::from_fn(|k| cuts[k].partition_point(|c| *c < r[k]) as u8))
        .collect()
}

/// Regression trees boosted on `base`'s scores by the listwise softmax loss's Newton steps
/// (gradient p − q and hessian p(1 − p) per candidate, p the softmax over a text's
/// candidates, q its share of the gold), grown level by level on binned inputs.
pub(super) fn fit_trees(sets: &[&SetData], base: &FusionModel, p: TreeParams) -> Vec<Tree> {
    // rows of every text with a gold candidate, grouped by text
    let mut rows: Vec<[f64; N_INPUTS]> = Vec::new();
    let mut gold: Vec<u64> = Vec::new();
    let mut score: Vec<f64> = Vec::new();
    let mut texts: Vec<(usize, usize, f64)> = Vec::new();
    for s in sets {
        let w = s.weight();
        for per in &s.texts {
            let tw = w / per.len().max(1) as f64;
            for (c, g) in per {
                if !g.iter().any(|&x| x != 0) {
                    continue;
                }
                let start = rows.len();
                let r = s.index.rank_candidates(c, base);
                let mut by_pos = vec![0.0; c.docs.len()];
                for (i, sc) in &r.order {
                    by_pos[*i] = *sc;
                }
                for (i, x) in c.features.iter().enumerate() {
                    let mut row = [0.0; N_INPUTS];
                    row[..N_FEATURES].copy_from_slice(x);
                    row[N_FEATURES..].copy_from_slice(&c.signals);
                    rows.push(row);
                    gold.push(g[i]);
                    score.push(by_pos[i]);
                }
                texts.push((start, rows.len(), tw));
            }
        }
    }
    let total: f64 = texts.iter().map(|t| t.2).sum::<f64>().max(1e-12);
    let cuts = cut_points(&rows);
    let bins = bin_rows(&rows, &cuts);
    let n = rows.len();
    let mut g = vec![0.0; n];
    let mut h = vec![0.0; n];
    let mut node = vec![0u32; n];
    let mut trees = Vec::with_capacity(p.trees);
    let (mut tg, mut th) = (Vec::new(), Vec::new());
    for _ in 0..p.trees {
        for &(a, b, w) in &texts {
            let w = w / total;
            softmax_gradient(&score[a..b], &gold[a..b], &mut tg, &mut th);
            for i in a..b {
                g[i] = w * tg[i - a];
                h[i] = w * th[i - a];
            }
        }
        let tree = grow(&bins, &cuts, &g, &h, &mut node, p);
        for i in 0..n {
            score[i] += tree.eval(|k| rows[i][k]);
        }
        trees.push(tree);
    }
    trees
}

/// One tree, grown level by level to `p.depth`: each node splits where the Newton gain is
/// largest, or becomes a leaf.
fn grow(bins: &[[u8; N_INPUTS]], cuts: &[Vec<f64>], g: &[f64], h: &[f64], node: &mut [u32], p: TreeParams) -> Tree {
    let leaf_value = |gs: f64, hs: f64| -p.rate * gs / (hs + p.lambda);
    let (g0, h0) = (g.iter().sum::<f64>(), h.iter().sum::<f64>());
    let mut nodes = vec![Node::Leaf {
        value: leaf_value(g0, h0),
    }];
    node.iter_mut().for_each(|x| *x = 0);
    // the nodes still open at this level: (node index, G, H)
    let mut open: Vec<(usize, f64, f64)> = vec![(0, g0, h0)];
    for _ in 0..p.depth {
        if open.is_empty() {
            break;
        }
        // histograms: open node slot → input → bin → (G, H)
        let slot_of: std::collections::HashMap<usize, usize> = open.iter().enumerate().map(|(s, o)| (o.0, s)).collect();
        let mut hist = vec![[[(0.0f64, 0.0f64); 33]; N_INPUTS]; open.len()];
        for (i, b) in bins.iter().enumerate() {
            let Some(&s) = slot_of.get(&(node[i] as usize)) else {
                continue;
            };
            let hs = &mut hist[s];
            for k in 0..N_INPUTS {
                let cell = &mut hs[k][b[k] as usize];
                cell.0 += g[i];
                cell.1 += h[i];
            }
        }
        let mut next_open = Vec::new();
        let mut moves: Vec<(usize, usize, u8, usize, usize)> = Vec::new();
        for (s, &(at, gs, hs)) in open.iter().enumerate() {
            let parent = gs * gs / (hs + p.lambda);
            let mut best: Option<(f64, usize, usize, f64, f64)> = None;
            for k in 0..N_INPUTS {
                let (mut gl, mut hl) = (0.0, 0.0);
                for (b, cell) in hist[s][k].iter().take(cuts[k].len()).enumerate() {
                    gl += cell.0;
                    hl += cell.1;
                    let (gr, hr) = (gs - gl, hs - hl);
                    if hl < p.min_hessian || hr < p.min_hessian {
                        continue;
                    }
                    let gain = gl * gl / (hl + p.lambda) + gr * gr / (hr + p.lambda) - parent;
                    if gain > 1e-12 && best.is_none_or(|x| gain > x.0) {
                        best = Some((gain, k, b, gl, hl));
                    }
                }
            }
            let Some((_, k, b, gl, hl)) = best else { continue };
            let (gr, hr) = (gs - gl, hs - hl);
            let below = nodes.len();
            nodes.push(Node::Leaf {
                value: leaf_value(gl, hl),
            });
            nodes.push(Node::Leaf {
                value: leaf_value(gr, hr),
            });
            nodes[at] = Node::Split {
                input: k,
                at: cuts[k][b],
                value: leaf_value(gs, hs),
                below,
                above: below + 1,
            };
            moves.push((at, k, b as u8, below, below + 1));
            next_open.push((below, gl, hl));
            next_open.push((below + 1, gr, hr));
        }
        let split: std::collections::HashMap<usize, (usize, u8, usize, usize)> =
            moves.iter().map(|&(at, k, b, l, r)| (at, (k, b, l, r))).collect();
        for (i, b) in bins.iter().enumerate() {
            if let Some(&(k, cut, l, r)) = split.get(&(node[i] as usize)) {
                node[i] = if b[k] <= cut { l as u32 } else { r as u32 };
            }
        }
        open = next_open;
    }
    Tree { nodes }
}

/// The listwise loss's gradient and (diagonal) hessian with respect to each candidate's score:
/// the loss is the mean over the text's gold groups of −log(the softmax's share of the
/// group), so every needed tool is pulled up, not only the one most easily found (R@k counts
/// groups). Gradient p − q, q a candidate's share of its groups' shares over their count;
/// hessian p(1 − p).
fn softmax_gradient(scores: &[f64], groups: &[u64], g: &mut Vec<f64>, h: &mut Vec<f64>) {
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let z: f64 = e.iter().sum();
    let mut zg = [0.0f64; 64];
    let present = groups.iter().fold(0u64, |m, x| m | x);
    for (ei, m) in e.iter().zip(groups) {
        let mut m = *m;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            zg[b] += ei;
            m &= m - 1;
        }
    }
    let count = f64::from(present.count_ones().max(1));
    g.clear();
    h.clear();
    for (ei, m) in e.iter().zip(groups) {
        let p = ei / z;
        let mut q = 0.0;
        let mut m = *m;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            q += ei / zg[b];
            m &= m - 1;
        }
        g.push(p - q / count);
        h.push((p * (1.0 - p)).max(1e-6));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gradient_pulls_every_gold_group_up_and_sums_to_zero() {
        // four candidates; group 0 is the first, group 1 the third and fourth
        let scores = [2.0, 1.0, 0.0, -1.0];
        let groups = [0b01, 0, 0b10, 0b10];
        let (mut g, mut h) = (Vec::new(), Vec::new());
        softmax_gradient(&scores, &groups, &mut g, &mut h);
        assert!(g.iter().sum::<f64>().abs() < 1e-12, "{g:?}");
        assert!(g[1] > 0.0, "a tool of no group is pushed down");
        assert!(
            g[2] < 0.0 && g[3] < 0.0,
            "the lower group is pulled up, though another is first: {g:?}"
        );
        assert!(h.iter().all(|x| *x > 0.0));
        // one group alone: the softmax's share of it, pulled towards 1
        let (mut g1, mut h1) = (Vec::new(), Vec::new());
        softmax_gradient(&[0.0, 0.0], &[1, 0], &mut g1, &mut h1);
        assert!((g1[0] + 0.5).abs() < 1e-12 && (g1[1] - 0.5).abs() < 1e-12, "{g1:?}");
    }

    #[test]
    fn a_tree_splits_on_the_input_that_separates_the_gradient() {
        // rows whose cosine (input 7) is high want higher scores (negative gradient)
        let rows: Vec<[f64; N_INPUTS]> = (0..200)
            .map(|i| {
                let mut r = [0.0; N_INPUTS];
                r[7] = (i % 10) as f64 / 10.0;
                r[0] = ((i * 7) % 13) as f64 / 13.0;
                r
            })
            .collect();
        let g: Vec<f64> = rows.iter().map(|r| if r[7] >= 0.5 { -1.0 } else { 1.0 }).collect();
        let h = vec![1.0; rows.len()];
        let cuts = cut_points(&rows);
        let bins = bin_rows(&rows, &cuts);
        let mut node = vec![0u32; rows.len()];
        let p = TreeParams {
            trees: 1,
            depth: 2,
            rate: 1.0,
            lambda: 0.0,
            min_hessian: 1.0,
        };
        let tree = grow(&bins, &cuts, &g, &h, &mut node, p);
        match tree.nodes[0] {
            Node::Split { input, at, .. } => assert_eq!((input, at), (7, 0.4)),
            other => panic!("expected a split at the root, got {other:?}"),
        }
        // and its leaves undo the gradient: +1 where it was −1
        for (r, gi) in rows.iter().zip(&g) {
            assert!((tree.eval(|k| r[k]) + gi).abs() < 1e-9);
        }
    }
}
