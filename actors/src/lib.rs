//! proxy-actors: the stateful parts of mcp-search-proxy, as actix actors.
//!
//! # Layout
//!
//! - [`upstream`]: `UpstreamActor`, one per configured upstream, on its own arbiter. It owns
//!   the awc client, the protocol era and legacy session, the bearer token, timeouts and the
//!   reset/retry rules, and follows the upstream's list changes.
//! - [`catalog`]: `CatalogActor`, the only writer of the catalog. It owns the current snapshot
//!   (published on a `watch` channel), the refresh state machine (coalescing, rate limit,
//!   TTL, retries), the change journal and the manifest file.
//!
//! What the actors hold is built by pure code in `proxy-core` (snapshot, manifest, admission),
//! `tool-search` (the index) and `mcp-wire` (messages); the actors only sequence it. The HTTP
//! layer (the binary) never shares a lock with them: it sends messages, and reads what they
//! publish.

pub mod catalog;
pub mod upstream;
