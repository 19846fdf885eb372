//! The global-scope unique token.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use hoplite_core::{ExecutionSpace, UniqueToken};

use crate::RayonSpace;
use crate::context;

/// The global-scope unique token of the rayon backend: ids unique among everything that runs
/// in the process, across all instances.
///
/// # Design
///
/// Let `g` be the thread count of the default instance ([`RayonSpace::default()`]). The token
/// has `size() == 2 * g` ids, held in a lock-free bitmap (one bit per id, claimed with an
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
    inner: Arc<Bitmap>,
}

struct Bitmap {
    size: usize,
    pool_threads: usize,
    words: Box<[AtomicU64]>,
}

impl Bitmap {
    /// Claims `id` if it is free.
    fn claim(&self, id: usize) -> bool {
        let mask = 1u64 << (id % 64);
        self.words[id / 64].fetch_or(mask, Ordering::Acquire) & mask == 0
    }

    /// Claims the lowest free id in `lo..hi`.
    fn claim_any(&self, lo: usize, hi: usize) -> Option<usize> {
        let hi = hi.min(self.size);
        if lo >= hi {
            return None;
        }
        for w in lo / 64..=(hi - 1) / 64 {
            let first = (w * 64).max(lo);
            let last = ((w + 1) * 64).min(hi);
            // Bits `first..last` of word `w`.
            let width = last - first;
            let shift = first - w * 64;
            let range = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << shift
            };
            let word = &self.words[w];
            let mut current = word.load(Ordering::Relaxed);
            loop {
                let free = !current & range;
                if free == 0 {
                    break;
                }
                let bit = free.trailing_zeros();
                match word.compare_exchange_weak(
                    current,
                    current | (1 << bit),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(w * 64 + bit as usize),
                    Err(now) => current = now,
                }
            }
        }
        None
    }
}

/// The process-wide global token (built with the default instance).
pub(crate) fn global() -> RayonGlobalToken {
    static GLOBAL: OnceLock<RayonGlobalToken> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            let pool_threads = RayonSpace::default().concurrency();
            let size = 2 * pool_threads;
            RayonGlobalToken {
                inner: Arc::new(Bitmap {
                    size,
                    pool_threads,
                    words: (0..size.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
                }),
            }
        })
        .clone()
}

impl UniqueToken for RayonGlobalToken {
    fn size(&self) -> usize {
        self.inner.size
    }

    fn try_acquire(&self) -> Option<usize> {
        let map = &*self.inner;
        if let Some(id) = context::preferred_global()
            && id < map.size
            && map.claim(id)
        {
            return Some(id);
        }
        map.claim_any(map.pool_threads, map.size)
            .or_else(|| map.claim_any(0, map.pool_threads))
    }

    fn release(&self, id: usize) {
        let map = &*self.inner;
        assert!(
            id < map.size,
            "unique token id {id} is out of range 0..{}",
            map.size
        );
        let mask = 1u64 << (id % 64);
        let before = map.words[id / 64].fetch_and(!mask, Ordering::Release);
        assert!(before & mask != 0, "unique token id {id} released but not held");
    }
}

impl fmt::Debug for RayonGlobalToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live: u32 = self
            .inner
            .words
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones())
            .sum();
        f.debug_struct("RayonGlobalToken")
            .field("size", &self.inner.size)
            .field("pool_threads", &self.inner.pool_threads)
            .field("live", &live)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_ranges_cover_word_boundaries() {
        let map = Bitmap {
            size: 130,
            pool_threads: 65,
            words: (0..3).map(|_| AtomicU64::new(0)).collect(),
        };
        let high: Vec<usize> = (0..65).map(|_| map.claim_any(65, 130).expect("free")).collect();
        assert_eq!(high, (65..130).collect::<Vec<_>>());
        assert_eq!(map.claim_any(65, 130), None);
        assert!(map.claim(3));
        assert!(!map.claim(3));
        assert_eq!(map.claim_any(0, 65), Some(0));
        assert_eq!(map.claim_any(63, 65), Some(63));
        assert_eq!(map.claim_any(63, 65), Some(64));
        assert_eq!(map.claim_any(63, 65), None);
    }
}
