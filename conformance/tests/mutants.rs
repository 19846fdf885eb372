//! Deliberately broken backends: the suite must catch each one, naming the axioms it breaks,
//! without a panic reaching the test harness.
//!
//! `Mutant<FAULT>` is the serial backend behind a wrapper that runs range reductions and
//! scans itself, in chunks, like a parallel backend would. `Mutant<0>` does that correctly and
//! passes the whole suite; each other `FAULT` plants one realistic bug:
//!
//! * `DropsLastChunk`: the reduction forgets the partial result of the last chunk;
//! * `ScanOffByOne`: the first scan pass sums each chunk from its second index, so every
//!   chunk's offset (and the total) misses elements;
//! * `JoinsOutOfOrder`: partial results are joined from the last chunk to the first, which
//!   commutative reducers do not notice but the index-order axiom forbids.

use std::cell::Cell;
use std::io;
use std::ops::Range;
use std::sync::OnceLock;

use hoplite_conformance::{Failure, FullSpace, GraphSpace, reducer, run_all, scan};
use hoplite_core::{
    ExecutionSpace, ForKernel, HostSpace, Idx, LayoutRight, MDRangePolicy, MdIdx, ParallelFor,
    ParallelReduce, ParallelScan, PerTeam, PerThread, RangePolicy, ReduceKernel, Reducer, Result,
    SCRATCH_LEVELS, ScanKernel, ScanValue, TeamPolicy, TokenPool, UniqueTokenSpace,
};
use hoplite_serial::{Serial, SerialTeamMember};

const CORRECT: u8 = 0;
const DROPS_LAST_CHUNK: u8 = 1;
const SCAN_OFF_BY_ONE: u8 = 2;
const JOINS_OUT_OF_ORDER: u8 = 3;

/// Serial, with range reductions and scans done in chunks and one planted `FAULT`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Mutant<const FAULT: u8>;

type Unbroken = Mutant<CORRECT>;
type DropsLastChunk = Mutant<DROPS_LAST_CHUNK>;
type ScanOffByOne = Mutant<SCAN_OFF_BY_ONE>;
type JoinsOutOfOrder = Mutant<JOINS_OUT_OF_ORDER>;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as inside one of the mutant's own kernels.
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

impl<const FAULT: u8> ExecutionSpace for Mutant<FAULT> {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = SerialTeamMember<'t>;

    fn name(&self) -> &'static str {
        "Mutant"
    }
    fn fence(&self) -> Result<()> {
        Ok(())
    }
    fn in_parallel(&self) -> bool {
        Serial::default().in_parallel() || DEPTH.with(|d| d.get() > 0)
    }
    fn concurrency(&self) -> usize {
        1
    }
    fn max_team_size(&self) -> usize {
        1
    }
    fn max_vector_length(&self) -> usize {
        1
    }
    fn max_scratch_size(&self, level: usize) -> usize {
        Serial::default().max_scratch_size(level)
    }
    fn print_configuration(&self, out: &mut dyn io::Write, _detail: bool) -> io::Result<()> {
        writeln!(out, "Mutant {FAULT}: the serial backend with one planted fault")
    }
}

fn serial_range<const F: u8>(p: &RangePolicy<Mutant<F>>) -> RangePolicy<Serial> {
    let r = RangePolicy::new(Serial::default(), p.begin()..p.end()).with_schedule(p.schedule());
    match p.chunk_size() {
        Some(c) => r.with_chunk_size(c),
        None => r,
    }
}

fn serial_md<const F: u8, const R: usize>(p: &MDRangePolicy<Mutant<F>, R>) -> MDRangePolicy<Serial, R> {
    MDRangePolicy::new(Serial::default(), p.begin(), p.end())
        .with_tiles(p.tiles())
        .with_iteration(p.outer_order(), p.inner_order())
}

