//! Pure reply classifiers: what an upstream's reply means for the session and the request.
//! No I/O and no state; each is unit-tested below.
//!
//! - [`classify_probe`]: which era the answer to `server/discover` says the upstream speaks.
//! - [`attempt`]: how one request's reply ends its attempt: a result or error
//!   ([`interpret`]), a lost legacy session ([`session_lost`]), or a modern upstream that no
//!   longer speaks the modern era ([`modern_refusal_means_other_era`]).
//! - `capped_message`: an upstream's error message as the proxy repeats it.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::WireError;
use crate::transport::{self, Body, RpcMessage};
use mcp_wire::jsonrpc::{self, RpcError};
use mcp_wire::{modern, Era};

/// How one attempt ended, before the retry decision.
#[derive(Debug)]
pub enum Attempt {
    /// The result (raw JSON, read by whoever needs it), or why there is none.
    Done(Result<Box<RawValue>, WireError>),
    /// Legacy: the request carried a session the upstream no longer knows. The error is the
    /// refusal as the upstream worded it, for when a retry in a fresh session is refused too.
    SessionLost(WireError),
    /// Modern: the upstream refused in a way that says it may no longer speak this era (the
    /// refusal as above: a reprobe that finds the same era shows it meant something else).
    EraChanged(WireError),
}

/// Reads the reply to a request sent in `era`; `carried_session`: whether it carried an
/// `Mcp-Session-Id` (only such a request can find its session lost).
pub fn attempt(era: Era, carried_session: bool, reply: transport::Reply) -> Attempt {
    let rpc_error = reply.rpc_error();
    let refusal = |reply, rpc_error| {
        interpret(reply, rpc_error)
            .err()
            .unwrap_or_else(|| WireError::InvalidReply("a refusal without an error".into()))
    };
    match era {
        Era::Legacy if carried_session && session_lost(reply.status, rpc_error.as_ref()) => {
            Attempt::SessionLost(refusal(reply, rpc_error))
        }
        Era::Modern if modern_refusal_means_other_era(reply.status, rpc_error.as_ref()) => {
            Attempt::EraChanged(refusal(reply, rpc_error))
        }
        _ => Attempt::Done(interpret(reply, rpc_error)),
    }
}

/// An upstream's error message, as repeated in the proxy's errors and logs.
const MAX_ERROR_MESSAGE_CHARS: usize = 1000;

/// An upstream's error message as the proxy repeats it (in errors, logs and to the model): at
/// most [`MAX_ERROR_MESSAGE_CHARS`] characters, then `…`.
fn capped_message(message: &str) -> String {
    match message.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        None => message.to_string(),
        Some((end, _)) => format!("{}…", &message[..end]),
    }
}

/// Reads the answer to the discovery probe (`result`: the response's result, if any).
/// Modern: a result listing 2026-07-28, or a 400 carrying one of the modern envelope errors.
/// Legacy: any other refusal. Errors: auth failures and server errors (the era cannot be
/// known yet).
pub fn classify_probe(status: u16, result: Option<&Value>, error: Option<&RpcError>) -> Result<Era, WireError> {
    if status == 401 || status == 403 || status >= 500 {
        let detail = error.map(|e| capped_message(&e.message)).unwrap_or_default();
        return Err(WireError::Http { status, detail });
    }
    if (200..300).contains(&status) {
        let modern_listed = result
            .and_then(|r| r.get("supportedVersions"))
            .and_then(Value::as_array)
            .is_some_and(|vs| vs.iter().filter_map(Value::as_str).any(modern::is_modern));
        return Ok(if modern_listed { Era::Modern } else { Era::Legacy });
    }
    // -32022 listing a modern version we speak: the upstream is modern (retry at that version).
    let offers_modern = error.is_some_and(|e| {
        e.code == modern::UNSUPPORTED_VERSION
            && e.data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|vs| vs.iter().filter_map(Value::as_str).any(modern::is_modern))
    });
    if offers_modern {
        return Ok(Era::Modern);
    }
    let modern_envelope_error = error.is_some_and(|e| {
        matches!(e.code, modern::HEADER_MISMATCH | modern::MISSING_CLIENT_CAPABILITY)
            || (e.code == jsonrpc::INVALID_PARAMS && status == 400)
    });
    Ok(if status == 400 && modern_envelope_error {
        Era::Modern
    } else {
        Era::Legacy
    })
}

/// Whether a modern request's refusal says the upstream does not (or no longer) speak the
/// modern era: a 400 that is not a modern envelope error, a 404/405 without a JSON-RPC
/// "method not found", or -32022 (our version is not supported).
pub fn modern_refusal_means_other_era(status: u16, error: Option<&RpcError>) -> bool {
    match (status, error) {
        (_, Some(e)) if e.code == modern::UNSUPPORTED_VERSION => true,
        (400, Some(e)) => !matches!(
            e.code,
            modern::HEADER_MISMATCH | modern::MISSING_CLIENT_CAPABILITY | jsonrpc::INVALID_PARAMS
        ),
        (400, None) => true,
        (404, Some(e)) => e.code != jsonrpc::METHOD_NOT_FOUND,
        (404, None) | (405, _) => true,
        _ => false,
    }
}

