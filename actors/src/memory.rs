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

static HOOKS: OnceLock<Hooks> = OnceLock::new();
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Registers `begin` (called when heavy work starts and none was running) and `end` (called
/// when the last heavy work ends). Only the first registration counts.
pub fn set_heavy_work_hooks(begin: fn(), end: fn()) {
    let _ = HOOKS.set((begin, end));
}

/// Marks heavy work until the guard is dropped (nested and concurrent guards are counted).
pub fn heavy_work() -> HeavyWork {
    if ACTIVE.fetch_add(1, Ordering::SeqCst) == 0 {
        if let Some((begin, _)) = HOOKS.get() {
            begin();
        }
    }
    HeavyWork(())
}

/// See [`heavy_work`].
#[must_use]
pub struct HeavyWork(());

impl Drop for HeavyWork {
    fn drop(&mut self) {
        if ACTIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Some((_, end)) = HOOKS.get() {
                end();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BEGINS: AtomicUsize = AtomicUsize::new(0);
    static ENDS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn hooks_bracket_the_outermost_guard() {
        set_heavy_work_hooks(
            || {
                BEGINS.fetch_add(1, Ordering::SeqCst);
            },
            || {
                ENDS.fetch_add(1, Ordering::SeqCst);
            },
        );
        {
            let _a = heavy_work();
            let _b = heavy_work();
            assert_eq!(BEGINS.load(Ordering::SeqCst), 1);
            assert_eq!(ENDS.load(Ordering::SeqCst), 0);
        }
        assert_eq!(ENDS.load(Ordering::SeqCst), 1);
    }
}
