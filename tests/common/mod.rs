//! Shared harness of the integration tests: fake upstreams (the embedded demo server with
//! fault injection) and an in-process proxy on port 0, driven over real HTTP.
#![allow(dead_code)]

#[path = "../support/shared_dir.rs"]
pub mod shared_dir;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use serde_json::{json, Value};

use demo_upstream::{self as demo, RunningUpstream, UpstreamOptions};
use mcp_search_proxy::config::UpstreamConfig;
use mcp_search_proxy::http::HttpSettings;
use mcp_search_proxy::server::{self, Proxy};
use proxy_actors::catalog::CatalogConfig;

/// A tool definition with the given name and required parameters.
pub fn tool(name: &str, description: &str, required: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> = required
        .iter()
        .map(|r| (r.to_string(), json!({"type": "string"})))
        .collect();
    json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": props, "required": required}})
}

/// Starts a fake upstream.
pub async fn upstream(tools: Vec<Value>, stateful: bool, sse: bool) -> RunningUpstream {
    let opts = UpstreamOptions {
        tools,
        stateful,
        sse,
        ..UpstreamOptions::default()
    };
    demo::start(opts, "127.0.0.1:0").await.expect("fake upstream starts")
}

pub fn upstream_config(label: &str, url: &str) -> UpstreamConfig {
    UpstreamConfig {
        label: label.into(),
        url: url.into(),
        token: None,
        timeout: Duration::from_secs(10),
    }
}

pub struct TestProxy {
    pub url: String,
    pub base: String,
    pub proxy: Proxy,
    handle: ServerHandle,
    /// The HTTP layer's shared state (e.g. to drive the shutdown lifecycle).
    pub state: actix_web::web::Data<mcp_search_proxy::http::AppState>,
}

impl TestProxy {
    /// The catalog's refresh activity.
    pub async fn catalog_status(&self) -> proxy_actors::catalog::CatalogStatus {
        self.proxy
            .catalog
            .send(proxy_actors::catalog::GetCatalogStatus)
            .await
            .expect("catalog actor running")
    }

    /// The server's handle (graceful stop).
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }
}

impl TestProxy {
    pub async fn stop(self) {
        self.handle.stop(false).await;
        self.proxy.stop();
    }
}

/// Catalog settings for tests: no TTL, no cool-down, no refresh rate limit.
pub fn catalog_config(manifest: Option<std::path::PathBuf>) -> CatalogConfig {
    CatalogConfig {
        manifest_path: manifest,
        ttl: None,
        unknown_tool_cooldown: Duration::ZERO,
        min_refresh_interval: Duration::ZERO,
        describe: mcp_search_proxy::advice::describe,
        ..CatalogConfig::default()
    }
}

pub fn settings() -> HttpSettings {
    HttpSettings {
        allowed_origins: vec!["https://chat.example.com".into()],
        max_body_bytes: 64 * 1024,
        listing_max_chars: 6000,
        ..HttpSettings::default()
    }
}

/// Starts a proxy in front of `upstreams` and waits for its startup refresh to settle.
pub async fn start_proxy(upstreams: Vec<UpstreamConfig>, catalog: CatalogConfig) -> TestProxy {
    start_proxy_with(upstreams, catalog, settings(), server::ServerLimits::default()).await
}

/// [`start_proxy`] with its HTTP settings and server limits given.
pub async fn start_proxy_with(
    upstreams: Vec<UpstreamConfig>,
    catalog: CatalogConfig,
    settings: HttpSettings,
    limits: server::ServerLimits,
) -> TestProxy {
    let network = upstream_http::Network::direct().expect("the TLS configuration builds");
    start_proxy_full(upstreams, catalog, settings, limits, &network, None).await
}

/// [`start_proxy_with`] with the upstream network (TLS trust, egress proxies) given.
pub async fn start_proxy_on(
    upstreams: Vec<UpstreamConfig>,
    catalog: CatalogConfig,
    settings: HttpSettings,
    limits: server::ServerLimits,
    network: &upstream_http::Network,
) -> TestProxy {
    start_proxy_full(upstreams, catalog, settings, limits, network, None).await
}

