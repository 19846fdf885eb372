//! The emulated driver through the seam alone: streams, events and kernels as CUDA documents
//! them, and the sanitizer catching each of its three findings when the ordering that would
//! make the work correct is left out on purpose.

use std::ffi::c_void;

use super::sanitizer::Sanitizer;
use super::{Api, Emulated, MemoryKind, RawContext, RawFunction, RawStream};
use crate::CudaError;
use crate::geometry::{DeviceLimits, LaunchGeometry};

const KERNELS: &str = r#"
extern "C" __global__ void fill(double* y, double v, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = v;
}
extern "C" __global__ void add(double* y, const double* x, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] += x[i];
}
extern "C" __global__ void block_sum(double* out, const double* x, long long n) {
    __shared__ double partial[128];
    double mine = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) mine += x[i];
    partial[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
"#;

/// A driver of one device, with the sanitizer on or off (seed 0: no delays), for one test.
fn driver(sanitize: bool) -> &'static Emulated {
    Box::leak(Box::new(Emulated::new(1, Sanitizer::new(sanitize, 7))))
}

const CTX: RawContext = RawContext(1);
const N: usize = 1 << 12;

fn function(d: &Emulated, entry: &str) -> RawFunction {
    let hash = hoplite_abi::stable_hash(&[KERNELS.as_bytes(), entry.as_bytes()]);
    d.load_function(CTX, &DeviceLimits::SM_90, hash, "tests", entry, KERNELS)
        .expect("the host compiler builds the test kernels")
}

fn grid(blocks: u32, threads: u32) -> LaunchGeometry {
    LaunchGeometry {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        shared_bytes: 0,
    }
}

/// Launches `entry` with the parameter values `values` (each 8 bytes).
fn launch(
    d: &Emulated,
    entry: &str,
    g: LaunchGeometry,
    s: RawStream,
    values: &mut [u64],
) -> Result<(), CudaError> {
    let f = function(d, entry);
    let mut pointers: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
    // SAFETY: one pointer per parameter of the entry (all 8 bytes); the addresses among the
    // values are live allocations of N doubles (or `g.grid[0]` for `block_sum`'s output).
    unsafe { d.launch_kernel(CTX, f, &g, s, &mut pointers) }
}

fn vector(d: &Emulated) -> u64 {
    d.mem_alloc(CTX, MemoryKind::Device, N * 8, false)
        .expect("device memory")
}

fn read(d: &Emulated, address: u64, len: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; len];
    // SAFETY: `out` holds `len` doubles; `address` is an allocation of at least as many.
    unsafe { d.memcpy_dtoh(CTX, out.as_mut_ptr().cast(), address, len * 8, None) }.expect("copy back");
    out
}

#[test]
fn streams_run_kernels_in_order_and_events_order_streams() {
    let d = driver(false);
    let (a, b) = (d.stream_create(CTX).expect("a"), d.stream_create(CTX).expect("b"));
    let (x, y) = (vector(d), vector(d));
    launch(d, "fill", grid(8, 64), a, &mut [x, 2.0f64.to_bits(), N as u64]).expect("fill x");
    launch(d, "fill", grid(8, 64), b, &mut [y, 1.0f64.to_bits(), N as u64]).expect("fill y");
    let e = d.event_create(CTX, false).expect("event");
    d.event_record(CTX, e, a).expect("record");
    d.stream_wait_event(CTX, b, e).expect("b waits for a");
    for _ in 0..3 {
        launch(d, "add", grid(8, 64), b, &mut [y, x, N as u64]).expect("y += x");
    }
    // Barriers: one block of 128 threads sums through shared memory.
    let out = d.mem_alloc(CTX, MemoryKind::Device, 8, false).expect("out");
    launch(d, "block_sum", grid(1, 128), b, &mut [out, y, N as u64]).expect("sum");
    d.stream_synchronize(CTX, b).expect("b");
    assert_eq!(read(d, y, N), vec![7.0; N]);
    assert_eq!(read(d, out, 1), vec![7.0 * N as f64]);
    assert!(d.event_query(CTX, e).expect("reached"));
}

