//! `GET /metrics` and trace propagation end to end: an in-process proxy in front of a small
//! actix-web fake upstream that records what each `tools/call` carried (its `traceparent` and
//! `tracestate` headers, its `params._meta`), plus an upstream that refuses connections. The
//! proxy's log lines are captured as the JSON lines it would print.

mod common;

use std::net::TcpListener;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

use common::*;
use mcp_search_proxy::http::auth::Authenticator;
use mcp_search_proxy::http::HttpSettings;
use mcp_search_proxy::server::ServerLimits;
use proxy_metrics::sample;

// ---------------------------------------------------------------------------------------------
// A fake upstream (2025 era, stateless, JSON replies) that records each tools/call.

/// What one `tools/call` carried.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    traceparent: Option<String>,
    tracestate: Option<String>,
    meta: Value,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    fn calls(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

async fn fake_mcp(req: HttpRequest, body: web::Bytes, rec: web::Data<Recorder>) -> HttpResponse {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = msg.get("id").cloned();
    let method = msg["method"].as_str().unwrap_or("");
    let reply = |result: Value| {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
    };
    match method {
        "server/discover" => HttpResponse::Ok().content_type("application/json").body(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}).to_string(),
        ),
        "initialize" => reply(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"},
        })),
        "tools/list" => reply(json!({"tools": [
            {"name": "weather_get", "description": "Get the weather forecast for a city.",
             "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": "mail_send", "description": "Send an email message to a recipient.",
             "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}}},
        ]})),
        "tools/call" => {
            let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
            let name = msg["params"]["name"].as_str().unwrap_or("").to_string();
            rec.0.lock().unwrap().push(Seen {
                name: name.clone(),
                traceparent: header("traceparent"),
                tracestate: header("tracestate"),
                meta: msg["params"].get("_meta").cloned().unwrap_or(Value::Null),
            });
            reply(json!({"content": [{"type": "text", "text": format!("{name} done")}]}))
        }
        _ if id.is_none() => HttpResponse::Accepted().finish(),
        other => HttpResponse::Ok().content_type("application/json").body(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no {other}")}})
                .to_string(),
        ),
    }
}

/// Starts the fake upstream; its URL and what it records.
fn fake_upstream() -> (String, Recorder) {
    let rec = Recorder::default();
    let data = web::Data::new(rec.clone());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/mcp", web::post().to(fake_mcp))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    (url, rec)
}

/// An upstream URL nothing listens on (connection refused).
fn refused_upstream() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", l.local_addr().unwrap());
    drop(l);
    url
}

// ---------------------------------------------------------------------------------------------
// Captured log lines: the proxy's JSON lines, as `logging::json_line` renders them.

struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let line = mcp_search_proxy::logging::json_line("t", record);
            self.0.lock().unwrap().push(line);
        }
    }

    fn flush(&self) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        let _ = log::set_logger(c);
        log::set_max_level(log::LevelFilter::Info);
        c
    })
}

/// The captured `mcp request` lines (parsed) whose `trace_id` is `trace_id`.
fn request_lines(trace_id: &str) -> Vec<Value> {
    capture()
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["msg"] == "mcp request" && v["trace_id"] == trace_id)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Helpers.

const TOKEN: &str = "metrics-test-token-0001";

