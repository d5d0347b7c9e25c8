//! `mcp_call` against a snapshot: resolve the name (with safe repairs), repair the arguments,
//! validate them against the tool's full input schema ([`prepare`]); and how a call ended
//! ([`CallOutcome`]), typed, for the metrics and the reply alike.
//!
//! Sending the prepared call to the upstream that owns the tool is the application's (it needs
//! the network); it turns what the upstream answered into a [`CallOutcome`] with
//! [`CallOutcome::relayed`] or [`CallOutcome::Failed`].

use std::sync::Arc;

use mcp_wire::raw::RawObject;
use serde_json::{json, Value};

use super::names::closest_names;
use super::signature::signature;
use crate::args::{self, Violation};
use crate::catalog::resolve::{resolve, Resolution};
use crate::catalog::snapshot::clip;
use crate::catalog::Snapshot;

/// `_meta` key under which a relayed result lists the repairs made to the call.
pub const REPAIRS_META_KEY: &str = "mcp-search-proxy/repairs";

/// The outcome of checking an `mcp_call` against a catalog snapshot.
#[derive(Debug)]
pub enum Prepared {
    /// Ready to send: the resolved tool, repaired arguments, and notes on what was repaired.
    Ready {
        index: usize,
        arguments: Value,
        repairs: Vec<String>,
        /// The tool's parsed input schema (shared with the snapshot's cache).
        input_schema: Arc<Value>,
    },
    /// No tool by that name, and no unambiguous repair.
    Unknown,
    /// The call would fail; nothing is sent. `index` is the resolved tool.
    Rejected { index: usize, rejection: Rejection },
}

/// Why arguments were refused before the call was sent.
#[derive(Debug, Clone)]
pub enum Rejection {
    /// Required parameters are absent.
    Missing {
        tool: String,
        missing: Vec<String>,
        required: Vec<String>,
        schema: Arc<Value>,
    },
    /// The arguments break the input schema.
    Invalid {
        tool: String,
        violations: Vec<Violation>,
        schema: Arc<Value>,
    },
}

/// Resolves the name (with repairs), repairs the arguments and validates them against the
/// tool's full input schema. Pure over the snapshot.
pub fn prepare(snap: &Snapshot, name: &str, arguments: Value) -> Prepared {
    let mut repairs = Vec::new();
    let index = match resolve(snap, name) {
        Resolution::Exact(i) => i,
        Resolution::Repaired { index, rule } => {
            repairs.push(format!(
                "name {name:?} resolved to {:?} ({rule})",
                snap.tools[index].tool.name
            ));
            index
        }
        Resolution::Unknown => return Prepared::Unknown,
    };
    let tool = &snap.tools[index];
    let compiled = match snap.validators.get(index) {
        Some(cache) => cache.get(|| tool.tool.input_schema()),
        None => Arc::new(args::CompiledSchema::new(tool.tool.input_schema())),
    };
    let schema = &*compiled.schema;
    let (arguments, notes) = args::coerce(schema, arguments);
    repairs.extend(notes);
    let missing = missing_required(schema, &arguments);
    if !missing.is_empty() {
        let rejection = Rejection::Missing {
            tool: tool.tool.name.clone(),
            missing,
            required: tool.tool.required_params(),
            schema: compiled.schema.clone(),
        };
        return Prepared::Rejected { index, rejection };
    }
    let violations = args::validate(compiled.validator.as_deref(), &arguments);
    if !violations.is_empty() {
        let rejection = Rejection::Invalid {
            tool: tool.tool.name.clone(),
            violations,
            schema: compiled.schema.clone(),
        };
        return Prepared::Rejected { index, rejection };
    }
    Prepared::Ready {
        index,
        arguments,
        repairs,
        input_schema: compiled.schema.clone(),
    }
}

/// Names in the schema's `required` that the arguments lack.
pub fn missing_required(schema: &Value, arguments: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|p| arguments.get(p).is_none())
        .map(str::to_string)
        .collect()
}

/// One violation in words: where (a parameter, `items/0/name`, or the arguments as a whole)
/// and what the validator said, clipped.
fn violation_words(v: &Violation) -> String {
    let at = v.path.trim_start_matches('/');
    let what = clip(&v.message, 120);
    if at.is_empty() {
        format!("the arguments: {what}")
    } else {
        format!("{at}: {what}")
    }
}

impl Rejection {
    /// What is wrong and how to fix it, in words a model acts on (see
    /// [`super::outcome::ERROR_TEXT_CHARS`]): the tool, the arguments at fault, and its
    /// parameters' line, so that the next call can be right without another lookup.
    pub fn message(&self) -> String {
        match self {
            Rejection::Missing {
                tool, missing, schema, ..
            } => format!(
                "{tool} was not called: the required argument{} {} {} missing. Its parameters: {}. Call it again with them.",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" },
                signature(schema)
            ),
            Rejection::Invalid {
                tool,
                violations,
                schema,
            } => {
                let shown: Vec<String> = violations.iter().take(3).map(violation_words).collect();
                let more = match violations.len().saturating_sub(3) {
                    0 => String::new(),
                    n => format!("; and {n} more"),
                };
                format!(
                    "{tool} was not called: its arguments do not match its schema ({}{more}). Its parameters: {}. Fix the arguments and call it again.",
                    shown.join("; "),
                    signature(schema)
                )
            }
        }
    }

    /// The structured error: the side, what is wrong in detail, the schema to follow.
    pub fn to_json(&self) -> Value {
        match self {
            Rejection::Missing {
                tool,
                missing,
                required,
                schema,
            } => {
                json!({"side": "client", "tool": tool, "missing": missing, "required": required, "inputSchema": &**schema})
            }
            Rejection::Invalid {
                tool,
                violations,
                schema,
            } => json!({"side": "client", "tool": tool, "violations": violations, "inputSchema": &**schema}),
        }
    }
}

