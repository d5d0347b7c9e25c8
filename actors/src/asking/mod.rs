//! The runtime home of asking: how a question an upstream asks during a call travels to the
//! client and its answer back. The pure rules (the [`Question`](proxy_core::asking::Question)
//! type, the era translations, the bounds, the timeouts) are `proxy_core::asking`; here is
//! what moves them.
//!
//! # Layout
//! Each file imports only files listed below it.
//! - `stream.rs`: the 2025-era client's side: [`relay_questions`] on the call's stream, over a
//!   [`ClientStream`] the HTTP layer frames (the wire); the stream side's clock of the
//!   question timeout, and the withdrawal of a question that ends unanswered.
//! - `drive.rs`: the 2026-07-28 client's driver of a call that may be held ([`drive`],
//!   [`resume`] → [`Driven`]): the call served until it ends or asks, then held at the desk.
//! - `desk.rs`: [`Desk`], the actor that owns what waits on a client: the questions posted to
//!   2025-era sessions (bounded per session, by proxy-owned id) and the calls held for
//!   2026-07-28 clients (bounded per client group and in all, given up at the question
//!   timeout).
//! - `held.rs`: [`HeldCall`], a call held for a 2026-07-28 client: its waiting questions
//!   keyed as the client's round, answered by its retry, or timed out and cancelled.
//! - `asker.rs`: the call's side: [`Talk`] (what a call's client can be asked, and how:
//!   [`Asking`]) and [`Interaction`] (what a `CallTool` may ask), the hand-over
//!   of one question ([`Interaction::pose`] → [`Ask`] on the call's [`Asker`]) and the wait
//!   for its answer ([`Pending`], the asker's guard of the question timeout); the upstream
//!   actor only calls these.
//!
//! [`alongside`] runs a call while its questions are served (in the upstream actor and the
//! HTTP layer).

mod asker;
mod desk;
mod drive;
mod held;
mod stream;

pub use asker::{asked_outcome, asker, Ask, Asker, Asking, Interaction, Pending, Talk};
pub use desk::{CountHeld, Deliver, Desk, EndSession, Hold, Post, Take, Withdraw};
pub use drive::{drive, resume, Driven};
pub use held::HeldCall;
pub use stream::{relay_questions, ClientStream, Closed};

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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

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
