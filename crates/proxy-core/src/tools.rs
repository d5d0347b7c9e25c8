//! The four tools the proxy exposes (`mcp_search`, `mcp_describe`, `mcp_call`,
//! `mcp_refresh`), as pure functions over a catalog [`Snapshot`].
//!
//! Their definitions are constants (byte-stable `tools/list`); search, describe and call
//! preparation (resolve → repair → validate) are computed from the snapshot alone, so each is
//! unit-tested without a server. What needs the network (relaying a call, refreshing) is the
//! caller's: the HTTP layer sends the prepared call to the owning upstream actor and shapes its
//! outcome with [`relayed`] or [`upstream_failure`]. Errors the model can fix come back as
//! `isError` results that say what to do next.
//!
//! `mcp_search` is hybrid when the caller passes the semantic arm's vectors ([`search_with`],
//! [`SearchVectors`]: the tools' vectors built for this snapshot and one vector per query from
//! [`search_queries`]); computing them is the caller's (a model runs elsewhere), so this stays
//! pure. Without them, and for the suggestions of `mcp_describe`/`mcp_call`, search is lexical.

use serde_json::{json, Map, Value};

use tool_search::model::CatalogTool;

use crate::args;
use crate::catalog::ingest::{self, MAX_TOOL_NAME_CHARS};
use crate::catalog::resolve::{resolve, suggest, Resolution};
use crate::catalog::snapshot::clip;
use crate::catalog::Snapshot;

pub const SEARCH: &str = "mcp_search";
pub const DESCRIBE: &str = "mcp_describe";
pub const CALL: &str = "mcp_call";
pub const REFRESH: &str = "mcp_refresh";

pub const DEFAULT_LIMIT: usize = 5;
pub const MAX_LIMIT: usize = 25;
pub const MAX_QUERIES: usize = 7;
pub const MAX_DESCRIBE: usize = 10;
/// Descriptions in search hits are clipped to this many characters.
pub const HIT_DESCRIPTION_CHARS: usize = 500;
/// Longest query, in characters: the search analyses no more (`search::MAX_QUERY_CHARS`), so
/// a longer one is refused here rather than cut silently; the model learns to send the need,
/// not the document.
pub use tool_search::MAX_QUERY_CHARS;

/// The `tools` array of `tools/list`, as JSON text (fixed, byte-stable).
pub fn definitions() -> Value {
    json!([
        {
            "name": SEARCH,
            "description": "Find tools across all connected MCP servers. Workflow: mcp_search -> mcp_describe (full schema) -> mcp_call. Hits list each tool's name, source, description and required parameters; if those suffice, call it directly. An empty result means no such tool exists: rephrase or pick another source.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES}],
                        "description": "What you want to do, in keywords or words (e.g. \"send email\"); or a list of up to 7 queries, each answered separately."
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
                },
                "required": ["query"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": DESCRIBE,
            "description": "Get the full definitions (inputSchema, outputSchema, annotations) of up to 10 tools by exact name, before calling them.",
            "inputSchema": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBE}},
                "required": ["names"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": CALL,
            "description": "Call a tool by its exact name with arguments that match its inputSchema. Use a name from mcp_search; when unsure of the arguments, mcp_describe it first.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["name"]
            }
        },
        {
            "name": REFRESH,
            "description": "Re-list the tools of all upstream servers and rebuild the search index. Only needed when tools were added upstream since the last refresh.",
            "inputSchema": {"type": "object", "properties": {}}
        }
    ])
}

/// A tool result: `content` with one text block, plus `structuredContent`.
pub fn result(structured: Value, is_error: bool) -> Value {
    let text = structured.to_string();
    let mut m = Map::new();
    m.insert("content".into(), json!([{"type": "text", "text": text}]));
    m.insert("structuredContent".into(), structured);
    if is_error {
        m.insert("isError".into(), Value::Bool(true));
    }
    Value::Object(m)
}

/// An `isError` result for a mistake in the call that the model can correct.
pub fn usage_error(message: impl Into<String>) -> Value {
    result(json!({"error": {"side": "client", "message": message.into()}}), true)
}

