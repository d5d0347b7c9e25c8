//! What can go wrong talking to an upstream, phrased so a model (and an operator) can tell
//! which side failed and whether retrying can help; and why a call was abandoned
//! ([`CancelReason`], which [`UpstreamError::Cancelled`] carries).

use std::time::Duration;

use crate::egress::EgressError;
use mcp_wire::jsonrpc::{self, RpcError};
use mcp_wire::modern;

/// A failed exchange with one upstream.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamError {
    /// No complete answer within the upstream's timeout (as extended by progress); `elapsed` is
    /// how long the request really ran.
    Timeout { elapsed: Duration },
    /// The TCP/TLS connection could not be made (refused, DNS, reset).
    Connect(String),
    /// TLS: the upstream's certificate is not signed by a CA the proxy trusts.
    CertificateNotTrusted { host: String, detail: String },
    /// TLS: the upstream's certificate is for another host name.
    CertificateNameMismatch { host: String, detail: String },
    /// TLS: another handshake failure (expired certificate, no common protocol, not TLS).
    Tls { host: String, detail: String },
    /// The egress proxy (`HTTPS_PROXY`/`HTTP_PROXY`) could not be reached or refused the
    /// tunnel; it names the proxy as `host:port` only, never its credentials.
    Proxy(EgressError),
    /// The upstream answered with an HTTP error status.
    Http { status: u16, detail: String },
    /// The upstream answered with a redirect (3xx), which is never followed. Only the host of
    /// its `Location` is kept (the URL itself may carry secrets); `None` without a usable one.
    Redirect { status: u16, location_host: Option<String> },
    /// The upstream answered with a JSON-RPC error object.
    Rpc(RpcError),
    /// The upstream answered something that is not a valid MCP reply.
    InvalidReply(String),
    /// The reply exceeded the configured size cap and was dropped.
    TooLarge { limit: usize },
    /// The tool asked its caller for input (a 2026-07-28 result of `resultType`
    /// `input_required`, holding the methods it asked with: `elicitation/create`, …), and this
    /// call's client cannot be asked (it declared none of those capabilities, or takes no
    /// stream to be asked on).
    InputRequired { methods: Vec<String> },
    /// The client was asked the tool's question (`method`) for a 2026-07-28 round and gave no
    /// answer the upstream could take: an error, no answer in time, or it went away (`why`).
    Unanswered { method: String, why: String },
    /// The proxy's own actor for this upstream is gone (shutting down).
    Unavailable,
    /// The call was abandoned and cancelled upstream (its client went away, or the proxy is
    /// shutting down).
    Cancelled(CancelReason),
}

