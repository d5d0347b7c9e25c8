//! One question and how it ended: [`Question`] (a method the proxy bridges, with its params
//! passed on unchanged), [`Answer`], and [`Decline`], the proxy's own reasons not to ask.

use serde_json::{json, Value};

use mcp_wire::asks::{self, Askable, Missing};
use mcp_wire::jsonrpc::{self, RpcError};

use super::bounds::MAX_QUESTIONS;
use super::timeouts::Timeouts;

/// What a question asks for: one of the methods the proxy bridges, `ping` (answered by the
/// proxy itself), or any other method (never askable; kept as it was sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Elicit,
    Sample,
    Roots,
    Ping,
    Other(String),
}

impl Method {
    pub fn parse(method: &str) -> Method {
        match method {
            asks::ELICIT => Method::Elicit,
            asks::SAMPLE => Method::Sample,
            asks::ROOTS => Method::Roots,
            "ping" => Method::Ping,
            other => Method::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Method::Elicit => asks::ELICIT,
            Method::Sample => asks::SAMPLE,
            Method::Roots => asks::ROOTS,
            Method::Ping => "ping",
            Method::Other(m) => m,
        }
    }
}

/// One question an upstream asks its client during a call, in whichever era it came. The
/// params are the upstream's, passed to the client unchanged (bytes on both wires as sent).
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub method: Method,
    pub params: Option<Value>,
}

impl Question {
    pub fn new(method: &str, params: Option<Value>) -> Question {
        Question {
            method: Method::parse(method),
            params,
        }
    }

    /// Whether a client that declared `askable` can answer this; if not, the capability it
    /// lacks.
    pub fn allowed_by(&self, askable: Askable) -> Result<(), Missing> {
        askable.allows(self.method.as_str(), self.params.as_ref())
    }
}

/// A value under its key: a question of a 2026-07-28 round (`inputRequests`), or an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyed<T> {
    pub key: String,
    pub item: T,
}

/// How a question ended, as the upstream is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The client's result.
    Result(Value),
    /// The client answered with an error.
    Error(RpcError),
    /// The proxy did not ask (or could not keep asking) the client.
    Declined(Decline),
    /// No answer within the question timeout.
    TimedOut,
    /// The client went away (its stream closed, its session ended, its held call expired).
    Gone,
}

impl Answer {
    /// A client's JSON-RPC response: its result, else its error (one with neither is an
    /// invalid request).
    pub fn from_response(result: Option<Value>, error: Option<RpcError>) -> Answer {
        match (result, error) {
            (Some(result), _) => Answer::Result(result),
            (None, Some(error)) => Answer::Error(error),
            (None, None) => Answer::Error(RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "The client's response had neither result nor error",
            )),
        }
    }

    /// The error the upstream is told instead of a result (`None` for a result).
    pub fn error(&self, t: &Timeouts) -> Option<RpcError> {
        Some(match self {
            Answer::Result(_) => return None,
            Answer::Error(e) => e.clone(),
            Answer::Declined(d) => d.error(),
            Answer::TimedOut => RpcError::new(REQUEST_TIMED_OUT, format!("Request timed out: {}", self.why(t))),
            Answer::Gone => RpcError::new(
                jsonrpc::REQUEST_CANCELLED,
                format!("Request cancelled: {}", self.why(t)),
            ),
        })
    }

    /// Why a question has no usable answer, in words.
    pub fn why(&self, t: &Timeouts) -> String {
        match self {
            Answer::Result(_) => "answered".into(),
            Answer::Error(e) => why_error(e),
            Answer::Declined(d) => why_error(&d.error()),
            Answer::TimedOut => format!(
                "the client did not answer within {} s (ELICITATION_TIMEOUT_SEC)",
                t.secs()
            ),
            Answer::Gone => "the client went away before answering".into(),
        }
    }
}

fn why_error(e: &RpcError) -> String {
    format!("the client answered with error {}: {}", e.code, e.message)
}

/// The JSON-RPC code of a question the client did not answer in time (the SDKs' "request
/// timeout").
pub const REQUEST_TIMED_OUT: i64 = -32001;

/// Why the proxy did not ask its client (each told to the upstream as an error).
#[derive(Debug, Clone, PartialEq)]
pub enum Decline {
    /// The client did not declare the capability the question needs (-32021).
    Missing { method: String, needed: Value },
    /// The call has no stream or round a question could go on.
    NoStream { method: String },
    /// The call has [`MAX_QUESTIONS`] questions unanswered already.
    CallFull { method: String },
    /// The client's session has `limit` questions waiting already (`MAX_PENDING_QUESTIONS`).
    SessionFull { method: String, limit: usize },
    /// The client group has too many calls held (`MAX_PENDING_QUESTIONS`).
    GroupFull,
    /// A 2026-07-28 client's retry carried no answer under `key`.
    NoAnswerInRetry { key: String },
}

