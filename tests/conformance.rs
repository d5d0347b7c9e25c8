//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), run against the
//! proxy on loopback:
//! - server mode: 0.1.16 (2025 scenarios) and 0.2.0-alpha.12 with `--requirements 2025-11-25`
//!   and `--requirements 2026-07-28`, each against a committed expected-failures baseline that
//!   lists only what a tools-only server cannot pass (prompts, resources, completions,
//!   logging, server-to-client requests, the suite's fixture tools);
//! - client mode: the proxy as an MCP client of the suite's mock servers, through
//!   `tests/conformance/client_wrapper.py` (it starts the proxy binary with the mock as its
//!   upstream and drives mcp_refresh / mcp_search / mcp_call).
//!
//! Installed by `scripts/install-conformance.sh` (Node 22 comes as an npm package). When it
//! is missing the tests skip with a message, unless `REQUIRE_PEERS=1` (CI), where they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// The node binary and the suite's entry point for one installed version, or `None` (skip).
fn suite(version: &str) -> Option<(PathBuf, PathBuf)> {
    let node = dir().join("node_modules/.bin/node");
    let entry = dir().join(format!("node_modules/{version}/dist/index.js"));
    if node.exists() && entry.exists() {
        return Some((node, entry));
    }
    if std::env::var("REQUIRE_PEERS").as_deref() == Ok("1") {
        panic!("the conformance suite is not installed: run scripts/install-conformance.sh");
    }
    eprintln!("skipping: conformance suite not installed (run scripts/install-conformance.sh)");
    None
}

/// Runs the suite with `args`, bounded in time; panics with its output unless it exits 0.
fn run(node: &Path, entry: &Path, args: &[&str], env: &[(&str, &str)]) {
    let out_dir = std::env::temp_dir().join(format!(
        "mcp-conformance-{}-{}",
        std::process::id(),
        args.join("_").replace(['/', ' ', '.'], "-")
    ));
    let mut cmd = Command::new(node);
    cmd.arg(entry)
        .args(args)
        .arg("-o")
        .arg(&out_dir)
        .current_dir(dir())
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let started = Instant::now();
    let pid = child.id();
    // Bounded: a hung suite is killed after 5 minutes.
    let killer = std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(200));
        if started.elapsed() > Duration::from_secs(300) {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            return;
        }
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return;
        }
    });
    let output = child.wait_with_output().expect("suite output");
    drop(killer);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Vec<&str> = text
        .lines()
        .filter(|l| l.contains('✓') || l.contains('✗') || l.contains("Total"))
        .collect();
    eprintln!("conformance {}:\n{}", args.join(" "), summary.join("\n"));
    assert!(
        output.status.success(),
        "conformance {} failed ({:?}); results kept in {}:\n{text}",
        args.join(" "),
        output.status.code(),
        out_dir.display()
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

async fn proxy_with_demo() -> (demo_upstream::RunningUpstream, TestProxy) {
    let up = demo_upstream::start(demo_upstream::UpstreamOptions::demo(), "127.0.0.1:0")
        .await
        .unwrap();
    let p = start_proxy(vec![upstream_config("demo", &up.url)], catalog_config(None)).await;
    (up, p)
}

/// Server mode needs the proxy on `localhost` URLs (the DNS-rebinding scenario checks that
/// a localhost Host/Origin is accepted), and runs the blocking suite off the runtime.
async fn server_suite(version: &'static str, args: &'static [&'static str], baseline: &'static str) {
    let Some((node, entry)) = suite(version) else { return };
    let (_up, p) = proxy_with_demo().await;
    let url = p.url.clone();
    let baseline = dir().join(baseline);
    actix_web::rt::task::spawn_blocking(move || {
        let mut all: Vec<&str> = vec!["server", "--url", &url];
        all.extend_from_slice(args);
        let b = baseline.to_string_lossy().to_string();
        all.extend_from_slice(&["--expected-failures", &b]);
        run(&node, &entry, &all, &[]);
    })
    .await
    .unwrap();
    p.stop().await;
}

#[actix_web::test]
async fn server_conformance_0_1_16() {
    server_suite("conformance-0.1.16", &[], "baseline-0.1.16.yml").await;
}

#[actix_web::test]
async fn server_conformance_2025_11_25() {
    server_suite(
        "conformance-alpha",
        &["--requirements", "2025-11-25"],
        "baseline-2025-11-25.yml",
    )
    .await;
}

#[actix_web::test]
async fn server_conformance_2026_07_28() {
    server_suite(
        "conformance-alpha",
        &["--requirements", "2026-07-28"],
        "baseline-2026-07-28.yml",
    )
    .await;
}

/// Client mode: each scenario where a tools-only MCP client applies (no OAuth, no
/// elicitation/sampling handlers: the proxy declares no client capabilities).
#[test]
fn client_conformance() {
    let wrapper = format!("python3 {}", dir().join("client_wrapper.py").display());
    let bin = env!("CARGO_BIN_EXE_mcp-search-proxy");
    let env = [("MCP_SEARCH_PROXY_BIN", bin)];
    if let Some((node, entry)) = suite("conformance-0.1.16") {
        for scenario in ["initialize", "tools_call"] {
            run(
                &node,
                &entry,
                &["client", "--command", &wrapper, "--scenario", scenario],
                &env,
            );
        }
    }
    if let Some((node, entry)) = suite("conformance-alpha") {
        let scenarios: &[(&str, &[&str])] = &[
            (
                "2025-11-25",
                &[
                    "initialize",
                    "tools_call",
                    "sse-retry",
                    "json-schema-2020-12-preservation",
                ],
            ),
            (
                "2026-07-28",
                &[
                    "tools_call",
                    "request-metadata",
                    "http-standard-headers",
                    "http-custom-headers",
                    "http-invalid-tool-headers",
                    "json-schema-ref-no-deref",
                    "json-schema-2020-12-preservation",
                ],
            ),
        ];
        for (version, list) in scenarios {
            for scenario in *list {
                run(
                    &node,
                    &entry,
                    &[
                        "client",
                        "--command",
                        &wrapper,
                        "--scenario",
                        scenario,
                        "--spec-version",
                        version,
                    ],
                    &env,
                );
            }
        }
    }
}
