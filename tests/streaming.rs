//! Progress relaying, progress-extended timeouts, cancellation (client disconnect and legacy
//! `notifications/cancelled`), legacy client sessions, and the 2026-07-28 era on the wire.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::StreamExt;
use serde_json::{json, Value};

fn slow_tools() -> Vec<Value> {
    vec![tool("work-echo", "Echo the text, slowly.", &["text"])]
}

fn call_body(id: u64, token: Option<&str>) -> String {
    let mut params = json!({"name": "mcp_call", "arguments": {"name": "work-echo", "arguments": {"text": "done"}}});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// Reads an SSE response to the end, returning each event's JSON and when it arrived.
async fn read_events(
    resp: &mut awc::ClientResponse<
        impl futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
    >,
    started: Instant,
) -> Vec<(Value, Duration)> {
    let mut decoder = mcp_wire::sse::Decoder::new();
    let mut out = Vec::new();
    while let Some(chunk) = resp.next().await {
        let chunk = chunk.expect("stream chunk");
        for ev in decoder.feed(&chunk) {
            if let Ok(v) = serde_json::from_str::<Value>(&ev.data) {
                out.push((v, started.elapsed()));
            }
        }
    }
    out
}

#[actix_web::test]
async fn progress_is_relayed_as_it_arrives_then_the_result() {
    let a = upstream(slow_tools(), true, true).await;
    let p = start_proxy(vec![upstream_config("w", &a.url)], catalog_config(None)).await;
    a.control.set_call_delay(Duration::from_millis(1200));
    let started = Instant::now();
    let mut resp = client()
        .post(&p.url)
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .send_body(call_body(7, Some("tok-1")))
        .await
        .unwrap();
    assert_eq!(resp.headers().get("content-type").unwrap(), "text/event-stream");
    let events = read_events(&mut resp, started).await;
    let progress: Vec<&(Value, Duration)> = events
        .iter()
        .filter(|(v, _)| v["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{events:?}");
    assert_eq!(progress[0].0["params"]["progressToken"], "tok-1");
    assert_eq!(progress[2].0["params"]["progress"], 3);
    let (last, last_at) = events.last().unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["content"][0]["text"], "done");
    // Relayed as they arrived, not batched with the result.
    assert!(*last_at >= progress[0].1 + Duration::from_millis(300), "{events:?}");
    p.stop().await;
}

#[actix_web::test]
async fn progress_extends_the_upstream_timeout_up_to_a_cap() {
    let a = upstream(slow_tools(), true, true).await;
    let mut cfg = upstream_config("w", &a.url);
    cfg.timeout = Duration::from_secs(1);
    let p = start_proxy(vec![cfg], catalog_config(None)).await;
    // 2.4 s in all, but a progress notification every 0.6 s keeps the 1 s timeout alive.
    a.control.set_call_delay(Duration::from_millis(2400));
    let (status, _, text) = post_raw(&p.url, call_body(1, Some("t")), &[]).await;
    assert_eq!(status, 200);
    assert!(text.contains("\"text\":\"done\""), "{text}");
    // Without a progress token the same call times out.
    let r = mcp_call(&p.url, "work-echo", json!({"text": "x"})).await;
    assert_eq!(r["isError"], true);
    assert!(r["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("timed out after 1 s"));
    p.stop().await;
}

#[actix_web::test]
async fn a_client_that_goes_away_cancels_the_upstream_call() {
    let a = upstream(slow_tools(), true, true).await;
    let p = start_proxy(vec![upstream_config("w", &a.url)], catalog_config(None)).await;
    a.control.set_call_delay(Duration::from_millis(3000));
    let mut resp = client()
        .post(&p.url)
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .send_body(call_body(9, Some("tok-9")))
        .await
        .unwrap();
    // Wait for the first progress event, then hang up.
    let first = resp.next().await.expect("a first chunk").unwrap();
    assert!(String::from_utf8_lossy(&first).contains("notifications/progress"));
    drop(resp);
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.control.stats().cancelled_notifications == 0 {
        assert!(
            Instant::now() < deadline,
            "the legacy upstream was never told the call was cancelled"
        );
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    p.stop().await;
}

#[actix_web::test]
async fn legacy_sessions_can_be_ended_and_calls_cancelled() {
    let a = upstream(slow_tools(), true, false).await;
    let p = start_proxy(vec![upstream_config("w", &a.url)], catalog_config(None)).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, headers, _) = post_raw(&p.url, init.to_string(), &[]).await;
    assert_eq!(status, 200);
    let sid = headers
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(sid.len(), 32);
    let h = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];

    // notifications/cancelled reaches the call in flight, whether it comes while the call runs
    // or right after it was sent (before the call joins the session table, or even before the
    // proxy reads the call).
    a.control.set_call_delay(Duration::from_millis(3000));
    for (id, wait_ms) in [(42, 400), (43, 0)] {
        let before = a.control.stats().cancelled_notifications;
        let started = Instant::now();
        let (url, sid2) = (p.url.clone(), sid.clone());
        let call = actix_web::rt::spawn(async move {
            let h = [
                ("Mcp-Session-Id", sid2.as_str()),
                ("MCP-Protocol-Version", "2025-11-25"),
            ];
            post_raw(&url, call_body(id, None), &h).await
        });
        actix_web::rt::time::sleep(Duration::from_millis(wait_ms)).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "user"}});
        let (status, _, _) = post_raw(&p.url, cancel.to_string(), &h).await;
        assert_eq!(status, 202);
        let (status, _, text) = call.await.unwrap();
        assert_eq!(status, 200);
        assert!(text.contains("-32800"), "call {id}: {text}");
        assert!(started.elapsed() < Duration::from_millis(2500), "call {id}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while a.control.stats().cancelled_notifications == before {
            assert!(Instant::now() < deadline, "the upstream was never told of cancel {id}");
            actix_web::rt::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // DELETE ends the session; it then gets 404, while requests without a session still work.
    let resp = client()
        .delete(&p.url)
        .insert_header(("Mcp-Session-Id", sid.as_str()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (status, _, _) = post_raw(&p.url, ping, &h).await;
    assert_eq!(status, 404);
    let (status, _, _) = post_raw(&p.url, ping, &[]).await;
    assert_eq!(status, 200);
    p.stop().await;
}

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
}

async fn modern(url: &str, method: &str, mut params: Value, name: Option<&str>) -> (u16, Value) {
    params["_meta"] = modern_meta();
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params}).to_string();
    let mut h = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    if let Some(n) = name {
        h.push(("Mcp-Name", n));
    }
    let (status, _, text) = post_raw(url, body, &h).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[actix_web::test]
async fn the_2026_era_on_the_wire() {
    let a = upstream(vec![tool("mail-send", "Send an email.", &["to"])], true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let (status, d) = modern(&p.url, "server/discover", json!({}), None).await;
    assert_eq!(status, 200, "{d}");
    let r = &d["result"];
    assert_eq!(r["resultType"], "complete");
    assert!(r["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2026-07-28")));
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-search-proxy"
    );
    assert!(r["instructions"].as_str().unwrap().contains("mail-send"));
    assert!(r["ttlMs"].is_u64() && r["cacheScope"] == "public");

    let (_, l) = modern(&p.url, "tools/list", json!({}), None).await;
    assert_eq!(l["result"]["tools"].as_array().unwrap().len(), 4);
    assert_eq!(l["result"]["cacheScope"], "public");
    assert_eq!(l["result"]["resultType"], "complete");

    let (status, c) = modern(
        &p.url,
        "tools/call",
        json!({"name": "mcp_call", "arguments": {"name": "mail-send", "arguments": {"to": "a@b"}}}),
        Some("mcp_call"),
    )
    .await;
    assert_eq!(status, 200, "{c}");
    assert_eq!(c["result"]["resultType"], "complete");
    assert!(c["result"]["content"].is_array());

    // Removed methods are 404/-32601 in a modern request; header mismatches are 400/-32020.
    for m in ["initialize", "ping", "logging/setLevel", "nope/unknown"] {
        let (status, e) = modern(&p.url, m, json!({}), None).await;
        assert_eq!((status, e["error"]["code"].as_i64()), (404, Some(-32601)), "{m}: {e}");
        assert_eq!(e["id"], 5);
    }
    let (status, e) = modern(
        &p.url,
        "tools/call",
        json!({"name": "mcp_search", "arguments": {"query": "x"}}),
        Some("mcp_call"),
    )
    .await;
    assert_eq!((status, e["error"]["code"].as_i64()), (400, Some(-32020)));
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {}}).to_string();
    let (status, _, text) = post_raw(
        &p.url,
        body,
        &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")],
    )
    .await;
    assert_eq!(status, 400);
    assert!(text.contains("-32602"), "{text}");
    let (status, _, text) = post_raw(
        &p.url,
        r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#,
        &[("MCP-Protocol-Version", "2099-01-01")],
    )
    .await;
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], -32022);
    assert_eq!(v["error"]["data"]["requested"], "2099-01-01");
    // A modern client sending a session id: ignored.
    let (status, _) = {
        let mut params = json!({});
        params["_meta"] = modern_meta();
        let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": params}).to_string();
        let (s, _, t) = post_raw(
            &p.url,
            body,
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/list"),
                ("Mcp-Session-Id", "whatever"),
            ],
        )
        .await;
        (s, t)
    };
    assert_eq!(status, 200);
    p.stop().await;
}

