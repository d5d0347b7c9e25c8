//! Hybrid search: each arm's best tools become candidates, each described by a few named
//! features; a learned model (weighted terms, optionally regression trees) ranks them (see the
//! crate docs, "Fusion", and `docs/search.md`).
//!
//! The model is data: `fusion-model.json` beside this file, written by `search-eval train`
//! (which says how it was chosen) and parsed once per process; `fusion/model.rs` holds its
//! types ([`FusionModel`], [`Term`], [`Tree`]) and reads and writes the file. [`Index::candidates_for`] and
//! [`Index::rank_candidates`] are public so that the trainer ranks through the very code that
//! answers `mcp_search`.

mod model;

use super::explain::Explanation;
use super::query::{ExpansionKind, Prepared};
use super::score::Acc;
use super::semantic::Vectors;
use super::{Hit, Index, PARAMS};
use crate::hashing::FxHashMap;
pub use model::{input_name, tree_input, AbstainOn, FusionModel, ModelError, Node, Term, Tree, N_INPUTS};

/// The semantic arm's input to one search: the tools' vectors (aligned with the index) and
/// the query's vector (of [`crate::semantic::query_text`]).
#[derive(Debug, Clone, Copy)]
pub struct Semantic<'a> {
    pub vectors: &'a Vectors,
    pub query: &'a [f32],
}

/// Candidates taken from each arm (and at most this many tools whose name the query spells).
pub const DEPTH: usize = 50;

/// How many features describe a candidate.
pub const N_FEATURES: usize = 11;

/// A candidate's features, in the order of [`Candidates::features`]' rows: what each arm
/// says of the tool. Each is in [0, 1].
pub const FEATURES: [(&str, &str); N_FEATURES] = [
    ("lexical", "lexical score / best lexical score"),
    (
        "lexical_rank",
        "1 / (1 + rank) in the lexical ranking (0 below its first 50)",
    ),
    ("coverage", "share of the request's weight the tool matched"),
    (
        "name_coverage",
        "share of the tool's own name words the request matched",
    ),
    ("spelled", "the request spells the tool's name (1 or 0)"),
    ("operation", "offers the request's operation word (1 when it has none)"),
    (
        "leads",
        "the lexical arm's first, when its runner-up scores under 70% of it and it covers 30% of the request (1 or 0)",
    ),
    ("cosine", "cosine similarity of tool and request"),
    ("cosine_share", "(cosine - 50th cosine) / (best cosine - 50th cosine)"),
    (
        "semantic_rank",
        "1 / (1 + rank) among the nearest tools (0 below the first 50)",
    ),
    ("agree", "lexical x cosine_share"),
];

/// How many signals describe the query as a whole.
pub const N_SIGNALS: usize = 7;

/// The query's signals, in the order of [`Candidates::signals`]: what kind of request it is
/// and how sure each arm is. A model term may weigh a feature by a signal (`cosine_share *
/// doubt`): that is how the model learns which arm to trust for which request. Each is in
/// [0, 1].
pub const SIGNALS: [(&str, &str); N_SIGNALS] = [
    (
        "doubt",
        "share of the request the lexical arm's best tool left uncovered (unknown words counted)",
    ),
    ("verbose", "content words beyond 4, as a share of 26 more (1 from 30)"),
    ("foreign", "share of the request's weight read through translations"),
    (
        "unknown",
        "share of the request's weight in words the catalog does not know",
    ),
    ("lexical_lead", "1 - the lexical runner-up's score / the first's"),
    ("best_cosine", "the nearest tool's cosine"),
    (
        "lexical_abstains",
        "the lexical arm alone would answer nothing (1 or 0)",
    ),
];

/// Positions in a feature row (the order of [`FEATURES`]).
mod feature {
    pub const LEXICAL: usize = 0;
    pub const LEXICAL_RANK: usize = 1;
    pub const COVERAGE: usize = 2;
    pub const NAME_COVERAGE: usize = 3;
    pub const SPELLED: usize = 4;
    pub const OPERATION: usize = 5;
    pub const LEADS: usize = 6;
    pub const COSINE: usize = 7;
    pub const COSINE_SHARE: usize = 8;
    pub const SEMANTIC_RANK: usize = 9;
    pub const AGREE: usize = 10;
}

