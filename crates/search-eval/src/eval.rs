//! `search-eval` without a subcommand: retrieval metrics of the search over a query set,
//! computed by `tool_search::eval` (the same functions the floor tests in `tests/` use) on
//! rankings from the same `Index::search` that answers `mcp_search`.
//!
//! Two modes: one set (`--catalog FILE --queries FILE`), or every visible set at once
//! (`--all-visible`: each folder of `--eval-dir` with a `queries.json`, answered from its own
//! `catalog.json` or else from `--catalogs-dir`'s `deployment.json`), one table for all.
//! With `--embed-model` the semantic arm ranks too; `--arms` then also scores each arm alone
//! and the better of the two per query ([`eval::better_of`]), in a second table.
//! `--export-texts DIR` writes the texts the arm embeds and stops; `--vectors DIR` ranks with
//! another model's vectors of them instead of the model's (see `vectors`), to measure a
//! candidate model through the same fusion.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tool_search::catalog_file::load_catalog_path;
use tool_search::eval::{self, Change, EvalQuery, QueryScore, Report, Summary};
use tool_search::semantic::Vectors;
use tool_search::{Index, Semantic};

use crate::vectors::{EvalEmbedder, SetEmbedders, TextExport, EXPORTED_QUERIES, EXPORTED_TOOLS};
#[cfg(test)]
use crate::vectors::{EXTERNAL_TEXTS, EXTERNAL_VECTORS};
use embed::QueryDeltaChoice;

/// Measure search quality: R@1, R@5, R@10, MRR, nDCG@5, zero-result and abstain rates.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("semantic").args(["embed_model", "vectors"]))]
pub struct EvalArgs {
    /// Catalog file the queries are answered from.
    #[arg(long, required_unless_present = "all_visible", conflicts_with = "all_visible")]
    pub catalog: Option<PathBuf>,
    /// Query set: `[{"id", "query", "gold_groups" | "gold", "kind"?}]`.
    #[arg(long, required_unless_present = "all_visible", conflicts_with = "all_visible")]
    pub queries: Option<PathBuf>,
    /// Score every set in --eval-dir and print one table (one row per set, and per kind).
    #[arg(long)]
    pub all_visible: bool,
    /// With --all-visible: the folder of evaluation sets (one folder per set, each with a
    /// `queries.json` and optionally its own `catalog.json`).
    #[arg(long, default_value = "../shared/bench/eval")]
    pub eval_dir: PathBuf,
    /// With --all-visible: where `deployment.json` is, the catalog of sets without their own.
    #[arg(long, default_value = "../shared/bench/catalogs")]
    pub catalogs_dir: PathBuf,
    /// Ranking depth (the service's default limit is 10).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Write one `{"id", "ranked": [names]}` line per query to this file.
    #[arg(long, conflicts_with = "all_visible")]
    pub rankings: Option<PathBuf>,
    /// With --all-visible: write each set's rankings to `DIR/<set>.jsonl` (the lines of
    /// --rankings), to compare a later run against with --baseline.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["catalog", "queries"])]
    pub save_rankings: Option<PathBuf>,
    /// With --all-visible: compare each set query by query with the rankings saved in DIR
    /// (--save-rankings of an earlier run): queries whose R@1, R@5 or abstention rose or fell,
    /// and whether the falls are beyond noise (two-sided sign test, p < 0.05).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["catalog", "queries"])]
    pub baseline: Option<PathBuf>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How many of the worst misses to list (single-set mode).
    #[arg(long, default_value_t = 10)]
    pub misses: usize,
    /// Rank with the semantic arm too, using the model in this directory (as `EMBED_MODEL`).
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    /// Where the tool and query vectors are kept between runs (with --embed-model).
    #[arg(long, default_value = "target/vector-cache")]
    pub vector_cache: PathBuf,
    /// With --embed-model: the query delta the query encoder runs with, `builtin` (the
    /// service's), `none`, or a delta file (default: `EMBED_QUERY_DELTA`, else `builtin`).
    #[arg(long, value_name = "builtin|none|FILE")]
    pub query_delta: Option<QueryDeltaChoice>,
    /// With --embed-model: a set's queries embedded with another delta, `SET=FILE`
    /// (repeatable): one trained without that set's requests, so its figures are held out.
    #[arg(long = "query-delta-for", value_name = "SET=FILE")]
    pub query_delta_for: Vec<String>,
    /// Rank with the semantic arm on vectors computed elsewhere instead of the model: DIR holds
    /// `texts.jsonl` (one JSON string per line) and `vectors.f32` (a row of little-endian f32s
    /// per line), covering the texts --export-texts writes for the same sets. To measure
    /// another model through the same fusion.
    #[arg(long, value_name = "DIR")]
    pub vectors: Option<PathBuf>,
    /// Write the texts the semantic arm embeds for the chosen sets (`tools.jsonl`, read at 128
    /// tokens; `queries.jsonl`, at 256) into DIR and stop, for embedding elsewhere (--vectors).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["semantic", "baseline", "save_rankings", "rankings"])]
    pub export_texts: Option<PathBuf>,
    /// With --embed-model or --vectors: also score each arm alone (the lexical search; the
    /// semantic arm's nearest tools) and the better of the two per query, to show how much a
    /// rule that picks which arm to trust could still gain (R@1 / R@5 per set and kind).
    #[arg(long, requires = "semantic")]
    pub arms: bool,
}

/// The catalog of sets that carry no `catalog.json` of their own.
const SHARED_CATALOG: &str = "deployment.json";

/// Rankings of a query set: tool names, best first. A query given as a list is answered per
/// entry and the answers interleaved (first of each, then second of each, ...).
pub fn rank_all(index: &Index, names: &[String], queries: &[EvalQuery], limit: usize) -> Vec<Vec<String>> {
    rank_all_with(index, names, queries, limit, None)
}

/// The tools' vectors and each query text's vector: the semantic arm's input to [`rank_all_with`].
pub type SemanticInput<'a> = (&'a Vectors, &'a HashMap<String, Vec<f32>>);

