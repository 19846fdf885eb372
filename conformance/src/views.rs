//! Views and the access model, through launches on the space under test: writers store at
//! their iteration's token, readers and atomic handles work from any iteration, conflicting
//! handles are refused with `Error::BorrowConflict`, launches past a view's extent are refused
//! with `Error::OutOfExtent`, and every borrow ends with its launch.
//!
//! The portable checks launch `#[kernel]`s on views in the space's own memory. A launch that
//! must be refused hands its kernel a writer `ran` of a view that is not part of the refusal:
//! the kernel marks it at every token it runs, so a mark left behind is an iteration that ran.

use hoplite_core::BoundAtomic;
use hoplite_core::device_kernel::DeviceKernelInfo;
use hoplite_core::{
    BoundLookup, BoundReader, BoundWriter, Error, Idx, IterationOrder, LayoutLeft, LayoutRight,
    MDRangePolicy, MdIdx, MemorySpace, RangePolicy, Slice, Sum, View, parallel_for, parallel_reduce,
};
use hoplite_macros::kernel;

use crate::kernels::{axpy, five_point};
use crate::util::{expect_error, mentions, same};
use crate::{FullSpace, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each). The
/// checks also launch [`axpy`] and [`five_point`], which `kernels` lists.
pub(crate) const DEVICE_KERNELS: &[fn() -> DeviceKernelInfo] = &[
    DeviceKernelInfo::of::<add_in_place>,
    DeviceKernelInfo::of::<fill>,
    DeviceKernelInfo::of::<store_index_both_layouts>,
    DeviceKernelInfo::of::<mark_and_fill>,
    DeviceKernelInfo::of::<mark_and_read>,
    DeviceKernelInfo::of::<mark_and_fill_pair_i32>,
    DeviceKernelInfo::of::<mark_and_fill_halves>,
    DeviceKernelInfo::of::<mark_and_sum_md>,
    DeviceKernelInfo::of::<cycle_lookup>,
    DeviceKernelInfo::of::<scatter_histogram>,
    DeviceKernelInfo::of::<mark_and_store_u32>,
    DeviceKernelInfo::of::<mark_and_read_u32>,
    DeviceKernelInfo::of::<mark_and_add_u32>,
];

/// `y += delta` at every token: a writer reads its own old value.
#[kernel(crate = hoplite_core)]
pub fn add_in_place(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, delta: f64) {
    y.set(i, y.get(i) + delta);
}

/// `y = value` at every token.
#[kernel(crate = hoplite_core)]
pub fn fill(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, value: f64) {
    y.set(i, value);
}

/// Stores `100 i + j` into a `LayoutRight` view and its negation into a `LayoutLeft` one.
#[kernel(crate = hoplite_core)]
pub fn store_index_both_layouts(
    ij: MdIdx<'_, 2>,
    right: BoundWriter<'_, i64, 2>,
    left: BoundWriter<'_, i64, 2, LayoutLeft>,
) {
    let code = (ij[0] * 100 + ij[1]) as i64;
    right.set(ij, code);
    left.set(ij, -code);
}

/// Marks `ran` and stores `value` into `y` at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_fill(i: Idx<'_>, ran: BoundWriter<'_, u32, 1>, y: BoundWriter<'_, f64, 1>, value: f64) {
    ran.set(i, 1);
    y.set(i, value);
}

/// Marks `ran` (with 1 plus what `x` holds) at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_read(i: Idx<'_>, ran: BoundWriter<'_, u32, 1>, x: BoundReader<'_, f64, 1>) {
    ran.set(i, 1 + x.get(i) as u32);
}

/// Marks `ran` and stores into both `a` and `b` at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_fill_pair_i32(
    i: Idx<'_>,
    ran: BoundWriter<'_, u32, 1>,
    a: BoundWriter<'_, i32, 1>,
    b: BoundWriter<'_, i32, 1>,
) {
    ran.set(i, 1);
    a.set(i, 1);
    b.set(i, 2);
}

