//! What the demo tools do once the server has accepted a `tools/call`.
//!
//! Kept apart from the HTTP code so the behaviour a model sees can be read in one place.
//! Which implementation runs is decided by [`implementation_key`]: the segment of the tool
//! name after its last `-`. LiteLLM-style names (`demo-echo`) and bare names (`echo`) reach the
//! same code, and provider names never contain `-`. Tools without an implementation (the
//! invented SaaS catalog) succeed with a note that echoes their arguments, so a search demo can
//! call anything without an error; a declared `outputSchema` still gets a conforming
//! `structuredContent` (the spec's MUST), built from the schema's required properties.

use serde_json::{json, Map, Value};

/// A 16x16 RGB gradient, returned by `image`: small enough to read in a transcript.
const DEMO_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAABlUlEQVR42g3LQQEAIQgAQStYwQpWsAIVqEAFK/jbtxWoQAUqUMG7+U9rjd4YjdlYDWlowxq7cRq34Y1oZKMar9Fap3dGZ3ZWRzrasc7unM7teCc62anO638Y9MEYzMEayEAHNtiDM7gDH8QgBzV44w+TPhmTOVkTmejEJntyJnfik5jkpCZv/mHRF2MxF2shC13YYi/O4i58EYtc1OKtPwhdGMIUliCCCiZs4QhXcCGEFEp48gelK0OZylJEUcWUrRzlKq6EkkopT/9gdGMY01iGGGqYsY1jXMONMNIo49kfNn0zNnOzNrLRjW325mzuxjexyU1t3v7DoR/GYR7WQQ56sMM+nMM9+CEOeajDO3+49Mu4zMu6yEUvdtmXc7kXv8QlL3V59w9Od4YzneWIo4452znOddwJJ51ynv8h6MEIZrACCTSwYAcnuIEHEWRQwYs/JD0ZyUxWIokmluzkJDfxJJJMKnn5h6IXo5jFKqTQwopdnOIWXkSRRRWv/vDoj/GYj/WQhz7ssR/ncR/+iEc+6vEeHxp+nxDouwqkAAAAAElFTkSuQmCC";

/// The implementation a tool name maps to: the text after the last `-` (`demo-echo` → `echo`).
pub(super) fn implementation_key(tool_name: &str) -> &str {
    tool_name.rsplit('-').next().unwrap_or(tool_name)
}

/// Runs the tool `definition` (one entry of `tools/list`) and returns its `CallToolResult`.
///
/// `counter` is the state of the caller's session (or of the process when stateless).
pub(super) fn call(definition: &Value, arguments: &Map<String, Value>, counter: &mut u64) -> Value {
    let name = definition.get("name").and_then(Value::as_str).unwrap_or_default();
    let missing = missing_required(definition, arguments);
    if !missing.is_empty() {
        return error_result(format!(
            "Missing required argument(s) for {name}: {}",
            missing.join(", ")
        ));
    }
    match implementation_key(name) {
        "echo" => echo(arguments),
        "add" => add(arguments),
        "counter" => {
            *counter = counter.saturating_add(1);
            json!({
                "content": [{"type": "text", "text": counter.to_string()}],
                "structuredContent": {"count": *counter},
                "isError": false,
            })
        }
        "fail" => error_result(
            arguments
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("The demo tool `fail` always fails; this is its error text.")
                .to_string(),
        ),
        "image" => json!({
            "content": [{"type": "image", "data": DEMO_PNG_BASE64, "mimeType": "image/png"}],
            "isError": false,
        }),
        _ => not_connected(name, definition, arguments),
    }
}

/// The required properties of the tool's input schema that the call left out.
fn missing_required<'a>(definition: &'a Value, arguments: &Map<String, Value>) -> Vec<&'a str> {
    definition
        .pointer("/inputSchema/required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|key| !arguments.contains_key(*key))
        .collect()
}

/// A tool execution error: the model reads it, the protocol call itself succeeded.
fn error_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn echo(arguments: &Map<String, Value>) -> Value {
    match arguments.get("text") {
        Some(Value::String(text)) => json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"text": text},
            "isError": false,
        }),
        _ => error_result("Argument `text` must be a string.".to_string()),
    }
}

