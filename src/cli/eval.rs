//! `mcp-search-proxy eval`: retrieval metrics of the search over a query set, computed by
//! `tool_search::eval` (the same functions the CI floor test uses) on rankings from
//! the same `Index::search` that answers `mcp_search`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tool_search::catalog_file::load_catalog_path;
use tool_search::eval::{self, EvalQuery, QueryScore, Report, Summary};
use tool_search::Index;

/// Measure search quality: R@1, R@5, R@10, MRR, nDCG@5 and abstain rate.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Catalog file the queries are answered from.
    #[arg(long)]
    pub catalog: PathBuf,
    /// Query set: `[{"id", "query", "gold_groups" | "gold", "kind"?}]`.
    #[arg(long)]
    pub queries: PathBuf,
    /// Ranking depth (the service's default limit is 10).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Write one `{"id", "ranked": [names]}` line per query to this file.
    #[arg(long)]
    pub rankings: Option<PathBuf>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How many of the worst misses to list.
    #[arg(long, default_value_t = 10)]
    pub misses: usize,
}

/// Rankings of a query set: tool names, best first. A query given as a list is answered per
/// entry and the answers interleaved (first of each, then second of each, ...).
pub fn rank_all(index: &Index, names: &[String], queries: &[EvalQuery], limit: usize) -> Vec<Vec<String>> {
    queries
        .iter()
        .map(|q| {
            let answers = index.search_many(&q.texts(), limit);
            let mut ranked: Vec<String> = Vec::new();
            for i in 0..limit {
                for a in &answers {
                    if let Some(h) = a.get(i) {
                        let n = &names[h.doc];
                        if !ranked.contains(n) {
                            ranked.push(n.clone());
                        }
                    }
                }
            }
            ranked.truncate(limit);
            ranked
        })
        .collect()
}

impl EvalArgs {
    pub fn run(&self) -> ExitCode {
        match self.try_run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp-search-proxy eval: {e}");
                ExitCode::from(2)
            }
        }
    }

    fn try_run(&self) -> Result<(), String> {
        let tools = load_catalog_path(&self.catalog)?;
        let text = std::fs::read_to_string(&self.queries).map_err(|e| format!("{}: {e}", self.queries.display()))?;
        let queries = eval::load_queries(&text)?;
        let index = Index::build(&tools);
        let names: Vec<String> = tools.iter().map(|t| t.tool.name.clone()).collect();
        let ranked = rank_all(&index, &names, &queries, self.limit);
        let scores: Vec<QueryScore> = queries
            .iter()
            .zip(&ranked)
            .map(|(q, r)| eval::score_query(&q.groups(), r))
            .collect();
        let report = eval::report(&queries, &scores);

        if let Some(path) = &self.rankings {
            let mut out = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            for (q, r) in queries.iter().zip(&ranked) {
                let line = serde_json::json!({"id": q.id, "ranked": r});
                writeln!(out, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        let misses = worst_misses(&queries, &scores, &ranked, self.misses);
        if self.json {
            let v = serde_json::json!({"report": report, "worst_misses": misses});
            println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
        } else {
            print_report(&report);
            if !misses.is_empty() {
                println!("\nworst misses:");
                for m in &misses {
                    println!("  {}", serde_json::to_string(m).map_err(|e| e.to_string())?);
                }
            }
        }
        Ok(())
    }
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
            catalog,
            queries,
            limit: 10,
            rankings: Some(rankings.clone()),
            json: true,
            misses: 5,
        };
        assert_eq!(args.run(), ExitCode::SUCCESS);
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&rankings)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
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
    fn eval_reports_a_missing_file() {
        let args = EvalArgs {
            catalog: PathBuf::from("/nonexistent/catalog.json"),
            queries: PathBuf::from("/nonexistent/queries.json"),
            limit: 10,
            rankings: None,
            json: false,
            misses: 0,
        };
        assert_eq!(args.run(), ExitCode::from(2));
    }
}
