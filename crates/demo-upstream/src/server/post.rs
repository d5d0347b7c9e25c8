//! `POST /mcp`: the checks in the order the module docs of `server` give, then `initialize`,
//! `ping`, `tools/list` (paged) and `tools/call` (the tool run by `crate::tools`).

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::headers::{accepts_json_and_sse, header_snapshot, header_str, media_type_is};
use super::ids::{decode_cursor, encode_cursor, mint_session_id};
use super::messages::{parse_message, refuse, session_not_found, Message, Refusal, RpcError};
use super::reply::{respond, Reply};
use super::state::Shared;
use super::wire::{
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, SESSION_HEADER, SUPPORTED_PROTOCOL_VERSIONS,
    VERSION_HEADER,
};

pub(super) async fn post_mcp(req: HttpRequest, body: Bytes, shared: web::Data<Shared>) -> HttpResponse {
    match handle_post(&req, &body, &shared) {
        Ok(Handled::Reply(id, reply)) => respond(&shared, id, *reply).await,
        Ok(Handled::Accepted) => HttpResponse::Accepted().finish(),
        Err(refusal) => refusal.into_response(),
    }
}

/// How a POST that passed every check ends.
enum Handled {
    /// A request: its id and what to answer.
    Reply(Value, Box<Reply>),
    /// A notification or a client response: 202, no body.
    Accepted,
}

/// Everything up to the point where a request has a [`Reply`].
fn handle_post(req: &HttpRequest, body: &[u8], shared: &Shared) -> Result<Handled, Refusal> {
    shared.admit(req)?;
    let headers = req.headers();
    if !accepts_json_and_sse(header_str(headers, header::ACCEPT.as_str()).unwrap_or("")) {
        return Err(refuse(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    let content_type = header_str(headers, header::CONTENT_TYPE.as_str()).unwrap_or("");
    if !media_type_is(content_type, "application/json") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| refuse(StatusCode::BAD_REQUEST, PARSE_ERROR, format!("Parse error: {err}")))?;
    let message = parse_message(value)?;

    if let Message::Request { id, method, params } = &message {
        if method == "initialize" {
            return initialize(req, shared, params).map(|reply| Handled::Reply(id.clone(), Box::new(reply)));
        }
    }
    let session = shared.session_of(req)?;
    if let Some(version) = header_str(headers, VERSION_HEADER) {
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!(
                    "Bad Request: Unsupported protocol version: {version} (supported: {})",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            ));
        }
    }
    match message {
        Message::Request { id, method, params } => {
            let reply = dispatch(req, shared, session.as_deref(), &method, &params);
            Ok(Handled::Reply(id, Box::new(reply)))
        }
        Message::Notification { method } => {
            if method == "notifications/cancelled" {
                shared.lock().stats.cancelled_notifications += 1;
            }
            if method == "notifications/initialized" {
                shared.lock().stats.initialized_notifications += 1;
            }
            Ok(Handled::Accepted)
        }
        Message::Response => {
            shared.lock().stats.client_responses += 1;
            Ok(Handled::Accepted)
        }
    }
}

fn initialize(req: &HttpRequest, shared: &Shared, params: &Value) -> Result<Reply, Refusal> {
    let mut state = shared.lock();
    if shared.config.stateful {
        if let Some(session) = header_str(req.headers(), SESSION_HEADER) {
            // A client re-initialising must start without its old id (spec: "without a
            // session ID attached"); real SDK servers refuse it the same way.
            if state.sessions.contains_key(session) {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    INVALID_REQUEST,
                    "Bad Request: Server already initialized for this session",
                ));
            }
            state.stats.session_not_found += 1;
            return Err(session_not_found());
        }
    }
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        return Ok(Reply::now(Err(RpcError::new(
            INVALID_PARAMS,
            "Invalid params: protocolVersion is required",
        ))));
    };
    let negotiated = if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested) {
        requested
    } else {
        SUPPORTED_PROTOCOL_VERSIONS[0]
    };
    let new_session = shared.config.stateful.then(|| {
        let session = mint_session_id();
        state.sessions.insert(session.clone(), 0);
        state.stats.sessions_minted += 1;
        session
    });
    state.stats.initialize += 1;

    let mut result = json!({
        "protocolVersion": negotiated,
        "capabilities": {"tools": {"listChanged": shared.config.list_changed}},
        "serverInfo": {"name": shared.config.name, "version": env!("CARGO_PKG_VERSION")},
    });
    if let Some(instructions) = &shared.config.instructions {
        result["instructions"] = json!(instructions);
    }
    Ok(Reply {
        new_session,
        ..Reply::now(Ok(result))
    })
}

/// Runs a post-`initialize` request.
fn dispatch(req: &HttpRequest, shared: &Shared, session: Option<&str>, method: &str, params: &Value) -> Reply {
    match method {
        "ping" => {
            shared.lock().stats.ping += 1;
            Reply::now(Ok(json!({})))
        }
        "tools/list" => {
            let delay = shared.lock().list_delay;
            Reply {
                delay,
                gated: true,
                ..Reply::now(list_tools(shared, params))
            }
        }
        "tools/call" => call_tool(req, shared, session, params),
        _ => Reply::now(Err(RpcError::new(METHOD_NOT_FOUND, "Method not found"))),
    }
}

fn list_tools(shared: &Shared, params: &Value) -> Result<Value, RpcError> {
    let mut state = shared.lock();
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => decode_cursor(cursor)
            .filter(|offset| *offset <= state.tools.len())
            .ok_or_else(|| RpcError::new(INVALID_PARAMS, "Invalid params: invalid cursor"))?,
        Some(_) => return Err(RpcError::new(INVALID_PARAMS, "Invalid params: cursor must be a string")),
    };
    let end = match shared.config.page_size {
        Some(size) => offset.saturating_add(size).min(state.tools.len()),
        None => state.tools.len(),
    };
    let mut result = json!({"tools": &state.tools[offset..end]});
    if end < state.tools.len() {
        result["nextCursor"] = json!(encode_cursor(end));
    }
    state.stats.tools_list += 1;
    Ok(result)
}

fn call_tool(req: &HttpRequest, shared: &Shared, session: Option<&str>, params: &Value) -> Reply {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Reply::now(Err(RpcError::new(
            INVALID_PARAMS,
            "Invalid params: name must be a string",
        )));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            return Reply::now(Err(RpcError::new(
                INVALID_PARAMS,
                "Invalid params: arguments must be an object",
            )))
        }
    };

    let mut state = shared.lock();
    let state = &mut *state;
    state.stats.tools_call += 1;
    state.stats.last_call = Some((name.to_string(), Value::Object(arguments.clone())));
    state.stats.last_headers = header_snapshot(req.headers());
    let delay = state.call_delay;
    let Some(definition) = state.by_name.get(name).map(|&i| &state.tools[i]) else {
        return Reply::now(Err(RpcError::new(INVALID_PARAMS, format!("Unknown tool: {name}"))));
    };
    // An expired session cannot reach here (checked above), but stay total anyway.
    let counter = match session.and_then(|id| state.sessions.get_mut(id)) {
        Some(counter) => counter,
        None => &mut state.process_counter,
    };
    let result = crate::tools::call(definition, &arguments, counter);
    Reply {
        delay,
        progress_token: params.get("_meta").and_then(|m| m.get("progressToken")).cloned(),
        ..Reply::now(Ok(result))
    }
}
