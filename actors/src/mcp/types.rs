//! Wire types of the MCP protocol that the proxy reads and writes.
//!
//! Lenient by design: a tool definition keeps every member this crate does not read, so it
//! passes through the proxy unchanged even when a newer upstream adds fields this crate has
//! never heard of.
//!
//! Memory: a catalog of 11,739 real tools is ~16 MB of compact JSON, but ~83 MB as
//! `serde_json::Value` trees (a map, a `String` and an allocation per node). So a [`Tool`]
//! parses only what the proxy reads on every search and listing (name, title, description)
//! and keeps every other member (`inputSchema`, `outputSchema`, `annotations`, `icons`,
//! `_meta`, …) as its compact JSON text ([`RawValue`], serde_json's `raw_value` feature).
//! Readers parse a member when they need it: [`Tool::schema_view`] borrows from the text
//! (parameter names, descriptions and enum values for the index and the search hits), the
//! full `Value` is built only for `mcp_describe` and, once per tool, for argument validation.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// One tool definition as an upstream's `tools/list` returns it.
#[derive(Clone)]
pub struct Tool {
    /// The upstream's own name for the tool; the proxy routes by it.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Every other member, in the upstream's order, as compact JSON text. `inputSchema` is
    /// always present (`{"type":"object"}` when an upstream omits it).
    members: Vec<(Box<str>, Box<RawValue>)>,
    /// The definition's hash (see `catalog::snapshot::tool_hash`), computed once.
    hash: std::sync::OnceLock<u64>,
}

const DEFAULT_INPUT_SCHEMA: &str = r#"{"type":"object"}"#;

impl Tool {
    /// The description, or `""` when the upstream gave none.
    pub fn description_str(&self) -> &str {
        self.description.as_deref().unwrap_or("")
    }

    /// A member other than `name`, `title` and `description`, as JSON text.
    pub fn raw(&self, key: &str) -> Option<&RawValue> {
        self.members.iter().find(|(k, _)| &**k == key).map(|(_, v)| &**v)
    }

    /// Every member other than `name`, `title` and `description`, in the upstream's order.
    pub fn members(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.members.iter().map(|(k, v)| (&**k, &**v))
    }

    /// A member parsed (`None` when absent).
    pub fn member_value(&self, key: &str) -> Option<Value> {
        self.raw(key)
            .map(|r| serde_json::from_str(r.get()).unwrap_or(Value::Null))
    }

    /// The input schema's JSON text (never dereferenced).
    pub fn input_schema_raw(&self) -> &str {
        self.raw("inputSchema")
            .map(RawValue::get)
            .unwrap_or(DEFAULT_INPUT_SCHEMA)
    }

    /// The input schema, parsed.
    pub fn input_schema(&self) -> Value {
        serde_json::from_str(self.input_schema_raw()).unwrap_or_else(|_| serde_json::json!({"type": "object"}))
    }

    pub fn output_schema(&self) -> Option<Value> {
        self.member_value("outputSchema")
    }

    pub fn annotations(&self) -> Option<Value> {
        self.member_value("annotations")
    }

    /// A boolean annotation (`readOnlyHint`, …), without building the annotations object.
    pub fn annotation_bool(&self, key: &str) -> Option<bool> {
        let raw = self.raw("annotations")?;
        let m: Vec<(Cow<'_, str>, &RawValue)> = object_members(raw.get())?;
        let (_, v) = m.iter().find(|(k, _)| k == key)?;
        serde_json::from_str(v.get()).ok()
    }

    /// `annotations.title`, when it is a string.
    pub fn annotation_title(&self) -> Option<Cow<'_, str>> {
        let raw = self.raw("annotations")?;
        let m: Vec<(Cow<'_, str>, &RawValue)> = object_members(raw.get())?;
        let (_, v) = m.into_iter().find(|(k, _)| k == "title")?;
        serde_json::from_str::<Cow<'_, str>>(v.get()).ok()
    }

    /// The parts of the input schema the index and the search hits read, borrowed from its
    /// text; a member of the wrong type reads as absent.
    pub fn schema_view(&self) -> SchemaView<'_> {
        SchemaView::parse(self.input_schema_raw())
    }

    /// Names listed in the input schema's top-level `required` array, in schema order.
    pub fn required_params(&self) -> Vec<String> {
        self.schema_view().required.into_iter().map(Cow::into_owned).collect()
    }

    /// Top-level property names of the input schema, in schema order.
    pub fn param_names(&self) -> Vec<String> {
        self.schema_view()
            .params
            .into_iter()
            .map(|p| p.name.into_owned())
            .collect()
    }