/// Whether a reply to a request that carried a session id means the session is gone.
pub fn session_lost(status: u16, error: Option<&RpcError>) -> bool {
    if status == 404 || status == 400 {
        return true;
    }
    error.is_some_and(|e| {
        let m = e.message.to_ascii_lowercase();
        m.contains("session")
            && (m.contains("not found") || m.contains("expired") || m.contains("invalid") || m.contains("unknown"))
    })
}

/// Turns a reply into the request's result (raw JSON) or a precise error.
pub fn interpret(reply: transport::Reply, rpc_error: Option<RpcError>) -> Result<Box<RawValue>, WireError> {
    // The tool needs to ask the client something it did not declare (2026-07-28's -32021,
    // with any status): the upstream's error object as sent, never an HTTP status (what it
    // means for the call is the actors' to say).
    if let Some(e) = rpc_error
        .as_ref()
        .filter(|e| e.code == modern::MISSING_CLIENT_CAPABILITY)
    {
        return Err(WireError::Rpc(e.clone()));
    }
    if !(200..300).contains(&reply.status) {
        let detail = match (&rpc_error, &reply.message) {
            (Some(e), _) => capped_message(&e.message),
            (None, Some(Body::Text(s))) => s.clone(),
            _ => String::new(),
        };
        return Err(WireError::Http {
            status: reply.status,
            detail,
        });
    }
    if let Some(mut e) = rpc_error {
        e.message = capped_message(&e.message);
        return Err(WireError::Rpc(e));
    }
    match reply.message {
        Some(Body::Rpc(RpcMessage {
            result: Some(result), ..
        })) => Ok(result),
        Some(Body::Rpc(_)) => Err(WireError::InvalidReply("response has neither result nor error".into())),
        _ => Err(WireError::InvalidReply("response is not a JSON-RPC object".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A reply whose body was `message` (a JSON-RPC object, or an error page's text).
    fn reply(status: u16, message: Option<Value>) -> transport::Reply {
        let message = message.map(|m| match m {
            Value::String(text) => Body::Text(text),
            other => RpcMessage::parse(other.to_string().as_bytes())
                .map(Body::Rpc)
                .unwrap_or(Body::Text(other.to_string())),
        });
        transport::Reply {
            status,
            session_id: None,
            message,
            bytes: 0,
        }
    }

    /// An attempt's result as text, or its error.
    fn done(a: Attempt) -> Result<String, WireError> {
        match a {
            Attempt::Done(r) => r.map(|v| v.get().to_string()),
            other => panic!("not done: {other:?}"),
        }
    }

    #[test]
    fn the_probe_answer_tells_the_era() {
        let probe = |status, message: Value| {
            let error = reply(status, Some(message.clone())).rpc_error();
            classify_probe(status, message.get("result"), error.as_ref())
        };
        let failed = |code: i64| json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "no"}});
        let listing = |versions: Value| json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": versions}});
        assert_eq!(probe(200, listing(json!(["2026-07-28"]))), Ok(Era::Modern));
        assert_eq!(probe(200, listing(json!(["2025-06-18"]))), Ok(Era::Legacy));
        assert_eq!(
            probe(200, failed(jsonrpc::METHOD_NOT_FOUND)),
            Ok(Era::Legacy),
            "a legacy server does not know the method"
        );
        for code in [
            modern::HEADER_MISMATCH,
            modern::MISSING_CLIENT_CAPABILITY,
            jsonrpc::INVALID_PARAMS,
        ] {
            assert_eq!(probe(400, failed(code)), Ok(Era::Modern), "{code}");
        }
        assert_eq!(probe(400, failed(jsonrpc::INVALID_REQUEST)), Ok(Era::Legacy));
        assert_eq!(probe(404, failed(jsonrpc::INVALID_PARAMS)), Ok(Era::Legacy));
        assert_eq!(probe(405, json!("Method Not Allowed")), Ok(Era::Legacy));
        let offers = |versions: Value| {
            let mut m = failed(modern::UNSUPPORTED_VERSION);
            m["error"]["data"] = json!({ "supported": versions });
            m
        };
        assert_eq!(probe(400, offers(json!(["2026-07-28"]))), Ok(Era::Modern));
        assert_eq!(probe(400, offers(json!(["2025-06-18"]))), Ok(Era::Legacy));
        for status in [401, 403, 500, 503] {
            assert!(
                matches!(probe(status, failed(jsonrpc::SERVER_ERROR)), Err(WireError::Http { status: s, .. }) if s == status),
                "{status}: the era cannot be known yet"
            );
        }
    }

    #[test]
    fn a_modern_refusal_in_the_legacy_manner_means_the_era_changed() {
        let e = |code| Some(RpcError::new(code, "no"));
        let other_era = |status, error: Option<RpcError>| modern_refusal_means_other_era(status, error.as_ref());
        assert!(other_era(200, e(modern::UNSUPPORTED_VERSION)));
        assert!(other_era(400, e(modern::UNSUPPORTED_VERSION)));
        assert!(other_era(400, e(jsonrpc::INVALID_REQUEST)));
        assert!(other_era(400, None));
        assert!(!other_era(400, e(modern::HEADER_MISMATCH)));
        assert!(!other_era(400, e(modern::MISSING_CLIENT_CAPABILITY)));
        assert!(!other_era(400, e(jsonrpc::INVALID_PARAMS)));
        assert!(other_era(404, None));
        assert!(other_era(404, e(jsonrpc::SERVER_ERROR)));
        assert!(
            !other_era(404, e(jsonrpc::METHOD_NOT_FOUND)),
            "a modern 'no such method'"
        );
        assert!(other_era(405, None));
        assert!(!other_era(200, e(jsonrpc::METHOD_NOT_FOUND)));
        assert!(!other_era(500, None));
    }

    #[test]
    fn an_attempt_ends_by_era_and_session() {
        let not_found = || reply(404, Some(json!("Not Found")));
        assert!(matches!(
            attempt(Era::Legacy, true, not_found()),
            Attempt::SessionLost(WireError::Http { status: 404, .. })
        ));
        assert_eq!(
            done(attempt(Era::Legacy, false, not_found())),
            Err(WireError::Http {
                status: 404,
                detail: "Not Found".into()
            }),
            "a stateless upstream has no session to lose"
        );
        assert!(matches!(
            attempt(Era::Modern, false, not_found()),
            Attempt::EraChanged(WireError::Http { status: 404, .. })
        ));
        // the refusal keeps the upstream's own words, for when a retry is refused too
        let no_back_channel = reply(
            400,
            Some(
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": jsonrpc::INVALID_REQUEST,
                "message": "Cannot send 'elicitation/create': this transport context has no back-channel"}}),
            ),
        );
        match attempt(Era::Modern, false, no_back_channel) {
            Attempt::EraChanged(e) => assert!(e.to_string().contains("no back-channel"), "{e}"),
            other => panic!("{other:?}"),
        }
        let ok = || reply(200, Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})));
        for (era, session) in [(Era::Legacy, true), (Era::Legacy, false), (Era::Modern, false)] {
            assert_eq!(done(attempt(era, session, ok())), Ok(r#"{"tools":[]}"#.to_string()));
        }
        let expired = reply(
            200,
            Some(
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": jsonrpc::SERVER_ERROR, "message": "Session expired"}}),
            ),
        );
        assert!(matches!(
            attempt(Era::Legacy, true, expired),
            Attempt::SessionLost(WireError::Rpc(_))
        ));
    }

    #[test]
    fn session_loss_is_recognised_by_status_and_message() {
        assert!(session_lost(404, None));
        assert!(session_lost(400, None));
        assert!(!session_lost(500, None));
        assert!(session_lost(
            200,
            Some(&RpcError::new(jsonrpc::SERVER_ERROR, "Session not found"))
        ));
        assert!(!session_lost(
            200,
            Some(&RpcError::new(jsonrpc::INVALID_PARAMS, "Unknown tool"))
        ));
    }

    #[test]
    fn interpret_separates_http_rpc_and_invalid_replies() {
        let r = reply;
        let ok = interpret(r(200, Some(json!({"jsonrpc":"2.0","id":1,"result":{"x":1}}))), None);
        assert_eq!(ok.unwrap().get(), r#"{"x":1}"#);
        let http = interpret(r(503, Some(Value::String("busy".into()))), None).unwrap_err();
        assert_eq!(
            http,
            WireError::Http {
                status: 503,
                detail: "busy".into()
            }
        );
        let e = RpcError::new(jsonrpc::INVALID_PARAMS, "bad");
        let rpc = interpret(r(200, None), Some(e.clone())).unwrap_err();
        assert_eq!(rpc, WireError::Rpc(e));
        assert!(matches!(
            interpret(r(200, Some(json!({"jsonrpc": "2.0", "id": 1}))), None),
            Err(WireError::InvalidReply(m)) if m.contains("neither result nor error")
        ));
        let long = RpcError::new(jsonrpc::SERVER_ERROR, "ü".repeat(5000));
        let Err(WireError::Rpc(cut)) = interpret(r(200, None), Some(long)) else {
            panic!("an RPC error")
        };
        assert_eq!(cut.message.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
        assert!(cut.message.ends_with('…'));
        assert!(matches!(
            interpret(r(200, Some(json!([]))), None),
            Err(WireError::InvalidReply(_))
        ));
        // a capability the client did not declare: the error as sent, whatever the status
        let mut missing = RpcError::new(modern::MISSING_CLIENT_CAPABILITY, "no elicitation");
        missing.data = Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}));
        for status in [200, 400] {
            assert_eq!(
                interpret(r(status, None), Some(missing.clone())).unwrap_err(),
                WireError::Rpc(missing.clone())
            );
        }
    }
}