/// [`rank_all`], with the semantic arm when `semantic` is given.
pub fn rank_all_with(
    index: &Index,
    names: &[String],
    queries: &[EvalQuery],
    limit: usize,
    semantic: Option<SemanticInput<'_>>,
) -> Vec<Vec<String>> {
    rank_each(names, queries, limit, |t| {
        let sem = semantic.and_then(|(vectors, qv)| {
            Some(Semantic {
                vectors,
                query: qv.get(&tool_search::semantic::query_text(t))?.as_slice(),
            })
        });
        index.search_hybrid(t, limit, sem).into_iter().map(|h| h.doc).collect()
    })
}

/// The semantic arm alone: each query's nearest tools by cosine, interleaved as in
/// [`rank_all`] (`eval --arms`).
fn rank_all_semantic(
    names: &[String],
    queries: &[EvalQuery],
    limit: usize,
    semantic: SemanticInput<'_>,
) -> Vec<Vec<String>> {
    let (vectors, qv) = semantic;
    rank_each(names, queries, limit, |t| {
        match qv.get(&tool_search::semantic::query_text(t)) {
            Some(q) => vectors.nearest(q, limit).into_iter().map(|(doc, _)| doc).collect(),
            None => Vec::new(),
        }
    })
}

/// Each query's ranking by `rank` (tool positions, best first), one answer per entry of a
/// query given as a list, interleaved ([`interleave`]).
fn rank_each(
    names: &[String],
    queries: &[EvalQuery],
    limit: usize,
    mut rank: impl FnMut(&str) -> Vec<usize>,
) -> Vec<Vec<String>> {
    queries
        .iter()
        .map(|q| {
            let answers: Vec<Vec<usize>> = q.texts().iter().map(|t| rank(t)).collect();
            interleave(names, &answers, limit)
        })
        .collect()
}

/// One query's ranking from the answers to each of its texts (tool positions, best first):
/// first of each, then second of each, ..., names deduplicated, cut at `limit`.
pub(crate) fn interleave(names: &[String], answers: &[Vec<usize>], limit: usize) -> Vec<String> {
    let mut ranked: Vec<String> = Vec::new();
    for i in 0..limit {
        for a in answers {
            if let Some(&doc) = a.get(i) {
                let n = &names[doc];
                if !ranked.contains(n) {
                    ranked.push(n.clone());
                }
            }
        }
    }
    ranked.truncate(limit);
    ranked
}

