//! Shared harness of `tests/transport_matrix.rs`, `tests/litellm.rs`, `tests/real_peers.rs` and `tests/playwright.rs`: real SDK upstreams and
//! clients as bounded subprocesses, an in-process proxy in front of them, and the shared
//! assertions over a client flow's summary.
//!
//! - [`Peer`]: what a test needs installed (by `scripts/install-test-peers.sh`); missing peers
//!   skip the test with a note, or fail it under `REQUIRE_PEERS=1` (CI).
//! - [`Proc`]: a long-running subprocess (an upstream server) that prints `READY URL` when
//!   listening; killed when dropped, also when the test panics.
//! - [`run_bounded`]: a short-lived subprocess (a client flow) with a hard timeout.
//! - [`TestProxy`]: the proxy in-process (`Config::from_lookup`, `Proxy::start`,
//!   `server::http_server`) on a free loopback port.
//! - [`Client`] and [`check_flow`]: the client flows of `tests/peers/clients/` and what every
//!   one of them must have got back through the proxy.
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use serde_json::{json, Value};

use mcp_search_proxy::config::Config;
use mcp_search_proxy::server::{self, Proxy};
use proxy_actors::upstream::{GetStatus, UpstreamStatus};

/// The text the echo step sends (the client scripts carry the same constant): non-ASCII,
/// a character outside the BMP, quotes, a backslash, a tab and a newline.
pub const ECHO_SAMPLE: &str = "héllo \"wörld\" ✓ 🦀 back\\slash tab\tend\nline 2";
/// The 1x1 PNG every matrix upstream's `image` tool returns.
pub const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// The proxy's own tools, exactly.
pub const PROXY_TOOLS: [&str; 4] = ["mcp_search", "mcp_describe", "mcp_call", "mcp_refresh"];

