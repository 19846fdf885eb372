//! `RangePolicy`: `parallel_for`, `parallel_reduce` (ordinary and deterministic) and the
//! two-pass `parallel_scan`.

use hoplite_core::{
    ExecutionPolicy, ForKernel, ParallelScan, RangePolicy, ReduceKernel, Reducer, Result, ScanKernel,
    ScanValue, Schedule,
};

use crate::pool::Job;
use crate::sealed::Internal;
use crate::split::{Slot, Units, deterministic_block, dynamic_chunk, join_in_order, join_tree, share};
use crate::steal;
use crate::{Mode, RayonPolicy, RayonSpace};

type Rp = RangePolicy<RayonSpace>;

/// Calls `kernel` for every index of `range`, in order, on this thread (in the kernel's own
/// point loop: see `hoplite_core::point_loop`).
#[inline(always)]
fn for_each_index<K: ForKernel<Rp>>(range: std::ops::Range<usize>, kernel: &K) {
    // SAFETY: the launch hands each index to exactly one participant (shares and units are
    // disjoint sub-ranges of the policy's range), which visits it once, on this thread.
    unsafe { kernel.run_share(range) }
}

/// Folds `kernel` over `range` into `acc`, in order, on this thread.
#[inline(always)]
fn fold_indices<K: ReduceKernel<Rp, R::Value>, R: Reducer>(
    range: std::ops::Range<usize>,
    kernel: &K,
    reducer: &R,
    acc: &mut R::Value,
) {
    // SAFETY: as in `for_each_index`.
    unsafe { kernel.fold_share(range, reducer, acc) }
}

/// Runs the scan kernel over `range`, in order, on this thread, starting from `partial`.
#[inline(always)]
fn scan_indices<K: ScanKernel<Rp, T>, T>(
    range: std::ops::Range<usize>,
    kernel: &K,
    partial: &mut T,
    is_final: bool,
) {
    // SAFETY: as in `for_each_index`; a scan visits an index at most once per pass, and the
    // passes are separate launches.
    unsafe { kernel.scan_share(range, partial, is_final) }
}

/// The chunk unit of a range launch on `threads` threads.
fn unit_of(policy: &RangePolicy<RayonSpace>, threads: usize) -> usize {
    match (policy.chunk_size(), policy.schedule()) {
        (Some(chunk), _) => chunk,
        (None, Schedule::Static) => 1,
        (None, Schedule::Dynamic) => dynamic_chunk(policy.len(), threads),
    }
}

struct ForJob<'a, F> {
    units: Units,
    parts: usize,
    kernel: &'a F,
}

impl<K: ForKernel<Rp>> Job for ForJob<'_, K> {
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.units.count, self.parts, rank);
        for_each_index(self.units.range(lo, hi), self.kernel);
    }
}

struct ReduceJob<'a, F, R: Reducer> {
    units: Units,
    parts: usize,
    kernel: &'a F,
    reducer: &'a R,
    slots: &'a [Slot<R::Value>],
}

impl<F, R> Job for ReduceJob<'_, F, R>
where
    R: Reducer,
    F: ReduceKernel<Rp, R::Value>,
{
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.units.count, self.parts, rank);
        let mut acc = self.reducer.init();
        fold_indices(self.units.range(lo, hi), self.kernel, self.reducer, &mut acc);
        self.slots[rank].put(acc);
    }
}

/// Deterministic reduction: participant `rank` folds its share of the fixed blocks, one
/// partial result per block.
struct BlockReduceJob<'a, F, R: Reducer> {
    blocks: Units,
    parts: usize,
    kernel: &'a F,
    reducer: &'a R,
    slots: &'a [Slot<Vec<R::Value>>],
}

impl<F, R> Job for BlockReduceJob<'_, F, R>
where
    R: Reducer,
    F: ReduceKernel<Rp, R::Value>,
{
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.blocks.count, self.parts, rank);
        let partials = (lo..hi)
            .map(|b| reduce_block(&self.blocks, b, self.kernel, self.reducer))
            .collect();
        self.slots[rank].put(partials);
    }
}

fn reduce_block<F, R>(blocks: &Units, b: usize, kernel: &F, reducer: &R) -> R::Value
where
    R: Reducer,
    F: ReduceKernel<Rp, R::Value>,
{
    let mut acc = reducer.init();
    fold_indices(blocks.range(b, b + 1), kernel, reducer, &mut acc);
    acc
}

impl RayonPolicy for RangePolicy<RayonSpace> {
    fn rayon_for<K: ForKernel<Self>>(&self, _internal: Internal, _label: &str, kernel: &K) -> Result<()> {
        range_for(self, kernel);
        Ok(())
    }

