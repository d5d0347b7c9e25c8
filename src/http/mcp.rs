//! `POST /mcp`: the Streamable HTTP endpoint (2025 era: 2024-11-05 … 2025-11-25).
//!
//! Order of checks, each with its own precise answer:
//! 1. `Origin` (403 for a foreign origin: DNS-rebinding protection),
//! 2. body size (413, checked on `Content-Length` and while streaming),
//! 3. `Accept` (406) and `Content-Type` (415),
//! 4. JSON-RPC shape (400 with -32700/-32600; the id is echoed when it could be read, the
//!    `id` member is omitted otherwise, never `null`),
//! 5. `MCP-Protocol-Version` (400 when unsupported; absent means 2025-03-26),
//! 6. the method.
//!
//! The proxy's own tools are stateless, so it mints no `Mcp-Session-Id` (the spec allows
//! this); `GET` (no server-initiated stream) and `DELETE` answer 405.

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde_json::{json, Value};

use proxy_actors::mcp::jsonrpc::{self, Incoming, Request, RequestId, RpcError};
use proxy_actors::mcp::{sse, version};

use super::{tools, AppState, HttpSettings};

/// How the client wants its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    Json,
    Sse,
}

pub async fn post(req: HttpRequest, payload: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = check_origin(&req, &state.settings) {
        return *resp;
    }
    let body = match read_body(&req, payload, state.settings.max_body_bytes).await {
        Ok(b) => b,
        Err(resp) => return *resp,
    };
    let mode = match reply_mode(&req) {
        Ok(m) => m,
        Err(resp) => return *resp,
    };
    if let Some(ct) = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
        if !ct.trim().to_ascii_lowercase().starts_with("application/json") {
            return http_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("Content-Type must be application/json, not {ct:?}"),
                ),
            );
        }
    }
    let msg = match Incoming::parse(&body) {
        Ok(m) => m,
        Err(bad) => return http_error(StatusCode::BAD_REQUEST, bad.id, bad.error),
    };
    let request = match msg {
        Incoming::Request(r) => r,
        // Notifications (initialized, cancelled, …) and responses need no answer.
        Incoming::Notification { .. } | Incoming::Response { .. } => return HttpResponse::Accepted().finish(),
    };
    if request.method != "initialize" {
        if let Err(e) = check_protocol_header(&req) {
            return http_error(StatusCode::BAD_REQUEST, Some(request.id), e);
        }
    }
    let started = std::time::Instant::now();
    let outcome = dispatch(&state, &request).await;
    log_request(&request, &outcome, started.elapsed());
    let body = match outcome {
        Ok(result) => jsonrpc::result_response(&request.id, result),
        Err(e) => jsonrpc::error_response(Some(&request.id), &e),
    };
    reply(mode, &body)
}

/// One line per request: method, the proxy tool for `tools/call`, outcome and latency.
/// Arguments are never logged.
fn log_request(req: &Request, outcome: &Result<Value, RpcError>, elapsed: std::time::Duration) {
    let tool = if req.method == "tools/call" {
        req.params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
    } else {
        ""
    };
    let outcome_kind = match outcome {
        Ok(r) if r.get("isError") == Some(&Value::Bool(true)) => "tool_error",
        Ok(_) => "ok",
        Err(_) => "rpc_error",
    };
    let latency_us = elapsed.as_micros() as u64;
    if req.method == "tools/call" {
        log::info!(method = req.method.as_str(), tool = tool, outcome = outcome_kind, latency_us = latency_us; "mcp request");
    } else {
        log::debug!(method = req.method.as_str(), outcome = outcome_kind, latency_us = latency_us; "mcp request");
    }
}

/// `GET`, `DELETE` and anything else on `/mcp`.
pub async fn other_method(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Err(resp) = check_origin(&req, &state.settings) {
        return *resp;
    }
    let mut resp = http_error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "Method Not Allowed: {} /mcp; this server has no standalone stream and no sessions, use POST",
                req.method()
            ),
        ),
    );
    resp.headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
    resp
}

