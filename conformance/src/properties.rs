//! Property tests: on random sizes, offsets, chunk sizes, schedules, tiles, orders and data,
//! the space under test computes what the serial backend (the reference semantics) computes.
//!
//! Each property runs 32 cases with proptest's `TestRunner`, so a property is an ordinary
//! check returning a [`Failure`] with the minimal failing input.

use std::fmt::Debug;

use hoplite_core::{
    ExecutionSpace, IterationOrder, MDRangePolicy, MaxLoc, MinLoc, MinMaxLoc, MinMaxLocScalar, ParallelFor,
    ParallelReduce, ParallelScan, RangePolicy, Schedule, Sum, ValLoc, View, parallel_for, parallel_reduce,
    parallel_scan,
};
use hoplite_serial::Serial;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::{Failure, FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

/// How many random cases each property runs.
pub const CASES: u32 = 32;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    })
}

/// Runs `test` on `CASES` values of `strategy`; a failing case becomes a failure with the
/// minimal input proptest found.
pub(crate) fn property<T: Strategy>(
    strategy: T,
    test: impl Fn(T::Value) -> Result<(), TestCaseError>,
) -> Outcome
where
    T::Value: Debug,
{
    runner()
        .run(&strategy, test)
        .map_err(|e| Failure::msg(e.to_string()))
}

/// A launch (or graph) error inside a property case.
pub(crate) fn launch_failed(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("launch failed: {e}"))
}

/// A range of one-dimensional launches.
#[derive(Clone, Debug)]
struct RangeCase {
    begin: usize,
    chunk: Option<usize>,
    dynamic: bool,
}

impl RangeCase {
    fn policy<X: ExecutionSpace>(&self, space: X, len: usize) -> RangePolicy<X> {
        let schedule = if self.dynamic {
            Schedule::Dynamic
        } else {
            Schedule::Static
        };
        let p = RangePolicy::new(space, self.begin..self.begin + len).with_schedule(schedule);
        match self.chunk {
            Some(c) => p.with_chunk_size(c),
            None => p,
        }
    }
}

fn range_case() -> impl Strategy<Value = RangeCase> {
    (0usize..40, prop::option::of(1usize..300), any::<bool>()).prop_map(|(begin, chunk, dynamic)| RangeCase {
        begin,
        chunk,
        dynamic,
    })
}

fn sum_on<X>(space: X, case: &RangeCase, data: &[i64]) -> Result<i64, TestCaseError>
where
    X: ExecutionSpace + ParallelReduce<RangePolicy<X>>,
{
    let policy = case.policy(space, data.len());
    parallel_reduce(
        "prop-sum",
        policy,
        |i, acc: &mut i64| *acc += data[*i - case.begin],
        Sum::new(),
    )
    .map_err(launch_failed)
}

type Locs = (ValLoc<i64>, ValLoc<i64>, MinMaxLocScalar<i64>);

fn locs_on<X>(space: X, case: &RangeCase, data: &[i64]) -> Result<Locs, TestCaseError>
where
    X: ExecutionSpace + ParallelReduce<RangePolicy<X>>,
{
    let b = case.begin;
    let policy = case.policy(space, data.len());
    let min = parallel_reduce(
        "prop-minloc",
        policy.clone(),
        |i, acc: &mut ValLoc<i64>| acc.update_min(data[*i - b], *i),
        MinLoc::new(),
    );
    let max = parallel_reduce(
        "prop-maxloc",
        policy.clone(),
        |i, acc: &mut ValLoc<i64>| acc.update_max(data[*i - b], *i),
        MaxLoc::new(),
    );
    let both = parallel_reduce(
        "prop-minmaxloc",
        policy,
        |i, acc: &mut MinMaxLocScalar<i64>| acc.update(data[*i - b], *i),
        MinMaxLoc::new(),
    );
    Ok((
        min.map_err(launch_failed)?,
        max.map_err(launch_failed)?,
        both.map_err(launch_failed)?,
    ))
}

fn scan_on<X>(space: X, case: &RangeCase, data: &[i64]) -> Result<(i64, Vec<i64>), TestCaseError>
where
    X: ExecutionSpace + ParallelScan<RangePolicy<X>>,
{
    let b = case.begin;
    let n = b + data.len();
    let padded: Vec<i64> = std::iter::repeat_n(0, b).chain(data.iter().copied()).collect();
    let run = || -> hoplite_core::Result<(i64, Vec<i64>)> {
        let x: View<i64, 1> = View::from_slice("prop-scan-in", [n], &padded)?;
        let out: View<i64, 1> = View::new("prop-scan-out", [n])?;
        let policy = case.policy(space, data.len());
        let total = parallel_scan(
            "prop-scan",
            (policy, (out.write(), x.read())),
            |(i, (out, x)), partial: &mut i64, is_final| {
                if is_final {
                    out.set(i, *partial);
                }
                *partial += x.get(i);
            },
        )?;
        Ok((total, out.to_vec()?))
    };
    run().map_err(launch_failed)
}

