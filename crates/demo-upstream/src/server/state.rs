//! The state the handlers share (the fixed configuration, the tools, sessions, fault switches
//! and counters) and the checks every method passes: outage, bearer token, `Origin`, session.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::HttpRequest;
use bytes::Bytes;
use serde_json::Value;

use super::headers::{header_str, origin_is_loopback};
use super::messages::{refuse, session_not_found, Refusal};
use super::options::UpstreamOptions;
use super::wire::{INVALID_REQUEST, SERVER_ERROR, SESSION_HEADER};

/// The immutable part of the options.
#[derive(Debug)]
pub(super) struct Config {
    pub(super) stateful: bool,
    pub(super) sse: bool,
    pub(super) page_size: Option<usize>,
    pub(super) instructions: Option<String>,
    pub(super) name: String,
    pub(super) bearer_token: Option<String>,
    pub(super) list_changed: bool,
}

/// What the server has seen so far; a snapshot taken by [`UpstreamControl::stats`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// `initialize` requests answered with a result.
    pub initialize: u64,
    /// `notifications/cancelled` received.
    pub cancelled_notifications: u64,
    /// `notifications/initialized` received.
    pub initialized_notifications: u64,
    /// `tools/list` requests (one per page) answered.
    pub tools_list: u64,
    /// `tools/call` requests accepted (counted before the call delay, and for unknown tools).
    pub tools_call: u64,
    /// `ping` requests answered.
    pub ping: u64,
    /// Session ids handed out by `initialize`.
    pub sessions_minted: u64,
    /// Sessions ended by a client `DELETE`.
    pub sessions_deleted: u64,
    /// Sessions alive at snapshot time.
    pub live_sessions: usize,
    /// Requests answered 404 `Session not found`: shows a client hit an expired session.
    pub session_not_found: u64,
    /// GET streams opened (list-changed mode).
    pub get_streams: u64,
    /// Client responses received (answers to the server's pings).
    pub client_responses: u64,
    /// Requests answered 401.
    pub unauthorized: u64,
    /// Name and arguments of the latest `tools/call`.
    pub last_call: Option<(String, Value)>,
    /// Headers of the latest `tools/call`, names lower-cased, repeated values joined by ", ".
    pub last_headers: BTreeMap<String, String>,
}

/// What every handler and the `UpstreamControl` share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) config: Config,
    pub(super) state: Mutex<State>,
    /// Numbers SSE streams, so event ids are unique across the server's lifetime.
    pub(super) next_stream: AtomicU64,
    /// The list gate: open (`true`) unless a test closed it; while closed, `tools/list`
    /// answers are held (see `UpstreamControl::close_list_gate`).
    pub(super) list_gate: tokio::sync::watch::Sender<bool>,
}

/// What changes while the server runs: tools, sessions, fault switches, counters.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) tools: Vec<Value>,
    /// Tool name → position in `tools` (a real server finds its tool without a scan; with
    /// 11,739 tools the scan cost more than everything else in a call).
    pub(super) by_name: HashMap<String, usize>,
    /// Live session id → that session's counter.
    pub(super) sessions: HashMap<String, u64>,
    /// The counter of stateless mode.
    pub(super) process_counter: u64,
    pub(super) down: bool,
    pub(super) call_delay: Duration,
    pub(super) list_delay: Duration,
    /// Open GET streams (list-changed mode).
    pub(super) listeners: Vec<tokio::sync::mpsc::UnboundedSender<Bytes>>,
    pub(super) stats: Stats,
}

impl Shared {
    pub(super) fn new(opts: UpstreamOptions) -> Self {
        Shared {
            config: Config {
                stateful: opts.stateful,
                sse: opts.sse,
                page_size: opts.page_size.map(|size| size.max(1)),
                instructions: opts.instructions,
                name: opts.name,
                bearer_token: opts.bearer_token,
                list_changed: opts.list_changed,
            },
            state: Mutex::new(State {
                by_name: index_by_name(&opts.tools),
                tools: opts.tools,
                ..State::default()
            }),
            next_stream: AtomicU64::new(1),
            list_gate: tokio::sync::watch::channel(true).0,
        }
    }

    /// Returns once the list gate is open: at once unless a test closed it.
    pub(super) async fn list_gate_open(&self) {
        let mut gate = self.list_gate.subscribe();
        // The sender lives as long as `self`, so the wait cannot fail.
        let _ = gate.wait_for(|open| *open).await;
    }

    /// A panicking test thread must not wedge the server, so poisoning is ignored.
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The checks every method shares: outage, bearer token, Origin.
    pub(super) fn admit(&self, req: &HttpRequest) -> Result<(), Refusal> {
        if self.lock().down {
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_ERROR,
                "Service unavailable (simulated outage)",
            ));
        }
        if let Some(token) = &self.config.bearer_token {
            // The scheme name is case-insensitive (RFC 9110 §11.1), the token is not.
            let presented = header_str(req.headers(), header::AUTHORIZATION.as_str())
                .and_then(|value| value.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, presented)| presented.trim());
            if presented != Some(token.as_str()) {
                self.lock().stats.unauthorized += 1;
                return Err(refuse(
                    StatusCode::UNAUTHORIZED,
                    SERVER_ERROR,
                    "Unauthorized: missing or invalid bearer token",
                ));
            }
        }
        if let Some(origin) = header_str(req.headers(), header::ORIGIN.as_str()) {
            if !origin_is_loopback(origin) {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    SERVER_ERROR,
                    "Forbidden: Origin not allowed",
                ));
            }
        }
        Ok(())
    }

    /// The session a non-`initialize` message belongs to (`None` when stateless).
    pub(super) fn session_of(&self, req: &HttpRequest) -> Result<Option<String>, Refusal> {
        if !self.config.stateful {
            return Ok(None);
        }
        let Some(session) = header_str(req.headers(), SESSION_HEADER) else {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            ));
        };
        let mut state = self.lock();
        if state.sessions.contains_key(session) {
            Ok(Some(session.to_string()))
        } else {
            state.stats.session_not_found += 1;
            Err(session_not_found())
        }
    }
}

/// Position of each tool by name; the first of duplicate names wins, as the scan did.
pub(super) fn index_by_name(tools: &[Value]) -> HashMap<String, usize> {
    let mut by_name = HashMap::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            by_name.entry(name.to_string()).or_insert(i);
        }
    }
    by_name
}
