//! Reads a catalog from a file, for the `search` and `eval` commands, tests and benches.
//!
//! Two shapes are accepted, unknown keys ignored everywhere:
//! - `{"tools": [...]}` — a flat catalog (the bench catalogs). Its tools are one upstream,
//!   labelled `catalog`, and [`assign_sources`] decides their sources exactly as the service
//!   would; a tool left with the bare label but carrying a `server` field takes that server as
//!   its source (flat bench catalogs name the Playwright upstream's `browser_*` tools so).
//! - `{"upstreams": [{"label": "...", "tools": [...]}, ...]}` — per-upstream catalogs, which is
//!   also the shape of the proxy's manifest file (its `format`, `fingerprint`, `url`, ... keys
//!   are ignored). Each upstream goes through [`assign_sources`] under its own label.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::model::{assign_sources, CatalogTool};
use mcp_wire::types::Tool;

/// Upstream label given to the tools of a flat `{"tools": [...]}` catalog.
pub const FLAT_LABEL: &str = "catalog";

#[derive(Deserialize)]
struct Upstream {
    label: String,
    #[serde(default)]
    tools: Vec<Value>,
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    upstreams: Option<Vec<Upstream>>,
}

/// Why a catalog was not read; its message names the file (when read from a path), the
/// upstream and the tool at fault.
#[derive(Debug)]
pub enum CatalogFileError {
    /// The file could not be read.
    Io { path: PathBuf, source: std::io::Error },
    /// The text is not a catalog's JSON.
    Json(serde_json::Error),
    /// Both a `tools` and an `upstreams` array.
    BothShapes,
    /// Neither a `tools` nor an `upstreams` array.
    NoTools,
    /// Tool `index` (from 0) of `upstream` is not an MCP tool.
    Tool {
        upstream: String,
        index: usize,
        source: serde_json::Error,
    },
    /// The text of the file at `path` was refused for `source`.
    InFile {
        path: PathBuf,
        source: Box<CatalogFileError>,
    },
}

impl std::fmt::Display for CatalogFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Json(e) => write!(f, "catalog: {e}"),
            Self::BothShapes => f.write_str("catalog: both `tools` and `upstreams` given"),
            Self::NoTools => f.write_str("catalog: expected a `tools` or an `upstreams` array"),
            Self::Tool {
                upstream,
                index,
                source,
            } => write!(f, "catalog: upstream `{upstream}` tool #{index}: {source}"),
            Self::InFile { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for CatalogFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Json(e) | Self::Tool { source: e, .. } => Some(e),
            Self::InFile { source, .. } => Some(source.as_ref()),
            Self::BothShapes | Self::NoTools => None,
        }
    }
}

/// Parses a catalog file's text.
pub fn load_catalog(text: &str) -> Result<Vec<CatalogTool>, CatalogFileError> {
    let file: File = serde_json::from_str(text).map_err(CatalogFileError::Json)?;
    match (file.tools, file.upstreams) {
        (Some(tools), None) => flat(tools),
        (None, Some(ups)) => {
            let mut out = Vec::new();
            for u in ups {
                let tools = parse_tools(&u.label, u.tools)?.into_iter().map(|(t, _)| t);
                out.extend(assign_sources(&u.label, tools.map(std::sync::Arc::new).collect()));
            }
            Ok(out)
        }
        (Some(_), Some(_)) => Err(CatalogFileError::BothShapes),
        (None, None) => Err(CatalogFileError::NoTools),
    }
}

/// Reads and parses a catalog file.
pub fn load_catalog_path(path: &Path) -> Result<Vec<CatalogTool>, CatalogFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| CatalogFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_catalog(&text).map_err(|e| CatalogFileError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

fn flat(tools: Vec<Value>) -> Result<Vec<CatalogTool>, CatalogFileError> {
    let parsed = parse_tools(FLAT_LABEL, tools)?;
    let servers: Vec<Option<String>> = parsed.iter().map(|(_, s)| s.clone()).collect();
    let mut out = assign_sources(
        FLAT_LABEL,
        parsed.into_iter().map(|(t, _)| std::sync::Arc::new(t)).collect(),
    );
    for (ct, server) in out.iter_mut().zip(servers) {
        if let Some(server) = server.filter(|s| !s.is_empty()) {
            if ct.source == FLAT_LABEL {
                ct.source = server;
            }
        }
    }
    Ok(out)
}

/// Tools and their `server` field (bench catalogs carry it; the rest of the tool is kept).
fn parse_tools(label: &str, tools: Vec<Value>) -> Result<Vec<(Tool, Option<String>)>, CatalogFileError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let server = v.get("server").and_then(Value::as_str).map(String::from);
            let tool: Tool = serde_json::from_value(v).map_err(|source| CatalogFileError::Tool {
                upstream: label.to_owned(),
                index: i,
                source,
            })?;
            Ok((tool, server))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_catalog_uses_prefixes_then_server() {
        let text = r#"{"tools": [
            {"name": "gmail-send", "server": "gmail", "inputSchema": {"type": "object"}},
            {"name": "gmail-list", "server": "gmail"},
            {"name": "browser_click", "server": "playwright", "description": "Click"},
            {"name": "lonely_tool"}
        ]}"#;
        let c = load_catalog(text).unwrap();
        let got: Vec<(&str, &str, &str)> = c
            .iter()
            .map(|t| (t.tool.name.as_str(), t.source.as_str(), t.upstream.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("gmail-send", "gmail", "catalog"),
                ("gmail-list", "gmail", "catalog"),
                ("browser_click", "playwright", "catalog"),
                ("lonely_tool", "catalog", "catalog"),
            ]
        );
        assert_eq!(c[2].tool.description.as_deref(), Some("Click"));
    }

    #[test]
    fn upstreams_and_manifest_shape_ignore_unknown_keys() {
        let text = r#"{"format": 1, "fingerprint": "abc", "upstreams": [
            {"label": "agg", "url": "http://x", "tools": [{"name": "a-x"}, {"name": "a-y"}]},
            {"label": "a11y", "tools": [{"name": "audit_html", "annotations": {"title": "Audit"}}]}
        ]}"#;
        let c = load_catalog(text).unwrap();
        let got: Vec<(&str, &str)> = c.iter().map(|t| (t.source.as_str(), t.upstream.as_str())).collect();
        assert_eq!(got, [("a", "agg"), ("a", "agg"), ("a11y", "a11y")]);
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(load_catalog("[]").is_err());
        let e = load_catalog("{}").unwrap_err();
        assert!(matches!(e, CatalogFileError::NoTools));
        assert_eq!(e.to_string(), "catalog: expected a `tools` or an `upstreams` array");
        let e = load_catalog(r#"{"tools": [{"description": "no name"}]}"#).unwrap_err();
        assert!(matches!(e, CatalogFileError::Tool { index: 0, .. }));
        let e = e.to_string();
        assert!(e.starts_with("catalog: upstream `catalog` tool #0: "), "{e}");
        let e = load_catalog_path(Path::new("/nonexistent/catalog.json")).unwrap_err();
        assert!(matches!(e, CatalogFileError::Io { .. }));
        assert!(e.to_string().starts_with("/nonexistent/catalog.json: "), "{e}");
        let file = std::env::temp_dir().join(format!("catalog-file-test-{}.json", std::process::id()));
        std::fs::write(&file, r#"{"tools": [], "upstreams": []}"#).unwrap();
        let e = load_catalog_path(&file).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            e.to_string(),
            format!("{}: catalog: both `tools` and `upstreams` given", file.display())
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
