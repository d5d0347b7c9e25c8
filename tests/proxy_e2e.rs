//! End-to-end tests over real HTTP: an in-process proxy in front of in-process fake
//! upstreams (one stateful with SSE replies, one stateless with JSON replies), with faults
//! injected through the fake upstreams' control handles.

mod common;

use std::time::{Duration, Instant};

use common::*;
use proxy_actors::catalog::CatalogConfig;
use serde_json::{json, Value};

fn counter_tools(prefix: &str) -> Vec<Value> {
    vec![
        tool(&format!("{prefix}-counter"), "Count calls in this session.", &[]),
        tool(&format!("{prefix}-echo"), "Echo the text back.", &["text"]),
        tool(&format!("{prefix}-add"), "Add two numbers a and b.", &[]),
    ]
}

#[actix_web::test]
async fn search_describe_call_through_two_upstreams() {
    let a = upstream(counter_tools("alpha"), true, true).await;
    let b = upstream(
        vec![tool("browser_navigate", "Navigate the browser to a URL.", &["url"])],
        false,
        false,
    )
    .await;
    let p = start_proxy(
        vec![upstream_config("agg", &a.url), upstream_config("web", &b.url)],
        catalog_config(None),
    )
    .await;

    // tools/list shows exactly the four tools.
    let (_, list) = rpc(&p.url, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mcp_search", "mcp_describe", "mcp_call", "mcp_refresh"]);

    // Search finds tools of both upstreams; hits carry the source and the parameters' line.
    let r = call(&p.url, "mcp_search", json!({"query": "navigate browser url"})).await;
    let hit = &r["structuredContent"]["results"][0];
    assert_eq!(hit["name"], "browser_navigate");
    assert_eq!(hit["source"], "web");
    assert_eq!(hit["params"], json!("url: string"));
    let r = call(&p.url, "mcp_search", json!({"query": "alpha-echo"})).await;
    assert_eq!(r["structuredContent"]["results"][0]["name"], "alpha-echo");
    assert_eq!(r["structuredContent"]["results"][0]["source"], "alpha");

    // Describe returns the full schema and not_found.
    let r = call(&p.url, "mcp_describe", json!({"names": ["alpha-echo", "nope"]})).await;
    assert_eq!(
        r["structuredContent"]["tools"][0]["inputSchema"]["required"],
        json!(["text"])
    );
    assert_eq!(r["structuredContent"]["not_found"], json!(["nope"]));

    // Calls are routed to the owning upstream and relayed unchanged.
    let r = mcp_call(&p.url, "alpha-echo", json!({"text": "hi"})).await;
    assert_eq!(r["content"][0]["text"], "hi");
    assert_eq!(r["structuredContent"], json!({"text": "hi"}));
    assert_eq!(a.control.stats().last_call.unwrap().0, "alpha-echo");
    let r = mcp_call(&p.url, "browser_navigate", json!({"url": "http://x"})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(b.control.stats().last_call.unwrap().0, "browser_navigate");
    p.stop().await;
}

#[actix_web::test]
async fn one_sticky_session_is_reused_by_every_call() {
    let a = upstream(counter_tools("alpha"), true, true).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    for expected in 1..=4 {
        assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), expected);
    }
    let s = a.control.stats();
    assert_eq!(s.sessions_minted, 1, "one session for list + calls");
    assert_eq!(s.initialize, 1);
    assert_eq!(s.initialized_notifications, 1);
    assert!(s.last_header("mcp-session-id").is_some());
    assert_eq!(s.last_header("mcp-protocol-version"), Some("2025-11-25"));
    p.stop().await;
}

#[actix_web::test]
async fn an_expired_session_is_reset_once_and_the_call_retried() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), 1);
    assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), 2);
    a.control.expire_sessions(); // the upstream "restarted": the old session id now gets 404
    let r = mcp_call(&p.url, "alpha-counter", json!({})).await;
    assert_eq!(count_of(&r), 1, "a fresh session starts a fresh counter: {r}");
    let s = a.control.stats();
    assert_eq!(s.session_not_found, 1);
    assert_eq!(s.sessions_minted, 2);
    // The new session is sticky again.
    assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), 2);
    assert_eq!(a.control.stats().sessions_minted, 2);
    p.stop().await;
}

