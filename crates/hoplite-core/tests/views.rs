// Over 800 lines: one test per view operation, beside the strides and offsets it computes itself.
//! Views: layouts, strides, subviews, deep_copy, mirrors, resize, rank-0 views and allocation
//! records. Expected strides and offsets are computed here independently of the library.

use hoplite_core::{
    ArrayLayout, Error, HostSpace, LayoutLeft, LayoutRight, LayoutStride, MemorySpace, Slice, View,
    create_mirror_view, create_mirror_view_and_copy, deep_copy, deep_copy_fill,
};

/// Small, unequal extents for rank `R` (at most 1296 elements at rank 8).
fn small_extents<const R: usize>() -> [usize; R] {
    std::array::from_fn(|d| if d % 2 == 0 { 2 } else { 3 })
}

/// Row-major strides: the product of the extents after each dimension.
fn right_strides<const R: usize>(e: [usize; R]) -> [usize; R] {
    std::array::from_fn(|d| e[d + 1..].iter().product())
}

/// Column-major strides: the product of the extents before each dimension.
fn left_strides<const R: usize>(e: [usize; R]) -> [usize; R] {
    std::array::from_fn(|d| e[..d].iter().product())
}

/// Padded row-major strides: every other element in the last dimension, one element of
/// padding after every other dimension.
fn padded_strides<const R: usize>(e: [usize; R]) -> [usize; R] {
    let mut s = [0; R];
    let mut next = 2;
    for d in (0..R).rev() {
        s[d] = next;
        next = next * e[d] + 1;
    }
    s
}

fn span_of<const R: usize>(e: [usize; R], s: [usize; R]) -> usize {
    if e.contains(&0) {
        return 0;
    }
    (0..R).map(|d| (e[d] - 1) * s[d]).sum::<usize>() + 1
}

fn offset_of<const R: usize>(index: [usize; R], s: [usize; R]) -> usize {
    (0..R).map(|d| index[d] * s[d]).sum()
}

/// Every multi-index of `e`, last index fastest.
fn all_indices<const R: usize>(e: [usize; R]) -> Vec<[usize; R]> {
    let total: usize = e.iter().product();
    let mut out = Vec::with_capacity(total);
    for mut n in 0..total {
        let mut idx = [0; R];
        for d in (0..R).rev() {
            idx[d] = n % e[d];
            n /= e[d];
        }
        out.push(idx);
    }
    out
}

/// A distinct, non-zero value per index (row-major position + 1).
fn tag<const R: usize>(index: [usize; R], e: [usize; R]) -> i64 {
    let pos = offset_of(index, right_strides(e));
    i64::try_from(pos).expect("small") + 1
}

fn check_contiguous_layout<const R: usize, L: ArrayLayout>(label: &str, expected_strides: [usize; R]) {
    let e = small_extents::<R>();
    let v: View<i64, R, L> = View::new(label, e).expect("alloc");
    let len: usize = e.iter().product();
    assert_eq!(v.extents(), e);
    assert_eq!(v.strides(), expected_strides, "{} rank {R}", L::NAME);
    assert_eq!((v.len(), v.span(), v.rank()), (len, len, R));
    assert!(v.is_contiguous() && !v.is_empty());
    assert_eq!(v.label(), label);
    {
        let mut w = v.host_write().expect("write");
        for idx in all_indices(e) {
            w.set(idx, tag(idx, e));
        }
    }
    // Contiguous: `to_vec` is memory order, so element `idx` sits at its stride offset.
    let mem = v.to_vec().expect("read");
    let r = v.host_read().expect("read");
    assert_eq!(r.as_slice().expect("contiguous"), &mem[..]);
    for idx in all_indices(e) {
        assert_eq!(mem[offset_of(idx, expected_strides)], tag(idx, e), "{idx:?}");
        assert_eq!(r.get(idx), tag(idx, e));
    }
}

fn check_strided_layout<const R: usize>() {
    let e = small_extents::<R>();
    let s = padded_strides(e);
    let v: View<i64, R, LayoutStride> = View::with_strides("padded", e, s).expect("alloc");
    assert_eq!((v.extents(), v.strides()), (e, s));
    assert_eq!(v.span(), span_of(e, s));
    assert!(!v.is_contiguous());
    assert!(v.host_read().expect("read").as_slice().is_none());
    {
        let mut w = v.host_write().expect("write");
        for idx in all_indices(e) {
            w.set(idx, tag(idx, e));
        }
    }
    // LayoutStride's own order is row-major by index.
    let expected: Vec<i64> = all_indices(e).into_iter().map(|i| tag(i, e)).collect();
    assert_eq!(v.to_vec().expect("read"), expected);
    // Natural row-major strides in LayoutStride are contiguous.
    let c: View<i64, R, LayoutStride> = View::with_strides("natural", e, right_strides(e)).expect("alloc");
    assert!(c.is_contiguous());
    assert_eq!(c.span(), c.len());
}