/// Marks `ran`, stores the index into `lo` and its negation into `hi` at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_fill_halves(
    i: Idx<'_>,
    ran: BoundWriter<'_, u32, 1>,
    lo: BoundWriter<'_, i64, 1>,
    hi: BoundWriter<'_, i64, 1>,
) {
    ran.set(i, 1);
    lo.set(i, *i as i64);
    hi.set(i, -(*i as i64));
}

/// Marks `ran` and sums `m` over an MDRange.
#[kernel(crate = hoplite_core)]
pub fn mark_and_sum_md(
    ij: MdIdx<'_, 2>,
    ran: BoundWriter<'_, u32, 2>,
    m: BoundReader<'_, f64, 2>,
    acc: &mut f64,
) {
    ran.set(ij, 1);
    *acc += m.get(ij);
}

/// `y[i] = table[i % len]`: a lookup read at an index the kernel computes.
#[kernel(crate = hoplite_core)]
pub fn cycle_lookup(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, table: BoundLookup<'_, f64, 1>, len: usize) {
    y.set(i, table.get(*i % len));
}

/// Adds 1 to `counts` and 0.5 to `totals` at bin `7 i mod 16` for every token `i`.
#[kernel(crate = hoplite_core)]
pub fn scatter_histogram(i: Idx<'_>, counts: BoundAtomic<'_, u64, 1>, totals: BoundAtomic<'_, f64, 1>) {
    let bin = (*i * 7) % 16;
    counts.fetch_add(bin, 1);
    totals.fetch_add(bin, 0.5);
}

/// Marks `ran` and stores 1 into `v` at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_store_u32(i: Idx<'_>, ran: BoundWriter<'_, u32, 1>, v: BoundWriter<'_, u32, 1>) {
    ran.set(i, 1);
    v.set(i, 1);
}

/// Marks `ran` (with 1 plus what `v` holds) at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_read_u32(i: Idx<'_>, ran: BoundWriter<'_, u32, 1>, v: BoundReader<'_, u32, 1>) {
    ran.set(i, 1 + v.get(i));
}

/// Marks `ran` and adds 1 to `v` at every token.
#[kernel(crate = hoplite_core)]
pub fn mark_and_add_u32(i: Idx<'_>, ran: BoundWriter<'_, u32, 1>, v: BoundAtomic<'_, u32, 1>) {
    ran.set(i, 1);
    v.fetch_add(i, 1);
}

/// Fails unless `result` is `BorrowConflict` with a message that mentions every part, and the
/// launch's kernel marked no token of `ran`: the launch was refused before any iteration ran.
fn expect_conflict<M: MemorySpace, const R: usize>(
    result: hoplite_core::Result<()>,
    ran: &View<u32, R, LayoutRight, M>,
    parts: &[&str],
) -> Outcome {
    let err = expect_error(result, "a launch with conflicting handles", |e| {
        matches!(e, Error::BorrowConflict { .. })
    })?;
    mentions(&err.to_string(), parts)?;
    ensure_eq!(
        ran.to_vec()?.iter().filter(|&&mark| mark != 0).count(),
        0,
        "iterations of a launch refused for a conflict"
    );
    Ok(())
}

/// A writer handed to a range launch stores at every token (axpy: `y = 2 x + y`), reading
/// its own old value and a reader's at the same token.
pub fn writer_stores_at_every_token<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 1000, 10_007] {
            let x =
                SpaceView::<S, f64, 1>::from_slice("x", [n], &(0..n).map(|i| i as f64).collect::<Vec<_>>())?;
            let y = SpaceView::<S, f64, 1>::from_slice("y", [n], &vec![1.0; n])?;
            let policy = RangePolicy::new(space.clone(), 0..n).with_chunk_size(64);
            parallel_for("axpy", (policy, (y.write(), x.read())), axpy::with(2.0))?;
            let want: Vec<f64> = (0..n).map(|i| 2.0 * i as f64 + 1.0).collect();
            same(&y.to_vec()?, &want, || format!("axpy over {n} elements"))?;
            parallel_for(
                "bump",
                (RangePolicy::new(space.clone(), 0..n), (y.write(),)),
                add_in_place::with(0.5),
            )?;
            let want: Vec<f64> = want.iter().map(|v| v + 0.5).collect();
            same(&y.to_vec()?, &want, || format!("update over {n} elements"))?;
        }
        Ok(())
    })
}

