//! CUDA Graphs behind hoplite-graph's `GraphBackend`: graphs of the generic builder
//! (`create_graph_with(&cuda, CudaGraph::new(&cuda), ..)`) whose structure and kernel arguments
//! are checked without a device; with a GPU the graphs run and match the eager launches.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::held::Access;
use hoplite_core::{ArrayLayout, LayoutLeft, LayoutRight, MDRangePolicy, TeamPolicy, View};
use hoplite_cuda::copy_to_device;
use hoplite_cuda::graph::CudaGraph;
use hoplite_cuda::{Cuda, CudaSpace, copy_to_host};
use hoplite_graph::{
    Graph, GraphBackend, GraphBuilder, GraphNodes, NodeId, NodeKernel, NodeKind, ReduceResult,
    create_graph_with,
};

mod support;

use support::{point_run, runs};

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
pub fn weighted<L: ArrayLayout>(ij: MdIdx<'_, 2>, a: BoundReader<'_, i64, 2, L>, acc: &mut i64) {
    *acc += a.get(ij) * (ij[0] as i64 + 1);
}

/// Row sums by teams, joined into one total.
#[kernel]
pub fn team_total<L: ArrayLayout>(
    m: &impl TeamMember,
    a: BoundReader<'_, i64, 2, L>,
    cols: usize,
    acc: &mut i64,
) {
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

/// A CUDA graph on `cuda` built by `build`.
fn cuda_graph(cuda: &Cuda, build: impl for<'g> FnOnce(&GraphBuilder<'g, Cuda>)) -> Graph<Cuda> {
    create_graph_with(cuda, CudaGraph::new(cuda), build).expect("construction needs no device")
}

/// Submits `graph`: `Ok(true)` where it ran, `Ok(false)` where only the device was missing.
fn submitted(graph: &mut Graph<Cuda>) -> Result<bool, hoplite_graph::GraphError> {
    match graph.submit() {
        Ok(()) => Ok(true),
        Err(e) if is_absence(&e.to_string()) => {
            println!("skipped running the graph: {e}");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[test]
fn kernel_nodes_check_their_arguments() {
    let cuda = Cuda::default();
    let y: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    // A writer of extent 0 cannot take 4 indices: refused when the node is added, named.
    let mut short = cuda_graph(&cuda, |g| {
        g.parallel_for(
            "ones",
            (RangePolicy::new(cuda.clone(), 0..4), (y.write(),)),
            ones::with(),
        );
    });
    let e = short.submit().expect_err("the writer is empty").to_string();
    assert!(
        e.contains("`ones`") && e.contains("cannot take every index"),
        "{e}"
    );
    // A valid chain runs, or stops at the missing device.
    let z: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let mut chain = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..0);
        g.parallel_for("ones", (range.clone(), (y.write(),)), ones::with())
            .then_parallel_for("scaled", (range, (z.write(), y.read())), scaled::with(3.0));
    });
    assert_eq!(chain.nodes().len(), 3, "the root and two kernel nodes");
    if submitted(&mut chain).expect("only the device may be missing") {
        assert!(Cuda::default().is_available());
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
    let y = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let z = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("z", [n]).expect("device memory");
    let mut graph = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..n);
        g.parallel_for("ones", (range.clone(), (y.write(),)), ones::with())
            .then_parallel_for("scaled", (range, (z.write(), y.read())), scaled::with(3.0));
    });
    graph.submit().expect("runs");
    graph.submit().expect("runs again");
    let mut out = vec![0.0; n];
    copy_to_host(&mut out, &z).expect("copy out");
    assert!(out.iter().all(|&v| v == 3.0));
}

#[test]
fn reduction_nodes_store_their_value_on_every_run() {
    let cuda = Cuda::default();
    let x: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let sum = ReduceResult::<f64>::new();
    let mut graph = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..0);
        g.parallel_reduce(
            "total",
            (range, (x.read(),)),
            total::with(),
            Sum::<f64>::new(),
            sum.clone(),
        );
    });
    assert_eq!(sum.get(), None, "no run yet");
    if submitted(&mut graph).expect("only the device may be missing") {
        assert_eq!(sum.get(), Some(0.0), "the identity of an empty range");
    }

    let Ok(cuda) = Cuda::new() else {
        println!("skipped the device run: no CUDA device");
        return;
    };
    let n = 100_000;
    let y = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let mut graph = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..n);
        g.parallel_for("ones", (range.clone(), (y.write(),)), ones::with())
            .then_parallel_reduce(
                "total",
                (range, (y.read(),)),
                total::with(),
                Sum::<f64>::new(),
                sum.clone(),
            );
    });
    for _ in 0..2 {
        graph.submit().expect("runs");
        assert_eq!(sum.get(), Some(n as f64));
    }
}

