//! proxy-actors: the stateful parts of mcp-search-proxy, as actix actors.
//!
//! # Layout
//!
//! - [`upstream`]: `UpstreamActor`, one per configured upstream, on its own arbiter.
//!   - `upstream/actor.rs`: the actor, its messages and handlers (listing, calls with progress,
//!     timeouts and cancellation, ending the session).
//!   - `upstream/list_changes.rs`: following the upstream's list changes.
//!   - `upstream/connection.rs`: the async client side of the session (all of
//!     `impl Connection`): the handshakes (probe, `initialize`) and one request under the
//!     session's rules (reset and retry once).
//!   - `upstream/session.rs`: the session as pure state (one `Session` type: unready with an
//!     era hint, ready legacy with its session id and version, ready modern) and its
//!     transitions; the era and session state machine is drawn there. `SessionCell` is the
//!     session's single writer, shared by the actor's request futures: they run concurrently
//!     on its thread and the session changes mid-flight (see [`upstream`]).
//!   - [`upstream::cancel`]: abandoning a call with a reason.
//!   - The HTTP client the connection talks through (transport, TLS, egress proxies,
//!     `WireError`, the pure reply classifiers) is the `upstream-http` crate.
//! - [`catalog`]: `CatalogActor`, the only writer of the catalog.
//!   - `catalog/actor.rs`: the actor, its configuration and messages, and the refresh state
//!     machine (coalescing, rate limit, TTL, retries); it owns the current snapshot (published
//!     on a `watch` channel) and loads the manifest.
//!   - `catalog/refresh.rs`: the pure part of a fan-out: merging the listings into a new
//!     snapshot (by upstream label), the change journal, the reports, the effective TTL and its
//!     jitter; it writes the manifest.
//!
//! - [`embedding`]: the semantic arm of the search: `EmbeddingActor` (loads the model off the
//!   actix threads, embeds the tools each new snapshot adds, persists their vectors beside the
//!   manifest, publishes a `SemanticIndex` per generation) and `QueryEmbedder` (query vectors
//!   on a `SyncArbiter` thread, with an LRU cache); its pure core, `embedding/plan.rs`.
//!
//! - [`asking`]: the runtime of the questions a tool asks its caller (elicitation, sampling,
//!   roots): what a call may ask and the hand-over of one question (the upstream actor's
//!   only part); `Desk`, the actor that owns what waits on a client (the questions posted to
//!   2025-era sessions, the calls held for 2026-07-28 clients); the 2025-era client's stream
//!   driver. The pure rules are `proxy_core::asking`.
//! - [`sessions`]: `ClientSessions`, the 2025-era client sessions the proxy mints: ended ids
//!   (published on a `watch` channel) and the cancel handles of calls in flight.
//! - [`retrieval`]: `RetrievalTracker`, retrieval telemetry: each client's last search, and
//!   where its next call ranked in it.
//!
//! The actors record into the process's one `Metrics` (the `proxy-metrics` crate); the
//! upstream module's `UpstreamError` holds the one mapping from a failed exchange to an error
//! kind.
//!
//! Only actors and their state machines are here: no HTTP client (`upstream-http`) and no
//! metrics registry (`proxy-metrics`).
//!
//! What the actors hold is built by pure code in `proxy-core` (snapshot, manifest, admission),
//! `tool-search` (the index) and `mcp-wire` (messages); the actors only sequence it. The HTTP
//! layer (the binary) never shares a lock with them: it sends messages, and reads what they
//! publish.

#![forbid(unsafe_code)]

pub mod asking;
pub mod catalog;
pub mod embedding;
pub mod retrieval;
pub mod sessions;
pub mod upstream;
