//! The CUDA backend on a GPU, each measurement beside its baseline in the same run:
//!
//! * `cuda-chain`: a chain of N small `#[kernel]` launches, each after the previous: the
//!   generic graph builder's `then_parallel_for` chain as one CUDA graph (`cuda-hoplite-graph`:
//!   one `cuGraphLaunch` and a wait per submit), N `parallel_for`s on a `Cuda` policy, each
//!   waiting for its kernel (`cuda-hoplite-eager`, since a launch's borrows end when it
//!   returns), beside N bare `cuLaunchKernel`s then a wait (`cuda-raw-cudarc`, below);
//!   throughput is nodes, so the per-node time is the median over N.
//! * `cuda-triad` and `cuda-dot` at 2^24 `f64`: the core's `parallel_for` / `parallel_reduce`
//!   on a `Cuda` policy (`cuda-hoplite`) beside a bare `cuLaunchKernel` of the same NVRTC'd
//!   entry through cudarc's raw driver bindings with the same packed parameters and geometry
//!   (`cuda-raw-cudarc`), which skips hoplite's checks and keep-alive, and reads the dot's
//!   block partials into a reused pageable vector and sums them in one left fold.
//!
//! * `cuda-pipeline`: GrCUDA's image pipeline (three blurs, two sobels, two contrast stretches, an
//!   unsharp mask and two blends of a 4096² `f32` image) as implicit-DAG vertices on CUDA
//!   streams (`ctx.launch` of layout-generic `#[kernel]`s on MDRange policies, written as
//!   eager launches are): a context with four streams (`cuda-dag-async`, the branches overlapped) against
//!   a synchronous context on one (`cuda-dag-sync`, every launch waited for), which give the
//!   same image; and the four-stream context on column-major planes
//!   (`cuda-dag-async-layout-left`), whose MDRanges walk the first index on x.
//!
//! * `cuda-occupancy`: eight independent triads of 2^18 `f64` (a few microseconds each) as
//!   DAG vertices on four CUDA streams, each launch covering its whole range
//!   (`cuda-dag-async`) or asking for a quarter of the device (`cuda-dag-async-occupancy-25`,
//!   `with_desired_occupancy(25)`), beside the synchronous context on one stream
//!   (`cuda-dag-sync`): whether kernels of different streams overlap once each leaves room for
//!   the others, as GrCUDA's small fixed grids do.
//!
//! Without a CUDA driver or device every group prints that it is skipped and why, and the
//! run exits 0.

use std::ffi::{CString, c_void};
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cudarc::driver::sys;
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::device_kernel::{DeviceJoin, DeviceKernel, HandleAccess, ScalarType};
use hoplite_core::{ArrayLayout, LayoutLeft, LayoutRight, View};
use hoplite_cuda::dag::CudaDevice;
use hoplite_cuda::geometry::{LaunchGeometry, range_geometry};
use hoplite_cuda::graph::CudaGraph;
use hoplite_cuda::nvrtc::ModuleCache;
use hoplite_cuda::params::{
    HandleArg, IterationArgs, KernelArg, ParamBuffer, ScalarArg, pack_for, pack_reduce,
};
use hoplite_cuda::reduce::{ReduceWalk, partials_count, partials_geometry};
use hoplite_cuda::{Cuda, CudaSpace, copy_to_device};
use hoplite_dag::{Context, ContextOptions, DagError, Execution};

/// `y[i] = a`: the chain's small kernel.
#[kernel]
pub fn set_to(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, a: f64) {
    y.set(i, a);
}

/// STREAM triad.
#[kernel]
pub fn triad(
    i: Idx<'_>,
    a: BoundWriter<'_, f64, 1>,
    b: BoundReader<'_, f64, 1>,
    c: BoundReader<'_, f64, 1>,
    s: f64,
) {
    a.set(i, b.get(i) + s * c.get(i));
}

/// Dot product.
#[kernel]
pub fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

type DeviceView = View<f64, 1, LayoutLeft, CudaSpace>;

