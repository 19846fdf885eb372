//! One launch on every backend: the core's `parallel_for`, `parallel_reduce` and
//! `parallel_scan` with `#[kernel]` kernels run on `Cuda` as on the host backends, from one
//! generic function. Without a device, every check that needs none runs (closures and host
//! views are refused with typed errors; a kernel that does not fit its launch is a type error)
//! and the launches report the missing driver or device; with one, the results match the
//! serial backend's.

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::{
    Error, LaunchSpace, LayoutRight, MDRangePolicy, MemorySpace, SpaceAccessibility, TeamPolicy, TeamSize,
};
use hoplite_cuda::{
    Cuda, CudaHostPinnedSpace, CudaSpace, CudaUVMSpace, create_mirror_view, create_mirror_view_in,
};
use hoplite_serial::Serial;

#[kernel]
fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i) + y.get(i));
}

#[kernel]
fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

#[kernel]
fn laplace(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    let sum =
        u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    out.set(ij, sum - 4.0 * u.get(ij));
}

/// Row sums by teams, joined into one total.
#[kernel]
fn team_total(m: &impl TeamMember, a: BoundReader<'_, f64, 2>, cols: usize, acc: &mut f64) {
    let row = m.league_rank();
    let mut part = 0.0;
    let mut j = m.team_rank();
    while j < cols {
        part += a.get([row, j]);
        j += m.team_size();
    }
    *acc += part;
}

#[kernel]
fn exclusive_prefix(
    i: Idx<'_>,
    out: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    acc: &mut i64,
    is_final: bool,
) {
    if is_final {
        out.set(i, *acc);
    }
    *acc += x.get(i);
}

#[kernel]
fn count(i: Idx<'_>, acc: &mut u64) {
    *acc += *i as u64;
}

/// What the generic pipeline computed, read back to the host.
#[derive(Debug, PartialEq)]
struct Results {
    y: Vec<f64>,
    dot: f64,
    laplace: Vec<f64>,
    team_total: f64,
    prefix: Vec<i64>,
    scan_total: i64,
}

/// One function for every backend: axpy, dot, a 2-D stencil, a team reduction and a scan,
/// over views of memory space `M` that the caller filled.
#[allow(clippy::too_many_arguments)]
fn pipeline<S, M>(
    space: &S,
    y: &View<f64, 1, LayoutRight, M>,
    x: &View<f64, 1, LayoutRight, M>,
    u: &View<f64, 2, LayoutRight, M>,
    out: &View<f64, 2, LayoutRight, M>,
    counts: &View<i64, 1, LayoutRight, M>,
    offsets: &View<i64, 1, LayoutRight, M>,
) -> hoplite_core::Result<(f64, f64, i64)>
where
    S: LaunchSpace + SpaceAccessibility<M>,
    M: MemorySpace,
{
    let n = y.extent(0);
    let range = RangePolicy::new(space.clone(), 0..n);
    parallel_for("axpy", (range.clone(), (y.write(), x.read())), axpy::with(0.5))?;
    let d = parallel_reduce("dot", (range, (x.read(), y.read())), dot::with(), Sum::new())?;
    let [rows, cols] = u.extents();
    let interior = MDRangePolicy::new(space.clone(), [1, 1], [rows - 1, cols - 1]);
    parallel_for("laplace", (interior, (out.write(), u.read())), laplace::with())?;
    let teams = TeamPolicy::new(space.clone(), rows, TeamSize::Auto);
    let t = parallel_reduce(
        "rows",
        (teams, (u.read(),)),
        team_total::with::<S>(cols),
        Sum::new(),
    )?;
    let m = counts.extent(0);
    let total = parallel_scan(
        "prefix",
        (
            RangePolicy::new(space.clone(), 0..m),
            (offsets.write(), counts.read()),
        ),
        exclusive_prefix::with(),
    )?;
    Ok((d, t, total))
}

const N: usize = 1000;
const GRID: [usize; 2] = [40, 30];

