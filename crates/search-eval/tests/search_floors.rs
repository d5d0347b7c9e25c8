//! Retrieval floors on every visible set (`../shared/bench/eval`), lexical only and with the
//! semantic arm, through the evaluation's own code (`rank_all_with` → `Index::search_hybrid`,
//! the path of `mcp_search`): a change that loses on any set fails here.
//!
//! The tables hold each set's figures as measured when the ranking last changed; a floor is
//! that figure less one request's worth (see [`check`]). Measured with the release binary from
//! the workspace root:
//!
//! ```text
//! cargo build --release -p search-eval
//! target/release/search-eval --all-visible --json                       # LEXICAL
//! target/release/search-eval --all-visible --json \
//!     --embed-model models/all-MiniLM-L6-v2 --vector-cache target/vector-cache   # HYBRID
//! EMBED_QUERY_INT8=0 target/release/search-eval ...  (the same, query vectors in f32)
//! ```
//!
//! (each `sets[].report.overall`: `r1`, `r5`, `mrr`, `abstain` truncated to four decimals,
//! `zero_result` rounded up to four).
//!
//! Skips with a message when `../shared/bench` is absent (`SHARED_DIR` names another folder),
//! unless `REQUIRE_SHARED=1` (CI), where that fails. The semantic floors need the model
//! (`scripts/fetch-model.sh`) and the vectors cached by a release run of `search-eval
//! --all-visible --embed-model models/all-MiniLM-L6-v2` (a debug build would take hours to embed
//! 13k tools); `scripts/test.sh` does both. Without the model they skip, unless
//! `REQUIRE_PEERS=1`, where they fail.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{bench_or_skip, workspace_root};
use search_eval::eval::rank_all_with;
use search_eval::vectors::EvalEmbedder;
use tool_search::catalog_file::load_catalog_path;
use tool_search::eval::{self, Report};
use tool_search::semantic::query_text;
use tool_search::Index;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

fn embedder() -> Option<EvalEmbedder> {
    let model = workspace_root().join("models/all-MiniLM-L6-v2");
    if !embed::model_installed_or_skip(&model, "the semantic floors") {
        return None;
    }
    Some(EvalEmbedder::open_cache_only(&model, &target_dir().join("vector-cache")).expect("model loads"))
}

/// A visible set's catalog (its own, else the deployment catalog) and queries.
fn set_files(b: &Path, set: &str) -> (PathBuf, PathBuf) {
    let dir = b.join("eval").join(set);
    let own = dir.join("catalog.json");
    let catalog = if own.is_file() {
        own
    } else {
        b.join("catalogs/deployment.json")
    };
    (catalog, dir.join("queries.json"))
}

