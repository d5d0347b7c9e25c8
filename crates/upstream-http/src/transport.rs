//! The HTTP side of talking to an upstream: POST a JSON-RPC message and read the reply as JSON
//! or as an SSE stream (size cap enforced, a stream that closes early resumed), open a
//! list-change stream, end a session. No session logic here: the session layer says what a
//! request carries of the session ([`Envelope`]) and what the request is ([`Request`],
//! [`Message`]).
//!
//! Header hygiene: [`headers`] is the one header builder. Every request an upstream actor sends
//! (the POST of requests, notifications and responses, the session `DELETE`, the legacy `GET`
//! list-change stream, the modern `subscriptions/listen` POST, the SSE resumption `GET`) goes
//! through `Client::send`, which takes its headers from [`headers`] and nowhere else: it alone
//! decides `Authorization`, `Mcp-Session-Id`, `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`, `traceparent`/`tracestate` (a relayed call's own, see
//! `mcp_wire::trace`), `Accept`, `Content-Type` and `Last-Event-ID`. Below it, only
//! HTTP's own are added (by awc: `Host`, the body's framing, `Connection` as the pool needs,
//! `Date`; by `raw.rs`: `Host`, `Connection: close`, `Content-Length`). Nothing of a client's
//! request passes through.
//!
//! Redirects are never followed, on any request (awc's redirect middleware is off): following
//! one replayed a `tools/call` (arguments, session id, bearer token) to another host and let a
//! redirected `tools/list` replace an upstream's catalog with another server's tools. A 3xx
//! reply is [`WireError::Redirect`], which names only the `Location`'s host (the full
//! URL may carry secrets).
//!
//! Connections: `http://` and `https://` (rustls, the trust of `tls.rs`), directly or through
//! an egress proxy's `CONNECT` tunnel, as `connector.rs` decides for awc (its custom TCP
//! connector) and for `raw.rs` alike. A failed handshake or a proxy's refusal keeps its
//! precise [`WireError`] kind (`send_error`), so the operator reads *certificate not
//! trusted* or *proxy refused with 407*, not "connection failed".
//!
//! Close-delimited replies (HTTP/1.1, no `Content-Length`, not chunked): awc reads them as
//! empty (see `raw.rs` for why). `Client::exchange` notices such a reply and from then on
//! reads that upstream over `raw.rs`; the reply that revealed it is fetched again there
//! when the request is idempotent, and is a precise error otherwise (a `tools/call` is never
//! sent twice).
//!
//! A reply is read one level deep ([`RpcMessage`]): its envelope (`id`, `method`, `error`)
//! parsed, its `result` kept as raw JSON text. Whoever needs the result reads it (a listing
//! page straight into definitions, a handshake into a value); a relayed tool result is not
//! parsed into a tree at all (see `mcp_wire::raw`).

use std::borrow::Cow;
use std::cell::Cell;
use std::time::{Duration, Instant};

use awc::error::PayloadError;
use awc::http::header::{self, HeaderMap};
use awc::http::{Method, Version};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::connector::{self, EgressConnector, Network};
use crate::error::WireError;
use crate::raw;
use mcp_wire::jsonrpc::{RequestId, RpcError};
use mcp_wire::{modern, sse};

/// What a request carries of the session, as the session layer copied it out of the session
/// (see proxy-actors' `upstream::session::RequestContext`). The session decides *which*
/// envelope a request gets; the headers it becomes are decided by [`headers`] alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope<'a> {
    /// Nothing of a session: `initialize`, before the era and any session exist.
    Bare,
    /// The legacy era: the negotiated `MCP-Protocol-Version`, and the `Mcp-Session-Id` of a
    /// stateful upstream (`None`: a stateless one).
    Legacy {
        session_id: Option<&'a str>,
        version: &'a str,
    },
    /// The modern era (and the discovery probe, which speaks it): the modern
    /// `MCP-Protocol-Version` on every request, and no session.
    Modern,
}

/// What a POSTed JSON-RPC message says about itself, for its headers and its resending.
#[derive(Debug, Default, Clone, Copy)]
pub struct Message<'a> {
    /// The message's method (`Mcp-Method` in the modern era); `None` for a response.
    pub method: Option<&'a str>,
    /// The tool called (`Mcp-Name` in the modern era), as named; [`headers`] encodes it.
    pub name: Option<&'a str>,
    /// The tool's input schema and the call's arguments: the modern era mirrors the arguments
    /// the schema marks with `x-mcp-header` into `Mcp-Param-*` headers.
    pub mirror: Option<(&'a Value, &'a Value)>,
    /// Safe to send twice: when a pooled keep-alive connection turns out to have been closed by
    /// the upstream (no reply at all), the message is sent once more on a fresh connection.
    pub idempotent: bool,
    /// W3C trace context of a relayed call (`traceparent`, `tracestate`).
    pub trace: Option<&'a mcp_wire::trace::TraceHeaders>,
}

