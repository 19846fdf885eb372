//! `kernel-styles`: real kernels in every launch style a user reaches for, each beside the
//! eager closure in the same run.
//!
//! Kernels (f64): a 2-D 5-point Jacobi stencil at 2048² and a 3-D 7-point one at 256³ (two
//! sweeps per iteration, `a -> b` then `b -> a`), axpy and dot at 2^24, and a team kernel
//! (`y = A x` with one team per row of a 4096 x 4096 matrix and a nested reduction).
//!
//! Styles, ids `<backend>-<style>` in group `kernel-styles <kernel>`:
//! * `eager-closure` — the baseline: `parallel_for(label, launch, |item| ..)`;
//! * `eager-ref` — the same closure stored once and passed as `&kernel`;
//! * `eager-fn` — the kernel as a named `fn` with no inline attribute;
//! * `kernel-with` — a `#[kernel]` through `kernel::with(..)`;
//! * `graph` — the iteration's launches as nodes of an explicit graph, one submit (and a
//!   fence) per iteration;
//! * `dag` — the launches as vertices of an implicit DAG, then `synchronize`;
//! * `dag-replay` — the same launches recorded once from a DAG context into a graph, replayed.
//!
//! `cargo xtask bench` pairs every style with `eager-closure` of the same kernel and backend
//! (`{bench: "kernel-styles <kernel> (<backend>)", baseline: "eager-closure", function: <style>}`).
//! The goal is every style within 1.05x of the eager closure: a kernel runs at the same speed
//! whichever way it reaches a launch (see "What made the difference" in docs/PERFORMANCE.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions};
use hoplite::graph::{Graph, GraphSpace, ReduceResult, create_graph};
use hoplite::prelude::*;
use hoplite::rayon_backend::RayonTeamMember;
use hoplite::serial::SerialTeamMember;
use hoplite::{BoundReader, BoundWriter, ParallelFor, RayonSpace, Serial, kernel};

const SIDE_2D: usize = 2048;
const SIDE_3D: usize = 256;
const LEN: usize = 1 << 24;
const ROWS: usize = 4096;
const COLS: usize = 4096;

type W1<'it> = BoundWriter<'it, f64, 1, LayoutRight>;
type R1<'it> = BoundReader<'it, f64, 1, LayoutRight>;
type W2<'it> = BoundWriter<'it, f64, 2, LayoutRight>;
type R2<'it> = BoundReader<'it, f64, 2, LayoutRight>;
type W3<'it> = BoundWriter<'it, f64, 3, LayoutRight>;
type R3<'it> = BoundReader<'it, f64, 3, LayoutRight>;
/// The handles of the team kernel: `y`, `A`, `x`.
type GemvArgs<'it> = (W1<'it>, R2<'it>, R1<'it>);

// ---- the kernels, as #[kernel]s and as plain named functions ----

#[kernel]
fn jacobi_2d(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    out.set(
        ij,
        0.25 * (u.neighbor(ij, [-1, 0])
            + u.neighbor(ij, [1, 0])
            + u.neighbor(ij, [0, -1])
            + u.neighbor(ij, [0, 1])),
    );
}

/// The 2-D sweep as a user names a kernel function: no inline attribute.
fn jacobi_2d_fn<'it>((ij, (out, u)): (MdIdx<'it, 2>, (W2<'it>, R2<'it>))) {
    out.set(
        ij,
        0.25 * (u.neighbor(ij, [-1, 0])
            + u.neighbor(ij, [1, 0])
            + u.neighbor(ij, [0, -1])
            + u.neighbor(ij, [0, 1])),
    );
}

#[kernel]
fn jacobi_3d(p: MdIdx<'_, 3>, out: BoundWriter<'_, f64, 3>, u: BoundReader<'_, f64, 3>) {
    let sum = u.neighbor(p, [-1, 0, 0])
        + u.neighbor(p, [1, 0, 0])
        + u.neighbor(p, [0, -1, 0])
        + u.neighbor(p, [0, 1, 0])
        + u.neighbor(p, [0, 0, -1])
        + u.neighbor(p, [0, 0, 1]);
    out.set(p, sum / 6.0);
}

