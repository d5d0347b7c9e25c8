//! The semantic arm end to end: a proxy with `EMBED_MODEL` embeds its catalog in the
//! background, answers a paraphrase that lexical search misses, keeps its vectors beside the
//! manifest (a restart embeds nothing, a changed description embeds one tool); without the
//! model, or with a bad one, it serves lexically and says why once.
//!
//! The tests that need the model are skipped (with a message) when it is not installed: run
//! `scripts/fetch-model.sh`, or point `EMBED_MODEL` at a model directory. Under
//! `REQUIRE_PEERS=1` (CI) a missing model fails instead.

mod common;

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// A paraphrase of `dayplanr-create_event` ("Create a calendar event and send invitations
/// ...") in other words than its own: lexical search ranks it outside its top 5 (below
/// `find_free_slots`, `schedule_message`, notes and checklists), the hybrid search within.
const PARAPHRASE: &str = "put a meeting on my schedule";
const PARAPHRASE_TOOL: &str = "dayplanr-create_event";

/// The installed model, or `None` (skip) when it is absent.
fn model_dir() -> Option<PathBuf> {
    let dir = embed::default_model_dir();
    embed::model_installed_or_skip(&dir, "the semantic-arm service tests").then_some(dir)
}

async fn readyz(base: &str) -> Value {
    let (_, body) = get(&format!("{base}/readyz")).await;
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("/readyz is not JSON ({e}): {body}"))
}

