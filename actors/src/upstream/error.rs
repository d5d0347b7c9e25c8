//! What a failed exchange with an upstream means for the call ([`UpstreamError`]): a failure
//! on the wire (`upstream_http::WireError`, as the HTTP client saw it), or what the actors
//! know beyond the wire: the tool needs input this call's client cannot give, the client left
//! the tool's question unanswered, the upstream's actor is gone, or the call was cancelled
//! ([`CancelReason`]). The advice a model or an operator reads, naming a setting to change, is
//! not here: the service's edge writes it (the binary's `advice` module).

use mcp_wire::modern;
use proxy_metrics::UpstreamErrorKind;
use upstream_http::WireError;

/// How an error is told to a model or an operator where the actors report it (the refresh
/// report's `last_error`): set by the service's edge, which adds the advice naming a setting.
pub type Describe = fn(&UpstreamError) -> String;

/// A failed exchange with one upstream, and what it means for the call.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamError {
    /// What went wrong on the wire (connect, TLS, HTTP status, redirect, too large, an
    /// invalid reply, the upstream's JSON-RPC error).
    Wire(WireError),
    /// The tool asked its caller for input (a 2026-07-28 result of `resultType`
    /// `input_required`, or the upstream's -32021, holding the methods it asked with:
    /// `elicitation/create`, …), and this call's client cannot be asked (it declared none of
    /// those capabilities, or takes no stream to be asked on).
    InputRequired { methods: Vec<String> },
    /// The client was asked the tool's question (`method`) for a 2026-07-28 round and gave no
    /// answer the upstream could take: an error, no answer in time, or it went away (`why`).
    Unanswered { method: String, why: String },
    /// The proxy's own actor for this upstream is gone (shutting down).
    Unavailable,
    /// The call was abandoned and cancelled upstream (its client went away, the proxy is
    /// shutting down, or its question was not answered in time).
    Cancelled(CancelReason),
}

/// The upstream's -32021 (a capability the client did not declare) is a call that needs its
/// client asked; every other wire failure stays what the wire said.
impl From<WireError> for UpstreamError {
    fn from(e: WireError) -> UpstreamError {
        match e {
            WireError::Rpc(e) if e.code == modern::MISSING_CLIENT_CAPABILITY => {
                let needed = e.data.as_ref().and_then(|d| d.get("requiredCapabilities"));
                UpstreamError::InputRequired {
                    methods: mcp_wire::asks::methods_needing(needed),
                }
            }
            e => UpstreamError::Wire(e),
        }
    }
}

impl UpstreamError {
    /// Whether the same request may succeed if simply tried again later.
    pub fn retryable(&self) -> bool {
        match self {
            UpstreamError::Wire(e) => e.retryable(),
            UpstreamError::Unavailable | UpstreamError::Cancelled(_) | UpstreamError::Unanswered { .. } => true,
            UpstreamError::InputRequired { .. } => false,
        }
    }

    /// The upstream answered something that is not a valid MCP reply (found by the actors:
    /// a page, a result or a handshake of the wrong shape).
    pub fn invalid_reply(detail: String) -> UpstreamError {
        UpstreamError::Wire(WireError::InvalidReply(detail))
    }

    /// Whether a refusal of `initialize` may mean the upstream now speaks the other era (a
    /// missing client capability never does).
    pub fn may_mean_other_era(&self) -> bool {
        self.wire().is_some_and(WireError::may_mean_other_era)
    }

    /// The wire failure, if it was one.
    pub fn wire(&self) -> Option<&WireError> {
        match self {
            UpstreamError::Wire(e) => Some(e),
            _ => None,
        }
    }

