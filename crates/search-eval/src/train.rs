//! `search-eval train`: fits the hybrid search's fusion model (`tool_search::fusion`) on the
//! visible sets and writes it as the data file the search ships with.
//!
//! Each query text's candidates and features come from `Index::candidates_for`, and every
//! ranking below from `Index::rank_candidates`: the very code `mcp_search` runs, so what the
//! trainer measures is what the service does.
//!
//! - **The ranker** is a sum of terms (a feature, or a feature weighed by a request signal),
//!   fitted by a listwise softmax loss averaged over a request's gold groups (−log of the
//!   softmax's share of each group: every needed tool is pulled up, as R@k counts groups),
//!   with a small L2 penalty, by Adam on the whole batch. Every set counts alike (a query
//!   weighs 1/n, n at least 200): the 4,000 metatool questions do not drown the 198 deployment
//!   ones, and ten seed examples do not outweigh either; `--set-weight` raises one set that
//!   would otherwise lose against the search in use. `--trees N` boosts regression trees on
//!   the terms' scores with the same loss's Newton steps.
//! - **What it is fitted on**: `--fit-sets`, only sets whose licence allows training what
//!   ships (MetaTool, MIT, and this project's own sets); ToolLens, MCP-Flow and MCPToolBench++
//!   only judge.
//! - **Leave one set out**: each fitted-on set is ranked by a model fitted on the other
//!   fitted-on sets, every other set by the model fitted on all of them; that held-out table is
//!   how a feature or a model is judged (`--ablate` fits once more without each feature and
//!   each signal; one is kept only when leaving it out loses on the sets it was not trained
//!   on). The written model is fitted on every fitted-on set.
//! - **Query vectors** are the query encoder's (with the built-in query delta unless
//!   `--query-delta` says otherwise); `--query-delta-for SET=FILE` gives a set the vectors of a
//!   delta trained without its requests, so the fusion learns the cosines an unseen request
//!   gets, not the flattering ones of requests the encoder was trained on.
//! - **The abstention's cosine bar** (a request the lexical arm abstains on is answered only
//!   when its nearest tool reaches it) is the highest at which no fitted-on set leaves more than
//!   `--max-zero` of its answerable requests without a result.

use std::path::PathBuf;
use std::process::ExitCode;

use tool_search::eval::{self, EvalQuery, QueryScore, Summary};
use tool_search::fusion::{
    input_name, AbstainOn, Candidates, FusionModel, Node, Term, FEATURES, N_FEATURES, N_INPUTS, SIGNALS,
};
use tool_search::{Index, Semantic};

use crate::eval::interleave;
use crate::sets::{load_own_set, load_visible, LoadedSet, SetInputs};
use crate::train_encoder::LICENSED_SETS;
use crate::vectors::{EvalEmbedder, SetEmbedders};
use embed::QueryDeltaChoice;

mod fit;

pub use fit::TreeParams;
use fit::{fit_ranker, fit_trees};