/// Positions in the signals (the order of [`SIGNALS`]).
mod signal {
    pub const DOUBT: usize = 0;
    pub const VERBOSE: usize = 1;
    pub const FOREIGN: usize = 2;
    pub const UNKNOWN: usize = 3;
    pub const LEXICAL_LEAD: usize = 4;
    pub const BEST_COSINE: usize = 5;
    pub const LEXICAL_ABSTAINS: usize = 6;
}

/// The lexical arm's first tool `leads` when its lead (1 − runner-up's score / its score) is at
/// least this (the runner-up scores under 70% of it) ...
const LEAD_MIN: f64 = 0.3;
/// ... and it covers at least this share of the request (one stray word is no lead).
const LEAD_MIN_COVERAGE: f64 = 0.3;

/// Both arms' candidates for one query: the tools, one feature row each, and the query's
/// signals.
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    pub docs: Vec<usize>,
    pub features: Vec<[f64; N_FEATURES]>,
    pub signals: [f64; N_SIGNALS],
    /// The lexical arm's own score of each candidate (for the explanation).
    lexical_scores: Vec<f64>,
    /// The request is short and names an operation (`Index::misses_operation`): a ranking
    /// none of whose best tools offers it answers nothing.
    operation_applies: bool,
}

/// One query's candidates in the model's order.
#[derive(Debug, Clone, Default)]
pub struct Ranked {
    /// (position in [`Candidates::docs`], learned score), best first.
    pub order: Vec<(usize, f64)>,
    /// The search answers nothing: the lexical arm abstains and the semantic arm's nearest
    /// tool is under [`FusionModel::abstain_below`].
    pub abstains: bool,
}

impl Candidates {
    /// The lexical arm alone would answer nothing (see [`SIGNALS`]).
    pub fn lexical_abstains(&self) -> bool {
        self.signals[signal::LEXICAL_ABSTAINS] > 0.5
    }

    /// The nearest tool's cosine.
    pub fn best_cosine(&self) -> f64 {
        self.signals[signal::BEST_COSINE]
    }

    /// The catalog knows none of the request's words, in any form, and it spells no name.
    pub fn no_word_known(&self) -> bool {
        self.signals[signal::UNKNOWN] >= 1.0 - 1e-9 && self.features.iter().all(|x| x[feature::SPELLED] == 0.0)
    }

    /// Whether `model`'s cosine bar may leave this request without a result.
    pub fn doubtful(&self, model: &FusionModel) -> bool {
        match model.abstain_on {
            AbstainOn::LexicalAbstains => self.lexical_abstains(),
            AbstainOn::NoWordKnown => self.no_word_known(),
        }
    }

    /// A short request for an operation none of the ranking's best tools (names it spells
    /// aside) offers: the lexical arm's operation test ([`Index::misses_operation`]) on the
    /// learned ranking.
    fn misses_operation(&self, order: &[(usize, f64)]) -> bool {
        if !self.operation_applies {
            return false;
        }
        let mut best = order
            .iter()
            .filter(|o| self.features[o.0][feature::SPELLED] == 0.0)
            .take(PARAMS.operation_depth)
            .peekable();
        best.peek().is_some() && best.all(|o| self.features[o.0][feature::OPERATION] == 0.0)
    }
}

impl Index {
    /// [`Index::search`] with the semantic arm when `semantic` is given (and its vectors were
    /// built for this index); lexical only otherwise. `mcp_search`, `search-eval` and the CI
    /// floor tests all rank through here, with [`FusionModel::builtin`].
    pub fn search_hybrid(&self, query: &str, limit: usize, semantic: Option<Semantic<'_>>) -> Vec<Hit> {
        let Some(sem) = self.usable(semantic) else {
            return self.search(query, limit);
        };
        if limit == 0 {
            return Vec::new();
        }
        let c = self.candidates(query, sem);
        self.hits(&c, &self.rank_candidates(&c, FusionModel::builtin()), limit)
    }

    /// The hits of a ranking: nothing when it abstains, else its first `limit` tools.
    pub fn hits(&self, c: &Candidates, r: &Ranked, limit: usize) -> Vec<Hit> {
        if r.abstains {
            return Vec::new();
        }
        r.order
            .iter()
            .take(limit)
            .map(|&(i, score)| Hit { doc: c.docs[i], score })
            .collect()
    }

