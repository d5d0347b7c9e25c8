//! The transport matrix: every official-SDK client flow through the proxy in front of every
//! official-SDK upstream kind, with the same assertions everywhere.
//!
//! Upstreams (`tests/peers/upstreams/`, each a subprocess on a free loopback port, one test per
//! kind): Python SDK `mcp` 2.x stateful/SSE and stateless/JSON (both dual-era), TypeScript SDK
//! 1.x stateful/SSE and stateless/JSON (2025 era only), TypeScript SDK 2.x `createMcpHandler`
//! (2026-07-28 with the stateless legacy fallback) and the same with `legacy: 'reject'`
//! (modern only). All serve the same tools: echo, add, counter, fail, image.
//!
//! Clients (`tests/peers/clients/`, run one after the other against one in-process proxy):
//! Python `mcp` 2.x in legacy and pinned 2026-07-28 mode, TS SDK 1.x, TS SDK 2.x pinned to
//! 2026-07-28 and in `auto` mode. Each does tools/list → mcp_search → mcp_describe → mcp_call
//! add/echo/fail/image/counter×2 and prints what came back; [`peer_harness::check_flow`]
//! asserts: exactly the four tools; the search finds `add`; describe gives a/b; add 2+3 →
//! text "5" and `{"result":5}`; echo relays non-ASCII text exactly (text and structured);
//! fail → isError with the upstream's message; image → the same base64 and mimeType; the
//! counter goes on 1,2 → 3,4 → … across separate `mcp_call`s and separate clients (one sticky
//! upstream session for a stateful legacy upstream, or the upstream's global counter).
//!
//! Every combination runs; each test prints its matrix row (`cargo test --test
//! transport_matrix -- --nocapture`) and fails with every failed combination in detail.
//!
//! The restart tests kill a stateful upstream between two `mcp_call`s and start it again on
//! the same port: the next call must succeed by itself, with a fresh counter.

mod peer_harness;

use std::path::PathBuf;

use peer_harness::*;
use serde_json::json;

/// The upstream kinds of the matrix.
#[derive(Clone, Copy, Debug)]
enum Upstream {
    PyStatefulSse,
    PyStatelessJson,
    Ts1StatefulSse,
    Ts1StatelessJson,
    Ts2,
    Ts2ModernOnly,
}

impl Upstream {
    fn label(self) -> &'static str {
        match self {
            Upstream::PyStatefulSse => "py-stateful-sse",
            Upstream::PyStatelessJson => "py-stateless-json",
            Upstream::Ts1StatefulSse => "ts1-stateful-sse",
            Upstream::Ts1StatelessJson => "ts1-stateless-json",
            Upstream::Ts2 => "ts2-dual",
            Upstream::Ts2ModernOnly => "ts2-modern-only",
        }
    }

    /// Its label in `UPSTREAMS` (letters, digits, `_` and `.` only).
    fn source(self) -> String {
        self.label().replace('-', "_")
    }

    fn peer(self) -> Peer {
        match self {
            Upstream::PyStatefulSse | Upstream::PyStatelessJson => Peer::Python,
            _ => Peer::Node,
        }
    }

    /// The command that starts it on `port` (0 = a free one).
    fn command(self, port: u16) -> (PathBuf, Vec<String>) {
        let dir = repo_root().join("tests/peers/upstreams");
        let args = |script: &str, extra: &[&str]| {
            let mut v = vec![
                dir.join(script).display().to_string(),
                "--port".into(),
                port.to_string(),
            ];
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        match self {
            Upstream::PyStatefulSse => (python(), args("py_upstream.py", &[])),
            Upstream::PyStatelessJson => (python(), args("py_upstream.py", &["--stateless", "--json"])),
            Upstream::Ts1StatefulSse => (node(), args("ts1_upstream.mjs", &[])),
            Upstream::Ts1StatelessJson => (node(), args("ts1_upstream.mjs", &["--stateless", "--json"])),
            Upstream::Ts2 => (node(), args("ts2_upstream.mjs", &[])),
            Upstream::Ts2ModernOnly => (node(), args("ts2_upstream.mjs", &["--modern-only"])),
        }
    }

    /// The era the proxy must end up speaking with it, where only one is possible.
    fn required_era(self) -> Option<&'static str> {
        match self {
            Upstream::Ts1StatefulSse | Upstream::Ts1StatelessJson => Some("legacy"),
            Upstream::Ts2ModernOnly => Some("modern"),
            _ => None,
        }
    }

    /// Starts it; returns the process guard, its URL and its port.
    async fn start(self, port: u16) -> (Proc, String, u16) {
        let (program, args) = self.command(port);
        let name = self.label();
        let (proc, url) = actix_web::rt::task::spawn_blocking(move || Proc::spawn_ready(name, &program, &args))
            .await
            .expect("upstream starter thread")
            .unwrap_or_else(|e| panic!("{e}"));
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{name}: unexpected READY url {url}"));
        (proc, url, port)
    }
}

fn header() -> String {
    let mut h = format!("{:<20} {:<44}", "upstream", "proxy→upstream");
    for c in ALL_CLIENTS {
        h.push_str(&format!(" | {:<22}", c.label()));
    }
    h
}

