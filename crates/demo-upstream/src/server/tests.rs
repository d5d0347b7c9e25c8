//! Real HTTP round trips against a started server, with a hand-rolled client so the wire format
//! is pinned independently of the proxy's own client code.

use std::time::{Duration, Instant};

use awc::http::StatusCode;
use serde_json::{json, Value};

use super::{start, RunningUpstream, UpstreamOptions};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn test_tools() -> Vec<Value> {
    vec![
        json!({"name": "demo-echo", "description": "Echo text.",
               "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}),
        json!({"name": "echo", "description": "Echo text (bare name).",
               "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
        json!({"name": "demo-add", "description": "Add.",
               "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}),
        json!({"name": "demo-counter", "description": "Count.", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "demo-fail", "description": "Fail.", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "demo-image", "description": "Image.", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "notes-create_note", "description": "Create a note.",
               "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}),
    ]
}

fn options(stateful: bool, sse: bool) -> UpstreamOptions {
    UpstreamOptions {
        tools: test_tools(),
        stateful,
        sse,
        page_size: Some(3),
        instructions: Some("Use demo tools.".to_string()),
        name: "test-upstream".to_string(),
        bearer_token: None,
        list_changed: false,
    }
}

async fn started(opts: UpstreamOptions) -> RunningUpstream {
    start(opts, "127.0.0.1:0").await.unwrap()
}

/// One HTTP answer, with the JSON-RPC message extracted from JSON or SSE.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    session: Option<String>,
    content_type: String,
    raw: String,
    /// The JSON body, or the first SSE event with data; `Null` when there is none.
    message: Value,
}

/// SSE events as (id, data) pairs, data lines joined by newlines.
fn sse_events(raw: &str) -> Vec<(Option<String>, String)> {
    raw.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut id = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id:") {
                    id = Some(value.trim().to_string());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push(value.strip_prefix(' ').unwrap_or(value));
                }
            }
            (id, data.join("\n"))
        })
        .collect()
}

/// A minimal MCP client: remembers the session id and the negotiated version.
struct Peer {
    http: awc::Client,
    url: String,
    session: Option<String>,
    version: Option<String>,
    extra: Vec<(&'static str, String)>,
}

impl Peer {
    fn new(url: &str) -> Self {
        Peer {
            http: awc::Client::default(),
            url: url.to_string(),
            session: None,
            version: None,
            extra: Vec::new(),
        }
    }

    fn with_header(mut self, name: &'static str, value: &str) -> Self {
        self.extra.push((name, value.to_string()));
        self
    }

    async fn send_raw(&self, content_type: &str, accept: &str, body: String) -> Answer {
        let mut request = self
            .http
            .post(&self.url)
            .insert_header(("Content-Type", content_type))
            .insert_header(("Accept", accept));
        if let Some(session) = &self.session {
            request = request.insert_header(("Mcp-Session-Id", session.as_str()));
        }
        if let Some(version) = &self.version {
            request = request.insert_header(("MCP-Protocol-Version", version.as_str()));
        }
        for (name, value) in &self.extra {
            request = request.insert_header((*name, value.as_str()));
        }
        let mut response = request.send_body(body).await.unwrap();
        answer(&mut response).await
    }

    async fn send(&self, message: Value) -> Answer {
        self.send_raw("application/json", ACCEPT_BOTH, message.to_string())
            .await
    }

    async fn request(&self, id: i64, method: &str, params: Value) -> Answer {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
    }

    async fn call(&self, id: i64, tool: &str, arguments: Value) -> Answer {
        self.request(id, "tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// `initialize` + `notifications/initialized`, keeping what the server handed out.
    async fn initialize(&mut self) -> Answer {
        let init = self
            .request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "demo-tests", "version": "0"}}),
            )
            .await;
        assert_eq!(init.status, StatusCode::OK, "{init:?}");
        self.session = init.session.clone();
        self.version = init.message["result"]["protocolVersion"].as_str().map(str::to_string);
        let ack = self
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        assert!(ack.raw.is_empty());
        init
    }
}

async fn answer<S>(response: &mut awc::ClientResponse<S>) -> Answer
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_string());
    let session = header("mcp-session-id");
    let content_type = header("content-type").unwrap_or_default();
    let status = response.status();
    let raw = response.body().limit(8 << 20).await.unwrap();
    let raw = String::from_utf8(raw.to_vec()).unwrap();
    let message = if content_type.starts_with("text/event-stream") {
        sse_events(&raw)
            .into_iter()
            .find(|(_, data)| !data.is_empty())
            .map(|(_, data)| serde_json::from_str(&data).unwrap())
            .unwrap_or(Value::Null)
    } else if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&raw).unwrap()
    };
    Answer {
        status,
        session,
        content_type,
        raw,
        message,
    }
}

