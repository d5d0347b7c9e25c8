//! Arguments of `mcp_call`: repair the model's common slips, then validate against the tool's
//! full `inputSchema` before anything is sent upstream.
//!
//! Why a crate: JSON Schema (draft 2020-12 and draft-07, with `$ref`, `anyOf`, formats …) is
//! far too large to hand-write correctly; `jsonschema` is maintained, fast, and with its
//! default features off it has no HTTP or file resolver, so a remote `$ref` can never make the
//! proxy fetch anything. A schema that cannot be compiled (bad schema, remote `$ref`) means
//! validation is skipped, never that the call fails: the upstream stays the authority.
//!
//! Repairs (applied before validation, reported back to the caller):
//! - a string where the schema wants `integer`, `number` or `boolean` is converted when it
//!   parses exactly (`"5"` → 5, `"2.5"` → 2.5, `"true"` → true), recursively through
//!   `properties` and `items`;
//! - `null` for an optional property whose schema does not allow null means "not given": the
//!   property is dropped (models often write out every parameter, null for the unused ones);
//! - a single value where the schema wants an array of values of its type becomes a one-item
//!   array (`"to": "a@x.com"` → `["a@x.com"]`);
//! - an array or object sent as JSON text, where the schema wants an array or an object, is
//!   parsed (`"[\"a\", \"b\"]"` → `["a", "b"]`).
//!
//! A repair applies only where the schema names exactly one type (besides `null`): under
//! `anyOf` or `oneOf` of several shapes nothing is guessed, and validation decides.

use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};

/// One schema violation, phrased for a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON Pointer into the arguments (`""` is the whole object).
    pub path: String,
    /// The schema keyword that failed (`type`, `required`, `enum`, `minimum`, …).
    pub constraint: String,
    pub message: String,
}

/// A tool's input schema, parsed, and its validator (`None` when the schema is unusable:
/// validation is skipped).
pub struct CompiledSchema {
    pub schema: Arc<Value>,
    pub validator: Option<Arc<jsonschema::Validator>>,
}

impl CompiledSchema {
    pub fn new(schema: Value) -> CompiledSchema {
        let validator = match jsonschema::validator_for(&schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                log::debug!(error = e.to_string().as_str(); "input schema unusable; validation skipped");
                None
            }
        };
        CompiledSchema {
            schema: Arc::new(schema),
            validator,
        }
    }
}

/// A lazily parsed and compiled input schema, cached per tool in the catalog snapshot (the
/// catalog keeps schemas as text; only tools that are called pay for a parsed copy).
#[derive(Default)]
pub struct CachedValidator(OnceLock<Arc<CompiledSchema>>);

impl std::fmt::Debug for CachedValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CachedValidator")
    }
}

impl CachedValidator {
    /// The parsed schema and its validator, built on first use from `schema`.
    pub fn get(&self, schema: impl FnOnce() -> Value) -> Arc<CompiledSchema> {
        self.0.get_or_init(|| Arc::new(CompiledSchema::new(schema()))).clone()
    }
}

/// Converts strings to the scalar type the schema wants, where that is unambiguous.
/// Returns the repaired arguments and a note per repair.
pub fn coerce(schema: &Value, value: Value) -> (Value, Vec<String>) {
    let mut notes = Vec::new();
    let v = coerce_at(schema, value, "", &mut notes, 0);
    (v, notes)
}

fn coerce_at(schema: &Value, value: Value, path: &str, notes: &mut Vec<String>, depth: usize) -> Value {
    if depth > 32 {
        return value;
    }
    // a single value, or JSON text, where an array or an object is wanted
    let value = match reshaped(schema, value, path, notes) {
        Ok(v) => return coerce_at(schema, v, path, notes, depth + 1),
        Err(v) => v,
    };
    match value {
        Value::String(s) => match scalar_target(schema) {
            Some(target) => match parse_exact(&s, target) {
                Some(v) => {
                    notes.push(format!("{}: string {s:?} converted to {target}", display_path(path)));
                    v
                }
                None => Value::String(s),
            },
            None => Value::String(s),
        },
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let Some(props) = props else {
                return Value::Object(m);
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (k, v) in m {
                let Some(sub) = props.get(&k) else {
                    out.insert(k, v);
                    continue;
                };
                if v.is_null() && !required.contains(&k.as_str()) && !allows_null(sub) {
                    notes.push(format!(
                        "{}: null for an optional parameter dropped",
                        display_path(&format!("{path}/{k}"))
                    ));
                    continue;
                }
                let v = coerce_at(sub, v, &format!("{path}/{k}"), notes, depth + 1);
                out.insert(k, v);
            }
            Value::Object(out)
        }
        Value::Array(a) => match schema.get("items").filter(|i| i.is_object()) {
            Some(items) => Value::Array(
                a.into_iter()
                    .enumerate()
                    .map(|(i, v)| coerce_at(items, v, &format!("{path}/{i}"), notes, depth + 1))
                    .collect(),
            ),
            None => Value::Array(a),
        },
        other => other,
    }
}