/// [`start_proxy`] with the semantic arm's model directory (`EMBED_MODEL`).
pub async fn start_proxy_semantic(
    upstreams: Vec<UpstreamConfig>,
    catalog: CatalogConfig,
    embed_model: Option<std::path::PathBuf>,
) -> TestProxy {
    let network = upstream_http::Network::direct().expect("the TLS configuration builds");
    start_proxy_full(
        upstreams,
        catalog,
        settings(),
        server::ServerLimits::default(),
        &network,
        embed_model,
    )
    .await
}

async fn start_proxy_full(
    upstreams: Vec<UpstreamConfig>,
    catalog: CatalogConfig,
    settings: HttpSettings,
    limits: server::ServerLimits,
    network: &upstream_http::Network,
    embed_model: Option<std::path::PathBuf>,
) -> TestProxy {
    let proxy = Proxy::start_with(&upstreams, catalog, 1024 * 1024, network, embed_model);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let state = proxy.app_state(settings);
    let server = server::http_server(state.clone(), listener, limits).unwrap();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    let base = format!("http://{addr}");
    let tp = TestProxy {
        url: format!("{base}/mcp"),
        base,
        proxy,
        handle,
        state,
    };
    settle(&tp).await;
    tp
}

/// Waits until the startup refresh has finished (a fan-out ran and the catalog is idle).
pub async fn settle(tp: &TestProxy) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = tp.catalog_status().await;
        if status.fanouts >= 1 && !status.refreshing {
            return;
        }
        if Instant::now() > deadline {
            panic!("proxy did not settle");
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn client() -> awc::Client {
    awc::Client::builder().timeout(Duration::from_secs(30)).finish()
}

/// POSTs a raw body with the standard MCP headers; returns status, headers and body text.
pub async fn post_raw(
    url: &str,
    body: impl Into<bytes::Bytes>,
    extra: &[(&str, &str)],
) -> (u16, awc::http::header::HeaderMap, String) {
    let mut req = client()
        .post(url)
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("Accept", "application/json, text/event-stream"));
    for (k, v) in extra {
        req = req.insert_header((*k, *v));
    }
    let mut resp = req.send_body(body.into()).await.expect("request sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.body().limit(64 * 1024 * 1024).await.expect("body read");
    (status, headers, String::from_utf8_lossy(&bytes).into_owned())
}

/// Sends a JSON-RPC request and returns (status, parsed body).
pub async fn rpc(url: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let (status, _, text) = post_raw(url, body, &[]).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Calls one of the proxy's tools and returns the `tools/call` result.
pub async fn call(url: &str, tool: &str, args: Value) -> Value {
    let (status, body) = rpc(url, "tools/call", json!({"name": tool, "arguments": args})).await;
    assert_eq!(status, 200, "tools/call {tool}: {body}");
    body.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("tools/call {tool} has no result: {body}"))
}

/// `mcp_call` of an upstream tool.
pub async fn mcp_call(url: &str, name: &str, arguments: Value) -> Value {
    call(url, "mcp_call", json!({"name": name, "arguments": arguments})).await
}

/// The count a `counter` tool returned.
pub fn count_of(result: &Value) -> u64 {
    result["structuredContent"]["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("not a counter result: {result}"))
}

pub async fn get(url: &str) -> (u16, String) {
    let mut resp = client().get(url).send().await.expect("request sent");
    let status = resp.status().as_u16();
    let bytes = resp.body().await.unwrap_or_default();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// An `mcp_refresh` result's report for the upstream `label` (on success or in its error).
pub fn report_of<'a>(refresh: &'a Value, label: &str) -> &'a Value {
    let sc = &refresh["structuredContent"];
    let ups = sc["upstreams"]
        .as_array()
        .or_else(|| sc["error"]["upstreams"].as_array())
        .unwrap_or_else(|| panic!("no upstream reports: {refresh}"));
    ups.iter()
        .find(|u| u["label"] == label)
        .unwrap_or_else(|| panic!("no report for {label}: {refresh}"))
}

/// The message of an `isError` result from the proxy's four tools.
pub fn error_message(r: &Value) -> String {
    r["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error result: {r}"))
        .to_string()
}
