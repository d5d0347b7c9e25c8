//! The 2025-era client's side: a call's questions relayed on the call's own stream
//! ([`relay_questions`]), each posted at the [`Desk`] (bounded per session) under a
//! proxy-owned id, sent, and waited for until the client answers, the question timeout
//! passes, the session ends, or the call stops waiting. A question that ends without the
//! client's answer is withdrawn on the stream too (the client gets `notifications/cancelled`
//! for it, so it can put the prompt away).
//!
//! The framing is the HTTP layer's ([`ClientStream`], the wire): here is only when to send,
//! how long to wait, and what the call is told.

use std::future::Future;

use actix::Addr;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;

use proxy_core::asking::{Answer, Decline, Question, Timeouts, Withdrawal};

use super::asker::Ask;
use super::desk::{Desk, Post, Withdraw};

/// A client's stream, as the questions of its call reach it (framed by the HTTP layer).
pub trait ClientStream {
    /// Sends `question` under the proxy-owned `id`, waiting while the stream is full;
    /// `Err(Closed)` once the client's stream is gone.
    fn put(&self, id: &str, question: Question) -> impl Future<Output = Result<(), Closed>>;
    /// Tells the client the question `id` is withdrawn; never waits (dropped on a full
    /// stream).
    fn withdraw(&self, id: &str, why: Withdrawal);
}

/// The client's stream is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// Relays a 2025-era call's questions to its client on `stream`, and hands each answer (or
/// why there is none) back to the call. Runs alongside the call; ends when the call's asker
/// is dropped and every question has ended.
pub async fn relay_questions<S: ClientStream>(
    desk: &Addr<Desk>,
    timeouts: Timeouts,
    session: &str,
    mut questions: mpsc::Receiver<Ask>,
    stream: &S,
) {
    let mut asking = FuturesUnordered::new();
    loop {
        tokio::select! {
            ask = questions.recv() => match ask {
                Some(ask) => asking.push(pose(desk, timeouts, session, ask, stream)),
                None => break,
            },
            Some(()) = asking.next(), if !asking.is_empty() => {}
        }
    }
    while asking.next().await.is_some() {}
}

/// One question on a client's stream (see the module docs).
async fn pose<S: ClientStream>(desk: &Addr<Desk>, timeouts: Timeouts, session: &str, ask: Ask, stream: &S) {
    let Ask { question, mut reply } = ask;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let posted = desk.send(Post {
        session: session.to_string(),
        reply: tx,
    });
    let id = match posted.await {
        Ok(Ok(id)) => id,
        Ok(Err(limit)) => {
            let method = question.method.as_str().to_string();
            let _ = reply.send(Answer::Declined(Decline::SessionFull { method, limit }));
            return;
        }
        // the desk is gone (shutdown): the client cannot be asked any more
        Err(_) => {
            let _ = reply.send(Answer::Gone);
            return;
        }
    };
    // the question is withdrawn however this ends (answered, timed out, or dropped with its call)
    let mut withdraw = Withdrawn {
        desk,
        session,
        id,
        stream: Some(stream),
        reason: Withdrawal::CallEnded,
    };
    // the question's time counts from now: a client that stopped reading its stream (a full
    // buffer) does not hold it longer
    let deadline = timeouts.deadline(tokio::time::Instant::now());
    match tokio::time::timeout_at(deadline, stream.put(&withdraw.id, question)).await {
        Ok(Ok(())) => {}
        Ok(Err(Closed)) => {
            let _ = reply.send(Answer::Gone);
            return;
        }
        Err(_) => {
            let _ = reply.send(Answer::TimedOut);
            return;
        }
    }
    let answer = tokio::select! {
        r = tokio::time::timeout_at(deadline, rx) => match r {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => {
                withdraw.reason = Withdrawal::SessionEnded;
                Answer::Gone
            }
            Err(_) => {
                withdraw.reason = Withdrawal::TimedOut;
                Answer::TimedOut
            }
        },
        () = reply.closed() => return,
    };
    if matches!(answer, Answer::Result(_) | Answer::Error(_)) {
        withdraw.stream = None;
    }
    let _ = reply.send(answer);
}

/// Withdraws a question from the desk when dropped, and, unless the client answered it
/// (`stream` taken), from the client's stream.
struct Withdrawn<'a, S: ClientStream> {
    desk: &'a Addr<Desk>,
    session: &'a str,
    id: String,
    stream: Option<&'a S>,
    reason: Withdrawal,
}