    /// Each arm's best [`DEPTH`] tools and the tools whose name the query spells, with their
    /// features; `None` when the vectors do not fit this index.
    pub fn candidates_for(&self, query: &str, semantic: Semantic<'_>) -> Option<Candidates> {
        self.usable(Some(semantic)).map(|s| self.candidates(query, s))
    }

    fn candidates(&self, query: &str, sem: Semantic<'_>) -> Candidates {
        let q: Prepared = self.prepare(query);
        let accs = self.accumulate(&q);
        let lexical = self.lexical_side(&q, &accs);
        let semantic = SemanticSide::of(sem);
        let pool = Pool::of(&lexical, &semantic);
        let (features, lexical_scores) = self.features(&q, &accs, &lexical, &semantic, &pool);
        Candidates {
            docs: pool.docs,
            features,
            signals: signals(&q, &accs, &lexical, &semantic),
            lexical_scores,
            operation_applies: q.operation.is_some() && q.groups.len() <= PARAMS.operation_max_words,
        }
    }

    /// The lexical arm's part of a request's candidates: its ranking, the names the request
    /// spells and its own verdict.
    fn lexical_side(&self, q: &Prepared, accs: &[(u32, Acc)]) -> LexicalSide {
        // the lexical ranking: every tool the query reaches, by score (no gate, cut or
        // abstention: the features carry what those rules read)
        let mut ranking: Vec<(f64, u32, usize)> = accs
            .iter()
            .enumerate()
            .map(|(i, (d, a))| (self.final_score(q, *d, a), *d, i))
            .collect();
        let by_score = |a: &(f64, u32, usize), b: &(f64, u32, usize)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.docs[a.1 as usize].name.cmp(&self.docs[b.1 as usize].name))
                .then(a.1.cmp(&b.1))
        };
        if ranking.len() > DEPTH {
            ranking.select_nth_unstable_by(DEPTH - 1, by_score);
            ranking.truncate(DEPTH);
        }
        ranking.sort_by(by_score);
        let best = ranking.first().map_or(0.0, |l| l.0).max(1e-9);
        let mut spelled: Vec<u32> = q.exact.into_iter().collect();
        spelled.extend(q.name_matches.iter().filter(|&&d| Some(d) != q.exact));
        spelled.truncate(DEPTH);
        // the lexical arm's own verdict (its abstention rules, on its own gated ranking)
        let abstains = spelled.is_empty() && (ranking.is_empty() || self.rank_lexical(q, accs, DEPTH).abstained);
        let lead = match ranking.as_slice() {
            [] => 0.0,
            [_] => 1.0,
            [first, second, ..] => (1.0 - second.0 / first.0.max(1e-9)).clamp(0.0, 1.0),
        };
        LexicalSide {
            ranking,
            best,
            spelled,
            abstains,
            lead,
        }
    }

    /// Each candidate's features (see [`FEATURES`]) and lexical score (0 when the query
    /// does not reach it), in the pool's order.
    fn features(
        &self,
        q: &Prepared,
        accs: &[(u32, Acc)],
        lexical: &LexicalSide,
        semantic: &SemanticSide<'_>,
        pool: &Pool,
    ) -> (Vec<[f64; N_FEATURES]>, Vec<f64>) {
        let (docs, at) = (&pool.docs, &pool.at);
        let acc_of: FxHashMap<u32, usize> = if docs.len() > lexical.ranking.len() {
            accs.iter().enumerate().map(|(i, (d, _))| (*d, i)).collect()
        } else {
            Default::default()
        };
        let mut features = vec![[0.0; N_FEATURES]; docs.len()];
        let mut lexical_scores = vec![0.0; docs.len()];
        for (rank, l) in lexical.ranking.iter().enumerate() {
            let x = &mut features[at[&(l.1 as usize)]];
            x[feature::LEXICAL_RANK] = 1.0 / (1.0 + rank as f64);
        }
        for (rank, h) in semantic.near.iter().enumerate() {
            let x = &mut features[at[&h.0]];
            x[feature::SEMANTIC_RANK] = 1.0 / (1.0 + rank as f64);
        }
        let sem = semantic.sem;
        for (i, &d) in docs.iter().enumerate() {
            let acc: Option<&Acc> = match lexical.ranking.get(i) {
                Some(l) => Some(&accs[l.2].1),
                None => acc_of.get(&(d as u32)).map(|&k| &accs[k].1),
            };
            let x = &mut features[i];
            if let Some(a) = acc {
                let score = self.final_score(q, d as u32, a);
                lexical_scores[i] = score;
                x[feature::LEXICAL] = (score / lexical.best).clamp(0.0, 1.0);
                x[feature::COVERAGE] = Index::coverage(q, a).clamp(0.0, 1.0);
                x[feature::NAME_COVERAGE] = self.name_coverage(d as u32, a);
            }
            x[feature::SPELLED] = f64::from(u8::from(lexical.spelled.contains(&(d as u32))));
            x[feature::OPERATION] = f64::from(u8::from(self.has_operation(q, d as u32)));
            x[feature::LEADS] = f64::from(u8::from(
                i == 0
                    && !lexical.ranking.is_empty()
                    && lexical.lead >= LEAD_MIN
                    && x[feature::COVERAGE] >= LEAD_MIN_COVERAGE,
            ));
            let cosine = sem.vectors.similarity(d, sem.query).map_or(0.0, f64::from);
            x[feature::COSINE] = cosine.clamp(0.0, 1.0);
            x[feature::COSINE_SHARE] = ((cosine - semantic.floor) / semantic.span).clamp(0.0, 1.0);
            x[feature::AGREE] = x[feature::LEXICAL] * x[feature::COSINE_SHARE];
        }
        (features, lexical_scores)
    }
}

