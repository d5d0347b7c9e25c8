//! A client's `tools/call` params, read once ([`ToolCall`]): the tool's name and arguments,
//! the client's `_meta`, and a 2026-07-28 retry's `inputResponses` and `requestState`.

use serde_json::Value;

use crate::asks::Askable;
use crate::jsonrpc::{RpcError, INVALID_PARAMS};
use crate::modern::{META_CLIENT_CAPABILITIES, META_LOG_LEVEL};

/// The longest `_meta` log level taken (longer ones are ignored).
pub const MAX_LOG_LEVEL_LEN: usize = 16;

/// A client's `tools/call` params, read once: each member moved out of the request, not
/// copied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// `params.name`, when it is a string.
    pub name: Option<String>,
    /// `params.arguments` as sent; `Null` when absent.
    pub arguments: Value,
    /// `params._meta` as sent.
    pub meta: Option<Value>,
    /// `params.inputResponses` as sent (a 2026-07-28 retry's answers).
    pub input_responses: Option<Value>,
    /// `params.requestState` as sent: a member that is not a string still marks a retry.
    pub request_state: Option<Value>,
}

impl ToolCall {
    /// Reads a `tools/call`'s params: absent or `null` params read as `{}`; anything else that
    /// is not an object is refused (`-32602`, "params must be an object").
    pub fn parse(params: Option<Value>) -> Result<ToolCall, RpcError> {
        let mut params = match params {
            None | Some(Value::Null) => return Ok(ToolCall::default()),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(RpcError::new(INVALID_PARAMS, "params must be an object")),
        };
        Ok(ToolCall {
            name: match params.remove("name") {
                Some(Value::String(s)) => Some(s),
                _ => None,
            },
            arguments: params.remove("arguments").unwrap_or(Value::Null),
            meta: params.remove("_meta"),
            input_responses: params.remove("inputResponses"),
            request_state: params.remove("requestState"),
        })
    }

    /// Whether this is a 2026-07-28 retry (it carries `inputResponses` or `requestState`).
    pub fn is_retry(&self) -> bool {
        self.input_responses.is_some() || self.request_state.is_some()
    }

    /// The `requestState`, when it is a string.
    pub fn request_state_str(&self) -> Option<&str> {
        self.request_state.as_ref().and_then(Value::as_str)
    }

    /// A member of `_meta`.
    fn meta_member(&self, key: &str) -> Option<&Value> {
        self.meta.as_ref().and_then(|m| m.get(key))
    }

    /// `_meta.progressToken`: the client wants progress notifications.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta_member("progressToken")
    }

    /// What a 2026-07-28 client declares it can be asked (its `_meta` `clientCapabilities`).
    pub fn client_capabilities(&self) -> Askable {
        Askable::from_capabilities(self.meta_member(META_CLIENT_CAPABILITIES))
    }

    /// A 2026-07-28 client's `_meta` `logLevel`, when a string of at most
    /// [`MAX_LOG_LEVEL_LEN`] bytes.
    pub fn log_level(&self) -> Option<&str> {
        self.meta_member(META_LOG_LEVEL)
            .and_then(Value::as_str)
            .filter(|l| l.len() <= MAX_LOG_LEVEL_LEN)
    }
}

/// The error of a `tools/call` without a string `params.name`.
pub fn missing_name() -> RpcError {
    RpcError::new(INVALID_PARAMS, "tools/call needs params.name")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_are_read_once_into_their_members() {
        let tc = ToolCall::parse(Some(json!({
            "name": "mcp_call", "arguments": {"a": 1}, "_meta": {"progressToken": 3},
            "inputResponses": {"q1": {}}, "requestState": "s", "other": true
        })))
        .unwrap();
        assert_eq!(tc.name.as_deref(), Some("mcp_call"));
        assert_eq!(tc.arguments, json!({"a": 1}));
        assert_eq!(tc.meta, Some(json!({"progressToken": 3})));
        assert_eq!(tc.input_responses, Some(json!({"q1": {}})));
        assert_eq!(tc.request_state_str(), Some("s"));
        assert!(tc.is_retry());
    }

    #[test]
    fn absent_params_read_as_empty_and_others_are_refused() {
        for p in [None, Some(Value::Null), Some(json!({}))] {
            let tc = ToolCall::parse(p).unwrap();
            assert_eq!(tc, ToolCall::default());
            assert_eq!(tc.arguments, Value::Null);
            assert!(!tc.is_retry());
        }
        for p in [json!([]), json!("x"), json!(1)] {
            let e = ToolCall::parse(Some(p)).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                (INVALID_PARAMS, "params must be an object")
            );
        }
        // a name that is not a string is no name; a non-string state still marks a retry
        let tc = ToolCall::parse(Some(json!({"name": 5, "requestState": 7}))).unwrap();
        assert_eq!(tc.name, None);
        assert!(tc.is_retry());
        assert_eq!(tc.request_state_str(), None);
        let tc = ToolCall::parse(Some(json!({"inputResponses": null}))).unwrap();
        assert!(tc.is_retry(), "a null member is present");
    }

    #[test]
    fn meta_is_read_for_progress_capabilities_and_log_level() {
        let tc = ToolCall::parse(Some(json!({"name": "t", "_meta": {
            "progressToken": "p", META_CLIENT_CAPABILITIES: {"sampling": {}}, META_LOG_LEVEL: "debug"
        }})))
        .unwrap();
        assert_eq!(tc.progress_token(), Some(&json!("p")));
        assert_eq!(
            tc.client_capabilities(),
            Askable::from_capabilities(Some(&json!({"sampling": {}})))
        );
        assert!(!tc.client_capabilities().is_empty());
        assert_eq!(tc.log_level(), Some("debug"));
        // no _meta: nothing asked for, nothing declared
        let bare = ToolCall::parse(Some(json!({"name": "t"}))).unwrap();
        assert_eq!((bare.progress_token(), bare.log_level()), (None, None));
        assert!(bare.client_capabilities().is_empty());
        // a log level longer than the limit, or not a string, is ignored
        let long = "x".repeat(MAX_LOG_LEVEL_LEN + 1);
        for level in [json!(long), json!(3)] {
            let tc = ToolCall::parse(Some(json!({"_meta": {META_LOG_LEVEL: level}}))).unwrap();
            assert_eq!(tc.log_level(), None);
        }
        let exact = "x".repeat(MAX_LOG_LEVEL_LEN);
        let tc = ToolCall::parse(Some(json!({"_meta": {META_LOG_LEVEL: exact}}))).unwrap();
        assert_eq!(tc.log_level(), Some(exact.as_str()));
    }
}
