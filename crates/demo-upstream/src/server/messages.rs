//! JSON-RPC messages as the server reads them, and the refusals answered before dispatch (an
//! HTTP error status with a JSON-RPC error body).

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde_json::{json, Value};

use super::wire::{INVALID_REQUEST, SESSION_NOT_FOUND};

/// One parsed JSON-RPC message.
pub(super) enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
    },
    /// A client's answer to a server request; this server never sends any, so it is ignored.
    Response,
}

/// A JSON-RPC error object.
pub(super) struct RpcError {
    pub(super) code: i64,
    pub(super) message: String,
}

impl RpcError {
    pub(super) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }
}

/// Sorts a JSON value into request / notification / response, or answers 400.
pub(super) fn parse_message(value: Value) -> Result<Message, Refusal> {
    let Value::Object(mut object) = value else {
        let message = if value.is_array() {
            "Invalid Request: batch requests are not supported"
        } else {
            "Invalid Request: expected a JSON-RPC object"
        };
        return Err(refuse(StatusCode::BAD_REQUEST, INVALID_REQUEST, message));
    };
    // MCP forbids null ids; a request with one must not pass for a notification (202).
    let id = match object.remove("id") {
        None => None,
        Some(id) if id.is_string() || id.is_i64() || id.is_u64() => Some(id),
        Some(_) => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or an integer",
            ))
        }
    };
    let invalid = |id: Option<Value>, why: &str| Refusal {
        id: id.map(Box::new),
        ..refuse(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        )
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request {
            id,
            method,
            params: object.remove("params").unwrap_or(Value::Null),
        }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method }),
        (Some(_), id) => Err(invalid(id, "method must be a string")),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => Ok(Message::Response),
        (None, id) => Err(invalid(id, "no method")),
    }
}

pub(super) fn session_not_found() -> Refusal {
    refuse(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found")
}

/// A refusal whose body will carry no `id` (the request's id is unknown).
pub(super) fn refuse(status: StatusCode, code: i64, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        error: RpcError::new(code, message),
        id: None,
    }
}

/// A message refused before dispatch: an HTTP error status with a JSON-RPC error body.
pub(super) struct Refusal {
    status: StatusCode,
    error: RpcError,
    /// The request's id when it could be read (boxed: refusals travel in `Result::Err`).
    id: Option<Box<Value>>,
}

impl Refusal {
    pub(super) fn into_response(self) -> HttpResponse {
        let mut body = json!({
            "jsonrpc": "2.0",
            "error": {"code": self.error.code, "message": self.error.message},
        });
        if let Some(id) = self.id {
            body["id"] = *id;
        }
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        response.json(body)
    }
}
