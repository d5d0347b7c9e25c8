//! `/healthz` (the process is alive) and `/readyz` (the catalog holds tools, from the
//! manifest or a refresh).

use actix_web::{web, HttpResponse};
use serde_json::json;

use proxy_actors::catalog::GetSnapshot;

use super::AppState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    match state.catalog.send(GetSnapshot).await {
        Ok(s) if !s.tools.is_empty() => HttpResponse::Ok().json(json!({
            "status": "ready",
            "tools": s.tools.len(),
            "fingerprint": s.fingerprint,
        })),
        Ok(_) => HttpResponse::ServiceUnavailable().json(json!({
            "status": "not ready",
            "reason": "the catalog is empty: no manifest and no upstream has answered yet",
        })),
        Err(_) => HttpResponse::ServiceUnavailable()
            .json(json!({"status": "not ready", "reason": "catalog actor unavailable"})),
    }
}