/// The 3-D sweep as a named function.
fn jacobi_3d_fn<'it>((p, (out, u)): (MdIdx<'it, 3>, (W3<'it>, R3<'it>))) {
    let sum = u.neighbor(p, [-1, 0, 0])
        + u.neighbor(p, [1, 0, 0])
        + u.neighbor(p, [0, -1, 0])
        + u.neighbor(p, [0, 1, 0])
        + u.neighbor(p, [0, 0, -1])
        + u.neighbor(p, [0, 0, 1]);
    out.set(p, sum / 6.0);
}

#[kernel]
fn axpy(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
    y.set(i, a * x.get(i) + y.get(i));
}

/// Axpy as a named function (the scalar is a constant: a `fn` captures nothing).
fn axpy_fn<'it>((i, (y, x)): (Idx<'it>, (W1<'it>, R1<'it>))) {
    y.set(i, AXPY_A * x.get(i) + y.get(i));
}

const AXPY_A: f64 = 0.5;

#[kernel]
fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

/// Dot as a named function.
fn dot_fn<'it>((i, (x, y)): (Idx<'it>, (R1<'it>, R1<'it>)), acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

#[kernel]
fn gemv(
    m: &impl TeamMember,
    y: BoundWriter<'_, f64, 1>,
    a: BoundReader<'_, f64, 2>,
    x: BoundReader<'_, f64, 1>,
    cols: usize,
) {
    let row = m.league_rank();
    let sum = TeamThreadRange::new(m, cols)
        .parallel_reduce(|j, s: &mut f64| *s += a.get([row, *j]) * x.get(*j), Sum::new());
    if let Some(l) = m.league_token().single() {
        y.set(l, sum);
    }
}

/// The team kernel as a named function, for one space's team member type.
macro_rules! gemv_fn {
    ($name:ident, $member:ident) => {
        fn $name<'it>((m, (y, a, x)): (&'it $member<'it>, GemvArgs<'it>)) {
            let row = m.league_rank();
            let sum = TeamThreadRange::new(m, COLS).parallel_reduce(
                |j, s: &mut f64| *s += a.get([row, *j]) * x.get(*j),
                Sum::new(),
            );
            if let Some(l) = m.league_token().single() {
                y.set(l, sum);
            }
        }
    };
}
gemv_fn!(gemv_fn_serial, SerialTeamMember);
gemv_fn!(gemv_fn_rayon, RayonTeamMember);

/// A stored closure: a helper names its type once, as a program that keeps kernels does.
fn jacobi_2d_closure() -> impl for<'it> Fn((MdIdx<'it, 2>, (W2<'it>, R2<'it>))) + Send + Sync {
    |(ij, (out, u))| {
        out.set(
            ij,
            0.25 * (u.neighbor(ij, [-1, 0])
                + u.neighbor(ij, [1, 0])
                + u.neighbor(ij, [0, -1])
                + u.neighbor(ij, [0, 1])),
        )
    }
}

fn jacobi_3d_closure() -> impl for<'it> Fn((MdIdx<'it, 3>, (W3<'it>, R3<'it>))) + Send + Sync {
    |(p, (out, u))| {
        let sum = u.neighbor(p, [-1, 0, 0])
            + u.neighbor(p, [1, 0, 0])
            + u.neighbor(p, [0, -1, 0])
            + u.neighbor(p, [0, 1, 0])
            + u.neighbor(p, [0, 0, -1])
            + u.neighbor(p, [0, 0, 1]);
        out.set(p, sum / 6.0)
    }
}

fn axpy_closure(a: f64) -> impl for<'it> Fn((Idx<'it>, (W1<'it>, R1<'it>))) + Send + Sync {
    move |(i, (y, x))| y.set(i, a * x.get(i) + y.get(i))
}

fn dot_closure() -> impl for<'it> Fn((Idx<'it>, (R1<'it>, R1<'it>)), &mut f64) + Send + Sync {
    |(i, (x, y)), acc| *acc += x.get(i) * y.get(i)
}

