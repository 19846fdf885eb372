//! Views and the access model, through launches on the space under test: writers store at
//! their iteration's token, readers and atomic handles work from any iteration, conflicting
//! handles are refused with `Error::BorrowConflict`, launches past a view's extent are refused
//! with `Error::OutOfExtent`, and every borrow ends with its launch.

use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Error, IterationOrder, LayoutLeft, MDRangePolicy, RangePolicy, Slice, Sum, View, parallel_for,
    parallel_reduce,
};

use crate::util::{expect_error, mentions, same};
use crate::{FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

/// Launches `policy` over `0..n` handing it `args`, with a kernel that only counts its calls;
/// the launch must fail with `BorrowConflict` before any iteration runs.
fn expect_conflict<S: FullSpace, A: hoplite_core::AccessibleArgs<S>>(
    space: &S,
    n: usize,
    args: A,
    parts: &[&str],
) -> Outcome {
    let runs = AtomicUsize::new(0);
    let result = parallel_for(
        "conflicted",
        (RangePolicy::new(space.clone(), 0..n), args),
        |_| {
            runs.fetch_add(1, Ordering::Relaxed);
        },
    );
    let err = expect_error(result, "a launch with conflicting handles", |e| {
        matches!(e, Error::BorrowConflict { .. })
    })?;
    mentions(&err.to_string(), parts)?;
    ensure_eq!(
        runs.into_inner(),
        0,
        "iterations of a launch refused for a conflict"
    );
    Ok(())
}

/// A writer handed to a range launch stores at every token (axpy: `y = 2 x + y`), reading
/// its own old value and a reader's at the same token.
pub fn writer_stores_at_every_token<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for n in [0, 1, 1000, 10_007] {
            let x: View<f64, 1> = View::from_slice("x", [n], &(0..n).map(|i| i as f64).collect::<Vec<_>>())?;
            let y: View<f64, 1> = View::from_slice("y", [n], &vec![1.0; n])?;
            let policy = RangePolicy::new(space.clone(), 0..n).with_chunk_size(64);
            parallel_for("axpy", (policy, (y.write(), x.read())), |(i, (y, x))| {
                y.set(i, 2.0 * x.get(i) + y.get(i))
            })?;
            let want: Vec<f64> = (0..n).map(|i| 2.0 * i as f64 + 1.0).collect();
            same(&y.to_vec()?, &want, || format!("axpy over {n} elements"))?;
            parallel_for(
                "bump",
                (RangePolicy::new(space.clone(), 0..n), (y.write(),)),
                |(i, (y,))| y.update(i, |v| v + 0.5),
            )?;
            let want: Vec<f64> = want.iter().map(|v| v + 0.5).collect();
            same(&y.to_vec()?, &want, || format!("update over {n} elements"))?;
        }
        Ok(())
    })
}

/// Writers handed to an MDRange launch store at every multi-index token, for LayoutRight
/// and LayoutLeft views, odd tiles and both orders.
pub fn md_writer_stores_at_every_token<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (13, 11);
        for order in [IterationOrder::Right, IterationOrder::Left] {
            let right: View<i64, 2> = View::new("md-right", [rows, cols])?;
            let left: View<i64, 2, LayoutLeft> = View::new("md-left", [rows, cols])?;
            let policy = MDRangePolicy::new(space.clone(), [0, 0], [rows, cols])
                .with_tiles([4, 3])
                .with_iteration(order, order);
            parallel_for(
                "md-write",
                (policy, (right.write(), left.write())),
                |(ij, (r, l))| {
                    let [i, j] = *ij;
                    r.set(ij, (i * 100 + j) as i64);
                    l.set(ij, -((i * 100 + j) as i64));
                },
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
pub fn reader_neighbor_reads_stencil_points<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 17;
        let u: View<f64, 2> = View::from_slice(
            "u",
            [n, n],
            &(0..n * n).map(|k| ((k * 37) % 101) as f64).collect::<Vec<_>>(),
        )?;
        let out: View<f64, 2> = View::new("laplace", [n, n])?;
        let interior = MDRangePolicy::new(space.clone(), [1, 1], [n - 1, n - 1]).with_tiles([5, 3]);
        parallel_for(
            "laplace",
            (interior, (out.write(), u.read())),
            |(ij, (out, u))| {
                let around = u.neighbor(ij, [-1, 0])
                    + u.neighbor(ij, [1, 0])
                    + u.neighbor(ij, [0, -1])
                    + u.neighbor(ij, [0, 1]);
                out.set(ij, around - 4.0 * u.get(ij));
            },
        )?;
        let uh = u.host_read()?;
        let oh = out.host_read()?;
        for i in 0..n {
            for j in 0..n {
                let want = if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                    0.0
                } else {
                    uh.get([i - 1, j]) + uh.get([i + 1, j]) + uh.get([i, j - 1]) + uh.get([i, j + 1])
                        - 4.0 * uh.get([i, j])
                };
                ensure_eq!(oh.get([i, j]), want, "the stencil at [{i}, {j}]");
            }
        }
        Ok(())
    })
}

