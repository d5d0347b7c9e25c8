//! What a model meets on its first turn, through the proxy in front of the embedded demo
//! upstream: a search hit says how to call the tool, the call it makes straight from the hit
//! succeeds even with the slips every model makes (a single address where a list is wanted, a
//! list sent as JSON text), each repair is said in `_meta`, and what fails reads as a
//! sentence, not as a JSON document.

mod common;

use common::*;
use proxy_core::tools::{ERROR_TEXT_CHARS, REPAIRS_META_KEY};
use serde_json::{json, Value};

async fn demo_proxy() -> (demo_upstream::RunningUpstream, TestProxy) {
    let up = upstream(demo_upstream::demo_tools(), false, false).await;
    let proxy = start_proxy(vec![upstream_config("demo", &up.url)], catalog_config(None)).await;
    (up, proxy)
}

/// The text of an `isError` result: words within the bound, not a JSON document.
fn error_text(r: &Value) -> String {
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().expect("a text block").to_owned();
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "a JSON document as the text: {text}"
    );
    assert!(text.chars().count() <= ERROR_TEXT_CHARS, "{text}");
    text
}

#[actix_web::test]
async fn a_call_made_straight_from_a_search_hit_succeeds() {
    let (_up, p) = demo_proxy().await;
    let r = call(&p.url, "mcp_search", json!({"query": "send an email"})).await;
    let hit = &r["structuredContent"]["results"][0];
    assert_eq!(hit["name"], "quillmail-send_email");
    let params = hit["params"].as_str().expect("a hit says how to call");
    assert!(params.starts_with("to: string[], subject: string"), "{params}");
    assert!(params.contains("cc?: string[]"), "{params}");

    // the model's usual slips: one address for the list, the copies as JSON text
    let r = mcp_call(
        &p.url,
        "quillmail-send_email",
        json!({"to": "alice@example.com", "subject": "Launch", "body": "It is delayed.", "cc": "[\"bob@example.com\"]"}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    let repairs: Vec<&str> = r["_meta"][REPAIRS_META_KEY]
        .as_array()
        .expect("the repairs are listed")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        repairs.contains(&"arguments/to: single value wrapped in a one-item array"),
        "{repairs:?}"
    );
    assert!(
        repairs.contains(&"arguments/cc: JSON text parsed as an array"),
        "{repairs:?}"
    );
}

#[actix_web::test]
async fn what_fails_reads_as_a_sentence_with_the_details_beside_it() {
    let (_up, p) = demo_proxy().await;
    // missing arguments: the tool, what is missing, its parameters
    let r = mcp_call(&p.url, "quillmail-send_email", json!({"to": ["a@example.com"]})).await;
    let text = error_text(&r);
    assert!(text.starts_with("quillmail-send_email was not called"), "{text}");
    assert!(
        text.contains("subject") && text.contains("Its parameters: to: string[]"),
        "{text}"
    );
    assert!(
        r["structuredContent"]["error"]["inputSchema"].is_object(),
        "the schema is structured"
    );

    // arguments of the wrong shape that no repair fixes
    let r = mcp_call(
        &p.url,
        "quillmail-send_email",
        json!({"to": [1, 2], "subject": {"nested": true}, "body": "x"}),
    )
    .await;
    let text = error_text(&r);
    assert!(text.contains("do not match its schema"), "{text}");
    assert!(r["structuredContent"]["error"]["violations"]
        .as_array()
        .is_some_and(|v| !v.is_empty()));

    // an unknown tool, with the closest names
    let text = error_text(&mcp_call(&p.url, "quillmail-send_mail", json!({})).await);
    assert!(
        text.starts_with("Unknown tool \"quillmail-send_mail\"") && text.contains("quillmail-send_email"),
        "{text}"
    );

    // a mistake in the proxy's own tool
    let text = error_text(&call(&p.url, "mcp_search", json!({"query": 5})).await);
    assert!(text.starts_with("The search tool (mcp_search) did nothing"), "{text}");
}
