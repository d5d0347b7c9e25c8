//! Tools that ask their caller something (elicitation, sampling, roots), in front of a real
//! proxy, with scripted upstreams (`fake_upstream`) so the timing of each question and what
//! reaches the upstream are the test's to see: a 2025-era client is asked on its call's stream
//! and its POSTed answer reaches the upstream under the upstream's id; a response on another
//! session reaches nothing; a question times out, or is dropped when the client ends its
//! session or leaves, and the upstream is told; a 2026-07-28 client gets an upstream's
//! `input_required` round with the proxy's sealed `requestState`, which resumes the round and
//! refuses tampering, other calls and other upstreams. The SDK peers (`tests/real_peers.rs`)
//! cover the four era pairs end to end.

mod common;
mod fake_upstream;

use std::time::{Duration, Instant};

use common::*;
use fake_upstream::*;
use futures_util::StreamExt;
use mcp_search_proxy::config::Asking;
use mcp_search_proxy::http::HttpSettings;
use mcp_search_proxy::server::ServerLimits;
use serde_json::{json, Value};

/// A proxy in front of `upstreams`, with this question timeout.
async fn proxy(upstreams: Vec<mcp_search_proxy::config::UpstreamConfig>, question_timeout: Duration) -> TestProxy {
    let settings = HttpSettings {
        asking: Asking {
            timeout: question_timeout,
            max_pending: 2,
            state_secret: None,
        },
        sse_keepalive: Duration::from_millis(300),
        ..settings()
    };
    start_proxy_with(upstreams, catalog_config(None), settings, ServerLimits::default()).await
}

/// `initialize` declaring `capabilities`; the minted session id.
async fn session(url: &str, capabilities: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "asking-test", "version": "0"}}});
    let (status, headers, text) = post_raw(url, body.to_string(), &[]).await;
    assert_eq!(status, 200, "{text}");
    headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_string()
}

/// A call's SSE stream, read message by message.
struct Stream {
    resp: awc::ClientResponse,
    buf: String,
}

impl Stream {
    /// The next JSON-RPC message on the stream (`None`: the stream ended or 10 s passed).
    async fn next(&mut self) -> Option<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let event: String = self.buf.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data).expect("an event is JSON"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match actix_web::rt::time::timeout(left, self.resp.next()).await {
                Ok(Some(Ok(bytes))) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }
}

/// `mcp_call` of `tool` on `session`, answered as a stream.
async fn open_call(url: &str, session: &str, tool: &str) -> Stream {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "mcp_call", "arguments": {"name": tool, "arguments": {}}}});
    let resp = awc::Client::builder()
        .timeout(Duration::from_secs(60))
        .finish()
        .post(url)
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("Mcp-Session-Id", session))
        .send_body(body.to_string())
        .await
        .expect("call sent");
    assert_eq!(resp.status(), 200);
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        ct.starts_with("text/event-stream"),
        "a call that can be asked is streamed: {ct}"
    );
    Stream {
        resp,
        buf: String::new(),
    }
}

/// POSTs a client's response on `session`; the HTTP status.
async fn respond(url: &str, session: &str, response: Value) -> u16 {
    post_raw(url, response.to_string(), &[("Mcp-Session-Id", session)])
        .await
        .0
}

