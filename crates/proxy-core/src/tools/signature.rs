//! A search hit's parameters as one short line a model can call from: `to: string[], subject:
//! string, cc?: string[]` — each parameter's name, `?` when optional, and its type, required
//! ones first, within [`SIGNATURE_CHARS`] characters.
//!
//! Types are written as a model would write them in TypeScript: `string`, `integer`,
//! `number`, `boolean`, `T[]` for an array of T, `a|b` for a union, a short string enum as its
//! values (`"asc"|"desc"`), and an object as its property names (`{id, name?}`, one level; an
//! object inside that is `object`). `null` in a union is left out (leaving a parameter out says
//! the same), a local `$ref` is followed once, and what says nothing is `any`. When the line
//! would run past the budget, optional parameters go first (`…+3 optional` says how many), then
//! objects are written as `object`; whatever still does not fit is cut with `…`. The full
//! schema is always one `mcp_describe` away.

use serde_json::{Map, Value};

/// A hit's parameter line is at most this many characters.
pub const SIGNATURE_CHARS: usize = 200;

/// A string enum is written as its values when it has at most this many…
const ENUM_VALUES: usize = 4;
/// …each at most this long.
const ENUM_VALUE_CHARS: usize = 12;
/// An object is written with at most this many property names.
const OBJECT_NAMES: usize = 4;

/// How much of a type to write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Objects as their property names.
    Full,
    /// Objects as `object` (when the line is too long).
    Flat,
}

/// The parameter line of an input schema (see the module docs); empty when it has no
/// parameters.
pub fn signature(schema: &Value) -> String {
    signature_within(schema, SIGNATURE_CHARS)
}

/// [`signature`] within `budget` characters.
pub fn signature_within(schema: &Value, budget: usize) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let defs = Defs::of(schema);
    // required first (in the schema's order), then optional
    let mut params: Vec<(&str, &Value, bool)> = props
        .iter()
        .filter(|(n, _)| required.contains(&n.as_str()))
        .map(|(n, s)| (n.as_str(), s, true))
        .collect();
    params.extend(
        props
            .iter()
            .filter(|(n, _)| !required.contains(&n.as_str()))
            .map(|(n, s)| (n.as_str(), s, false)),
    );
    for detail in [Detail::Full, Detail::Flat] {
        let entries: Vec<String> = params
            .iter()
            .map(|&(name, s, req)| {
                format!(
                    "{name}{}: {}",
                    if req { "" } else { "?" },
                    type_of(s, &defs, detail, 0, 0)
                )
            })
            .collect();
        let required_count = params.iter().filter(|p| p.2).count();
        // every required entry, then as many optional ones as fit with room for the count
        let mut line = entries[..required_count].join(", ");
        let mut left_out = 0;
        for (i, e) in entries[required_count..].iter().enumerate() {
            let rest = entries.len() - required_count - i - 1;
            let tail = if rest > 0 {
                format!(", …+{rest} optional")
            } else {
                String::new()
            };
            let sep = if line.is_empty() { "" } else { ", " };
            if left_out == 0 && chars(&line) + chars(sep) + chars(e) + chars(&tail) <= budget {
                line.push_str(sep);
                line.push_str(e);
            } else {
                left_out += 1;
            }
        }
        if left_out > 0 {
            let sep = if line.is_empty() { "" } else { ", " };
            line.push_str(&format!("{sep}…+{left_out} optional"));
        }
        if chars(&line) <= budget {
            return line;
        }
        if detail == Detail::Flat {
            return cut(&line, budget);
        }
    }
    String::new()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `budget` characters, the last of them `…`.