/// Writers handed to an MDRange launch store at every multi-index token, for LayoutRight
/// and LayoutLeft views, odd tiles and both orders.
pub fn md_writer_stores_at_every_token<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (13, 11);
        for order in [IterationOrder::Right, IterationOrder::Left] {
            let right = SpaceView::<S, i64, 2>::new("md-right", [rows, cols])?;
            let left = View::<i64, 2, LayoutLeft, S::MemorySpace>::new("md-left", [rows, cols])?;
            let policy = MDRangePolicy::new(space.clone(), [0, 0], [rows, cols])
                .with_tiles([4, 3])
                .with_iteration(order, order);
            parallel_for(
                "md-write",
                (policy, (right.write(), left.write())),
                store_index_both_layouts::with(),
            )?;
            let want_right: Vec<i64> = (0..rows)
                .flat_map(|i| (0..cols).map(move |j| (i * 100 + j) as i64))
                .collect();
            let want_left: Vec<i64> = (0..cols)
                .flat_map(|j| (0..rows).map(move |i| -((i * 100 + j) as i64)))
                .collect();
            same(&right.to_vec()?, &want_right, || {
                format!("a LayoutRight view written by an MDRange launch, {order:?} order")
            })?;
            same(&left.to_vec()?, &want_left, || {
                format!("a LayoutLeft view written by an MDRange launch, {order:?} order")
            })?;
        }
        Ok(())
    })
}

/// A bound reader's `neighbor` reads the stencil points around each token of an interior
/// launch.
pub fn reader_neighbor_reads_stencil_points<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 17;
        let data: Vec<f64> = (0..n * n).map(|k| ((k * 37) % 101) as f64).collect();
        let u = SpaceView::<S, f64, 2>::from_slice("u", [n, n], &data)?;
        let out = SpaceView::<S, f64, 2>::new("laplace", [n, n])?;
        let interior = MDRangePolicy::new(space.clone(), [1, 1], [n - 1, n - 1]).with_tiles([5, 3]);
        parallel_for("laplace", (interior, (out.write(), u.read())), five_point::with())?;
        let at = |i: usize, j: usize| data[i * n + j];
        let got = out.to_vec()?;
        for i in 0..n {
            for j in 0..n {
                let want = if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                    0.0
                } else {
                    at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4.0 * at(i, j)
                };
                ensure_eq!(got[i * n + j], want, "the stencil at [{i}, {j}]");
            }
        }
        Ok(())
    })
}

/// An atomic handle (handed to the launch) scatter-adds from every iteration without losing
/// an update.
pub fn atomic_handle_scatter_adds_exactly<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 20_000;
        let bins = SpaceView::<S, u64, 1>::new("histogram", [16])?;
        let sums = SpaceView::<S, f64, 1>::new("bin-sums", [16])?;
        parallel_for(
            "histogram",
            (
                RangePolicy::new(space.clone(), 0..n).with_chunk_size(13),
                (bins.atomic(), sums.atomic()),
            ),
            scatter_histogram::with(),
        )?;
        same(&bins.to_vec()?, &[(n / 16) as u64; 16], || {
            "histogram counts".to_owned()
        })?;
        same(&sums.to_vec()?, &[(n / 16) as f64 * 0.5; 16], || {
            "histogram sums".to_owned()
        })
    })
}

