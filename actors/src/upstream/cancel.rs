//! Explicit cancellation of an upstream call, with the reason.
//!
//! The HTTP side holds a [`CancelHandle`] for each call it sends and gives the upstream actor
//! the matching [`CancelToken`]. The call is cancelled when the handle says so
//! ([`CancelHandle::cancel`], e.g. at the end of the shutdown grace period) or when the handle
//! is dropped (the request was abandoned: its client went away or cancelled it). The reason
//! reaches the upstream's log line and its `notifications/cancelled`. The reason itself,
//! [`CancelReason`], is in `error.rs`: [`UpstreamError::Cancelled`](super::UpstreamError::Cancelled) carries it.

use super::error::CancelReason;
use tokio::sync::watch;

/// The caller's side: cancels the call, explicitly or by being dropped.
#[derive(Debug)]
pub struct CancelHandle(watch::Sender<Option<CancelReason>>);

/// The upstream actor's side: resolves when the call is to be abandoned.
#[derive(Debug, Clone)]
pub struct CancelToken(watch::Receiver<Option<CancelReason>>);

/// A new handle and its token.
pub fn cancel_pair() -> (CancelHandle, CancelToken) {
    let (tx, rx) = watch::channel(None);
    (CancelHandle(tx), CancelToken(rx))
}

impl CancelHandle {
    /// Cancels the call for `reason` (the first reason given wins).
    pub fn cancel(&self, reason: CancelReason) {
        self.0.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }
}

impl CancelToken {
    /// Waits until the call is cancelled; a dropped handle means [`CancelReason::ClientGone`].
    pub async fn cancelled(&mut self) -> CancelReason {
        match self.0.wait_for(Option::is_some).await {
            Ok(r) => r.unwrap_or(CancelReason::ClientGone),
            Err(_) => CancelReason::ClientGone,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_explicit_reason_wins_and_a_drop_means_the_client_left() {
        let (h, mut t) = cancel_pair();
        h.cancel(CancelReason::ShuttingDown);
        h.cancel(CancelReason::ClientGone);
        assert_eq!(t.cancelled().await, CancelReason::ShuttingDown);
        drop(h);
        assert_eq!(
            t.cancelled().await,
            CancelReason::ShuttingDown,
            "still the first reason"
        );
        let (h, mut t) = cancel_pair();
        drop(h);
        assert_eq!(t.cancelled().await, CancelReason::ClientGone);
    }
}
