//! JSON-RPC 2.0 envelopes as MCP uses them.
//!
//! Parsing is two-step on purpose: [`Incoming::parse`] classifies a body (request,
//! notification, response, or a precise reason it is none of them) without caring about the
//! method's params, so the HTTP layer can answer malformed input with the exact error code and
//! still echo the request `id` whenever one could be read.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
/// A request the client cancelled (LSP's `RequestCancelled`, used by MCP SDKs).
pub const REQUEST_CANCELLED: i64 = -32800;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Implementation-defined server error, used by SDKs for transport-level problems.
pub const SERVER_ERROR: i64 = -32000;

/// A JSON-RPC request id: a string or an integer (the spec forbids `null`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Num(i64),
    Str(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Num(n) => write!(f, "{n}"),
            RequestId::Str(s) => f.write_str(s),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

/// A request: it has an id and expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    /// `params` as sent; `None` when absent.
    pub params: Option<Value>,
}

impl Request {
    /// `params` as an object; an absent `params` reads as an empty object.
    pub fn params_object(&self) -> Result<Cow<'_, Map<String, Value>>, RpcError> {
        match &self.params {
            None | Some(Value::Null) => Ok(Cow::Owned(Map::new())),
            Some(Value::Object(m)) => Ok(Cow::Borrowed(m)),
            Some(_) => Err(RpcError::new(INVALID_PARAMS, "params must be an object")),
        }
    }
}

/// A classified JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request(Request),
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response from the peer (result or error), e.g. an answer to a server-initiated request.
    Response {
        id: Option<RequestId>,
        result: Option<Value>,
        error: Option<RpcError>,
    },
}

/// Why a body could not be classified, with whatever id could be salvaged for the reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    pub id: Option<RequestId>,
    pub error: RpcError,
}

fn malformed(id: Option<RequestId>, code: i64, message: &str) -> Box<Malformed> {
    Box::new(Malformed {
        id,
        error: RpcError::new(code, message),
    })
}

impl Incoming {
    /// Classifies one JSON-RPC message from raw bytes.
    pub fn parse(body: &[u8]) -> Result<Incoming, Box<Malformed>> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| malformed(None, PARSE_ERROR, &format!("Parse error: body is not valid JSON ({e})")))?;
        Incoming::from_value(value)
    }

    /// Classifies an already parsed JSON value.
    pub fn from_value(value: Value) -> Result<Incoming, Box<Malformed>> {
        let mut obj = match value {
            Value::Object(o) => o,
            Value::Array(_) => {
                return Err(malformed(
                    None,
                    INVALID_REQUEST,
                    "Invalid Request: JSON-RPC batches are not supported; send one message per POST",
                ))
            }
            _ => {
                return Err(malformed(
                    None,
                    INVALID_REQUEST,
                    "Invalid Request: expected a JSON object",
                ))
            }
        };
        let bad_id = || {
            malformed(
                None,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or an integer",
            )
        };
        let id = match obj.remove("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(RequestId::Str(s)),
            Some(Value::Number(n)) => Some(RequestId::Num(n.as_i64().ok_or_else(bad_id)?)),
            Some(_) => return Err(bad_id()),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(malformed(
                id,
                INVALID_REQUEST,
                "Invalid Request: \"jsonrpc\" must be \"2.0\"",
            ));
        }
        let params = obj.remove("params");
        match obj.remove("method") {
            Some(Value::String(method)) => {
                if let Some(p) = &params {
                    if !(p.is_object() || p.is_array() || p.is_null()) {
                        return Err(malformed(
                            id,
                            INVALID_REQUEST,
                            "Invalid Request: params must be an object",
                        ));
                    }
                }
                Ok(match id {
                    Some(id) => Incoming::Request(Request { id, method, params }),
                    None => Incoming::Notification { method, params },
                })
            }
            Some(_) => Err(malformed(
                id,
                INVALID_REQUEST,
                "Invalid Request: method must be a string",
            )),
            None => {
                let result = obj.remove("result");
                let error = match obj.remove("error") {
                    Some(e) => Some(serde_json::from_value(e).map_err(|_| {
                        malformed(id.clone(), INVALID_REQUEST, "Invalid Request: malformed error object")
                    })?),
                    None => None,
                };
                if result.is_none() && error.is_none() {
                    return Err(malformed(
                        id,
                        INVALID_REQUEST,
                        "Invalid Request: a message needs a method (request/notification) or a result/error (response)",
                    ));
                }
                Ok(Incoming::Response { id, result, error })
            }
        }
    }
}

/// A success response (the result is moved in, not copied).
pub fn result_response(id: &RequestId, result: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("id".into(), id_value(id));
    m.insert("result".into(), result);
    Value::Object(m)
}

/// The text of a success response: the bytes of `result_response(id, result).to_string()`,
/// written straight from `result` (any `Serialize`, e.g. a `RawValue` relayed as it came)
/// without building the response object.
pub fn result_response_text<T: Serialize + ?Sized>(id: &RequestId, result: &T) -> String {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_json(&mut out, id);
    out.extend_from_slice(br#","result":"#);
    write_json(&mut out, result);
    out.push(b'}');
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `value` as JSON; `null` if it cannot be (a map with non-string keys; never for the
/// types written here). Also the proxy's log lines are written with it.
pub fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let mark = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(mark);
        out.extend_from_slice(b"null");
    }
}

fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Num(n) => Value::from(*n),
        RequestId::Str(s) => Value::from(s.as_str()),
    }
}