/// Longest a client flow may run before it is killed (they need 0.5–2 s).
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest an upstream server may take to print its READY line (Python imports take ~1 s;
/// more on a loaded 2-core machine).
pub const UPSTREAM_READY_TIMEOUT: Duration = Duration::from_secs(30);
const INSTALL_HINT: &str = "run scripts/install-test-peers.sh";

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn python() -> PathBuf {
    repo_root().join(".venv/bin/python")
}

pub fn node() -> PathBuf {
    PathBuf::from("node")
}

/// Playwright MCP's command line script (`node` runs it).
pub fn playwright_cli() -> PathBuf {
    repo_root().join("tests/peers/playwright/node_modules/@playwright/mcp/cli.js")
}

/// The browser Playwright MCP drives: `PLAYWRIGHT_CHROMIUM`, else Debian's `/usr/bin/chromium`.
pub fn chromium() -> PathBuf {
    std::env::var_os("PLAYWRIGHT_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

// ------------------------------------------------------------------------------------ peers

/// Something a test needs installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `.venv/bin/python` with `mcp` 2.x.
    Python,
    /// `node` with `tests/peers/node_modules`: TS SDK 1.x and 2.x (client, server, node).
    Node,
    /// `.venv-litellm/bin/litellm` (`litellm[proxy]==1.108.7`).
    LiteLlm,
    /// `node` with `tests/peers/playwright/node_modules/@playwright/mcp` (0.0.83) and Debian's
    /// `chromium` ([`chromium`]), both from `scripts/install-playwright.sh`.
    Playwright,
}

impl Peer {
    fn markers(self) -> Vec<PathBuf> {
        let root = repo_root();
        let nm = root.join("tests/peers/node_modules/@modelcontextprotocol");
        match self {
            Peer::Python => vec![root.join(".venv/bin/python")],
            Peer::Node => ["sdk", "client", "server", "node"]
                .iter()
                .map(|p| nm.join(p).join("package.json"))
                .collect(),
            Peer::LiteLlm => vec![root.join(".venv-litellm/bin/litellm")],
            Peer::Playwright => vec![playwright_cli(), chromium()],
        }
    }

    /// Why the peer cannot run, if it cannot.
    fn missing(self) -> Option<String> {
        if let Some(m) = self.markers().into_iter().find(|m| !m.exists()) {
            return Some(format!("{} is missing", m.display()));
        }
        if matches!(self, Peer::Node | Peer::Playwright) {
            let out = Command::new("node").arg("--version").stdin(Stdio::null()).output();
            if !out.as_ref().is_ok_and(|o| o.status.success()) {
                return Some("`node --version` failed (Node.js >= 20 must be on PATH)".into());
            }
        }
        None
    }
}

/// True when every peer is installed. Otherwise panics under `REQUIRE_PEERS=1`, else prints a
/// skip note naming what is missing.
pub fn peers_available(test: &str, peers: &[Peer]) -> bool {
    let missing: Vec<String> = peers
        .iter()
        .filter_map(|p| p.missing().map(|why| format!("{p:?}: {why}")))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("REQUIRE_PEERS").is_ok_and(|v| v == "1") {
        panic!(
            "{test}: test peers not installed ({}) and REQUIRE_PEERS=1: {INSTALL_HINT}",
            missing.join("; ")
        );
    }
    eprintln!(
        "skipping {test}: test peers not installed ({INSTALL_HINT}); {}",
        missing.join("; ")
    );
    false
}

// ------------------------------------------------------------------------------ processes

fn read_all(mut f: &File) -> String {
    let mut buf = Vec::new();
    let _ = f.seek(SeekFrom::Start(0)).and_then(|_| f.read_to_end(&mut buf));
    String::from_utf8_lossy(&buf).into_owned()
}

/// The environment every subprocess gets: loopback never through a proxy of the environment.
fn base_command(program: &Path, args: &[String]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("NO_COLOR", "1");
    cmd
}

/// A long-running subprocess (an upstream server); killed (SIGKILL) and reaped when dropped.
pub struct Proc {
    pub name: String,
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: File,
}

impl Proc {
    /// Starts `program args` and waits (bounded) for its `READY URL` line on stdout.
    pub fn spawn_ready(name: &str, program: &Path, args: &[String]) -> Result<(Proc, String), String> {
        let stderr = tempfile::tempfile().map_err(|e| e.to_string())?;
        let mut child = base_command(program, args)
            .stdout(Stdio::piped())
            .stderr(stderr.try_clone().map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| format!("cannot start {name} ({}): {e}", program.display()))?;
        let out = child.stdout.take().expect("piped stdout");
        let stdout = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let buf = stdout.clone();
        // Drains stdout until EOF (the process's end), so the pipe never fills.
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("READY ") {
                    let _ = tx.send(url.trim().to_string());
                }
                let mut b = buf.lock().unwrap();
                b.push_str(&line);
                b.push('\n');
            }
        });
        let mut proc = Proc {
            name: name.to_string(),
            child,
            stdout,
            stderr,
        };
        let deadline = Instant::now() + UPSTREAM_READY_TIMEOUT;
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(url) => return Ok((proc, url)),
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = proc.child.try_wait() {
                        return Err(format!("{name} exited ({status}) before READY\n{}", proc.logs()));
                    }
                }
                Err(_) => {
                    let exited = proc.child.try_wait().ok().flatten();
                    proc.kill();
                    return Err(format!(
                        "{name} printed no READY line within {UPSTREAM_READY_TIMEOUT:?} (exit: {exited:?})\n{}",
                        proc.logs()
                    ));
                }
            }
        }
    }

    /// Kills (SIGKILL) and reaps the process; idempotent.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn logs(&self) -> String {
        format!(
            "--- {} stdout ---\n{}--- {} stderr ---\n{}",
            self.name,
            self.stdout.lock().unwrap(),
            self.name,
            read_all(&self.stderr)
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a finished (or killed) short-lived subprocess left behind.
pub struct Outcome {
    pub command: String,
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub timeout: Duration,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }

    pub fn report(&self) -> String {
        let status = match (self.timed_out, self.status) {
            (true, _) => format!("killed after {:?} (timeout)", self.timeout),
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

/// Runs `program args` from the repository root with stdin closed, output captured, and a hard
/// timeout (SIGKILL). Blocking: call it through `spawn_blocking`.
pub fn run_bounded(program: &Path, args: &[String], envs: &[(&str, String)], timeout: Duration) -> Outcome {
    let command = format!("{} {}", program.display(), args.join(" "));
    let out = tempfile::tempfile().expect("temp file for stdout");
    let err = tempfile::tempfile().expect("temp file for stderr");
    let started = Instant::now();
    let mut cmd = base_command(program, args);
    cmd.stdout(out.try_clone().expect("dup stdout file"))
        .stderr(err.try_clone().expect("dup stderr file"));
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (Some(status), false),
            Ok(None) if started.elapsed() >= timeout => {
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
        timeout,
        elapsed: started.elapsed(),
        stdout: read_all(&out),
        stderr: read_all(&err),
    }
}

/// A free loopback port (bound, read, released: a tiny race that only matters for servers
/// that cannot bind port 0 themselves, like LiteLLM).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

// ------------------------------------------------------------------------------------ proxy

/// The proxy, in-process, in front of the given upstreams.
pub struct TestProxy {
    /// The proxy's MCP endpoint.
    pub url: String,
    pub proxy: Proxy,
    handle: ServerHandle,
}

impl TestProxy {
    /// `upstreams` is the `UPSTREAMS` value (`label=url|token,...`). Waits (bounded) until the
    /// startup refresh has run, whatever its outcome.
    pub async fn start(upstreams: &str) -> TestProxy {
        TestProxy::start_with(upstreams, &[]).await
    }

    /// [`TestProxy::start`] with more configuration variables (`env`, e.g.
    /// `ELICITATION_TIMEOUT_SEC`).
    pub async fn start_with(upstreams: &str, env: &[(&str, &str)]) -> TestProxy {
        let upstreams = upstreams.to_string();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let cfg = Config::from_lookup(&|k| match k {
            "UPSTREAMS" => Some(upstreams.clone()),
            "CATALOG_TTL_SEC" => Some("0".into()),
            "UPSTREAM_TIMEOUT_SEC" => Some("20".into()),
            "REFRESH_MIN_INTERVAL_SEC" => Some("0".into()),
            other => env.iter().find(|(k, _)| k == other).map(|(_, v)| v.clone()),
        })
        .expect("valid proxy configuration");
        let network = server::network(&cfg).expect("the TLS configuration builds");
        let proxy = Proxy::start(
            &cfg.upstreams,
            server::catalog_config(&cfg),
            cfg.max_result_bytes,
            &network,
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy port");
        let addr = listener.local_addr().expect("proxy address");
        let srv = server::http_server(
            proxy.app_state(server::http_settings(&cfg)),
            listener,
            server::ServerLimits::of(&cfg),
        )
        .expect("proxy server");
        let handle = srv.handle();
        actix_web::rt::spawn(srv);
        let tp = TestProxy {
            url: format!("http://{addr}/mcp"),
            proxy,
            handle,
        };
        tp.settle(Duration::from_secs(30)).await;
        tp
    }

    /// Waits until a refresh fan-out has finished (the catalog holds what the upstreams gave).
    pub async fn settle(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self
                .proxy
                .catalog
                .send(proxy_actors::catalog::GetCatalogStatus)
                .await
                .expect("catalog actor");
            if s.fanouts >= 1 && !s.refreshing {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the proxy's first refresh did not end within {timeout:?}"
            );
            actix_web::rt::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The first upstream actor's session facts (era, session, version, generation).
    pub async fn upstream_status(&self) -> UpstreamStatus {
        self.proxy.upstreams[0]
            .addr
            .send(GetStatus)
            .await
            .expect("upstream actor")
    }

    /// One of the proxy's tools over raw HTTP (JSON-RPC `tools/call`, no handshake: the proxy
    /// is sessionless); the `result`, or an `{"rpc_error": ...}` object.
    pub async fn call(&self, tool: &str, args: Value) -> Value {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let client = awc::Client::builder().timeout(Duration::from_secs(60)).finish();
        let mut resp = client
            .post(&self.url)
            .insert_header(("Content-Type", "application/json"))
            .insert_header(("Accept", "application/json, text/event-stream"))
            .send_body(body.to_string())
            .await
            .unwrap_or_else(|e| panic!("POST {} tools/call {tool}: {e}", self.url));
        let status = resp.status().as_u16();
        let bytes = resp.body().limit(16 << 20).await.expect("proxy reply body");
        let text = String::from_utf8_lossy(&bytes);
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("tools/call {tool}: HTTP {status}, not JSON ({e}): {text}"));
        match v.get("result") {
            Some(r) => r.clone(),
            None => json!({"rpc_error": v.get("error").cloned().unwrap_or(v.clone()), "http_status": status}),
        }
    }

    /// `mcp_call` of an upstream tool.
    pub async fn mcp_call(&self, name: &str, arguments: Value) -> Value {
        self.call("mcp_call", json!({"name": name, "arguments": arguments}))
            .await
    }

    pub async fn stop(self) {
        self.handle.stop(false).await;
        self.proxy.end_sessions().await;
        self.proxy.stop();
    }
}

/// "era=modern session=none v=2026-07-28 gen=1" (no session id).
pub fn status_line(s: &UpstreamStatus) -> String {
    format!(
        "era={} session={} v={} gen={}",
        s.era.map(|e| e.as_str()).unwrap_or("?"),
        if s.has_session { "sticky" } else { "none" },
        s.protocol_version.as_deref().unwrap_or("?"),
        s.generation
    )
}

/// The count of a `counter` result (text and structuredContent must agree), or why not.
pub fn count_of(result: &Value) -> Result<i64, String> {
    let n = result["structuredContent"]["count"]
        .as_i64()
        .ok_or_else(|| format!("not a counter result: {result}"))?;
    let text = texts(result);
    if text != [n.to_string()] {
        return Err(format!(
            "counter text {text:?} != structuredContent.count {n}: {result}"
        ));
    }
    if result["isError"] == true {
        return Err(format!("counter isError: {result}"));
    }
    Ok(n)
}

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------- clients

/// The client flows of `tests/peers/clients/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// Python `mcp` 2.x, `mode="legacy"` (initialize handshake).
    PyLegacy,
    /// Python `mcp` 2.x, `mode="2026-07-28"` (modern, pinned; no fallback).
    Py2026,
    /// TypeScript SDK 1.x (2025 era only).
    Ts1,
    /// TypeScript SDK 2.x, `versionNegotiation: {mode: {pin: "2026-07-28"}}` (no fallback).
    Ts2Modern,
    /// TypeScript SDK 2.x, `versionNegotiation: {mode: "auto"}` (probe, then fall back).
    Ts2Auto,
}

pub const ALL_CLIENTS: [Client; 5] = [
    Client::PyLegacy,
    Client::Py2026,
    Client::Ts1,
    Client::Ts2Modern,
    Client::Ts2Auto,
];

impl Client {
    pub fn label(self) -> &'static str {
        match self {
            Client::PyLegacy => "py-legacy",
            Client::Py2026 => "py-2026",
            Client::Ts1 => "ts1",
            Client::Ts2Modern => "ts2-2026",
            Client::Ts2Auto => "ts2-auto",
        }
    }

    pub fn peer(self) -> Peer {
        match self {
            Client::PyLegacy | Client::Py2026 => Peer::Python,
            _ => Peer::Node,
        }
    }

    fn command(self, url: &str, prefix: &str) -> (PathBuf, Vec<String>) {
        let root = repo_root();
        let py = root.join("tests/peers/clients/py_client_flow.py").display().to_string();
        let ts = root
            .join("tests/peers/clients/ts_client_flow.mjs")
            .display()
            .to_string();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self {
            Client::PyLegacy => (python(), s(&[&py, url, "legacy", prefix])),
            Client::Py2026 => (python(), s(&[&py, url, "2026-07-28", prefix])),
            Client::Ts1 => (node(), s(&[&ts, url, "ts1", "legacy", prefix])),
            Client::Ts2Modern => (node(), s(&[&ts, url, "ts2", "2026-07-28", prefix])),
            Client::Ts2Auto => (node(), s(&[&ts, url, "ts2", "auto", prefix])),
        }
    }

    /// Runs the flow against the proxy at `url` (upstream tool names = `prefix` + base name).
    pub async fn run(self, url: &str, prefix: &str) -> ClientRun {
        let (program, args) = self.command(url, prefix);
        let outcome = actix_web::rt::task::spawn_blocking(move || run_bounded(&program, &args, &[], CLIENT_TIMEOUT))
            .await
            .expect("client runner thread");
        let summary = serde_json::from_str(outcome.stdout.trim()).ok();
        ClientRun {
            client: self,
            outcome,
            summary,
        }
    }
}

pub struct ClientRun {
    pub client: Client,
    pub outcome: Outcome,
    /// The flow's JSON summary, if it printed one.
    pub summary: Option<Value>,
}

/// The shared assertions over one client's flow.
pub struct FlowCheck {
    /// Every expectation that did not hold (empty = pass).
    pub failures: Vec<String>,
    /// The two `counter` values, when both calls returned a counter.
    pub counts: Option<(i64, i64)>,
    /// The protocol version the client negotiated with the proxy.
    pub protocol: Option<String>,
}

impl FlowCheck {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

fn step<'a>(summary: &'a Value, name: &str, failures: &mut Vec<String>) -> Option<&'a Value> {
    let s = &summary["steps"][name];
    if s["ok"] == true {
        Some(&s["value"])
    } else if s.is_null() {
        failures.push(format!("{name}: step not reached"));
        None
    } else {
        failures.push(format!("{name}: {}", s["error"].as_str().unwrap_or("failed")));
        None
    }
}

fn expect_result(failures: &mut Vec<String>, what: &str, r: &Value, text: &str, structured: Value) {
    if r["isError"] == true {
        failures.push(format!("{what}: isError: {r}"));
        return;
    }
    let blocks = r["content"].as_array().cloned().unwrap_or_default();
    let ok_blocks = blocks.len() == 1 && blocks[0]["type"] == "text" && blocks[0]["text"] == text;
    if !ok_blocks {
        failures.push(format!("{what}: content must be one text block {text:?}: {r}"));
    }
    if r["structuredContent"] != structured {
        failures.push(format!("{what}: structuredContent must be {structured}: {r}"));
    }
}

/// Checks a flow summary: the four tools, search finds `add`, describe gives its schema,
/// add/echo/fail/image relayed unchanged, two counter values n, n+1.
pub fn check_flow(run: &ClientRun, prefix: &str) -> FlowCheck {
    let mut f = Vec::new();
    let Some(summary) = &run.summary else {
        return FlowCheck {
            failures: vec![format!("no JSON summary on stdout ({})", one_line(&run.outcome))],
            counts: None,
            protocol: None,
        };
    };
    if let Some(a) = summary.get("aborted") {
        f.push(format!("aborted: {a}"));
    }
    if summary["echo_sent"] != ECHO_SAMPLE {
        f.push(format!("the script's echo sample differs: {}", summary["echo_sent"]));
    }
    let add = format!("{prefix}add");
    let protocol = step(summary, "connect", &mut f).and_then(|c| c["protocol_version"].as_str().map(str::to_string));

    if let Some(tools) = step(summary, "tools_list", &mut f) {
        let mut got: Vec<&str> = tools
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        got.sort_unstable();
        let mut want = PROXY_TOOLS.to_vec();
        want.sort_unstable();
        if got != want {
            f.push(format!("tools/list must be exactly {PROXY_TOOLS:?}: {tools}"));
        }
    }
    if let Some(s) = step(summary, "search", &mut f) {
        let hit = s["hits"]
            .as_array()
            .is_some_and(|h| h.iter().any(|n| n == add.as_str()));
        if s["isError"] == true || !hit {
            f.push(format!("mcp_search 'add two numbers' must find {add}: {s}"));
        }
    }
    if let Some(d) = step(summary, "describe", &mut f) {
        let t = &d["tools"][0];
        let props = &t["inputSchema"]["properties"];
        if t["name"] != add.as_str() || props.get("a").is_none() || props.get("b").is_none() {
            f.push(format!(
                "mcp_describe {add}: tools[0] must be {add} with properties a, b: {d}"
            ));
        }
    }
    if let Some(r) = step(summary, "add", &mut f) {
        expect_result(&mut f, "add 2+3", r, "5", json!({"result": 5}));
    }
    if let Some(r) = step(summary, "echo", &mut f) {
        expect_result(&mut f, "echo", r, ECHO_SAMPLE, json!({"text": ECHO_SAMPLE}));
    }
    if let Some(r) = step(summary, "fail", &mut f) {
        if r["isError"] != true || !texts(r).iter().any(|t| t.contains("always fails")) {
            f.push(format!("fail: isError must be true with the upstream's message: {r}"));
        }
    }
    if let Some(r) = step(summary, "image", &mut f) {
        let blocks = r["content"].as_array().cloned().unwrap_or_default();
        let ok = r["isError"] != true
            && blocks.len() == 1
            && blocks[0]["type"] == "image"
            && blocks[0]["data"] == PNG_B64
            && blocks[0]["mimeType"] == "image/png";
        if !ok {
            f.push(format!(
                "image: must be one image block, image/png, the upstream's base64: {r}"
            ));
        }
    }
    let mut counts = None;
    if let Some(r) = step(summary, "counter", &mut f) {
        match (count_of(&r[0]), count_of(&r[1])) {
            (Ok(a), Ok(b)) => {
                counts = Some((a, b));
                if b != a + 1 {
                    f.push(format!("counter: the second call must give first+1: {a}, {b}"));
                }
            }
            (a, b) => f.push(format!("counter: {:?} / {:?}", a.err(), b.err())),
        }
    }
    FlowCheck {
        failures: f,
        counts,
        protocol,
    }
}

fn one_line(o: &Outcome) -> String {
    let status = if o.timed_out {
        "timed out".to_string()
    } else {
        o.status.map(|s| s.to_string()).unwrap_or_default()
    };
    let tail: String = o.stderr.trim().lines().last().unwrap_or("").chars().take(300).collect();
    format!("{status}; stderr: {tail}")
}

/// Runs every client in order against one proxy and checks the shared expectations, including
/// that the upstream's counter goes on from client to client (one sticky session, or one
/// global counter): the first client must see `first_count`, each later one the previous
/// client's last value + 1. Returns the cells of the matrix row and the failures in detail.
pub async fn run_clients(url: &str, prefix: &str, first_count: i64) -> (Vec<(Client, String)>, Vec<String>) {
    let mut cells = Vec::new();
    let mut failures = Vec::new();
    let mut next = Some(first_count);
    for client in ALL_CLIENTS {
        let run = client.run(url, prefix).await;
        let mut check = check_flow(&run, prefix);
        match (check.counts, next) {
            (Some((a, _)), Some(want)) if a != want => check.failures.push(format!(
                "counter: expected {want} (continuing the previous calls through the proxy), got {a}"
            )),
            _ => {}
        }
        // A client whose counter step failed leaves the upstream's count unknown.
        next = check.counts.map(|(_, b)| b + 1);
        let proto = check.protocol.clone().unwrap_or_else(|| "-".into());
        let cell = match (check.passed(), check.counts) {
            (true, Some((a, b))) => format!("PASS {proto} c={a},{b}"),
            (true, None) => format!("PASS {proto}"),
            (false, _) => format!("FAIL ({} checks)", check.failures.len()),
        };
        if !check.passed() {
            failures.push(format!(
                "[{}] {}\n{}",
                client.label(),
                check.failures.join("\n    "),
                run.outcome.report()
            ));
        }
        cells.push((client, cell));
    }
    (cells, failures)
}
