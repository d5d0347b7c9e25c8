//! Closed-loop load generator for MCP Streamable HTTP servers (awc, loopback only).
//!
//! `cargo bench --bench load -- --url http://127.0.0.1:PORT/mcp --mode proxy-call --tool NAME
//! --concurrency 16 --duration 5 --warmup 1 [--json]`
//!
//! Closed loop: each of `--concurrency` workers is one MCP client with its own keep-alive
//! connection. It performs the handshake a real client performs (`initialize`, then
//! `notifications/initialized`; it keeps the `Mcp-Session-Id` if the server mints one and sends
//! the negotiated `MCP-Protocol-Version` on every later request), then sends one `tools/call`,
//! waits for the complete reply, checks it and sends the next. Offered load therefore adapts to
//! the server: latency is measured under exactly `concurrency` requests in flight.
//!
//! Modes (what each `tools/call` is):
//! - `direct`: the tool itself, `{"name": TOOL, "arguments": ARGS}` (an upstream, or FastMCP's
//!   proxy, which exposes the upstream's tools by name);
//! - `proxy-call`: `mcp_call {"name": TOOL, "arguments": ARGS}` through mcp-search-proxy;
//! - `proxy-search`: `mcp_search {"query": QUERY, "limit": LIMIT}` through mcp-search-proxy;
//! - `ready`: not load: spawns `--cmd` (environment inherited), polls `--url` (a `/readyz` URL)
//!   every 0.5 ms until it answers 200, reports the time from spawn to ready and the child's
//!   peak RSS at that moment, then stops the child; repeated `--repeat` times.
//!
//! A reply counts as an error when the transport fails or times out, the status is not 2xx,
//! the body is not a JSON-RPC response with a `result`, or the result has `isError: true`.
//! Only requests that complete inside the measured window (after the warm-up) are counted;
//! requests still in flight when the window closes are dropped. Every phase is bounded in time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use awc::http::header;
use clap::{Parser, ValueEnum};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Direct,
    ProxyCall,
    ProxySearch,
    Ready,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::ProxyCall => "proxy-call",
            Mode::ProxySearch => "proxy-search",
            Mode::Ready => "ready",
        }
    }
}

/// Closed-loop MCP load generator (loopback only).
#[derive(Parser, Debug)]
#[command(name = "load")]
struct Args {
    /// The MCP endpoint (`http://127.0.0.1:PORT/mcp`), or the `/readyz` URL in `ready` mode.
    #[arg(long)]
    url: String,
    #[arg(long, value_enum, default_value = "direct")]
    mode: Mode,
    /// The upstream tool to call (`direct` and `proxy-call`).
    #[arg(long, default_value = "datadog-get_incident")]
    tool: String,
    /// The tool's arguments, as a JSON object.
    #[arg(long, default_value = r#"{"incidentId":"INC-1"}"#)]
    args: String,
    /// The `mcp_search` query (`proxy-search`).
    #[arg(long, default_value = "send an email")]
    query: String,
    /// The `mcp_search` limit (`proxy-search`); 0 leaves it to the server's default.
    #[arg(long, default_value_t = 0)]
    limit: u32,
    /// Requests in flight (workers, each one MCP client with one connection).
    #[arg(long, short = 'c', default_value_t = 1)]
    concurrency: usize,
    /// Measured seconds.
    #[arg(long, short = 'd', default_value_t = 5.0)]
    duration: f64,
    /// Warm-up seconds before the measured window (handshakes happen before the warm-up).
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Client threads; the workers are split among them.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// A label echoed in the output.
    #[arg(long, default_value = "")]
    label: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// `ready` mode: the program to start (its environment is inherited).
    #[arg(long)]
    cmd: Option<String>,
    /// `ready` mode: arguments of `--cmd`.
    #[arg(long = "cmd-arg", allow_hyphen_values = true)]
    cmd_args: Vec<String>,
    /// `ready` mode: how many starts to measure.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// `ready` mode: give up after this many seconds per start.
    #[arg(long, default_value_t = 30.0)]
    max_wait: f64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !loopback(&args.url) {
        eprintln!("load: refusing a non-loopback URL: {}", args.url);
        return ExitCode::from(2);
    }
    if args.mode == Mode::Ready {
        return ready(&args);
    }
    let params = match call_params(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("load: {e}");
            return ExitCode::from(2);
        }
    };
    let report = run_load(&args, &params);
    if args.json {
        println!("{}", report.to_json(&args));
    } else {
        println!("{}", report.to_text(&args));
    }
    if report.ok == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn loopback(url: &str) -> bool {
    let rest = url.strip_prefix("http://").unwrap_or("");
    let host = rest.split(['/', ':']).next().unwrap_or("");
    matches!(host, "127.0.0.1" | "localhost") || rest.starts_with("[::1]")
}

