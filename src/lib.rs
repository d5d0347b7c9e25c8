//! mcp-search-proxy: an MCP server that stands in front of tool-heavy MCP upstreams and
//! exposes four tools (`mcp_search`, `mcp_describe`, `mcp_call`, `mcp_refresh`) instead of
//! hundreds of schemas.
//!
//! # Layout
//!
//! ```text
//! MCP client ── POST /mcp ──► http::mcp (checks, JSON-RPC dispatch)
//!                               │  http::tools (the four tools; pure over a catalog snapshot)
//!                               ├─► CatalogActor (proxy-actors::catalog): snapshot, index,
//!                               │     routing, fingerprint, manifest, refresh state machine
//!                               │     ┄┄ publishes each snapshot on a watch channel ┄┄► handlers
//!                               ├─► ClientSessions (http::sessions): ended legacy sessions
//!                               │     (published the same way), calls in flight to cancel
//!                               └─► UpstreamActor × N (proxy-actors::upstream): awc client,
//!                                     session, token, timeout, reset/retry
//! ```
//!
//! Every piece of shared state has one owner, an actor, which alone changes it. Handlers
//! change state only by sending messages; what they read on every request (the catalog
//! snapshot, the ended-session set) the owner publishes on a `tokio::sync::watch` channel, so
//! reading costs no message round trip.
//!
//! - [`config`]: environment variables → [`config::Config`] (exit 64 on a bad value).
//! - [`logging`]: JSON lines on stdout.
//! - [`http`]: routes, handlers and the four tools; handlers send messages to actors and read
//!   what actors publish.
//! - [`server`]: starts the actors and the HTTP server (also used in-process by tests).
//! - [`demo`]: an embedded MCP upstream for `mcp-search-proxy demo` and for fault-injection tests.
//! - [`cli`]: the `demo`, `demo-upstream`, `search` and `eval` subcommands (`search` and `eval`
//!   run the same code path as `mcp_search`).
//! - `proxy-actors` (the `actors/` crate): wire types, SSE decoder, search index, actors.

pub mod cli;
pub mod config;
pub mod http;
pub mod logging;
pub mod server;
