//! A third-party backend in one file: `ScopedThreads` splits every launch over
//! `std::thread::scope` threads, and passes the whole conformance suite (the `suite!` line at
//! the bottom).
//!
//! It is what a crate outside hoplite writes: implement `ExecutionSpace`, a `TeamMember`,
//! `UniqueTokenSpace`, and the dispatch traits `ParallelFor` / `ParallelReduce` /
//! `ParallelScan` for the policies it supports. The free launch functions of `hoplite-core`
//! do the rest: validation, view-handle checks and binding, and catching panics.

use std::cell::Cell;
use std::io;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use hoplite_core::drop_panic_payload;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use hoplite_core::for_each_point;
use hoplite_core::{
    ExecutionSpace, ForKernel, HostSpace, Idx, LayoutRight, MDRangePolicy, MdIdx, NestedLevel, ParallelFor,
    ParallelReduce, ParallelScan, RangePolicy, ReduceKernel, Reducer, Result, SCRATCH_LEVELS, ScanKernel,
    ScanValue, Schedule, ScratchBuffer, ScratchPad, TeamMember, TeamPolicy, TokenPool, UniqueTokenSpace,
};

/// Splits each launch over `threads` scoped threads (the calling thread is one of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopedThreads {
    /// How many threads a launch uses (0 counts as 1).
    pub threads: usize,
}

impl Default for ScopedThreads {
    fn default() -> Self {
        ScopedThreads { threads: 4 }
    }
}

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as running a kernel while alive (panic-safe).
struct InKernel;

impl InKernel {
    fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        InKernel
    }
}

impl Drop for InKernel {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

const MAX_SCRATCH: [usize; SCRATCH_LEVELS] = [1 << 20, 1 << 28];

impl ScopedThreads {
    fn workers(&self) -> usize {
        self.threads.max(1)
    }

    /// Cuts `0..units` into chunks (`chunk` long, or one per thread) and calls
    /// `work(chunk_number, units)` once per chunk on up to `threads` threads: round robin for
    /// a static schedule, first come first served for a dynamic one. A panic on any thread is
    /// re-raised here with its own payload once every thread has stopped.
    fn run_chunks<W>(&self, units: usize, chunk: Option<usize>, schedule: Schedule, work: W) -> usize
    where
        W: Fn(usize, Range<usize>) + Sync,
    {
        let size = chunk.unwrap_or_else(|| match schedule {
            Schedule::Static => units.div_ceil(self.workers()),
            Schedule::Dynamic => units.div_ceil(4 * self.workers()),
        });
        let size = size.max(1);
        let chunks = units.div_ceil(size);
        let workers = self.workers().min(chunks);
        let next = AtomicUsize::new(0);
        let worker = |w: usize| {
            let _in = InKernel::enter();
            let mut turn = 0;
            loop {
                let c = match schedule {
                    Schedule::Static => w + turn * workers,
                    Schedule::Dynamic => next.fetch_add(1, Ordering::Relaxed),
                };
                turn += 1;
                if c >= chunks {
                    return;
                }
                work(c, c * size..((c + 1) * size).min(units));
            }
        };
        // Every thread catches its own panic, and the payloads not reported are dropped with
        // `drop_panic_payload`: a payload whose `Drop` panics must not unwind out of here.
        let run = |w: usize| catch_unwind(AssertUnwindSafe(|| worker(w))).err();
        let panic = std::thread::scope(|s| {
            let handles: Vec<_> = (1..workers).map(|w| s.spawn(move || run(w))).collect();
            let mut first = if workers > 0 { run(0) } else { None };
            for h in handles {
                let payload = h.join().unwrap_or_else(Some);
                match (&first, payload) {
                    (None, p) => first = p,
                    (Some(_), Some(p)) => drop_panic_payload(p),
                    (Some(_), None) => {}
                }
            }
            first
        });
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
        chunks
    }
}

impl ExecutionSpace for ScopedThreads {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = Member<'t>;

    fn name(&self) -> &'static str {
        "ScopedThreads"
    }
    fn fence(&self) -> Result<()> {
        Ok(()) // launches are synchronous
    }
    fn in_parallel(&self) -> bool {
        DEPTH.with(|d| d.get() > 0)
    }
    fn concurrency(&self) -> usize {
        self.workers()
    }
    fn max_team_size(&self) -> usize {
        1
    }
    fn max_vector_length(&self) -> usize {
        1
    }
    fn max_scratch_size(&self, level: usize) -> usize {
        MAX_SCRATCH.get(level).copied().unwrap_or(0)
    }
    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        writeln!(
            out,
            "ScopedThreads: {} threads per launch via std::thread::scope",
            self.workers()
        )?;
        if detail {
            writeln!(
                out,
                "  teams of 1 thread; scratch up to {MAX_SCRATCH:?} bytes per level"
            )?;
        }
        Ok(())
    }
}

