//! Unit tests of `View`: construction, layouts, subviews, null views, copies.

use super::*;
use crate::space::{LayoutLeft, LayoutStride};

#[test]
fn a_null_view_has_no_memory_and_still_takes_handles_and_host_guards() {
    let null: View<f64, 2, LayoutLeft> = View::default();
    let (copy, part): (View<f64, 2, LayoutLeft>, View<f64, 2, LayoutStride>) = (
        null.clone(),
        null.subview([Slice::Range(0..0), Slice::Range(0..0)])
            .expect("an empty subview"),
    );
    for (allocated, data, uses) in [
        (null.is_allocated(), null.data(), null.use_count()),
        (copy.is_allocated(), copy.data(), copy.use_count()),
        (part.is_allocated(), part.data(), part.use_count()),
    ] {
        assert!(!allocated && data.is_null());
        assert_eq!(uses, 0);
    }
    assert_eq!(
        (null.label(), null.len(), null.to_vec().expect("reads")),
        ("", 0, vec![])
    );
    assert_eq!(null.host_read().expect("a guard").as_slice(), Some(&[][..]));
    let (w, r) = (null.write(), copy.read());
    assert!(
        w.conflict().is_none() && r.conflict().is_none(),
        "handles of no element never overlap"
    );
    // Two null views are different views: their accesses never meet.
    let other: View<f64, 2, LayoutLeft> = View::default();
    assert_ne!(null.allocation_key(), other.allocation_key());
    assert!(!null.same_allocation(&other));
    let fresh: View<f64, 2, LayoutLeft> = View::new("fresh", [0, 0]).expect("zero bytes");
    assert!(
        fresh.is_allocated() && !fresh.data().is_null(),
        "an empty view made by `new` is allocated"
    );
}

#[test]
fn strides_span_and_contiguity() {
    let v: View<u8, 3> = View::new("v", [2, 3, 4]).expect("alloc");
    assert_eq!((v.strides(), v.span(), v.is_contiguous()), ([12, 4, 1], 24, true));
    let l: View<u8, 3, LayoutLeft> = View::new("l", [2, 3, 4]).expect("alloc");
    assert_eq!((l.strides(), l.is_contiguous()), ([1, 2, 6], true));
    let s: View<u8, 0> = View::new("scalar", []).expect("alloc");
    assert_eq!((s.len(), s.span()), (1, 1));
    let e: View<u8, 2> = View::new("empty", [0, 5]).expect("alloc");
    assert_eq!((e.len(), e.span(), e.is_empty()), (0, 0, true));
}

#[test]
fn aliasing_strides_are_rejected() {
    let err = View::<f64, 2, LayoutStride>::with_strides("bad", [4, 4], [2, 1]).expect_err("aliasing");
    assert!(matches!(err, Error::InvalidLayout { .. }), "{err}");
    let err = View::<f64, 1, LayoutStride>::with_strides("zero", [3], [0]).expect_err("stride 0");
    assert!(err.to_string().contains("share an element"), "{err}");
    assert!(View::<f64, 2, LayoutStride>::with_strides("ok", [4, 4], [5, 1]).is_ok());
    let err = View::<f64, 1, LayoutRight>::with_strides("notright", [4], [2]).expect_err("not right");
    assert!(err.to_string().contains("LayoutRight"), "{err}");
}

#[test]
fn subviews_compose_offsets_and_footprints() {
    let m: View<i64, 3> = View::new("m", [4, 5, 6]).expect("alloc");
    let plane: View<i64, 2> = m
        .subview([Slice::Index(2), Slice::All, Slice::All])
        .expect("plane");
    let line: View<i64, 1, LayoutStride> = plane
        .subview([Slice::Range(1..4), Slice::Index(3)])
        .expect("line");
    assert_eq!((line.extents(), line.strides()), ([3], [6]));
    // SAFETY: pointer arithmetic comparison only, no dereference.
    let offset = unsafe { line.ptr.offset_from(m.ptr) };
    assert_eq!(offset, 2 * 30 + 6 + 3);
    let fp = line.footprint();
    assert_eq!(fp.ranges(&[4, 5, 6]), [(2, 3), (1, 4), (3, 4)]);
    assert_eq!(m.footprint().ranges(&[4, 5, 6]), [(0, 4), (0, 5), (0, 6)]);
    let all: View<i64, 3, LayoutStride> = m
        .subview([Slice::All, Slice::All, Slice::All])
        .expect("all of it");
    assert!(all.footprint().is_whole() && !line.footprint().is_whole());
    // Dropping a dimension of extent 1 covers everything but is not root-shaped: the
    // footprint becomes a box, and subviews of it still compose (a regression: keeping the
    // whole footprint there broke the next subview).
    let thin: View<i64, 3> = View::new("thin", [1, 4, 5]).expect("alloc");
    let plane: View<i64, 2> = thin
        .subview([Slice::Index(0), Slice::All, Slice::All])
        .expect("plane");
    assert!(!plane.footprint().is_whole());
    let rows: View<i64, 2> = plane.subview([Slice::Range(1..3), Slice::All]).expect("rows");
    assert_eq!(rows.footprint().ranges(&[1, 4, 5]), [(0, 1), (1, 3), (0, 5)]);
    let err = m
        .subview::<1, LayoutStride>([Slice::Index(4), Slice::Index(0), Slice::All])
        .expect_err("oob");
    assert!(
        matches!(
            err,
            Error::SubviewOutOfBounds {
                dim: 0,
                extent: 4,
                ..
            }
        ),
        "{err}"
    );
    let err = m
        .subview::<2, LayoutStride>([Slice::All, Slice::Index(0), Slice::Index(0)])
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
    let err = m
        .subview::<1, LayoutRight>([Slice::Index(0), Slice::All, Slice::Index(0)])
        .expect_err("layout");
    assert!(err.to_string().contains("LayoutStride"), "{err}");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "Miri stops at an allocation it cannot make instead of returning null"
)]
fn huge_allocations_fail_with_the_label_and_size() {
    let err = View::<u8, 1>::new("huge", [1 << 62]).expect_err("2^62 bytes");
    let msg = err.to_string();
    assert!(
        msg.contains("huge") && msg.contains(&(1usize << 62).to_string()),
        "{msg}"
    );
    let err = View::<f64, 2>::new("overflow", [1 << 40, 1 << 40]).expect_err("overflow");
    assert!(matches!(err, Error::AllocationFailed { .. }), "{err}");
}
