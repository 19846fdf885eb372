//! [`TokenPool`], the host implementation of unique tokens: ids on cache lines of their own,
//! each thread's preferred id, and the per-share lease of a thread's rank id.

use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::unique_token::concept::{UniqueToken, wait_for_id};

/// A lock-free pool of ids `[0, size)`, claimed with an atomic read-modify-write.
///
/// Host backends use it for their tokens. Clones share the pool.
///
/// Each thread looks first at an id of its own ([`prefer_id`]: a backend names a thread's rank
/// in its team while it runs a share; other threads get distinct ids in turn), and a pool of
/// at most 256 ids keeps every id on a cache line of its own: threads that take and give back
/// their own ids touch only lines no other thread writes, so the documented histogram idiom
/// (`let id = tokens.guard();` per element) costs an uncontended atomic per element instead of
/// a cache line passed between cores. Larger pools keep one bit per id. Inside a share a host
/// backend runs with [`lease_rank_id`], not even that: the id of the thread's rank, once
/// released, stays parked for it, and the next acquire takes it back from thread-local state.
#[derive(Clone)]
pub struct TokenPool {
    inner: Arc<PoolInner>,
}

/// Pools of at most this many ids keep each id on a cache line of its own.
const SPREAD_MAX: usize = 256;

/// One id of a spread pool, alone on its cache lines (128 bytes: adjacent-line prefetch pairs
/// lines).
#[repr(align(128))]
struct SpreadId(AtomicBool);

enum Ids {
    /// One id per cache line (small pools).
    Spread(Box<[SpreadId]>),
    /// One bit per id.
    Packed(Box<[AtomicU64]>),
}

struct PoolInner {
    size: usize,
    ids: Ids,
}