/// The `params` of every measured `tools/call`, serialised once.
fn call_params(args: &Args) -> Result<String, String> {
    let tool_args: Value = serde_json::from_str(&args.args).map_err(|e| format!("--args is not JSON: {e}"))?;
    if !tool_args.is_object() {
        return Err("--args must be a JSON object".into());
    }
    let params = match args.mode {
        Mode::Direct => json!({"name": args.tool, "arguments": tool_args}),
        Mode::ProxyCall => json!({"name": "mcp_call", "arguments": {"name": args.tool, "arguments": tool_args}}),
        Mode::ProxySearch => {
            let mut a = json!({"query": args.query});
            if args.limit > 0 {
                a["limit"] = json!(args.limit);
            }
            json!({"name": "mcp_search", "arguments": a})
        }
        Mode::Ready => Value::Null,
    };
    Ok(params.to_string())
}

// ---------------------------------------------------------------------------------------------
// Load

/// What one worker saw in the measured window.
#[derive(Default)]
struct WorkerOut {
    latencies_us: Vec<u32>,
    /// Every reply received, warm-up and tail included (to relate server CPU time to calls).
    completed: u64,
    errors: u64,
    first_error: Option<String>,
    handshake_failed: bool,
}

struct Report {
    window: Duration,
    ok: usize,
    completed: u64,
    errors: u64,
    handshake_failures: usize,
    first_error: Option<String>,
    /// Sorted, microseconds.
    latencies_us: Vec<u32>,
}

impl Report {
    fn rps(&self) -> f64 {
        self.ok as f64 / self.window.as_secs_f64()
    }

    /// Nearest-rank percentile in microseconds.
    fn pct(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.latencies_us.len() as f64).ceil() as usize;
        f64::from(self.latencies_us[rank.clamp(1, self.latencies_us.len()) - 1])
    }

    fn to_json(&self, args: &Args) -> Value {
        json!({
            "label": args.label,
            "loop": "closed",
            "mode": args.mode.as_str(),
            "url": args.url,
            "concurrency": args.concurrency,
            "threads": args.threads,
            "duration_s": self.window.as_secs_f64(),
            "warmup_s": args.warmup,
            "requests": self.ok,
            "completed_total": self.completed,
            "errors": self.errors,
            "handshake_failures": self.handshake_failures,
            "first_error": self.first_error,
            "rps": self.rps(),
            "p50_us": self.pct(50.0),
            "p90_us": self.pct(90.0),
            "p99_us": self.pct(99.0),
            "max_us": self.latencies_us.last().copied().unwrap_or(0),
        })
    }

    fn to_text(&self, args: &Args) -> String {
        let ms = |us: f64| us / 1000.0;
        let mut s = format!(
            "{label}{mode} c={c} (closed loop, {t} thread(s), {d:.1} s after {w:.1} s warm-up): \
             {rps:.0} req/s  p50 {p50:.3} ms  p90 {p90:.3} ms  p99 {p99:.3} ms  max {max:.3} ms  \
             requests {n}  errors {e}",
            label = if args.label.is_empty() {
                String::new()
            } else {
                format!("[{}] ", args.label)
            },
            mode = args.mode.as_str(),
            c = args.concurrency,
            t = args.threads,
            d = self.window.as_secs_f64(),
            w = args.warmup,
            rps = self.rps(),
            p50 = ms(self.pct(50.0)),
            p90 = ms(self.pct(90.0)),
            p99 = ms(self.pct(99.0)),
            max = ms(f64::from(self.latencies_us.last().copied().unwrap_or(0))),
            n = self.ok,
            e = self.errors,
        );
        if self.handshake_failures > 0 {
            s.push_str(&format!("  handshake failures {}", self.handshake_failures));
        }
        if let Some(e) = &self.first_error {
            s.push_str(&format!("\n  first error: {e}"));
        }
        s
    }
}