#[test]
fn layout_right_strides_and_placement_on_ranks_1_to_8() {
    check_contiguous_layout::<1, LayoutRight>("r1", right_strides(small_extents::<1>()));
    check_contiguous_layout::<2, LayoutRight>("r2", right_strides(small_extents::<2>()));
    check_contiguous_layout::<3, LayoutRight>("r3", right_strides(small_extents::<3>()));
    check_contiguous_layout::<4, LayoutRight>("r4", right_strides(small_extents::<4>()));
    check_contiguous_layout::<5, LayoutRight>("r5", right_strides(small_extents::<5>()));
    check_contiguous_layout::<6, LayoutRight>("r6", right_strides(small_extents::<6>()));
    check_contiguous_layout::<7, LayoutRight>("r7", right_strides(small_extents::<7>()));
    check_contiguous_layout::<8, LayoutRight>("r8", right_strides(small_extents::<8>()));
    assert_eq!(right_strides([2, 3, 2, 3]), [18, 6, 3, 1]);
}

#[test]
fn layout_left_strides_and_placement_on_ranks_1_to_8() {
    check_contiguous_layout::<1, LayoutLeft>("l1", left_strides(small_extents::<1>()));
    check_contiguous_layout::<2, LayoutLeft>("l2", left_strides(small_extents::<2>()));
    check_contiguous_layout::<3, LayoutLeft>("l3", left_strides(small_extents::<3>()));
    check_contiguous_layout::<4, LayoutLeft>("l4", left_strides(small_extents::<4>()));
    check_contiguous_layout::<5, LayoutLeft>("l5", left_strides(small_extents::<5>()));
    check_contiguous_layout::<6, LayoutLeft>("l6", left_strides(small_extents::<6>()));
    check_contiguous_layout::<7, LayoutLeft>("l7", left_strides(small_extents::<7>()));
    check_contiguous_layout::<8, LayoutLeft>("l8", left_strides(small_extents::<8>()));
    assert_eq!(left_strides([2, 3, 2, 3]), [1, 2, 6, 12]);
}

#[test]
fn layout_stride_views_on_ranks_1_to_8() {
    check_strided_layout::<1>();
    check_strided_layout::<2>();
    check_strided_layout::<3>();
    check_strided_layout::<4>();
    check_strided_layout::<5>();
    check_strided_layout::<6>();
    check_strided_layout::<7>();
    check_strided_layout::<8>();
    assert_eq!(padded_strides([2, 3]), [7, 2]);
}

#[test]
fn with_strides_rejects_aliasing_and_wrong_layouts() {
    let err = View::<i32, 2, LayoutStride>::with_strides("alias", [3, 3], [1, 2]).expect_err("aliases");
    assert!(
        matches!(&err, Error::InvalidLayout { label, .. } if label == "alias"),
        "{err}"
    );
    let err = View::<i32, 2, LayoutLeft>::with_strides("notleft", [3, 3], [3, 1]).expect_err("not left");
    assert!(err.to_string().contains("LayoutLeft"), "{err}");
    // A padded LayoutRight (rows of a wider matrix) is fine.
    let v = View::<i32, 2, LayoutRight>::with_strides("pad", [3, 3], [4, 1]).expect("padded right");
    assert_eq!((v.span(), v.is_contiguous()), (11, false));
    let err = View::<i32, 2, LayoutStride>::with_strides("ovf", [1 << 40, 1 << 40], [1 << 40, 1])
        .expect_err("overflow");
    assert!(matches!(err, Error::InvalidLayout { .. }), "{err}");
}

/// Fixes one index at every dimension position (the rest as ranges starting at 1 where the
/// extent allows), writes through the subview and reads the parent.
fn check_fixed_index_subviews<const R: usize, const Q: usize, L: ArrayLayout>(parent: &View<i64, R, L>) {
    assert_eq!(Q + 1, R);
    let e = parent.extents();
    let ps = parent.strides();
    for p in 0..R {
        deep_copy_fill(parent, 0).expect("clear");
        let k = e[p] - 1;
        let lo: [usize; R] = std::array::from_fn(|d| usize::from(d != p && e[d] > 1));
        let slices: [Slice; R] = std::array::from_fn(|d| {
            if d == p {
                Slice::Index(k)
            } else if lo[d] == 0 {
                Slice::All
            } else {
                Slice::Range(lo[d]..e[d])
            }
        });
        let sub: View<i64, Q, LayoutStride> = parent.subview(slices).expect("subview");
        let kept: Vec<usize> = (0..R).filter(|&d| d != p).collect();
        let se: [usize; Q] = std::array::from_fn(|j| e[kept[j]] - lo[kept[j]]);
        let ss: [usize; Q] = std::array::from_fn(|j| ps[kept[j]]);
        assert_eq!((sub.extents(), sub.strides()), (se, ss), "position {p}");
        assert!(sub.same_allocation(parent));
        {
            let mut w = sub.host_write().expect("write sub");
            for j in all_indices(se) {
                w.set(j, tag(j, se));
            }
        }
        let to_parent = |j: [usize; Q]| -> [usize; R] {
            std::array::from_fn(|d| match d.cmp(&p) {
                std::cmp::Ordering::Less => j[d] + lo[d],
                std::cmp::Ordering::Equal => k,
                std::cmp::Ordering::Greater => j[d - 1] + lo[d],
            })
        };
        let r = parent.host_read().expect("read parent");
        let mut touched = 0;
        for j in all_indices(se) {
            assert_eq!(r.get(to_parent(j)), tag(j, se), "position {p}, sub index {j:?}");
            touched += 1;
        }
        // Nothing outside the subview was written.
        let nonzero = all_indices(e).into_iter().filter(|&i| r.get(i) != 0).count();
        assert_eq!(nonzero, touched, "position {p}");
    }
}

