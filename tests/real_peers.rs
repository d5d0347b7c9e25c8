//! The proxy driven by the official MCP SDK clients, as real subprocesses.
//!
//! Each test starts the embedded demo upstream and the proxy in-process (loopback, port 0;
//! `tests/peer_harness` for the proxy, the peers and the bounded subprocess),
//! then runs one client script of `tests/peers/` against the proxy URL and asserts it exits 0:
//! - `py_flow.py URL legacy|auto`: Python SDK `mcp` 2.x (`mcp.Client`), both negotiation modes;
//! - `ts1_flow.mjs URL`: TypeScript SDK 1.x (`Client` + `StreamableHTTPClientTransport`).
//!
//! The scripts do the whole search → describe → call flow and check every answer; their output
//! (a JSON summary, or `FAIL: …` and a traceback) is shown when a test fails.
//!
//! Three tests have SDK upstreams whose tools ask their caller something (elicitation, sampling,
//! roots, log lines): `tests/peers/upstreams/py_talk.py` (Python, reached in either era) and
//! `ts2_ask.mjs` (TypeScript 2.x returning `inputRequired(...)`), called through `mcp_call` by
//! the SDK clients of `tests/peers/clients/` (`py_talk_client.py` in both eras,
//! `ts_talk_client.mjs`): the four era pairs, a client without the capabilities, one that never
//! answers, and two asked at once.
//!
//! The clients come from their registries via `scripts/install-test-peers.sh` (into `.venv/` and
//! `tests/peers/node_modules/`). Without them the tests skip, unless `REQUIRE_PEERS=1` (set by
//! `scripts/test.sh`, hence in CI), where a missing client is a failure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use demo_upstream::{self as demo, UpstreamOptions};

mod peer_harness;
use peer_harness::{node, peers_available, python, repo_root, run_bounded, Peer, Proc, TestProxy, CLIENT_TIMEOUT};

/// Starts the demo upstream and the proxy in front of it, runs the client against the proxy
/// (the servers keep running on this thread's runtime meanwhile), and asserts the client passed.
async fn run_client(test: &str, peer: Peer, program: PathBuf, script: &str, extra_args: &[&str]) {
    if !peers_available(test, &[peer]) {
        return;
    }
    let upstream = demo::start(UpstreamOptions::demo(), "127.0.0.1:0")
        .await
        .expect("demo upstream starts");
    let proxy = TestProxy::start(&format!("demo={}", upstream.url)).await;
    let mut args = vec![repo_root().join(script).display().to_string(), proxy.url.clone()];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let outcome = actix_web::rt::task::spawn_blocking(move || run_bounded(&program, &args, &[], CLIENT_TIMEOUT))
        .await
        .expect("client runner thread");
    let stats = upstream.control.stats();
    proxy.stop().await;
    upstream.stop().await;

    let report = outcome.report();
    assert!(outcome.success(), "{peer:?} client failed against the proxy\n{report}");
    let summary: serde_json::Value = serde_json::from_str(outcome.stdout.trim())
        .unwrap_or_else(|e| panic!("the client's stdout is not its JSON summary ({e})\n{report}"));
    assert_eq!(summary["ok"], true, "summary not ok\n{report}");
    // The instructions name every source of the demo catalog with its tool count.
    let expected = demo_source_counts();
    let seen: BTreeMap<String, u64> = serde_json::from_value(summary["instructions_sources"].clone())
        .unwrap_or_else(|e| panic!("summary.instructions_sources is not a map of counts ({e})\n{report}"));
    assert_eq!(seen, expected, "per-source tool counts in the instructions\n{report}");
    // add, echo, counter twice, image reached the upstream (a call without a required
    // argument and an unknown tool do not).
    assert!(
        stats.tools_call >= 5,
        "the upstream saw only {} tools/call\n{report}",
        stats.tools_call
    );
    println!("{report}");
}

/// Tools per source (`provider` of `provider-tool`) in the demo catalog the upstream serves.
fn demo_source_counts() -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for tool in demo::demo_tools() {
        let name = tool["name"].as_str().expect("demo tool name");
        let source = name.split_once('-').map_or(name, |(source, _)| source);
        *counts.entry(source.to_string()).or_insert(0) += 1;
    }
    counts
}

#[actix_web::test]
async fn python_sdk_legacy_handshake() {
    run_client(
        "python_sdk_legacy_handshake",
        Peer::Python,
        python(),
        "tests/peers/py_flow.py",
        &["legacy"],
    )
    .await;
}

#[actix_web::test]
async fn python_sdk_auto_negotiation() {
    run_client(
        "python_sdk_auto_negotiation",
        Peer::Python,
        python(),
        "tests/peers/py_flow.py",
        &["auto"],
    )
    .await;
}

#[actix_web::test]
async fn typescript_sdk_v1() {
    run_client("typescript_sdk_v1", Peer::Node, node(), "tests/peers/ts1_flow.mjs", &[]).await;
}