fn x_values() -> Vec<f64> {
    (0..N).map(|k| (k % 17) as f64).collect()
}
fn y_values() -> Vec<f64> {
    (0..N).map(|k| k as f64 * 0.25).collect()
}
fn u_values() -> Vec<f64> {
    (0..GRID[0] * GRID[1]).map(|k| ((k * 7) % 11) as f64).collect()
}
fn count_values() -> Vec<i64> {
    (0..N as i64).map(|k| k % 5).collect()
}

/// Cuda is a launch space: the generic function above takes it.
const _: fn() = || {
    fn launch_space<S: LaunchSpace>() {}
    launch_space::<Cuda>();
};

/// Fills views in `S`'s own memory, runs the pipeline and reads the results back: the same
/// code for host and device memory (`from_slice` and `to_vec` copy through the memory
/// space).
fn run<S: LaunchSpace>(space: &S) -> hoplite_core::Result<Results> {
    type Mem<S, T, const R: usize> = View<T, R, LayoutRight, <S as ExecutionSpace>::MemorySpace>;
    let y = Mem::<S, f64, 1>::from_slice("y", [N], &y_values())?;
    let x = Mem::<S, f64, 1>::from_slice("x", [N], &x_values())?;
    let u = Mem::<S, f64, 2>::from_slice("u", GRID, &u_values())?;
    let out = Mem::<S, f64, 2>::new("out", GRID)?;
    let counts = Mem::<S, i64, 1>::from_slice("counts", [N], &count_values())?;
    let offsets = Mem::<S, i64, 1>::new("offsets", [N])?;
    let (dot, team_total, scan_total) = pipeline(space, &y, &x, &u, &out, &counts, &offsets)?;
    Ok(Results {
        y: y.to_vec()?,
        dot,
        laplace: out.to_vec()?,
        team_total,
        prefix: offsets.to_vec()?,
        scan_total,
    })
}

#[test]
fn the_same_generic_launches_run_on_serial_rayon_and_cuda() {
    let expected = run(&Serial::default()).expect("runs on serial");
    assert_eq!(expected.scan_total, count_values().iter().sum::<i64>());
    assert_eq!(
        run(&hoplite::RayonSpace::default()).expect("runs on rayon"),
        expected,
        "rayon computes what serial does"
    );
    let cuda = match Cuda::new() {
        Ok(cuda) => cuda,
        Err(why) => {
            // Without a device the launch itself reports it, as a typed error.
            let e = parallel_reduce(
                "count",
                RangePolicy::new(Cuda::default(), 0..100),
                count::with(),
                Sum::new(),
            )
            .expect_err("no device");
            assert!(matches!(e, Error::Device { space: "Cuda", .. }), "{e}");
            // So does a team launch, of the recommended size or of one any GPU allows, with
            // scratch: the policy is validated as on any GPU, and the launch then says the
            // device is missing, not that the team is too large.
            let u: View<f64, 2, LayoutRight, CudaSpace> = View::default();
            for teams in [
                TeamPolicy::new(Cuda::default(), 4, TeamSize::Auto),
                TeamPolicy::new(Cuda::default(), 4, 256).with_scratch_size(0, PerTeam(4096), PerThread(0)),
            ] {
                let e = parallel_reduce(
                    "rows",
                    (teams, (u.read(),)),
                    team_total::with::<Cuda>(0),
                    Sum::new(),
                )
                .expect_err("no device");
                assert!(matches!(e, Error::Device { space: "Cuda", .. }), "{e}");
            }
            println!("skipped the device half: needs a CUDA device ({why})");
            return;
        }
    };
    let got = run(&cuda).expect("runs on Cuda");
    assert_eq!(got.y, expected.y);
    assert_eq!(got.laplace, expected.laplace);
    assert_eq!(got.prefix, expected.prefix);
    assert_eq!(got.scan_total, expected.scan_total);
    // Sums of small integers and quarters: exact in any order.
    assert_eq!(got.dot, expected.dot);
    assert_eq!(got.team_total, expected.team_total);
}