fn gemv_closure<S: FullSpace>() -> impl for<'it> Fn((&'it S::TeamMember<'it>, GemvArgs<'it>)) + Send + Sync {
    |(m, (y, a, x))| {
        let row = m.league_rank();
        let sum = TeamThreadRange::new(m, COLS)
            .parallel_reduce(|j, s: &mut f64| *s += a.get([row, *j]) * x.get(*j), Sum::new());
        if let Some(l) = m.league_token().single() {
            y.set(l, sum);
        }
    }
}

// ---- the harness ----

/// One backend's space and name, plus its DAG context (one stream on the space).
struct Backend<S: FullSpace> {
    name: &'static str,
    space: S,
    ctx: Context<HostDevice<S>>,
}

impl<S: FullSpace> Backend<S> {
    fn new(name: &'static str, space: S) -> Self {
        let device = HostDevice::new("cpu", vec![space.clone()]).expect("device");
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        Backend { name, space, ctx }
    }

    fn id(&self, style: &str, size: usize) -> BenchmarkId {
        BenchmarkId::new(format!("{}-{style}", self.name), size)
    }

    /// Benchmarks a submit of `graph` (built, or recorded from the DAG) with the fence after
    /// it; `read` takes the graph's result, for the graphs that reduce into one.
    fn bench_submit<T>(
        &self,
        g: &mut BenchmarkGroup<'_, WallTime>,
        style: &str,
        size: usize,
        graph: &mut Graph<S>,
        read: impl Fn() -> T,
    ) {
        g.bench_function(self.id(style, size), |bench| {
            bench.iter(|| {
                graph.submit().expect("submit");
                self.space.fence().expect("fence");
                read()
            })
        });
    }
}

fn group<'c>(c: &'c mut Criterion, kernel: &str, bytes: u64) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(format!("kernel-styles {kernel}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Bytes(bytes));
    group
}

fn ones<const R: usize>(label: &str, extents: [usize; R]) -> View<f64, R> {
    let len = extents.iter().product();
    View::from_slice(label, extents, &vec![1.0; len]).expect("view")
}

/// The handles of a rank-`R` Jacobi sweep: the output and the input.
type SweepArgs<'it, const R: usize> = (
    BoundWriter<'it, f64, R, LayoutRight>,
    BoundReader<'it, f64, R, LayoutRight>,
);

/// A rank-`R` Jacobi stencil on an `n^R` grid, two sweeps per iteration, in every style on one
/// backend. Each style's kernel comes from the caller, as its own type: `eager` is the
/// closure written at the call (the baseline), `stored` a closure kept and lent by reference,
/// `named` a plain `fn`, `with` a `#[kernel]`'s `with()` (the graph and the DAG use it too).
fn stencil<S, const R: usize, E, St, N, K>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    be: &Backend<S>,
    n: usize,
    eager: E,
    stored: &St,
    named: N,
    with: K,
) where
    S: FullSpace + GraphSpace + ParallelFor<MDRangePolicy<S, R>>,
    E: for<'it> Fn((MdIdx<'it, R>, SweepArgs<'it, R>)) + Copy + Send + Sync,
    St: for<'it> Fn((MdIdx<'it, R>, SweepArgs<'it, R>)) + Send + Sync,
    N: for<'it> Fn((MdIdx<'it, R>, SweepArgs<'it, R>)) + Copy + Send + Sync,
    K: for<'it> Fn((MdIdx<'it, R>, SweepArgs<'it, R>)) + Copy + Send + Sync + 'static,
{
    let (a, b) = (ones("a", [n; R]), ones("b", [n; R]));
    let inner = MDRangePolicy::new(be.space.clone(), [1; R], [n - 1; R]);
    let sweeps = [(&b, &a), (&a, &b)];
    g.bench_function(be.id("eager-closure", n), |bench| {
        bench.iter(|| {
            for (out, u) in sweeps {
                parallel_for("jacobi", (inner.clone(), (out.write(), u.read())), eager).expect("sweep");
            }
        })
    });
    g.bench_function(be.id("eager-ref", n), |bench| {
        bench.iter(|| {
            for (out, u) in sweeps {
                parallel_for("jacobi", (inner.clone(), (out.write(), u.read())), stored).expect("sweep");
            }
        })
    });
    g.bench_function(be.id("eager-fn", n), |bench| {
        bench.iter(|| {
            for (out, u) in sweeps {
                parallel_for("jacobi", (inner.clone(), (out.write(), u.read())), named).expect("sweep");
            }
        })
    });
    g.bench_function(be.id("kernel-with", n), |bench| {
        bench.iter(|| {
            for (out, u) in sweeps {
                parallel_for("jacobi", (inner.clone(), (out.write(), u.read())), with).expect("sweep");
            }
        })
    });
    let mut graph = create_graph(&be.space, |g| {
        g.root()
            .then_parallel_for("jacobi", (inner.clone(), (b.write(), a.read())), with)
            .then_parallel_for("jacobi", (inner.clone(), (a.write(), b.read())), with);
    })
    .expect("graph");
    be.bench_submit(g, "graph", n, &mut graph, || ());
    g.bench_function(be.id("dag", n), |bench| {
        bench.iter(|| {
            for (out, u) in sweeps {
                be.ctx
                    .launch("jacobi", (inner.clone(), (out.write(), u.read())), with)
                    .expect("launch");
            }
            be.ctx.synchronize().expect("synchronize");
        })
    });
    let mut replay = be
        .ctx
        .record(&be.space, |r| {
            for (out, u) in sweeps {
                r.launch("jacobi", (inner.clone(), (out.write(), u.read())), with);
            }
        })
        .expect("record");
    be.bench_submit(g, "dag-replay", n, &mut replay, || ());
}

