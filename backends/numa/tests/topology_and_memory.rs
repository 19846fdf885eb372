//! Topologies (discovered, synthetic, from the environment), bad input, thread binding,
//! memory placement and the split of launches over nodes.

use hoplite_core::{ExecutionSpace, LayoutRight, RangePolicy, Sum, View, parallel_for, parallel_reduce};
use hoplite_numa::{
    AreaPolicy, NumaError, NumaMemory, NumaSpace, NumaTopology, Placement, TOPOLOGY_ENV, ThreadBinding,
    TopologySource, memory_binding,
};
use std::process::Command;
use std::sync::Mutex;

fn synthetic(description: &str) -> NumaTopology {
    NumaTopology::synthetic(description).expect("a valid description")
}

#[test]
fn synthetic_topology_has_the_described_nodes() {
    let topo = synthetic("pack:2 numa:2 core:4 pu:2");
    let nodes = topo.nodes();
    assert_eq!(nodes.len(), 4);
    for (k, node) in nodes.iter().enumerate() {
        assert_eq!((node.index, node.cores, node.pus.len()), (k, 4, 8));
        assert_eq!(node.pus, (8 * k..8 * k + 8).collect::<Vec<_>>());
    }
    assert_eq!(
        topo.source(),
        &TopologySource::Synthetic("pack:2 numa:2 core:4 pu:2".to_owned())
    );
    let with_memory = synthetic("numa(memory=1GB):2 core:1 pu:1");
    assert!(with_memory.nodes().iter().all(|n| n.memory_bytes > 0));
}

#[test]
fn descriptions_that_do_not_parse_are_typed_errors_naming_them() {
    for bad in ["numa:two", "", "   ", "pack:2 bogus:3", "pu:0"] {
        match NumaTopology::synthetic(bad) {
            Err(e @ NumaError::BadSynthetic { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains(&format!("`{bad}`")) && message.contains("pack:2 numa:2"),
                    "{message}"
                );
            }
            other => panic!("{bad:?} gave {other:?}"),
        }
    }
}

#[test]
fn node_indices_past_the_topology_are_typed_errors() {
    let space = NumaSpace::with_topology(&synthetic("numa:2 core:1 pu:1"), 0).expect("pools");
    let err = space.node(5).expect_err("two nodes");
    assert_eq!(err, NumaError::NodeOutOfRange { node: 5, nodes: 2 });
    assert!(err.to_string().contains("0..2"), "{err}");
    assert!(matches!(
        NumaMemory::bound_to(space.topology(), 2),
        Err(NumaError::NodeOutOfRange { node: 2, nodes: 2 })
    ));
    let node_1 = space.node(1).expect("node 1");
    assert_eq!(
        node_1.node(0).expect_err("a node pool spans its node only"),
        NumaError::NodeNotSpanned {
            node: 0,
            spans: vec![1]
        }
    );
    assert_eq!(node_1.node(1).expect("itself"), node_1);
}

#[test]
fn too_many_threads_per_node_is_a_typed_error() {
    let err = NumaSpace::with_topology(&synthetic("numa:4 pu:1"), hoplite_rayon::max_threads())
        .expect_err("far too many threads");
    assert!(matches!(err, NumaError::TooManyThreads { nodes: 4, .. }), "{err}");
}

/// Runs this test binary again with the environment variable set, for the one test below that
/// reads it (setting a variable in a running multi-threaded test process is unsound).
#[test]
fn environment_variable_selects_a_synthetic_topology() {
    let exe = std::env::current_exe().expect("the test binary");
    for (value, expect_ok) in [("pack:2 numa:2 core:1 pu:1", true), ("numa:lots", false)] {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "child_reads_the_environment",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(TOPOLOGY_ENV, value)
            .env("HOPLITE_NUMA_EXPECT_OK", if expect_ok { "1" } else { "0" })
            .output()
            .expect("the test binary runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{value}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("child checked"),
            "{value}: the child test did not run: {text}"
        );
    }
}