/// The lexical arm's part of a request's candidates ([`Index::lexical_side`]).
struct LexicalSide {
    /// Its best [`DEPTH`] tools by score: (score, doc, position in the accumulators).
    ranking: Vec<(f64, u32, usize)>,
    /// The first score (at least 1e-9): what the `lexical` feature divides by.
    best: f64,
    /// The tools whose name the request spells, at most [`DEPTH`].
    spelled: Vec<u32>,
    /// The lexical arm alone would answer nothing.
    abstains: bool,
    /// How far the first score stands above the second (0 to 1).
    lead: f64,
}

/// The semantic arm's part of a request's candidates: its nearest [`DEPTH`] tools.
struct SemanticSide<'a> {
    sem: Semantic<'a>,
    near: Vec<(usize, f32)>,
    /// The nearest tool's cosine.
    best_cosine: f64,
    /// The last neighbour's cosine, where the `cosine_share` feature starts.
    floor: f64,
    /// `best_cosine - floor` (at least 1e-9).
    span: f64,
}

impl<'a> SemanticSide<'a> {
    fn of(sem: Semantic<'a>) -> Self {
        let near = sem.vectors.nearest(sem.query, DEPTH);
        let best_cosine = near.first().map_or(0.0, |h| f64::from(h.1));
        let floor = near.last().map_or(0.0, |h| f64::from(h.1));
        let span = (best_cosine - floor).max(1e-9);
        SemanticSide {
            sem,
            near,
            best_cosine,
            floor,
            span,
        }
    }
}

/// The candidates: the lexical order, then the semantic arm's new ones, then spelled names.
struct Pool {
    docs: Vec<usize>,
    /// Each doc's position in `docs`.
    at: FxHashMap<usize, usize>,
}

impl Pool {
    fn of(lexical: &LexicalSide, semantic: &SemanticSide<'_>) -> Pool {
        let mut at: FxHashMap<usize, usize> = Default::default();
        let mut docs: Vec<usize> =
            Vec::with_capacity(lexical.ranking.len() + semantic.near.len() + lexical.spelled.len());
        for d in lexical
            .ranking
            .iter()
            .map(|l| l.1 as usize)
            .chain(semantic.near.iter().map(|h| h.0))
            .chain(lexical.spelled.iter().map(|&d| d as usize))
        {
            at.entry(d).or_insert_with(|| {
                docs.push(d);
                docs.len() - 1
            });
        }
        Pool { docs, at }
    }
}