/// The 2-D stencil in every style on one backend.
fn stencil_2d<S: FullSpace + GraphSpace>(g: &mut BenchmarkGroup<'_, WallTime>, be: &Backend<S>) {
    stencil(
        g,
        be,
        SIDE_2D,
        |(ij, (out, u))| {
            out.set(
                ij,
                0.25 * (u.neighbor(ij, [-1, 0])
                    + u.neighbor(ij, [1, 0])
                    + u.neighbor(ij, [0, -1])
                    + u.neighbor(ij, [0, 1])),
            )
        },
        &jacobi_2d_closure(),
        jacobi_2d_fn,
        jacobi_2d::with(),
    );
}

/// The 3-D stencil in every style on one backend.
fn stencil_3d<S: FullSpace + GraphSpace>(g: &mut BenchmarkGroup<'_, WallTime>, be: &Backend<S>) {
    stencil(
        g,
        be,
        SIDE_3D,
        |(p, (out, u))| {
            let sum = u.neighbor(p, [-1, 0, 0])
                + u.neighbor(p, [1, 0, 0])
                + u.neighbor(p, [0, -1, 0])
                + u.neighbor(p, [0, 1, 0])
                + u.neighbor(p, [0, 0, -1])
                + u.neighbor(p, [0, 0, 1]);
            out.set(p, sum / 6.0)
        },
        &jacobi_3d_closure(),
        jacobi_3d_fn,
        jacobi_3d::with(),
    );
}

/// Axpy, one launch per iteration, in every style on one backend.
fn axpy_styles<S: FullSpace + GraphSpace>(g: &mut BenchmarkGroup<'_, WallTime>, be: &Backend<S>) {
    let (x, y) = (ones("x", [LEN]), ones("y", [LEN]));
    let range = RangePolicy::new(be.space.clone(), 0..LEN);
    let a = AXPY_A;
    g.bench_function(be.id("eager-closure", LEN), |bench| {
        bench.iter(|| {
            parallel_for("axpy", (range.clone(), (y.write(), x.read())), |(i, (y, x))| {
                y.set(i, a * x.get(i) + y.get(i))
            })
            .expect("axpy")
        })
    });
    let stored = axpy_closure(a);
    g.bench_function(be.id("eager-ref", LEN), |bench| {
        bench.iter(|| parallel_for("axpy", (range.clone(), (y.write(), x.read())), &stored).expect("axpy"))
    });
    g.bench_function(be.id("eager-fn", LEN), |bench| {
        bench.iter(|| parallel_for("axpy", (range.clone(), (y.write(), x.read())), axpy_fn).expect("axpy"))
    });
    g.bench_function(be.id("kernel-with", LEN), |bench| {
        bench.iter(|| {
            parallel_for("axpy", (range.clone(), (y.write(), x.read())), axpy::with(a)).expect("axpy")
        })
    });
    let mut graph = create_graph(&be.space, |g| {
        g.root()
            .then_parallel_for("axpy", (range.clone(), (y.write(), x.read())), axpy::with(a));
    })
    .expect("graph");
    be.bench_submit(g, "graph", LEN, &mut graph, || ());
    g.bench_function(be.id("dag", LEN), |bench| {
        bench.iter(|| {
            be.ctx
                .launch("axpy", (range.clone(), (y.write(), x.read())), axpy::with(a))
                .expect("launch");
            be.ctx.synchronize().expect("synchronize");
        })
    });
    let mut replay = be
        .ctx
        .record(&be.space, |r| {
            r.launch("axpy", (range.clone(), (y.write(), x.read())), axpy::with(a));
        })
        .expect("record");
    be.bench_submit(g, "dag-replay", LEN, &mut replay, || ());
}