/// A writer conflicts with a live reader of a clone of the same view (clones are the same
/// data), in either order of making them; the launch fails before running.
pub fn writer_conflicts_with_reader_of_clone<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v = SpaceView::<S, f64, 1>::new("shared", [64])?;
        let ran = SpaceView::<S, u32, 1>::new("ran", [64])?;
        let all = RangePolicy::new(space.clone(), 0..64);
        let alias = v.clone();
        let reader = alias.read();
        let result = parallel_for(
            "conflicted",
            (all.clone(), (ran.write(), v.write())),
            mark_and_fill::with(2.0),
        );
        expect_conflict(result, &ran, &["writer", "reader", "shared"])?;
        drop(reader);
        let writer = v.write();
        let result = parallel_for(
            "conflicted",
            (all.clone(), (ran.write(), alias.read())),
            mark_and_read::with(),
        );
        expect_conflict(result, &ran, &["reader", "writer", "shared"])?;
        drop(writer);
        parallel_for("after-conflict", (all, (v.write(),)), fill::with(1.0))?;
        ensure_eq!(
            alias.to_vec()?.iter().sum::<f64>(),
            64.0,
            "the view written after the conflicting handles were dropped"
        );
        Ok(())
    })
}

/// Two writers of one view conflict, also inside one launch's tuple.
pub fn two_writers_of_one_view_conflict<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v = SpaceView::<S, i32, 1>::new("twice", [32])?;
        let ran = SpaceView::<S, u32, 1>::new("ran", [32])?;
        let result = parallel_for(
            "conflicted",
            (
                RangePolicy::new(space.clone(), 0..32),
                (ran.write(), v.write(), v.write()),
            ),
            mark_and_fill_pair_i32::with(),
        );
        expect_conflict(result, &ran, &["writer", "twice"])
    })
}

/// An atomic handle conflicts with a writer, and readers with an atomic handle.
pub fn atomic_handle_conflicts_with_writer<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v = SpaceView::<S, u32, 1>::new("mixed", [16])?;
        let ran = SpaceView::<S, u32, 1>::new("ran", [16])?;
        let all = RangePolicy::new(space.clone(), 0..16);
        let atomic = v.atomic();
        let result = parallel_for(
            "conflicted",
            (all.clone(), (ran.write(), v.write())),
            mark_and_store_u32::with(),
        );
        expect_conflict(result, &ran, &["writer", "atomic handle", "mixed"])?;
        let result = parallel_for(
            "conflicted",
            (all.clone(), (ran.write(), v.read())),
            mark_and_read_u32::with(),
        );
        expect_conflict(result, &ran, &["reader", "atomic handle", "mixed"])?;
        drop(atomic);
        let writer = v.write();
        let result = parallel_for(
            "conflicted",
            (all, (ran.write(), v.atomic())),
            mark_and_add_u32::with(),
        );
        expect_conflict(result, &ran, &["atomic handle", "writer", "mixed"])?;
        drop(writer);
        Ok(())
    })
}

/// Writers of disjoint subviews of one view do not conflict: one launch writes both halves.
pub fn disjoint_subview_writers_do_not_conflict<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 1000;
        let v = SpaceView::<S, i64, 1>::new("halves", [2 * n])?;
        let low: SpaceView<S, i64, 1> = v.subview([Slice::Range(0..n)])?;
        let high: SpaceView<S, i64, 1> = v.subview([Slice::Range(n..2 * n)])?;
        let ran = SpaceView::<S, u32, 1>::new("ran", [n])?;
        parallel_for(
            "halves",
            (
                RangePolicy::new(space.clone(), 0..n),
                (ran.write(), low.write(), high.write()),
            ),
            mark_and_fill_halves::with(),
        )?;
        let want: Vec<i64> = (0..n as i64).chain((0..n as i64).map(|i| -i)).collect();
        same(&v.to_vec()?, &want, || {
            "two halves written through disjoint subviews".to_owned()
        })?;
        same(&ran.to_vec()?, &vec![1; n], || {
            "the tokens of the launch over both halves".to_owned()
        })?;
        let ran = SpaceView::<S, u32, 1>::new("ran", [n])?;
        let overlapping: SpaceView<S, i64, 1> = v.subview([Slice::Range(n - 1..2 * n - 1)])?;
        let result = parallel_for(
            "conflicted",
            (
                RangePolicy::new(space.clone(), 0..n),
                (ran.write(), low.write(), overlapping.write()),
            ),
            mark_and_fill_halves::with(),
        );
        expect_conflict(result, &ran, &["writer", "halves"])
    })
}

