//! The one error type of the HTTP layer: every refusal of a request, whatever the check that
//! made it, is an [`HttpError`] — an HTTP status, a JSON-RPC error (code, message, data), the
//! request id when it could be read, and the headers the status calls for
//! (`WWW-Authenticate`, `Allow`, `Connection: close`). It implements actix-web's
//! `ResponseError`, so handlers refuse with `?` and the body is always a JSON-RPC error
//! response whose `id` member is omitted (never `null`) when unknown.

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use mcp_wire::jsonrpc::{self, RequestId, RpcError};

/// A request refused with an HTTP status and a JSON-RPC error body (boxed: refusals are rare,
/// and `Result`s that carry one stay small on the hot path).
#[derive(Debug)]
pub struct HttpError(Box<Refusal>);

#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    id: Option<RequestId>,
    error: RpcError,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl HttpError {
    /// `status` with a JSON-RPC error of `code` and `message`.
    pub fn new(status: StatusCode, code: i64, message: impl Into<String>) -> HttpError {
        HttpError::rpc(status, RpcError::new(code, message))
    }

    /// `status` with the given JSON-RPC error.
    pub fn rpc(status: StatusCode, error: RpcError) -> HttpError {
        HttpError(Box::new(Refusal {
            status,
            id: None,
            error,
            headers: Vec::new(),
        }))
    }

    /// 400 with `-32600 Invalid Request`: the most common refusal.
    pub fn invalid_request(status: StatusCode, message: impl Into<String>) -> HttpError {
        HttpError::new(status, jsonrpc::INVALID_REQUEST, message)
    }

    /// Echo the request's id (when it could be read).
    pub fn with_id(mut self, id: Option<RequestId>) -> HttpError {
        self.0.id = id;
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: HeaderName, value: &'static str) -> HttpError {
        self.0.headers.push((name, HeaderValue::from_static(value)));
        self
    }

    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// The JSON-RPC error the body carries.
    pub fn rpc_error(&self) -> &RpcError {
        &self.0.error
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.0;
        write!(f, "HTTP {}: {} ({})", r.status.as_u16(), r.error.message, r.error.code)
    }
}

impl ResponseError for HttpError {
    fn status_code(&self) -> StatusCode {
        self.0.status
    }

    fn error_response(&self) -> HttpResponse {
        let r = &self.0;
        let mut resp = HttpResponse::build(r.status);
        resp.content_type("application/json");
        for (name, value) in &r.headers {
            resp.insert_header((name.clone(), value.clone()));
        }
        resp.body(jsonrpc::error_response(r.id.as_ref(), &r.error).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;
    use actix_web::http::header;

    #[test]
    fn renders_a_json_rpc_error_with_its_status_and_headers() {
        let e = HttpError::invalid_request(StatusCode::UNAUTHORIZED, "Unauthorized: no token")
            .with_header(header::WWW_AUTHENTICATE, "Bearer");
        let resp = e.error_response();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(resp.headers().get(header::WWW_AUTHENTICATE).unwrap(), "Bearer");
        let body = resp.into_body().try_into_bytes().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Unauthorized: no token"}})
        );
        let with_id = HttpError::invalid_request(StatusCode::BAD_REQUEST, "x").with_id(Some(RequestId::Num(7)));
        let body = with_id.error_response().into_body().try_into_bytes().unwrap();
        assert!(String::from_utf8_lossy(&body).contains("\"id\":7"));
    }
}