fn serial_team<const F: u8>(p: &TeamPolicy<Mutant<F>>) -> TeamPolicy<Serial> {
    let mut t = TeamPolicy::new(Serial::default(), p.league_size(), p.requested_team_size())
        .with_vector_length(p.vector_length())
        .with_schedule(p.schedule());
    for level in 0..SCRATCH_LEVELS {
        let (team, thread) = p.scratch_size(level);
        t = t.with_scratch_size(level, PerTeam(team), PerThread(thread));
    }
    match p.chunk_size() {
        Some(c) => t.with_chunk_size(c),
        None => t,
    }
}

// SAFETY: forwards each item to the serial backend's dispatch of the same points (the
// policy converted one-to-one), which is the only dispatch the kernel reaches.
unsafe impl<const F: u8> ParallelFor<RangePolicy<Self>> for Mutant<F> {
    fn parallel_for<K: ForKernel<RangePolicy<Self>>>(
        &self,
        label: &str,
        p: &RangePolicy<Self>,
        k: K,
    ) -> Result<()> {
        Serial::default().parallel_for(label, &serial_range(p), |i: Idx<'_>| k.call(i))
    }
}

// SAFETY: forwards each item to the serial backend's dispatch of the same points (the
// policy converted one-to-one), which is the only dispatch the kernel reaches.
unsafe impl<const F: u8, const R: usize> ParallelFor<MDRangePolicy<Self, R>> for Mutant<F> {
    fn parallel_for<K>(&self, label: &str, p: &MDRangePolicy<Self, R>, k: K) -> Result<()>
    where
        K: ForKernel<MDRangePolicy<Self, R>>,
    {
        Serial::default().parallel_for(label, &serial_md(p), |i: MdIdx<'_, R>| k.call(i))
    }
}

// SAFETY: forwards each item to the serial backend's dispatch of the same points (the
// policy converted one-to-one), which is the only dispatch the kernel reaches.
unsafe impl<const F: u8, const R: usize> ParallelReduce<MDRangePolicy<Self, R>> for Mutant<F> {
    fn parallel_reduce<Red: Reducer, K>(
        &self,
        label: &str,
        p: &MDRangePolicy<Self, R>,
        k: K,
        r: &Red,
    ) -> Result<Red::Value>
    where
        K: ReduceKernel<MDRangePolicy<Self, R>, Red::Value>,
    {
        Serial::default().parallel_reduce(
            label,
            &serial_md(p),
            |i: MdIdx<'_, R>, acc: &mut Red::Value| k.call(i, acc),
            r,
        )
    }
}

// SAFETY: forwards each item to the serial backend's dispatch of the same points (the
// policy converted one-to-one), which is the only dispatch the kernel reaches.
unsafe impl<const F: u8> ParallelFor<TeamPolicy<Self>> for Mutant<F> {
    fn parallel_for<K: ForKernel<TeamPolicy<Self>>>(
        &self,
        label: &str,
        p: &TeamPolicy<Self>,
        k: K,
    ) -> Result<()> {
        Serial::default().parallel_for(label, &serial_team(p), |m: &SerialTeamMember<'_>| k.call(m))
    }
}

// SAFETY: forwards each item to the serial backend's dispatch of the same points (the
// policy converted one-to-one), which is the only dispatch the kernel reaches.
unsafe impl<const F: u8> ParallelReduce<TeamPolicy<Self>> for Mutant<F> {
    fn parallel_reduce<Red: Reducer, K>(
        &self,
        label: &str,
        p: &TeamPolicy<Self>,
        k: K,
        r: &Red,
    ) -> Result<Red::Value>
    where
        K: ReduceKernel<TeamPolicy<Self>, Red::Value>,
    {
        Serial::default().parallel_reduce(
            label,
            &serial_team(p),
            |m: &SerialTeamMember<'_>, acc: &mut Red::Value| k.call(m, acc),
            r,
        )
    }
}

/// The chunks a range is cut into: the policy's chunk size, or four chunks.
fn chunks<S: ExecutionSpace>(p: &RangePolicy<S>) -> Vec<Range<usize>> {
    let size = p.chunk_size().unwrap_or(p.len().div_ceil(4)).max(1);
    (p.begin()..p.end())
        .step_by(size)
        .map(|lo| lo..(lo + size).min(p.end()))
        .collect()
}

fn token<'it>(i: usize) -> Idx<'it> {
    // SAFETY: the mutant's loops are sequential: each index of a chunk is handed to one
    // iteration at a time, on this thread, through a kernel generic over `'it`.
    unsafe { Idx::new_unchecked(i) }
}

// SAFETY: sequential loops over the chunks of the policy's range, which partition it: each
// index once, on this thread, before the call returns (the planted faults lose or reorder
// partial results, never visit an index twice or outside the range).
unsafe impl<const F: u8> ParallelReduce<RangePolicy<Self>> for Mutant<F> {
    fn parallel_reduce<Red: Reducer, K>(
        &self,
        _label: &str,
        p: &RangePolicy<Self>,
        k: K,
        r: &Red,
    ) -> Result<Red::Value>
    where
        K: ReduceKernel<RangePolicy<Self>, Red::Value>,
    {
        let _in = InKernel::enter();
        let mut partials: Vec<Red::Value> = chunks(p)
            .into_iter()
            .map(|chunk| {
                let mut acc = r.init();
                chunk.for_each(|i| k.call(token(i), &mut acc));
                acc
            })
            .collect();
        if F == DROPS_LAST_CHUNK {
            partials.pop(); // the bug: the last chunk's partial is lost
        }
        if F == JOINS_OUT_OF_ORDER {
            partials.reverse(); // the bug: higher indices joined first
        }
        let mut total = r.init();
        for partial in partials {
            r.join(&mut total, partial);
        }
        r.finalize(&mut total);
        Ok(total)
    }
}

// SAFETY: two sequential passes over the chunks of the policy's range; the off-by-one fault
// skips an index in the first pass, it never leaves the range, and the passes do not overlap.
unsafe impl<const F: u8> ParallelScan<RangePolicy<Self>> for Mutant<F> {
    fn parallel_scan<T: ScanValue, K: ScanKernel<RangePolicy<Self>, T>>(
        &self,
        _label: &str,
        p: &RangePolicy<Self>,
        k: K,
    ) -> Result<T> {
        let _in = InKernel::enter();
        let chunks = chunks(p);
        let mut offsets = Vec::with_capacity(chunks.len());
        let mut total = T::zero();
        for chunk in &chunks {
            offsets.push(total);
            let mut sum = T::zero();
            // The bug: the first pass starts one index late in every chunk.
            let first = if F == SCAN_OFF_BY_ONE {
                chunk.start + 1
            } else {
                chunk.start
            };
            (first..chunk.end).for_each(|i| k.call(token(i), &mut sum, false));
            total = total + sum;
        }
        for (chunk, offset) in chunks.into_iter().zip(offsets) {
            let mut partial = offset;
            chunk.for_each(|i| k.call(token(i), &mut partial, true));
        }
        Ok(total)
    }
}

impl<const F: u8> UniqueTokenSpace for Mutant<F> {
    type InstanceToken = TokenPool;
    type GlobalToken = TokenPool;