/// Parses `query` (a string or a list of up to 7 strings) and `limit`.
fn search_args(args: &Map<String, Value>) -> Result<(Vec<String>, bool, usize), String> {
    let (queries, many) = match args.get("query") {
        Some(Value::String(q)) => (vec![q.clone()], false),
        Some(Value::Array(a)) => {
            let qs: Option<Vec<String>> = a.iter().map(|v| v.as_str().map(str::to_string)).collect();
            match qs {
                Some(qs) if !qs.is_empty() && qs.len() <= MAX_QUERIES => (qs, true),
                Some(qs) if qs.is_empty() => return Err("query list is empty; give 1 to 7 queries".into()),
                Some(_) => return Err(format!("at most {MAX_QUERIES} queries per call")),
                None => return Err("every query in the list must be a string".into()),
            }
        }
        Some(_) => return Err("query must be a string or a list of strings".into()),
        None => return Err("missing required argument `query` (what you want to do, e.g. \"send email\")".into()),
    };
    if queries.iter().all(|q| q.trim().is_empty()) {
        return Err("query is empty; describe what you want to do, e.g. \"list calendar events\"".into());
    }
    if let Some(q) = queries
        .iter()
        .find(|q| q.len() > MAX_QUERY_CHARS && q.chars().nth(MAX_QUERY_CHARS).is_some())
    {
        return Err(format!(
            "query is {} characters long; at most {MAX_QUERY_CHARS}: describe the need in a sentence or keywords instead of pasting the whole text",
            q.chars().count()
        ));
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
        {
            Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
            _ => return Err(format!("limit must be an integer from 1 to {MAX_LIMIT}")),
        },
    };
    Ok((queries, many, limit))
}

/// The semantic arm's input to one `mcp_search` call: the tools' vectors (built for the
/// snapshot searched) and one vector per query, in the order of [`search_queries`].
#[derive(Debug, Clone, Copy)]
pub struct SearchVectors<'a> {
    pub tools: &'a tool_search::semantic::Vectors,
    pub queries: &'a [std::sync::Arc<[f32]>],
}

/// The queries a valid `mcp_search` call asks (as given, in order), for the caller to embed
/// before [`search_with`]; `None` when the arguments are a usage error.
pub fn search_queries(args: &Map<String, Value>) -> Option<Vec<String>> {
    search_args(args).ok().map(|(queries, _, _)| queries)
}

/// `mcp_search` over a snapshot (lexical).
pub fn search(snap: &Snapshot, args: &Map<String, Value>) -> Value {
    search_with(snap, args, None)
}

/// `mcp_search` over a snapshot, with the semantic arm when `vectors` is given (hybrid ranking,
/// `Index::search_hybrid`); a query without a vector, or vectors not built for this snapshot's
/// index, are searched lexically.
pub fn search_with(snap: &Snapshot, args: &Map<String, Value>, vectors: Option<SearchVectors<'_>>) -> Value {
    let (queries, many, limit) = match search_args(args) {
        Ok(x) => x,
        Err(e) => return usage_error(e),
    };
    let answers: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let semantic = vectors.and_then(|v| {
                v.queries.get(i).map(|query| tool_search::Semantic {
                    vectors: v.tools,
                    query,
                })
            });
            search_one(snap, q, limit, semantic)
        })
        .collect();
    if many {
        result(json!({"queries": answers}), false)
    } else {
        result(answers.into_iter().next().unwrap_or(Value::Null), false)
    }
}

fn search_one(snap: &Snapshot, query: &str, limit: usize, semantic: Option<tool_search::Semantic<'_>>) -> Value {
    let hits = match semantic {
        Some(sem) => snap.index.search_hybrid(query, limit, Some(sem)),
        None => snap.index.search(query, limit),
    };
    let results: Vec<Value> = hits
        .iter()
        .filter_map(|h| snap.tools.get(h.doc))
        .map(hit_json)
        .collect();
    if results.is_empty() {
        let sources: Vec<Value> = snap
            .sources
            .iter()
            .map(|s| json!({"source": s.source, "tools": s.tools}))
            .collect();
        let hint = if snap.tools.is_empty() {
            "The catalog is empty: no upstream has answered yet. Try mcp_refresh, or retry shortly."
        } else {
            "No tool matches. Rephrase with other words (an action and an object, e.g. \"create calendar event\"), or search for one of the sources above. If nothing fits, the capability is not available."
        };
        return json!({"query": query, "results": [], "available_sources": sources, "hint": hint});
    }
    json!({"query": query, "results": results})
}