thread_local! {
    /// The id this thread looks at first, `usize::MAX` until it is given one.
    static PREFERRED: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// No rank: the thread is not running a share with a lease ([`lease_rank_id`]).
const NO_RANK: usize = usize::MAX;

/// While a thread runs its share of a launch as rank `rank` of `ranks` ([`lease_rank_id`]), the
/// id `rank` it gives back to a pool of at least `ranks` ids stays held for it ("parked"), so
/// its next acquire from that pool takes it back without an atomic: the id is the thread's by
/// right (as Kokkos' thread-id tokens), since no other rank of the launch prefers it.
struct Lease {
    /// The thread's rank in the launch whose share it runs, [`NO_RANK`] outside one.
    rank: Cell<usize>,
    /// The number of ranks of that launch: only pools of at least as many ids are leased.
    ranks: Cell<usize>,
    /// The leased pool: a strong reference from `Arc::into_raw`, or null.
    pool: Cell<*const PoolInner>,
    /// Where id `rank` of `pool` is: [`NOT_LEASED`], [`PARKED`] or [`LENT`].
    state: Cell<u8>,
}

/// The lease has not seen id `rank` of its pool (or none is bound): it may be free or held.
const NOT_LEASED: u8 = 0;
/// Id `rank` was released by this thread and stays held for it.
const PARKED: u8 = 1;
/// Id `rank` was taken back from the lease and is held by its taker.
const LENT: u8 = 2;

thread_local! {
    static LEASE: Lease = const {
        Lease {
            rank: Cell::new(NO_RANK),
            ranks: Cell::new(0),
            pool: Cell::new(std::ptr::null()),
            state: Cell::new(NOT_LEASED),
        }
    };
}

impl Lease {
    /// Gives the parked id back to its pool and drops the lease's reference to the pool.
    fn close(&self) {
        let pool = self.pool.replace(std::ptr::null());
        let parked = self.state.replace(NOT_LEASED) == PARKED;
        if pool.is_null() {
            return;
        }
        // SAFETY: `pool` came from `Arc::into_raw` in `TokenPool::park_first` and was not
        // turned back since (the cell held it until the `replace` above), so this takes back
        // that one strong reference.
        let pool = unsafe { Arc::from_raw(pool) };
        if parked {
            pool.free(self.rank.get());
        }
    }
}

/// Hands threads without a preferred id distinct ones, in turn.
static NEXT_PREFERRED: AtomicUsize = AtomicUsize::new(0);

/// The id the calling thread looks at first (modulo a pool's size).
#[inline]
fn preferred_id() -> usize {
    let id = PREFERRED.get();
    if id != usize::MAX {
        return id;
    }
    let id = NEXT_PREFERRED.fetch_add(1, Ordering::Relaxed) % (usize::MAX / 2);
    PREFERRED.set(id);
    id
}

/// Makes `id` the calling thread's preferred token id until the guard drops (the previous
/// preference comes back then). A hint only: it decides where [`TokenPool`] looks first, never
/// which ids are free. Host backends call it with a thread's rank while it runs its share of a
/// launch, so the threads of one launch prefer different ids. An id the thread had parked
/// ([`lease_rank_id`]) goes back to its pool, and none is parked until the guard drops.
///
/// ```
/// use hoplite_core::prefer_id;
/// use hoplite_core::{TokenPool, UniqueToken};
/// let pool = TokenPool::new(4, "Example")?;
/// let _rank = prefer_id(2);
/// assert_eq!(pool.acquire(), 2);
/// assert_ne!(pool.acquire(), 2, "2 is held: another free id");
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub fn prefer_id(id: usize) -> PreferredId {
    scope(id, NO_RANK, 0)
}

/// [`prefer_id`]`(rank)` for a thread that runs its share of a launch as rank `rank` of
/// `ranks`, which also leases id `rank` to it: in a [`TokenPool`] of at least `ranks` ids, the
/// id `rank` the thread releases stays held for it until its next acquire there (no atomic
/// either way) or until the guard drops. That makes the per-element idiom
/// (`let id = tokens.guard();` in a kernel) cost a few loads and stores of the thread's own
/// state. Host backends call it around each thread's share; before a thread waits for other
/// threads of the launch (a team barrier), it calls [`return_parked_id`].
///
/// ```
/// use hoplite_core::{lease_rank_id, TokenPool, UniqueToken};
/// let pool = TokenPool::new(4, "Example")?;
/// let share = lease_rank_id(1, 2);
/// let id = pool.acquire();
/// assert_eq!(id, 1, "the rank's own id");
/// pool.release(id);
/// assert_eq!(pool.live(), 1, "parked for this thread's next acquire");
/// assert_eq!(pool.acquire(), 1);
/// pool.release(1);
/// drop(share);
/// assert_eq!(pool.live(), 0, "the share's end gives it back");
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub fn lease_rank_id(rank: usize, ranks: usize) -> PreferredId {
    if rank >= ranks {
        return prefer_id(rank);
    }
    scope(rank, rank, ranks)
}

/// Gives the id the calling thread parked ([`lease_rank_id`]) back to its pool. Backends call
/// it before a thread waits for other threads of its launch, which may be waiting for that id.
///
/// ```
/// use hoplite_core::{lease_rank_id, return_parked_id, TokenPool, UniqueToken};
/// let pool = TokenPool::new(2, "Example")?;
/// let _share = lease_rank_id(0, 2);
/// pool.release(pool.acquire());
/// assert_eq!(pool.live(), 1);
/// return_parked_id();
/// assert_eq!(pool.live(), 0);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[inline]
pub fn return_parked_id() {
    LEASE.with(|l| {
        if l.state.get() == PARKED {
            l.close();
        }
    });
}

/// Opens a preference scope, with a lease of `rank` of `ranks` (or none for [`NO_RANK`]).
fn scope(preferred: usize, rank: usize, ranks: usize) -> PreferredId {
    // An enclosing scope's parked id goes back: this thread may now wait for threads (those
    // of a nested launch) that want it.
    let enclosing = LEASE.with(|l| {
        l.close();
        (l.rank.replace(rank), l.ranks.replace(ranks))
    });
    PreferredId {
        previous: PREFERRED.replace(preferred),
        enclosing,
    }
}

/// Restores the calling thread's previous preferred token id on drop; see [`prefer_id`].
#[must_use = "the preference lasts as long as the guard"]
pub struct PreferredId {
    previous: usize,
    /// The enclosing scope's lease (rank, ranks), restored with nothing parked.
    enclosing: (usize, usize),
}

impl Drop for PreferredId {
    fn drop(&mut self) {
        PREFERRED.set(self.previous);
        let (rank, ranks) = self.enclosing;
        LEASE.with(|l| {
            l.close();
            l.rank.set(rank);
            l.ranks.set(ranks);
        });
    }
}

impl fmt::Debug for PreferredId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreferredId").finish_non_exhaustive()
    }
}

impl TokenPool {
    /// A pool of `size` ids for a token of `space` (named in the error for size 0).
    pub fn new(size: usize, space: &'static str) -> Result<Self> {
        if size == 0 {
            return Err(Error::InvalidTokenSize {
                requested: 0,
                space,
                reason: "a unique token needs at least one id".to_owned(),
            });
        }
        let ids = if size <= SPREAD_MAX {
            Ids::Spread((0..size).map(|_| SpreadId(AtomicBool::new(false))).collect())
        } else {
            let words = size.div_ceil(64);
            let Some(words) = crate::team::zeroed_words(words) else {
                return Err(Error::InvalidTokenSize {
                    requested: size,
                    space,
                    reason: format!(
                        "a pool of {size} ids needs {} bytes, which could not be allocated",
                        size.div_ceil(64).saturating_mul(8)
                    ),
                });
            };
            Ids::Packed(words)
        };
        Ok(TokenPool {
            inner: Arc::new(PoolInner { size, ids }),
        })
    }