#[test]
fn a_closure_on_cuda_is_refused_with_an_error_that_names_the_fix() {
    let e = parallel_for("on the device", RangePolicy::new(Cuda::default(), 0..4), |_i| {})
        .expect_err("a GPU runs no closures");
    assert!(
        matches!(&e, Error::NotADeviceKernel { label, space: "Cuda" } if label == "on the device"),
        "{e}"
    );
    assert!(e.to_string().contains("#[kernel]"), "{e}");
    // A closure that wraps a `#[kernel]` is still a closure.
    let k = count::with();
    let e = parallel_reduce(
        "wrapped",
        RangePolicy::new(Cuda::default(), 0..4),
        move |i, acc: &mut u64| k(i, acc),
        Sum::new(),
    )
    .expect_err("a GPU runs no closures");
    assert!(matches!(e, Error::NotADeviceKernel { .. }), "{e}");
}

#[test]
fn host_views_in_a_cuda_launch_are_refused_before_the_device() {
    let cuda = Cuda::default();
    let y = View::<f64, 1>::new("host y", [8]).expect("host memory");
    let x = View::<f64, 1>::new("host x", [8]).expect("host memory");
    let e = parallel_for(
        "axpy",
        (RangePolicy::new(cuda.clone(), 0..8), (y.write(), x.read())),
        axpy::with(1.0),
    )
    .expect_err("host memory");
    assert!(e.to_string().contains("`host y`"), "{e}");
}

#[test]
fn empty_launches_need_no_device() {
    let y: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let x: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let cuda = Cuda::default();
    let r = parallel_for(
        "nothing",
        (RangePolicy::new(cuda.clone(), 0..0), (y.write(), x.read())),
        axpy::with(2.0),
    );
    match (r, Cuda::new()) {
        (Ok(()), _) => {}
        (Err(e), Err(_)) => assert!(
            matches!(e, Error::Device { .. }),
            "only the fence may need the driver: {e}"
        ),
        (Err(e), Ok(_)) => panic!("an empty launch on a device: {e}"),
    }
}

/// The implicit DAG's generic launches reach `Cuda` too: its vertices run the same
/// `#[kernel]` launches on the context's CUDA streams.
#[cfg(feature = "dag")]
mod dag {
    use super::*;
    use hoplite_cuda::dag::CudaDevice;
    use hoplite_dag::device::HostDevice;
    use hoplite_dag::{Context, ContextOptions};

    #[test]
    fn vertices_launch_kernels_on_cuda_and_refuse_closures() {
        let device = HostDevice::new("cuda", vec![Cuda::default()]).expect("one instance");
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let e = ctx
            .reduce("closure", 0..4usize, |_i, acc: &mut u64| *acc += 1, Sum::new())
            .expect("submitted")
            .get()
            .expect_err("a GPU runs no closures");
        assert!(e.to_string().contains("#[kernel]"), "{e}");
        let total = ctx
            .reduce("count", 0..100usize, count::with(), Sum::new())
            .expect("submitted")
            .get();
        match (total, Cuda::new()) {
            (Ok(t), Ok(_)) => assert_eq!(t, 4950),
            (Err(e), Err(_)) => assert!(e.to_string().contains("Cuda"), "the missing device: {e}"),
            (r, d) => panic!("{r:?} with device {:?}", d.map(|_| ())),
        }
    }

    #[test]
    fn a_dag_on_cuda_streams_computes_what_serial_does() {
        let device = match CudaDevice::new(0, 2) {
            Ok(d) => d,
            Err(e) => {
                println!("skipped: needs a CUDA device ({e})");
                return;
            }
        };
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let y = View::<f64, 1, LayoutRight, CudaSpace>::from_slice("y", [N], &y_values()).expect("uploads");
        let x = View::<f64, 1, LayoutRight, CudaSpace>::from_slice("x", [N], &x_values()).expect("uploads");
        ctx.launch("axpy", (N, (y.write(), x.read())), axpy::with(0.5))
            .expect("submitted");
        let d = ctx
            .reduce("dot", (N, (x.read(), y.read())), dot::with(), Sum::new())
            .expect("submitted");
        let dot = d.get().expect("reduced");
        ctx.synchronize().expect("the vertices ran");
        let expected = run(&Serial::default()).expect("runs on serial");
        assert_eq!(y.to_vec().expect("downloads"), expected.y);
        assert_eq!(dot, expected.dot);
    }
}