impl<S: ClientStream> Drop for Withdrawn<'_, S> {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            stream.withdraw(&self.id, self.reason);
        }
        self.desk.do_send(Withdraw {
            session: self.session.to_string(),
            id: std::mem::take(&mut self.id),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::time::Duration;

    use actix::Actor;
    use serde_json::json;
    use tokio::sync::oneshot;

    use super::*;
    use crate::asking::desk::Deliver;

    /// A client's stream that records what it is sent; `closed` refuses every question.
    #[derive(Default)]
    struct Recorded {
        sent: RefCell<Vec<(String, Question)>>,
        withdrawn: RefCell<Vec<(String, Withdrawal)>>,
        closed: bool,
    }

    impl ClientStream for Recorded {
        fn put(&self, id: &str, question: Question) -> impl Future<Output = Result<(), Closed>> {
            if !self.closed {
                self.sent.borrow_mut().push((id.to_string(), question));
            }
            std::future::ready(if self.closed { Err(Closed) } else { Ok(()) })
        }

        fn withdraw(&self, id: &str, why: Withdrawal) {
            self.withdrawn.borrow_mut().push((id.to_string(), why));
        }
    }

    fn ask() -> (Ask, oneshot::Receiver<Answer>) {
        let (reply, answer) = oneshot::channel();
        let question = Question::new(mcp_wire::asks::ELICIT, Some(json!({"message": "ok?"})));
        (Ask { question, reply }, answer)
    }

    #[actix::test]
    async fn an_answered_question_goes_back_to_the_call_and_is_not_withdrawn_on_the_stream() {
        let desk = Desk::new(Timeouts::new(Duration::from_secs(60)), 2).start();
        let stream = Recorded::default();
        let (tx, rx) = mpsc::channel(4);
        let (q, answer) = ask();
        tx.send(q).await.unwrap();
        drop(tx);
        let client = async {
            // the client reads the question and posts its answer
            let id = loop {
                if let Some((id, _)) = stream.sent.borrow().first() {
                    break id.clone();
                }
                tokio::task::yield_now().await;
            };
            let delivered = desk.send(Deliver {
                session: "s".into(),
                id,
                answer: Answer::Result(json!({"action": "accept"})),
            });
            assert!(delivered.await.unwrap());
        };
        let ((), ()) = tokio::join!(
            relay_questions(&desk, Timeouts::new(Duration::from_secs(60)), "s", rx, &stream),
            client
        );
        assert_eq!(answer.await.unwrap(), Answer::Result(json!({"action": "accept"})));
        assert!(stream.withdrawn.borrow().is_empty());
    }

    #[actix::test]
    async fn an_unanswered_question_times_out_and_is_withdrawn_with_the_reason() {
        let timeouts = Timeouts::new(Duration::from_millis(50));
        let desk = Desk::new(timeouts, 2).start();
        let stream = Recorded::default();
        let (tx, rx) = mpsc::channel(4);
        let (q, answer) = ask();
        tx.send(q).await.unwrap();
        drop(tx);
        relay_questions(&desk, timeouts, "s", rx, &stream).await;
        assert_eq!(answer.await.unwrap(), Answer::TimedOut);
        let withdrawn = stream.withdrawn.borrow();
        assert_eq!(withdrawn.len(), 1);
        assert_eq!(withdrawn[0].1, Withdrawal::TimedOut);
        assert_eq!(
            withdrawn[0].0,
            stream.sent.borrow()[0].0,
            "under the id it was sent with"
        );
    }

    #[actix::test]
    async fn a_closed_stream_or_a_full_session_ends_the_question_at_once() {
        let timeouts = Timeouts::new(Duration::from_secs(60));
        let desk = Desk::new(timeouts, 0).start();
        let (tx, rx) = mpsc::channel(4);
        let (q, answer) = ask();
        tx.send(q).await.unwrap();
        drop(tx);
        relay_questions(&desk, timeouts, "s", rx, &Recorded::default()).await;
        assert!(matches!(
            answer.await.unwrap(),
            Answer::Declined(Decline::SessionFull { limit: 0, .. })
        ));

        let desk = Desk::new(timeouts, 2).start();
        let closed = Recorded {
            closed: true,
            ..Recorded::default()
        };
        let (tx, rx) = mpsc::channel(4);
        let (q, answer) = ask();
        tx.send(q).await.unwrap();
        drop(tx);
        relay_questions(&desk, timeouts, "s", rx, &closed).await;
        assert_eq!(answer.await.unwrap(), Answer::Gone);
    }
}
