//! `grcuda-*`: GrCUDA's six scheduler benchmarks (`common/grcuda`), per backend:
//!
//! * `<backend>-hoplite` — the implicit DAG, async: two serial streams; on rayon one stream on
//!   the whole pool (the device's default of one stream per instance);
//! * `rayon-two-streams` — async, two streams that both launch on the whole pool (they take
//!   turns on its launch lock, see docs/dag.md);
//! * `rayon-partitions` — async, each of two streams on its half of the pool's threads;
//! * `<backend>-sync` — the same DAG with `Execution::Sync` (every launch waits);
//! * `<backend>-eager` — the same `#[kernel]`s with plain `parallel_for` / `parallel_reduce`;
//! * `<backend>-replay` — the same launches recorded once (`hoplite::dag::record_with`) into an
//!   explicit graph whose edges are the DAG's inferred dependencies, then replayed: a host
//!   graph, or on CUDA a CUDA Graph of kernel and reduction nodes. HITS has no replay row: it
//!   reads its norms on the host between launches.
//!
//! With `--features cuda` and a device, `cuda-hoplite` (a DAG over two CUDA streams),
//! `cuda-sync`, `cuda-eager` (the core's launches on one `Cuda` instance), `cuda-replay` and
//! `cuda-streams` (the hand-written baseline: two `Cuda` instances, each benchmark's launches
//! placed on them with events by hand, `common/grcuda/streams.rs`; all but HITS) join them, at GPU sizes (`GPU`, 16x the host's data); without a device the CUDA rows say
//! why they are skipped. Every run is checked once against its serial reference before it is
//! timed.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite::dag::device::{Device, HostDevice, Stream};
use hoplite::dag::{Context, ContextOptions, Execution};
use hoplite::graph::HostGraph;
use hoplite::{LaunchSpace, RayonSpace, Serial};

#[path = "common/grcuda/mod.rs"]
mod grcuda;

use grcuda::{Dag, Eager, Launcher, bs, dl, hits, img, ml, vec};

/// One size per benchmark: VEC's length, B&S's length and number of arrays, ML's rows,
/// features and classes, HITS's vertices, degree and iterations, IMG's side, DL's side.
struct Sizes {
    vec: usize,
    bs: (usize, usize),
    ml: (usize, usize, usize),
    hits: (usize, usize, usize),
    img: usize,
    dl: usize,
}

/// Sizes for a 2-core host: each run takes milliseconds, kernels dominate the launches.
const HOST: Sizes = Sizes {
    vec: 1 << 20,
    bs: (100_000, 10),
    ml: (20_000, 200, 10),
    hits: (200_000, 3, 5),
    img: 1024,
    dl: 512,
};

/// Sizes for a GPU, 16x the host's data (4x the side for IMG and DL), in the range GrCUDA's
/// drivers scale its benchmarks to (tens of millions of elements): a kernel moves tens to
/// hundreds of megabytes, so on an H100 it runs for tens of microseconds or more and the
/// launches no longer dominate.
#[cfg(feature = "cuda")]
const GPU: Sizes = Sizes {
    vec: 1 << 24,
    bs: (1_600_000, 10),
    ml: (320_000, 200, 10),
    hits: (3_200_000, 3, 5),
    img: 4096,
    dl: 2048,
};

/// Runs the setup, check and measurement of a replay row; a failure (a graph the backend
/// refuses, a wrong result) is printed and skips the row, so the other rows still run.
fn replay_row(name: &str, row: impl FnOnce()) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(row)) {
        let why = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        println!("{name}: the replay row failed and is skipped: {why}");
    }
}

fn dag<D: Device>(devices: Vec<D>, space: <D::Stream as Stream>::Space, execution: Execution) -> Dag<D> {
    Dag {
        ctx: Context::new(devices, ContextOptions::default().execution(execution)).expect("context"),
        space,
    }
}

