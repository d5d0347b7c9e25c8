//! The session state and its transitions (moved from mod.rs).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::actor::UpstreamSpec;
use super::classify::{classify_probe, interpret, modern_refusal_means_other_era, session_lost, Attempt};
use super::error::UpstreamError;
use super::transport::{self, Envelope, Message, NotificationSink};
use mcp_wire::jsonrpc::{self, RequestId};
use mcp_wire::{modern, version, Era};

/// Era and session state.
#[derive(Debug, Default)]
pub(super) struct Session {
    /// Known era (from a probe, or the manifest's hint before the first probe).
    pub(super) era: Option<Era>,
    pub(super) ready: bool,
    pub(super) session_id: Option<String>,
    pub(super) protocol_version: String,
    pub(super) instructions: Option<String>,
    pub(super) generation: u64,
    /// Whether the upstream advertises `tools.listChanged` (it can tell us when to re-list).
    pub(super) list_changed: bool,
}

/// Per-upstream connection state, shared by the actor and its in-flight request futures
/// (all on the actor's thread, hence `Rc`/`RefCell`; no borrow is held across an await).
pub(super) struct Connection {
    pub(super) spec: UpstreamSpec,
    pub(super) client: transport::Client,
    pub(super) session: RefCell<Session>,
    /// Serialises (re-)initialization so concurrent requests share one handshake.
    pub(super) init_lock: tokio::sync::Mutex<()>,
    pub(super) next_id: Cell<i64>,
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
}

pub(super) const CLIENT_NAME: &str = "mcp-search-proxy";

/// The `Mcp-Session-Id` sent back with every request of the session.
const MAX_SESSION_ID_BYTES: usize = 1024;
/// The upstream's `instructions`: a longer text is cut (at a character boundary) and says so.
const MAX_INSTRUCTIONS_BYTES: usize = 8192;

impl Connection {
    pub(super) fn new(spec: UpstreamSpec) -> Self {
        let connect_timeout = spec.timeout.min(Duration::from_secs(10));
        let session = Session {
            era: spec.era_hint,
            ..Default::default()
        };
        Connection {
            client: transport::Client::new(spec.url.clone(), spec.token.clone(), connect_timeout),
            spec,
            session: RefCell::new(session),
            init_lock: tokio::sync::Mutex::new(()),
            next_id: Cell::new(1),
        }
    }

