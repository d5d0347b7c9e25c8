//! A `tools/call` of the proxy, parsed once into a typed request.
//!
//! [`ToolRequest::parse`] reads the tool name and its JSON arguments and returns what the rest
//! of the proxy works with: a [`SearchRequest`] (queries and limit), a [`DescribeRequest`]
//! (names), a [`CallRequest`] (tool name and arguments) or a refresh; or a [`UsageError`] that
//! tells the model what to fix. Every bound on a client's input to the four tools is checked
//! here (number and length of queries, the limit, number and shape of names), so nothing after
//! parsing reads the arguments' JSON again.

use serde_json::{Map, Value};

use super::definitions::{CALL, DEFAULT_LIMIT, DESCRIBE, MAX_DESCRIBE, MAX_LIMIT, MAX_QUERIES, REFRESH, SEARCH};
use super::names::check_name;
use crate::catalog::PinnedNames;
use tool_search::MAX_QUERY_CHARS;

/// Which tool a request is for: one of the four, or a pinned upstream tool called by its own
/// name (`PINNED_TOOLS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Search,
    Describe,
    Call,
    Refresh,
    Pinned,
}

impl ToolKind {
    /// The kind of a `tools/call` of `name`; `None` when this server has no such tool.
    pub fn of(name: &str, pinned: PinnedNames<'_>) -> Option<ToolKind> {
        Some(match name {
            SEARCH => ToolKind::Search,
            DESCRIBE => ToolKind::Describe,
            CALL => ToolKind::Call,
            REFRESH => ToolKind::Refresh,
            other if pinned.contains(other) => ToolKind::Pinned,
            _ => return None,
        })
    }
}

/// One tool call of the proxy, parsed and checked.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolRequest {
    Search(SearchRequest),
    Describe(DescribeRequest),
    Call(CallRequest),
    Refresh,
}

/// `mcp_search`: one query, or a list answered query by query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// The queries as given, in order (1 to [`MAX_QUERIES`], none longer than
    /// [`MAX_QUERY_CHARS`], not all blank).
    pub queries: Vec<String>,
    /// Whether the client sent a list (answered as `{"queries": [...]}`).
    pub many: bool,
    /// Hits per query, 1 to [`MAX_LIMIT`].
    pub limit: usize,
}

/// `mcp_describe`: 1 to [`MAX_DESCRIBE`] names, each a plausible tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeRequest {
    pub names: Vec<String>,
}

/// `mcp_call`, or a pinned tool called by its own name.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRequest {
    /// The name as the client wrote it (trimmed; repaired against the catalog later).
    pub name: String,
    /// The arguments, always an object.
    pub arguments: Value,
    /// Called by its own name as a pinned tool, not through `mcp_call` (not a search's
    /// follow-up: no retrieval telemetry).
    pub pinned: bool,
}

/// A mistake in a call of the proxy's tools that the model can correct: nothing was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The tool that was called.
    pub tool: ToolKind,
    /// What is wrong and what to send instead.
    pub message: String,
}

