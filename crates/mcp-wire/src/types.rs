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
//! `_meta`, …) as one compact JSON object text, LZ4-compressed against a built-in dictionary
//! of JSON Schema phrasing (`lz4_flex`: pure Rust, an external-dictionary block API;
//! decompression runs at GB/s, so a reader pays microseconds). Readers take the text with
//! [`Tool::rest`] and parse what they need: [`Rest::schema_view`] borrows from it
//! (parameter names, descriptions and enum values for the index and the search hits); the
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
    /// Every other member, in the upstream's order, as one compact JSON object, packed.
    /// `inputSchema` is always present (`{"type":"object"}` when an upstream omits it).
    rest: Packed,
    /// The definition's hash (see `proxy_core::catalog::snapshot::tool_hash`), computed once.
    hash: std::sync::OnceLock<u64>,
}

const DEFAULT_INPUT_SCHEMA: &str = r#"{"type":"object"}"#;

/// The members of a tool other than name, title and description: one JSON object text.
pub struct Rest<'a> {
    text: Cow<'a, str>,
}

impl Rest<'_> {
    /// The whole object, e.g. `{"inputSchema":{…},"annotations":{…}}`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The members, in order, values borrowed.
    pub fn members(&self) -> Vec<(Cow<'_, str>, &RawValue)> {
        object_members(&self.text).unwrap_or_default()
    }

    /// One member's JSON text.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.members().into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The input schema's JSON text (never dereferenced).
    pub fn input_schema_raw(&self) -> &str {
        self.get("inputSchema")
            .map(RawValue::get)
            .unwrap_or(DEFAULT_INPUT_SCHEMA)
    }

    /// The parts of the input schema the index and the search hits read, borrowed from its
    /// text; a member of the wrong type reads as absent.
    pub fn schema_view(&self) -> SchemaView<'_> {
        SchemaView::parse(self.input_schema_raw())
    }
}

impl Tool {
    /// The description, or `""` when the upstream gave none.
    pub fn description_str(&self) -> &str {
        self.description.as_deref().unwrap_or("")
    }

    /// Every member other than name, title and description (unpacked).
    pub fn rest(&self) -> Rest<'_> {
        Rest { text: self.rest.text() }
    }

    /// A member parsed (`None` when absent).
    pub fn member_value(&self, key: &str) -> Option<Value> {
        self.rest()
            .get(key)
            .map(|r| serde_json::from_str(r.get()).unwrap_or(Value::Null))
    }

    /// The input schema, parsed.
    pub fn input_schema(&self) -> Value {
        serde_json::from_str(self.rest().input_schema_raw()).unwrap_or_else(|_| serde_json::json!({"type": "object"}))
    }

    pub fn output_schema(&self) -> Option<Value> {
        self.member_value("outputSchema")
    }

    pub fn annotations(&self) -> Option<Value> {
        self.member_value("annotations")
    }

    /// A boolean annotation (`readOnlyHint`, …), without building the annotations object.
    pub fn annotation_bool(&self, key: &str) -> Option<bool> {
        let rest = self.rest();
        let raw = rest.get("annotations")?;
        let m: Vec<(Cow<'_, str>, &RawValue)> = object_members(raw.get())?;
        let (_, v) = m.iter().find(|(k, _)| k == key)?;
        serde_json::from_str(v.get()).ok()
    }

    /// `annotations.title`, when it is a string.
    pub fn annotation_title(&self) -> Option<String> {
        let rest = self.rest();
        let raw = rest.get("annotations")?;
        let m: Vec<(Cow<'_, str>, &RawValue)> = object_members(raw.get())?;
        let (_, v) = m.into_iter().find(|(k, _)| k == "title")?;
        serde_json::from_str::<String>(v.get()).ok()
    }

    /// Names listed in the input schema's top-level `required` array, in schema order.
    pub fn required_params(&self) -> Vec<String> {
        let rest = self.rest();
        let view = rest.schema_view();
        view.required.into_iter().map(Cow::into_owned).collect()
    }

    /// Top-level property names of the input schema, in schema order.
    pub fn param_names(&self) -> Vec<String> {
        let rest = self.rest();
        let view = rest.schema_view();
        view.params.into_iter().map(|p| p.name.into_owned()).collect()
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

    /// Forgets the cached hash, after `name`, `title` or `description` were changed.
    pub fn forget_hash(&mut self) {
        self.hash = Default::default();
    }

    /// Sets (or replaces) a member; `value` is stored compact.
    pub fn set_member(&mut self, key: &str, value: &Value) {
        let raw = RawValue::from_string(value.to_string()).expect("a Value serialises to valid JSON");
        self.edit_members(|members| match members.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = raw,
            None => members.push((key.to_string(), raw)),
        });
    }

    /// Removes a member (not `name`, `title` or `description`; `inputSchema` falls back to
    /// its default).
    pub fn remove_member(&mut self, key: &str) {
        self.edit_members(|members| members.retain(|(k, _)| k != key));
    }

    /// Unpacks the members, lets `edit` change them, packs them again.
    fn edit_members(&mut self, edit: impl FnOnce(&mut Vec<(String, Box<RawValue>)>)) {
        let mut members: Vec<(String, Box<RawValue>)> = self
            .rest()
            .members()
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.to_owned()))
            .collect();
        edit(&mut members);
        self.rest = Packed::pack(&object_text(&members));
        self.hash = Default::default();
    }

    /// The definition as a `Value` (for `mcp_describe`-like output and tests).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Heap bytes of the packed members (for memory reports).
    pub fn packed_len(&self) -> usize {
        self.rest.0.len()
    }
}