/// The criterion group the rows of one benchmark go to.
type Group<'c> = BenchmarkGroup<'c, WallTime>;

/// VEC's row `name` on `to`: checked once against `want`, then timed.
fn vec_row<S: LaunchSpace, L: Launcher<S>>(g: &mut Group<'_>, name: &str, to: &L, n: usize, want: f64) {
    let b = vec::Buffers::<S>::new(n).expect("buffers");
    vec::check(vec::run(to, &b).expect("runs").get().expect("a sum"), want);
    g.bench_function(BenchmarkId::new(name, n), |it| {
        it.iter(|| vec::run(to, &b).expect("runs").get().expect("a sum"))
    });
}

/// B&S's row `name` on `to`: `m` arrays of `n`, checked once against `want`, then timed.
fn bs_row<S: LaunchSpace, L: Launcher<S>>(
    g: &mut Group<'_>,
    name: &str,
    to: &L,
    (n, m): (usize, usize),
    want: &[f64],
) {
    let b = bs::Buffers::<S>::new(n, m).expect("buffers");
    bs::run(to, &b).expect("runs");
    bs::check(&b.result().expect("result"), want);
    g.bench_function(BenchmarkId::new(name, n * m), |it| {
        it.iter(|| bs::run(to, &b).expect("runs"))
    });
}

/// ML's row `name` on `to` (`rows`: the input's), checked once against `want`, then timed.
fn ml_row<S: LaunchSpace, L: Launcher<S>>(
    g: &mut Group<'_>,
    name: &str,
    to: &L,
    (input, rows): (&ml::Input, usize),
    want: &ml::Output,
) {
    let b = ml::Buffers::<S>::new(input).expect("buffers");
    ml::run(to, &b).expect("runs");
    b.result().expect("result").check(want);
    g.bench_function(BenchmarkId::new(name, rows), |it| {
        it.iter(|| ml::run(to, &b).expect("runs"))
    });
}

/// IMG's row `name` on `to`: checked once against `want`, then timed.
fn img_row<S: LaunchSpace, L: Launcher<S>>(
    g: &mut Group<'_>,
    name: &str,
    to: &L,
    n: usize,
    want: &(Vec<f32>, f64),
) {
    let b = img::Buffers::<S>::new(n).expect("buffers");
    let sum = img::run(to, &b).expect("runs").get().expect("a sum");
    to.finish().expect("finished");
    img::check(&b.result().expect("result"), sum, want);
    g.bench_function(BenchmarkId::new(name, n), |it| {
        it.iter(|| img::run(to, &b).expect("runs").get().expect("a sum"))
    });
}

/// DL's row `name` on `to` (`side`: the input's), checked once against `want`, then timed.
fn dl_row<S: LaunchSpace, L: Launcher<S>>(
    g: &mut Group<'_>,
    name: &str,
    to: &L,
    (input, side): (&dl::Input, usize),
    want: &(Vec<f32>, f64),
) {
    let b = dl::Buffers::<S>::new(input).expect("buffers");
    let out = dl::run(to, &b).expect("runs").get().expect("an output");
    to.finish().expect("finished");
    dl::check(&b.features().expect("result"), out, want);
    g.bench_function(BenchmarkId::new(name, side), |it| {
        it.iter(|| dl::run(to, &b).expect("runs").get().expect("an output"))
    });
}

