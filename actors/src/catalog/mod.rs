//! `CatalogActor`: owns the merged catalog, the routing table (tool → upstream), the search
//! index, the fingerprint, the manifest file and the refresh state machine.
//!
//! # Layout
//!
//! - `actor.rs`: [`CatalogActor`], its configuration ([`CatalogConfig`]) and messages
//!   ([`Refresh`], [`GetCatalogStatus`], and the upstreams' `ToolsChanged`), the refresh state
//!   machine below, the timers (TTL, retry, list-change debounce) and loading the manifest.
//!   The actor reaches each upstream through two recipients (`ListTools`,
//!   `FollowListChanges`), so its tests beside it drive the state machine with fake upstreams
//!   on the actix test runtime, with tokio's clock paused.
//! - `refresh.rs`: the pure part of a fan-out: `apply_fanout` merges the listings
//!   into a new snapshot (an upstream's listing goes to the snapshot entry of the same label),
//!   the change journal, the reports ([`RefreshReport`], [`RefreshFailure`]), the effective
//!   TTL and its jitter; the manifest and the persisted index are written there (the index
//!   only when it was built, see `proxy_core::catalog::index_file`). Unit-tested without an
//!   actor. At start, `actor.rs` loads the persisted index when it is this build's for the
//!   manifest's tools, else builds it and persists it.
//!
//! Readers never wait for a refresh: the actor publishes every `Arc<Snapshot>` it swaps in on a
//! `watch` channel ([`CatalogActor::subscribe`]; the actor is its only writer, so a reader
//! needs no message per request) and the HTTP workers search the snapshot on their own
//! threads; a refresh builds a new snapshot off the actor (merge, index build and manifest
//! write run on a blocking thread) and swaps it in whole.
//!
//! Refresh state machine (triggers: startup, TTL, `mcp_refresh`, unknown tool, an upstream's
//! list change, the retry while an upstream never answered):
//!
//! ```text
//!            trigger                      fan-out done
//!   Idle ───────────────► Running{waiters} ─────────────► Idle  (waiters get the outcome)
//!                           │     ▲   │ trigger                 
//!                           │     │   ▼                         
//!                           │     └ Running{waiters, queued}   (every further trigger joins
//!                           │          │ fan-out done           the one queued fan-out)
//!                           │          ▼
//!                           └──── Running{queued waiters} ──► …
//! ```
//! At most one fan-out is in flight and at most one is queued; every caller gets the outcome
//! of a fan-out that started after its trigger, or less than `JOIN_WINDOW` (250 ms) before
//! it (its upstreams are still answering requests sent practically at the same moment). In a
//! fan-out, an upstream that fails keeps its previous tools (served stale); a fan-out in which
//! every upstream fails changes nothing.

mod actor;
mod refresh;

pub use actor::{
    load_manifest_logged, CatalogActor, CatalogConfig, CatalogStatus, GetCatalogStatus, Refresh, UpstreamHandle,
    DEFAULT_MIN_REFRESH_INTERVAL,
};
pub use proxy_core::catalog::report::{RefreshFailure, RefreshReason, RefreshReport, UpstreamReport};
