//! The proxy's heap: freed memory handed back at once, and allocations counted.
//!
//! # Layout
//!
//! - lib.rs: [`mimalloc_is_global`] and [`release`]. [`release`] hands the calling thread's
//!   freed pages back to the allocator's arenas and returns the arenas' unused memory to the OS
//!   at once. The proxy calls it on the thread that did heavy, short-lived work (an upstream
//!   actor after reading a listing, the catalog actor after building a snapshot), so that the
//!   next phase, on another thread, reuses the memory instead of adding to the resident size.
//!   mimalloc keeps a thread's freed pages for that thread and returns memory to the OS only
//!   after a delay; without these calls a load of 11,739 tools peaked at 117 MB resident for a
//!   46 MiB heap.
//! - [`counting`] (an inline module): a counting global allocator for the memory guards
//!   (tests/memory.rs) and measurements.
//!
//! This crate is the one place with unsafe code: the `GlobalAlloc` impl and the call into
//! mimalloc's C API.

use std::sync::atomic::{AtomicBool, Ordering};

static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// Declares that the process's global allocator is mimalloc (the binary's `main`, and tests
/// that install it); until then [`release`] does nothing, so a library user or a tool with
/// another allocator (the search-eval harness, benchmarks) pays nothing for it.
pub fn mimalloc_is_global() {
    MIMALLOC.store(true, Ordering::Relaxed);
}

/// Hands this thread's freed pages back and purges the arenas now (mimalloc's
/// `mi_collect(true)`), when mimalloc is the global allocator ([`mimalloc_is_global`]).
/// Costs a walk over this thread's pages; meant for the end of a heavy phase (a listing, an
/// index build's pass), never for a request path.
pub fn release() {
    if MIMALLOC.load(Ordering::Relaxed) {
        // SAFETY: `mi_collect` takes no pointer and may be called from any thread at any time.
        unsafe { libmimalloc_sys::mi_collect(true) }
    }
}

/// mimalloc's `mi_option_purge_delay` (its header's option enum; `libmimalloc-sys` names no
/// constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tells mimalloc, when it is the global allocator ([`mimalloc_is_global`]), never to hand
/// freed memory back to the OS: for a batch job that frees and allocates the same large
/// buffers every step (training the query encoder), where giving them back and faulting them
/// in again cost a third of each step (kernel page clearing). Not for the service, whose
/// resident size must fall after heavy work.
pub fn keep_freed_memory() {
    if MIMALLOC.load(Ordering::Relaxed) {
        // SAFETY: setting an option takes no pointer; mimalloc reads options atomically.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
    }
}

pub mod counting {
    //! A counting global allocator: every call is forwarded to an inner allocator (mimalloc in
    //! the proxy's tests, as in its binary), and three process-wide counters are kept — the
    //! live heap bytes, their high-water mark, and the number of allocations. Tests install
    //! it with `#[global_allocator]`:
    //!
    //! ```ignore
    //! #[global_allocator]
    //! static GLOBAL: heap::counting::Counting<mimalloc::MiMalloc> =
    //!     heap::counting::Counting::new(mimalloc::MiMalloc);
    //! ```
    //!
    //! then read [`live`], [`take_peak`] and [`allocations`] around the work they measure. The
    //! counters are global (one allocator per process), so a measurement counts every
    //! thread's allocations: keep other work out of the window.
    //!
    //! Why not `peak_alloc` or `dhat`: both wrap the system allocator only (the proxy's is
    //! mimalloc, whose behaviour the guards are about), and neither counts allocations
    //! without a profiler's overhead.

    use std::alloc::{GlobalAlloc, Layout};
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

    static LIVE: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);
    static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

    /// The counting wrapper around `A`.
    pub struct Counting<A>(A);

    impl<A> Counting<A> {
        pub const fn new(inner: A) -> Self {
            Counting(inner)
        }
    }

    fn grew(size: usize) {
        ALLOCATIONS.fetch_add(1, Relaxed);
        let live = LIVE.fetch_add(size, Relaxed) + size;
        PEAK.fetch_max(live, Relaxed);
    }

    // SAFETY: every method forwards its arguments unchanged to `A`, whose contract is the same;
    // the counters are plain atomics and never touch the memory.
    unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract is passed on unchanged.
            let p = unsafe { self.0.alloc(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as above.
            let p = unsafe { self.0.alloc_zeroed(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as above.
            unsafe { self.0.dealloc(ptr, layout) };
            LIVE.fetch_sub(layout.size(), Relaxed);
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: as above.
            let p = unsafe { self.0.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                LIVE.fetch_sub(layout.size(), Relaxed);
                grew(new_size);
            }
            p
        }
    }

    /// Heap bytes allocated and not yet freed.
    pub fn live() -> usize {
        LIVE.load(Relaxed)
    }

    /// The high-water mark of [`live`] since the previous call (or the start); the mark starts
    /// again from the live bytes.
    pub fn take_peak() -> usize {
        PEAK.swap(LIVE.load(Relaxed), Relaxed)
    }

    /// Allocations (and reallocations) since the start.
    pub fn allocations() -> u64 {
        ALLOCATIONS.load(Relaxed)
    }

    /// Bytes as MiB, for messages.
    pub fn mib(bytes: usize) -> f64 {
        bytes as f64 / (1024.0 * 1024.0)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[global_allocator]
        static GLOBAL: Counting<std::alloc::System> = Counting::new(std::alloc::System);

        #[test]
        fn counts_live_bytes_their_peak_and_allocations() {
            take_peak();
            let (live0, n0) = (live(), allocations());
            let big = vec![0u8; 4 << 20];
            assert!(live() >= live0 + (4 << 20));
            assert!(allocations() > n0);
            drop(big);
            // other test threads may allocate meanwhile; the 4 MiB block dominates
            assert!(take_peak() >= live0 + (4 << 20));
            assert!(live() < live0 + (4 << 20));
            assert!(
                take_peak() < live0 + (4 << 20),
                "the mark starts again from the live bytes"
            );
        }
    }
}
