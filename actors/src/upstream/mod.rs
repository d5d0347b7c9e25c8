//! `UpstreamActor`: one per configured upstream MCP server, speaking either protocol era.
//!
//! All per-upstream state lives on the actor's own arbiter thread, never shared across
//! threads: the awc client, the bearer token, the timeout, the protocol era and the legacy
//! session (`Mcp-Session-Id`, negotiated version). Requests run concurrently: each message
//! handler returns a future on the actor's thread, so a slow `tools/call` never blocks a
//! `tools/list` or another call.
//!
//! # Who writes the session
//! The actor's state is its `Connection`, shared (`Rc`) by the request futures its handlers
//! return. All of it is fixed at creation but the session, which changes mid-flight: at the
//! first request's handshake, when a request finds its session lost or its era changed, when
//! the list-change stream finds it gone, at `EndSession`. Its single writer is `SessionCell`
//! (`session.rs`): not `Send`, written only through the session's named transitions in
//! non-`async` steps (no borrow across an await), handshaking single-flight behind one lock
//! that the upstream's timeout bounds. Making each change a message to the actor instead
//! would queue the handshake and the retry behind the calls in its mailbox.
//!
//! # Layout
//!
//! Each file imports only files listed below it (`actor.rs`, `list_changes.rs`,
//! `connection.rs`, `session.rs`, in that order; `cancel.rs` and `error.rs` import only
//! `error.rs`), so no two import each other.
//!
//! - `actor.rs`: [`UpstreamActor`], its messages ([`ListTools`], [`CallTool`] → [`Called`],
//!   [`GetStatus`], [`EndSession`], [`FollowListChanges`]) and their handlers, and what they do
//!   over the connection: the listing (pages, limits) and the call (progress, timeouts,
//!   cancellation; a question the upstream asks is handed to `crate::asking` and its answer
//!   taken back); counting a failure by its kind.
//! - `list_changes.rs`: the list-change follower (legacy `GET` stream, modern
//!   `subscriptions/listen`), reopened with back-off; [`ToolsChanged`] goes to the catalog.
//! - `connection.rs`: the async client side of the session, all of `impl Connection`: the
//!   per-upstream [`UpstreamSpec`] and connection, the handshakes (`ensure_ready`, `reset`,
//!   `connect`, `probe`, `initialize`) and one request under the session's rules (retried once
//!   after a lost session or a changed era).
//! - `session.rs`: the session as pure state, one type (`Session`: `Unready{hint}`,
//!   `Ready(Legacy{id, version})`, `Ready(Modern)`) and its transitions, unit-tested without a
//!   runtime, and `SessionCell`, their single writer shared by the request futures (with the
//!   single-flight handshake). Its module docs hold the era and session state machine.
//! - [`cancel`]: [`CancelHandle`] / [`CancelToken`], abandoning a call with a reason
//!   ([`CancelReason`]).
//! - `error.rs`: [`UpstreamError`], what a failed exchange means for the call: a failure on
//!   the wire (`upstream_http::WireError`), input the client must give, a question left
//!   unanswered, the actor gone, a cancellation ([`CancelReason`]); its metrics kind and the
//!   [`Describe`] hook through which the service's edge words it (advice naming a setting is
//!   the edge's, never this crate's).
//!
//! The HTTP client the connection talks through (transport, TLS trust, egress proxies,
//! `WireError`, the pure reply classifiers) is the `upstream-http` crate; the trust rules
//! that concern it are in its crate docs.
//!
//! # What an upstream is not trusted with
//! Redirects are never followed and a reply's size is capped (`max_response_bytes`, all SSE
//! streams of one reply together) by the client (see `upstream-http`, which also bounds a
//! directly read reply head and repeats an upstream's error message up to 1000 characters).
//! Everything else an upstream sends that the actor would hold or loop on is bounded, and a
//! refusal names its limit: the pages (1000), tools (50,000) and bytes (128 MiB) of one
//! listing, a `nextCursor` (4 KiB) (all in `actor.rs`), the `Mcp-Session-Id` (1 KiB,
//! `connection.rs`), an event of the list-change stream (64 KiB, `list_changes.rs`). The
//! `instructions` text is not refused but cut to 8 KiB at a character boundary, with a note
//! saying so (`session.rs`).

mod actor;
pub mod cancel;
mod connection;
mod error;
mod list_changes;
mod session;

pub use actor::{
    CallTool, Called, EndSession, FollowListChanges, GetStatus, ListTools, Listing, UpstreamActor, UpstreamStatus,
    NOTIFICATION_BUFFER,
};
pub use cancel::{cancel_pair, CancelHandle, CancelToken};
pub use connection::UpstreamSpec;
pub use error::{CancelReason, Describe, UpstreamError};
pub use list_changes::ToolsChanged;
pub use mcp_wire::Era;