#[actix_web::test]
async fn a_stateless_upstream_gets_no_session_header() {
    let b = upstream(counter_tools("beta"), false, false).await;
    let p = start_proxy(vec![upstream_config("b", &b.url)], catalog_config(None)).await;
    assert_eq!(count_of(&mcp_call(&p.url, "beta-counter", json!({})).await), 1);
    assert_eq!(count_of(&mcp_call(&p.url, "beta-counter", json!({})).await), 2);
    let s = b.control.stats();
    assert_eq!(s.sessions_minted, 0);
    assert_eq!(s.last_header("mcp-session-id"), None);
    let status = p.proxy.upstreams[0]
        .addr
        .send(proxy_actors::upstream::GetStatus)
        .await
        .unwrap();
    assert!(status.initialized && !status.has_session);
    p.stop().await;
}

#[actix_web::test]
async fn an_unknown_tool_triggers_one_relist_then_a_clear_error() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let lists_before = a.control.stats().tools_list;

    // A tool added upstream after the last refresh is found by the re-list.
    let mut tools = counter_tools("alpha");
    tools.push(tool("alpha-new_tool", "A tool added later.", &[]));
    a.control.set_tools(tools);
    let r = mcp_call(&p.url, "alpha-new_tool", json!({})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(a.control.stats().tools_list, lists_before + 1);

    // A name nobody offers: one more re-list, then an error with suggestions.
    let r = mcp_call(&p.url, "alpha-counting_things", json!({})).await;
    assert_eq!(r["isError"], true);
    let msg = r["structuredContent"]["error"]["message"].as_str().unwrap();
    assert!(msg.contains("Unknown tool") && msg.contains("alpha-counter"), "{msg}");
    assert_eq!(a.control.stats().tools_list, lists_before + 2);
    assert_eq!(
        a.control.stats().last_call.unwrap().0,
        "alpha-new_tool",
        "the unknown tool never reached the upstream"
    );
    p.stop().await;
}

#[actix_web::test]
async fn name_collisions_keep_the_first_upstream_and_are_reported() {
    let a = upstream(
        vec![
            tool("shared-echo", "Echo from A.", &["text"]),
            tool("shared-a", "Only A.", &[]),
        ],
        true,
        false,
    )
    .await;
    let b = upstream(
        vec![
            tool("shared-echo", "Echo from B.", &["text"]),
            tool("other-b", "Only B.", &[]),
        ],
        false,
        false,
    )
    .await;
    let p = start_proxy(
        vec![upstream_config("a", &a.url), upstream_config("b", &b.url)],
        catalog_config(None),
    )
    .await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let sc = &r["structuredContent"];
    assert_eq!(
        sc["collisions"],
        json!([{"name": "shared-echo", "kept": "a", "dropped": "b"}])
    );
    assert_eq!(sc["total_tools"], 3);
    mcp_call(&p.url, "shared-echo", json!({"text": "x"})).await;
    assert_eq!(a.control.stats().tools_call, 1);
    assert_eq!(b.control.stats().tools_call, 0);
    p.stop().await;
}

#[actix_web::test]
async fn refresh_is_fail_soft_and_all_down_keeps_the_catalog() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    let b = upstream(vec![tool("browser_click", "Click an element.", &["ref"])], false, false).await;
    let p = start_proxy(
        vec![upstream_config("agg", &a.url), upstream_config("web", &b.url)],
        catalog_config(None),
    )
    .await;

    // One upstream down: refresh succeeds, reports it, and keeps its tools (served stale).
    b.control.set_down(true);
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_ne!(r["isError"], true, "{r}");
    let ups = r["structuredContent"]["upstreams"].as_array().unwrap();
    assert_eq!(ups[0]["ok"], true);
    assert_eq!(ups[1]["ok"], false);
    assert_eq!(ups[1]["stale"], true);
    assert!(ups[1]["error"].as_str().unwrap().contains("503"), "{}", ups[1]);
    assert_eq!(r["structuredContent"]["total_tools"], 4);

    // All down: the refresh errors and the cached catalog stays searchable.
    a.control.set_down(true);
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["error"]["side"], "upstream");
    let s = call(&p.url, "mcp_search", json!({"query": "click element"})).await;
    assert_eq!(s["structuredContent"]["results"][0]["name"], "browser_click");

    // A call to a down upstream says which side failed and that retrying may help.
    let r = mcp_call(&p.url, "alpha-counter", json!({})).await;
    assert_eq!(r["isError"], true);
    let e = &r["structuredContent"]["error"];
    assert_eq!(e["side"], "upstream");
    assert_eq!(e["upstream"], "agg");
    assert_eq!(e["retryable"], true);
    assert!(e["message"].as_str().unwrap().contains("HTTP 503"), "{e}");
    p.stop().await;
}