/// A launch whose tokens go past a handle's extent is `Error::OutOfExtent` naming the view,
/// and runs no iteration.
pub fn launch_past_the_extent_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let y = SpaceView::<S, f64, 1>::new("short", [10])?;
        let ran = SpaceView::<S, u32, 1>::new("ran", [11])?;
        let result = parallel_for(
            "too-far",
            (RangePolicy::new(space.clone(), 0..11), (ran.write(), y.write())),
            mark_and_fill::with(1.0),
        );
        let err = expect_error(result, "a launch over 0..11 with a view of 10", |e| {
            matches!(e, Error::OutOfExtent { .. })
        })?;
        mentions(&err.to_string(), &["too-far", "short", "11", "10"])?;
        let m = SpaceView::<S, f64, 2>::new("narrow", [4, 3])?;
        let ran_md = SpaceView::<S, u32, 2>::new("ran", [4, 4])?;
        let result = parallel_reduce(
            "md-too-far",
            (
                MDRangePolicy::new(space.clone(), [0, 0], [4, 4]),
                (ran_md.write(), m.read()),
            ),
            mark_and_sum_md::with(),
            Sum::<f64>::new(),
        );
        let err = expect_error(result, "an MDRange launch over [4, 4] with a [4, 3] view", |e| {
            matches!(e, Error::OutOfExtent { dim: 1, .. })
        })?;
        mentions(&err.to_string(), &["md-too-far", "narrow"])?;
        let runs = ran
            .to_vec()?
            .iter()
            .chain(&ran_md.to_vec()?)
            .filter(|&&mark| mark != 0)
            .count();
        ensure_eq!(runs, 0, "iterations of launches refused for their extents");
        parallel_for(
            "in-range",
            (RangePolicy::new(space.clone(), 0..10), (y.write(),)),
            fill::with(2.0),
        )?;
        ensure_eq!(
            y.to_vec()?,
            vec![2.0; 10],
            "the view written by a launch within its extent"
        );
        Ok(())
    })
}

/// Handles handed to a launch are released when it returns, whether it succeeded or failed
/// validation or the borrow check: a later launch can borrow the view exclusively. (After a
/// kernel panic, a host feature, `panics::panic_in_parallel_for_becomes_kernel_panicked`
/// checks the same.)
pub fn handles_are_released_after_the_launch<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v = SpaceView::<S, f64, 1>::new("released", [100])?;
        let all = || RangePolicy::new(space.clone(), 0..100);
        parallel_for("ok", (all(), (v.write(),)), fill::with(1.0))?;
        let invalid = parallel_for(
            "invalid",
            (all().with_chunk_size(0), (v.write(),)),
            fill::with(2.0),
        );
        ensure!(
            matches!(invalid, Err(Error::ZeroChunk { .. })),
            "a launch with chunk size 0 gave {invalid:?}"
        );
        parallel_for("after invalid", (all(), (v.write(),)), add_in_place::with(1.0))?;
        let conflicted = parallel_for(
            "conflicted",
            (all(), (v.write(), v.clone().read())),
            axpy::with(3.0),
        );
        ensure!(
            matches!(conflicted, Err(Error::BorrowConflict { .. })),
            "a writer and a reader of one view gave {conflicted:?}"
        );
        parallel_for("after conflict", (all(), (v.write(),)), add_in_place::with(3.0))?;
        same(&v.to_vec()?, &[5.0; 100], || {
            "the view after the launches: 1, then + 1 and + 3 by exclusive writers".into()
        })
    })
}