impl EvalArgs {
    pub fn run(&self) -> ExitCode {
        match self.try_run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("search-eval: {e}");
                ExitCode::from(2)
            }
        }
    }

    fn try_run(&self) -> Result<(), String> {
        if let Some(dir) = &self.export_texts {
            return self.export(dir);
        }
        if self.all_visible {
            return self.run_all_visible();
        }
        let (catalog, queries) = self.set_files()?;
        // the set's name in the arms table: its folder (`…/seed-examples/queries.json`), else
        // the file's own name
        let set = queries
            .parent()
            .and_then(Path::file_name)
            .or_else(|| queries.file_stem())
            .map_or_else(|| "set".into(), |n| n.to_string_lossy());
        let mut embedder = self.embedder()?;
        let run = score_set(
            catalog,
            queries,
            self.limit,
            embedder.as_mut().map(|e| e.for_set(&set)),
            self.arms,
        )?;
        let (queries, ranked, scores, report) = (&run.queries, &run.ranked, &run.scores, &run.report);

        if let Some(path) = &self.rankings {
            write_rankings(path, &run)?;
        }
        let misses = worst_misses(queries, scores, ranked, self.misses);
        if self.json {
            let v = serde_json::json!({
                "report": report,
                "arms": run.arms.as_ref().map(Arms::json),
                "worst_misses": misses,
            });
            println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
        } else {
            print_report(report);
            print!("{}", arms_table(&[(&set, &run)]));
            if !misses.is_empty() {
                println!("\nworst misses:");
                for m in &misses {
                    println!("  {}", serde_json::to_string(m).map_err(|e| e.to_string())?);
                }
            }
        }
        Ok(())
    }

    /// The single-set mode's two files.
    fn set_files(&self) -> Result<(&PathBuf, &PathBuf), String> {
        match (&self.catalog, &self.queries) {
            (Some(c), Some(q)) => Ok((c, q)),
            _ => Err("--catalog and --queries are required (or --all-visible)".into()),
        }
    }

    fn embedder(&self) -> Result<Option<SetEmbedders>, String> {
        match (&self.embed_model, &self.vectors) {
            (Some(model), _) => {
                let default = self.query_delta.clone().unwrap_or_else(QueryDeltaChoice::from_env);
                SetEmbedders::open(model, &self.vector_cache, &default, &self.query_delta_for).map(Some)
            }
            (None, Some(dir)) => EvalEmbedder::external(dir).map(|e| Some(SetEmbedders::one(e))),
            (None, None) => Ok(None),
        }
    }

    /// The chosen sets' (`--all-visible`, or `--catalog` and `--queries`) embedding texts,
    /// written for `--vectors`.
    fn export(&self, dir: &Path) -> Result<(), String> {
        let files = if self.all_visible {
            visible_sets(&self.eval_dir, &self.catalogs_dir)?
                .into_iter()
                .map(|(_, catalog, queries)| (catalog, queries))
                .collect()
        } else {
            let (catalog, queries) = self.set_files()?;
            vec![(catalog.clone(), queries.clone())]
        };
        let mut export = TextExport::default();
        for (catalog, queries_file) in files {
            export.add_tools(&load_catalog_path(&catalog).map_err(|e| e.to_string())?);
            let queries = load_query_file(&queries_file)?;
            let texts: Vec<String> = queries.iter().flat_map(|q| q.texts()).collect();
            export.add_queries(texts.iter().map(String::as_str));
        }
        let (tools, queries) = export.write(dir)?;
        println!(
            "wrote {tools} tool texts to {} and {queries} query texts to {}",
            dir.join(EXPORTED_TOOLS).display(),
            dir.join(EXPORTED_QUERIES).display()
        );
        Ok(())
    }

    /// Every visible set scored, compared with --baseline's rankings when given, and saved to
    /// --save-rankings when given (after the comparison: one run can compare with a folder and
    /// then replace it).
    fn all_visible(&self) -> Result<(Vec<SetReport>, Option<Vec<BaselineChange>>), String> {
        let sets = self.score_all_visible()?;
        let changes = match &self.baseline {
            Some(dir) => Some(
                sets.iter()
                    .map(|s| compare_with_baseline(dir, s))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        if let Some(dir) = &self.save_rankings {
            save_rankings(dir, &sets)?;
        }
        Ok((sets, changes))
    }

    fn run_all_visible(&self) -> Result<(), String> {
        let (sets, changes) = self.all_visible()?;
        if self.json {
            let v = serde_json::json!({
                "limit": self.limit,
                "sets": sets.iter().enumerate().map(|(i, s)| serde_json::json!({
                    "set": s.name,
                    "catalog": s.catalog.display().to_string(),
                    "queries": s.queries.display().to_string(),
                    "report": s.run.report,
                    "arms": s.run.arms.as_ref().map(Arms::json),
                    "vs_baseline": changes.as_ref().map(|c| &c[i]),
                })).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
        } else {
            print!("{}", all_visible_table(&sets));
            let arms: Vec<(&str, &SetRun)> = sets.iter().map(|s| (s.name.as_str(), &s.run)).collect();
            print!("{}", arms_table(&arms));
            if let (Some(dir), Some(changes)) = (&self.baseline, &changes) {
                print!("{}", baseline_table(dir, &sets, changes));
            }
        }
        Ok(())
    }

    /// Every set of `eval_dir`, in name order, scored at `limit`.
    fn score_all_visible(&self) -> Result<Vec<SetReport>, String> {
        let sets = visible_sets(&self.eval_dir, &self.catalogs_dir)?;
        let mut embedder = self.embedder()?;
        sets.into_iter()
            .map(|(name, catalog, queries)| {
                let run = score_set(
                    &catalog,
                    &queries,
                    self.limit,
                    embedder.as_mut().map(|e| e.for_set(&name)),
                    self.arms,
                )
                .map_err(|e| format!("{name}: {e}"))?;
                Ok(SetReport {
                    name,
                    catalog,
                    queries,
                    run,
                })
            })
            .collect()
    }
}

/// One set's rankings and scores.
struct SetRun {
    queries: Vec<EvalQuery>,
    ranked: Vec<Vec<String>>,
    scores: Vec<QueryScore>,
    report: Report,
    /// With `--arms`: each arm alone, and the better of the two per query.
    arms: Option<Arms>,
}

/// Reports of the lexical arm alone, the semantic arm alone (its nearest tools) and the
/// better of the two per query ([`eval::better_of`]).
struct Arms {
    lexical: Report,
    semantic: Report,
    better: Report,
}

/// Each query's scores: its ranking against its gold groups.
fn score_all(queries: &[EvalQuery], ranked: &[Vec<String>]) -> Vec<QueryScore> {
    queries
        .iter()
        .zip(ranked)
        .map(|(q, r)| eval::score_query(&q.groups(), r))
        .collect()
}

/// The reports of each arm's rankings alone and of the better of the two per query.
fn score_arms(queries: &[EvalQuery], lexical: &[Vec<String>], semantic: &[Vec<String>]) -> Arms {
    let lexical = score_all(queries, lexical);
    let semantic = score_all(queries, semantic);
    let better: Vec<QueryScore> = lexical
        .iter()
        .zip(&semantic)
        .map(|(a, b)| eval::better_of(a, b))
        .collect();
    Arms {
        lexical: eval::report(queries, &lexical),
        semantic: eval::report(queries, &semantic),
        better: eval::report(queries, &better),
    }
}

impl Arms {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({"lexical": self.lexical, "semantic": self.semantic, "better_of_two": self.better})
    }
}

/// R@1 / R@5 of each arm alone, the fused ranking and the better arm per query, per set and
/// kind, for the runs scored with `--arms` (empty when none was).
fn arms_table(runs: &[(&str, &SetRun)]) -> String {
    let runs: Vec<(&str, &SetRun, &Arms)> = runs
        .iter()
        .filter_map(|&(n, r)| Some((n, r, r.arms.as_ref()?)))
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nR@1 / R@5 of each arm alone, fused, and the better arm per query (what choosing an arm could reach)\n{:<16} {:<14} {:>5} {:>15} {:>15} {:>15} {:>15}\n",
        "set", "kind", "n", "lexical", "semantic", "fused", "better arm"
    );
    let cell = |s: Option<&Summary>| match s {
        Some(s) if s.answerable > 0 => format!("{:.3} / {:.3}", s.r1, s.r5),
        _ => "-".to_owned(),
    };
    for (name, run, arms) in runs {
        let kinds = std::iter::once(None).chain(run.report.by_kind.keys().map(Some));
        for kind in kinds {
            let pick = |r: &Report| match kind {
                None => Some(r.overall.clone()),
                Some(k) => r.by_kind.get(k).cloned(),
            };
            let fused = pick(&run.report);
            if fused.as_ref().is_some_and(|s| s.answerable == 0) {
                continue;
            }
            out.push_str(&format!(
                "{:<16} {:<14} {:>5} {:>15} {:>15} {:>15} {:>15}\n",
                if kind.is_none() { name } else { "" },
                kind.map_or("all", String::as_str),
                fused.as_ref().map_or(0, |s| s.answerable),
                cell(pick(&arms.lexical).as_ref()),
                cell(pick(&arms.semantic).as_ref()),
                cell(fused.as_ref()),
                cell(pick(&arms.better).as_ref()),
            ));
        }
    }
    out.push_str("n = answerable queries; semantic alone = the nearest tools by cosine, no name slots or abstention\n");
    out
}

/// A `queries.json` file's queries; errors name the file.
pub(crate) fn load_query_file(path: &Path) -> Result<Vec<EvalQuery>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    eval::load_queries(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Loads a catalog and a query set, ranks every query (`rank_all`) and scores it; with
/// `arms` (and an embedder), each arm alone as well.
fn score_set(
    catalog: &Path,
    queries_file: &Path,
    limit: usize,
    embedder: Option<&mut EvalEmbedder>,
    arms: bool,
) -> Result<SetRun, String> {
    let tools = load_catalog_path(catalog).map_err(|e| e.to_string())?;
    let queries = load_query_file(queries_file)?;
    let index = Index::build(&tools);
    let names: Vec<String> = tools.iter().map(|t| t.tool.name.clone()).collect();
    let (ranked, arms) = match embedder {
        None => (rank_all(&index, &names, &queries, limit), None),
        Some(e) => {
            let vectors = e.tool_vectors(&tools)?;
            let texts: Vec<String> = queries.iter().flat_map(|q| q.texts()).collect();
            let semantic_texts: Vec<String> = texts.iter().map(|t| tool_search::semantic::query_text(t)).collect();
            let refs: Vec<&str> = semantic_texts.iter().map(String::as_str).collect();
            let qv = e.query_vectors(&refs)?;
            let ranked = rank_all_with(&index, &names, &queries, limit, Some((&vectors, &qv)));
            let arms = arms.then(|| {
                let lexical = rank_all(&index, &names, &queries, limit);
                let semantic = rank_all_semantic(&names, &queries, limit, (&vectors, &qv));
                score_arms(&queries, &lexical, &semantic)
            });
            (ranked, arms)
        }
    };
    let scores = score_all(&queries, &ranked);
    let report = eval::report(&queries, &scores);
    Ok(SetRun {
        queries,
        ranked,
        scores,
        report,
        arms,
    })
}

/// One visible set's report, and the files it came from.
struct SetReport {
    name: String,
    catalog: PathBuf,
    queries: PathBuf,
    /// Its queries (in file order), rankings, scores and report.
    run: SetRun,
}

/// One set against its baseline: how many queries each measure moved up or down.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct BaselineChange {
    r1: Change,
    r5: Change,
    abstain: Change,
}

impl BaselineChange {
    fn loses_beyond_noise(&self) -> bool {
        self.r1.loses_beyond_noise() || self.r5.loses_beyond_noise() || self.abstain.loses_beyond_noise()
    }
}

/// The file a set's rankings are saved in under `dir`.
fn rankings_file(dir: &Path, set: &str) -> PathBuf {
    dir.join(format!("{set}.jsonl"))
}

fn save_rankings(dir: &Path, sets: &[SetReport]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for s in sets {
        write_rankings(&rankings_file(dir, &s.name), &s.run)?;
    }
    Ok(())
}

/// One `{"id", "ranked": [names]}` line per query of `run` (`--rankings`, `--save-rankings`).
fn write_rankings(path: &Path, run: &SetRun) -> Result<(), String> {
    let mut out = String::new();
    for (q, r) in run.queries.iter().zip(&run.ranked) {
        out.push_str(&serde_json::json!({"id": q.id, "ranked": r}).to_string());
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

/// Scores the rankings saved for set `s` under `dir` with `s`'s gold labels and compares them
/// with `s`'s own, query by query. The saved file must hold the same queries in the same
/// order (a run of the same sets with --save-rankings).
fn compare_with_baseline(dir: &Path, s: &SetReport) -> Result<BaselineChange, String> {
    #[derive(serde::Deserialize)]
    struct Line {
        /// As `--rankings` and `--save-rankings` write it: the query's id as text.
        #[serde(default)]
        id: String,
        ranked: Vec<String>,
    }
    let path = rankings_file(dir, &s.name);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (save a baseline with --all-visible --save-rankings DIR)",
            path.display()
        )
    })?;
    let lines: Vec<Line> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1)))
        .collect::<Result<_, _>>()?;
    let qs = &s.run.queries;
    if lines.len() != qs.len() || lines.iter().zip(qs).any(|(l, q)| l.id != q.id) {
        return Err(format!(
            "{}: holds {} rankings for other queries than set {}'s {} (save the baseline from the same sets)",
            path.display(),
            lines.len(),
            s.name,
            qs.len()
        ));
    }
    let base: Vec<QueryScore> = qs
        .iter()
        .zip(&lines)
        .map(|(q, l)| eval::score_query(&q.groups(), &l.ranked))
        .collect();
    Ok(BaselineChange {
        r1: eval::compare(&base, &s.run.scores, |q| q.answerable.then_some(q.r1)),
        r5: eval::compare(&base, &s.run.scores, |q| q.answerable.then_some(q.r5)),
        abstain: eval::compare(&base, &s.run.scores, |q| {
            (!q.answerable).then_some(f64::from(u8::from(q.abstained)))
        }),
    })
}

