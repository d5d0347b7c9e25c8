//! The client side of the session with one upstream: the [`Connection`] (the upstream's
//! [`UpstreamSpec`], its HTTP client and its [`SessionCell`]), the handshakes that move the
//! session between its states (`ensure_ready`, `reset`, `connect`, `probe`, `initialize`; the
//! states and transitions themselves are `session.rs`'s, with the state machine drawn there),
//! and one request under the session's rules ([`Connection::request`]: get ready if needed; on
//! a lost session or a changed era reset once and retry once). What a reply means is decided
//! by upstream-http's pure classifiers (`upstream_http::classify`); this file only acts on it.
//!
//! Every way into a handshake (a request's `ensure_ready`, `reset`, the list-change follower)
//! is bounded by the upstream's timeout, so a handshake the upstream never answers cannot hold
//! the session's handshake lock past that.
//!
//! All of `impl Connection` is here; the actor's listing and calls (`actor.rs`) and the
//! list-change follower (`list_changes.rs`) are functions over a `&Connection`. The tests
//! below run it against a scriptable upstream (the `fake-upstream` crate).

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::error::UpstreamError;
use super::session::{Handshake, RequestContext, SessionCell, SessionState, CLIENT_NAME};
use mcp_wire::jsonrpc::{self, RequestId};
use mcp_wire::{modern, version, Era};
use proxy_metrics::{Metrics, UpstreamErrorKind};
use upstream_http::classify::{self, classify_probe, interpret, Attempt};
use upstream_http::transport::{self, Envelope, Message, NotificationSink};
use upstream_http::{Network, WireError};

/// Static description of one upstream, from configuration.
#[derive(Debug, Clone)]
pub struct UpstreamSpec {
    /// Short unique name used in logs, sources and the manifest.
    pub label: String,
    pub url: String,
    /// Bearer token; never logged.
    pub token: Option<String>,
    /// Limit for one request (initialization and reading the reply included); progress
    /// notifications extend it up to four times.
    pub timeout: Duration,
    /// Replies larger than this are refused instead of buffered.
    pub max_response_bytes: usize,
    /// The era found last time (from the manifest); `Legacy` skips the discovery probe.
    pub era_hint: Option<Era>,
    /// Where failed exchanges and session resets are counted.
    pub metrics: Arc<Metrics>,
    /// TLS trust and egress proxies, the same for every upstream.
    pub network: Network,
}

/// Per-upstream connection, shared by the actor and its in-flight request futures (all on the
/// actor's thread, hence `Rc`; the session in them changes mid-flight, hence a [`SessionCell`]).
/// The rest is fixed at creation but for the request ids.
pub(super) struct Connection {
    pub(super) spec: UpstreamSpec,
    pub(super) client: transport::Client,
    pub(super) session: SessionCell,
    next_id: Cell<i64>,
}

/// What a request needs besides method and params.
#[derive(Default, Clone, Copy)]
pub(super) struct RequestOptions<'a> {
    /// `Mcp-Name` (tools/call).
    pub(super) name: Option<&'a str>,
    /// Tool input schema, for `Mcp-Param-*` (modern) headers.
    pub(super) input_schema: Option<&'a Value>,
    /// Caller's `_meta` to include.
    pub(super) meta: Option<&'a Map<String, Value>>,
    /// Receives notifications that precede the response.
    pub(super) sink: NotificationSink<'a>,
    /// Records the id of the attempt in flight (for `notifications/cancelled`).
    pub(super) current_id: Option<&'a Cell<Option<i64>>>,
    /// Adds up the body bytes of the replies read (a listing's budget across its pages).
    pub(super) received: Option<&'a Cell<usize>>,
    /// The call's W3C trace headers.
    pub(super) trace: Option<&'a mcp_wire::trace::TraceHeaders>,
    /// Modern era: `_meta` envelope keys that describe the proxy's client rather than the
    /// proxy (its `clientCapabilities`, its `logLevel`), stamped over the proxy's defaults.
    pub(super) envelope: Option<&'a Map<String, Value>>,
}

// What an upstream can make the proxy hold (it is trusted no more than a client).

/// The `Mcp-Session-Id` sent back with every request of the session.
const MAX_SESSION_ID_BYTES: usize = 1024;

/// What the discovery probe found.
struct Probed {
    era: Era,
    /// Meaningful for a modern upstream (a legacy one tells at `initialize`).
    told: Handshake,
}

