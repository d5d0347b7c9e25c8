//! Legacy-era client sessions: minted, but never required.
//!
//! The proxy's tools keep no per-client state, yet a 2025-era client that gets an
//! `Mcp-Session-Id` can end it (`DELETE`) and cancel its own in-flight calls
//! (`notifications/cancelled` with the request id). So `initialize` mints an id, and this
//! actor remembers only what those two features need: ids that were ended (answered 404
//! afterwards, as the spec requires; bounded, oldest forgotten first) and the cancel handles of
//! calls in flight. A request without an id, or with an id from before a restart, is simply
//! served: losing this state never breaks a client.
//!
//! A session also carries what its client declared it can be asked at `initialize`
//! (elicitation, sampling, roots): in the id itself (`mcp_wire::asks::Askable::session_suffix`),
//! so no table is needed to know it. While a call of the session is open, the questions its
//! upstream asks the client wait here ([`Pose`]) until the client POSTs its response
//! ([`Answered`], routed by session and the proxy-owned id) or the question is withdrawn
//! ([`Withdraw`]: timed out, or its call ended); ending the session drops them (the upstream
//! is then told the client went away). A session has at most `limit` questions waiting. The
//! questions live in this process: a client's response must reach the instance that asked
//! (legacy sessions are sticky, see the deployment docs).
//!
//! Every request that carries a session id must know whether it was ended, so the actor
//! publishes the ended set on a `watch` channel: the actor is its only writer (in place, on
//! `End`), handlers read it without a message round trip ([`EndedIds::contains`] through
//! [`Ended`]). Tracking calls in flight stays fire-and-forget messages, sent only for calls
//! still running after [`TRACK_AFTER`] (a fast call costs this actor nothing); a cancel that
//! arrives before its call joined is held for a moment and applied when it joins.

use std::collections::{HashMap, HashSet, VecDeque};

use actix::prelude::*;
use mcp_wire::asks::Askable;
use mcp_wire::jsonrpc::RpcError;
use tokio::sync::{oneshot, watch};

/// At most this many ended session ids are remembered.
const MAX_ENDED: usize = 100_000;

/// A call joins the in-flight table when it is still running after this long.
pub const TRACK_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// A cancel for a call not (yet) in the table is held this long, for a call that is about to
/// join (a request id may be reused after its call ended, so not longer)...
const EARLY_CANCEL_TTL: std::time::Duration = std::time::Duration::from_secs(2);
/// ... and at most this many are held.
const MAX_EARLY_CANCELS: usize = 10_000;

/// The ended session ids, bounded, oldest forgotten first.
#[derive(Debug, Default)]
pub struct EndedIds {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl EndedIds {
    pub fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }

    fn insert(&mut self, id: String, cap: usize) {
        if self.set.insert(id.clone()) {
            self.order.push_back(id);
            while self.order.len() > cap {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

/// A reader of the ended set, for the HTTP workers.
#[derive(Clone)]
pub struct Ended(watch::Receiver<EndedIds>);

impl Ended {
    /// Whether `id` was ended (a read of the published set; no message).
    pub fn contains(&self, id: &str) -> bool {
        self.0.borrow().contains(id)
    }
}

pub struct ClientSessions {
    ended: watch::Sender<EndedIds>,
    /// (session id, proxy-owned request id) → where the client's response goes.
    questions: HashMap<(String, String), oneshot::Sender<Result<serde_json::Value, RpcError>>>,
    /// Questions waiting per session.
    waiting: HashMap<String, usize>,
    /// Numbers the proxy-owned request ids, after a random prefix of this process (an answer
    /// meant for a question of an earlier process, or of another replica, reaches nothing).
    next_question: u64,
    question_prefix: String,
    /// (session id, request id as text) → dropping the sender cancels the call.
    inflight: HashMap<(String, String), oneshot::Sender<()>>,
    /// Cancels of calls not in `inflight` (yet), with when they came.
    early_cancels: HashMap<(String, String), std::time::Instant>,
}

impl Default for ClientSessions {
    fn default() -> Self {
        ClientSessions {
            ended: watch::channel(EndedIds::default()).0,
            questions: HashMap::new(),
            waiting: HashMap::new(),
            next_question: 1,
            question_prefix: mint_id(Askable::NONE).map_or_else(|| "0".into(), |id| id[..8].to_string()),
            inflight: HashMap::new(),
            early_cancels: HashMap::new(),
        }
    }
}

impl ClientSessions {
    /// A reader of the ended set; take it before starting the actor.
    pub fn ended(&self) -> Ended {
        Ended(self.ended.subscribe())
    }
}

impl Actor for ClientSessions {
    type Context = Context<Self>;
}

/// A fresh, unguessable session id (32 hex digits from the OS random source, then what the
/// client can be asked), or `None` when the OS cannot give randomness (sessions are optional
/// here: the client then gets none).
pub fn mint_id(askable: Askable) -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let mut id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    id.push_str(&askable.session_suffix());
    Some(id)
}

/// A question for a session's client: registers where its response goes, and returns the
/// proxy-owned request id to send it under (`None`: the session has `limit` questions waiting
/// already).
#[derive(Message)]
#[rtype(result = "Option<String>")]
pub struct Pose {
    pub session: String,
    pub reply: oneshot::Sender<Result<serde_json::Value, RpcError>>,
    pub limit: usize,
}

/// A client's response (result or error) to the question `id`; whether it was awaited.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Answered {
    pub session: String,
    pub id: String,
    pub response: Result<serde_json::Value, RpcError>,
}

/// The question is no longer awaited (answered, timed out, or its call ended).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Withdraw {
    pub session: String,
    pub id: String,
}

impl ClientSessions {
    fn forget_question(
        &mut self,
        key: &(String, String),
    ) -> Option<oneshot::Sender<Result<serde_json::Value, RpcError>>> {
        let reply = self.questions.remove(key)?;
        if let Some(n) = self.waiting.get_mut(&key.0) {
            *n -= 1;
            if *n == 0 {
                self.waiting.remove(&key.0);
            }
        }
        Some(reply)
    }
}

impl Handler<Pose> for ClientSessions {
    type Result = Option<String>;