/// The device, or `None` after printing why the group is skipped.
fn device(group: &str) -> Option<Cuda> {
    match Cuda::new() {
        Ok(c) => Some(c),
        Err(e) => {
            println!("{group}: skipped, needs a CUDA device: {e}");
            None
        }
    }
}

fn filled(label: &str, n: usize, value: f64) -> DeviceView {
    let v = DeviceView::without_initializing(label, [n]).expect("device memory");
    copy_to_device(&v, &vec![value; n]).expect("upload");
    v
}

/// As [`filled`], row-major: the layout the `#[kernel]`s here name, which the core's launches
/// (`parallel_for` on a `Cuda` policy) match against the handles' types.
fn filled_right(label: &str, n: usize, value: f64) -> View<f64, 1, LayoutRight, CudaSpace> {
    let v = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing(label, [n]).expect("device memory");
    copy_to_device(&v, &vec![value; n]).expect("upload");
    v
}

fn chain(c: &mut Criterion) {
    let Some(cuda) = device("cuda-chain") else { return };
    let mut group = c.benchmark_group("cuda-chain");
    let n = 1024;
    let y = filled("y", n, 0.0);
    for nodes in [16usize, 64] {
        group.throughput(Throughput::Elements(nodes as u64));
        // Each `parallel_for` waits for its kernel (its handles' borrows end when it
        // returns); the graph of the generic builder runs the chain as one CUDA Graph.
        let yr = filled_right("y", n, 0.0);
        group.bench_with_input(
            BenchmarkId::new("cuda-hoplite-eager", nodes),
            &nodes,
            |b, &nodes| {
                b.iter(|| {
                    for k in 0..nodes {
                        parallel_for(
                            "set",
                            (RangePolicy::new(cuda.clone(), 0..n), (yr.write(),)),
                            set_to::with(k as f64),
                        )
                        .expect("launch");
                    }
                })
            },
        );
        let mut generic = hoplite_graph::create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
            let mut last = g.root().then_parallel_for(
                "set",
                (RangePolicy::new(cuda.clone(), 0..n), (yr.write(),)),
                set_to::with(0.0),
            );
            for k in 1..nodes {
                last = last.then_parallel_for(
                    "set",
                    (RangePolicy::new(cuda.clone(), 0..n), (yr.write(),)),
                    set_to::with(k as f64),
                );
            }
        })
        .expect("a graph of kernel nodes");
        generic.submit().expect("instantiates and runs");
        group.bench_with_input(BenchmarkId::new("cuda-hoplite-graph", nodes), &nodes, |b, _| {
            b.iter(|| generic.submit().expect("runs"))
        });
        let raw = RawLaunch::new::<set_to>(&cuda);
        let limits = cuda.limits().expect("a device");
        let g = range_geometry(&limits, n as u64).expect("elements");
        let blocks: Vec<Vec<u8>> = (0..nodes)
            .map(|k| {
                let args = [
                    handle(&y, HandleAccess::Write),
                    KernelArg::Scalar(ScalarArg::F64(k as f64)),
                ];
                let range = IterationArgs::Range {
                    begin: 0,
                    end: n as u64,
                };
                pack_for::<set_to>(&range, &args).expect("packs").bytes()
            })
            .collect();
        group.bench_with_input(BenchmarkId::new("cuda-raw-cudarc", nodes), &nodes, |b, _| {
            b.iter(|| {
                for params in &blocks {
                    raw.launch(&g, params);
                }
                raw.wait()
            })
        });
    }
    group.finish();
}

/// A kernel entry loaded through the raw driver bindings, launched with a packed parameter
/// buffer on a stream of its own: the baseline without hoplite in between.
struct RawLaunch {
    function: sys::CUfunction,
    stream: sys::CUstream,
}

fn check(call: &str, r: sys::CUresult) {
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "{call}");
}

