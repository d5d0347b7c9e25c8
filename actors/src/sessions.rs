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
//! so no table is needed to know it. The questions waiting for a session's client are not
//! here: the asking desk holds them (`crate::asking`), and ending a session ends them there
//! too.
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
    /// (session id, request id as text) → dropping the sender cancels the call.
    inflight: HashMap<(String, String), oneshot::Sender<()>>,
    /// Cancels of calls not in `inflight` (yet), with when they came.
    early_cancels: HashMap<(String, String), std::time::Instant>,
}

impl Default for ClientSessions {
    fn default() -> Self {
        ClientSessions {
            ended: watch::channel(EndedIds::default()).0,
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