#[actix_web::test]
async fn the_manifest_serves_search_before_any_upstream_answers() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("state/manifest.json");
    let a = upstream(counter_tools("alpha"), true, false).await;
    let p = start_proxy(
        vec![upstream_config("agg", &a.url)],
        catalog_config(Some(manifest.clone())),
    )
    .await;
    let fingerprint = {
        let (status, body) = get(&format!("{}/readyz", p.base)).await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["fingerprint"].clone()
    };
    p.stop().await;
    assert!(manifest.exists());

    // Restart with the upstream down: ready at once, search works from the manifest.
    a.control.set_down(true);
    let p = start_proxy(
        vec![upstream_config("agg", &a.url)],
        catalog_config(Some(manifest.clone())),
    )
    .await;
    let (status, body) = get(&format!("{}/readyz", p.base)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["fingerprint"],
        fingerprint
    );
    let r = call(&p.url, "mcp_search", json!({"query": "alpha-echo"})).await;
    assert_eq!(r["structuredContent"]["results"][0]["name"], "alpha-echo");
    let from_persisted_index = r["structuredContent"]["results"].clone();
    // The failed startup refresh did not overwrite the manifest with an empty catalog.
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("alpha-echo"));
    p.stop().await;

    // The index was persisted beside the manifest by the first run's refresh (and loaded by
    // the restart above). A damaged index file is not used: the index is built again, the
    // answers are the same, and the file is replaced.
    let index = proxy_core::catalog::index_file::path_for(&manifest);
    let bytes = std::fs::read(&index).expect("the index is persisted beside the manifest");
    let mut damaged = bytes.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    std::fs::write(&index, &damaged).unwrap();
    let p = start_proxy(
        vec![upstream_config("agg", &a.url)],
        catalog_config(Some(manifest.clone())),
    )
    .await;
    let r = call(&p.url, "mcp_search", json!({"query": "alpha-echo"})).await;
    assert_eq!(r["structuredContent"]["results"], from_persisted_index);
    assert_eq!(std::fs::read(&index).unwrap(), bytes, "rewritten from the built index");
    p.stop().await;
}

#[actix_web::test]
async fn readyz_is_503_while_the_catalog_is_empty() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    a.control.set_down(true);
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let (status, _) = get(&format!("{}/readyz", p.base)).await;
    assert_eq!(status, 503);
    let (status, _) = get(&format!("{}/healthz", p.base)).await;
    assert_eq!(status, 200);
    // Search still answers, honestly: nothing, with a hint.
    let r = call(&p.url, "mcp_search", json!({"query": "anything"})).await;
    assert_eq!(r["structuredContent"]["results"], json!([]));
    assert!(r["structuredContent"]["hint"].as_str().unwrap().contains("empty"));
    p.stop().await;
}

#[actix_web::test]
async fn missing_required_arguments_never_reach_the_upstream() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let r = mcp_call(&p.url, "alpha-echo", json!({})).await;
    assert_eq!(r["isError"], true);
    let e = &r["structuredContent"]["error"];
    assert_eq!(e["missing"], json!(["text"]));
    assert!(e["message"].as_str().unwrap().contains("text"));
    assert_eq!(a.control.stats().tools_call, 0);
    // `arguments` sent as a JSON string is repaired.
    let r = call(
        &p.url,
        "mcp_call",
        json!({"name": "alpha-echo", "arguments": "{\"text\": \"s\"}"}),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "s");
    p.stop().await;
}

#[actix_web::test]
async fn upstream_timeouts_and_refused_connections_are_explained() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    let mut cfg = upstream_config("agg", &a.url);
    cfg.timeout = Duration::from_secs(1);
    let p = start_proxy(vec![cfg], catalog_config(None)).await;
    a.control.set_call_delay(Duration::from_secs(3));
    let r = mcp_call(&p.url, "alpha-counter", json!({})).await;
    assert_eq!(r["isError"], true);
    let e = &r["structuredContent"]["error"];
    assert!(e["message"].as_str().unwrap().contains("timed out after 1 s"), "{e}");
    assert_eq!(e["retryable"], true);
    p.stop().await;

    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = start_proxy(
        vec![upstream_config("gone", &format!("http://127.0.0.1:{port}/mcp"))],
        catalog_config(None),
    )
    .await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["isError"], true);
    let text = r["structuredContent"].to_string();
    assert!(text.contains("connection failed"), "{text}");
    p.stop().await;
}

