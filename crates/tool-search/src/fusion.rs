//! Hybrid search: the lexical ranking and the semantic arm's nearest tools, fused.

use super::score::Lexical;
use super::semantic::Vectors;
use super::{Hit, Index};

/// The semantic arm's input to one search: the tools' vectors (aligned with the index) and
/// the query's vector.
#[derive(Debug, Clone, Copy)]
pub struct Semantic<'a> {
    pub vectors: &'a Vectors,
    pub query: &'a [f32],
}

#[derive(Debug, Clone)]
pub(crate) struct FusionParams {
    /// Candidates taken from each arm.
    pub depth: usize,
    /// Reciprocal-rank constant.
    pub rrf_k: f64,
    pub lexical_weight: f64,
    pub semantic_weight: f64,
    /// Below this cosine the semantic arm's best tool is no evidence.
    pub min_similarity: f32,
}

pub(crate) const FUSION: FusionParams = FusionParams {
    depth: 50,
    rrf_k: 60.0,
    lexical_weight: 1.0,
    semantic_weight: 1.0,
    min_similarity: 0.3,
};

impl Index {
    /// [`Index::search`] with the semantic arm when `semantic` is given (and its vectors were
    /// built for this index); lexical only otherwise.
    pub fn search_hybrid(&self, query: &str, limit: usize, semantic: Option<Semantic<'_>>) -> Vec<Hit> {
        let Some(sem) = semantic.filter(|s| s.vectors.len() == self.docs.len() && s.vectors.count() > 0) else {
            return self.search(query, limit);
        };
        if limit == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        let p = &FUSION;
        let q = self.prepare(query);
        let accs = self.accumulate(&q);
        let lexical = self.rank_lexical(&q, &accs, p.depth.max(limit));
        let near = sem.vectors.nearest(sem.query, p.depth.max(limit));
        fuse(self, &lexical, &near, limit)
    }
}

fn fuse(index: &Index, lexical: &Lexical, near: &[(usize, f32)], limit: usize) -> Vec<Hit> {
    let p = &FUSION;
    let n = index.docs.len();
    let best_sim = near.first().map_or(f32::MIN, |h| h.1);
    let semantic_counts = best_sim >= p.min_similarity;
    if lexical.abstained && !semantic_counts {
        return Vec::new();
    }
    let mut score = vec![0.0f64; 0];
    score.resize(n, 0.0);
    let mut touched: Vec<usize> = Vec::new();
    for (r, h) in lexical.hits.iter().enumerate() {
        if score[h.doc] == 0.0 {
            touched.push(h.doc);
        }
        score[h.doc] += p.lexical_weight / (p.rrf_k + r as f64 + 1.0);
    }
    if semantic_counts {
        for (r, &(d, sim)) in near.iter().enumerate() {
            if sim < p.min_similarity {
                break;
            }
            if score[d] == 0.0 {
                touched.push(d);
            }
            score[d] += p.semantic_weight / (p.rrf_k + r as f64 + 1.0);
        }
    }
    let slots: Vec<usize> = lexical.hits.iter().take(lexical.slots).map(|h| h.doc).collect();
    let mut ranked: Vec<(f64, usize)> = touched
        .into_iter()
        .filter(|d| !slots.contains(d))
        .map(|d| (score[d], d))
        .collect();
    ranked.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| index.docs[a.1].name.cmp(&index.docs[b.1].name))
            .then(a.1.cmp(&b.1))
    });
    let top = ranked.first().map_or(0.0, |r| r.0);
    let mut hits: Vec<Hit> = slots
        .iter()
        .enumerate()
        .map(|(i, &d)| Hit {
            doc: d,
            score: top + (slots.len() - i) as f64,
        })
        .collect();
    hits.extend(ranked.into_iter().map(|(s, d)| Hit { doc: d, score: s }));
    hits.truncate(limit);
    hits
}
