// Over 800 lines: the access model's launch tests share the serial helpers and one set of views.
//! The access model through launches on the serial backend: borrow conflicts (made directly
//! and handed to launches), disjoint subviews, released borrows, launch extents, and kernels
//! that read, write and update views through handles.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Error, LayoutLeft, LayoutStride, MDRangePolicy, RangePolicy, Slice, Sum, TeamMember, TeamPolicy,
    TeamThreadRange, View, parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_serial::Serial;

fn range(n: std::ops::Range<usize>) -> RangePolicy<Serial> {
    RangePolicy::new(Serial::default(), n)
}

fn md<const R: usize>(begin: [usize; R], end: [usize; R]) -> MDRangePolicy<Serial, R> {
    MDRangePolicy::new(Serial::default(), begin, end)
}

/// Asserts a borrow conflict of `kind` against a live `other_kind`, both naming `label`.
#[track_caller]
fn assert_conflict(err: &Error, label: &str, kind: &str, other_kind: &str) {
    match err {
        Error::BorrowConflict {
            label: l,
            kind: k,
            other_label: ol,
            other_kind: ok,
        } => {
            assert_eq!(
                (l.as_str(), *k, ol.as_str(), *ok),
                (label, kind, label, other_kind),
                "{err}"
            );
            let msg = err.to_string();
            assert_eq!(msg.matches(label).count(), 2, "both labels in: {msg}");
            assert!(msg.contains(kind) && msg.contains(other_kind), "{msg}");
        }
        other => panic!("expected BorrowConflict, got {other}"),
    }
}

// ---- conflicts when making handles -------------------------------------------------------

#[test]
fn two_writers_of_one_allocation_conflict() {
    let y: View<f64, 1> = View::new("c-ww", [8]).expect("alloc");
    let w1 = y.write();
    let w2 = y.clone().write();
    assert!(w1.conflict().is_none());
    assert_conflict(w2.conflict().expect("second writer"), "c-ww", "writer", "writer");
    // The Debug form shows the conflict too.
    assert!(format!("{w2:?}").contains("conflicts"), "{w2:?}");
}

#[test]
fn a_writer_and_a_reader_of_a_clone_conflict_either_way() {
    let y: View<i32, 2> = View::new("c-wr", [3, 3]).expect("alloc");
    let alias = y.clone();
    let w = y.write();
    assert_conflict(
        alias.read().conflict().expect("reader"),
        "c-wr",
        "reader",
        "writer",
    );
    drop(w);
    let r = alias.read();
    assert_conflict(y.write().conflict().expect("writer"), "c-wr", "writer", "reader");
    drop(r);
}

#[test]
fn overlapping_subviews_conflict_and_disjoint_ones_do_not() {
    let m: View<f64, 2> = View::new("c-sub", [4, 6]).expect("alloc");
    let top: View<f64, 2> = m.subview([Slice::Range(0..2), Slice::All]).expect("rows 0..2");
    let mid: View<f64, 2> = m.subview([Slice::Range(1..3), Slice::All]).expect("rows 1..3");
    let bottom: View<f64, 2> = m.subview([Slice::Range(2..4), Slice::All]).expect("rows 2..4");
    let col: View<f64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(5)]).expect("col 5");
    let w = top.write();
    assert_conflict(
        mid.read().conflict().expect("overlap"),
        "c-sub",
        "reader",
        "writer",
    );
    assert_conflict(
        col.read().conflict().expect("column crosses"),
        "c-sub",
        "reader",
        "writer",
    );
    let wb = bottom.write();
    assert!(wb.conflict().is_none(), "disjoint rows");
    // A column block beside the row blocks' footprints: left half vs right half.
    drop((w, wb));
    let left: View<f64, 2> = m.subview([Slice::All, Slice::Range(0..3)]).expect("left");
    let right: View<f64, 2> = m.subview([Slice::All, Slice::Range(3..6)]).expect("right");
    let (wl, wr) = (left.write(), right.write());
    assert!(wl.conflict().is_none() && wr.conflict().is_none());
    assert_conflict(
        col.write().conflict().expect("in right half"),
        "c-sub",
        "writer",
        "writer",
    );
    let one: View<f64, 0> = m.subview([Slice::Index(0), Slice::Index(2)]).expect("element");
    assert_conflict(
        one.atomic().conflict().expect("in left half"),
        "c-sub",
        "atomic handle",
        "writer",
    );
}

#[test]
fn a_writer_and_an_atomic_handle_conflict() {
    let h: View<u64, 1> = View::new("c-wa", [4]).expect("alloc");
    let w = h.write();
    assert_conflict(
        h.atomic().conflict().expect("atomic"),
        "c-wa",
        "atomic handle",
        "writer",
    );
    drop(w);
    let a = h.atomic();
    assert_conflict(
        h.write().conflict().expect("writer"),
        "c-wa",
        "writer",
        "atomic handle",
    );
    assert_conflict(
        h.read().conflict().expect("reader"),
        "c-wa",
        "reader",
        "atomic handle",
    );
    drop(a);
}