impl RawLaunch {
    /// `K`'s entry from the module cache's PTX, in device 0's primary context.
    fn new<K: DeviceKernel>(cuda: &Cuda) -> RawLaunch {
        let arch = cuda.limits().expect("a device").arch();
        let (ptx, _) = ModuleCache::global().ptx::<K>(&arch).expect("compiles");
        let image = CString::new(ptx.as_bytes()).expect("no NUL in PTX");
        let entry = CString::new(K::ENTRY).expect("no NUL in the entry");
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        let mut module: sys::CUmodule = std::ptr::null_mut();
        let mut function: sys::CUfunction = std::ptr::null_mut();
        let mut stream: sys::CUstream = std::ptr::null_mut();
        // SAFETY: `Cuda::new` succeeded, so the driver is loaded and initialized and device 0
        // exists; every out pointer is live; `image` and `entry` are NUL-terminated and
        // outlive the calls; the primary context is retained (never released) before it is
        // made current, so it outlives the module, the function and the stream.
        unsafe {
            check(
                "cuDevicePrimaryCtxRetain",
                sys::cuDevicePrimaryCtxRetain(&mut ctx, 0),
            );
            check("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx));
            check(
                "cuModuleLoadData",
                sys::cuModuleLoadData(&mut module, image.as_ptr().cast()),
            );
            check(
                "cuModuleGetFunction",
                sys::cuModuleGetFunction(&mut function, module, entry.as_ptr()),
            );
            check("cuStreamCreate", sys::cuStreamCreate(&mut stream, 0));
        }
        RawLaunch { function, stream }
    }

    /// Launches with `params` (the entry's packed parameter block) and waits.
    fn launch_and_wait(&self, g: &LaunchGeometry, params: &[u8]) {
        self.launch(g, params);
        self.wait();
    }

    /// Waits for the launches so far.
    fn wait(&self) {
        // SAFETY: the stream is live.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.stream)
        });
    }

    /// Launches with `params` (the entry's packed parameter block); the caller waits before
    /// the views can go.
    fn launch(&self, g: &LaunchGeometry, params: &[u8]) {
        let mut words = vec![0u64; params.len().div_ceil(8)];
        for (k, b) in params.iter().enumerate() {
            words[k / 8] |= u64::from(*b) << ((k % 8) * 8);
        }
        let mut size = params.len();
        // CU_LAUNCH_PARAM_BUFFER_POINTER, the buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, its size,
        // CU_LAUNCH_PARAM_END.
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1),
            words.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(2),
            (&raw mut size).cast(),
            std::ptr::null_mut(),
        ];
        // SAFETY: `function` is a loaded entry whose parameters are exactly the packed block
        // (packed by hoplite's packer for this kernel), passed through `extra` with its size;
        // the block and `size` outlive the call (the driver copies them); every address in it
        // is a live device allocation of the right size; the geometry is hoplite's for the
        // same launch; the stream is live; the caller waits before the views can go.
        unsafe {
            check(
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    self.function,
                    g.grid[0],
                    g.grid[1],
                    g.grid[2],
                    g.block[0],
                    g.block[1],
                    g.block[2],
                    g.shared_bytes,
                    self.stream,
                    std::ptr::null_mut(),
                    extra.as_mut_ptr(),
                ),
            );
        }
    }
}

fn handle(view: &DeviceView, access: HandleAccess) -> KernelArg {
    KernelArg::Handle(HandleArg {
        ptr: view.data() as usize as u64,
        access,
        element: ScalarType::F64,
        extents: vec![view.len() as u64],
        strides: vec![1],
    })
}