fn run_load(args: &Args, params: &str) -> Report {
    let concurrency = args.concurrency.max(1);
    let threads = args.threads.clamp(1, concurrency);
    // Handshakes happen first; the warm-up and the window start once every worker is ready
    // (bounded by `handshake_deadline`).
    let start_gate = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let mut handles = Vec::new();
    for t in 0..threads {
        let workers = concurrency / threads + usize::from(t < concurrency % threads);
        let url = args.url.clone();
        let params = params.to_string();
        let timeout = Duration::from_secs_f64(args.timeout);
        let warmup = Duration::from_secs_f64(args.warmup);
        let window = Duration::from_secs_f64(args.duration);
        let gate = start_gate.clone();
        handles.push(std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let clients: Vec<_> = (0..workers).map(|_| Client::new(&url, timeout)).collect();
                let handshakes = futures_util::future::join_all(clients.into_iter().map(|mut c| async move {
                    let r = c.handshake().await;
                    (c, r)
                }))
                .await;
                gate.wait();
                let measure_from = Instant::now() + warmup;
                let until = measure_from + window;
                let runs = handshakes.into_iter().map(|(c, r)| {
                    let params = params.clone();
                    async move {
                        match r {
                            Ok(()) => c.run(&params, measure_from, until).await,
                            Err(e) => WorkerOut {
                                errors: 1,
                                first_error: Some(format!("handshake: {e}")),
                                handshake_failed: true,
                                ..WorkerOut::default()
                            },
                        }
                    }
                });
                futures_util::future::join_all(runs).await
            })
        }));
    }
    let mut report = Report {
        window: Duration::from_secs_f64(args.duration),
        ok: 0,
        completed: 0,
        errors: 0,
        handshake_failures: 0,
        first_error: None,
        latencies_us: Vec::new(),
    };
    for h in handles {
        for w in h.join().unwrap_or_default() {
            report.ok += w.latencies_us.len();
            report.completed += w.completed;
            report.latencies_us.extend(w.latencies_us);
            report.errors += w.errors;
            report.handshake_failures += usize::from(w.handshake_failed);
            if report.first_error.is_none() {
                report.first_error = w.first_error;
            }
        }
    }
    report.latencies_us.sort_unstable();
    report
}

/// One MCP client: one connection, its session and negotiated version.
struct Client {
    http: awc::Client,
    url: String,
    session: Option<String>,
    version: Option<String>,
    next_id: u64,
}

impl Client {
    fn new(url: &str, timeout: Duration) -> Client {
        Client {
            http: awc::Client::builder()
                .timeout(timeout)
                .connector(awc::Connector::new().limit(1))
                .finish(),
            url: url.to_string(),
            session: None,
            version: None,
            next_id: 1,
        }
    }

    /// POSTs one JSON-RPC message; returns the matching response (`None` for notifications).
    async fn post(&mut self, body: String, expect_reply: bool) -> Result<Option<Value>, String> {
        let mut req = self
            .http
            .post(&self.url)
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .insert_header((header::ACCEPT, "application/json, text/event-stream"));
        if let Some(s) = &self.session {
            req = req.insert_header(("Mcp-Session-Id", s.as_str()));
        }
        if let Some(v) = &self.version {
            req = req.insert_header(("MCP-Protocol-Version", v.as_str()));
        }
        let mut resp = req.send_body(body).await.map_err(|e| format!("send: {e}"))?;
        let status = resp.status();
        if self.session.is_none() {
            if let Some(s) = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                self.session = Some(s.to_string());
            }
        }
        let sse = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let bytes = resp
            .body()
            .limit(256 * 1024 * 1024)
            .await
            .map_err(|e| format!("body: {e}"))?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {}", excerpt(&bytes)));
        }
        if !expect_reply {
            return Ok(None);
        }
        let message = if sse {
            sse_response(&bytes)
        } else {
            serde_json::from_slice(&bytes).ok()
        };
        match message {
            Some(m) if m.get("result").is_some() => Ok(Some(m)),
            Some(m) => Err(format!("JSON-RPC error: {}", excerpt(m.to_string().as_bytes()))),
            None => Err(format!("not a JSON-RPC response: {}", excerpt(&bytes))),
        }
    }

    fn request_body(&mut self, method: &str, params: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
    }

    async fn handshake(&mut self) -> Result<(), String> {
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-search-proxy-load", "version": env!("CARGO_PKG_VERSION")},
        })
        .to_string();
        let body = self.request_body("initialize", &params);
        let reply = self.post(body, true).await?.unwrap_or(Value::Null);
        let version = reply
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .ok_or("initialize result has no protocolVersion")?;
        self.version = Some(version.to_string());
        self.post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            false,
        )
        .await?;
        Ok(())
    }

    async fn run(mut self, params: &str, measure_from: Instant, until: Instant) -> WorkerOut {
        let mut out = WorkerOut::default();
        loop {
            let started = Instant::now();
            if started >= until {
                break;
            }
            let body = self.request_body("tools/call", params);
            let outcome = self.post(body, true).await.and_then(|m| {
                let m = m.unwrap_or(Value::Null);
                if m.pointer("/result/isError") == Some(&Value::Bool(true)) {
                    Err(format!("isError result: {}", excerpt(m.to_string().as_bytes())))
                } else {
                    Ok(())
                }
            });
            let done = Instant::now();
            out.completed += 1;
            if done < measure_from || done >= until {
                continue;
            }
            match outcome {
                Ok(()) => {
                    let us = (done - started).as_micros().min(u128::from(u32::MAX)) as u32;
                    out.latencies_us.push(us);
                }
                Err(e) => {
                    out.errors += 1;
                    if out.first_error.is_none() {
                        out.first_error = Some(e);
                    }
                    // A failing server answers fast; do not spin.
                    actix_web::rt::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
        out
    }
}

/// The first `data:` payload of an SSE body that is a JSON-RPC response.
fn sse_response(bytes: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut data = String::new();
    let mut found = None;
    let mut flush = |data: &mut String| {
        if found.is_none() && !data.trim().is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(data) {
                if v.get("result").is_some() || v.get("error").is_some() {
                    found = Some(v);
                }
            }
        }
        data.clear();
    };
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    flush(&mut data);
    found
}

fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s: String = s.trim().chars().take(300).collect();
    s
}

