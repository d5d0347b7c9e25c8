//! mcp-search-proxy: an MCP server that stands in front of tool-heavy MCP upstreams and
//! exposes four tools (`mcp_search`, `mcp_describe`, `mcp_call`, `mcp_refresh`) instead of
//! hundreds of schemas. This crate is the shell: process, configuration, HTTP.
//!
//! # Layout
//!
//! ```text
//! MCP client ── POST /mcp ──► http::checks (origin, token, body) ► http::mcp (JSON-RPC, era)
//!                               │  http::tools: proxy_core::tools over the current snapshot
//!                               ├─► CatalogActor (proxy-actors): snapshot, refresh state
//!                               │     machine, manifest ┄┄ publishes each snapshot ┄┄► handlers
//!                               ├─► ClientSessions (http::sessions): ended legacy sessions
//!                               │     (published the same way), calls in flight to cancel
//!                               ├─► RetrievalTracker (http::retrieval): each client's last
//!                               │     search, for retrieval telemetry (fire and forget)
//!                               ├─► QueryEmbedder (proxy-actors, with EMBED_MODEL): query
//!                               │     vectors for mcp_search (2 s bound, else lexical)
//!                               │   EmbeddingActor: follows the snapshots, embeds new tools,
//!                               │     publishes each generation's vectors ┄┄► handlers
//!                               └─► UpstreamActor × N (proxy-actors): session, token,
//!                                     timeouts, retries ──► upstream MCP servers
//! ```
//!
//! `GET /metrics` (http::metrics) encodes the process's one `Metrics` (proxy-actors), which
//! handlers and actors record into with atomics.
//!
//! Every piece of shared state has one owner, an actor, which alone changes it. Handlers
//! change state only by sending messages; what they read on every request (the catalog
//! snapshot, the ended-session set) the owner publishes on a `tokio::sync::watch` channel, so
//! reading costs no message round trip.
//!
//! - [`config`]: environment variables → [`config::Config`] (exit 64 on a bad value).
//! - [`logging`]: JSON lines on stdout.
//! - [`http`]: routes and handlers; they only translate between HTTP/JSON-RPC and calls into
//!   `proxy-core` plus messages to the actors.
//! - [`server`]: starts the actors and the HTTP server, and drains it at shutdown (also used
//!   in-process by tests).
//! - [`cli`]: the `demo` and `demo-upstream` subcommands.
//!
//! The other crates: `mcp-wire` (the protocol as data), `tool-search` (the index),
//! `proxy-core` (the four tools as pure functions, the snapshot, the manifest),
//! `proxy-actors` (the catalog, upstream and embedding actors), `embed` (the sentence-embedding
//! model and the vector store), `demo-upstream` (the embedded demo server), `search-eval` (the
//! research harness: retrieval metrics over the evaluation sets, offline ranking of a catalog
//! file; not part of the service).

#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod http;
pub mod logging;
pub mod server;
