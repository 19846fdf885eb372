//! The team barrier ([`Barrier`]), with its poisoning, and the waiting it is built from, which
//! the launch hand-off in `pool` shares: a spin-then-yield budget and hints of where a team's
//! threads run.
//!
//! Every wait in this crate has three phases. It *spins* (busy-waits with `spin_loop` hints)
//! for a few microseconds, because the event it waits for is usually just about to happen;
//! it then *yields* the core for a while, so that an oversubscribed machine (more runnable
//! threads than cores) makes progress; and only then it *parks* (blocks in the kernel), so
//! that idle threads cost nothing.
//!
//! A waiter whose peer was last seen on its own CPU skips spinning and yielding and blocks at
//! once (the peer wakes it): the peer cannot run while the waiter spins, so every spin is pure
//! delay. On a busy machine the scheduler often puts a launching thread and the worker it
//! wakes on one CPU (the other CPUs run other programs); spinning there cost each launch both
//! spin budgets, a steady ~100 µs (see docs/PERFORMANCE.md, "Launches on a busy machine").

use std::sync::PoisonError;
use std::sync::atomic::AtomicU32;
use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

use crate::sync_prims::{AtomicBool, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, fence};

use crossbeam_utils::CachePadded;

/// Locks `m`, ignoring poisoning: every mutex of this crate guards data that stays consistent
/// when a holder panics (a slot that is either written or not, or nothing at all).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A CPU number the platform does not give.
const NO_CPU: u32 = u32::MAX;

/// The CPU the calling thread runs on right now, or [`NO_CPU`]. A hint: the thread may move
/// right after. Under loom and Miri no CPU is known (Miri does not run `sched_getcpu`), so
/// every wait takes the spinning path.
#[inline]
fn current_cpu() -> u32 {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        // SAFETY: `sched_getcpu` has no preconditions: it reads the calling thread's CPU
        // number (from the kernel's per-thread area or the vDSO) or returns -1.
        let cpu = unsafe { libc::sched_getcpu() };
        u32::try_from(cpu).unwrap_or(NO_CPU)
    }
    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    {
        NO_CPU
    }
}

/// Where the threads of one team were last seen running, one slot per thread, so that a
/// waiter can tell whether a peer shares its CPU (see the module docs).
///
/// The slots are hints, never synchronization: they are plain `std` atomics also under loom
/// (where no CPU is ever known, so every wait takes the spinning path loom models).
pub(crate) struct CpuHints {
    slots: Box<[CachePadded<AtomicU32>]>,
}

impl CpuHints {
    /// Hints for `n` threads, none seen yet.
    pub(crate) fn new(n: usize) -> Self {
        CpuHints {
            slots: (0..n).map(|_| CachePadded::new(AtomicU32::new(NO_CPU))).collect(),
        }
    }

    /// Records that thread `slot` runs on the calling thread's CPU, and returns whether
    /// another thread of the team was last seen on that CPU.
    #[inline]
    pub(crate) fn arrive(&self, slot: usize) -> bool {
        let cpu = current_cpu();
        let Some(mine) = self.slots.get(slot) else {
            return false;
        };
        // Stored only when it changed, so that the line stays shared with the peers that read
        // it: a launch then reads every slot from its own cache.
        if mine.load(std::sync::atomic::Ordering::Relaxed) != cpu {
            mine.store(cpu, std::sync::atomic::Ordering::Relaxed);
        }
        cpu != NO_CPU
            && self
                .slots
                .iter()
                .enumerate()
                .any(|(k, s)| k != slot && s.load(std::sync::atomic::Ordering::Relaxed) == cpu)
    }
}

/// A budget for busy-waiting: spin for `spin`, then yield until `total` has passed.
#[cfg(not(loom))]
pub(crate) struct SpinWait {
    start: Option<Instant>,
    iterations: u32,
    yielding: bool,
    block_now: bool,
    spin: Duration,
    total: Duration,
}

#[cfg(not(loom))]
impl SpinWait {
    /// A budget that spins for `spin` and gives up after `total`.
    pub(crate) fn new(spin: Duration, total: Duration) -> Self {
        SpinWait {
            start: None,
            iterations: 0,
            yielding: false,
            block_now: false,
            spin,
            total,
        }
    }

    /// The same budget, spent at once when `peer_here` (a peer this wait waits for was last
    /// seen on this CPU): the waiter blocks right away and the peer wakes it. Spinning would
    /// only keep the peer off the CPU, and yielding is no better on a busy CPU: Linux's fair
    /// scheduler moves a yielding thread's deadline back by a whole time slice per yield, so
    /// a thread that yields in a loop while other programs share its CPU waits out their
    /// slices (milliseconds) once its peer is done. A blocked thread keeps its place.
    pub(crate) fn beside(mut self, peer_here: bool) -> Self {
        self.block_now = peer_here;
        self
    }

