//! The global-scope unique token.

use std::fmt;
use std::sync::OnceLock;

use hoplite_core::{ExecutionSpace, TokenPool, UniqueToken};

use crate::RayonSpace;
use crate::context;

/// The global-scope unique token of the rayon backend: ids unique among everything that runs
/// in the process, across all instances.
///
/// # Design
///
/// Let `g` be the thread count of the default instance ([`RayonSpace::default()`]). The token
/// has `size() == 2 * g` ids, held in a lock-free [`TokenPool`] (one bit per id, claimed with an
/// atomic read-modify-write, so two holders can never get the same id):
///
/// * ids `0..g` are the *pool thread indices* of the default instance's hot team: a worker of
///   rank `r` asks for id `r` first, and the thread that launches a kernel on the default
///   instance is its thread 0 while the launch runs, so it asks for id 0 first;
/// * ids `g..2g` are the indices `g + i` of the default instance's work-stealing threads
///   (dynamic schedules), and the ids everybody else starts with: threads of other instances
///   and partitions, application threads, helper threads.
///
/// So inside a kernel of the default instance, `acquire` returns the current pool thread's
/// index — unless that id is already held (a second `acquire` on the same thread, or an id
/// that was taken by a thread without one of its own), in which case it takes any free id,
/// preferring `g..2g`, then `0..g`. Threads off the default pool always get a unique id too;
/// `acquire` waits only when all `2g` ids are held at once (more than `2g` threads holding
/// ids), as the [`UniqueToken`] axioms allow. Ids can be released from any thread.
///
/// ```
/// use hoplite_core::{ExecutionSpace, UniqueToken, UniqueTokenSpace};
/// use hoplite_rayon::RayonSpace;
/// let token = RayonSpace::global_unique_token();
/// assert_eq!(token.size(), 2 * RayonSpace::default().concurrency());
/// let a = token.guard();
/// let b = token.guard();
/// assert_ne!(*a, *b);
/// assert!(*a < token.size() && *b < token.size());
/// ```
#[derive(Clone)]
pub struct RayonGlobalToken {
    ids: TokenPool,
    /// `g`: ids `0..g` are the default instance's pool thread indices.
    pool_threads: usize,
}

/// The process-wide global token (built with the default instance).
pub(crate) fn global() -> RayonGlobalToken {
    static GLOBAL: OnceLock<RayonGlobalToken> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            // `concurrency()` is at least 1, so the pool has at least two ids.
            let pool_threads = RayonSpace::default().concurrency().max(1);
            RayonGlobalToken {
                ids: TokenPool::new(2 * pool_threads, crate::NAME)
                    .expect("a token pool of two ids or more is always valid"),
                pool_threads,
            }
        })
        .clone()
}

impl UniqueToken for RayonGlobalToken {
    fn size(&self) -> usize {
        self.ids.size()
    }

    fn try_acquire(&self) -> Option<usize> {
        // The id this thread gave back last in its share, still held for it.
        if let Some(id) = self.ids.take_parked() {
            return Some(id);
        }
        if let Some(id) = context::preferred_global()
            && self.ids.try_claim(id)
        {
            return Some(id);
        }
        self.ids
            .try_acquire_in(self.pool_threads..self.ids.size())
            .or_else(|| self.ids.try_acquire_in(0..self.pool_threads))
    }

    fn release(&self, id: usize) {
        self.ids.release(id);
    }
}

impl fmt::Debug for RayonGlobalToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RayonGlobalToken")
            .field("size", &self.ids.size())
            .field("pool_threads", &self.pool_threads)
            .field("live", &self.ids.live())
            .finish()
    }
}
