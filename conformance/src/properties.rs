//! Property tests: on random sizes, offsets, chunk sizes, schedules, tiles, orders and data,
//! the space under test computes what plain host loops compute, the serial backend's reference
//! semantics: range reductions and scans, and MDRange reductions and visit counts (through
//! atomic handles), all launched as `#[kernel]`s on the space's own memory.
//!
//! Each property runs 32 cases with proptest's `TestRunner`, so a property is an ordinary
//! check returning a [`Failure`] with the minimal failing input.

use std::fmt::Debug;

use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundReader, BoundWriter, ExecutionSpace, Idx, IterationOrder, MDRangePolicy, MaxLoc, MdIdx, MinLoc,
    MinMaxLoc, MinMaxLocScalar, RangePolicy, Reducer, Schedule, Sum, ValLoc, parallel_reduce, parallel_scan,
};
use hoplite_macros::kernel;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::mdrange_policy::{Counted, Visits, inside};
use crate::{Failure, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<sum_i64>,
    DeviceKernelInfo::of::<min_loc_i64>,
    DeviceKernelInfo::of::<max_loc_i64>,
    DeviceKernelInfo::of::<min_max_loc_i64>,
    DeviceKernelInfo::of::<exclusive_scan_i64>,
    DeviceKernelInfo::of::<md_weight_2>,
    DeviceKernelInfo::of::<md_weight_3>,
];

/// Sums `x` over the launch's range.
#[kernel(crate = hoplite_core)]
pub fn sum_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut i64) {
    *acc += x.get(i);
}

/// The smallest element of `x` over the launch's range, at its lowest index.
#[kernel(crate = hoplite_core)]
pub fn min_loc_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut ValLoc<i64>) {
    acc.update_min(x.get(i), *i);
}

/// The largest element of `x` over the launch's range, at its lowest index.
#[kernel(crate = hoplite_core)]
pub fn max_loc_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut ValLoc<i64>) {
    acc.update_max(x.get(i), *i);
}

/// Both extremes of `x` over the launch's range, each at its lowest index.
#[kernel(crate = hoplite_core)]
pub fn min_max_loc_i64(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut MinMaxLocScalar<i64>) {
    acc.update(x.get(i), *i);
}

/// Stores the exclusive prefix sums of `x` in `out`.
#[kernel(crate = hoplite_core)]
pub fn exclusive_scan_i64(
    i: Idx<'_>,
    out: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    partial: &mut i64,
    is_final: bool,
) {
    if is_final {
        out.set(i, *partial);
    }
    *partial += x.get(i);
}

/// Adds the weight of each point of a rank-2 MDRange: from 7, per index `x`, `w * 31 + x + 1`,
/// then `w % 100_003`.
#[kernel(crate = hoplite_core)]
pub fn md_weight_2(p: MdIdx<'_, 2>, acc: &mut i64) {
    let mut w = 7i64;
    w = w * 31 + p[0] as i64 + 1;
    w = w * 31 + p[1] as i64 + 1;
    *acc += w % 100_003;
}

/// [`md_weight_2()`] for rank 3.
#[kernel(crate = hoplite_core)]
pub fn md_weight_3(p: MdIdx<'_, 3>, acc: &mut i64) {
    let mut w = 7i64;
    w = w * 31 + p[0] as i64 + 1;
    w = w * 31 + p[1] as i64 + 1;
    w = w * 31 + p[2] as i64 + 1;
    *acc += w % 100_003;
}

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

/// `data` after `begin` zeros, in the space's memory: a launch over `begin..begin + len`
/// reads element `k` of `data` at index `begin + k`.
fn padded<S: LaunchSpace>(case: &RangeCase, data: &[i64]) -> hoplite_core::Result<SpaceView<S, i64, 1>> {
    let padded: Vec<i64> = std::iter::repeat_n(0, case.begin)
        .chain(data.iter().copied())
        .collect();
    SpaceView::<S, i64, 1>::from_slice("prop-in", [padded.len()], &padded)
}