/// A member of a one-thread team: collectives return at once, nested ranges run in order.
#[derive(Debug)]
pub struct Member<'t> {
    league_rank: usize,
    league_size: usize,
    team_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
    thread_scratch: [ScratchPad<'t>; SCRATCH_LEVELS],
}

fn nested<'i>(i: usize) -> Idx<'i> {
    // SAFETY: nested ranges run sequentially on the member's thread, each index once, and hand
    // the token to a kernel generic over `'i`.
    unsafe { Idx::new_unchecked(i) }
}

// SAFETY: each scoped thread makes the members of its own league ranks, one at a time, each
// of team rank 0 in a team of one; `Member` is not `Sync` (its scratch pads hold `Cell`s) and
// is passed by reference to a kernel generic over its brand. Provided methods not overridden.
unsafe impl TeamMember for Member<'_> {
    fn league_rank(&self) -> usize {
        self.league_rank
    }
    fn league_size(&self) -> usize {
        self.league_size
    }
    fn team_rank(&self) -> usize {
        0
    }
    fn team_size(&self) -> usize {
        1
    }
    fn vector_length(&self) -> usize {
        1
    }
    fn team_barrier(&self) {}
    fn team_broadcast<T: Clone + Send + Sync>(&self, value: T, source: usize) -> T {
        assert!(
            source == 0,
            "team_broadcast: source rank {source} is not below the team size 1"
        );
        value
    }
    fn team_reduce<R: Reducer>(&self, _reducer: &R, value: R::Value) -> R::Value
    where
        R::Value: Clone + Sync,
    {
        value
    }
    fn team_scan<T: ScanValue>(&self, value: T) -> (T, T) {
        (T::zero(), value)
    }
    fn team_scratch(&self, level: usize) -> &ScratchPad<'_> {
        &self.team_scratch[level]
    }
    fn thread_scratch(&self, level: usize) -> &ScratchPad<'_> {
        &self.thread_scratch[level]
    }
    fn nested_reduce<R, F>(
        &self,
        _level: NestedLevel,
        range: Range<usize>,
        kernel: F,
        reducer: &R,
    ) -> R::Value
    where
        R: Reducer,
        R::Value: Clone + Send + Sync,
        F: for<'i> Fn(Idx<'i>, &mut R::Value),
    {
        let mut acc = reducer.init();
        range.for_each(|i| kernel(nested(i), &mut acc));
        acc
    }
    fn nested_scan<T, F>(&self, _level: NestedLevel, range: Range<usize>, kernel: F) -> T
    where
        T: ScanValue,
        F: for<'i> Fn(Idx<'i>, &mut T, bool),
    {
        let mut partial = T::zero();
        range.for_each(|i| kernel(nested(i), &mut partial, true));
        partial
    }
}

/// How this backend walks one kind of policy: units (indices, tiles, teams), split into chunks.
pub trait ScopedPolicy: hoplite_core::ExecutionPolicy<Space = ScopedThreads> {
    /// Number of units, and the chunk size and schedule asked for.
    fn units(&self) -> (usize, Option<usize>, Schedule);
    /// Calls `visit` for every point of the units `units`, in order.
    fn visit<V: for<'it> FnMut(Self::Item<'it>)>(&self, units: Range<usize>, visit: V);
}

impl ScopedPolicy for RangePolicy<ScopedThreads> {
    fn units(&self) -> (usize, Option<usize>, Schedule) {
        (self.len(), self.chunk_size(), self.schedule())
    }
    fn visit<V: for<'it> FnMut(Idx<'it>)>(&self, units: Range<usize>, mut visit: V) {
        for i in units {
            // SAFETY: chunks partition the range, so each index reaches one iteration once per
            // pass, on the thread running its chunk, through a kernel generic over `'it`.
            visit(unsafe { Idx::new_unchecked(self.begin() + i) });
        }
    }
}

impl<const R: usize> ScopedPolicy for MDRangePolicy<ScopedThreads, R> {
    fn units(&self) -> (usize, Option<usize>, Schedule) {
        (self.num_tiles(), None, Schedule::Static)
    }
    fn visit<V: for<'it> FnMut(MdIdx<'it, R>)>(&self, units: Range<usize>, mut visit: V) {
        for t in units {
            let (lo, hi) = self.tile_bounds(t);
            for_each_point(lo, hi, self.inner_order(), |p| {
                // SAFETY: tiles partition the box and each point of a tile is visited once;
                // otherwise as for ranges.
                visit(unsafe { MdIdx::new_unchecked(p) })
            });
        }
    }
}