impl UsageError {
    fn new(tool: ToolKind, message: impl Into<String>) -> UsageError {
        UsageError {
            tool,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl ToolRequest {
    /// Parses a `tools/call` of `name` with its `arguments` (`null` when absent), against the
    /// snapshot's `pinned` tool names. `None`: this server has no tool of that name (neither
    /// one of the four nor a pinned tool).
    pub fn parse(name: &str, arguments: Value, pinned: PinnedNames<'_>) -> Option<Result<ToolRequest, UsageError>> {
        let kind = ToolKind::of(name, pinned)?;
        let args = match arguments {
            Value::Null => Map::new(),
            Value::Object(m) => m,
            _ => return Some(Err(UsageError::new(kind, "arguments must be an object"))),
        };
        Some(match kind {
            ToolKind::Search => search(&args).map(ToolRequest::Search),
            ToolKind::Describe => describe(&args).map(ToolRequest::Describe),
            ToolKind::Call => call(&args).map(ToolRequest::Call),
            ToolKind::Refresh => Ok(ToolRequest::Refresh),
            ToolKind::Pinned => Ok(ToolRequest::Call(CallRequest {
                name: name.to_string(),
                arguments: Value::Object(args),
                pinned: true,
            })),
        })
    }
}

/// `query` (a string or a list of up to 7 strings) and `limit`.
fn search(args: &Map<String, Value>) -> Result<SearchRequest, UsageError> {
    let usage = |m: String| UsageError::new(ToolKind::Search, m);
    let (queries, many) = match args.get("query") {
        Some(Value::String(q)) => (vec![q.clone()], false),
        Some(Value::Array(a)) => {
            let qs: Option<Vec<String>> = a.iter().map(|v| v.as_str().map(str::to_string)).collect();
            match qs {
                Some(qs) if !qs.is_empty() && qs.len() <= MAX_QUERIES => (qs, true),
                Some(qs) if qs.is_empty() => return Err(usage("query list is empty; give 1 to 7 queries".into())),
                Some(_) => return Err(usage(format!("at most {MAX_QUERIES} queries per call"))),
                None => return Err(usage("every query in the list must be a string".into())),
            }
        }
        Some(_) => return Err(usage("query must be a string or a list of strings".into())),
        None => {
            return Err(usage(
                "missing required argument `query` (what you want to do, e.g. \"send email\")".into(),
            ))
        }
    };
    if queries.iter().all(|q| q.trim().is_empty()) {
        return Err(usage(
            "query is empty; describe what you want to do, e.g. \"list calendar events\"".into(),
        ));
    }
    if let Some(q) = queries
        .iter()
        .find(|q| q.len() > MAX_QUERY_CHARS && q.chars().nth(MAX_QUERY_CHARS).is_some())
    {
        return Err(usage(format!(
            "query is {} characters long; at most {MAX_QUERY_CHARS}: describe the need in a sentence or keywords instead of pasting the whole text",
            q.chars().count()
        )));
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
        {
            Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
            _ => return Err(usage(format!("limit must be an integer from 1 to {MAX_LIMIT}"))),
        },
    };
    Ok(SearchRequest { queries, many, limit })
}

/// `names`: a list of 1 to 10 names (a single string is taken as a list of one).
fn describe(args: &Map<String, Value>) -> Result<DescribeRequest, UsageError> {
    let usage = |m: String| UsageError::new(ToolKind::Describe, m);
    let names: Vec<String> = match args.get("names") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| usage("names must be a list of tool names (strings)".into()))?,
        Some(Value::String(s)) => vec![s.clone()],
        _ => return Err(usage(
            "missing required argument `names` (a list of up to 10 exact tool names from the search tool, mcp_search)"
                .into(),
        )),
    };
    if names.is_empty() {
        return Err(usage("names is empty; give 1 to 10 tool names".into()));
    }
    if names.len() > MAX_DESCRIBE {
        return Err(usage(format!("at most {MAX_DESCRIBE} names per call; split the list")));
    }
    if let Some(e) = names.iter().find_map(|n| check_name(n).err()) {
        return Err(usage(e.to_string()));
    }
    Ok(DescribeRequest { names })
}

/// `name` and `arguments` of an `mcp_call`.
fn call(args: &Map<String, Value>) -> Result<CallRequest, UsageError> {
    let usage = |m: String| UsageError::new(ToolKind::Call, m);
    let name = match args.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            return Err(usage(
                "missing required argument `name` (the exact tool name from the search tool, mcp_search)".into(),
            ))
        }
    };
    check_name(&name).map_err(|e| usage(e.to_string()))?;
    let arguments = call_arguments(args.get("arguments")).map_err(usage)?;
    Ok(CallRequest {
        name,
        arguments,
        pinned: false,
    })
}

