//! A real MCP upstream server, embedded in the binary.
//!
//! The proxy is only interesting with something behind it, and its integration tests need an
//! upstream whose faults they control. Both needs are met by one in-process server instead of
//! a Python or Node fixture: `mcp-search-proxy demo` starts it on a loopback port with the
//! invented catalog below, and tests start it on port 0 with their own tools and switches
//! (sessions on/off, SSE or JSON replies, bearer auth, outages, slow calls, expired sessions).
//!
//! # Layout
//! - [`server`]: the Streamable HTTP endpoint (2025-era: `initialize`, sessions,
//!   `MCP-Protocol-Version`, SSE with a priming event) and the [`UpstreamControl`] handle.
//! - `tools`: what the demo tools do once a `tools/call` has been accepted; no HTTP in it.
//! - `catalog.json`: 77 tools, 72 of eight invented SaaS providers and five `demo-*` tools that
//!   really run, named `provider-tool_name` as LiteLLM names aggregated tools. Only the `demo`
//!   provider does real work; every other tool answers with a note echoing its arguments.
//!
//! The server speaks `serde_json::Value` and has no dependency on the proxy core: it must catch
//! the core's mistakes, not share them.

#![forbid(unsafe_code)]

pub mod server;
mod tools;

pub use server::{start, RunningUpstream, Stats, UpstreamControl, UpstreamOptions};

/// The embedded demo catalog, `{"tools": [...]}`.
const CATALOG_JSON: &str = include_str!("catalog.json");

/// The tool definitions of the embedded demo catalog, in file order.
///
/// # Panics
/// Never at run time in practice: the catalog is a compile-time constant and the tests parse it.
pub fn demo_tools() -> Vec<serde_json::Value> {
    let catalog: serde_json::Value =
        serde_json::from_str(CATALOG_JSON).expect("crates/demo-upstream/src/catalog.json is valid JSON");
    match catalog.get("tools") {
        Some(serde_json::Value::Array(tools)) => tools.clone(),
        _ => panic!("crates/demo-upstream/src/catalog.json has no \"tools\" array"),
    }
}

#[cfg(test)]
mod catalog_tests {
    use super::demo_tools;
    use std::collections::BTreeSet;

    #[test]
    fn catalog_is_a_search_showcase() {
        let tools = demo_tools();
        assert!(tools.len() >= 60, "only {} tools", tools.len());

        let mut names = BTreeSet::new();
        let mut providers = BTreeSet::new();
        for tool in &tools {
            let name = tool["name"].as_str().unwrap();
            assert!(names.insert(name), "duplicate tool {name}");
            let (provider, rest) = name.split_once('-').unwrap();
            assert!(provider.chars().all(|c| c.is_ascii_lowercase()), "{name}");
            assert!(
                rest.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{name}"
            );
            providers.insert(provider);

            assert!(!tool["description"].as_str().unwrap().is_empty(), "{name}");
            let schema = &tool["inputSchema"];
            assert_eq!(schema["type"], "object", "{name}");
            let props = schema["properties"].as_object().unwrap();
            for (prop, def) in props {
                assert!(def["description"].as_str().is_some(), "{name}.{prop}");
            }
            for required in schema["required"].as_array().into_iter().flatten() {
                assert!(props.contains_key(required.as_str().unwrap()), "{name}");
            }
            if let Some(out) = tool.get("outputSchema") {
                assert_eq!(out["type"], "object", "{name}");
            }
        }
        providers.remove("demo");
        assert!(providers.len() >= 6, "{providers:?}");
        for implemented in ["echo", "add", "counter", "fail", "image"] {
            assert!(names.contains(format!("demo-{implemented}").as_str()));
        }
        let annotated = tools.iter().filter(|t| t.get("annotations").is_some());
        assert!(annotated.count() >= 20);
        let with_output = tools.iter().filter(|t| t.get("outputSchema").is_some());
        assert!(with_output.count() >= 5);
    }
}
