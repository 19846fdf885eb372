//! MDRange bounds and origins of every integer type: what cannot be represented is refused
//! with a typed error, never saturated into a different box.

use hoplite_core::for_each_point;
use hoplite_core::{Error, ExecutionPolicy, IterationOrder, MDRangePolicy};
use hoplite_serial::Serial;

/// A `u128` bound past `i128::MAX` once saturated silently when the origin saturated too:
/// `[MAX-5, MAX)` with origin `MAX-10` ran no points and returned `Ok`.
#[test]
fn bounds_and_origins_past_i128_are_refused_not_saturated() {
    let big = i128::MAX as u128;
    let p = MDRangePolicy::new(Serial::default(), [big + 5], [u128::MAX]).with_origin([big + 10]);
    let e = p.validate("huge").expect_err("no i128 holds these bounds");
    assert!(
        matches!(&e, Error::BoundNotRepresentable { dim: 0, what: "begin", value, .. } if *value == (big + 5).to_string()),
        "{e}"
    );
    // An origin alone past the range is refused as well.
    let p = MDRangePolicy::new(Serial::default(), [0u128], [4u128]).with_origin([u128::MAX]);
    let e = p.validate("origin").expect_err("no i128 holds the origin");
    assert!(
        matches!(&e, Error::BoundNotRepresentable { what: "origin", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("i128::MAX"), "{e}");
    // Representable bounds are still fine, whatever their type.
    let ok = MDRangePolicy::new(Serial::default(), [big - 5], [big]).with_origin([big - 10]);
    ok.validate("fine").expect("representable");
    assert_eq!(ok.len(), 5);
    // A valid origin set afterwards keeps reporting the bad bound.
    let p = MDRangePolicy::new(Serial::default(), [0u128], [u128::MAX]).with_origin([0u128]);
    assert!(matches!(
        p.validate("end"),
        Err(Error::BoundNotRepresentable { what: "end", .. })
    ));
}

/// The points of `p` in the order a backend visits them: tiles in turn, each in the inner
/// order.
fn visit_order<const R: usize>(p: &MDRangePolicy<Serial, R>) -> Vec<[usize; R]> {
    let mut seen = Vec::new();
    for t in 0..p.num_tiles() {
        let (lo, hi) = p.tile_bounds(t);
        for_each_point(lo, hi, p.inner_order(), |q| seen.push(q));
    }
    seen
}

/// `visits_in_nested_order` says exactly whether the tiles' visit is that of nested loops in
/// the inner order, which a device backend relies on to join partials in index order.
#[test]
fn nested_order_is_recognised_exactly() {
    use IterationOrder::{Left, Right};
    let orders = [(Right, Right), (Right, Left), (Left, Right), (Left, Left)];
    let mut nested = 0;
    let mut other = 0;
    let mut check = |p: MDRangePolicy<Serial, 3>| {
        let mut loops = Vec::new();
        for_each_point(p.begin(), p.end(), p.inner_order(), |q| loops.push(q));
        let is_nested = visit_order(&p) == loops;
        assert_eq!(p.visits_in_nested_order(), is_nested, "{p:?}");
        if is_nested { nested += 1 } else { other += 1 }
    };
    for (begin, end) in [
        ([0, 0, 0], [3, 4, 5]),
        ([1, 2, 0], [2, 6, 4]),
        ([0, 3, 1], [4, 3, 5]),
    ] {
        for (outer, inner) in orders {
            let p = MDRangePolicy::new(Serial::default(), begin, end).with_iteration(outer, inner);
            check(p.clone());
            for t0 in 1..=4 {
                for t1 in 1..=5 {
                    for t2 in 1..=6 {
                        check(p.clone().with_tiles([t0, t1, t2]));
                    }
                }
            }
        }
    }
    assert!(nested > 100 && other > 100, "{nested} nested, {other} not");
}
