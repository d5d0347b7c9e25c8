//! The label values: the closed sets every label of the process's families takes its values
//! from (see the crate docs, "Bounded labels"), and the label sets of the families.

use prometheus_client::encoding::EncodeLabelSet;

use crate::OTHER;

/// Kinds of upstream failure, the `kind` label of `mcp_proxy_upstream_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamErrorKind {
    /// No complete answer within the upstream timeout.
    Timeout,
    /// The TCP connection could not be made or broke.
    Connect,
    /// The TLS handshake or certificate check failed.
    Tls,
    /// An HTTP error status.
    HttpStatus,
    /// A redirect (never followed).
    Redirect,
    /// A JSON-RPC error object for the request.
    RpcError,
    /// Not a valid MCP reply.
    InvalidReply,
    /// A reply over the size cap.
    TooLarge,
    /// The upstream's session was lost (404/expired, or it changed era) and re-initialized.
    SessionReset,
    /// The proxy's own actor for the upstream is gone (shutting down).
    Unavailable,
}

impl UpstreamErrorKind {
    pub const ALL: [UpstreamErrorKind; 10] = [
        UpstreamErrorKind::Timeout,
        UpstreamErrorKind::Connect,
        UpstreamErrorKind::Tls,
        UpstreamErrorKind::HttpStatus,
        UpstreamErrorKind::Redirect,
        UpstreamErrorKind::RpcError,
        UpstreamErrorKind::InvalidReply,
        UpstreamErrorKind::TooLarge,
        UpstreamErrorKind::SessionReset,
        UpstreamErrorKind::Unavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamErrorKind::Timeout => "timeout",
            UpstreamErrorKind::Connect => "connect",
            UpstreamErrorKind::Tls => "tls",
            UpstreamErrorKind::HttpStatus => "http_status",
            UpstreamErrorKind::Redirect => "redirect",
            UpstreamErrorKind::RpcError => "rpc_error",
            UpstreamErrorKind::InvalidReply => "invalid_reply",
            UpstreamErrorKind::TooLarge => "too_large",
            UpstreamErrorKind::SessionReset => "session_reset",
            UpstreamErrorKind::Unavailable => "unavailable",
        }
    }
}

/// The MCP methods the proxy serves; any other method is counted as [`OTHER`].
const METHODS: [&str; 5] = ["initialize", "ping", "tools/list", "tools/call", "server/discover"];

/// The `method` label of a request.
pub fn method_label(method: &str) -> &'static str {
    METHODS.iter().copied().find(|m| *m == method).unwrap_or(OTHER)
}

/// The `outcome` label of a request answered with JSON-RPC error `code`.
pub fn error_code_label(code: i64) -> &'static str {
    match code {
        -32700 => "parse_error",
        -32600 => "invalid_request",
        -32601 => "method_not_found",
        -32602 => "invalid_params",
        -32603 => "internal_error",
        -32800 => "cancelled",
        -32099..=-32000 => "server_error",
        _ => "other_error",
    }
}

/// How a relayed call ended (the `outcome` label of `mcp_proxy_tool_calls_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The upstream answered with a result.
    Ok,
    /// The upstream answered with `isError: true`.
    ToolError,
    /// The exchange with the upstream failed (see `mcp_proxy_upstream_errors_total`).
    UpstreamError,
    /// Cancelled (client gone, or shutdown).
    Cancelled,
    /// No tool by that name (after one re-list); never sent.
    UnknownTool,
    /// Refused by the proxy (arguments invalid, ambiguous or typo'd name, policy, a refused
    /// `requestState`); never sent.
    Rejected,
    /// 2026-07-28: the tool asked the client something; the call goes on in the client's retry.
    InputRequired,
    /// The client gave no usable answer to the tool's question, which ended the call.
    Unanswered,
}

impl CallOutcome {
    pub(crate) const COUNT: usize = 8;

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::ToolError => "tool_error",
            CallOutcome::UpstreamError => "upstream_error",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::UnknownTool => "unknown_tool",
            CallOutcome::Rejected => "rejected",
            CallOutcome::InputRequired => "input_required",
            CallOutcome::Unanswered => "unanswered",
        }
    }
}