    /// Waits a little. Returns `false` once the budget is spent: time to block.
    #[inline]
    pub(crate) fn wait(&mut self) -> bool {
        if self.block_now {
            return false;
        }
        self.iterations = self.iterations.wrapping_add(1);
        // The first few rounds are pure spins: the common case is an event a few hundred
        // nanoseconds away, and reading the clock would cost more than that.
        if self.iterations > 32 && (self.yielding || self.iterations.is_multiple_of(16)) {
            let now = Instant::now();
            let elapsed = now.duration_since(*self.start.get_or_insert(now));
            if elapsed >= self.total {
                return false;
            }
            self.yielding = elapsed >= self.spin;
        }
        if self.yielding {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
        true
    }
}

/// Under loom, time does not pass: a budget is one yield (so the model explores the other
/// threads' progress) and then blocking, which is the path where lost wake-ups hide.
#[cfg(loom)]
pub(crate) struct SpinWait {
    waited: bool,
}

#[cfg(loom)]
impl SpinWait {
    pub(crate) fn new(_spin: Duration, _total: Duration) -> Self {
        SpinWait { waited: false }
    }

    pub(crate) fn beside(self, _peer_here: bool) -> Self {
        self
    }

    pub(crate) fn wait(&mut self) -> bool {
        if self.waited {
            return false;
        }
        self.waited = true;
        loom::thread::yield_now();
        true
    }
}

/// Marker payload of the panic a team thread raises when another thread of its team panicked
/// (so the barrier it waits in can never complete). The dispatcher reports the original panic
/// instead of this one.
#[derive(Debug)]
pub(crate) struct TeamPoisoned;

/// Whether a panic payload is only the echo of another thread's panic.
pub(crate) fn is_poison_echo(payload: &(dyn std::any::Any + Send)) -> bool {
    payload.is::<TeamPoisoned>()
}

/// Raises the [`TeamPoisoned`] echo panic, without running the panic hook (the original
/// panic already printed its message).
pub(crate) fn raise_poisoned() -> ! {
    std::panic::resume_unwind(Box::new(TeamPoisoned))
}

/// A reusable barrier for the `n` threads of one team, with acquire/release semantics, that
/// can be *poisoned*.
///
/// Arrivals are counted with an acquire-release read-modify-write; the last thread to arrive
/// resets the count and publishes a new generation with a release store, and waiters leave
/// when they observe it with an acquire load. So every write a thread made before
/// [`wait`](Self::wait) happens before every read any thread makes after it.
///
/// *Poisoning.* A team thread whose kernel panics never arrives again, so the threads
/// waiting for it would wait forever. The dispatcher poisons the team's barrier when it
/// catches such a panic; a [poisonable wait](Self::wait) then leaves by raising
/// [`TeamPoisoned`]. Only a member of the team poisons it, and only while it is outside the
/// barrier (running user code), so a generation that is poisoned can never complete: no
/// thread can have passed it while another one left it because of the poison.
///
/// *Departures.* Some waits must not leave while any other thread of the team may still be
/// working on the data of the generation before (the closing wait of a collective: its
/// peers may still read the value it published). Such a [guarded wait](Self::wait_guarded)
/// leaves a poisoned barrier only once every thread of the team is accounted for: either
/// waiting in this generation or [departed](Self::depart) for good (its share of the launch
/// ended, normally or by a panic). Both counts change under the barrier's lock, and a thread
/// that leaves a generation without completing it withdraws its arrival under that lock
/// before it can depart, so no thread is ever counted twice.
pub(crate) struct Barrier {
    n: usize,
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
    poisoned: AtomicBool,
    sleepers: AtomicUsize,
    /// Where the threads were last seen, by team rank.
    cpus: CpuHints,
    /// Guards the slow path; holds the number of departed threads.
    departed: Mutex<usize>,
    wake: Condvar,
}

/// How a wait treats a poisoned barrier.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnPoison {
    /// Leave at once.
    Leave,
    /// Leave once every thread of the team waits in this generation or has departed.
    LeaveWhenAccounted,
}

impl Barrier {
    /// Spinning budget of a barrier wait.
    const SPIN: Duration = Duration::from_micros(20);
    /// Total busy-waiting budget of a barrier wait before it blocks.
    const BUSY: Duration = Duration::from_micros(200);