/// The generic graph builder reaches `Cuda` too: the same `then_parallel_for`,
/// `then_parallel_reduce` and `then_parallel_scan_into` of `#[kernel]`s become CUDA Graph
/// nodes (`create_graph_with` and `CudaGraph`), or run node by node through the one launch
/// (`create_graph`).
#[cfg(feature = "graph")]
mod graph {
    use super::*;
    use hoplite_cuda::graph::CudaGraph;
    use hoplite_graph::{GraphBuilder, ReduceResult, create_graph, create_graph_with};

    fn is_absence(e: &str) -> bool {
        e.contains("driver") || e.contains("device")
    }

    /// Where a graph's reduce and scan nodes leave their values.
    #[derive(Clone, Default)]
    struct Totals {
        dot: ReduceResult<f64>,
        rows: ReduceResult<f64>,
        scan: ReduceResult<i64>,
    }

    /// The pipeline's launches as graph nodes, generic over the space: axpy, then a dot
    /// product, a team reduction (with `teams`: `TeamSize::Auto` needs a device on `Cuda`) and
    /// a scan after it.
    #[allow(clippy::too_many_arguments)]
    fn pipeline_nodes<S, M>(
        g: &GraphBuilder<'_, S>,
        space: &S,
        y: &View<f64, 1, LayoutRight, M>,
        x: &View<f64, 1, LayoutRight, M>,
        u: &View<f64, 2, LayoutRight, M>,
        counts: &View<i64, 1, LayoutRight, M>,
        offsets: &View<i64, 1, LayoutRight, M>,
        totals: &Totals,
        teams: bool,
    ) where
        S: LaunchSpace + SpaceAccessibility<M>,
        M: MemorySpace,
    {
        let range = RangePolicy::new(space.clone(), 0..y.extent(0));
        let axpy =
            g.root()
                .then_parallel_for("axpy", (range.clone(), (y.write(), x.read())), axpy::with(0.5));
        axpy.then_parallel_reduce(
            "dot",
            (range, (x.read(), y.read())),
            dot::with(),
            Sum::<f64>::new(),
            totals.dot.clone(),
        );
        let [rows, cols] = u.extents();
        if teams {
            axpy.then_parallel_reduce(
                "rows",
                (TeamPolicy::new(space.clone(), rows, TeamSize::Auto), (u.read(),)),
                team_total::with::<S>(cols),
                Sum::<f64>::new(),
                totals.rows.clone(),
            );
        }
        axpy.then_parallel_scan_into(
            "prefix",
            (
                RangePolicy::new(space.clone(), 0..counts.extent(0)),
                (offsets.write(), counts.read()),
            ),
            exclusive_prefix::with(),
            totals.scan.clone(),
        );
    }