/// Which request goes upstream: its HTTP method and the headers of its kind.
#[derive(Debug, Clone, Copy)]
pub enum Request<'a> {
    /// POST of a JSON-RPC request, notification or response (also the modern
    /// `subscriptions/listen`, whose reply is a stream).
    Post(Message<'a>),
    /// GET of the legacy list-change stream.
    ListenStream,
    /// GET resuming a reply's SSE stream after the event `last_event_id`.
    Resume { last_event_id: &'a str },
    /// DELETE of the legacy session.
    EndSession,
}

impl Request<'_> {
    fn method(&self) -> Method {
        match self {
            Request::Post(_) => Method::POST,
            Request::ListenStream | Request::Resume { .. } => Method::GET,
            Request::EndSession => Method::DELETE,
        }
    }

    fn idempotent(&self) -> bool {
        match self {
            Request::Post(m) => m.idempotent,
            Request::ListenStream | Request::Resume { .. } | Request::EndSession => true,
        }
    }
}

/// Header names and values of one request.
pub type HeaderList = Vec<(Cow<'static, str>, String)>;

/// The headers of one request to the upstream: the only place that decides which headers go
/// upstream (see the module docs). `bearer` is the upstream's configured token.
pub fn headers(bearer: Option<&str>, envelope: Envelope<'_>, request: &Request<'_>) -> HeaderList {
    let mut out = HeaderList::with_capacity(8);
    if let Some(token) = bearer {
        out.push(("Authorization".into(), format!("Bearer {token}")));
    }
    match envelope {
        Envelope::Bare => {}
        Envelope::Legacy { session_id, version } => {
            if let Some(sid) = session_id {
                out.push(("Mcp-Session-Id".into(), sid.to_string()));
            }
            out.push(("MCP-Protocol-Version".into(), version.to_string()));
        }
        Envelope::Modern => out.push(("MCP-Protocol-Version".into(), modern::LATEST_MODERN.to_string())),
    }
    match request {
        Request::Post(message) => {
            if envelope == Envelope::Modern {
                if let Some(method) = message.method {
                    out.push(("Mcp-Method".into(), method.to_string()));
                }
                if let Some(name) = message.name {
                    out.push(("Mcp-Name".into(), modern::encode_header_value(name)));
                }
                if let Some((schema, arguments)) = message.mirror {
                    out.extend(
                        modern::param_headers(schema, arguments)
                            .into_iter()
                            .map(|(k, v)| (k.into(), v)),
                    );
                }
            }
            if let Some(trace) = message.trace {
                out.push((mcp_wire::trace::TRACEPARENT.into(), trace.traceparent.clone()));
                if let Some(state) = &trace.tracestate {
                    out.push((mcp_wire::trace::TRACESTATE.into(), state.clone()));
                }
            }
            out.push(("Content-Type".into(), "application/json".into()));
            out.push(("Accept".into(), "application/json, text/event-stream".into()));
        }
        Request::ListenStream => out.push(("Accept".into(), "text/event-stream".into())),
        Request::Resume { last_event_id } => {
            out.push(("Accept".into(), "text/event-stream".into()));
            out.push(("Last-Event-ID".into(), last_event_id.to_string()));
        }
        Request::EndSession => {}
    }
    out
}

/// The upstream's HTTP client: awc (pooled keep-alive connections), or one connection per
/// request once the upstream showed it sends close-delimited replies.
pub struct Client {
    awc: awc::Client,
    url: String,
    /// The upstream's bearer token (`Authorization`); never logged.
    bearer: Option<String>,
    connect_timeout: Duration,
    /// TLS trust and egress proxies (for the direct reader; awc's connector has its own copy).
    network: Network,
    /// Set for good once a reply came close-delimited (see the module docs).
    close_delimited: Cell<bool>,
}

/// One request, as [`Client::send`] builds it.
struct Outgoing {
    method: Method,
    headers: HeaderList,
    body: Option<Bytes>,
    idempotent: bool,
    /// Whether the reply's body matters (not for a notification's 202, nor a DELETE's reply).
    need_body: bool,
}

/// A reply's status and headers; its body follows as a stream.
pub struct Incoming {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: raw::Body,
}

impl Incoming {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the reply is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
    }
}

/// What awc made of a reply.
enum AwcOutcome {
    Reply(Incoming),
    /// A close-delimited reply whose body awc dropped.
    BodyDropped,
}