impl ScopedPolicy for TeamPolicy<ScopedThreads> {
    fn units(&self) -> (usize, Option<usize>, Schedule) {
        (self.league_size(), self.chunk_size(), self.schedule())
    }
    fn visit<V: for<'it> FnMut(&'it Member<'it>)>(&self, units: Range<usize>, mut visit: V) {
        let buffers: [(ScratchBuffer, usize); SCRATCH_LEVELS] = std::array::from_fn(|level| {
            let (team, thread) = self.scratch_size(level);
            let bytes = (team.div_ceil(8) * 8).saturating_add(thread);
            // Validation bounds the sizes; a refusal here is a panic the launch reports.
            let buffer =
                ScratchBuffer::try_new("team", "ScopedThreads", bytes).unwrap_or_else(|e| panic!("{e}"));
            (buffer, team.div_ceil(8))
        });
        let pad = |l: usize, team: bool| {
            let (buffer, split) = &buffers[l];
            let words = if team {
                &buffer.words()[..*split]
            } else {
                &buffer.words()[*split..]
            };
            ScratchPad::with_level(words, l)
        };
        for league_rank in units {
            let member = Member {
                league_rank,
                league_size: self.league_size(),
                team_scratch: std::array::from_fn(|l| pad(l, true)),
                thread_scratch: std::array::from_fn(|l| pad(l, false)),
            };
            visit(&member);
        }
    }
}

// SAFETY: `run_chunks` hands each chunk of units to one thread (static deal or an atomic
// counter), chunks partition the policy's units, `visit` makes each point's token on the thread
// that calls the kernel, and the scope joins every thread before the launch returns.
unsafe impl<P: ScopedPolicy> ParallelFor<P> for ScopedThreads {
    fn parallel_for<K: ForKernel<P>>(&self, _label: &str, policy: &P, kernel: K) -> Result<()> {
        let (units, chunk, schedule) = policy.units();
        self.run_chunks(units, chunk, schedule, |_, part| {
            policy.visit(part, |item| kernel.call(item))
        });
        Ok(())
    }
}

// SAFETY: as for `ParallelFor`: the same `run_chunks` and `visit`.
unsafe impl<P: ScopedPolicy> ParallelReduce<P> for ScopedThreads {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<P, R::Value>>(
        &self,
        _label: &str,
        policy: &P,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let (units, chunk, schedule) = policy.units();
        let partials: Mutex<Vec<(usize, R::Value)>> = Mutex::new(Vec::new());
        self.run_chunks(units, chunk, schedule, |c, part| {
            let mut acc = reducer.init();
            policy.visit(part, |item| kernel.call(item, &mut acc));
            partials
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((c, acc));
        });
        // Join in chunk order: lower indices on the left, as the Reducer axioms require.
        let mut partials = partials.into_inner().unwrap_or_else(PoisonError::into_inner);
        partials.sort_unstable_by_key(|(c, _)| *c);
        let mut total = reducer.init();
        for (_, partial) in partials {
            reducer.join(&mut total, partial);
        }
        reducer.finalize(&mut total);
        Ok(total)
    }
}

// SAFETY: two passes of `run_chunks` over the same chunks; the second starts after the first
// scope has joined, so calls with one index never overlap in time.
unsafe impl ParallelScan<RangePolicy<ScopedThreads>> for ScopedThreads {
    fn parallel_scan<T: ScanValue, K: ScanKernel<RangePolicy<ScopedThreads>, T>>(
        &self,
        _label: &str,
        policy: &RangePolicy<ScopedThreads>,
        kernel: K,
    ) -> Result<T> {
        let (units, chunk, schedule) = policy.units();
        // Pass 1: each chunk's sum (non-final calls). Then exclusive offsets in chunk order.
        let sums: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
        let chunks = self.run_chunks(units, chunk, schedule, |c, part| {
            let mut partial = T::zero();
            policy.visit(part, |i| kernel.call(i, &mut partial, false));
            sums.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((c, partial));
        });
        let mut sums = sums.into_inner().unwrap_or_else(PoisonError::into_inner);
        sums.sort_unstable_by_key(|(c, _)| *c);
        let mut offsets = Vec::with_capacity(chunks);
        let mut total = T::zero();
        for (_, sum) in sums {
            offsets.push(total);
            total = total + sum;
        }
        // Pass 2: the final calls, each chunk starting from its offset (same chunking).
        self.run_chunks(units, chunk, schedule, |c, part| {
            let mut partial = offsets[c];
            policy.visit(part, |i| kernel.call(i, &mut partial, true));
        });
        Ok(total)
    }
}

impl UniqueTokenSpace for ScopedThreads {
    type InstanceToken = TokenPool;
    type GlobalToken = TokenPool;

    fn unique_token(&self) -> TokenPool {
        self.unique_token_with_size(self.workers())
            .unwrap_or_else(|e| unreachable!("workers() is at least 1: {e}"))
    }
    fn unique_token_with_size(&self, size: usize) -> Result<TokenPool> {
        TokenPool::new(size, "ScopedThreads")
    }
    fn global_unique_token() -> TokenPool {
        // Shared by every instance: enough ids for the threads of a few concurrent launches.
        static GLOBAL: OnceLock<TokenPool> = OnceLock::new();
        GLOBAL
            .get_or_init(|| TokenPool::new(256, "ScopedThreads").unwrap_or_else(|e| unreachable!("{e}")))
            .clone()
    }
}

hoplite_conformance::suite!(scoped_threads, || ScopedThreads { threads: 3 }, ScopedThreads);