    #[test]
    fn reduce_and_scan_nodes_of_the_generic_builder_become_cuda_graph_reductions() {
        let cuda = Cuda::default();
        let (y, x) = (View::default(), View::default());
        let u: View<f64, 2, LayoutRight, CudaSpace> = View::default();
        let (counts, offsets) = (View::default(), View::default());
        let totals = Totals::default();
        let mut graph = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            pipeline_nodes(g, &cuda, &y, &x, &u, &counts, &offsets, &totals, false);
        })
        .expect("construction needs no device");
        match graph.submit() {
            Ok(()) => {
                assert!(Cuda::new().is_ok(), "ran without a device");
                assert_eq!(totals.dot.get(), Some(0.0));
                assert_eq!(totals.scan.get(), Some(0));
            }
            Err(e) => assert!(is_absence(&e.to_string()), "only the device may be missing: {e}"),
        }

        // A reduction of a closure is refused with the fix, before any device is needed.
        let total = ReduceResult::<u64>::new();
        let mut closures = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            g.root().then_parallel_reduce(
                "closure sum",
                RangePolicy::new(cuda.clone(), 0..4),
                |i, acc: &mut u64| *acc += *i as u64,
                Sum::new(),
                total.clone(),
            );
        })
        .expect("construction");
        let e = closures.submit().expect_err("a GPU runs no closures");
        assert!(e.to_string().contains("parallel_reduce of a closure"), "{e}");

        // So is a scan whose writer cannot hold its range: checked when the node is added.
        let mut short = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            g.root().then_parallel_scan_into(
                "short prefix",
                (
                    RangePolicy::new(cuda.clone(), 0..8),
                    (offsets.write(), counts.read()),
                ),
                exclusive_prefix::with(),
                ReduceResult::<i64>::new(),
            );
        })
        .expect("construction");
        let e = short.submit().expect_err("the writer has extent 0").to_string();
        assert!(e.contains("short prefix") && !is_absence(&e), "{e}");
    }

    #[test]
    fn graph_reductions_on_a_device_compute_what_serial_does() {
        let cuda = match Cuda::new() {
            Ok(c) => c,
            Err(e) => {
                println!("skipped: needs a CUDA device ({e})");
                return;
            }
        };
        let serial = Serial::default();
        // `axpy` updates `y` in place, so each submit's dot differs: the serial graph is
        // submitted as often as the CUDA one, and submit k is compared with serial submit k.
        /// What one serial submit leaves: the prefixes and the three reduction values.
        struct Submitted {
            offsets: Vec<i64>,
            dot: Option<f64>,
            rows: Option<f64>,
            scan: Option<i64>,
        }
        let wants: Vec<Submitted> = {
            let y = View::<f64, 1, LayoutRight>::from_slice("y", [N], &y_values()).expect("fills");
            let x = View::<f64, 1, LayoutRight>::from_slice("x", [N], &x_values()).expect("fills");
            let u = View::<f64, 2, LayoutRight>::from_slice("u", GRID, &u_values()).expect("fills");
            let counts = View::<i64, 1, LayoutRight>::from_slice("c", [N], &count_values()).expect("fills");
            let offsets = View::<i64, 1, LayoutRight>::new("o", [N]).expect("allocates");
            let totals = Totals::default();
            let mut graph = create_graph(&serial, |g| {
                pipeline_nodes(g, &serial, &y, &x, &u, &counts, &offsets, &totals, true);
            })
            .expect("builds");
            (0..2)
                .map(|_| {
                    graph.submit().expect("runs on serial");
                    Submitted {
                        offsets: offsets.to_vec().expect("reads"),
                        dot: totals.dot.get(),
                        rows: totals.rows.get(),
                        scan: totals.scan.get(),
                    }
                })
                .collect()
        };
        let y = View::<f64, 1, LayoutRight, CudaSpace>::from_slice("y", [N], &y_values()).expect("uploads");
        let x = View::<f64, 1, LayoutRight, CudaSpace>::from_slice("x", [N], &x_values()).expect("uploads");
        let u = View::<f64, 2, LayoutRight, CudaSpace>::from_slice("u", GRID, &u_values()).expect("uploads");
        let counts =
            View::<i64, 1, LayoutRight, CudaSpace>::from_slice("c", [N], &count_values()).expect("uploads");
        let offsets = View::<i64, 1, LayoutRight, CudaSpace>::new("o", [N]).expect("allocates");
        let totals = Totals::default();
        let mut graph = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            pipeline_nodes(g, &cuda, &y, &x, &u, &counts, &offsets, &totals, true);
        })
        .expect("builds");
        for (submit, want) in wants.into_iter().enumerate() {
            graph.submit().expect("runs as a CUDA graph");
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                _ => false,
            };
            assert!(close(totals.dot.get(), want.dot), "submit {submit}: dot");
            assert!(close(totals.rows.get(), want.rows), "submit {submit}: rows");
            assert_eq!(totals.scan.get(), want.scan, "submit {submit}: scan total");
            assert_eq!(
                offsets.to_vec().expect("downloads"),
                want.offsets,
                "submit {submit}: prefixes"
            );
        }
    }

    #[test]
    fn kernel_nodes_of_the_generic_builder_become_cuda_graph_kernel_nodes() {
        let cuda = Cuda::default();
        let y: View<f64, 1, LayoutRight, CudaSpace> = View::default();
        let x: View<f64, 1, LayoutRight, CudaSpace> = View::default();
        let mut graph = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            g.root().then_parallel_for(
                "axpy",
                (RangePolicy::new(cuda.clone(), 0..0), (y.write(), x.read())),
                axpy::with(2.0),
            );
        })
        .expect("construction needs no device");
        match graph.submit() {
            Ok(()) => assert!(Cuda::new().is_ok(), "ran without a device"),
            Err(e) => assert!(is_absence(&e.to_string()), "only the device may be missing: {e}"),
        }

        // A closure node is refused, with the fix, before any device is needed.
        let mut closures = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            g.root()
                .then_parallel_for("closure", RangePolicy::new(cuda.clone(), 0..4), |_i| {});
        })
        .expect("construction");
        let e = closures.submit().expect_err("a GPU runs no closures");
        assert!(e.to_string().contains("#[kernel]"), "{e}");

        // `create_graph` on a `Cuda` instance builds the host graph (`GraphSpace for Cuda`),
        // whose nodes run as eager launches: the closure is refused by the launch, not by a
        // CUDA graph.
        let mut default_backend = create_graph(&cuda, |g| {
            g.root()
                .then_parallel_for("closure", RangePolicy::new(cuda.clone(), 0..4), |_i| {});
        })
        .expect("construction");
        let e = default_backend
            .submit()
            .expect_err("a GPU runs no closures")
            .to_string();
        assert!(
            e.contains("`closure`: `Cuda` runs only `#[kernel]` kernels") && !e.contains("CUDA graph"),
            "{e}"
        );

        // So is a kernel whose writer cannot hold the range: checked when the node is added.
        let mut short = create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            g.root().then_parallel_for(
                "axpy",
                (RangePolicy::new(cuda.clone(), 0..8), (y.write(), x.read())),
                axpy::with(2.0),
            );
        })
        .expect("construction");
        assert!(short.submit().is_err());
    }

    #[test]
    fn graphs_of_kernels_on_a_device_compute_what_serial_does() {
        let cuda = match Cuda::new() {
            Ok(c) => c,
            Err(e) => {
                println!("skipped: needs a CUDA device ({e})");
                return;
            }
        };
        let expected = run(&Serial::default()).expect("runs on serial");
        // As a CUDA Graph (`create_graph_with(.., CudaGraph::new(..))`) and through
        // `create_graph`, whose host graph runs the nodes as eager launches.
        for explicit_backend in [true, false] {
            let y =
                View::<f64, 1, LayoutRight, CudaSpace>::from_slice("y", [N], &y_values()).expect("uploads");
            let x =
                View::<f64, 1, LayoutRight, CudaSpace>::from_slice("x", [N], &x_values()).expect("uploads");
            let build = |g: &hoplite_graph::GraphBuilder<'_, Cuda>| {
                g.root().then_parallel_for(
                    "axpy",
                    (RangePolicy::new(cuda.clone(), 0..N), (y.write(), x.read())),
                    axpy::with(0.5),
                );
            };
            let mut graph = if explicit_backend {
                create_graph_with(&cuda, CudaGraph::new(&cuda), build)
            } else {
                create_graph(&cuda, build)
            }
            .expect("builds");
            graph.submit().expect("runs");
            assert_eq!(
                y.to_vec().expect("downloads"),
                expected.y,
                "as a CUDA graph: {explicit_backend}"
            );
        }
    }
}

