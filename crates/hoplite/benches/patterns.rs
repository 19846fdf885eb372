//! Every pattern on serial and rayon beside its baselines, in one run: the raw serial loop for
//! serial, hand-written rayon on a pool of the same size for rayon.
//!
//! Ids follow `<backend>-hoplite` / `<backend>-<baseline>` within a group, so `cargo xtask
//! bench` pairs each hoplite measurement with its baselines.

use std::hint::black_box;
use std::sync::atomic::Ordering;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hoplite::prelude::*;
use hoplite::{ParallelFor, ParallelScan, RayonSpace, Serial};
use rayon::prelude::*;

mod common;
use common::raw_pool;

#[path = "common/c_library.rs"]
mod c_library;
use c_library::CLibrary;

const CHUNK: usize = 1 << 14;

/// `a = b + s * c` through the access model on `space`.
fn triad_on<S: ParallelFor<RangePolicy<S>>>(
    space: S,
    n: usize,
    s: f64,
    a: &View<f64, 1>,
    b: &View<f64, 1>,
    c: &View<f64, 1>,
) {
    parallel_for(
        "triad",
        (RangePolicy::new(space, 0..n), (a.write(), b.read(), c.read())),
        |(i, (a, b, c))| a.set(i, b.get(i) + s * c.get(i)),
    )
    .expect("triad")
}

/// Inclusive prefix sum of `x` into `out` through the access model on `space`.
fn scan_on<S: ParallelScan<RangePolicy<S>>>(space: S, n: usize, x: &View<i64, 1>, out: &View<i64, 1>) -> i64 {
    parallel_scan(
        "scan",
        (RangePolicy::new(space, 0..n), (out.write(), x.read())),
        |(i, (out, x)), partial: &mut i64, is_final| {
            *partial += x.get(i);
            if is_final {
                out.set(i, *partial);
            }
        },
    )
    .expect("scan")
}

fn triad(c: &mut Criterion) {
    let mut group = c.benchmark_group("triad");
    let space = RayonSpace::default();
    let pool = raw_pool(&space);
    for log2 in [20, 24] {
        let n = 1usize << log2;
        let s = 3.0f64;
        group.throughput(Throughput::Bytes((3 * n * size_of::<f64>()) as u64));
        let b_data: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
        let c_data: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
        let a = View::<f64, 1>::new("a", [n]).expect("a");
        let b = View::<f64, 1>::from_slice("b", [n], &b_data).expect("b");
        let cv = View::<f64, 1>::from_slice("c", [n], &c_data).expect("c");
        let mut raw_a = vec![0.0f64; n];
        group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |bench, &n| {
            bench.iter(|| triad_on(Serial::default(), n, s, &a, &b, &cv))
        });
        group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &n, |bench, &n| {
            bench.iter(|| triad_on(space.clone(), n, s, &a, &b, &cv))
        });
        group.bench_with_input(BenchmarkId::new("serial-raw-loop", n), &n, |bench, _| {
            bench.iter(|| {
                for ((a, b), c) in raw_a.iter_mut().zip(&b_data).zip(&c_data) {
                    *a = b + s * c;
                }
                black_box(&mut raw_a);
            })
        });
        group.bench_with_input(BenchmarkId::new("rayon-raw-par-chunks", n), &n, |bench, _| {
            bench.iter(|| {
                pool.install(|| {
                    raw_a
                        .par_chunks_mut(CHUNK)
                        .zip(b_data.par_chunks(CHUNK))
                        .zip(c_data.par_chunks(CHUNK))
                        .for_each(|((a, b), c)| {
                            for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                                *a = b + s * c;
                            }
                        })
                });
                black_box(&mut raw_a);
            })
        });
    }
    group.finish();
}

