//! What a call may ask its caller, and how the answer comes back: the [`Interaction`] a
//! [`CallTool`](super::CallTool) carries.
//!
//! An upstream's question during a call (a 2025-era request on the call's stream, or a
//! 2026-07-28 `input_required` round the caller cannot take itself) is sent to the caller as
//! an [`Ask`] on the call's [`Asker`], and the actor waits for its [`Reply`] (at most the
//! question timeout). Who answers is the caller's business: the HTTP layer relays it on a
//! 2025-era client's stream, or the application hands it to a 2026-07-28 client as an
//! `input_required` round. A call without an asker, or a question the client declared no
//! capability for ([`Askable`]), is answered with an error at once.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use mcp_wire::asks::Askable;
use mcp_wire::jsonrpc::RpcError;

/// One question for the caller's client.
#[derive(Debug)]
pub struct Ask {
    pub method: String,
    pub params: Option<Value>,
    /// Where the answer goes; dropped unanswered, the question counts as abandoned.
    pub reply: oneshot::Sender<Reply>,
}

/// How a question ended on the client's side.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The client's result.
    Result(Value),
    /// The client answered with an error.
    Error(RpcError),
    /// No answer within the question timeout.
    TimedOut,
    /// The client went away (its stream closed, its session ended, its held call expired).
    Gone,
}

/// Where a call's questions go. Bounded: a call has at most [`MAX_QUESTIONS`] in flight.
pub type Asker = mpsc::Sender<Ask>;

/// Questions one call may have unanswered at a time; more are answered with an error at once.
pub const MAX_QUESTIONS: usize = 16;

/// The answers of a 2026-07-28 client's retry, for the upstream's next round.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// `inputResponses`, as the client sent them.
    pub responses: Option<Value>,
    /// The upstream's own `requestState` (unsealed by the application).
    pub state: Option<String>,
}

/// What a call may ask, and how its client takes part in the upstream's rounds.
#[derive(Debug, Clone)]
pub struct Interaction {
    /// Where questions go (`None`: every question is answered with an error at once).
    pub asker: Option<Asker>,
    /// What the client declared it can answer; also what a 2026-07-28 upstream is told in
    /// the call's `_meta` (`clientCapabilities`).
    pub askable: Askable,
    /// The client's `_meta["io.modelcontextprotocol/logLevel"]` opt-in, for a 2026-07-28
    /// upstream.
    pub log_level: Option<String>,
    /// A 2026-07-28 client takes the upstream's `input_required` results itself: the result
    /// is returned as it came (the application seals its state). Otherwise each round's
    /// questions go to the asker and the actor retries with the answers.
    pub pass_input_required: bool,
    /// This call continues an upstream round.
    pub round: Option<Round>,
    /// How long one question may wait for its answer.
    pub question_timeout: Duration,
}

impl Default for Interaction {
    fn default() -> Self {
        Interaction {
            asker: None,
            askable: Askable::NONE,
            log_level: None,
            pass_input_required: false,
            round: None,
            question_timeout: DEFAULT_QUESTION_TIMEOUT,
        }
    }
}

/// Runs `work` to its end while `side` (work that serves it, such as answering its questions)
/// runs alongside; `side` is dropped when `work` ends, and `work` still runs to its end when
/// `side` ends first. The upstream actor serves an upstream's requests on a call's stream
/// this way; the HTTP layer relays a call's questions to its client.
pub async fn alongside<T>(
    work: impl std::future::Future<Output = T>,
    side: impl std::future::Future<Output = ()>,
) -> T {
    tokio::pin!(work);
    tokio::select! {
        out = &mut work => out,
        () = side => work.await,
    }
}

/// `ELICITATION_TIMEOUT_SEC`'s default: a person may be answering.
pub const DEFAULT_QUESTION_TIMEOUT: Duration = Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets a flag when dropped.
    struct DropFlag(std::rc::Rc<std::cell::Cell<bool>>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    #[tokio::test]
    async fn the_side_is_dropped_when_the_work_ends() {
        let dropped = std::rc::Rc::new(std::cell::Cell::new(false));
        let flag = DropFlag(dropped.clone());
        let side = async move {
            let _flag = flag;
            std::future::pending::<()>().await
        };
        assert_eq!(alongside(async { 7 }, side).await, 7);
        assert!(dropped.get(), "the side future was dropped with the work's end");
    }

    #[tokio::test]
    async fn the_work_runs_on_after_the_side_ends() {
        let (tx, rx) = oneshot::channel::<u32>();
        let work = async move { rx.await.unwrap_or(0) };
        let side = async move {
            // the side ends first, having served the work
            let _ = tx.send(5);
        };
        assert_eq!(alongside(work, side).await, 5);
    }
}
