//! The catalog staying right: coalesced refreshes, stale-but-served upstreams, the change
//! journal, access policy on every path, pinned tools.

mod common;

use std::time::Duration;

use common::*;
use proxy_actors::catalog::{Refresh, RefreshReason, RefreshReport};
use proxy_core::policy::Policy;
use serde_json::{json, Value};

#[actix_web::test]
async fn fifty_concurrent_refreshes_share_at_most_two_fan_outs() {
    let a = upstream(vec![tool("a-one", "One.", &[])], true, false).await;
    let b = upstream(vec![tool("b-two", "Two.", &[])], false, true).await;
    let p = start_proxy(
        vec![upstream_config("a", &a.url), upstream_config("b", &b.url)],
        catalog_config(None),
    )
    .await;
    let before = p.catalog_status().await.fanouts;
    let (la, lb) = (a.control.stats().tools_list, b.control.stats().tools_list);
    // The first fan-out's listings are held until every refresh has reached the catalog, so
    // each one arrives while a fan-out runs, however the threads are scheduled.
    a.control.close_list_gate();
    b.control.close_list_gate();
    // The refresh `mcp_refresh` sends, fifty times at once, straight to the catalog actor: the
    // test must know when all fifty have been handled, which it cannot over HTTP. Each goes
    // through its own clone of the address: a clone's sender starts unparked, so `send` puts
    // the message in the mailbox before it returns, even past the mailbox's capacity (a sender
    // parked by a full mailbox would keep it until the request is polled).
    let refreshes: Vec<_> = (0..50)
        .map(|_| {
            p.proxy.catalog.clone().send(Refresh {
                reason: RefreshReason::Explicit,
                seen_generation: None,
            })
        })
        .collect();
    // The mailbox is first in, first out: this answer comes after the fifty were handled.
    let status = p.catalog_status().await;
    assert!(status.refreshing, "the first fan-out is held at the gates");
    assert_eq!(status.fanouts, before + 1, "the other refreshes joined it or queued");
    a.control.open_list_gate();
    b.control.open_list_gate();
    let reports = futures_util::future::join_all(refreshes).await;
    // What the state machine guarantees (actors/src/catalog/mod.rs): one fan-out in flight and
    // at most one queued, every trigger that comes while one runs joining it (within
    // JOIN_WINDOW of its start) or the queued one. Whether all fifty came within the window
    // depends on scheduling, so one or two fan-outs: never more.
    let fanouts = p.catalog_status().await.fanouts - before;
    assert!(
        (1..=2).contains(&fanouts),
        "{fanouts} fan-outs for fifty concurrent refreshes"
    );
    assert_eq!(
        a.control.stats().tools_list,
        la + fanouts,
        "one listing of a per fan-out"
    );
    assert_eq!(
        b.control.stats().tools_list,
        lb + fanouts,
        "one listing of b per fan-out"
    );
    let reports: Vec<RefreshReport> = reports
        .into_iter()
        .map(|r| r.expect("the catalog is running").expect("the refresh succeeds"))
        .collect();
    for r in &reports {
        assert!(r.ran, "{r:?}");
        assert_eq!(r.fingerprint, reports[0].fingerprint);
        assert_eq!(r.total_tools, 2);
    }
    // Over HTTP, as a client sends it, the refresh reports the same catalog.
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["fingerprint"], reports[0].fingerprint.as_str());
    assert_eq!(r["structuredContent"]["total_tools"], 2);
    p.stop().await;
}

