//! A JSON object read one level deep: its members in order, each value kept as the JSON text
//! it came as ([`RawObject`]).
//!
//! An upstream's tool result is relayed, not read: the proxy looks at and replaces a few
//! top-level members (`isError`, `_meta`, `resultType`) and writes every other member out byte
//! for byte, so a result of any size costs one scan and one copy instead of a tree of values
//! built and serialized again.

use std::collections::HashMap;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{Map, Value};

/// A JSON object whose member values are raw JSON text. A member repeated in the input keeps
/// its last value (as `serde_json::Value` does).
#[derive(Debug, Clone, Default)]
pub struct RawObject {
    members: Vec<(String, Box<RawValue>)>,
}

impl RawObject {
    /// Reads `json`, which must be an object.
    pub fn parse(json: &str) -> Result<RawObject, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// A member's raw value.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// Whether the member is the literal `true`.
    pub fn is_true(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| serde_json::from_str::<bool>(v.get()).unwrap_or(false))
    }

    /// A member parsed as an object (`None` if absent or not an object).
    pub fn object(&self, key: &str) -> Option<Map<String, Value>> {
        self.get(key).and_then(|v| serde_json::from_str(v.get()).ok())
    }

    pub fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let at = self.members.iter().position(|(k, _)| k == key)?;
        Some(self.members.remove(at).1)
    }

    /// Sets a member: in place if present, else appended.
    pub fn insert(&mut self, key: &str, value: Box<RawValue>) {
        match self.members.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.members.push((key.to_string(), value)),
        }
    }

    /// Sets a member to `value` serialized (a value that cannot be serialized is left out).
    pub fn insert_value<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        if let Ok(raw) = to_raw_value(value) {
            self.insert(key, raw);
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The object as a value tree (for a path that needs one; the relay writes it raw).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in &self.members {
            m.insert(k.clone(), serde_json::from_str(v.get()).unwrap_or(Value::Null));
        }
        Value::Object(m)
    }

    /// Keeps the last of repeated keys, in the place of the first (as `Value` does).
    fn dedup(&mut self) {
        if self.members.len() < 2 {
            return;
        }
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(self.members.len());
        for (i, (k, _)) in self.members.iter().enumerate() {
            last.insert(k.as_str(), i);
        }
        if last.len() == self.members.len() {
            return;
        }
        let mut first: HashMap<String, usize> = HashMap::new();
        let mut out: Vec<(String, Box<RawValue>)> = Vec::with_capacity(last.len());
        let members = std::mem::take(&mut self.members);
        for (k, v) in members {
            match first.get(&k) {
                Some(&at) => out[at].1 = v,
                None => {
                    first.insert(k.clone(), out.len());
                    out.push((k, v));
                }
            }
        }
        self.members = out;
    }
}

impl Serialize for RawObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len()))?;
        for (k, v) in &self.members {
            map.serialize_entry(k, &**v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = RawObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4).min(64));
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(entry);
                }
                let mut object = RawObject { members };
                object.dedup();
                Ok(object)
            }
        }
        deserializer.deserialize_map(Members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_pass_through_byte_for_byte() {
        let text = r#"{"content": [ {"type":"text", "text":"a\"b é"} ], "n": 1.50, "isError": true}"#;
        let o = RawObject::parse(text).unwrap();
        assert_eq!(o.len(), 3);
        assert_eq!(
            o.get("content").unwrap().get(),
            r#"[ {"type":"text", "text":"a\"b é"} ]"#
        );
        assert_eq!(o.get("n").unwrap().get(), "1.50", "numbers are not rewritten");
        assert!(o.is_true("isError"));
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"content":[ {"type":"text", "text":"a\"b é"} ],"n":1.50,"isError":true}"#
        );
        assert_eq!(o.to_value(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn members_are_replaced_removed_and_added_in_order() {
        let mut o = RawObject::parse(r#"{"a":1,"resultType":"complete","_meta":{"x":1},"b":2}"#).unwrap();
        assert!(o.remove("resultType").is_some());
        assert!(o.remove("resultType").is_none());
        assert_eq!(o.object("_meta"), json!({"x": 1}).as_object().cloned());
        o.insert_value("_meta", &json!({"y": 2}));
        o.insert_value("c", &json!([3]));
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"a":1,"_meta":{"y":2},"b":2,"c":[3]}"#
        );
        assert!(!o.is_true("a"));
        assert!(o.object("a").is_none());
    }

    #[test]
    fn only_objects_are_read_and_repeated_keys_keep_the_last_value() {
        for not_object in ["[]", "\"x\"", "1", "null", "{\"a\":", ""] {
            assert!(RawObject::parse(not_object).is_err(), "{not_object}");
        }
        let o = RawObject::parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(serde_json::to_string(&o).unwrap(), r#"{"a":3,"b":2}"#);
        assert_eq!(o.to_value(), json!({"a": 3, "b": 2}));
        let many: String = (0..40).map(|i| format!("\"k{}\":{i},", i % 20)).collect();
        let o = RawObject::parse(&format!("{{{}\"z\":0}}", many)).unwrap();
        assert_eq!(o.len(), 21);
        assert_eq!(o.get("k3").unwrap().get(), "23");
    }
}