const BODY_DROPPED: &str = "the reply had neither Content-Length nor chunked encoding (a body ended by closing the connection), which the HTTP client read as empty; the request was not sent again (it is not idempotent); later requests to this upstream read such replies";

impl Client {
    /// Builds the client of one upstream actor (on its thread): the upstream at `url`, with its
    /// bearer token. The overall per-request timeout is enforced by the caller (it must also
    /// cover reading a streamed body), so awc's own timeout only guards connection setup.
    ///
    /// Connections go through `network`'s egress proxy when its rules say so (awc's custom
    /// TCP connector, see `connector.rs`), and `https://` ones are TLS with its trust; the
    /// connect timeout covers the TCP connection with the proxy's `CONNECT`, and again the
    /// TLS handshake.
    pub fn new(url: String, bearer: Option<String>, connect_timeout: Duration, network: &Network) -> Self {
        let awc = awc::Client::builder()
            .disable_timeout()
            .disable_redirects()
            .connector(
                awc::Connector::new()
                    .connector(EgressConnector::new(network.egress.clone(), connect_timeout))
                    .rustls_0_23(network.trust.config.clone())
                    // Past the egress connector's own bound, so a silent proxy is named.
                    .timeout(connect_timeout + Duration::from_secs(1))
                    .handshake_timeout(connect_timeout)
                    .conn_keep_alive(POOL_IDLE),
            )
            .finish();
        Client {
            awc,
            url,
            bearer,
            connect_timeout,
            network: network.clone(),
            close_delimited: Cell::new(false),
        }
    }

    /// Whether this upstream's replies are read one connection per request.
    pub fn reads_close_delimited(&self) -> bool {
        self.close_delimited.get()
    }

    /// Sends `request` in `envelope`: every request to the upstream passes here, and its headers
    /// come from [`headers`] only. `need_body`: whether the reply's body matters.
    async fn send(
        &self,
        envelope: Envelope<'_>,
        request: Request<'_>,
        body: Option<Bytes>,
        need_body: bool,
    ) -> Result<Incoming, WireError> {
        self.exchange(Outgoing {
            method: request.method(),
            headers: headers(self.bearer.as_deref(), envelope, &request),
            body,
            idempotent: request.idempotent(),
            need_body,
        })
        .await
    }

    async fn exchange(&self, req: Outgoing) -> Result<Incoming, WireError> {
        if !self.close_delimited.get() {
            match self.send_awc(&req).await? {
                AwcOutcome::Reply(r) => return Ok(r),
                AwcOutcome::BodyDropped => {
                    self.close_delimited.set(true);
                    log::warn!(url_host = host_of(&self.url).unwrap_or_default().as_str(); "upstream replies are close-delimited: reading them over one connection per request");
                    if !req.idempotent {
                        return Err(WireError::InvalidReply(BODY_DROPPED.into()));
                    }
                }
            }
        }
        let started = Instant::now();
        let (status, headers, body) = raw::exchange(
            &req.method,
            &self.url,
            &req.headers,
            req.body.as_ref(),
            self.connect_timeout,
            &self.network,
        )
        .await
        .map_err(|e| match e {
            WireError::Timeout { .. } => WireError::Timeout {
                elapsed: started.elapsed(),
            },
            e => e,
        })?;
        check_redirect(status, &headers, &self.url)?;
        Ok(Incoming { status, headers, body })
    }

    async fn send_awc(&self, req: &Outgoing) -> Result<AwcOutcome, WireError> {
        let started = Instant::now();
        let build = || {
            let mut r = self.awc.request(req.method.clone(), self.url.as_str());
            for (k, v) in &req.headers {
                r = r.insert_header((k.as_ref(), v.as_str()));
            }
            r
        };
        let send = |r: awc::ClientRequest| async {
            match &req.body {
                Some(b) => r.send_body(b.clone()).await,
                None => r.send().await,
            }
        };
        // An upstream closes idle keep-alive connections on its own schedule; one closed just as
        // it is reused yields no reply at all (awc: `Disconnected`). Such a message never reached
        // the upstream, so an idempotent one is sent again; a `tools/call` is not (it reports
        // the error).
        let resp = match send(build()).await {
            Err(awc::error::SendRequestError::Connect(awc::error::ConnectError::Disconnected)) if req.idempotent => {
                send(build()).await
            }
            r => r,
        }
        .map_err(|e| send_error(e, started, &self.url))?;
        let status = resp.status().as_u16();
        check_redirect(status, resp.headers(), &self.url)?;
        if req.need_body && body_dropped(&req.method, resp.version(), status, resp.headers()) {
            return Ok(AwcOutcome::BodyDropped);
        }
        let headers = resp.headers().clone();
        Ok(AwcOutcome::Reply(Incoming {
            status,
            headers,
            body: Box::pin(resp),
        }))
    }
}

