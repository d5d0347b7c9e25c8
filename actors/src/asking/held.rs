//! A call held for a 2026-07-28 client while it answers the call's questions ([`HeldCall`]).
//!
//! A 2026-07-28 client is asked through `input_required` rounds: it gets the questions as a
//! result and retries the call with its answers. When the upstream is of the 2025 era, its
//! call stays open meanwhile (the questions arrived on its stream and wait for answers under
//! its ids), so the call is held by the [`Desk`](super::Desk) between the client's two
//! requests, under a fresh unguessable id its sealed state names, until the retry takes it or
//! its time runs out ([`HeldCall::expire`]). It is driven by `drive.rs`.

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use proxy_core::asking::{self, Answer, Decline, Timeouts};
use proxy_core::tools::CallOutcome;

use super::asker::Ask;
use crate::upstream::CancelHandle;

/// A held call: the running call's outcome, its questions (asked and waiting, and the next
/// ones), its notifications, and the handle whose drop cancels it upstream.
pub struct HeldCall {
    pub(super) outcome: oneshot::Receiver<CallOutcome>,
    pub(super) questions: mpsc::Receiver<Ask>,
    pub(super) events: mpsc::Receiver<Value>,
    pub(super) upstream: String,
    pub(super) tool: String,
    waiting: Vec<(String, Ask)>,
    next_key: u32,
    timeouts: Timeouts,
    /// Dropped with the call: cancels it upstream.
    cancel: CancelHandle,
}

impl HeldCall {
    pub fn new(
        outcome: oneshot::Receiver<CallOutcome>,
        questions: mpsc::Receiver<Ask>,
        events: mpsc::Receiver<Value>,
        cancel: CancelHandle,
        (upstream, tool): (String, String),
        timeouts: Timeouts,
    ) -> HeldCall {
        HeldCall {
            outcome,
            questions,
            events,
            upstream,
            tool,
            waiting: Vec::new(),
            next_key: 1,
            timeouts,
            cancel,
        }
    }

    /// Takes `ask` and any more questions already sent, each under its key (`q1`, `q2`, …),
    /// and drops the waiting questions the call stopped waiting for (timed out on its side).
    /// Whether any question waits.
    pub fn take_questions(&mut self, ask: Ask) -> bool {
        let mut asked = vec![ask];
        while let Ok(more) = self.questions.try_recv() {
            asked.push(more);
        }
        for ask in asked {
            let key = format!("q{}", self.next_key);
            self.next_key += 1;
            self.waiting.push((key, ask));
        }
        self.waiting.retain(|(_, ask)| !ask.reply.is_closed());
        !self.waiting.is_empty()
    }

    /// The waiting questions as the client's `inputRequests`.
    pub fn round(&self) -> Value {
        asking::input_requests(self.waiting.iter().map(|(key, ask)| (key.as_str(), &ask.question)))
    }

    /// Declines every waiting question (the call is not held).
    pub fn decline_waiting(&mut self, why: Decline) {
        for (_, ask) in self.waiting.drain(..) {
            let _ = ask.reply.send(Answer::Declined(why.clone()));
        }
    }

    /// A retry's `inputResponses` to the waiting questions, by key (a question it did not
    /// answer gets an error).
    pub fn answer_waiting(&mut self, responses: Option<Value>) {
        let responses = match responses {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        for (key, ask) in self.waiting.drain(..) {
            let _ = ask.reply.send(asking::answer_in_retry(&responses, &key));
        }
    }

    /// Its time ran out, as for a 2025-era client that does not answer: the questions time
    /// out (the upstream is told so and its tool may end as it sees fit); a call still running
    /// after [`asking::EXPIRY_GRACE`] is cancelled.
    pub(super) fn expire(mut self) {
        for (_, ask) in self.waiting.drain(..) {
            let _ = ask.reply.send(Answer::TimedOut);
        }
        actix::spawn(async move {
            let _ = tokio::time::timeout(self.timeouts.expiry_grace(), &mut self.outcome).await;
            self.cancel.cancel(crate::upstream::CancelReason::Unanswered);
        });
    }
}