#[test]
fn readers_share_and_atomics_share() {
    let x: View<i64, 1> = View::from_slice("c-share", [3], &[1, 2, 3]).expect("alloc");
    let (r1, r2, r3) = (x.read(), x.clone().read(), x.read());
    assert!(r1.conflict().is_none() && r2.conflict().is_none() && r3.conflict().is_none());
    assert_eq!(r1.get(0) + r2.get(1) + r3.get(2), 6);
    assert!(x.host_read().is_ok(), "host reads beside readers");
    drop((r1, r2, r3));
    let (a1, a2) = (x.atomic(), x.atomic());
    assert!(a1.conflict().is_none() && a2.conflict().is_none());
    a1.fetch_add(0, 10);
    a2.fetch_add(0, 10);
    assert_eq!(a1.load(0), 21);
}

// ---- conflicts handed to launches ------------------------------------------------------

/// Runs a launch with `args` and checks it failed with a conflict and never ran the kernel.
#[track_caller]
fn assert_launch_conflict<A>(args: A, label: &str, kind: &str, other_kind: &str)
where
    A: hoplite_core::AccessibleArgs<Serial>,
{
    let calls = AtomicUsize::new(0);
    let err = parallel_for("conflicting", (range(0..4), args), |_| {
        calls.fetch_add(1, Ordering::Relaxed);
    })
    .expect_err("conflict");
    assert_conflict(&err, label, kind, other_kind);
    assert_eq!(calls.load(Ordering::Relaxed), 0, "the kernel must not run");
}

#[test]
fn conflicting_handles_fail_the_launch_before_the_kernel_runs() {
    let y: View<f64, 1> = View::new("l-ww", [4]).expect("alloc");
    assert_launch_conflict((y.write(), y.write()), "l-ww", "writer", "writer");
    let alias = y.clone();
    assert_launch_conflict((y.write(), alias.read()), "l-ww", "reader", "writer");
    assert_launch_conflict((alias.read(), y.write()), "l-ww", "writer", "reader");
    let m: View<f64, 2> = View::new("l-sub", [4, 4]).expect("alloc");
    let a: View<f64, 1> = m.subview([Slice::Index(1), Slice::All]).expect("row 1");
    let b: View<f64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(1)]).expect("col 1");
    assert_launch_conflict((a.write(), b.read()), "l-sub", "reader", "writer");
    let h: View<i64, 1> = View::new("l-wa", [4]).expect("alloc");
    assert_launch_conflict((h.write(), h.atomic()), "l-wa", "atomic handle", "writer");
    // A handle made before the launch conflicts with one in the tuple.
    let held = y.read();
    assert_launch_conflict((y.write(),), "l-ww", "writer", "reader");
    drop(held);
    // The same through parallel_reduce and parallel_scan.
    let w = y.write();
    let err = parallel_reduce(
        "r",
        (range(0..4), (y.read(),)),
        |_, acc: &mut f64| *acc += 1.0,
        Sum::new(),
    )
    .expect_err("reduce conflict");
    assert_conflict(&err, "l-ww", "reader", "writer");
    let err = parallel_scan("s", (range(0..4), (y.read(),)), |_, p: &mut i64, _| *p += 1).expect_err("scan");
    assert_conflict(&err, "l-ww", "reader", "writer");
    drop(w);
}

#[test]
fn disjoint_writers_run_in_one_launch() {
    // Two rows of a matrix.
    let m: View<i64, 2> = View::new("d-rows", [2, 5]).expect("alloc");
    let r0: View<i64, 1> = m.subview([Slice::Index(0), Slice::All]).expect("row 0");
    let r1: View<i64, 1> = m.subview([Slice::Index(1), Slice::All]).expect("row 1");
    parallel_for("rows", (range(0..5), (r0.write(), r1.write())), |(i, (a, b))| {
        a.set(i, *i as i64);
        b.set(i, 10 * *i as i64);
    })
    .expect("disjoint rows");
    assert_eq!(m.to_vec().expect("read"), [0, 1, 2, 3, 4, 0, 10, 20, 30, 40]);
    // Two column blocks, written over a 2-D range.
    let c: View<i64, 2> = View::new("d-cols", [3, 4]).expect("alloc");
    let left: View<i64, 2, LayoutStride> = c.subview([Slice::All, Slice::Range(0..2)]).expect("left");
    let right: View<i64, 2, LayoutStride> = c.subview([Slice::All, Slice::Range(2..4)]).expect("right");
    parallel_for(
        "cols",
        (md([0, 0], [3, 2]), (left.write(), right.write())),
        |(ij, (l, r))| {
            let [i, j] = *ij;
            l.set(ij, (10 * i + j) as i64);
            r.set(ij, -((10 * i + j) as i64));
        },
    )
    .expect("disjoint column blocks");
    assert_eq!(
        c.to_vec().expect("read"),
        [0, 1, 0, -1, 10, 11, -10, -11, 20, 21, -20, -21]
    );
    // The two halves of a 3-D view, with a reader of a third view beside them.
    let cube: View<i64, 3> = View::new("d-cube", [4, 2, 3]).expect("alloc");
    let lo: View<i64, 3> = cube
        .subview([Slice::Range(0..2), Slice::All, Slice::All])
        .expect("lo");
    let hi: View<i64, 3> = cube
        .subview([Slice::Range(2..4), Slice::All, Slice::All])
        .expect("hi");
    let src: View<i64, 3> = View::from_slice("d-src", [2, 2, 3], &(0..12).collect::<Vec<_>>()).expect("src");
    let extra_reader = src.read();
    parallel_for(
        "halves",
        (
            md([0, 0, 0], [2, 2, 3]),
            (lo.write(), hi.write(), src.read(), src.read()),
        ),
        |(p, (lo, hi, s1, s2))| {
            lo.set(p, s1.get(p));
            hi.set(p, 100 + s2.get(p) + extra_reader.get(p.get()));
        },
    )
    .expect("halves");
    let expected: Vec<i64> = (0..12).chain((0..12).map(|v| 100 + 2 * v)).collect();
    assert_eq!(cube.to_vec().expect("read"), expected);
}

