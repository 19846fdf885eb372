//! CUDA Graphs behind hoplite-graph's `GraphBackend`: the structure and the kernel arguments
//! are checked without a device; with a GPU the graphs run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::{LayoutLeft, TeamPolicy, View};
use hoplite_cuda::copy_to_device;
use hoplite_cuda::graph::CudaGraph;
use hoplite_cuda::{Cuda, CudaError, CudaSpace, DeviceArg, copy_to_host};
use hoplite_graph::{Access, GraphBackend, GraphNodes, NodeId, NodeKernel, NodeKind, create_graph_with};

/// `y = 1`.
#[kernel]
pub fn ones(i: Idx<'_>, y: BoundWriter<'_, f64, 1>) {
    y.set(i, 1.0);
}

/// `z = a y`.
#[kernel]
pub fn scaled(i: Idx<'_>, z: BoundWriter<'_, f64, 1>, y: BoundReader<'_, f64, 1>, a: f64) {
    z.set(i, a * y.get(i));
}

/// A sum.
#[kernel]
pub fn total(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i);
}

/// An inclusive prefix sum.
#[kernel]
pub fn prefix(
    i: Idx<'_>,
    y: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    acc: &mut i64,
    is_final: bool,
) {
    *acc += x.get(i);
    if is_final {
        y.set(i, *acc);
    }
}

/// A weighted sum over a rank-2 MDRange.
#[kernel]
pub fn weighted(ij: MdIdx<'_, 2>, a: BoundReader<'_, i64, 2>, acc: &mut i64) {
    *acc += a.get(ij) * (ij[0] as i64 + 1);
}

/// Row sums by teams, joined into one total.
#[kernel]
pub fn team_total(m: &impl TeamMember, a: BoundReader<'_, i64, 2>, cols: usize, acc: &mut i64) {
    let row = m.league_rank();
    let mut part = 0i64;
    let mut j = m.team_rank();
    while j < cols {
        part += a.get([row, j]);
        j += m.team_size();
    }
    *acc += part;
}

/// `x = 1`.
#[kernel]
pub fn ones_i64(i: Idx<'_>, x: BoundWriter<'_, i64, 1>) {
    x.set(i, 1);
}

/// A node of a kind a CUDA graph cannot hold: a closure launch.
struct ClosureLaunch;

impl NodeKernel<Cuda> for ClosureLaunch {
    fn label(&self) -> &str {
        "closure"
    }
    fn kind(&self) -> NodeKind {
        NodeKind::For
    }
    fn accesses(&self) -> &[Access] {
        &[]
    }
    fn work(&self) -> Option<usize> {
        Some(1)
    }
    fn run(&self) -> hoplite_core::Result<()> {
        Ok(())
    }
    fn run_on(&self, _space: &Cuda) -> hoplite_core::Result<()> {
        Ok(())
    }
}

fn is_absence(e: &str) -> bool {
    e.contains("CUDA driver") || e.contains("no CUDA device")
}

#[test]
fn the_structure_is_checked_before_the_device() {
    let cuda = Cuda::default();
    // A predecessor that is not an earlier node: the list refuses it.
    let mut g = CudaGraph::new(&cuda);
    let mut nodes = GraphNodes::new();
    let root = g.create_root_node();
    let root = nodes.add(root, &[]).expect("the root");
    g.add_node(&nodes, root);
    let join = g.create_aggregate(&[root]);
    let e = nodes
        .add(join, &[root, NodeId(1)])
        .expect_err("a node waiting for itself");
    assert!(e.to_string().contains("a predecessor is an earlier node"), "{e}");

    // A closure launch cannot be a CUDA graph node.
    let mut g = CudaGraph::new(&cuda);
    let mut nodes = GraphNodes::new();
    let root = g.create_root_node();
    let root = nodes.add(root, &[]).expect("the root");
    g.add_node(&nodes, root);
    let closure = nodes.add(Arc::new(ClosureLaunch), &[root]).expect("a node");
    g.add_node(&nodes, closure);
    let e = g.instantiate(&nodes).expect_err("a closure launch");
    assert!(e.to_string().contains("cannot run"), "{e}");

    // Nodes out of order: the backend is told of node 1 before node 0.
    let mut g = CudaGraph::new(&cuda);
    let mut nodes = GraphNodes::new();
    let root = nodes.add(Arc::new(ClosureLaunch), &[]).expect("a node");
    let second = nodes.add(Arc::new(ClosureLaunch), &[root]).expect("a node");
    g.add_node(&nodes, second);
    assert!(g.instantiate(&nodes).is_err());

    // A node that is not in the list.
    let mut g = CudaGraph::new(&cuda);
    g.add_node(&nodes, NodeId(7));
    let e = g.instantiate(&nodes).expect_err("a node not in the list");
    assert!(e.to_string().contains("not in the graph's node list"), "{e}");
}

