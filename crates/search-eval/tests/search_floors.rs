//! Retrieval floors on every visible set (`../shared/bench/eval`), lexical only and with the
//! semantic arm, through `eval`'s own code (`rank_all_with` → `Index::search_hybrid`, the path
//! of `mcp_search`). Each floor is the figure measured when the ranking last changed, less a
//! margin for float noise: a change that loses on any set fails here (README of
//! `crates/tool-search` has the table).
//!
//! Skips with a message when `../shared/bench` is absent, unless `REQUIRE_PEERS=1` (CI), where
//! that fails. The semantic floors need the model (`scripts/fetch-model.sh`) and the vectors
//! cached by a release run of `search-eval --all-visible --embed-model
//! models/all-MiniLM-L6-v2` (a debug build would take hours to embed 13k tools);
//! `scripts/test.sh` does both. Without them the semantic floors skip, unless
//! `REQUIRE_PEERS=1` (CI), where they fail.

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

/// `(set, catalog, queries)` of every visible set.
fn sets(b: &Path) -> Vec<(&'static str, PathBuf, PathBuf)> {
    let eval = b.join("eval");
    let shared = b.join("catalogs/deployment.json");
    [
        "deployment-dev",
        "mcp_flow-dev",
        "mcptoolbench",
        "metatool-dev",
        "seed-examples",
        "toollens",
    ]
    .into_iter()
    .map(|s| {
        let own = eval.join(s).join("catalog.json");
        let catalog = if own.is_file() { own } else { shared.clone() };
        (s, catalog, eval.join(s).join("queries.json"))
    })
    .collect()
}

fn score(catalog: &Path, queries: &Path, embedder: Option<&mut EvalEmbedder>) -> Result<Report, String> {
    let tools = load_catalog_path(catalog)?;
    let queries = eval::load_queries(&std::fs::read_to_string(queries).map_err(|e| e.to_string())?)?;
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

/// Floors: (set, R@1, R@5) overall, measured at the commit that set them, less 0.005.
const LEXICAL: [(&str, f64, f64); 6] = [
    ("deployment-dev", 0.535, 0.731),
    ("mcp_flow-dev", 0.098, 0.224),
    ("mcptoolbench", 0.745, 0.908),
    ("metatool-dev", 0.398, 0.614),
    ("seed-examples", 0.939, 0.995),
    ("toollens", 0.162, 0.345),
];

/// Query vectors come from the 8-bit query encoder on a CPU with a VNNI unit and from the
/// f32 model elsewhere (`embed::encoder`): the hybrid floors are the lower of the two, less 0.005.
const HYBRID: [(&str, f64, f64); 6] = [
    ("deployment-dev", 0.597, 0.819),
    ("mcp_flow-dev", 0.223, 0.382),
    ("mcptoolbench", 0.737, 0.908),
    ("metatool-dev", 0.534, 0.769),
    ("seed-examples", 0.884, 0.995),
    ("toollens", 0.173, 0.360),
];

/// deployment-dev's unanswerable and answerable requests: (least share of unanswerable
/// requests that get nothing, most share of answerable ones that get nothing), measured at the
/// commit that set them (abstain less one request in 15, zero-result plus one in 183).
const LEXICAL_ABSTENTION: (f64, f64) = (0.333, 0.066);
const HYBRID_ABSTENTION: (f64, f64) = (0.333, 0.017);

fn check(
    label: &str,
    floors: &[(&str, f64, f64)],
    (abstain_floor, zero_ceiling): (f64, f64),
    mut embedder: Option<EvalEmbedder>,
    b: &Path,
) {
    let mut failures = Vec::new();
    for (set, catalog, queries) in sets(b) {
        let report = match score(&catalog, &queries, embedder.as_mut()) {
            Ok(r) => r,
            Err(e) => panic!("{label} {set}: {e}"),
        };
        let o = &report.overall;
        eprintln!(
            "{label} {set}: R@1 {:.3} R@5 {:.3} MRR {:.3} zero {:?} abstain {:?}",
            o.r1, o.r5, o.mrr, o.zero_result, o.abstain
        );
        let (_, r1, r5) = floors.iter().find(|f| f.0 == set).copied().unwrap_or((set, 0.0, 0.0));
        if o.r1 < r1 || o.r5 < r5 {
            failures.push(format!(
                "{set}: R@1 {:.3} (floor {r1}), R@5 {:.3} (floor {r5})",
                o.r1, o.r5
            ));
        }
        if set == "deployment-dev" {
            // requests for capabilities the catalog lacks get nothing, in both modes; the
            // answerable ones get something
            let abstain = report.by_kind["unanswerable"].abstain.unwrap_or(0.0);
            if abstain < abstain_floor - 1e-9 {
                failures.push(format!(
                    "{set}: abstained on {abstain:.3} of unanswerable requests (floor {abstain_floor})"
                ));
            }
            let zero = o.zero_result.unwrap_or(0.0);
            if zero > zero_ceiling + 1e-9 {
                failures.push(format!(
                    "{set}: no result for {zero:.3} of answerable requests (ceiling {zero_ceiling})"
                ));
            }
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
    check("lexical", &LEXICAL, LEXICAL_ABSTENTION, None, &b);
}

#[test]
fn hybrid_floors_on_every_visible_set() {
    let Some(b) = bench_or_skip("hybrid_floors_on_every_visible_set") else {
        return;
    };
    let Some(e) = embedder() else { return };
    check("hybrid", &HYBRID, HYBRID_ABSTENTION, Some(e), &b);
}