/// Waits until `/readyz` says the semantic arm is ready for the current catalog.
async fn wait_semantic_ready(base: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = readyz(base).await;
        if r["search"]["semantic"] == "ready" {
            return r;
        }
        assert!(Instant::now() < deadline, "semantic arm not ready: {r}");
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

fn result_names(result: &Value) -> Vec<String> {
    result["structuredContent"]["results"]
        .as_array()
        .map(|a| a.iter().filter_map(|h| h["name"].as_str().map(String::from)).collect())
        .unwrap_or_default()
}

#[actix_web::test]
async fn hybrid_search_answers_a_paraphrase_and_vectors_survive_a_restart() {
    let Some(model) = model_dir() else { return };
    let demo_tools = demo_upstream::demo_tools();
    let n = demo_tools.len() as u64;
    let up = upstream(demo_tools.clone(), false, false).await;
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.json");

    // First start: every tool is embedded, in the background.
    let p = start_proxy_semantic(
        vec![upstream_config("demo", &up.url)],
        catalog_config(Some(manifest.clone())),
        Some(model.clone()),
    )
    .await;
    let r = wait_semantic_ready(&p.base).await;
    assert_eq!(r["status"], "ready", "{r}");
    assert_eq!(r["search"]["mode"], "hybrid", "{r}");
    assert_eq!(r["search"]["tools_embedded"], n, "{r}");
    assert_eq!(r["search"]["embedded_since_start"], n, "{r}");
    assert!(r["search"]["model"].as_str().is_some_and(|m| !m.is_empty()), "{r}");

    let s = call(&p.url, "mcp_search", json!({"query": PARAPHRASE})).await;
    let names = result_names(&s);
    assert!(
        names.iter().take(5).any(|n| n == PARAPHRASE_TOOL),
        "{PARAPHRASE:?} → {names:?}"
    );
    // a list of queries: each gets its vector
    let s = call(
        &p.url,
        "mcp_search",
        json!({"query": ["send an email", PARAPHRASE], "limit": 5}),
    )
    .await;
    let second = &s["structuredContent"]["queries"][1]["results"];
    assert!(
        second
            .as_array()
            .is_some_and(|a| a.iter().any(|h| h["name"] == PARAPHRASE_TOOL)),
        "{s}"
    );
    let metrics = p.proxy.metrics.encode(&p.state.snapshot(), 0);
    let sample = |name: &str| proxy_metrics::sample(&metrics, name, "");
    assert_eq!(sample("mcp_proxy_semantic_tools_embedded"), Some(n as f64), "{metrics}");
    assert_eq!(sample("mcp_proxy_query_embedding_duration_seconds_count"), Some(2.0));
    let vectors = embedding_file(&manifest);
    assert!(vectors.is_file(), "the vectors are kept beside the manifest");
    p.stop().await;

    // Restart with the same manifest: nothing is embedded again.
    let p = start_proxy_semantic(
        vec![upstream_config("demo", &up.url)],
        catalog_config(Some(manifest.clone())),
        Some(model.clone()),
    )
    .await;
    let r = wait_semantic_ready(&p.base).await;
    assert_eq!(r["search"]["tools_embedded"], n, "{r}");
    assert_eq!(
        r["search"]["embedded_since_start"], 0,
        "a restart re-embeds nothing: {r}"
    );
    let names = result_names(&call(&p.url, "mcp_search", json!({"query": PARAPHRASE})).await);
    assert!(names.iter().take(5).any(|n| n == PARAPHRASE_TOOL), "{names:?}");

    // One description changes upstream: after a refresh, only that tool is embedded.
    let mut changed = demo_tools.clone();
    let i = changed
        .iter()
        .position(|t| t["name"] == "jotter-tag_note")
        .expect("demo tool");
    changed[i]["description"] = json!("Attach labels to a note, or take them off again.");
    up.control.set_tools(changed);
    let before = readyz(&p.base).await["fingerprint"].clone();
    let refreshed = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(refreshed["structuredContent"]["changed"], true, "{refreshed}");
    let r = wait_semantic_ready(&p.base).await;
    assert_ne!(r["fingerprint"], before, "{r}");
    assert_eq!(r["search"]["embedded_since_start"], 1, "only the changed tool: {r}");
    assert_eq!(r["search"]["tools_embedded"], n, "{r}");
    p.stop().await;
}

fn embedding_file(manifest: &std::path::Path) -> PathBuf {
    proxy_actors::embedding::vectors_path(manifest)
}

#[actix_web::test]
async fn without_embed_model_search_is_lexical_and_readyz_says_why() {
    let up = upstream(demo_upstream::demo_tools(), false, false).await;
    let p = start_proxy_semantic(vec![upstream_config("demo", &up.url)], catalog_config(None), None).await;
    let r = readyz(&p.base).await;
    assert_eq!(r["status"], "ready", "readiness does not need the model: {r}");
    assert_eq!(r["search"]["mode"], "lexical", "{r}");
    assert_eq!(r["search"]["semantic"], "off (EMBED_MODEL unset)", "{r}");
    // lexical alone misses the paraphrase (what the hybrid test relies on)
    let names = result_names(&call(&p.url, "mcp_search", json!({"query": PARAPHRASE})).await);
    assert!(!names.iter().take(5).any(|n| n == PARAPHRASE_TOOL), "{names:?}");
    let names = result_names(&call(&p.url, "mcp_search", json!({"query": "send an email"})).await);
    assert_eq!(names.first().map(String::as_str), Some("quillmail-send_email"));
    p.stop().await;
}

/// The binary's log lines (parsed) while it runs with `env`, until `until` holds for the lines
/// so far (or 20 s); also its `/readyz` then.
async fn run_binary(env: &[(&str, &str)], until: impl Fn(&[Value]) -> bool) -> (Vec<Value>, Option<Value>) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-search-proxy"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let lines: Arc<Mutex<Vec<Value>>> = Arc::default();
    let stdout = child.stdout.take().unwrap();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                sink.lock().unwrap().push(v);
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ready = None;
    loop {
        let snapshot = lines.lock().unwrap().clone();
        let addr = snapshot
            .iter()
            .find(|l| l["msg"] == "listening")
            .and_then(|l| l["addr"].as_str().map(String::from));
        if let Some(addr) = &addr {
            let r = readyz(&format!("http://{addr}")).await;
            if r["status"] == "ready" && until(&snapshot) {
                ready = Some(r);
                break;
            }
        }
        if Instant::now() > deadline {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    // a moment for any further (wrong) line about the semantic arm
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    let _ = child.kill();
    let _ = child.wait();
    let out = lines.lock().unwrap().clone();
    (out, ready)
}

fn semantic_lines(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["msg"] == "semantic search off")
        .cloned()
        .collect()
}

#[actix_web::test]
async fn the_binary_says_once_why_search_is_lexical() {
    let up = upstream(demo_upstream::demo_tools(), false, false).await;
    let upstreams = format!("demo={}", up.url);

    // EMBED_MODEL set but empty (lexical only, even with a model installed): one INFO line.
    let (lines, ready) = run_binary(&[("UPSTREAMS", &upstreams), ("EMBED_MODEL", "")], |l| {
        !semantic_lines(l).is_empty()
    })
    .await;
    let off = semantic_lines(&lines);
    assert_eq!(off.len(), 1, "exactly one line: {off:?}");
    assert_eq!(off[0]["level"], "info", "{off:?}");
    assert_eq!(off[0]["reason"], "EMBED_MODEL unset", "{off:?}");
    let ready = ready.expect("the proxy became ready");
    assert_eq!(ready["search"]["mode"], "lexical", "{ready}");
    assert_eq!(ready["search"]["semantic"], "off (EMBED_MODEL unset)", "{ready}");

    // EMBED_MODEL set to a directory without a model: it starts, lexical, one WARN line.
    let missing = tempfile::tempdir().unwrap();
    let bad = missing.path().join("no-model-here");
    let bad = bad.to_str().unwrap();
    let (lines, ready) = run_binary(&[("UPSTREAMS", &upstreams), ("EMBED_MODEL", bad)], |l| {
        !semantic_lines(l).is_empty()
    })
    .await;
    let off = semantic_lines(&lines);
    assert_eq!(off.len(), 1, "exactly one line: {off:?}");
    assert_eq!(off[0]["level"], "warn", "{off:?}");
    let reason = off[0]["reason"].as_str().unwrap_or_default().to_owned();
    assert!(reason.contains("no-model-here"), "the reason names the file: {off:?}");
    let ready = ready.expect("the proxy started and became ready without its model");
    assert_eq!(ready["search"]["mode"], "lexical", "{ready}");
    assert_eq!(ready["search"]["semantic"], format!("off ({reason})"), "{ready}");
}

/// `EMBED_MODEL` not set at all: the binary uses the model `scripts/fetch-model.sh` installed
/// in the checkout (here: beside `target/`, where the test's binary lives), says where it
/// found it, and searches hybrid.
#[actix_web::test]
async fn the_binary_finds_the_installed_model_without_embed_model() {
    let installed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2");
    if !embed::model_installed_or_skip(&installed, "the_binary_finds_the_installed_model_without_embed_model") {
        return;
    }
    let up = upstream(demo_upstream::demo_tools(), false, false).await;
    let upstreams = format!("demo={}", up.url);
    let (lines, ready) = run_binary(&[("UPSTREAMS", &upstreams)], |l| {
        l.iter().any(|l| l["msg"] == "embedding model loaded")
    })
    .await;
    let found: Vec<&Value> = lines
        .iter()
        .filter(|l| l["msg"] == "embedding model found where scripts/fetch-model.sh installs it")
        .collect();
    assert_eq!(found.len(), 1, "{lines:?}");
    let path = found[0]["path"].as_str().unwrap_or_default();
    assert!(path.ends_with("models/all-MiniLM-L6-v2"), "{path}");
    assert!(semantic_lines(&lines).is_empty(), "not off: {lines:?}");
    let ready = ready.expect("the proxy became ready with the model loaded");
    assert_ne!(ready["search"]["semantic"], "off (EMBED_MODEL unset)", "{ready}");
}
