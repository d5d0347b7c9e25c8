//! The proxy in front of the real Playwright MCP server (`@playwright/mcp` 0.0.83, driving
//! Debian's Chromium headless): a tool-heavy, stateful upstream whose browser belongs to the
//! `Mcp-Session-Id`, and which pings its clients on the GET stream and ends the session (and
//! the browser context with it) when a ping stays unanswered for 5 s.
//!
//! The test starts, all on loopback with port 0:
//! - a page server (in-process) with `/a.html`: "Page A", a "Click me" button, a click counter;
//! - Playwright MCP as a subprocess (Streamable HTTP, `--isolated`, headless Chromium, the
//!   browser may only reach loopback), in its own process group with its HOME/TMPDIR in a
//!   temporary folder, and a watchdog in that group that ends the group if this test process
//!   dies without its cleanup (SIGKILL);
//! - a byte-for-byte TCP relay between the proxy and Playwright MCP that counts the server's
//!   `ping` requests and the proxy's `{}` answers (it changes nothing on the wire);
//! - the proxy, in-process (`tests/peer_harness`), with Playwright MCP as its only upstream.
//!
//! Checked through the proxy's own tools: `mcp_search` "navigate browser to a url" finds
//! `browser_navigate`; `mcp_describe` gives its `url` parameter; `mcp_call browser_navigate` to
//! Page A; `browser_snapshot` shows Page A with `clicks: 0`; `browser_click` on the button's ref;
//! `browser_snapshot` shows `clicks: 1` (one sticky upstream session: separate `mcp_call`s
//! share one browser page). Then the test waits [`PING_WAIT`] (more than Playwright's 3 s ping
//! interval plus its 5 s ping timeout): the relay saw pings and the proxy's answers, and a last
//! snapshot still shows `clicks: 1` on the same upstream session generation (an unanswered
//! ping would have ended the session: the proxy would re-initialize and find `about:blank`).
//! At the end every process of the run is gone (Playwright's and Chromium's, found by the
//! temporary folder on their command lines).
//!
//! Needs `scripts/install-playwright.sh` (run by `scripts/install-test-peers.sh`): Debian's
//! `/usr/bin/chromium` and `tests/peers/playwright/node_modules`. Skips without them, unless
//! `REQUIRE_PEERS=1` (CI), where that is a failure. Takes ~20 s, most of it the ping wait.

mod peer_harness;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpResponse, HttpServer};
use peer_harness::{chromium, node, peers_available, playwright_cli, status_line, Peer, TestProxy};
use serde_json::{json, Value};

/// Page A of the test pages (the reference's page: heading, button, click counter).
const PAGE_A: &str = include_str!("peers/playwright/pages/a.html");
/// Longest Playwright MCP may take to listen (0.6–1.3 s measured; Node start on a busy machine).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Longer than Playwright's ping interval (3 s) plus its ping timeout (5 s): without answers
/// the session would be gone after ~5.5 s.
const PING_WAIT: Duration = Duration::from_secs(12);
/// The whole test after the start (Chromium's first launch is ~1 s; the wait is 12 s).
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------- page server

/// The test pages on `127.0.0.1:0`, served by this process.
struct Pages {
    base: String,
    handle: actix_web::dev::ServerHandle,
}