fn hit_json(t: &CatalogTool) -> Value {
    json!({
        "name": t.tool.name,
        "source": t.source,
        "description": clip(t.tool.description_str(), HIT_DESCRIPTION_CHARS),
        "required": t.tool.required_params(),
    })
}

/// `mcp_describe` over a snapshot.
pub fn describe(snap: &Snapshot, args: &Map<String, Value>) -> Value {
    let names: Vec<String> = match args.get("names") {
        Some(Value::Array(a)) => match a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
        {
            Some(n) => n,
            None => return usage_error("names must be a list of tool names (strings)"),
        },
        Some(Value::String(s)) => vec![s.clone()],
        _ => {
            return usage_error(
                "missing required argument `names` (a list of up to 10 exact tool names from mcp_search)",
            )
        }
    };
    if names.is_empty() {
        return usage_error("names is empty; give 1 to 10 tool names");
    }
    if names.len() > MAX_DESCRIBE {
        return usage_error(format!("at most {MAX_DESCRIBE} names per call; split the list"));
    }
    if let Some(e) = names.iter().find_map(|n| check_name(n).err()) {
        return usage_error(e);
    }
    let mut tools = Vec::new();
    let mut not_found = Vec::new();
    let mut suggestions = Map::new();
    for name in &names {
        match snap.get(name) {
            Some(t) => tools.push(definition_json(t)),
            None => {
                not_found.push(Value::from(name.as_str()));
                let close = closest_names(snap, name);
                if !close.is_empty() {
                    suggestions.insert(name.clone(), json!(close));
                }
            }
        }
    }
    let mut out = json!({"tools": tools, "not_found": not_found});
    if !suggestions.is_empty() {
        out["did_you_mean"] = Value::Object(suggestions);
    }
    result(out, false)
}

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

/// A tool name a client sent, checked before any work is done for it: not longer than any
/// admitted name, and free of control and invisible characters (admitted names have none, so
/// such a name can only be a mistake or an attempt to smuggle text into logs and replies).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_TOOL_NAME_CHARS && name.chars().nth(MAX_TOOL_NAME_CHARS).is_some() {
        return Err(format!(
            "tool name is {} characters long; no tool name is longer than {MAX_TOOL_NAME_CHARS}. Use a name from mcp_search",
            name.chars().count()
        ));
    }
    if name.chars().any(ingest::is_hidden) {
        return Err(
            "tool name contains control or invisible characters; use a name exactly as mcp_search returned it".into(),
        );
    }
    Ok(())
}

/// Up to three catalog names close to a name that does not exist: one typo away, then what
/// a search for the name finds. Suggested, never run.
pub fn closest_names(snap: &Snapshot, name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Resolution::Repaired { index, .. } = resolve(snap, name) {
        out.push(snap.tools[index].tool.name.clone());
    }
    for i in suggest(snap, name, 3) {
        let n = &snap.tools[i].tool.name;
        if out.len() < 3 && !out.contains(n) {
            out.push(n.clone());
        }
    }
    for h in snap.index.search(name, 3) {
        if let Some(t) = snap.tools.get(h.doc) {
            if out.len() < 3 && !out.contains(&t.tool.name) {
                out.push(t.tool.name.clone());
            }
        }
    }
    out
}

/// Normalises `mcp_call`'s `arguments`: missing/null → `{}`, a JSON string is parsed.
fn call_arguments(args: &Map<String, Value>) -> Result<Value, String> {
    match args.get("arguments") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Object(_)) => Ok(args["arguments"].clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(json!({})),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err("arguments must be a JSON object of the tool's parameters".into()),
        },
        Some(_) => Err("arguments must be a JSON object of the tool's parameters".into()),
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