#[test]
fn atomic_handles_share_a_launch() {
    let bins: View<u32, 1> = View::new("d-atomic", [3]).expect("alloc");
    let captured = bins.atomic();
    parallel_for(
        "two atomics",
        (range(0..30), (bins.atomic(), bins.atomic())),
        |(i, (a, b))| {
            a.fetch_add(*i % 3, 1);
            b.fetch_add(*i % 3, 1);
            captured.fetch_add(*i % 3, 1);
        },
    )
    .expect("atomics share");
    drop(captured);
    assert_eq!(bins.to_vec().expect("read"), [30, 30, 30]);
}

#[test]
fn borrows_are_released_with_handles_and_launches() {
    let y: View<f64, 1> = View::new("rel", [4]).expect("alloc");
    let r = y.read();
    assert!(y.write().conflict().is_some());
    drop(r);
    let w = y.write();
    assert!(w.conflict().is_none());
    drop(w);
    for round in 0..3 {
        parallel_for("again", (range(0..4), (y.write(),)), |(i, (y,))| {
            y.update(i, |v| v + 1.0)
        })
        .expect("a fresh writer per launch");
        assert_eq!(y.to_vec().expect("read"), [f64::from(round + 1); 4]);
    }
    let mut guard = y.host_write().expect("host writer after the launches");
    guard.set(0, -1.0);
    drop(guard);
    // A failed launch (a conflict in the tuple) releases the handles that did borrow.
    let left: View<f64, 1> = y.subview([Slice::Range(0..2)]).expect("left");
    let right: View<f64, 1> = y.subview([Slice::Range(2..4)]).expect("right");
    let blocker = right.atomic();
    let err =
        parallel_for("half", (range(0..2), (left.write(), right.read())), |_| ()).expect_err("conflict");
    assert_conflict(&err, "rel", "reader", "atomic handle");
    drop(blocker);
    assert!(y.write().conflict().is_none(), "nothing left borrowed");
}

#[test]
fn a_captured_reader_beside_a_writer_panics_in_the_kernel() {
    let y: View<f64, 1> = View::from_slice("cap", [4], &[1.0; 4]).expect("alloc");
    let w = y.write();
    let stale = y.read();
    assert!(stale.conflict().is_some());
    let err = parallel_for("captured", (range(0..4), (w,)), |(i, (w,))| {
        w.set(i, stale.get(i) + 1.0)
    })
    .expect_err("the captured reader refuses");
    match &err {
        Error::KernelPanicked { label, message } => {
            assert_eq!(label, "captured");
            assert!(
                message.contains("reader of view `cap` conflicts with a live writer of view `cap`"),
                "{message}"
            );
        }
        other => panic!("expected KernelPanicked, got {other}"),
    }
    drop(stale);
    // The writer went with the launch; the runtime is usable and the data untouched.
    assert_eq!(y.to_vec().expect("read"), [1.0; 4]);
    let h: View<i32, 1> = View::new("cap-atomic", [2]).expect("alloc");
    let w = h.write();
    let a = h.atomic();
    let err = parallel_for("captured atomic", (range(0..2), (w,)), |_| {
        a.fetch_add(0, 1);
    })
    .expect_err("the captured atomic handle refuses");
    assert!(
        err.to_string().contains("atomic handle of view `cap-atomic`"),
        "{err}"
    );
}

// ---- launch extents ----------------------------------------------------------------------

#[track_caller]
fn assert_out_of_extent(err: Error, launch: &str, view: &str, dim: usize, end: usize, extent: usize) {
    let msg = err.to_string();
    match err {
        Error::OutOfExtent {
            label,
            view: v,
            dim: d,
            end: e,
            extent: x,
        } => assert_eq!(
            (label.as_str(), v.as_str(), d, e, x),
            (launch, view, dim, end, extent)
        ),
        other => panic!("expected OutOfExtent, got {other}"),
    }
    for part in [
        launch,
        view,
        &dim.to_string(),
        &end.to_string(),
        &extent.to_string(),
    ] {
        assert!(msg.contains(part), "{part} in {msg}");
    }
}