impl Pages {
    fn start() -> Pages {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the page server");
        let base = format!("http://{}", listener.local_addr().expect("page server address"));
        let srv = HttpServer::new(|| {
            App::new().route(
                "/a.html",
                web::get().to(|| async {
                    HttpResponse::Ok()
                        .content_type("text/html; charset=utf-8")
                        .insert_header(("Cache-Control", "no-store"))
                        .body(PAGE_A)
                }),
            )
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .expect("page server listens")
        .run();
        let handle = srv.handle();
        actix_web::rt::spawn(srv);
        Pages { base, handle }
    }
}

// ------------------------------------------------------------------------------- ping tap

/// A TCP relay from `127.0.0.1:0` to the upstream that copies bytes unchanged and counts, in
/// the upstream's direction, JSON-RPC `ping` requests (they only come on the GET stream) and,
/// in the proxy's direction, `"result":{}` (the proxy's answer to a ping; its requests carry
/// no `result`).
struct PingTap {
    addr: String,
    pings: Arc<AtomicUsize>,
    answers: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl PingTap {
    fn start(upstream: String) -> PingTap {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let addr = listener.local_addr().expect("relay address").to_string();
        let pings = Arc::new(AtomicUsize::new(0));
        let answers = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, a, s) = (pings.clone(), answers.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(down) = conn else { continue };
                let Ok(up) = TcpStream::connect(&upstream) else {
                    let _ = down.shutdown(Shutdown::Both);
                    continue;
                };
                let (down2, up2) = (down.try_clone().expect("dup"), up.try_clone().expect("dup"));
                let (p, a) = (p.clone(), a.clone());
                std::thread::spawn(move || pump(down, up, br#""result":{}"#, &a));
                std::thread::spawn(move || pump(up2, down2, br#""method":"ping""#, &p));
            }
        });
        PingTap {
            addr,
            pings,
            answers,
            stop,
        }
    }

    fn counts(&self) -> (usize, usize) {
        (self.pings.load(Ordering::SeqCst), self.answers.load(Ordering::SeqCst))
    }
}

impl Drop for PingTap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(&self.addr);
    }
}

/// Copies `from` to `to` until either side ends, counting occurrences of `needle` (also across
/// reads).
fn pump(mut from: TcpStream, mut to: TcpStream, needle: &[u8], count: &AtomicUsize) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        let found = tail.windows(needle.len()).filter(|w| *w == needle).count();
        count.fetch_add(found, Ordering::SeqCst);
        // Keep what could begin a match that the next read completes.
        let keep = tail.len().min(needle.len() - 1);
        tail.drain(..tail.len() - keep);
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

// ------------------------------------------------------------------------- Playwright MCP

/// Playwright MCP as a subprocess in its own process group; stopped (SIGTERM to the group, then
/// SIGKILL, then any leftover naming its scratch folder, by PID) when dropped, also on panic.
struct PlaywrightMcp {
    child: Child,
    /// Polls this test process every second and ends the group when it is gone; a member of
    /// the group, so the group's signals end it too.
    watchdog: Option<Child>,
    /// HOME, TMPDIR (Chromium's profile), caches and output files of this run.
    scratch: tempfile::TempDir,
    log: Arc<Mutex<String>>,
    /// `http://127.0.0.1:PORT/mcp`
    url: String,
    stopped: bool,
}

impl PlaywrightMcp {
    /// Starts the server on `127.0.0.1:0` and waits (bounded) for its "Listening on" line.
    /// Blocking: call it through `spawn_blocking`.
    fn start() -> Result<PlaywrightMcp, String> {
        let scratch = tempfile::Builder::new()
            .prefix("playwright-mcp-test-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let dir = |d: &str| -> PathBuf {
            let p = scratch.path().join(d);
            std::fs::create_dir_all(&p).expect("scratch folder");
            p
        };
        let (home, tmp, cache, output, work) = (dir("home"), dir("tmp"), dir("cache"), dir("output"), dir("work"));
        let args: Vec<String> = [
            playwright_cli().display().to_string().as_str(),
            // Streamable HTTP on loopback, a port of its own choosing. The host check is off:
            // the proxy (through the relay) sends `Host: 127.0.0.1:<relay port>`, and only
            // loopback can reach the socket anyway.
            "--port",
            "0",
            "--host",
            "127.0.0.1",
            "--allowed-hosts",
            "*",
            // Debian's Chromium, headless; no sandbox (root in a container).
            "--headless",
            "--executable-path",
            chromium().display().to_string().as_str(),
            "--no-sandbox",
            // One browser, an in-memory context per MCP session.
            "--isolated",
            "--output-dir",
            output.display().to_string().as_str(),
            // The browser reaches loopback only: other origins are blocked, anything else goes
            // to a proxy where nothing listens.
            "--allowed-origins",
            "http://127.0.0.1:*;http://localhost:*",
            "--proxy-server",
            "http://127.0.0.1:9",
            "--proxy-bypass",
            "127.0.0.1,localhost,[::1]",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut child = Command::new(node())
            .args(&args)
            .current_dir(&work)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", &cache)
            .env("TMPDIR", &tmp)
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .env("NO_COLOR", "1")
            // (It listens for its stdin's close, but with a pipe that closed when the test was
            // SIGKILLed it stayed up: the watchdog below covers a killed test.)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start playwright-mcp (node {}): {e}", args[0]))?;
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        for (stream, out) in [
            (
                Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
                "out",
            ),
            (Box::new(child.stderr.take().expect("piped")), "err"),
        ] {
            let (log, tx) = (log.clone(), tx.clone());
            // Drains the pipe until the process ends, so it never fills.
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if let Some(port) = line
                        .strip_prefix("Listening on http://localhost:")
                        .and_then(|p| p.trim().parse::<u16>().ok())
                    {
                        let _ = tx.send(port);
                    }
                    let mut l = log.lock().unwrap();
                    l.push_str(&format!("[{out}] {line}\n"));
                }
            });
        }
        let pgid = child.id();
        let watchdog = Command::new("bash")
            .args([
                "-c",
                // (It ignores the TERM it sends its own group, to follow up with KILL.)
                "while kill -0 \"$0\" 2>/dev/null; do sleep 1; done; \
                 trap '' TERM; kill -TERM -- \"-$1\"; sleep 5; kill -KILL -- \"-$1\"",
                &std::process::id().to_string(),
                &pgid.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(pgid as i32)
            .spawn();
        let mut pw = PlaywrightMcp {
            child,
            watchdog: None,
            scratch,
            log,
            url: String::new(),
            stopped: false,
        };
        match watchdog {
            Ok(w) => pw.watchdog = Some(w),
            Err(e) => return Err(format!("cannot start the watchdog (bash): {e}")),
        }
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(port) => {
                    pw.url = format!("http://127.0.0.1:{port}/mcp");
                    return Ok(pw);
                }
                Err(_) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = pw.child.try_wait() {
                        return Err(format!(
                            "playwright-mcp exited ({status}) before listening\n{}",
                            pw.logs()
                        ));
                    }
                }
                Err(_) => {
                    return Err(format!(
                        "playwright-mcp did not listen within {START_TIMEOUT:?}\n{}",
                        pw.logs()
                    ))
                }
            }
        }
    }

    fn logs(&self) -> String {
        format!("--- playwright-mcp output ---\n{}", self.log.lock().unwrap())
    }

    /// Ends the server and every process of this run; returns the PIDs that survived (none).
    /// Idempotent. Blocking (up to ~10 s).
    fn stop(&mut self) -> Vec<u32> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        let pgid = self.child.id();
        // Graceful first: the server closes its browsers on SIGTERM (the watchdog just ends).
        signal_group("TERM", pgid);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group("KILL", pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        // Chromium helpers may leave the group's tree (crashpad re-parents itself to init):
        // whatever still names our scratch folder is ours.
        let scratch = self.scratch.path().to_path_buf();
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = processes_naming(&scratch);
            if left.is_empty() {
                return left;
            }
            if Instant::now() >= deadline {
                for pid in &left {
                    signal_pid("KILL", *pid);
                }
                std::thread::sleep(Duration::from_millis(200));
                return processes_naming(&scratch);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for PlaywrightMcp {
    fn drop(&mut self) {
        let left = self.stop();
        if !left.is_empty() {
            eprintln!("playwright-mcp: processes survived SIGKILL: {left:?}");
        }
    }
}

/// `kill -SIG -- -PGID`: the whole process group this test created.
fn signal_group(sig: &str, pgid: u32) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), "--".into(), format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

fn signal_pid(sig: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Live (not zombie) processes whose command line contains `dir`.
fn processes_naming(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
                .unwrap_or(true);
            !zombie && String::from_utf8_lossy(&cmd).contains(&needle)
        })
        .collect()
}