fn text_of(answer: &Answer) -> &str {
    answer.message["result"]["content"][0]["text"].as_str().unwrap()
}

#[actix_web::test]
async fn stateful_lifecycle_paging_counter_and_expiry() {
    let upstream = started(options(true, false)).await;
    let mut peer = Peer::new(&upstream.url);
    let init = peer.initialize().await;

    assert!(init.content_type.starts_with("application/json"));
    let session = init.session.clone().expect("a session id");
    assert_eq!(session.len(), 32);
    assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let result = &init.message["result"];
    assert_eq!(init.message["id"], 0);
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["capabilities"], json!({"tools": {"listChanged": false}}));
    assert_eq!(result["serverInfo"]["name"], "test-upstream");
    assert_eq!(result["instructions"], "Use demo tools.");

    // tools/list in pages of 3 with opaque cursors.
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = peer.request(10 + pages, "tools/list", params).await;
        pages += 1;
        let result = &page.message["result"];
        for tool in result["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_string());
        }
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = test_tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, expected);
    let bad = peer.request(19, "tools/list", json!({"cursor": "not-a-cursor"})).await;
    assert_eq!(bad.message["error"]["code"], -32602);

    // The counter lives in the session.
    let first = peer.call(20, "demo-counter", json!({})).await;
    assert_eq!(text_of(&first), "1");
    assert_eq!(first.message["result"]["structuredContent"]["count"], 1);
    let second = peer.call(21, "demo-counter", json!({})).await;
    assert_eq!(text_of(&second), "2");

    let mut other = Peer::new(&upstream.url);
    other.initialize().await;
    assert_ne!(other.session, peer.session);
    assert_eq!(text_of(&other.call(1, "demo-counter", json!({})).await), "1");

    let stats = upstream.control.stats();
    assert_eq!(stats.initialize, 2);
    assert_eq!(stats.initialized_notifications, 2);
    assert_eq!(stats.tools_list, 3); // the bad cursor was not answered with a page
    assert_eq!(stats.tools_call, 3);
    assert_eq!(stats.sessions_minted, 2);
    assert_eq!(stats.live_sessions, 2);
    assert_eq!(stats.last_call, Some(("demo-counter".to_string(), json!({}))));
    assert_eq!(stats.last_header("Mcp-Session-Id"), other.session.as_deref());
    assert_eq!(stats.last_header("mcp-protocol-version"), Some("2025-11-25"));

    // Expiry: the old id gets 404 without a JSON-RPC id; re-initialising must drop it.
    upstream.control.expire_sessions();
    let gone = peer.call(22, "demo-counter", json!({})).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.message["error"]["message"], "Session not found");
    assert!(gone.message.get("id").is_none());
    let reinit_with_old_id = peer
        .request(23, "initialize", json!({"protocolVersion": "2025-11-25"}))
        .await;
    assert_eq!(reinit_with_old_id.status, StatusCode::NOT_FOUND);
    assert_eq!(upstream.control.stats().session_not_found, 2);

    peer.session = None;
    let missing = peer.request(24, "ping", json!({})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert!(missing.message.get("id").is_none());

    peer.initialize().await;
    assert_ne!(peer.session.as_deref(), Some(session.as_str()));
    assert_eq!(text_of(&peer.call(25, "demo-counter", json!({})).await), "1");

    upstream.stop().await;
}