/// Whether awc read an HTTP/1.1 reply as body-less although it has a close-delimited body:
/// no `Content-Length`, not chunked, and a status that carries a body. (actix-http reads an
/// HTTP/1.0 reply of that kind to the end of the connection, as it should.)
fn body_dropped(method: &Method, version: Version, status: u16, headers: &HeaderMap) -> bool {
    version == Version::HTTP_11
        && *method != Method::HEAD
        && !(100..200).contains(&status)
        && status != 204
        && status != 304
        && !headers.contains_key(header::CONTENT_LENGTH)
        && !headers.contains_key(header::TRANSFER_ENCODING)
}

/// A 3xx reply is an error: redirects are never followed.
fn check_redirect(status: u16, headers: &HeaderMap, url: &str) -> Result<(), WireError> {
    if !(300..400).contains(&status) {
        return Ok(());
    }
    let location = headers.get(header::LOCATION).and_then(|v| v.to_str().ok());
    // A relative Location points at the upstream's own host.
    let location_host =
        location.and_then(|l| host_of(l).or_else(|| l.starts_with('/').then(|| host_of(url)).flatten()));
    Err(WireError::Redirect { status, location_host })
}

/// The host of an absolute URL (never its user info, path or query), at most 255 characters.
fn host_of(url: &str) -> Option<String> {
    let uri: awc::http::Uri = url.parse().ok()?;
    let host = uri.host()?;
    (!host.is_empty() && host.len() <= 255).then(|| host.to_string())
}

/// The parts of an upstream reply the session layer needs.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// `Mcp-Session-Id` of the reply, when present.
    pub session_id: Option<String>,
    /// The JSON-RPC response whose id matched the request (absent for notifications), or the
    /// excerpt of an error status's body that is not a JSON-RPC message.
    pub message: Option<Body>,
    /// Body bytes read (all streams of the reply, resumptions included).
    pub bytes: usize,
}

/// What a reply's body held.
#[derive(Debug)]
pub enum Body {
    Rpc(RpcMessage),
    /// An error status's body that is not a JSON-RPC message: a readable excerpt of it.
    Text(String),
}

impl Reply {
    /// The JSON-RPC error the reply carries, if any.
    pub fn rpc_error(&self) -> Option<RpcError> {
        match &self.message {
            Some(Body::Rpc(m)) => m.rpc_error(),
            _ => None,
        }
    }

    /// The response's `result`, as raw JSON.
    pub fn result(&self) -> Option<&RawValue> {
        match &self.message {
            Some(Body::Rpc(m)) => m.result.as_deref(),
            _ => None,
        }
    }
}

/// A JSON-RPC message from an upstream, read one level deep: the envelope parsed, `result`
/// kept as raw JSON text (a relayed result is never parsed into a tree), `params` not kept
/// (a notification is handed on as the value it was).
#[derive(Debug, Default, Deserialize)]
pub struct RpcMessage {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    #[serde(default)]
    pub error: Option<Value>,
}

impl RpcMessage {
    /// Reads a JSON-RPC message; anything but a JSON object is an error.
    pub(crate) fn parse(bytes: &[u8]) -> Result<RpcMessage, String> {
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => serde_json::from_slice(bytes).map_err(|e| e.to_string()),
            Some(_) => Err("not a JSON object".into()),
            None => Err("empty".into()),
        }
    }

    /// The message's JSON-RPC error object, if it carries one.
    pub fn rpc_error(&self) -> Option<RpcError> {
        self.error.as_ref().and_then(|e| RpcError::deserialize(e).ok())
    }

    /// Whether it is a response (a result or an error) rather than a request or notification.
    fn is_response(&self) -> bool {
        self.result.is_some() || self.error.is_some()
    }

    /// Its id, when it is a valid request id.
    fn request_id(&self) -> Option<RequestId> {
        self.id.as_ref().and_then(|v| RequestId::deserialize(v).ok())
    }
}

/// Sink for the messages that arrive on a request's SSE stream before its response:
/// notifications (`notifications/progress`, `notifications/message`) and requests from the
/// server (`elicitation/create`, `roots/list`, `ping`, …), which the sink's owner must answer.
pub type NotificationSink<'a> = Option<&'a dyn Fn(Value)>;