#[test]
fn launches_past_a_handles_extent_fail() {
    let y: View<f64, 1> = View::new("ext-y", [10]).expect("alloc");
    let x: View<f64, 1> = View::new("ext-x", [8]).expect("alloc");
    let calls = AtomicUsize::new(0);
    let err = parallel_for("too-far", (range(2..11), (y.write(),)), |_| {
        calls.fetch_add(1, Ordering::Relaxed);
    })
    .expect_err("past y");
    assert_out_of_extent(err, "too-far", "ext-y", 0, 11, 10);
    let err = parallel_for("reader-short", (range(0..10), (y.write(), x.read())), |_| {
        calls.fetch_add(1, Ordering::Relaxed);
    })
    .expect_err("past x");
    assert_out_of_extent(err, "reader-short", "ext-x", 0, 10, 8);
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    // Each dimension of an MDRange.
    let m: View<i32, 3> = View::new("ext-m", [3, 4, 5]).expect("alloc");
    for d in 0..3 {
        let mut end = [3, 4, 5];
        end[d] += 1;
        let err = parallel_for("md-too-far", (md([1, 1, 1], end), (m.write(),)), |_| ()).expect_err("past m");
        assert_out_of_extent(err, "md-too-far", "ext-m", d, end[d], [3, 4, 5][d]);
        let err = parallel_reduce(
            "md-reader",
            (md([0, 0, 0], end), (m.read(),)),
            |_, _: &mut i32| (),
            Sum::new(),
        )
        .expect_err("past m");
        assert_out_of_extent(err, "md-reader", "ext-m", d, end[d], [3, 4, 5][d]);
    }
    // Empty launches check nothing; atomic handles are checked per access instead.
    parallel_for("empty", (range(20..20), (y.write(),)), |_| ()).expect("empty range");
    let m2: View<i32, 2> = View::new("ext-m2", [3, 4]).expect("alloc");
    parallel_for("empty-md", (md([0, 9], [3, 9]), (m2.write(),)), |_| ()).expect("empty box");
    parallel_for("atomic", (range(0..20), (x.atomic(),)), |_| ()).expect("atomic unchecked");
}

#[test]
fn launches_inside_the_extent_with_nonzero_begin_touch_only_their_range() {
    let y: View<i64, 1> = View::new("in-y", [6]).expect("alloc");
    parallel_for("tail", (range(3..6), (y.write(),)), |(i, (y,))| {
        y.set(i, *i as i64)
    })
    .expect("tail");
    assert_eq!(y.to_vec().expect("read"), [0, 0, 0, 3, 4, 5]);
    let m: View<i64, 2> = View::new("in-m", [3, 4]).expect("alloc");
    parallel_for("block", (md([1, 2], [3, 4]), (m.write(),)), |(ij, (m,))| {
        m.set(ij, (ij[0] * 10 + ij[1]) as i64)
    })
    .expect("block");
    assert_eq!(
        m.to_vec().expect("read"),
        [0, 0, 0, 0, 0, 0, 12, 13, 0, 0, 22, 23]
    );
}

// ---- kernels -----------------------------------------------------------------------------

#[test]
fn axpy() {
    let n = 257;
    let xs: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    let ys: Vec<f64> = (0..n).map(|i| 1.0 - i as f64).collect();
    let x: View<f64, 1> = View::from_slice("x", [n], &xs).expect("alloc");
    let y: View<f64, 1> = View::from_slice("y", [n], &ys).expect("alloc");
    let a = 3.0;
    parallel_for("axpy", (range(0..n), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, a * x.get(i) + y.get(i))
    })
    .expect("axpy");
    let expected: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| a * x + y).collect();
    assert_eq!(y.to_vec().expect("read"), expected);
}

#[test]
fn five_point_stencil_on_the_interior() {
    let (n, m) = (7, 9);
    let f = |i: usize, j: usize| ((i * 31 + j * 17) % 11) as f64 - 5.0;
    let data: Vec<f64> = (0..n * m).map(|k| f(k / m, k % m)).collect();
    let u: View<f64, 2> = View::from_slice("u", [n, m], &data).expect("alloc");
    let out: View<f64, 2> = View::new("lap", [n, m]).expect("alloc");
    let interior = md([1, 1], [n - 1, m - 1]).with_tiles([2, 3]);
    parallel_for(
        "laplace",
        (interior, (out.write(), u.read())),
        |(ij, (out, u))| {
            let [i, j] = *ij;
            let around = u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]);
            // A plain index is checked per access and may mix with tokens.
            out.set(ij, around + u.get([i, j + 1]) - 4.0 * u.get(ij));
        },
    )
    .expect("stencil");
    let mut expected = vec![0.0; n * m];
    for i in 1..n - 1 {
        for j in 1..m - 1 {
            expected[i * m + j] = f(i - 1, j) + f(i + 1, j) + f(i, j - 1) + f(i, j + 1) - 4.0 * f(i, j);
        }
    }
    assert_eq!(out.to_vec().expect("read"), expected);
    // A neighbour the launch does not leave room for panics inside the kernel.
    let err = parallel_for(
        "too-wide",
        (md([0, 1], [n, m - 1]), (out.write(), u.read())),
        |(ij, (o, u))| o.set(ij, u.neighbor(ij, [-1, 0])),
    )
    .expect_err("no room above row 0");
    assert!(
        matches!(&err, Error::KernelPanicked { message, .. } if message.contains("neighbor offset [-1, 0]")),
        "{err}"
    );
}

