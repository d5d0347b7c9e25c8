//! The asker side: what a [`CallTool`](crate::upstream::CallTool) may ask its caller
//! ([`Interaction`]), and the hand-over of one question ([`Interaction::pose`]): declined at
//! once, or [`Pending`] until its [`Answer`] comes back.
//!
//! Who answers is the caller's business: the HTTP layer relays the question on a 2025-era
//! client's stream (`stream.rs`), or the application holds the call for a 2026-07-28 client
//! (`held.rs`). A call without an asker, or a question the client declared no capability for
//! ([`Askable`]), is declined at once.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use mcp_wire::asks::{Askable, Missing};
use proxy_core::asking::{self, Answer, Decline, Question, Retry, RoundAnswers, Timeouts};
use proxy_metrics::AskedOutcome;

/// One question in transit to the caller's client.
#[derive(Debug)]
pub struct Ask {
    pub question: Question,
    /// Where the answer goes; dropped unanswered, the question counts as abandoned.
    pub reply: oneshot::Sender<Answer>,
}

/// Where a call's questions go. Bounded: a call has at most [`asking::MAX_QUESTIONS`] in
/// flight.
pub type Asker = mpsc::Sender<Ask>;

/// A call's questions channel: its [`Asker`], and where they arrive.
pub fn asker() -> (Asker, mpsc::Receiver<Ask>) {
    mpsc::channel(asking::MAX_QUESTIONS)
}

/// What a call's tool may ask its client, and how the question reaches it: read by the HTTP
/// layer from the client's request, carried by the application to [`Talk::interaction`].
#[derive(Debug, Default)]
pub struct Talk {
    /// What the client declared it can answer.
    pub askable: Askable,
    pub asking: Asking,
    /// A 2026-07-28 client's `_meta` log level opt-in, passed upstream.
    pub log_level: Option<String>,
    /// A 2026-07-28 client's retry: its `inputResponses` and the `requestState` it was given.
    pub retry: Option<Retry>,
    /// Who holds the call's questions, for the per-client bound of held calls (the token
    /// group; all unauthenticated clients share one).
    pub holder: String,
}

/// How a tool's questions reach the client.
#[derive(Debug, Default)]
pub enum Asking {
    /// They cannot: each is declined at once.
    #[default]
    Never,
    /// 2025 era: on the call's stream (`stream.rs`; the HTTP layer frames them).
    Stream(Asker),
    /// 2026-07-28: in `input_required` rounds the client answers on its retry.
    Rounds,
}

impl Talk {
    /// The call's [`Interaction`]: a 2026-07-28 client's call passes the upstream's rounds
    /// through (`pass_rounds`), and one whose client can be asked also gets the receiver of
    /// its questions (the call may be held while it asks: `drive.rs`); `round` continues an
    /// upstream's round.
    pub fn interaction(
        self,
        pass_rounds: bool,
        round: Option<RoundAnswers>,
        timeouts: Timeouts,
    ) -> (Interaction, Option<mpsc::Receiver<Ask>>) {
        let (asker, questions) = match self.asking {
            Asking::Stream(asker) => (Some(asker), None),
            Asking::Rounds if !self.askable.is_empty() => {
                let (tx, rx) = asker();
                (Some(tx), Some(rx))
            }
            Asking::Rounds | Asking::Never => (None, None),
        };
        let interaction = Interaction {
            asker,
            askable: self.askable,
            log_level: self.log_level,
            pass_input_required: pass_rounds,
            round,
            timeouts,
        };
        (interaction, questions)
    }
}

/// What a call may ask, and how its client takes part in the upstream's rounds.
#[derive(Debug, Clone, Default)]
pub struct Interaction {
    /// Where questions go (`None`: every question is declined at once).
    pub asker: Option<Asker>,
    /// What the client declared it can answer; also what a 2026-07-28 upstream is told in
    /// the call's `_meta` (`clientCapabilities`).
    pub askable: Askable,
    /// The client's `_meta["io.modelcontextprotocol/logLevel"]` opt-in, for a 2026-07-28
    /// upstream.
    pub log_level: Option<String>,
    /// A 2026-07-28 client takes the upstream's `input_required` rounds itself: the round is
    /// returned as it came (the application seals its state). Otherwise each round's
    /// questions go to the asker and the actor retries with the answers.
    pub pass_input_required: bool,
    /// This call continues an upstream round.
    pub round: Option<RoundAnswers>,
    /// How long a question waits for its answer.
    pub timeouts: Timeouts,
}