/// Launches on two instances that touch the same view, and a view dropped right after its
/// launch: correct whether launches wait (the default) or return once queued
/// (`HOPLITE_CUDA_LAUNCHES=async`, which the GPU bundle runs this binary with too): the
/// second instance waits for the first's queued writes, the dropped view lives until its
/// launch has run, and the host's reads see every queued launch's stores.
#[test]
fn launches_on_two_instances_order_their_conflicts_and_keep_dropped_views_alive() {
    let n = 1 << 20;
    let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    add_twice_ten_times(&a, &y, &x);
    // Reads what `a`'s queued launches write: waits for them first.
    parallel_for(
        "z += y",
        (RangePolicy::new(b.clone(), 0..n), (z.write(), y.read())),
        axpy::with(1.0),
    )
    .expect("launch on b");
    {
        let dropped = filled("dropped", n, 3.0);
        parallel_for(
            "z += dropped",
            (RangePolicy::new(b.clone(), 0..n), (z.write(), dropped.read())),
            axpy::with(1.0),
        )
        .expect("launch on b");
    }
    assert_eq!(z.to_vec().expect("z"), vec![23.0; n]);
    assert_eq!(y.to_vec().expect("y"), vec![20.0; n]);
    a.fence().expect("fence a");
    b.fence().expect("fence b");
}