#[actix_web::test]
async fn stateless_mode_mints_no_session_and_counts_per_process() {
    let upstream = started(options(false, false)).await;
    let mut peer = Peer::new(&upstream.url);
    let init = peer.initialize().await;
    assert!(init.session.is_none());
    assert!(peer.session.is_none());

    assert_eq!(text_of(&peer.call(1, "demo-counter", json!({})).await), "1");
    // Another client without initialize, and a made-up session id: both ignored.
    let stranger = Peer::new(&upstream.url).with_header("Mcp-Session-Id", "made-up");
    let answer = stranger.call(2, "demo-counter", json!({})).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.session.is_none());
    assert_eq!(text_of(&answer), "2");

    let http = awc::Client::default();
    let delete = http.delete(&upstream.url).send().await.unwrap();
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED);
    let get = http
        .get(&upstream.url)
        .insert_header(("Accept", "text/event-stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(upstream.control.stats().sessions_minted, 0);
    upstream.stop().await;
}

#[actix_web::test]
async fn a_closed_list_gate_holds_listings_until_it_opens() {
    for sse in [false, true] {
        let upstream = started(options(false, sse)).await;
        upstream.control.close_list_gate();
        let url = upstream.url.clone();
        let listing = actix_web::rt::spawn(async move { Peer::new(&url).request(1, "tools/list", json!({})).await });
        // The request arrives (and is counted), its answer is held.
        let deadline = Instant::now() + Duration::from_secs(10);
        while upstream.control.stats().tools_list == 0 {
            assert!(Instant::now() < deadline, "the listing never arrived");
            actix_web::rt::time::sleep(Duration::from_millis(10)).await;
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
        assert!(!listing.is_finished(), "sse {sse}: answered through a closed gate");
        upstream.control.open_list_gate();
        let answer = listing.await.unwrap();
        assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
        assert_eq!(answer.message["result"]["tools"].as_array().unwrap().len(), 3);
        // Open, it holds nothing.
        let again = Peer::new(&upstream.url).request(2, "tools/list", json!({})).await;
        assert_eq!(again.message["result"]["tools"].as_array().unwrap().len(), 3);
        upstream.stop().await;
    }
}

#[actix_web::test]
async fn sse_mode_sends_a_priming_event_then_the_response() {
    let upstream = started(options(true, true)).await;
    let mut peer = Peer::new(&upstream.url);
    let init = peer.initialize().await;
    assert!(init.content_type.starts_with("text/event-stream"));
    assert!(init.session.is_some());

    let events = sse_events(&init.raw);
    assert_eq!(events.len(), 2, "{}", init.raw);
    let (priming_id, priming_data) = &events[0];
    assert!(priming_id.is_some());
    assert!(priming_data.is_empty());
    let (response_id, data) = &events[1];
    assert!(response_id.is_some() && response_id != priming_id);
    let response: Value = serde_json::from_str(data).unwrap();
    assert_eq!(response["id"], 0);
    assert_eq!(response["result"]["protocolVersion"], "2025-11-25");

    // JSON-RPC errors of valid requests travel in the stream too, with HTTP 200.
    let unknown = peer.request(1, "resources/list", json!({})).await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert!(unknown.content_type.starts_with("text/event-stream"));
    assert_eq!(unknown.message["error"]["code"], -32601);
    assert_eq!(unknown.message["id"], 1);

    // A slow tool: the answer comes after the configured delay.
    upstream.control.set_call_delay(Duration::from_millis(300));
    let started_at = Instant::now();
    let echoed = peer.call(2, "demo-echo", json!({"text": "slow"})).await;
    assert!(started_at.elapsed() >= Duration::from_millis(300));
    assert_eq!(text_of(&echoed), "slow");
    upstream.stop().await;
}

#[actix_web::test]
async fn version_negotiation_and_header_validation() {
    let upstream = started(options(false, false)).await;
    let peer = Peer::new(&upstream.url);
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let init = peer
            .request(1, "initialize", json!({"protocolVersion": asked, "capabilities": {}}))
            .await;
        assert_eq!(init.message["result"]["protocolVersion"], answered, "{asked}");
    }
    let no_version = peer.request(2, "initialize", json!({})).await;
    assert_eq!(no_version.message["error"]["code"], -32602);

    let bad = Peer::new(&upstream.url).with_header("MCP-Protocol-Version", "1999-01-01");
    let answer = bad.request(3, "ping", json!({})).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let good = Peer::new(&upstream.url).with_header("MCP-Protocol-Version", "2025-06-18");
    assert_eq!(good.request(4, "ping", json!({})).await.message["result"], json!({}));
    // No header at all: assumed 2025-03-26, accepted.
    assert_eq!(peer.request(5, "ping", json!({})).await.status, StatusCode::OK);
    upstream.stop().await;
}

#[actix_web::test]
async fn malformed_and_refused_requests() {
    let upstream = started(options(false, false)).await;
    let peer = Peer::new(&upstream.url);

    let garbage = peer
        .send_raw("application/json", ACCEPT_BOTH, "{not json".to_string())
        .await;
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
    assert_eq!(garbage.message["error"]["code"], -32700);
    assert!(garbage.message.get("id").is_none());

    let batch = peer.send(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])).await;
    assert_eq!(batch.status, StatusCode::BAD_REQUEST);
    assert_eq!(batch.message["error"]["code"], -32600);

    let wrong_version = peer.send(json!({"jsonrpc": "1.0", "id": 7, "method": "ping"})).await;
    assert_eq!(wrong_version.status, StatusCode::BAD_REQUEST);
    assert_eq!(wrong_version.message["id"], 7);

    let null_id = peer.send(json!({"jsonrpc": "2.0", "id": null, "method": "ping"})).await;
    assert_eq!(null_id.status, StatusCode::BAD_REQUEST);
    assert!(null_id.message.get("id").is_none());

    let unknown_method = peer.request(2, "prompts/list", json!({})).await;
    assert_eq!(unknown_method.status, StatusCode::OK);
    assert_eq!(unknown_method.message["error"]["code"], -32601);
    assert_eq!(unknown_method.message["id"], 2);

    let unknown_tool = peer.call(3, "nope", json!({})).await;
    assert_eq!(unknown_tool.message["error"]["code"], -32602);
    assert_eq!(unknown_tool.message["error"]["message"], "Unknown tool: nope");
    assert_eq!(unknown_tool.message["id"], 3);

    let bad_arguments = peer.call(4, "demo-echo", json!("text")).await;
    assert_eq!(bad_arguments.message["error"]["code"], -32602);

    let json_only = peer
        .send_raw(
            "application/json",
            "application/json",
            json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}).to_string(),
        )
        .await;
    assert_eq!(json_only.status, StatusCode::NOT_ACCEPTABLE);
    let wildcard = peer
        .send_raw(
            "application/json",
            "*/*",
            json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}).to_string(),
        )
        .await;
    assert_eq!(wildcard.status, StatusCode::OK);

    let form = peer
        .send_raw(
            "text/plain",
            ACCEPT_BOTH,
            json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}).to_string(),
        )
        .await;
    assert_eq!(form.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let evil = Peer::new(&upstream.url).with_header("Origin", "http://evil.example.com");
    assert_eq!(evil.request(8, "ping", json!({})).await.status, StatusCode::FORBIDDEN);
    let local = Peer::new(&upstream.url).with_header("Origin", "http://localhost:6274");
    assert_eq!(local.request(9, "ping", json!({})).await.status, StatusCode::OK);

    // A client's answer to a server request (never sent here) is acknowledged.
    let response = peer.send(json!({"jsonrpc": "2.0", "id": 99, "result": {}})).await;
    assert_eq!(response.status, StatusCode::ACCEPTED);
    upstream.stop().await;
}