/// A range on one dimension at a time (rank kept), checked through the parent's memory.
fn check_range_subviews<const R: usize, L: ArrayLayout>(parent: &View<i64, R, L>) {
    let e = parent.extents();
    for p in 0..R {
        deep_copy_fill(parent, 0).expect("clear");
        let lo = e[p] - 1;
        let slices: [Slice; R] = std::array::from_fn(|d| {
            if d == p {
                Slice::Range(lo..e[p])
            } else {
                Slice::All
            }
        });
        let sub: View<i64, R, LayoutStride> = parent.subview(slices).expect("subview");
        let se: [usize; R] = std::array::from_fn(|d| if d == p { 1 } else { e[d] });
        assert_eq!((sub.extents(), sub.strides()), (se, parent.strides()));
        {
            let mut w = sub.host_write().expect("write");
            for j in all_indices(se) {
                w.set(j, tag(j, se));
            }
        }
        let r = parent.host_read().expect("read");
        for j in all_indices(se) {
            let mut i = j;
            i[p] += lo;
            assert_eq!(r.get(i), tag(j, se));
        }
    }
}

fn check_subviews_all_layouts<const R: usize, const Q: usize>() {
    let e = small_extents::<R>();
    let right: View<i64, R> = View::new("sub-right", e).expect("alloc");
    let left: View<i64, R, LayoutLeft> = View::new("sub-left", e).expect("alloc");
    let stride: View<i64, R, LayoutStride> =
        View::with_strides("sub-stride", e, padded_strides(e)).expect("alloc");
    check_fixed_index_subviews::<R, Q, _>(&right);
    check_fixed_index_subviews::<R, Q, _>(&left);
    check_fixed_index_subviews::<R, Q, _>(&stride);
    check_range_subviews(&right);
    check_range_subviews(&left);
    check_range_subviews(&stride);
}

#[test]
fn subviews_with_fixed_indices_and_ranges_on_every_position() {
    check_subviews_all_layouts::<1, 0>();
    check_subviews_all_layouts::<2, 1>();
    check_subviews_all_layouts::<3, 2>();
    check_subviews_all_layouts::<4, 3>();
    check_subviews_all_layouts::<5, 4>();
    check_subviews_all_layouts::<6, 5>();
    check_subviews_all_layouts::<7, 6>();
    check_subviews_all_layouts::<8, 7>();
}

#[test]
fn subview_of_a_subview_composes_offsets() {
    let m: View<i64, 3> = View::new("cube", [4, 5, 6]).expect("alloc");
    let block: View<i64, 3, LayoutStride> = m
        .subview([Slice::Range(1..4), Slice::Range(2..5), Slice::Range(1..6)])
        .expect("block");
    let plane: View<i64, 2, LayoutStride> = block
        .subview([Slice::Index(1), Slice::All, Slice::Range(2..5)])
        .expect("plane");
    let line: View<i64, 1, LayoutStride> = plane
        .subview([Slice::Range(1..3), Slice::Index(2)])
        .expect("line");
    assert_eq!((plane.extents(), plane.strides()), ([3, 3], [6, 1]));
    assert_eq!((line.extents(), line.strides()), ([2], [6]));
    {
        let mut w = line.host_write().expect("write");
        w.set(0, 10);
        w.set(1, 11);
    }
    // line[j] = plane[1 + j, 2] = block[1, 1 + j, 2 + 2] = m[1 + 1, 2 + 1 + j, 1 + 4].
    let mem = m.to_vec().expect("read");
    assert_eq!(mem[offset_of([2, 3, 5], [30, 6, 1])], 10);
    assert_eq!(mem[offset_of([2, 4, 5], [30, 6, 1])], 11);
    assert_eq!(mem.iter().filter(|&&v| v != 0).count(), 2);
    // A row of a LayoutRight matrix stays LayoutRight, also through a block.
    let row: View<i64, 1> = plane.subview([Slice::Index(0), Slice::All]).expect("row");
    assert_eq!((row.strides(), row.is_contiguous()), ([1], true));
}