impl UpstreamError {
    /// Whether the same request may succeed if simply tried again later.
    pub fn retryable(&self) -> bool {
        match self {
            UpstreamError::Timeout { .. }
            | UpstreamError::Connect(_)
            | UpstreamError::Unavailable
            | UpstreamError::Cancelled(_) => true,
            UpstreamError::Http { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            UpstreamError::Proxy(EgressError::Unreachable { .. }) => true,
            UpstreamError::Proxy(EgressError::Refused { status, .. }) => *status >= 500,
            UpstreamError::Proxy(EgressError::BadReply { .. })
            | UpstreamError::CertificateNotTrusted { .. }
            | UpstreamError::CertificateNameMismatch { .. }
            | UpstreamError::Tls { .. } => false,
            UpstreamError::Rpc(_)
            | UpstreamError::InvalidReply(_)
            | UpstreamError::TooLarge { .. }
            | UpstreamError::InputRequired { .. }
            | UpstreamError::Redirect { .. } => false,
            UpstreamError::Unanswered { .. } => true,
        }
    }

    /// A one-line advice for the caller.
    pub fn advice(&self) -> &'static str {
        match self {
            UpstreamError::Timeout { .. } => {
                "the upstream may still be working or overloaded; retry later or with a smaller request"
            }
            UpstreamError::Connect(_) => {
                "the upstream is down or unreachable; retry later, or ask the operator to check it"
            }
            UpstreamError::CertificateNotTrusted { .. } => {
                "retrying will not help: the operator must make the proxy trust the CA that signed the upstream's certificate (UPSTREAM_CA_FILE), or fix the upstream's certificate chain"
            }
            UpstreamError::CertificateNameMismatch { .. } => {
                "the upstream's TLS certificate is for another host name; retrying will not help: the operator must use the host name the certificate names in the upstream's URL, or reissue the certificate for this name"
            }
            UpstreamError::Tls { .. } => {
                "the TLS handshake with the upstream failed; retrying will probably not help: the operator must check the upstream's certificate (expiry) and TLS setup, and that the URL's port speaks TLS"
            }
            UpstreamError::Proxy(EgressError::Unreachable { .. }) => {
                "the egress proxy is unreachable; retry later, or ask the operator to check HTTPS_PROXY/HTTP_PROXY"
            }
            UpstreamError::Proxy(EgressError::Refused { status: 407, .. }) => {
                "the egress proxy wants credentials; retrying will not help: the operator must put user:password in the proxy URL (HTTPS_PROXY/HTTP_PROXY)"
            }
            UpstreamError::Proxy(EgressError::Refused { status, .. }) if *status >= 500 => {
                "the egress proxy could not reach the upstream; retrying later may help, otherwise the operator must check the upstream's address or the proxy"
            }
            UpstreamError::Proxy(EgressError::Refused { .. }) => {
                "the egress proxy refused the tunnel to this upstream; retrying will not help: the operator must allow the upstream at the proxy, or list its host in NO_PROXY if it is reachable directly"
            }
            UpstreamError::Proxy(EgressError::BadReply { .. }) => {
                "the egress proxy did not answer CONNECT like an HTTP proxy; the operator must check HTTPS_PROXY/HTTP_PROXY (an http:// proxy URL)"
            }
            UpstreamError::Http { status, .. } if *status == 401 || *status == 403 => {
                "the upstream rejected the proxy's credentials; retrying will not help, the operator must fix the token"
            }
            UpstreamError::Http { status, .. } if *status >= 500 || *status == 429 => {
                "the upstream failed on its side; retrying later may help"
            }
            UpstreamError::Http { .. } => "the upstream refused the request; retrying the same request will not help",
            UpstreamError::Redirect { .. } => {
                "the upstream's URL redirects, and redirects are never followed (they could replay the request and its credentials elsewhere); retrying will not help: the operator must configure the final URL"
            }
            UpstreamError::Rpc(_) => {
                "the upstream reported an error for this request; fix the request rather than retrying it unchanged"
            }
            UpstreamError::InvalidReply(_) => {
                "the upstream misbehaved; retrying will probably not help, report it to the operator"
            }
            UpstreamError::InputRequired { .. } => {
                "this tool asks the user or the model for input while it runs, and this client cannot be asked: a 2025-era client needs a session (initialize) that declared the capability and must accept text/event-stream; a 2026-07-28 client must declare it in _meta clientCapabilities. Otherwise give the tool everything it needs in its arguments, or use another tool"
            }
            UpstreamError::Unanswered { .. } => {
                "the tool's question to the client got no usable answer, so the call ended; answer it (the client's elicitation/sampling/roots handler) and call again"
            }
            UpstreamError::TooLarge { .. } => {
                "ask for less data (filters, paging, smaller ranges); retrying unchanged will fail again"
            }
            UpstreamError::Unavailable => "the proxy is shutting down; retry against a running instance",
            UpstreamError::Cancelled(CancelReason::ClientGone) => {
                "the call was cancelled because the client went away"
            }
            UpstreamError::Cancelled(CancelReason::ShuttingDown) => {
                "the proxy is shutting down; retry against a running instance"
            }
            UpstreamError::Cancelled(CancelReason::Unanswered) => {
                "the call waited for the client's answer longer than ELICITATION_TIMEOUT_SEC; call the tool again and answer its question in time"
            }
        }
    }
}