/// `{"k":v,…}` of members already in compact JSON.
fn object_text(members: &[(String, Box<RawValue>)]) -> String {
    let mut out = String::with_capacity(2 + members.iter().map(|(k, v)| k.len() + v.get().len() + 4).sum::<usize>());
    out.push('{');
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).expect("a string serialises"));
        out.push(':');
        out.push_str(v.get());
    }
    out.push('}');
    out
}

/// A JSON text, stored as given (short texts) or LZ4-compressed against [`DICTIONARY`]. The
/// first byte says which.
#[derive(Clone, PartialEq, Eq)]
struct Packed(Box<[u8]>);

const PLAIN: u8 = 0;
const LZ4: u8 = 1;
/// Shorter texts are stored as they are (compression would gain nothing worth a decode).
const PACK_MIN: usize = 64;

impl Packed {
    fn pack(text: &str) -> Packed {
        if text.len() >= PACK_MIN {
            let compressed = lz4_flex::block::compress_prepend_size_with_dict(text.as_bytes(), DICTIONARY);
            if compressed.len() + 1 < text.len() {
                let mut out = Vec::with_capacity(compressed.len() + 1);
                out.push(LZ4);
                out.extend_from_slice(&compressed);
                return Packed(out.into_boxed_slice());
            }
        }
        let mut out = Vec::with_capacity(text.len() + 1);
        out.push(PLAIN);
        out.extend_from_slice(text.as_bytes());
        Packed(out.into_boxed_slice())
    }

    fn text(&self) -> Cow<'_, str> {
        let (tag, body) = self.0.split_first().unwrap_or((&PLAIN, &[]));
        match *tag {
            LZ4 => {
                // Only this module packs, from valid UTF-8; a failure cannot happen, and would
                // read as an empty object rather than a panic.
                let bytes = lz4_flex::block::decompress_size_prepended_with_dict(body, DICTIONARY).unwrap_or_default();
                String::from_utf8(bytes).map(Cow::Owned).unwrap_or(Cow::Borrowed("{}"))
            }
            _ => std::str::from_utf8(body)
                .map(Cow::Borrowed)
                .unwrap_or(Cow::Borrowed("{}")),
        }
    }
}