/// `tools/call` of a proxy tool with extra headers; the result.
async fn call_with(url: &str, tool: &str, args: Value, meta: Option<Value>, headers: &[(&str, &str)]) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(m) = meta {
        params["_meta"] = m;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let (status, _, text) = post_raw(url, body, headers).await;
    assert_eq!(status, 200, "{tool}: {text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    v["result"].clone()
}

/// GET `/metrics` with an optional bearer token: status, content type, body.
async fn scrape(base: &str, token: Option<&str>) -> (u16, String, String) {
    let mut req = client().get(format!("{base}/metrics"));
    if let Some(t) = token {
        req = req.insert_header(("Authorization", format!("Bearer {t}")));
    }
    let mut resp = req.send().await.expect("scrape sent");
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.body().await.unwrap_or_default();
    (status, ctype, String::from_utf8_lossy(&body).into_owned())
}

/// Scrapes until `ready` holds for the text (retrieval telemetry is recorded by an actor,
/// a moment after the reply), at most 5 s.
async fn scrape_until(base: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _, text) = scrape(base, None).await;
        assert_eq!(status, 200, "{text}");
        if ready(&text) || Instant::now() > deadline {
            return text;
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn search_then_call_then_scrape_counts_everything() {
    let (url, rec) = fake_upstream();
    let p = start_proxy(
        vec![
            upstream_config("up", &url),
            upstream_config("down", &refused_upstream()),
        ],
        catalog_config(None),
    )
    .await;
    // One legacy client session: its searches and calls belong together.
    let session = [("Mcp-Session-Id", "metrics-session-1")];

    let empty = call_with(&p.url, "mcp_search", json!({"query": "xyzzy qwrtp"}), None, &session).await;
    assert_eq!(empty["structuredContent"]["results"], json!([]), "{empty}");
    let hits = call_with(
        &p.url,
        "mcp_search",
        json!({"query": "weather forecast city"}),
        None,
        &session,
    )
    .await;
    assert_eq!(hits["structuredContent"]["results"][0]["name"], "weather_get", "{hits}");
    let r = call_with(
        &p.url,
        "mcp_call",
        json!({"name": "weather_get", "arguments": {"city": "Rome"}}),
        None,
        &session,
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    let r = call_with(
        &p.url,
        "mcp_call",
        json!({"name": "no_such_tool_anywhere", "arguments": {}}),
        None,
        &session,
    )
    .await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(rec.calls().len(), 1);

    let text = scrape_until(&p.base, |t| {
        sample(t, "mcp_proxy_retrieval_calls_total", r#"rank="miss""#).is_some()
    })
    .await;
    let s = |name: &str, labels: &str| sample(&text, name, labels);
    // Requests by method and outcome: two searches and a call ok, the unknown tool an isError.
    assert_eq!(
        s("mcp_proxy_requests_total", r#"method="tools/call",outcome="ok""#),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        s(
            "mcp_proxy_requests_total",
            r#"method="tools/call",outcome="tool_error""#
        ),
        Some(1.0)
    );
    // mcp_call by upstream, tool and outcome; an unknown tool is `other`.
    assert_eq!(
        s(
            "mcp_proxy_tool_calls_total",
            r#"upstream="up",tool="weather_get",outcome="ok""#
        ),
        Some(1.0)
    );
    assert_eq!(
        s(
            "mcp_proxy_tool_calls_total",
            r#"upstream="none",tool="other",outcome="unknown_tool""#
        ),
        Some(1.0)
    );
    assert!(
        !text.contains("no_such_tool_anywhere"),
        "unknown names never become labels"
    );
    assert_eq!(
        s(
            "mcp_proxy_tool_call_duration_seconds_count",
            r#"upstream="up",tool="weather_get""#
        ),
        Some(1.0)
    );
    assert_eq!(s("mcp_proxy_tool_calls_in_flight", r#"upstream="up""#), Some(0.0));
    // Searches: two, one of them empty; their latency.
    assert_eq!(s("mcp_proxy_searches_total", ""), Some(2.0));
    assert_eq!(s("mcp_proxy_searches_empty_total", ""), Some(1.0));
    assert_eq!(s("mcp_proxy_search_duration_seconds_count", ""), Some(2.0));
    // Retrieval: the first call's tool was the last search's rank 1, after two searches; the
    // unknown one missed, after none.
    assert_eq!(s("mcp_proxy_retrieval_calls_total", r#"rank="1""#), Some(1.0));
    assert_eq!(s("mcp_proxy_retrieval_calls_total", r#"rank="miss""#), Some(1.0));
    assert_eq!(s("mcp_proxy_retrieval_searches_per_call_count", ""), Some(2.0));
    assert_eq!(s("mcp_proxy_retrieval_searches_per_call_sum", ""), Some(2.0));
    // Refreshes: the startup one was partial (one upstream refused). (The unknown tool's
    // re-list may have joined the retry of the refused upstream: not counted exactly.)
    assert_eq!(
        s("mcp_proxy_refreshes_total", r#"outcome="partial",reason="startup""#),
        Some(1.0)
    );
    assert!(s("mcp_proxy_refresh_duration_seconds_count", r#"outcome="partial""#) >= Some(1.0));
    assert_eq!(s("mcp_proxy_refresh_duration_seconds_count", r#"outcome="ok""#), None);
    // Upstream errors by kind, and the catalog as the snapshot has it.
    assert!(s("mcp_proxy_upstream_errors_total", r#"upstream="down",kind="connect""#) >= Some(1.0));
    assert_eq!(s("mcp_proxy_upstream_up", r#"upstream="up""#), Some(1.0));
    assert_eq!(s("mcp_proxy_upstream_up", r#"upstream="down""#), Some(0.0));
    assert_eq!(s("mcp_proxy_upstream_stale", r#"upstream="down""#), Some(0.0));
    assert_eq!(s("mcp_proxy_catalog_tools", r#"source="up""#), Some(2.0));
    assert_eq!(s("mcp_proxy_upstream_tools", r#"upstream="up""#), Some(2.0));
    assert_eq!(s("mcp_proxy_stale_upstreams", ""), Some(0.0));
    assert!(text.ends_with("# EOF\n"));
    let (_, ctype, _) = scrape(&p.base, None).await;
    assert_eq!(ctype, proxy_metrics::CONTENT_TYPE);
    p.stop().await;
}

#[actix_web::test]
async fn metrics_need_a_client_token_unless_public() {
    let (url, _rec) = fake_upstream();
    let with_tokens = |public: bool| HttpSettings {
        auth: Authenticator::new(&[mcp_search_proxy::config::ClientToken {
            group: "team-a".into(),
            token: TOKEN.into(),
        }]),
        metrics_public: public,
        ..settings()
    };
    let p = start_proxy_with(
        vec![upstream_config("up", &url)],
        catalog_config(None),
        with_tokens(false),
        ServerLimits::default(),
    )
    .await;
    let (status, _, body) = scrape(&p.base, None).await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("mcp_proxy_"), "nothing leaks without a token");
    assert_eq!(scrape(&p.base, Some("not-the-right-token-000")).await.0, 401);
    let (status, _, body) = scrape(&p.base, Some(TOKEN)).await;
    assert_eq!(status, 200);
    assert!(body.contains("mcp_proxy_catalog_tools"), "{body}");
    p.stop().await;

    let p = start_proxy_with(
        vec![upstream_config("up", &url)],
        catalog_config(None),
        with_tokens(true),
        ServerLimits::default(),
    )
    .await;
    let (status, _, body) = scrape(&p.base, None).await;
    assert_eq!(status, 200, "METRICS_PUBLIC: no token needed");
    assert!(body.contains("mcp_proxy_upstream_up"));
    let (status, _) = rpc(&p.url, "tools/list", json!({})).await;
    assert_eq!(status, 401, "/mcp still needs one");
    p.stop().await;
}

#[actix_web::test]
async fn a_client_trace_reaches_the_upstream_and_the_log_line() {
    capture();
    let (url, rec) = fake_upstream();
    let p = start_proxy(vec![upstream_config("up", &url)], catalog_config(None)).await;
    let args = json!({"name": "weather_get", "arguments": {"city": "Oslo"}});

    // In the header, with a tracestate.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let client_span = "b7ad6b7169203331";
    let tp = format!("00-{trace}-{client_span}-01");
    call_with(
        &p.url,
        "mcp_call",
        args.clone(),
        None,
        &[("traceparent", tp.as_str()), ("tracestate", "rojo=00f067aa0ba902b7")],
    )
    .await;
    let seen = rec.calls().pop().unwrap();
    assert_eq!(seen.name, "weather_get");
    let sent = seen.traceparent.clone().expect("a traceparent header upstream");
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_eq!(
        (parts[0], parts[1], parts[3]),
        ("00", trace, "01"),
        "same trace, same flags"
    );
    assert_ne!(parts[2], client_span, "the proxy's own span is the parent");
    assert_ne!(parts[2], "0000000000000000");
    assert_eq!(seen.meta["traceparent"], sent.as_str(), "the same in params._meta");
    assert_eq!(seen.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
    assert_eq!(seen.meta["tracestate"], "rojo=00f067aa0ba902b7");
    let lines = request_lines(trace);
    assert_eq!(lines.len(), 1, "one mcp request line with the trace id");
    assert_eq!(lines[0]["tool"], "mcp_call");
    assert_eq!(lines[0]["outcome"], "ok");

    // In params._meta (the OpenTelemetry MCP convention), which wins over a header.
    let meta_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let meta = json!({"traceparent": format!("00-{meta_trace}-00f067aa0ba902b7-00")});
    let other = "00-11111111111111111111111111111111-2222222222222222-01";
    call_with(&p.url, "mcp_call", args.clone(), Some(meta), &[("traceparent", other)]).await;
    let seen = rec.calls().pop().unwrap();
    let sent = seen.traceparent.clone().unwrap();
    assert!(
        sent.starts_with(&format!("00-{meta_trace}-")) && sent.ends_with("-00"),
        "{sent}"
    );
    assert!(!sent.contains("00f067aa0ba902b7"));
    assert_eq!(seen.meta["traceparent"], sent.as_str());
    assert_eq!(seen.tracestate, None);
    assert_eq!(request_lines(meta_trace).len(), 1);

    // None sent: the proxy starts a trace, and logs its id.
    call_with(&p.url, "mcp_call", args.clone(), None, &[]).await;
    let seen = rec.calls().pop().unwrap();
    let sent = seen.traceparent.clone().unwrap();
    let started = mcp_wire::trace::TraceParent::parse(&sent).expect("a valid traceparent");
    assert_eq!(
        request_lines(&started.trace_id_hex()).len(),
        1,
        "the new trace id is logged"
    );
    // An invalid one is ignored the same way.
    call_with(&p.url, "mcp_call", args, None, &[("traceparent", "00-zz-bad-01")]).await;
    let sent = rec.calls().pop().unwrap().traceparent.unwrap();
    assert!(mcp_wire::trace::TraceParent::parse(&sent).is_some());
    p.stop().await;
}

#[actix_web::test]
async fn session_resets_and_failed_calls_are_counted_by_kind() {
    // The embedded demo server as a stateful 2025-era upstream with fault injection.
    let a = upstream(
        vec![tool("alpha-counter", "Count calls in this session.", &[])],
        true,
        false,
    )
    .await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), 1);
    a.control.expire_sessions(); // 404 on the old session: one reset, the call retried
    assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), 1);
    a.control.set_down(true); // HTTP 503
    let r = mcp_call(&p.url, "alpha-counter", json!({})).await;
    assert_eq!(r["isError"], true, "{r}");

    let (_, _, text) = scrape(&p.base, None).await;
    let s = |name: &str, labels: &str| sample(&text, name, labels);
    assert_eq!(
        s(
            "mcp_proxy_upstream_errors_total",
            r#"upstream="agg",kind="session_reset""#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        s(
            "mcp_proxy_upstream_errors_total",
            r#"upstream="agg",kind="http_status""#
        ),
        Some(1.0)
    );
    assert_eq!(
        s(
            "mcp_proxy_tool_calls_total",
            r#"upstream="agg",tool="alpha-counter",outcome="ok""#
        ),
        Some(2.0)
    );
    assert_eq!(
        s(
            "mcp_proxy_tool_calls_total",
            r#"upstream="agg",tool="alpha-counter",outcome="upstream_error""#
        ),
        Some(1.0)
    );
    assert_eq!(
        s(
            "mcp_proxy_tool_call_duration_seconds_count",
            r#"upstream="agg",tool="alpha-counter""#
        ),
        Some(3.0)
    );
    assert_eq!(s("mcp_proxy_tool_calls_in_flight", r#"upstream="agg""#), Some(0.0));
    // No client identity beyond the shared anonymous one, and no search: no_search.
    let text = scrape_until(&p.base, |t| {
        sample(t, "mcp_proxy_retrieval_calls_total", r#"rank="no_search""#) == Some(3.0)
    })
    .await;
    assert_eq!(
        sample(&text, "mcp_proxy_retrieval_calls_total", r#"rank="no_search""#),
        Some(3.0)
    );
    p.stop().await;
}