/// A refresh's outcome: every upstream listed, some did, none did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshOutcome {
    Ok,
    Partial,
    Failed,
}

impl RefreshOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshOutcome::Ok => "ok",
            RefreshOutcome::Partial => "partial",
            RefreshOutcome::Failed => "failed",
        }
    }
}

/// Where the called tool stood in the caller's last search results (the `rank` label of
/// `mcp_proxy_retrieval_calls_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankBucket {
    /// At this 1-based rank, bucketed: 1, 2, 3, 4-5, 6-10, 11+.
    Rank(usize),
    /// Not among the last search's results.
    Miss,
    /// The caller had not searched (as far as the proxy remembers).
    NoSearch,
}

impl RankBucket {
    pub fn as_str(self) -> &'static str {
        match self {
            RankBucket::Rank(0 | 1) => "1",
            RankBucket::Rank(2) => "2",
            RankBucket::Rank(3) => "3",
            RankBucket::Rank(4 | 5) => "4-5",
            RankBucket::Rank(6..=10) => "6-10",
            RankBucket::Rank(_) => "11+",
            RankBucket::Miss => "miss",
            RankBucket::NoSearch => "no_search",
        }
    }
}

/// What became of a request an upstream sent during a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedOutcome {
    /// Answered: by the client with a result, or by the proxy itself (`ping`).
    Answered,
    /// The client answered with an error.
    Refused,
    /// Answered with an error at once by the proxy (the client cannot be asked: no such
    /// capability, no stream, too many questions), or an `input_required` round not passed on.
    Declined,
    /// The client did not answer within `ELICITATION_TIMEOUT_SEC`.
    TimedOut,
    /// The question was dropped unanswered: its client went away or the call ended first.
    Abandoned,
    /// A 2026-07-28 round passed to a 2026-07-28 client as it came (its answers come back on
    /// the client's retry, not through the proxy's waiting).
    Passed,
}

impl AskedOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AskedOutcome::Answered => "answered",
            AskedOutcome::Refused => "refused",
            AskedOutcome::Declined => "declined",
            AskedOutcome::TimedOut => "timed_out",
            AskedOutcome::Abandoned => "abandoned",
            AskedOutcome::Passed => "passed",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct AskedLabels {
    pub(crate) upstream: String,
    pub(crate) method: &'static str,
    pub(crate) outcome: &'static str,
}

/// The `method` label of `mcp_proxy_upstream_requests_total`: the requests MCP defines from a
/// server to its client, anything else `other` (an upstream's method names are not trusted to
/// stay few).
pub fn server_request_method(method: &str) -> &'static str {
    match method {
        "elicitation/create" => "elicitation/create",
        "sampling/createMessage" => "sampling/createMessage",
        "roots/list" => "roots/list",
        "ping" => "ping",
        _ => "other",
    }
}

/// Why a search with the semantic arm configured was answered lexically only, the `reason`
/// label of `mcp_proxy_searches_lexical_fallback_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackReason {
    /// The model is loading, or the vectors of the searched catalog are not ready yet.
    NotReady,
    /// The query vector did not come within the timeout.
    Timeout,
    /// Embedding the query failed.
    Error,
}

impl FallbackReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackReason::NotReady => "not_ready",
            FallbackReason::Timeout => "timeout",
            FallbackReason::Error => "error",
        }
    }
}

// The label sets of the families (the field names are the label names).

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    pub(crate) method: &'static str,
    pub(crate) outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabels {
    pub(crate) upstream: String,
    pub(crate) tool: String,
    pub(crate) outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLatencyLabels {
    pub(crate) upstream: String,
    pub(crate) tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct UpstreamLabels {
    pub(crate) upstream: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ErrorLabels {
    pub(crate) upstream: String,
    pub(crate) kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RefreshLabels {
    pub(crate) outcome: &'static str,
    pub(crate) reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub(crate) outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RankLabels {
    pub(crate) rank: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ReasonLabels {
    pub(crate) reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct SourceLabels {
    pub(crate) source: String,
}