#[actix_web::test]
async fn a_flapping_upstream_never_loses_its_tools() {
    let a = upstream(vec![tool("a-one", "One.", &[])], true, false).await;
    let b = upstream(
        vec![tool(
            "browser_snapshot",
            "Capture an accessibility snapshot of the page.",
            &[],
        )],
        true,
        true,
    )
    .await;
    let p = start_proxy(
        vec![upstream_config("a", &a.url), upstream_config("web", &b.url)],
        catalog_config(None),
    )
    .await;
    for round in 0..6 {
        let down = round % 2 == 0;
        b.control.set_down(down);
        let r = call(&p.url, "mcp_refresh", json!({})).await;
        assert_ne!(r["isError"], true, "round {round}: {r}");
        let web = &r["structuredContent"]["upstreams"][1];
        assert_eq!(web["tools"], 1, "round {round}: {web}");
        assert_eq!(web["stale"], down, "round {round}: {web}");
        assert!(web["listing_age_sec"].is_u64(), "{web}");
        let s = call(&p.url, "mcp_search", json!({"query": "accessibility snapshot"})).await;
        assert_eq!(
            s["structuredContent"]["results"][0]["name"], "browser_snapshot",
            "round {round}"
        );
        let d = call(&p.url, "mcp_describe", json!({"names": ["browser_snapshot"]})).await;
        assert_eq!(d["structuredContent"]["not_found"], json!([]), "round {round}");
    }
    // Its tools go away only when it answers successfully without them, twice in a row (one
    // empty listing after a non-empty one is not believed: an aggregator restarting lists
    // nothing until its backends connect).
    b.control.set_tools(vec![]);
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["structuredContent"]["removed"], json!([]), "{r}");
    assert_eq!(r["structuredContent"]["upstreams"][1]["stale"], true, "{r}");
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["structuredContent"]["removed"], json!(["browser_snapshot"]));
    p.stop().await;
}

#[actix_web::test]
async fn the_journal_reports_added_removed_and_modified_tools() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.json");
    let a = upstream(
        vec![
            tool("a-keep", "Keep.", &[]),
            tool("a-change", "Before.", &[]),
            tool("a-drop", "Drop.", &[]),
        ],
        true,
        false,
    )
    .await;
    let p = start_proxy(
        vec![upstream_config("a", &a.url)],
        catalog_config(Some(manifest.clone())),
    )
    .await;
    a.control.set_tools(vec![
        tool("a-keep", "Keep.", &[]),
        tool("a-change", "After: now also deletes everything.", &[]),
        tool("a-new", "New.", &[]),
    ]);
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    let sc = &r["structuredContent"];
    assert_eq!(sc["added"], json!(["a-new"]));
    assert_eq!(sc["removed"], json!(["a-drop"]));
    assert_eq!(sc["modified"], json!(["a-change"]));
    assert_eq!(sc["changed"], true);
    assert_ne!(sc["fingerprint"], sc["previous_fingerprint"]);
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let hashes = m["upstreams"][0]["hashes"].as_object().unwrap();
    assert_eq!(hashes.len(), 3);
    // Nothing changed since: an empty journal.
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["structuredContent"]["modified"], json!([]));
    assert_eq!(r["structuredContent"]["changed"], false);
    p.stop().await;
}

fn annotated(name: &str, read_only: bool, destructive: bool) -> Value {
    json!({"name": name, "description": format!("Tool {name} for mail work."), "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": read_only, "destructiveHint": destructive}})
}

#[actix_web::test]
async fn denied_tools_are_unreachable_by_every_path() {
    let a = upstream(
        vec![
            annotated("mail-read", true, false),
            annotated("mail-delete", false, true),
            annotated("mail-send", false, false),
        ],
        true,
        false,
    )
    .await;
    let policy = Policy {
        deny: vec!["*delete*".into()],
        ..Default::default()
    };
    let p = start_proxy(
        vec![upstream_config("a", &a.url)],
        proxy_actors::catalog::CatalogConfig {
            policy,
            ..catalog_config(None)
        },
    )
    .await;
    // search
    let s = call(&p.url, "mcp_search", json!({"query": "mail-delete", "limit": 25})).await;
    let names: Vec<&str> = s["structuredContent"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"mail-delete"), "{names:?}");
    // describe
    let d = call(&p.url, "mcp_describe", json!({"names": ["mail-delete"]})).await;
    assert_eq!(d["structuredContent"]["not_found"], json!(["mail-delete"]));
    assert!(!d.to_string().contains("\"mail-delete\",\"source\""));
    // call, by exact name (after a re-list it is still unknown)
    let c = mcp_call(&p.url, "mail-delete", json!({})).await;
    assert_eq!(c["isError"], true);
    assert_eq!(a.control.stats().tools_call, 0);
    // tools/call of the raw name
    let (_, raw) = rpc(&p.url, "tools/call", json!({"name": "mail-delete", "arguments": {}})).await;
    assert_eq!(raw["error"]["code"], -32602);
    // listing and refresh counts
    let (_, init) = rpc(
        &p.url,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert!(!init["result"]["instructions"].as_str().unwrap().contains("mail-delete"));
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["structuredContent"]["total_tools"], 2);
    assert_eq!(r["structuredContent"]["sources"], json!({"mail": 2}));
    assert_eq!(
        a.control.stats().tools_call,
        0,
        "the denied tool never reached the upstream"
    );
    p.stop().await;
}

