//! Upstreams that misbehave on purpose, in front of a real proxy: hung handshakes, redirects,
//! close-delimited replies, progress that stretches a call, and replies that try to make the
//! proxy hold or loop on too much. The fake upstreams are raw TCP listeners so every byte on
//! the wire (status line, framing, when the connection closes) is the test's choice.

mod common;
mod fake_upstream;

use std::time::{Duration, Instant};

use common::*;
use fake_upstream::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// 4: a hung handshake never wedges the upstream
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_hung_handshake_does_not_block_the_next_one() {
    let tools = vec![t("h-one")];
    let a = fake(move |req, nth| match req.rpc().as_str() {
        // The first `initialize` is never answered (its connection stays open).
        "initialize" if nth == 0 => vec![Part::Hang],
        _ => legacy(req, &tools),
    })
    .await;
    let p = start_proxy(vec![cfg("h", &a.url, Duration::from_secs(1))], catalog_config(None)).await;
    // The startup handshake hung and timed out; a refresh after it handshakes again.
    let started = Instant::now();
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let h = report_of(&r, "h");
    assert_eq!(h["ok"], true, "{r}");
    assert_eq!(h["tools"], 1, "{r}");
    assert!(a.count("initialize") >= 2, "handshakes reach the upstream again");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(
        mcp_call(&p.url, "h-one", json!({})).await["content"][0]["text"],
        "called h-one"
    );
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 5: redirects are never followed
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_redirected_call_is_not_replayed_elsewhere() {
    let b = fake(|req, _| legacy(req, &[t("r-one")])).await;
    let elsewhere = format!("http://127.0.0.1:{}/mcp?key=s3cr3t-token", b.port);
    let a = fake(move |req, _| match req.rpc().as_str() {
        "tools/call" => redirect(307, &elsewhere),
        _ => legacy(req, &[t("r-one")]),
    })
    .await;
    let p = start_proxy(vec![cfg("r", &a.url, Duration::from_secs(2))], catalog_config(None)).await;
    let r = mcp_call(&p.url, "r-one", json!({"secret": "x"})).await;
    assert_eq!(r["isError"], true, "{r}");
    let msg = error_message(&r);
    assert!(msg.contains("307"), "{msg}");
    assert!(msg.contains("127.0.0.1"), "names the Location host: {msg}");
    assert!(
        !msg.contains("s3cr3t") && !msg.contains("key="),
        "never the full URL: {msg}"
    );
    assert!(msg.contains("final URL"), "{msg}");
    assert_eq!(r["structuredContent"]["error"]["retryable"], false, "{r}");
    assert_eq!(a.count("tools/call"), 1);
    assert_eq!(b.total(), 0, "the redirect target received nothing");
    p.stop().await;
}

#[actix_web::test]
async fn a_redirected_listing_does_not_replace_the_catalog() {
    let b = fake(|req, _| legacy(req, &[t("b-evil")])).await;
    let elsewhere = format!("http://127.0.0.1:{}/mcp", b.port);
    let a = fake(move |req, nth| match req.rpc().as_str() {
        "tools/list" if nth > 0 => redirect(302, &elsewhere),
        _ => legacy(req, &[t("a-one")]),
    })
    .await;
    let c = fake(|req, _| legacy(req, &[t("c-one")])).await;
    let p = start_proxy(
        vec![
            cfg("a", &a.url, Duration::from_secs(2)),
            cfg("c", &c.url, Duration::from_secs(2)),
        ],
        catalog_config(None),
    )
    .await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let ra = report_of(&r, "a");
    assert_eq!(ra["ok"], false, "{r}");
    assert_eq!(ra["stale"], true, "{r}");
    assert_eq!(ra["tools"], 1, "the old tools are kept: {r}");
    assert!(ra["error"].as_str().unwrap().contains("302"), "{r}");
    assert_eq!(b.total(), 0, "the redirect target received nothing");
    let d = call(&p.url, "mcp_describe", json!({"names": ["a-one", "b-evil"]})).await;
    assert_eq!(d["structuredContent"]["not_found"], json!(["b-evil"]), "{d}");
    p.stop().await;
}

#[actix_web::test]
async fn a_redirect_loop_costs_one_request() {
    let a = fake(move |req, _| match req.rpc().as_str() {
        "tools/call" => redirect(308, "/mcp"),
        _ => legacy(req, &[t("l-one")]),
    })
    .await;
    let p = start_proxy(vec![cfg("l", &a.url, Duration::from_secs(2))], catalog_config(None)).await;
    let r = mcp_call(&p.url, "l-one", json!({})).await;
    assert_eq!(r["isError"], true, "{r}");
    let msg = error_message(&r);
    assert!(msg.contains("308"), "{msg}");
    assert_eq!(a.count("tools/call"), 1, "one request, no loop");
    assert_eq!(a.count("GET"), 0);
    p.stop().await;
}

#[actix_web::test]
async fn a_redirected_stream_resumption_is_not_followed() {
    let b = fake(|req, _| legacy(req, &[t("s-one")])).await;
    let elsewhere = format!("http://127.0.0.1:{}/mcp", b.port);
    let a = fake(move |req, _| match req.rpc().as_str() {
        // The call's stream closes before its response, asking to resume (SEP-1699) ...
        "tools/call" => {
            let mut body = sse_head_chunked();
            body.extend(chunk(b"id: ev-1\nretry: 50\ndata:\n\n"));
            body.extend(chunk(b""));
            vec![Part::Send(body)]
        }
        // ... and the resumption GET is redirected.
        "GET" if req.header("last-event-id").is_some() => redirect(307, &elsewhere),
        _ => legacy(req, &[t("s-one")]),
    })
    .await;
    let p = start_proxy(vec![cfg("s", &a.url, Duration::from_secs(2))], catalog_config(None)).await;
    let r = mcp_call(&p.url, "s-one", json!({})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(error_message(&r).contains("307"), "{r}");
    assert_eq!(b.total(), 0, "the redirect target received nothing");
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 8b: close-delimited replies
// ---------------------------------------------------------------------------------------------

/// Every reply without `Content-Length` or chunking: the body ends when the connection closes.
fn close_delimited(version: &'static str, sse: bool) -> impl Fn(&Seen, usize) -> Vec<Part> {
    move |req, _| {
        let tools = [t("cd-one")];
        let message = match req.rpc().as_str() {
            "server/discover" => Some(
                json!({"jsonrpc": "2.0", "id": req.id(), "error": {"code": -32601, "message": "Method not found"}}),
            ),
            "initialize" => Some(result_of(req, init_result(false))),
            "tools/list" => Some(result_of(req, json!({"tools": tools}))),
            "tools/call" => Some(result_of(
                req,
                json!({"content": [{"type": "text", "text": "close-delimited works"}]}),
            )),
            "GET" | "DELETE" => {
                return vec![
                    Part::Send(format!("{version} 405 Method Not Allowed\r\n\r\n").into_bytes()),
                    Part::Close,
                ]
            }
            _ => None,
        };
        let Some(message) = message else {
            return vec![
                Part::Send(format!("{version} 202 Accepted\r\n\r\n").into_bytes()),
                Part::Close,
            ];
        };
        let (ct, body) = if sse {
            ("text/event-stream", event(&message))
        } else {
            ("application/json", message.to_string())
        };
        // The head and the body in separate writes, the body itself in two.
        let (first, second) = body.split_at(body.len() / 2);
        vec![
            Part::Send(format!("{version} 200 OK\r\nContent-Type: {ct}\r\n\r\n").into_bytes()),
            Part::Sleep(Duration::from_millis(5)),
            Part::Send(first.as_bytes().to_vec()),
            Part::Sleep(Duration::from_millis(5)),
            Part::Send(second.as_bytes().to_vec()),
            Part::Close,
        ]
    }
}

async fn close_delimited_round(version: &'static str, sse: bool) {
    let a = fake(close_delimited(version, sse)).await;
    let p = start_proxy(vec![cfg("cd", &a.url, Duration::from_secs(2))], catalog_config(None)).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let cd = report_of(&r, "cd");
    assert_eq!(cd["ok"], true, "{version} sse={sse}: {r}");
    assert_eq!(cd["tools"], 1, "{version} sse={sse}: {r}");
    let r = mcp_call(&p.url, "cd-one", json!({})).await;
    assert_eq!(
        r["content"][0]["text"], "close-delimited works",
        "{version} sse={sse}: {r}"
    );
    assert_eq!(a.count("tools/call"), 1, "{version} sse={sse}: a call is sent once");
    p.stop().await;
}

#[actix_web::test]
async fn close_delimited_json_replies_are_read() {
    close_delimited_round("HTTP/1.1", false).await;
    close_delimited_round("HTTP/1.0", false).await;
}

#[actix_web::test]
async fn close_delimited_sse_replies_are_read() {
    close_delimited_round("HTTP/1.1", true).await;
    close_delimited_round("HTTP/1.0", true).await;
}

// ---------------------------------------------------------------------------------------------
// 10b: timeouts state the real elapsed time
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_progress_extended_timeout_states_the_real_elapsed_time() {
    let a = fake(|req, _| match req.rpc().as_str() {
        // Progress every 0.4 s for 2 s, then silence: the 1 s timeout ends the call at ~3 s.
        "tools/call" => {
            let mut parts = vec![Part::Send(sse_head_chunked())];
            for i in 1..=5 {
                parts.push(Part::Sleep(Duration::from_millis(400)));
                let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": i}});
                parts.push(Part::Send(chunk(event(&note).as_bytes())));
            }
            parts.push(Part::Hang);
            parts
        }
        _ => legacy(req, &[t("p-slow")]),
    })
    .await;
    let p = start_proxy(vec![cfg("p", &a.url, Duration::from_secs(1))], catalog_config(None)).await;
    let started = Instant::now();
    let r = mcp_call(&p.url, "p-slow", json!({})).await;
    let took = started.elapsed().as_secs_f64();
    assert_eq!(r["isError"], true, "{r}");
    let msg = error_message(&r);
    let stated: f64 = msg
        .split("timed out after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no elapsed time in {msg}"));
    assert!(took >= 2.8, "the progress kept the call alive: {took}");
    assert!((stated - took).abs() < 0.6, "stated {stated} s, took {took} s: {msg}");
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Bounds: what an upstream can make the proxy hold or loop on
// ---------------------------------------------------------------------------------------------

async fn failed_listing(a: &Fake) -> (Value, String) {
    let p = start_proxy(vec![cfg("x", &a.url, Duration::from_secs(5))], catalog_config(None)).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let x = report_of(&r, "x").clone();
    p.stop().await;
    assert_eq!(x["ok"], false, "{r}");
    let e = x["error"].as_str().unwrap_or_default().to_string();
    (x, e)
}

#[actix_web::test]
async fn an_overlong_cursor_is_refused() {
    let a = fake(|req, _| match req.rpc().as_str() {
        "tools/list" if req.body["params"]["cursor"].is_null() => json_reply(&result_of(
            req,
            json!({"tools": [t("c-one")], "nextCursor": "c".repeat(100_000)}),
        )),
        "tools/list" => json_reply(&result_of(req, json!({"tools": [t("c-two")]}))),
        _ => legacy(req, &[]),
    })
    .await;
    let (_, e) = failed_listing(&a).await;
    assert!(e.contains("nextCursor") && e.contains("4096"), "{e}");
    assert_eq!(a.count("tools/list"), 2, "one page, twice (startup and refresh)");
}

#[actix_web::test]
async fn a_listing_of_too_many_tools_is_refused() {
    // Pages of 10,000 tools, six pages: 60,000 in all.
    let a = fake(|req, _| match req.rpc().as_str() {
        "tools/list" => {
            let page: usize = req.body["params"]["cursor"]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let tools: Vec<Value> = (0..10_000).map(|i| json!({"name": format!("t{page}-{i}")})).collect();
            let mut result = json!({"tools": tools});
            if page < 5 {
                result["nextCursor"] = json!((page + 1).to_string());
            }
            json_reply(&result_of(req, result))
        }
        _ => legacy(req, &[]),
    })
    .await;
    let (_, e) = failed_listing(&a).await;
    assert!(e.contains("50000 tools"), "{e}");
}

#[actix_web::test]
async fn an_overlong_session_id_is_refused() {
    let sid = "s".repeat(5000);
    let a = fake(move |req, _| match req.rpc().as_str() {
        "initialize" => initialized_in(req, &sid),
        _ => legacy(req, &[t("s-one")]),
    })
    .await;
    let (_, e) = failed_listing(&a).await;
    assert!(e.contains("Mcp-Session-Id") && e.contains("1024"), "{e}");
    assert_eq!(a.count("tools/list"), 0);
}

#[actix_web::test]
async fn an_endless_line_on_the_list_change_stream_is_cut_off() {
    let a = fake(|req, _| match req.rpc().as_str() {
        "initialize" => json_reply(&result_of(req, init_result(true))),
        // The standalone stream: 2 MiB without a line break (the cap is 1 MiB), then nothing.
        "GET" => {
            let mut body = sse_head_chunked();
            for _ in 0..32 {
                body.extend(chunk(&[b'x'; 64 * 1024]));
            }
            vec![Part::Send(body), Part::AwaitProxyClose]
        }
        _ => legacy(req, &[t("e-one")]),
    })
    .await;
    let p = start_proxy(vec![cfg("e", &a.url, Duration::from_secs(2))], catalog_config(None)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.closed_by_proxy.get() == 0 && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(a.closed_by_proxy.get() >= 1, "the proxy kept reading an endless line");
    // The upstream still serves.
    assert_eq!(
        mcp_call(&p.url, "e-one", json!({})).await["content"][0]["text"],
        "called e-one"
    );
    p.stop().await;
}

// ---------------------------------------------------------------------------------------------
// an upstream that asks something during a call gets an answer at once, not silence
// ---------------------------------------------------------------------------------------------

/// The proxy's `/metrics` text.
async fn scrape_metrics(base: &str) -> String {
    let body = client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .body()
        .await
        .unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

/// A 2025-era upstream whose tool sends `elicitation/create`, `roots/list` and `ping` on the
/// call's stream (as SDK servers do for `ctx.elicit`) and answers the call 1.5 s later. The
/// client here cannot be asked (no session that declared a capability): the proxy must answer
/// each request at once (-32021 naming the missing capability, `ping` with `{}`) instead of
/// leaving the tool waiting until a timeout, and must not pass them to the client as if they
/// were notifications.
#[actix_web::test]
async fn requests_an_upstream_sends_during_a_call_are_answered_at_once() {
    let tools = vec![t("a-ask")];
    let a = fake(move |req, _| match req.rpc().as_str() {
        "tools/call" => {
            let ask = |id: &str, method: &str| {
                chunk(event(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})).as_bytes())
            };
            let result = result_of(req, json!({"content": [{"type": "text", "text": "asked"}]}));
            vec![
                Part::Send(sse_head_chunked()),
                Part::Send(ask("q-1", "elicitation/create")),
                Part::Send(ask("q-2", "roots/list")),
                Part::Send(chunk(event(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})).as_bytes())),
                // a notification without an id is not a request
                Part::Send(chunk(
                    event(&json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})).as_bytes(),
                )),
                Part::Sleep(Duration::from_millis(1500)),
                Part::Send(chunk(event(&result).as_bytes())),
                Part::Send(chunk(b"")),
            ]
        }
        _ => legacy(req, &tools),
    })
    .await;
    let p = start_proxy(vec![cfg("a", &a.url, Duration::from_secs(10))], catalog_config(None)).await;
    let started = Instant::now();
    let r = mcp_call(&p.url, "a-ask", json!({})).await;
    assert_eq!(r["content"][0]["text"], "asked", "{r}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // every request was answered while the call was still running (the answers arrived before
    // the result was sent, which the proxy waited for)
    let answers: Vec<Value> = a
        .seen
        .borrow()
        .iter()
        .filter(|s| s.verb == "POST" && s.body.get("method").is_none())
        .map(|s| s.body.clone())
        .collect();
    let answer = |id: Value| {
        answers
            .iter()
            .find(|b| b["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:?}"))
    };
    for (id, needed) in [
        ("q-1", json!({"elicitation": {"form": {}}})),
        ("q-2", json!({"roots": {}})),
    ] {
        let a = answer(json!(id));
        assert_eq!(a["jsonrpc"], "2.0");
        assert_eq!(a["error"]["code"], -32021, "{a}");
        assert_eq!(a["error"]["data"]["requiredCapabilities"], needed, "{a}");
    }
    assert_eq!(answer(json!(7))["result"], json!({}));
    assert_eq!(answers.len(), 3, "{answers:?}");
    let metrics = scrape_metrics(&p.base).await;
    for line in [
        r#"mcp_proxy_upstream_requests_total{upstream="a",method="elicitation/create",outcome="declined"} 1"#,
        r#"mcp_proxy_upstream_requests_total{upstream="a",method="roots/list",outcome="declined"} 1"#,
        r#"mcp_proxy_upstream_requests_total{upstream="a",method="ping",outcome="answered"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    assert!(
        !metrics.contains(r#"method="ping",outcome="declined""#),
        "a ping is answered, not declined: {metrics}"
    );
}

/// A tool whose upstream answers `input_required` (the 2026-07-28 era's way to ask; the check
/// does not depend on the era the fake speaks) to a client that cannot be asked (no session,
/// no capability): the client gets a clear client-side error naming what was asked, not a
/// result relabelled `complete` that its SDK cannot read.
#[actix_web::test]
async fn an_input_required_result_is_a_clear_error_for_a_client_that_cannot_be_asked() {
    let tools = vec![t("i-ask")];
    let a = fake(move |req, _| match req.rpc().as_str() {
        "tools/call" => json_reply(&result_of(
            req,
            json!({
                "resultType": "input_required",
                "inputRequests": {
                    "confirm": {"method": "elicitation/create", "params": {"message": "Delete?", "requestedSchema": {"type": "object"}}},
                    "where": {"method": "roots/list", "params": {}},
                },
                "requestState": "opaque-state",
            }),
        )),
        _ => legacy(req, &tools),
    })
    .await;
    let p = start_proxy(vec![cfg("i", &a.url, Duration::from_secs(5))], catalog_config(None)).await;
    let r = mcp_call(&p.url, "i-ask", json!({})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.get("resultType").is_none() || r["resultType"] == "complete", "{r}");
    let e = &r["structuredContent"]["error"];
    assert_eq!(e["side"], "client", "{r}");
    assert_eq!(e["retryable"], false, "{r}");
    let message = error_message(&r);
    assert!(
        message.contains("asked for input") && message.contains("elicitation/create, roots/list"),
        "{message}"
    );
    assert!(
        !r.to_string().contains("opaque-state"),
        "the upstream's state is not leaked: {r}"
    );
    let metrics = scrape_metrics(&p.base).await;
    for method in ["elicitation/create", "roots/list"] {
        assert!(
            metrics.contains(&format!(
                r#"mcp_proxy_upstream_requests_total{{upstream="i",method="{method}",outcome="declined"}} 1"#
            )),
            "{metrics}"
        );
    }
    assert!(
        !metrics.contains(r#"mcp_proxy_upstream_errors_total{upstream="i""#),
        "asking is not an upstream error: {metrics}"
    );
}