    fn unique_token(&self) -> TokenPool {
        self.unique_token_with_size(1)
            .unwrap_or_else(|e| unreachable!("{e}"))
    }
    fn unique_token_with_size(&self, size: usize) -> Result<TokenPool> {
        TokenPool::new(size, "Mutant")
    }
    fn global_unique_token() -> TokenPool {
        static GLOBAL: OnceLock<TokenPool> = OnceLock::new();
        GLOBAL
            .get_or_init(|| TokenPool::new(1, "Mutant").unwrap_or_else(|e| unreachable!("{e}")))
            .clone()
    }
}

/// The axioms the whole suite reports broken on `space`.
fn broken<S: FullSpace + GraphSpace>(space: &S) -> Vec<&'static str> {
    let failures: Vec<Failure> = run_all(space);
    failures.iter().map(|f| f.axiom).collect()
}

/// Asserts `check` fails on `space` with a failure naming `axiom`; returns the failure.
fn caught<S>(space: &S, check: fn(&S) -> hoplite_conformance::Outcome, axiom: &str) -> Failure {
    let failure = check(space).expect_err("the suite must catch the planted fault");
    assert_eq!(failure.axiom, axiom, "{failure}");
    assert!(failure.to_string().contains(axiom), "{failure}");
    failure
}

/// Asserts every axiom of `must_fail` and none of `must_pass` is in `broken`.
fn assert_reported(broken: &[&str], must_fail: &[&str], must_pass: &[&str]) {
    for axiom in must_fail {
        assert!(
            broken.contains(axiom),
            "`{axiom}` is not reported; reported: {broken:?}"
        );
    }
    for axiom in must_pass {
        assert!(
            !broken.contains(axiom),
            "`{axiom}` is reported but the fault does not touch it"
        );
    }
}

#[test]
fn the_unbroken_wrapper_passes_every_check() {
    let failures = run_all(&Unbroken::default());
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_reduction_that_drops_the_last_chunk_is_caught() {
    let space = DropsLastChunk::default();
    let failure = caught(
        &space,
        reducer::sum_matches_sequential_fold,
        "reducer::sum_matches_sequential_fold",
    );
    assert!(failure.message.contains("Sum<i64>"), "{failure}");
    assert_reported(
        &broken(&space),
        &[
            "reducer::sum_matches_sequential_fold",
            "reducer::min_loc_ties_go_to_lowest_index",
            "reducer::custom_join_keeps_index_order",
            "range_policy::schedule_does_not_change_results",
            "properties::sum_i64_matches_serial",
        ],
        &[
            "range_policy::visits_every_index_exactly_once",
            "scan::exclusive_scan_matches_sequential_prefix",
            "mdrange_policy::reduce_covers_every_point_once",
            "team::team_policy_reduce_sums_over_teams",
        ],
    );
}

#[test]
fn a_scan_off_by_one_is_caught() {
    let space = ScanOffByOne::default();
    let failure = caught(
        &space,
        scan::exclusive_scan_matches_sequential_prefix,
        "scan::exclusive_scan_matches_sequential_prefix",
    );
    assert!(failure.message.contains("total"), "{failure}");
    assert_reported(
        &broken(&space),
        &[
            "scan::exclusive_scan_matches_sequential_prefix",
            "scan::inclusive_scan_matches_sequential_prefix",
            "scan::scan_over_an_offset_range_matches_sequential_prefix",
            "properties::scan_matches_serial",
        ],
        &[
            "team::nested_scan_matches_sequential_prefix",
            "reducer::sum_matches_sequential_fold",
            "properties::sum_i64_matches_serial",
        ],
    );
}

#[test]
fn joins_out_of_index_order_are_caught() {
    let space = JoinsOutOfOrder::default();
    caught(
        &space,
        reducer::custom_join_keeps_index_order,
        "reducer::custom_join_keeps_index_order",
    );
    // Commutative reductions and the location reducers (which compare indices themselves)
    // cannot tell: only the index-order axiom catches this fault.
    assert_reported(
        &broken(&space),
        &[
            "reducer::custom_join_keeps_index_order",
            "range_policy::schedule_does_not_change_results",
        ],
        &[
            "reducer::sum_matches_sequential_fold",
            "reducer::min_loc_ties_go_to_lowest_index",
            "properties::min_max_loc_match_serial",
            "scan::exclusive_scan_matches_sequential_prefix",
        ],
    );
}

#[test]
#[ignore = "prints the axioms each mutant breaks, for docs/writing-a-backend.md"]
fn print_reports() {
    println!("drops last chunk: {:?}", broken(&DropsLastChunk::default()));
    println!("scan off by one: {:?}", broken(&ScanOffByOne::default()));
    println!("joins out of order: {:?}", broken(&JoinsOutOfOrder::default()));
}