/// The request's signals (see [`SIGNALS`]).
fn signals(q: &Prepared, accs: &[(u32, Acc)], lexical: &LexicalSide, semantic: &SemanticSide<'_>) -> [f64; N_SIGNALS] {
    let whole = q.total_importance + q.unknown_importance;
    let doubt = match lexical.ranking.first() {
        Some(&(_, _, i)) if whole > 0.0 => 1.0 - (accs[i].1.importance / whole).clamp(0.0, 1.0),
        _ => 1.0,
    };
    let foreign = if whole > 0.0 {
        q.groups
            .iter()
            .filter(|g| {
                g.expansions.iter().any(|e| e.kind == ExpansionKind::Foreign)
                    && !g.expansions.iter().any(|e| e.kind == ExpansionKind::Word)
            })
            .map(|g| g.importance)
            .sum::<f64>()
            / whole
    } else {
        0.0
    };
    let verbosity = ((q.groups.len() as f64 - 4.0) / 26.0).clamp(0.0, 1.0);
    let mut signals = [0.0; N_SIGNALS];
    signals[signal::DOUBT] = doubt;
    signals[signal::VERBOSE] = verbosity;
    signals[signal::FOREIGN] = foreign.clamp(0.0, 1.0);
    signals[signal::UNKNOWN] = if whole > 0.0 {
        (q.unknown_importance / whole).clamp(0.0, 1.0)
    } else {
        1.0
    };
    signals[signal::LEXICAL_LEAD] = lexical.lead;
    signals[signal::BEST_COSINE] = semantic.best_cosine.clamp(0.0, 1.0);
    signals[signal::LEXICAL_ABSTAINS] = f64::from(u8::from(lexical.abstains));
    signals
}

