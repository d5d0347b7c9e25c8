//! `/healthz` (the process is alive) and `/readyz` (the catalog holds tools, from the
//! manifest or a refresh). `/readyz` also says how searches are answered (`search`: lexical or
//! hybrid, and where the semantic arm stands); readiness never waits for the vectors.

use actix_web::{web, HttpResponse};
use serde_json::json;

use super::AppState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let s = state.snapshot();
    let search = state.app.semantic.borrow().report(s.generation, s.tools.len());
    if s.tools.is_empty() {
        return HttpResponse::ServiceUnavailable().json(json!({
            "status": "not ready",
            "reason": "the catalog is empty: no manifest and no upstream has answered yet",
            "search": search,
        }));
    }
    HttpResponse::Ok().json(json!({
        "status": "ready",
        "tools": s.tools.len(),
        "fingerprint": s.fingerprint,
        "search": search,
    }))
}
