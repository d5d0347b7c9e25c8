//! Hybrid search: the lexical ranking and the semantic arm's nearest tools, fused by their
//! normalised scores (see the crate docs, "Fusion").

use super::explain::Explanation;
use super::query::Prepared;
use super::score::Lexical;
use super::semantic::Vectors;
use super::{Hit, Index};

/// The semantic arm's input to one search: the tools' vectors (aligned with the index) and
/// the query's vector (of [`crate::semantic::query_text`]).
#[derive(Debug, Clone, Copy)]
pub struct Semantic<'a> {
    pub vectors: &'a Vectors,
    pub query: &'a [f32],
}

/// Fusion constants (one set for every catalog; `docs/search-experiments.md` has what each
/// measured).
#[derive(Debug, Clone)]
struct FusionParams {
    /// Candidates taken from each arm.
    depth: usize,
    /// Weight of a tool's lexical score, as a share of the best lexical score.
    lexical_weight: f64,
    /// Weight of a tool's similarity, as a share of the best similarity above the floor ...
    semantic_weight: f64,
    /// ... plus this much times the share of the request the lexical arm's best tool did not
    /// cover (its words matched nowhere, or only in other tools).
    uncovered_weight: f64,
    /// The lexical arm's best tool stays first when its runner-up scores under this share of
    /// it ...
    lexical_lead: f64,
    /// ... and it covers at least this share of the request's weight: one stray word that no
    /// other tool happens to match is no lead.
    lead_min_coverage: f64,
    /// Similarities are measured from the `depth`-th nearest tool's, and never from below
    /// this cosine: what every tool of a catalog shares is no evidence.
    min_similarity: f64,
    /// A request the lexical arm abstains on is answered by the semantic arm alone only when
    /// its best tool reaches this cosine ...
    confident_similarity: f64,
    /// ... and one none of whose words the catalog knows, only at this cosine (`xyzzy plugh`
    /// is near something in any catalog).
    unknown_similarity: f64,
}

const FUSION: FusionParams = FusionParams {
    depth: 50,
    lexical_weight: 1.0,
    semantic_weight: 0.5,
    uncovered_weight: 0.5,
    lexical_lead: 0.7,
    lead_min_coverage: 0.3,
    min_similarity: 0.2,
    confident_similarity: 0.25,
    unknown_similarity: 0.4,
};

/// One tool's fused score and its two parts.
#[derive(Debug, Clone, Copy, Default)]
struct Parts {
    lexical: f64,
    semantic: f64,
}

/// Both arms' candidates for one query and how each weighs.
struct Fused {
    /// Kept first (name slots, then a leading lexical winner), then tools by fused score.
    ranked: Vec<(usize, f64)>,
    parts: crate::hashing::FxHashMap<usize, Parts>,
    /// How many of `ranked` are kept first.
    slots: usize,
    semantic_used: bool,
    floor: f64,
    /// The similarity the best tool had to reach for the semantic arm to count.
    bar: f64,
    best_similarity: f64,
    /// The semantic part's weight for this query.
    semantic_weight: f64,
}

impl Index {
    /// [`Index::search`] with the semantic arm when `semantic` is given (and its vectors were
    /// built for this index); lexical only otherwise. `mcp_search`, the `search` and `eval`
    /// commands and the CI floor tests all rank through here.
    pub fn search_hybrid(&self, query: &str, limit: usize, semantic: Option<Semantic<'_>>) -> Vec<Hit> {
        let Some(sem) = self.usable(semantic) else {
            return self.search(query, limit);
        };
        if limit == 0 {
            return Vec::new();
        }
        let fused = self.fuse(query, sem, limit);
        fused
            .ranked
            .into_iter()
            .take(limit)
            .map(|(doc, score)| Hit { doc, score })
            .collect()
    }

    /// [`Index::explain`] for the hybrid search: the fused score of `doc`, its lexical and
    /// semantic parts, and the lexical score's own tree below.
    pub fn explain_hybrid(&self, query: &str, doc: usize, semantic: Option<Semantic<'_>>) -> Explanation {
        let lexical_tree = self.explain(query, doc);
        let Some(sem) = self.usable(semantic) else {
            return Explanation::new("lexical only (no semantic vectors)", lexical_tree.value).with(lexical_tree);
        };
        let f = self.fuse(query, sem, self.docs.len());
        let p = &FUSION;
        if f.ranked.iter().take(f.slots).any(|&(d, _)| d == doc) {
            let score = f.ranked.iter().find(|&&(d, _)| d == doc).map_or(0.0, |r| r.1);
            return Explanation::new(
                format!(
                    "kept first by the lexical arm: the query spells this tool's name, or its lexical score leads the runner-up's by more than 1/{} and it covers at least {} of the request",
                    p.lexical_lead, p.lead_min_coverage
                ),
                score,
            )
            .with(lexical_tree);
        }
        let parts = f.parts.get(&doc).copied().unwrap_or_default();
        let similarity = sem.vectors.similarity(doc, sem.query).map_or(0.0, f64::from);
        let returned = f.ranked.iter().find(|&&(d, _)| d == doc).map(|r| r.1);
        let mut root = match returned {
            Some(score) => Explanation::new("fused score = lexical part + semantic part", score),
            None => Explanation::new(
                "not returned (neither arm found it, or the request's operation is in none of the best tools); its parts:",
                0.0,
            ),
        };
        root.add(
            Explanation::new(
                format!("lexical part ({} × score / best lexical score)", p.lexical_weight),
                parts.lexical,
            )
            .with(lexical_tree),
        );
        let semantic_note = if !f.semantic_used {
            format!(
                "semantic part: not used (the lexical arm abstained or found nothing, and the best similarity {:.3} is under {})",
                f.best_similarity, f.bar
            )
        } else {
            format!(
                "semantic part ({:.3} × (similarity − floor) / (best similarity − floor); weight {} + {} × share of the request the best lexical tool left uncovered)",
                f.semantic_weight, p.semantic_weight, p.uncovered_weight
            )
        };
        root.add(
            Explanation::new(semantic_note, parts.semantic)
                .with(Explanation::new("cosine similarity of tool and query", similarity))
                .with(Explanation::new(
                    format!(
                        "floor (the {}th nearest tool's similarity, at least {})",
                        p.depth, p.min_similarity
                    ),
                    f.floor,
                ))
                .with(Explanation::new("best similarity", f.best_similarity)),
        );
        root
    }