/// `value` reshaped to the array or object `schema` wants (`Ok`, with a note), or given back
/// unchanged (`Err`): JSON text of an array or object is parsed, and a single value that fits
/// the array's items becomes a one-item array.
fn reshaped(schema: &Value, value: Value, path: &str, notes: &mut Vec<String>) -> Result<Value, Value> {
    let wanted = single_type(schema);
    let at = display_path(path);
    match (wanted, value) {
        (Some("array"), Value::Array(a)) => Err(Value::Array(a)),
        (Some(kind @ ("array" | "object")), Value::String(s)) => {
            let parsed = serde_json::from_str::<Value>(s.trim()).ok();
            match parsed {
                Some(v @ Value::Array(_)) if kind == "array" => {
                    notes.push(format!("{at}: JSON text parsed as an array"));
                    Ok(v)
                }
                Some(v @ Value::Object(_)) if kind == "object" => {
                    notes.push(format!("{at}: JSON text parsed as an object"));
                    Ok(v)
                }
                _ if kind == "array" && fits_items(schema, &Value::String(s.clone())) => {
                    notes.push(format!("{at}: single value wrapped in a one-item array"));
                    Ok(Value::Array(vec![Value::String(s)]))
                }
                _ => Err(Value::String(s)),
            }
        }
        (Some("array"), v) if !v.is_null() && fits_items(schema, &v) => {
            notes.push(format!("{at}: single value wrapped in a one-item array"));
            Ok(Value::Array(vec![v]))
        }
        (_, v) => Err(v),
    }
}

/// The one type a schema names (`type`, a string or a list with `null` besides), if exactly one.
fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => match ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()[..]
        {
            [one] => Some(one),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `value` is one item of the array `schema` wants: its `items` name exactly one type
/// and the value is of it (or converts to it exactly, as a string to a number).
fn fits_items(schema: &Value, value: &Value) -> bool {
    let Some(items) = schema.get("items").filter(|i| i.is_object()) else {
        return false;
    };
    match (single_type(items), value) {
        (Some("string"), Value::String(_)) => true,
        (Some("integer"), Value::Number(n)) => n.is_i64() || n.is_u64(),
        (Some("number"), Value::Number(_)) => true,
        (Some("boolean"), Value::Bool(_)) => true,
        (Some("object"), Value::Object(_)) => true,
        (Some(t @ ("integer" | "number" | "boolean")), Value::String(s)) => parse_exact(s, t).is_some(),
        _ => false,
    }
}

/// Whether a property schema admits `null` (or says nothing about types at all).
fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_none_or(|alts| alts.iter().any(allows_null))
        }),
    }
}

/// The scalar type a schema wants, when it wants exactly one non-string scalar type.
fn scalar_target(schema: &Value) -> Option<&'static str> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
        _ => return None,
    };
    match types.as_slice() {
        ["integer"] => Some("integer"),
        ["number"] => Some("number"),
        ["boolean"] => Some("boolean"),
        _ => None,
    }
}

