//! `mcp-search-proxy demo-upstream`: only the embedded demo upstream, on a given loopback
//! address, serving the built-in demo catalog or the tools of a catalog file. Benchmarks use it
//! as a fast fake upstream; offline stacks use it as something to point the proxy at.
//!
//! Tools without an implementation answer a trivial text result that echoes their arguments
//! (see `demo::tools`), so any real catalog becomes a callable upstream.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::config::LogFormat;
use demo_upstream::{self as demo, UpstreamOptions};

/// Run only the embedded demo upstream.
#[derive(clap::Args, Debug)]
pub struct UpstreamArgs {
    /// Address to listen on (port 0 picks a free port; the URL is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub bind: String,
    /// Catalog file to serve: `{"tools": [...]}` or `{"upstreams": [{"label", "tools"}]}`
    /// (every upstream's tools, concatenated). Default: the built-in demo catalog.
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// Mint no `Mcp-Session-Id` (stateless server).
    #[arg(long)]
    pub stateless: bool,
    /// Answer requests as `text/event-stream` instead of `application/json`.
    #[arg(long)]
    pub sse: bool,
    /// Split `tools/list` into pages of this many tools.
    #[arg(long)]
    pub page_size: Option<usize>,
    /// Make every `tools/call` wait this many milliseconds before answering (an I/O-bound tool).
    #[arg(long, default_value_t = 0)]
    pub call_delay_ms: u64,
}

impl UpstreamArgs {
    pub fn run(&self) -> ExitCode {
        let tools = match &self.catalog {
            None => demo::demo_tools(),
            Some(path) => match load_tools(path) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("mcp-search-proxy demo-upstream: {e}");
                    return ExitCode::from(2);
                }
            },
        };
        let level = std::env::var("LOG_LEVEL")
            .ok()
            .and_then(|v| v.trim().parse::<log::LevelFilter>().ok())
            .unwrap_or(log::LevelFilter::Warn);
        crate::logging::init(level, LogFormat::Text);

        let n = tools.len();
        let opts = UpstreamOptions {
            tools,
            stateful: !self.stateless,
            sse: self.sse,
            page_size: self.page_size,
            name: "mcp-search-proxy-demo-upstream".to_string(),
            ..UpstreamOptions::default()
        };
        let bind = self.bind.clone();
        let delay = std::time::Duration::from_millis(self.call_delay_ms);
        let out = actix_web::rt::System::new().block_on(async move {
            let upstream = demo::start(opts, &bind).await?;
            upstream.control.set_call_delay(delay);
            println!("{} ({n} tools)", upstream.url);
            let _ = std::io::stdout().flush();
            crate::server::shutdown_signal().await;
            upstream.stop().await;
            Ok::<(), std::io::Error>(())
        });
        match out {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp-search-proxy demo-upstream: {}: {e}", self.bind);
                ExitCode::FAILURE
            }
        }
    }
}

/// The tool definitions of a catalog file, verbatim (unknown keys kept: they are served as is).
fn load_tools(path: &std::path::Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    tools_of(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses `{"tools": [...]}` or `{"upstreams": [{"tools": [...]}, ...]}` into one tool list.
fn tools_of(text: &str) -> Result<Vec<Value>, String> {
    let mut file: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(Value::Array(tools)) = file.get_mut("tools").map(Value::take) {
        return Ok(tools);
    }
    if let Some(Value::Array(ups)) = file.get_mut("upstreams").map(Value::take) {
        let mut out = Vec::new();
        for mut u in ups {
            if let Some(Value::Array(tools)) = u.get_mut("tools").map(Value::take) {
                out.extend(tools);
            }
        }
        return Ok(out);
    }
    Err("expected a `tools` or an `upstreams` array".into())
}

#[cfg(test)]
mod tests {
    use super::tools_of;

    #[test]
    fn both_catalog_shapes_are_read() {
        let flat = tools_of(r#"{"tools":[{"name":"a"},{"name":"b"}]}"#).unwrap();
        assert_eq!(flat.len(), 2);
        let split =
            tools_of(r#"{"upstreams":[{"label":"x","tools":[{"name":"a"}]},{"label":"y","tools":[{"name":"b"}]}]}"#)
                .unwrap();
        assert_eq!(split[1]["name"], "b");
        assert!(tools_of(r#"{"x":1}"#).is_err());
        assert!(tools_of("nope").is_err());
    }
}