    /// A barrier for `n` threads.
    pub(crate) fn new(n: usize) -> Self {
        Barrier {
            n,
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
            poisoned: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            cpus: CpuHints::new(n),
            departed: Mutex::new(0),
            wake: Condvar::new(),
        }
    }

    /// The current generation: how many times the barrier has completed. It cannot change
    /// before the calling team thread arrives.
    pub(crate) fn generation(&self) -> usize {
        self.generation.load(Ordering::Acquire)
    }

    /// Waits for every thread of the team (the caller is team rank `rank`); raises [`TeamPoisoned`] if the team is poisoned
    /// before the barrier completes.
    pub(crate) fn wait(&self, rank: usize) {
        if !self.wait_inner(rank, OnPoison::Leave) {
            raise_poisoned();
        }
    }

    /// Waits for every thread of the team (the caller is team rank `rank`). If the team is poisoned, leaves only once every
    /// other thread of the team waits here too or has departed, and returns `false`; returns
    /// `true` when the barrier completed.
    pub(crate) fn wait_guarded(&self, rank: usize) -> bool {
        self.wait_inner(rank, OnPoison::LeaveWhenAccounted)
    }

    /// Marks the team as failed and wakes every waiter.
    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
        self.wake_all();
    }

    /// Records that the calling thread's share of the launch is over (it will never wait
    /// here again) and wakes guarded waiters that may now be accounted for.
    pub(crate) fn depart(&self) {
        *lock(&self.departed) += 1;
        // A sleeper announced itself before taking the lock it waits with, so after this
        // thread's turn with the lock, either it sees the sleeper or the sleeper sees the
        // departure.
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            self.wake.notify_all();
        }
    }

    /// Returns `true` when the barrier completed, `false` when the wait left because of
    /// poisoning.
    fn wait_inner(&self, rank: usize, on_poison: OnPoison) -> bool {
        if self.n <= 1 {
            return true;
        }
        // The generation cannot move before this thread arrives.
        let generation = self.generation.load(Ordering::Acquire);
        let peer_here = self.cpus.arrive(rank);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            // Last to arrive: nobody can arrive for the next generation before seeing the
            // new generation, which is published after the reset.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation
                .store(generation.wrapping_add(1), Ordering::Release);
            self.wake_all();
            return true;
        }
        // A thread of the team may wait for the token id this one parked.
        hoplite_core::return_parked_id();
        let done = || self.generation.load(Ordering::Acquire) != generation;
        let mut spin = SpinWait::new(Self::SPIN, Self::BUSY).beside(peer_here);
        loop {
            if done() {
                return true;
            }
            // Leaving because of poison happens under the lock (below).
            if self.poisoned.load(Ordering::Acquire) || !spin.wait() {
                break;
            }
        }
        // Slow path: block. Announce the sleeper, fence, then re-check under the lock; the
        // waker stores, fences and then reads `sleepers` (see `wake_all`), so either it sees
        // this sleeper or this thread sees its store.
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut departed = lock(&self.departed);
        let completed = loop {
            if self.generation.load(Ordering::Acquire) != generation {
                break true;
            }
            if self.poisoned.load(Ordering::Acquire) {
                let may_leave = match on_poison {
                    OnPoison::Leave => true,
                    // A poisoned generation never completes, so `arrived` counts exactly
                    // the threads waiting in it; departures and withdrawals change only
                    // under this lock.
                    OnPoison::LeaveWhenAccounted => {
                        self.arrived.load(Ordering::Acquire) + *departed >= self.n
                    }
                };
                if may_leave {
                    // Withdraw the arrival before this thread can depart or arrive again.
                    self.arrived.fetch_sub(1, Ordering::AcqRel);
                    break false;
                }
            }
            departed = self.wake.wait(departed).unwrap_or_else(PoisonError::into_inner);
        };
        drop(departed);
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        completed
    }

    /// Wakes the sleepers after the caller stored what they wait for.
    fn wake_all(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            // Taking the lock orders this wake-up after any sleeper's check of the condition.
            drop(lock(&self.departed));
            self.wake.notify_all();
        }
    }
}