#[test]
fn histogram_with_atomic_handles() {
    let n = 1000;
    let nb = 7;
    let data: Vec<u64> = (0..n as u64).map(|i| (i * 7919 + 13) % 1009).collect();
    let values: View<u64, 1> = View::from_slice("values", [n], &data).expect("alloc");
    let bins: View<i64, 1> = View::new("bins", [nb]).expect("alloc");
    parallel_for(
        "hist",
        (range(0..n), (values.read(), bins.atomic())),
        |(i, (v, b))| {
            b.fetch_add((v.get(i) % nb as u64) as usize, 1);
        },
    )
    .expect("histogram");
    let mut expected = vec![0i64; nb];
    for v in &data {
        expected[(v % nb as u64) as usize] += 1;
    }
    assert_eq!(bins.to_vec().expect("read"), expected);
    assert_eq!(expected.iter().sum::<i64>(), n as i64);
}

#[test]
fn atomic_min_max_and_compare_exchange() {
    let vals: Vec<i64> = (0..50).map(|i| (i * 37 % 101) - 50).collect();
    let stats: View<i64, 1> = View::from_slice("stats-i", [3], &[i64::MAX, i64::MIN, 0]).expect("alloc");
    parallel_for("stats", (range(0..vals.len()), (stats.atomic(),)), |(i, (s,))| {
        s.fetch_min(0, vals[*i]);
        s.fetch_max(1, vals[*i]);
        // An increment by compare-and-swap.
        let mut cur = s.load(2);
        while let Err(now) = s.compare_exchange(2, cur, cur + vals[*i]) {
            cur = now;
        }
    })
    .expect("i64 stats");
    let (min, max) = (vals.iter().min().copied(), vals.iter().max().copied());
    assert_eq!(
        stats.to_vec().expect("read"),
        [
            min.expect("non-empty"),
            max.expect("non-empty"),
            vals.iter().sum::<i64>()
        ]
    );
    let fv: Vec<f64> = vals.iter().map(|&v| v as f64 * 0.25).collect();
    let fstats: View<f64, 1> =
        View::from_slice("stats-f", [3], &[f64::INFINITY, f64::NEG_INFINITY, 0.0]).expect("alloc");
    parallel_for("fstats", (range(0..fv.len()), (fstats.atomic(),)), |(i, (s,))| {
        s.fetch_min(0, fv[*i]);
        s.fetch_max(1, fv[*i]);
        let mut cur = s.load(2);
        while let Err(now) = s.compare_exchange(2, cur, cur + fv[*i]) {
            cur = now;
        }
    })
    .expect("f64 stats");
    let got = fstats.to_vec().expect("read");
    let fmin = fv.iter().copied().fold(f64::INFINITY, f64::min);
    let fmax = fv.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!((got[0], got[1]), (fmin, fmax));
    assert_eq!(got[2], fv.iter().sum::<f64>());
    let a = fstats.atomic();
    assert_eq!(
        a.compare_exchange(0, 1.0, 2.0),
        Err(fmin),
        "a failed exchange returns the value"
    );
    assert_eq!(a.compare_exchange(0, fmin, 2.0), Ok(fmin));
    a.store(1, -3.5);
    assert_eq!(
        (a.load(0), a.load(1), a.fetch_add(1, 1.0), a.load(1)),
        (2.0, -3.5, -3.5, -2.5)
    );
    let ai = stats.atomic();
    assert_eq!(ai.compare_exchange(0, 12345, 0), Err(min.expect("non-empty")));
}

#[test]
fn exclusive_scan_writes_offsets() {
    let counts: Vec<i64> = (0..40).map(|i| (i * 5 % 7) as i64).collect();
    let c: View<i64, 1> = View::from_slice("counts", [counts.len()], &counts).expect("alloc");
    let offsets: View<i64, 1> = View::new("offsets", [counts.len() + 1]).expect("alloc");
    let n = counts.len();
    let total: i64 = parallel_scan(
        "offsets",
        (range(0..n), (offsets.write(), c.read())),
        |(i, (o, c)), p, fin| {
            if fin {
                o.set(i, *p);
            }
            *p += c.get(i);
        },
    )
    .expect("scan");
    let mut expected = Vec::with_capacity(n + 1);
    let mut acc = 0;
    for &k in &counts {
        expected.push(acc);
        acc += k;
    }
    assert_eq!(total, acc);
    // The last slot lies outside the scan's range and stays untouched.
    expected.push(0);
    assert_eq!(offsets.to_vec().expect("read"), expected);
}