/// A 2025-era upstream tool `a-ask` that sends `elicitation/create` (upstream id `up-1`) on its
/// call's stream and answers the call `after` later.
async fn asking_upstream(after: Duration) -> Fake {
    let tools = vec![t("a-ask")];
    fake(move |req, _| match req.rpc().as_str() {
        "tools/call" => {
            let ask = json!({"jsonrpc": "2.0", "id": "up-1", "method": "elicitation/create",
                "params": {"message": "Proceed?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}});
            vec![
                Part::Send(sse_head_chunked()),
                Part::Send(chunk(event(&ask).as_bytes())),
                Part::Sleep(after),
                Part::Send(chunk(
                    event(&result_of(req, json!({"content": [{"type": "text", "text": "done"}]}))).as_bytes(),
                )),
                Part::Send(chunk(b"")),
            ]
        }
        _ => legacy(req, &tools),
    })
    .await
}

/// The upstream's received responses to its request `up-1`.
fn answers_to_up1(a: &Fake) -> Vec<Value> {
    a.seen
        .borrow()
        .iter()
        .filter(|s| s.verb == "POST" && s.body.get("method").is_none() && s.body["id"] == "up-1")
        .map(|s| s.body.clone())
        .collect()
}

/// Waits up to 5 s for the upstream to have received a response to `up-1`.
async fn answer_to_up1(a: &Fake) -> Value {
    for _ in 0..250 {
        if let Some(v) = answers_to_up1(a).pop() {
            return v;
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the upstream got no response to up-1: {:?}", a.seen.borrow());
}

#[actix_web::test]
async fn a_question_is_asked_on_the_clients_stream_and_its_answer_reaches_the_upstream() {
    let a = asking_upstream(Duration::from_millis(1500)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let other = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    let question = stream.next().await.expect("the question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "Proceed?");
    let id = question["id"].clone();
    assert!(id.is_string() && id != "up-1", "a proxy-owned id: {question}");
    // the same id on another session, and an unknown id on this one, reach nothing
    let answer =
        |id: Value| json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"ok": true}}});
    assert_eq!(respond(&p.url, &other, answer(id.clone())).await, 202);
    assert_eq!(respond(&p.url, &mine, answer(json!("mcp-search-proxy-0"))).await, 202);
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    assert!(answers_to_up1(&a).is_empty(), "{:?}", answers_to_up1(&a));
    assert_eq!(respond(&p.url, &mine, answer(id)).await, 202);
    let up = answer_to_up1(&a).await;
    assert_eq!(
        up["result"],
        json!({"action": "accept", "content": {"ok": true}}),
        "{up}"
    );
    let result = stream.next().await.expect("the result");
    assert_eq!(result["id"], 9);
    assert_eq!(result["result"]["content"][0]["text"], "done", "{result}");
    assert!(stream.next().await.is_none(), "the stream ends with the result");
    let metrics = scrape(&p.base).await;
    assert!(
        metrics.contains(
            r#"mcp_proxy_upstream_requests_total{upstream="a",method="elicitation/create",outcome="answered"} 1"#
        ),
        "{metrics}"
    );
    p.stop().await;
}

#[actix_web::test]
async fn a_client_error_reaches_the_upstream_as_the_client_worded_it() {
    let a = asking_upstream(Duration::from_millis(1000)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    let id = stream.next().await.expect("the question")["id"].clone();
    let refusal = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": "no user here"}});
    assert_eq!(respond(&p.url, &mine, refusal).await, 202);
    let up = answer_to_up1(&a).await;
    assert_eq!(up["error"], json!({"code": -1, "message": "no user here"}), "{up}");
    assert_eq!(
        stream.next().await.expect("the result")["result"]["content"][0]["text"],
        "done"
    );
    assert!(scrape(&p.base)
        .await
        .contains(r#"method="elicitation/create",outcome="refused"} 1"#));
    p.stop().await;
}

#[actix_web::test]
async fn an_unanswered_question_times_out_and_both_sides_are_told() {
    let a = asking_upstream(Duration::from_millis(2500)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(1)).await;
    let mine = session(&p.url, json!({"elicitation": {"form": {}}})).await;
    let started = Instant::now();
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    let id = stream.next().await.expect("the question")["id"].clone();
    // the client is told the question is withdrawn, the upstream that it timed out
    let note = stream.next().await.expect("a cancellation");
    assert_eq!(note["method"], "notifications/cancelled", "{note}");
    assert_eq!(note["params"]["requestId"], id);
    let up = answer_to_up1(&a).await;
    assert_eq!(up["error"]["code"], -32001, "{up}");
    assert!(up["error"]["message"].as_str().unwrap().contains("within 1 s"), "{up}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // a late answer reaches nothing, and the call ends as the upstream decides
    let late = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept"}});
    assert_eq!(respond(&p.url, &mine, late).await, 202);
    assert_eq!(
        stream.next().await.expect("the result")["result"]["content"][0]["text"],
        "done"
    );
    assert_eq!(answers_to_up1(&a).len(), 1, "answered once");
    assert!(scrape(&p.base)
        .await
        .contains(r#"method="elicitation/create",outcome="timed_out"} 1"#));
    p.stop().await;
}

#[actix_web::test]
async fn a_question_outlived_by_its_call_is_withdrawn_from_the_client() {
    let a = asking_upstream(Duration::from_millis(300)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    let id = stream.next().await.expect("the question")["id"].clone();
    // the upstream answers its call without waiting: the client is told the question is moot
    let note = stream.next().await.expect("a withdrawal");
    assert_eq!(note["method"], "notifications/cancelled", "{note}");
    assert_eq!(note["params"]["requestId"], id);
    assert!(
        note["params"]["reason"].as_str().unwrap().contains("call ended"),
        "{note}"
    );
    assert_eq!(
        stream.next().await.expect("the result")["result"]["content"][0]["text"],
        "done"
    );
    p.stop().await;
}

#[actix_web::test]
async fn ending_the_session_cancels_its_calls_and_drops_their_questions() {
    let a = asking_upstream(Duration::from_millis(1500)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    stream.next().await.expect("the question");
    let ended = client()
        .delete(&p.url)
        .insert_header(("Mcp-Session-Id", mine.as_str()))
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    // the session's call is cancelled upstream (as any call of an ended session), its question
    // dropped
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.count("notifications/cancelled") == 0 {
        assert!(Instant::now() < deadline, "the upstream was not told");
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    // a response on the ended session is refused as the spec says (404)
    let late = json!({"jsonrpc": "2.0", "id": "mcp-search-proxy-x-1", "result": {"action": "accept"}});
    assert_eq!(respond(&p.url, &mine, late).await, 404);
    assert!(scrape(&p.base)
        .await
        .contains(r#"method="elicitation/create",outcome="abandoned"} 1"#));
    p.stop().await;
}

#[actix_web::test]
async fn a_client_that_leaves_while_asked_cancels_the_call_upstream() {
    // (the stream's keep-alive comments are how the proxy notices, well before the call ends)
    let a = asking_upstream(Duration::from_secs(5)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    stream.next().await.expect("the question");
    drop(stream);
    for _ in 0..250 {
        if a.count("notifications/cancelled") > 0 {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(a.count("notifications/cancelled"), 1, "{:?}", a.seen.borrow());
    p.stop().await;
}

#[actix_web::test]
async fn a_client_may_cancel_a_call_that_asks_it_something() {
    let a = asking_upstream(Duration::from_secs(5)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "a-ask").await;
    let id = stream.next().await.expect("the question")["id"].clone();
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "user"}});
    assert_eq!(respond(&p.url, &mine, cancel).await, 202);
    // the question is withdrawn, the call ends as cancelled, and the upstream is told
    let note = stream.next().await.expect("a withdrawal");
    assert_eq!(
        (note["method"].as_str(), &note["params"]["requestId"]),
        (Some("notifications/cancelled"), &id)
    );
    let end = stream.next().await.expect("the end");
    assert_eq!(end["error"]["code"], -32800, "{end}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.count("notifications/cancelled") == 0 {
        assert!(Instant::now() < deadline, "the upstream was not told");
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    p.stop().await;
}

#[actix_web::test]
async fn a_session_that_declared_nothing_is_not_asked_and_not_streamed() {
    let a = asking_upstream(Duration::from_millis(300)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let plain = session(&p.url, json!({})).await;
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp_call", "arguments": {"name": "a-ask", "arguments": {}}}});
    let (status, headers, text) = post_raw(&p.url, body.to_string(), &[("Mcp-Session-Id", plain.as_str())]).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("content-type").unwrap(), "application/json", "{text}");
    let up = answer_to_up1(&a).await;
    assert_eq!(up["error"]["code"], -32021, "{up}");
    assert!(text.contains("done"), "{text}");
    p.stop().await;
}

#[actix_web::test]
async fn a_question_outside_any_call_gets_a_clean_error() {
    // `roots/list` on the shared session's standalone stream: no single client owns it
    let a = fake(|req, _| match req.rpc().as_str() {
        "initialize" => json_reply(&result_of(req, init_result(true))),
        "GET" => {
            let ask = json!({"jsonrpc": "2.0", "id": "up-1", "method": "roots/list"});
            vec![
                Part::Send(sse_head_chunked()),
                Part::Send(chunk(event(&ask).as_bytes())),
                Part::Hang,
            ]
        }
        _ => legacy(req, &[t("a-plain")]),
    })
    .await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let up = answer_to_up1(&a).await;
    assert_eq!(up["error"]["code"], -32601, "{up}");
    assert!(
        up["error"]["message"].as_str().unwrap().contains("outside a tool call"),
        "{up}"
    );
    assert!(scrape(&p.base)
        .await
        .contains(r#"method="roots/list",outcome="declined"} 1"#));
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28: input_required rounds passed through with a sealed requestState
// ---------------------------------------------------------------------------------------------

/// A 2026-07-28 upstream with the tool `m-deploy {env}`: `input_required` (state `up-state`)
/// until a retry carries that state and an answer to `confirm`, then `deployed <action>`.
async fn modern_upstream() -> Fake {
    let tools = vec![t("m-deploy")];
    fake(move |req, _| {
        let result = |v: Value| json_reply(&result_of(req, v));
        match req.rpc().as_str() {
            "server/discover" => result(
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "modern-fake", "version": "0"}, "resultType": "complete"}),
            ),
            "tools/list" => result(json!({"tools": tools, "resultType": "complete"})),
            "tools/call" => {
                let p = &req.body["params"];
                match (
                    p["requestState"].as_str(),
                    p["inputResponses"]["confirm"]["action"].as_str(),
                ) {
                    (Some("up-state"), Some(action)) => result(json!({"resultType": "complete",
                        "content": [{"type": "text", "text": format!("deployed {action}")}]})),
                    _ => result(json!({"resultType": "input_required", "requestState": "up-state",
                        "inputRequests": {"confirm": {"method": "elicitation/create",
                            "params": {"message": "Deploy?", "requestedSchema": {"type": "object"}}}}})),
                }
            }
            _ => vec![Part::Send(http(202, "", &[], b""))],
        }
    })
    .await
}

/// A 2026-07-28 `tools/call` of `mcp_call` (`m-deploy` with `args`), declaring elicitation,
/// with `extra` params (a retry's); the JSON-RPC result.
async fn modern_call(url: &str, args: Value, extra: Value) -> Value {
    modern_call_of(url, "m-deploy", args, extra).await
}

/// [`modern_call`] of another upstream tool.
async fn modern_call_of(url: &str, tool: &str, args: Value, extra: Value) -> Value {
    modern_call_as(url, None, tool, args, extra).await
}

/// [`modern_call_of`] with a client token.
async fn modern_call_as(url: &str, token: Option<&str>, tool: &str, args: Value, extra: Value) -> Value {
    let mut params = json!({"name": "mcp_call", "arguments": {"name": tool, "arguments": args},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                  "io.modelcontextprotocol/logLevel": "info"}});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params});
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "mcp_call"),
    ];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    let (status, _, text) = post_raw(url, body.to_string(), &headers).await;
    assert_eq!(status, 200, "{text}");
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .next_back()
        .map(str::to_string)
        .unwrap_or(text.clone());
    let v: Value = serde_json::from_str(&data).unwrap_or_else(|_| panic!("not JSON: {text}"));
    v["result"].clone()
}

#[actix_web::test]
async fn a_modern_round_is_passed_through_sealed_and_its_retry_resumes_it() {
    let a = modern_upstream().await;
    let p = proxy(vec![cfg("m", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let args = json!({"env": "prod"});
    let round = modern_call(&p.url, args.clone(), json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert_eq!(
        round["inputRequests"],
        json!({"confirm": {"method": "elicitation/create", "params": {"message": "Deploy?", "requestedSchema": {"type": "object"}}}}),
        "the questions pass unchanged"
    );
    let state = round["requestState"].as_str().expect("a requestState").to_string();
    assert_ne!(state, "up-state", "the proxy's own state");
    // the upstream was told what the client can be asked and its log level
    let first = a
        .seen
        .borrow()
        .iter()
        .find(|s| s.rpc() == "tools/call")
        .cloned()
        .unwrap();
    let meta = &first.body["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
    assert_eq!(meta["io.modelcontextprotocol/logLevel"], "info");

    let answers = json!({"confirm": {"action": "accept", "content": {}}});
    let retry = |state: &str| json!({"inputResponses": answers.clone(), "requestState": state});
    // tampering, another call's arguments, and a state without its tag are refused, unsent
    let sent = a.count("tools/call");
    let mut tampered = state.clone().into_bytes();
    tampered[5] ^= 1;
    let tampered = String::from_utf8(tampered).unwrap();
    for (r, word) in [
        (
            modern_call(&p.url, args.clone(), retry(&tampered)).await,
            "not issued by this proxy",
        ),
        (
            modern_call(&p.url, json!({"env": "dev"}), retry(&state)).await,
            "belongs to another call",
        ),
        (
            modern_call(&p.url, args.clone(), retry("up-state")).await,
            "not issued by this proxy",
        ),
    ] {
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"]["error"]["side"], "client", "{r}");
        assert!(error_message(&r).contains(word), "{word}: {r}");
    }
    assert_eq!(a.count("tools/call"), sent, "a refused retry is not sent upstream");
    // the real retry continues the upstream's round (any instance with the key could)
    let done = modern_call(&p.url, args.clone(), retry(&state)).await;
    assert_eq!(done["content"][0]["text"], "deployed accept", "{done}");
    assert_eq!(done["resultType"], "complete");
    let last = a
        .seen
        .borrow()
        .iter()
        .rev()
        .find(|s| s.rpc() == "tools/call")
        .cloned()
        .unwrap();
    assert_eq!(last.body["params"]["requestState"], "up-state");
    assert_eq!(last.body["params"]["inputResponses"], answers);
    let metrics = scrape(&p.base).await;
    assert!(
        metrics.contains(r#"method="elicitation/create",outcome="passed"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"outcome="input_required"} 1"#), "{metrics}");
    p.stop().await;
}

#[actix_web::test]
async fn a_legacy_client_answers_a_modern_round_on_its_stream() {
    let a = modern_upstream().await;
    let p = proxy(vec![cfg("m", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let mine = session(&p.url, json!({"elicitation": {}})).await;
    let mut stream = open_call(&p.url, &mine, "m-deploy").await;
    let question = stream.next().await.expect("the question");
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "Deploy?");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    assert_eq!(respond(&p.url, &mine, answer).await, 202);
    let result = stream.next().await.expect("the result");
    assert_eq!(result["result"]["content"][0]["text"], "deployed accept", "{result}");
    assert!(result["result"].get("resultType").is_none(), "a 2025 result: {result}");
    p.stop().await;
}

#[actix_web::test]
async fn a_modern_client_answers_a_legacy_upstreams_question_in_a_round_on_a_held_call() {
    let a = asking_upstream(Duration::from_millis(1500)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    let round = modern_call_of(&p.url, "a-ask", json!({}), json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    let (key, request) = round["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Proceed?");
    let retry = json!({"inputResponses": {key.clone(): {"action": "accept", "content": {"ok": true}}},
        "requestState": round["requestState"]});
    let done = modern_call_of(&p.url, "a-ask", json!({}), retry.clone()).await;
    assert_eq!(done["content"][0]["text"], "done", "{done}");
    let up = answer_to_up1(&a).await;
    assert_eq!(up["result"], json!({"action": "accept", "content": {"ok": true}}));
    // the held call was taken: the same state again finds nothing
    let again = modern_call_of(&p.url, "a-ask", json!({}), retry).await;
    assert!(error_message(&again).contains("no longer held"), "{again}");
    p.stop().await;
}

#[actix_web::test]
async fn a_held_call_not_resumed_in_time_is_cancelled_upstream() {
    let a = asking_upstream(Duration::from_secs(8)).await;
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(1)).await;
    let round = modern_call_of(&p.url, "a-ask", json!({}), json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    // as for a 2025-era client: the upstream hears its question timed out...
    let up = answer_to_up1(&a).await;
    assert_eq!(up["error"]["code"], -32001, "{up}");
    // ... and a call that does not end of itself is cancelled, saying why
    let deadline = Instant::now() + Duration::from_secs(8);
    while a.count("notifications/cancelled") == 0 {
        assert!(Instant::now() < deadline, "the held call was not cancelled upstream");
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = a
        .seen
        .borrow()
        .iter()
        .find(|s| s.rpc() == "notifications/cancelled")
        .cloned()
        .unwrap();
    assert!(
        cancelled.body["params"]["reason"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{:?}",
        cancelled.body
    );
    let (key, _) = round["inputRequests"].as_object().unwrap().iter().next().unwrap();
    let late = json!({"inputResponses": {key.clone(): {"action": "accept"}}, "requestState": round["requestState"]});
    let r = modern_call_of(&p.url, "a-ask", json!({}), late).await;
    assert_eq!(r["structuredContent"]["error"]["side"], "client", "{r}");
    let message = error_message(&r);
    assert!(
        message.contains("expired") || message.contains("no longer held"),
        "{message}"
    );
    p.stop().await;
}

#[actix_web::test]
async fn held_calls_are_bounded_per_client() {
    let a = asking_upstream(Duration::from_millis(1500)).await;
    // at most 2 questions (held calls) per client
    let p = proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], Duration::from_secs(30)).await;
    for _ in 0..2 {
        let round = modern_call_of(&p.url, "a-ask", json!({}), json!({})).await;
        assert_eq!(round["resultType"], "input_required", "{round}");
    }
    // a third call's question is declined at once: the upstream hears why, the tool ends
    let third = modern_call_of(&p.url, "a-ask", json!({}), json!({})).await;
    assert_eq!(third["content"][0]["text"], "done", "{third}");
    let declined: Vec<Value> = answers_to_up1(&a)
        .into_iter()
        .filter(|b| b["error"]["code"] == -32603)
        .collect();
    assert_eq!(declined.len(), 1, "{:?}", answers_to_up1(&a));
    assert!(declined[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("MAX_PENDING_QUESTIONS"));
    p.stop().await;
}

#[actix_web::test]
async fn a_round_resumes_only_for_the_client_group_it_was_issued_to() {
    let a = modern_upstream().await;
    let token = |group: &str| mcp_search_proxy::config::ClientToken {
        group: group.into(),
        token: format!("{group}-token-0123456789abcdef"),
    };
    let settings = HttpSettings {
        auth: mcp_search_proxy::http::auth::Authenticator::new(&[token("team-a"), token("team-b")]),
        ..settings()
    };
    let p = start_proxy_with(
        vec![cfg("m", &a.url, Duration::from_secs(10))],
        catalog_config(None),
        settings,
        ServerLimits::default(),
    )
    .await;
    let (ta, tb) = ("team-a-token-0123456789abcdef", "team-b-token-0123456789abcdef");
    let args = json!({"env": "prod"});
    let round = modern_call_as(&p.url, Some(ta), "m-deploy", args.clone(), json!({})).await;
    let retry = json!({"inputResponses": {"confirm": {"action": "accept"}}, "requestState": round["requestState"]});
    let stolen = modern_call_as(&p.url, Some(tb), "m-deploy", args.clone(), retry.clone()).await;
    assert!(error_message(&stolen).contains("another client"), "{stolen}");
    let done = modern_call_as(&p.url, Some(ta), "m-deploy", args, retry).await;
    assert_eq!(done["content"][0]["text"], "deployed accept", "{done}");
    p.stop().await;
}

/// The proxy's `/metrics` text.
async fn scrape(base: &str) -> String {
    get(&format!("{base}/metrics")).await.1
}
