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
//! - [`cancel`]: [`CancelHandle`] / [`CancelToken`], abandoning a call with a reason.
//!
//! The HTTP client (transport, TLS trust, egress proxies, `UpstreamError`, the pure reply
//! classifiers) is the `upstream-http` crate; the trust rules that concern it are in its
//! crate docs.
//!
//! # What an upstream is not trusted with
//! Redirects are never followed and a reply's size is capped (`max_response_bytes`, all SSE
//! streams of one reply together) by the client (see `upstream-http`). Everything else an
//! upstream sends that the actor would hold or loop on is bounded, and a refusal names its
//! limit: the pages (1000), tools (50,000) and bytes (128 MiB) of one listing, a `nextCursor`
//! (4 KiB) (all in `actor.rs`), the `Mcp-Session-Id` (1 KiB, `session.rs`), an event of the
//! list-change stream (64 KiB, `list_changes.rs`). The `instructions` text is not refused but
//! cut to 8 KiB at a character boundary, with a note saying so (`session.rs`).

mod actor;
pub mod cancel;
mod list_changes;
mod session;

pub use actor::{
    CallTool, EndSession, FollowListChanges, GetStatus, ListTools, Listing, ToolsChanged, UpstreamActor, UpstreamSpec,
    UpstreamStatus,
};
pub use cancel::{cancel_pair, CancelHandle, CancelToken};
pub use mcp_wire::Era;