fn sum_on<S: LaunchSpace>(space: &S, case: &RangeCase, data: &[i64]) -> Result<i64, TestCaseError> {
    let run = || -> hoplite_core::Result<i64> {
        let x = padded::<S>(case, data)?;
        let policy = case.policy(space.clone(), data.len());
        parallel_reduce("prop-sum", (policy, (x.read(),)), sum_i64::with(), Sum::new())
    };
    run().map_err(launch_failed)
}

type Locs = (ValLoc<i64>, ValLoc<i64>, MinMaxLocScalar<i64>);

fn locs_on<S: LaunchSpace>(space: &S, case: &RangeCase, data: &[i64]) -> Result<Locs, TestCaseError> {
    let run = || -> hoplite_core::Result<Locs> {
        let x = padded::<S>(case, data)?;
        let policy = case.policy(space.clone(), data.len());
        let min = parallel_reduce(
            "prop-minloc",
            (policy.clone(), (x.read(),)),
            min_loc_i64::with(),
            MinLoc::new(),
        )?;
        let max = parallel_reduce(
            "prop-maxloc",
            (policy.clone(), (x.read(),)),
            max_loc_i64::with(),
            MaxLoc::new(),
        )?;
        let both = parallel_reduce(
            "prop-minmaxloc",
            (policy, (x.read(),)),
            min_max_loc_i64::with(),
            MinMaxLoc::new(),
        )?;
        Ok((min, max, both))
    };
    run().map_err(launch_failed)
}

/// What a sequential loop finds: each extreme at the lowest index holding it, indices
/// counted from `begin`; the reducers' identities for no data.
fn locs_by_loop(begin: usize, data: &[i64]) -> Locs {
    let mut min = MinLoc::<i64>::new().init();
    let mut max = MaxLoc::<i64>::new().init();
    for (k, &v) in data.iter().enumerate() {
        if min.loc.is_none() || v < min.val {
            min = ValLoc {
                val: v,
                loc: Some(begin + k),
            };
        }
        if max.loc.is_none() || v > max.val {
            max = ValLoc {
                val: v,
                loc: Some(begin + k),
            };
        }
    }
    let both = if data.is_empty() {
        MinMaxLoc::<i64>::new().init()
    } else {
        MinMaxLocScalar {
            min_val: min.val,
            min_loc: min.loc,
            max_val: max.val,
            max_loc: max.loc,
        }
    };
    (min, max, both)
}

fn scan_on<S: LaunchSpace>(
    space: &S,
    case: &RangeCase,
    data: &[i64],
) -> Result<(i64, Vec<i64>), TestCaseError> {
    let run = || -> hoplite_core::Result<(i64, Vec<i64>)> {
        let x = padded::<S>(case, data)?;
        let out = SpaceView::<S, i64, 1>::new("prop-scan-out", [case.begin + data.len()])?;
        let policy = case.policy(space.clone(), data.len());
        let total = parallel_scan(
            "prop-scan",
            (policy, (out.write(), x.read())),
            exclusive_scan_i64::with(),
        )?;
        Ok((total, out.to_vec()?))
    };
    run().map_err(launch_failed)
}

/// The exclusive prefix sums of `data` after `begin` zeros (the scan stores nothing there),
/// and the total.
fn scan_by_loop(begin: usize, data: &[i64]) -> (i64, Vec<i64>) {
    let mut out = vec![0; begin];
    let mut total = 0;
    for &v in data {
        out.push(total);
        total += v;
    }
    (total, out)
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

/// The sum of [`md_weight`] over an MDRange of rank 2 or 3, by that rank's kernel.
trait MdWeighed<const R: usize> {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, R>) -> hoplite_core::Result<i64>;
}

/// Picks the kernel of the rank.
struct MdWeights;

impl MdWeighed<2> for MdWeights {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, 2>) -> hoplite_core::Result<i64> {
        parallel_reduce("prop-md-sum", policy, md_weight_2::with(), Sum::new())
    }
}

