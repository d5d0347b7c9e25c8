//! Retrieval metrics, exactly as `shared/bench/README.md` defines them. Pure functions shared by
//! the `eval` command and the CI floor test, so both count the same way.
//!
//! For a query with gold groups G₁…Gₘ (any member of a group answers it) and a ranking r:
//! R@k = groups with a member in `r[:k]` / m; MRR = 1 / rank of the first result in any group;
//! nDCG@5 = binary gain, each group counted once at the rank of its first hit, over the ideal
//! DCG of min(5, m) hits. Recall, MRR and nDCG average over answerable queries; *abstain* is the
//! share of unanswerable queries (no gold) that got an empty ranking.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One evaluation query as the bench files store it; unknown keys are ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct EvalQuery {
    #[serde(default, deserialize_with = "id_as_string")]
    pub id: String,
    pub query: Value,
    #[serde(default)]
    pub gold_groups: Option<Vec<Vec<String>>>,
    #[serde(default)]
    pub gold: Option<Vec<String>>,
    #[serde(default)]
    pub kind: Option<String>,
}

fn id_as_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

impl EvalQuery {
    /// The gold groups: `gold_groups`, else each `gold` name alone; empty = unanswerable.
    pub fn groups(&self) -> Vec<Vec<String>> {
        match (&self.gold_groups, &self.gold) {
            (Some(g), _) => g.iter().filter(|g| !g.is_empty()).cloned().collect(),
            (None, Some(g)) => g.iter().map(|n| vec![n.clone()]).collect(),
            (None, None) => Vec::new(),
        }
    }

    /// The query texts: one string, or a list answered separately (multi-query input).
    pub fn texts(&self) -> Vec<String> {
        match &self.query {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
            other => vec![other.to_string()],
        }
    }
}

/// Parses a `queries.json` array.
pub fn load_queries(text: &str) -> Result<Vec<EvalQuery>, String> {
    serde_json::from_str(text).map_err(|e| format!("queries: {e}"))
}

/// The metrics of one query.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueryScore {
    pub answerable: bool,
    pub r1: f64,
    pub r5: f64,
    pub r10: f64,
    pub rr: f64,
    pub ndcg5: f64,
    /// Unanswerable queries only: the ranking was empty.
    pub abstained: bool,
}

/// Scores one ranking (tool names, best first) against gold groups.
pub fn score_query(groups: &[Vec<String>], ranked: &[String]) -> QueryScore {
    if groups.is_empty() {
        return QueryScore {
            answerable: false,
            r1: 0.0,
            r5: 0.0,
            r10: 0.0,
            rr: 0.0,
            ndcg5: 0.0,
            abstained: ranked.is_empty(),
        };
    }
    // rank (0-based) of each group's first hit
    let first_hit: Vec<Option<usize>> = groups
        .iter()
        .map(|g| ranked.iter().position(|r| g.contains(r)))
        .collect();
    let m = groups.len() as f64;
    let recall = |k: usize| first_hit.iter().filter(|h| h.is_some_and(|r| r < k)).count() as f64 / m;
    let rr = first_hit
        .iter()
        .flatten()
        .min()
        .map_or(0.0, |&r| 1.0 / (r as f64 + 1.0));
    let gain = |r: usize| 1.0 / ((r as f64) + 2.0).log2();
    let dcg: f64 = first_hit.iter().flatten().filter(|&&r| r < 5).map(|&r| gain(r)).sum();
    let ideal: f64 = (0..groups.len().min(5)).map(gain).sum();
    QueryScore {
        answerable: true,
        r1: recall(1),
        r5: recall(5),
        r10: recall(10),
        rr,
        ndcg5: (dcg / ideal).min(1.0),
        abstained: false,
    }
}

/// Averages over a set of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub queries: usize,
    pub answerable: usize,
    pub unanswerable: usize,
    pub r1: f64,
    pub r5: f64,
    pub r10: f64,
    pub mrr: f64,
    pub ndcg5: f64,
    /// Share of unanswerable queries that got no result; `None` when there were none.
    pub abstain: Option<f64>,
}

pub fn summarize<'a>(scores: impl IntoIterator<Item = &'a QueryScore>) -> Summary {
    let mut s = Summary::default();
    let mut abstained = 0usize;
    for q in scores {
        s.queries += 1;
        if q.answerable {
            s.answerable += 1;
            s.r1 += q.r1;
            s.r5 += q.r5;
            s.r10 += q.r10;
            s.mrr += q.rr;
            s.ndcg5 += q.ndcg5;
        } else {
            s.unanswerable += 1;
            abstained += usize::from(q.abstained);
        }
    }
    if s.answerable > 0 {
        let n = s.answerable as f64;
        s.r1 /= n;
        s.r5 /= n;
        s.r10 /= n;
        s.mrr /= n;
        s.ndcg5 /= n;
    }
    if s.unanswerable > 0 {
        s.abstain = Some(abstained as f64 / s.unanswerable as f64);
    }
    s
}

/// A whole evaluation: overall, and per `kind` when queries carry one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub overall: Summary,
    pub by_kind: BTreeMap<String, Summary>,
}

/// Builds the report from (query, score) pairs.
pub fn report(queries: &[EvalQuery], scores: &[QueryScore]) -> Report {
    let mut kinds: BTreeMap<String, Vec<QueryScore>> = BTreeMap::new();
    for (q, s) in queries.iter().zip(scores) {
        if let Some(k) = &q.kind {
            kinds.entry(k.clone()).or_default().push(*s);
        }
    }
    Report {
        overall: summarize(scores),
        by_kind: kinds.into_iter().map(|(k, v)| (k, summarize(&v))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recall_counts_groups_and_any_member_answers() {
        let groups = vec![names(&["a", "a2"]), names(&["b"])];
        let s = score_query(&groups, &names(&["x", "a2", "y", "z", "w", "b"]));
        assert_eq!(s.r1, 0.0);
        assert_eq!(s.r5, 0.5);
        assert_eq!(s.r10, 1.0);
        assert_eq!(s.rr, 0.5);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((s.ndcg5 - (1.0 / 3f64.log2()) / ideal).abs() < 1e-12);
    }

    #[test]
    fn perfect_ranking_scores_one() {
        let groups = vec![names(&["a"]), names(&["b"])];
        let s = score_query(&groups, &names(&["b", "a"]));
        assert_eq!((s.r1, s.r5, s.rr, s.ndcg5), (0.5, 1.0, 1.0, 1.0));
    }

    #[test]
    fn unanswerable_counts_abstention_only() {
        let s = score_query(&[], &[]);
        assert!(!s.answerable && s.abstained);
        let t = score_query(&[], &names(&["x"]));
        assert!(!t.abstained);
        let sum = summarize(&[s, t]);
        assert_eq!(sum.abstain, Some(0.5));
        assert_eq!(sum.answerable, 0);
        assert_eq!(sum.mrr, 0.0);
    }

    #[test]
    fn gold_without_groups_is_one_group_per_name() {
        let q: Vec<EvalQuery> = load_queries(r#"[{"id": 7, "query": "q", "gold": ["a", "b"], "kind": "k"}]"#).unwrap();
        assert_eq!(q[0].id, "7");
        assert_eq!(q[0].groups(), vec![names(&["a"]), names(&["b"])]);
        let r = report(&q, &[score_query(&q[0].groups(), &names(&["a"]))]);
        assert_eq!(r.by_kind["k"].r5, 0.5);
    }
}