impl UpstreamError {
    /// Whether a refusal of `initialize` may mean the upstream now speaks the other era.
    pub fn may_mean_other_era(&self) -> bool {
        match self {
            UpstreamError::Http { status, .. } => matches!(status, 400 | 404 | 405),
            UpstreamError::Rpc(e) => matches!(e.code, modern::UNSUPPORTED_VERSION | jsonrpc::METHOD_NOT_FOUND),
            _ => false,
        }
    }
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Timeout { elapsed } => write!(f, "timed out after {}", seconds(*elapsed)),
            UpstreamError::Connect(e) => write!(f, "connection failed: {e}"),
            UpstreamError::CertificateNotTrusted { host, detail } => write!(
                f,
                "TLS with upstream {host} failed: certificate not trusted ({detail}); if a private CA signed it, set UPSTREAM_CA_FILE to the PEM of the CA that signed it"
            ),
            UpstreamError::CertificateNameMismatch { host, detail } => write!(
                f,
                "TLS with upstream {host} failed: the certificate is not valid for the host name {host} ({detail})"
            ),
            UpstreamError::Tls { host, detail } => write!(f, "TLS with upstream {host} failed: {detail}"),
            UpstreamError::Proxy(e) => write!(f, "{e}"),
            UpstreamError::Http { status, detail } if detail.is_empty() => write!(f, "HTTP {status}"),
            UpstreamError::Http { status, detail } => write!(f, "HTTP {status}: {detail}"),
            UpstreamError::Redirect {
                status,
                location_host: Some(host),
            } => write!(f, "HTTP {status} redirect to host {host} (not followed)"),
            UpstreamError::Redirect { status, .. } => {
                write!(f, "HTTP {status} redirect without a usable Location (not followed)")
            }
            UpstreamError::Rpc(e) => write!(f, "error {}: {}", e.code, e.message),
            UpstreamError::InvalidReply(e) => write!(f, "invalid reply: {e}"),
            UpstreamError::InputRequired { methods } if methods.is_empty() => {
                write!(f, "the tool asked for input (input_required)")
            }
            UpstreamError::InputRequired { methods } => {
                write!(f, "the tool asked for input (input_required: {})", methods.join(", "))
            }
            UpstreamError::Unanswered { method, why } => {
                write!(f, "the tool asked the client ({method}) and got no usable answer: {why}")
            }
            UpstreamError::TooLarge { limit } => write!(f, "reply larger than the {limit}-byte cap"),
            UpstreamError::Unavailable => write!(f, "upstream actor unavailable"),
            UpstreamError::Cancelled(r) => write!(f, "cancelled ({})", r.message()),
        }
    }
}

impl std::error::Error for UpstreamError {}

/// Why a call was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// The client disconnected or cancelled its request.
    ClientGone,
    /// The proxy is shutting down and its grace period ended.
    ShuttingDown,
    /// The call waited on the client's answer to the tool's question (a 2026-07-28 client's
    /// held call) longer than `ELICITATION_TIMEOUT_SEC`.
    Unanswered,
}

impl CancelReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::ClientGone => "client_gone",
            CancelReason::ShuttingDown => "shutting_down",
            CancelReason::Unanswered => "unanswered",
        }
    }

    /// The reason as told to the upstream (`notifications/cancelled`).
    pub fn message(self) -> &'static str {
        match self {
            CancelReason::ClientGone => "the client went away",
            CancelReason::ShuttingDown => "the proxy is shutting down",
            CancelReason::Unanswered => "the client did not answer the tool's question in time",
        }
    }
}

/// A duration as people say it: `950 ms`, `3 s`, `3.4 s`, `12 s` (tenths only below 10 s).
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 950 {
        return format!("{ms} ms");
    }
    let tenths = (ms + 50) / 100;
    if tenths % 10 == 0 || tenths >= 100 {
        format!("{} s", (ms + 500) / 1000)
    } else {
        format!("{}.{} s", tenths / 10, tenths % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_state_the_elapsed_time() {
        let t = |ms| {
            UpstreamError::Timeout {
                elapsed: Duration::from_millis(ms),
            }
            .to_string()
        };
        assert_eq!(t(1003), "timed out after 1 s");
        assert_eq!(t(3420), "timed out after 3.4 s");
        assert_eq!(t(2980), "timed out after 3 s");
        assert_eq!(t(12_004), "timed out after 12 s");
        assert_eq!(t(12_600), "timed out after 13 s");
        assert_eq!(t(250), "timed out after 250 ms");
    }

    #[test]
    fn redirects_are_final_and_name_the_host() {
        let e = UpstreamError::Redirect {
            status: 307,
            location_host: Some("other.example".into()),
        };
        assert_eq!(e.to_string(), "HTTP 307 redirect to host other.example (not followed)");
        assert!(!e.retryable());
        assert!(e.advice().contains("final URL"));
    }
}
