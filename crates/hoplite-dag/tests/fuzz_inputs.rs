//! What users feed the DAG runtime, fuzzed: any text and any device count given to
//! `BandwidthMatrix::from_csv` gives a matrix or a typed error, never a panic. Bounded
//! (proptest's default case count); `PROPTEST_CASES=100000 cargo test -p hoplite-dag --test
//! fuzz_inputs` runs longer.

use hoplite_dag::{BandwidthMatrix, Location};
use proptest::prelude::*;

/// Lines that look like GrCUDA's CSV: numbers, signs, separators, spaces, junk.
fn csv_like() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        (-3i64..6).prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        Just(String::new()),
        Just("-1".to_owned()),
        Just("NaN".to_owned()),
        Just("inf".to_owned()),
        "[ -~]{0,6}",
    ];
    let line = prop::collection::vec(field, 0..5).prop_map(|fields| fields.join(","));
    prop::collection::vec(line, 0..8).prop_map(|lines| {
        let mut text = String::from("From,To,Bandwidth\n");
        text.push_str(&lines.join("\n"));
        text
    })
}

proptest! {
    #[test]
    fn any_text_gives_a_matrix_or_an_error(text in any::<String>(), devices in 0usize..8) {
        let _ = BandwidthMatrix::from_csv(&text, devices);
    }

    #[test]
    fn csv_like_text_gives_a_matrix_whose_values_are_usable_or_an_error(text in csv_like(), devices in 0usize..6) {
        if let Ok(m) = BandwidthMatrix::from_csv(&text, devices) {
            for from in (0..devices).map(Location::Device).chain([Location::Cpu]) {
                for to in (0..devices).map(Location::Device).chain([Location::Cpu]) {
                    let b = m.bandwidth(from, to);
                    prop_assert!(matches!(b, Ok(b) if b.is_finite() && b >= 0.0), "{from:?} -> {to:?}: {b:?}");
                    prop_assert_eq!(b.ok(), m.bandwidth(to, from).ok(), "symmetric");
                }
            }
        }
    }

    #[test]
    fn huge_device_counts_are_refused_not_a_panic(devices in prop_oneof![Just(usize::MAX), Just(usize::MAX / 2), (1usize << 20)..usize::MAX]) {
        prop_assert!(BandwidthMatrix::from_csv("From,To,Bandwidth\n", devices).is_err());
    }
}
