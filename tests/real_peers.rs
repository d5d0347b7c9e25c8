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
//! Two tests have an SDK upstream instead (`tests/peers/upstreams/py_ask.py`, Python; and
//! `ts2_ask.mjs`, TypeScript 2.x returning `inputRequired(...)`), whose tools ask their caller
//! something (elicitation, roots): through `mcp_call` they must end at once with the upstream's
//! own reason, never hang or come back as a result the client cannot read.
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

/// A Python SDK (`mcp` 2.x) upstream whose tools elicit and list roots, stateful/SSE and
/// stateless/JSON (the proxy reaches it in the 2026-07-28 era): the proxy declares no client
/// capabilities, so the SDK refuses to ask, and `mcp_call` returns that refusal at once as an
/// upstream-side error naming what was asked — well within the upstream timeout (20 s here),
/// which a call waiting for an answer would run into.
#[actix_web::test]
async fn python_sdk_tools_that_ask_end_at_once_with_the_upstreams_reason() {
    if !peers_available(
        "python_sdk_tools_that_ask_end_at_once_with_the_upstreams_reason",
        &[Peer::Python],
    ) {
        return;
    }
    for flags in [&[][..], &["--stateless", "--json"][..]] {
        let script = repo_root().join("tests/peers/upstreams/py_ask.py");
        let mut args = vec![script.display().to_string(), "--port".into(), "0".into()];
        args.extend(flags.iter().map(|f| f.to_string()));
        let (mut upstream, url) = spawn_upstream("py_ask", python(), args).await;
        let proxy = TestProxy::start(&format!("ask={url}")).await;
        let plain = proxy.mcp_call("plain", serde_json::json!({})).await;
        assert_eq!(
            plain["content"][0]["text"],
            "plain",
            "{flags:?}: {plain}\n{}",
            upstream.logs()
        );
        for (tool, asked) in [("confirm", "elicitation/create"), ("where", "roots/list")] {
            let started = Instant::now();
            let r = proxy.mcp_call(tool, serde_json::json!({})).await;
            let took = started.elapsed();
            assert_eq!(r["isError"], true, "{flags:?} {tool}: {r}");
            let e = &r["structuredContent"]["error"];
            assert_eq!(e["side"], "upstream", "{flags:?} {tool}: {r}");
            let message = e["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(asked),
                "{flags:?} {tool}: the upstream's reason names {asked}: {message}"
            );
            assert!(took < Duration::from_secs(10), "{flags:?} {tool}: took {took:?}");
        }
        proxy.stop().await;
        upstream.kill();
    }
}

/// A TypeScript SDK 2.x upstream (2026-07-28) whose tool returns `inputRequired(...)` with an
/// elicitation: the SDK checks the request's client capabilities (the proxy declares none) and
/// refuses, and `mcp_call` ends at once with that refusal, naming what was asked.
#[actix_web::test]
async fn typescript_sdk_v2_tool_that_asks_ends_at_once_with_the_upstreams_reason() {
    if !peers_available(
        "typescript_sdk_v2_tool_that_asks_ends_at_once_with_the_upstreams_reason",
        &[Peer::Node],
    ) {
        return;
    }
    let script = repo_root().join("tests/peers/upstreams/ts2_ask.mjs");
    let args = vec![script.display().to_string(), "--port".into(), "0".into()];
    let (mut upstream, url) = spawn_upstream("ts2_ask", node(), args).await;
    let proxy = TestProxy::start(&format!("ask={url}")).await;
    let plain = proxy.mcp_call("plain", serde_json::json!({})).await;
    assert_eq!(plain["content"][0]["text"], "plain", "{plain}\n{}", upstream.logs());
    let started = Instant::now();
    let r = proxy.mcp_call("deploy", serde_json::json!({"env": "prod"})).await;
    let took = started.elapsed();
    assert_eq!(r["isError"], true, "{r}");
    let e = &r["structuredContent"]["error"];
    assert_eq!(e["side"], "upstream", "{r}");
    let message = e["message"].as_str().unwrap_or_default();
    assert!(message.contains("elicitation/create"), "{message}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    proxy.stop().await;
    upstream.kill();
}