async fn dispatch(state: &AppState, req: &Request) -> Result<Value, RpcError> {
    match req.method.as_str() {
        "initialize" => {
            let params = req.params_object()?;
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            let snap = state
                .catalog
                .send(proxy_actors::catalog::GetSnapshot)
                .await
                .unwrap_or_default();
            Ok(json!({
                "protocolVersion": version::negotiate_legacy(requested),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": server_info(),
                "instructions": instructions(&snap, state.settings.listing_max_chars),
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => {
            let snap = state
                .catalog
                .send(proxy_actors::catalog::GetSnapshot)
                .await
                .unwrap_or_default();
            Ok(tools::list(state, &snap))
        }
        "tools/call" => {
            let params = req.params_object()?;
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::new(jsonrpc::INVALID_PARAMS, "tools/call needs params.name"))?;
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            let meta = params.get("_meta").cloned();
            match tools::call(state, name, args, meta).await {
                Some(result) => Ok(result),
                None => Err(RpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    format!(
                        "Unknown tool: {name}. This server exposes mcp_search, mcp_describe, mcp_call and mcp_refresh; call upstream tools through mcp_call."
                    ),
                )),
            }
        }
        other => Err(RpcError::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        )),
    }
}

pub fn server_info() -> Value {
    json!({"name": "mcp-search-proxy", "version": env!("CARGO_PKG_VERSION")})
}

/// The `instructions` text: the workflow, then the tier-1 listing of sources.
pub fn instructions(snap: &proxy_actors::catalog::Snapshot, listing_max_chars: usize) -> String {
    let mut s = String::from(
        "This server gives access to the tools of other MCP servers through four tools. \
         Workflow: mcp_search (find tools by what you want to do) -> mcp_describe (full schema) -> mcp_call (run it). \
         Call mcp_call directly when you already know the exact tool name and arguments.\n",
    );
    if snap.tools.is_empty() {
        s.push_str("No tools are available yet (no upstream has answered); try mcp_refresh.\n");
    } else {
        s.push_str(&format!("Tool sources ({} tools):\n", snap.tools.len()));
        s.push_str(&snap.listing(listing_max_chars));
    }
    s
}

/// 403 for a present `Origin` that is neither loopback nor configured.
fn check_origin(req: &HttpRequest, settings: &HttpSettings) -> Result<(), Box<HttpResponse>> {
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
    Err(Box::new(http_error(
        StatusCode::FORBIDDEN,
        None,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "Forbidden: Origin {origin:?} is not allowed; add it to ALLOWED_ORIGINS if this client is legitimate"
            ),
        ),
    )))
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

async fn read_body(req: &HttpRequest, mut payload: web::Payload, limit: usize) -> Result<Bytes, Box<HttpResponse>> {
    let too_large = || {
        Box::new(http_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            RpcError::new(
                jsonrpc::INVALID_REQUEST,
                format!("Request body exceeds the {limit}-byte limit (MAX_BODY_BYTES); send smaller arguments"),
            ),
        ))
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
            Box::new(http_error(
                StatusCode::BAD_REQUEST,
                None,
                RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("could not read the request body: {e}"),
                ),
            ))
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// JSON when the client accepts it (or says nothing), SSE when it accepts only SSE.
fn reply_mode(req: &HttpRequest) -> Result<ReplyMode, Box<HttpResponse>> {
    let accept = req
        .headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    if accept.trim().is_empty() {
        return Ok(ReplyMode::Json);
    }
    let types: Vec<&str> = accept
        .split(',')
        .map(|t| t.split(';').next().unwrap_or("").trim())
        .collect();
    if types
        .iter()
        .any(|t| matches!(*t, "application/json" | "application/*" | "*/*"))
    {
        return Ok(ReplyMode::Json);
    }
    if types.contains(&"text/event-stream") {
        return Ok(ReplyMode::Sse);
    }
    Err(Box::new(http_error(
        StatusCode::NOT_ACCEPTABLE,
        None,
        RpcError::new(
            jsonrpc::INVALID_REQUEST,
            "Not Acceptable: Accept must include application/json and text/event-stream",
        ),
    )))
}

fn check_protocol_header(req: &HttpRequest) -> Result<(), RpcError> {
    let Some(v) = req.headers().get("mcp-protocol-version") else {
        return Ok(()); // assumed 2025-03-26
    };
    let v = v.to_str().unwrap_or("").trim();
    if version::is_supported_legacy(v) {
        return Ok(());
    }
    Err(RpcError::new(
        jsonrpc::INVALID_REQUEST,
        format!("Bad Request: unsupported MCP-Protocol-Version {v:?}"),
    )
    .with_data(json!({"supported": version::LEGACY_VERSIONS, "requested": v})))
}

fn reply(mode: ReplyMode, body: &Value) -> HttpResponse {
    match mode {
        ReplyMode::Json => HttpResponse::Ok()
            .content_type("application/json")
            .body(body.to_string()),
        ReplyMode::Sse => HttpResponse::Ok()
            .content_type("text/event-stream")
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .insert_header(("X-Accel-Buffering", "no"))
            .body(sse::encode_event(&body.to_string(), None)),
    }
}

/// An HTTP error status with a JSON-RPC error body.
pub fn http_error(status: StatusCode, id: Option<RequestId>, error: RpcError) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("application/json")
        .body(jsonrpc::error_response(id.as_ref(), &error).to_string())
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
}
