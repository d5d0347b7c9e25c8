//! Requests a server sends its client while a tool runs — `elicitation/create`,
//! `sampling/createMessage`, `roots/list` — as pure data: what a client declared it can answer
//! ([`Askable`]), how that is declared upstream, carried in a legacy session id, and checked
//! against a question; and the 2026-07-28 `input_required` result's shape ([`input_round`]).
//! The questions themselves, typed, and their translations between the eras are
//! `proxy_core::asking`'s.
//!
//! The proxy bridges exactly these three methods (and answers `ping` itself); a client's other
//! capabilities (tasks, experimental, …) are not carried upstream, since nothing could relay
//! what they would bring.

use serde_json::{json, Map, Value};

use crate::modern::INPUT_REQUIRED;
use crate::raw::RawObject;

/// The methods a server may ask its client during a call (besides `ping`).
pub const ELICIT: &str = "elicitation/create";
pub const SAMPLE: &str = "sampling/createMessage";
pub const ROOTS: &str = "roots/list";

/// The questions a client can answer: its declared `elicitation` (form, url), `sampling`
/// (with tools) and `roots` capabilities, as far as the proxy bridges them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Askable {
    bits: u8,
}

const ELICIT_FORM: u8 = 1;
const ELICIT_URL: u8 = 2;
const SAMPLING: u8 = 4;
const SAMPLING_TOOLS: u8 = 8;
const ROOTS_LIST: u8 = 16;
const ALL: u8 = ELICIT_FORM | ELICIT_URL | SAMPLING | SAMPLING_TOOLS | ROOTS_LIST;

/// A question the client cannot answer: the capability it would need (a ClientCapabilities
/// object, as in the 2026-07-28 `-32021` error's `requiredCapabilities`).
#[derive(Debug, Clone, PartialEq)]
pub struct Missing(pub Value);

impl Askable {
    /// Nothing can be asked.
    pub const NONE: Askable = Askable { bits: 0 };
    /// Everything the proxy can bridge: what it declares to an upstream it shares among all
    /// its clients (a legacy session), each question then checked against its own client.
    pub const ALL: Askable = Askable { bits: ALL };

