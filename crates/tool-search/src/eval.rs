//! Retrieval metrics, exactly as `shared/bench/README.md` defines them. Pure functions shared by
//! the `eval` command and the CI floor test, so both count the same way.
//!
//! For a query with gold groups G₁…Gₘ (any member of a group answers it) and a ranking r:
//! R@k = groups with a member in `r[:k]` / m; MRR = 1 / rank of the first result in any group;
//! nDCG@5 = binary gain, each group counted once at the rank of its first hit, over the ideal
//! DCG of min(5, m) hits. Recall, MRR and nDCG average over answerable queries; *abstain* is the
//! share of unanswerable queries (no gold) that got an empty ranking; *zero-result* is the share
//! of answerable queries that got an empty ranking (the search abstained where it should not).
//!
//! Two runs over the same queries are paired query by query by [`compare`]: how many queries
//! a measure rose and fell on, and a two-sided sign test ([`sign_test`]) over them, so that
//! "loses beyond noise" is a count, not a judgement of two averages (`eval --baseline`).

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
pub fn load_queries(text: &str) -> Result<Vec<EvalQuery>, QueriesError> {
    serde_json::from_str(text).map_err(QueriesError)
}

/// A query set that is not a `queries.json` array (what serde says, and where).
#[derive(Debug)]
pub struct QueriesError(serde_json::Error);

impl std::fmt::Display for QueriesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "queries: {}", self.0)
    }
}

impl std::error::Error for QueriesError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
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
    /// The ranking was empty (for an answerable query: a zero-result miss).
    pub empty: bool,
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
            empty: ranked.is_empty(),
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
        empty: ranked.is_empty(),
    }
}