impl Decline {
    /// The error the upstream gets: -32021 only for a capability the client lacks; the
    /// proxy's own limits are its errors.
    pub fn error(&self) -> RpcError {
        let (code, message) = match self {
            Decline::Missing { method, needed } => {
                let mut e = RpcError::new(
                    asks::MISSING_CAPABILITY,
                    format!("The proxy's client for this call did not declare the capability {method} needs ({needed}), so it cannot be asked"),
                );
                e.data = Some(json!({ "requiredCapabilities": needed }));
                return e;
            }
            Decline::NoStream { method } => (
                jsonrpc::INTERNAL_ERROR,
                format!("The proxy's client for this call cannot be asked ({method}): it takes no stream the question could go on"),
            ),
            Decline::CallFull { method } => (
                jsonrpc::INTERNAL_ERROR,
                format!("The proxy's client for this call has {MAX_QUESTIONS} questions unanswered already ({method} not asked)"),
            ),
            Decline::SessionFull { method, limit } => (
                jsonrpc::INTERNAL_ERROR,
                format!("The proxy's client has {limit} questions waiting already (MAX_PENDING_QUESTIONS); this {method} was not asked"),
            ),
            Decline::GroupFull => (
                jsonrpc::INTERNAL_ERROR,
                "The proxy's client has too many calls waiting for its answers (MAX_PENDING_QUESTIONS); this question was not asked".to_string(),
            ),
            Decline::NoAnswerInRetry { key } => (
                jsonrpc::INVALID_PARAMS,
                format!("The client's retry carried no answer for this question (inputResponses has no {key:?})"),
            ),
        };
        RpcError::new(code, message)
    }

    /// Whether the proxy declined at the upstream's side of the call (counted `declined`);
    /// the others were declined on the client's side (a session or group full, a retry
    /// without the answer) and are counted `refused`, as a client's error is.
    pub fn at_the_call(&self) -> bool {
        matches!(
            self,
            Decline::Missing { .. } | Decline::NoStream { .. } | Decline::CallFull { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_read_back_as_sent() {
        for m in [asks::ELICIT, asks::SAMPLE, asks::ROOTS, "ping", "tasks/get"] {
            assert_eq!(Method::parse(m).as_str(), m);
        }
        assert_eq!(Method::parse("x"), Method::Other("x".into()));
    }

    #[test]
    fn a_question_is_allowed_by_what_the_client_declared() {
        let q = Question::new(asks::ELICIT, Some(json!({"mode": "url"})));
        let form = Askable::from_capabilities(Some(&json!({"elicitation": {}})));
        assert_eq!(q.allowed_by(form), Err(Missing(json!({"elicitation": {"url": {}}}))));
        assert!(Question::new(asks::ELICIT, None).allowed_by(form).is_ok());
        assert!(Question::new("tasks/get", None).allowed_by(Askable::ALL).is_err());
    }

    #[test]
    fn an_unanswered_question_says_why() {
        let t = Timeouts::new(std::time::Duration::from_secs(300));
        assert!(Answer::TimedOut.why(&t).contains("within 300 s"));
        assert!(Answer::Gone.why(&t).contains("went away"));
        assert!(Answer::Error(RpcError::new(-1, "no")).why(&t).contains("error -1: no"));
        assert_eq!(Answer::TimedOut.error(&t).unwrap().code, REQUEST_TIMED_OUT);
        assert_eq!(Answer::Gone.error(&t).unwrap().code, jsonrpc::REQUEST_CANCELLED);
        assert_eq!(Answer::Result(json!(1)).error(&t), None);
    }

    #[test]
    fn declines_keep_their_codes_and_texts() {
        let missing = Decline::Missing {
            method: asks::ROOTS.into(),
            needed: json!({"roots": {}}),
        }
        .error();
        assert_eq!(missing.code, asks::MISSING_CAPABILITY);
        assert_eq!(missing.data, Some(json!({"requiredCapabilities": {"roots": {}}})));
        let full = Decline::SessionFull {
            method: asks::ELICIT.into(),
            limit: 2,
        };
        assert!(full
            .error()
            .message
            .contains("has 2 questions waiting already (MAX_PENDING_QUESTIONS)"));
        assert!(!full.at_the_call());
        assert!(Decline::GroupFull.error().message.contains("MAX_PENDING_QUESTIONS"));
        assert_eq!(
            Decline::NoAnswerInRetry { key: "q1".into() }.error().code,
            jsonrpc::INVALID_PARAMS
        );
        assert!(Decline::CallFull { method: "x".into() }.at_the_call());
    }

    #[test]
    fn a_response_is_its_result_else_its_error() {
        assert_eq!(Answer::from_response(Some(json!(1)), None), Answer::Result(json!(1)));
        let e = RpcError::new(-1, "no");
        assert_eq!(Answer::from_response(None, Some(e.clone())), Answer::Error(e));
        assert!(matches!(Answer::from_response(None, None), Answer::Error(e) if e.code == jsonrpc::INVALID_REQUEST));
    }
}