    fn handle(&mut self, msg: Pose, _: &mut Self::Context) -> Option<String> {
        // questions of this session nobody waits for any more (their call's future was dropped
        // before it could withdraw them) give their places back
        let session = msg.session.as_str();
        let stale: Vec<(String, String)> = self
            .questions
            .iter()
            .filter(|((s, _), reply)| s == session && reply.is_closed())
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            self.forget_question(&key);
        }
        let waiting = self.waiting.entry(msg.session.clone()).or_insert(0);
        if *waiting >= msg.limit {
            return None;
        }
        *waiting += 1;
        let id = format!("mcp-search-proxy-{}-{}", self.question_prefix, self.next_question);
        self.next_question += 1;
        self.questions.insert((msg.session, id.clone()), msg.reply);
        Some(id)
    }
}

impl Handler<Answered> for ClientSessions {
    type Result = bool;

    fn handle(&mut self, msg: Answered, _: &mut Self::Context) -> bool {
        match self.forget_question(&(msg.session, msg.id)) {
            Some(reply) => reply.send(msg.response).is_ok(),
            None => false,
        }
    }
}

impl Handler<Withdraw> for ClientSessions {
    type Result = ();

    fn handle(&mut self, msg: Withdraw, _: &mut Self::Context) {
        self.forget_question(&(msg.session, msg.id));
    }
}

/// Ends a session: later requests carrying it get 404 (once this message is handled).
#[derive(Message)]
#[rtype(result = "()")]
pub struct End(pub String);

/// Registers an in-flight call so `notifications/cancelled` can reach it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Track {
    pub session: String,
    pub request_id: String,
    pub cancel: oneshot::Sender<()>,
}

/// The call finished; forget its handle.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Untrack {
    pub session: String,
    pub request_id: String,
}

/// The client cancelled a call (`notifications/cancelled`); returns whether it was in flight.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Cancel {
    pub session: String,
    pub request_id: String,
}

impl Handler<End> for ClientSessions {
    type Result = ();

    fn handle(&mut self, msg: End, _: &mut Self::Context) {
        self.inflight.retain(|(s, _), _| *s != msg.0);
        // dropping a question's sender tells its call the client went away
        self.questions.retain(|(s, _), _| *s != msg.0);
        self.waiting.remove(&msg.0);
        self.early_cancels.retain(|(s, _), _| *s != msg.0);
        self.ended.send_modify(|ended| ended.insert(msg.0, MAX_ENDED));
    }
}

impl Handler<Track> for ClientSessions {
    type Result = ();

    fn handle(&mut self, msg: Track, _: &mut Self::Context) {
        let key = (msg.session, msg.request_id);
        match self.early_cancels.remove(&key) {
            // Cancelled before it joined: dropping the sender cancels it now.
            Some(at) if at.elapsed() < EARLY_CANCEL_TTL => drop(msg.cancel),
            _ => {
                self.inflight.insert(key, msg.cancel);
            }
        }
    }
}

impl Handler<Untrack> for ClientSessions {
    type Result = ();

    fn handle(&mut self, msg: Untrack, _: &mut Self::Context) {
        self.inflight.remove(&(msg.session, msg.request_id));
    }
}

impl Handler<Cancel> for ClientSessions {
    type Result = bool;