fn dot(c: &mut Criterion) {
    let mut group = c.benchmark_group("dot");
    let space = RayonSpace::default();
    let pool = raw_pool(&space);
    let c_dot = CDot::build(space.concurrency())
        .map_err(|why| println!("dot: no C baseline: {why}"))
        .ok();
    for log2 in [20, 24] {
        let n = 1usize << log2;
        group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
        let x_data: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 1e-3).collect();
        let y_data: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
        let x = View::<f64, 1>::from_slice("x", [n], &x_data).expect("x");
        let y = View::<f64, 1>::from_slice("y", [n], &y_data).expect("y");
        group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |bench, &n| {
            bench.iter(|| {
                let policy = RangePolicy::new(Serial::default(), 0..n);
                parallel_reduce(
                    "dot",
                    (policy, (x.read(), y.read())),
                    |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
                    Sum::<f64>::new(),
                )
                .expect("dot")
            })
        });
        group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &n, |bench, &n| {
            bench.iter(|| {
                let policy = RangePolicy::new(space.clone(), 0..n);
                parallel_reduce(
                    "dot",
                    (policy, (x.read(), y.read())),
                    |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
                    Sum::<f64>::new(),
                )
                .expect("dot")
            })
        });
        group.bench_with_input(BenchmarkId::new("serial-raw-loop", n), &n, |bench, _| {
            bench.iter(|| x_data.iter().zip(&y_data).map(|(x, y)| x * y).sum::<f64>())
        });
        group.bench_with_input(BenchmarkId::new("rayon-raw-par-iter-sum", n), &n, |bench, _| {
            bench.iter(|| pool.install(|| x_data.par_iter().zip(&y_data).map(|(x, y)| x * y).sum::<f64>()))
        });
        if let Some(c_dot) = &c_dot {
            let len = std::ffi::c_long::try_from(n).expect("a C long");
            group.bench_with_input(BenchmarkId::new("serial-c-omp-simd", n), &n, |bench, _| {
                // SAFETY: both slices hold `len` doubles; the C function only reads them.
                bench.iter(|| unsafe { (c_dot.simd)(x_data.as_ptr(), y_data.as_ptr(), len) })
            });
            group.bench_with_input(
                BenchmarkId::new("rayon-c-omp-parallel-simd", n),
                &n,
                |bench, _| {
                    // SAFETY: as above; OpenMP's threads only read the slices.
                    bench.iter(|| unsafe { (c_dot.parallel_simd)(x_data.as_ptr(), y_data.as_ptr(), len) })
                },
            );
        }
    }
    group.finish();
}

/// A C dot product: `(x, y, n)`.
type CDotFn = unsafe extern "C" fn(*const f64, *const f64, std::ffi::c_long) -> f64;

/// The C dot products of `c_baselines/dot.c` (`omp simd reduction`, one thread and OpenMP's).
struct CDot {
    simd: CDotFn,
    parallel_simd: CDotFn,
}

impl CDot {
    /// Compiles and loads the baseline with `threads` OpenMP threads, or says why not.
    fn build(threads: usize) -> Result<Self, String> {
        let library = CLibrary::build("c_baselines/dot.c", "hoplite_dot_baseline", &["-O2", "-fopenmp"])?;
        let threads = std::ffi::c_int::try_from(threads).map_err(|e| e.to_string())?;
        // SAFETY: each symbol is the function of that name in `c_baselines/dot.c`, with the
        // signature written here; the library stays loaded for the life of the process.
        unsafe {
            let set_threads = std::mem::transmute::<
                *mut std::ffi::c_void,
                unsafe extern "C" fn(std::ffi::c_int),
            >(library.symbol("hoplite_c_set_threads")?);
            set_threads(threads);
            Ok(CDot {
                simd: std::mem::transmute::<*mut std::ffi::c_void, CDotFn>(
                    library.symbol("hoplite_c_dot_simd")?,
                ),
                parallel_simd: std::mem::transmute::<*mut std::ffi::c_void, CDotFn>(
                    library.symbol("hoplite_c_dot_omp_simd")?,
                ),
            })
        }
    }
}

