//! The demo upstream's Streamable HTTP endpoint (MCP 2025-era) and its control handle.
//!
//! It behaves like the SDK servers the proxy meets in production (spec 2025-11-25, also
//! accepting 2025-06-18 and 2025-03-26 clients), strict where the spec says MUST, so that the
//! proxy's client side is tested against the rules rather than against itself.
//!
//! # Wire behaviour
//! - One endpoint, `POST /mcp`. `GET` gets 405: the server never sends unsolicited messages,
//!   so it offers no standalone stream. `DELETE` with a live session ends it (200; the session
//!   id then gets 404); without sessions, `DELETE` gets 405.
//! - A POST is checked in this order, the first failure answering: simulated outage (503),
//!   bearer token (401), `Origin` not on loopback (403), `Accept` without both
//!   `application/json` and `text/event-stream` (406), `Content-Type` not JSON (415), body not
//!   JSON (400, -32700), array or non-JSON-RPC body (400, -32600; batches were removed in
//!   2025-06-18 and are refused for every version), session (stateful mode: 400 when missing,
//!   404 `Session not found` when unknown), `MCP-Protocol-Version` header (400 when present and
//!   unsupported; absent means 2025-03-26, which changes nothing here).
//! - `initialize` negotiates (echoes a supported version, otherwise answers the latest) and, in
//!   stateful mode, mints a 32-hex-digit `Mcp-Session-Id` from the OS random source. An
//!   `initialize` carrying a session id is refused (404 unknown, 400 already initialised): a
//!   client re-initialising after a 404 must drop its old id, as the spec requires.
//! - Notifications and client responses get 202 with no body; `ping` gets `{}`; unknown methods
//!   get -32601; errors of unreadable requests omit `id`.
//! - Requests are answered as `application/json`, or in SSE mode as `text/event-stream`: a
//!   priming event (`id` and empty `data`, SEP-1699) sent at once, then the response event. The
//!   `tools/call` delay falls between the two, as with a real slow tool.
//! - `tools/list` pages with an opaque `nextCursor` when a page size is set; `tools/call` runs
//!   the tool (see `super::tools`) before waiting out the configured delay.
//!
//!
//! # Layout
//! - `options`: [`UpstreamOptions`], what a test may vary.
//! - `control`: [`UpstreamControl`] and [`Stats`], the faults a test switches on while the
//!   server runs and what the server has seen.
//! - `state`: the state the handlers share and the checks every request passes (outage,
//!   bearer token, `Origin`, session).
//! - `messages`: JSON-RPC messages as read, and the refusals answered before dispatch.
//! - `post`: `POST /mcp`, from the header checks to `initialize`, `ping`, `tools/list` and
//!   `tools/call`.
//! - `reply`: a request's outcome framed as one JSON body or as an SSE stream.
//! - `other_methods`: `DELETE` (ending a session), `GET` (the list-changed stream), the rest.
//! - `headers`: the header rules (`Accept`, `Content-Type`, `Origin`).
//! - `ids`: the opaque strings handed out (session ids, `tools/list` cursors).
//!
//! Handlers never hold the state lock across an `.await`; the lock is a plain `Mutex` so that
//! test code on any thread can drive [`UpstreamControl`].

mod control;
mod headers;
mod ids;
mod messages;
mod options;
mod other_methods;
mod post;
mod reply;
mod state;
mod wire;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use tokio::task::JoinHandle;

pub use control::UpstreamControl;
pub use options::UpstreamOptions;
use state::Shared;
pub use state::Stats;

use wire::MAX_BODY_BYTES;
pub use wire::SUPPORTED_PROTOCOL_VERSIONS;

/// A started upstream. Dropping it stops the server too; [`RunningUpstream::stop`] also waits.
pub struct RunningUpstream {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp` (loopback even when bound to 0.0.0.0).
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// Fault injection and statistics.
    pub control: UpstreamControl,
    handle: ServerHandle,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for RunningUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningUpstream")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RunningUpstream {
    /// Stops accepting, drops open connections (in-flight calls included) and waits until the
    /// server has shut down.
    pub async fn stop(mut self) {
        self.handle.stop(false).await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RunningUpstream {
    fn drop(&mut self) {
        if self.task.is_some() {
            // The stop command is sent when `stop` is called; the returned future only waits.
            drop(self.handle.stop(false));
        }
    }
}

/// Starts an upstream on `bind` (e.g. `127.0.0.1:0`) and returns once it is listening.
///
/// Call from inside a Tokio or Actix runtime; the server itself runs on its own worker thread,
/// so the caller's runtime only has to stay alive.
pub async fn start(opts: UpstreamOptions, bind: &str) -> io::Result<RunningUpstream> {
    let shared = Arc::new(Shared::new(opts));
    let data = web::Data::from(Arc::clone(&shared));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .service(
                web::resource("/mcp")
                    .route(web::post().to(post::post_mcp))
                    .route(web::delete().to(other_methods::delete_mcp))
                    .default_service(web::to(other_methods::other_method)),
            )
    })
    // One worker is plenty: handlers never block, and tests start many servers.
    .workers(1)
    .disable_signals()
    .shutdown_timeout(1)
    .bind(bind)?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| io::Error::new(io::ErrorKind::AddrNotAvailable, "bind produced no address"))?;
    let server = server.run();
    let handle = server.handle();
    let task = tokio::spawn(server);

    let shown_ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let url = format!("http://{}/mcp", SocketAddr::new(shown_ip, addr.port()));
    log::info!("demo upstream listening; url={url}");
    Ok(RunningUpstream {
        url,
        addr,
        control: UpstreamControl { shared },
        handle,
        task: Some(task),
    })
}

#[cfg(test)]
mod tests;
