//! The proxy in front of a real LiteLLM MCP gateway (`litellm[proxy]==1.108.7`, no database).
//!
//! `scripts/litellm-stack.sh start` runs LiteLLM (master key `sk-test`) in front of two Python
//! SDK upstreams: `matrix` (tests/peers/upstreams/py_upstream.py, stateful: echo, add, a
//! per-session counter, fail, image) and `mail` (py_mail.py). LiteLLM serves the 2025 era only:
//! its `/mcp/` answers the proxy's `server/discover` probe with HTTP 400/-32600, so the proxy
//! must fall back to `initialize`. It names tools `server-tool`, and keeps one upstream session
//! per client `Mcp-Session-Id` (without a sticky id every call would get a fresh counter).
//!
//! Checked: the era is legacy with a sticky session; refresh → 7 tools in sources matrix/mail;
//! search → describe → call; the counter goes 1, 2, 3 over separate `mcp_call`s and then on
//! through every SDK client flow (same assertions as tests/transport_matrix.rs, prefix
//! `matrix-`); one initialization for the whole run.
//!
//! Needs `.venv-litellm/` and `.venv/` (scripts/install-test-peers.sh) and Node for the TS
//! clients; skips without them unless `REQUIRE_PEERS=1`. LiteLLM takes ~10–15 s to start; every
//! wait is bounded, and the stack is stopped when the test ends (a guard, also on panic, and
//! the script's watchdog if this process dies).

mod peer_harness;

use std::path::PathBuf;
use std::time::Duration;

use peer_harness::*;
use serde_json::json;

/// Longest `litellm-stack.sh start` may take (its own waits are bounded by STACK_TIMEOUT=90).
const STACK_START_TIMEOUT: Duration = Duration::from_secs(150);

/// The stack started by `scripts/litellm-stack.sh`; stopped (by recorded PIDs) when dropped.
struct Stack {
    dir: tempfile::TempDir,
    url: String,
}

impl Stack {
    fn script() -> PathBuf {
        repo_root().join("scripts/litellm-stack.sh")
    }

    fn env(dir: &std::path::Path) -> Vec<(&'static str, String)> {
        vec![("STACK_DIR", dir.display().to_string())]
    }

    /// Blocking: call it through `spawn_blocking`.
    fn start() -> Stack {
        let dir = tempfile::tempdir().expect("stack dir");
        let mut env = Self::env(dir.path());
        env.push(("LITELLM_PORT", free_port().to_string()));
        env.push(("STACK_TIMEOUT", "90".into()));
        env.push(("OWNER_PID", std::process::id().to_string()));
        env.push(("STACK_MAX_SEC", "900".into()));
        let out = run_bounded(&Self::script(), &["start".into()], &env, STACK_START_TIMEOUT);
        let url = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("LITELLM_URL="))
            .map(str::to_string);
        let stack = Stack {
            dir,
            url: url.clone().unwrap_or_default(),
        };
        if !out.success() || url.is_none() {
            let logs = stack.logs();
            drop(stack);
            panic!("scripts/litellm-stack.sh start failed\n{}\n{logs}", out.report());
        }
        stack
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for name in ["litellm", "matrix", "mail"] {
            let path = self.dir.path().join("logs").join(format!("{name}.log"));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            s.push_str(&format!("--- {} (last 40 lines) ---\n{tail}\n", path.display()));
        }
        s
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let out = run_bounded(
            &Self::script(),
            &["stop".into()],
            &Self::env(self.dir.path()),
            Duration::from_secs(60),
        );
        if !out.success() {
            eprintln!("litellm-stack.sh stop failed\n{}", out.report());
        }
    }
}

#[actix_web::test]
async fn proxy_in_front_of_litellm() {
    if !peers_available("litellm", &[Peer::LiteLlm, Peer::Python, Peer::Node]) {
        return;
    }
    let stack = actix_web::rt::task::spawn_blocking(Stack::start)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let proxy = TestProxy::start(&format!("litellm={}|sk-test", stack.url)).await;
    let result = std::panic::AssertUnwindSafe(checks(&proxy));
    let outcome = futures_util::FutureExt::catch_unwind(result).await;
    proxy.stop().await;
    if let Err(panic) = outcome {
        eprintln!("{}", stack.logs());
        drop(stack);
        std::panic::resume_unwind(panic);
    }
}