/// Phrasing that recurs in tool definitions (JSON Schema keywords and types, MCP annotation
/// names, common parameter descriptions), the LZ4 dictionary every packed text is matched
/// against. Changing it changes nothing stored on disk (manifests hold plain JSON).
const DICTIONARY: &[u8] = br##"{"inputSchema":{"type":"object","properties":{"id":{"type":"string","description":"The ID of the "},"name":{"type":"string","description":"The name of the "},"query":{"type":"string","description":"The search query"},"url":{"type":"string","format":"uri","description":"The URL of the "},"limit":{"type":"integer","description":"Maximum number of results to return","default":10,"minimum":1,"maximum":100},"page":{"type":"integer","description":"Page number for pagination"},"offset":{"type":"number","description":"Number of items to skip"},"enabled":{"type":"boolean","description":"Whether to include "},"tags":{"type":"array","items":{"type":"string"},"description":"List of "},"options":{"type":"object","additionalProperties":{"type":"string"},"description":"Optional "},"date":{"type":"string","format":"date-time","description":"Date in ISO 8601 format (YYYY-MM-DD)"},"sort":{"type":"string","enum":["asc","desc"],"description":"Sort order"},"value":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"null"}],"default":null,"title":"Value"}},"required":["id","name"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"},"outputSchema":{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]},"annotations":{"title":"","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{},"icons":[{"src":"https://","mimeType":"image/png"}],"server":"","original_name":"","package":"","package_version":"","description":"The unique identifier of the ","description":"Optional. If not provided, ","description":"The maximum number of ","description":"e.g. ","minLength":1,"maxLength":255,"pattern":"^[a-zA-Z0-9_-]+$","examples":[""],"$ref":"#/$defs/","$defs":{},"oneOf":[{"type":"object"},{"type":"array"}],"allOf":[],"const":"","nullable":true,"format":"email","format":"uuid","type":"boolean","type":"integer","type":"number","type":"array","type":"string","type":"object"}"##;

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        // Packing is deterministic: equal texts are equal bytes.
        self.name == other.name
            && self.title == other.title
            && self.description == other.description
            && self.rest == other.rest
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("title", &self.title)
            .field("description", &self.description)
            .field("rest", &self.rest().text())
            .finish()
    }
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rest = self.rest();
        let members = rest.members();
        let mut m = s.serialize_map(Some(
            1 + members.len() + self.title.is_some() as usize + self.description.is_some() as usize,
        ))?;
        m.serialize_entry("name", &self.name)?;
        if let Some(t) = &self.title {
            m.serialize_entry("title", t)?;
        }
        if let Some(d) = &self.description {
            m.serialize_entry("description", d)?;
        }
        for (k, v) in &members {
            m.serialize_entry(&**k, v)?;
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
                let mut members: Vec<(String, Box<RawValue>)> = Vec::new();
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
                            members.push((key.into_owned(), raw));
                        }
                    }
                }
                let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
                if !members.iter().any(|(k, _)| k == "inputSchema") {
                    let default = RawValue::from_string(DEFAULT_INPUT_SCHEMA.into()).map_err(de::Error::custom)?;
                    members.insert(0, ("inputSchema".into(), default));
                }
                Ok(Tool {
                    name,
                    title,
                    description,
                    rest: Packed::pack(&object_text(&members)),
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
    if !has_insignificant_whitespace(raw.get().as_bytes()) {
        return raw;
    }
    let text = raw.get();
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

/// Whether valid JSON text has whitespace outside its strings. Strings are skipped to their
/// closing quote with a slice search (most of a definition is inside strings).
fn has_insignificant_whitespace(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                loop {
                    match b[i.min(b.len())..].iter().position(|&c| c == b'"' || c == b'\\') {
                        Some(p) if b[i + p] == b'\\' => i += p + 2,
                        Some(p) => {
                            i += p + 1;
                            break;
                        }
                        None => return false,
                    }
                }
            }
            b' ' | b'\n' | b'\r' | b'\t' => return true,
            _ => i += 1,
        }
    }
    false
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
        // A long definition is stored packed and reads back the same.
        let long = json!({"name": "big", "inputSchema": {"type": "object", "properties": (0..50)
            .map(|i| (format!("p{i}"), json!({"type": "string", "description": format!("The name of the thing {i}")})))
            .collect::<serde_json::Map<String, Value>>()}});
        let big: Tool = serde_json::from_value(long.clone()).unwrap();
        assert!(
            big.packed_len() * 2 < big.rest().text().len(),
            "compressed: {} of {}",
            big.packed_len(),
            big.rest().text().len()
        );
        assert_eq!(big.to_value(), long);
        assert_eq!(big.param_names().len(), 50);
    }

    #[test]
    fn pretty_text_is_stored_compact_and_strings_keep_their_spaces() {
        let text = "{\"name\": \"t\",\n  \"inputSchema\": {\n    \"type\": \"object\",\n    \"properties\": {\"q\": {\"description\": \"a  \\\"quoted\\\"  text\"}}\n  }\n}";
        let t: Tool = serde_json::from_str(text).unwrap();
        assert_eq!(
            t.rest().input_schema_raw(),
            r#"{"type":"object","properties":{"q":{"description":"a  \"quoted\"  text"}}}"#
        );
        assert_eq!(
            t.rest().schema_view().params[0].description.as_deref(),
            Some("a  \"quoted\"  text")
        );
    }

    #[test]
    fn whitespace_outside_strings_is_found_and_inside_ignored() {
        let yes = [r#"{"a": 1}"#, "[1,\n2]", r#"{"a":"x\\" , "b":1}"#, r#"{"a":"\"" }"#];
        let no = [
            r#"{"a":"b c"}"#,
            r#"{"a":"x\" y"}"#,
            r#"["a\\","b c"]"#,
            "\"unterminated ",
            "123",
        ];
        for t in yes {
            assert!(has_insignificant_whitespace(t.as_bytes()), "{t}");
        }
        for t in no {
            assert!(!has_insignificant_whitespace(t.as_bytes()), "{t}");
        }
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
        let rest = t.rest();
        let v = rest.schema_view();
        assert_eq!(v.params.len(), 2);
        assert_eq!(v.params[0].enum_values, ["fast", "slow"]);
        assert_eq!(v.params[0].description, None);
        assert_eq!(v.required, ["mode"]);
        let odd: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"properties": [1], "required": "x"}})).unwrap();
        assert_eq!(odd.rest().schema_view(), SchemaView::default());
        let none: Tool = serde_json::from_value(json!({"name": "t", "inputSchema": 5})).unwrap();
        assert_eq!(none.rest().schema_view(), SchemaView::default());
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