/// The outcome of checking an `mcp_call` against a catalog snapshot.
#[derive(Debug)]
pub enum Prepared {
    /// Ready to send: the resolved tool, repaired arguments, and notes on what was repaired.
    Ready {
        index: usize,
        arguments: Value,
        repairs: Vec<String>,
        /// The tool's parsed input schema (shared with the snapshot's cache).
        input_schema: std::sync::Arc<Value>,
    },
    /// No tool by that name, and no unambiguous repair.
    Unknown,
    /// The call would fail; this `isError` result says how to fix it. Nothing is sent.
    Rejected(Value),
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
        None => std::sync::Arc::new(args::CompiledSchema::new(tool.tool.input_schema())),
    };
    let schema = &*compiled.schema;
    let (arguments, notes) = args::coerce(schema, arguments);
    repairs.extend(notes);
    let real_name = tool.tool.name.as_str();
    let missing = missing_required(schema, &arguments);
    if !missing.is_empty() {
        let msg = format!(
            "Missing required argument(s) for {real_name}: {}. The tool was not called. Call mcp_describe with names [{real_name:?}] for its full schema.",
            missing.join(", ")
        );
        return Prepared::Rejected(result(
            json!({"error": {"side": "client", "message": msg, "missing": missing, "required": tool.tool.required_params(), "inputSchema": schema}}),
            true,
        ));
    }
    let violations = args::validate(compiled.validator.as_deref(), &arguments);
    if !violations.is_empty() {
        let listed: Vec<String> = violations
            .iter()
            .map(|v| {
                let at = if v.path.is_empty() {
                    "arguments".to_string()
                } else {
                    format!("arguments{}", v.path)
                };
                format!("{at} ({}): {}", v.constraint, v.message)
            })
            .collect();
        let msg = format!(
            "Invalid arguments for {real_name}; the tool was not called. {}. Fix them to match the inputSchema.",
            listed.join("; ")
        );
        return Prepared::Rejected(result(
            json!({"error": {"side": "client", "message": msg, "violations": violations, "inputSchema": schema}}),
            true,
        ));
    }
    Prepared::Ready {
        index,
        arguments,
        repairs,
        input_schema: compiled.schema.clone(),
    }
}

/// The error for a name that no upstream offers, with the closest names.
pub fn unknown_tool(snap: &Snapshot, name: &str) -> Value {
    let close = closest_names(snap, name);
    let mut msg = format!("Unknown tool {name:?}: no connected server offers it (the tool list was re-checked).");
    if close.is_empty() {
        msg.push_str(" Use mcp_search to find the right tool.");
    } else {
        msg.push_str(&format!(
            " Closest names: {}. Use one of them, or mcp_search.",
            close.join(", ")
        ));
    }
    result(
        json!({"error": {"side": "client", "message": msg, "did_you_mean": close}}),
        true,
    )
}

/// Removes what belongs to the upstream's protocol envelope rather than to the tool result
/// (`resultType`, the upstream's `io.modelcontextprotocol/*` `_meta` keys such as its
/// serverInfo): the proxy answers in its client's era and stamps its own.
fn strip_envelope(result: &mut Value) {
    let Some(obj) = result.as_object_mut() else { return };
    obj.remove("resultType");
    let empty = match obj.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(meta) => {
            meta.retain(|k, _| !k.starts_with(mcp_wire::modern::RESERVED_META_PREFIX));
            meta.is_empty()
        }
        None => false,
    };
    if empty {
        obj.remove("_meta");
    }
}

/// `_meta` key under which a relayed result lists the repairs made to the call.
pub const REPAIRS_META_KEY: &str = "mcp-search-proxy/repairs";

/// An `isError` result that says the upstream failed (`error`), what to do (`advice`), and
/// whether a retry can help.
pub fn upstream_failure(upstream: &str, tool: &str, error: &str, advice: &str, retryable: bool) -> Value {
    let msg = format!("Upstream {upstream:?} failed calling {tool}: {error}. {advice}.");
    result(
        json!({"error": {"side": "upstream", "upstream": upstream, "tool": tool, "message": msg, "retryable": retryable}}),
        true,
    )
}

/// An `isError` result for a tool whose upstream has no actor (a configuration that changed
/// under a manifest).
pub fn no_route(upstream: &str) -> Value {
    result(
        json!({"error": {"side": "proxy", "message": format!("no route to upstream {upstream:?}")}}),
        true,
    )
}