#[test]
fn kernel_nodes_check_their_arguments() {
    let y: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    let mut g = CudaGraph::new(&Cuda::default());
    let e = g
        .kernel_range::<ones>(0..4, &[DeviceArg::write(&y)], &[])
        .expect_err("the writer is empty");
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    let e = g
        .kernel_range::<scaled>(0..0, &[DeviceArg::write(&y)], &[])
        .expect_err("too few arguments");
    assert!(e.to_string().contains("1 arguments for 3 parameters"), "{e}");
    let a = g
        .kernel_range::<ones>(0..0, &[DeviceArg::write(&y)], &[])
        .expect("valid");
    let e = g
        .kernel_range::<ones>(0..0, &[DeviceArg::write(&y)], &[NodeId(7)])
        .expect_err("a later node");
    assert!(matches!(e, CudaError::InvalidGraph { .. }), "{e}");
    let b = g.join(&[a]).expect("a join");
    assert_eq!((a.0, b.0, g.len()), (0, 1, 2));
    match g.run() {
        Ok(()) => assert!(Cuda::default().is_available()),
        Err(e) => {
            assert!(is_absence(&e.to_string()), "{e}");
            println!("skipped running the graph: {e}");
        }
    }
}

#[test]
fn front_end_graphs_of_host_nodes() {
    let cuda = Cuda::default();
    let count = Arc::new(AtomicUsize::new(0));
    let (c1, c2, c3) = (count.clone(), count.clone(), count.clone());
    let mut graph = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
        let a = g.host("a", move || {
            c1.fetch_add(1, Ordering::SeqCst);
        });
        let b = g.host("b", move || {
            c2.fetch_add(1, Ordering::SeqCst);
        });
        g.when_all([a.erase(), b.erase()]).then_host("c", move || {
            c3.fetch_add(10, Ordering::SeqCst);
        });
    })
    .expect("construction needs no device");
    match graph.submit() {
        Ok(()) => {
            graph.submit().expect("a second submit");
            assert_eq!(count.load(Ordering::SeqCst), 24);
        }
        Err(e) => {
            assert!(is_absence(&e.to_string()), "{e}");
            assert_eq!(count.load(Ordering::SeqCst), 0);
            println!("skipped running the graph: {e}");
        }
    }
}

#[test]
fn kernel_graphs_on_a_device() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: no device ({e})");
            return;
        }
    };
    let n = 4096;
    let y = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let z = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("z", [n]).expect("device memory");
    let mut g = CudaGraph::new(&cuda);
    let a = g
        .kernel_range::<ones>(0..n, &[DeviceArg::write(&y)], &[])
        .expect("valid");
    g.kernel_range::<scaled>(
        0..n,
        &[DeviceArg::write(&z), DeviceArg::read(&y), DeviceArg::scalar(3.0)],
        &[a],
    )
    .expect("valid");
    g.run().expect("runs");
    g.run().expect("runs again");
    let mut out = vec![0.0; n];
    copy_to_host(&mut out, &z).expect("copy out");
    assert!(out.iter().all(|&v| v == 3.0));
}