#[actix_web::test]
async fn a_slow_call_does_not_block_other_calls() {
    let slow = upstream(counter_tools("slow"), true, false).await;
    let fast = upstream(counter_tools("fast"), true, false).await;
    let p = start_proxy(
        vec![upstream_config("s", &slow.url), upstream_config("f", &fast.url)],
        catalog_config(None),
    )
    .await;
    slow.control.set_call_delay(Duration::from_millis(1500));
    let started = Instant::now();
    let url = p.url.clone();
    let slow_calls = futures_util::future::join(
        mcp_call(&url, "slow-echo", json!({"text": "1"})),
        mcp_call(&url, "slow-echo", json!({"text": "2"})),
    );
    let fast_call = async {
        let r = mcp_call(&url, "fast-echo", json!({"text": "f"})).await;
        (r, started.elapsed())
    };
    let ((r1, r2), (rf, fast_elapsed)) = futures_util::future::join(slow_calls, fast_call).await;
    let total = started.elapsed();
    assert_eq!(r1["content"][0]["text"], "1");
    assert_eq!(r2["content"][0]["text"], "2");
    assert_eq!(rf["content"][0]["text"], "f");
    // Generous bounds: this checks concurrency (no serialisation), not speed.
    assert!(
        fast_elapsed < Duration::from_millis(1200),
        "fast call waited for the slow ones: {fast_elapsed:?}"
    );
    assert!(
        total < Duration::from_millis(2900),
        "two slow calls ran one after the other: {total:?}"
    );
    p.stop().await;
}

#[actix_web::test]
async fn bearer_tokens_and_pagination_towards_upstreams() {
    let tools: Vec<Value> = (0..7)
        .map(|i| tool(&format!("paged-t{i}"), "A paged tool.", &[]))
        .collect();
    let opts = demo_upstream::UpstreamOptions {
        tools,
        stateful: true,
        sse: true,
        page_size: Some(2),
        bearer_token: Some("s3cret".into()),
        ..Default::default()
    };
    let a = demo_upstream::start(opts, "127.0.0.1:0").await.unwrap();
    let mut cfg = upstream_config("paged", &a.url);
    cfg.token = Some("s3cret".into());
    let p = start_proxy(vec![cfg], catalog_config(None)).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["structuredContent"]["total_tools"], 7, "{r}");
    mcp_call(&p.url, "paged-t3", json!({})).await;
    assert_eq!(a.control.stats().last_header("authorization"), Some("Bearer s3cret"));
    p.stop().await;

    // A wrong token: the error names the HTTP status and says retrying will not help.
    let mut cfg = upstream_config("paged", &a.url);
    cfg.token = Some("wrong".into());
    let p = start_proxy(vec![cfg], catalog_config(None)).await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["isError"], true);
    assert!(r["structuredContent"].to_string().contains("HTTP 401"), "{r}");
    p.stop().await;
}

#[actix_web::test]
async fn a_rate_limited_refresh_still_says_why_an_upstream_is_missing_and_when_it_is_retried() {
    // The only upstream is down from the start: no fan-out succeeds, so no snapshot ever
    // records its error. A refresh the rate limit answers without a fan-out must still carry it.
    let a = upstream(counter_tools("sec"), true, false).await;
    a.control.set_down(true);
    let catalog = CatalogConfig {
        min_refresh_interval: Duration::from_secs(600),
        ..catalog_config(None)
    };
    let p = start_proxy(vec![upstream_config("sec", &a.url)], catalog).await;
    for _ in 0..2 {
        let r = call(&p.url, "mcp_refresh", json!({})).await;
        let report = report_of(&r, "sec");
        assert_eq!(report["ok"], false, "{r}");
        assert_eq!(report["tools"], 0, "{r}");
        assert!(
            report["error"].as_str().unwrap_or("").contains("503"),
            "the reason: {r}"
        );
        // retried by the back-off (1 s, 2 s, …, at most 60 s), or right now
        let retry = report["retry_in_sec"]
            .as_u64()
            .unwrap_or_else(|| panic!("when it is retried: {r}"));
        assert!(retry <= 60, "{r}");
        if r["isError"] != true {
            let note = r["structuredContent"]["note"].as_str().unwrap_or("");
            assert!(note.contains("not re-listed"), "answered by the rate limit: {r}");
        }
    }
    p.stop().await;
}

