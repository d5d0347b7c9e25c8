//! The proxy's MCP endpoint on the wire (2025 era): raw requests, exact answers.

mod common;

use common::*;
use serde_json::{json, Value};

async fn proxy() -> (demo_upstream::RunningUpstream, TestProxy) {
    let a = upstream(
        vec![
            tool("mail-send", "Send an email.", &["to"]),
            tool("mail-list", "List emails.", &[]),
        ],
        true,
        false,
    )
    .await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    (a, p)
}

#[actix_web::test]
async fn initialize_negotiates_and_lists_sources() {
    let (_a, p) = proxy().await;
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2024-11-05"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let (status, body) = rpc(
            &p.url,
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body["result"]["protocolVersion"], answered);
    }
    let (_, body) = rpc(
        &p.url,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let r = &body["result"];
    assert_eq!(r["serverInfo"]["name"], "mcp-search-proxy");
    assert_eq!(r["capabilities"]["tools"], json!({"listChanged": false}));
    let instructions = r["instructions"].as_str().unwrap();
    assert!(instructions.contains("mcp_search"));
    assert!(
        instructions.contains("mail (2 tools):\n- mail-list: List emails.\n- mail-send: Send an email.\n"),
        "{instructions}"
    );
    // Byte-stable.
    let (_, again) = rpc(
        &p.url,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert_eq!(again["result"]["instructions"], r["instructions"]);
    p.stop().await;
}

#[actix_web::test]
async fn notifications_get_202_and_ping_answers() {
    let (_a, p) = proxy().await;
    let (status, _, body) = post_raw(&p.url, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, &[]).await;
    assert_eq!((status, body.as_str()), (202, ""));
    let (status, body) = rpc(&p.url, "ping", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    p.stop().await;
}

#[actix_web::test]
async fn malformed_json_rpc_gets_precise_errors() {
    let (_a, p) = proxy().await;
    let (status, _, body) = post_raw(&p.url, "{not json", &[]).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 400);
    assert_eq!(v["error"]["code"], -32700);
    assert!(v.get("id").is_none(), "unknown id is omitted, never null: {v}");

    let (status, _, body) = post_raw(&p.url, r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, &[]).await;
    assert_eq!(status, 400);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32600);

    let (status, _, body) = post_raw(&p.url, r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#, &[]).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 400);
    assert_eq!(v["id"], 9, "a readable id is echoed");

    let (status, body) = rpc(&p.url, "resources/list", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32601);

    let (_, body) = rpc(&p.url, "tools/call", json!({"name": "send_email", "arguments": {}})).await;
    assert_eq!(body["error"]["code"], -32602);
    assert!(body["error"]["message"].as_str().unwrap().contains("mcp_call"));

    let (_, body) = rpc(&p.url, "tools/call", json!({"arguments": {}})).await;
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(body["error"]["message"], "tools/call needs params.name");
    let (_, body) = rpc(&p.url, "tools/call", json!({"name": 5, "arguments": {}})).await;
    assert_eq!(
        body["error"]["message"], "tools/call needs params.name",
        "a name that is no string"
    );
    // params that are no object are refused before their name is looked for
    let (_, body) = rpc(&p.url, "tools/call", json!(["mcp_search"])).await;
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(body["error"]["message"], "params must be an object");
    p.stop().await;
}

#[actix_web::test]
async fn foreign_origins_are_refused() {
    let (_a, p) = proxy().await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let (status, _, body) = post_raw(&p.url, ping, &[("Origin", "http://evil.example.com")]).await;
    assert_eq!(status, 403);
    assert!(body.contains("ALLOWED_ORIGINS"));
    for ok in [
        "http://localhost:3000",
        "http://127.0.0.1:8080",
        "https://chat.example.com",
    ] {
        let (status, _, _) = post_raw(&p.url, ping, &[("Origin", ok)]).await;
        assert_eq!(status, 200, "{ok}");
    }
    p.stop().await;
}

#[actix_web::test]
async fn oversized_bodies_are_refused_with_a_clear_error() {
    let (_a, p) = proxy().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(70 * 1024)
    );
    let (status, _, body) = post_raw(&p.url, big, &[]).await;
    assert_eq!(status, 413);
    assert!(body.contains("MAX_BODY_BYTES"), "{body}");
    // The proxy is fine afterwards.
    let (status, _) = rpc(&p.url, "ping", json!({})).await;
    assert_eq!(status, 200);
    p.stop().await;
}

#[actix_web::test]
async fn protocol_version_header_is_checked() {
    let (_a, p) = proxy().await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let (status, _, _) = post_raw(&p.url, ping, &[("MCP-Protocol-Version", "2025-06-18")]).await;
    assert_eq!(status, 200);
    let (status, _, body) = post_raw(&p.url, ping, &[("MCP-Protocol-Version", "1999-01-01")]).await;
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v["error"]["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!("2025-11-25")));
    p.stop().await;
}

#[actix_web::test]
async fn replies_follow_accept_and_other_methods_get_405() {
    let (_a, p) = proxy().await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut resp = client()
        .post(&p.url)
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("Accept", "text/event-stream"))
        .send_body(ping)
        .await
        .unwrap();
    assert_eq!(resp.headers().get("content-type").unwrap(), "text/event-stream");
    let body = String::from_utf8(resp.body().await.unwrap().to_vec()).unwrap();
    assert!(
        body.contains("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"),
        "{body}"
    );

    let (status, _, _) = post_raw(&p.url, ping, &[("Accept", "text/html")]).await;
    assert_eq!(status, 406);
    let (status, _, _) = post_raw(&p.url, ping, &[("Content-Type", "text/plain")]).await;
    assert_eq!(status, 415);

    let resp = client()
        .get(&p.url)
        .insert_header(("Accept", "text/event-stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    let resp = client().delete(&p.url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    p.stop().await;
}

#[test]
fn bad_configuration_exits_64_naming_the_variable() {
    let bin = env!("CARGO_BIN_EXE_mcp-search-proxy");
    for (var, value) in [
        ("UPSTREAMS", "ftp://nope"),
        ("PORT", "not-a-port"),
        ("CATALOG_TTL_SEC", "soon"),
    ] {
        let mut cmd = std::process::Command::new(bin);
        cmd.env_clear()
            .env("UPSTREAMS", "http://127.0.0.1:9/mcp")
            .env(var, value)
            .env("PORT", if var == "PORT" { value } else { "0" });
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{var}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(var), "{stderr}");
    }
    let out = std::process::Command::new(bin).env_clear().output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UPSTREAMS"));
    let out = std::process::Command::new(bin).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("demo"));
}