// ----------------------------------------------------------------------------------- test

fn texts(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// An upstream tool's result through `mcp_call`, which must not be an error.
async fn call_ok(proxy: &TestProxy, name: &str, arguments: Value) -> String {
    let started = Instant::now();
    let r = proxy.mcp_call(name, arguments.clone()).await;
    assert!(
        r.get("rpc_error").is_none() && r["isError"] != true,
        "mcp_call {name} {arguments} failed: {r}"
    );
    let text = texts(&r);
    println!("mcp_call {name}: {} ms", started.elapsed().as_millis());
    text
}

/// The `[ref=…]` of the line in a snapshot that names `what`.
fn ref_of(snapshot: &str, what: &str) -> Option<String> {
    let line = snapshot.lines().find(|l| l.contains(what))?;
    let start = line.find("[ref=")? + "[ref=".len();
    let end = line[start..].find(']')? + start;
    Some(line[start..end].to_string())
}

#[actix_web::test]
async fn proxy_in_front_of_playwright_mcp() {
    if !peers_available("playwright", &[Peer::Playwright]) {
        return;
    }
    let t0 = Instant::now();
    let pages = Pages::start();
    let mut pw = actix_web::rt::task::spawn_blocking(PlaywrightMcp::start)
        .await
        .expect("starter thread")
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "playwright-mcp listening at {} after {} ms",
        pw.url,
        t0.elapsed().as_millis()
    );
    let upstream_addr = pw
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let tap = PingTap::start(upstream_addr);
    let proxy = TestProxy::start(&format!("pw=http://{}/mcp", tap.addr)).await;

    let checks = actix_web::rt::time::timeout(TEST_TIMEOUT, checks(&proxy, &pages, &tap));
    let outcome = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(checks)).await;
    proxy.stop().await;
    pages.handle.stop(false).await;
    let logs = pw.logs();
    let left = actix_web::rt::task::spawn_blocking(move || pw.stop())
        .await
        .expect("stopper thread");
    match outcome {
        Err(panic) => {
            eprintln!("{logs}");
            std::panic::resume_unwind(panic);
        }
        Ok(Err(_)) => panic!("the checks did not finish within {TEST_TIMEOUT:?}\n{logs}"),
        Ok(Ok(())) => {}
    }
    assert!(left.is_empty(), "processes of the run survived: {left:?}");
    println!("total {} ms", t0.elapsed().as_millis());
}