fn score(catalog: &Path, queries: &Path, embedder: Option<&mut EvalEmbedder>) -> Result<Report, String> {
    let tools = load_catalog_path(catalog).map_err(|e| e.to_string())?;
    let queries =
        eval::load_queries(&std::fs::read_to_string(queries).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let index = Index::build(&tools);
    let names: Vec<String> = tools.iter().map(|t| t.tool.name.clone()).collect();
    let ranked = match embedder {
        None => rank_all_with(&index, &names, &queries, 10, None),
        Some(e) => {
            let vectors = e.tool_vectors(&tools)?;
            let texts: Vec<String> = queries.iter().flat_map(|q| q.texts()).map(|t| query_text(&t)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let qv: HashMap<String, Vec<f32>> = e.query_vectors(&refs)?;
            rank_all_with(&index, &names, &queries, 10, Some((&vectors, &qv)))
        }
    };
    let scores: Vec<_> = queries
        .iter()
        .zip(&ranked)
        .map(|(q, r)| eval::score_query(&q.groups(), r))
        .collect();
    Ok(eval::report(&queries, &scores))
}

/// One set's overall figures at limit 10, as measured (see the module docs).
struct Measured {
    set: &'static str,
    r1: f64,
    r5: f64,
    mrr: f64,
    /// Share of answerable requests that got no result (a ceiling, not a floor).
    zero: f64,
    /// Share of unanswerable requests that got no result, for sets that have some.
    abstain: Option<f64>,
}

/// Lexical only. The best peer on mcptoolbench reaches R@1 0.57, R@5 0.73; on toollens R@5
/// 0.30, MRR 0.47 (`../shared/bench/README.md`): these floors stay above them.
#[rustfmt::skip]
const LEXICAL: [Measured; 7] = [
    Measured { set: "demo-dev",       r1: 0.2941, r5: 0.5000, mrr: 0.3870, zero: 0.2942, abstain: Some(0.8000) },
    Measured { set: "deployment-dev", r1: 0.5400, r5: 0.7367, mrr: 0.6383, zero: 0.0602, abstain: Some(0.4000) },
    Measured { set: "mcp_flow-dev",   r1: 0.1035, r5: 0.2294, mrr: 0.1566, zero: 0.0024, abstain: None },
    Measured { set: "mcptoolbench",   r1: 0.7496, r5: 0.9113, mrr: 0.8080, zero: 0.0129, abstain: None },
    Measured { set: "metatool-dev",   r1: 0.4026, r5: 0.6191, mrr: 0.4997, zero: 0.0773, abstain: None },
    Measured { set: "seed-examples",  r1: 0.9444, r5: 1.0000, mrr: 1.0000, zero: 0.0000, abstain: Some(1.0000) },
    Measured { set: "toollens",       r1: 0.1671, r5: 0.3502, mrr: 0.5261, zero: 0.0384, abstain: None },
];

/// With the semantic arm (the model's weights in f16). Query vectors come from the 8-bit query
/// encoder on a CPU with a VNNI unit and in f32 elsewhere (`embed::encoder`); both were measured
/// (the second with `EMBED_QUERY_INT8=0`) and each figure is the worse of the two. The query
/// encoder carries the built-in delta (`crates/embed/query-delta.safetensors`), which was
/// trained on demo-dev's, deployment-dev's, metatool-dev's and seed-examples' requests: their
/// floors guard what ships, not what an unseen request gets (`docs/search.md` has those).
#[rustfmt::skip]
const HYBRID: [Measured; 7] = [
    Measured { set: "demo-dev",       r1: 0.4705, r5: 0.7941, mrr: 0.6198, zero: 0.0000, abstain: Some(0.2000) },
    Measured { set: "deployment-dev", r1: 0.7030, r5: 0.9171, mrr: 0.8103, zero: 0.0110, abstain: Some(0.3333) },
    Measured { set: "mcp_flow-dev",   r1: 0.2623, r5: 0.4752, mrr: 0.3538, zero: 0.0024, abstain: None },
    Measured { set: "mcptoolbench",   r1: 0.7753, r5: 0.8941, mrr: 0.8348, zero: 0.0029, abstain: None },
    Measured { set: "metatool-dev",   r1: 0.7030, r5: 0.9427, mrr: 0.8189, zero: 0.0035, abstain: None },
    Measured { set: "seed-examples",  r1: 0.9444, r5: 1.0000, mrr: 1.0000, zero: 0.0000, abstain: Some(1.0000) },
    Measured { set: "toollens",       r1: 0.1682, r5: 0.3419, mrr: 0.5113, zero: 0.0043, abstain: None },
];

/// Scores every set of `table` and fails listing each figure below its floor: the measured
/// figure less one request's worth, that is 1 / the set's answerable requests for R@1, R@5 and
/// MRR (and above it for the zero-result share), 1 / its unanswerable requests for abstention.
fn check(label: &str, table: &[Measured], mut embedder: Option<EvalEmbedder>, b: &Path) {
    let mut failures = Vec::new();
    for m in table {
        let (catalog, queries) = set_files(b, m.set);
        let report = match score(&catalog, &queries, embedder.as_mut()) {
            Ok(r) => r,
            Err(e) => panic!("{label} {}: {e}", m.set),
        };
        let o = &report.overall;
        eprintln!(
            "{label} {}: R@1 {:.4} R@5 {:.4} MRR {:.4} zero {:?} abstain {:?}",
            m.set, o.r1, o.r5, o.mrr, o.zero_result, o.abstain
        );
        let request = 1.0 / o.answerable.max(1) as f64;
        let mut below = |what: &str, got: f64, floor: f64| {
            if got < floor - 1e-9 {
                failures.push(format!("{}: {what} {got:.4} below {floor:.4}", m.set));
            }
        };
        below("R@1", o.r1, m.r1 - request);
        below("R@5", o.r5, m.r5 - request);
        below("MRR", o.mrr, m.mrr - request);
        // requests for capabilities the catalog lacks get nothing
        if let Some(abstain) = m.abstain {
            let unanswerable_request = 1.0 / o.unanswerable.max(1) as f64;
            below("abstain", o.abstain.unwrap_or(0.0), abstain - unanswerable_request);
        }
        // the answerable ones get something
        let zero = o.zero_result.unwrap_or(0.0);
        if zero > m.zero + request + 1e-9 {
            failures.push(format!(
                "{}: no result for {zero:.4} of answerable requests, above {:.4}",
                m.set,
                m.zero + request
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{label} below its floors:\n{}",
        failures.join("\n")
    );
}

#[test]
fn lexical_floors_on_every_visible_set() {
    let Some(b) = bench_or_skip("lexical_floors_on_every_visible_set") else {
        return;
    };
    check("lexical", &LEXICAL, None, &b);
}

#[test]
fn hybrid_floors_on_every_visible_set() {
    let Some(b) = bench_or_skip("hybrid_floors_on_every_visible_set") else {
        return;
    };
    let Some(e) = embedder() else { return };
    check("hybrid", &HYBRID, Some(e), &b);
}