macro_rules! bench_all {
    ($c:expr, $S:ty, $sizes:expr, [$(($name:expr, $to:expr)),* $(,)?], replay: ($replay:expr, $space:expr, $backend:expr) $(, streams: ($streams_name:expr, $streams:expr))?) => {{
        let replay_name: &str = $replay;
        let c: &mut Criterion = $c;
        let sizes: &Sizes = $sizes;
        {
            let mut g = c.benchmark_group("grcuda-vec");
            g.sample_size(10);
            let want = vec::reference(sizes.vec);
            $(vec_row::<$S, _>(&mut g, $name, &$to, sizes.vec, want);)*
            $(if let Some(to) = ($streams)(vec::schedule()) {
                vec_row(&mut g, $streams_name, &to, sizes.vec, want);
            })?
            replay_row(replay_name, || {
                let b = vec::Buffers::<$S>::new(sizes.vec).expect("buffers");
                let (mut graph, sum) = grcuda::record(&$space, $backend, |r| vec::run(r, &b)).expect("records");
                graph.submit().expect("replays");
                vec::check(sum.replayed().expect("a sum"), want);
                g.bench_function(BenchmarkId::new(replay_name, sizes.vec), |it| it.iter(|| {
                    graph.submit().expect("replays");
                    sum.replayed()
                }));
            });
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-bs");
            g.sample_size(10);
            let want = bs::reference(sizes.bs.0);
            $(bs_row::<$S, _>(&mut g, $name, &$to, sizes.bs, &want);)*
            $(if let Some(to) = ($streams)(bs::schedule(sizes.bs.1)) {
                bs_row(&mut g, $streams_name, &to, sizes.bs, &want);
            })?
            replay_row(replay_name, || {
                let b = bs::Buffers::<$S>::new(sizes.bs.0, sizes.bs.1).expect("buffers");
                let (mut graph, ()) = grcuda::record(&$space, $backend, |r| bs::run(r, &b)).expect("records");
                graph.submit().expect("replays");
                bs::check(&b.result().expect("result"), &want);
                g.bench_function(BenchmarkId::new(replay_name, sizes.bs.0 * sizes.bs.1), |it| it.iter(|| graph.submit().expect("replays")));
            });
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-ml");
            g.sample_size(10);
            let input = ml::Input::new(sizes.ml.0, sizes.ml.1, sizes.ml.2);
            let want = ml::reference(&input);
            $(ml_row::<$S, _>(&mut g, $name, &$to, (&input, sizes.ml.0), &want);)*
            $(if let Some(to) = ($streams)(ml::schedule()) {
                ml_row(&mut g, $streams_name, &to, (&input, sizes.ml.0), &want);
            })?
            replay_row(replay_name, || {
                let b = ml::Buffers::<$S>::new(&input).expect("buffers");
                let (mut graph, ()) = grcuda::record(&$space, $backend, |r| ml::run(r, &b)).expect("records");
                graph.submit().expect("replays");
                b.result().expect("result").check(&want);
                g.bench_function(BenchmarkId::new(replay_name, sizes.ml.0), |it| it.iter(|| graph.submit().expect("replays")));
            });
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-hits");
            g.sample_size(10);
            let input = hits::Input::new(sizes.hits.0, sizes.hits.1);
            let want = hits::reference(&input, sizes.hits.2);
            $({
                let to = $to;
                let b = hits::Buffers::<$S>::new(&input).expect("buffers");
                hits::run(&to, &b, sizes.hits.2).expect("runs");
                hits::check(&b.result().expect("result"), &want);
                g.bench_function(BenchmarkId::new($name, sizes.hits.0), |it| it.iter(|| hits::run(&to, &b, sizes.hits.2).expect("runs")));
            })*
            println!("grcuda-hits/{replay_name}: skipped: HITS reads its norms on the host between launches, which a recorded graph cannot");
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-img");
            g.sample_size(10);
            let want = img::reference(sizes.img);
            $(img_row::<$S, _>(&mut g, $name, &$to, sizes.img, &want);)*
            $(if let Some(to) = ($streams)(img::schedule()) {
                img_row(&mut g, $streams_name, &to, sizes.img, &want);
            })?
            replay_row(replay_name, || {
                let b = img::Buffers::<$S>::new(sizes.img).expect("buffers");
                let (mut graph, sum) = grcuda::record(&$space, $backend, |r| img::run(r, &b)).expect("records");
                graph.submit().expect("replays");
                img::check(&b.result().expect("result"), sum.replayed().expect("a sum"), &want);
                g.bench_function(BenchmarkId::new(replay_name, sizes.img), |it| it.iter(|| {
                    graph.submit().expect("replays");
                    sum.replayed()
                }));
            });
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-dl");
            g.sample_size(10);
            let input = dl::Input::new(sizes.dl);
            let want = dl::reference(&input);
            $(dl_row::<$S, _>(&mut g, $name, &$to, (&input, sizes.dl), &want);)*
            $(if let Some(to) = ($streams)(dl::schedule()) {
                dl_row(&mut g, $streams_name, &to, (&input, sizes.dl), &want);
            })?
            replay_row(replay_name, || {
                let b = dl::Buffers::<$S>::new(&input).expect("buffers");
                let (mut graph, out) = grcuda::record(&$space, $backend, |r| dl::run(r, &b)).expect("records");
                graph.submit().expect("replays");
                dl::check(&b.features().expect("result"), out.replayed().expect("an output"), &want);
                g.bench_function(BenchmarkId::new(replay_name, sizes.dl), |it| it.iter(|| {
                    graph.submit().expect("replays");
                    out.replayed()
                }));
            });
            g.finish();
        }
    }};
}