#[actix_web::test]
async fn tool_implementations() {
    let upstream = started(options(false, false)).await;
    let peer = Peer::new(&upstream.url);

    let echoed = peer.call(1, "demo-echo", json!({"text": "héllo"})).await;
    assert_eq!(text_of(&echoed), "héllo");
    assert_eq!(echoed.message["result"]["structuredContent"], json!({"text": "héllo"}));
    assert_eq!(text_of(&peer.call(2, "echo", json!({"text": "bare"})).await), "bare");

    let sum = peer.call(3, "demo-add", json!({"a": 2, "b": 40})).await;
    assert_eq!(text_of(&sum), "42");
    assert_eq!(sum.message["result"]["structuredContent"], json!({"result": 42}));

    let failed = peer.call(4, "demo-fail", json!({})).await;
    assert_eq!(failed.status, StatusCode::OK);
    assert_eq!(failed.message["result"]["isError"], true);
    assert!(!text_of(&failed).is_empty());

    let image = peer.call(5, "demo-image", json!({})).await;
    let block = &image.message["result"]["content"][0];
    assert_eq!(block["type"], "image");
    assert_eq!(block["mimeType"], "image/png");

    let note = peer.call(6, "notes-create_note", json!({"title": "Groceries"})).await;
    assert_eq!(note.message["result"]["isError"], false);
    assert!(text_of(&note).contains("Groceries"));

    let incomplete = peer.call(7, "notes-create_note", json!({})).await;
    assert_eq!(incomplete.message["result"]["isError"], true);

    // Tools can be swapped while running.
    upstream
        .control
        .set_tools(vec![json!({"name": "only-echo", "inputSchema": {"type": "object"}})]);
    let listed = peer.request(8, "tools/list", json!({})).await;
    assert_eq!(listed.message["result"]["tools"].as_array().unwrap().len(), 1);
    assert_eq!(text_of(&peer.call(9, "only-echo", json!({"text": "x"})).await), "x");
    assert_eq!(
        peer.call(10, "demo-echo", json!({"text": "x"})).await.message["error"]["code"],
        -32602
    );
    upstream.stop().await;
}