impl Client {
    /// POSTs one JSON-RPC message (`message` says what it is; `body` is the message itself) in
    /// `envelope` and reads its reply.
    ///
    /// `expect_id` is the id of a request (whose response is awaited) or `None` for a
    /// notification or a response (any 2xx, normally 202, is success). HTTP error statuses are
    /// returned as `Ok(Reply)` with the status set and the JSON-RPC error body (if any) in
    /// `message`, so the session layer can tell "session expired" from other failures.
    /// `max_bytes` caps the body (all of its SSE streams together).
    pub async fn post(
        &self,
        envelope: Envelope<'_>,
        message: Message<'_>,
        body: Bytes,
        expect_id: Option<&RequestId>,
        max_bytes: usize,
        on_notification: NotificationSink<'_>,
    ) -> Result<Reply, WireError> {
        let mut resp = self
            .send(envelope, Request::Post(message), Some(body), expect_id.is_some())
            .await?;
        let status = resp.status;
        let session_id = resp.header("mcp-session-id").map(str::to_string);

        if resp.is_sse() {
            let mut seen = 0usize;
            let mut read = read_sse(&mut resp.body, expect_id, max_bytes, &mut seen, on_notification).await?;
            // 2025-11-25 (SEP-1699): a server may close the stream before the response, after an
            // event id and a `retry` hint; the client resumes with GET + Last-Event-ID.
            let mut resumptions = 0;
            while expect_id.is_some() && read.message.is_none() && (200..300).contains(&status) {
                let Some(last_id) = read.last_event_id.clone() else {
                    break;
                };
                if resumptions == MAX_RESUMPTIONS {
                    break;
                }
                resumptions += 1;
                let wait = Duration::from_millis(read.retry_ms.unwrap_or(DEFAULT_RETRY_MS).min(MAX_RETRY_MS));
                tokio::time::sleep(wait).await;
                let resume = Request::Resume {
                    last_event_id: &last_id,
                };
                let mut again = self.send(envelope, resume, None, true).await?;
                if !(200..300).contains(&again.status) {
                    break;
                }
                let next = read_sse(&mut again.body, expect_id, max_bytes, &mut seen, on_notification).await?;
                read = SseRead {
                    last_event_id: next.last_event_id.or(read.last_event_id),
                    retry_ms: next.retry_ms.or(read.retry_ms),
                    message: next.message,
                };
            }
            if expect_id.is_some() && read.message.is_none() && (200..300).contains(&status) {
                return Err(WireError::InvalidReply(
                    "the SSE stream ended without a response to the request".into(),
                ));
            }
            return Ok(Reply {
                status,
                session_id,
                message: read.message.map(Body::Rpc),
                bytes: seen,
            });
        }

        let declared = resp.header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > max_bytes as u64) {
            return Err(WireError::TooLarge { limit: max_bytes });
        }
        let bytes = read_body(&mut resp.body, max_bytes).await?;
        let message = if bytes.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            match RpcMessage::parse(&bytes) {
                Ok(m) => Some(Body::Rpc(m)),
                Err(e) if (200..300).contains(&status) && expect_id.is_some() => {
                    return Err(WireError::InvalidReply(format!("body is not a JSON-RPC message ({e})")))
                }
                // An error status with another body: keep a readable excerpt for the message.
                Err(_) => Some(Body::Text(excerpt(&bytes))),
            }
        };
        if expect_id.is_some() && message.is_none() && (200..300).contains(&status) {
            return Err(WireError::InvalidReply(format!("empty body with HTTP {status}")));
        }
        Ok(Reply {
            status,
            session_id,
            message,
            bytes: bytes.len(),
        })
    }

    /// Opens a list-change stream: the legacy GET (`post` `None`), or the modern
    /// `subscriptions/listen` POST (`post` is that request: what it is and its body). The
    /// caller reads the stream.
    pub async fn open_stream(
        &self,
        envelope: Envelope<'_>,
        post: Option<(Message<'_>, Bytes)>,
    ) -> Result<Incoming, WireError> {
        match post {
            Some((message, body)) => self.send(envelope, Request::Post(message), Some(body), true).await,
            None => self.send(envelope, Request::ListenStream, None, true).await,
        }
    }

    /// `DELETE` of a legacy session (`envelope` names it); the reply's status.
    pub async fn end_session(&self, envelope: Envelope<'_>) -> Result<u16, WireError> {
        let resp = self.send(envelope, Request::EndSession, None, false).await?;
        Ok(resp.status)
    }
}