/// An upstream's result as relayed to the client: its protocol envelope removed, and the
/// repairs made to the call listed in `_meta` (so the model gets it right next time).
pub fn relayed(mut result: Value, repairs: &[String]) -> Value {
    strip_envelope(&mut result);
    if !repairs.is_empty() {
        if let Some(obj) = result.as_object_mut() {
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert(REPAIRS_META_KEY.into(), json!(repairs));
            }
        }
    }
    result
}

/// The name and arguments of an `mcp_call`, checked; an `isError` result when unusable.
pub fn call_request(args: &Map<String, Value>) -> Result<(String, Value), Value> {
    let name = match args.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            return Err(usage_error(
                "missing required argument `name` (the exact tool name from mcp_search)",
            ))
        }
    };
    check_name(&name).map_err(usage_error)?;
    let arguments = call_arguments(args).map_err(usage_error)?;
    Ok((name, arguments))
}

/// The arguments of a `tools/call` of one of the four tools as an object (`null` → `{}`).
pub fn tool_arguments(args: Value) -> Result<Map<String, Value>, Value> {
    match args {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m),
        _ => Err(usage_error("arguments must be an object")),
    }
}

/// The `tools/list` result: the four tools, then the pinned upstream tools (by name).
pub fn list(snap: &Snapshot) -> Value {
    let mut tools = definitions();
    if let Some(arr) = tools.as_array_mut() {
        for &i in &snap.pinned {
            let t = &snap.tools[i];
            arr.push(serde_json::to_value(&t.tool).unwrap_or(Value::Null));
        }
    }
    json!({ "tools": tools })
}

