//! The 2026-07-28 ("modern") protocol era: request metadata, standard headers, error codes.
//!
//! Modern requests carry their version and client capabilities in `params._meta` and mirror
//! them in HTTP headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`).
//! This module holds the pure rules shared by the proxy's server side (checking what clients
//! send) and its client side (stamping what it sends upstream).

use base64::Engine;
use serde_json::{json, Map, Value};

use super::version;

pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
pub const LATEST_MODERN: &str = "2026-07-28";
/// The `resultType` of a result that asks the caller for input (MRTR: `inputRequests`, `requestState`).
pub const INPUT_REQUIRED: &str = "input_required";

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// A request's log level opt-in: no `notifications/message` without it.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Prefix of the keys the protocol reserves in `_meta`.
pub const RESERVED_META_PREFIX: &str = "io.modelcontextprotocol/";

pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_VERSION: i64 = -32022;

pub fn is_modern(v: &str) -> bool {
    MODERN_VERSIONS.contains(&v)
}

/// Every version the proxy serves, newest first (the `supportedVersions` of discovery).
pub fn all_supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(version::LEGACY_VERSIONS)
        .copied()
        .collect()
}

/// The protocol version a request body claims in `params._meta`, if any.
pub fn meta_version(params: Option<&Value>) -> Option<&str> {
    params?.get("_meta")?.get(META_PROTOCOL_VERSION)?.as_str()
}

/// Decodes an `Mcp-Name`/`Mcp-Param-*` header value: surrounding whitespace is dropped and a
/// `=?base64?…?=` value is decoded (strict base64, valid UTF-8); `None` if that fails.
pub fn decode_header_value(raw: &str) -> Option<String> {
    let v = raw.trim_matches(|c| c == ' ' || c == '\t');
    match v.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(v.to_string()),
    }
}

/// Encodes a header value, using the base64 sentinel when the plain form is not safe.
pub fn encode_header_value(v: &str) -> String {
    let looks_encoded = v.starts_with("=?base64?") && v.ends_with("?=");
    let plain_ok = !v.is_empty()
        && v.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !v.starts_with(' ')
        && !v.ends_with(' ')
        && !looks_encoded;
    if plain_ok {
        v.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v.as_bytes())
        )
    }
}

/// The header values of a modern request that matter for the checks.
#[derive(Debug, Default, Clone)]
pub struct RequestHeaders<'a> {
    pub protocol_version: Option<&'a str>,
    pub method: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// A modern request that must be refused, with its HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: u16,
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

fn refuse(status: u16, code: i64, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        code,
        message: message.into(),
        data: None,
    }
}

/// The unsupported-version error, listing what is supported and echoing what was asked.
pub fn unsupported_version(requested: &str) -> Refusal {
    Refusal {
        status: 400,
        code: UNSUPPORTED_VERSION,
        message: format!("Unsupported protocol version: {requested}"),
        data: Some(json!({"supported": all_supported_versions(), "requested": requested})),
    }
}