/// Reads a whole (non-SSE) body, at most `max_bytes`.
async fn read_body(body: &mut raw::Body, max_bytes: usize) -> Result<BytesMut, WireError> {
    let mut out = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| payload_error(e, max_bytes))?;
        if out.len() + chunk.len() > max_bytes {
            return Err(WireError::TooLarge { limit: max_bytes });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// What one SSE stream yielded: the response (if it came) and what resuming needs.
struct SseRead {
    message: Option<RpcMessage>,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

/// Resuming a stream that closed before its response: at most this many times, waiting the
/// server's `retry` hint (default 1 s, at most 10 s) before each.
const MAX_RESUMPTIONS: usize = 3;
const DEFAULT_RETRY_MS: u64 = 1000;
const MAX_RETRY_MS: u64 = 10_000;

/// Reads one SSE stream until the response to `expect_id` (or its end). `seen` counts the bytes
/// of all streams of one reply against `max_bytes`, which also bounds any one line or event.
async fn read_sse(
    stream: &mut raw::Body,
    expect_id: Option<&RequestId>,
    max_bytes: usize,
    seen: &mut usize,
    on_notification: NotificationSink<'_>,
) -> Result<SseRead, WireError> {
    let mut decoder = sse::Decoder::new();
    let mut out = SseRead {
        message: None,
        last_event_id: None,
        retry_ms: None,
    };
    let handle = |ev: sse::Event, out: &mut SseRead| -> bool {
        if let Some(id) = ev.id.as_ref().filter(|i| !i.is_empty()) {
            out.last_event_id = Some(id.clone());
        }
        if ev.retry_ms.is_some() {
            out.retry_ms = ev.retry_ms;
        }
        if ev.data.trim().is_empty() {
            return false; // priming event or keep-alive
        }
        let Ok(msg) = RpcMessage::parse(ev.data.as_bytes()) else {
            return false;
        };
        if msg.is_response() {
            if expect_id.is_none() || msg.request_id().as_ref() == expect_id {
                out.message = Some(msg);
                return true;
            }
            return false;
        }
        // A notification, or a server-to-client request (`elicitation/create`, `roots/list`,
        // `ping`, …), goes on as the value it was (read again whole: it is small); the sink's
        // owner answers a request (a call answers each at once, see proxy-actors' upstream).
        if let (Some(sink), Ok(note)) = (on_notification, serde_json::from_str::<Value>(&ev.data)) {
            sink(note);
        }
        false
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| payload_error(e, max_bytes))?;
        *seen += chunk.len();
        if *seen > max_bytes {
            return Err(WireError::TooLarge { limit: max_bytes });
        }
        for ev in decoder.feed(&chunk) {
            if handle(ev, &mut out) {
                return Ok(out);
            }
        }
        if decoder.pending_len() > max_bytes {
            return Err(WireError::TooLarge { limit: max_bytes });
        }
    }
    if let Some(ev) = decoder.finish() {
        handle(ev, &mut out);
    }
    Ok(out)
}

/// A short human-readable excerpt of an upstream body for error messages.
pub fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.chars().count() > 200 {
        let mut out: String = s.chars().take(200).collect();
        out.push('…');
        out
    } else {
        s.to_string()
    }
}

/// An awc failure as an [`WireError`]: an egress proxy's refusal and a TLS handshake's
/// failure keep their precise kinds (see `connector::classify_io`).
fn send_error(e: awc::error::SendRequestError, started: Instant, url: &str) -> WireError {
    use awc::error::{ConnectError, SendRequestError as E};
    match e {
        E::Timeout => WireError::Timeout {
            elapsed: started.elapsed(),
        },
        E::Connect(ConnectError::Io(io)) => connector::classify_io(&io, &host_of(url).unwrap_or_default())
            .unwrap_or_else(|| WireError::Connect(io.to_string())),
        E::Connect(ConnectError::Timeout) => {
            WireError::Connect("timed out while connecting (TCP, egress proxy tunnel or TLS handshake)".into())
        }
        E::Connect(c) => WireError::Connect(c.to_string()),
        other => WireError::Connect(other.to_string()),
    }
}

fn payload_error(e: PayloadError, max_bytes: usize) -> WireError {
    match e {
        PayloadError::Overflow => WireError::TooLarge { limit: max_bytes },
        other => WireError::InvalidReply(format!("reading the body failed: {other}")),
    }
}

/// How long an idle pooled connection is reused: shorter than the 5 s after which uvicorn,
/// actix-web and Node close idle keep-alive connections, so the proxy drops them first (awc's
/// default, 15 s, let a request race the upstream's close and fail with no reply).
const POOL_IDLE: Duration = Duration::from_secs(4);

#[cfg(test)]
mod tests {
    use super::*;
    use awc::http::header::HeaderValue;