/// Whether `name` is a pinned upstream tool, called natively by its name.
pub fn is_pinned(snap: &Snapshot, name: &str) -> bool {
    snap.pinned.iter().any(|&i| snap.tools[i].tool.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::UpstreamState;
    use mcp_wire::types::Tool;

    fn snap() -> Snapshot {
        let tools: Vec<Tool> = serde_json::from_value(json!([
            {"name": "mail-send_message", "description": "Send an email message to recipients.", "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}}, "required": ["to"]}},
            {"name": "mail-list_messages", "description": "List email messages in the inbox.", "inputSchema": {"type": "object"}},
            {"name": "cal-create_event", "description": "Create a calendar event.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false}},
            {"name": "cal-list_events", "description": "List calendar events.", "inputSchema": {"type": "object"}}
        ]))
        .unwrap();
        Snapshot::build(
            vec![UpstreamState {
                label: "agg".into(),
                url: "u".into(),
                tools: tools.into_iter().map(std::sync::Arc::new).collect(),
                ..Default::default()
            }],
            1,
            &Default::default(),
        )
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn search_with_vectors_reaches_tools_lexical_search_cannot() {
        let s = snap();
        // A query sharing no word with any tool: lexical search answers nothing; with a query
        // vector equal to `cal-list_events`'s, the semantic arm finds it.
        let rows: Vec<Vec<f32>> = (0..s.tools.len())
            .map(|i| (0..4).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        let doc = s.by_name["cal-list_events"];
        let vectors = tool_search::semantic::Vectors::build(s.tools.len(), 4, |i| Some(&rows[i][..]));
        let query: std::sync::Arc<[f32]> = std::sync::Arc::from(rows[doc].clone());
        let a = args(json!({"query": "what is on my agenda"}));
        assert_eq!(search(&s, &a)["structuredContent"]["results"], json!([]));
        let queries = [query];
        let with = SearchVectors {
            tools: &vectors,
            queries: &queries,
        };
        let r = search_with(&s, &a, Some(with));
        assert_eq!(r["structuredContent"]["results"][0]["name"], "cal-list_events", "{r}");
        assert_eq!(search_queries(&a), Some(vec!["what is on my agenda".to_string()]));
        assert_eq!(
            search_queries(&args(json!({"query": 3}))),
            None,
            "a usage error asks nothing"
        );
        // vectors built for another catalog are not used
        let other = tool_search::semantic::Vectors::build(2, 4, |i| Some(&rows[i][..]));
        let r = search_with(
            &s,
            &a,
            Some(SearchVectors {
                tools: &other,
                queries: &queries,
            }),
        );
        assert_eq!(r["structuredContent"]["results"], json!([]));
    }

    #[test]
    fn definitions_are_small_and_stable() {
        let text = definitions().to_string();
        assert!(text.len() <= 2000, "tools/list is {} chars", text.len());
        assert_eq!(text, definitions().to_string());
        for t in definitions().as_array().unwrap() {
            assert_eq!(t["inputSchema"]["type"], "object");
        }
    }

    #[test]
    fn search_returns_hits_with_required_params() {
        let s = snap();
        let r = search(&s, &args(json!({"query": "mail-send_message"})));
        let hit = &r["structuredContent"]["results"][0];
        assert_eq!(hit["name"], "mail-send_message");
        assert_eq!(hit["source"], "mail");
        assert_eq!(hit["required"], json!(["to"]));
        assert!(r.get("isError").is_none());
        assert_eq!(
            r["content"][0]["text"].as_str().unwrap(),
            r["structuredContent"].to_string()
        );
    }

    #[test]
    fn search_without_hits_lists_sources_and_a_hint() {
        let s = snap();
        let r = search(&s, &args(json!({"query": "xyzzy plugh"})));
        let sc = &r["structuredContent"];
        assert_eq!(sc["results"], json!([]));
        assert_eq!(
            sc["available_sources"],
            json!([{"source": "cal", "tools": 2}, {"source": "mail", "tools": 2}])
        );
        assert!(sc["hint"].as_str().unwrap().contains("Rephrase"));
    }

    #[test]
    fn search_validates_its_arguments() {
        let s = snap();
        for bad in [
            json!({}),
            json!({"query": 3}),
            json!({"query": ""}),
            json!({"query": "x", "limit": 0}),
            json!({"query": "x", "limit": 26}),
            json!({"query": ["a","b","c","d","e","f","g","h"]}),
        ] {
            let r = search(&s, &args(bad.clone()));
            assert_eq!(r["isError"], true, "{bad}");
            assert_eq!(r["structuredContent"]["error"]["side"], "client");
        }
        let r = search(
            &s,
            &args(json!({"query": ["mail-send_message", "cal-list_events"], "limit": 1})),
        );
        assert_eq!(r["structuredContent"]["queries"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn describe_returns_full_definitions_and_not_found() {
        let s = snap();
        let r = describe(&s, &args(json!({"names": ["cal-create_event", "nope"]})));
        let sc = &r["structuredContent"];
        assert_eq!(sc["tools"][0]["name"], "cal-create_event");
        assert_eq!(sc["tools"][0]["inputSchema"], json!({"type": "object"}));
        assert_eq!(sc["tools"][0]["annotations"], json!({"readOnlyHint": false}));
        assert_eq!(sc["not_found"], json!(["nope"]));
        let too_many: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
        assert_eq!(describe(&s, &args(json!({"names": too_many})))["isError"], true);
        assert_eq!(describe(&s, &args(json!({})))["isError"], true);
    }

    #[test]
    fn upstream_envelope_fields_are_not_relayed() {
        let mut r = json!({"content": [], "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up"}, "vendor/x": 1}});
        strip_envelope(&mut r);
        assert_eq!(r, json!({"content": [], "_meta": {"vendor/x": 1}}));
        let mut r = json!({"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": {}}});
        strip_envelope(&mut r);
        assert_eq!(r, json!({"content": []}));
    }

    #[test]
    fn call_arguments_are_repaired_when_unambiguous() {
        assert_eq!(call_arguments(&args(json!({}))).unwrap(), json!({}));
        assert_eq!(call_arguments(&args(json!({"arguments": null}))).unwrap(), json!({}));
        assert_eq!(
            call_arguments(&args(json!({"arguments": "{\"a\":1}"}))).unwrap(),
            json!({"a": 1})
        );
        assert!(call_arguments(&args(json!({"arguments": "[1]"}))).is_err());
        assert!(call_arguments(&args(json!({"arguments": 3}))).is_err());
    }

    #[test]
    fn missing_required_names_each_absent_parameter() {
        let s = snap();
        let t = s.get("mail-send_message").unwrap();
        let schema = t.tool.input_schema();
        assert_eq!(
            missing_required(&schema, &json!({"subject": "x"})),
            vec!["to".to_string()]
        );
        assert!(missing_required(&schema, &json!({"to": "a@b"})).is_empty());
    }
}
