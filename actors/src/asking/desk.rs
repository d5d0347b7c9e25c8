//! [`Desk`]: the one owner of what waits on a client, in one actor (its state changes only in
//! its handlers):
//! - the questions posed to 2025-era sessions ([`Post`]), until the client POSTs its response
//!   ([`Deliver`], routed by session and the proxy-owned id) or the question is withdrawn
//!   ([`Withdraw`]: timed out, or its call ended); ending the session ([`EndSession`]) drops
//!   them (the upstream is then told the client went away). At most `max_pending` per session.
//! - the calls held for 2026-07-28 clients ([`Hold`], [`Take`]), at most `max_pending` per
//!   client group and [`MAX_HELD_TOTAL`] in all, each given up when the question timeout
//!   passes ([`HeldCall::expire`]).
//!
//! Both tables are one [`Bounded`] type. They live in this process: a response or a retry
//! that reaches another instance finds nothing (the deployment docs say to keep a client on
//! one instance). Proxy-owned question ids are `mcp-search-proxy-{prefix}-{n}`, the prefix
//! random per process (an answer meant for an earlier process, or another replica, reaches
//! nothing); held ids are 32 random hex digits.

use actix::prelude::*;
use tokio::sync::oneshot;

use proxy_core::asking::{Answer, Bounded, Limits, Timeouts, MAX_HELD_TOTAL};

use super::held::HeldCall;

pub struct Desk {
    /// Proxy-owned question id → where the client's answer goes; owned by its session.
    questions: Bounded<oneshot::Sender<Answer>>,
    next_question: u64,
    question_prefix: String,
    /// Held id → held call; owned by its client group.
    held: Bounded<HeldCall>,
    timeouts: Timeouts,
    max_pending: usize,
}

impl Desk {
    /// A desk whose sessions and client groups each have at most `max_pending` questions
    /// waiting or calls held (`MAX_PENDING_QUESTIONS`).
    pub fn new(timeouts: Timeouts, max_pending: usize) -> Desk {
        Desk {
            questions: Bounded::new(Limits {
                per_owner: max_pending,
                total: usize::MAX,
            }),
            next_question: 1,
            question_prefix: random_hex().map_or_else(|| "0".into(), |id| id[..8].to_string()),
            held: Bounded::new(Limits {
                per_owner: max_pending,
                total: MAX_HELD_TOTAL,
            }),
            timeouts,
            max_pending,
        }
    }
}

impl Actor for Desk {
    type Context = Context<Self>;
}

/// A question for a session's client: registers where its answer goes, and returns the
/// proxy-owned request id to send it under (`Err(limit)`: the session has `limit` questions
/// waiting already).
#[derive(Message)]
#[rtype(result = "Result<String, usize>")]
pub struct Post {
    pub session: String,
    pub reply: oneshot::Sender<Answer>,
}

/// A client's answer to the question `id` of its session; whether it was awaited.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Deliver {
    pub session: String,
    pub id: String,
    pub answer: Answer,
}

/// The question is no longer awaited (answered, timed out, or its call ended).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Withdraw {
    pub session: String,
    pub id: String,
}

/// A session ended: its questions are dropped (their calls are told the client went away).
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndSession(pub String);

/// Holds a call for a client group until its retry or the question timeout; its id, or the
/// call back when the group (or the proxy) holds too many.
#[derive(Message)]
#[rtype(result = "Result<String, HeldCall>")]
pub struct Hold {
    pub group: String,
    pub call: HeldCall,
}

/// Takes the call held under this id (`None`: unknown, taken already, or expired).
#[derive(Message)]
#[rtype(result = "Option<HeldCall>")]
pub struct Take(pub String);

/// How many calls are held (for tests and the readiness of a drained shutdown).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct CountHeld;

impl Handler<Post> for Desk {
    type Result = Result<String, usize>;

