//! `GET /metrics`: every metric of the process in the OpenMetrics text format (see
//! `proxy_metrics` for what is measured and why `prometheus-client`).
//!
//! The catalog's names, sources and failure counts say a lot about the deployment, so with
//! `PROXY_TOKENS` set a scrape needs a client token like `/mcp` does, unless `METRICS_PUBLIC`
//! is true (a scraper on a trusted network). A browser `Origin` is checked as on `/mcp`
//! (DNS rebinding); Prometheus sends none.

use actix_web::{web, HttpRequest, HttpResponse};

use proxy_metrics::CONTENT_TYPE;

use super::error::HttpError;
use super::{checks, AppState};

pub async fn scrape(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, HttpError> {
    checks::origin(&req, &state.settings)?;
    if !state.settings.metrics_public {
        checks::authenticate(&req, &state.settings)?;
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let body = state.app.metrics.encode(&state.snapshot(), now_ms);
    Ok(HttpResponse::Ok()
        .content_type(CONTENT_TYPE)
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .body(body))
}