/// Streams ordered by hand: an event recorded on one instance after its launches, waited for
/// by another, orders the second instance's launches after them on the device (where the
/// asynchronous launches would otherwise fence the first instance from the host); the host
/// waits for the event, and an event recorded on an idle instance is complete at once.
#[test]
fn an_event_waited_for_on_another_instance_orders_its_launches() {
    let n = 1 << 20;
    let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    for round in 1..=3 {
        add_twice_ten_times(&a, &y, &x);
        let written = a.record_event().expect("an event");
        b.wait_event(&written).expect("b waits");
        parallel_for(
            "z += y",
            (RangePolicy::new(b.clone(), 0..n), (z.write(), y.read())),
            axpy::with(1.0),
        )
        .expect("launch on b");
        let read = b.record_event().expect("an event");
        read.synchronize().expect("the host waits");
        assert!(read.is_complete() && written.is_complete());
        // y after `round` rounds is 20 * round; z sums y after each.
        let want: f64 = (1..=round).map(|r| 20.0 * f64::from(r)).sum();
        assert_eq!(z.to_vec().expect("z"), vec![want; n], "round {round}");
    }
    let idle = a.record_event().expect("an event");
    idle.synchronize().expect("the host waits");
    assert!(idle.is_complete());
    a.fence().expect("fence a");
    b.fence().expect("fence b");
}

/// Stream work of every kind on one instance after conflicting work queued on another, in
/// either launch mode: a fill after queued reads of what it writes, a launch after a queued
/// fill, a copy, mirror copies into pageable and page-locked memory, an upload from
/// page-locked memory, a reduction and a launch with managed memory each see the other
/// instance's work done first, and their own work is waited for by the next conflicting
/// launch elsewhere (the values would mix otherwise: each step changes every element).
#[test]
fn stream_work_of_every_kind_waits_for_conflicting_work_of_another_instance() {
    let n = 1 << 20;
    let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    let add = |on: &Cuda, label: &str, to: &DeviceVector, from: &DeviceVector| {
        parallel_for(
            label,
            (RangePolicy::new(on.clone(), 0..n), (to.write(), from.read())),
            axpy::with(1.0),
        )
        .expect("a launch")
    };
    // y = 20 on `a`, read there into z; `b`'s fill of y waits for the read, and `a`'s next
    // read of y for the fill.
    add_twice_ten_times(&a, &y, &x);
    add(&a, "z += y", &z, &y);
    b.fill(&y, 5.0).expect("fill on b");
    add(&a, "z += y", &z, &y);
    assert_eq!(z.to_vec().expect("z"), vec![25.0; n], "fill");
    // y = 25 on `a`; `b` copies it into z and into the host.
    add_twice_ten_times(&a, &y, &x);
    b.copy(&z, &y).expect("copy on b");
    let pageable = create_mirror_view(&y).expect("a host mirror");
    b.deep_copy_to_host(&pageable, &y).expect("download on b");
    assert_eq!(
        pageable.to_vec().expect("mirror"),
        vec![25.0; n],
        "pageable download"
    );
    // `a` writes z after `b`'s queued copy wrote it: z = 45; `b` downloads it, page-locked.
    add_twice_ten_times(&a, &z, &x);
    let pinned = create_mirror_view_in(CudaHostPinnedSpace, &z).expect("a pinned mirror");
    b.deep_copy_to_host(&pinned, &z).expect("download on b");
    b.fence().expect("fence b");
    assert_eq!(pinned.to_vec().expect("mirror"), vec![45.0; n], "pinned download");
    // `a` uploads 3 into x from page-locked memory; `b` reads it: y = 28.
    let threes = create_mirror_view_in(CudaHostPinnedSpace, &x).expect("a pinned mirror");
    threes.host_write().expect("the host writes it").fill(3.0);
    a.deep_copy_to_device(&x, &threes).expect("upload on a");
    add(&b, "y += x", &y, &x);
    assert_eq!(y.to_vec().expect("y"), vec![28.0; n], "upload");
    // y = 88 on `a`; `b` reduces x . y.
    add_twice_ten_times(&a, &y, &x);
    let dot = parallel_reduce(
        "x . y",
        (RangePolicy::new(b.clone(), 0..n), (x.read(), y.read())),
        dot::with(),
        Sum::new(),
    )
    .expect("a reduction on b");
    assert_eq!(dot, 3.0 * 88.0 * n as f64, "reduction");
    // y = 148 on `a`; `b` adds it into managed memory.
    add_twice_ten_times(&a, &y, &x);
    let managed = View::<f64, 1, LayoutRight, CudaUVMSpace>::new("managed", [n]).expect("managed memory");
    parallel_for(
        "managed += y",
        (RangePolicy::new(b.clone(), 0..n), (managed.write(), y.read())),
        axpy::with(1.0),
    )
    .expect("launch on b");
    assert_eq!(managed.to_vec().expect("managed"), vec![148.0; n], "managed");
    a.fence().expect("fence a");
    b.fence().expect("fence b");
}