    #[test]
    fn redirects_name_only_the_location_host() {
        let mut h = HeaderMap::new();
        assert!(check_redirect(200, &h, "http://up:1/mcp").is_ok());
        assert_eq!(
            check_redirect(302, &h, "http://up:1/mcp"),
            Err(WireError::Redirect {
                status: 302,
                location_host: None
            })
        );
        h.insert(
            header::LOCATION,
            HeaderValue::from_static("https://user:pw@evil.example:8443/x?token=s3cret"),
        );
        let e = check_redirect(307, &h, "http://up:1/mcp").unwrap_err();
        assert_eq!(
            e,
            WireError::Redirect {
                status: 307,
                location_host: Some("evil.example".into())
            }
        );
        let text = e.to_string();
        assert!(
            !text.contains("s3cret") && !text.contains("pw") && !text.contains("/x"),
            "{text}"
        );
        assert!(!e.retryable());
        h.insert(header::LOCATION, HeaderValue::from_static("/elsewhere?k=v"));
        assert_eq!(
            check_redirect(308, &h, "http://up:1/mcp"),
            Err(WireError::Redirect {
                status: 308,
                location_host: Some("up".into())
            })
        );
    }

    #[test]
    fn a_relayed_call_carries_its_trace_headers() {
        let trace = mcp_wire::trace::TraceHeaders {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01".into(),
            tracestate: Some("k=v".into()),
        };
        let call = Message {
            method: Some("tools/call"),
            trace: Some(&trace),
            ..Default::default()
        };
        let names: Vec<String> = headers(None, Envelope::Modern, &Request::Post(call))
            .into_iter()
            .filter(|(k, _)| k.starts_with("trace"))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        assert_eq!(
            names,
            [
                "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01",
                "tracestate: k=v"
            ]
        );
    }

    #[test]
    fn one_builder_decides_every_header_of_every_request() {
        let list = |h: HeaderList| -> Vec<String> { h.iter().map(|(k, v)| format!("{k}: {v}")).collect() };
        let schema = serde_json::json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
        let args = serde_json::json!({"region": "eu", "q": "x"});
        let call = Message {
            method: Some("tools/call"),
            name: Some("weather"),
            mirror: Some((&schema, &args)),
            idempotent: false,
            trace: None,
        };
        let legacy = Envelope::Legacy {
            session_id: Some("s-1"),
            version: "2025-06-18",
        };
        const POST: [&str; 2] = [
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
        ];
        // Legacy: the session and its version; the modern headers never.
        assert_eq!(
            list(headers(Some("t0k"), legacy, &Request::Post(call))),
            [
                "Authorization: Bearer t0k",
                "Mcp-Session-Id: s-1",
                "MCP-Protocol-Version: 2025-06-18",
                POST[0],
                POST[1]
            ]
        );
        // Modern: no session; method, name and the mirrored arguments.
        assert_eq!(
            list(headers(None, Envelope::Modern, &Request::Post(call))),
            [
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/call",
                "Mcp-Name: weather",
                "Mcp-Param-Region: eu",
                POST[0],
                POST[1]
            ]
        );
        // A response (no method) in the modern era: the version only.
        assert_eq!(
            list(headers(None, Envelope::Modern, &Request::Post(Message::default()))),
            ["MCP-Protocol-Version: 2026-07-28", POST[0], POST[1]]
        );
        // `initialize`: nothing of a session.
        let init = Message {
            method: Some("initialize"),
            ..Default::default()
        };
        assert_eq!(list(headers(None, Envelope::Bare, &Request::Post(init))), POST);
        assert_eq!(
            list(headers(None, legacy, &Request::ListenStream)),
            [
                "Mcp-Session-Id: s-1",
                "MCP-Protocol-Version: 2025-06-18",
                "Accept: text/event-stream"
            ]
        );
        assert_eq!(
            list(headers(
                None,
                Envelope::Modern,
                &Request::Resume { last_event_id: "e7" }
            )),
            [
                "MCP-Protocol-Version: 2026-07-28",
                "Accept: text/event-stream",
                "Last-Event-ID: e7"
            ]
        );
        assert_eq!(
            list(headers(Some("t0k"), legacy, &Request::EndSession)),
            [
                "Authorization: Bearer t0k",
                "Mcp-Session-Id: s-1",
                "MCP-Protocol-Version: 2025-06-18"
            ]
        );
    }

