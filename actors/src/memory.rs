//! Hooks around memory-heavy work (catalog builds), for the binary's allocator.
//!
//! A catalog build allocates and frees tens of MB in a few hundred milliseconds; serving
//! allocates and frees small buffers all the time. The best allocator setting differs (return
//! freed memory at once while building, batch the returns while serving), so the binary
//! registers two functions and every build runs between them. Without hooks (tests, the
//! library alone) this does nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// (called when heavy work begins, called when it ends)
type Hooks = (fn(), fn());

/// Counts heavy work in progress and calls the hooks on the first begin and the last end.
struct Gate {
    hooks: OnceLock<Hooks>,
    active: AtomicUsize,
}

impl Gate {
    const fn new() -> Gate {
        Gate {
            hooks: OnceLock::new(),
            active: AtomicUsize::new(0),
        }
    }

    fn enter(&'static self) -> HeavyWork {
        if self.active.fetch_add(1, Ordering::SeqCst) == 0 {
            if let Some((begin, _)) = self.hooks.get() {
                begin();
            }
        }
        HeavyWork(self)
    }
}

/// The process's gate (the binary sets its hooks).
static GATE: Gate = Gate::new();

/// Registers `begin` (called when heavy work starts and none was running) and `end` (called
/// when the last heavy work ends). Only the first registration counts.
pub fn set_heavy_work_hooks(begin: fn(), end: fn()) {
    let _ = GATE.hooks.set((begin, end));
}

/// Marks heavy work until the guard is dropped (nested and concurrent guards are counted).
pub fn heavy_work() -> HeavyWork {
    GATE.enter()
}

/// See [`heavy_work`].
#[must_use]
pub struct HeavyWork(&'static Gate);

impl Drop for HeavyWork {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Some((_, end)) = self.0.hooks.get() {
                end();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A gate of its own: the process gate is entered by every catalog build of other tests
    // running in parallel.
    static GATE: Gate = Gate::new();
    static BEGINS: AtomicUsize = AtomicUsize::new(0);
    static ENDS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn hooks_bracket_the_outermost_guard() {
        let _ = GATE.hooks.set((
            || {
                BEGINS.fetch_add(1, Ordering::SeqCst);
            },
            || {
                ENDS.fetch_add(1, Ordering::SeqCst);
            },
        ));
        {
            let _a = GATE.enter();
            let _b = GATE.enter();
            assert_eq!(BEGINS.load(Ordering::SeqCst), 1);
            assert_eq!(ENDS.load(Ordering::SeqCst), 0);
        }
        assert_eq!(ENDS.load(Ordering::SeqCst), 1);
        drop(GATE.enter());
        assert_eq!((BEGINS.load(Ordering::SeqCst), ENDS.load(Ordering::SeqCst)), (2, 2));
    }
}