impl std::fmt::Debug for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .field("poisoned", &self.poisoned.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn barrier_orders_writes_across_generations() {
        let barrier = Barrier::new(3);
        let cells: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        std::thread::scope(|s| {
            for me in 0..3u64 {
                let (barrier, cells) = (&barrier, &cells);
                s.spawn(move || {
                    for round in 1..=200u64 {
                        cells[me as usize].store(round * 10 + me, Ordering::Relaxed);
                        barrier.wait(me as usize);
                        for (k, c) in cells.iter().enumerate() {
                            assert_eq!(c.load(Ordering::Relaxed), round * 10 + k as u64);
                        }
                        barrier.wait(me as usize);
                    }
                });
            }
        });
        assert_eq!(barrier.generation(), 400);
    }

    #[test]
    fn poisoning_releases_waiters_with_the_echo_panic() {
        let barrier = Barrier::new(3);
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..2)
                .map(|rank| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| barrier.wait(rank)))
                            .map_err(|p| is_poison_echo(&*p))
                    })
                })
                .collect();
            // Let the waiters reach the blocking phase, then fail the third member.
            std::thread::sleep(Duration::from_millis(5));
            barrier.poison();
            for w in waiters {
                assert_eq!(w.join().expect("waiter thread"), Err(true));
            }
        });
    }
}

/// Loom models of the barrier (`RUSTFLAGS="--cfg loom" cargo test --release -p
/// hoplite-rayon --lib loom`): generations publish writes, poisoning releases every kind of
/// wait (loom reports a deadlock if a wake-up is lost), and a guarded wait never leaves while a
/// peer still reads the value it published.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Bounded preemptions keep the state space (spinning waits, several generations) small
    /// enough for CI; the bugs loom finds need few preemptions.
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(f);
    }

    /// Two threads through two generations: what one wrote before a barrier, the other reads
    /// after it.
    #[test]
    fn loom_barrier_publishes_writes() {
        model(|| {
            let shared = Arc::new((Barrier::new(2), [UnsafeCell::new(0u64), UnsafeCell::new(0u64)]));
            let peer = {
                let shared = Arc::clone(&shared);
                loom::thread::spawn(move || {
                    let (barrier, cells) = &*shared;
                    for round in 1..=2 {
                        // SAFETY: loom checks it: each cell is written by its owner between
                        // barriers and read by the other after them.
                        cells[1].with_mut(|p| unsafe { *p = round });
                        barrier.wait(1);
                        // SAFETY: as above.
                        assert_eq!(cells[0].with(|p| unsafe { *p }), round);
                        barrier.wait(1);
                    }
                })
            };
            let (barrier, cells) = &*shared;
            for round in 1..=2 {
                // SAFETY: as above.
                cells[0].with_mut(|p| unsafe { *p = round });
                barrier.wait(0);
                // SAFETY: as above.
                assert_eq!(cells[1].with(|p| unsafe { *p }), round);
                barrier.wait(0);
            }
            peer.join().expect("peer");
            assert_eq!(barrier.generation(), 4);
        });
    }

    /// A thread that fails (poisons and departs without arriving) releases a plain waiter and
    /// a guarded waiter; both leave without the barrier completing.
    #[test]
    fn loom_poison_releases_plain_and_guarded_waits() {
        model(|| {
            let barrier = Arc::new(Barrier::new(3));
            let plain = {
                let b = Arc::clone(&barrier);
                loom::thread::spawn(move || {
                    let completed = b.wait_inner(1, OnPoison::Leave);
                    b.depart();
                    completed
                })
            };
            let guarded = {
                let b = Arc::clone(&barrier);
                loom::thread::spawn(move || {
                    let completed = b.wait_guarded(2);
                    b.depart();
                    completed
                })
            };
            barrier.poison();
            barrier.depart();
            assert!(!plain.join().expect("plain waiter"));
            assert!(!guarded.join().expect("guarded waiter"));
        });
    }

    /// Rank 0 published a value and waits (guarded) for the end of the exchange; rank 1 still
    /// reads it; rank 2 fails. Rank 0 must not leave — and drop its value — before rank 1 is
    /// done reading: loom reports the read racing with the write that models the drop.
    #[test]
    fn loom_guarded_wait_outlasts_readers() {
        model(|| {
            let shared = Arc::new((Barrier::new(3), UnsafeCell::new(7u64)));
            let reader = {
                let shared = Arc::clone(&shared);
                loom::thread::spawn(move || {
                    let (barrier, value) = &*shared;
                    // SAFETY: loom checks it (see the test's docs).
                    assert_eq!(value.with(|p| unsafe { *p }), 7);
                    barrier.wait_guarded(1);
                    barrier.depart();
                })
            };
            let failing = {
                let shared = Arc::clone(&shared);
                loom::thread::spawn(move || {
                    shared.0.poison();
                    shared.0.depart();
                })
            };
            let (barrier, value) = &*shared;
            if !barrier.wait_guarded(0) {
                // The value goes out of scope.
                // SAFETY: loom checks it (see the test's docs).
                value.with_mut(|p| unsafe { *p = 0 });
            }
            barrier.depart();
            reader.join().expect("reader");
            failing.join().expect("failing rank");
        });
    }
}