/// One row of the matrix: the upstream, the proxy in front of it, every client.
async fn matrix_row(kind: Upstream) {
    let test = format!("transport matrix row {}", kind.label());
    let mut peers = vec![kind.peer()];
    peers.extend(ALL_CLIENTS.iter().map(|c| c.peer()));
    if !peers_available(&test, &peers) {
        return;
    }
    let (upstream, url, _) = kind.start(0).await;
    let proxy = TestProxy::start(&format!("{}={url}", kind.source())).await;

    let mut failures = Vec::new();
    // The catalog must hold the upstream's five tools (the proxy listed it).
    let refresh = proxy.call("mcp_refresh", json!({})).await;
    let total = refresh["structuredContent"]["total_tools"].as_u64();
    if total != Some(5) {
        failures.push(format!(
            "mcp_refresh: the catalog must hold the upstream's 5 tools: {refresh}"
        ));
    }

    let (cells, client_failures) = run_clients(&proxy.url, "", 1).await;
    failures.extend(client_failures);

    let status = proxy.upstream_status().await;
    let era = status.era.map(|e| e.as_str());
    if let Some(want) = kind.required_era() {
        if era != Some(want) {
            failures.push(format!("the proxy must speak {want} with {}: {status:?}", kind.label()));
        }
    }
    if kind.required_era() == Some("legacy") {
        let stateful = matches!(kind, Upstream::Ts1StatefulSse);
        if status.has_session != stateful || status.generation != 1 {
            failures.push(format!(
                "{}: expected {} and one initialization for the whole run: {status:?}",
                kind.label(),
                if stateful { "one sticky session" } else { "no session" }
            ));
        }
    }

    let mut row = format!("{:<20} {:<44}", kind.label(), status_line(&status));
    for (_, cell) in &cells {
        row.push_str(&format!(" | {cell:<22}"));
    }
    println!("{}\n{row}", header());

    proxy.stop().await;
    let logs = upstream.logs();
    drop(upstream);
    assert!(
        failures.is_empty(),
        "{}\n{row}\n\n{} failure(s):\n{}\n\n{logs}",
        header(),
        failures.len(),
        failures.join("\n\n")
    );
}

#[actix_web::test]
async fn matrix_python_sdk_stateful_sse() {
    matrix_row(Upstream::PyStatefulSse).await;
}

#[actix_web::test]
async fn matrix_python_sdk_stateless_json() {
    matrix_row(Upstream::PyStatelessJson).await;
}

#[actix_web::test]
async fn matrix_typescript_sdk1_stateful_sse() {
    matrix_row(Upstream::Ts1StatefulSse).await;
}

#[actix_web::test]
async fn matrix_typescript_sdk1_stateless_json() {
    matrix_row(Upstream::Ts1StatelessJson).await;
}

#[actix_web::test]
async fn matrix_typescript_sdk2_dual_era() {
    matrix_row(Upstream::Ts2).await;
}

#[actix_web::test]
async fn matrix_typescript_sdk2_modern_only() {
    matrix_row(Upstream::Ts2ModernOnly).await;
}

/// Counter 1, 2; the upstream is killed and started again on the same port (its sessions and
/// state are gone); the next `mcp_call` must succeed by itself with a fresh counter (1), and
/// the one after it must go on (2).
async fn restart_recovery(kind: Upstream) {
    let test = format!("restart recovery {}", kind.label());
    if !peers_available(&test, &[kind.peer()]) {
        return;
    }
    let (mut upstream, url, port) = kind.start(0).await;
    let proxy = TestProxy::start(&format!("{}={url}", kind.source())).await;
    let mut counts = Vec::new();
    for _ in 0..2 {
        let r = proxy.mcp_call("counter", json!({})).await;
        counts.push(count_of(&r).unwrap_or_else(|e| panic!("{test}: before the restart: {e}")));
    }
    assert_eq!(counts, [1, 2], "{test}: counter before the restart");
    let before = proxy.upstream_status().await;

    upstream.kill();
    drop(upstream);
    let (upstream, url2, _) = kind.start(port).await;
    assert_eq!(url2, url, "{test}: restarted on another port");

    let after_restart = proxy.mcp_call("counter", json!({})).await;
    let next = proxy.mcp_call("counter", json!({})).await;
    let after = proxy.upstream_status().await;
    println!(
        "{test}: before {} | after {} | results {after_restart} then {next}",
        status_line(&before),
        status_line(&after)
    );
    let logs = upstream.logs();
    proxy.stop().await;
    drop(upstream);
    assert_eq!(
        count_of(&after_restart),
        Ok(1),
        "{test}: the first call after the restart must succeed with a fresh counter\n{logs}"
    );
    assert_eq!(count_of(&next), Ok(2), "{test}: the call after that goes on\n{logs}");
    if before.has_session {
        assert!(
            after.has_session && after.generation == before.generation + 1,
            "{test}: a sticky session must be replaced by exactly one new one: before {before:?}, after {after:?}"
        );
    }
}

#[actix_web::test]
async fn restart_recovery_python_sdk_stateful() {
    restart_recovery(Upstream::PyStatefulSse).await;
}

#[actix_web::test]
async fn restart_recovery_typescript_sdk1_stateful() {
    restart_recovery(Upstream::Ts1StatefulSse).await;
}