/// The --baseline table: per set, queries won and lost on each measure, and a verdict.
fn baseline_table(dir: &Path, sets: &[SetReport], changes: &[BaselineChange]) -> String {
    let cell = |c: &Change| format!("{}/{}", c.won, c.lost);
    let mut out = format!(
        "\nvs {}: queries won/lost (their R@1, R@5 or abstention rose/fell), p = two-sided sign test\n",
        dir.display()
    );
    out.push_str(&format!(
        "{:<16} {:>10} {:>6} {:>10} {:>6} {:>10} {:>6}  {}\n",
        "set", "R@1", "p", "R@5", "p", "abstain", "p", "verdict"
    ));
    for (s, c) in sets.iter().zip(changes) {
        let all = [c.r1, c.r5, c.abstain];
        let verdict = if c.loses_beyond_noise() {
            "loses beyond noise"
        } else if all.iter().any(|m| m.won > m.lost && m.p < 0.05) {
            "wins beyond noise"
        } else if all.iter().all(|m| m.won + m.lost == 0) {
            "unchanged"
        } else {
            "within noise"
        };
        out.push_str(&format!(
            "{:<16} {:>10} {:>6.3} {:>10} {:>6.3} {:>10} {:>6.3}  {}\n",
            s.name,
            cell(&c.r1),
            c.r1.p,
            cell(&c.r5),
            c.r5.p,
            cell(&c.abstain),
            c.abstain.p,
            verdict
        ));
    }
    out
}

