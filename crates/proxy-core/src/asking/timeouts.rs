//! [`Timeouts`]: the one owner of a question's timeout (`ELICITATION_TIMEOUT_SEC`) and of the
//! graces around it. Every wait on a question takes its length from here; no other type
//! stores it.
//!
//! Three clocks enforce it, each from its own start, and they are kept apart on purpose:
//! - the client's side of a 2025-era stream: `question` from the moment the question is posted
//!   ([`Timeouts::deadline`]); the client is then told the question was withdrawn;
//! - the asker's guard in the upstream actor: `question` + [`ASK_GRACE`] from the hand-over
//!   ([`Timeouts::asker_limit`]); it only catches a client side that never replies, so it
//!   must never fire first;
//! - a call held for a 2026-07-28 client: `question` from the hold ([`Timeouts::held_ttl`]),
//!   then [`EXPIRY_GRACE`] for the call to end of itself before it is cancelled.
//!
//! The sealed `requestState` of a round expires `question` after it is issued
//! ([`Timeouts::state_expiry`]), and the upstream is told "within N s" ([`Timeouts::secs`]).

use std::time::Duration;

/// `ELICITATION_TIMEOUT_SEC`'s default: a person may be answering.
pub const DEFAULT_QUESTION_TIMEOUT: Duration = Duration::from_secs(300);
/// How much longer the upstream actor waits for an answer than the client's side does (that
/// side enforces the timeout and answers `TimedOut`); only a side that never replies hits it.
pub const ASK_GRACE: Duration = Duration::from_secs(5);
/// How long an expired held call may take to end of itself once its questions were told they
/// timed out, before it is cancelled upstream.
pub const EXPIRY_GRACE: Duration = Duration::from_secs(2);

/// How long a question waits for its answer, and everything derived from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    question: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts::new(DEFAULT_QUESTION_TIMEOUT)
    }
}

impl Timeouts {
    pub const fn new(question: Duration) -> Timeouts {
        Timeouts { question }
    }

    /// The question timeout itself.
    pub fn question(&self) -> Duration {
        self.question
    }

    /// When a question posted on a client's stream at `posed` stops waiting (a client that
    /// stopped reading its stream does not hold it longer).
    pub fn deadline<I: std::ops::Add<Duration, Output = I>>(&self, posed: I) -> I {
        posed + self.question
    }

    /// How long the upstream actor waits for an answer it handed over.
    pub fn asker_limit(&self) -> Duration {
        self.question + ASK_GRACE
    }

    /// How long a call is held for a 2026-07-28 client's retry.
    pub fn held_ttl(&self) -> Duration {
        self.question
    }

    /// How long an expired held call may end of itself before it is cancelled.
    pub fn expiry_grace(&self) -> Duration {
        EXPIRY_GRACE
    }

    /// The expiry (Unix seconds) of a round's sealed state issued at `unix_now`.
    pub fn state_expiry(&self, unix_now: u64) -> u64 {
        unix_now + self.question.as_secs()
    }

    /// The timeout in whole seconds, as the upstream is told.
    pub fn secs(&self) -> u64 {
        self.question.as_secs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn every_wait_derives_from_the_one_timeout() {
        let t = Timeouts::new(Duration::from_secs(1));
        let now = Instant::now();
        assert_eq!(t.deadline(now), now + Duration::from_secs(1));
        assert_eq!(t.asker_limit(), Duration::from_secs(6));
        assert!(t.asker_limit() > t.question(), "the asker's guard never fires first");
        assert_eq!(t.held_ttl(), Duration::from_secs(1));
        assert_eq!(t.expiry_grace(), Duration::from_secs(2));
        assert_eq!(t.state_expiry(100), 101);
        assert_eq!(t.secs(), 1);
        assert_eq!(Timeouts::default().secs(), 300);
    }
}
