//! Legacy-era client sessions: minted, but never required.
//!
//! The proxy's tools keep no per-client state, yet a 2025-era client that gets an
//! `Mcp-Session-Id` can end it (`DELETE`) and cancel its own in-flight calls
//! (`notifications/cancelled` with the request id). So `initialize` mints an id, and this
//! actor remembers only what those two features need: ids that were ended (answered 404
//! afterwards, as the spec requires; bounded, oldest forgotten first) and the cancel handles of
//! calls in flight. A request without an id, or with an id from before a restart, is simply
//! served: losing this state never breaks a client.

use std::collections::{HashMap, HashSet, VecDeque};

use actix::prelude::*;
use tokio::sync::oneshot;

/// At most this many ended session ids are remembered.
const MAX_ENDED: usize = 100_000;

#[derive(Default)]
pub struct ClientSessions {
    ended: HashSet<String>,
    ended_order: VecDeque<String>,
    /// (session id, request id as text) → dropping the sender cancels the call.
    inflight: HashMap<(String, String), oneshot::Sender<()>>,
}

impl Actor for ClientSessions {
    type Context = Context<Self>;
}

/// A fresh, unguessable session id (32 hex digits from the OS random source).
pub fn mint_id() -> String {
    let mut bytes = [0u8; 16];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !filled {
        // No /dev/urandom: std's randomly keyed hasher over the time is still unguessable
        // enough for an id that grants nothing.
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0),
            );
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Ends a session: later requests carrying it get 404.
#[derive(Message)]
#[rtype(result = "()")]
pub struct End(pub String);

/// Whether a session id was ended.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct IsEnded(pub String);

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
        if self.ended.insert(msg.0.clone()) {
            self.ended_order.push_back(msg.0);
            while self.ended_order.len() > MAX_ENDED {
                if let Some(old) = self.ended_order.pop_front() {
                    self.ended.remove(&old);
                }
            }
        }
    }
}

impl Handler<IsEnded> for ClientSessions {
    type Result = bool;

    fn handle(&mut self, msg: IsEnded, _: &mut Self::Context) -> bool {
        self.ended.contains(&msg.0)
    }
}

impl Handler<Track> for ClientSessions {
    type Result = ();

    fn handle(&mut self, msg: Track, _: &mut Self::Context) {
        self.inflight.insert((msg.session, msg.request_id), msg.cancel);
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
        // Dropping the sender wakes the call's cancel branch.
        self.inflight.remove(&(msg.session, msg.request_id)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let a = mint_id();
        let b = mint_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[actix_web::test]
    async fn ended_sessions_are_remembered_and_cancels_reach_calls() {
        let s = ClientSessions::default().start();
        assert!(!s.send(IsEnded("a".into())).await.unwrap());
        s.send(End("a".into())).await.unwrap();
        assert!(s.send(IsEnded("a".into())).await.unwrap());
        let (tx, rx) = oneshot::channel();
        s.send(Track {
            session: "b".into(),
            request_id: "7".into(),
            cancel: tx,
        })
        .await
        .unwrap();
        assert!(s
            .send(Cancel {
                session: "b".into(),
                request_id: "7".into()
            })
            .await
            .unwrap());
        assert!(rx.await.is_err(), "the sender was dropped: cancelled");
        assert!(!s
            .send(Cancel {
                session: "b".into(),
                request_id: "7".into()
            })
            .await
            .unwrap());
    }
}