    /// From a client's declared capabilities (`initialize`'s `capabilities`, or the modern
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]`). An empty `elicitation` object
    /// means form mode (the spec's backwards-compatible reading).
    pub fn from_capabilities(caps: Option<&Value>) -> Askable {
        let Some(caps) = caps.and_then(Value::as_object) else {
            return Askable::NONE;
        };
        let mut bits = 0;
        if let Some(e) = caps.get("elicitation").and_then(Value::as_object) {
            let (form, url) = (e.contains_key("form"), e.contains_key("url"));
            if form || !url {
                bits |= ELICIT_FORM;
            }
            if url {
                bits |= ELICIT_URL;
            }
        }
        if let Some(s) = caps.get("sampling").and_then(Value::as_object) {
            bits |= SAMPLING;
            if s.contains_key("tools") {
                bits |= SAMPLING_TOOLS;
            }
        }
        if caps.get("roots").is_some_and(Value::is_object) {
            bits |= ROOTS_LIST;
        }
        Askable { bits }
    }

    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    fn has(self, bit: u8) -> bool {
        self.bits & bit != 0
    }

    /// The capabilities object that declares this (what goes upstream).
    pub fn capabilities(self) -> Value {
        let mut caps = Map::new();
        if self.has(ELICIT_FORM) || self.has(ELICIT_URL) {
            let mut e = Map::new();
            if self.has(ELICIT_FORM) {
                e.insert("form".into(), json!({}));
            }
            if self.has(ELICIT_URL) {
                e.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(e));
        }
        if self.has(SAMPLING) {
            let tools = if self.has(SAMPLING_TOOLS) {
                json!({"tools": {}})
            } else {
                json!({})
            };
            caps.insert("sampling".into(), tools);
        }
        if self.has(ROOTS_LIST) {
            caps.insert("roots".into(), json!({}));
        }
        Value::Object(caps)
    }

    /// Whether a question (`method` with `params`) is one this client can answer; if not,
    /// the capability it lacks. Methods the proxy does not bridge are never askable.
    pub fn allows(self, method: &str, params: Option<&Value>) -> Result<(), Missing> {
        let (needed, missing) = match method {
            ELICIT => {
                let url = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
                if url {
                    (ELICIT_URL, json!({"elicitation": {"url": {}}}))
                } else {
                    (ELICIT_FORM, json!({"elicitation": {"form": {}}}))
                }
            }
            SAMPLE => {
                let tools = params.and_then(|p| p.get("tools")).is_some_and(|t| !t.is_null());
                if tools {
                    (SAMPLING | SAMPLING_TOOLS, json!({"sampling": {"tools": {}}}))
                } else {
                    (SAMPLING, json!({"sampling": {}}))
                }
            }
            ROOTS => (ROOTS_LIST, json!({"roots": {}})),
            _ => return Err(Missing(json!({}))),
        };
        if self.bits & needed == needed {
            Ok(())
        } else {
            Err(Missing(missing))
        }
    }

    /// The suffix of a legacy session id that carries this (`""` for nothing): the proxy is
    /// stateless, so what the client declared at `initialize` rides in the id it sends back.
    /// A client can only claim capabilities for itself, so the id need not be sealed.
    pub fn session_suffix(self) -> String {
        if self.is_empty() {
            String::new()
        } else {
            format!(".{:02x}", self.bits)
        }
    }

    /// What a session id (minted with [`Askable::session_suffix`]) says the client can answer.
    pub fn of_session_id(id: &str) -> Askable {
        id.rsplit_once('.')
            .filter(|(_, tail)| tail.len() == 2)
            .and_then(|(_, tail)| u8::from_str_radix(tail, 16).ok())
            .map_or(Askable::NONE, |bits| Askable { bits: bits & ALL })
    }
}

/// The methods a ClientCapabilities object (a `-32021` error's `requiredCapabilities`) is
/// needed for, sorted; the capability's own name for one the proxy does not bridge.
pub fn methods_needing(capabilities: Option<&Value>) -> Vec<String> {
    let mut methods: Vec<String> = capabilities
        .and_then(Value::as_object)
        .map(|caps| {
            caps.keys()
                .take(8)
                .map(|k| match k.as_str() {
                    "elicitation" => ELICIT.to_string(),
                    "sampling" => SAMPLE.to_string(),
                    "roots" => ROOTS.to_string(),
                    other => other.chars().take(64).collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    methods.sort();
    methods
}

/// The error a client's question is answered with when the client cannot answer it (the
/// 2026-07-28 `-32021` MissingRequiredClientCapability, also used towards 2025 upstreams: a
/// code they do not know is still an error they report).
pub const MISSING_CAPABILITY: i64 = -32021;

/// The longest upstream `requestState` the proxy carries (inside its own sealed state).
pub const MAX_UPSTREAM_STATE: usize = 64 * 1024;

/// A 2026-07-28 `input_required` result's `inputRequests` map (empty when absent) and
/// `requestState`; `None` for any other result.
pub fn input_round(result: &RawObject) -> Option<(Map<String, Value>, Option<String>)> {
    let kind = result
        .get("resultType")
        .and_then(|v| serde_json::from_str::<&str>(v.get()).ok());
    if kind != Some(INPUT_REQUIRED) {
        return None;
    }
    let requests = result.object("inputRequests").unwrap_or_default();
    let state = result
        .get("requestState")
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok());
    Some((requests, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_round_trip_through_their_declaration_and_a_session_id() {
        let cases = [
            json!({}),
            json!({"elicitation": {}}),
            json!({"elicitation": {"url": {}}}),
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {"listChanged": true}}),
            json!({"sampling": {}, "experimental": {"x": {}}, "tasks": {}}),
        ];
        for caps in cases {
            let a = Askable::from_capabilities(Some(&caps));
            assert_eq!(Askable::from_capabilities(Some(&a.capabilities())), a, "{caps}");
            let id = format!("0123456789abcdef0123456789abcdef{}", a.session_suffix());
            assert_eq!(Askable::of_session_id(&id), a, "{caps}");
        }
        assert_eq!(
            Askable::from_capabilities(Some(&json!({"elicitation": {}}))).capabilities(),
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(
            Askable::ALL.capabilities(),
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}})
        );
        assert!(Askable::from_capabilities(None).is_empty());
        assert!(Askable::from_capabilities(Some(&json!({"roots": true}))).is_empty());
    }

    #[test]
    fn a_session_id_without_a_valid_suffix_can_be_asked_nothing() {
        for id in ["0123456789abcdef", "abc.zz", "abc.1", "abc.123", "", "."] {
            assert!(Askable::of_session_id(id).is_empty(), "{id}");
        }
        // unknown bits are ignored, not trusted
        assert_eq!(Askable::of_session_id("abc.ff"), Askable::ALL);
    }

    #[test]
    fn a_question_is_allowed_only_with_its_capability() {
        let form = Askable::from_capabilities(Some(&json!({"elicitation": {}})));
        assert_eq!(form.allows(ELICIT, Some(&json!({"message": "ok?"}))), Ok(()));
        assert_eq!(
            form.allows(ELICIT, Some(&json!({"mode": "url", "url": "https://x"}))),
            Err(Missing(json!({"elicitation": {"url": {}}})))
        );
        assert_eq!(form.allows(SAMPLE, None), Err(Missing(json!({"sampling": {}}))));
        assert_eq!(form.allows(ROOTS, None), Err(Missing(json!({"roots": {}}))));
        let sampling = Askable::from_capabilities(Some(&json!({"sampling": {}})));
        assert_eq!(sampling.allows(SAMPLE, Some(&json!({"messages": []}))), Ok(()));
        assert_eq!(
            sampling.allows(SAMPLE, Some(&json!({"tools": [{"name": "t"}]}))),
            Err(Missing(json!({"sampling": {"tools": {}}})))
        );
        assert!(
            Askable::ALL.allows("tasks/get", None).is_err(),
            "unbridged methods are never askable"
        );
        assert!(Askable::ALL.allows("ping", None).is_err());
    }

    #[test]
    fn a_missing_capability_names_the_methods_it_is_for() {
        let caps = json!({"sampling": {}, "elicitation": {"form": {}}, "tasks": {}});
        assert_eq!(methods_needing(Some(&caps)), [ELICIT, SAMPLE, "tasks"]);
        assert!(methods_needing(None).is_empty());
        assert!(methods_needing(Some(&json!("x"))).is_empty());
    }
}