fn add(arguments: &Map<String, Value>) -> Value {
    let (Some(a), Some(b)) = (arguments.get("a"), arguments.get("b")) else {
        return error_result("Arguments `a` and `b` are required.".to_string());
    };
    // Integers stay integers (`1 + 2` is `3`, not `3.0`) unless the sum overflows.
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
        _ => None,
    };
    let sum = match sum {
        Some(sum) => sum,
        None => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => match serde_json::Number::from_f64(a + b) {
                Some(sum) => Value::Number(sum),
                None => return error_result("The sum is not a finite number.".to_string()),
            },
            _ => return error_result("Arguments `a` and `b` must be numbers.".to_string()),
        },
    };
    json!({
        "content": [{"type": "text", "text": sum.to_string()}],
        "structuredContent": {"result": sum},
        "isError": false,
    })
}

/// The answer of every catalog tool that has no implementation: success, and nothing done.
fn not_connected(name: &str, definition: &Value, arguments: &Map<String, Value>) -> Value {
    let provider = name.split_once('-').map_or("upstream", |(provider, _)| provider);
    let text = format!(
        "{name} is a demo tool: no real {provider} service is connected, so nothing was done. \
         Arguments received: {}",
        Value::Object(arguments.clone())
    );
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": false});
    if let Some(schema) = definition.get("outputSchema") {
        let structured = placeholder(schema);
        if let Some(content) = result["content"].as_array_mut() {
            content.push(json!({"type": "text", "text": structured.to_string()}));
        }
        result["structuredContent"] = structured;
    }
    result
}

/// The smallest value that satisfies `schema`'s type, enum and required properties.
fn placeholder(schema: &Value) -> Value {
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let properties = schema.get("properties");
            let object = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|key| {
                    let sub = properties.and_then(|p| p.get(key)).unwrap_or(&Value::Null);
                    (key.to_string(), placeholder(sub))
                })
                .collect();
            Value::Object(object)
        }
        Some("array") => json!([]),
        Some("string") => json!(""),
        Some("integer") | Some("number") => json!(0),
        Some("boolean") => json!(false),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(definition: Value, arguments: Value) -> Value {
        let mut counter = 0;
        call(&definition, arguments.as_object().unwrap(), &mut counter)
    }

    #[test]
    fn implementation_key_is_the_last_segment() {
        assert_eq!(implementation_key("echo"), "echo");
        assert_eq!(implementation_key("demo-echo"), "echo");
        assert_eq!(implementation_key("litellm-demo-add"), "add");
        assert_eq!(implementation_key("quillmail-send_email"), "send_email");
    }

    #[test]
    fn add_keeps_integers_and_handles_floats() {
        let def = json!({"name": "demo-add"});
        let r = run(def.clone(), json!({"a": 1, "b": 2}));
        assert_eq!(r["content"][0]["text"], "3");
        assert_eq!(r["structuredContent"]["result"], 3);
        let r = run(def.clone(), json!({"a": 0.5, "b": 2}));
        assert_eq!(r["structuredContent"]["result"], 2.5);
        let r = run(def.clone(), json!({"a": i64::MAX, "b": 1}));
        assert_eq!(r["isError"], false);
        let r = run(def, json!({"a": "x", "b": 1}));
        assert_eq!(r["isError"], true);
    }

    #[test]
    fn counter_increments_the_given_state() {
        let def = json!({"name": "counter"});
        let mut counter = 41;
        let r = call(&def, &Map::new(), &mut counter);
        assert_eq!(r["structuredContent"]["count"], 42);
        assert_eq!(counter, 42);
    }

    #[test]
    fn missing_required_arguments_are_a_tool_error() {
        let def = json!({"name": "demo-echo", "inputSchema": {"type": "object", "required": ["text"]}});
        let r = run(def, json!({}));
        assert_eq!(r["isError"], true);
        assert!(r["content"][0]["text"].as_str().unwrap().contains("text"));
    }

    #[test]
    fn catalog_tools_without_code_conform_to_their_output_schema() {
        let def = json!({
            "name": "atlascope-geocode_address",
            "outputSchema": {"type": "object", "properties": {
                "lat": {"type": "number"}, "lon": {"type": "number"},
                "kind": {"type": "string", "enum": ["street", "city"]},
                "label": {"type": "string"}},
                "required": ["lat", "lon", "kind"]}
        });
        let r = run(def, json!({"address": "Main St 1"}));
        assert_eq!(r["isError"], false);
        assert_eq!(r["structuredContent"], json!({"lat": 0, "lon": 0, "kind": "street"}));
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("atlascope") && text.contains("Main St 1"), "{text}");
    }

    #[test]
    fn image_is_a_png() {
        let r = run(json!({"name": "image"}), json!({}));
        assert_eq!(r["content"][0]["mimeType"], "image/png");
        // base64 of the 8-byte PNG signature starts with this.
        assert!(r["content"][0]["data"].as_str().unwrap().starts_with("iVBORw0KGgo"));
    }
}
