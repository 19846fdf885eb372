//! Device reductions and scans through the one launch (`parallel_reduce`, `parallel_scan` on
//! a `Cuda` policy): the checks the types leave to run time hold without a GPU (before any
//! driver call), every reduce and scan entry compiles with NVRTC (skipped without it), and
//! with a GPU the values match the host's. That a reducer matches the kernel's accumulator is
//! a type check (the conformance suite's `reducer_value_mismatch` compile-fail case).

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::device_kernel::DeviceKernel;
use hoplite_core::{
    ArrayLayout, IterationOrder, LayoutLeft, LayoutRight, MDRangePolicy, MinMaxScalar, RangePolicy,
    TeamPolicy, ValLoc, View,
};
use hoplite_cuda::nvrtc::{ModuleCache, Nvrtc};
use hoplite_cuda::{Cuda, CudaError, CudaSpace, copy_to_device, copy_to_host};

mod support;

use support::{is_launch_absence, point_run, runs, whole};

/// A plain sum over a range.
#[kernel]
pub fn sum_of(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i);
}

/// The minimum and its index.
#[kernel]
pub fn argmin(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut ValLoc<f64>) {
    acc.update_min(x.get(i), *i);
}

/// The smallest and largest value.
#[kernel]
pub fn extremes(i: Idx<'_>, x: BoundReader<'_, f32, 1>, acc: &mut MinMaxScalar<f32>) {
    acc.update(x.get(i));
}

/// A weighted sum over a rank-2 MDRange.
#[kernel]
pub fn weighted<L: ArrayLayout>(ij: MdIdx<'_, 2>, a: BoundReader<'_, i64, 2, L>, acc: &mut i64) {
    *acc += a.get(ij) * (ij[0] as i64 + 1);
}

/// Row sums by teams, joined into one total.
#[kernel]
pub fn team_total<L: ArrayLayout>(
    m: &impl TeamMember,
    a: BoundReader<'_, i64, 2, L>,
    cols: usize,
    acc: &mut i64,
) {
    let row = m.league_rank();
    let mut part = 0i64;
    let mut j = m.team_rank();
    while j < cols {
        part += a.get([row, j]);
        j += m.team_size();
    }
    *acc += part;
}

/// An inclusive prefix sum.
#[kernel]
pub fn prefix(
    i: Idx<'_>,
    y: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    acc: &mut i64,
    is_final: bool,
) {
    *acc += x.get(i);
    if is_final {
        y.set(i, *acc);
    }
}