fn stream_triad(c: &mut Criterion) {
    let Some(cuda) = device("cuda-triad") else { return };
    let mut group = c.benchmark_group("cuda-triad");
    let n = 1usize << 24;
    group.throughput(Throughput::Bytes((3 * n * size_of::<f64>()) as u64));
    let (a, b, cv) = (filled("a", n, 0.0), filled("b", n, 1.0), filled("c", n, 2.0));
    let s = 3.0;
    let (ar, br, cr) = (
        filled_right("a", n, 0.0),
        filled_right("b", n, 1.0),
        filled_right("c", n, 2.0),
    );
    group.bench_with_input(BenchmarkId::new("cuda-hoplite", n), &n, |bench, &n| {
        bench.iter(|| {
            parallel_for(
                "triad",
                (
                    RangePolicy::new(cuda.clone(), 0..n),
                    (ar.write(), br.read(), cr.read()),
                ),
                triad::with(s),
            )
            .expect("launch")
        })
    });
    let raw = RawLaunch::new::<triad>(&cuda);
    let params: ParamBuffer = pack_for::<triad>(
        &IterationArgs::Range {
            begin: 0,
            end: n as u64,
        },
        &[
            handle(&a, HandleAccess::Write),
            handle(&b, HandleAccess::Read),
            handle(&cv, HandleAccess::Read),
            KernelArg::Scalar(ScalarArg::F64(s)),
        ],
    )
    .expect("packs");
    let limits = cuda.limits().expect("a device");
    let g = range_geometry(&limits, n as u64).expect("elements");
    let bytes = params.bytes();
    group.bench_with_input(BenchmarkId::new("cuda-raw-cudarc", n), &n, |bench, _| {
        bench.iter(|| raw.launch_and_wait(&g, &bytes))
    });
    group.finish();
}

fn stream_dot(c: &mut Criterion) {
    let Some(cuda) = device("cuda-dot") else { return };
    let mut group = c.benchmark_group("cuda-dot");
    let n = 1usize << 24;
    group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
    let (x, y) = (filled("x", n, 1.0), filled("y", n, 2.0));
    let (xr, yr) = (filled_right("x", n, 1.0), filled_right("y", n, 2.0));
    group.bench_with_input(BenchmarkId::new("cuda-hoplite", n), &n, |bench, &n| {
        bench.iter(|| {
            black_box(
                parallel_reduce(
                    "dot",
                    (RangePolicy::new(cuda.clone(), 0..n), (xr.read(), yr.read())),
                    dot::with(),
                    Sum::<f64>::new(),
                )
                .expect("reduces"),
            )
        })
    });
    let raw = RawLaunch::new::<dot>(&cuda);
    let limits = cuda.limits().expect("a device");
    let g = partials_geometry(&limits, range_geometry(&limits, n as u64).expect("elements"));
    // The same device join as the library's launch: one partial per block.
    let count = partials_count(&g, true) as usize;
    let partials = DeviceView::without_initializing("partials", [count]).expect("device memory");
    let params = pack_reduce::<dot, f64>(
        &IterationArgs::Range {
            begin: 0,
            end: n as u64,
        },
        &[handle(&x, HandleAccess::Read), handle(&y, HandleAccess::Read)],
        &0.0,
        Some(DeviceJoin::Sum),
        ReduceWalk::Strided,
    )
    .expect("packs");
    // The partials pointer is the last parameter.
    let mut bytes = params.bytes();
    let at = *params.offsets().last().expect("a partials parameter");
    bytes[at..at + 8].copy_from_slice(&(partials.data() as usize as u64).to_le_bytes());
    let mut host = vec![0.0f64; count];
    group.bench_with_input(BenchmarkId::new("cuda-raw-cudarc", n), &n, |bench, _| {
        bench.iter(|| {
            raw.launch_and_wait(&g, &bytes);
            hoplite_cuda::copy_to_host(&mut host, &partials).expect("partials");
            black_box(host.iter().sum::<f64>())
        })
    });
    group.finish();
}

/// (The pipeline's kernels take planes of any layout.)
/// `out = img` averaged over the `(2r + 1)^2` box around each pixel.
#[kernel]
pub fn box_blur<L: ArrayLayout>(
    ij: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2, L>,
    img: BoundReader<'_, f32, 2, L>,
    r: isize,
) {
    let mut sum = 0.0f32;
    for dy in -r..=r {
        for dx in -r..=r {
            sum += img.neighbor(ij, [dy, dx]);
        }
    }
    let w = (2 * r + 1) as f32;
    out.set(ij, sum / (w * w));
}