/// Dot, one reduction per iteration (its result read on the host), in every style.
fn dot_styles<S: FullSpace + GraphSpace>(g: &mut BenchmarkGroup<'_, WallTime>, be: &Backend<S>) {
    let (x, y) = (ones("x", [LEN]), ones("y", [LEN]));
    let range = RangePolicy::new(be.space.clone(), 0..LEN);
    g.bench_function(be.id("eager-closure", LEN), |bench| {
        bench.iter(|| {
            parallel_reduce(
                "dot",
                (range.clone(), (x.read(), y.read())),
                |(i, (x, y)), acc: &mut f64| *acc += x.get(i) * y.get(i),
                Sum::new(),
            )
            .expect("dot")
        })
    });
    let stored = dot_closure();
    g.bench_function(be.id("eager-ref", LEN), |bench| {
        bench.iter(|| {
            parallel_reduce("dot", (range.clone(), (x.read(), y.read())), &stored, Sum::new()).expect("dot")
        })
    });
    g.bench_function(be.id("eager-fn", LEN), |bench| {
        bench.iter(|| {
            parallel_reduce("dot", (range.clone(), (x.read(), y.read())), dot_fn, Sum::new()).expect("dot")
        })
    });
    g.bench_function(be.id("kernel-with", LEN), |bench| {
        bench.iter(|| {
            parallel_reduce(
                "dot",
                (range.clone(), (x.read(), y.read())),
                dot::with(),
                Sum::new(),
            )
            .expect("dot")
        })
    });
    let result = ReduceResult::<f64>::new();
    let target = result.clone();
    let mut graph = create_graph(&be.space, |g| {
        g.root().then_parallel_reduce(
            "dot",
            (range.clone(), (x.read(), y.read())),
            dot::with(),
            Sum::new(),
            target,
        );
    })
    .expect("graph");
    be.bench_submit(g, "graph", LEN, &mut graph, || result.get());
    g.bench_function(be.id("dag", LEN), |bench| {
        bench.iter(|| {
            be.ctx
                .reduce(
                    "dot",
                    (range.clone(), (x.read(), y.read())),
                    dot::with(),
                    Sum::new(),
                )
                .expect("reduce")
                .get()
                .expect("result")
        })
    });
    let replayed = ReduceResult::<f64>::new();
    let target = replayed.clone();
    let mut replay = be
        .ctx
        .record(&be.space, |r| {
            r.reduce(
                "dot",
                (range.clone(), (x.read(), y.read())),
                dot::with(),
                Sum::new(),
                target,
            );
        })
        .expect("record");
    be.bench_submit(g, "dag-replay", LEN, &mut replay, || replayed.get());
}

