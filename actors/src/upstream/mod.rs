//! `UpstreamActor`: one per configured upstream MCP server, speaking either protocol era.
//!
//! The actor owns everything that is per-upstream state: the awc client (created on the
//! actor's own arbiter thread, never shared across threads), the bearer token, the timeout,
//! the protocol era and the legacy session (`Mcp-Session-Id`, negotiated version). Requests run
//! concurrently: each message handler returns a future on the actor's thread, so a slow
//! `tools/call` never blocks a `tools/list` or another call.
//!
//! # Layout
//!
//! - `actor.rs`: [`UpstreamActor`], its messages ([`ListTools`], [`CallTool`], [`GetStatus`],
//!   [`EndSession`], [`FollowListChanges`]; [`ToolsChanged`] goes to the catalog) and their
//!   handlers: the listing (pages, limits) and the call (progress, timeouts, cancellation).
//! - `session.rs`: the session with the upstream, one state type (`Session`: `Unready{hint}`,
//!   `Ready(Legacy{id, version})`, `Ready(Modern)`) and its transitions, the handshakes
//!   (`ensure_ready`, `reset`, `connect`, `probe`, `initialize`) and one request under the
//!   session's rules (retried once after a lost session or a changed era). Its module docs
//!   hold the era and session state machine.
//! - `list_changes.rs`: the list-change follower (legacy `GET` stream, modern
//!   `subscriptions/listen`), reopened with back-off.
//! - `classify.rs`: pure reply classifiers (`classify_probe`, `modern_refusal_means_other_era`,
//!   `session_lost`, `interpret`), unit-tested.
//! - [`transport`] (with `raw.rs`): HTTP: the one header builder ([`transport::headers`]) every
//!   request goes through, replies as JSON or SSE (resumed when a stream closes early),
//!   close-delimited replies read directly (`raw.rs`), redirects refused.
//! - [`connector`]: how a connection is opened ([`Network`]: TLS trust and egress proxies),
//!   for awc (its custom TCP connector) and for `raw.rs`; [`tls`]: the trusted roots
//!   (platform + `UPSTREAM_CA_FILE`), the rustls configuration and what a failed handshake
//!   is called; [`egress`]: `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` and the `CONNECT`
//!   handshake, pure and unit-tested.
//! - [`error`]: [`UpstreamError`], phrased for a model and an operator.
//! - [`cancel`]: [`CancelHandle`] / [`CancelToken`], abandoning a call with a reason.
//!
//! # What an upstream is not trusted with
//! Redirects are never followed (see [`transport`]). Everything an upstream sends that the
//! proxy would hold or loop on is bounded, and a refusal names its limit: a reply's size
//! (`max_response_bytes`, all SSE streams of one reply together), the pages (1000), tools
//! (50,000) and bytes (128 MiB) of one listing, a `nextCursor` (4 KiB) (all in `actor.rs`),
//! the `Mcp-Session-Id` (1 KiB, `session.rs`), an event of the list-change stream (64 KiB,
//! `list_changes.rs`), a reply head read directly (64 KiB, `raw.rs`). The `instructions` text
//! is not refused but cut to 8 KiB at a character boundary, with a note saying so
//! (`session.rs`); an upstream's error message is repeated (in errors, logs and to the model)
//! up to 1000 characters (`classify.rs`).

mod actor;
pub mod cancel;
mod classify;
pub mod connector;
pub mod egress;
pub mod error;
mod list_changes;
mod raw;
mod session;
pub mod tls;
pub mod transport;

pub use actor::{
    CallTool, EndSession, FollowListChanges, GetStatus, ListTools, Listing, ToolsChanged, UpstreamActor, UpstreamSpec,
    UpstreamStatus,
};
pub use cancel::{cancel_pair, CancelHandle, CancelReason, CancelToken};
pub use connector::Network;
pub use error::UpstreamError;
pub use mcp_wire::Era;