#[test]
fn scan_nodes_check_their_writer_and_run_their_two_passes() {
    let cuda = Cuda::default();
    let (x, y): (
        View<i64, 1, LayoutRight, CudaSpace>,
        View<i64, 1, LayoutRight, CudaSpace>,
    ) = (View::default(), View::default());
    let mut short = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..4);
        g.root()
            .then_parallel_scan("prefix", (range, (y.write(), x.read())), prefix::with());
    });
    let e = short
        .submit()
        .expect_err("a writer of extent 0 cannot take 4 indices")
        .to_string();
    assert!(e.contains("`prefix`") && !is_absence(&e), "{e}");
    let total = ReduceResult::<i64>::new();
    let mut empty = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..0);
        g.root().then_parallel_scan_into(
            "prefix",
            (range, (y.write(), x.read())),
            prefix::with(),
            total.clone(),
        );
    });
    if submitted(&mut empty).expect("only the device may be missing") {
        assert_eq!(total.get(), Some(0));
    }

    let Ok(cuda) = Cuda::new() else {
        println!("skipped the device run: no CUDA device");
        return;
    };
    let n = 50_000;
    let x = View::<i64, 1, LayoutRight, CudaSpace>::without_initializing("x", [n]).expect("device memory");
    let y = View::<i64, 1, LayoutRight, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let mut graph = cuda_graph(&cuda, |g| {
        let range = RangePolicy::new(cuda.clone(), 0..n);
        g.parallel_for("ones", (range.clone(), (x.write(),)), ones_i64::with())
            .then_parallel_scan_into(
                "prefix",
                (range, (y.write(), x.read())),
                prefix::with(),
                total.clone(),
            );
    });
    for _ in 0..2 {
        graph.submit().expect("runs");
        assert_eq!(total.get(), Some(n as i64));
        let mut out = vec![0i64; n];
        copy_to_host(&mut out, &y).expect("copy out");
        assert!(out.iter().enumerate().all(|(i, v)| *v == i as i64 + 1));
    }
}

#[test]
fn mdrange_and_team_reduction_nodes_are_checked_before_the_device() {
    let cuda = Cuda::default();
    let a: View<i64, 2, LayoutLeft, CudaSpace> = View::default();
    // A reducer that is not commutative over square tiles: joined tile by tile on the host
    // backends, which a device walk does not give; refused when the node is added, as the
    // eager reduction refuses it.
    let tiled = MDRangePolicy::new(cuda.clone(), [0, 0], [8, 8]).with_tiles([2, 2]);
    let mut unordered = cuda_graph(&cuda, |g| {
        g.parallel_reduce("runs", tiled, point_run::with(8, 1), runs(), ReduceResult::new());
    });
    let e = unordered
        .submit()
        .expect_err("tiles walked tile by tile")
        .to_string();
    assert!(e.contains("`runs`") && e.contains("is not commutative"), "{e}");

    let (md_sum, runs_of, team_sum) = (ReduceResult::new(), ReduceResult::new(), ReduceResult::new());
    let mut graph = cuda_graph(&cuda, |g| {
        let empty = MDRangePolicy::new(cuda.clone(), [0, 0], [0, 0]);
        let md = g.parallel_reduce(
            "weighted",
            (empty.clone(), (a.read(),)),
            weighted::with(),
            Sum::<i64>::new(),
            md_sum.clone(),
        );
        md.then_parallel_reduce("runs", empty, point_run::with(0, 1), runs(), runs_of.clone());
        // A team policy is validated against the device's team sizes: without a device
        // there is none (`mdrange_and_team_reduction_nodes_on_a_device` has the team node).
        if cuda.is_available() {
            let teams = TeamPolicy::new(cuda.clone(), 0, 32);
            md.then_parallel_reduce(
                "rows",
                (teams, (a.read(),)),
                team_total::with::<Cuda, _>(0),
                Sum::<i64>::new(),
                team_sum.clone(),
            );
        }
    });
    assert_eq!((md_sum.get(), team_sum.get()), (None, None), "no run yet");
    if submitted(&mut graph).expect("only the device may be missing") {
        assert_eq!(
            (md_sum.get(), runs_of.get(), team_sum.get()),
            (Some(0), Some(-1), Some(0))
        );
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
    let (md_sum, runs_of, team_sum) = (ReduceResult::new(), ReduceResult::new(), ReduceResult::new());
    let box_ = MDRangePolicy::new(cuda.clone(), [0, 0], [rows, cols]);
    let mut graph = cuda_graph(&cuda, |g| {
        let md = g.parallel_reduce(
            "weighted",
            (box_.clone(), (a.read(),)),
            weighted::with(),
            Sum::<i64>::new(),
            md_sum.clone(),
        );
        md.then_parallel_reduce(
            "runs",
            box_.clone(),
            point_run::with(cols, 1),
            runs(),
            runs_of.clone(),
        );
        let teams = TeamPolicy::new(cuda.clone(), rows, TeamSize::Auto);
        md.then_parallel_reduce(
            "rows",
            (teams, (a.read(),)),
            team_total::with::<Cuda, _>(cols),
            Sum::<i64>::new(),
            team_sum.clone(),
        );
    });
    for run in 0..2 {
        graph.submit().expect("runs");
        assert_eq!(md_sum.get(), Some(want), "run {run}");
        assert_eq!(
            runs_of.get(),
            Some((rows * cols) as i64),
            "run {run}: index order"
        );
        assert_eq!(team_sum.get(), Some(total), "run {run}");
    }
    // The eager reduction gives the same value.
    let eager = parallel_reduce(
        "weighted",
        (box_, (a.read(),)),
        weighted::with(),
        Sum::<i64>::new(),
    )
    .expect("mdrange");
    assert_eq!(eager, want);
}