    /// Number of ids currently held.
    pub fn live(&self) -> usize {
        match &self.inner.ids {
            Ids::Spread(ids) => ids.iter().filter(|id| id.0.load(Ordering::Relaxed)).count(),
            Ids::Packed(words) => {
                let ones: u32 = words.iter().map(|w| w.load(Ordering::Relaxed).count_ones()).sum();
                ones as usize
            }
        }
    }

    /// Claims `id` if it is free (for a backend whose threads prefer an id of their own).
    /// `false` if it is held or out of range.
    ///
    /// ```
    /// use hoplite_core::{TokenPool, UniqueToken};
    /// let pool = TokenPool::new(4, "Example")?;
    /// assert!(pool.try_claim(2));
    /// assert!(!pool.try_claim(2) && !pool.try_claim(4));
    /// pool.release(2);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline]
    pub fn try_claim(&self, id: usize) -> bool {
        if id >= self.inner.size {
            return false;
        }
        match &self.inner.ids {
            // A held id is seen without writing its line.
            Ids::Spread(ids) => {
                !ids[id].0.load(Ordering::Relaxed) && !ids[id].0.swap(true, Ordering::Acquire)
            }
            Ids::Packed(words) => {
                let mask = 1u64 << (id % 64);
                words[id / 64].fetch_or(mask, Ordering::Acquire) & mask == 0
            }
        }
    }

    /// Takes back the id the calling thread parked in this pool, if it did (see
    /// [`lease_rank_id`]): no atomic, the id stayed held while parked.
    ///
    /// ```
    /// use hoplite_core::{lease_rank_id, TokenPool, UniqueToken};
    /// let pool = TokenPool::new(4, "Example")?;
    /// let _share = lease_rank_id(3, 4);
    /// let id = pool.acquire();
    /// pool.release(id);
    /// assert_eq!(pool.take_parked(), Some(3));
    /// assert_eq!(pool.take_parked(), None, "taken");
    /// pool.release(3);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    #[inline]
    pub fn take_parked(&self) -> Option<usize> {
        let me = Arc::as_ptr(&self.inner);
        // Small closures, so each `with` inlines to one thread-local access.
        let (pool, state) = LEASE.with(|l| (l.pool.get(), l.state.get()));
        if pool == me && state == PARKED {
            LEASE.with(|l| {
                l.state.set(LENT);
                Some(l.rank.get())
            })
        } else {
            None
        }
    }

    /// `acquire` when nothing is parked: the preferred id, any free one, else wait.
    #[inline(never)]
    fn acquire_unparked(&self) -> usize {
        if let Some(id) = self.try_acquire() {
            return id;
        }
        // About to wait: an id this thread parked (of any pool) goes back first, so a thread
        // waiting for it is not kept waiting on this one.
        return_parked_id();
        wait_for_id(self)
    }

    /// `release` of anything but the id the lease lent: parked after all, or freed.
    #[inline(never)]
    fn release_unparked(&self, id: usize) {
        if !LEASE.with(|l| self.park_first(l, id)) {
            self.inner.free(id);
        }
    }

    /// Whether a release of `id` parks it: the lease's rank id of a large enough spread pool
    /// (taking the pool into the lease if it held another), or `false` to free it.
    #[cold]
    #[inline(never)]
    fn park_first(&self, lease: &Lease, id: usize) -> bool {
        let me = Arc::as_ptr(&self.inner);
        let rank = lease.rank.get();
        if id != rank {
            return false;
        }
        if lease.pool.get() == me && lease.state.get() == PARKED {
            panic!("unique token id {id} released but not held");
        }
        // Packed pools (over 256 ids) are never leased: their words are shared by many ids,
        // and the lease is for the small pools each thread of a launch takes its id from.
        let spread = matches!(self.inner.ids, Ids::Spread(_));
        if !spread || self.inner.size < lease.ranks.get() || !self.inner.is_held(id) {
            return false;
        }
        // First park of this pool in the share: the lease keeps the pool alive (a kernel may
        // drop its last handle to it) until the share ends.
        if lease.pool.get() != me {
            lease.close();
            lease.pool.set(Arc::into_raw(Arc::clone(&self.inner)));
        }
        lease.state.set(PARKED);
        true
    }