/// Checks a modern request's `_meta` and standard headers against its body. Order: required
/// `_meta` keys (-32602), header/body version agreement (-32020), version support (-32022),
/// `Mcp-Method` (-32020), `Mcp-Name` for name-bearing methods (-32020).
pub fn check_request(headers: &RequestHeaders<'_>, method: &str, params: Option<&Value>) -> Result<String, Refusal> {
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let version = meta.and_then(|m| m.get(META_PROTOCOL_VERSION)).and_then(Value::as_str);
    let caps_ok = meta
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .is_some_and(Value::is_object);
    let Some(version) = version else {
        return Err(refuse(
            400,
            super::jsonrpc::INVALID_PARAMS,
            format!("params._meta must carry {META_PROTOCOL_VERSION:?} and {META_CLIENT_CAPABILITIES:?}"),
        ));
    };
    if !caps_ok {
        return Err(refuse(
            400,
            super::jsonrpc::INVALID_PARAMS,
            format!("params._meta must carry {META_CLIENT_CAPABILITIES:?} (an object; {{}} declares none)"),
        ));
    }
    match headers.protocol_version.map(str::trim) {
        Some(h) if h == version => {}
        Some(h) => {
            return Err(refuse(
                400,
                HEADER_MISMATCH,
                format!("MCP-Protocol-Version header {h:?} does not match _meta protocolVersion {version:?}"),
            ))
        }
        None => return Err(refuse(400, HEADER_MISMATCH, "missing MCP-Protocol-Version header")),
    }
    if !is_modern(version) {
        return Err(unsupported_version(version));
    }
    match headers.method.map(str::trim) {
        Some(m) if m == method => {}
        Some(m) => {
            return Err(refuse(
                400,
                HEADER_MISMATCH,
                format!("Mcp-Method header {m:?} does not match the body method {method:?}"),
            ))
        }
        None => return Err(refuse(400, HEADER_MISMATCH, "missing Mcp-Method header")),
    }
    let body_name = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")).and_then(Value::as_str),
        "resources/read" => params.and_then(|p| p.get("uri")).and_then(Value::as_str),
        _ => None,
    };
    if let Some(body_name) = body_name {
        match headers.name.map(decode_header_value) {
            Some(Some(h)) if h == body_name => {}
            Some(Some(h)) => {
                return Err(refuse(
                    400,
                    HEADER_MISMATCH,
                    format!("Mcp-Name header {h:?} does not match the body {body_name:?}"),
                ))
            }
            Some(None) => return Err(refuse(400, HEADER_MISMATCH, "Mcp-Name header is not valid base64")),
            None => return Err(refuse(400, HEADER_MISMATCH, "missing Mcp-Name header")),
        }
    }
    Ok(version.to_string())
}

/// The `_meta` a modern request from this proxy carries.
pub fn request_meta(client_name: &str, client_version: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(META_PROTOCOL_VERSION.into(), Value::from(LATEST_MODERN));
    m.insert(META_CLIENT_CAPABILITIES.into(), json!({}));
    m.insert(
        META_CLIENT_INFO.into(),
        json!({"name": client_name, "version": client_version}),
    );
    m
}

/// The parts of a client's `_meta` that may be passed on upstream: everything except the
/// protocol's reserved keys (which describe the client's own connection, not the proxy's).
pub fn passthrough_meta(meta: Option<&Value>) -> Map<String, Value> {
    meta.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !k.starts_with(RESERVED_META_PREFIX))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `Mcp-Param-*` headers for a tools/call: top-level arguments whose schema property carries
/// `x-mcp-header`. Null or absent values are omitted.
pub fn param_headers(input_schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, prop) in props {
        let Some(header) = prop.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let value = match arguments.get(name) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => continue,
        };
        out.push((format!("Mcp-Param-{header}"), encode_header_value(&value)));
    }
    out
}