    /// The definition's hash, computed by `compute` on first use.
    pub fn hash_with(&self, compute: impl FnOnce(&Tool) -> u64) -> u64 {
        *self.hash.get_or_init(|| compute(self))
    }

    /// Records the hash a manifest written by this proxy stored for this definition, so a
    /// start from the manifest does not re-hash every tool. Ignored once a hash is known.
    pub fn set_known_hash(&self, hash: u64) {
        let _ = self.hash.set(hash);
    }

    /// Sets (or replaces) a member; `value` is stored compact.
    pub fn set_member(&mut self, key: &str, value: &Value) {
        self.hash = Default::default();
        let raw = RawValue::from_string(value.to_string()).expect("a Value serialises to valid JSON");
        match self.members.iter_mut().find(|(k, _)| &**k == key) {
            Some(slot) => slot.1 = raw,
            None => self.members.push((key.into(), raw)),
        }
    }

    /// Removes a member (not `name`, `title` or `description`; `inputSchema` falls back to
    /// its default).
    pub fn remove_member(&mut self, key: &str) {
        self.hash = Default::default();
        self.members.retain(|(k, _)| &**k != key);
    }

    /// The definition as a `Value` (for `mcp_describe`-like output and tests).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.title == other.title
            && self.description == other.description
            && self.members.len() == other.members.len()
            && self
                .members
                .iter()
                .zip(&other.members)
                .all(|(a, b)| a.0 == b.0 && a.1.get() == b.1.get())
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("title", &self.title)
            .field("description", &self.description)
            .field(
                "members",
                &self.members.iter().map(|(k, v)| (&**k, v.get())).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &self.name)?;
        if let Some(t) = &self.title {
            m.serialize_entry("title", t)?;
        }
        if let Some(d) = &self.description {
            m.serialize_entry("description", d)?;
        }
        for (k, v) in &self.members {
            m.serialize_entry(&**k, &**v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tool, D::Error> {
        struct ToolVisitor;
        impl<'de> Visitor<'de> for ToolVisitor {
            type Value = Tool;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool definition object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tool, A::Error> {
                let mut name: Option<String> = None;
                let mut title = None;
                let mut description = None;
                let mut members: Vec<(Box<str>, Box<RawValue>)> = Vec::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "name" => name = Some(map.next_value()?),
                        "title" => title = map.next_value()?,
                        "description" => description = map.next_value()?,
                        _ => {
                            let raw = compact(map.next_value::<Box<RawValue>>()?);
                            if members.iter().any(|(k, _)| **k == *key) {
                                // A duplicate key: the last one wins, as in a JSON object.
                                members.retain(|(k, _)| **k != *key);
                            }
                            members.push((key.into_owned().into_boxed_str(), raw));
                        }
                    }
                }
                let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
                if !members.iter().any(|(k, _)| &**k == "inputSchema") {
                    let default = RawValue::from_string(DEFAULT_INPUT_SCHEMA.into()).map_err(de::Error::custom)?;
                    members.insert(0, ("inputSchema".into(), default));
                }
                members.shrink_to_fit();
                Ok(Tool {
                    name,
                    title,
                    description,
                    members,
                    hash: Default::default(),
                })
            }
        }
        d.deserialize_map(ToolVisitor)
    }
}

/// `raw` without whitespace outside strings (upstreams and files may pretty-print; the text
/// is kept for the life of the catalog, so it is kept small).
fn compact(raw: Box<RawValue>) -> Box<RawValue> {
    let text = raw.get();
    let mut in_string = false;
    let mut escaped = false;
    let needs = text.bytes().any(|b| {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            false
        } else if b == b'"' {
            in_string = true;
            false
        } else {
            matches!(b, b' ' | b'\n' | b'\r' | b'\t')
        }
    });
    if !needs {
        return raw;
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            out.push(c);
        }
    }
    // Removing insignificant whitespace keeps the text valid JSON.
    RawValue::from_string(out).unwrap_or(raw)
}

/// The members of a JSON object text, in order, values borrowed; `None` when it is no object.
pub fn object_members(text: &str) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);
    impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(std::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
                type Value = Members<'a>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'a>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                        out.push((k, map.next_value::<&'de RawValue>()?));
                    }
                    Ok(Members(out))
                }
            }
            d.deserialize_map(V(std::marker::PhantomData))
        }
    }
    serde_json::from_str::<Members<'_>>(text).ok().map(|m| m.0)
}

