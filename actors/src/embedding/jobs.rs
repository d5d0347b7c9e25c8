//! Which snapshot the [`EmbeddingActor`](super::EmbeddingActor) embeds next, as a pure state
//! machine: one job at a time; a snapshot arriving while one runs waits, replacing any older
//! one waiting (the newest wins); the running job reads [`Stop`] between chunks and stops once
//! a newer generation arrived. No I/O and no runtime: unit-tested below on plain values.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The job schedule over snapshots `S` (the actor's: `Arc<Snapshot>`).
#[derive(Debug)]
pub(super) struct Jobs<S> {
    /// The generation being embedded, if a job runs.
    running: Option<u64>,
    /// The newest snapshot not yet embedded (a newer one replaces it).
    pending: Option<S>,
    /// The newest generation seen: a job for an older one stops at its next chunk.
    latest: Arc<AtomicU64>,
}

/// What a running job reads between chunks: whether a newer generation has arrived. Shared
/// with the job's blocking thread.
#[derive(Debug, Clone)]
pub(super) struct Stop {
    latest: Arc<AtomicU64>,
    generation: u64,
}

impl Stop {
    pub(super) fn superseded(&self) -> bool {
        self.latest.load(Ordering::Relaxed) != self.generation
    }
}

impl<S> Jobs<S> {
    pub(super) fn new() -> Self {
        Jobs {
            running: None,
            pending: None,
            latest: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The snapshot of `generation` arrived: it is returned to start now if no job runs (an
    /// older one waiting is dropped), else kept to start after the running one (replacing any
    /// older one kept), and the running job is told it is superseded.
    pub(super) fn arrived(&mut self, generation: u64, snapshot: S) -> Option<S> {
        self.latest.store(generation, Ordering::Relaxed);
        if self.running.is_some() {
            self.pending = Some(snapshot);
            None
        } else {
            self.pending = None;
            Some(snapshot)
        }
    }

    /// A job starts for `generation`; it stops when its [`Stop`] says so.
    pub(super) fn started(&mut self, generation: u64) -> Stop {
        self.running = Some(generation);
        Stop {
            latest: self.latest.clone(),
            generation,
        }
    }

    /// A snapshot that could not start now (nothing to run it with yet) waits like one that
    /// arrived during a job.
    pub(super) fn wait(&mut self, snapshot: S) {
        self.pending = Some(snapshot);
    }

    /// The running job finished (done, superseded or failed): the snapshot to start next, if
    /// one waits.
    pub(super) fn finished(&mut self) -> Option<S> {
        self.running = None;
        self.pending.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_starts_at_once_when_idle() {
        let mut jobs = Jobs::new();
        assert_eq!(jobs.arrived(1, "g1"), Some("g1"));
        let stop = jobs.started(1);
        assert!(!stop.superseded());
        assert_eq!(jobs.finished(), None, "nothing waits");
        assert_eq!(jobs.arrived(2, "g2"), Some("g2"), "idle again");
    }

    #[test]
    fn the_newest_snapshot_waits_and_supersedes_the_running_job() {
        let mut jobs = Jobs::new();
        let first = jobs.arrived(1, "g1").unwrap();
        let stop = jobs.started(1);
        assert_eq!(first, "g1");
        assert_eq!(jobs.arrived(2, "g2"), None, "a job runs: it waits");
        assert!(stop.superseded(), "the running job stops at its next chunk");
        assert_eq!(jobs.arrived(3, "g3"), None);
        assert_eq!(jobs.finished(), Some("g3"), "the newest wins; g2 is never embedded");
        let stop3 = jobs.started(3);
        assert!(!stop3.superseded());
        assert_eq!(jobs.finished(), None);
    }

    #[test]
    fn a_snapshot_that_could_not_start_waits_for_the_next_finish_or_a_newer_one() {
        let mut jobs = Jobs::new();
        let snap = jobs.arrived(1, "g1").unwrap();
        jobs.wait(snap);
        assert_eq!(jobs.finished(), Some("g1"), "started when a job finishes");
        jobs.wait("g1");
        assert_eq!(jobs.arrived(2, "g2"), Some("g2"), "no job runs: the newer one starts");
        jobs.started(2);
        assert_eq!(jobs.finished(), None, "and the older one is not embedded after it");
    }
}
