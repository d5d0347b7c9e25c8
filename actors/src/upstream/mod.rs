//! `UpstreamActor`: one per configured upstream MCP server, speaking either protocol era.
//!
//! The actor owns everything that is per-upstream state: the awc client (created on the
//! actor's own arbiter thread, never shared across threads), the bearer token, the timeout,
//! the protocol era and the legacy session (`Mcp-Session-Id`, negotiated version). Requests run
//! concurrently: each message handler returns a future on the actor's thread, so a slow
//! `tools/call` never blocks a `tools/list` or another call.
//!
//! # Era and session state machine (single-flight; `generation` counts (re)initializations)
//!
//! ```text
//!  Unready ──first request──► probe: POST server/discover (2026-07-28 _meta + headers)
//!     ▲                          │ result listing 2026-07-28, or a modern 400 (-32020/-32021/-32602)
//!     │                          ├──────────────► Ready{Modern}: every request stamped, no session
//!     │                          │ anything else (400/404/405 non-modern error, -32601, -32022)
//!     │                          └──────────────► initialize + notifications/initialized
//!     │                                               └──► Ready{Legacy, session?, version}
//!     ├── timeout: the handshake (waiting for the one in flight included) took longer than the
//!     │   upstream's timeout; the lock is released and the next request handshakes anew
//!     └── reset(gen) ◄── Legacy: a request that carried the session got 404/400/"session expired"
//!                    ◄── Modern: a request got a non-modern refusal (the upstream changed era)
//!         (only if nobody else reset since `gen`; then the request is retried once)
//! ```
//! Every way into a handshake (a request's `ensure_ready`, `reset`, the list-change follower)
//! is bounded by the upstream's timeout, so a handshake the upstream never answers cannot hold
//! the init lock past that; `EndSession` does not handshake and its `DELETE` is bounded too
//! (by the upstream's timeout, and at most 2 s).
//! The era found is reported with each listing, stored in the manifest, and given back as a
//! hint at the next start (a legacy hint skips the probe). A legacy upstream whose
//! `initialize` reply carries no `Mcp-Session-Id` is stateless: no session header is ever
//! sent and a 400 is an ordinary error, never a reset.
//!
//! # Calls: progress, timeouts, cancellation
//! `notifications/progress` arriving on a call's SSE stream are forwarded to the caller as they
//! come, and each one extends the call's timeout (by one upstream timeout, up to four times
//! the timeout in all). A timeout error states how long the request really ran. If the
//! caller's receiver is dropped (its client went away), the call is abandoned: the upstream
//! stream is closed (the modern era's cancellation) and a legacy upstream is also sent
//! `notifications/cancelled` for the request.
//!
//! # What an upstream is not trusted with
//! Redirects are never followed (see [`transport`]). Everything an upstream sends that the
//! proxy would hold or loop on is bounded, and a refusal names its limit: a reply's size
//! (`max_response_bytes`, all SSE streams of one reply together), the pages (1000), tools
//! (50,000) and bytes (128 MiB) of one listing, a `nextCursor` (4 KiB), the `Mcp-Session-Id`
//! (1 KiB), an event of the list-change stream (64 KiB), a reply head read directly (64 KiB,
//! see `raw.rs`). The `instructions` text is not refused but cut to 8 KiB at a character
//! boundary, with a note saying so; an upstream's error message is repeated (in errors, logs
//! and to the model) up to 1000 characters.

mod actor;
pub mod cancel;
mod classify;
pub mod error;
mod list_changes;
mod raw;
mod session;
pub mod transport;

pub use actor::{
    CallTool, EndSession, FollowListChanges, GetStatus, ListTools, Listing, ToolsChanged, UpstreamActor, UpstreamSpec,
    UpstreamStatus,
};
pub use cancel::{cancel_pair, CancelHandle, CancelReason, CancelToken};
pub use error::UpstreamError;
pub use mcp_wire::Era;
