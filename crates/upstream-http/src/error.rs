//! What went wrong on the wire with an upstream ([`WireError`]): connecting, TLS, the egress
//! proxy, an HTTP status, a redirect, a reply too large or not a valid MCP reply, or the
//! upstream's own JSON-RPC error object. What a failed call *means* (the client must be asked,
//! the question went unanswered, the call was cancelled) is the actors' (proxy-actors'
//! `upstream::UpstreamError`, which wraps this one); the advice a model or an operator reads,
//! naming the setting to change, is written at the service's edge (the binary's `advice`).

use std::time::Duration;

use crate::egress::EgressError;
use mcp_wire::jsonrpc::{self, RpcError};
use mcp_wire::modern;

/// A failed exchange with one upstream, as the wire showed it.
#[derive(Debug, Clone, PartialEq)]
pub enum WireError {
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
    /// The egress proxy could not be reached or refused the tunnel; it names the proxy as
    /// `host:port` only, never its credentials.
    Proxy(EgressError),
    /// The upstream answered with an HTTP error status.
    Http { status: u16, detail: String },
    /// The upstream answered with a redirect (3xx), which is never followed. Only the host of
    /// its `Location` is kept (the URL itself may carry secrets); `None` without a usable one.
    Redirect { status: u16, location_host: Option<String> },
    /// The upstream answered with a JSON-RPC error object (with any HTTP status when its code
    /// is 2026-07-28's -32021, a capability the client did not declare).
    Rpc(RpcError),
    /// The upstream answered something that is not a valid MCP reply.
    InvalidReply(String),
    /// The reply exceeded the configured size cap and was dropped.
    TooLarge { limit: usize },
}

impl WireError {
    /// Whether the same request may succeed if simply tried again later.
    pub fn retryable(&self) -> bool {
        match self {
            WireError::Timeout { .. } | WireError::Connect(_) => true,
            WireError::Http { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            WireError::Proxy(EgressError::Unreachable { .. }) => true,
            WireError::Proxy(EgressError::Refused { status, .. }) => *status >= 500,
            WireError::Proxy(EgressError::BadReply { .. })
            | WireError::CertificateNotTrusted { .. }
            | WireError::CertificateNameMismatch { .. }
            | WireError::Tls { .. } => false,
            WireError::Rpc(_)
            | WireError::InvalidReply(_)
            | WireError::TooLarge { .. }
            | WireError::Redirect { .. } => false,
        }
    }

    /// Whether a refusal of `initialize` may mean the upstream now speaks the other era.
    pub fn may_mean_other_era(&self) -> bool {
        match self {
            WireError::Http { status, .. } => matches!(status, 400 | 404 | 405),
            WireError::Rpc(e) => matches!(e.code, modern::UNSUPPORTED_VERSION | jsonrpc::METHOD_NOT_FOUND),
            _ => false,
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Timeout { elapsed } => write!(f, "timed out after {}", seconds(*elapsed)),
            WireError::Connect(e) => write!(f, "connection failed: {e}"),
            WireError::CertificateNotTrusted { host, detail } => {
                write!(f, "TLS with upstream {host} failed: certificate not trusted ({detail})")
            }
            WireError::CertificateNameMismatch { host, detail } => write!(
                f,
                "TLS with upstream {host} failed: the certificate is not valid for the host name {host} ({detail})"
            ),
            WireError::Tls { host, detail } => write!(f, "TLS with upstream {host} failed: {detail}"),
            WireError::Proxy(e) => write!(f, "{e}"),
            WireError::Http { status, detail } if detail.is_empty() => write!(f, "HTTP {status}"),
            WireError::Http { status, detail } => write!(f, "HTTP {status}: {detail}"),
            WireError::Redirect {
                status,
                location_host: Some(host),
            } => write!(f, "HTTP {status} redirect to host {host} (not followed)"),
            WireError::Redirect { status, .. } => {
                write!(f, "HTTP {status} redirect without a usable Location (not followed)")
            }
            WireError::Rpc(e) => write!(f, "error {}: {}", e.code, e.message),
            WireError::InvalidReply(e) => write!(f, "invalid reply: {e}"),
            WireError::TooLarge { limit } => write!(f, "reply larger than the {limit}-byte cap"),
        }
    }
}

impl std::error::Error for WireError {}

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
            WireError::Timeout {
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
        let e = WireError::Redirect {
            status: 307,
            location_host: Some("other.example".into()),
        };
        assert_eq!(e.to_string(), "HTTP 307 redirect to host other.example (not followed)");
        assert!(!e.retryable());
    }
}
