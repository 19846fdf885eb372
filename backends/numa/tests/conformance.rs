//! The whole conformance suite on the NUMA backend: on this machine's topology (every node,
//! and node 0's pool alone), on a synthetic two-node topology of three threads per node (and
//! its node 1), which exercises the split over nodes and teams spanning nodes on a machine of
//! any size, and on a synthetic four-node, two-package topology with one thread per node.

use hoplite_numa::{NumaSpace, NumaTopology};
use std::sync::OnceLock;

/// The machine's topology, every node, one thread per processing unit.
fn machine() -> NumaSpace {
    static SPACE: OnceLock<NumaSpace> = OnceLock::new();
    SPACE
        .get_or_init(|| {
            let topology = NumaTopology::discover().expect("hwloc reads this machine");
            NumaSpace::with_topology(&topology, 0).expect("a pool per node")
        })
        .clone()
}

/// A synthetic machine of two nodes with three threads each (unbound).
fn two_nodes() -> NumaSpace {
    static SPACE: OnceLock<NumaSpace> = OnceLock::new();
    SPACE
        .get_or_init(|| {
            let topology = NumaTopology::synthetic("numa:2 core:3 pu:1").expect("a valid description");
            NumaSpace::with_topology(&topology, 0).expect("a pool per node")
        })
        .clone()
}

hoplite_conformance::suite!(numa_machine, machine, NumaSpace);

hoplite_conformance::suite!(
    numa_machine_node_0,
    || machine().node(0).expect("node 0 exists"),
    NumaSpace
);

hoplite_conformance::suite!(numa_synthetic_two_nodes, two_nodes, NumaSpace);

hoplite_conformance::suite!(
    numa_synthetic_node_1,
    || two_nodes().node(1).expect("node 1 exists"),
    NumaSpace
);

/// Four nodes on two packages (`pack:2 numa:2 core:4 pu:2`), one thread per node, so every
/// launch crosses all four.
fn four_nodes_one_thread_each() -> NumaSpace {
    static SPACE: OnceLock<NumaSpace> = OnceLock::new();
    SPACE
        .get_or_init(|| {
            let topology = NumaTopology::synthetic("pack:2 numa:2 core:4 pu:2").expect("a valid description");
            NumaSpace::with_topology(&topology, 1).expect("a pool per node")
        })
        .clone()
}

hoplite_conformance::suite!(numa_synthetic_four_nodes, four_nodes_one_thread_each, NumaSpace);