async fn checks(proxy: &TestProxy, pages: &Pages, tap: &PingTap) {
    // The startup refresh listed Playwright's tools in a legacy (2025) session it keeps.
    let before = proxy.upstream_status().await;
    println!("upstream after the startup refresh: {}", status_line(&before));
    assert!(before.has_session, "Playwright MCP must give a session id: {before:?}");

    // Search finds the browser tools by what they do.
    let found = proxy
        .call("mcp_search", json!({"query": "navigate browser to a url"}))
        .await;
    let hits: Vec<&str> = found["structuredContent"]["results"]
        .as_array()
        .map(|r| r.iter().filter_map(|h| h["name"].as_str()).collect())
        .unwrap_or_default();
    println!("mcp_search 'navigate browser to a url': {hits:?}");
    assert!(
        hits.contains(&"browser_navigate"),
        "browser_navigate not found: {found}"
    );
    let described = proxy.call("mcp_describe", json!({"names": ["browser_navigate"]})).await;
    let tool = &described["structuredContent"]["tools"][0];
    assert!(
        tool["name"] == "browser_navigate" && tool["inputSchema"]["properties"].get("url").is_some(),
        "mcp_describe browser_navigate must give its url parameter: {described}"
    );

    // Navigate, then read the page in separate calls: one browser page, one upstream session.
    let page_a = format!("{}/a.html", pages.base);
    let nav = call_ok(proxy, "browser_navigate", json!({"url": page_a})).await;
    assert!(nav.contains("Page A"), "browser_navigate did not reach Page A: {nav}");
    let snap = call_ok(proxy, "browser_snapshot", json!({})).await;
    assert!(
        snap.contains(&page_a) && snap.contains("heading \"Page A\"") && snap.contains("clicks: 0"),
        "the snapshot must show Page A with clicks: 0 (same session as the navigate): {snap}"
    );
    let button = ref_of(&snap, "button \"Click me\"").unwrap_or_else(|| panic!("no ref for the button: {snap}"));
    call_ok(proxy, "browser_click", json!({"target": button})).await;
    let snap = call_ok(proxy, "browser_snapshot", json!({})).await;
    assert!(
        snap.contains("clicks: 1"),
        "the click must show in the next call's snapshot: {snap}"
    );

    // Playwright pings on the GET stream the proxy holds open; unanswered, the session ends
    // within ~5.5 s. Wait longer than that: the proxy must have answered.
    let (p0, a0) = tap.counts();
    println!("pings so far: {p0} sent, {a0} answered; waiting {PING_WAIT:?}");
    actix_web::rt::time::sleep(PING_WAIT).await;
    let (pings, answers) = tap.counts();
    println!("pings after the wait: {pings} sent, {answers} answered");
    assert!(
        pings >= p0 + 2,
        "Playwright MCP must ping the proxy's GET stream (every 3 s): {p0} -> {pings} pings"
    );
    assert!(
        answers + 1 >= pings && answers >= 2,
        "the proxy must answer the pings: {pings} pings, {answers} answers"
    );
    let snap = call_ok(proxy, "browser_snapshot", json!({})).await;
    assert!(
        snap.contains(&page_a) && snap.contains("clicks: 1"),
        "after {PING_WAIT:?} the session (and its page) must still be there: {snap}"
    );
    let after = proxy.upstream_status().await;
    println!("upstream at the end: {}", status_line(&after));
    assert!(
        after.has_session && after.generation == before.generation,
        "the upstream session must be the one from the start (no re-initialization): {before:?} -> {after:?}"
    );
}