// Host-only: `deep_copy_on` copies host-accessible views with a closure launch, and a
// `#[kernel]` takes no rank-0 handle. Its lookup part also runs on every space as
// `lookup_reads_in_a_wider_launch`.
/// `deep_copy_on(space, dst, src)` copies as a launch of the space: contiguous views in
/// chunks (several, with a remainder), other layouts and strided subviews by slabs; a lookup
/// table reads in a launch wider than itself; a rank-0 view is stored by a one-iteration
/// launch.
pub fn instance_copies_lookups_and_scalar_writes<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 5 * (1 << 14) + 3;
        let src: View<u64, 1> = View::from_vec("src", [n], (0..n as u64).collect())?;
        let dst: View<u64, 1> = View::new("dst", [n])?;
        hoplite_core::deep_copy_on(space, &dst, &src)?;
        same(&dst.to_vec()?, &src.to_vec()?, || {
            format!("a contiguous copy of {n}")
        })?;
        let m: View<i32, 2> = View::from_vec("m", [40, 30], (0..1200).collect())?;
        let cols: View<i32, 2, hoplite_core::LayoutStride> = m.subview([Slice::All, Slice::Range(5..25)])?;
        let left: View<i32, 2, LayoutLeft> = View::new("left", [40, 20])?;
        hoplite_core::deep_copy_on(space, &left, &cols)?;
        let guard = left.host_read()?;
        for (i, j) in [(0, 0), (39, 19), (17, 3)] {
            ensure_eq!(
                guard.get([i, j]),
                (30 * i + j + 5) as i32,
                "strided copy at ({i}, {j})"
            );
        }
        drop(guard);

        let coef: View<f64, 1> = View::from_slice("coef", [3], &[1.0, 2.0, 3.0])?;
        let y: View<f64, 1> = View::new("y", [1000])?;
        parallel_for(
            "table",
            (
                RangePolicy::new(space.clone(), 0..1000),
                (y.write(), coef.lookup()),
            ),
            |(i, (y, c))| y.set(i, c.get(*i % 3)),
        )?;
        let want: Vec<f64> = (0..1000).map(|i| (i % 3 + 1) as f64).collect();
        same(&y.to_vec()?, &want, || "a lookup table in a wider launch".into())?;

        let total: View<f64, 0> = View::new("total", [])?;
        parallel_for(
            "scalar",
            (RangePolicy::new(space.clone(), 7..8), (total.write(),)),
            |(i, (t,))| t.set(i, 42.0),
        )?;
        ensure_eq!(
            total.to_vec()?,
            vec![42.0],
            "a rank-0 view after a one-iteration launch"
        );
        let wide = parallel_for(
            "wide",
            (RangePolicy::new(space.clone(), 0..2), (total.write(),)),
            |(i, (t,))| t.set(i, 0.0),
        );
        ensure!(
            matches!(wide, Err(Error::ScalarWriterInWideLaunch { iterations: 2, .. })),
            "a rank-0 writer in a 2-iteration launch gave {wide:?}"
        );
        Ok(())
    })
}

/// A lookup handle reads at indices the kernel computes, in a launch wider than its view:
/// a lookup's extent is never checked against the launch, every read is.
pub fn lookup_reads_in_a_wider_launch<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let coef = SpaceView::<S, f64, 1>::from_slice("coef", [3], &[1.0, 2.0, 3.0])?;
        let y = SpaceView::<S, f64, 1>::new("y", [1000])?;
        parallel_for(
            "table",
            (
                RangePolicy::new(space.clone(), 0..1000),
                (y.write(), coef.lookup()),
            ),
            cycle_lookup::with(3),
        )?;
        let want: Vec<f64> = (0..1000).map(|i| (i % 3 + 1) as f64).collect();
        same(&y.to_vec()?, &want, || "a lookup table in a wider launch".into())
    })
}