fn parse_exact(s: &str, target: &str) -> Option<Value> {
    match target {
        "integer" => s.parse::<i64>().ok().map(Value::from),
        "number" => {
            if let Ok(i) = s.parse::<i64>() {
                return Some(Value::from(i));
            }
            s.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        }
        "boolean" => match s {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
}

fn display_path(p: &str) -> String {
    if p.is_empty() {
        "arguments".into()
    } else {
        format!("arguments{p}")
    }
}

/// Validates arguments; an empty list means valid (or the schema was unusable).
pub fn validate(validator: Option<&jsonschema::Validator>, arguments: &Value) -> Vec<Violation> {
    let Some(v) = validator else {
        return Vec::new();
    };
    v.iter_errors(arguments)
        .take(20)
        .map(|e| Violation {
            path: e.instance_path().as_str().to_string(),
            constraint: e.kind().keyword().to_string(),
            message: e.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 1},
                "ratio": {"type": "number"},
                "flag": {"type": ["boolean", "null"]},
                "name": {"type": "string"},
                "mode": {"enum": ["a", "b"]},
                "nested": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "list": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["count"],
            "additionalProperties": false
        })
    }

    #[test]
    fn coercion_converts_only_exact_parses() {
        let (v, notes) = coerce(
            &schema(),
            json!({"count": "5", "ratio": "2.5", "flag": "true", "name": "7", "nested": {"n": "3"}, "list": ["1", "x"]}),
        );
        assert_eq!(
            v,
            json!({"count": 5, "ratio": 2.5, "flag": true, "name": "7", "nested": {"n": 3}, "list": [1, "x"]})
        );
        assert_eq!(notes.len(), 5, "{notes:?}");
        let (v, notes) = coerce(&schema(), json!({"count": "5.5", "flag": "yes"}));
        assert_eq!(v, json!({"count": "5.5", "flag": "yes"}));
        assert!(notes.is_empty());
    }

    #[test]
    fn a_single_value_becomes_a_one_item_array_and_json_text_is_parsed() {
        let s = json!({"type": "object", "properties": {
            "to": {"type": "array", "items": {"type": "string"}},
            "ids": {"type": ["array", "null"], "items": {"type": "integer"}},
            "rows": {"type": "array", "items": {"type": "object"}},
            "filter": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        }});
        let (v, notes) = coerce(
            &s,
            json!({"to": "alice@example.com", "ids": "7", "rows": {"a": 1}, "filter": "{\"n\": \"3\"}", "tags": " [\"a\", \"b\"] "}),
        );
        assert_eq!(
            v,
            json!({"to": ["alice@example.com"], "ids": [7], "rows": [{"a": 1}], "filter": {"n": 3}, "tags": ["a", "b"]})
        );
        assert!(
            notes.contains(&"arguments/to: single value wrapped in a one-item array".to_owned()),
            "{notes:?}"
        );
        assert!(
            notes.contains(&"arguments/filter: JSON text parsed as an object".to_owned()),
            "{notes:?}"
        );
        assert!(
            notes.contains(&"arguments/tags: JSON text parsed as an array".to_owned()),
            "{notes:?}"
        );
        // wrapped, then the item converted: two notes
        assert!(
            notes.iter().filter(|n| n.starts_with("arguments/ids")).count() == 2,
            "{notes:?}"
        );
        assert_eq!(notes.len(), 7, "{notes:?}");
    }

    #[test]
    fn nothing_is_reshaped_where_the_schema_is_ambiguous_or_the_value_does_not_fit() {
        let s = json!({"type": "object", "properties": {
            "either": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
            "mixed": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
            "untyped": {"type": "array"},
            "numbers": {"type": "array", "items": {"type": "integer"}},
            "object": {"type": "object"},
            "many": {"type": ["array", "string"], "items": {"type": "string"}},
        }});
        let given =
            json!({"either": "x", "mixed": "x", "untyped": "x", "numbers": "seven", "object": "not json", "many": "x"});
        let (v, notes) = coerce(&s, given.clone());
        assert_eq!(v, given);
        assert!(notes.is_empty(), "{notes:?}");
        let (v, notes) = coerce(&s, json!({"numbers": 2.5, "object": "[1]"}));
        assert_eq!(
            v,
            json!({"numbers": 2.5, "object": "[1]"}),
            "a float is not an integer; an array is not an object"
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn null_for_optional_parameters_means_absent() {
        let (v, notes) = coerce(
            &schema(),
            json!({"count": 1, "ratio": null, "flag": null, "name": null}),
        );
        // flag admits null; ratio and name do not and are optional.
        assert_eq!(v, json!({"count": 1, "flag": null}));
        assert_eq!(notes.len(), 2, "{notes:?}");
        let (v, _) = coerce(&schema(), json!({"count": null}));
        assert_eq!(
            v,
            json!({"count": null}),
            "a required null is left for validation to report"
        );
    }

    #[test]
    fn violations_name_path_and_constraint() {
        let cache = CachedValidator::default();
        let s = schema();
        let compiled = cache.get(|| s.clone());
        assert_eq!(*compiled.schema, s);
        let v = compiled.validator.clone();
        assert!(v.is_some());
        assert!(validate(v.as_deref(), &json!({"count": 2})).is_empty());
        let errs = validate(v.as_deref(), &json!({"count": 0, "mode": "c", "extra": 1}));
        let got: Vec<(&str, &str)> = errs.iter().map(|e| (e.path.as_str(), e.constraint.as_str())).collect();
        assert!(got.contains(&("/count", "minimum")), "{got:?}");
        assert!(got.contains(&("/mode", "enum")), "{got:?}");
        assert!(got.contains(&("", "additionalProperties")), "{got:?}");
        let errs = validate(v.as_deref(), &json!({}));
        assert_eq!(errs[0].constraint, "required");
    }

    #[test]
    fn unusable_or_remote_schemas_skip_validation() {
        let cache = CachedValidator::default();
        let remote = json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/schema.json"}}});
        assert!(cache.get(|| remote).validator.is_none());
        assert!(validate(None, &json!({"a": 1})).is_empty());
        let bad = CachedValidator::default();
        assert!(bad.get(|| json!({"type": 12})).validator.is_none());
    }

    #[test]
    fn draft_2020_12_keywords_work() {
        let cache = CachedValidator::default();
        let s = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}], "items": false}}});
        let v = cache.get(|| s).validator.clone();
        assert!(validate(v.as_deref(), &json!({"t": ["a"]})).is_empty());
        assert!(!validate(v.as_deref(), &json!({"t": ["a", 1]})).is_empty());
    }
}