    fn handle(&mut self, msg: Post, _: &mut Self::Context) -> Self::Result {
        // questions of this session nobody waits for any more (their call's future was dropped
        // before it could withdraw them) give their places back
        self.questions.purge(&msg.session, oneshot::Sender::is_closed);
        if !self.questions.has_room(&msg.session) {
            return Err(self.max_pending);
        }
        let id = format!("mcp-search-proxy-{}-{}", self.question_prefix, self.next_question);
        self.next_question += 1;
        match self.questions.insert(msg.session, id.clone(), msg.reply) {
            Ok(()) => Ok(id),
            Err(_) => Err(self.max_pending),
        }
    }
}

impl Handler<Deliver> for Desk {
    type Result = bool;

    fn handle(&mut self, msg: Deliver, _: &mut Self::Context) -> bool {
        match self.questions.remove_owned(&msg.session, &msg.id) {
            Some(reply) => reply.send(msg.answer).is_ok(),
            None => false,
        }
    }
}

impl Handler<Withdraw> for Desk {
    type Result = ();

    fn handle(&mut self, msg: Withdraw, _: &mut Self::Context) {
        self.questions.remove_owned(&msg.session, &msg.id);
    }
}

impl Handler<EndSession> for Desk {
    type Result = ();

    fn handle(&mut self, msg: EndSession, _: &mut Self::Context) {
        // dropping a question's sender tells its call the client went away
        self.questions.drop_owner(&msg.0);
    }
}

impl Handler<Hold> for Desk {
    type Result = MessageResult<Hold>;

    fn handle(&mut self, msg: Hold, ctx: &mut Self::Context) -> Self::Result {
        if !self.held.has_room(&msg.group) {
            return MessageResult(Err(msg.call));
        }
        let Some(id) = random_hex() else {
            return MessageResult(Err(msg.call));
        };
        if let Err(call) = self.held.insert(msg.group, id.clone(), msg.call) {
            return MessageResult(Err(call));
        }
        let ttl = self.timeouts.held_ttl();
        let expiring = id.clone();
        ctx.run_later(ttl, move |this, _| {
            if let Some(call) = this.held.remove(&expiring) {
                log::info!(ttl_s = ttl.as_secs(); "held call expired unanswered");
                call.expire();
            }
        });
        MessageResult(Ok(id))
    }
}

impl Handler<Take> for Desk {
    type Result = MessageResult<Take>;

    fn handle(&mut self, msg: Take, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.held.remove(&msg.0))
    }
}

impl Handler<CountHeld> for Desk {
    type Result = usize;

    fn handle(&mut self, _: CountHeld, _: &mut Self::Context) -> usize {
        self.held.len()
    }
}