impl Interaction {
    /// Hands `question` over to the caller: declined at once when the client cannot take it
    /// (no capability, no asker, [`asking::MAX_QUESTIONS`] unanswered already), else the
    /// answer to come.
    pub fn pose(&self, question: Question) -> Result<Pending, Decline> {
        let method = || question.method.as_str().to_string();
        if let Err(Missing(needed)) = question.allowed_by(self.askable) {
            return Err(Decline::Missing {
                method: method(),
                needed,
            });
        }
        let Some(asker) = &self.asker else {
            return Err(Decline::NoStream { method: method() });
        };
        let (reply, answer) = oneshot::channel();
        match asker.try_send(Ask { question, reply }) {
            Ok(()) => Ok(Pending {
                answer,
                limit: self.timeouts.asker_limit(),
            }),
            Err(e) => Err(Decline::CallFull {
                method: e.into_inner().question.method.as_str().to_string(),
            }),
        }
    }

    /// The call's `_meta` keys for a 2026-07-28 upstream (see [`asking::upstream_meta`]).
    pub fn upstream_meta(&self) -> Map<String, Value> {
        asking::upstream_meta(self.askable, self.log_level.as_deref())
    }
}

/// A question handed over, until its answer comes back.
#[derive(Debug)]
pub struct Pending {
    answer: oneshot::Receiver<Answer>,
    limit: Duration,
}

impl Pending {
    /// The answer; [`Answer::TimedOut`] if none came a little after the question timeout (the
    /// caller enforces that one: this only guards against one that never replies), and
    /// [`Answer::Gone`] if the caller dropped the question.
    pub async fn answer(self) -> Answer {
        match tokio::time::timeout(self.limit, self.answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Answer::Gone,
            Err(_) => Answer::TimedOut,
        }
    }
}

/// How a question that got `answer` is counted: a decline of the proxy's at the call is
/// `declined`; one of the client's side (a session or group full, a retry without the
/// answer) is `refused`, as the client's own error is.
pub fn asked_outcome(answer: &Answer) -> AskedOutcome {
    match answer {
        Answer::Result(_) => AskedOutcome::Answered,
        Answer::Error(_) => AskedOutcome::Refused,
        Answer::Declined(d) if d.at_the_call() => AskedOutcome::Declined,
        Answer::Declined(_) => AskedOutcome::Refused,
        Answer::TimedOut => AskedOutcome::TimedOut,
        Answer::Gone => AskedOutcome::Abandoned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_question_is_declined_at_once_or_handed_over() {
        let roots = Askable::from_capabilities(Some(&json!({"roots": {}})));
        let q = || Question::new(mcp_wire::asks::ROOTS, None);
        let none = Interaction::default();
        assert!(matches!(none.pose(q()), Err(Decline::Missing { .. })));
        let no_stream = Interaction {
            askable: roots,
            ..Interaction::default()
        };
        assert_eq!(
            no_stream.pose(q()).unwrap_err(),
            Decline::NoStream {
                method: "roots/list".into()
            }
        );
        let (tx, mut rx) = asker();
        let talk = Interaction {
            askable: roots,
            asker: Some(tx),
            ..Interaction::default()
        };
        let pending = talk.pose(q()).unwrap();
        let ask = rx.recv().await.unwrap();
        assert_eq!(ask.question, q());
        ask.reply.send(Answer::Result(json!({"roots": []}))).unwrap();
        assert_eq!(pending.answer().await, Answer::Result(json!({"roots": []})));
        // a dropped question is gone
        let pending = talk.pose(q()).unwrap();
        drop(rx.recv().await);
        assert_eq!(pending.answer().await, Answer::Gone);
        // a full call declines
        let mut held = Vec::new();
        for _ in 0..asking::MAX_QUESTIONS {
            held.push(talk.pose(q()).unwrap());
        }
        assert!(matches!(talk.pose(q()), Err(Decline::CallFull { .. })));
    }

    #[test]
    fn answers_are_counted_as_before() {
        let d = |d: Decline| asked_outcome(&Answer::Declined(d));
        assert_eq!(d(Decline::NoStream { method: "x".into() }), AskedOutcome::Declined);
        assert_eq!(d(Decline::GroupFull), AskedOutcome::Refused);
        assert_eq!(asked_outcome(&Answer::Gone), AskedOutcome::Abandoned);
        assert_eq!(asked_outcome(&Answer::TimedOut), AskedOutcome::TimedOut);
    }
}