/// The sets of `eval_dir`: `(name, catalog, queries)` for each folder with a `queries.json`, in
/// name order; a folder without `catalog.json` is answered from `catalogs_dir/deployment.json`.
pub(crate) fn visible_sets(eval_dir: &Path, catalogs_dir: &Path) -> Result<Vec<(String, PathBuf, PathBuf)>, String> {
    let entries = std::fs::read_dir(eval_dir).map_err(|e| {
        format!(
            "{}: {e} (the evaluation sets, one folder per set; pass --eval-dir)",
            eval_dir.display()
        )
    })?;
    let mut sets = Vec::new();
    for entry in entries {
        let dir = entry.map_err(|e| format!("{}: {e}", eval_dir.display()))?.path();
        let queries = dir.join("queries.json");
        if !queries.is_file() {
            continue;
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let own = dir.join("catalog.json");
        let catalog = if own.is_file() {
            own
        } else {
            let shared = catalogs_dir.join(SHARED_CATALOG);
            if !shared.is_file() {
                return Err(format!(
                    "{}: not found; set {name} has no catalog.json and uses it (pass --catalogs-dir)",
                    shared.display()
                ));
            }
            shared
        };
        sets.push((name, catalog, queries));
    }
    if sets.is_empty() {
        return Err(format!(
            "{}: no evaluation sets (folders with a queries.json)",
            eval_dir.display()
        ));
    }
    sets.sort();
    Ok(sets)
}

fn rate(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |r| format!("{r:.3}"))
}

/// The `--all-visible` table: per set its overall row, then one row per `kind`.
fn all_visible_table(sets: &[SetReport]) -> String {
    let mut out = format!(
        "{:<16} {:<14} {:>5} {:>6} {:>6} {:>6} {:>7} {:>6} {:>7}\n",
        "set", "kind", "n", "R@1", "R@5", "MRR", "nDCG@5", "zero", "abstain"
    );
    for s in sets {
        let rows = std::iter::once(("all", &s.run.report.overall))
            .chain(s.run.report.by_kind.iter().map(|(k, v)| (k.as_str(), v)));
        for (kind, v) in rows {
            let set = if kind == "all" { s.name.as_str() } else { "" };
            let (r1, r5, mrr, ndcg) = if v.answerable > 0 {
                (
                    format!("{:.3}", v.r1),
                    format!("{:.3}", v.r5),
                    format!("{:.3}", v.mrr),
                    format!("{:.3}", v.ndcg5),
                )
            } else {
                ("-".into(), "-".into(), "-".into(), "-".into())
            };
            out.push_str(&format!(
                "{:<16} {:<14} {:>5} {:>6} {:>6} {:>6} {:>7} {:>6} {:>7}\n",
                set,
                kind,
                v.queries,
                r1,
                r5,
                mrr,
                ndcg,
                rate(v.zero_result),
                rate(v.abstain)
            ));
        }
    }
    out.push_str(
        "zero = share of answerable queries with no result; abstain = share of unanswerable queries with no result\n",
    );
    out
}

