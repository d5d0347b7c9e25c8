//! mcp-search-proxy: an MCP server that stands in front of tool-heavy MCP upstreams and
//! exposes four tools (`mcp_search`, `mcp_describe`, `mcp_call`, `mcp_refresh`) instead of
//! hundreds of schemas. This crate is the shell: process, configuration, HTTP.
//!
//! # Layout
//!
//! ```text
//! MCP client ── POST /mcp ──► http::checks (origin, token, body) ► http::mcp (JSON-RPC, era)
//!                               │  proxy_core::tools::ToolRequest::parse: a typed request
//!                               ▼
//!                             app::App::run ─► ToolOutcome (typed) ─► http renders the reply
//!                               ├─► CatalogActor: snapshot (published on a watch channel
//!                               │     ┄┄► App), refresh state machine, manifest
//!                               ├─► UpstreamActor × N: session, token, timeouts, retries
//!                               │     ── HTTP client (upstream-http: TLS, egress proxies)
//!                               │     ──► upstream MCP servers
//!                               ├─► RetrievalTracker: each client's last search (fire and
//!                               │     forget), for retrieval telemetry
//!                               └─► QueryEmbedder (with a model): query vectors for
//!                                     mcp_search (2 s bound, else lexical); EmbeddingActor
//!                                     follows the snapshots and publishes each generation's
//!                                     tool vectors ┄┄► App
//! http::mcp ─► ClientSessions: ended legacy sessions (published the same way), calls in
//!              flight that a client may cancel
//!          └─► asking Desk (through App): a 2025-era client's questions, posted and framed
//!              on its call's stream, its answers delivered; calls held for 2026-07-28
//!              clients (proxy_actors::asking; the rules in proxy_core::asking)
//! ```
//!
//! `GET /metrics` (http::metrics) encodes the process's one `Metrics` (proxy-metrics), which
//! the application and the actors record into with atomics.
//!
//! Every piece of shared state has one owner, an actor, which alone changes it (an upstream
//! actor through one single-writer type, its `SessionCell`, since the session changes in the
//! middle of its concurrent requests: see `proxy_actors::upstream`). The
//! application and the handlers change state only by sending messages; what they read on
//! every request (the catalog snapshot, the semantic index, the ended-session set) the owner
//! publishes on a `tokio::sync::watch` channel, so reading costs no message round trip.
//!
//! - [`config`]: environment variables → [`config::Config`] (exit 64 on a bad value).
//! - [`logging`]: JSON lines on stdout.
//! - [`app`]: the application service: search (semantic arm, lexical fallback), describe,
//!   call (resolve, validate, unknown tool → one refresh → one retry, route), refresh; and the
//!   metrics and telemetry of each, from typed outcomes.
//! - [`advice`]: the words a model or an operator reads about a failed upstream exchange,
//!   the one place that names a setting to change.
//! - [`http`]: transport only: HTTP/JSON-RPC ↔ typed request ↔ [`app`] ↔ reply, the eras'
//!   header rules, SSE streaming, health, metrics.
//! - [`server`]: starts the actors and the HTTP server, and drains it at shutdown (also used
//!   in-process by tests).
//! - [`cli`]: the `demo` and `demo-upstream` subcommands.
//!
//! The other crates: `mcp-wire` (the protocol as data), `tool-search` (the index),
//! `proxy-core` (the four tools' typed requests and outcomes, the snapshot, the manifest),
//! `proxy-actors` (the catalog, upstream, embedding, client-session, asking-desk and retrieval
//! actors),
//! `upstream-http` (the HTTP client of the upstreams: transport, TLS trust, egress proxies,
//! `WireError`), `proxy-metrics` (the metrics and their OpenMetrics text), `embed` (the
//! sentence-embedding model and the vector store), `demo-upstream` (the embedded demo server),
//! `search-eval` (the research harness: retrieval metrics over the evaluation sets, offline
//! ranking of a catalog file; not part of the service).

#![forbid(unsafe_code)]

pub mod advice;
pub mod app;
pub mod cli;
pub mod config;
pub mod http;
pub mod logging;
pub mod server;
