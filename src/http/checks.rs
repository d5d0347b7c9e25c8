//! The checks a request passes before it is read as JSON-RPC, each with its own precise
//! refusal ([`HttpError`]):
//! 1. `Origin` (403 for a foreign origin: DNS-rebinding protection),
//! 2. the client's bearer token when `PROXY_TOKENS` is set (401 with `WWW-Authenticate`),
//! 3. body size (413, on `Content-Length` and while streaming) and the time the body takes to
//!    arrive (408 after `BODY_TIMEOUT_SEC`: a stalled body cannot hold a connection),
//! 4. `Accept` (406) and `Content-Type` (415).

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::auth::Refusal;
use super::error::HttpError;
use super::HttpSettings;

/// What the client's `Accept` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    pub json: bool,
    pub sse: bool,
}

/// 403 for a present `Origin` that is neither loopback nor configured.
pub fn origin(req: &HttpRequest, settings: &HttpSettings) -> Result<(), HttpError> {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .unwrap_or("")
        .trim()
        .trim_end_matches('/')
        .to_ascii_lowercase();
    if origin_allowed(&origin, &settings.allowed_origins) {
        return Ok(());
    }
    Err(HttpError::invalid_request(
        StatusCode::FORBIDDEN,
        format!("Forbidden: Origin {origin:?} is not allowed; add it to ALLOWED_ORIGINS if this client is legitimate"),
    ))
}

/// Loopback origins (any scheme and port) are always allowed; others only when configured.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin || a == "*") {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if scheme != "http" && scheme != "https" {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().map(|h| format!("[{h}]")).unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or("").to_string()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// The client's group when `PROXY_TOKENS` is set (`None` when authentication is off); 401
/// with `WWW-Authenticate: Bearer` otherwise.
pub fn authenticate(req: &HttpRequest, settings: &HttpSettings) -> Result<Option<String>, HttpError> {
    let value = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    match settings.auth.check(value) {
        Ok(group) => Ok(group.map(str::to_string)),
        Err(refusal) => {
            let (challenge, message, reason) = match refusal {
                Refusal::Missing => (
                    r#"Bearer realm="mcp-search-proxy""#,
                    "Unauthorized: this proxy needs a bearer token (Authorization: Bearer <token>); ask its operator for one",
                    "missing",
                ),
                Refusal::Invalid => (
                    r#"Bearer realm="mcp-search-proxy", error="invalid_token""#,
                    "Unauthorized: the bearer token is not valid for this proxy",
                    "invalid",
                ),
            };
            log::warn!(reason = reason; "client refused: authentication");
            Err(HttpError::invalid_request(StatusCode::UNAUTHORIZED, message)
                .with_header(header::WWW_AUTHENTICATE, challenge))
        }
    }
}

/// Reads the body within the size cap and the body timeout.
pub async fn body(req: &HttpRequest, payload: web::Payload, settings: &HttpSettings) -> Result<Bytes, HttpError> {
    let timeout = settings.body_timeout;
    match tokio::time::timeout(timeout, body_within(req, payload, settings.max_body_bytes)).await {
        Ok(r) => r,
        Err(_) => {
            log::warn!(timeout_sec = timeout.as_secs(); "client refused: request body too slow");
            Err(HttpError::invalid_request(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request Timeout: the request body did not arrive within {} s (BODY_TIMEOUT_SEC)",
                    timeout.as_secs()
                ),
            )
            .with_header(header::CONNECTION, "close"))
        }
    }
}

async fn body_within(req: &HttpRequest, mut payload: web::Payload, limit: usize) -> Result<Bytes, HttpError> {
    let too_large = || {
        HttpError::invalid_request(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body exceeds the {limit}-byte limit (MAX_BODY_BYTES); send smaller arguments"),
        )
    };
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > limit {
            return Err(too_large());
        }
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            HttpError::invalid_request(StatusCode::BAD_REQUEST, format!("could not read the request body: {e}"))
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// What the client's `Accept` allows; neither JSON nor SSE is 406.
pub fn accepts(req: &HttpRequest) -> Result<Accepts, HttpError> {
    let (mut json, mut sse, mut listed) = (false, false, false);
    for value in req.headers().get_all(header::ACCEPT).filter_map(|v| v.to_str().ok()) {
        for media in value.split(',') {
            let media = media.split(';').next().unwrap_or("").trim();
            if media.is_empty() {
                continue;
            }
            listed = true;
            let is = |t: &str| media.eq_ignore_ascii_case(t);
            let any = is("*/*");
            json |= any || is("application/json") || is("application/*");
            sse |= any || is("text/event-stream") || is("text/*");
        }
    }
    if !listed {
        return Ok(Accepts { json: true, sse: false });
    }
    if json || sse {
        return Ok(Accepts { json, sse });
    }
    Err(HttpError::invalid_request(
        StatusCode::NOT_ACCEPTABLE,
        "Not Acceptable: Accept must include application/json and text/event-stream",
    ))
}

/// 415 for a `Content-Type` other than JSON (none at all is accepted).
pub fn content_type(req: &HttpRequest) -> Result<(), HttpError> {
    match req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
        Some(ct) if !starts_with_ignore_case(ct.trim(), "application/json") => Err(HttpError::invalid_request(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Content-Type must be application/json, not {ct:?}"),
        )),
        _ => Ok(()),
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_configured_origins_are_allowed() {
        let none: Vec<String> = vec![];
        assert!(origin_allowed("http://localhost:3000", &none));
        assert!(origin_allowed("http://127.0.0.1", &none));
        assert!(origin_allowed("https://[::1]:8443", &none));
        assert!(!origin_allowed("http://evil.example.com", &none));
        assert!(!origin_allowed("http://localhost.evil.com", &none));
        assert!(!origin_allowed("null", &none));
        assert!(origin_allowed(
            "https://chat.example.com",
            &["https://chat.example.com".to_string()]
        ));
    }

    #[test]
    fn accept_and_content_type_are_read_without_case() {
        use actix_web::test::TestRequest;
        let accepts_of = |values: &[&str]| {
            let mut r = TestRequest::post();
            for v in values {
                r = r.append_header((header::ACCEPT, *v));
            }
            accepts(&r.to_http_request()).ok().map(|a| (a.json, a.sse))
        };
        assert_eq!(accepts_of(&[]), Some((true, false)), "no Accept: JSON");
        assert_eq!(accepts_of(&["  "]), Some((true, false)));
        assert_eq!(accepts_of(&["Application/JSON, Text/Event-Stream"]), Some((true, true)));
        assert_eq!(accepts_of(&["text/event-stream;q=0.9"]), Some((false, true)));
        assert_eq!(
            accepts_of(&["application/json", "text/event-stream"]),
            Some((true, true))
        );
        assert_eq!(accepts_of(&["*/*"]), Some((true, true)));
        assert_eq!(accepts_of(&["application/*"]), Some((true, false)));
        assert_eq!(accepts_of(&["text/html"]), None, "406");
        let ct = |v: &str| {
            content_type(
                &TestRequest::post()
                    .insert_header((header::CONTENT_TYPE, v))
                    .to_http_request(),
            )
            .is_ok()
        };
        assert!(ct("application/json"));
        assert!(ct(" Application/JSON; charset=utf-8"));
        assert!(!ct("text/plain"));
        assert!(!ct("app"));
    }
}
