//! Process assembly: start one `UpstreamActor` per upstream (each on its own arbiter), the
//! `CatalogActor`, and the HTTP server. Tests call the same functions with port 0.

use std::collections::HashMap;
use std::net::TcpListener;
use std::time::Duration;

use actix::{Actor, Addr, Arbiter};
use actix_web::{web, App, HttpServer};

use proxy_actors::catalog::{CatalogActor, CatalogConfig, UpstreamHandle};
use proxy_actors::embedding::{self, EmbeddingConfig, SemanticState};
use proxy_actors::upstream::{UpstreamActor, UpstreamSpec};
use upstream_http::Network;

use crate::app;
use crate::config::{Config, UpstreamConfig};
use crate::http::{self, AppState, HttpSettings};

/// The running actors of one proxy.
pub struct Proxy {
    pub catalog: Addr<CatalogActor>,
    /// The catalog's current snapshot, published by the actor.
    pub snapshots: tokio::sync::watch::Receiver<std::sync::Arc<proxy_core::catalog::Snapshot>>,
    pub upstreams: Vec<UpstreamHandle>,
    /// The process's metrics, shared by the actors and the HTTP layer.
    pub metrics: std::sync::Arc<proxy_metrics::Metrics>,
    /// The semantic arm's state (off, or its query embedder and each generation's vectors).
    pub semantic: tokio::sync::watch::Receiver<SemanticState>,
    arbiters: Vec<Arbiter>,
}

impl Proxy {
    /// Starts the actors, lexical search only. Must run inside an actix `System`. `network`:
    /// how upstream connections are made (TLS trust, egress proxies; see [`network`]).
    pub fn start(
        upstreams: &[UpstreamConfig],
        catalog_cfg: CatalogConfig,
        max_result_bytes: usize,
        network: &Network,
    ) -> Proxy {
        Proxy::start_with(upstreams, catalog_cfg, max_result_bytes, network, None)
    }

    /// Starts the actors, with the semantic arm when `embed_model` is given (its vectors are
    /// kept beside the manifest, see [`embedding::vectors_path`]). Must run inside an actix
    /// `System`.
    pub fn start_with(
        upstreams: &[UpstreamConfig],
        catalog_cfg: CatalogConfig,
        max_result_bytes: usize,
        network: &Network,
        embed_model: Option<std::path::PathBuf>,
    ) -> Proxy {
        // The manifest is read once: it seeds the catalog and tells each upstream actor the
        // era its upstream spoke last time.
        let manifest = catalog_cfg
            .manifest_path
            .as_deref()
            .and_then(proxy_actors::catalog::load_manifest_logged);
        let mut handles = Vec::new();
        let mut arbiters = Vec::new();
        for u in upstreams {
            log::info!(
                upstream = u.label.as_str(),
                url = proxy_core::redact::url(&u.url).as_str(),
                auth = if u.token.is_some() { "yes" } else { "no" },
                timeout_sec = u.timeout.as_secs();
                "upstream configured"
            );
            let spec = UpstreamSpec {
                label: u.label.clone(),
                url: u.url.clone(),
                token: u.token.clone(),
                timeout: u.timeout,
                max_response_bytes: max_result_bytes,
                era_hint: manifest.as_ref().and_then(|m| m.era_of(&u.url)),
                metrics: catalog_cfg.metrics.clone(),
                network: network.clone(),
            };
            let (addr, arbiter) = UpstreamActor::start_on_new_arbiter(spec);
            arbiters.push(arbiter);
            handles.push(UpstreamHandle {
                label: u.label.clone(),
                url: u.url.clone(),
                addr,
            });
        }
        let metrics = catalog_cfg.metrics.clone();
        let embedding_cfg = EmbeddingConfig {
            model: embed_model,
            vectors_path: catalog_cfg.manifest_path.as_deref().map(embedding::vectors_path),
        };
        let catalog = CatalogActor::with_manifest(catalog_cfg, handles.clone(), manifest);
        let snapshots = catalog.subscribe();
        let catalog = catalog.start();
        let semantic = embedding::start(embedding_cfg, snapshots.clone(), metrics.clone());
        Proxy {
            catalog,
            snapshots,
            semantic,
            upstreams: handles,
            metrics,
            arbiters,
        }
    }