#[actix_web::test]
async fn bearer_token_outage_and_delete() {
    let mut opts = options(true, false);
    opts.bearer_token = Some("s3cret".to_string());
    let upstream = started(opts).await;

    let anonymous = Peer::new(&upstream.url);
    let refused = anonymous.request(1, "ping", json!({})).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let wrong = Peer::new(&upstream.url).with_header("Authorization", "Bearer nope");
    assert_eq!(
        wrong.request(1, "ping", json!({})).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(upstream.control.stats().unauthorized, 2);
    let lowercase_scheme = Peer::new(&upstream.url).with_header("Authorization", "bearer s3cret");
    // Past the token check, refused only for lacking a session.
    assert_eq!(
        lowercase_scheme.request(1, "ping", json!({})).await.status,
        StatusCode::BAD_REQUEST
    );

    let mut peer = Peer::new(&upstream.url).with_header("Authorization", "Bearer s3cret");
    peer.initialize().await;
    peer.call(2, "demo-echo", json!({"text": "hi"})).await;
    assert_eq!(
        upstream.control.stats().last_header("authorization"),
        Some("Bearer s3cret")
    );

    upstream.control.set_down(true);
    assert_eq!(
        peer.request(3, "ping", json!({})).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    upstream.control.set_down(false);
    assert_eq!(peer.request(4, "ping", json!({})).await.status, StatusCode::OK);

    let http = awc::Client::default();
    let delete = http
        .delete(&upstream.url)
        .insert_header(("Authorization", "Bearer s3cret"))
        .insert_header(("Mcp-Session-Id", peer.session.clone().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), StatusCode::OK);
    assert_eq!(peer.request(5, "ping", json!({})).await.status, StatusCode::NOT_FOUND);
    let stats = upstream.control.stats();
    assert_eq!((stats.sessions_deleted, stats.live_sessions), (1, 0));
    upstream.stop().await;
}

#[actix_web::test]
async fn demo_options_serve_the_whole_catalog() {
    let upstream = started(UpstreamOptions::demo()).await;
    let mut peer = Peer::new(&upstream.url);
    let init = peer.initialize().await;
    assert!(init.content_type.starts_with("text/event-stream"));
    assert!(init.message["result"]["instructions"].is_string());

    let mut count = 0;
    let mut cursor = Value::Null;
    for id in 1.. {
        let page = peer.request(id, "tools/list", json!({"cursor": cursor})).await;
        count += page.message["result"]["tools"].as_array().unwrap().len();
        cursor = page.message["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(count, crate::demo_tools().len());
    assert_eq!(text_of(&peer.call(100, "demo-counter", json!({})).await), "1");
    assert_eq!(text_of(&peer.call(101, "demo-counter", json!({})).await), "2");
    let weather = peer
        .call(102, "atlascope-get_current_weather", json!({"location": "Lyon"}))
        .await;
    assert_eq!(weather.message["result"]["isError"], false);
    assert!(weather.message["result"]["structuredContent"]["temperature"].is_number());

    let url = upstream.url.clone();
    upstream.stop().await;
    let after = awc::Client::default()
        .post(&url)
        .insert_header(("Accept", ACCEPT_BOTH))
        .send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert!(after.is_err(), "server still answering after stop");
}