#[test]
fn reduce_reads_through_a_bound_reader() {
    let n = 64;
    let xs: Vec<f64> = (0..n).map(|i| (i % 9) as f64 - 4.0).collect();
    let x: View<f64, 1> = View::from_slice("rx", [n], &xs).expect("alloc");
    // Tokens (unchecked) and plain indices (checked) on one bound reader.
    let lag = parallel_reduce(
        "lag",
        (range(0..n), (x.read(),)),
        |(i, (x,)), acc: &mut f64| *acc += x.get(i) * x.get((*i + 1) % n),
        Sum::new(),
    )
    .expect("reduce");
    let expected: f64 = (0..n).map(|i| xs[i] * xs[(i + 1) % n]).sum();
    assert_eq!(lag, expected);
    let m: View<f64, 2> = View::from_slice("rm", [8, 8], &xs).expect("alloc");
    let trace = parallel_reduce(
        "trace",
        (md([0, 0], [8, 8]), (m.read(),)),
        |(ij, (m,)), acc: &mut f64| {
            if ij[0] == ij[1] {
                *acc += m.get(ij) + m.get([ij[1], ij[0]]);
            }
        },
        Sum::new(),
    )
    .expect("trace");
    assert_eq!(trace, 2.0 * (0..8).map(|i| xs[i * 9]).sum::<f64>());
    let err = parallel_reduce(
        "oob",
        (range(0..n), (x.read(),)),
        |(i, (x,)), acc: &mut f64| *acc += x.get(*i + 1),
        Sum::new(),
    )
    .expect_err("index n is out of bounds");
    match &err {
        Error::KernelPanicked { label, message } => {
            assert_eq!(label, "oob");
            assert!(
                message.contains("view `rx`: index [64] is out of bounds for extents [64]"),
                "{message}"
            );
        }
        other => panic!("expected KernelPanicked, got {other}"),
    }
    // The panic released the reader.
    assert!(x.write().conflict().is_none());
}

#[test]
fn nested_launches() {
    let outer: View<i64, 1> = View::new("outer", [3]).expect("alloc");
    let inner: View<i64, 2> = View::new("inner", [3, 4]).expect("alloc");
    let results: Mutex<Vec<String>> = Mutex::new(Vec::new());
    parallel_for("outer", (range(0..3), (outer.write(),)), |(i, (o,))| {
        // The inner launch over another view: its own writer, its own tokens.
        // Tokens are not `Send`/`Sync`: an inner kernel captures the plain index, not `i`.
        let base = *i as i64 * 10;
        let row: View<i64, 1> = inner.subview([Slice::Index(*i), Slice::All]).expect("row");
        let sum = parallel_reduce(
            "inner",
            (range(0..4), (row.write(),)),
            |(j, (r,)), acc: &mut i64| {
                r.set(j, base + *j as i64);
                *acc += r.get(j);
            },
            Sum::new(),
        )
        .expect("inner launch");
        o.set(i, sum);
        // A writer of the view the outer launch writes: refused by the inner launch.
        let err = parallel_for("inner-conflict", (range(0..3), (outer.write(),)), |_| ())
            .expect_err("outer holds the writer");
        results.lock().expect("lock").push(err.to_string());
    })
    .expect("outer launch");
    assert_eq!(outer.to_vec().expect("read"), [6, 46, 86]);
    assert_eq!(
        inner.to_vec().expect("read"),
        [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]
    );
    let results = results.into_inner().expect("lock");
    assert_eq!(results.len(), 3);
    for msg in results {
        assert!(
            msg.contains("writer of view `outer` conflicts with a live writer of view `outer`"),
            "{msg}"
        );
    }
}

// ---- team launches ---------------------------------------------------------------------

fn teams(league: usize) -> TeamPolicy<Serial> {
    TeamPolicy::new(Serial::default(), league, 1)
}

/// Asserts a kernel panic of launch `label` whose message names the view and the index.
#[track_caller]
fn assert_kernel_panic(err: Error, label: &str, needles: &[&str]) {
    match &err {
        Error::KernelPanicked { label: l, message } => {
            assert_eq!(l, label);
            for needle in needles {
                assert!(message.contains(needle), "{needle} in {message}");
            }
        }
        other => panic!("expected KernelPanicked, got {other}"),
    }
}

#[test]
fn team_rows_and_league_tokens_write_both_layouts() {
    let right: View<f64, 2> = View::new("right", [3, 20]).expect("alloc");
    let left: View<f64, 2, LayoutLeft> = View::new("left", [3, 20]).expect("alloc");
    let norms: View<f64, 1> = View::new("norms", [3]).expect("alloc");
    parallel_for(
        "rows",
        (teams(3), (right.write(), left.write(), norms.write())),
        |(m, (right, left, norms))| {
            let league = m.league_token();
            let (r, l) = (right.team_row(league), left.team_row(league));
            assert_eq!((r.row(), r.len(), r.is_empty()), (*league, 20, false));
            TeamThreadRange::new(m, 20).parallel_for(|j| {
                r.set(j, (*league * 100 + *j) as f64);
                l.set(j, r.get(j));
                l.update(j, |v| -v);
            });
            // A nested reduce's kernel runs on its thread, so it may capture the league token.
            let norm = TeamThreadRange::new(m, 20)
                .parallel_reduce(|j, acc: &mut f64| *acc += (*league * 100 + *j) as f64, Sum::new());
            if let Some(i) = league.single() {
                norms.set(i, norm);
                norms.update(i, |v| v + 0.5);
            }
        },
    )
    .expect("team launch");
    let r = right.host_read().expect("read");
    let l = left.host_read().expect("read");
    for i in 0..3 {
        for j in 0..20 {
            assert_eq!(
                (r.get([i, j]), l.get([i, j])),
                ((i * 100 + j) as f64, -((i * 100 + j) as f64))
            );
        }
    }
    let want: Vec<f64> = (0..3)
        .map(|i| (0..20).map(|j| (i * 100 + j) as f64).sum::<f64>() + 0.5)
        .collect();
    assert_eq!(norms.to_vec().expect("read"), want);
}

