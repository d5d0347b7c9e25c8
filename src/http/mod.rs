//! The HTTP face of the proxy: the MCP endpoint, health and readiness, metrics.
//!
//! Handlers read the catalog's current snapshot from a `watch` channel the catalog actor
//! publishes to (no message per request), check ended legacy sessions in the set the
//! `sessions` actor publishes the same way, and otherwise send messages: to upstream actors for
//! calls, to the catalog for refreshes, to `sessions` to track and cancel calls in flight.
//! Each published value has one writer, its actor; handlers never take a lock to change state.

pub mod auth;
pub mod checks;
pub mod error;
pub mod health;
pub mod mcp;
pub mod metrics;
pub mod retrieval;
pub mod sessions;
pub mod stream;
pub mod tools;

use std::collections::HashMap;
use std::sync::Arc;

use actix::Addr;
use actix_web::web;

use proxy_actors::catalog::CatalogActor;
use proxy_actors::upstream::UpstreamActor;
use proxy_core::catalog::Snapshot;
use proxy_metrics::Metrics;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Extra allowed `Origin` values (lower-case, no trailing slash).
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    /// Budget of the tier-1 listing in `initialize`'s `instructions`.
    pub listing_max_chars: usize,
    /// Client tokens (`PROXY_TOKENS`); none configured lets every request in.
    pub auth: auth::Authenticator,
    /// Longest a client may take to send a request body.
    pub body_timeout: std::time::Duration,
    /// `GET /metrics` without a client token (`METRICS_PUBLIC`).
    pub metrics_public: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            allowed_origins: Vec::new(),
            max_body_bytes: crate::config::DEFAULT_MAX_BODY,
            listing_max_chars: crate::config::DEFAULT_LISTING_MAX_CHARS,
            auth: auth::Authenticator::default(),
            body_timeout: crate::config::DEFAULT_BODY_TIMEOUT,
            metrics_public: false,
        }
    }
}

/// Where the process is in its life, as requests in flight see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    Serving,
    /// The grace period after a stop signal is over: calls still running are answered with an
    /// error now, before the server closes their connections.
    Cut,
}

/// Shared state of every worker.
pub struct AppState {
    pub catalog: Addr<CatalogActor>,
    /// The catalog's current snapshot (see [`AppState::snapshot`]).
    pub snapshots: tokio::sync::watch::Receiver<Arc<Snapshot>>,
    /// Upstream actors by label (the catalog routes tool → label).
    pub upstreams: HashMap<String, Addr<UpstreamActor>>,
    pub settings: HttpSettings,
    /// The `tools/list` results without pinned tools, serialised once.
    pub tools_list: mcp::ToolsList,
    /// Legacy client sessions (ended ids, cancel handles of calls in flight).
    pub sessions: Addr<sessions::ClientSessions>,
    /// The ended legacy session ids, published by `sessions`.
    pub ended_sessions: sessions::Ended,
    /// Set to [`Lifecycle::Cut`] at the end of the shutdown grace period.
    pub lifecycle: tokio::sync::watch::Sender<Lifecycle>,
    /// The process's metrics (shared with the actors).
    pub metrics: Arc<Metrics>,
    /// Remembers each client's last search for retrieval telemetry.
    pub retrieval: Addr<retrieval::RetrievalTracker>,
    /// The semantic arm, published by the embedding actor: the query embedder and the tool
    /// vectors of a snapshot generation (or why it is off).
    pub semantic: tokio::sync::watch::Receiver<proxy_actors::embedding::SemanticState>,
}

impl AppState {
    pub fn new(
        catalog: Addr<CatalogActor>,
        snapshots: tokio::sync::watch::Receiver<Arc<Snapshot>>,
        upstreams: HashMap<String, Addr<UpstreamActor>>,
        settings: HttpSettings,
        metrics: Arc<Metrics>,
        semantic: tokio::sync::watch::Receiver<proxy_actors::embedding::SemanticState>,
    ) -> AppState {
        let client_sessions = sessions::ClientSessions::default();
        let ended_sessions = client_sessions.ended();
        AppState {
            catalog,
            snapshots,
            upstreams,
            settings,
            tools_list: mcp::ToolsList::default(),
            sessions: actix::Actor::start(client_sessions),
            ended_sessions,
            lifecycle: tokio::sync::watch::channel(Lifecycle::Serving).0,
            retrieval: actix::Actor::start(retrieval::RetrievalTracker::new(metrics.clone())),
            metrics,
            semantic,
        }
    }

    /// Resolves when calls in flight must be cut (the shutdown grace period is over).
    pub async fn cut(&self) {
        let mut rx = self.lifecycle.subscribe();
        let _ = rx.wait_for(|l| *l == Lifecycle::Cut).await;
    }

    /// The catalog's current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }
}

/// Mounts every route; used by the server and by in-process tests alike.
pub fn configure(state: web::Data<AppState>) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(state.clone())
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .route("/metrics", web::get().to(metrics::scrape))
            .service(
                web::resource("/mcp")
                    .route(web::post().to(mcp::post))
                    .route(web::route().to(mcp::other_method)),
            );
    }
}