#[test]
fn a_launch_that_does_not_fit_the_device_is_refused_as_cuda_refuses_it() {
    let d = driver(false);
    let s = d.stream_create(CTX).expect("stream");
    let x = vector(d);
    let e = launch(d, "fill", grid(1, 2048), s, &mut [x, 0, N as u64]).expect_err("2048 threads");
    assert!(e.to_string().contains("CUDA_ERROR_INVALID_VALUE"), "{e}");
    let e = launch(d, "fill", grid(1, 32), s, &mut [x, 0]).expect_err("two of three parameters");
    assert!(e.to_string().contains("different number of parameters"), "{e}");
}

/// The sanitizer's three findings, each caught when the ordering is left out and quiet when it
/// is there. One test: (c) needs the arena closed, so no other device work may run meanwhile.
#[test]
fn the_sanitizer_catches_races_frees_in_use_and_host_reads() {
    let d = driver(true);
    let (a, b) = (d.stream_create(CTX).expect("a"), d.stream_create(CTX).expect("b"));
    let (x, y) = (vector(d), vector(d));

    // (b) b reads x while a's fill of x may still run: no event, no synchronization.
    launch(d, "fill", grid(8, 64), a, &mut [x, 2.0f64.to_bits(), N as u64]).expect("fill x");
    let race = launch(d, "add", grid(8, 64), b, &mut [y, x, N as u64]).expect_err("a race");
    let CudaError::Sanitizer { finding, seed } = &race else {
        panic!("expected a sanitizer finding, got {race}")
    };
    assert!(
        finding.contains("race") && finding.contains("kernel `tests`"),
        "{finding}"
    );
    assert!(
        race.to_string()
            .contains(&format!("HOPLITE_CUDA_SCHEDULE_SEED={seed}")),
        "{race}"
    );
    // With an event between them, the same launch is ordered, and reads what a wrote.
    launch(d, "fill", grid(8, 64), b, &mut [y, 0, N as u64]).expect("fill y");
    let e = d.event_create(CTX, false).expect("event");
    d.event_record(CTX, e, a).expect("record");
    d.stream_wait_event(CTX, b, e).expect("wait");
    launch(d, "add", grid(8, 64), b, &mut [y, x, N as u64]).expect("ordered by the event");
    d.stream_synchronize(CTX, b).expect("b");
    assert_eq!(read(d, y, N), vec![2.0; N]);

    // (a) x freed while a's queued work on it was never waited for by the host.
    launch(d, "fill", grid(8, 64), a, &mut [x, 3.0f64.to_bits(), N as u64]).expect("fill x");
    // SAFETY: `x` is a live device allocation (the sanitizer refuses the free, so it stays).
    let in_use = unsafe { d.mem_free(CTX, MemoryKind::Device, x) }.expect_err("freed in use");
    assert!(
        in_use
            .to_string()
            .contains("freed by the host while kernel `tests`"),
        "{in_use}"
    );
    // A free's error is often dropped (memory is freed in drops): the next call reports it.
    let again = d
        .stream_synchronize(CTX, a)
        .expect_err("reported at the next call");
    assert_eq!(again, in_use);
    d.stream_synchronize(CTX, a).expect("a");
    // SAFETY: as above; now a's work on it is done and seen done.
    unsafe { d.mem_free(CTX, MemoryKind::Device, x) }.expect("freed after the wait");

    // (c) the host reads device memory directly, not through a copy.
    d.stream_synchronize(CTX, b).expect("no device work runs now");
    // SAFETY: `y` is a live allocation of N doubles in the process's address space; the read
    // faults (the arena is closed to the host), and the handler records it and lets it finish.
    let _ = unsafe { std::ptr::read_volatile(y as usize as *const u8) };
    let host_read = d.stream_synchronize(CTX, a).expect_err("a host read");
    assert!(
        host_read.to_string().contains("host read of device memory"),
        "{host_read}"
    );
    d.stream_synchronize(CTX, a)
        .expect("the finding is reported once");
}