/// Normalises `mcp_call`'s `arguments`: missing/null/blank → `{}`, a JSON string holding an
/// object is parsed (models often send one).
fn call_arguments(arguments: Option<&Value>) -> Result<Value, String> {
    const NOT_AN_OBJECT: &str = "arguments must be a JSON object of the tool's parameters";
    match arguments {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Value::Object(Map::new())),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(NOT_AN_OBJECT.into()),
        },
        Some(_) => Err(NOT_AN_OBJECT.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A snapshot whose one tool, `pinned_tool`, is pinned.
    fn pinned_snapshot() -> crate::catalog::Snapshot {
        let tool: mcp_wire::types::Tool = serde_json::from_value(json!({"name": "pinned_tool"})).unwrap();
        crate::catalog::Snapshot::build(
            vec![crate::catalog::UpstreamState {
                label: "up".into(),
                url: "u".into(),
                tools: vec![std::sync::Arc::new(tool)],
                ..Default::default()
            }],
            1,
            &crate::policy::Policy {
                pinned: vec!["pinned_tool".into()],
                ..Default::default()
            },
        )
    }

    fn parse(name: &str, args: Value) -> Option<Result<ToolRequest, UsageError>> {
        thread_local!(static SNAP: crate::catalog::Snapshot = pinned_snapshot());
        SNAP.with(|snap| ToolRequest::parse(name, args, snap.pinned_names()))
    }

    fn usage(name: &str, args: Value) -> UsageError {
        match parse(name, args.clone()) {
            Some(Err(e)) => e,
            other => panic!("{name} {args}: expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn each_tool_parses_into_its_request() {
        assert_eq!(
            parse(SEARCH, json!({"query": "send email"})),
            Some(Ok(ToolRequest::Search(SearchRequest {
                queries: vec!["send email".into()],
                many: false,
                limit: DEFAULT_LIMIT
            })))
        );
        assert_eq!(
            parse(SEARCH, json!({"query": ["a", "b"], "limit": 3.0})),
            Some(Ok(ToolRequest::Search(SearchRequest {
                queries: vec!["a".into(), "b".into()],
                many: true,
                limit: 3
            })))
        );
        assert_eq!(
            parse(DESCRIBE, json!({"names": "x-y"})),
            Some(Ok(ToolRequest::Describe(DescribeRequest {
                names: vec!["x-y".into()]
            })))
        );
        assert_eq!(
            parse(CALL, json!({"name": " t ", "arguments": "{\"a\":1}"})),
            Some(Ok(ToolRequest::Call(CallRequest {
                name: "t".into(),
                arguments: json!({"a": 1}),
                pinned: false
            })))
        );
        assert_eq!(parse(REFRESH, Value::Null), Some(Ok(ToolRequest::Refresh)));
        assert_eq!(
            parse("pinned_tool", json!({"x": 1})),
            Some(Ok(ToolRequest::Call(CallRequest {
                name: "pinned_tool".into(),
                arguments: json!({"x": 1}),
                pinned: true
            })))
        );
        assert_eq!(parse("other_tool", json!({})), None, "no such tool here");
        assert_eq!(parse("other_tool", json!(3)), None, "the name is checked first");
    }

    #[test]
    fn search_arguments_are_bounded() {
        for bad in [
            json!({}),
            json!({"query": 3}),
            json!({"query": ""}),
            json!({"query": ["", " "]}),
            json!({"query": []}),
            json!({"query": ["a", 1]}),
            json!({"query": "x", "limit": 0}),
            json!({"query": "x", "limit": 26}),
            json!({"query": "x", "limit": 2.5}),
            json!({"query": ["a","b","c","d","e","f","g","h"]}),
            json!({"query": "x".repeat(MAX_QUERY_CHARS + 1)}),
        ] {
            assert_eq!(usage(SEARCH, bad.clone()).tool, ToolKind::Search, "{bad}");
        }
        assert!(usage(SEARCH, json!({"query": "é".repeat(MAX_QUERY_CHARS + 1)}))
            .message
            .contains("characters long"));
        assert!(matches!(
            parse(SEARCH, json!({"query": "é".repeat(MAX_QUERY_CHARS)})),
            Some(Ok(_))
        ));
    }

    #[test]
    fn describe_and_call_arguments_are_checked() {
        let too_many: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
        for bad in [
            json!({}),
            json!({"names": []}),
            json!({"names": [1]}),
            json!({"names": too_many}),
            json!({"names": ["a\u{200b}b"]}),
        ] {
            assert_eq!(usage(DESCRIBE, bad.clone()).tool, ToolKind::Describe, "{bad}");
        }
        for bad in [
            json!({}),
            json!({"name": " "}),
            json!({"name": "t", "arguments": "[1]"}),
            json!({"name": "t", "arguments": 3}),
            json!({"name": "x".repeat(300)}),
        ] {
            assert_eq!(usage(CALL, bad.clone()).tool, ToolKind::Call, "{bad}");
        }
        assert_eq!(usage(SEARCH, json!([1])).message, "arguments must be an object");
        assert_eq!(call_arguments(None), Ok(json!({})));
        assert_eq!(call_arguments(Some(&json!(null))), Ok(json!({})));
        assert_eq!(call_arguments(Some(&json!(" "))), Ok(json!({})));
    }
}