/// One top-level parameter of an input schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamView<'a> {
    pub name: Cow<'a, str>,
    pub description: Option<Cow<'a, str>>,
    /// The string values of its `enum`.
    pub enum_values: Vec<Cow<'a, str>>,
}

/// What the index and search hits read of an input schema, borrowed from its text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaView<'a> {
    /// `properties`, in schema order.
    pub params: Vec<ParamView<'a>>,
    /// The strings of `required`, in schema order.
    pub required: Vec<Cow<'a, str>>,
}

impl<'a> SchemaView<'a> {
    pub fn parse(text: &'a str) -> SchemaView<'a> {
        let mut view = SchemaView::default();
        let Some(members) = object_members(text) else {
            return view;
        };
        for (k, v) in members {
            match &*k {
                "properties" => {
                    for (name, prop) in object_members(v.get()).unwrap_or_default() {
                        let mut p = ParamView {
                            name,
                            description: None,
                            enum_values: Vec::new(),
                        };
                        for (pk, pv) in object_members(prop.get()).unwrap_or_default() {
                            match &*pk {
                                "description" => p.description = serde_json::from_str(pv.get()).ok(),
                                "enum" => p.enum_values = strings_of(pv.get()),
                                _ => {}
                            }
                        }
                        view.params.push(p);
                    }
                }
                "required" => view.required = strings_of(v.get()),
                _ => {}
            }
        }
        view
    }
}

/// The strings of a JSON array text (other elements skipped); empty when it is no array.
fn strings_of(text: &str) -> Vec<Cow<'_, str>> {
    serde_json::from_str::<Vec<&RawValue>>(text)
        .map(|items| {
            items
                .into_iter()
                .filter_map(|r| serde_json::from_str::<Cow<'_, str>>(r.get()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_verbatim_and_keeps_unknown_members() {
        let v = json!({"name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}},
            "icons": [{"src": "x"}], "_meta": {"k": 1}, "annotations": {"readOnlyHint": true}});
        let t: Tool = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(t.to_value(), v);
        assert_eq!(t.param_names(), ["b", "a"], "schema order kept");
        assert_eq!(t.annotation_bool("readOnlyHint"), Some(true));
        assert_eq!(t.annotation_bool("destructiveHint"), None);
        let again: Tool = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn pretty_text_is_stored_compact_and_strings_keep_their_spaces() {
        let text = "{\"name\": \"t\",\n  \"inputSchema\": {\n    \"type\": \"object\",\n    \"properties\": {\"q\": {\"description\": \"a  \\\"quoted\\\"  text\"}}\n  }\n}";
        let t: Tool = serde_json::from_str(text).unwrap();
        assert_eq!(
            t.input_schema_raw(),
            r#"{"type":"object","properties":{"q":{"description":"a  \"quoted\"  text"}}}"#
        );
        assert_eq!(
            t.schema_view().params[0].description.as_deref(),
            Some("a  \"quoted\"  text")
        );
    }

    #[test]
    fn a_missing_input_schema_defaults_and_names_are_required() {
        let t: Tool = serde_json::from_value(json!({"name": "t"})).unwrap();
        assert_eq!(t.input_schema(), json!({"type": "object"}));
        assert_eq!(t.to_value(), json!({"name": "t", "inputSchema": {"type": "object"}}));
        assert!(serde_json::from_value::<Tool>(json!({"description": "x"})).is_err());
        assert!(serde_json::from_value::<Tool>(json!({"name": 3})).is_err());
    }

    #[test]
    fn schema_view_is_lenient() {
        let t: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": {
            "properties": {"mode": {"enum": ["fast", 3, null, "slow"], "description": 7}, "x": true},
            "required": ["mode", 5]}}))
        .unwrap();
        let v = t.schema_view();
        assert_eq!(v.params.len(), 2);
        assert_eq!(v.params[0].enum_values, ["fast", "slow"]);
        assert_eq!(v.params[0].description, None);
        assert_eq!(v.required, ["mode"]);
        let odd: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"properties": [1], "required": "x"}})).unwrap();
        assert_eq!(odd.schema_view(), SchemaView::default());
        let none: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": 5})).unwrap();
        assert_eq!(none.schema_view(), SchemaView::default());
    }

    #[test]
    fn members_can_be_set_and_removed() {
        let mut t: Tool = serde_json::from_value(json!({"name": "t"})).unwrap();
        t.set_member("annotations", &json!({"title": "Nice"}));
        assert_eq!(t.annotation_title().as_deref(), Some("Nice"));
        t.remove_member("annotations");
        assert_eq!(t.annotations(), None);
    }
}
