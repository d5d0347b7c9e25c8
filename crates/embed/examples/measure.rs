//! Measures the embedder: load time, RSS of the loaded model, per-query latency (one query per
//! call) and the time to embed a tool catalog (name + description).
//!
//! `cargo run --release -p embed --example measure -- CATALOG.json [QUERIES.json] [MAX_TOOLS]`
//!
//! Threads: `RAYON_NUM_THREADS` (default: all cores); `CANDLE_NUM_THREADS` is 1 unless set, as in
//! the binary. The query delta as the service chooses it (`EMBED_QUERY_DELTA`: the built-in one
//! unless `none` or a file).

use std::time::Instant;

use embed::{default_model_dir, Embedder, QueryDeltaChoice};

/// Resident set size of this process in KiB (Linux), 0 elsewhere.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// As the binary does (see its `run_batches_one_per_core`), before any thread starts: the
/// catalog's batches run one per core, with candle's element-wise steps on the calling thread.
fn run_batches_one_per_core() {
    let current = std::env::var_os(embed::CANDLE_NUM_THREADS);
    if let Some(value) = embed::candle_threads_for_batches(current.as_deref()) {
        std::env::set_var(embed::CANDLE_NUM_THREADS, value);
    }
}

fn main() {
    run_batches_one_per_core();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let catalog = args
        .first()
        .expect("usage: measure CATALOG.json [QUERIES.json] [MAX_TOOLS]");
    let queries_path = args.get(1);
    let max_tools: usize = args.get(2).map_or(usize::MAX, |n| n.parse().expect("MAX_TOOLS"));

    let rss_before = rss_kib();
    let t = Instant::now();
    let e = Embedder::load_choosing(default_model_dir(), &QueryDeltaChoice::from_env()).expect("model loads");
    let load = t.elapsed();
    let rss_after = rss_kib();
    println!(
        "load (query delta {}): {:.0} ms; RSS {} MiB before, {} MiB after load (+{} MiB)",
        e.query_delta().unwrap_or("none"),
        load.as_secs_f64() * 1e3,
        rss_before / 1024,
        rss_after / 1024,
        (rss_after - rss_before) / 1024
    );

    if let Some(path) = queries_path.filter(|p| !p.is_empty()) {
        let q: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("queries file")).expect("json");
        let queries: Vec<String> = q
            .as_array()
            .expect("array of queries")
            .iter()
            .filter_map(|q| q["query"].as_str().map(str::to_owned))
            .collect();
        let mean_len = queries.iter().map(|q| q.len()).sum::<usize>() / queries.len();
        // the f32 model (`embed`) and the queries' path (`embed_queries_at`: 8-bit where the CPU
        // has a VNNI unit), each query alone, cut at 64 tokens as the service cuts queries
        let f32_vectors = e
            .embed_at(&queries.iter().map(String::as_str).collect::<Vec<_>>(), 64)
            .expect("embed");
        for (label, queries_path) in [("f32 (embed_at)", false), ("queries' path (embed_queries_at)", true)] {
            let one = |q: &str| {
                if queries_path {
                    e.embed_queries_at(&[q], 64)
                } else {
                    e.embed_at(&[q], 64)
                }
                .expect("embed")
            };
            one(&queries[0]);
            let mut times = Vec::new();
            let mut cosines = Vec::new();
            for (q, reference) in queries.iter().zip(&f32_vectors) {
                let t = Instant::now();
                let v = one(q);
                times.push(t.elapsed().as_secs_f64() * 1e3);
                cosines.push(v[0].iter().zip(reference).map(|(a, b)| a * b).sum::<f32>());
            }
            times.sort_by(f64::total_cmp);
            cosines.sort_by(f32::total_cmp);
            let p = |f: f64| times[((times.len() - 1) as f64 * f) as usize];
            println!(
                "queries, {label} [{}]: {} (mean {} chars), one per call: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms; cosine to f32 min {:.4}",
                if queries_path { e.query_precision() } else { "f32" },
                queries.len(),
                mean_len,
                p(0.5),
                p(0.95),
                p(1.0),
                cosines[0]
            );
        }
    }

    let c: serde_json::Value = serde_json::from_slice(&std::fs::read(catalog).expect("catalog file")).expect("json");
    let texts: Vec<String> = c["tools"]
        .as_array()
        .expect("{\"tools\": [...]}")
        .iter()
        .take(max_tools)
        .map(|t| {
            format!(
                "{}: {}",
                t["name"].as_str().unwrap_or(""),
                t["description"].as_str().unwrap_or("")
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let v = e.embed(&refs).expect("embed tools");
    let took = t.elapsed().as_secs_f64();
    println!(
        "tools: {} embedded in {:.1} s ({:.0} tools/s); RSS now {} MiB",
        v.len(),
        took,
        v.len() as f64 / took,
        rss_kib() / 1024
    );
}
