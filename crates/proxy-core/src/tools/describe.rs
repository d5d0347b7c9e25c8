//! `mcp_describe` over a snapshot: the full definitions of the named tools, and for each name
//! the catalog lacks, the closest names.

use serde_json::{json, Map, Value};

use tool_search::model::CatalogTool;

use super::names::closest_names;
use super::request::DescribeRequest;
use crate::catalog::Snapshot;

/// What `mcp_describe` found.
#[derive(Debug, Clone, Default)]
pub struct DescribeAnswer {
    /// The named tools the catalog has, in the order asked.
    pub tools: Vec<CatalogTool>,
    /// Names the catalog lacks, in the order asked.
    pub not_found: Vec<String>,
    /// For names not found: up to three close names each (names without any are left out).
    pub did_you_mean: Vec<(String, Vec<String>)>,
}

pub fn describe(snap: &Snapshot, req: &DescribeRequest) -> DescribeAnswer {
    let mut answer = DescribeAnswer::default();
    for name in &req.names {
        match snap.get(name) {
            Some(t) => answer.tools.push(t.clone()),
            None => {
                answer.not_found.push(name.clone());
                let close = closest_names(snap, name);
                if !close.is_empty() {
                    answer.did_you_mean.push((name.clone(), close));
                }
            }
        }
    }
    answer
}

impl DescribeAnswer {
    /// The structured content: `tools` (full definitions), `not_found`, and `did_you_mean`
    /// when there is any suggestion.
    pub fn to_json(&self) -> Value {
        let tools: Vec<Value> = self.tools.iter().map(definition_json).collect();
        let mut out = json!({"tools": tools, "not_found": self.not_found});
        if !self.did_you_mean.is_empty() {
            let suggestions: Map<String, Value> = self
                .did_you_mean
                .iter()
                .map(|(name, close)| (name.clone(), json!(close)))
                .collect();
            out["did_you_mean"] = Value::Object(suggestions);
        }
        out
    }
}

/// A tool's definition as `mcp_describe` shows it: name, source, title, description, input
/// and output schemas, annotations.
fn definition_json(t: &CatalogTool) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::from(t.tool.name.as_str()));
    m.insert("source".into(), Value::from(t.source.as_str()));
    if let Some(title) = &t.tool.title {
        m.insert("title".into(), Value::from(title.as_str()));
    }
    m.insert("description".into(), Value::from(t.tool.description_str()));
    m.insert("inputSchema".into(), t.tool.input_schema());
    if let Some(o) = t.tool.output_schema() {
        m.insert("outputSchema".into(), o);
    }
    if let Some(a) = t.tool.annotations() {
        m.insert("annotations".into(), a);
    }
    Value::Object(m)
}
