//! Hostile clients and hostile upstreams, end to end: a real proxy over HTTP in front of
//! misbehaving in-process upstreams. Each test pins one defect that was reproduced against an
//! earlier version (see the Security model section of the README); upstream transport faults
//! (hung handshakes, redirects, close-delimited replies, timeouts) are in
//! `tests/hostile_upstream.rs`.

mod common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;
use mcp_search_proxy::http::auth::Authenticator;
use mcp_search_proxy::http::HttpSettings;
use mcp_search_proxy::server::{self, ServerLimits};
use proxy_actors::catalog::CatalogConfig;
use proxy_core::policy::Policy;

fn is_error(r: &Value) -> bool {
    r["isError"] == true
}

fn error_message(r: &Value) -> String {
    r["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// ------------------------------------------------------------------ bounded work per request

#[actix_web::test]
async fn a_huge_word_gets_a_clear_error_not_a_crash() {
    let a = upstream(vec![tool("mail-send_message", "Send an email.", &["to"])], true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let word = "q".repeat(60_000);
    let started = Instant::now();
    let r = call(&p.url, "mcp_search", json!({"query": word})).await;
    assert!(is_error(&r), "{r}");
    assert!(error_message(&r).contains("at most 4096"), "{r}");
    let r = call(&p.url, "mcp_search", json!({"query": ["send email", word]})).await;
    assert!(is_error(&r), "one over-long query in a list refuses the call");
    let r = call(&p.url, "mcp_describe", json!({"names": [word]})).await;
    assert!(
        is_error(&r) && error_message(&r).contains("no tool name is longer"),
        "{r}"
    );
    let r = mcp_call(&p.url, &word, json!({})).await;
    assert!(
        is_error(&r) && error_message(&r).contains("no tool name is longer"),
        "{r}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The longest accepted word still answers promptly, and the proxy is fine afterwards.
    let r = call(&p.url, "mcp_search", json!({"query": "z".repeat(4096)})).await;
    assert!(!is_error(&r), "{r}");
    let r = call(&p.url, "mcp_search", json!({"query": "send email"})).await;
    assert_eq!(r["structuredContent"]["results"][0]["name"], "mail-send_message");
    p.stop().await;
}

#[actix_web::test]
async fn names_with_control_characters_are_refused() {
    let a = upstream(vec![tool("mail-send_message", "Send an email.", &[])], true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    for name in ["mail-send_message\u{1b}[2J", "mail\u{202E}-send", "mail\0send"] {
        let r = mcp_call(&p.url, name, json!({})).await;
        assert!(
            is_error(&r) && error_message(&r).contains("control or invisible"),
            "{r}"
        );
        let r = call(&p.url, "mcp_describe", json!({"names": [name]})).await;
        assert!(is_error(&r), "{r}");
    }
    assert_eq!(a.control.stats().tools_call, 0);
    p.stop().await;
}

#[actix_web::test]
async fn an_upstream_tool_with_a_huge_name_is_dropped_and_counted() {
    let a = upstream(
        vec![
            tool(&"n".repeat(60_000), "A tool with an absurd name.", &[]),
            tool("mail-send_message", "Send an email.", &[]),
        ],
        true,
        false,
    )
    .await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let sc = &r["structuredContent"];
    assert_eq!(sc["total_tools"], 1, "{sc}");
    assert_eq!(sc["upstreams"][0]["dropped"], json!({"name_too_long": 1}), "{sc}");
    let r = call(&p.url, "mcp_search", json!({"query": "send email"})).await;
    assert_eq!(r["structuredContent"]["results"][0]["name"], "mail-send_message");
    p.stop().await;
}

#[actix_web::test]
async fn control_characters_from_upstreams_never_reach_clients() {
    let a = upstream(
        vec![
            tool(
                "files-read_file",
                "Read\u{1b}[2J a file\u{202E} from disk.\u{0}\nSecond line.",
                &[],
            ),
            tool("files-evil\u{1b}[31m", "Hidden.", &[]),
            tool("files-d\u{435}lete", "A look-alike.", &[]),
        ],
        true,
        false,
    )
    .await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(
        r["structuredContent"]["upstreams"][0]["dropped"],
        json!({"invalid_name": 2})
    );
    let r = call(&p.url, "mcp_search", json!({"query": "read file"})).await;
    let hit = &r["structuredContent"]["results"][0];
    assert_eq!(hit["name"], "files-read_file");
    assert_eq!(hit["description"], "Read[2J a file from disk.\nSecond line.");
    let (_, init) = rpc(
        &p.url,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert!(instructions.contains("files-read_file"), "{instructions}");
    assert!(
        !instructions
            .chars()
            .any(|c| c == '\u{1b}' || c == '\u{202E}' || c == '\0'),
        "{instructions:?}"
    );
    p.stop().await;
}

// ------------------------------------------------------------------ policy cannot be bypassed

async fn policy_proxy(deny: &[&str]) -> (demo_upstream::RunningUpstream, TestProxy) {
    let a = upstream(
        vec![
            tool("github-delete_repo", "Delete a repository.", &[]),
            tool("gmail-send", "Send mail.", &[]),
            tool("gmail-list", "List mail.", &[]),
            tool("fk_tool_1", "First tool.", &[]),
            tool("fk_tool_2", "Second tool.", &[]),
            tool("wipe_disk", "Wipe one disk.", &[]),
            tool("wipe_disks", "Wipe all disks.", &[]),
            tool("delete_all", "Delete everything.", &[]),
            tool("d\u{435}lete_all", "Delete everything (look-alike).", &[]),
        ],
        true,
        false,
    )
    .await;
    let policy = Policy {
        deny: deny.iter().map(|d| d.to_string()).collect(),
        ..Default::default()
    };
    let p = start_proxy(
        vec![upstream_config("agg", &a.url)],
        CatalogConfig {
            policy,
            ..catalog_config(None)
        },
    )
    .await;
    (a, p)
}

#[actix_web::test]
async fn a_source_deny_holds_for_a_server_down_to_one_tool() {
    let (a, p) = policy_proxy(&["source:github"]).await;
    let r = call(&p.url, "mcp_search", json!({"query": "delete repository"})).await;
    let names: Vec<&str> = r["structuredContent"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    assert!(!names.contains(&"github-delete_repo"), "{names:?}");
    let r = mcp_call(&p.url, "github-delete_repo", json!({})).await;
    assert!(is_error(&r), "{r}");
    assert_eq!(a.control.stats().tools_call, 0, "the denied tool never ran");
    p.stop().await;
}

#[actix_web::test]
async fn a_denied_name_never_runs_another_tool_and_reads_as_unknown() {
    let (a, p) = policy_proxy(&["fk_tool_1", "wipe_disk", "delete_all"]).await;
    for name in ["fk_tool_1", "FK-TOOL-1", "wipe_disk", "delete_all", "d\u{435}lete_all"] {
        let r = mcp_call(&p.url, name, json!({})).await;
        assert!(is_error(&r), "{name}: {r}");
        let msg = error_message(&r);
        assert!(msg.starts_with("Unknown tool"), "{name}: {msg}");
        assert_eq!(
            a.control.stats().last_call,
            None,
            "{name} ran {:?}",
            a.control.stats().last_call
        );
    }
    // A denied name and a name nobody offers get the same kind of answer.
    let denied = mcp_call(&p.url, "fk_tool_1", json!({})).await;
    let unknown = mcp_call(&p.url, "zq_tool_9", json!({})).await;
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v["structuredContent"]["error"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&denied), keys(&unknown));
    let first_sentence = |v: &Value, name: &str| {
        error_message(v)
            .replace(name, "NAME")
            .split(". ")
            .next()
            .map(str::to_string)
    };
    assert_eq!(
        first_sentence(&denied, "fk_tool_1"),
        first_sentence(&unknown, "zq_tool_9"),
        "{denied} / {unknown}"
    );
    // A one-typo name is suggested, not run.
    let r = mcp_call(&p.url, "fk_tool_3", json!({})).await;
    assert!(is_error(&r));
    assert!(r["structuredContent"]["error"]["did_you_mean"]
        .as_array()
        .unwrap()
        .contains(&json!("fk_tool_2")));
    assert_eq!(a.control.stats().tools_call, 0);
    // The allowed neighbours still run by their own names.
    let r = mcp_call(&p.url, "fk_tool_2", json!({})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(a.control.stats().last_call.unwrap().0, "fk_tool_2");
    p.stop().await;
}

// ------------------------------------------------------------------ inbound authentication

const TOKEN: &str = "team-a-token-0123456789";

async fn authenticated_proxy() -> (demo_upstream::RunningUpstream, TestProxy) {
    let a = upstream(vec![tool("mail-send_message", "Send an email.", &[])], true, false).await;
    let settings = HttpSettings {
        auth: Authenticator::new(&[mcp_search_proxy::config::ClientToken {
            group: "team-a".into(),
            token: TOKEN.into(),
        }]),
        ..settings()
    };
    let p = start_proxy_with(
        vec![upstream_config("agg", &a.url)],
        catalog_config(None),
        settings,
        ServerLimits::default(),
    )
    .await;
    (a, p)
}

#[actix_web::test]
async fn without_a_valid_token_nothing_but_health_is_served() {
    let (a, p) = authenticated_proxy().await;
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "mcp_call", "arguments": {"name": "mail-send_message"}}})
    .to_string();
    for auth in [None, Some("Bearer wrong-token-0123456789"), Some("Basic dGVhbTpwdw==")] {
        let extra: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        let (status, headers, text) = post_raw(&p.url, body.clone(), &extra).await;
        assert_eq!(status, 401, "{auth:?}: {text}");
        let challenge = headers.get("www-authenticate").unwrap().to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(
            v["error"]["message"].as_str().unwrap().starts_with("Unauthorized"),
            "{v}"
        );
    }
    // GET and DELETE on /mcp too.
    let resp = client()
        .delete(&p.url)
        .insert_header(("Mcp-Session-Id", "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(a.control.stats().tools_call, 0);
    // Health and readiness stay open for probes.
    assert_eq!(get(&format!("{}/healthz", p.base)).await.0, 200);
    assert_eq!(get(&format!("{}/readyz", p.base)).await.0, 200);
    // The right token works.
    let bearer = format!("Bearer {TOKEN}");
    let (status, _, text) = post_raw(&p.url, body, &[("Authorization", bearer.as_str())]).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(a.control.stats().tools_call, 1);
    p.stop().await;
}

#[actix_web::test]
async fn a_client_looping_mcp_refresh_cannot_drive_fan_outs() {
    let a = upstream(vec![tool("mail-send_message", "Send an email.", &[])], true, false).await;
    let p = start_proxy(
        vec![upstream_config("agg", &a.url)],
        CatalogConfig {
            min_refresh_interval: Duration::from_secs(5),
            ..catalog_config(None)
        },
    )
    .await;
    let before = a.control.stats().tools_list;
    for _ in 0..20 {
        let r = call(&p.url, "mcp_refresh", json!({})).await;
        assert!(!is_error(&r), "{r}");
        assert_eq!(r["structuredContent"]["ran"], false);
        assert!(r["structuredContent"]["note"]
            .as_str()
            .unwrap()
            .contains("at most once per 5 s"));
        assert_eq!(r["structuredContent"]["total_tools"], 1);
    }
    let concurrent = (0..20).map(|_| call(&p.url, "mcp_refresh", json!({})));
    futures_util::future::join_all(concurrent).await;
    let status = p.catalog_status().await;
    assert_eq!(status.fanouts, 1, "only the startup refresh ran");
    assert_eq!(a.control.stats().tools_list, before);
    p.stop().await;
}

// ------------------------------------------------------------------ slow clients

#[actix_web::test]
async fn stalled_bodies_cannot_hold_connections() {
    let a = upstream(vec![tool("mail-send_message", "Send an email.", &[])], true, false).await;
    let settings = HttpSettings {
        body_timeout: Duration::from_secs(1),
        ..settings()
    };
    let limits = ServerLimits {
        max_connections: 16,
        ..ServerLimits::default()
    };
    let p = start_proxy_with(
        vec![upstream_config("agg", &a.url)],
        catalog_config(None),
        settings,
        limits,
    )
    .await;
    let addr = p.base.trim_start_matches("http://").to_string();
    // 60 clients send their headers and a piece of the body, then nothing.
    let mut stalled = Vec::new();
    for _ in 0..60 {
        let addr = addr.clone();
        stalled.push(actix_web::rt::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let head = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":";
            s.write_all(head.as_bytes()).await.unwrap();
            let started = Instant::now();
            let mut buf = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut buf)).await;
            (started.elapsed(), String::from_utf8_lossy(&buf).into_owned())
        }));
    }
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    // A legitimate request still gets through, within a few body timeouts.
    let started = Instant::now();
    let r = call(&p.url, "mcp_search", json!({"query": "send email"})).await;
    assert_eq!(r["structuredContent"]["results"][0]["name"], "mail-send_message");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // Every stalled client was answered 408 and let go after about the body timeout.
    for s in stalled {
        let (waited, reply) = s.await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
        assert!(waited < Duration::from_secs(10), "{waited:?}");
    }
    p.stop().await;
}

// ------------------------------------------------------------------ shutdown

#[actix_web::test]
async fn calls_running_at_the_end_of_the_grace_period_get_an_error() {
    let a = upstream(vec![tool("alpha-echo", "Echo.", &["text"])], true, false).await;
    a.control.set_call_delay(Duration::from_secs(30));
    let limits = ServerLimits {
        shutdown_grace: Duration::from_secs(1),
        ..ServerLimits::default()
    };
    let p = start_proxy_with(
        vec![upstream_config("agg", &a.url)],
        catalog_config(None),
        settings(),
        limits,
    )
    .await;
    let url = p.url.clone();
    let pending = actix_web::rt::spawn(async move {
        rpc(
            &url,
            "tools/call",
            json!({"name": "mcp_call", "arguments": {"name": "alpha-echo", "arguments": {"text": "hi"}}}),
        )
        .await
    });
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    server::drain(&p.handle(), &p.state, limits.shutdown_grace).await;
    let (status, body) = pending.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("shutting down"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The upstream was told (reason: the proxy is shutting down, not the client).
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.control.stats().cancelled_notifications == 0 && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(a.control.stats().cancelled_notifications, 1);
    p.proxy.stop();
}

// ------------------------------------------------------------------ secrets

#[test]
fn secrets_in_upstream_urls_stay_out_of_logs_and_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-search-proxy"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("EMBED_MODEL", "") // lexical only, even with the model installed
        .env(
            "UPSTREAMS",
            "http://user:hunter2-SECRET@127.0.0.1:9/mcp?api_key=sk-SECRET-KEY",
        )
        .env("PORT", "0")
        .env("MANIFEST_PATH", &manifest)
        .env("LOG_LEVEL", "debug")
        .env("UPSTREAM_TIMEOUT_SEC", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("upstream configured"), "{text}");
    assert!(text.contains("http://***@127.0.0.1:9/mcp?api_key=***"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
    if let Ok(m) = std::fs::read_to_string(&manifest) {
        assert!(!m.contains("SECRET"), "{m}");
    }
}

#[test]
fn a_token_with_a_comma_or_newline_is_refused_without_being_echoed() {
    for upstreams in [
        "http://a/mcp|sk-abc,def-SECRET-TAIL",
        "http://a/mcp|sk-SECRET\r\nX-Injected: 1",
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-search-proxy"))
            .env_clear()
            .env("UPSTREAMS", upstreams)
            .env("PORT", "0")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Bounded: a proxy that accepted the token would serve forever.
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{upstreams:?} was accepted");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("UPSTREAMS"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
    }
}