#[test]
fn team_tokens_past_the_extents_panic_with_the_view_and_leave_it_usable() {
    // A league larger than the view's rows: the team that has no row panics at `team_row`.
    let a: View<u32, 2> = View::new("short-rows", [2, 4]).expect("alloc");
    let err = parallel_for("too many teams", (teams(3), (a.write(),)), |(m, (a,))| {
        let row = a.team_row(m.league_token());
        TeamThreadRange::new(m, 4).parallel_for(|j| row.set(j, 1));
    })
    .expect_err("team 2 has no row");
    assert_kernel_panic(err, "too many teams", &["short-rows", "[2, 0]", "[2, 4]"]);
    // A team loop wider than the row panics at the first column past it.
    let err = parallel_for("too many columns", (teams(2), (a.write(),)), |(m, (a,))| {
        let row = a.team_row(m.league_token());
        TeamThreadRange::new(m, 5).parallel_for(|j| row.set(j, 2));
    })
    .expect_err("column 4 is past the row");
    assert_kernel_panic(err, "too many columns", &["short-rows", "[0, 4]"]);
    // A league token past a rank-1 writer's extent.
    let y: View<u32, 1> = View::new("short-y", [2]).expect("alloc");
    let err = parallel_for("league past y", (teams(3), (y.write(),)), |(m, (y,))| {
        if let Some(i) = m.league_token().single() {
            y.set(i, 7);
        }
    })
    .expect_err("team 2 has no element");
    assert_kernel_panic(err, "league past y", &["short-y", "[2]"]);
    // The borrows went with the launches; what was stored before the panic stays.
    assert_eq!(y.to_vec().expect("read"), [7, 7]);
    assert_eq!(a.to_vec().expect("read"), [2, 2, 2, 2, 1, 1, 1, 1]);
}

