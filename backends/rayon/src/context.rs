//! Per-thread context: which instances' kernels the current thread is running (for
//! `in_parallel` and for detecting nested launches), and the thread's preferred id of the
//! global unique token.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

/// Hands out thread tickets: a thread takes the next one the first time it uses an instance,
/// so its ticket is larger than any value read from the clock before it did.
static TICKETS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Ids of the instances whose kernels this thread is running, innermost last.
    static ACTIVE: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// The global-token id this thread asks for first (its pool thread index), if any.
    static PREFERRED_GLOBAL: Cell<Option<usize>> = const { Cell::new(None) };
    /// This thread's ticket (0: none yet).
    static TICKET: Cell<u64> = const { Cell::new(0) };
}

/// The ticket clock now: launches record it when they start.
pub(crate) fn ticket_clock() -> u64 {
    TICKETS.load(Ordering::SeqCst)
}

/// The calling thread's ticket, taken now if it has none. Threads take one the first time
/// they make, clone, launch on or fence an instance (see `HotTeam::must_not_wait`).
pub(crate) fn thread_ticket() -> u64 {
    TICKET
        .try_with(|t| {
            if t.get() == 0 {
                t.set(TICKETS.fetch_add(1, Ordering::SeqCst) + 1);
            }
            t.get()
        })
        // A thread being torn down: treat it as new (it then never waits).
        .unwrap_or(u64::MAX)
}

/// Whether the calling thread first used an instance after the ticket clock read `since`.
/// Such a thread may have been started by a kernel that began then, and that kernel may wait
/// for it: it must not wait for that kernel's launch.
pub(crate) fn arrived_after(since: u64) -> bool {
    thread_ticket() > since
}

/// Whether the calling thread is a worker of a rayon pool (any pool). Such a thread may be
/// running a parallel iterator that a kernel waits for (`space.install` inside a kernel), and
/// blocking a rayon worker stalls its pool, so it never waits for a launch lock.
pub(crate) fn on_rayon_worker() -> bool {
    rayon::current_thread_index().is_some()
}

/// Whether the current thread is running a kernel of instance `id`.
pub(crate) fn is_active(id: u64) -> bool {
    ACTIVE.try_with(|a| a.borrow().contains(&id)).unwrap_or(false)
}

/// Whether the current thread is running a kernel of any rayon-backend instance.
pub(crate) fn any_active() -> bool {
    ACTIVE.try_with(|a| !a.borrow().is_empty()).unwrap_or(false)
}

/// The current thread's preferred global-token id.
pub(crate) fn preferred_global() -> Option<usize> {
    PREFERRED_GLOBAL.try_with(Cell::get).ok().flatten()
}

/// Sets the current thread's preferred global-token id for the rest of its life (pool threads
/// of the default instance call this once when they start).
pub(crate) fn set_preferred_global(id: Option<usize>) {
    let _ = PREFERRED_GLOBAL.try_with(|p| p.set(id));
}

/// Marks the current thread as running a kernel of one instance while alive (panic-safe).
pub(crate) struct InKernel {
    restore_preferred: Option<Option<usize>>,
}

impl InKernel {
    /// Enters a kernel of instance `id`. `preferred` temporarily replaces the thread's
    /// preferred global-token id (the caller of a launch on the default instance is its
    /// thread 0); `None` keeps the current one.
    #[inline]
    pub(crate) fn enter(id: u64, preferred: Option<usize>) -> Self {
        let _ = ACTIVE.try_with(|a| a.borrow_mut().push(id));
        let restore_preferred = preferred.map(|p| {
            let old = preferred_global();
            set_preferred_global(Some(p));
            old
        });
        InKernel { restore_preferred }
    }
}

impl Drop for InKernel {
    #[inline]
    fn drop(&mut self) {
        let _ = ACTIVE.try_with(|a| a.borrow_mut().pop());
        if let Some(old) = self.restore_preferred {
            set_preferred_global(old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_markers_nest_and_unwind() {
        assert!(!any_active());
        {
            let _a = InKernel::enter(7, Some(0));
            assert!(is_active(7) && !is_active(8));
            assert_eq!(preferred_global(), Some(0));
            let inner = std::panic::catch_unwind(|| {
                let _b = InKernel::enter(8, None);
                assert!(is_active(7) && is_active(8));
                panic!("unwinds through the marker");
            });
            assert!(inner.is_err());
            assert!(is_active(7) && !is_active(8));
        }
        assert!(!any_active());
        assert_eq!(preferred_global(), None);
    }
}