impl Connection {
    pub(super) fn new(spec: UpstreamSpec) -> Self {
        let connect_timeout = spec.timeout.min(Duration::from_secs(10));
        Connection {
            client: transport::Client::new(spec.url.clone(), spec.token.clone(), connect_timeout, &spec.network),
            session: SessionCell::new(spec.era_hint),
            spec,
            next_id: Cell::new(1),
        }
    }

    /// Runs `fut` within the upstream's timeout; a timeout states the real elapsed time.
    pub(super) async fn with_timeout<T, E>(
        &self,
        fut: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, UpstreamError>
    where
        UpstreamError: From<E>,
    {
        let started = Instant::now();
        match tokio::time::timeout(self.spec.timeout, fut).await {
            Ok(r) => r.map_err(UpstreamError::from),
            Err(_) => Err(UpstreamError::Wire(WireError::Timeout {
                elapsed: started.elapsed(),
            })),
        }
    }

    pub(super) fn fresh_id(&self) -> i64 {
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        id
    }

    /// Fire-and-forget POST of a notification or a response within the current session
    /// (nothing of a session when none is ready), bounded by `timeout`; failures are not
    /// interesting to anyone.
    pub(super) async fn post_in_session(&self, message: &Value, timeout: Duration) {
        let ctx = self.session.context();
        let envelope = ctx.as_ref().map_or(Envelope::Bare, RequestContext::envelope);
        let what = Message {
            method: message.get("method").and_then(Value::as_str),
            ..Default::default()
        };
        let body = Bytes::from(message.to_string());
        let send = self.client.post(envelope, what, body, None, 64 * 1024, None);
        let _ = tokio::time::timeout(timeout.min(self.spec.timeout), send).await;
    }

    /// One request with the era and session rules: get ready if needed; on a lost session or
    /// a changed era reset once and retry once. Returns the result (raw JSON, for the caller
    /// to read as far as it needs) and the session that gave it.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        opts: RequestOptions<'_>,
    ) -> Result<(Box<RawValue>, RequestContext), UpstreamError> {
        let ctx = self.ensure_ready().await?;
        match self.attempt(&ctx, method, params, opts).await {
            Attempt::Done(r) => r.map(|v| (v, ctx)).map_err(UpstreamError::from),
            lost @ (Attempt::SessionLost(_) | Attempt::EraChanged(_)) => {
                let forget_era = matches!(lost, Attempt::EraChanged(_));
                log::info!(upstream = self.spec.label.as_str(), method = method, reprobe = forget_era; "upstream session lost, re-initializing");
                self.spec
                    .metrics
                    .upstream_error_kind(&self.spec.label, UpstreamErrorKind::SessionReset);
                let ctx = self.reset(ctx.generation, forget_era).await?;
                match self.attempt(&ctx, method, params, opts).await {
                    Attempt::Done(r) => r.map(|v| (v, ctx)).map_err(UpstreamError::from),
                    // refused again in a fresh session (and era): the refusal was about the
                    // request itself, and is reported as the upstream worded it
                    Attempt::SessionLost(refusal) | Attempt::EraChanged(refusal) => Err(refusal.into()),
                }
            }
        }
    }