#[actix_web::test]
async fn an_upstream_that_starts_late_is_listed_without_waiting_for_the_ttl() {
    let a = upstream(counter_tools("late"), true, false).await;
    a.control.set_down(true);
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let (status, _) = get(&format!("{}/readyz", p.base)).await;
    assert_eq!(status, 503);
    a.control.set_down(false);
    // Retries back off from 1 s; within a few seconds the catalog is ready.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = get(&format!("{}/readyz", p.base)).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "catalog never became ready");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    p.stop().await;
}

#[actix_web::test]
async fn shutdown_ends_the_upstream_session() {
    let a = upstream(counter_tools("alpha"), true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    assert_eq!(a.control.stats().live_sessions, 1);
    p.proxy.end_sessions().await;
    assert_eq!(a.control.stats().sessions_deleted, 1);
    assert_eq!(a.control.stats().live_sessions, 0);
    // A later call simply opens a new session.
    assert_eq!(count_of(&mcp_call(&p.url, "alpha-counter", json!({})).await), 1);
    p.stop().await;
}

#[actix_web::test]
async fn half_remembered_names_and_stringly_arguments_are_repaired() {
    let typed = json!({"name": "alpha-add", "description": "Add a and b.", "inputSchema": {"type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}});
    let a = upstream(vec![typed, tool("alpha-echo", "Echo.", &["text"])], true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let lists = a.control.stats().tools_list;
    // Case/separators, missing prefix: resolved without a re-list.
    for name in ["ALPHA_ADD", "add"] {
        let r = mcp_call(&p.url, name, json!({"a": "2", "b": 3})).await;
        assert_eq!(r["structuredContent"], json!({"result": 5}), "{name}: {r}");
        let repairs = r["_meta"]["mcp-search-proxy/repairs"].as_array().unwrap();
        assert!(
            repairs
                .iter()
                .any(|n| n.as_str().unwrap().contains("converted to integer")),
            "{repairs:?}"
        );
        assert_eq!(a.control.stats().last_call.unwrap().1, json!({"a": 2, "b": 3}));
    }
    assert_eq!(a.control.stats().tools_list, lists, "repairs need no re-list");
    // A typo may name another tool: it is suggested, never run.
    let calls = a.control.stats().tools_call;
    let r = mcp_call(&p.url, "alpha-ad", json!({"a": 2, "b": 3})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["error"]["did_you_mean"][0], "alpha-add", "{r}");
    assert_eq!(a.control.stats().tools_call, calls, "nothing was sent upstream");
    p.stop().await;
}

#[actix_web::test]
async fn invalid_arguments_never_reach_the_upstream() {
    let strict = json!({"name": "alpha-set", "description": "Set a level.", "inputSchema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"level": {"type": "integer", "minimum": 1, "maximum": 5}, "mode": {"enum": ["fast", "slow"]}},
        "required": ["level"], "additionalProperties": false}});
    let a = upstream(vec![strict], true, false).await;
    let p = start_proxy(vec![upstream_config("agg", &a.url)], catalog_config(None)).await;
    let r = mcp_call(
        &p.url,
        "alpha-set",
        json!({"level": 9, "mode": "medium", "extra": true}),
    )
    .await;
    assert_eq!(r["isError"], true);
    let e = &r["structuredContent"]["error"];
    assert_eq!(e["side"], "client");
    let v = e["violations"].as_array().unwrap();
    let pairs: Vec<(String, String)> = v
        .iter()
        .map(|x| {
            (
                x["path"].as_str().unwrap().to_string(),
                x["constraint"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(pairs.contains(&("/level".into(), "maximum".into())), "{pairs:?}");
    assert!(pairs.contains(&("/mode".into(), "enum".into())), "{pairs:?}");
    assert!(pairs.contains(&("".into(), "additionalProperties".into())), "{pairs:?}");
    assert_eq!(e["inputSchema"]["properties"]["level"]["maximum"], 5);
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("level: 9 is greater than the maximum of 5"),
        "{message}"
    );
    assert_eq!(a.control.stats().tools_call, 0, "nothing was sent upstream");
    let r = mcp_call(&p.url, "alpha-set", json!({"level": "3"})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(a.control.stats().tools_call, 1);
    p.stop().await;
}
