//! `grcuda-*`: GrCUDA's six scheduler benchmarks (`common/grcuda`), per backend:
//!
//! * `<backend>-hoplite` — the implicit DAG, async: two streams (on rayon, two streams that
//!   both launch on the whole pool, see docs/dag.md);
//! * `rayon-partitions` — async, each of two streams on its half of the pool's threads;
//! * `<backend>-sync` — the same DAG with `Execution::Sync` (every launch waits);
//! * `<backend>-eager` — the same `#[kernel]`s with plain `parallel_for` / `parallel_reduce`.
//!
//! With `--features cuda` and a device, `cuda-hoplite` (a DAG over two CUDA streams),
//! `cuda-sync` and `cuda-eager` (the core's launches on one `Cuda` instance) join them, at GPU
//! sizes (`GPU`, 16x the host's data); without a device the CUDA rows say why they are
//! skipped. Every run is checked once against its
//! serial reference before it is timed.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hoplite::dag::device::{Device, HostDevice, Stream};
use hoplite::dag::{Context, ContextOptions, Execution};
use hoplite::{RayonSpace, Serial};

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

fn dag<D: Device>(devices: Vec<D>, space: <D::Stream as Stream>::Space, execution: Execution) -> Dag<D> {
    Dag {
        ctx: Context::new(devices, ContextOptions::default().execution(execution)).expect("context"),
        space,
    }
}

macro_rules! bench_all {
    ($c:expr, $S:ty, $sizes:expr, [$(($name:expr, $to:expr)),* $(,)?]) => {{
        let c: &mut Criterion = $c;
        let sizes: &Sizes = $sizes;
        {
            let mut g = c.benchmark_group("grcuda-vec");
            g.sample_size(10);
            let want = vec::reference(sizes.vec);
            $({
                let to = $to;
                let b = vec::Buffers::<$S>::new(sizes.vec).expect("buffers");
                vec::check(vec::run(&to, &b).expect("runs"), want);
                g.bench_function(BenchmarkId::new($name, sizes.vec), |it| it.iter(|| vec::run(&to, &b).expect("runs")));
            })*
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-bs");
            g.sample_size(10);
            let want = bs::reference(sizes.bs.0);
            $({
                let to = $to;
                let b = bs::Buffers::<$S>::new(sizes.bs.0, sizes.bs.1).expect("buffers");
                bs::run(&to, &b).expect("runs");
                bs::check(&b.result().expect("result"), &want);
                g.bench_function(BenchmarkId::new($name, sizes.bs.0 * sizes.bs.1), |it| it.iter(|| bs::run(&to, &b).expect("runs")));
            })*
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-ml");
            g.sample_size(10);
            let input = ml::Input::new(sizes.ml.0, sizes.ml.1, sizes.ml.2);
            let want = ml::reference(&input);
            $({
                let to = $to;
                let b = ml::Buffers::<$S>::new(&input).expect("buffers");
                ml::run(&to, &b).expect("runs");
                b.result().expect("result").check(&want);
                g.bench_function(BenchmarkId::new($name, sizes.ml.0), |it| it.iter(|| ml::run(&to, &b).expect("runs")));
            })*
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
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-img");
            g.sample_size(10);
            let want = img::reference(sizes.img);
            $({
                let to = $to;
                let b = img::Buffers::<$S>::new(sizes.img).expect("buffers");
                let sum = img::run(&to, &b).expect("runs");
                to.finish().expect("finished");
                img::check(&b.result().expect("result"), sum, &want);
                g.bench_function(BenchmarkId::new($name, sizes.img), |it| it.iter(|| img::run(&to, &b).expect("runs")));
            })*
            g.finish();
        }
        {
            let mut g = c.benchmark_group("grcuda-dl");
            g.sample_size(10);
            let input = dl::Input::new(sizes.dl);
            let want = dl::reference(&input);
            $({
                let to = $to;
                let b = dl::Buffers::<$S>::new(&input).expect("buffers");
                let out = dl::run(&to, &b).expect("runs");
                to.finish().expect("finished");
                dl::check(&b.features().expect("result"), out, &want);
                g.bench_function(BenchmarkId::new($name, sizes.dl), |it| it.iter(|| dl::run(&to, &b).expect("runs")));
            })*
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
        ]
    );
    let space = RayonSpace::default();
    let pool = || HostDevice::new("cpu", vec![space.clone(); 2]).expect("device");
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
                "rayon-partitions",
                dag(vec![parts()], space.clone(), Execution::Async)
            ),
            ("rayon-sync", dag(vec![pool()], space.clone(), Execution::Sync)),
            ("rayon-eager", Eager(space.clone())),
        ]
    );
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    use hoplite::Cuda;
    use hoplite::cuda::dag::CudaDevice;
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
        ]
    );
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, host, cuda);
criterion_main!(benches);