    /// Sends the request once, in the session `ctx`. The body is written straight from
    /// `params` and the era's `_meta` (nothing of the call is copied).
    async fn attempt(
        &self,
        ctx: &RequestContext,
        method: &str,
        params: Option<&Value>,
        opts: RequestOptions<'_>,
    ) -> Attempt {
        let id = self.fresh_id();
        if let Some(c) = opts.current_id {
            c.set(Some(id));
        }
        let rid = RequestId::Num(id);
        let meta: Option<std::borrow::Cow<'_, Map<String, Value>>> = match ctx.era() {
            // Legacy: the caller's `_meta`, if any, into an object `params`.
            Era::Legacy => opts
                .meta
                .filter(|m| !m.is_empty() && params.is_some_and(Value::is_object))
                .map(std::borrow::Cow::Borrowed),
            // Modern: every request is stamped.
            Era::Modern => {
                let mut meta = opts.meta.cloned().unwrap_or_default();
                meta.extend(modern::request_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION")));
                if let Some(envelope) = opts.envelope {
                    meta.extend(envelope.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                Some(std::borrow::Cow::Owned(meta))
            }
        };
        let body = jsonrpc::request_text(&rid, method, params, meta.as_deref());
        let message = Message {
            method: Some(method),
            name: opts.name,
            mirror: opts.input_schema.zip(params.and_then(|p| p.get("arguments"))),
            idempotent: method != "tools/call",
            trace: opts.trace,
        };
        let reply = match self
            .client
            .post(
                ctx.envelope(),
                message,
                Bytes::from(body),
                Some(&rid),
                self.spec.max_response_bytes,
                opts.sink,
            )
            .await
        {
            Ok(r) => r,
            Err(e) => return Attempt::Done(Err(e)),
        };
        if let Some(received) = opts.received {
            received.set(received.get() + reply.bytes);
        }
        classify::attempt(ctx.era(), ctx.session.has_session_id(), reply)
    }

    /// Gets ready unless ready; returns the session the caller works in. Waiting for a
    /// handshake in flight and making one are bounded together by the upstream's timeout, so a
    /// hung handshake ends (and frees the lock for the next one) within that time, whoever
    /// started it.
    pub(super) async fn ensure_ready(&self) -> Result<RequestContext, UpstreamError> {
        if let Some(ctx) = self.session.context() {
            return Ok(ctx);
        }
        self.with_timeout(self.session.handshake_once(SessionCell::context, || self.connect()))
            .await
    }

    /// Drops the session of `generation` (and, if asked, the era) and connects anew, unless
    /// another request already did so since. Bounded like [`Self::ensure_ready`].
    async fn reset(&self, generation: u64, forget_era: bool) -> Result<RequestContext, UpstreamError> {
        let lost = |s: &SessionCell| s.lost(generation, forget_era);
        self.with_timeout(self.session.handshake_once(lost, || self.connect()))
            .await
    }

    /// Probes the era unless the hint is legacy, then initializes a legacy upstream.
    async fn connect(&self) -> Result<RequestContext, UpstreamError> {
        let legacy_hint = self.session.read(SessionState::era) == Some(Era::Legacy);
        let mut probed = if legacy_hint { None } else { Some(self.probe().await?) };
        if probed.as_ref().is_none_or(|p| p.era == Era::Legacy) {
            match self.initialize().await {
                Ok(ctx) => return Ok(ctx),
                // A legacy hint from the manifest may be stale: a refusal of `initialize`
                // can mean the upstream moved to the modern era; probe and try again.
                Err(e) if legacy_hint && e.may_mean_other_era() => {
                    self.session.forget_era();
                    let p = self.probe().await?;
                    if p.era == Era::Legacy {
                        return self.initialize().await;
                    }
                    probed = Some(p);
                }
                Err(e) => return Err(e),
            }
        }
        let told = probed.map(|p| p.told).unwrap_or_default();
        let ctx = self.session.became_modern(told);
        log::info!(upstream = self.spec.label.as_str(), era = "modern", protocol = modern::LATEST_MODERN, generation = ctx.generation; "upstream initialized");
        Ok(ctx)
    }

    /// `server/discover` with the modern envelope: which era does the upstream speak?
    async fn probe(&self) -> Result<Probed, UpstreamError> {
        let id = RequestId::Num(self.fresh_id());
        let params = json!({ "_meta": modern::request_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION")) });
        let body = jsonrpc::request(&id, "server/discover", Some(params));
        let reply = match self
            .post_handshake(Envelope::Modern, "server/discover", &body, Some(&id))
            .await
        {
            Ok(r) => r,
            // A 2xx reply that is not valid MCP (e.g. an SSE stream without an answer) is a
            // legacy server that does not know the method; transport errors propagate.
            Err(UpstreamError::Wire(WireError::InvalidReply(_))) => {
                return Ok(self.probed(Era::Legacy, Handshake::default()))
            }
            Err(e) => return Err(e),
        };
        let rpc_error = reply.rpc_error();
        let result: Option<Value> = reply.result().and_then(|r| serde_json::from_str(r.get()).ok());
        let era = classify_probe(reply.status, result.as_ref(), rpc_error.as_ref())?;
        let told = result.as_ref().map(Handshake::of).unwrap_or_default();
        Ok(self.probed(era, told))
    }

    fn probed(&self, era: Era, told: Handshake) -> Probed {
        self.session.probed(era);
        log::debug!(upstream = self.spec.label.as_str(), era = era.as_str(); "upstream era probed");
        Probed { era, told }
    }

    /// One handshake message (probe, `initialize`, `notifications/initialized`) of `method`
    /// in `envelope`; safe to resend on a stale pooled connection.
    async fn post_handshake(
        &self,
        envelope: Envelope<'_>,
        method: &str,
        message: &Value,
        expect_id: Option<&RequestId>,
    ) -> Result<transport::Reply, UpstreamError> {
        let what = Message {
            method: Some(method),
            idempotent: true,
            ..Default::default()
        };
        let body = Bytes::from(message.to_string());
        self.client
            .post(envelope, what, body, expect_id, self.spec.max_response_bytes, None)
            .await
            .map_err(UpstreamError::from)
    }

    /// `initialize` and `notifications/initialized`: a new legacy session. The session is
    /// shared by all the proxy's clients, so it declares every question the proxy can relay
    /// (elicitation, sampling, roots); each question is then checked against the capabilities
    /// of the client whose call it came on, and answered with an error at once if that client
    /// cannot take it (see `actor.rs`).
    async fn initialize(&self) -> Result<RequestContext, UpstreamError> {
        let id = RequestId::Num(self.fresh_id());
        let params = json!({
            "protocolVersion": version::LATEST_LEGACY,
            "capabilities": mcp_wire::asks::Askable::ALL.capabilities(),
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        });
        let body = jsonrpc::request(&id, "initialize", Some(params));
        let reply = self
            .post_handshake(Envelope::Bare, "initialize", &body, Some(&id))
            .await?;
        let session_id = reply.session_id.clone();
        let rpc_error = reply.rpc_error();
        let result: Value = serde_json::from_str(interpret(reply, rpc_error)?.get())
            .map_err(|e| UpstreamError::invalid_reply(format!("initialize result is not JSON ({e})")))?;
        let negotiated = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| UpstreamError::invalid_reply("initialize result has no protocolVersion".into()))?
            .to_string();
        if !version::is_supported_legacy(&negotiated) {
            return Err(UpstreamError::invalid_reply(format!(
                "the upstream negotiated protocol version {negotiated}, which this proxy does not speak"
            )));
        }
        if let Some(sid) = &session_id {
            if sid.len() > MAX_SESSION_ID_BYTES {
                return Err(UpstreamError::invalid_reply(format!(
                    "Mcp-Session-Id is {} bytes, longer than the proxy's {MAX_SESSION_ID_BYTES}-byte limit",
                    sid.len()
                )));
            }
            if sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                return Err(UpstreamError::invalid_reply(
                    "Mcp-Session-Id is not visible ASCII".into(),
                ));
            }
        }
        let told = Handshake::of(&result);

        // notifications/initialized completes the handshake.
        let note = jsonrpc::notification("notifications/initialized", None);
        let envelope = Envelope::Legacy {
            session_id: session_id.as_deref(),
            version: &negotiated,
        };
        let ack = self
            .post_handshake(envelope, "notifications/initialized", &note, None)
            .await?;
        if !(200..300).contains(&ack.status) {
            return Err(UpstreamError::Wire(WireError::Http {
                status: ack.status,
                detail: "notifications/initialized was refused".into(),
            }));
        }

        let sticky = session_id.is_some();
        let ctx = self.session.became_legacy(session_id, negotiated, told);
        log::info!(
            upstream = self.spec.label.as_str(),
            era = "legacy",
            protocol = ctx.session.protocol_version(),
            session = if sticky { "sticky" } else { "stateless" },
            generation = ctx.generation;
            "upstream initialized"
        );
        Ok(ctx)
    }
}

#[cfg(test)]
mod tests {
    //! The connection against a scriptable raw HTTP upstream (the `fake-upstream` crate), on
    //! the actix test runtime: the handshakes, a lost session and an era found anew.

    use std::time::Duration;

    use fake_upstream::{fake, http, init_result, initialized_in, json_reply, result_of, Fake, Part, Seen};
    use futures_util::future::join_all;

    use super::*;

    fn spec(url: &str, timeout: Duration, era_hint: Option<Era>) -> UpstreamSpec {
        UpstreamSpec {
            label: "u".into(),
            url: url.into(),
            token: None,
            timeout,
            max_response_bytes: 1 << 20,
            era_hint,
            metrics: Arc::default(),
            network: upstream_http::Network::direct().expect("the TLS configuration builds"),
        }
    }

    /// A legacy upstream with a sticky session (`s<n>` at the n-th `initialize`), whose
    /// `tools/list` answers `list(request, nth)` (`None`: an empty listing).
    async fn sticky(list: impl Fn(&Seen, usize) -> Option<Vec<Part>> + 'static) -> Fake {
        fake(move |req, nth| match req.rpc().as_str() {
            "server/discover" => json_reply(
                &json!({"jsonrpc": "2.0", "id": req.id(), "error": {"code": -32601, "message": "Method not found"}}),
            ),
            "initialize" => initialized_in(req, &format!("s{nth}")),
            "tools/list" => list(req, nth).unwrap_or_else(|| json_reply(&result_of(req, json!({"tools": []})))),
            _ => vec![Part::Send(http(202, "", &[], b""))],
        })
        .await
    }

    /// `tools/list` as the connection sends it: the session it was answered in.
    async fn list(conn: &Connection) -> Result<RequestContext, UpstreamError> {
        conn.request("tools/list", None, RequestOptions::default())
            .await
            .map(|(_, ctx)| ctx)
    }

    /// `mcp_proxy_upstream_errors_total{upstream="u",kind="session_reset"}`.
    fn session_resets(conn: &Connection) -> u64 {
        let empty = proxy_core::catalog::Snapshot::build(Vec::new(), 0, &Default::default());
        let text = conn.spec.metrics.encode(&empty, 0);
        let line = r#"mcp_proxy_upstream_errors_total{upstream="u",kind="session_reset"} "#;
        text.lines()
            .find_map(|l| l.strip_prefix(line))
            .map_or(0, |n| n.parse().unwrap())
    }

    fn session_not_found() -> Vec<Part> {
        vec![Part::Send(http(404, "", &[], b""))]
    }

    #[actix::test]
    async fn concurrent_first_requests_share_one_handshake() {
        let up = sticky(|_, _| None).await;
        let conn = Connection::new(spec(&up.url, Duration::from_secs(5), None));
        let all = join_all((0..8).map(|_| list(&conn))).await;
        assert_eq!((up.count("server/discover"), up.count("initialize")), (1, 1));
        assert_eq!(up.count("notifications/initialized"), 1);
        for ctx in all {
            let ctx = ctx.unwrap();
            assert_eq!((ctx.generation, ctx.era()), (1, Era::Legacy));
            assert!(ctx.session.has_session_id());
        }
        assert_eq!(up.count("tools/list"), 8);
    }

    #[actix::test]
    async fn a_lost_session_is_initialized_again_and_the_request_retried_once() {
        let up = sticky(|_, nth| (nth == 0).then(session_not_found)).await;
        let conn = Connection::new(spec(&up.url, Duration::from_secs(5), None));
        let ctx = list(&conn).await.unwrap();
        assert_eq!(ctx.generation, 2, "a new session");
        assert_eq!(
            ctx.session,
            super::super::session::Ready::Legacy {
                id: Some("s1".into()),
                version: "2025-06-18".into()
            }
        );
        assert_eq!((up.count("initialize"), up.count("tools/list")), (2, 2));
        let retried = up
            .seen
            .borrow()
            .iter()
            .filter(|s| s.rpc() == "tools/list")
            .map(|s| s.header("mcp-session-id").map(str::to_string))
            .collect::<Vec<_>>();
        assert_eq!(retried, [Some("s0".to_string()), Some("s1".to_string())]);
        assert_eq!(session_resets(&conn), 1, "counted");
    }

    #[actix::test]
    async fn a_request_refused_again_in_a_fresh_session_fails_without_a_loop() {
        let up = sticky(|_, _| Some(session_not_found())).await;
        let conn = Connection::new(spec(&up.url, Duration::from_secs(5), None));
        let err = list(&conn).await.unwrap_err();
        assert!(
            matches!(err, UpstreamError::Wire(WireError::Http { status: 404, .. })),
            "{err:?}"
        );
        assert_eq!(
            (up.count("initialize"), up.count("tools/list")),
            (2, 2),
            "one reset, one retry"
        );
        assert_eq!(session_resets(&conn), 1);
        // The retry's refusal is not taken as a loss of the new session: the next request
        // sends in it, and only its own refusal starts the next reset.
        let _ = list(&conn).await;
        let sessions: Vec<Option<String>> = up
            .seen
            .borrow()
            .iter()
            .filter(|s| s.rpc() == "tools/list")
            .map(|s| s.header("mcp-session-id").map(str::to_string))
            .collect();
        assert_eq!(sessions[2], Some("s1".to_string()), "{sessions:?}");
        assert_eq!(up.count("initialize"), 3);
    }

    #[actix::test]
    async fn a_hung_handshake_times_out_for_every_waiter_and_frees_the_lock() {
        let hung = std::rc::Rc::new(std::cell::Cell::new(true));
        let up = {
            let hung = hung.clone();
            fake(move |req, nth| match req.rpc().as_str() {
                "initialize" if hung.get() => vec![Part::Hang],
                "initialize" => initialized_in(req, &format!("s{nth}")),
                "tools/list" => json_reply(&result_of(req, json!({"tools": []}))),
                _ => vec![Part::Send(http(202, "", &[], b""))],
            })
            .await
        };
        let conn = Connection::new(spec(&up.url, Duration::from_millis(200), Some(Era::Legacy)));
        let started = Instant::now();
        let first = list(&conn);
        let waiter = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let r = list(&conn).await;
            (r, started.elapsed())
        };
        let (first, (waited, took)) = futures_util::future::join(first, waiter).await;
        for r in [first, waited] {
            assert!(
                matches!(r, Err(UpstreamError::Wire(WireError::Timeout { .. }))),
                "{r:?}"
            );
        }
        // The waiter's own timeout counts its wait: it ends 200 ms after it came, not after
        // the first one's time plus its own.
        assert!(took < Duration::from_millis(450), "{took:?}");
        assert_eq!(
            up.count("initialize"),
            2,
            "the first one's give-up freed the lock for the waiter"
        );
        hung.set(false);
        let ctx = list(&conn).await.unwrap();
        assert_eq!(
            (ctx.generation, up.count("initialize")),
            (1, 3),
            "the next request handshakes anew"
        );
    }

    #[actix::test]
    async fn a_stale_legacy_hint_is_probed_and_found_modern() {
        let up = fake(|req, _| match req.rpc().as_str() {
            "initialize" => vec![Part::Send(http(400, "", &[], b""))],
            "server/discover" => json_reply(&result_of(
                req,
                json!({"supportedVersions": [modern::LATEST_MODERN], "capabilities": {"tools": {"listChanged": true}}}),
            )),
            "tools/list" => json_reply(&result_of(req, json!({"tools": []}))),
            _ => vec![Part::Send(http(202, "", &[], b""))],
        })
        .await;
        let conn = Connection::new(spec(&up.url, Duration::from_secs(5), Some(Era::Legacy)));
        let ctx = list(&conn).await.unwrap();
        assert_eq!((ctx.era(), ctx.generation), (Era::Modern, 1));
        assert_eq!((up.count("initialize"), up.count("server/discover")), (1, 1));
        assert!(
            conn.session.read(SessionState::list_changed),
            "the probe's facts are kept"
        );
        let stamped = up
            .seen
            .borrow()
            .iter()
            .find(|s| s.rpc() == "tools/list")
            .map(|s| s.body["params"]["_meta"].is_object());
        assert_eq!(stamped, Some(true), "a modern request is stamped");
    }

    #[actix::test]
    async fn a_modern_upstream_that_refuses_like_a_legacy_one_is_probed_again() {
        let up = fake(|req, nth| match (req.rpc().as_str(), nth) {
            ("server/discover", 0) => {
                json_reply(&result_of(req, json!({"supportedVersions": [modern::LATEST_MODERN]})))
            }
            ("server/discover", _) => json_reply(
                &json!({"jsonrpc": "2.0", "id": req.id(), "error": {"code": -32601, "message": "Method not found"}}),
            ),
            ("initialize", _) => json_reply(&result_of(req, init_result(false))),
            // The first listing meets an upstream that went back to the legacy era.
            ("tools/list", 0) => vec![Part::Send(http(400, "", &[], b""))],
            ("tools/list", _) => json_reply(&result_of(req, json!({"tools": []}))),
            _ => vec![Part::Send(http(202, "", &[], b""))],
        })
        .await;
        let conn = Connection::new(spec(&up.url, Duration::from_secs(5), None));
        let ctx = list(&conn).await.unwrap();
        assert_eq!((ctx.era(), ctx.generation), (Era::Legacy, 2));
        assert_eq!(
            (
                up.count("server/discover"),
                up.count("initialize"),
                up.count("tools/list")
            ),
            (2, 1, 2)
        );
    }
}