fn cut(s: &str, budget: usize) -> String {
    if chars(s) <= budget {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(budget.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A schema's local definitions (`$defs`, `definitions`), for `$ref`s.
struct Defs<'a> {
    root: &'a Value,
}

impl<'a> Defs<'a> {
    fn of(root: &'a Value) -> Self {
        Self { root }
    }

    /// The schema a local `$ref` (`#/$defs/X`, `#/definitions/X`) points at.
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

/// How many `$ref`s one type follows at most (a recursive schema ends).
const REFS: usize = 3;

/// The type of a property schema as the line writes it. `depth` counts the arrays and objects
/// it is inside, `refs` the `$ref`s followed to reach it, so a deep or recursive schema ends.
fn type_of(schema: &Value, defs: &Defs<'_>, detail: Detail, depth: usize, refs: usize) -> String {
    if depth > 3 {
        return "any".into();
    }
    let Some(s) = schema.as_object() else {
        return "any".into();
    };
    if let Some(target) = s.get("$ref").and_then(Value::as_str) {
        return match defs.resolve(target) {
            Some(t) if refs < REFS => type_of(t, defs, detail, depth, refs + 1),
            _ => "object".into(),
        };
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        if let Some(e) = short_enum(values) {
            return e;
        }
        if values.iter().all(Value::is_string) {
            return "string".into();
        }
    }
    if let Some(c) = s.get("const") {
        if let Some(e) = short_enum(std::slice::from_ref(c)) {
            return e;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            return union(alts.iter().map(|a| type_of(a, defs, detail, depth, refs)));
        }
    }
    match s.get("type") {
        Some(Value::String(t)) => one_type(t, s, defs, detail, depth, refs),
        Some(Value::Array(ts)) => union(
            ts.iter()
                .filter_map(Value::as_str)
                .map(|t| one_type(t, s, defs, detail, depth, refs)),
        ),
        _ if s.contains_key("properties") => one_type("object", s, defs, detail, depth, refs),
        _ if s.contains_key("items") => one_type("array", s, defs, detail, depth, refs),
        _ => "any".into(),
    }
}

fn one_type(t: &str, s: &Map<String, Value>, defs: &Defs<'_>, detail: Detail, depth: usize, refs: usize) -> String {
    match t {
        "array" => {
            let item = s
                .get("items")
                .map_or_else(|| "any".to_owned(), |i| type_of(i, defs, detail, depth + 1, refs));
            if item.contains('|') {
                format!("({item})[]")
            } else {
                format!("{item}[]")
            }
        }
        "object" => match s.get("properties").and_then(Value::as_object) {
            Some(props) if detail == Detail::Full && depth < 2 && !props.is_empty() => {
                let required: Vec<&str> = s
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut names: Vec<String> = props
                    .keys()
                    .take(OBJECT_NAMES)
                    .map(|n| {
                        if required.contains(&n.as_str()) {
                            n.clone()
                        } else {
                            format!("{n}?")
                        }
                    })
                    .collect();
                if props.len() > OBJECT_NAMES {
                    names.push("…".into());
                }
                format!("{{{}}}", names.join(", "))
            }
            _ => "object".into(),
        },
        "string" | "integer" | "number" | "boolean" | "null" => t.to_owned(),
        _ => "any".into(),
    }
}

/// A union's members, `null` left out (unless it is all there is), each once.
fn union(members: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for m in members.flat_map(|m| m.split('|').map(str::to_owned).collect::<Vec<_>>()) {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    let without_null: Vec<String> = seen.iter().filter(|m| *m != "null").cloned().collect();
    match (without_null.is_empty(), seen.is_empty()) {
        (_, true) => "any".into(),
        (true, false) => "null".into(),
        (false, _) => without_null.join("|"),
    }
}

/// A short enum of strings as its quoted values (`"asc"|"desc"`); `None` when it is long, or
/// not all strings.
fn short_enum(values: &[Value]) -> Option<String> {
    let strings: Vec<&str> = values.iter().map(Value::as_str).collect::<Option<_>>()?;
    if strings.is_empty() || strings.len() > ENUM_VALUES || strings.iter().any(|v| chars(v) > ENUM_VALUE_CHARS) {
        return None;
    }
    Some(strings.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_first_then_optional_with_their_types() {
        let s = json!({"type": "object", "properties": {
            "cc": {"type": "array", "items": {"type": "string"}},
            "to": {"type": "array", "items": {"type": "string"}},
            "subject": {"type": "string"},
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "order": {"type": "string", "enum": ["asc", "desc"]},
            "when": {"type": ["string", "null"], "format": "date"},
        }, "required": ["to", "subject"]});
        assert_eq!(
            signature(&s),
            r#"to: string[], subject: string, cc?: string[], count?: integer, order?: "asc"|"desc", when?: string"#
        );
        assert_eq!(signature(&json!({"type": "object"})), "");
        assert_eq!(signature(&json!({"type": "object", "properties": {}})), "");
    }

    #[test]
    fn nested_objects_and_arrays_are_summarised() {
        let s = json!({"type": "object", "$defs": {"rich": {"type": "object", "properties": {"text": {"type": "string"}}}},
            "properties": {
            "filter": {"type": "object", "properties": {"status": {"type": "string"}, "assignee": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}}, "due": {"type": "string"},
                "project": {"type": "object", "properties": {"id": {"type": "string"}}}}, "required": ["status"]},
            "messages": {"type": "array", "items": {"type": "object", "properties": {"role": {"type": "string"}, "content": {"type": "string"}}, "required": ["role", "content"]}},
            "blocks": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/rich"}, {"type": "string"}]}},
            "meta": {"type": "object"},
            "value": {},
            "mode": {"enum": ["one", "two", "three", "four", "five"]},
            "deep": {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}}},
        }, "required": ["filter", "messages"]});
        assert_eq!(
            signature_within(&s, 1000),
            "filter: {status, assignee?, labels?, due?, …}, messages: {role, content}[], blocks?: ({text?}|string)[], meta?: object, value?: any, mode?: string, deep?: any[][][][]"
        );
    }

    #[test]
    fn over_budget_optional_parameters_go_first_then_objects_flatten_then_the_line_is_cut() {
        let s = json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "a_long_optional_parameter_name": {"type": "string"},
            "another_long_optional_parameter": {"type": "integer"},
        }, "required": ["query"]});
        assert_eq!(
            signature_within(&s, 70),
            "query: string, a_long_optional_parameter_name?: string, …+1 optional"
        );
        assert_eq!(signature_within(&s, 40), "query: string, …+2 optional");
        let objects = json!({"type": "object", "properties": {
            "first": {"type": "object", "properties": {"alpha": {}, "beta": {}, "gamma": {}}},
            "second": {"type": "object", "properties": {"delta": {}, "epsilon": {}}},
        }, "required": ["first", "second"]});
        assert_eq!(signature_within(&objects, 40), "first: object, second: object");
        let long: Map<String, Value> = (0..30)
            .map(|i| (format!("parameter_{i}"), json!({"type": "string"})))
            .collect();
        let names: Vec<String> = long.keys().cloned().collect();
        let many = json!({"type": "object", "properties": long, "required": names});
        let line = signature_within(&many, 100);
        assert_eq!(line.chars().count(), 100);
        assert!(line.ends_with('…'));
    }

    #[test]
    fn a_recursive_ref_ends() {
        let s = json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
            "properties": {"tree": {"$ref": "#/$defs/node"}, "other": {"$ref": "https://example.com/x"}}, "required": ["tree"]});
        assert_eq!(signature(&s), "tree: {child?}, other?: object");
    }
}