fn dispatch(c: &mut Criterion) {
    let mut group = c.benchmark_group("empty-dispatch");
    let space = RayonSpace::default();
    let pool = raw_pool(&space);
    let n = space.concurrency();
    group.bench_function(BenchmarkId::new("serial-hoplite", n), |bench| {
        bench.iter(|| {
            parallel_for("empty", RangePolicy::new(Serial::default(), 0..n), |i| {
                black_box(i);
            })
        })
    });
    group.bench_function(BenchmarkId::new("serial-raw-loop", n), |bench| {
        bench.iter(|| {
            for i in 0..black_box(n) {
                black_box(i);
            }
        })
    });
    group.bench_function(BenchmarkId::new("rayon-hoplite", n), |bench| {
        bench.iter(|| {
            parallel_for("empty", RangePolicy::new(space.clone(), 0..n), |i| {
                black_box(i);
            })
        })
    });
    group.bench_function(BenchmarkId::new("rayon-raw-install", n), |bench| {
        bench.iter(|| {
            pool.install(|| {
                (0..n).into_par_iter().for_each(|i| {
                    black_box(i);
                })
            })
        })
    });
    group.finish();
}

fn stencil(c: &mut Criterion) {
    let mut group = c.benchmark_group("stencil-2d");
    let space = RayonSpace::default();
    let pool = raw_pool(&space);
    let side = 4096usize;
    let n = side * side;
    group.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
    let data: Vec<f64> = (0..n).map(|k| (k % 13) as f64).collect();
    let input = View::<f64, 2>::from_slice("in", [side, side], &data).expect("in");
    let output = View::<f64, 2>::new("out", [side, side]).expect("out");
    group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &side, |bench, &side| {
        bench.iter(|| {
            let policy =
                MDRangePolicy::new(space.clone(), [1, 1], [side - 1, side - 1]).with_tiles([16, side]);
            parallel_for(
                "stencil",
                (policy, (output.write(), input.read())),
                |(ij, (out, u))| {
                    let lap = u.neighbor(ij, [-1, 0])
                        + u.neighbor(ij, [1, 0])
                        + u.neighbor(ij, [0, -1])
                        + u.neighbor(ij, [0, 1]);
                    out.set(ij, 0.25 * lap - u.get(ij));
                },
            )
            .expect("stencil")
        })
    });
    let mut out = vec![0.0f64; n];
    group.bench_with_input(
        BenchmarkId::new("rayon-raw-par-chunks", n),
        &side,
        |bench, &side| {
            bench.iter(|| {
                pool.install(|| {
                    out.par_chunks_mut(side).enumerate().for_each(|(i, dst)| {
                        if i == 0 || i == side - 1 {
                            return;
                        }
                        let (up, row, down) = (
                            &data[(i - 1) * side..],
                            &data[i * side..],
                            &data[(i + 1) * side..],
                        );
                        for j in 1..side - 1 {
                            let lap = up[j] + down[j] + row[j - 1] + row[j + 1];
                            dst[j] = 0.25 * lap - row[j];
                        }
                    })
                });
                black_box(&mut out);
            })
        },
    );
    group.finish();
}