#[actix_web::test]
async fn upstream_list_changes_are_followed_and_its_pings_answered() {
    let opts = demo_upstream::UpstreamOptions {
        tools: vec![tool("alpha-one", "One.", &[])],
        stateful: true,
        sse: true,
        list_changed: true,
        ..Default::default()
    };
    let a = demo_upstream::start(opts, "127.0.0.1:0").await.unwrap();
    let p = start_proxy(vec![upstream_config("a", &a.url)], catalog_config(None)).await;
    // The proxy opens the upstream's GET stream and answers the ping it carries.
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.control.stats().get_streams == 0 || a.control.stats().client_responses == 0 {
        assert!(
            Instant::now() < deadline,
            "no GET stream / ping answer: {:?}",
            a.control.stats()
        );
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    // A tool added upstream shows up without mcp_refresh.
    a.control.set_tools(vec![
        tool("alpha-one", "One.", &[]),
        tool("alpha-brand_new", "A brand new capability.", &[]),
    ]);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = call(&p.url, "mcp_describe", json!({"names": ["alpha-brand_new"]})).await;
        if r["structuredContent"]["not_found"] == json!([]) {
            break;
        }
        assert!(Instant::now() < deadline, "the list change was not followed");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    let status = p.catalog_status().await;
    assert_eq!(status.fanouts, 2, "startup + one debounced list-changed refresh");
    p.stop().await;
}

/// A minimal 2026-07-28-only upstream: `server/discover` (advertising `tools.listChanged`),
/// `tools/list`, and a `subscriptions/listen` stream that acknowledges, then announces a
/// change whenever the test bumps the tool list.
mod modern_upstream {
    use std::sync::{Arc, Mutex};

    use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
    use serde_json::{json, Value};
    use tokio::sync::broadcast;

    #[derive(Clone)]
    pub struct State {
        pub tools: Arc<Mutex<Vec<Value>>>,
        pub changes: broadcast::Sender<()>,
        pub listens: Arc<Mutex<u32>>,
    }

    async fn mcp(req: HttpRequest, body: web::Json<Value>, st: web::Data<State>) -> HttpResponse {
        let modern = req.headers().get("mcp-protocol-version").and_then(|v| v.to_str().ok()) == Some("2026-07-28")
            && body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28";
        if !modern {
            return HttpResponse::BadRequest().json(json!({"jsonrpc": "2.0", "id": body["id"],
                "error": {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}}));
        }
        let id = body["id"].clone();
        let meta = json!({"io.modelcontextprotocol/serverInfo": {"name": "modern-fake", "version": "1"}});
        match body["method"].as_str().unwrap_or("") {
            "server/discover" => HttpResponse::Ok().json(json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
                "ttlMs": 0, "cacheScope": "public", "_meta": meta}})),
            "tools/list" => {
                let tools = st.tools.lock().unwrap().clone();
                HttpResponse::Ok().json(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "public", "_meta": meta}}))
            }
            "subscriptions/listen" => {
                *st.listens.lock().unwrap() += 1;
                let rx = st.changes.subscribe();
                let sub = json!({"io.modelcontextprotocol/subscriptionId": id});
                let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": sub}});
                let first = futures_util::stream::once(async move {
                    Ok::<_, actix_web::Error>(web::Bytes::from(format!("data: {ack}\n\n")))
                });
                let sub2 = sub.clone();
                let rest = futures_util::stream::unfold(rx, move |mut rx| {
                    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": sub2}});
                    async move {
                        rx.recv().await.ok()?;
                        Some((Ok(web::Bytes::from(format!("data: {note}\n\n"))), rx))
                    }
                });
                HttpResponse::Ok().content_type("text/event-stream").streaming(futures_util::StreamExt::chain(first, rest))
            }
            _ => HttpResponse::NotFound().json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})),
        }
    }

    pub async fn start(tools: Vec<Value>) -> (String, State, actix_web::dev::ServerHandle) {
        let st = State {
            tools: Arc::new(Mutex::new(tools)),
            changes: broadcast::channel(8).0,
            listens: Arc::new(Mutex::new(0)),
        };
        let data = web::Data::new(st.clone());
        let server = HttpServer::new(move || App::new().app_data(data.clone()).route("/mcp", web::post().to(mcp)))
            .workers(1)
            .disable_signals()
            .bind("127.0.0.1:0")
            .unwrap();
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        (format!("http://{addr}/mcp"), st, handle)
    }
}

#[actix_web::test]
async fn a_modern_upstream_is_followed_through_subscriptions_listen() {
    let (url, st, handle) = modern_upstream::start(vec![tool("m-one", "One.", &[])]).await;
    let p = start_proxy(vec![upstream_config("m", &url)], catalog_config(None)).await;
    let status = p.proxy.upstreams[0]
        .addr
        .send(proxy_actors::upstream::GetStatus)
        .await
        .unwrap();
    assert_eq!(status.era, Some(proxy_actors::upstream::Era::Modern));
    let deadline = Instant::now() + Duration::from_secs(5);
    while *st.listens.lock().unwrap() == 0 {
        assert!(Instant::now() < deadline, "no subscriptions/listen stream was opened");
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    st.tools
        .lock()
        .unwrap()
        .push(tool("m-two", "A second capability.", &[]));
    let _ = st.changes.send(());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = call(&p.url, "mcp_describe", json!({"names": ["m-two"]})).await;
        if r["structuredContent"]["not_found"] == json!([]) {
            break;
        }
        assert!(Instant::now() < deadline, "the modern list change was not followed");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    p.stop().await;
    handle.stop(false).await;
}