    fn rayon_reduce<R: Reducer, K: ReduceKernel<Self, R::Value>>(
        &self,
        _internal: Internal,
        _label: &str,
        kernel: &K,
        reducer: &R,
    ) -> Result<R::Value> {
        Ok(range_reduce(self, kernel, reducer))
    }
}

fn range_for<K: ForKernel<RangePolicy<RayonSpace>>>(policy: &RangePolicy<RayonSpace>, kernel: &K) {
    if policy.is_empty() {
        return;
    }
    let space = policy.space();
    let guard = match space.mode() {
        Mode::Inline => {
            let _in = space.enter_inline();
            return for_each_index(policy.begin()..policy.end(), kernel);
        }
        Mode::Team(guard) => guard,
    };
    let threads = space.threads();
    let units = Units::new(policy.begin(), policy.end(), unit_of(policy, threads));
    if policy.schedule() == Schedule::Dynamic
        && threads > 1
        && let Some(pool) = space.rayon_pool()
    {
        steal::for_each(pool, space.instance_id(), units.count, |u| {
            for_each_index(units.range(u, u + 1), kernel)
        });
        return;
    }
    if units.count == 1 {
        return space.execute_here(&guard, || for_each_index(policy.begin()..policy.end(), kernel));
    }
    let job = ForJob {
        units,
        parts: threads,
        kernel,
    };
    space.execute(&guard, &job);
}

fn range_reduce<R: Reducer, K: ReduceKernel<RangePolicy<RayonSpace>, R::Value>>(
    policy: &RangePolicy<RayonSpace>,
    kernel: &K,
    reducer: &R,
) -> R::Value {
    if policy.deterministic_reduction() {
        return deterministic_reduce(policy, kernel, reducer);
    }
    if policy.is_empty() {
        return join_in_order(reducer, None);
    }
    let space = policy.space();
    let guard = match space.mode() {
        Mode::Inline => {
            let _in = space.enter_inline();
            let mut acc = reducer.init();
            fold_indices(policy.begin()..policy.end(), kernel, reducer, &mut acc);
            return join_in_order(reducer, Some(acc));
        }
        Mode::Team(guard) => guard,
    };
    let threads = space.threads();
    let units = Units::new(policy.begin(), policy.end(), unit_of(policy, threads));
    if policy.schedule() == Schedule::Dynamic
        && threads > 1
        && let Some(pool) = space.rayon_pool()
    {
        let total = steal::fold(pool, space.instance_id(), units.count, reducer, |u, acc| {
            fold_indices(units.range(u, u + 1), kernel, reducer, acc)
        });
        return join_in_order(reducer, Some(total));
    }
    if units.count == 1 {
        let mut acc = reducer.init();
        space.execute_here(&guard, || {
            fold_indices(policy.begin()..policy.end(), kernel, reducer, &mut acc)
        });
        return join_in_order(reducer, Some(acc));
    }
    let slots = Slot::many(threads);
    let job = ReduceJob {
        units,
        parts: threads,
        kernel,
        reducer,
        slots: &slots,
    };
    space.execute(&guard, &job);
    drop(guard);
    join_in_order(reducer, slots.iter().filter_map(Slot::take))
}

/// The deterministic reduction of a range: fixed blocks, fixed join tree.
fn deterministic_reduce<F, R>(policy: &RangePolicy<RayonSpace>, kernel: &F, reducer: &R) -> R::Value
where
    R: Reducer,
    F: ReduceKernel<Rp, R::Value>,
{
    let block = deterministic_block(policy.len(), policy.chunk_size());
    let blocks = Units::new(policy.begin(), policy.end(), block);
    if blocks.count == 0 {
        return join_tree(reducer, Vec::new());
    }
    let space = policy.space();
    let guard = match space.mode() {
        Mode::Inline => {
            let _in = space.enter_inline();
            let partials = (0..blocks.count)
                .map(|b| reduce_block(&blocks, b, kernel, reducer))
                .collect();
            return join_tree(reducer, partials);
        }
        Mode::Team(guard) => guard,
    };
    let threads = space.threads();
    if policy.schedule() == Schedule::Dynamic
        && threads > 1
        && let Some(pool) = space.rayon_pool()
    {
        let partials = steal::partials(pool, space.instance_id(), blocks.count, |b| {
            reduce_block(&blocks, b, kernel, reducer)
        });
        return join_tree(reducer, partials);
    }
    let slots = Slot::many(threads);
    let job = BlockReduceJob {
        blocks,
        parts: threads,
        kernel,
        reducer,
        slots: &slots,
    };
    space.execute(&guard, &job);
    drop(guard);
    let partials = slots.iter().filter_map(Slot::take).flatten().collect();
    join_tree(reducer, partials)
}