#[test]
fn empty_subviews_have_no_elements_and_borrow_nothing() {
    let m: View<f64, 2> = View::from_slice("emp", [3, 4], &[1.0; 12]).expect("alloc");
    for slices in [
        [Slice::Range(2..2), Slice::All],
        [Slice::Range(3..3), Slice::All],
        [Slice::All, Slice::Range(4..4)],
        [Slice::Range(0..0), Slice::Range(0..0)],
    ] {
        let e: View<f64, 2, LayoutStride> = m.subview(slices.clone()).expect("empty subview");
        assert!(e.is_empty(), "{slices:?}");
        assert_eq!((e.len(), e.span()), (0, 0));
        assert_eq!(e.to_vec().expect("read"), Vec::<f64>::new());
        // An empty writer never conflicts, not even with a writer of the whole.
        let whole = m.write();
        let w = e.write();
        assert!(whole.conflict().is_none() && w.conflict().is_none(), "{slices:?}");
        let inner: View<f64, 2, LayoutStride> =
            e.subview([Slice::All, Slice::All]).expect("subview of empty");
        assert!(inner.is_empty());
    }
    // A view with no elements at all.
    let e: View<f64, 1> = View::new("nothing", [0]).expect("alloc");
    assert_eq!((e.to_vec().expect("read"), e.span()), (vec![], 0));
}

#[test]
fn subview_errors_name_the_view_dimension_and_extent() {
    let m: View<i32, 3> = View::new("errs", [2, 3, 4]).expect("alloc");
    let check = |err: Error, dim: usize, begin: usize, end: usize| match &err {
        Error::SubviewOutOfBounds {
            label,
            dim: d,
            begin: b,
            end: en,
            extent,
            ..
        } => {
            assert_eq!((label.as_str(), *d, *b, *en), ("errs", dim, begin, end), "{err}");
            assert_eq!(*extent, [2, 3, 4][dim]);
            assert!(err.to_string().contains("errs"), "{err}");
        }
        other => panic!("expected SubviewOutOfBounds, got {other}"),
    };
    let range_past_end = m.subview::<3, LayoutStride>([Slice::All, Slice::All, Slice::Range(0..5)]);
    check(range_past_end.expect_err("range past the end"), 2, 0, 5);
    let reversed = m.subview::<3, LayoutStride>([
        Slice::All,
        Slice::Range(std::ops::Range { start: 2, end: 1 }),
        Slice::All,
    ]);
    check(reversed.expect_err("reversed range"), 1, 2, 1);
    let index_at_end = m.subview::<2, LayoutStride>([Slice::Index(2), Slice::All, Slice::All]);
    check(index_at_end.expect_err("index == extent"), 0, 2, 3);
    let index_max = m.subview::<2, LayoutStride>([Slice::All, Slice::Index(usize::MAX), Slice::All]);
    check(index_max.expect_err("huge index"), 1, usize::MAX, usize::MAX);
    let err = m
        .subview::<2, LayoutStride>([Slice::Index(0), Slice::Index(0), Slice::All])
        .expect_err("rank");
    assert!(
        matches!(
            err,
            Error::RankMismatch {
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("errs"), "{err}");
    // A column of a LayoutRight matrix is not LayoutRight; a row of a LayoutLeft one is not
    // LayoutLeft; the column of a LayoutLeft matrix is.
    let mr: View<i32, 2> = View::new("mr", [3, 4]).expect("alloc");
    let err = mr
        .subview::<1, LayoutRight>([Slice::All, Slice::Index(1)])
        .expect_err("column is strided");
    assert!(
        matches!(&err, Error::InvalidLayout { label, .. } if label == "mr"),
        "{err}"
    );
    assert!(err.to_string().contains("LayoutStride"), "{err}");
    let ml: View<i32, 2, LayoutLeft> = View::new("ml", [3, 4]).expect("alloc");
    let err = ml
        .subview::<1, LayoutLeft>([Slice::Index(1), Slice::All])
        .expect_err("row is strided");
    assert!(matches!(err, Error::InvalidLayout { .. }), "{err}");
    let col: View<i32, 1, LayoutLeft> = ml.subview([Slice::All, Slice::Index(1)]).expect("column");
    assert_eq!((col.strides(), col.is_contiguous()), ([1], true));
}

fn check_deep_copy_round_trip<const R: usize>() {
    let e = small_extents::<R>();
    let data: Vec<i64> = all_indices(e).into_iter().map(|i| tag(i, e)).collect();
    let right: View<i64, R> = View::from_slice("rt-right", e, &data).expect("alloc");
    let left: View<i64, R, LayoutLeft> = View::new("rt-left", e).expect("alloc");
    deep_copy(&left, &right).expect("right to left");
    // Left's own order is column-major: element i of to_vec sits at the left offset.
    let lmem = left.to_vec().expect("read");
    for idx in all_indices(e) {
        assert_eq!(
            lmem[offset_of(idx, left_strides(e))],
            tag(idx, e),
            "rank {R} {idx:?}"
        );
    }
    let back: View<i64, R> = View::new("rt-back", e).expect("alloc");
    deep_copy(&back, &left).expect("left to right");
    assert_eq!(back.to_vec().expect("read"), data, "rank {R}");
    let strided: View<i64, R, LayoutStride> =
        View::with_strides("rt-stride", e, padded_strides(e)).expect("alloc");
    deep_copy(&strided, &left).expect("left to strided");
    assert_eq!(strided.to_vec().expect("read"), data, "rank {R}");
}

#[test]
fn deep_copy_round_trips_between_layouts_on_ranks_1_to_8() {
    check_deep_copy_round_trip::<1>();
    check_deep_copy_round_trip::<2>();
    check_deep_copy_round_trip::<3>();
    check_deep_copy_round_trip::<4>();
    check_deep_copy_round_trip::<5>();
    check_deep_copy_round_trip::<6>();
    check_deep_copy_round_trip::<7>();
    check_deep_copy_round_trip::<8>();
}

#[test]
fn deep_copy_between_subviews_and_contiguous_views() {
    let m: View<f64, 2> =
        View::from_slice("mat", [3, 4], &(0..12).map(f64::from).collect::<Vec<_>>()).expect("alloc");
    let col: View<f64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(2)]).expect("column");
    let buf: View<f64, 1> = View::new("buf", [3]).expect("alloc");
    deep_copy(&buf, &col).expect("column out");
    assert_eq!(buf.to_vec().expect("read"), [2.0, 6.0, 10.0]);
    deep_copy_fill(&buf, -1.0).expect("fill");
    deep_copy(&col, &buf).expect("column in");
    let mem = m.to_vec().expect("read");
    assert_eq!((mem[2], mem[6], mem[10], mem[3]), (-1.0, -1.0, -1.0, 3.0));
    // A 2x2 block into a LayoutLeft view and back into another block.
    let block: View<f64, 2, LayoutStride> = m
        .subview([Slice::Range(0..2), Slice::Range(0..2)])
        .expect("block");
    let dst: View<f64, 2, LayoutLeft> = View::new("dst", [2, 2]).expect("alloc");
    deep_copy(&dst, &block).expect("block out");
    assert_eq!(dst.to_vec().expect("read"), [0.0, 4.0, 1.0, 5.0]);
    let other: View<f64, 2, LayoutStride> = m
        .subview([Slice::Range(1..3), Slice::Range(2..4)])
        .expect("other block");
    deep_copy(&other, &dst).expect("block in");
    let mem = m.to_vec().expect("read");
    assert_eq!([mem[6], mem[7], mem[10], mem[11]], [0.0, 1.0, 4.0, 5.0]);
}

