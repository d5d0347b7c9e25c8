//! The HTTP face of the proxy: transport only. The MCP endpoint turns HTTP and JSON-RPC into a
//! typed tool request (`proxy_core::tools::ToolRequest`), hands it to the application
//! ([`crate::app::App`]) and renders its typed outcome as the reply, in the client's era and
//! as JSON or SSE; plus health and readiness, and metrics.
//!
//! - [`checks`]: origin, client token ([`auth`]), body size and time, `Accept`,
//!   `Content-Type`; [`error`]: the one refusal type.
//! - [`mcp`]: `POST /mcp` (both eras), `DELETE` of a legacy session, everything else 405.
//! - [`stream`]: replies as JSON or SSE, and the SSE stream of a call's notifications.
//! - [`health`], [`metrics`]: `/healthz`, `/readyz`, `/metrics`.
//!
//! Handlers read the catalog's current snapshot and the ended legacy sessions from `watch`
//! channels their owners publish (no message per request), and otherwise send messages: the
//! application to the actors, the endpoint to `ClientSessions` to track and cancel calls in
//! flight. Each published value has one writer, its actor; handlers never take a lock to
//! change state.

pub mod auth;
pub mod checks;
pub mod error;
pub mod health;
pub mod mcp;
pub mod metrics;
pub mod stream;

use std::sync::Arc;

use actix::Addr;
use actix_web::web;

use proxy_actors::sessions;
use proxy_core::catalog::Snapshot;

use crate::app::App;

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
    /// Tools that ask their caller something: the question timeout, how many may wait per
    /// client, the key that seals a 2026-07-28 `requestState`.
    pub asking: crate::config::Asking,
    /// A streamed call sends an SSE comment after this long without anything else
    /// (`SSE_KEEPALIVE_SEC`).
    pub sse_keepalive: std::time::Duration,
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
            asking: crate::config::Asking::default(),
            sse_keepalive: crate::config::DEFAULT_SSE_KEEPALIVE,
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
    /// The application: search, describe, call, refresh.
    pub app: App,
    pub settings: HttpSettings,
    /// The `tools/list` results without pinned tools, serialised once.
    pub tools_list: mcp::ToolsList,
    /// Legacy client sessions (ended ids, cancel handles of calls in flight).
    pub sessions: Addr<sessions::ClientSessions>,
    /// The ended legacy session ids, published by `sessions`.
    pub ended_sessions: sessions::Ended,
    /// Set to [`Lifecycle::Cut`] at the end of the shutdown grace period.
    pub lifecycle: tokio::sync::watch::Sender<Lifecycle>,
}

impl AppState {
    /// Must run inside an actix `System` (it starts the client-session actor).
    pub fn new(app: App, settings: HttpSettings) -> AppState {
        let client_sessions = sessions::ClientSessions::default();
        let ended_sessions = client_sessions.ended();
        AppState {
            app,
            settings,
            tools_list: mcp::ToolsList::default(),
            sessions: actix::Actor::start(client_sessions),
            ended_sessions,
            lifecycle: tokio::sync::watch::channel(Lifecycle::Serving).0,
        }
    }

    /// Resolves when calls in flight must be cut (the shutdown grace period is over).
    pub async fn cut(&self) {
        let mut rx = self.lifecycle.subscribe();
        let _ = rx.wait_for(|l| *l == Lifecycle::Cut).await;
    }

    /// The catalog's current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.app.snapshot()
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
