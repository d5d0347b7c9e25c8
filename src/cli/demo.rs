//! `mcp-search-proxy demo`: the proxy on 127.0.0.1:8092 in front of an embedded demo
//! upstream (a real MCP endpoint on its own loopback port), so the whole path can be tried
//! with no other server.

use std::net::TcpListener;

use crate::config::{Config, LogFormat, UpstreamConfig};
use crate::server;
use demo_upstream::{self as demo, UpstreamOptions};

/// Settings of the demo run (the environment may override port and logging).
pub struct DemoSettings {
    pub port: u16,
    pub log_level: log::LevelFilter,
    pub log_format: LogFormat,
    /// The embedding model (`EMBED_MODEL`, or the one `scripts/fetch-model.sh` installed):
    /// hybrid search; `None`: lexical.
    pub embed_model: Option<std::path::PathBuf>,
}

pub async fn run(settings: DemoSettings) -> std::io::Result<()> {
    let upstream = demo::start(UpstreamOptions::demo(), "127.0.0.1:0").await?;
    let cfg = Config {
        port: settings.port,
        log_level: settings.log_level,
        log_format: settings.log_format,
        embed_model: settings.embed_model.clone(),
        ..Config::for_upstreams(vec![UpstreamConfig {
            label: "demo".into(),
            url: upstream.url.clone(),
            token: None,
            timeout: crate::config::DEFAULT_TIMEOUT,
        }])
    };
    let listener = TcpListener::bind((cfg.bind_addr.as_str(), cfg.port))?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!(
        "mcp-search-proxy demo\n\
         \n  MCP endpoint (register this in your client): {url}\
         \n  embedded demo upstream: {up} ({n} tools)\
         \n  search: {search}\
         \n\n  try it:\
         \n  curl -s {url} -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\
         \n    -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"mcp_search\",\"arguments\":{{\"query\":\"send email\"}}}}}}'\
         \n\n  Ctrl-C stops it.\n",
        up = upstream.url,
        n = demo::demo_tools().len(),
        search = match &settings.embed_model {
            Some(dir) => format!("hybrid, with the embedding model at {} (GET /readyz says when it is ready)", dir.display()),
            None => "lexical (scripts/fetch-model.sh installs the embedding model for hybrid search)".to_owned(),
        },
    );
    let out = server::run(cfg, listener).await;
    upstream.stop().await;
    out
}