/// The gradient magnitude of `b` (Sobel).
#[kernel]
pub fn sobel<L: ArrayLayout>(
    ij: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2, L>,
    b: BoundReader<'_, f32, 2, L>,
) {
    let gx = b.neighbor(ij, [-1, 1]) + 2.0 * b.neighbor(ij, [0, 1]) + b.neighbor(ij, [1, 1])
        - b.neighbor(ij, [-1, -1])
        - 2.0 * b.neighbor(ij, [0, -1])
        - b.neighbor(ij, [1, -1]);
    let gy = b.neighbor(ij, [1, -1]) + 2.0 * b.neighbor(ij, [1, 0]) + b.neighbor(ij, [1, 1])
        - b.neighbor(ij, [-1, -1])
        - 2.0 * b.neighbor(ij, [-1, 0])
        - b.neighbor(ij, [-1, 1]);
    out.set(ij, (gx * gx + gy * gy).sqrt());
}

/// A saturating contrast stretch.
#[kernel]
pub fn extend<L: ArrayLayout>(
    ij: MdIdx<'_, 2>,
    mask: BoundWriter<'_, f32, 2, L>,
    s: BoundReader<'_, f32, 2, L>,
) {
    let v = s.get(ij);
    mask.set(ij, v / (v + 0.25));
}

/// An unsharp mask.
#[kernel]
pub fn unsharpen<L: ArrayLayout>(
    ij: MdIdx<'_, 2>,
    u: BoundWriter<'_, f32, 2, L>,
    img: BoundReader<'_, f32, 2, L>,
    b: BoundReader<'_, f32, 2, L>,
) {
    u.set(ij, img.get(ij) + 0.5 * (img.get(ij) - b.get(ij)));
}

/// `c = u m + b (1 - m)`.
#[kernel]
pub fn blend<L: ArrayLayout>(
    ij: MdIdx<'_, 2>,
    c: BoundWriter<'_, f32, 2, L>,
    u: BoundReader<'_, f32, 2, L>,
    b: BoundReader<'_, f32, 2, L>,
    m: BoundReader<'_, f32, 2, L>,
) {
    c.set(ij, u.get(ij) * m.get(ij) + b.get(ij) * (1.0 - m.get(ij)));
}

/// The planes of the image pipeline, in layout `L`.
struct Planes<L: ArrayLayout> {
    image: Plane<L>,
    blur_small: Plane<L>,
    blur_large: Plane<L>,
    blur_unsharp: Plane<L>,
    sobel_small: Plane<L>,
    sobel_large: Plane<L>,
    mask: Plane<L>,
    unsharp: Plane<L>,
    combined: Plane<L>,
    edges: Plane<L>,
    out: Plane<L>,
}

type Plane<L> = View<f32, 2, L, CudaSpace>;

impl<L: ArrayLayout + 'static> Planes<L> {
    fn new(n: usize, pixels: &[f32]) -> Planes<L> {
        let plane = |label: &str| Plane::<L>::without_initializing(label, [n, n]).expect("device memory");
        let p = Planes {
            image: plane("image"),
            blur_small: plane("blur small"),
            blur_large: plane("blur large"),
            blur_unsharp: plane("blur unsharp"),
            sobel_small: plane("sobel small"),
            sobel_large: plane("sobel large"),
            mask: plane("mask"),
            unsharp: plane("unsharp"),
            combined: plane("combined"),
            edges: plane("edges"),
            out: plane("out"),
        };
        copy_to_device(&p.image, pixels).expect("upload");
        p
    }
}

