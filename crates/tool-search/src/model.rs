//! The catalog's own model: an upstream tool plus where it came from.
//!
//! Pure data, no actix: the search index, the manifest, the CLI's catalog loader and the
//! catalog actor all share it, so `search-eval search` ranks exactly as `mcp_search` does.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use mcp_wire::types::Tool;

/// A tool in the merged catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogTool {
    /// The upstream definition, verbatim; shared with the upstream's listing (one copy each).
    pub tool: Arc<Tool>,
    /// The group a model sees it under: an aggregator's `server-` name prefix, or the upstream
    /// label for an upstream whose names carry no shared prefix.
    pub source: String,
    /// Label of the upstream that owns (and is routed) the tool.
    pub upstream: String,
}

/// Assigns each tool of one upstream its source.
///
/// A name prefix before the first `-` counts as a source when at least two tools of the same
/// upstream share it (LiteLLM names tools `server-tool`); any other tool belongs to the
/// upstream's own label. Deterministic and independent of tool order.
pub fn assign_sources(upstream_label: &str, tools: Vec<Arc<Tool>>) -> Vec<CatalogTool> {
    use std::collections::HashMap;
    let mut prefix_counts: HashMap<String, usize> = HashMap::new();
    for t in &tools {
        if let Some(p) = name_prefix(&t.name) {
            *prefix_counts.entry(p.to_string()).or_default() += 1;
        }
    }
    tools
        .into_iter()
        .map(|tool| {
            let source = match name_prefix(&tool.name) {
                Some(p) if prefix_counts.get(p).copied().unwrap_or(0) >= 2 => p.to_string(),
                _ => upstream_label.to_string(),
            };
            CatalogTool {
                tool,
                source,
                upstream: upstream_label.to_string(),
            }
        })
        .collect()
}

/// The `server` part of a `server-tool` name, if the name has a non-empty one.
pub fn name_prefix(name: &str) -> Option<&str> {
    match name.split_once('-') {
        Some((p, rest)) if !p.is_empty() && !rest.is_empty() => Some(p),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name})).unwrap()
    }

    #[test]
    fn shared_prefixes_become_sources_and_singletons_keep_the_label() {
        let tools = vec![
            tool("gmail-send"),
            tool("gmail-list"),
            tool("browser_click"),
            tool("lonely-tool"),
        ];
        let out = assign_sources("agg", tools.into_iter().map(Arc::new).collect());
        let sources: Vec<&str> = out.iter().map(|t| t.source.as_str()).collect();
        assert_eq!(sources, ["gmail", "gmail", "agg", "agg"]);
        assert!(out.iter().all(|t| t.upstream == "agg"));
    }

    #[test]
    fn prefix_needs_both_sides() {
        assert_eq!(name_prefix("-x"), None);
        assert_eq!(name_prefix("x-"), None);
        assert_eq!(name_prefix("calendar-create-event"), Some("calendar"));
    }
}
