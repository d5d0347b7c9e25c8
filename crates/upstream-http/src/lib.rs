//! upstream-http: the HTTP client mcp-search-proxy talks to its upstream MCP servers with.
//!
//! No actor and no session state: proxy-actors' upstream actor owns one [`transport::Client`]
//! per upstream (built on the actor's own thread), keeps the session, and says what each
//! request carries of it ([`transport::Envelope`]); this crate turns that into HTTP and the
//! reply back into JSON-RPC, and names every failure precisely ([`WireError`]).
//!
//! # Layout
//!
//! - [`transport`] (with `raw.rs`): the one header builder ([`transport::headers`]) every
//!   request goes through, replies read as JSON or SSE (a stream that closes early resumed),
//!   close-delimited replies read directly (`raw.rs`, HTTP/1.1 on a connection of its own),
//!   redirects refused.
//! - [`connector`]: how a connection is opened ([`Network`]: TLS trust and egress proxies), for
//!   awc (its custom TCP connector) and for `raw.rs` alike.
//! - [`tls`]: the trusted roots (platform + `UPSTREAM_CA_FILE`), the one rustls configuration
//!   and what a failed handshake is called.
//! - [`egress`]: `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` rules and the `CONNECT` handshake, pure
//!   and unit-tested.
//! - [`error`]: [`WireError`], what went wrong on the wire (connect, TLS, the egress proxy,
//!   an HTTP status, a redirect, too large, an invalid reply, the upstream's JSON-RPC error)
//!   and whether retrying may help. What a call means (input required, unanswered,
//!   cancelled) is proxy-actors' `upstream::UpstreamError`; the advice naming a setting is the
//!   binary's (`advice`). The cancel handle and token are not here either: the client never
//!   needs them (an abandoned request is a dropped future).
//! - [`classify`]: pure reply classifiers: which era a probe's answer says, whether a reply
//!   means a lost session or a changed era, the result or a precise error. They are here, not
//!   beside the session, because of what they depend on: this crate's [`transport::Reply`]
//!   and [`WireError`] and `mcp-wire`'s JSON-RPC and era types, nothing of the session's
//!   state. The session's client code (proxy-actors' `upstream::connection`) acts on their
//!   verdict ([`classify::Attempt`]).
//!
//! # What an upstream is not trusted with (by the client)
//! Redirects are never followed, on any request (see [`transport`]); a redirect error names
//! only its `Location`'s host. Nothing of a proxy client's request passes through: every header
//! comes from [`transport::headers`]. Everything the client would hold is bounded, and a
//! refusal names its limit: a reply's size (the caller's `max_bytes`, all SSE streams of one
//! reply together, which also bounds any one line or event), the resumptions of a stream that
//! closed early (3, each waiting the server's `retry` hint of at most 10 s), a reply head read
//! directly (64 KiB, 128 header lines, a chunk-size or trailer line 4 KiB; `raw.rs`), an egress
//! proxy's `CONNECT` reply head (8 KiB, [`egress`]). An upstream's error message is repeated
//! (in errors, logs and to the model) up to 1000 characters ([`classify`]). The time of a
//! request is the caller's bound; the client bounds only connection setup (TCP, the
//! `CONNECT` tunnel, the TLS handshake). What the session and the listing hold (pages, tools,
//! cursors, the session id, instructions, list-change events) is bounded in proxy-actors (see
//! its `upstream` module).

#![forbid(unsafe_code)]

pub mod classify;
pub mod connector;
pub mod egress;
pub mod error;
mod raw;
pub mod tls;
pub mod transport;

pub use connector::{Network, NetworkError};
pub use error::WireError;