    fn usable<'a>(&self, semantic: Option<Semantic<'a>>) -> Option<Semantic<'a>> {
        semantic.filter(|s| {
            !self.docs.is_empty()
                && s.vectors.len() == self.docs.len()
                && s.vectors.count() > 0
                && s.query.len() == s.vectors.dim()
        })
    }

    fn fuse(&self, query: &str, sem: Semantic<'_>, limit: usize) -> Fused {
        let p = &FUSION;
        let depth = p.depth.max(limit).min(self.docs.len());
        let q: Prepared = self.prepare(query);
        let accs = self.accumulate(&q);
        let lexical: Lexical = self.rank_lexical(&q, &accs, depth);
        let near = sem.vectors.nearest(sem.query, depth);

        let best_similarity = near.first().map_or(-1.0, |h| f64::from(h.1));
        let floor = near
            .last()
            .map_or(p.min_similarity, |h| f64::from(h.1).max(p.min_similarity));
        let slots = lexical.slots.min(lexical.hits.len());
        let scored = &lexical.hits[slots..];
        // the lexical arm's verdict that nothing serves a request stands unless the semantic
        // arm is sure; otherwise any tool above the floor is evidence
        let bar = if lexical.abstained {
            p.confident_similarity
        } else if scored.is_empty() {
            p.unknown_similarity
        } else {
            floor
        };
        let semantic_used = if lexical.abstained || scored.is_empty() {
            best_similarity >= bar
        } else {
            best_similarity > floor
        };

        let mut parts: crate::hashing::FxHashMap<usize, Parts> = Default::default();
        let lexical_top = scored.first().map_or(0.0, |h| h.score).max(1e-9);
        for h in scored {
            parts.entry(h.doc).or_default().lexical = p.lexical_weight * h.score / lexical_top;
        }
        // the less of the request the lexical arm's best tool covers, the more the semantic
        // arm is trusted
        let uncovered = 1.0 - lexical.best_coverage.clamp(0.0, 1.0);
        let ws = p.semantic_weight + p.uncovered_weight * uncovered;
        if semantic_used {
            let span = (best_similarity - floor).max(1e-9);
            for &(d, sim) in &near {
                let sim = f64::from(sim);
                if sim <= floor {
                    break;
                }
                parts.entry(d).or_default().semantic = ws * (sim - floor) / span;
            }
        }
        let mut slot_docs: Vec<usize> = lexical.hits[..slots].iter().map(|h| h.doc).collect();
        // a lexical winner that stands out (a rare identifier, most of a name) stays first
        let leads = lexical.lead_coverage >= p.lead_min_coverage
            && match scored {
                [] => false,
                [_] => true,
                [first, second, ..] => second.score < p.lexical_lead * first.score,
            };
        if leads {
            slot_docs.push(scored[0].doc);
        }
        let mut ranked: Vec<(usize, f64)> = parts
            .iter()
            .filter(|(d, _)| !slot_docs.contains(d))
            .map(|(&d, x)| (d, x.lexical + x.semantic))
            .collect();
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.docs[a.0].name.cmp(&self.docs[b.0].name))
                .then(a.0.cmp(&b.0))
        });
        let top = ranked.first().map_or(0.0, |r| r.1);
        let mut all: Vec<(usize, f64)> = slot_docs
            .iter()
            .enumerate()
            .map(|(i, &d)| (d, top + (slot_docs.len() - i) as f64))
            .collect();
        all.extend(ranked);
        // a short request for an operation none of the best tools offers gets only its name
        // slots (the lexical arm decides this on its own ranking too)
        let name_slots = lexical.slots.min(all.len());
        if self.misses_operation(&q, all[name_slots..].iter().map(|r| r.0 as u32)) {
            all.truncate(name_slots);
        }
        Fused {
            ranked: all,
            parts,
            slots: slot_docs.len(),
            semantic_used,
            floor,
            bar,
            best_similarity,
            semantic_weight: ws,
        }
    }
}
