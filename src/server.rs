//! Process assembly: start one `UpstreamActor` per upstream (each on its own arbiter), the
//! `CatalogActor`, and the HTTP server. Tests call the same functions with port 0.

use std::collections::HashMap;
use std::net::TcpListener;
use std::time::Duration;

use actix::{Actor, Addr, Arbiter};
use actix_web::{web, App, HttpServer};

use proxy_actors::catalog::{CatalogActor, CatalogConfig, UpstreamHandle};
use proxy_actors::upstream::{UpstreamActor, UpstreamSpec};

use crate::config::{Config, UpstreamConfig};
use crate::http::{self, AppState, HttpSettings};

/// The running actors of one proxy.
pub struct Proxy {
    pub catalog: Addr<CatalogActor>,
    /// The catalog's current snapshot, published by the actor.
    pub snapshots: tokio::sync::watch::Receiver<std::sync::Arc<proxy_actors::catalog::Snapshot>>,
    pub upstreams: Vec<UpstreamHandle>,
    arbiters: Vec<Arbiter>,
}

impl Proxy {
    /// Starts the actors. Must run inside an actix `System`.
    pub fn start(upstreams: &[UpstreamConfig], catalog_cfg: CatalogConfig, max_result_bytes: usize) -> Proxy {
        // The manifest is read once: it seeds the catalog and tells each upstream actor the
        // era its upstream spoke last time.
        // Loading the manifest and building its snapshot is the start's heavy work.
        let heavy = proxy_actors::memory::heavy_work();
        let manifest = catalog_cfg
            .manifest_path
            .as_deref()
            .and_then(proxy_actors::catalog::load_manifest_logged);
        let mut handles = Vec::new();
        let mut arbiters = Vec::new();
        for u in upstreams {
            log::info!(
                upstream = u.label.as_str(),
                url = u.url.as_str(),
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
            };
            let (addr, arbiter) = UpstreamActor::start_on_new_arbiter(spec);
            arbiters.push(arbiter);
            handles.push(UpstreamHandle {
                label: u.label.clone(),
                url: u.url.clone(),
                addr,
            });
        }
        let catalog = CatalogActor::with_manifest(catalog_cfg, handles.clone(), manifest);
        drop(heavy);
        let snapshots = catalog.subscribe();
        let catalog = catalog.start();
        Proxy {
            catalog,
            snapshots,
            upstreams: handles,
            arbiters,
        }
    }

    pub fn app_state(&self, settings: HttpSettings) -> web::Data<AppState> {
        let map: HashMap<_, _> = self
            .upstreams
            .iter()
            .map(|h| (h.label.clone(), h.addr.clone()))
            .collect();
        web::Data::new(AppState::new(
            self.catalog.clone(),
            self.snapshots.clone(),
            map,
            settings,
        ))
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

/// Catalog settings from the service configuration.
pub fn catalog_config(cfg: &Config) -> CatalogConfig {
    CatalogConfig {
        manifest_path: cfg.manifest_path.clone(),
        ttl: cfg.catalog_ttl,
        policy: cfg.policy.clone(),
        ..CatalogConfig::default()
    }
}

pub fn http_settings(cfg: &Config) -> HttpSettings {
    HttpSettings {
        allowed_origins: cfg.allowed_origins.clone(),
        max_body_bytes: cfg.max_body_bytes,
        listing_max_chars: cfg.listing_max_chars,
    }
}

/// Builds the HTTP server on an already bound listener (port 0 in tests).
pub fn http_server(state: web::Data<AppState>, listener: TcpListener) -> std::io::Result<actix_web::dev::Server> {
    let routes = http::configure(state);
    Ok(HttpServer::new(move || App::new().configure(routes.clone()))
        .listen(listener)?
        .shutdown_timeout(10)
        .disable_signals()
        .run())
}

/// Runs the service until SIGINT/SIGTERM.
pub async fn run(cfg: Config, listener: TcpListener) -> std::io::Result<()> {
    let proxy = Proxy::start(&cfg.upstreams, catalog_config(&cfg), cfg.max_result_bytes);
    let addr = listener.local_addr()?;
    let server = http_server(proxy.app_state(http_settings(&cfg)), listener)?;
    let handle = server.handle();
    log::info!(
        addr = addr.to_string().as_str(),
        upstreams = cfg.upstreams.len(),
        ttl_sec = cfg.catalog_ttl.map(|d| d.as_secs()).unwrap_or(0),
        manifest = cfg.manifest_path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "off".into()).as_str();
        "listening"
    );
    actix_web::rt::spawn(async move {
        shutdown_signal().await;
        log::info!("shutting down");
        handle.stop(true).await;
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