#[test]
fn child_reads_the_environment() {
    let Ok(value) = std::env::var(TOPOLOGY_ENV) else {
        println!("skipped: runs only as the child of environment_variable_selects_a_synthetic_topology");
        return;
    };
    let expect_ok = std::env::var("HOPLITE_NUMA_EXPECT_OK").as_deref() == Ok("1");
    match (NumaSpace::new(), expect_ok) {
        (Ok(space), true) => {
            assert_eq!(space.topology().source(), &TopologySource::Synthetic(value));
            assert_eq!(space.node_count(), 4);
            assert_eq!(space.concurrency(), 4);
        }
        (Err(e @ NumaError::BadSynthetic { from_env: true, .. }), false) => {
            assert!(e.to_string().contains(TOPOLOGY_ENV), "{e}");
            // The default instance falls back to one unbound node instead of failing.
            assert_eq!(NumaSpace::default().node_count(), 1);
        }
        (other, _) => panic!("{value}: {other:?}"),
    }
    println!("child checked");
}

#[test]
fn a_launch_splits_the_range_over_nodes_then_their_workers() {
    // Three threads on each of two nodes: ranks 0..3 on node 0, 3..6 on node 1.
    let space = NumaSpace::with_topology(&synthetic("numa:2 core:3 pu:1"), 0).expect("pools");
    assert_eq!(space.rank_nodes(), [0, 0, 0, 1, 1, 1]);
    let n = 6000;
    let nodes = Mutex::new(vec![usize::MAX; n]);
    let rank_nodes = space.rank_nodes();
    parallel_for("which node", RangePolicy::new(space.clone(), 0..n), |i| {
        let rank = current_rank();
        nodes.lock().expect("lock")[*i] = rank_nodes[rank];
    })
    .expect("launch");
    let nodes = nodes.into_inner().expect("lock");
    // The first half of the range ran on node 0's ranks, the second half on node 1's.
    assert!(nodes[..n / 2].iter().all(|&k| k == 0), "{:?}", &nodes[..12]);
    assert!(
        nodes[n / 2..].iter().all(|&k| k == 1),
        "{:?}",
        &nodes[n / 2..n / 2 + 12]
    );
}

/// The rank of the calling thread: 0 for the launching thread, `r` for worker `w{r}` (the
/// rayon backend names its workers `hoplite-rayon-{instance}-w{rank}`).
fn current_rank() -> usize {
    std::thread::current()
        .name()
        .and_then(|name| name.rsplit_once("-w"))
        .and_then(|(_, rank)| rank.parse().ok())
        .unwrap_or(0)
}

#[test]
fn node_pools_and_partitions_keep_their_nodes() {
    let space = NumaSpace::with_topology(&synthetic("numa:2 core:2 pu:1"), 0).expect("pools");
    let by_node = space.partition_by_node().expect("node pools");
    assert_eq!(by_node.len(), 2);
    assert_eq!(by_node[1], space.node(1).expect("node 1"));
    assert_eq!(by_node[1].rank_nodes(), [1, 1]);
    let parts = space.partition_space_weighted(&[3.0, 1.0]).expect("parts");
    assert_eq!(parts[0].rank_nodes(), [0, 0, 1]);
    assert_eq!(parts[1].rank_nodes(), [1]);
    // A partition's node pool holds the partition's threads on that node.
    assert_eq!(parts[0].node(1).expect("part 0 reaches node 1").rank_nodes(), [1]);
    assert_eq!(parts[0].node(0).expect("and node 0").rank_nodes(), [0, 0]);
    assert_eq!(
        parts[1].node(0).expect_err("part 1 is on node 1 only"),
        NumaError::NodeNotSpanned {
            node: 0,
            spans: vec![1]
        }
    );
    let sum = parallel_reduce(
        "sum",
        RangePolicy::new(parts[0].clone(), 0..100),
        |i, a| *a += *i,
        Sum::<usize>::new(),
    )
    .expect("launch");
    assert_eq!(sum, 4950);
}