#[test]
fn deep_copy_extent_mismatch_names_both_views() {
    let a: View<u32, 2> = View::new("dst-a", [2, 3]).expect("alloc");
    let b: View<u32, 2, LayoutLeft> = View::from_slice("src-b", [3, 2], &[7; 6]).expect("alloc");
    let err = deep_copy(&a, &b).expect_err("mismatch");
    let msg = err.to_string();
    assert!(
        msg.contains("dst-a") && msg.contains("src-b") && msg.contains("[2, 3]") && msg.contains("[3, 2]"),
        "{msg}"
    );
    assert!(
        matches!(
            err,
            Error::ExtentMismatch {
                what: "deep_copy",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(a.to_vec().expect("read"), [0; 6], "dst untouched");
    // A live writer of the source or handle of the destination is a conflict.
    let c: View<u32, 2> = View::new("dst-c", [3, 2]).expect("alloc");
    let w = b.write();
    let err = deep_copy(&c, &b).expect_err("source is being written");
    assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
    drop(w);
    let r = c.read();
    let err = deep_copy(&c, &b).expect_err("destination is being read");
    assert!(
        matches!(err, Error::BorrowConflict { kind: "writer", .. }),
        "{err}"
    );
    drop(r);
    deep_copy(&c, &b).expect("free again");
    assert_eq!(c.to_vec().expect("read"), [7; 6]);
}

#[test]
fn fill_and_mirrors() {
    let v: View<f32, 2, LayoutLeft> = View::new("mir", [2, 2]).expect("alloc");
    deep_copy_fill(&v, 2.5).expect("fill");
    assert_eq!(v.to_vec().expect("read"), [2.5; 4]);
    let m = create_mirror_view(&v).expect("mirror");
    assert!(m.same_allocation(&v));
    assert_eq!((m.label(), m.extents(), m.strides()), ("mir", [2, 2], [1, 2]));
    m.host_write().expect("write").set([1, 0], 9.0);
    assert_eq!(v.host_read().expect("read").get([1, 0]), 9.0);
    let c = create_mirror_view_and_copy(&v).expect("mirror and copy");
    assert!(c.same_allocation(&v));
    assert_eq!(c.to_vec().expect("read"), [2.5, 9.0, 2.5, 2.5]);
    // Filling a subview fills only its elements.
    let row: View<f32, 1, LayoutStride> = v.subview([Slice::Index(0), Slice::All]).expect("row");
    deep_copy_fill(&row, 0.0).expect("fill row");
    assert_eq!(v.to_vec().expect("read"), [0.0, 9.0, 0.0, 2.5]);
    let _w = v.write();
    let err = deep_copy_fill(&v, 1.0).expect_err("writer alive");
    assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
}

#[test]
fn resize_keeps_overlap_and_realloc_clears() {
    let mut v: View<i32, 2> = View::from_slice("rs", [2, 3], &[1, 2, 3, 4, 5, 6]).expect("alloc");
    let old = v.clone();
    v.resize([3, 2]).expect("reshape");
    assert_eq!((v.label(), v.extents()), ("rs", [3, 2]));
    assert_eq!(v.to_vec().expect("read"), [1, 2, 4, 5, 0, 0]);
    assert!(!v.same_allocation(&old));
    assert_eq!(
        old.to_vec().expect("read"),
        [1, 2, 3, 4, 5, 6],
        "clones keep the old data"
    );
    v.resize([4, 4]).expect("grow");
    assert_eq!(
        v.to_vec().expect("read"),
        [1, 2, 0, 0, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    v.resize([1, 1]).expect("shrink");
    assert_eq!(v.to_vec().expect("read"), [1]);
    v.resize([0, 3]).expect("to empty");
    assert!(v.is_empty());
    v.resize([2, 2]).expect("from empty");
    assert_eq!(v.to_vec().expect("read"), [0; 4]);
    let mut l: View<i32, 2, LayoutLeft> = View::from_slice("rl", [2, 2], &[1, 2, 3, 4]).expect("alloc");
    l.resize([3, 2]).expect("left grows");
    // Column-major: [1, 2] is column 0, [3, 4] column 1.
    assert_eq!(l.to_vec().expect("read"), [1, 2, 0, 3, 4, 0]);
    let keep = l.clone();
    l.realloc([2, 5]).expect("realloc");
    assert_eq!((l.extents(), l.to_vec().expect("read")), ([2, 5], vec![0; 10]));
    assert_eq!(keep.to_vec().expect("read"), [1, 2, 0, 3, 4, 0]);
    // Resizing while a clone is being written is a conflict; the handle keeps its data.
    let mut r: View<i32, 1> = View::from_slice("rw", [2], &[5, 6]).expect("alloc");
    let w = r.clone().write();
    let err = r.resize([3]).expect_err("writer alive");
    assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
    assert_eq!(r.extents(), [2]);
    drop(w);
    r.resize([3]).expect("free");
    assert_eq!(r.to_vec().expect("read"), [5, 6, 0]);
}

#[test]
fn from_slice_checks_the_length() {
    let err = View::<u8, 2>::from_slice("short", [2, 3], &[1, 2, 3]).expect_err("length");
    let msg = err.to_string();
    assert!(
        msg.contains("short") && msg.contains("[2, 3]") && msg.contains("[3]"),
        "{msg}"
    );
    assert!(matches!(err, Error::ExtentMismatch { .. }), "{err}");
    let v: View<u8, 2, LayoutLeft> = View::from_slice("cm", [2, 3], &[1, 2, 3, 4, 5, 6]).expect("alloc");
    // The data is in the view's own (column-major) order.
    assert_eq!(v.host_read().expect("read").get([0, 1]), 3);
}

#[test]
fn rank_zero_views() {
    let s: View<f64, 0> = View::new("scalar", []).expect("alloc");
    assert_eq!(
        (s.len(), s.span(), s.rank(), s.extents(), s.extent(0)),
        (1, 1, 0, [], 1)
    );
    assert!(s.is_contiguous() && !s.is_empty());
    s.host_write().expect("write").set([], 4.5);
    assert_eq!((s.to_vec().expect("read"), s.read().get([])), (vec![4.5], 4.5));
    let t: View<f64, 0> = View::new("copy", []).expect("alloc");
    deep_copy(&t, &s).expect("scalar copy");
    assert_eq!(t.host_read().expect("read").get([]), 4.5);
    // A rank-0 subview is one element of its parent.
    let m: View<i64, 2> = View::new("m0", [3, 3]).expect("alloc");
    let e: View<i64, 0> = m.subview([Slice::Index(2), Slice::Index(1)]).expect("element");
    assert!(e.same_allocation(&m));
    e.host_write().expect("write").set([], 7);
    assert_eq!(m.to_vec().expect("read")[7], 7);
    let a: View<i64, 0> = View::new("a0", []).expect("alloc");
    let h = a.atomic();
    assert_eq!((h.fetch_add([], 3), h.fetch_max([], 10), h.load([])), (0, 3, 10));
}

#[test]
fn conflicting_rank_zero_handles_do_not_reach_the_element() {
    let s: View<f64, 0> = View::new("held0", []).expect("alloc");
    let w = s.host_write().expect("write");
    let r = s.read();
    let err = r.conflict().expect("conflict").to_string();
    assert!(err.contains("held0"), "{err}");
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.get([]))).expect_err("refused");
    let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("conflicts with a live writer"), "{msg}");
    let c: View<i64, 0> = View::new("held0-atomic", []).expect("alloc");
    let cw = c.host_write().expect("write");
    let a = c.atomic();
    assert!(a.conflict().is_some());
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a.fetch_add([], 1))).expect_err("refused");
    let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("held0-atomic"), "{msg}");
    drop((w, cw));
}