/// Fit the hybrid search's fusion model on the visible sets (leave-one-set-out report).
#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    #[command(flatten)]
    pub inputs: SetInputs,
    /// Ranking depth the metrics are taken at (the service's default limit).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Terms left out, comma-separated: a feature (`agree`: with every signal that weighs
    /// it), a signal (`verbose`: every term it weighs) or one term (`cosine * doubt`). What
    /// `--ablate` showed to lose nothing on held-out sets.
    #[arg(long, value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Also fit, for each remaining feature and signal, a model without it, and report the
    /// held-out change.
    #[arg(long)]
    pub ablate: bool,
    /// Optimiser steps.
    #[arg(long, default_value_t = 300)]
    pub iterations: usize,
    /// L2 penalty on the weights.
    #[arg(long, default_value_t = 1e-3)]
    pub l2: f64,
    /// The highest share of a set's answerable requests the cosine bar may leave without a
    /// result.
    #[arg(long, default_value_t = 0.015)]
    pub max_zero: f64,
    /// A set's weight raised by a factor, `SET=FACTOR` (repeatable): how a set that loses
    /// against the search in use (`search-eval --baseline`, beyond noise) is weighted up until
    /// it no longer does. Recorded in the model's provenance.
    #[arg(long, value_name = "SET=FACTOR")]
    pub set_weight: Vec<String>,
    /// Regression trees boosted on the terms' scores (0: the terms alone).
    #[arg(long, default_value_t = 0)]
    pub trees: usize,
    /// Their depth.
    #[arg(long, default_value_t = 3)]
    pub tree_depth: usize,
    /// Their learning rate.
    #[arg(long, default_value_t = 0.1)]
    pub tree_rate: f64,
    /// Write the model here (the search's data file is
    /// `crates/tool-search/src/fusion-model.json`); without it, only the report.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The sets the model is fitted on (and its cosine bar chosen on), comma-separated: only
    /// sets whose licence allows training what ships. Every set is judged: one fitted on is
    /// ranked by a model fitted on the others, one not fitted on by the model itself.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "deployment-dev,demo-dev,metatool-dev,seed-examples"
    )]
    pub fit_sets: Vec<String>,
    /// The query delta the query encoder runs with, `builtin`, `none` or a file (default:
    /// `EMBED_QUERY_DELTA`, else `builtin`).
    #[arg(long, value_name = "builtin|none|FILE")]
    pub query_delta: Option<QueryDeltaChoice>,
    /// A set's queries embedded with another delta, `SET=FILE` (repeatable): one trained
    /// without that set's requests, so that its cosines are what an unseen request gets.
    #[arg(long = "query-delta-for", value_name = "SET=FILE")]
    pub query_delta_for: Vec<String>,
    /// Which requests the cosine bar may leave without a result: `lexical_abstains` or
    /// `no_word_known` (see `tool_search::fusion::AbstainOn`).
    #[arg(long, default_value = "no_word_known", value_parser = parse_abstain_on)]
    pub abstain_on: AbstainOn,
    /// One of this project's own sets, fitted on too (repeatable; `crates/search-eval/data/`,
    /// see `search_eval::sets::load_own_set`).
    #[arg(long = "own-set", value_name = "FILE")]
    pub own_sets: Vec<PathBuf>,
}

/// One visible set, with every query text's candidates.
struct SetData {
    name: String,
    index: Index,
    names: Vec<String>,
    queries: Vec<EvalQuery>,
    /// `--set-weight`'s factor for this set (1 unless raised).
    boost: f64,
    /// In `--fit-sets`: the model is fitted on it.
    fit: bool,
    /// Per query, per text: the candidates and the gold groups each is in (bit g: group g;
    /// groups past the 64th are not told apart).
    texts: Vec<Vec<(Candidates, Vec<u64>)>>,
}

impl SetData {
    /// `set`'s candidates for every query text, its query vectors from `embedder`.
    fn load(set: LoadedSet, embedder: &mut EvalEmbedder, boost: f64, fit: bool) -> Result<SetData, String> {
        let LoadedSet { name, tools, queries } = set;
        let index = Index::build(&tools);
        let names: Vec<String> = tools.iter().map(|t| t.tool.name.clone()).collect();
        let vectors = embedder.tool_vectors(&tools)?;
        let texts: Vec<String> = queries
            .iter()
            .flat_map(|q| q.texts())
            .map(|t| tool_search::semantic::query_text(&t))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let qv = embedder.query_vectors(&refs)?;
        let mut all = Vec::with_capacity(queries.len());
        for q in &queries {
            let groups = q.groups();
            let mut per = Vec::new();
            for t in q.texts() {
                let v = qv
                    .get(&tool_search::semantic::query_text(&t))
                    .ok_or_else(|| format!("{name}: no vector for a query"))?;
                let sem = Semantic {
                    vectors: &vectors,
                    query: v.as_slice(),
                };
                let c = index
                    .candidates_for(&t, sem)
                    .ok_or_else(|| format!("{name}: the vectors do not fit the catalog"))?;
                // bit g: the candidate is in gold group g (groups past the 64th not told apart)
                let g: Vec<u64> = c
                    .docs
                    .iter()
                    .map(|&d| {
                        groups
                            .iter()
                            .enumerate()
                            .filter(|(_, g)| g.contains(&names[d]))
                            .fold(0u64, |m, (i, _)| m | 1 << i.min(63))
                    })
                    .collect();
                per.push((c, g));
            }
            all.push(per);
        }
        eprintln!("{name}: {} queries", queries.len());
        Ok(SetData {
            boost,
            fit,
            name,
            index,
            names,
            queries,
            texts: all,
        })
    }