fn host(c: &mut Criterion) {
    let serial = || HostDevice::new("serial", vec![Serial::default(); 2]).expect("device");
    bench_all!(
        c,
        Serial,
        &HOST,
        [
            (
                "serial-hoplite",
                dag(vec![serial()], Serial::default(), Execution::Async)
            ),
            (
                "serial-sync",
                dag(vec![serial()], Serial::default(), Execution::Sync)
            ),
            ("serial-eager", Eager(Serial::default())),
        ],
        replay: ("serial-replay", Serial::default(), HostGraph::new(Serial::default()))
    );
    let space = RayonSpace::default();
    // One stream on the pool (a host device's default: one stream per instance). The pool
    // runs one launch at a time, so a second stream on it adds no parallelism, only the
    // hand-over of its launch lock between two stream threads (`rayon-two-streams`).
    let pool = || HostDevice::new("cpu", vec![space.clone()]).expect("device");
    let two_streams = || HostDevice::new("cpu", vec![space.clone(); 2]).expect("device");
    let parts = || HostDevice::partitioned("cpu", &space, 2).expect("device");
    bench_all!(
        c,
        RayonSpace,
        &HOST,
        [
            (
                "rayon-hoplite",
                dag(vec![pool()], space.clone(), Execution::Async)
            ),
            (
                "rayon-two-streams",
                dag(vec![two_streams()], space.clone(), Execution::Async)
            ),
            (
                "rayon-partitions",
                dag(vec![parts()], space.clone(), Execution::Async)
            ),
            ("rayon-sync", dag(vec![pool()], space.clone(), Execution::Sync)),
            ("rayon-eager", Eager(space.clone())),
        ],
        replay: ("rayon-replay", space.clone(), HostGraph::new(space.clone()))
    );
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    use hoplite::Cuda;
    use hoplite::cuda::dag::CudaDevice;
    use hoplite::cuda::graph::CudaGraph;
    let device = |k: usize| CudaDevice::new(0, k);
    if let Err(e) = device(2) {
        println!("grcuda: the cuda rows are skipped: {e}");
        return;
    }
    bench_all!(
        c,
        Cuda,
        &GPU,
        [
            (
                "cuda-hoplite",
                dag(
                    vec![device(2).expect("device")],
                    Cuda::default(),
                    Execution::Async
                )
            ),
            (
                "cuda-sync",
                dag(vec![device(1).expect("device")], Cuda::default(), Execution::Sync)
            ),
            ("cuda-eager", Eager(Cuda::default())),
        ],
        replay: ("cuda-replay", Cuda::default(), CudaGraph::new(&Cuda::default())),
        streams: ("cuda-streams", |schedule| grcuda::streams::Streams::new(schedule).ok())
    );
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, host, cuda);
criterion_main!(benches);