    pub fn app_state(&self, settings: HttpSettings) -> web::Data<AppState> {
        let map: HashMap<_, _> = self
            .upstreams
            .iter()
            .map(|h| (h.label.clone(), h.addr.clone()))
            .collect();
        let app = app::App::new(
            self.catalog.clone(),
            self.snapshots.clone(),
            map,
            self.metrics.clone(),
            self.semantic.clone(),
            &settings.asking,
        );
        web::Data::new(AppState::new(app, settings))
    }

    /// Ends upstream sessions (bounded wait), for a clean shutdown.
    pub async fn end_sessions(&self) {
        let ends = self
            .upstreams
            .iter()
            .map(|h| h.addr.send(proxy_actors::upstream::EndSession));
        let _ = tokio::time::timeout(Duration::from_secs(3), futures_util::future::join_all(ends)).await;
    }

    /// Stops the upstream arbiters (their threads end once idle).
    pub fn stop(&self) {
        for a in &self.arbiters {
            a.stop();
        }
    }
}

/// How upstream connections are made: the platform's roots plus `UPSTREAM_CA_FILE`, and the
/// egress proxies. Says at start what it found (never a proxy's credentials).
pub fn network(cfg: &Config) -> std::io::Result<Network> {
    let network = Network::new(cfg.upstream_ca.as_ref(), cfg.egress.clone()).map_err(std::io::Error::other)?;
    let trust = &network.trust;
    log::info!(
        platform_roots = trust.platform_roots,
        ca_file_roots = trust.ca_file_roots,
        ca_file = cfg.upstream_ca.as_ref().map(|f| f.path.display().to_string()).unwrap_or_else(|| "none".into()).as_str();
        "upstream TLS trust"
    );
    if trust.platform_roots == 0 {
        log::warn!(ca_file_roots = trust.ca_file_roots; "no platform root certificates found (install ca-certificates, or set SSL_CERT_FILE): https upstreams are trusted only through UPSTREAM_CA_FILE");
    }
    let egress = &cfg.egress;
    if !egress.is_direct() {
        let shown =
            |p: &Option<upstream_http::egress::ProxyUrl>| p.as_ref().map_or_else(|| "none".into(), |p| p.to_string());
        log::info!(
            https_proxy = shown(&egress.https).as_str(),
            http_proxy = shown(&egress.http).as_str(),
            no_proxy = !egress.no_proxy.is_empty();
            "upstream egress proxies"
        );
    }
    Ok(network)
}

/// Catalog settings from the service configuration.
pub fn catalog_config(cfg: &Config) -> CatalogConfig {
    CatalogConfig {
        manifest_path: cfg.manifest_path.clone(),
        ttl: cfg.catalog_ttl,
        policy: cfg.policy.clone(),
        min_refresh_interval: cfg.refresh_min_interval,
        describe: crate::advice::describe,
        ..CatalogConfig::default()
    }
}

pub fn http_settings(cfg: &Config) -> HttpSettings {
    HttpSettings {
        allowed_origins: cfg.allowed_origins.clone(),
        max_body_bytes: cfg.max_body_bytes,
        listing_max_chars: cfg.listing_max_chars,
        auth: http::auth::Authenticator::new(&cfg.client_tokens),
        body_timeout: cfg.body_timeout,
        metrics_public: cfg.metrics_public,
        asking: cfg.asking.clone(),
        sse_keepalive: cfg.sse_keepalive,
    }
}

/// Connection limits and timeouts of the HTTP server.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// Most client connections at once, over all workers.
    pub max_connections: usize,
    /// The shutdown grace period: calls still running after it get an error, and the server
    /// closes what is left.
    pub shutdown_grace: Duration,
}

