//! NUMA node pools as resources of dynamic selection and as devices of the implicit DAG
//! runtime, on the machine's topology and on a synthetic two-node one.

use std::sync::{Arc, Mutex, OnceLock};

use hoplite_core::{RangePolicy, Sum, View, parallel_reduce};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions};
use hoplite_numa::{NodeTasks, NumaSpace, NumaTopology};
use hoplite_select::{DynamicLoad, RoundRobin, Wait, get_submission_group, submit, submit_and_wait, wait};

fn two_nodes() -> NumaSpace {
    static SPACE: OnceLock<NumaSpace> = OnceLock::new();
    SPACE
        .get_or_init(|| {
            let topology = NumaTopology::synthetic("numa:2 core:2 pu:1").expect("a valid description");
            NumaSpace::with_topology(&topology, 0).expect("pools")
        })
        .clone()
}

fn machine() -> NumaSpace {
    static SPACE: OnceLock<NumaSpace> = OnceLock::new();
    SPACE
        .get_or_init(|| {
            let topology = NumaTopology::discover().expect("hwloc reads this machine");
            NumaSpace::with_topology(&topology, 0).expect("pools")
        })
        .clone()
}

/// The name prefix of the work-stealing threads of `space`'s pool.
fn stealing_prefix(space: &NumaSpace) -> String {
    format!("hoplite-rayon-{}-s", space.pool().instance_id())
}

#[test]
fn round_robin_task_groups_run_each_task_on_its_nodes_pool() {
    let space = two_nodes();
    let groups: Vec<NodeTasks> = space
        .partition_by_node()
        .expect("node pools")
        .into_iter()
        .map(NodeTasks::new)
        .collect();
    let prefixes: Vec<String> = groups.iter().map(|g| stealing_prefix(g.space())).collect();
    let ran_on = Arc::new(Mutex::new(Vec::new()));
    let rr = RoundRobin::<NodeTasks>::with_resources(groups);
    for task in 0..6 {
        let ran_on = Arc::clone(&ran_on);
        let s = submit(
            &rr,
            move |tasks, ()| {
                let node = tasks.space().nodes()[0];
                tasks.run(move || {
                    let thread = std::thread::current().name().unwrap_or_default().to_owned();
                    ran_on.lock().expect("lock").push((task, node, thread));
                });
            },
            (),
        )
        .expect("submit");
        assert_eq!(s.index(), task % 2);
    }
    wait(&get_submission_group(&rr).expect("group")).expect("every task finished");
    let mut ran_on = ran_on.lock().expect("lock").clone();
    ran_on.sort();
    assert_eq!(ran_on.len(), 6);
    for (task, node, thread) in ran_on {
        assert_eq!(node, task % 2, "round robin over the two nodes");
        assert!(
            thread.starts_with(&prefixes[node]),
            "task {task} ran on `{thread}`, not on node {node}'s pool ({})",
            prefixes[node]
        );
    }
}

#[test]
fn a_panicking_task_fails_one_wait_and_the_group_stays_usable() {
    let tasks = NodeTasks::new(two_nodes().node(0).expect("node 0"));
    tasks.run(|| panic!("bad block 3"));
    tasks.run(|| ());
    let err = tasks.wait().expect_err("a task panicked");
    assert!(err.to_string().contains("bad block 3"), "{err}");
    assert_eq!(tasks.pending(), 0);
    let (tx, rx) = std::sync::mpsc::channel();
    tasks.run(move || tx.send(5).expect("receiver alive"));
    tasks.wait().expect("no failure since the last wait");
    assert_eq!(rx.recv().ok(), Some(5));
}

#[test]
fn tasks_run_on_threads_bound_to_their_node() {
    let space = machine();
    let topology = space.topology().clone();
    if !topology.can_bind_threads() {
        println!("skipped: hwloc cannot bind threads here");
        return;
    }
    for node in space.partition_by_node().expect("node pools") {
        let k = node.nodes()[0];
        let tasks = NodeTasks::new(node);
        let seen = Arc::new(Mutex::new(None));
        let (topo, out) = (topology.clone(), Arc::clone(&seen));
        tasks.run(move || *out.lock().expect("lock") = Some(topo.current_thread_cpus()));
        tasks.wait().expect("the task ran");
        let (bound, _last) = seen
            .lock()
            .expect("lock")
            .take()
            .expect("recorded")
            .expect("hwloc reports the binding");
        let pus = &topology.nodes()[k].pus;
        assert!(
            bound.iter().all(|pu| pus.contains(pu)),
            "node {k}: task bound to {bound:?}, node has {pus:?}"
        );
    }
}

#[test]
fn node_pools_are_resources_of_the_space_backend() {
    let nodes = two_nodes().partition_by_node().expect("node pools");
    let sum = |pool: &NumaSpace, n: usize| {
        parallel_reduce(
            "sum",
            RangePolicy::new(pool.clone(), 0..n),
            |i, a| *a += *i,
            Sum::<usize>::new(),
        )
    };
    let least_loaded = DynamicLoad::new(nodes);
    assert_eq!(
        submit_and_wait(&least_loaded, sum, 100)
            .expect("submit")
            .expect("launch"),
        4950
    );
}

#[test]
fn node_pools_pass_the_dag_device_conformance_checks() {
    for (name, space) in [("synthetic", two_nodes()), ("machine", machine())] {
        for node in space.partition_by_node().expect("node pools") {
            let k = node.nodes()[0];
            let device = HostDevice::new(&format!("{name} numa node {k}"), vec![node]).expect("device");
            let failures = hoplite_dag::conformance::run_all(&device);
            assert!(failures.is_empty(), "{name} node {k}: {failures:#?}");
        }
    }
}

#[test]
fn a_dag_context_with_one_device_per_node_computes_the_pipeline() {
    let devices: Vec<HostDevice<NumaSpace>> = two_nodes()
        .partition_by_node()
        .expect("node pools")
        .into_iter()
        .map(|node| HostDevice::new(&format!("numa node {}", node.nodes()[0]), vec![node]).expect("device"))
        .collect();
    let ctx = Context::new(devices, ContextOptions::default()).expect("context");
    let n = 10_000;
    let (a, b, c) = (
        View::<f64, 1>::new("a", [n]).expect("a"),
        View::<f64, 1>::new("b", [n]).expect("b"),
        View::<f64, 1>::new("c", [n]).expect("c"),
    );
    ctx.launch("fill a", (n, (a.write(),)), |(i, (a,))| a.set(i, 1.0))
        .expect("launch");
    ctx.launch("fill b", (n, (b.write(),)), |(i, (b,))| b.set(i, 2.0))
        .expect("launch");
    ctx.launch(
        "c = a + b",
        (n, (c.write(), a.read(), b.read())),
        |(i, (c, a, b))| c.set(i, a.get(i) + b.get(i)),
    )
    .expect("launch");
    let sum = ctx
        .reduce(
            "sum c",
            (n, (c.read(),)),
            |(i, (c,)), acc| *acc += c.get(i),
            Sum::<f64>::new(),
        )
        .expect("launch");
    assert_eq!(sum.get().expect("the sum"), 3.0 * n as f64);
}