/// An MDRange case of rank `R`.
#[derive(Clone, Debug)]
struct MdCase<const R: usize> {
    begin: [usize; R],
    end: [usize; R],
    tiles: Option<[usize; R]>,
    outer: IterationOrder,
    inner: IterationOrder,
    schedule: Schedule,
    deterministic: bool,
}

fn order() -> impl Strategy<Value = IterationOrder> {
    prop_oneof![Just(IterationOrder::Right), Just(IterationOrder::Left)]
}

fn md_case<const R: usize>(max_extent: usize) -> impl Strategy<Value = MdCase<R>> {
    (
        prop::array::uniform::<_, R>(0usize..3),
        prop::array::uniform::<_, R>(0usize..max_extent),
        prop::option::of(prop::array::uniform::<_, R>(1usize..6)),
        (order(), order()),
        prop_oneof![Just(Schedule::Static), Just(Schedule::Dynamic)],
        any::<bool>(),
    )
        .prop_map(
            |(begin, len, tiles, (outer, inner), schedule, deterministic)| MdCase {
                begin,
                end: std::array::from_fn(|d| begin[d] + len[d]),
                tiles,
                outer,
                inner,
                schedule,
                deterministic,
            },
        )
}

fn md_weight<const R: usize>(p: [usize; R]) -> i64 {
    p.iter().fold(7i64, |acc, &x| acc * 31 + x as i64 + 1) % 100_003
}

fn md_on<X, const R: usize>(space: X, case: &MdCase<R>) -> Result<(i64, Vec<u32>), TestCaseError>
where
    X: ExecutionSpace + ParallelFor<MDRangePolicy<X, R>> + ParallelReduce<MDRangePolicy<X, R>>,
{
    let run = || -> hoplite_core::Result<(i64, Vec<u32>)> {
        let mut policy = MDRangePolicy::new(space, case.begin, case.end)
            .with_iteration(case.outer, case.inner)
            .with_schedule(case.schedule)
            .with_deterministic_reduction(case.deterministic);
        if let Some(t) = case.tiles {
            policy = policy.with_tiles(t);
        }
        let sum = parallel_reduce(
            "prop-md-sum",
            policy.clone(),
            |p, acc: &mut i64| *acc += md_weight(*p),
            Sum::new(),
        )?;
        let counts: View<u32, R> = View::new("prop-md-counts", case.end)?;
        let hits = counts.atomic();
        parallel_for("prop-md-visits", policy, |p| {
            hits.fetch_add(p, 1);
        })?;
        drop(hits);
        Ok((sum, counts.to_vec()?))
    };
    run().map_err(launch_failed)
}

fn md_property<S, const R: usize>(space: &S, max_extent: usize) -> Outcome
where
    S: ExecutionSpace + ParallelFor<MDRangePolicy<S, R>> + ParallelReduce<MDRangePolicy<S, R>>,
{
    property(md_case::<R>(max_extent), |case| {
        let got = md_on(space.clone(), &case)?;
        let want = md_on(Serial::default(), &case)?;
        prop_assert_eq!(
            got,
            want,
            "rank-{} MDRange (weighted sum, visit counts) differ from serial",
            R
        );
        Ok(())
    })
}

/// `Sum<i64>` over random data, offsets, chunk sizes and schedules equals serial's.
pub fn sum_i64_matches_serial<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = prop::collection::vec(-1_000_000i64..1_000_000, 0..3000);
        property((range_case(), data), |(case, data)| {
            let got = sum_on(space.clone(), &case, &data)?;
            let want = sum_on(Serial::default(), &case, &data)?;
            prop_assert_eq!(got, want, "Sum<i64> differs from serial");
            Ok(())
        })
    })
}

/// `MinLoc`, `MaxLoc` and `MinMaxLoc` over random data with many ties equal serial's.
pub fn min_max_loc_match_serial<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = prop::collection::vec(0i64..12, 0..2000);
        property((range_case(), data), |(case, data)| {
            let got = locs_on(space.clone(), &case, &data)?;
            let want = locs_on(Serial::default(), &case, &data)?;
            prop_assert_eq!(got, want, "(MinLoc, MaxLoc, MinMaxLoc) differ from serial");
            Ok(())
        })
    })
}

/// An exclusive scan through a writer (every element and the total) equals serial's.
pub fn scan_matches_serial<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = prop::collection::vec(-1000i64..1000, 0..3000);
        property((range_case(), data), |(case, data)| {
            let got = scan_on(space.clone(), &case, &data)?;
            let want = scan_on(Serial::default(), &case, &data)?;
            prop_assert_eq!(got, want, "scan (total, output) differs from serial");
            Ok(())
        })
    })
}

/// MDRange launches of ranks 2 and 3 with random boxes, tiles, orders, schedules and
/// reduction modes visit the same points and reduce to the same sum as on serial.
pub fn mdrange_matches_serial<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        md_property::<S, 2>(space, 14)?;
        md_property::<S, 3>(space, 8)
    })
}