    /// A server that answers every request on a connection of its own with `reply`, then
    /// closes; the returned counter counts the requests.
    async fn serve(reply: String) -> (String, std::rc::Rc<Cell<usize>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let count = std::rc::Rc::new(Cell::new(0));
        let seen = count.clone();
        actix_rt::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                seen.set(seen.get() + 1);
                let reply = reply.clone();
                actix_rt::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    // Head, then the Content-Length body.
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
                    let len: usize = head
                        .split("content-length:")
                        .nth(1)
                        .and_then(|r| r.split("\r\n").next())
                        .and_then(|n| n.trim().parse().ok())
                        .unwrap_or(0);
                    let body_start = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    while buf.len() < body_start + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let _ = sock.write_all(reply.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        (url, count)
    }

    const RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#;

    fn network() -> Network {
        Network::direct().expect("the TLS configuration builds")
    }

    async fn post_to(client: &Client, idempotent: bool) -> Result<Reply, WireError> {
        let message = Message {
            method: Some("tools/list"),
            idempotent,
            ..Default::default()
        };
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let id = RequestId::Num(1);
        client
            .post(Envelope::Bare, message, body, Some(&id), 1 << 20, None)
            .await
    }

    #[actix_rt::test]
    async fn close_delimited_replies_are_read_whole() {
        // HTTP/1.0: awc reads to the end of the connection itself.
        let (url, count) = serve(format!(
            "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{RESULT}"
        ))
        .await;
        let client = Client::new(url.clone(), None, Duration::from_secs(2), &network());
        let reply = post_to(&client, false).await.unwrap();
        assert_eq!(reply.result().unwrap().get(), r#"{"ok":true}"#);
        assert!(!client.reads_close_delimited());
        assert_eq!(count.get(), 1);

        // HTTP/1.1: awc drops the body; an idempotent request is fetched again, and from then on
        // the upstream is read one connection per request.
        let (url, count) = serve(format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{RESULT}"
        ))
        .await;
        let client = Client::new(url.clone(), None, Duration::from_secs(2), &network());
        let reply = post_to(&client, true).await.unwrap();
        assert_eq!(reply.result().unwrap().get(), r#"{"ok":true}"#);
        assert!(client.reads_close_delimited());
        assert_eq!(count.get(), 2);
        let reply = post_to(&client, false).await.unwrap();
        assert_eq!(reply.result().unwrap().get(), r#"{"ok":true}"#);
        assert_eq!(count.get(), 3, "read directly, sent once");

        // A request that must not be sent twice: a precise error, never an empty body.
        let client = Client::new(url.clone(), None, Duration::from_secs(2), &network());
        let e = post_to(&client, false).await.unwrap_err();
        assert!(e.to_string().contains("neither Content-Length nor chunked"), "{e}");
        assert_eq!(count.get(), 4);
        assert!(post_to(&client, false).await.is_ok());
    }

    #[actix_rt::test]
    async fn the_direct_reader_understands_every_framing() {
        let sse = format!("event: message\ndata: {RESULT}\n\n");
        let replies = [
            format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/json\r\n\r\n{RESULT}trailing junk", RESULT.len()),
            format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n5;ext=1\r\n{}\r\n{:x}\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n",
                &sse[..5],
                sse.len() - 5,
                &sse[5..]
            ),
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n{sse}"),
        ];
        for reply in replies {
            let (url, _) = serve(reply.clone()).await;
            let client = Client::new(url.clone(), None, Duration::from_secs(2), &network());
            client.close_delimited.set(true);
            let r = post_to(&client, false).await;
            assert_eq!(r.unwrap().result().unwrap().get(), r#"{"ok":true}"#, "{reply}");
        }
        // Broken framing is an error, not a short body.
        for reply in [
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\":".to_string(),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_string(),
            format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "x".repeat(raw::MAX_HEAD_BYTES)),
        ] {
            let (url, _) = serve(reply.clone()).await;
            let client = Client::new(url.clone(), None, Duration::from_secs(2), &network());
            client.close_delimited.set(true);
            let e = post_to(&client, false).await.unwrap_err();
            assert!(!e.to_string().contains("empty body"), "{e}");
        }
    }

    #[test]
    fn only_http_1_1_replies_without_framing_lost_their_body() {
        let none = HeaderMap::new();
        let mut sized = HeaderMap::new();
        sized.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        assert!(body_dropped(&Method::POST, Version::HTTP_11, 200, &none));
        assert!(body_dropped(&Method::GET, Version::HTTP_11, 404, &none));
        assert!(!body_dropped(&Method::POST, Version::HTTP_10, 200, &none));
        assert!(!body_dropped(&Method::POST, Version::HTTP_11, 200, &sized));
        assert!(!body_dropped(&Method::POST, Version::HTTP_11, 204, &none));
        assert!(!body_dropped(&Method::HEAD, Version::HTTP_11, 200, &none));
    }
}