/// Per metric, the better of two scores of the same query: what choosing, query by query and
/// without error, the better of two rankings would reach. `eval --arms` reports it for the
/// lexical and the semantic arm alone: how far a rule that picks which arm to trust could go
/// with these two arms. (A bound on choosing, not on fusing: a fused ranking can hold the gold
/// tools of both arms and beat it.)
pub fn better_of(a: &QueryScore, b: &QueryScore) -> QueryScore {
    QueryScore {
        answerable: a.answerable,
        r1: a.r1.max(b.r1),
        r5: a.r5.max(b.r5),
        r10: a.r10.max(b.r10),
        rr: a.rr.max(b.rr),
        ndcg5: a.ndcg5.max(b.ndcg5),
        abstained: a.abstained || b.abstained,
        empty: a.empty && b.empty,
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
    /// Share of answerable queries that got no result; `None` when there were none.
    pub zero_result: Option<f64>,
}

pub fn summarize<'a>(scores: impl IntoIterator<Item = &'a QueryScore>) -> Summary {
    let mut s = Summary::default();
    let mut abstained = 0usize;
    let mut zero = 0usize;
    for q in scores {
        s.queries += 1;
        if q.answerable {
            s.answerable += 1;
            s.r1 += q.r1;
            s.r5 += q.r5;
            s.r10 += q.r10;
            s.mrr += q.rr;
            s.ndcg5 += q.ndcg5;
            zero += usize::from(q.empty);
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
        s.zero_result = Some(zero as f64 / n);
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

/// How one metric moved between two runs over the same queries, query by query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Change {
    /// Queries whose metric rose.
    pub won: usize,
    /// Queries whose metric fell.
    pub lost: usize,
    /// Two-sided sign test over `won` and `lost` ([`sign_test`]): the chance of a split at
    /// least this uneven if each changed query were a coin toss.
    pub p: f64,
}

impl Change {
    /// More queries lost than won, beyond what coin tosses explain (p < 0.05).
    pub fn loses_beyond_noise(&self) -> bool {
        self.lost > self.won && self.p < 0.05
    }
}

/// Pairs `base` and `new` (the same queries, in the same order) on `metric` (`None`: the
/// metric does not apply to that query, as R@k to an unanswerable one).
pub fn compare(base: &[QueryScore], new: &[QueryScore], metric: impl Fn(&QueryScore) -> Option<f64>) -> Change {
    let (mut won, mut lost) = (0, 0);
    for (b, n) in base.iter().zip(new) {
        if let (Some(b), Some(n)) = (metric(b), metric(n)) {
            if n > b {
                won += 1;
            } else if n < b {
                lost += 1;
            }
        }
    }
    Change {
        won,
        lost,
        p: sign_test(won, lost),
    }
}

/// Two-sided exact sign test: P(a split of `won + lost` fair coin tosses at least as uneven
/// as this one). 1 when nothing changed.
pub fn sign_test(won: usize, lost: usize) -> f64 {
    let n = won + lost;
    if n == 0 {
        return 1.0;
    }
    // ln n! for 0..=n, so that the binomial terms stay finite for thousands of queries
    let mut ln_fact = vec![0.0f64; n + 1];
    for i in 1..=n {
        ln_fact[i] = ln_fact[i - 1] + (i as f64).ln();
    }
    let ln_half_n = n as f64 * 0.5f64.ln();
    let tail: f64 = (0..=won.min(lost))
        .map(|i| (ln_fact[n] - ln_fact[i] - ln_fact[n - i] + ln_half_n).exp())
        .sum();
    (2.0 * tail).min(1.0)
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
    fn better_of_takes_each_metric_from_the_better_ranking() {
        let groups = vec![names(&["a"]), names(&["b"])];
        // `a` first in one ranking, `b` within five in the other: R@1 from the first, R@5
        // from the second, and the pair is better than either
        let first = score_query(&groups, &names(&["a", "x", "y", "z", "w", "v", "b"]));
        let second = score_query(&groups, &names(&["x", "a", "b"]));
        let best = better_of(&first, &second);
        assert_eq!((first.r1, first.r5), (0.5, 0.5));
        assert_eq!((second.r1, second.r5), (0.0, 1.0));
        assert_eq!((best.r1, best.r5, best.rr), (0.5, 1.0, 1.0));
        assert_eq!(best.ndcg5, first.ndcg5.max(second.ndcg5));
        assert_eq!(better_of(&second, &first), best);
        // one empty ranking is not a miss when the other answers; an unanswerable query is
        // abstained on when either ranking abstains
        let empty = score_query(&groups, &[]);
        assert!(!better_of(&empty, &second).empty && better_of(&empty, &empty).empty);
        let (silent, answered) = (score_query(&[], &[]), score_query(&[], &names(&["a"])));
        assert!(better_of(&answered, &silent).abstained && !better_of(&answered, &answered).abstained);
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
        assert_eq!(sum.zero_result, None);
    }

    #[test]
    fn zero_result_rate_counts_empty_rankings_of_answerable_queries_only() {
        let g = vec![names(&["a"])];
        let hit = score_query(&g, &names(&["a"]));
        let miss = score_query(&g, &names(&["x"]));
        let empty = score_query(&g, &[]);
        assert!(empty.empty && !empty.abstained && !miss.empty);
        // an empty ranking of an unanswerable query is an abstention, not a zero-result miss
        let abstained = score_query(&[], &[]);
        let sum = summarize(&[hit, miss, empty, abstained]);
        assert_eq!((sum.queries, sum.answerable, sum.unanswerable), (4, 3, 1));
        assert_eq!(sum.zero_result, Some(1.0 / 3.0));
        assert_eq!(sum.abstain, Some(1.0));
        assert_eq!(sum.r1, 1.0 / 3.0);
        assert_eq!(summarize(&[hit]).zero_result, Some(0.0));
        assert_eq!(summarize(&[]), Summary::default());
    }

    #[test]
    fn abstain_rate_is_over_unanswerable_queries_only() {
        let g = vec![names(&["a"])];
        let answered_empty = score_query(&g, &[]);
        let abstained = score_query(&[], &[]);
        let answered_wrongly = score_query(&[], &names(&["x", "y"]));
        let sum = summarize(&[answered_empty, abstained, answered_wrongly, answered_wrongly]);
        assert_eq!(sum.abstain, Some(1.0 / 3.0));
        assert_eq!(sum.zero_result, Some(1.0));
        assert_eq!(summarize(&[answered_empty]).abstain, None);
    }

    #[test]
    fn report_aggregates_per_kind_and_overall() {
        let q = load_queries(
            r#"[
            {"id": "1", "query": "q", "gold": ["a"], "kind": "keyword"},
            {"id": "2", "query": "q", "gold": ["b"], "kind": "keyword"},
            {"id": "3", "query": "q", "gold": ["a"], "kind": "name"},
            {"id": "4", "query": "q", "gold_groups": [], "kind": "unanswerable"},
            {"id": "5", "query": "q", "gold": ["a"]}
        ]"#,
        )
        .unwrap();
        let rankings = [names(&["a"]), names(&["x", "b"]), vec![], names(&["x"]), names(&["a"])];
        let scores: Vec<QueryScore> = q
            .iter()
            .zip(&rankings)
            .map(|(q, r)| score_query(&q.groups(), r))
            .collect();
        let r = report(&q, &scores);
        // a query without a kind counts overall only
        assert_eq!(
            r.by_kind.keys().collect::<Vec<_>>(),
            ["keyword", "name", "unanswerable"]
        );
        assert_eq!(r.by_kind.values().map(|s| s.queries).sum::<usize>(), 4);
        assert_eq!(r.overall.queries, 5);
        assert_eq!(r.overall.answerable, 4);
        assert_eq!(r.overall.r1, 2.0 / 4.0);
        assert_eq!(r.overall.r5, 3.0 / 4.0);
        assert_eq!(r.overall.mrr, (1.0 + 0.5 + 0.0 + 1.0) / 4.0);
        assert_eq!(r.overall.zero_result, Some(0.25));
        assert_eq!(r.overall.abstain, Some(0.0));
        let kw = &r.by_kind["keyword"];
        assert_eq!((kw.queries, kw.r1, kw.r5, kw.mrr), (2, 0.5, 1.0, 0.75));
        assert_eq!((kw.zero_result, kw.abstain), (Some(0.0), None));
        let name = &r.by_kind["name"];
        assert_eq!((name.r5, name.zero_result), (0.0, Some(1.0)));
        let none = &r.by_kind["unanswerable"];
        assert_eq!((none.answerable, none.zero_result, none.abstain), (0, None, Some(0.0)));
        // no kinds at all: no per-kind rows
        assert!(report(&q[4..], &scores[4..]).by_kind.is_empty());
    }

    #[test]
    fn gold_without_groups_is_one_group_per_name() {
        let q: Vec<EvalQuery> = load_queries(r#"[{"id": 7, "query": "q", "gold": ["a", "b"], "kind": "k"}]"#).unwrap();
        assert_eq!(q[0].id, "7");
        assert_eq!(q[0].groups(), vec![names(&["a"]), names(&["b"])]);
        let r = report(&q, &[score_query(&q[0].groups(), &names(&["a"]))]);
        assert_eq!(r.by_kind["k"].r5, 0.5);
    }

    #[test]
    fn sign_test_matches_the_binomial_tails() {
        assert_eq!(sign_test(0, 0), 1.0);
        // 0 of 5 lost: 2 × 1/32
        assert!((sign_test(5, 0) - 0.0625).abs() < 1e-12);
        assert!((sign_test(0, 5) - 0.0625).abs() < 1e-12);
        // 1 of 10: 2 × 11/1024
        assert!((sign_test(9, 1) - 22.0 / 1024.0).abs() < 1e-12);
        // an even split is no evidence
        assert_eq!(sign_test(3, 3), 1.0);
        assert_eq!(sign_test(2, 1), 1.0);
        // 22 won, 0 lost (a change this project kept): far beyond noise; 1 won, 4 lost: not
        assert!(sign_test(22, 0) < 1e-6);
        assert!(sign_test(1, 4) > 0.3);
        // thousands of queries stay finite
        let p = sign_test(1100, 900);
        assert!(p > 0.0 && p < 1e-4, "{p}");
    }

    #[test]
    fn compare_counts_queries_that_moved_and_skips_those_it_does_not_apply_to() {
        let g = vec![names(&["a"])];
        let first = score_query(&g, &names(&["a"]));
        let second = score_query(&g, &names(&["x", "a"]));
        let missed = score_query(&g, &names(&["x"]));
        let unanswerable = score_query(&[], &names(&["x"]));
        let base = [first, second, missed, unanswerable, first];
        let new = [second, first, first, score_query(&[], &[]), first];
        let r1 = |s: &QueryScore| s.answerable.then_some(s.r1);
        let c = compare(&base, &new, r1);
        assert_eq!((c.won, c.lost), (2, 1));
        assert!(!c.loses_beyond_noise());
        let r5 = |s: &QueryScore| s.answerable.then_some(s.r5);
        assert_eq!((compare(&base, &new, r5).won, compare(&base, &new, r5).lost), (1, 0));
        let abstain = |s: &QueryScore| (!s.answerable).then_some(f64::from(u8::from(s.abstained)));
        assert_eq!(
            (compare(&base, &new, abstain).won, compare(&base, &new, abstain).lost),
            (1, 0)
        );
        let many_lost = Change {
            won: 1,
            lost: 12,
            p: sign_test(1, 12),
        };
        assert!(many_lost.loses_beyond_noise());
    }
}
