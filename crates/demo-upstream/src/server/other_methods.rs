//! The methods on `/mcp` other than `POST`: `DELETE` ends a session, `GET` opens the
//! list-changed stream (list-changed mode only), anything else gets 405.

use std::convert::Infallible;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;

use super::messages::refuse;
use super::state::Shared;
use super::wire::SERVER_ERROR;

/// `DELETE /mcp`: ends the named session (stateful mode) so that its id gets 404 afterwards.
pub(super) async fn delete_mcp(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    if let Err(refusal) = shared.admit(&req) {
        return refusal.into_response();
    }
    if !shared.config.stateful {
        return method_not_allowed(&shared);
    }
    match shared.session_of(&req) {
        Ok(Some(session)) => {
            let mut state = shared.lock();
            state.sessions.remove(&session);
            state.stats.sessions_deleted += 1;
            HttpResponse::Ok().finish()
        }
        Ok(None) => method_not_allowed(&shared),
        Err(refusal) => refusal.into_response(),
    }
}

/// Any other method on `/mcp`, GET included: this server offers no standalone SSE stream.
pub(super) async fn other_method(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    if let Err(refusal) = shared.admit(&req) {
        return refusal.into_response();
    }
    if req.method() != actix_web::http::Method::GET || !shared.config.list_changed {
        return method_not_allowed(&shared);
    }
    if let Err(refusal) = shared.session_of(&req) {
        return refusal.into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let ping = Bytes::from("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-ping-1\",\"method\":\"ping\"}\n\n");
    let _ = tx.send(ping);
    {
        let mut state = shared.lock();
        state.listeners.push(tx);
        state.stats.get_streams += 1;
    }
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(body)
}

/// 405 with the methods this server allows (`DELETE` only when it keeps sessions).
fn method_not_allowed(shared: &Shared) -> HttpResponse {
    let allow = if shared.config.stateful { "POST, DELETE" } else { "POST" };
    let mut response = refuse(StatusCode::METHOD_NOT_ALLOWED, SERVER_ERROR, "Method Not Allowed").into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static(allow));
    response
}