    /// Each query's weight: a set counts as much as any other (a set of fewer than 200
    /// queries counts as its share of 200: ten seed examples do not outweigh 4,000 questions).
    fn weight(&self) -> f64 {
        self.boost / (self.queries.len().max(200) as f64)
    }
}

impl TrainArgs {
    pub fn run(&self) -> ExitCode {
        match self.try_run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("search-eval train: {e}");
                ExitCode::from(2)
            }
        }
    }

    /// The terms to fit: every feature alone and weighed by every signal, but `--drop`'s.
    fn terms(&self) -> Result<Vec<Term>, String> {
        let mut terms = all_terms();
        for d in &self.drop {
            let d = d.trim();
            let before = terms.len();
            terms.retain(|t| {
                !(t.name() == d || FEATURES[t.feature].0 == d || t.signal.is_some_and(|s| SIGNALS[s].0 == d))
            });
            if terms.len() == before {
                return Err(format!("--drop: no term, feature or signal `{d}` (left)"));
            }
        }
        Ok(terms)
    }

    fn try_run(&self) -> Result<(), String> {
        let terms = self.terms()?;
        let (sets, embedders_delta) = self.load()?;
        let fitter = Fitter {
            args: self,
            sets: &sets,
            trees: TreeParams {
                trees: self.trees,
                depth: self.tree_depth,
                rate: self.tree_rate,
                lambda: 1e-3,
                min_hessian: 1e-4,
            },
        };
        if fitter.fit_sets().is_empty() {
            return Err("--fit-sets names no visible set".into());
        }
        let loso = fitter.held_out(&terms);
        let fitted = fitter.fit(&fitter.fit_sets(), &terms);
        fitter.print_table(&loso, &fitted);
        if self.ablate {
            fitter.ablate(&terms, &loso);
        }
        let mut model = fitted;
        model.abstain_on = self.abstain_on;
        model.abstain_below = choose_bar(&fitter.fit_sets(), &model, self.limit, self.max_zero);
        fitter.print_abstention(&model);
        if let Some(out) = &self.out {
            let args: Vec<String> = std::env::args().skip(1).collect();
            model.provenance = serde_json::json!({
                "command": format!("search-eval {}", args.join(" ")),
                "model": self.inputs.embed_model.file_name().map(|n| n.to_string_lossy().into_owned()),
                "held_out": sets.iter().zip(&loso).map(|(s, h)| serde_json::json!({
                    "set": s.name, "r1": round3(h.r1), "r5": round3(h.r5), "mrr": round3(h.mrr),
                })).collect::<Vec<_>>(),
                "dropped": self.drop,
                "set_weights": self.set_weight,
                "fit_sets": self.fit_sets,
                "query_delta": embedders_delta,
                "query_delta_for": self.query_delta_for,
                "own_sets": self.own_sets,
            });
            std::fs::write(out, model.to_json()).map_err(|e| format!("{}: {e}", out.display()))?;
            println!("\nwrote {}", out.display());
        }
        Ok(())
    }

    /// `--set-weight`'s factor for `name` (1 unless raised).
    fn boost_of(&self, name: &str) -> Result<f64, String> {
        self.set_weight
            .iter()
            .find_map(|w| {
                w.split_once('=')
                    .filter(|(n, _)| *n == name)
                    .map(|(_, f)| f.parse::<f64>())
            })
            .transpose()
            .map_err(|e| format!("--set-weight {name}: {e}"))
            .map(|f| f.unwrap_or(1.0))
    }

    /// Every visible set's candidates, and the fingerprint of the query delta of the sets
    /// without a `--query-delta-for` of their own.
    fn load(&self) -> Result<(Vec<SetData>, Option<String>), String> {
        if let Some(s) = self.fit_sets.iter().find(|s| !LICENSED_SETS.contains(&s.as_str())) {
            return Err(format!(
                "--fit-sets: `{s}` may not train what ships (its licence does not allow it; sets that may: {})",
                LICENSED_SETS.join(", ")
            ));
        }
        let default = self.query_delta.clone().unwrap_or_else(QueryDeltaChoice::from_env);
        let mut embedders = SetEmbedders::open(
            &self.inputs.embed_model,
            &self.inputs.vector_cache,
            &default,
            &self.query_delta_for,
        )?;
        let mut sets = load_visible(&self.inputs.eval_dir, &self.inputs.catalogs_dir)?;
        for file in &self.own_sets {
            sets.push(load_own_set(file, &self.inputs.catalogs_dir)?);
        }
        let mut out = Vec::new();
        for set in sets {
            let own = self
                .own_sets
                .iter()
                .any(|f| f.file_stem().is_some_and(|s| *s == *set.name));
            let fit = own || self.fit_sets.contains(&set.name);
            let boost = self.boost_of(&set.name)?;
            let embedder = embedders.for_set(&set.name);
            out.push(SetData::load(set, embedder, boost, fit)?);
        }
        Ok((out, embedders.default_delta().map(str::to_owned)))
    }
}