async fn checks(proxy: &TestProxy) {
    // The probe was refused (HTTP 400/-32600): legacy, with LiteLLM's session id kept.
    let status = proxy.upstream_status().await;
    println!("proxy → LiteLLM: {}", status_line(&status));
    assert_eq!(status.era.map(|e| e.as_str()), Some("legacy"), "{status:?}");
    assert!(
        status.initialized && status.has_session,
        "a sticky LiteLLM session: {status:?}"
    );
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"), "{status:?}");

    // Refresh: LiteLLM's `server-tool` names; the prefixes become the sources.
    let r = proxy.call("mcp_refresh", json!({})).await;
    let sc = &r["structuredContent"];
    assert_eq!(sc["total_tools"], 7, "mcp_refresh: {r}");
    assert_eq!(sc["sources"], json!({"mail": 2, "matrix": 5}), "mcp_refresh: {r}");
    assert_eq!(sc["upstreams"][0]["ok"], true, "mcp_refresh: {r}");

    // Search → describe → call.
    let r = proxy.call("mcp_search", json!({"query": "add two numbers"})).await;
    let hit = &r["structuredContent"]["results"][0];
    assert_eq!(hit["name"], "matrix-add", "mcp_search: {r}");
    assert_eq!(hit["source"], "matrix", "mcp_search: {r}");
    let r = proxy
        .call("mcp_search", json!({"query": "send an email message"}))
        .await;
    assert_eq!(
        r["structuredContent"]["results"][0]["name"], "mail-send_message",
        "mcp_search: {r}"
    );
    let r = proxy.call("mcp_describe", json!({"names": ["matrix-add"]})).await;
    let props = &r["structuredContent"]["tools"][0]["inputSchema"]["properties"];
    assert!(
        props.get("a").is_some() && props.get("b").is_some(),
        "mcp_describe: {r}"
    );
    let r = proxy.mcp_call("matrix-add", json!({"a": 2, "b": 3})).await;
    assert_eq!(r["content"], json!([{"type": "text", "text": "5"}]), "matrix-add: {r}");
    assert_eq!(r["structuredContent"], json!({"result": 5}), "matrix-add: {r}");
    let r = proxy
        .mcp_call(
            "mail-send_message",
            json!({"to": "a@example.com", "subject": "hi", "body": "x"}),
        )
        .await;
    assert_ne!(r["isError"], true, "mail-send_message: {r}");

    // The stateful upstream behind LiteLLM keeps its per-session counter across calls: the
    // proxy's one sticky session maps to one LiteLLM→upstream session.
    let mut counts = Vec::new();
    for _ in 0..3 {
        let r = proxy.mcp_call("matrix-counter", json!({})).await;
        counts.push(count_of(&r).unwrap_or_else(|e| panic!("matrix-counter: {e}")));
    }
    assert_eq!(counts, [1, 2, 3], "matrix-counter through LiteLLM");

    // Every SDK client, both eras, through the proxy and LiteLLM: the same assertions as the
    // transport matrix, and the counter goes on from 4.
    let (cells, failures) = run_clients(&proxy.url, "matrix-", 4).await;
    let mut row = format!("{:<20} {:<44}", "litellm", status_line(&proxy.upstream_status().await));
    for (client, cell) in &cells {
        row.push_str(&format!(" | {}: {cell}", client.label()));
    }
    println!("{row}");
    assert!(failures.is_empty(), "{row}\n\n{}", failures.join("\n\n"));

    // Still the one session of the start: no re-initialization happened.
    let end = proxy.upstream_status().await;
    assert!(
        end.has_session && end.generation == status.generation,
        "{status:?} → {end:?}"
    );
}
