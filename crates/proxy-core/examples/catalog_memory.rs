//! Where the memory of a large catalog goes: heap bytes of the parsed definitions and of
//! each part of the search index, measured with a counting allocator, plus the time of each
//! step.
//!
//! ```text
//! cargo run --release -p proxy-core --example catalog_memory -- ../shared/bench/catalogs/real-11k.json
//! MANIFEST=/path/to/manifest.json cargo run --release -p proxy-core --example catalog_memory
//! ```
//!
//! With a catalog file it parses the file as `search-eval search` does; with `MANIFEST`
//! it loads a manifest written by the proxy, as a start from the manifest does.

use std::time::Instant;

use peak_alloc::PeakAlloc;
use proxy_core::catalog::{manifest, Snapshot};
use tool_search::model::CatalogTool;
use tool_search::Index;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

fn now() -> usize {
    ALLOCATOR.current_usage()
}

/// Peak since the last call, then resets it.
fn peak() -> usize {
    let p = ALLOCATOR.peak_usage();
    ALLOCATOR.reset_peak_usage();
    p
}

fn main() {
    let tools: Vec<CatalogTool> = if let Some(path) = std::env::var_os("MANIFEST") {
        let t = Instant::now();
        let m = manifest::load(std::path::Path::new(&path))
            .expect("manifest readable")
            .expect("manifest exists");
        println!(
            "manifest loaded: {} in {:?} (peak {})",
            mib(now()),
            t.elapsed(),
            mib(peak())
        );
        let configured: Vec<(String, String)> = m.upstreams.iter().map(|u| (u.label.clone(), u.url.clone())).collect();
        let states = m.into_states(&configured);
        let t = Instant::now();
        let before = now();
        let snapshot = Snapshot::build(states, 1, &Default::default());
        println!(
            "snapshot of {} tools: +{} in {:?} (peak {})",
            snapshot.tools.len(),
            mib(now().saturating_sub(before)),
            t.elapsed(),
            mib(peak())
        );
        snapshot.tools.clone()
    } else {
        let path = std::env::args()
            .nth(1)
            .expect("usage: catalog_memory CATALOG.json (or MANIFEST=...)");
        let t = Instant::now();
        let tools = tool_search::catalog_file::load_catalog_path(std::path::Path::new(&path)).expect("catalog loads");
        println!(
            "{} tools parsed: {} in {:?} (peak {})",
            tools.len(),
            mib(now()),
            t.elapsed(),
            mib(peak())
        );
        tools
    };
    let before = now();
    let t = Instant::now();
    let index = Index::build(&tools);
    println!(
        "index: {} in {:?} (peak during the build {})",
        mib(now() - before),
        t.elapsed(),
        mib(peak())
    );
    for (part, bytes) in index.heap_report() {
        println!("  {part:16} {}", mib(bytes));
    }
    let text: usize = tools
        .iter()
        .map(|t| serde_json::to_string(&*t.tool).map_or(0, |s| s.len()))
        .sum();
    println!("the definitions as compact JSON: {}", mib(text));
}