fn parse_abstain_on(s: &str) -> Result<AbstainOn, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("`{s}`: expected lexical_abstains or no_word_known"))
}

/// One run's fitting: the sets, the settings, and the steps of `try_run`.
struct Fitter<'a> {
    args: &'a TrainArgs,
    sets: &'a [SetData],
    trees: TreeParams,
}

impl Fitter<'_> {
    /// The sets the model is fitted on.
    fn fit_sets(&self) -> Vec<&SetData> {
        self.sets.iter().filter(|s| s.fit).collect()
    }

    /// A model of `terms` fitted on `train` (the ranker, then trees if asked for).
    fn fit(&self, train: &[&SetData], terms: &[Term]) -> FusionModel {
        let mut m = ranker_only(fit_ranker(train, terms, self.args.iterations, self.args.l2));
        if self.trees.trees > 0 {
            m.trees = fit_trees(train, &m, self.trees);
        }
        m
    }

    /// Leave one set out: a fitted-on set is ranked by a model fitted on the others, any other
    /// set by the model fitted on all of them (fitted once).
    fn held_out(&self, terms: &[Term]) -> Vec<Summary> {
        let on_all = self.fit(&self.fit_sets(), terms);
        self.sets
            .iter()
            .enumerate()
            .map(|(k, s)| {
                if !s.fit {
                    return summary(s, &on_all, self.args.limit);
                }
                let train: Vec<&SetData> = self
                    .sets
                    .iter()
                    .enumerate()
                    .filter(|(i, o)| *i != k && o.fit)
                    .map(|(_, s)| s)
                    .collect();
                summary(s, &self.fit(&train, terms), self.args.limit)
            })
            .collect()
    }

    /// The held-out and in-sample figures, the terms, and the trees' inputs.
    fn print_table(&self, loso: &[Summary], fitted: &FusionModel) {
        let in_sample: Vec<Summary> = self.sets.iter().map(|s| summary(s, fitted, self.args.limit)).collect();
        println!("ranker, leave one set out (each fitted-on set ranked by a model fitted on the others, the rest by the model) and fitted on all:");
        println!(
            "{:<16} {:>6} {:>21}   {:>21}",
            "set", "n", "held out R@1/R@5/MRR", "all R@1/R@5/MRR"
        );
        for ((s, h), a) in self.sets.iter().zip(loso).zip(&in_sample) {
            println!(
                "{:<16} {:>6} {:>21}   {:>21}{}",
                s.name,
                h.answerable,
                triple(h),
                triple(a),
                if s.fit { "" } else { "  (not fitted on)" }
            );
        }
        println!("\nterms:");
        for t in &fitted.terms {
            println!("  {:<32} {:>9.4}", t.name(), t.weight);
        }
        if !fitted.trees.is_empty() {
            let mut used = [0usize; N_INPUTS];
            for t in &fitted.trees {
                for n in &t.nodes {
                    if let Node::Split { input, .. } = n {
                        used[*input] += 1;
                    }
                }
            }
            println!("{} trees; splits per input:", fitted.trees.len());
            for (k, u) in used.iter().enumerate().filter(|(_, u)| **u > 0) {
                println!("  {:<32} {u:>5}", input_name(k));
            }
        }
    }

    /// Refits without each feature and each signal, and prints the held-out change.
    fn ablate(&self, terms: &[Term], loso: &[Summary]) {
        println!("\nleaving out a feature or a signal: held-out R@5 change per set (R@1 change in brackets)");
        print!("{:<16}", "left out");
        for s in self.sets {
            print!(" {:>16}", short(&s.name));
        }
        println!("  {:>8}", "mean R@5");
        for g in FEATURES.iter().chain(SIGNALS.iter()).map(|(n, _)| *n) {
            let without: Vec<Term> = terms
                .iter()
                .copied()
                .filter(|t| FEATURES[t.feature].0 != g && t.signal.is_none_or(|s| SIGNALS[s].0 != g))
                .collect();
            if without.len() == terms.len() {
                continue;
            }
            let h = self.held_out(&without);
            print!("{g:<16}");
            let mut mean = 0.0;
            for (a, b) in h.iter().zip(loso) {
                print!(" {:>+7.3} ({:>+6.3})", a.r5 - b.r5, a.r1 - b.r1);
                mean += (a.r5 - b.r5) / self.sets.len() as f64;
            }
            println!("  {mean:>+8.4}");
        }
    }

    /// The chosen bar, every set's figures with it, and the requests it leaves without a
    /// result: the unanswerable ones (whether each abstains) and the answerable ones.
    fn print_abstention(&self, model: &FusionModel) {
        println!(
            "\nabstain_below {:.2} on {:?}: the highest cosine bar at which no fitted-on set leaves more than {} of its answerable requests without a result",
            model.abstain_below, model.abstain_on, self.args.max_zero
        );
        println!("\n{:<16} {:>21} {:>7} {:>8}", "set", "R@1/R@5/MRR", "zero", "abstain");
        for s in self.sets {
            let f = summary(s, model, self.args.limit);
            println!(
                "{:<16} {:>21} {:>7.3} {:>8}",
                s.name,
                triple(&f),
                f.zero_result.unwrap_or(0.0),
                f.abstain.map_or("-".into(), |a| format!("{a:.3}"))
            );
        }
        println!("\nrequests without a result, or unanswerable: lexical arm abstains, no word known, nearest cosine");
        for s in self.sets {
            for (q, texts) in s.queries.iter().zip(&s.texts) {
                let answerable = !q.groups().is_empty();
                for (c, _) in texts {
                    let r = s.index.rank_candidates(c, model);
                    if answerable && !r.abstains {
                        continue;
                    }
                    println!(
                        "  {:<16} {:<12} {:<5} {:<5} {:.3} {}  {}",
                        s.name,
                        if answerable { "ANSWERABLE" } else { "unanswerable" },
                        c.lexical_abstains(),
                        c.no_word_known(),
                        c.best_cosine(),
                        if r.abstains { "nothing" } else { "answered" },
                        q.texts().join(" | ")
                    );
                }
            }
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn short(name: &str) -> &str {
    &name[..name.len().min(16)]
}

fn triple(s: &Summary) -> String {
    format!("{:.3}/{:.3}/{:.3}", s.r1, s.r5, s.mrr)
}

/// Every feature alone, and weighed by every signal.
fn all_terms() -> Vec<Term> {
    (0..N_FEATURES)
        .flat_map(|f| {
            std::iter::once(None)
                .chain((0..SIGNALS.len()).map(Some))
                .map(move |signal| Term {
                    feature: f,
                    signal,
                    weight: 0.0,
                })
        })
        .collect()
}

/// A model of these terms that never abstains.
fn ranker_only(terms: Vec<Term>) -> FusionModel {
    FusionModel {
        terms,
        trees: Vec::new(),
        abstain_below: 0.0,
        abstain_on: AbstainOn::default(),
        provenance: serde_json::Value::Null,
    }
}

/// A set's queries ranked by `model` and scored.
fn summary(s: &SetData, model: &FusionModel, limit: usize) -> Summary {
    let scores = scores(s, model, limit);
    eval::report(&s.queries, &scores).overall
}

fn scores(s: &SetData, model: &FusionModel, limit: usize) -> Vec<QueryScore> {
    s.queries
        .iter()
        .zip(&s.texts)
        .map(|(q, texts)| {
            let answers: Vec<Vec<usize>> = texts
                .iter()
                .map(|(c, _)| {
                    let r = s.index.rank_candidates(c, model);
                    s.index.hits(c, &r, limit).into_iter().map(|h| h.doc).collect()
                })
                .collect();
            eval::score_query(&q.groups(), &interleave(&s.names, &answers, limit))
        })
        .collect()
}

/// The highest cosine bar (in steps of 0.01) at which no set leaves more than `max_zero` of
/// its answerable requests without a result.
fn choose_bar(sets: &[&SetData], model: &FusionModel, limit: usize, max_zero: f64) -> f64 {
    let mut best = 0.0;
    let mut m = model.clone();
    for step in 1..=100 {
        m.abstain_below = step as f64 * 0.01;
        let worst = sets
            .iter()
            .map(|s| summary(s, &m, limit).zero_result.unwrap_or(0.0))
            .fold(0.0, f64::max);
        if worst > max_zero {
            break;
        }
        best = m.abstain_below;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_a_feature_or_a_signal_drops_its_terms() {
        let args = |drop: &[&str]| TrainArgs {
            inputs: SetInputs::default(),
            limit: 10,
            drop: drop.iter().map(|s| s.to_string()).collect(),
            ablate: false,
            iterations: 1,
            l2: 0.0,
            max_zero: 0.02,
            set_weight: Vec::new(),
            trees: 0,
            tree_depth: 3,
            tree_rate: 0.1,
            out: None,
            fit_sets: Vec::new(),
            query_delta: None,
            query_delta_for: Vec::new(),
            own_sets: Vec::new(),
            abstain_on: AbstainOn::NoWordKnown,
        };
        let all = args(&[]).terms().unwrap();
        assert_eq!(all.len(), N_FEATURES * (1 + SIGNALS.len()));
        let fewer = args(&["cosine", "doubt", "lexical * verbose"]).terms().unwrap();
        assert!(fewer.iter().all(|t| FEATURES[t.feature].0 != "cosine"));
        assert!(fewer.iter().all(|t| t.signal.is_none_or(|s| SIGNALS[s].0 != "doubt")));
        assert!(!fewer.iter().any(|t| t.name() == "lexical * verbose"));
        assert!(fewer.iter().any(|t| t.name() == "lexical * foreign"));
        assert!(args(&["nope"]).terms().unwrap_err().contains("nope"));
    }
}
