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
use hoplite_cuda::{Cuda, CudaSpace};
use hoplite_serial::Serial;

mod support;
use support::{axpy, dot};

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
        // CUDA graph; with `HOPLITE_CUDA_GRAPHS=device` it builds a CUDA graph, which refuses
        // the closure when the node is added.
        let device_graphs = std::env::var("HOPLITE_CUDA_GRAPHS").as_deref() == Ok("device");
        let mut default_backend = create_graph(&cuda, |g| {
            g.root()
                .then_parallel_for("closure", RangePolicy::new(cuda.clone(), 0..4), |_i| {});
        })
        .expect("construction");
        let e = default_backend
            .submit()
            .expect_err("a GPU runs no closures")
            .to_string();
        if device_graphs {
            assert!(e.contains("CUDA graph: node `closure`"), "{e}");
        } else {
            assert!(
                e.contains("`closure`: `Cuda` runs only `#[kernel]` kernels") && !e.contains("CUDA graph"),
                "{e}"
            );
        }

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