    /// Claims a free id in `ids` (clipped to the pool's size), if any: the calling thread's
    /// preferred id when it lies in `ids` and is free, else the lowest free one from there on,
    /// wrapping around.
    ///
    /// ```
    /// use hoplite_core::{TokenPool, UniqueToken};
    /// let pool = TokenPool::new(8, "Example")?;
    /// let a = pool.try_acquire_in(4..8).expect("free");
    /// let b = pool.try_acquire_in(4..8).expect("free");
    /// assert!(a != b && (4..8).contains(&a) && (4..8).contains(&b));
    /// assert_eq!(pool.try_acquire_in(7..20).map(|id| id >= 4), Some(true));
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn try_acquire_in(&self, ids: Range<usize>) -> Option<usize> {
        let (lo, hi) = (ids.start, ids.end.min(self.inner.size));
        if lo >= hi {
            return None;
        }
        let start = lo + preferred_id() % (hi - lo);
        match &self.inner.ids {
            Ids::Spread(_) => (start..hi).chain(lo..start).find(|&id| self.try_claim(id)),
            Ids::Packed(words) => claim_packed(words, start, hi).or_else(|| claim_packed(words, lo, start)),
        }
    }
}

impl PoolInner {
    /// Marks `id` free in the pool's words.
    ///
    /// # Panics
    ///
    /// If `id` is out of range or not held.
    #[inline]
    fn free(&self, id: usize) {
        assert!(
            id < self.size,
            "unique token id {id} is out of range 0..{}",
            self.size
        );
        let held = match &self.ids {
            Ids::Spread(ids) => {
                // Only the holder gives an id back, so a load and a store suffice (no locked
                // instruction): a second release of the same id is seen here as a free id.
                let held = ids[id].0.load(Ordering::Relaxed);
                ids[id].0.store(false, Ordering::Release);
                held
            }
            Ids::Packed(words) => {
                let mask = 1u64 << (id % 64);
                words[id / 64].fetch_and(!mask, Ordering::Release) & mask != 0
            }
        };
        assert!(held, "unique token id {id} released but not held");
    }

    /// Whether `id` is marked held (a relaxed look, for the double-release check).
    #[inline(always)]
    fn is_held(&self, id: usize) -> bool {
        match &self.ids {
            Ids::Spread(ids) => ids[id].0.load(Ordering::Relaxed),
            Ids::Packed(words) => words[id / 64].load(Ordering::Relaxed) & (1u64 << (id % 64)) != 0,
        }
    }
}