/// Starts an SDK upstream subprocess (off the runtime's thread) and waits for its `READY` URL.
async fn spawn_upstream(name: &'static str, program: PathBuf, args: Vec<String>) -> (Proc, String) {
    actix_web::rt::task::spawn_blocking(move || Proc::spawn_ready(name, &program, &args))
        .await
        .expect("upstream starter thread")
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs one talk client (`program script URL args…`) and asserts it passed; its JSON summary.
async fn run_talk_client(what: &str, program: PathBuf, script: &str, url: &str, args: &[&str]) -> serde_json::Value {
    let mut argv = vec![repo_root().join(script).display().to_string(), url.to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let outcome = actix_web::rt::task::spawn_blocking(move || run_bounded(&program, &argv, &[], CLIENT_TIMEOUT))
        .await
        .expect("client runner thread");
    let report = outcome.report();
    assert!(outcome.success(), "{what} failed\n{report}");
    let summary: serde_json::Value = serde_json::from_str(outcome.stdout.trim())
        .unwrap_or_else(|e| panic!("{what}: stdout is not its JSON summary ({e})\n{report}"));
    assert_eq!(summary["ok"], true, "{what}\n{report}");
    summary
}

/// The Python SDK (`mcp` 2.x) on both sides, through the proxy, in all four era pairs: the
/// upstream `py_talk.py` (tools that elicit, sample, list roots, log, ask twice) is reached in
/// 2026-07-28 (dual-era) or 2025-11-25 (`--legacy-only`); the client `py_talk_client.py`
/// speaks 2025-11-25 (`legacy`) or 2026-07-28 (`modern`). Each pair runs: every kind of
/// question answered by the client's callbacks and its log lines relayed (`all`), a client
/// without the capabilities (`nocaps`: an error at once, never a hang), a client that never
/// answers (`never`: ended by `ELICITATION_TIMEOUT_SEC`; a 2026-07-28 client's late retry is
/// told the call expired), and two sessions asked at once, each answering its own
/// (`concurrent`). The TypeScript SDK 1.x client (`ts_talk_client.mjs`, 2025-11-25) runs `all`
/// too.
async fn talk_pairs(test: &str, upstream_flags: &[&str]) {
    if !peers_available(test, &[Peer::Python, Peer::Node]) {
        return;
    }
    let script = repo_root().join("tests/peers/upstreams/py_talk.py");
    let mut args = vec![script.display().to_string(), "--port".into(), "0".into()];
    args.extend(upstream_flags.iter().map(|f| f.to_string()));
    let (mut upstream, url) = spawn_upstream("py_talk", python(), args).await;
    let proxy = TestProxy::start_with(&format!("talk={url}"), &[("ELICITATION_TIMEOUT_SEC", "3")]).await;
    let expected_era = if upstream_flags.contains(&"--legacy-only") {
        "legacy"
    } else {
        "modern"
    };
    let status = proxy.upstream_status().await;
    assert_eq!(
        status.era.map(|e| e.as_str()),
        Some(expected_era),
        "{}",
        upstream.logs()
    );
    for era in ["legacy", "modern"] {
        for scenario in ["all", "nocaps", "never", "concurrent"] {
            let what = format!("py_talk_client {era} {scenario} (upstream {expected_era})");
            let args = ["--era", era, "--scenario", scenario, "--source", "talk"];
            let summary = run_talk_client(
                &what,
                python(),
                "tests/peers/clients/py_talk_client.py",
                &proxy.url,
                &args,
            )
            .await;
            println!("{what}: {summary}");
        }
    }
    let what = format!("ts_talk_client all (upstream {expected_era})");
    let summary = run_talk_client(
        &what,
        node(),
        "tests/peers/clients/ts_talk_client.mjs",
        &proxy.url,
        &["--source", "talk"],
    )
    .await;
    assert_eq!(summary["protocol_version"], "2025-11-25", "{summary}");
    proxy.stop().await;
    upstream.kill();
}

#[actix_web::test]
async fn sdk_clients_are_asked_by_a_2026_upstream_in_both_client_eras() {
    talk_pairs("sdk_clients_are_asked_by_a_2026_upstream_in_both_client_eras", &[]).await;
}

#[actix_web::test]
async fn sdk_clients_are_asked_by_a_2025_upstream_in_both_client_eras() {
    talk_pairs(
        "sdk_clients_are_asked_by_a_2025_upstream_in_both_client_eras",
        &["--legacy-only"],
    )
    .await;
}

/// A TypeScript SDK 2.x upstream (2026-07-28) whose tool returns `inputRequired(...)` until
/// the retry confirms: a Python client in 2026-07-28 gets the round passed through (sealed
/// state), one in 2025-11-25 is asked on its stream while the proxy answers the rounds, and
/// the TypeScript SDK 1.x client likewise; a request without a session (nothing can be asked)
/// ends at once with the tool's question named, on the client's side.
#[actix_web::test]
async fn a_typescript_v2_upstreams_rounds_reach_clients_of_both_eras() {
    if !peers_available(
        "a_typescript_v2_upstreams_rounds_reach_clients_of_both_eras",
        &[Peer::Node, Peer::Python],
    ) {
        return;
    }
    let script = repo_root().join("tests/peers/upstreams/ts2_ask.mjs");
    let args = vec![script.display().to_string(), "--port".into(), "0".into()];
    let (mut upstream, url) = spawn_upstream("ts2_ask", node(), args).await;
    let proxy = TestProxy::start(&format!("ask={url}")).await;
    for era in ["legacy", "modern"] {
        let args = ["--era", era, "--scenario", "deploy", "--source", "ask"];
        let what = format!("py_talk_client {era} deploy");
        let summary = run_talk_client(
            &what,
            python(),
            "tests/peers/clients/py_talk_client.py",
            &proxy.url,
            &args,
        )
        .await;
        assert_eq!(summary["deploy"]["text"], "deployed to prod", "{summary}");
    }
    let args = ["--source", "ask", "--scenario", "deploy"];
    run_talk_client(
        "ts_talk_client deploy",
        node(),
        "tests/peers/clients/ts_talk_client.mjs",
        &proxy.url,
        &args,
    )
    .await;
    let started = Instant::now();
    let r = proxy.mcp_call("deploy", serde_json::json!({"env": "prod"})).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(r["isError"], true, "{r}\n{}", upstream.logs());
    assert_eq!(r["structuredContent"]["error"]["side"], "client", "{r}");
    let message = r["structuredContent"]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("elicitation/create"), "{message}");
    proxy.stop().await;
    upstream.kill();
}
