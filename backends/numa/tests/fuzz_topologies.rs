//! Topologies users describe, fuzzed: any synthetic description (`HOPLITE_NUMA_TOPOLOGY`,
//! `NumaTopology::synthetic`) and any XML document gives a topology or a typed error, never a
//! panic. Counts stay small so that an accepted description stays a small machine. Bounded
//! (proptest's default case count); `PROPTEST_CASES=20000 cargo test -p hoplite-numa --test
//! fuzz_topologies` runs longer.

use hoplite_numa::{NumaError, NumaTopology};
use proptest::prelude::*;

/// A level of hwloc's synthetic language, or junk.
fn level() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec![
        "pack", "package", "numa", "node", "core", "pu", "l3", "l2", "l1", "machine", "group", "socket",
        "die", "", "x",
    ]);
    let count = prop_oneof![
        (0u32..5).prop_map(|c| c.to_string()),
        Just("-1".to_owned()),
        "[a-z]{0,2}"
    ];
    let separator = prop::sample::select(vec![":", "", "::", "=", " "]);
    (name, separator, count).prop_map(|(n, s, c)| format!("{n}{s}{c}"))
}

proptest! {
    #[test]
    fn any_synthetic_description_gives_a_topology_or_an_error(levels in prop::collection::vec(level(), 0..6)) {
        let description = levels.join(" ");
        match NumaTopology::synthetic(&description) {
            Ok(topo) => prop_assert!(!topo.nodes().is_empty(), "{description}: a topology of no node"),
            Err(e) => prop_assert!(matches!(e, NumaError::BadSynthetic { .. }), "{description}: {e}"),
        }
    }

    #[test]
    fn any_text_as_a_synthetic_description_is_refused_or_accepted(text in "[ -~]{0,40}") {
        let _ = NumaTopology::synthetic(&text);
    }

    #[test]
    fn any_xml_gives_a_topology_or_an_error(text in prop_oneof![
        "[ -~]{0,80}",
        "<topology[ -~]{0,40}>",
        Just("<?xml version=\"1.0\"?><topology version=\"2.0\"></topology>".to_owned()),
        Just("<?xml version=\"1.0\"?><topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\"/></topology>".to_owned()),
    ]) {
        if let Err(e) = NumaTopology::from_xml(&text) {
            prop_assert!(matches!(e, NumaError::BadXml { .. }), "{e}");
        }
    }
}