#[test]
fn synthetic_pools_run_unbound_and_say_why() {
    let space = NumaSpace::with_topology(&synthetic("numa:2 pu:1"), 0).expect("pools");
    match space.thread_binding() {
        ThreadBinding::Unbound { reason } => assert!(reason.contains("synthetic"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let mut out = Vec::new();
    space.print_configuration(&mut out, true).expect("print");
    let text = String::from_utf8(out).expect("utf-8");
    for expected in [
        "2 threads",
        "unbound",
        "node 0 (os 0)",
        "node 1 (os 1)",
        "NumaMemory",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from:\n{text}");
    }
}

#[test]
fn workers_are_bound_to_their_node_on_the_real_topology() {
    let topology = NumaTopology::discover().expect("hwloc reads this machine");
    let space = NumaSpace::with_topology(&topology, 0).expect("pools");
    if space.concurrency() < 2 {
        println!("skipped: one processing unit, so no worker to bind");
        return;
    }
    let workers = space.concurrency() - 1;
    assert_eq!(space.thread_binding(), ThreadBinding::Bound { workers });
    // Every worker reports a binding inside its node's processing units.
    let rank_nodes = space.rank_nodes();
    let nodes = topology.nodes();
    let seen = Mutex::new(Vec::new());
    let n = space.concurrency() * 64;
    parallel_for("where", RangePolicy::new(space.clone(), 0..n), |_| {
        let rank = current_rank();
        if rank > 0 {
            let cpus = topology.current_thread_cpus().expect("hwloc reports the binding");
            seen.lock().expect("lock").push((rank, cpus));
        }
    })
    .expect("launch");
    let seen = seen.into_inner().expect("lock");
    assert!(!seen.is_empty(), "no worker took part");
    for (rank, (bound, last)) in seen {
        let node = &nodes[rank_nodes[rank]];
        assert!(
            bound.iter().all(|pu| node.pus.contains(pu)),
            "rank {rank} bound to {bound:?}, outside node {}'s {:?}",
            node.index,
            node.pus
        );
        assert!(
            last.iter().all(|pu| node.pus.contains(pu)),
            "rank {rank} last ran on {last:?}"
        );
    }
    if topology.node_count() < 2 {
        println!(
            "note: this machine has one NUMA node; pinning across nodes is covered by synthetic topologies only"
        );
    }
}

#[test]
fn memory_placements_are_reported_by_hwloc() {
    let topology = NumaTopology::discover().expect("hwloc reads this machine");
    let failures_before = NumaMemory::binding_failures();
    let bound: View<f64, 1, LayoutRight, NumaMemory> = View::new_in(
        NumaMemory::bound_to(&topology, 0).expect("node 0"),
        "bound",
        [1 << 18],
    )
    .expect("view");
    if NumaMemory::binding_failures() > failures_before {
        println!("skipped: this system refuses memory binding (hoplite-numa said why on standard error)");
        return;
    }
    let report = memory_binding(&topology, &bound).expect("a report");
    assert_eq!(report.nodes, [0]);
    assert_eq!(report.policy, Some(AreaPolicy::Bind));
    // Cleared after binding, so every page was touched, on the bound node.
    if let Some(located_on) = report.located_on {
        assert_eq!(located_on, [0]);
    }
    let interleaved: View<f64, 1, LayoutRight, NumaMemory> =
        View::new_in(NumaMemory::interleaved(&topology), "interleaved", [1 << 18]).expect("view");
    let report = memory_binding(&topology, &interleaved).expect("a report");
    assert_eq!(report.nodes, (0..topology.node_count()).collect::<Vec<_>>());
    assert_eq!(report.policy, Some(AreaPolicy::Interleave));
    let live = NumaMemory::live_bytes();
    assert!(
        live.iter().any(|&(p, b)| p == Placement::Node(0) && b >= 8 << 18),
        "{live:?}"
    );
    assert!(
        live.iter()
            .any(|&(p, b)| p == Placement::Interleave && b >= 8 << 18),
        "{live:?}"
    );
    let mut out = Vec::new();
    hoplite_core::MemorySpace::print_records(&NumaMemory::first_touch(), &mut out, true).expect("print");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains("bound to node 0:") && text.contains("interleaved:"),
        "{text}"
    );
}

#[test]
fn first_touch_pages_land_where_the_launch_wrote_them() {
    let topology = NumaTopology::discover().expect("hwloc reads this machine");
    if !topology.can_bind_memory(Placement::Node(0)) {
        println!("skipped: hwloc cannot query memory areas on this system");
        return;
    }
    let space = NumaSpace::with_topology(&topology, 0).expect("pools");
    let x = space.first_touch_view("x", 1 << 20, 1.0f64).expect("view");
    let report = memory_binding(&topology, &x).expect("a report");
    assert_eq!(report.policy, Some(AreaPolicy::FirstTouch));
    match report.located_on {
        // Every node that holds a page runs part of the launch that wrote it.
        Some(nodes) => {
            assert!(!nodes.is_empty());
            assert!(nodes.iter().all(|k| space.nodes().contains(k)), "{nodes:?}");
        }
        None => println!("note: this system cannot say where pages are"),
    }
}

#[test]
fn synthetic_placements_fall_back_to_first_touch_and_are_counted() {
    let topology = synthetic("numa:2 pu:1");
    let before = NumaMemory::binding_failures();
    let v: View<u32, 1, LayoutRight, NumaMemory> = View::new_in(
        NumaMemory::bound_to(&topology, 1).expect("node 1"),
        "v",
        [1 << 12],
    )
    .expect("view");
    assert!(NumaMemory::binding_failures() > before);
    assert!(v.to_vec().expect("readable").iter().all(|&x| x == 0));
    let err = memory_binding(&topology, &v).expect_err("nothing to ask a synthetic topology");
    assert!(matches!(err, NumaError::NoBindingReport { .. }), "{err}");
}

#[test]
fn first_touch_views_hold_their_values_and_deep_copy_to_host() {
    let space = NumaSpace::with_topology(&synthetic("numa:2 core:2 pu:1"), 0).expect("pools");
    let x = space.first_touch_view("x", 100_000, 2.5f64).expect("view");
    let host: View<f64, 1> = View::new("host", [100_000]).expect("host view");
    hoplite_core::deep_copy(&host, &x).expect("copy to host");
    assert!(host.to_vec().expect("read").iter().all(|&v| v == 2.5));
    let back: View<f64, 1, LayoutRight, NumaMemory> =
        View::new_in(space.memory_interleaved(), "back", [100_000]).expect("view");
    hoplite_core::deep_copy(&back, &host).expect("copy back");
    let sum = parallel_reduce(
        "sum",
        (
            RangePolicy::new(space.node(1).expect("node 1"), 0..100_000),
            back.read(),
        ),
        |(i, b), acc| *acc += b.get(i),
        Sum::<f64>::new(),
    )
    .expect("launch");
    assert_eq!(sum, 250_000.0);
}

/// Two packages with a node and a core each, where the process may use only the first
/// package's processing unit (as under a cgroup cpuset): node 1 keeps its memory but has an
/// empty cpuset.
const NODE_1_WITHOUT_USABLE_CPUS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000001" nodeset="0x00000003" complete_nodeset="0x00000003" allowed_nodeset="0x00000003" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4">
      <object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5" local_memory="1073741824"/>
      <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3">
        <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2"/>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="8">
      <object type="NUMANode" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="9" local_memory="1073741824"/>
      <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="7">
        <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000002" complete_nodeset="0x00000002" gp_index="6"/>
      </object>
    </object>
  </object>
</topology>
"#;

#[test]
fn a_node_without_usable_cpus_is_a_typed_error_and_left_out_of_the_whole_space() {
    let topology = NumaTopology::from_xml(NODE_1_WITHOUT_USABLE_CPUS).expect("valid XML");
    assert_eq!(topology.source(), &TopologySource::Xml);
    let nodes = topology.nodes();
    assert_eq!(nodes.len(), 2);
    assert_eq!((nodes[0].pus.len(), nodes[1].pus.len()), (1, 0));
    assert_eq!(nodes[1].memory_bytes, 1 << 30);
    let space = NumaSpace::with_topology(&topology, 0).expect("pools");
    assert_eq!(space.threads_on_nodes(), [(0, 1)]);
    let err = space.node(1).expect_err("no usable processing unit");
    assert_eq!(err, NumaError::EmptyCpuset { node: 1 });
    assert!(err.to_string().contains("cgroup"), "{err}");
    // Memory can still be placed there (unbound here: the topology is not this machine).
    assert!(NumaMemory::bound_to(&topology, 1).is_ok());
}

#[test]
fn xml_that_does_not_load_is_a_typed_error() {
    for bad in ["", "<topology>", "not xml at all"] {
        assert!(
            matches!(NumaTopology::from_xml(bad), Err(NumaError::BadXml { .. })),
            "{bad:?}"
        );
    }
}
