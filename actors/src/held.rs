//! Calls held open for a 2026-07-28 client while it answers their questions.
//!
//! A 2026-07-28 client is asked through `input_required` rounds: it gets the questions as a
//! result and retries the call with its answers. When the upstream is of the 2025 era, its
//! call stays open meanwhile (the questions arrived on its stream and wait for answers under
//! its ids), so something must hold it between the client's two requests: this actor. A held
//! item (the application's, generic here) is kept under a fresh unguessable id until the
//! client's retry takes it ([`Take`]) or its time runs out; then it is given up ([`Expire`]),
//! which ends whatever it holds (the application tells the questions they timed out and
//! cancels the upstream call if it does not end of itself). Held items are bounded per
//! client and in all.
//!
//! They live in this process: a retry that reaches another instance finds nothing and is told
//! so (the deployment docs say to keep a client on one instance).

use std::time::Duration;

use actix::prelude::*;
use proxy_core::asking::{Bounded, Limits};

/// What a held item does when its time runs out, instead of being simply dropped (the
/// default): e.g. tell the waiting questions they timed out, and end the call after a grace.
pub trait Expire: Sized {
    fn expire(self) {}
}

pub struct HeldCalls<T: Expire + Unpin + 'static> {
    /// Held items by id, bounded per client and in all.
    items: Bounded<T>,
}

impl<T: Expire + Unpin + 'static> HeldCalls<T> {
    pub fn new(limits: Limits) -> Self {
        HeldCalls {
            items: Bounded::new(limits),
        }
    }
}

impl<T: Expire + Unpin + 'static> Actor for HeldCalls<T> {
    type Context = Context<Self>;
}

/// Holds `item` for `client` for at most `ttl`; its id, or the item back when the limits are
/// reached.
pub struct Hold<T> {
    pub client: String,
    pub item: T,
    pub ttl: Duration,
}

impl<T: Send + 'static> Message for Hold<T> {
    type Result = Result<String, T>;
}

/// Takes the item held under `id` (`None`: unknown, taken already, or expired).
pub struct Take<T> {
    pub id: String,
    _item: std::marker::PhantomData<fn() -> T>,
}

impl<T> Take<T> {
    pub fn new(id: impl Into<String>) -> Self {
        Take {
            id: id.into(),
            _item: std::marker::PhantomData,
        }
    }
}

impl<T: Send + 'static> Message for Take<T> {
    type Result = Option<T>;
}

/// How many items are held (for tests and the readiness of a drained shutdown).
pub struct Count;

impl Message for Count {
    type Result = usize;
}

impl<T: Expire + Send + Unpin + 'static> Handler<Hold<T>> for HeldCalls<T> {
    type Result = MessageResult<Hold<T>>;

    fn handle(&mut self, msg: Hold<T>, ctx: &mut Self::Context) -> Self::Result {
        if !self.items.has_room(&msg.client) {
            return MessageResult(Err(msg.item));
        }
        let Some(id) = fresh_id() else {
            return MessageResult(Err(msg.item));
        };
        if let Err(item) = self.items.insert(msg.client, id.clone(), msg.item) {
            return MessageResult(Err(item));
        }
        let expiring = id.clone();
        ctx.run_later(msg.ttl, move |this, _| {
            if let Some(item) = this.items.remove(&expiring) {
                log::info!(ttl_s = msg.ttl.as_secs(); "held call expired unanswered");
                item.expire();
            }
        });
        MessageResult(Ok(id))
    }
}

impl<T: Expire + Send + Unpin + 'static> Handler<Take<T>> for HeldCalls<T> {
    type Result = MessageResult<Take<T>>;

    fn handle(&mut self, msg: Take<T>, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.items.remove(&msg.id))
    }
}

impl<T: Expire + Unpin + 'static> Handler<Count> for HeldCalls<T> {
    type Result = usize;

    fn handle(&mut self, _: Count, _: &mut Self::Context) -> usize {
        self.items.len()
    }
}

/// 32 hex digits from the OS random source.
fn fresh_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An item that tells when it is dropped.
    struct Probe(#[allow(dead_code)] Option<tokio::sync::oneshot::Sender<()>>);

    impl Expire for Probe {}

    fn probe() -> (Probe, tokio::sync::oneshot::Receiver<()>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (Probe(Some(tx)), rx)
    }

    #[actix::test]
    async fn a_held_item_is_taken_once_or_dropped_when_it_expires() {
        let held = HeldCalls::<Probe>::new(Limits { per_owner: 4, total: 8 }).start();
        let (p, mut dropped) = probe();
        let id = held
            .send(Hold {
                client: "c".into(),
                item: p,
                ttl: Duration::from_secs(60),
            })
            .await
            .unwrap()
            .ok()
            .unwrap();
        assert!(held.send(Take::<Probe>::new("nope")).await.unwrap().is_none());
        let item = held.send(Take::<Probe>::new(id.clone())).await.unwrap();
        assert!(item.is_some());
        assert!(held.send(Take::<Probe>::new(id)).await.unwrap().is_none(), "taken once");
        assert!(dropped
            .try_recv()
            .is_err_and(|e| e == tokio::sync::oneshot::error::TryRecvError::Empty));
        drop(item);

        let (p, dropped) = probe();
        let id = held
            .send(Hold {
                client: "c".into(),
                item: p,
                ttl: Duration::from_millis(20),
            })
            .await
            .unwrap()
            .ok()
            .unwrap();
        assert!(dropped.await.is_err(), "dropped at expiry");
        assert!(held.send(Take::<Probe>::new(id)).await.unwrap().is_none());
        assert_eq!(held.send(Count).await.unwrap(), 0);
    }

    #[actix::test]
    async fn held_items_are_bounded_per_client_and_in_all() {
        let held = HeldCalls::<Probe>::new(Limits { per_owner: 2, total: 3 }).start();
        let hold = |client: &str| Hold {
            client: client.into(),
            item: probe().0,
            ttl: Duration::from_secs(60),
        };
        let a1 = held.send(hold("a")).await.unwrap().ok().unwrap();
        assert!(held.send(hold("a")).await.unwrap().is_ok());
        assert!(held.send(hold("a")).await.unwrap().is_err(), "2 per client");
        assert!(held.send(hold("b")).await.unwrap().is_ok());
        assert!(held.send(hold("c")).await.unwrap().is_err(), "3 in all");
        assert!(held.send(Take::<Probe>::new(a1)).await.unwrap().is_some());
        assert!(
            held.send(hold("a")).await.unwrap().is_ok(),
            "a taken item frees its place"
        );
        assert_eq!(held.send(Count).await.unwrap(), 3);
    }
}
