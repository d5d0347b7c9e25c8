//! Wire types of the MCP protocol that the proxy reads and writes.
//!
//! Lenient by design: every struct keeps the fields it does not know in `extra`, so a tool
//! definition or a result passes through the proxy unchanged even when a newer upstream adds
//! fields this crate has never heard of.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool definition as an upstream's `tools/list` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The upstream's own name for the tool; the proxy routes by it.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kept verbatim (never dereferenced); `{}` when an upstream omits it.
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    #[serde(rename = "outputSchema", default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Fields this crate does not model (icons, `_meta`, execution, ...), passed through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

impl Tool {
    /// The description, or `""` when the upstream gave none.
    pub fn description_str(&self) -> &str {
        self.description.as_deref().unwrap_or("")
    }

    /// Names listed in the input schema's top-level `required` array, in schema order.
    pub fn required_params(&self) -> Vec<&str> {
        self.input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Top-level property names of the input schema, in schema order.
    pub fn param_names(&self) -> Vec<&str> {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}