/// Pass 1 of a scan over `parts + 1` blocks: rank `r` scans block `r` — block 0 already as
/// the final pass (its prefix is zero), the others without side effects — and records the
/// block's total.
struct ScanPass1<'a, F, T> {
    units: Units,
    blocks: usize,
    kernel: &'a F,
    totals: &'a [Slot<T>],
}

impl<F, T> Job for ScanPass1<'_, F, T>
where
    T: ScanValue,
    F: ScanKernel<Rp, T>,
{
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.units.count, self.blocks, rank);
        let mut partial = T::zero();
        scan_indices(self.units.range(lo, hi), self.kernel, &mut partial, rank == 0);
        self.totals[rank].put(partial);
    }
}

/// Pass 2: rank `r` scans block `r + 1` as the final pass, starting from the sum of the
/// totals of blocks `0..=r`; the last rank records the grand total.
struct ScanPass2<'a, F, T> {
    units: Units,
    blocks: usize,
    kernel: &'a F,
    prefixes: &'a [T],
    total: &'a Slot<T>,
}

impl<F, T> Job for ScanPass2<'_, F, T>
where
    T: ScanValue,
    F: ScanKernel<Rp, T>,
{
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.units.count, self.blocks, rank + 1);
        let mut partial = self.prefixes[rank];
        scan_indices(self.units.range(lo, hi), self.kernel, &mut partial, true);
        if rank + 2 == self.blocks {
            self.total.put(partial);
        }
    }
}

/// Scans shorter than this many units per thread run on the calling thread alone.
const MIN_SCAN_UNITS_PER_THREAD: usize = 2;

/// `parallel_scan` over a range: a two-pass scan on the hot team.
///
/// The range is cut into `n + 1` contiguous blocks of whole chunks (`n` threads). Pass 1:
/// thread `r` runs block `r` with `is_final == false` to get its total — except block 0,
/// whose prefix is zero, which runs with `is_final == true` right away. The calling thread
/// then forms the exclusive prefix sums of the block totals. Pass 2: thread `r` runs block
/// `r + 1` with `is_final == true`, starting from its prefix. Every index gets exactly one
/// `is_final == true` call, with the sum of all lower indices' contributions; both passes
/// keep every thread busy, and the kernel runs about `(n + 2) / (n + 1)` times per index.
/// The schedule of the policy is ignored (scans are always static); short scans, one-thread
/// instances and nested launches run a single sequential pass.
// SAFETY: both passes split the range into the same disjoint blocks, one participant per block
// per pass; the second pass starts after every participant of the first has finished, and
// the launch joins all participants before it returns.
unsafe impl ParallelScan<Rp> for RayonSpace {
    fn parallel_scan<T: ScanValue, K: ScanKernel<Rp, T>>(
        &self,
        _label: &str,
        policy: &Rp,
        kernel: K,
    ) -> Result<T> {
        let mut partial = T::zero();
        if policy.is_empty() {
            return Ok(partial);
        }
        let space = policy.space();
        let guard = match space.mode() {
            Mode::Inline => {
                let _in = space.enter_inline();
                scan_indices(policy.begin()..policy.end(), &kernel, &mut partial, true);
                return Ok(partial);
            }
            Mode::Team(guard) => guard,
        };
        let threads = space.threads();
        let units = Units::new(policy.begin(), policy.end(), policy.chunk_size().unwrap_or(1));
        if threads == 1 || units.count < MIN_SCAN_UNITS_PER_THREAD * (threads + 1) {
            space.execute_here(&guard, || {
                scan_indices(policy.begin()..policy.end(), &kernel, &mut partial, true);
            });
            return Ok(partial);
        }
        let totals = Slot::many(threads);
        space.execute(
            &guard,
            &ScanPass1 {
                units,
                blocks: threads + 1,
                kernel: &kernel,
                totals: &totals,
            },
        );
        let prefixes: Vec<T> = totals
            .iter()
            .map(|t| {
                partial = partial + t.take().unwrap_or_else(T::zero);
                partial
            })
            .collect();
        let total = Slot::new();
        space.execute(
            &guard,
            &ScanPass2 {
                units,
                blocks: threads + 1,
                kernel: &kernel,
                prefixes: &prefixes,
                total: &total,
            },
        );
        Ok(total.take().unwrap_or(partial))
    }
}