    /// The kind of the error (the `kind` label of `mcp_proxy_upstream_errors_total`); `None`
    /// for a cancellation, which is the client's (or the shutdown's) doing, and for a question
    /// the client was to answer: the upstream did its part (counted in
    /// `mcp_proxy_upstream_requests_total` instead). The one mapping from an error to a kind;
    /// the matches are exhaustive on purpose: a new variant does not compile until it is
    /// given its kind here.
    pub fn kind(&self) -> Option<UpstreamErrorKind> {
        Some(match self {
            UpstreamError::Wire(e) => match e {
                WireError::Timeout { .. } => UpstreamErrorKind::Timeout,
                WireError::Connect(_) | WireError::Proxy(_) => UpstreamErrorKind::Connect,
                WireError::CertificateNotTrusted { .. }
                | WireError::CertificateNameMismatch { .. }
                | WireError::Tls { .. } => UpstreamErrorKind::Tls,
                WireError::Http { .. } => UpstreamErrorKind::HttpStatus,
                WireError::Redirect { .. } => UpstreamErrorKind::Redirect,
                WireError::Rpc(_) => UpstreamErrorKind::RpcError,
                WireError::InvalidReply(_) => UpstreamErrorKind::InvalidReply,
                WireError::TooLarge { .. } => UpstreamErrorKind::TooLarge,
            },
            UpstreamError::Unavailable => UpstreamErrorKind::Unavailable,
            UpstreamError::Cancelled(_) | UpstreamError::InputRequired { .. } | UpstreamError::Unanswered { .. } => {
                return None
            }
        })
    }
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Wire(e) => write!(f, "{e}"),
            UpstreamError::InputRequired { methods } if methods.is_empty() => {
                write!(f, "the tool asked for input (input_required)")
            }
            UpstreamError::InputRequired { methods } => {
                write!(f, "the tool asked for input (input_required: {})", methods.join(", "))
            }
            UpstreamError::Unanswered { method, why } => {
                write!(
                    f,
                    "the tool asked the client ({method}) and got no usable answer: {why}"
                )
            }
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
    /// held call) longer than the question's timeout.
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::jsonrpc::RpcError;
    use serde_json::json;

    #[test]
    fn a_missing_capability_is_input_required_and_any_other_rpc_error_stays_on_the_wire() {
        let mut missing = RpcError::new(modern::MISSING_CLIENT_CAPABILITY, "no elicitation");
        missing.data = Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}));
        assert_eq!(
            UpstreamError::from(WireError::Rpc(missing)),
            UpstreamError::InputRequired {
                methods: vec!["elicitation/create".into()]
            }
        );
        let other = WireError::Rpc(RpcError::new(-32000, "boom"));
        assert_eq!(UpstreamError::from(other.clone()), UpstreamError::Wire(other));
    }

    #[test]
    fn every_error_has_its_kind_and_the_clients_doing_has_none() {
        let wire = |e| UpstreamError::Wire(e);
        for (e, kind) in [
            (
                wire(WireError::Timeout {
                    elapsed: std::time::Duration::from_secs(1),
                }),
                Some("timeout"),
            ),
            (wire(WireError::Connect("refused".into())), Some("connect")),
            (
                wire(WireError::CertificateNotTrusted {
                    host: "h".into(),
                    detail: "d".into(),
                }),
                Some("tls"),
            ),
            (
                wire(WireError::Http {
                    status: 500,
                    detail: String::new(),
                }),
                Some("http_status"),
            ),
            (
                wire(WireError::Redirect {
                    status: 307,
                    location_host: None,
                }),
                Some("redirect"),
            ),
            (wire(WireError::Rpc(RpcError::new(-32000, "x"))), Some("rpc_error")),
            (wire(WireError::InvalidReply("x".into())), Some("invalid_reply")),
            (wire(WireError::TooLarge { limit: 1 }), Some("too_large")),
            (UpstreamError::Unavailable, Some("unavailable")),
            (UpstreamError::Cancelled(CancelReason::ClientGone), None),
            (UpstreamError::Cancelled(CancelReason::ShuttingDown), None),
            (UpstreamError::InputRequired { methods: vec![] }, None),
            (
                UpstreamError::Unanswered {
                    method: "elicitation/create".into(),
                    why: "declined".into(),
                },
                None,
            ),
        ] {
            assert_eq!(e.kind().map(|k| k.as_str()), kind, "{e:?}");
        }
    }

    #[test]
    fn the_text_is_the_wires_or_the_calls() {
        let e = UpstreamError::Wire(WireError::Http {
            status: 503,
            detail: "busy".into(),
        });
        assert_eq!(e.to_string(), "HTTP 503: busy");
        assert!(e.retryable());
        assert_eq!(
            UpstreamError::Cancelled(CancelReason::Unanswered).to_string(),
            "cancelled (the client did not answer the tool's question in time)"
        );
        assert!(!UpstreamError::InputRequired { methods: vec![] }.retryable());
    }
}