/// Answerable queries with the lowest reciprocal rank, then unanswerable ones that got results.
fn worst_misses(
    queries: &[EvalQuery],
    scores: &[QueryScore],
    ranked: &[Vec<String>],
    n: usize,
) -> Vec<serde_json::Value> {
    let mut idx: Vec<usize> = (0..queries.len())
        .filter(|&i| {
            let s = &scores[i];
            (s.answerable && s.r5 < 1.0) || (!s.answerable && !s.abstained)
        })
        .collect();
    idx.sort_by(|&a, &b| {
        let key = |i: usize| (scores[i].rr, scores[i].r5);
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    idx.into_iter()
        .take(n)
        .map(|i| {
            let q = &queries[i];
            serde_json::json!({
                "id": q.id,
                "query": q.query,
                "gold": q.groups(),
                "top3": ranked[i].iter().take(3).collect::<Vec<_>>(),
                "rr": scores[i].rr,
            })
        })
        .collect()
}

fn print_report(r: &Report) {
    println!(
        "{:<24} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8}",
        "set", "n", "R@1", "R@5", "R@10", "MRR", "nDCG@5", "abstain"
    );
    row("all", &r.overall);
    for (k, s) in &r.by_kind {
        row(k, s);
    }
}

fn row(label: &str, s: &Summary) {
    let abstain = s
        .abstain
        .map_or("-".to_string(), |a| format!("{a:.3} ({})", s.unanswerable));
    println!(
        "{:<24} {:>6} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>8}",
        label, s.queries, s.r1, s.r5, s.r10, s.mrr, s.ndcg5, abstain
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOG: &str = r#"{"tools": [
        {"name": "gmail-send_message", "description": "Send an email message"},
        {"name": "gmail-list_threads", "description": "List threads in the mailbox"},
        {"name": "github-create_issue", "description": "Create a new issue"},
        {"name": "github-list_issues", "description": "List issues"}
    ]}"#;

    const QUERIES: &str = r#"[
        {"id": "a", "query": "send email", "gold_groups": [["gmail-send_message"]], "kind": "keywords"},
        {"id": 2, "query": ["create issue", "list threads"], "gold": ["github-create_issue", "gmail-list_threads"]},
        {"id": "c", "query": "xyzzy plugh", "gold_groups": [], "kind": "unanswerable"}
    ]"#;

    #[test]
    fn eval_writes_rankings_and_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog.json");
        let queries = dir.path().join("queries.json");
        let rankings = dir.path().join("rankings.jsonl");
        std::fs::write(&catalog, CATALOG).unwrap();
        std::fs::write(&queries, QUERIES).unwrap();
        let args = EvalArgs {
            catalog: Some(catalog),
            queries: Some(queries),
            rankings: Some(rankings.clone()),
            json: true,
            misses: 5,
            ..args(&[])
        };
        assert_eq!(args.run(), ExitCode::SUCCESS);
        let lines = read_jsonl(&rankings);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["id"], "a");
        assert_eq!(lines[0]["ranked"][0], "gmail-send_message");
        // a list query is answered per entry, interleaved
        assert_eq!(lines[1]["id"], "2");
        assert_eq!(lines[1]["ranked"][0], "github-create_issue");
        assert_eq!(lines[1]["ranked"][1], "gmail-list_threads");
        assert_eq!(lines[2]["ranked"], serde_json::json!([]));
    }

    #[test]
    fn arms_scores_each_arm_alone_and_the_better_per_query() {
        let tools = tool_search::catalog_file::load_catalog(CATALOG).unwrap();
        let index = Index::build(&tools);
        let names: Vec<String> = tools.iter().map(|t| t.tool.name.clone()).collect();
        // two dimensions: `send email` lies nearest the GitHub tools (the semantic arm misses
        // it, the lexical arm does not), `compose a note` nearest the mail tool (no word of it
        // is in the catalog: the lexical arm has nothing), the nonsense request near a tool
        let rows: [[f32; 2]; 4] = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]];
        let vectors = Vectors::build(4, 2, |i| Some(&rows[i][..]));
        let queries = eval::load_queries(
            r#"[{"id": "a", "query": "send email", "gold": ["gmail-send_message"], "kind": "keywords"},
                {"id": "b", "query": "compose a note", "gold": ["gmail-send_message"], "kind": "paraphrase"},
                {"id": "c", "query": "xyzzy plugh", "gold_groups": [], "kind": "unanswerable"}]"#,
        )
        .unwrap();
        let qv: HashMap<String, Vec<f32>> = [
            ("send email", [0.6, 0.8]),
            ("compose a note", [1.0, 0.0]),
            ("xyzzy plugh", [0.0, 1.0]),
        ]
        .into_iter()
        .map(|(t, v)| (tool_search::semantic::query_text(t), v.to_vec()))
        .collect();
        let semantic = rank_all_semantic(&names, &queries, 10, (&vectors, &qv));
        assert_eq!(semantic[0][0], "github-list_issues");
        assert_eq!(semantic[1][0], "gmail-send_message");
        assert_eq!(semantic[2][0], "github-create_issue");
        let lexical = rank_all(&index, &names, &queries, 10);
        assert_eq!(lexical[0][0], "gmail-send_message");
        assert!(lexical[1].is_empty() && lexical[2].is_empty());
        let arms = score_arms(&queries, &lexical, &semantic);
        assert_eq!((arms.lexical.overall.r1, arms.lexical.overall.r5), (0.5, 0.5));
        assert_eq!((arms.semantic.overall.r1, arms.semantic.overall.r5), (0.5, 1.0));
        // choosing per query: each request from the arm that found it
        assert_eq!((arms.better.overall.r1, arms.better.overall.r5), (1.0, 1.0));
        assert_eq!(arms.better.overall.abstain, Some(1.0));
        assert_eq!(arms.semantic.overall.abstain, Some(0.0));
        // the table: one row per set and kind with answerable requests
        let run = SetRun {
            ranked: lexical.clone(),
            scores: score_all(&queries, &lexical),
            report: eval::report(&queries, &score_all(&queries, &lexical)),
            queries,
            arms: Some(arms),
        };
        let table = arms_table(&[("own", &run)]);
        let lines: Vec<&str> = table.lines().filter(|l| !l.is_empty()).collect();
        assert!(
            lines[1].starts_with("set") && lines[1].ends_with("better arm"),
            "{table}"
        );
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(&row[..3], ["own", "all", "2"]);
        assert_eq!(
            &row[3..],
            ["0.500", "/", "0.500", "0.500", "/", "1.000", "0.500", "/", "0.500", "1.000", "/", "1.000"]
        );
        assert!(lines[3].trim_start().starts_with("keywords") && lines[4].trim_start().starts_with("paraphrase"));
        assert!(!table.contains("unanswerable"), "{table}");
        // and nothing without --arms
        assert_eq!(arms_table(&[("own", &SetRun { arms: None, ..run })]), "");
    }

    #[test]
    fn eval_reports_a_missing_file() {
        let args = EvalArgs {
            catalog: Some(PathBuf::from("/nonexistent/catalog.json")),
            queries: Some(PathBuf::from("/nonexistent/queries.json")),
            misses: 0,
            ..args(&[])
        };
        assert_eq!(args.run(), ExitCode::from(2));
    }

    /// Parses `search-eval ARGS` as the binary does without a subcommand.
    fn parse(argv: &[&str]) -> Result<EvalArgs, clap::Error> {
        use clap::{Args, FromArgMatches};
        let cmd = EvalArgs::augment_args(clap::Command::new("search-eval"));
        cmd.clone().debug_assert();
        let m = cmd.try_get_matches_from(std::iter::once("search-eval").chain(argv.iter().copied()))?;
        EvalArgs::from_arg_matches(&m)
    }

    /// `EvalArgs` from flags, with defaults for the rest.
    fn args(argv: &[&str]) -> EvalArgs {
        let mut all = vec!["--all-visible"];
        all.extend_from_slice(argv);
        let mut a = parse(&all).unwrap();
        a.all_visible = false;
        a
    }

    #[test]
    fn all_visible_needs_no_files_and_defaults_to_the_shared_bench() {
        let a = parse(&["--all-visible"]).unwrap();
        assert!(a.all_visible && a.catalog.is_none() && a.queries.is_none());
        assert_eq!(a.eval_dir, PathBuf::from("../shared/bench/eval"));
        assert_eq!(a.catalogs_dir, PathBuf::from("../shared/bench/catalogs"));
        assert_eq!(a.limit, 10);
        // the single-set mode still needs both files, and does not mix with --all-visible
        assert!(parse(&[]).is_err());
        assert!(parse(&["--catalog", "c.json"]).is_err());
        assert!(parse(&["--catalog", "c.json", "--queries", "q.json"]).is_ok());
        assert!(parse(&["--all-visible", "--catalog", "c.json"]).is_err());
        assert!(parse(&["--all-visible", "--rankings", "r.jsonl"]).is_err());
        // each arm alone needs the semantic arm
        assert!(parse(&["--all-visible", "--arms"]).is_err());
        assert!(parse(&["--all-visible", "--arms", "--embed-model", "m"]).unwrap().arms);
        assert!(parse(&["--all-visible", "--arms", "--vectors", "v"]).unwrap().arms);
        // one source of vectors; texts are exported for embedding, not ranked
        assert!(parse(&["--all-visible", "--embed-model", "m", "--vectors", "v"]).is_err());
        assert!(parse(&["--all-visible", "--export-texts", "d", "--vectors", "v"]).is_err());
        assert!(parse(&["--all-visible", "--export-texts", "d", "--baseline", "b"]).is_err());
        assert!(parse(&["--all-visible", "--export-texts", "d"]).is_ok());
    }

    #[test]
    fn external_vectors_of_the_exported_texts_rank_through_the_semantic_arm() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog.json");
        let queries = dir.path().join("queries.json");
        std::fs::write(&catalog, CATALOG).unwrap();
        std::fs::write(
            &queries,
            r#"[{"id": "a", "query": "send email", "gold": ["gmail-send_message"], "kind": "keywords"},
                {"id": "b", "query": "compose a note", "gold": ["gmail-send_message"], "kind": "paraphrase"},
                {"id": "c", "query": "xyzzy plugh", "gold_groups": [], "kind": "unanswerable"},
                {"id": "d", "query": ["send email", "xyzzy plugh"], "gold": ["gmail-send_message"], "kind": "keywords"}]"#,
        )
        .unwrap();
        let ext = dir.path().join("ext");
        let export = EvalArgs {
            catalog: Some(catalog.clone()),
            queries: Some(queries.clone()),
            export_texts: Some(ext.clone()),
            ..args(&[])
        };
        assert_eq!(export.run(), ExitCode::SUCCESS);
        // the texts the arm embeds, each once: a tool's embedding text, a query's semantic text
        let tools = tool_search::catalog_file::load_catalog(CATALOG).unwrap();
        let lines = |name: &str| -> Vec<String> {
            read_jsonl(&ext.join(name))
                .into_iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let tool_texts = lines(EXPORTED_TOOLS);
        assert_eq!(
            tool_texts,
            tools
                .iter()
                .map(tool_search::semantic::embedding_text)
                .collect::<Vec<_>>()
        );
        let query_texts = lines(EXPORTED_QUERIES);
        assert_eq!(
            query_texts,
            ["send email", "compose a note", "xyzzy plugh"].map(tool_search::semantic::query_text)
        );

        // another model's vectors for them (as in the arms test, not unit length: normalised on
        // reading)
        let rows: [[f32; 2]; 7] = [
            [2.0, 0.0],
            [0.8, 0.6],
            [0.0, 3.0],
            [0.6, 0.8],
            [0.6, 0.8],
            [1.0, 0.0],
            [0.0, 1.0],
        ];
        let write = |texts: &[String], rows: &[[f32; 2]]| {
            let jsonl: String = texts.iter().map(|t| serde_json::to_string(t).unwrap() + "\n").collect();
            std::fs::write(ext.join(EXTERNAL_TEXTS), jsonl).unwrap();
            let bytes: Vec<u8> = rows.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
            std::fs::write(ext.join(EXTERNAL_VECTORS), bytes).unwrap();
        };
        let all: Vec<String> = tool_texts.iter().chain(&query_texts).cloned().collect();
        write(&all, &rows);
        let mut external = EvalEmbedder::external(&ext).unwrap();
        let run = score_set(&catalog, &queries, 10, Some(&mut external), true).unwrap();
        // `compose a note` has no word the catalog knows: only the external vectors find it
        assert_eq!(run.ranked[1][0], "gmail-send_message");
        assert!(score_set(&catalog, &queries, 10, None, false).unwrap().ranked[1].is_empty());
        // the semantic arm alone: `send email` lies nearest `github-list_issues` (gold 4th)
        let arms = run.arms.unwrap();
        assert!((arms.semantic.overall.r1 - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(arms.semantic.overall.r5, 1.0);

        // a text without a vector is an error that says how to make one
        write(&all[..6], &rows[..6]);
        let mut short = EvalEmbedder::external(&ext).unwrap();
        let err = score_set(&catalog, &queries, 10, Some(&mut short), false)
            .err()
            .unwrap();
        assert!(
            err.contains("query texts have no external vector") && err.contains("--export-texts"),
            "{err}"
        );
        // so is a vector file that is not whole rows, or a row of zeros
        std::fs::write(ext.join(EXTERNAL_VECTORS), [0u8; 13]).unwrap();
        assert!(EvalEmbedder::external(&ext).err().unwrap().contains("not 6 rows"));
        let mut zero = rows;
        zero[3] = [0.0, 0.0];
        write(&all, &zero);
        assert!(EvalEmbedder::external(&ext).err().unwrap().contains("row 4"));
    }

    #[test]
    fn all_visible_scores_every_set_with_its_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let eval_dir = dir.path().join("eval");
        let catalogs_dir = dir.path().join("catalogs");
        std::fs::create_dir_all(eval_dir.join("own")).unwrap();
        std::fs::create_dir_all(eval_dir.join("shared")).unwrap();
        std::fs::create_dir_all(eval_dir.join("not-a-set")).unwrap();
        std::fs::create_dir_all(&catalogs_dir).unwrap();
        std::fs::write(eval_dir.join("own/catalog.json"), CATALOG).unwrap();
        std::fs::write(eval_dir.join("own/queries.json"), QUERIES).unwrap();
        std::fs::write(
            catalogs_dir.join("deployment.json"),
            r#"{"tools": [{"name": "weather-forecast", "description": "Weather forecast for a city"}]}"#,
        )
        .unwrap();
        std::fs::write(
            eval_dir.join("shared/queries.json"),
            r#"[{"id": 1, "query": "weather forecast", "gold": ["weather-forecast"]},
                {"id": 2, "query": "send email", "gold": ["gmail-send_message"]}]"#,
        )
        .unwrap();
        let a = EvalArgs {
            all_visible: true,
            eval_dir: eval_dir.clone(),
            catalogs_dir: catalogs_dir.clone(),
            ..args(&[])
        };
        let sets = a.score_all_visible().unwrap();
        assert_eq!(
            sets.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["own", "shared"]
        );
        assert_eq!(sets[0].catalog, eval_dir.join("own/catalog.json"));
        assert_eq!(sets[1].catalog, catalogs_dir.join("deployment.json"));
        let own = &sets[0].run.report;
        // the two-tool query finds one of its tools at rank 1
        assert_eq!((own.overall.queries, own.overall.r1, own.overall.r5), (3, 0.75, 1.0));
        assert_eq!(own.overall.abstain, Some(1.0));
        assert_eq!(own.by_kind.keys().collect::<Vec<_>>(), ["keywords", "unanswerable"]);
        // the shared catalog has no mail tool: that query gets nothing, a zero-result miss
        let shared = &sets[1].run.report.overall;
        assert_eq!((shared.r1, shared.zero_result, shared.abstain), (0.5, Some(0.5), None));
        let table = all_visible_table(&sets);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("set") && lines[0].contains("zero") && lines[0].contains("abstain"));
        assert!(lines[1].starts_with("own ") && lines[1].contains(" all "));
        assert!(lines[2].trim_start().starts_with("keywords"));
        assert!(lines[3].trim_start().starts_with("unanswerable"));
        assert!(lines[4].starts_with("shared ") && lines[4].contains("0.500"));
        assert_eq!(a.run(), ExitCode::SUCCESS);
        assert_eq!(EvalArgs { json: true, ..a }.run(), ExitCode::SUCCESS);
    }

    fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_baseline_run_counts_the_queries_each_set_won_and_lost() {
        let dir = tempfile::tempdir().unwrap();
        let eval_dir = dir.path().join("eval");
        std::fs::create_dir_all(eval_dir.join("own")).unwrap();
        std::fs::write(eval_dir.join("own/catalog.json"), CATALOG).unwrap();
        std::fs::write(eval_dir.join("own/queries.json"), QUERIES).unwrap();
        let saved = dir.path().join("base");
        let a = EvalArgs {
            all_visible: true,
            eval_dir: eval_dir.clone(),
            save_rankings: Some(saved.clone()),
            ..args(&[])
        };
        assert_eq!(a.run(), ExitCode::SUCCESS);
        let file = saved.join("own.jsonl");
        let lines = read_jsonl(&file);
        // the lines --rankings writes for the same set
        let single = dir.path().join("single.jsonl");
        let one = EvalArgs {
            catalog: Some(eval_dir.join("own/catalog.json")),
            queries: Some(eval_dir.join("own/queries.json")),
            rankings: Some(single.clone()),
            misses: 0,
            ..args(&[])
        };
        assert_eq!(one.run(), ExitCode::SUCCESS);
        assert_eq!(lines, read_jsonl(&single));
        assert_eq!(lines.len(), 3);

        let sets = a.score_all_visible().unwrap();
        let same = compare_with_baseline(&saved, &sets[0]).unwrap();
        assert_eq!((same.r1.won, same.r1.lost, same.r5.won, same.r5.lost), (0, 0, 0, 0));
        assert!(baseline_table(&saved, &sets, &[same]).contains("unchanged"));

        // a baseline that missed the first query and answered the unanswerable one: today's
        // run won both
        let worse = [
            r#"{"id": "a", "ranked": ["github-list_issues"]}"#,
            &serde_json::to_string(&lines[1]).unwrap(),
            r#"{"id": "c", "ranked": ["gmail-list_threads"]}"#,
        ]
        .join("\n");
        std::fs::write(&file, &worse).unwrap();
        let c = compare_with_baseline(&saved, &sets[0]).unwrap();
        assert_eq!(
            (c.r1.won, c.r1.lost, c.r5.won, c.abstain.won, c.abstain.lost),
            (1, 0, 1, 1, 0)
        );
        assert!(!c.loses_beyond_noise());
        let table = baseline_table(&saved, &sets, &[c]);
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("own ") && l.contains("1/0") && l.contains("within noise")),
            "{table}"
        );

        let moved = |won, lost| BaselineChange {
            r1: Change {
                won,
                lost,
                p: eval::sign_test(won, lost),
            },
            r5: Change::default(),
            abstain: Change::default(),
        };
        assert!(baseline_table(&saved, &sets, &[moved(0, 12)]).contains("loses beyond noise"));
        assert!(baseline_table(&saved, &sets, &[moved(12, 0)]).contains("wins beyond noise"));
        assert!(baseline_table(&saved, &sets, &[moved(4, 1)]).contains("within noise"));

        // rankings of other queries are refused, and so is a set without a saved file
        std::fs::write(&file, r#"{"id": "zzz", "ranked": []}"#).unwrap();
        let err = compare_with_baseline(&saved, &sets[0]).unwrap_err();
        assert!(err.contains("other queries"), "{err}");
        std::fs::remove_file(&file).unwrap();
        let err = compare_with_baseline(&saved, &sets[0]).unwrap_err();
        assert!(err.contains("--save-rankings"), "{err}");
        let b = EvalArgs {
            save_rankings: None,
            baseline: Some(saved.clone()),
            ..a
        };
        assert_eq!(b.run(), ExitCode::from(2));
        // comparing with DIR and saving to it in one run reads the old rankings first
        std::fs::write(&file, &worse).unwrap();
        let both = EvalArgs {
            save_rankings: b.baseline.clone(),
            ..b
        };
        let (_, changes) = both.all_visible().unwrap();
        let then = changes.unwrap()[0];
        assert_eq!(
            (then.r1.won, then.abstain.won),
            (1, 1),
            "compared with the old rankings"
        );
        let now = compare_with_baseline(&saved, &sets[0]).unwrap();
        assert_eq!((now.r1.won, now.abstain.won), (0, 0), "then replaced them");
        // both need --all-visible
        assert!(parse(&["--catalog", "c.json", "--queries", "q.json", "--baseline", "d"]).is_err());
        assert!(parse(&["--catalog", "c.json", "--queries", "q.json", "--save-rankings", "d"]).is_err());
    }

    #[test]
    fn all_visible_names_a_missing_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-eval");
        let a = EvalArgs {
            all_visible: true,
            eval_dir: missing.clone(),
            ..args(&[])
        };
        let err = a.score_all_visible().err().unwrap();
        assert!(err.contains(&missing.display().to_string()), "{err}");
        assert_eq!(a.run(), ExitCode::from(2));

        // a set without its own catalog, and no shared one
        std::fs::create_dir_all(dir.path().join("eval/s")).unwrap();
        std::fs::write(dir.path().join("eval/s/queries.json"), "[]").unwrap();
        let a = EvalArgs {
            all_visible: true,
            eval_dir: dir.path().join("eval"),
            catalogs_dir: dir.path().join("no-catalogs"),
            ..args(&[])
        };
        let err = a.score_all_visible().err().unwrap();
        assert!(err.contains("no-catalogs") && err.contains("deployment.json"), "{err}");

        // a folder with no sets in it
        let a = EvalArgs {
            all_visible: true,
            eval_dir: dir.path().join("eval/s"),
            ..args(&[])
        };
        assert!(a.score_all_visible().err().unwrap().contains("no evaluation sets"));
    }
}