#[test]
fn reduction_nodes_check_the_reducer_and_arguments_before_the_device() {
    let cuda = Cuda::default();
    let x: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    let mut g = CudaGraph::new(&cuda);
    let e = g
        .reduce_range::<total, _>(0..0, &[DeviceArg::read(&x)], Sum::<f32>::new(), &[])
        .expect_err("the accumulator is f64");
    assert!(
        matches!(e, CudaError::InvalidLaunch { kernel: "total", .. }),
        "{e}"
    );
    let e = g
        .reduce_range::<total, _>(0..0, &[DeviceArg::scalar(1.0)], Sum::<f64>::new(), &[])
        .expect_err("a scalar for a reader");
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    let e = g
        .reduce_range::<total, _>(0..0, &[DeviceArg::read(&x)], Sum::<f64>::new(), &[NodeId(3)])
        .expect_err("no node 3 yet");
    assert!(matches!(e, CudaError::InvalidGraph { .. }), "{e}");
    assert!(g.is_empty(), "refused nodes are not added");
    let (node, sum) = g
        .reduce_range::<total, _>(0..0, &[DeviceArg::read(&x)], Sum::<f64>::new(), &[])
        .expect("valid");
    assert_eq!(node, NodeId(0));
    assert_eq!(sum.value(), None, "no run yet");
    match g.run() {
        Ok(()) => assert_eq!(sum.value(), Some(0.0)),
        Err(e) => assert!(is_absence(&e.to_string()), "{e}"),
    }
}

#[test]
fn reduction_nodes_on_a_device() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: no device ({e})");
            return;
        }
    };
    let n = 100_000;
    let y = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let mut g = CudaGraph::new(&cuda);
    let fill = g
        .kernel_range::<ones>(0..n, &[DeviceArg::write(&y)], &[])
        .expect("valid");
    let (_, sum) = g
        .reduce_range::<total, _>(0..n, &[DeviceArg::read(&y)], Sum::<f64>::new(), &[fill])
        .expect("valid");
    g.run().expect("runs");
    assert_eq!(sum.value(), Some(n as f64));
    g.run().expect("runs again");
    assert_eq!(sum.value(), Some(n as f64));
}

#[test]
fn scan_nodes_check_their_value_type_and_run_their_two_passes() {
    let cuda = Cuda::default();
    let (x, y): (
        View<i64, 1, LayoutLeft, CudaSpace>,
        View<i64, 1, LayoutLeft, CudaSpace>,
    ) = (View::default(), View::default());
    let mut g = CudaGraph::new(&cuda);
    let e = g
        .scan_range::<prefix, f64>(0..0, &[DeviceArg::write(&y), DeviceArg::read(&x)], &[])
        .expect_err("the kernel scans i64");
    assert!(
        matches!(e, CudaError::InvalidLaunch { kernel: "prefix", .. }),
        "{e}"
    );
    let e = g
        .scan_range::<prefix, i64>(0..4, &[DeviceArg::write(&y), DeviceArg::read(&x)], &[])
        .expect_err("a writer of extent 0 cannot take 4 indices");
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    let (_, total) = g
        .scan_range::<prefix, i64>(0..0, &[DeviceArg::write(&y), DeviceArg::read(&x)], &[])
        .expect("valid");
    assert_eq!(total.value(), None);
    match g.run() {
        Ok(()) => assert_eq!(total.value(), Some(0)),
        Err(e) => assert!(is_absence(&e.to_string()), "{e}"),
    }

    let Ok(cuda) = Cuda::new() else {
        println!("skipped the device run: no CUDA device");
        return;
    };
    let n = 50_000;
    let x = View::<i64, 1, LayoutLeft, CudaSpace>::without_initializing("x", [n]).expect("device memory");
    let y = View::<i64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let mut g = CudaGraph::new(&cuda);
    let fill = g
        .kernel_range::<ones_i64>(0..n, &[DeviceArg::write(&x)], &[])
        .expect("valid");
    let (_, total) = g
        .scan_range::<prefix, i64>(0..n, &[DeviceArg::write(&y), DeviceArg::read(&x)], &[fill])
        .expect("valid");
    for _ in 0..2 {
        g.run().expect("runs");
        assert_eq!(total.value(), Some(n as i64));
        let mut out = vec![0i64; n];
        copy_to_host(&mut out, &y).expect("copy out");
        assert!(out.iter().enumerate().all(|(i, v)| *v == i as i64 + 1));
    }
}

