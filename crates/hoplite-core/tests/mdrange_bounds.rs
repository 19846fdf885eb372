//! MDRange bounds and origins of every integer type: what cannot be represented is refused
//! with a typed error, never saturated into a different box.

use hoplite_core::{Error, ExecutionPolicy, MDRangePolicy};
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