/// The run of consecutive indices seen in index order, as `(lo << 32) + hi`; -1 before the
/// first, -2 once an index does not continue the run (what the conformance check
/// `reducer::custom_join_keeps_index_order` keeps of a concatenation).
#[kernel]
pub fn index_run(i: Idx<'_>, acc: &mut i64) {
    let k = *i as i64;
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// [`index_run()`] of the league ranks of a team launch.
#[kernel]
pub fn league_run(m: &impl TeamMember, acc: &mut i64) {
    let k = m.league_rank() as i64;
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

fn is_absence(e: &CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
    )
}

#[test]
fn reductions_check_what_the_types_cannot_before_the_device() {
    // Empty views need no allocation, so this runs the same with or without a GPU.
    let x64: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let xi: View<i64, 1, LayoutRight, CudaSpace> = View::default();
    let yi: View<i64, 1, LayoutRight, CudaSpace> = View::default();
    let cuda = Cuda::default();
    // A writer that does not contain the range is refused before the device.
    let e = parallel_scan(
        "prefix",
        (RangePolicy::new(cuda.clone(), 0..5), (yi.write(), xi.read())),
        prefix::with(),
    )
    .expect_err("the writer has extent 0");
    assert!(e.to_string().contains("past the extent 0 of view"), "{e}");
    assert!(!is_launch_absence(&e), "{e}");
    // An empty box needs nothing but the device.
    let a: View<i64, 2, LayoutLeft, CudaSpace> = View::default();
    let boxed = parallel_reduce(
        "weighted",
        (MDRangePolicy::new(cuda.clone(), [0, 0], [0, 0]), (a.read(),)),
        weighted::with(),
        Sum::<i64>::new(),
    );
    match boxed {
        Ok(v) => assert_eq!(v, 0),
        Err(e) => assert!(is_launch_absence(&e), "{e}"),
    }
    // Matching arguments reach the device: no device, or the identity of an empty range.
    let range = RangePolicy::new(cuda.clone(), 0..0);
    match parallel_reduce("sum", (range, (x64.read(),)), sum_of::with(), Sum::<f64>::new()) {
        Ok(v) => assert_eq!(v, 0.0),
        Err(e) => {
            assert!(is_launch_absence(&e), "{e}");
            println!("skipped the device part: {e}");
        }
    }
}

/// A reducer that is not commutative joins its partials in the policy's visit order; where
/// tiles make that order tile by tile, Cuda (which joins in the order of nested loops over
/// the box) refuses the launch before the device, naming the reducer and the fix.
#[test]
fn tiled_mdrange_reductions_of_non_commutative_reducers_are_refused() {
    let cuda = Cuda::default();
    let square = MDRangePolicy::new(cuda.clone(), [0, 0], [8, 8]).with_tiles([2, 2]);
    let e = parallel_reduce("runs", square.clone(), point_run::with(8, 1), runs()).expect_err("square tiles");
    let message = e.to_string();
    for needle in [
        "point_run",
        "Custom",
        "is not commutative",
        "[2, 2]",
        "with_tiles",
        "is_commutative",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    // Rows of the box a few at a time are nested loops, and a commutative reducer takes any
    // tiles: those launches go on to the device (and stop at its absence here).
    let rows = MDRangePolicy::new(cuda.clone(), [0, 0], [8, 8]).with_tiles([3, 8]);
    let launches = [
        parallel_reduce("runs", rows, point_run::with(8, 1), runs()),
        parallel_reduce("sum", square, point_run::with(8, 1), Sum::<i64>::new()),
        parallel_reduce(
            "left",
            MDRangePolicy::new(cuda.clone(), [0, 0], [8, 8])
                .with_iteration(IterationOrder::Left, IterationOrder::Left),
            point_run::with(1, 8),
            runs(),
        ),
    ];
    for outcome in launches {
        match outcome {
            Ok(_) => {}
            Err(e) => assert!(!e.to_string().contains("not commutative"), "{e}"),
        }
    }
}

#[test]
fn every_reduce_and_scan_entry_compiles() {
    if let Err(e) = Nvrtc::get() {
        println!("skipped: {e}");
        return;
    }
    let cache = ModuleCache::new(None);
    for (entry, ptx) in [
        (sum_of::ENTRY, cache.ptx::<sum_of>("compute_90").map(|p| p.0)),
        (argmin::ENTRY, cache.ptx::<argmin>("compute_90").map(|p| p.0)),
        (extremes::ENTRY, cache.ptx::<extremes>("compute_90").map(|p| p.0)),
        (weighted::ENTRY, cache.ptx::<weighted>("compute_90").map(|p| p.0)),
        (
            team_total::ENTRY,
            cache.ptx::<team_total>("compute_90").map(|p| p.0),
        ),
        (prefix::ENTRY, cache.ptx::<prefix>("compute_90").map(|p| p.0)),
        (
            index_run::ENTRY,
            cache.ptx::<index_run>("compute_90").map(|p| p.0),
        ),
        (
            point_run::ENTRY,
            cache.ptx::<point_run>("compute_90").map(|p| p.0),
        ),
        (
            league_run::ENTRY,
            cache.ptx::<league_run>("compute_90").map(|p| p.0),
        ),
    ] {
        let ptx = ptx.unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert!(ptx.contains(&format!(".entry {entry}(")), "{entry}");
    }
    // The ValLoc identity is a 16-byte, 8-aligned parameter, as the packer lays it out.
    let (ptx, _) = cache.ptx::<argmin>("compute_90").expect("compiled above");
    assert!(ptx.contains(".param .align 8 .b8"), "{ptx}");
}

#[test]
fn device_reductions_match_the_host() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            assert!(is_absence(&e), "{e}");
            println!("skipped: no device ({e})");
            return;
        }
    };
    if let Err(e) = Nvrtc::get() {
        println!("skipped: {e}");
        return;
    }
    let n = 100_003;
    let host: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 - 500.0).collect();
    let x = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("x", [n]).expect("device memory");
    copy_to_device(&x, &host).expect("copy in");
    let range = RangePolicy::new(cuda.clone(), 0..n);

    let sum = parallel_reduce(
        "sum",
        (range.clone(), (x.read(),)),
        sum_of::with(),
        Sum::<f64>::new(),
    )
    .expect("sum");
    assert_eq!(sum, host.iter().sum::<f64>()); // integers: exact in any order
    let min = parallel_reduce(
        "argmin",
        (range.clone(), (x.read(),)),
        argmin::with(),
        MinLoc::<f64>::new(),
    )
    .expect("argmin");
    let expected = host
        .iter()
        .enumerate()
        .fold(MinLoc::<f64>::new().init(), |mut a, (i, &v)| {
            a.update_min(v, i);
            a
        });
    assert_eq!(min, expected);

    let small: Vec<f32> = host.iter().map(|&v| v as f32 * 0.5).collect();
    let xf = View::<f32, 1, LayoutRight, CudaSpace>::without_initializing("xf", [n]).expect("device memory");
    copy_to_device(&xf, &small).expect("copy in");
    let mm = parallel_reduce(
        "minmax",
        (range.clone(), (xf.read(),)),
        extremes::with(),
        MinMax::<f32>::new(),
    )
    .expect("minmax");
    assert_eq!((mm.min, mm.max), (-250.0, 249.5));

    let (rows, cols) = (37, 1001);
    let grid: Vec<i64> = (0..rows * cols).map(|k| (k % 13) as i64 - 6).collect();
    let a = View::<i64, 2, LayoutLeft, CudaSpace>::without_initializing("a", [rows, cols])
        .expect("device memory");
    copy_to_device(&a, &grid).expect("copy in");
    let mut want = 0i64;
    let mut total = 0i64;
    for j in 0..cols {
        for i in 0..rows {
            let v = grid[i + j * rows]; // LayoutLeft
            want += v * (i as i64 + 1);
            total += v;
        }
    }
    let got = parallel_reduce(
        "weighted",
        (
            MDRangePolicy::new(cuda.clone(), [0, 0], [rows, cols]),
            (a.read(),),
        ),
        weighted::with(),
        Sum::<i64>::new(),
    )
    .expect("mdrange");
    assert_eq!(got, want);
    let by_teams = parallel_reduce(
        "rows",
        (TeamPolicy::new(cuda.clone(), rows, TeamSize::Auto), (a.read(),)),
        team_total::with::<Cuda, _>(cols),
        Sum::<i64>::new(),
    )
    .expect("teams");
    assert_eq!(by_teams, total);

    let xi = View::<i64, 1, LayoutRight, CudaSpace>::without_initializing("xi", [n]).expect("device memory");
    let yi = View::<i64, 1, LayoutRight, CudaSpace>::without_initializing("yi", [n]).expect("device memory");
    let ints: Vec<i64> = (0..n as i64).map(|i| i % 5 - 2).collect();
    copy_to_device(&xi, &ints).expect("copy in");
    let t = parallel_scan("prefix", (range, (yi.write(), xi.read())), prefix::with()).expect("scan");
    let mut out = vec![0i64; n];
    copy_to_host(&mut out, &yi).expect("copy out");
    let mut running = 0;
    for (k, &v) in ints.iter().enumerate() {
        running += v;
        assert_eq!(out[k], running, "index {k}");
    }
    assert_eq!(t, running);
}