#[actix_web::test]
async fn read_only_mode_serves_only_read_only_tools() {
    let a = upstream(
        vec![
            annotated("mail-read", true, false),
            annotated("mail-purge", true, true),
            annotated("mail-send", false, false),
        ],
        true,
        false,
    )
    .await;
    let policy = Policy {
        read_only: true,
        ..Default::default()
    };
    let p = start_proxy(
        vec![upstream_config("a", &a.url)],
        proxy_actors::catalog::CatalogConfig {
            policy,
            ..catalog_config(None)
        },
    )
    .await;
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["structuredContent"]["total_tools"], 1);
    let c = mcp_call(&p.url, "mail-send", json!({})).await;
    assert_eq!(c["isError"], true);
    let c = mcp_call(&p.url, "mail-read", json!({})).await;
    assert_ne!(c["isError"], true, "{c}");
    p.stop().await;
}

#[actix_web::test]
async fn pinned_tools_are_listed_and_callable_natively() {
    let a = upstream(
        vec![
            tool("demo-echo", "Echo the text.", &["text"]),
            tool("demo-other", "Other.", &[]),
        ],
        true,
        false,
    )
    .await;
    let policy = Policy {
        pinned: vec!["demo-echo".into()],
        ..Default::default()
    };
    let p = start_proxy(
        vec![upstream_config("a", &a.url)],
        proxy_actors::catalog::CatalogConfig {
            policy,
            ..catalog_config(None)
        },
    )
    .await;
    let (_, list) = rpc(&p.url, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["mcp_search", "mcp_describe", "mcp_call", "mcp_refresh", "demo-echo"]
    );
    let r = call(&p.url, "demo-echo", json!({"text": "native"})).await;
    assert_eq!(r["content"][0]["text"], "native");
    // Pinned tools still get the local argument checks.
    let r = call(&p.url, "demo-echo", json!({})).await;
    assert_eq!(r["isError"], true);
    // Unpinned upstream tools are not callable natively.
    let (_, raw) = rpc(&p.url, "tools/call", json!({"name": "demo-other", "arguments": {}})).await;
    assert_eq!(raw["error"]["code"], -32602);
    p.stop().await;
}

#[actix_web::test]
async fn replies_above_the_result_cap_are_refused_not_buffered() {
    let a = upstream(vec![tool("a-one", "One.", &[])], true, false).await;
    let p = start_proxy(vec![upstream_config("a", &a.url)], catalog_config(None)).await;
    // A tool list of ~2 MiB against the harness's 1 MiB cap.
    let huge = "x".repeat(2 * 1024 * 1024);
    a.control
        .set_tools(vec![tool("a-one", "One.", &[]), tool("a-huge", &huge, &[])]);
    let r = call(&p.url, "mcp_refresh", json!({})).await;
    assert_eq!(r["isError"], true, "{}", &r.to_string()[..300.min(r.to_string().len())]);
    let text = r["structuredContent"].to_string();
    assert!(text.contains("larger than the 1048576-byte cap"), "{text}");
    // The catalog kept its tools and the proxy is fine.
    let s = call(&p.url, "mcp_search", json!({"query": "a-one"})).await;
    assert_eq!(s["structuredContent"]["results"][0]["name"], "a-one");
    p.stop().await;
}

#[actix_web::test]
async fn search_and_describe_answer_while_a_refresh_runs() {
    let a = upstream(vec![tool("a-one", "Send a postcard.", &[])], true, false).await;
    let p = start_proxy(vec![upstream_config("a", &a.url)], catalog_config(None)).await;
    a.control.set_list_delay(Duration::from_millis(2000));
    let url = p.url.clone();
    let refresh = actix_web::rt::spawn(async move { call(&url, "mcp_refresh", json!({})).await });
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    let s = call(&p.url, "mcp_search", json!({"query": "postcard"})).await;
    let d = call(&p.url, "mcp_describe", json!({"names": ["a-one"]})).await;
    let waited = started.elapsed();
    assert_eq!(s["structuredContent"]["results"][0]["name"], "a-one");
    assert_eq!(d["structuredContent"]["not_found"], json!([]));
    assert!(
        waited < Duration::from_millis(1500),
        "search waited for the refresh: {waited:?}"
    );
    assert_ne!(refresh.await.unwrap()["isError"], true);
    p.stop().await;
}