/// 32 hex digits from the OS random source.
fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::upstream::cancel_pair;
    use serde_json::json;

    fn desk(max_pending: usize, question: Duration) -> Addr<Desk> {
        Desk::new(Timeouts::new(question), max_pending).start()
    }

    async fn post(d: &Addr<Desk>, session: &str) -> (Result<String, usize>, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        let id = d
            .send(Post {
                session: session.into(),
                reply: tx,
            })
            .await
            .unwrap();
        (id, rx)
    }

    async fn deliver(d: &Addr<Desk>, session: &str, id: &str, v: i64) -> bool {
        d.send(Deliver {
            session: session.into(),
            id: id.into(),
            answer: Answer::Result(json!(v)),
        })
        .await
        .unwrap()
    }

    #[actix::test]
    async fn answers_reach_the_question_of_their_own_session_only() {
        let d = desk(2, Duration::from_secs(60));
        let (a, ra) = post(&d, "a").await;
        let (b, rb) = post(&d, "b").await;
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_ne!(a, b, "ids are unique across sessions");
        assert!(a.starts_with("mcp-search-proxy-"));
        // an answer on the wrong session, or to an unknown id, reaches nothing
        assert!(!deliver(&d, "b", &a, 0).await);
        assert!(!deliver(&d, "a", "mcp-search-proxy-999", 0).await);
        assert!(deliver(&d, "b", &b, 2).await);
        assert!(deliver(&d, "a", &a, 1).await);
        assert_eq!(ra.await.unwrap(), Answer::Result(json!(1)));
        assert_eq!(rb.await.unwrap(), Answer::Result(json!(2)));
        // answered once
        assert!(!deliver(&d, "a", &a, 1).await);
    }

    #[actix::test]
    async fn questions_are_bounded_per_session_and_dropped_with_it() {
        let d = desk(2, Duration::from_secs(60));
        let (q1, r1) = post(&d, "a").await;
        let (q2, _r2) = post(&d, "a").await;
        assert!(q1.is_ok() && q2.is_ok());
        assert_eq!(post(&d, "a").await.0, Err(2), "limit 2 per session");
        // another session has its own bound; a question nobody waits for any more (its
        // call's receiver dropped before it withdrew it) gives its place back
        let (b1, rb1) = post(&d, "b").await;
        let (b2, _rb2) = post(&d, "b").await;
        assert!(b1.is_ok() && b2.is_ok());
        drop(rb1);
        assert!(post(&d, "b").await.0.is_ok(), "the stale question was purged");
        d.send(Withdraw {
            session: "a".into(),
            id: q2.unwrap(),
        })
        .await
        .unwrap();
        let (q3, r3) = post(&d, "a").await;
        assert!(q3.is_ok(), "a withdrawn question frees its place");
        d.send(EndSession("a".into())).await.unwrap();
        assert!(
            r1.await.is_err() && r3.await.is_err(),
            "ending the session drops its questions"
        );
        assert!(!deliver(&d, "a", &q1.unwrap(), 0).await);
    }

    /// Holds `call` for client group `c`: its id.
    async fn hold(d: &Addr<Desk>, call: HeldCall) -> String {
        d.send(Hold {
            group: "c".into(),
            call,
        })
        .await
        .unwrap()
        .ok()
        .unwrap()
    }

    /// A held call whose outcome never comes; the receiver tells when it is cancelled.
    fn held() -> (
        HeldCall,
        crate::upstream::CancelToken,
        oneshot::Sender<CallOutcomeAlias>,
    ) {
        let (done, outcome) = oneshot::channel();
        let (_q, questions) = super::super::asker();
        let (_e, events) = tokio::sync::mpsc::channel(1);
        let (cancel, token) = cancel_pair();
        let call = HeldCall::new(
            outcome,
            questions,
            events,
            cancel,
            ("u".into(), "t".into()),
            Timeouts::new(Duration::from_millis(20)),
        );
        (call, token, done)
    }

    type CallOutcomeAlias = proxy_core::tools::CallOutcome;

    #[actix::test]
    async fn a_held_call_is_taken_once_or_expires_and_is_cancelled() {
        let d = desk(4, Duration::from_secs(60));
        let (call, _token, _done) = held();
        let id = hold(&d, call).await;
        assert!(d.send(Take("nope".into())).await.unwrap().is_none());
        assert!(d.send(Take(id.clone())).await.unwrap().is_some());
        assert!(d.send(Take(id)).await.unwrap().is_none(), "taken once");

        let d = desk(4, Duration::from_millis(20));
        let (call, mut token, _done) = held();
        let id = hold(&d, call).await;
        // expired after 20 ms; cancelled after the 2 s grace (the outcome never comes)
        let reason = tokio::time::timeout(Duration::from_secs(5), token.cancelled()).await;
        assert_eq!(reason.ok(), Some(crate::upstream::CancelReason::Unanswered));
        assert!(d.send(Take(id)).await.unwrap().is_none());
        assert_eq!(d.send(CountHeld).await.unwrap(), 0);
    }

    #[actix::test]
    async fn held_calls_are_bounded_per_group() {
        let d = desk(2, Duration::from_secs(60));
        let hold = |group: &str| Hold {
            group: group.into(),
            call: held().0,
        };
        let a1 = d.send(hold("a")).await.unwrap().ok().unwrap();
        assert!(d.send(hold("a")).await.unwrap().is_ok());
        assert!(d.send(hold("a")).await.unwrap().is_err(), "2 per group");
        assert!(d.send(hold("b")).await.unwrap().is_ok());
        assert!(d.send(Take(a1)).await.unwrap().is_some());
        assert!(d.send(hold("a")).await.unwrap().is_ok(), "a taken call frees its place");
        assert_eq!(d.send(CountHeld).await.unwrap(), 3);
    }
}