    /// Runs `fut` within the upstream's timeout; a timeout states the real elapsed time.
    pub(super) async fn with_timeout<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, UpstreamError>>,
    ) -> Result<T, UpstreamError> {
        let started = Instant::now();
        match tokio::time::timeout(self.spec.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout {
                elapsed: started.elapsed(),
            }),
        }
    }

    pub(super) fn fresh_id(&self) -> i64 {
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        id
    }

    /// Fire-and-forget POST of a notification or a response within the legacy session,
    /// bounded by `timeout`; failures are not interesting to anyone.
    pub(super) async fn post_in_session(&self, message: &Value, timeout: Duration) {
        let (era, session_id, version) = {
            let s = self.session.borrow();
            (s.era, s.session_id.clone(), s.protocol_version.clone())
        };
        let envelope = match era {
            Some(Era::Modern) => Envelope::Modern,
            _ => Envelope::Legacy {
                session_id: session_id.as_deref(),
                version: &version,
            },
        };
        let what = Message {
            method: message.get("method").and_then(Value::as_str),
            ..Default::default()
        };
        let body = Bytes::from(message.to_string());
        let send = self.client.post(envelope, what, body, None, 64 * 1024, None);
        let _ = tokio::time::timeout(timeout.min(self.spec.timeout), send).await;
    }

    /// One request with the era and session rules: get ready if needed; on a lost session or
    /// a changed era reset once and retry once.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions<'_>,
    ) -> Result<Value, UpstreamError> {
        let generation = self.ensure_ready().await?;
        match self.attempt(method, params.clone(), opts).await {
            Attempt::Done(r) => r,
            lost @ (Attempt::SessionLost | Attempt::EraChanged) => {
                let forget_era = matches!(lost, Attempt::EraChanged);
                log::info!(upstream = self.spec.label.as_str(), method = method, reprobe = forget_era; "upstream session lost, re-initializing");
                self.reset(generation, forget_era).await?;
                match self.attempt(method, params, opts).await {
                    Attempt::Done(r) => r,
                    Attempt::SessionLost | Attempt::EraChanged => Err(UpstreamError::Http {
                        status: 404,
                        detail: "the upstream rejected a freshly initialized session".into(),
                    }),
                }
            }
        }
    }

    pub(super) async fn attempt(&self, method: &str, params: Option<Value>, opts: RequestOptions<'_>) -> Attempt {
        let id = self.fresh_id();
        if let Some(c) = opts.current_id {
            c.set(Some(id));
        }
        let rid = RequestId::Num(id);
        let (era, session_id, version) = {
            let s = self.session.borrow();
            (
                s.era.unwrap_or(Era::Legacy),
                s.session_id.clone(),
                s.protocol_version.clone(),
            )
        };
        let mut params = params;
        let envelope = match era {
            Era::Legacy => {
                if let (Some(meta), Some(Value::Object(p))) = (opts.meta, params.as_mut()) {
                    if !meta.is_empty() {
                        p.insert("_meta".into(), Value::Object(meta.clone()));
                    }
                }
                Envelope::Legacy {
                    session_id: session_id.as_deref(),
                    version: &version,
                }
            }
            Era::Modern => {
                let mut meta = opts.meta.cloned().unwrap_or_default();
                meta.extend(modern::request_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION")));
                let p = params.get_or_insert_with(|| json!({}));
                if let Value::Object(p) = p {
                    p.insert("_meta".into(), Value::Object(meta));
                }
                Envelope::Modern
            }
        };
        let body = jsonrpc::request(&rid, method, params);
        let message = Message {
            method: Some(method),
            name: opts.name,
            mirror: opts.input_schema.zip(body.pointer("/params/arguments")),
            idempotent: method != "tools/call",
        };
        let reply = match self
            .client
            .post(
                envelope,
                message,
                Bytes::from(body.to_string()),
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
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        match era {
            Era::Legacy if session_id.is_some() && session_lost(reply.status, rpc_error.as_ref()) => {
                Attempt::SessionLost
            }
            Era::Modern if modern_refusal_means_other_era(reply.status, rpc_error.as_ref()) => Attempt::EraChanged,
            _ => Attempt::Done(interpret(reply, rpc_error)),
        }
    }

    /// Gets ready unless ready; returns the generation the caller works with. Waiting for a
    /// handshake in flight and making one are bounded together by the upstream's timeout, so a
    /// hung handshake ends (and frees the lock for the next one) within that time, whoever
    /// started it.
    pub(super) async fn ensure_ready(&self) -> Result<u64, UpstreamError> {
        {
            let s = self.session.borrow();
            if s.ready {
                return Ok(s.generation);
            }
        }
        self.with_timeout(async {
            let _guard = self.init_lock.lock().await;
            {
                let s = self.session.borrow();
                if s.ready {
                    return Ok(s.generation);
                }
            }
            self.connect().await
        })
        .await
    }

    /// Drops the state seen at `generation` (and, if asked, the era) and connects anew,
    /// unless another request already did so since. Bounded like [`Self::ensure_ready`].
    pub(super) async fn reset(&self, generation: u64, forget_era: bool) -> Result<u64, UpstreamError> {
        self.with_timeout(async {
            let _guard = self.init_lock.lock().await;
            {
                let mut s = self.session.borrow_mut();
                if s.ready && s.generation != generation {
                    return Ok(s.generation);
                }
                s.ready = false;
                s.session_id = None;
                if forget_era {
                    s.era = None;
                }
            }
            self.connect().await
        })
        .await
    }

    /// Probes the era when unknown (a legacy hint skips the probe), then initializes.
    pub(super) async fn connect(&self) -> Result<u64, UpstreamError> {
        let known = self.session.borrow().era;
        let era = match known {
            Some(Era::Legacy) => Era::Legacy,
            _ => self.probe().await?,
        };
        if era == Era::Legacy {
            match self.initialize().await {
                Ok(g) => return Ok(g),
                // A legacy hint from the manifest may be stale: a refusal of `initialize`
                // can mean the upstream moved to the modern era; probe and try again.
                Err(e) if known == Some(Era::Legacy) && e.may_mean_other_era() => {
                    self.session.borrow_mut().era = None;
                    if self.probe().await? == Era::Legacy {
                        return self.initialize().await;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let mut s = self.session.borrow_mut();
        s.generation += 1;
        s.ready = true;
        s.session_id = None;
        s.protocol_version = modern::LATEST_MODERN.to_string();
        log::info!(upstream = self.spec.label.as_str(), era = "modern", protocol = modern::LATEST_MODERN, generation = s.generation; "upstream initialized");
        Ok(s.generation)
    }

    /// `server/discover` with the modern envelope: which era does the upstream speak?
    pub(super) async fn probe(&self) -> Result<Era, UpstreamError> {
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
            Err(UpstreamError::InvalidReply(_)) => return Ok(self.found(Era::Legacy, None, false)),
            Err(e) => return Err(e),
        };
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        let era = classify_probe(reply.status, reply.message.as_ref(), rpc_error.as_ref())?;
        let result = reply.message.as_ref().and_then(|m| m.get("result"));
        let instructions = result
            .and_then(|r| r.get("instructions"))
            .and_then(Value::as_str)
            .map(capped_instructions);
        let list_changed = result.is_some_and(advertises_list_changed);
        Ok(self.found(era, instructions, list_changed))
    }

    /// One handshake message (probe, `initialize`, `notifications/initialized`) of `method`
    /// in `envelope`; safe to resend on a stale pooled connection.
    pub(super) async fn post_handshake(
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
    }

    pub(super) fn found(&self, era: Era, instructions: Option<String>, list_changed: bool) -> Era {
        let mut s = self.session.borrow_mut();
        s.era = Some(era);
        if era == Era::Modern {
            s.instructions = instructions;
            s.list_changed = list_changed;
        }
        log::debug!(upstream = self.spec.label.as_str(), era = era.as_str(); "upstream era probed");
        era
    }

    pub(super) async fn initialize(&self) -> Result<u64, UpstreamError> {
        let id = RequestId::Num(self.fresh_id());
        let params = json!({
            "protocolVersion": version::LATEST_LEGACY,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        });
        let body = jsonrpc::request(&id, "initialize", Some(params));
        let reply = self
            .post_handshake(Envelope::Bare, "initialize", &body, Some(&id))
            .await?;
        let session_id = reply.session_id.clone();
        let rpc_error = reply.message.as_ref().and_then(transport::rpc_error_of);
        let result = interpret(reply, rpc_error)?;
        let negotiated = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| UpstreamError::InvalidReply("initialize result has no protocolVersion".into()))?
            .to_string();
        if !version::is_supported_legacy(&negotiated) {
            return Err(UpstreamError::InvalidReply(format!(
                "the upstream negotiated protocol version {negotiated}, which this proxy does not speak"
            )));
        }
        if let Some(sid) = &session_id {
            if sid.len() > MAX_SESSION_ID_BYTES {
                return Err(UpstreamError::InvalidReply(format!(
                    "Mcp-Session-Id is {} bytes, longer than the proxy's {MAX_SESSION_ID_BYTES}-byte limit",
                    sid.len()
                )));
            }
            if sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                return Err(UpstreamError::InvalidReply(
                    "Mcp-Session-Id is not visible ASCII".into(),
                ));
            }
        }
        let instructions = result
            .get("instructions")
            .and_then(Value::as_str)
            .map(capped_instructions);
        let list_changed = advertises_list_changed(&result);

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
            return Err(UpstreamError::Http {
                status: ack.status,
                detail: "notifications/initialized was refused".into(),
            });
        }

        let mut s = self.session.borrow_mut();
        s.era = Some(Era::Legacy);
        s.generation += 1;
        s.ready = true;
        s.session_id = session_id;
        s.protocol_version = negotiated;
        s.instructions = instructions;
        s.list_changed = list_changed;
        log::info!(
            upstream = self.spec.label.as_str(),
            era = "legacy",
            protocol = s.protocol_version.as_str(),
            session = if s.session_id.is_some() { "sticky" } else { "stateless" },
            generation = s.generation;
            "upstream initialized"
        );
        Ok(s.generation)
    }
}

/// The upstream's `instructions`, cut at a character boundary to at most
/// [`MAX_INSTRUCTIONS_BYTES`] (plus a note saying so): long instructions are kept usable rather
/// than refused, since an upstream is not broken for being verbose.
fn capped_instructions(text: &str) -> String {
    if text.len() <= MAX_INSTRUCTIONS_BYTES {
        return text.to_string();
    }
    let mut end = MAX_INSTRUCTIONS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[truncated by {CLIENT_NAME}: the upstream's instructions exceed {MAX_INSTRUCTIONS_BYTES} bytes]",
        &text[..end]
    )
}

/// Whether an initialize/discover result advertises `capabilities.tools.listChanged`.
fn advertises_list_changed(result: &Value) -> bool {
    result
        .pointer("/capabilities/tools/listChanged")
        .and_then(Value::as_bool)
        == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn long_instructions_are_cut_at_a_character_boundary_and_say_so() {
        assert_eq!(capped_instructions("Use the tools."), "Use the tools.");
        let long = "é".repeat(MAX_INSTRUCTIONS_BYTES); // two bytes each
        let cut = capped_instructions(&long);
        let (kept, note) = cut.split_once('\n').unwrap();
        assert_eq!(kept.len(), MAX_INSTRUCTIONS_BYTES);
        assert!(kept.chars().all(|c| c == 'é'));
        assert!(note.contains("truncated") && note.contains("8192 bytes"), "{note}");
        let odd = format!("a{}", "é".repeat(MAX_INSTRUCTIONS_BYTES));
        let (kept, _) = capped_instructions(&odd)
            .split_once('\n')
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .unwrap();
        assert_eq!(kept.len(), MAX_INSTRUCTIONS_BYTES - 1, "never half a character");
    }
}