/// Whether a tool's `x-mcp-header` annotations are valid (non-empty RFC 9110 tokens, unique
/// case-insensitively, only on string/integer/boolean properties). Clients must drop tools
/// that violate this.
pub fn x_mcp_headers_valid(input_schema: &Value) -> bool {
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return true;
    };
    let mut seen = std::collections::HashSet::new();
    for prop in props.values() {
        let Some(h) = prop.get("x-mcp-header") else { continue };
        let Some(h) = h.as_str() else { return false };
        let token = !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let typed = matches!(
            prop.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        );
        if !token || !typed || !seen.insert(h.to_ascii_lowercase()) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(v: &str) -> Value {
        json!({"_meta": {META_PROTOCOL_VERSION: v, META_CLIENT_CAPABILITIES: {}}})
    }

    fn h<'a>(v: Option<&'a str>, m: Option<&'a str>, n: Option<&'a str>) -> RequestHeaders<'a> {
        RequestHeaders {
            protocol_version: v,
            method: m,
            name: n,
        }
    }

    #[test]
    fn valid_requests_pass_and_return_their_version() {
        let p = meta("2026-07-28");
        assert_eq!(
            check_request(&h(Some("2026-07-28"), Some("tools/list"), None), "tools/list", Some(&p)).unwrap(),
            "2026-07-28"
        );
        let mut call = meta("2026-07-28");
        call["name"] = json!("mcp_search");
        assert!(check_request(
            &h(Some("2026-07-28"), Some(" tools/call "), Some("  mcp_search  ")),
            "tools/call",
            Some(&call)
        )
        .is_ok());
        let b64 = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode("mcp_search")
        );
        assert!(check_request(
            &h(Some("2026-07-28"), Some("tools/call"), Some(&b64)),
            "tools/call",
            Some(&call)
        )
        .is_ok());
    }

    #[test]
    fn each_violation_has_its_code() {
        let code = |r: Result<String, Refusal>| r.unwrap_err().code;
        let p = meta("2026-07-28");
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("tools/list"), None),
                "tools/list",
                None
            )),
            -32602
        );
        let no_caps = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("tools/list"), None),
                "tools/list",
                Some(&no_caps)
            )),
            -32602
        );
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("prompts/list"), None),
                "tools/list",
                Some(&p)
            )),
            -32020
        );
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("TOOLS/LIST"), None),
                "tools/list",
                Some(&p)
            )),
            -32020
        );
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), None, None),
                "tools/list",
                Some(&p)
            )),
            -32020
        );
        assert_eq!(
            code(check_request(
                &h(None, Some("tools/list"), None),
                "tools/list",
                Some(&p)
            )),
            -32020
        );
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("server/discover"), None),
                "server/discover",
                Some(&meta("v999"))
            )),
            -32020
        );
        let r = check_request(
            &h(Some("v999"), Some("server/discover"), None),
            "server/discover",
            Some(&meta("v999")),
        )
        .unwrap_err();
        assert_eq!((r.status, r.code), (400, -32022));
        assert_eq!(r.data.unwrap()["requested"], "v999");
        let mut call = meta("2026-07-28");
        call["name"] = json!("a");
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("tools/call"), Some("b")),
                "tools/call",
                Some(&call)
            )),
            -32020
        );
        assert_eq!(
            code(check_request(
                &h(Some("2026-07-28"), Some("tools/call"), None),
                "tools/call",
                Some(&call)
            )),
            -32020
        );
    }

    #[test]
    fn header_values_encode_and_decode() {
        assert_eq!(encode_header_value("plain"), "plain");
        let enc = encode_header_value("héllo");
        assert!(enc.starts_with("=?base64?"));
        assert_eq!(decode_header_value(&enc).unwrap(), "héllo");
        assert_eq!(decode_header_value(" x "), Some("x".into()));
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_header_value("=?base64?SGVsbG8"), Some("=?base64?SGVsbG8".into()));
    }

    #[test]
    fn param_headers_and_validity() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "q": {"type": "string"}}});
        let hs = param_headers(&schema, &json!({"region": "eu west", "n": 3, "q": "x"}));
        assert_eq!(
            hs,
            vec![
                ("Mcp-Param-Region".to_string(), "eu west".to_string()),
                ("Mcp-Param-N".to_string(), "3".to_string())
            ]
        );
        assert!(param_headers(&schema, &json!({"region": null})).is_empty());
        assert!(x_mcp_headers_valid(&schema));
        assert!(!x_mcp_headers_valid(
            &json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}})
        ));
        assert!(!x_mcp_headers_valid(
            &json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}})
        ));
        assert!(!x_mcp_headers_valid(
            &json!({"properties": {"a": {"type": "string", "x-mcp-header": "bad header"}}})
        ));
    }

    #[test]
    fn passthrough_drops_reserved_keys() {
        let m = json!({"progressToken": "p1", META_PROTOCOL_VERSION: "2026-07-28", "vendor/x": 1});
        let out = passthrough_meta(Some(&m));
        assert_eq!(Value::Object(out), json!({"progressToken": "p1", "vendor/x": 1}));
    }
}