/// `y = A x` with one team per row, in every style on one backend; `named` is the named
/// function for this backend's team member type.
fn gemv_styles<S, N>(g: &mut BenchmarkGroup<'_, WallTime>, be: &Backend<S>, named: N)
where
    S: FullSpace + GraphSpace,
    N: for<'it> Fn((&'it S::TeamMember<'it>, GemvArgs<'it>)) + Send + Sync + 'static,
{
    let (a, x, y) = (ones("A", [ROWS, COLS]), ones("x", [COLS]), ones("y", [ROWS]));
    let teams = TeamPolicy::new(be.space.clone(), ROWS, TeamSize::Auto);
    g.bench_function(be.id("eager-closure", ROWS), |bench| {
        bench.iter(|| {
            parallel_for(
                "gemv",
                (teams.clone(), (y.write(), a.read(), x.read())),
                |(m, (y, a, x))| {
                    let row = m.league_rank();
                    let sum = TeamThreadRange::new(m, COLS)
                        .parallel_reduce(|j, s: &mut f64| *s += a.get([row, *j]) * x.get(*j), Sum::new());
                    if let Some(l) = m.league_token().single() {
                        y.set(l, sum);
                    }
                },
            )
            .expect("gemv")
        })
    });
    let stored = gemv_closure::<S>();
    g.bench_function(be.id("eager-ref", ROWS), |bench| {
        bench.iter(|| {
            parallel_for("gemv", (teams.clone(), (y.write(), a.read(), x.read())), &stored).expect("gemv")
        })
    });
    g.bench_function(be.id("eager-fn", ROWS), |bench| {
        bench.iter(|| {
            parallel_for("gemv", (teams.clone(), (y.write(), a.read(), x.read())), &named).expect("gemv")
        })
    });
    g.bench_function(be.id("kernel-with", ROWS), |bench| {
        bench.iter(|| {
            parallel_for(
                "gemv",
                (teams.clone(), (y.write(), a.read(), x.read())),
                gemv::with::<S>(COLS),
            )
            .expect("gemv")
        })
    });
    let mut graph = create_graph(&be.space, |g| {
        g.root().then_parallel_for(
            "gemv",
            (teams.clone(), (y.write(), a.read(), x.read())),
            gemv::with::<S>(COLS),
        );
    })
    .expect("graph");
    be.bench_submit(g, "graph", ROWS, &mut graph, || ());
    g.bench_function(be.id("dag", ROWS), |bench| {
        bench.iter(|| {
            be.ctx
                .launch(
                    "gemv",
                    (teams.clone(), (y.write(), a.read(), x.read())),
                    gemv::with::<S>(COLS),
                )
                .expect("launch");
            be.ctx.synchronize().expect("synchronize");
        })
    });
    let mut replay = be
        .ctx
        .record(&be.space, |r| {
            r.launch(
                "gemv",
                (teams.clone(), (y.write(), a.read(), x.read())),
                gemv::with::<S>(COLS),
            );
        })
        .expect("record");
    be.bench_submit(g, "dag-replay", ROWS, &mut replay, || ());
    black_box(y.to_vec().expect("y"));
}

fn kernel_styles(c: &mut Criterion) {
    let serial = Backend::new("serial", Serial::default());
    let rayon = Backend::new("rayon", RayonSpace::default());
    let f64s = |n: usize| (n * size_of::<f64>()) as u64;

    let mut g = group(c, "stencil2d", 2 * 2 * f64s(SIDE_2D * SIDE_2D));
    stencil_2d(&mut g, &serial);
    stencil_2d(&mut g, &rayon);
    g.finish();

    let mut g = group(c, "stencil3d", 2 * 2 * f64s(SIDE_3D * SIDE_3D * SIDE_3D));
    stencil_3d(&mut g, &serial);
    stencil_3d(&mut g, &rayon);
    g.finish();

    let mut g = group(c, "axpy", 3 * f64s(LEN));
    axpy_styles(&mut g, &serial);
    axpy_styles(&mut g, &rayon);
    g.finish();

    let mut g = group(c, "dot", 2 * f64s(LEN));
    dot_styles(&mut g, &serial);
    dot_styles(&mut g, &rayon);
    g.finish();

    let mut g = group(c, "team-gemv", f64s(ROWS * COLS));
    gemv_styles(&mut g, &serial, gemv_fn_serial);
    gemv_styles(&mut g, &rayon, gemv_fn_rayon);
    g.finish();
}

criterion_group!(benches, kernel_styles);
criterion_main!(benches);