/// An instance dropped on another thread with its launches still queued: a conflicting
/// launch elsewhere waits for them, whether it finds the instance alive (and fences it) or
/// being dropped (and waits until its drop has waited for its stream).
#[test]
fn a_launch_waits_for_the_queued_work_of_an_instance_being_dropped() {
    let n = 1 << 20;
    for round in 0..5 {
        let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
            return;
        };
        add_twice_ten_times(&a, &y, &x);
        let dropper = std::thread::spawn(move || drop(a));
        parallel_for(
            "z += y",
            (RangePolicy::new(b.clone(), 0..n), (z.write(), y.read())),
            axpy::with(1.0),
        )
        .expect("launch on b");
        dropper.join().expect("the drop returns");
        assert_eq!(z.to_vec().expect("z"), vec![20.0; n], "round {round}");
    }
}

/// A vector in device memory.
type DeviceVector = View<f64, 1, LayoutRight, CudaSpace>;

/// Two instances of device 0 and device views `x` (all 1), `y` and `z` (all 0) of `n`
/// elements, or `None` after saying why the test is skipped.
fn two_instances_with_xyz(n: usize) -> Option<(Cuda, Cuda, [DeviceVector; 3])> {
    match (Cuda::new(), Cuda::new()) {
        (Ok(a), Ok(b)) => Some((
            a,
            b,
            [filled("x", n, 1.0), filled("y", n, 0.0), filled("z", n, 0.0)],
        )),
        (Err(e), _) | (_, Err(e)) => {
            println!("skipped: needs a CUDA device ({e})");
            None
        }
    }
}

/// A device view of `n` elements, each `value`.
fn filled(label: &str, n: usize, value: f64) -> DeviceVector {
    let v = DeviceVector::new(label, [n]).expect("device memory");
    v.copy_from_slice(&vec![value; n]).expect("upload");
    v
}

/// Queues `y += 2x` ten times on `a` (launches that write `y` for another instance to wait for).
fn add_twice_ten_times(a: &Cuda, y: &DeviceVector, x: &DeviceVector) {
    for _ in 0..10 {
        parallel_for(
            "y += 2x",
            (RangePolicy::new(a.clone(), 0..x.extent(0)), (y.write(), x.read())),
            axpy::with(2.0),
        )
        .expect("launch on a");
    }
}
