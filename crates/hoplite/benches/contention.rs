//! Launch costs on a busy machine: an empty two-iteration `parallel_for` and a team launch
//! whose one team meets in one barrier, on the rayon backend, with no other load and with
//! busy-loop threads (one per core) that the benchmark starts and stops itself, beside raw
//! rayon (`pool.install` of a parallel iterator, `pool.broadcast` into a `std` barrier) and an
//! OpenMP baseline (libgomp) that the benchmark compiles when a C compiler with `-fopenmp` is
//! present (it prints why it skips it otherwise).
//!
//! Ids: `contention-dispatch/rayon-<impl>/<busy loops>` and
//! `contention-team/rayon-<impl>/<busy loops>`, so `cargo xtask bench` pairs hoplite with both
//! baselines at each load. The busy loops run only while their group's functions are
//! measured (a few seconds) and stop by themselves after [`BUSY_LIMIT`] whatever happens.
//! Outside `cargo bench` (criterion's test mode) the benchmark does nothing.

use std::ffi::{c_int, c_long, c_void};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use hoplite::prelude::*;
use hoplite::{RayonSpace, TeamMember};
use rayon::prelude::*;

mod common;
use common::raw_pool;

#[path = "common/c_library.rs"]
mod c_library;
use c_library::CLibrary;

/// The longest a busy loop runs, even if the benchmark never stops it.
const BUSY_LIMIT: Duration = Duration::from_secs(20);

/// Threads that keep every core busy (`while :; do :; done`), stopped when dropped.
struct BusyLoops {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl BusyLoops {
    fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|k| {
                let stop = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name(format!("busy-loop-{k}"))
                    .spawn(move || {
                        let started = Instant::now();
                        let mut x = 0u64;
                        while !stop.load(Ordering::Relaxed) && started.elapsed() < BUSY_LIMIT {
                            for _ in 0..100_000 {
                                x = black_box(x.wrapping_add(1));
                            }
                        }
                    })
                    .expect("a busy-loop thread")
            })
            .collect();
        BusyLoops { stop, threads }
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The OpenMP baseline, compiled from `contention/openmp_baseline.c` and loaded at run time.
struct OpenMp {
    dispatch: unsafe extern "C" fn(c_long),
    team_barrier: unsafe extern "C" fn(),
}

impl OpenMp {
    /// Compiles and loads the baseline with `threads` OpenMP threads, or says why not.
    fn build(threads: usize) -> Result<Self, String> {
        let library = CLibrary::build(
            "contention/openmp_baseline.c",
            "hoplite_openmp_baseline",
            &["-O2", "-fopenmp"],
        )?;
        let symbol = |name: &str| library.symbol(name);
        // SAFETY: each symbol is the function of that name in `openmp_baseline.c`, with the
        // signature written here; the library stays loaded for the life of the process.
        let (set_threads, max_threads, dispatch, team_barrier) = unsafe {
            (
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int)>(symbol(
                    "hoplite_omp_set_threads",
                )?),
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(symbol(
                    "hoplite_omp_max_threads",
                )?),
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_long)>(symbol(
                    "hoplite_omp_dispatch",
                )?),
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(symbol(
                    "hoplite_omp_team_barrier",
                )?),
            )
        };
        let wanted = c_int::try_from(threads).map_err(|e| e.to_string())?;
        // SAFETY: plain OpenMP runtime calls, on the thread that runs the benchmark.
        let got = unsafe {
            set_threads(wanted);
            max_threads()
        };
        if got != wanted {
            return Err(format!("OpenMP gives {got} threads, not {wanted}"));
        }
        Ok(OpenMp {
            dispatch,
            team_barrier,
        })
    }
}

fn benches(c: &mut Criterion) {
    let space = RayonSpace::default();
    let threads = space.concurrency();
    let pool = raw_pool(&space);
    let openmp = OpenMp::build(threads)
        .map_err(|why| println!("contention: no OpenMP baseline: {why}"))
        .ok();
    let raw_barrier = std::sync::Barrier::new(threads);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    for busy in [0, cores] {
        {
            let mut g = c.benchmark_group("contention-dispatch");
            g.sample_size(20)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            let _load = BusyLoops::start(busy);
            g.bench_function(BenchmarkId::new("rayon-hoplite", busy), |b| {
                b.iter(|| {
                    parallel_for("empty", RangePolicy::new(space.clone(), 0..2), |i| {
                        black_box(i);
                    })
                    .expect("dispatch")
                })
            });
            g.bench_function(BenchmarkId::new("rayon-raw-rayon", busy), |b| {
                b.iter(|| {
                    pool.install(|| {
                        (0..2usize).into_par_iter().for_each(|i| {
                            black_box(i);
                        })
                    })
                })
            });
            if let Some(omp) = &openmp {
                g.bench_function(BenchmarkId::new("rayon-openmp", busy), |b| {
                    // SAFETY: the baseline's function, loaded by `OpenMp::build`.
                    b.iter(|| unsafe { (omp.dispatch)(2) })
                });
            }
            g.finish();
        }
        {
            let mut g = c.benchmark_group("contention-team");
            g.sample_size(20)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            let _load = BusyLoops::start(busy);
            g.bench_function(BenchmarkId::new("rayon-hoplite", busy), |b| {
                b.iter(|| {
                    parallel_for("team", TeamPolicy::new(space.clone(), 1, threads), |m| {
                        m.team_barrier()
                    })
                    .expect("team launch")
                })
            });
            g.bench_function(BenchmarkId::new("rayon-raw-rayon", busy), |b| {
                b.iter(|| {
                    pool.broadcast(|_| {
                        raw_barrier.wait();
                    })
                })
            });
            if let Some(omp) = &openmp {
                g.bench_function(BenchmarkId::new("rayon-openmp", busy), |b| {
                    // SAFETY: the baseline's function, loaded by `OpenMp::build`.
                    b.iter(|| unsafe { (omp.team_barrier)() })
                });
            }
            g.finish();
        }
    }
}

fn main() {
    // Criterion's test mode (`cargo test --benches`) would start the busy loops for nothing.
    if !std::env::args().any(|a| a == "--bench") {
        println!("contention: measured only under `cargo bench`");
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