/// The expert escape hatch: `set_at`/`get_at` reach any index of the writer's view (a
/// transpose through a rank-2 writer here), and an index past the extents panics naming the
/// view, which the launch reports, leaving the view usable.
#[test]
fn writer_escape_hatch_scatters_and_checks_extents() {
    let n = 5;
    let a: View<u32, 2> = View::new("a", [n, n]).expect("a");
    let t: View<u32, 2> = View::new("t", [n, n]).expect("t");
    parallel_for("fill", (md([0, 0], [n, n]), (a.write(),)), |(ij, (a,))| {
        a.set(ij, (10 * ij[0] + ij[1]) as u32)
    })
    .expect("fill");
    parallel_for(
        "transpose",
        (md([0, 0], [n, n]), (t.write(), a.read())),
        |(ij, (t, a))| {
            let [i, j] = *ij;
            // SAFETY: (i, j) -> (j, i) is a bijection, so no two iterations store to one element,
            // and no iteration stores through its own token.
            unsafe { t.set_at([j, i], a.get(ij)) };
            // SAFETY: nobody but this iteration stores to t[j][i].
            assert_eq!(unsafe { t.get_at([j, i]) }, a.get(ij));
        },
    )
    .expect("transpose");
    let host = t.host_read().expect("t");
    for i in 0..n {
        for j in 0..n {
            assert_eq!(host.get([j, i]), (10 * i + j) as u32);
        }
    }
    drop(host);

    let err = parallel_for("past the end", (range(0..2), (t.write(),)), |(i, (t,))| {
        // SAFETY: distinct rows per iteration; the index is past the extents on purpose.
        unsafe { t.set_at([*i + n, 0], 1) }
    })
    .expect_err("out of bounds");
    match &err {
        Error::KernelPanicked { label, message } => {
            assert_eq!(label, "past the end");
            assert!(message.contains("`t`"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(t.to_vec().expect("usable").len(), n * n);
}

// ---- lookup handles and rank-0 writers ------------------------------------------------------

#[test]
fn a_lookup_table_reads_in_a_launch_wider_than_itself() {
    let coef: View<i64, 1> = View::from_slice("coef", [3], &[1, -2, 1]).expect("alloc");
    let y: View<i64, 1> = View::new("y", [100]).expect("alloc");
    // A reader of the table is refused: its extent does not cover the launch; the error says
    // what to use instead.
    let err = parallel_for(
        "poly",
        (range(0..100), (y.write(), coef.read())),
        |(i, (y, c))| y.set(i, c.get(0)),
    )
    .expect_err("the reader does not cover 0..100");
    assert!(err.to_string().contains(".lookup()"), "{err}");
    parallel_for(
        "poly",
        (range(0..100), (y.write(), coef.lookup())),
        |(i, (y, c))| {
            let x = *i as i64;
            y.set(i, c.get(0) + c.get(1) * x + c.get(2) * x * x);
        },
    )
    .expect("a lookup handle checks each access instead");
    let got = y.to_vec().expect("host");
    assert!(got.iter().enumerate().all(|(i, &v)| v == (i as i64 - 1).pow(2)));
    // Gathers through a lookup handle at token positions of a 2-d launch.
    let grid: View<i64, 2> = View::new("grid", [4, 5]).expect("alloc");
    parallel_for(
        "gather",
        (md([0, 0], [4, 5]), (grid.write(), coef.lookup())),
        |(ij, (g, c))| {
            let [i, j] = *ij;
            g.set(ij, c.get((i + j) % 3));
        },
    )
    .expect("gather");
    assert_eq!(grid.host_read().expect("host").get([3, 4]), coef.read().get(1));
}

#[test]
fn a_lookup_past_its_extent_is_a_kernel_panic_naming_the_view() {
    let table: View<f64, 1> = View::from_slice("table", [2], &[1.0, 2.0]).expect("alloc");
    let err = parallel_for("past", (range(0..5), (table.lookup(),)), |(i, (t,))| {
        let _ = t.get(i);
    })
    .expect_err("index 2 is past the table");
    assert!(matches!(err, Error::KernelPanicked { .. }), "{err}");
    assert!(err.to_string().contains("view `table`"), "{err}");
    // The borrow ended with the launch: a writer can be made again.
    assert!(table.write().conflict().is_none());
}

#[test]
fn a_lookup_conflicts_like_a_reader() {
    let t: View<u32, 1> = View::new("coefs", [4]).expect("alloc");
    let w = t.write();
    let l = t.lookup();
    assert_conflict(l.conflict().expect("refused"), "coefs", "reader", "writer");
    drop((w, l));
    let a = t.lookup();
    assert!(t.read().conflict().is_none(), "lookups share with readers");
    drop(a);
}

#[test]
fn a_rank_zero_view_is_stored_from_a_one_iteration_launch() {
    let total: View<f64, 0> = View::new("total", []).expect("alloc");
    let x: View<f64, 1> = View::from_slice("x", [4], &[1.0, 2.0, 3.0, 4.0]).expect("alloc");
    parallel_for(
        "store",
        (range(0..1), (total.write(), x.lookup())),
        |(i, (t, x))| {
            t.set(i, (0..4).map(|k| x.get(k)).sum());
        },
    )
    .expect("one iteration stores the one element");
    assert_eq!(total.host_read().expect("host").get([]), 10.0);
    // Two iterations would race on the element: refused before the kernel runs.
    let ran = AtomicUsize::new(0);
    let err = parallel_for("race", (range(3..5), (total.write(),)), |(i, (t,))| {
        ran.fetch_add(1, Ordering::Relaxed);
        t.set(i, 0.0);
    })
    .expect_err("two iterations");
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    match &err {
        Error::ScalarWriterInWideLaunch {
            label,
            view,
            iterations,
        } => assert_eq!((label.as_str(), view.as_str(), *iterations), ("race", "total", 2)),
        other => panic!("expected ScalarWriterInWideLaunch, got {other}"),
    }
    assert!(err.to_string().contains("parallel_reduce_into"), "{err}");
    // An empty launch stores nothing and is fine.
    parallel_for("none", (range(0..0), (total.write(),)), |(i, (t,))| {
        t.set(i, -1.0)
    })
    .expect("empty");
    assert_eq!(total.host_read().expect("host").get([]), 10.0);
}

#[test]
fn locked_atomics_on_a_sixteen_byte_struct() {
    #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, bytemuck::Zeroable)]
    struct Pair {
        key: u64,
        tag: u64,
    }
    impl hoplite_core::LockedAtomic for Pair {}
    let v: View<Pair, 1> = View::new("pairs", [2]).expect("alloc");
    let a = v.atomic();
    parallel_for("max", range(0..100), |i| {
        a.fetch_max(
            0,
            Pair {
                key: (*i as u64 * 37) % 101,
                tag: *i as u64,
            },
        );
    })
    .expect("fetch_max");
    assert_eq!(a.load(0), Pair { key: 100, tag: 30 });
    assert_eq!(
        a.compare_exchange(1, Pair::default(), Pair { key: 1, tag: 1 }),
        Ok(Pair::default())
    );
    assert_eq!(
        a.compare_exchange(1, Pair::default(), Pair { key: 2, tag: 2 }),
        Err(Pair { key: 1, tag: 1 })
    );
    a.store(1, Pair { key: 9, tag: 9 });
    assert_eq!(a.fetch_min(1, Pair { key: 3, tag: 0 }), Pair { key: 9, tag: 9 });
    drop(a);
    assert_eq!(v.to_vec().expect("host")[1], Pair { key: 3, tag: 0 });
}