impl ServerLimits {
    pub fn of(cfg: &Config) -> ServerLimits {
        ServerLimits {
            max_connections: cfg.max_connections,
            shutdown_grace: cfg.shutdown_grace,
        }
    }
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: crate::config::DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: crate::config::DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

/// Time for the server to flush the replies of calls cut at the end of the grace period.
const CUT_MARGIN: Duration = Duration::from_secs(1);

/// Builds the HTTP server on an already bound listener (port 0 in tests).
///
/// Headers must arrive within 5 s (actix-web's `client_request_timeout`), bodies within
/// `BODY_TIMEOUT_SEC` (see `http::mcp`), and at most `max_connections` are held at once (the
/// rest wait in the listen backlog), so slow or stalled clients cannot use up the process's
/// file descriptors.
pub fn http_server(
    state: web::Data<AppState>,
    listener: TcpListener,
    limits: ServerLimits,
) -> std::io::Result<actix_web::dev::Server> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let per_worker = limits.max_connections.div_ceil(workers).max(1);
    let routes = http::configure(state);
    Ok(HttpServer::new(move || App::new().configure(routes.clone()))
        .workers(workers)
        .max_connections(per_worker)
        .client_request_timeout(Duration::from_secs(5))
        .client_disconnect_timeout(Duration::from_secs(1))
        .listen(listener)?
        .shutdown_timeout((limits.shutdown_grace + CUT_MARGIN).as_secs())
        .disable_signals()
        .run())
}

/// Stops the server gracefully: no new connections; requests in flight may finish within
/// `grace`; those still running then are answered with an error (see `http::mcp`), and the
/// server closes what is left a moment later (its `shutdown_timeout`).
pub async fn drain(handle: &actix_web::dev::ServerHandle, state: &web::Data<AppState>, grace: Duration) {
    let cut = state.clone();
    actix_web::rt::spawn(async move {
        tokio::time::sleep(grace).await;
        cut.lifecycle.send_replace(http::Lifecycle::Cut);
    });
    handle.stop(true).await;
}

/// Runs the service until SIGINT/SIGTERM.
pub async fn run(cfg: Config, listener: TcpListener) -> std::io::Result<()> {
    let network = network(&cfg)?;
    let proxy = Proxy::start_with(
        &cfg.upstreams,
        catalog_config(&cfg),
        cfg.max_result_bytes,
        &network,
        cfg.embed_model.clone(),
    );
    let addr = listener.local_addr()?;
    if cfg.client_tokens.is_empty() && !addr.ip().is_loopback() {
        log::warn!(addr = addr.to_string().as_str(); "no client authentication: anyone who can reach this address can use every upstream credential (ALLOW_UNAUTHENTICATED=true)");
    }
    let state = proxy.app_state(http_settings(&cfg));
    let limits = ServerLimits::of(&cfg);
    let server = http_server(state.clone(), listener, limits)?;
    let handle = server.handle();
    log::info!(
        addr = addr.to_string().as_str(),
        upstreams = cfg.upstreams.len(),
        ttl_sec = cfg.catalog_ttl.map(|d| d.as_secs()).unwrap_or(0),
        auth = if cfg.client_tokens.is_empty() { "off" } else { "bearer" },
        client_groups = cfg.client_tokens.len(),
        manifest = cfg.manifest_path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "off".into()).as_str();
        "listening"
    );
    actix_web::rt::spawn(async move {
        shutdown_signal().await;
        log::info!(grace_sec = limits.shutdown_grace.as_secs(); "shutting down");
        drain(&handle, &state, limits.shutdown_grace).await;
    });
    let out = server.await;
    proxy.end_sessions().await;
    proxy.stop();
    out
}

/// Resolves on SIGINT or SIGTERM (Ctrl-C elsewhere).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(mut i), Ok(mut t)) => {
                tokio::select! { _ = i.recv() => {}, _ = t.recv() => {} }
            }
            _ => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