impl MdWeighed<3> for MdWeights {
    fn weighed<S: LaunchSpace>(policy: MDRangePolicy<S, 3>) -> hoplite_core::Result<i64> {
        parallel_reduce("prop-md-sum", policy, md_weight_3::with(), Sum::new())
    }
}

/// The weighted sum and the visit counts (row-major over `[0, end)`) of `case` on `space`.
fn md_on<S: LaunchSpace, const R: usize>(
    space: &S,
    case: &MdCase<R>,
) -> Result<(i64, Vec<u32>), TestCaseError>
where
    MdWeights: MdWeighed<R>,
    Visits: Counted<R>,
{
    let run = || -> hoplite_core::Result<(i64, Vec<u32>)> {
        let mut policy = MDRangePolicy::new(space.clone(), case.begin, case.end)
            .with_iteration(case.outer, case.inner)
            .with_schedule(case.schedule)
            .with_deterministic_reduction(case.deterministic);
        if let Some(t) = case.tiles {
            policy = policy.with_tiles(t);
        }
        let sum = MdWeights::weighed(policy.clone())?;
        let counts = SpaceView::<S, u32, R>::new("prop-md-counts", case.end)?;
        Visits::count(policy, &counts)?;
        Ok((sum, counts.to_vec()?))
    };
    run().map_err(launch_failed)
}

/// What a sequential loop over the box computes: the weighted sum, and one visit of every
/// point of the box.
fn md_by_loop<const R: usize>(case: &MdCase<R>) -> (i64, Vec<u32>) {
    let mut sum = 0i64;
    hoplite_core::for_each_point(case.begin, case.end, IterationOrder::Right, |p| {
        sum += md_weight(p)
    });
    (sum, inside(case.begin, case.end))
}

fn md_property<S: LaunchSpace, const R: usize>(space: &S, max_extent: usize) -> Outcome
where
    MdWeights: MdWeighed<R>,
    Visits: Counted<R>,
{
    property(md_case::<R>(max_extent), |case| {
        let got = md_on(space, &case)?;
        let want = md_by_loop(&case);
        prop_assert_eq!(
            got,
            want,
            "rank-{} MDRange (weighted sum, visit counts) differ from the sequential loop",
            R
        );
        Ok(())
    })
}

/// `Sum<i64>` over random data, offsets, chunk sizes and schedules equals the sequential sum.
pub fn sum_i64_matches_serial<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = prop::collection::vec(-1_000_000i64..1_000_000, 0..3000);
        property((range_case(), data), |(case, data)| {
            let got = sum_on(space, &case, &data)?;
            let want: i64 = data.iter().sum();
            prop_assert_eq!(got, want, "Sum<i64> differs from the sequential sum");
            Ok(())
        })
    })
}

/// `MinLoc`, `MaxLoc` and `MinMaxLoc` over random data with many ties equal what a sequential
/// loop finds (ties to the lowest index).
pub fn min_max_loc_match_serial<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = prop::collection::vec(0i64..12, 0..2000);
        property((range_case(), data), |(case, data)| {
            let got = locs_on(space, &case, &data)?;
            let want = locs_by_loop(case.begin, &data);
            prop_assert_eq!(
                got,
                want,
                "(MinLoc, MaxLoc, MinMaxLoc) differ from the sequential loop"
            );
            Ok(())
        })
    })
}

/// An exclusive scan through a writer (every element and the total) equals the sequential
/// prefix sums.
pub fn scan_matches_serial<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let data = prop::collection::vec(-1000i64..1000, 0..3000);
        property((range_case(), data), |(case, data)| {
            let got = scan_on(space, &case, &data)?;
            let want = scan_by_loop(case.begin, &data);
            prop_assert_eq!(
                got,
                want,
                "scan (total, output) differs from the sequential prefix"
            );
            Ok(())
        })
    })
}

/// MDRange launches of ranks 2 and 3 with random boxes, tiles, orders, schedules and
/// reduction modes visit the same points and reduce to the same sum as on serial (a
/// sequential loop over the box).
pub fn mdrange_matches_serial<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        md_property::<S, 2>(space, 14)?;
        md_property::<S, 3>(space, 8)
    })
}