fn scan(c: &mut Criterion) {
    let mut group = c.benchmark_group("inclusive-scan");
    let space = RayonSpace::default();
    let pool = raw_pool(&space);
    let n = 1usize << 24;
    // 16 bytes per element: one i64 read, one written.
    group.throughput(Throughput::Bytes((16 * n) as u64));
    let x_data: Vec<i64> = (0..n as i64).map(|i| i % 17 - 8).collect();
    let x = View::<i64, 1>::from_slice("x", [n], &x_data).expect("x");
    let out = View::<i64, 1>::new("out", [n]).expect("out");
    group.bench_with_input(BenchmarkId::new("serial-hoplite", n), &n, |bench, &n| {
        bench.iter(|| scan_on(Serial::default(), n, &x, &out))
    });
    group.bench_with_input(BenchmarkId::new("rayon-hoplite", n), &n, |bench, &n| {
        bench.iter(|| scan_on(space.clone(), n, &x, &out))
    });
    let mut raw = vec![0i64; n];
    group.bench_with_input(BenchmarkId::new("serial-raw-loop", n), &n, |bench, _| {
        bench.iter(|| {
            let mut acc = 0i64;
            for (o, x) in raw.iter_mut().zip(&x_data) {
                acc += x;
                *o = acc;
            }
            black_box(&mut raw);
        })
    });
    group.bench_with_input(BenchmarkId::new("rayon-raw-two-pass", n), &n, |bench, _| {
        bench.iter(|| {
            pool.install(|| {
                let chunk = n.div_ceil(4 * pool.current_num_threads());
                let sums: Vec<i64> = x_data.par_chunks(chunk).map(|c| c.iter().sum()).collect();
                let mut offsets = Vec::with_capacity(sums.len());
                let mut acc = 0;
                for s in &sums {
                    offsets.push(acc);
                    acc += s;
                }
                raw.par_chunks_mut(chunk)
                    .zip(x_data.par_chunks(chunk))
                    .zip(&offsets)
                    .for_each(|((o, x), &off)| {
                        let mut acc = off;
                        for (o, x) in o.iter_mut().zip(x) {
                            acc += x;
                            *o = acc;
                        }
                    });
            });
            black_box(&mut raw);
        })
    });
    group.finish();
}

fn deterministic(c: &mut Criterion) {
    let mut group = c.benchmark_group("deterministic-sum");
    let space = RayonSpace::default();
    let n = 1usize << 24;
    group.throughput(Throughput::Bytes((n * size_of::<f64>()) as u64));
    let x_data: Vec<f64> = (0..n).map(|i| 1.0 / (1.0 + i as f64)).collect();
    let x = View::<f64, 1>::from_slice("x", [n], &x_data).expect("x");
    for (name, deterministic) in [("rayon-hoplite", true), ("rayon-ordinary", false)] {
        group.bench_with_input(BenchmarkId::new(name, n), &n, |bench, &n| {
            bench.iter(|| {
                let policy =
                    RangePolicy::new(space.clone(), 0..n).with_deterministic_reduction(deterministic);
                parallel_reduce(
                    "sum",
                    (policy, (x.read(),)),
                    |(i, (x,)), acc| *acc += x.get(i),
                    Sum::<f64>::new(),
                )
                .expect("sum")
            })
        });
    }
    group.finish();
}

/// The work of point `(i, j)` of the uneven box: `i / 8` square roots, so row `i` costs in
/// proportion to `i` and the lower half of the rows holds three quarters of the work.
#[inline]
fn uneven_work(i: usize, j: usize) -> f64 {
    (0..i / 8).map(|k| ((k + j) as f64).sqrt()).sum()
}

/// An MDRange box whose rows cost unequal work, on rayon: the dynamic schedule (tiles handed
/// out on demand) against the static one (equal shares of rows) and hand-written rayon over
/// rows (work stealing).
fn mdrange_uneven(c: &mut Criterion) {
    let mut group = c.benchmark_group("mdrange-uneven");
    let space = RayonSpace::default();
    let pool = raw_pool(&space);
    let n = 512usize;
    let y = View::<f64, 2>::new("y", [n, n]).expect("y");
    let mut raw_y = vec![0.0f64; n * n];
    for (name, schedule) in [
        ("rayon-hoplite", Schedule::Dynamic),
        ("rayon-static", Schedule::Static),
    ] {
        group.bench_with_input(BenchmarkId::new(name, n * n), &n, |bench, &n| {
            bench.iter(|| {
                let policy = MDRangePolicy::new(space.clone(), [0, 0], [n, n]).with_schedule(schedule);
                parallel_for("uneven", (policy, (y.write(),)), |(ij, (y,))| {
                    y.set(ij, uneven_work(ij[0], ij[1]))
                })
                .expect("uneven")
            })
        });
    }
    group.bench_with_input(
        BenchmarkId::new("rayon-raw-par-chunks", n * n),
        &n,
        |bench, &n| {
            bench.iter(|| {
                pool.install(|| {
                    raw_y.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                        for (j, y) in row.iter_mut().enumerate() {
                            *y = uneven_work(i, j);
                        }
                    })
                });
                black_box(&mut raw_y);
            })
        },
    );
    group.finish();
}

