//! The HTTP face of the proxy: the MCP endpoint, health and readiness.
//!
//! Handlers hold no shared locks: they read the catalog through `GetSnapshot` messages and
//! reach upstreams through their actors' addresses.

pub mod health;
pub mod mcp;
pub mod sessions;
pub mod tools;

use std::collections::HashMap;
use std::sync::Arc;

use actix::Addr;
use actix_web::web;

use proxy_actors::catalog::CatalogActor;
use proxy_actors::upstream::UpstreamActor;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Extra allowed `Origin` values (lower-case, no trailing slash).
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    /// Budget of the tier-1 listing in `initialize`'s `instructions`.
    pub listing_max_chars: usize,
}

/// Shared, read-only state of every worker. Must be created inside an actix `System`.
pub struct AppState {
    pub catalog: Addr<CatalogActor>,
    /// Upstream actors by label (the catalog routes tool → label).
    pub upstreams: HashMap<String, Addr<UpstreamActor>>,
    pub settings: HttpSettings,
    /// `tools/list` result, serialised once.
    pub tools_list: Arc<serde_json::Value>,
    /// Legacy client sessions (ended ids, cancel handles of calls in flight).
    pub sessions: Addr<sessions::ClientSessions>,
}

impl AppState {
    pub fn new(
        catalog: Addr<CatalogActor>,
        upstreams: HashMap<String, Addr<UpstreamActor>>,
        settings: HttpSettings,
    ) -> AppState {
        AppState {
            catalog,
            upstreams,
            settings,
            tools_list: Arc::new(serde_json::json!({ "tools": tools::definitions() })),
            sessions: actix::Actor::start(sessions::ClientSessions::default()),
        }
    }
}

/// Mounts every route; used by the server and by in-process tests alike.
pub fn configure(state: web::Data<AppState>) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(state.clone())
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .service(
                web::resource("/mcp")
                    .route(web::post().to(mcp::post))
                    .route(web::route().to(mcp::other_method)),
            );
    }
}
