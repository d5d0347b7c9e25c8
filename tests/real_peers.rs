//! The proxy driven by the official MCP SDK clients, as real subprocesses.
//!
//! Each test starts the embedded demo upstream and the proxy in-process (loopback, port 0),
//! then runs one client script of `tests/peers/` against the proxy URL and asserts it exits 0:
//! - `py_flow.py URL legacy|auto`: Python SDK `mcp` 2.x (`mcp.Client`), both negotiation modes;
//! - `ts1_flow.mjs URL`: TypeScript SDK 1.x (`Client` + `StreamableHTTPClientTransport`).
//!
//! The scripts do the whole search → describe → call flow and check every answer; their output
//! (a JSON summary, or `FAIL: …` and a traceback) is shown when a test fails.
//!
//! The clients come from their registries via `scripts/install-test-peers.sh` (into `.venv/` and
//! `tests/peers/node_modules/`). Without them the tests skip, unless `REQUIRE_PEERS=1` (set by
//! `scripts/test.sh`, hence in CI), where a missing client is a failure.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use mcp_search_proxy::config::Config;
use mcp_search_proxy::demo::{self, RunningUpstream, UpstreamOptions};
use mcp_search_proxy::server::{self, Proxy};

/// Longest a client script may run before it is killed (they need ~1 s).
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest the proxy may take to become ready (its first refresh of the demo upstream).
const READY_TIMEOUT: Duration = Duration::from_secs(10);
const INSTALL_HINT: &str = "run scripts/install-test-peers.sh";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The SDK a test needs, and where the installer puts it.
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// `.venv/bin/python` with `mcp` 2.x.
    Python,
    /// `tests/peers/node_modules/@modelcontextprotocol/sdk` (TS SDK 1.x) and `node` on PATH.
    TsSdk1,
}

impl Peer {
    /// The file whose presence means the peer is installed.
    fn marker(self) -> PathBuf {
        let root = repo_root();
        match self {
            Peer::Python => root.join(".venv/bin/python"),
            Peer::TsSdk1 => root.join("tests/peers/node_modules/@modelcontextprotocol/sdk/package.json"),
        }
    }

    /// Why the peer cannot run, if it cannot.
    fn missing(self) -> Option<String> {
        let marker = self.marker();
        if !marker.exists() {
            return Some(format!("{} is missing", marker.display()));
        }
        if let Peer::TsSdk1 = self {
            let node = Command::new("node").arg("--version").stdin(Stdio::null()).output();
            if !node.as_ref().is_ok_and(|o| o.status.success()) {
                return Some("`node --version` failed (Node.js >= 20 must be on PATH)".to_string());
            }
        }
        None
    }

    /// True when installed. Otherwise panics under `REQUIRE_PEERS=1`, else prints a skip note.
    fn available(self) -> bool {
        let Some(why) = self.missing() else {
            return true;
        };
        if std::env::var("REQUIRE_PEERS").is_ok_and(|v| v == "1") {
            panic!("test peer {self:?} is not installed ({why}) and REQUIRE_PEERS=1: {INSTALL_HINT}");
        }
        eprintln!("skipping: test peers not installed ({INSTALL_HINT}); {why}");
        false
    }
}

/// The demo upstream and a proxy in front of it, both in this process.
struct Stack {
    /// The proxy's MCP endpoint.
    url: String,
    upstream: RunningUpstream,
    proxy: Proxy,
    handle: ServerHandle,
}

impl Stack {
    async fn start() -> Stack {
        let upstream = demo::start(UpstreamOptions::demo(), "127.0.0.1:0")
            .await
            .expect("demo upstream starts");
        let upstreams = format!("demo={}", upstream.url);
        let cfg = Config::from_lookup(&|k| match k {
            "UPSTREAMS" => Some(upstreams.clone()),
            "CATALOG_TTL_SEC" => Some("0".into()),
            _ => None,
        })
        .expect("valid proxy configuration");
        let proxy = Proxy::start(&cfg.upstreams, server::catalog_config(&cfg), cfg.max_result_bytes);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy port");
        let addr = listener.local_addr().expect("proxy address");
        let srv = server::http_server(proxy.app_state(server::http_settings(&cfg)), listener).expect("proxy server");
        let handle = srv.handle();
        actix_web::rt::spawn(srv);
        wait_ready(&format!("http://{addr}/readyz")).await;
        Stack {
            url: format!("http://{addr}/mcp"),
            upstream,
            proxy,
            handle,
        }
    }