/// Samples of the histogram benchmark, and its bins.
const SAMPLES: usize = 10_000_000;
const BINS: usize = 256;

/// The bin of sample `i`: a cheap hash, so every bin is hit.
#[inline(always)]
fn bin_of(i: usize) -> usize {
    (i.wrapping_mul(0x9e37_79b9) >> 7) % BINS
}

/// The baseline of both histogram groups: the histogram as a reduction value.
fn array_histogram(space: &RayonSpace) -> [u64; BINS] {
    parallel_reduce(
        "histogram",
        RangePolicy::new(space.clone(), 0..SAMPLES),
        |i, acc: &mut [u64; BINS]| acc[bin_of(*i)] += 1,
        Sum::new(),
    )
    .expect("histogram")
}

/// A histogram of 10^7 samples into 256 bins on rayon, two ways: the documented unique-token
/// idiom (`let id = tokens.guard();` per sample, then a plain update of the row of that id)
/// as `rayon-hoplite`, against an array reduction (`Sum::<[u64; 256]>`) and the serial loop.
/// The `histogram-scatter` group measures a `ScatterView` (`add` into the thread's private
/// copy, then `contribute`) against the same array reduction.
fn histogram(c: &mut Criterion) {
    {
        let mut group = c.benchmark_group("histogram-scatter");
        group.sample_size(20);
        let space = RayonSpace::default();
        let bins: View<u64, 1> = View::new("bins", [BINS]).expect("bins");
        let mut scatter = ScatterView::new(&bins);
        group.bench_function(BenchmarkId::new("rayon-hoplite", SAMPLES), |b| {
            b.iter(|| {
                parallel_for(
                    "histogram",
                    (RangePolicy::new(space.clone(), 0..SAMPLES), (scatter.access(),)),
                    |(i, (hist,))| hist.add(bin_of(*i), 1),
                )
                .expect("histogram");
                scatter.contribute().expect("contribute");
            })
        });
        group.bench_function(BenchmarkId::new("rayon-sum-array", SAMPLES), |b| {
            b.iter(|| array_histogram(&space))
        });
        group.finish();
        let total: u64 = bins.to_vec().expect("bins").iter().sum();
        assert_eq!(total % SAMPLES as u64, 0, "every run counted every sample");
    }

    let mut group = c.benchmark_group("histogram-tokens");
    group.sample_size(10);
    let space = RayonSpace::default();
    let tokens = space.unique_token();
    let rows: Vec<std::sync::atomic::AtomicU64> = (0..tokens.size() * BINS)
        .map(|_| std::sync::atomic::AtomicU64::new(0))
        .collect();
    group.bench_function(BenchmarkId::new("rayon-hoplite", SAMPLES), |b| {
        b.iter(|| {
            parallel_for("histogram", RangePolicy::new(space.clone(), 0..SAMPLES), |i| {
                let id = tokens.guard();
                // The row is this id's alone while the guard lives: a load and a store.
                let cell = &rows[*id * BINS + bin_of(*i)];
                cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            })
            .expect("histogram");
            black_box(&rows);
        })
    });
    group.bench_function(BenchmarkId::new("rayon-sum-array", SAMPLES), |b| {
        b.iter(|| array_histogram(&space))
    });
    group.bench_function(BenchmarkId::new("rayon-serial-loop", SAMPLES), |b| {
        b.iter(|| {
            let mut counts = [0u64; BINS];
            for i in 0..black_box(SAMPLES) {
                counts[bin_of(i)] += 1;
            }
            counts
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    triad,
    dot,
    dispatch,
    stencil,
    scan,
    deterministic,
    mdrange_uneven,
    histogram
);
criterion_main!(benches);