impl Index {
    /// The candidates in `model`'s order: names the request spells first, then the lexical
    /// arm's first tool when it `leads`, then by learned score (ties by name, then position);
    /// and whether the search answers at all.
    pub fn rank_candidates(&self, c: &Candidates, model: &FusionModel) -> Ranked {
        let w = model.feature_weights(&c.signals);
        let mut order: Vec<(usize, f64)> = c
            .features
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let linear: f64 = x.iter().zip(&w).map(|(a, b)| a * b).sum();
                (i, linear + model.trees_score(x, &c.signals))
            })
            .collect();
        // a candidate neither arm has evidence for (no lexical score, a cosine at or under the
        // 50th neighbour's) is not an answer, only the bottom of the semantic arm's list
        order.retain(|o| {
            let x = &c.features[o.0];
            x[feature::LEXICAL] > 0.0 || x[feature::COSINE_SHARE] > 0.0 || x[feature::SPELLED] > 0.0
        });
        // names the request spells come first (as in the lexical ranking's name slots): a
        // client that writes a tool's name means that tool; then a lexical winner that stands
        // out (a rare identifier, most of a name: as a weighed feature alone it lost R@1 on
        // mcptoolbench and toollens)
        let spelled = |i: usize| c.features[i][feature::SPELLED] > 0.0;
        let leads = |i: usize| c.features[i][feature::LEADS] > 0.0;
        order.sort_by(|a, b| {
            spelled(b.0)
                .cmp(&spelled(a.0))
                .then(leads(b.0).cmp(&leads(a.0)))
                .then(b.1.total_cmp(&a.1))
                .then_with(|| self.docs[c.docs[a.0]].name.cmp(&self.docs[c.docs[b.0]].name))
                .then(c.docs[a.0].cmp(&c.docs[b.0]))
        });
        // a request for an operation none of the best tools offers gets only the names it
        // spells
        if c.misses_operation(&order) {
            order.retain(|o| spelled(o.0));
        }
        let abstains = order.is_empty() || (c.doubtful(model) && c.signals[signal::BEST_COSINE] < model.abstain_below);
        Ranked { order, abstains }
    }

    /// [`Index::explain`] for the hybrid search: the learned score of `doc` as each feature's
    /// contribution (weight × value), the lexical score's own tree under the lexical feature,
    /// the trees' shares, and what decides whether the search answers at all.
    pub fn explain_hybrid(&self, query: &str, doc: usize, semantic: Option<Semantic<'_>>) -> Explanation {
        let lexical_tree = self.explain(query, doc);
        let Some(sem) = self.usable(semantic) else {
            return Explanation::new("lexical only (no semantic vectors)", lexical_tree.value).with(lexical_tree);
        };
        let model = FusionModel::builtin();
        let c = self.candidates(query, sem);
        let r = self.rank_candidates(&c, model);
        let verdict = Explanation::new(
            format!(
                "the nearest tool's cosine; when {} ({}), the search answers only from {}",
                match model.abstain_on {
                    AbstainOn::LexicalAbstains => "the lexical arm abstains",
                    AbstainOn::NoWordKnown => "the catalog knows none of the request's words",
                },
                if c.doubtful(model) { "it does" } else { "it does not" },
                model.abstain_below
            ),
            c.signals[signal::BEST_COSINE],
        );
        let Some(i) = c.docs.iter().position(|&d| d == doc) else {
            return Explanation::new(format!("not returned: not among either arm's best {DEPTH} tools"), 0.0)
                .with(lexical_tree)
                .with(verdict);
        };
        let x = &c.features[i];
        let score = r.order.iter().find(|o| o.0 == i).map_or(0.0, |o| o.1);
        let rank = r.order.iter().position(|o| o.0 == i).unwrap_or(usize::MAX);
        let head = if r.abstains {
            "not returned: nothing is near enough (see the verdict); its learned score = Σ term".to_owned()
        } else {
            format!(
                "learned score (rank {}) = Σ term (weight × feature, or × feature × signal)",
                rank + 1
            )
        };
        let mut root = Explanation::new(head, score);
        for t in &model.terms {
            let (name, what) = FEATURES[t.feature];
            let label = match t.signal {
                None => format!("{name} = {:.4} × {:.4} ({what})", x[t.feature], t.weight),
                Some(s) => format!(
                    "{name} × {} = {:.4} × {:.4} × {:.4} ({what}; {})",
                    SIGNALS[s].0, x[t.feature], c.signals[s], t.weight, SIGNALS[s].1
                ),
            };
            let mut node = Explanation::new(label, t.factor(&c.signals) * x[t.feature]);
            if t.feature == 0 && t.signal.is_none() {
                node.add(Explanation::new("the lexical score", c.lexical_scores[i]).with(lexical_tree.clone()));
            }
            root.add(node);
        }
        if !model.trees.is_empty() {
            let mut shares = [0.0; N_INPUTS];
            let input = |k: usize| tree_input(x, &c.signals, k);
            let bias: f64 = model.trees.iter().map(|t| t.explain(input, &mut shares)).sum();
            let total = bias + shares.iter().sum::<f64>();
            let mut trees = Explanation::new(
                format!("{} trees: each input's share along its paths", model.trees.len()),
                total,
            )
            .with(Explanation::new("the trees' roots", bias));
            for (k, v) in shares.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                trees.add(Explanation::new(format!("{} = {:.4}", input_name(k), input(k)), *v));
            }
            root.add(trees);
        }
        root.with(verdict)
    }

    fn usable<'a>(&self, semantic: Option<Semantic<'a>>) -> Option<Semantic<'a>> {
        semantic.filter(|s| {
            !self.docs.is_empty()
                && s.vectors.len() == self.docs.len()
                && s.vectors.count() > 0
                && s.query.len() == s.vectors.dim()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_model_parses_and_writes_back_the_same() {
        let m = FusionModel::builtin();
        assert!(!m.terms.is_empty());
        assert!((0.0..=1.0).contains(&m.abstain_below));
        assert!(m.provenance["command"].as_str().is_some_and(|c| c.contains("train")));
        let again = FusionModel::from_json(&m.to_json()).unwrap();
        assert_eq!(&again, m);
    }

    #[test]
    fn a_model_file_names_only_known_inputs_and_sound_trees() {
        let file = |terms: &str, trees: &str, bar: f64| {
            format!(r#"{{"provenance": null, "terms": {terms}, "trees": {trees}, "abstain_below": {bar}}}"#)
        };
        let ok = FusionModel::from_json(&file(r#"{"lexical": 1, "cosine_share * doubt": 0.5}"#, "[]", 0.3)).unwrap();
        assert_eq!(ok.terms.len(), 2);
        assert!(ok
            .terms
            .iter()
            .any(|t| t.name() == "cosine_share * doubt" && t.weight == 0.5));
        for (terms, trees, bar, why) in [
            (r#"{"lexicl": 1}"#, "[]", 0.3, "unknown feature `lexicl`"),
            (r#"{"lexical * doubts": 1}"#, "[]", 0.3, "unknown signal `doubts`"),
            (r#"{"lexical": 1}"#, "[]", 1.5, "abstain_below"),
            (
                r#"{"lexical": 1}"#,
                r#"[[{"input": "cosine", "at": 0.5, "value": 0, "below": 0, "above": 1}, {"leaf": 1}]]"#,
                0.3,
                "malformed",
            ),
            (
                r#"{"lexical": 1}"#,
                r#"[[{"input": "nope", "at": 0.5, "value": 0, "below": 1, "above": 2}, {"leaf": 1}, {"leaf": 2}]]"#,
                0.3,
                "unknown tree input",
            ),
            (r#"{"lexical": 1}"#, "[[]]", 0.3, "empty tree"),
        ] {
            let err = FusionModel::from_json(&file(terms, trees, bar)).unwrap_err();
            assert!(err.to_string().contains(why), "{err} (expected {why})");
        }
    }

    #[test]
    fn the_positions_name_what_the_tables_name() {
        for (at, name) in [
            (feature::LEXICAL, "lexical"),
            (feature::LEXICAL_RANK, "lexical_rank"),
            (feature::COVERAGE, "coverage"),
            (feature::NAME_COVERAGE, "name_coverage"),
            (feature::SPELLED, "spelled"),
            (feature::OPERATION, "operation"),
            (feature::LEADS, "leads"),
            (feature::COSINE, "cosine"),
            (feature::COSINE_SHARE, "cosine_share"),
            (feature::SEMANTIC_RANK, "semantic_rank"),
            (feature::AGREE, "agree"),
        ] {
            assert_eq!(FEATURES[at].0, name);
        }
        for (at, name) in [
            (signal::DOUBT, "doubt"),
            (signal::VERBOSE, "verbose"),
            (signal::FOREIGN, "foreign"),
            (signal::UNKNOWN, "unknown"),
            (signal::LEXICAL_LEAD, "lexical_lead"),
            (signal::BEST_COSINE, "best_cosine"),
            (signal::LEXICAL_ABSTAINS, "lexical_abstains"),
        ] {
            assert_eq!(SIGNALS[at].0, name);
        }
    }

    #[test]
    fn a_tree_adds_its_value_and_explains_it_by_input() {
        let text = r#"{"provenance": null, "terms": {}, "abstain_below": 0, "trees": [[
            {"input": "cosine", "at": 0.5, "value": 0.1, "below": 1, "above": 2},
            {"leaf": -0.2},
            {"input": "doubt", "at": 0.3, "value": 0.4, "below": 3, "above": 4},
            {"leaf": 0.3},
            {"leaf": 0.6}
        ]]}"#;
        let m = FusionModel::from_json(text).unwrap();
        let mut x = [0.0; N_FEATURES];
        let mut signals = [0.0; N_SIGNALS];
        x[feature::COSINE] = 0.9;
        signals[signal::DOUBT] = 0.8;
        assert!((m.trees_score(&x, &signals) - 0.6).abs() < 1e-12);
        x[feature::COSINE] = 0.2;
        assert!((m.trees_score(&x, &signals) + 0.2).abs() < 1e-12);
        // the root's value plus each input's share along the path is the tree's value
        x[feature::COSINE] = 0.9;
        let mut shares = [0.0; N_INPUTS];
        let input = |k: usize| tree_input(&x, &signals, k);
        let bias = m.trees[0].explain(input, &mut shares);
        assert!((bias - 0.1).abs() < 1e-12);
        assert!((shares[7] - 0.3).abs() < 1e-12, "cosine: 0.1 → 0.4");
        assert!((shares[N_FEATURES] - 0.2).abs() < 1e-12, "doubt: 0.4 → 0.6");
        assert_eq!(input_name(N_FEATURES), "doubt");
    }
}