/// An atomic handle (captured by the kernel) scatter-adds from every iteration without
/// losing an update.
pub fn atomic_handle_scatter_adds_exactly<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 20_000;
        let bins: View<u64, 1> = View::new("histogram", [16])?;
        let sums: View<f64, 1> = View::new("bin-sums", [16])?;
        let (counts, totals) = (bins.atomic(), sums.atomic());
        parallel_for(
            "histogram",
            RangePolicy::new(space.clone(), 0..n).with_chunk_size(13),
            |i| {
                let bin = (*i * 7) % 16;
                counts.fetch_add(bin, 1);
                totals.fetch_add(bin, 0.5);
            },
        )?;
        drop((counts, totals));
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
pub fn writer_conflicts_with_reader_of_clone<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v: View<f64, 1> = View::new("shared", [64])?;
        let alias = v.clone();
        let reader = alias.read();
        expect_conflict(space, 64, (v.write(),), &["writer", "reader", "shared"])?;
        drop(reader);
        let writer = v.write();
        expect_conflict(space, 64, (alias.read(),), &["reader", "writer", "shared"])?;
        drop(writer);
        parallel_for(
            "after-conflict",
            (RangePolicy::new(space.clone(), 0..64), (v.write(),)),
            |(i, (v,))| v.set(i, 1.0),
        )?;
        ensure_eq!(
            alias.to_vec()?.iter().sum::<f64>(),
            64.0,
            "the view written after the conflicting handles were dropped"
        );
        Ok(())
    })
}

/// Two writers of one view conflict, also inside one launch's tuple.
pub fn two_writers_of_one_view_conflict<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v: View<i32, 1> = View::new("twice", [32])?;
        expect_conflict(space, 32, (v.write(), v.write()), &["writer", "twice"])
    })
}

/// An atomic handle conflicts with a writer, and readers with an atomic handle.
pub fn atomic_handle_conflicts_with_writer<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v: View<u32, 1> = View::new("mixed", [16])?;
        let atomic = v.atomic();
        expect_conflict(space, 16, (v.write(),), &["writer", "atomic handle", "mixed"])?;
        expect_conflict(space, 16, (v.read(),), &["reader", "atomic handle", "mixed"])?;
        drop(atomic);
        let writer = v.write();
        expect_conflict(space, 16, (v.atomic(),), &["atomic handle", "writer", "mixed"])?;
        drop(writer);
        Ok(())
    })
}

/// Writers of disjoint subviews of one view do not conflict: one launch writes both halves.
pub fn disjoint_subview_writers_do_not_conflict<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 1000;
        let v: View<i64, 1> = View::new("halves", [2 * n])?;
        let low: View<i64, 1> = v.subview([Slice::Range(0..n)])?;
        let high: View<i64, 1> = v.subview([Slice::Range(n..2 * n)])?;
        parallel_for(
            "halves",
            (RangePolicy::new(space.clone(), 0..n), (low.write(), high.write())),
            |(i, (lo, hi))| {
                lo.set(i, *i as i64);
                hi.set(i, -(*i as i64));
            },
        )?;
        let want: Vec<i64> = (0..n as i64).chain((0..n as i64).map(|i| -i)).collect();
        same(&v.to_vec()?, &want, || {
            "two halves written through disjoint subviews".to_owned()
        })?;
        let overlapping: View<i64, 1> = v.subview([Slice::Range(n - 1..2 * n - 1)])?;
        expect_conflict(
            space,
            n,
            (low.write(), overlapping.write()),
            &["writer", "halves"],
        )
    })
}