/// GrCUDA's image pipeline (its benchmark 8) as DAG vertices on CUDA streams: three blurs of
/// one image feed a sobel branch, a contrast stretch and an unsharp mask, which blends join.
/// Ten launches written one after another, as eager launches would be; the context infers four
/// branches from the handles and runs each vertex on the GPU that holds its views.
fn image_pipeline<L: ArrayLayout + 'static>(
    ctx: &Context<CudaDevice>,
    p: &Planes<L>,
    n: usize,
) -> Result<(), DagError> {
    let interior = || MDRangePolicy::new(Cuda::default(), [3, 3], [n - 3, n - 3]);
    let blur = |label: &str, out: &Plane<L>, r: isize| {
        ctx.launch(
            label,
            (interior(), (out.write(), p.image.read())),
            box_blur::with(r),
        )
    };
    let sobel_of = |label: &str, out: &Plane<L>, input: &Plane<L>| {
        ctx.launch(label, (interior(), (out.write(), input.read())), sobel::with())
    };
    blur("blur small", &p.blur_small, 1)?;
    blur("blur large", &p.blur_large, 3)?;
    blur("blur unsharp", &p.blur_unsharp, 2)?;
    sobel_of("sobel small", &p.sobel_small, &p.blur_small)?;
    sobel_of("sobel large", &p.sobel_large, &p.blur_large)?;
    ctx.launch(
        "extend",
        (interior(), (p.mask.write(), p.sobel_large.read())),
        extend::with(),
    )?;
    ctx.launch(
        "unsharpen",
        (
            interior(),
            (p.unsharp.write(), p.image.read(), p.blur_unsharp.read()),
        ),
        unsharpen::with(),
    )?;
    ctx.launch(
        "combine",
        (
            interior(),
            (
                p.combined.write(),
                p.unsharp.read(),
                p.blur_large.read(),
                p.mask.read(),
            ),
        ),
        blend::with(),
    )?;
    ctx.launch(
        "edges",
        (interior(), (p.edges.write(), p.sobel_small.read())),
        extend::with(),
    )?;
    ctx.launch(
        "combine small",
        (
            interior(),
            (
                p.out.write(),
                p.combined.read(),
                p.blur_small.read(),
                p.edges.read(),
            ),
        ),
        blend::with(),
    )?;
    ctx.synchronize()
}

/// A context over four streams of device 0, and a synchronous one over one stream.
fn four_streams_and_one_synchronous() -> (Context<CudaDevice>, Context<CudaDevice>) {
    let async_ctx = Context::new(
        vec![CudaDevice::new(0, 4).expect("streams")],
        ContextOptions::default(),
    )
    .expect("context");
    let sync_ctx = Context::new(
        vec![CudaDevice::new(0, 1).expect("a stream")],
        ContextOptions::default().execution(Execution::Sync),
    )
    .expect("context");
    (async_ctx, sync_ctx)
}

fn dag_pipeline(c: &mut Criterion) {
    let Some(_) = device("cuda-pipeline") else { return };
    let mut group = c.benchmark_group("cuda-pipeline");
    let n = 4096;
    let pixels: Vec<f32> = (0..n * n).map(|k| ((k * 7919) % 255) as f32 / 255.0).collect();
    // Row-major planes, and column-major ones, whose MDRanges walk the first index on x.
    let p = Planes::<LayoutRight>::new(n, &pixels);
    let left = Planes::<LayoutLeft>::new(n, &pixels);
    let (async_ctx, sync_ctx) = four_streams_and_one_synchronous();
    // Async and sync give the same image, bit for bit. Copies keep the views' memory order,
    // so the column-major planes hold the transposed image, whose results are the transposed
    // results: the same values up to the order the blurs add their pixels in.
    let mut outs = [vec![0.0f32; n * n], vec![0.0f32; n * n], vec![0.0f32; n * n]];
    image_pipeline(&async_ctx, &p, n).expect("runs");
    hoplite_cuda::copy_to_host(&mut outs[0], &p.out).expect("download");
    image_pipeline(&sync_ctx, &p, n).expect("runs");
    hoplite_cuda::copy_to_host(&mut outs[1], &p.out).expect("download");
    image_pipeline(&async_ctx, &left, n).expect("runs");
    hoplite_cuda::copy_to_host(&mut outs[2], &left.out).expect("download");
    assert!(outs[0] == outs[1], "async and sync pipelines differ");
    let worst = outs[0]
        .iter()
        .zip(&outs[2])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(
        worst < 1e-5,
        "row-major and column-major pipelines differ by {worst}"
    );
    group.throughput(Throughput::Elements((n * n) as u64));
    group.bench_with_input(BenchmarkId::new("cuda-dag-async", n), &n, |b, &n| {
        b.iter(|| image_pipeline(&async_ctx, &p, n).expect("runs"))
    });
    group.bench_with_input(BenchmarkId::new("cuda-dag-sync", n), &n, |b, &n| {
        b.iter(|| image_pipeline(&sync_ctx, &p, n).expect("runs"))
    });
    group.bench_with_input(BenchmarkId::new("cuda-dag-async-layout-left", n), &n, |b, &n| {
        b.iter(|| image_pipeline(&async_ctx, &left, n).expect("runs"))
    });
    group.finish();
}