/// On a GPU: reducers that are not commutative join in index order, over ranges (one index
/// per thread, and many a thread once the partials are cut to the resident threads),
/// MDRanges in both inner orders, leagues of one-thread teams, eagerly, through
/// `parallel_reduce` and in a graph.
#[test]
fn non_commutative_reductions_join_in_index_order() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            assert!(is_absence(&e), "{e}");
            println!("skipped: no device ({e})");
            return;
        }
    };
    if let Err(e) = Nvrtc::get() {
        println!("skipped: {e}");
        return;
    }
    for n in [0, 1, 1000, (1 << 22) + 3] {
        let got = parallel_reduce(
            "runs",
            RangePolicy::new(cuda.clone(), 0..n),
            index_run::with(),
            runs(),
        )
        .expect("parallel_reduce");
        assert_eq!(got, whole(n), "parallel_reduce over 0..{n}");
    }
    let got = parallel_reduce(
        "runs",
        RangePolicy::new(cuda.clone(), 3..1000),
        index_run::with(),
        runs(),
    )
    .expect("offset range");
    assert_eq!(got, (3 << 32) + 1000);
    let (rows, cols) = (300, 1001);
    let right = MDRangePolicy::new(cuda.clone(), [0, 0], [rows, cols]);
    let got = parallel_reduce("rows", right, point_run::with(cols, 1), runs()).expect("row-major");
    assert_eq!(got, whole(rows * cols), "row-major");
    let left = MDRangePolicy::new(cuda.clone(), [0, 0], [rows, cols])
        .with_iteration(IterationOrder::Left, IterationOrder::Left)
        .with_tiles([rows, 1]);
    let got = parallel_reduce("cols", left, point_run::with(1, rows), runs()).expect("column-major");
    assert_eq!(got, whole(rows * cols), "column-major");
    for league in [1, 7, 5000] {
        let teams = TeamPolicy::new(cuda.clone(), league, 1);
        let got = parallel_reduce("leagues", teams, league_run::with::<Cuda>(), runs()).expect("teams");
        assert_eq!(got, whole(league), "{league} teams");
    }
    #[cfg(feature = "graph")]
    {
        use hoplite_graph::{ReduceResult, create_graph_with};
        let value = ReduceResult::new();
        let mut graph = create_graph_with(&cuda, hoplite_cuda::graph::CudaGraph::new(&cuda), |g| {
            let range = RangePolicy::new(cuda.clone(), 0..100_000);
            g.parallel_reduce("runs", range, index_run::with(), runs(), value.clone());
        })
        .expect("graph");
        graph.submit().expect("runs as a CUDA graph");
        assert_eq!(value.get(), Some(whole(100_000)), "graph");
    }
}