/// A launch whose tokens go past a handle's extent is `Error::OutOfExtent` naming the view,
/// and runs no iteration.
pub fn launch_past_the_extent_is_rejected<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let y: View<f64, 1> = View::new("short", [10])?;
        let runs = AtomicUsize::new(0);
        let result = parallel_for(
            "too-far",
            (RangePolicy::new(space.clone(), 0..11), (y.write(),)),
            |(i, (y,))| {
                runs.fetch_add(1, Ordering::Relaxed);
                y.set(i, 1.0);
            },
        );
        let err = expect_error(result, "a launch over 0..11 with a view of 10", |e| {
            matches!(e, Error::OutOfExtent { .. })
        })?;
        mentions(&err.to_string(), &["too-far", "short", "11", "10"])?;
        let m: View<f64, 2> = View::new("narrow", [4, 3])?;
        let result = parallel_reduce(
            "md-too-far",
            (MDRangePolicy::new(space.clone(), [0, 0], [4, 4]), (m.read(),)),
            |(ij, (m,)), acc: &mut f64| {
                runs.fetch_add(1, Ordering::Relaxed);
                *acc += m.get(ij);
            },
            Sum::new(),
        );
        let err = expect_error(result, "an MDRange launch over [4, 4] with a [4, 3] view", |e| {
            matches!(e, Error::OutOfExtent { dim: 1, .. })
        })?;
        mentions(&err.to_string(), &["md-too-far", "narrow"])?;
        ensure_eq!(
            runs.into_inner(),
            0,
            "iterations of launches refused for their extents"
        );
        parallel_for(
            "in-range",
            (RangePolicy::new(space.clone(), 0..10), (y.write(),)),
            |(i, (y,))| y.set(i, 2.0),
        )?;
        ensure_eq!(
            y.to_vec()?,
            vec![2.0; 10],
            "the view written by a launch within its extent"
        );
        Ok(())
    })
}

/// Handles handed to a launch are released when it returns, whether it succeeded, failed
/// validation or panicked: the host can borrow the view exclusively afterwards.
pub fn handles_are_released_after_the_launch<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let v: View<i32, 1> = View::new("released", [100])?;
        parallel_for(
            "ok",
            (RangePolicy::new(space.clone(), 0..100), (v.write(),)),
            |(i, (v,))| v.set(i, 1),
        )?;
        drop(v.host_write()?);
        let invalid = parallel_for(
            "invalid",
            (
                RangePolicy::new(space.clone(), 0..100).with_chunk_size(0),
                (v.write(),),
            ),
            |(i, (v,))| v.set(i, 2),
        );
        ensure!(
            matches!(invalid, Err(Error::ZeroChunk { .. })),
            "a launch with chunk size 0 gave {invalid:?}"
        );
        drop(v.host_write()?);
        let conflicted = parallel_for(
            "conflicted",
            (
                RangePolicy::new(space.clone(), 0..100),
                (v.write(), v.clone().read()),
            ),
            |(i, (w, _))| {
                w.set(i, 3);
            },
        );
        ensure!(
            matches!(conflicted, Err(Error::BorrowConflict { .. })),
            "a writer and a reader of one view gave {conflicted:?}"
        );
        drop(v.host_write()?);
        let panicked = parallel_for(
            "panics",
            (RangePolicy::new(space.clone(), 0..100), (v.write(),)),
            |(i, (w,))| {
                if *i == 57 {
                    panic!("conformance: deliberate panic holding a writer");
                }
                w.set(i, 4);
            },
        );
        ensure!(
            matches!(panicked, Err(Error::KernelPanicked { .. })),
            "a panicking kernel gave {panicked:?}"
        );
        let mut host = v.host_write()?;
        host.set(0, 5);
        drop(host);
        ensure_eq!(v.host_read()?.get(0), 5, "a host store after the launches");
        Ok(())
    })
}

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