/// Eight triads `a = b + 3c` on their own views (`b` all 1, `c` all 2), as DAG vertices, at a
/// desired occupancy of `occupancy` percent if any; then a wait for all.
fn independent_triads(
    ctx: &Context<CudaDevice>,
    sets: &[[View<f64, 1, LayoutRight, CudaSpace>; 3]],
    occupancy: Option<u8>,
) -> Result<(), DagError> {
    for [a, b, c] in sets {
        let mut policy = RangePolicy::new(Cuda::default(), 0..a.extent(0));
        if let Some(percent) = occupancy {
            policy = policy.with_desired_occupancy(percent);
        }
        ctx.launch(
            "triad",
            (policy, (a.write(), b.read(), c.read())),
            triad::with(3.0),
        )?;
    }
    ctx.synchronize()
}

fn occupancy(c: &mut Criterion) {
    let Some(_) = device("cuda-occupancy") else { return };
    let mut group = c.benchmark_group("cuda-occupancy");
    let n = 1 << 18;
    let sets: Vec<[View<f64, 1, LayoutRight, CudaSpace>; 3]> = (0..8)
        .map(|_| {
            [
                filled_right("a", n, 0.0),
                filled_right("b", n, 1.0),
                filled_right("c", n, 2.0),
            ]
        })
        .collect();
    let (async_ctx, sync_ctx) = four_streams_and_one_synchronous();
    // Every way computes every element: 1 + 3 * 2.
    for (ctx, occupancy) in [(&async_ctx, Some(25)), (&sync_ctx, None)] {
        for [a, ..] in &sets {
            copy_to_device(a, &vec![0.0; n]).expect("upload");
        }
        independent_triads(ctx, &sets, occupancy).expect("runs");
        for [a, ..] in &sets {
            let mut out = vec![0.0; n];
            hoplite_cuda::copy_to_host(&mut out, a).expect("download");
            assert!(
                out.iter().all(|&v| v == 7.0),
                "a triad at {occupancy:?}% missed elements"
            );
        }
    }
    group.throughput(Throughput::Elements((8 * n) as u64));
    group.bench_with_input(BenchmarkId::new("cuda-dag-sync", n), &n, |b, _| {
        b.iter(|| independent_triads(&sync_ctx, &sets, None).expect("runs"))
    });
    group.bench_with_input(BenchmarkId::new("cuda-dag-async", n), &n, |b, _| {
        b.iter(|| independent_triads(&async_ctx, &sets, None).expect("runs"))
    });
    group.bench_with_input(BenchmarkId::new("cuda-dag-async-occupancy-25", n), &n, |b, _| {
        b.iter(|| independent_triads(&async_ctx, &sets, Some(25)).expect("runs"))
    });
    group.finish();
}

criterion_group!(benches, chain, stream_triad, stream_dot, dag_pipeline, occupancy);
criterion_main!(benches);