/// How a call of an upstream tool ended. `upstream` and `tool` are the catalog's own names
/// (bounded label values for metrics).
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// The upstream answered; its result is relayed (see [`CallOutcome::relayed`]): its
    /// members are the raw JSON the upstream sent.
    Relayed {
        upstream: String,
        tool: String,
        result: RawObject,
        /// The tool itself reported an error (`isError`).
        tool_error: bool,
    },
    /// The upstream (or the way to it) failed; nothing usable came back.
    Failed(UpstreamFailure),
    /// The arguments were refused; nothing was sent.
    Rejected {
        upstream: String,
        tool: String,
        rejection: Rejection,
    },
    /// No connected server offers the name, also after one re-listing.
    UnknownTool { name: String, did_you_mean: Vec<String> },
    /// The tool's upstream has no actor (a configuration that changed under a manifest).
    NoRoute { upstream: String, tool: String },
    /// 2026-07-28: the tool asks the client something before it can finish. The client
    /// answers `requests` (an `inputRequests` map) and retries the same `mcp_call` with
    /// `inputResponses` and `state` (the proxy's sealed `requestState`).
    InputRequired {
        upstream: String,
        tool: String,
        requests: Value,
        state: String,
    },
    /// A retry whose `requestState` was refused, or whose held call is gone; nothing was sent.
    StateRefused { tool: String, message: String },
}

/// An upstream that failed a call: what went wrong, what to do, whether a retry can help.
#[derive(Debug, Clone)]
pub struct UpstreamFailure {
    pub upstream: String,
    pub tool: String,
    pub error: String,
    pub advice: String,
    pub retryable: bool,
    /// The call was cancelled (client gone, shutdown) rather than failed.
    pub cancelled: bool,
    /// The client, not the upstream, failed the call (it gave no usable answer to the tool's
    /// question).
    pub client_side: bool,
}

impl CallOutcome {
    /// An upstream's result as relayed to the client: its protocol envelope removed, and the
    /// repairs made to the call listed in `_meta` (so the model gets it right next time).
    /// Only `resultType` and `_meta` are read; every other member passes through as it came.
    pub fn relayed(upstream: &str, tool: &str, mut result: RawObject, repairs: &[String]) -> CallOutcome {
        let tool_error = result.is_true("isError");
        strip_envelope(&mut result);
        if !repairs.is_empty() {
            let mut meta = result.object("_meta").unwrap_or_default();
            meta.insert(REPAIRS_META_KEY.into(), json!(repairs));
            result.insert_value("_meta", &meta);
        }
        CallOutcome::Relayed {
            upstream: upstream.to_string(),
            tool: tool.to_string(),
            result,
            tool_error,
        }
    }

    /// The error for a name no upstream offers, with the closest names.
    pub fn unknown_tool(snap: &Snapshot, name: &str) -> CallOutcome {
        CallOutcome::UnknownTool {
            name: name.to_string(),
            did_you_mean: closest_names(snap, name),
        }
    }

    /// Whether the client gets an `isError` result.
    pub fn is_error(&self) -> bool {
        match self {
            CallOutcome::Relayed { tool_error, .. } => *tool_error,
            CallOutcome::InputRequired { .. } => false,
            _ => true,
        }
    }
}

/// Removes what belongs to the upstream's protocol envelope rather than to the tool result
/// (`resultType`, the upstream's `io.modelcontextprotocol/*` `_meta` keys such as its
/// serverInfo): the proxy answers in its client's era and stamps its own.
fn strip_envelope(result: &mut RawObject) {
    result.remove("resultType");
    let Some(mut meta) = result.object("_meta") else { return };
    let before = meta.len();
    meta.retain(|k, _| !k.starts_with(mcp_wire::modern::RESERVED_META_PREFIX));
    if meta.is_empty() {
        result.remove("_meta");
    } else if meta.len() < before {
        result.insert_value("_meta", &meta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_envelope_fields_are_not_relayed() {
        let text = |r: &RawObject| serde_json::to_string(r).unwrap();
        let mut r = RawObject::parse(
            r#"{"content": [ ], "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up"}, "vendor/x": 1}}"#,
        )
        .unwrap();
        strip_envelope(&mut r);
        assert_eq!(text(&r), r#"{"content":[ ],"_meta":{"vendor/x":1}}"#);
        let mut r =
            RawObject::parse(r#"{"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": {}}}"#).unwrap();
        strip_envelope(&mut r);
        assert_eq!(text(&r), r#"{"content":[]}"#);
        let mut r = RawObject::parse(r#"{"_meta": {"vendor/x": [1, 2]}, "content": []}"#).unwrap();
        strip_envelope(&mut r);
        assert_eq!(
            text(&r),
            r#"{"_meta":{"vendor/x": [1, 2]},"content":[]}"#,
            "untouched when nothing is removed"
        );
    }

    #[test]
    fn a_relayed_result_keeps_its_members_and_gains_the_repairs() {
        let r =
            RawObject::parse(r#"{"content": [{"type": "text", "text": "1.50"}], "isError": true, "_meta": {"v": 1}}"#)
                .unwrap();
        let CallOutcome::Relayed { result, tool_error, .. } =
            CallOutcome::relayed("up", "t", r, &["name fixed".into()])
        else {
            panic!("relayed")
        };
        assert!(tool_error);
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            r#"{"content":[{"type": "text", "text": "1.50"}],"isError":true,"_meta":{"v":1,"mcp-search-proxy/repairs":["name fixed"]}}"#
        );
    }
}