#[test]
fn records_list_live_views_with_label_and_bytes() {
    let label = "views-test-record-7f3a";
    let v: View<f64, 2> = View::new(label, [16, 8]).expect("alloc");
    let records = HostSpace.records().snapshot();
    let mine: Vec<_> = records.iter().filter(|r| r.label == label).collect();
    assert_eq!(mine.len(), 1, "{records:?}");
    assert_eq!(mine[0].bytes, 16 * 8 * 8);
    assert!(HostSpace.current_bytes() >= 1024);
    assert!(HostSpace.current_bytes() <= HostSpace.high_water_bytes());
    let mut out = Vec::new();
    HostSpace.print_records(&mut out, false).expect("print");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.starts_with("HostSpace: "), "{text}");
    let line = text.lines().find(|l| l.ends_with(label)).expect("listed");
    assert!(line.contains("1024 bytes"), "{line}");
    let mut out = Vec::new();
    HostSpace.print_records(&mut out, true).expect("print detail");
    let text = String::from_utf8(out).expect("utf-8");
    let line = text.lines().find(|l| l.ends_with(label)).expect("listed");
    assert!(line.contains("0x") && line.contains("1024 bytes"), "{line}");
    // Clones and subviews share the record; it goes with the last handle.
    let sub: View<f64, 1> = v.subview([Slice::Index(3), Slice::All]).expect("row");
    drop(v);
    assert!(HostSpace.records().snapshot().iter().any(|r| r.label == label));
    drop(sub);
    assert!(!HostSpace.records().snapshot().iter().any(|r| r.label == label));
    let mut out = Vec::new();
    HostSpace.print_records(&mut out, false).expect("print");
    assert!(!String::from_utf8_lossy(&out).contains(label));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "Miri stops at an allocation it cannot make instead of returning null"
)]
fn failed_and_overflowing_allocations_are_errors() {
    let err = View::<u8, 1>::new("huge", [1 << 62]).expect_err("2^62 bytes");
    match &err {
        Error::AllocationFailed {
            label, bytes, space, ..
        } => assert_eq!((label.as_str(), *bytes, *space), ("huge", 1 << 62, "HostSpace")),
        other => panic!("expected AllocationFailed, got {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("huge") && msg.contains(&(1usize << 62).to_string()),
        "{msg}"
    );
    assert!(!HostSpace.records().snapshot().iter().any(|r| r.label == "huge"));
    let err = View::<f64, 3>::new("ovf3", [1 << 30, 1 << 30, 1 << 10]).expect_err("overflow");
    assert!(
        matches!(&err, Error::AllocationFailed { label, reason, .. } if label == "ovf3" && reason.contains("overflow")),
        "{err}"
    );
    let err = View::<u64, 1>::new("ovf1", [usize::MAX / 4]).expect_err("bytes overflow");
    assert!(matches!(err, Error::AllocationFailed { .. }), "{err}");
}

/// A view of a zero-sized type may have more elements than a loop could visit: making it
/// writes nothing (every element already holds the type's only value) and returns at once.
#[test]
fn zero_sized_elements_are_not_filled_one_by_one() {
    let z = View::<(), 1>::new("z", [usize::MAX]).expect("no bytes to allocate");
    assert_eq!(z.len(), usize::MAX);
    z.fill_host(()).expect("fill");
    let z2 = View::<(), 2>::new("z2", [1 << 40, 1 << 20]).expect("no bytes to allocate");
    assert_eq!(z2.extents(), [1 << 40, 1 << 20]);
}

// ---- interop and identity ------------------------------------------------------------------

#[test]
fn from_vec_adopts_the_buffer_and_into_vec_gives_it_back() {
    let data: Vec<u32> = (0..12).collect();
    let address = data.as_ptr();
    let before = HostSpace.records().current_bytes();
    let m: View<u32, 2, LayoutLeft> = View::from_vec("adopted", [3, 4], data).expect("12 elements");
    assert_eq!(m.data(), address, "no copy");
    assert_eq!(m.host_read().expect("read").get([2, 1]), 5, "column-major order");
    let record = HostSpace.records().find(address as usize + 8).expect("recorded");
    assert_eq!((record.label.as_str(), record.bytes), ("adopted", 48));
    // A clone keeps `into_vec` from taking the buffer: it copies instead.
    let other = m.clone();
    let copy = m.into_vec().expect("copy");
    assert_ne!(copy.as_ptr(), address);
    assert_eq!(copy, (0..12).collect::<Vec<u32>>());
    let back = other.into_vec().expect("the last handle");
    assert_eq!(back.as_ptr(), address, "the same buffer, back");
    assert!(
        HostSpace.records().find(address as usize).is_none(),
        "record gone"
    );
    assert!(HostSpace.records().current_bytes() <= before + 48);
    // A subview of an adopted view copies.
    let v: View<u32, 1> = View::from_vec("v", [4], back[..4].to_vec()).expect("4");
    let part: View<u32, 1> = v.subview([Slice::Range(1..3)]).expect("sub");
    drop(v);
    assert_eq!(part.into_vec().expect("copy"), [1, 2]);
    // The wrong length is a typed error.
    let err = View::<f64, 2>::from_vec("bad", [2, 2], vec![0.0; 5]).expect_err("5 != 4");
    assert!(matches!(err, Error::ExtentMismatch { .. }), "{err}");
    assert!(err.to_string().contains("bad"), "{err}");
}

#[test]
fn use_count_default_views_and_equality() {
    let v: View<f64, 2> = View::new("v", [2, 3]).expect("alloc");
    assert_eq!(v.use_count(), 1);
    let c = v.clone();
    let sub: View<f64, 1> = v.subview([Slice::Index(1), Slice::All]).expect("row");
    assert_eq!(v.use_count(), 3);
    assert!(c == v, "same window on the same allocation");
    let twin: View<f64, 2> = View::new("v", [2, 3]).expect("alloc");
    assert!(twin != v, "equal contents, other memory");
    let row0: View<f64, 1> = v.subview([Slice::Index(0), Slice::All]).expect("row");
    assert!(row0 != sub, "another window of the same allocation");
    drop((c, sub, row0));
    assert_eq!(v.use_count(), 1);

    let empty: View<f64, 3> = View::default();
    assert_eq!((empty.label(), empty.extents(), empty.len()), ("", [0, 0, 0], 0));
    assert!(empty.to_vec().expect("empty").is_empty());
    let scalar: View<i64, 0> = View::default();
    assert_eq!(scalar.to_vec().expect("one element"), [0]);
}

#[test]
fn find_locates_the_allocation_of_any_interior_pointer() {
    let a: View<u64, 1> = View::new("find-a", [100]).expect("alloc");
    let b: View<u64, 1> = View::new("find-b", [50]).expect("alloc");
    let records = HostSpace.records();
    let in_a = records.find(a.data().wrapping_add(99) as usize).expect("a");
    let in_b = records.find(b.data() as usize).expect("b");
    assert_eq!((in_a.label.as_str(), in_b.label.as_str()), ("find-a", "find-b"));
    assert!(
        records
            .find(a.data().wrapping_add(100) as usize)
            .is_none_or(|r| r.label != "find-a")
    );
}

#[test]
fn deep_copy_on_an_instance_copies_contiguous_strided_and_transposed_views() {
    use hoplite_core::deep_copy_on;
    let exec = hoplite_serial::Serial::default();
    // Contiguous, several chunks and a remainder.
    let n = 3 * (1 << 14) + 5;
    let src: View<u64, 1> = View::from_vec("src", [n], (0..n as u64).collect()).expect("alloc");
    let dst: View<u64, 1> = View::new("dst", [n]).expect("alloc");
    deep_copy_on(&exec, &dst, &src).expect("copy");
    assert_eq!(dst.to_vec().expect("dst"), src.to_vec().expect("src"));
    // Another layout (a transpose in memory) and a strided subview.
    let m: View<i32, 2> = View::from_vec("m", [3, 5], (0..15).collect()).expect("alloc");
    let left: View<i32, 2, LayoutLeft> = View::new("left", [3, 5]).expect("alloc");
    deep_copy_on(&exec, &left, &m).expect("copy");
    assert_eq!(left.host_read().expect("read").get([2, 4]), 14);
    let cols: View<i32, 2, LayoutStride> = m.subview([Slice::All, Slice::Range(1..3)]).expect("cols");
    let packed: View<i32, 2> = View::new("packed", [3, 2]).expect("alloc");
    deep_copy_on(&exec, &packed, &cols).expect("copy");
    assert_eq!(packed.to_vec().expect("packed"), [1, 2, 6, 7, 11, 12]);
    // Rank 0.
    let s: View<f64, 0> = View::from_slice("s", [], &[2.5]).expect("alloc");
    let t: View<f64, 0> = View::new("t", []).expect("alloc");
    deep_copy_on(&exec, &t, &s).expect("copy");
    assert_eq!(t.to_vec().expect("t"), [2.5]);
    // Bad input: extents, and a destination with a live reader; nothing is written.
    let short: View<u64, 1> = View::new("short", [4]).expect("alloc");
    let err = deep_copy_on(&exec, &short, &src).expect_err("extents differ");
    assert!(matches!(err, Error::ExtentMismatch { .. }), "{err}");
    let r = packed.read();
    let err = deep_copy_on(&exec, &packed, &packed.clone()).expect_err("conflict");
    assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
    drop(r);
    let err = deep_copy_on(&exec, &packed, &packed.clone()).expect_err("onto itself");
    assert!(matches!(err, Error::BorrowConflict { .. }), "{err}");
    assert_eq!(packed.to_vec().expect("packed"), [1, 2, 6, 7, 11, 12]);
}