/// Serialises an error response; the `id` member is omitted (never `null`) when unknown.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    if let Some(id) = id {
        m.insert("id".into(), id_value(id));
    }
    m.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
    Value::Object(m)
}

/// Serialises an outgoing request.
pub fn request(id: &RequestId, method: &str, params: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("id".into(), id_value(id));
    m.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Value::Object(m)
}

/// The text of an outgoing request, written straight from borrowed parts: `meta`, if given,
/// becomes the `_meta` member of `params` (an absent `params` becomes `{"_meta": …}`; a
/// `params` that is not an object is sent as it is). The bytes of `request` with the `_meta`
/// member inserted, without copying `params`.
pub fn request_text(id: &RequestId, method: &str, params: Option<&Value>, meta: Option<&Map<String, Value>>) -> String {
    /// `params` with `_meta` set to `meta` (last, or in place of the params' own).
    struct WithMeta<'a> {
        params: Option<&'a Map<String, Value>>,
        meta: &'a Map<String, Value>,
    }
    impl Serialize for WithMeta<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(None)?;
            let mut placed = false;
            for (k, v) in self.params.into_iter().flatten() {
                if k == "_meta" {
                    map.serialize_entry(k, self.meta)?;
                    placed = true;
                } else {
                    map.serialize_entry(k, v)?;
                }
            }
            if !placed {
                map.serialize_entry("_meta", self.meta)?;
            }
            map.end()
        }
    }
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Params<'a> {
        AsIs(&'a Value),
        WithMeta(WithMeta<'a>),
    }
    #[derive(Serialize)]
    struct Out<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<Params<'a>>,
    }
    let params = match (params, meta) {
        (None, None) => None,
        (Some(p), None) => Some(Params::AsIs(p)),
        (Some(Value::Object(p)), Some(meta)) => Some(Params::WithMeta(WithMeta { params: Some(p), meta })),
        (Some(p), Some(_)) => Some(Params::AsIs(p)),
        (None, Some(meta)) => Some(Params::WithMeta(WithMeta { params: None, meta })),
    };
    let mut out = Vec::with_capacity(256);
    write_json(
        &mut out,
        &Out {
            jsonrpc: "2.0",
            id,
            method,
            params,
        },
    );
    String::from_utf8(out).unwrap_or_default()
}

/// Serialises an outgoing notification.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_response_written_as_text_is_the_bytes_of_the_built_one() {
        let result = json!({"content": [{"type": "text", "text": "a \"quoted\" é"}], "isError": false});
        let raw = serde_json::value::to_raw_value(&result).unwrap();
        for id in [RequestId::Num(-3), RequestId::Str("x\"y".into())] {
            let built = result_response(&id, result.clone()).to_string();
            assert_eq!(result_response_text(&id, &result), built);
            assert_eq!(result_response_text(&id, &*raw), built);
        }
    }

    #[test]
    fn a_request_written_from_parts_is_the_bytes_of_the_built_one() {
        let meta: Map<String, Value> = json!({"progressToken": 1, "é": "\"x\""}).as_object().cloned().unwrap();
        let built = |params: Option<Value>, meta: Option<&Map<String, Value>>| {
            let params = match (params, meta) {
                (Some(Value::Object(mut p)), Some(m)) => {
                    p.insert("_meta".into(), Value::Object(m.clone()));
                    Some(Value::Object(p))
                }
                (None, Some(m)) => Some(json!({ "_meta": m })),
                (p, _) => p,
            };
            request(&RequestId::Num(4), "tools/call", params).to_string()
        };
        let args = json!({"name": "t", "arguments": {"a": [1, 2.5, null], "b": "\u{e9}"}});
        let owns_meta = json!({"_meta": {"old": true}, "name": "t"});
        for params in [None, Some(args), Some(owns_meta), Some(json!([1])), Some(json!({}))] {
            for m in [None, Some(&meta)] {
                assert_eq!(
                    request_text(&RequestId::Num(4), "tools/call", params.as_ref(), m),
                    built(params.clone(), m),
                    "{params:?} {m:?}"
                );
            }
        }
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let r = Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(matches!(
            r,
            Incoming::Request(Request {
                id: RequestId::Num(1),
                ..
            })
        ));
        let n = Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(n, Incoming::Notification { .. }));
        let s = Incoming::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(
            s,
            Incoming::Response {
                id: Some(RequestId::Str(_)),
                ..
            }
        ));
    }

    #[test]
    fn malformed_bodies_get_precise_codes_and_keep_the_id() {
        assert_eq!(Incoming::parse(b"{nope").unwrap_err().error.code, PARSE_ERROR);
        let batch = Incoming::parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap_err();
        assert_eq!(batch.error.code, INVALID_REQUEST);
        let v = Incoming::parse(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).unwrap_err();
        assert_eq!(v.id, Some(RequestId::Num(7)));
        assert_eq!(v.error.code, INVALID_REQUEST);
        let m = Incoming::parse(br#"{"jsonrpc":"2.0","id":7,"method":5}"#).unwrap_err();
        assert_eq!(m.error.code, INVALID_REQUEST);
        let p = Incoming::parse(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":3}"#).unwrap_err();
        assert_eq!(p.error.code, INVALID_REQUEST);
        let f = Incoming::parse(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).unwrap_err();
        assert_eq!(f.id, None);
    }

    #[test]
    fn error_responses_omit_unknown_ids() {
        let e = error_response(None, &RpcError::new(PARSE_ERROR, "x"));
        assert!(e.get("id").is_none());
        let e = error_response(Some(&RequestId::Str("q".into())), &RpcError::new(1, "x"));
        assert_eq!(e["id"], json!("q"));
    }
}