#[test]
fn mdrange_and_team_reduction_nodes_are_checked_before_the_device() {
    let cuda = Cuda::default();
    let a: View<i64, 2, LayoutLeft, CudaSpace> = View::default();
    let mut g = CudaGraph::new(&cuda);
    let e = g
        .reduce_mdrange::<weighted, _, 2>([0, 0], [0, 0], &[DeviceArg::read(&a)], Sum::<f64>::new(), &[])
        .expect_err("the accumulator is i64");
    assert!(
        matches!(
            e,
            CudaError::InvalidLaunch {
                kernel: "weighted",
                ..
            }
        ),
        "{e}"
    );
    let e = g
        .reduce_mdrange::<weighted, _, 3>(
            [0, 0, 0],
            [0, 0, 0],
            &[DeviceArg::read(&a)],
            Sum::<i64>::new(),
            &[],
        )
        .expect_err("a rank-2 kernel over a rank-3 MDRange");
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    let e = g
        .reduce_mdrange::<weighted, _, 2>([0, 0], [0, 0], &[DeviceArg::scalar(1i64)], Sum::<i64>::new(), &[])
        .expect_err("a scalar for a reader");
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    let policy = TeamPolicy::new(cuda.clone(), 0, TeamSize::Auto);
    let team_args = [DeviceArg::read(&a), DeviceArg::scalar(0usize)];
    let e = g
        .reduce_team::<team_total, _>(&policy, &team_args, Sum::<f64>::new(), &[])
        .expect_err("the accumulator is i64");
    assert!(
        matches!(
            e,
            CudaError::InvalidLaunch {
                kernel: "team_total",
                ..
            }
        ),
        "{e}"
    );
    let e = g
        .reduce_team::<weighted, _>(&policy, &[DeviceArg::read(&a)], Sum::<i64>::new(), &[])
        .expect_err("an MDRange kernel over a league");
    assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    let e = g
        .reduce_team::<team_total, _>(&policy, &team_args, Sum::<i64>::new(), &[NodeId(0)])
        .expect_err("no node 0 yet");
    assert!(matches!(e, CudaError::InvalidGraph { .. }), "{e}");
    assert!(g.is_empty(), "refused nodes are not added");

    let (md, md_sum) = g
        .reduce_mdrange::<weighted, _, 2>([0, 0], [0, 0], &[DeviceArg::read(&a)], Sum::<i64>::new(), &[])
        .expect("valid");
    let (teams, team_sum) = g
        .reduce_team::<team_total, _>(&policy, &team_args, Sum::<i64>::new(), &[md])
        .expect("valid");
    assert_eq!((md, teams), (NodeId(0), NodeId(1)));
    assert_eq!((md_sum.value(), team_sum.value()), (None, None), "no run yet");
    match g.run() {
        Ok(()) => assert_eq!((md_sum.value(), team_sum.value()), (Some(0), Some(0))),
        Err(e) => assert!(is_absence(&e.to_string()), "{e}"),
    }
}

#[test]
fn mdrange_and_team_reduction_nodes_on_a_device() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: no device ({e})");
            return;
        }
    };
    let (rows, cols) = (300, 170);
    let a = View::<i64, 2, LayoutLeft, CudaSpace>::without_initializing("a", [rows, cols])
        .expect("device memory");
    let grid: Vec<i64> = (0..rows * cols).map(|k| (k % 11) as i64 - 5).collect();
    copy_to_device(&a, &grid).expect("copy in");
    let (mut want, mut total) = (0i64, 0i64);
    for j in 0..cols {
        for i in 0..rows {
            let v = grid[i + j * rows]; // LayoutLeft
            want += v * (i as i64 + 1);
            total += v;
        }
    }
    let mut g = CudaGraph::new(&cuda);
    let (md, md_sum) = g
        .reduce_mdrange::<weighted, _, 2>(
            [0, 0],
            [rows, cols],
            &[DeviceArg::read(&a)],
            Sum::<i64>::new(),
            &[],
        )
        .expect("valid");
    let policy = TeamPolicy::new(cuda.clone(), rows, TeamSize::Auto);
    let (_, team_sum) = g
        .reduce_team::<team_total, _>(
            &policy,
            &[DeviceArg::read(&a), DeviceArg::scalar(cols)],
            Sum::<i64>::new(),
            &[md],
        )
        .expect("valid");
    for run in 0..2 {
        g.run().expect("runs");
        assert_eq!(md_sum.value(), Some(want), "run {run}");
        assert_eq!(team_sum.value(), Some(total), "run {run}");
    }
    // The eager reductions give the same values.
    let eager = cuda
        .reduce_mdrange::<weighted, _, 2>([0, 0], [rows, cols], &[DeviceArg::read(&a)], &Sum::<i64>::new())
        .expect("mdrange");
    assert_eq!(eager, want);
}