/// Claims the lowest free id in `lo..hi` of a packed pool.
fn claim_packed(words: &[AtomicU64], lo: usize, hi: usize) -> Option<usize> {
    if lo >= hi {
        return None;
    }
    let last_word = (hi - 1) / 64;
    for (w, word) in words.iter().enumerate().take(last_word + 1).skip(lo / 64) {
        let first = (w * 64).max(lo);
        let last = ((w + 1) * 64).min(hi);
        // The bits of ids `first..last` in word `w`.
        let width = last - first;
        let mask = if width == 64 {
            u64::MAX
        } else {
            ((1u64 << width) - 1) << (first - w * 64)
        };
        let mut current = word.load(Ordering::Relaxed);
        loop {
            let free = !current & mask;
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

impl UniqueToken for TokenPool {
    fn size(&self) -> usize {
        self.inner.size
    }

    #[inline]
    fn try_acquire(&self) -> Option<usize> {
        if let Some(id) = self.take_parked() {
            return Some(id);
        }
        // The preferred id first, without the range arithmetic.
        let size = self.inner.size;
        let home = preferred_id() % size;
        if self.try_claim(home) {
            return Some(home);
        }
        self.try_acquire_in(0..size)
    }

    #[inline]
    fn acquire(&self) -> usize {
        match self.take_parked() {
            Some(id) => id,
            None => self.acquire_unparked(),
        }
    }

    /// The id the thread's lease lent parks again with two thread-local accesses; anything
    /// else is parked or freed out of line, which keeps this small enough to inline into a
    /// kernel's loop.
    #[inline(always)]
    fn release(&self, id: usize) {
        let me = Arc::as_ptr(&self.inner);
        let (pool, state, rank) = LEASE.with(|l| (l.pool.get(), l.state.get(), l.rank.get()));
        // A lent id is held (the double-release check `free` makes is that only held ids go
        // back): it parks again.
        if pool == me && state == LENT && id == rank {
            LEASE.with(|l| l.state.set(PARKED));
        } else {
            self.release_unparked(id);
        }
    }
}

impl fmt::Debug for TokenPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenPool")
            .field("size", &self.inner.size)
            .field("live", &self.live())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_hands_out_each_id_once_until_released() {
        // 70 ids: a spread pool; 700: a packed one.
        for size in [70, 700] {
            let pool = TokenPool::new(size, "test").expect("pool");
            let mut ids: Vec<usize> = (0..size).map(|_| pool.try_acquire().expect("free id")).collect();
            assert_eq!(pool.try_acquire(), None);
            ids.sort_unstable();
            assert_eq!(ids, (0..size).collect::<Vec<_>>());
            pool.release(65);
            assert_eq!(pool.try_acquire(), Some(65));
            assert_eq!(pool.live(), size);
        }
        assert!(matches!(
            TokenPool::new(0, "x"),
            Err(Error::InvalidTokenSize { requested: 0, .. })
        ));
    }

    #[test]
    fn ranges_and_claims_cover_word_boundaries() {
        // 130 ids: spread; 1030: packed, with ranges across 64-bit words.
        for size in [130, 1030] {
            let pool = TokenPool::new(size, "Test").expect("pool");
            let mut high: Vec<usize> = (0..65)
                .map(|_| pool.try_acquire_in(65..130).expect("free"))
                .collect();
            high.sort_unstable();
            assert_eq!(high, (65..130).collect::<Vec<_>>());
            assert_eq!(pool.try_acquire_in(65..130), None);
            assert!(pool.try_claim(3));
            assert!(!pool.try_claim(3));
            assert!(!pool.try_claim(size), "out of range");
            assert!(pool.try_acquire_in(0..65).is_some_and(|id| id < 65 && id != 3));
            let mut edge = [pool.try_acquire_in(63..65), pool.try_acquire_in(63..65)];
            edge.sort_unstable();
            if edge.contains(&None) {
                // The pick from 0..65 may have taken 63 or 64.
                assert_eq!(pool.try_acquire_in(63..65), None);
            } else {
                assert_eq!(edge, [Some(63), Some(64)]);
                assert_eq!(pool.try_acquire_in(63..65), None);
            }
            assert_eq!(pool.try_acquire_in(9..9), None);
            assert!(pool.live() >= 65 + 1 + 2);
        }
    }

    #[test]
    fn a_thread_gets_its_preferred_id_while_it_is_free() {
        for size in [4, 300] {
            let pool = TokenPool::new(size, "test").expect("pool");
            let _rank = prefer_id(3);
            assert_eq!(pool.acquire(), 3);
            let other = pool.acquire();
            assert_ne!(other, 3);
            pool.release(3);
            assert_eq!(pool.acquire(), 3, "free again");
            {
                let _inner = prefer_id(size + 1);
                assert_eq!(pool.acquire(), 1, "preferences wrap around the size");
            }
            pool.release(3);
            assert_eq!(pool.acquire(), 3, "the outer preference is back");
        }
    }

    #[test]
    fn a_leased_id_parks_between_guards_and_keeps_its_pool_until_the_share_ends() {
        let share = lease_rank_id(1, 2);
        let pool = TokenPool::new(2, "test").expect("pool");
        assert_eq!(*pool.guard(), 1, "the rank's own id");
        assert_eq!(pool.live(), 1, "parked for the next guard");
        {
            let outer = pool.guard();
            let inner = pool.guard();
            assert_eq!((*outer, *inner), (1, 0), "a nested guard takes another id");
        }
        assert_eq!(pool.live(), 1, "id 0 went back, id 1 parked again");
        let twice = std::panic::catch_unwind(|| pool.release(1));
        assert!(twice.is_err(), "releasing the parked id is a double release");
        // The lease holds the pool: dropping the last handle keeps it until the share ends,
        // which gives the parked id back.
        let weak = Arc::downgrade(&pool.inner);
        drop(pool);
        assert!(weak.upgrade().is_some_and(|inner| inner.is_held(1)));
        drop(share);
        assert!(weak.upgrade().is_none(), "the share's end let the pool go");
    }

    #[test]
    fn double_release_is_caught() {
        let pool = TokenPool::new(2, "test").expect("size 2");
        let id = pool.acquire();
        pool.release(id);
        let twice = std::panic::catch_unwind(|| pool.release(id));
        assert!(twice.is_err());
    }

    #[test]
    fn concurrent_holders_never_share_an_id() {
        let pool = TokenPool::new(3, "test").expect("size 3");
        let held: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..2000 {
                        let g = pool.guard();
                        assert!(*g < 3);
                        assert_eq!(held[*g].fetch_add(1, Ordering::SeqCst), 0, "id shared");
                        held[*g].fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(pool.live(), 0);
    }
}
