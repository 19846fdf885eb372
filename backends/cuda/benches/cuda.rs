//! The CUDA backend on a GPU, each measurement beside its baseline in the same run:
//!
//! * `cuda-chain`: a chain of N small `#[kernel]` launches, each after the previous, as one
//!   CUDA graph (`cuda-hoplite`: `CudaGraph::run`, one `cuGraphLaunch` and a wait) and as N
//!   eager launches then a fence (`cuda-eager`), beside N bare `cuLaunchKernel`s then a
//!   wait (`cuda-raw-cudarc`, below); throughput is nodes, so the per-node time is the median
//!   over N.
//! * `cuda-triad` and `cuda-dot` at 2^24 `f64`: `Cuda::launch_range` / `Cuda::reduce_range`
//!   (`cuda-hoplite`) beside a bare `cuLaunchKernel` of the same NVRTC'd entry through
//!   cudarc's raw driver bindings with the same packed parameters and geometry
//!   (`cuda-raw-cudarc`), which skips hoplite's checks and keep-alive, and reads the dot's
//!   block partials into a reused pageable vector and sums them in one left fold.
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
use hoplite_core::{ExecutionSpace, LayoutLeft, View};
use hoplite_cuda::geometry::{LaunchGeometry, range_geometry};
use hoplite_cuda::graph::CudaGraph;
use hoplite_cuda::nvrtc::ModuleCache;
use hoplite_cuda::params::{
    HandleArg, IterationArgs, KernelArg, ParamBuffer, ScalarArg, pack_for, pack_reduce,
};
use hoplite_cuda::reduce::{partials_count, partials_geometry};
use hoplite_cuda::{Cuda, CudaSpace, DeviceArg, copy_to_device};

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

fn chain(c: &mut Criterion) {
    let Some(cuda) = device("cuda-chain") else { return };
    let mut group = c.benchmark_group("cuda-chain");
    let n = 1024;
    let y = filled("y", n, 0.0);
    for nodes in [16usize, 64] {
        group.throughput(Throughput::Elements(nodes as u64));
        let mut graph = CudaGraph::new(&cuda);
        let mut last = Vec::new();
        for k in 0..nodes {
            let node = graph
                .kernel_range::<set_to>(0..n, &[DeviceArg::write(&y), DeviceArg::scalar(k as f64)], &last)
                .expect("a kernel node");
            last = vec![node];
        }
        graph.run().expect("instantiates and runs");
        group.bench_with_input(BenchmarkId::new("cuda-hoplite", nodes), &nodes, |b, _| {
            b.iter(|| graph.run().expect("runs"))
        });
        group.bench_with_input(BenchmarkId::new("cuda-eager", nodes), &nodes, |b, &nodes| {
            b.iter(|| {
                for k in 0..nodes {
                    cuda.launch_range::<set_to>(0..n, &[DeviceArg::write(&y), DeviceArg::scalar(k as f64)])
                        .expect("launch");
                }
                cuda.fence().expect("fence")
            })
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
    group.bench_with_input(BenchmarkId::new("cuda-hoplite", n), &n, |bench, &n| {
        bench.iter(|| {
            cuda.launch_range::<triad>(
                0..n,
                &[
                    DeviceArg::write(&a),
                    DeviceArg::read(&b),
                    DeviceArg::read(&cv),
                    DeviceArg::scalar(s),
                ],
            )
            .expect("launch");
            cuda.fence().expect("fence")
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
    group.bench_with_input(BenchmarkId::new("cuda-hoplite", n), &n, |bench, &n| {
        bench.iter(|| {
            black_box(
                cuda.reduce_range::<dot, _>(
                    0..n,
                    &[DeviceArg::read(&x), DeviceArg::read(&y)],
                    &Sum::<f64>::new(),
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

criterion_group!(benches, chain, stream_triad, stream_dot);
criterion_main!(benches);