    fn handle(&mut self, msg: Cancel, _: &mut Self::Context) -> bool {
        let key = (msg.session, msg.request_id);
        // Dropping the sender wakes the call's cancel branch.
        if self.inflight.remove(&key).is_some() {
            return true;
        }
        // Not in flight: maybe a call that has not joined yet. Hold the cancel briefly.
        let now = std::time::Instant::now();
        self.early_cancels
            .retain(|_, at| now.duration_since(*at) < EARLY_CANCEL_TTL);
        if self.early_cancels.len() < MAX_EARLY_CANCELS {
            self.early_cancels.insert(key, now);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_hex_digits_and_differ_and_carry_what_the_client_can_be_asked() {
        let a = mint_id(Askable::NONE).unwrap();
        let b = mint_id(Askable::NONE).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        let roots = Askable::from_capabilities(Some(&serde_json::json!({"roots": {}})));
        let c = mint_id(roots).unwrap();
        assert!(c.bytes().all(|c| c.is_ascii_graphic()), "a valid header value: {c}");
        assert_eq!(Askable::of_session_id(&c), roots);
        assert!(Askable::of_session_id(&a).is_empty());
    }

    async fn pose(
        s: &Addr<ClientSessions>,
        session: &str,
    ) -> (Option<String>, oneshot::Receiver<Result<serde_json::Value, RpcError>>) {
        let (tx, rx) = oneshot::channel();
        let id = s
            .send(Pose {
                session: session.into(),
                reply: tx,
                limit: 2,
            })
            .await
            .unwrap();
        (id, rx)
    }

    async fn answer(s: &Addr<ClientSessions>, session: &str, id: &str, v: i64) -> bool {
        s.send(Answered {
            session: session.into(),
            id: id.into(),
            response: Ok(serde_json::json!(v)),
        })
        .await
        .unwrap()
    }

    #[actix::test]
    async fn responses_reach_the_question_of_their_own_session_only() {
        let s = ClientSessions::default().start();
        let (a, ra) = pose(&s, "a").await;
        let (b, rb) = pose(&s, "b").await;
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_ne!(a, b, "ids are unique across sessions");
        // a response on the wrong session, or to an unknown id, reaches nothing
        assert!(!answer(&s, "b", &a, 0).await);
        assert!(!answer(&s, "a", "mcp-search-proxy-999", 0).await);
        assert!(answer(&s, "b", &b, 2).await);
        assert!(answer(&s, "a", &a, 1).await);
        assert_eq!(ra.await.unwrap(), Ok(serde_json::json!(1)));
        assert_eq!(rb.await.unwrap(), Ok(serde_json::json!(2)));
        // answered once
        assert!(!answer(&s, "a", &a, 1).await);
    }

    #[actix::test]
    async fn questions_are_bounded_per_session_and_dropped_with_it() {
        let s = ClientSessions::default().start();
        let (q1, r1) = pose(&s, "a").await;
        let (q2, _r2) = pose(&s, "a").await;
        assert!(q1.is_some() && q2.is_some());
        assert_eq!(pose(&s, "a").await.0, None, "limit 2 per session");
        // another session has its own bound; a question nobody waits for any more (its
        // call's receiver dropped before it withdrew it) gives its place back
        let (b1, rb1) = pose(&s, "b").await;
        let (b2, _rb2) = pose(&s, "b").await;
        assert!(b1.is_some() && b2.is_some());
        drop(rb1);
        assert!(pose(&s, "b").await.0.is_some(), "the stale question was purged");
        s.send(Withdraw {
            session: "a".into(),
            id: q2.unwrap(),
        })
        .await
        .unwrap();
        let (q3, r3) = pose(&s, "a").await;
        assert!(q3.is_some(), "a withdrawn question frees its place");
        s.send(End("a".into())).await.unwrap();
        assert!(
            r1.await.is_err() && r3.await.is_err(),
            "ending the session drops its questions"
        );
        assert!(!answer(&s, "a", &q1.unwrap(), 0).await);
    }

    #[test]
    fn ended_ids_are_bounded_oldest_first() {
        let mut e = EndedIds::default();
        for i in 0..5 {
            e.insert(format!("s{i}"), 3);
        }
        e.insert("s4".into(), 3);
        assert!(!e.contains("s0") && !e.contains("s1"));
        assert!(e.contains("s2") && e.contains("s3") && e.contains("s4"));
        assert_eq!(e.order.len(), 3);
    }

    /// Registers call ("b", "7") and returns its cancel receiver.
    async fn track(s: &Addr<ClientSessions>) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        s.send(Track {
            session: "b".into(),
            request_id: "7".into(),
            cancel: tx,
        })
        .await
        .unwrap();
        rx
    }

    /// Cancels call ("b", "7"); whether it was in flight.
    async fn cancel(s: &Addr<ClientSessions>) -> bool {
        s.send(Cancel {
            session: "b".into(),
            request_id: "7".into(),
        })
        .await
        .unwrap()
    }

    #[actix::test]
    async fn ended_sessions_are_remembered_and_cancels_reach_calls() {
        let actor = ClientSessions::default();
        let ended = actor.ended();
        let s = actor.start();
        assert!(!ended.contains("a"));
        s.send(End("a".into())).await.unwrap();
        assert!(ended.contains("a"), "published once End is handled");
        let rx = track(&s).await;
        assert!(cancel(&s).await);
        assert!(rx.await.is_err(), "the sender was dropped: cancelled");
        // Not in flight any more: held as an early cancel...
        assert!(!cancel(&s).await);
        // ... which is applied when a call with that id joins, once.
        assert!(track(&s).await.await.is_err(), "the early cancel was applied on Track");
        let mut rx = track(&s).await;
        assert!(
            rx.try_recv().is_err_and(|e| e == oneshot::error::TryRecvError::Empty),
            "used once"
        );
    }
}