// ---------------------------------------------------------------------------------------------
// Start to ready

fn ready(args: &Args) -> ExitCode {
    let Some(cmd) = &args.cmd else {
        eprintln!("load: --mode ready needs --cmd");
        return ExitCode::from(2);
    };
    let Some(addr) = args
        .url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .map(str::to_string)
    else {
        eprintln!("load: --url must be http://HOST:PORT/readyz");
        return ExitCode::from(2);
    };
    let path = format!(
        "/{}",
        args.url
            .strip_prefix("http://")
            .unwrap_or("")
            .split_once('/')
            .map_or("", |(_, p)| p)
    );
    let mut runs = Vec::new();
    for _ in 0..args.repeat.max(1) {
        match ready_once(
            cmd,
            &args.cmd_args,
            &addr,
            &path,
            Duration::from_secs_f64(args.max_wait),
        ) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("load: ready: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut ms: Vec<f64> = runs.iter().map(|r| r.ready.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let median = ms[ms.len() / 2];
    let hwm = runs.iter().map(|r| r.vm_hwm_kb).max().unwrap_or(0);
    let rss = runs.iter().map(|r| r.vm_rss_kb).max().unwrap_or(0);
    let listening_ms: Vec<f64> = runs
        .iter()
        .map(|r| r.listening.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0))
        .collect();
    if args.json {
        println!(
            "{}",
            json!({
                "label": args.label,
                "mode": "ready",
                "runs_ms": runs.iter().map(|r| r.ready.as_secs_f64() * 1000.0).collect::<Vec<_>>(),
                "listening_ms": listening_ms,
                "median_ms": median,
                "min_ms": ms[0],
                "max_ms": ms[ms.len() - 1],
                "vm_hwm_kb": hwm,
                "vm_rss_kb": rss,
            })
        );
    } else {
        println!(
            "{}start to {} 200: median {median:.1} ms (min {:.1}, max {:.1}, {} runs); peak RSS at ready {:.1} MiB",
            if args.label.is_empty() {
                String::new()
            } else {
                format!("[{}] ", args.label)
            },
            args.url,
            ms[0],
            ms[ms.len() - 1],
            ms.len(),
            hwm as f64 / 1024.0
        );
    }
    ExitCode::SUCCESS
}

struct ReadyRun {
    ready: Duration,
    listening: Option<Duration>,
    vm_hwm_kb: u64,
    vm_rss_kb: u64,
}

fn ready_once(cmd: &str, cmd_args: &[String], addr: &str, path: &str, max_wait: Duration) -> Result<ReadyRun, String> {
    let t0 = Instant::now();
    let mut child = std::process::Command::new(cmd)
        .args(cmd_args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{cmd}: {e}"))?;
    let mut listening = None;
    let outcome = loop {
        let now = Instant::now();
        if now - t0 > max_wait {
            break Err(format!("not ready after {max_wait:?}"));
        }
        if let Ok(Some(status)) = child.try_wait() {
            break Err(format!("{cmd} exited early: {status}"));
        }
        if let Some(status) = probe(addr, path) {
            listening.get_or_insert_with(|| Instant::now() - t0);
            if status == 200 {
                break Ok(Instant::now() - t0);
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    };
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (vm_hwm_kb, vm_rss_kb) = (field("VmHWM:"), field("VmRSS:"));
    stop_child(&mut child);
    outcome.map(|ready| ReadyRun {
        ready,
        listening,
        vm_hwm_kb,
        vm_rss_kb,
    })
}

/// SIGTERM, a bounded wait, then SIGKILL.
fn stop_child(child: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// One `GET` over a fresh connection; the status code, or `None` when nothing listens yet.
fn probe(addr: &str, path: &str) -> Option<u16> {
    let sock = addr.parse().ok()?;
    let mut s = TcpStream::connect_timeout(&sock, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut buf = [0u8; 32];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    std::str::from_utf8(&buf[..n]).ok()?.split(' ').nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sse_body_yields_the_response() {
        use super::sse_response;
        let body =
            b"id: 1-0\ndata: \n\nevent: message\nid: 1-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert_eq!(sse_response(body).unwrap()["id"], 3);
        assert!(sse_response(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n").is_none());
    }
}