    async fn stop(self) {
        self.handle.stop(false).await;
        self.proxy.stop();
        self.upstream.stop().await;
    }
}

/// Polls `/readyz` until it answers 200 (the catalog holds the demo tools).
async fn wait_ready(readyz: &str) {
    let client = awc::Client::builder().timeout(Duration::from_secs(2)).finish();
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let last = match client.get(readyz).send().await {
            Ok(mut resp) => {
                let body = resp.body().await.unwrap_or_default();
                if resp.status().as_u16() == 200 {
                    return;
                }
                format!("{} {}", resp.status(), String::from_utf8_lossy(&body))
            }
            Err(e) => e.to_string(),
        };
        assert!(
            Instant::now() < deadline,
            "proxy not ready after {READY_TIMEOUT:?}: GET {readyz} -> {last}"
        );
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a finished (or killed) client script left behind.
struct Outcome {
    command: String,
    status: Option<ExitStatus>,
    timed_out: bool,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn report(&self) -> String {
        let status = match (self.timed_out, self.status) {
            (true, _) => format!("killed after {:?} (timeout)", CHILD_TIMEOUT),
            (false, Some(s)) => s.to_string(),
            (false, None) => "unknown".to_string(),
        };
        format!(
            "$ {}\nstatus: {status}, {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.elapsed.as_secs_f64(),
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

fn read_all(mut f: File) -> String {
    let mut buf = Vec::new();
    let _ = f.seek(SeekFrom::Start(0)).and_then(|_| f.read_to_end(&mut buf));
    String::from_utf8_lossy(&buf).into_owned()
}

/// Runs `program args` from the repository root with stdin closed, output captured in temp
/// files, and a hard timeout (kill). Blocking: call it through `spawn_blocking`.
fn run_bounded(program: &Path, args: &[String]) -> Outcome {
    let command = format!("{} {}", program.display(), args.join(" "));
    let out = tempfile::tempfile().expect("temp file for stdout");
    let err = tempfile::tempfile().expect("temp file for stderr");
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("dup stdout file"))
        .stderr(err.try_clone().expect("dup stderr file"))
        // Loopback only: an HTTP(S)_PROXY of the environment must not capture the requests.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("NO_COLOR", "1")
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (Some(status), false),
            Ok(None) if started.elapsed() >= CHILD_TIMEOUT => {
                let _ = child.kill();
                break (child.wait().ok(), true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {command}: {e}"),
        }
    };
    Outcome {
        command,
        status,
        timed_out,
        elapsed: started.elapsed(),
        stdout: read_all(out),
        stderr: read_all(err),
    }
}

/// Starts the stack, runs the client against it (the servers keep running on this thread's
/// runtime meanwhile), and asserts the client passed.
async fn run_client(peer: Peer, program: PathBuf, script: &str, extra_args: &[&str]) {
    if !peer.available() {
        return;
    }
    let stack = Stack::start().await;
    let mut args = vec![repo_root().join(script).display().to_string(), stack.url.clone()];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let outcome = actix_web::rt::task::spawn_blocking(move || run_bounded(&program, &args))
        .await
        .expect("client runner thread");
    let stats = stack.upstream.control.stats();
    stack.stop().await;

    let report = outcome.report();
    assert!(
        !outcome.timed_out && outcome.status.is_some_and(|s| s.success()),
        "{peer:?} client failed against the proxy\n{report}"
    );
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

fn python() -> PathBuf {
    repo_root().join(".venv/bin/python")
}

fn node() -> PathBuf {
    PathBuf::from("node")
}

#[actix_web::test]
async fn python_sdk_legacy_handshake() {
    run_client(Peer::Python, python(), "tests/peers/py_flow.py", &["legacy"]).await;
}

#[actix_web::test]
async fn python_sdk_auto_negotiation() {
    run_client(Peer::Python, python(), "tests/peers/py_flow.py", &["auto"]).await;
}

#[actix_web::test]
async fn typescript_sdk_v1() {
    run_client(Peer::TsSdk1, node(), "tests/peers/ts1_flow.mjs", &[]).await;
}
