// Over 800 lines on purpose: the tour is one program read top to bottom, a function per section.
//! A tour of hoplite on the default execution space: every feature that works today, what it
//! computed, and how long it took.
//!
//! Run it with `cargo run --release --example tour`; with `--features numa` it also tours the
//! NUMA backend (which links the system's hwloc); with `--features cuda` the CUDA backend, on a
//! GPU or, with `HOPLITE_CUDA_DRIVER=emulated`, on the emulated CUDA driver. Names after `--` run only those sections:
//! `profiling`, `views`, `backends`, `reductions`, `scans`, `mdrange`, `kernels`, `teams`,
//! `tokens`, `graphs`, `selection`, `dag`, `numa`, `cuda`, `errors`.

use std::hint::black_box;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hoplite::prelude::*;

#[path = "../benches/common/image.rs"]
mod image;

fn main() -> Result<()> {
    let start = Instant::now();
    println!("hoplite tour\n============\n");
    // Loads the Kokkos Tools connector that KOKKOS_TOOLS_LIBS names, if any (see `profiling`).
    if let Err(e) = hoplite::initialize() {
        println!("profiling is off: {e}\n");
    }
    let mut config = Vec::new();
    // Printing into memory cannot fail.
    let _ = hoplite::print_configuration(&mut config, true);
    print!("{}", String::from_utf8_lossy(&config));

    // `cargo run --example tour -- graphs dag` runs only the sections named; no name runs all.
    let chosen: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |section: &str| chosen.is_empty() || chosen.iter().any(|c| c == section);
    if wanted("profiling") {
        profiling()?;
    }
    if wanted("views") {
        views()?;
    }
    if wanted("backends") {
        backends_side_by_side()?;
    }
    if wanted("reductions") {
        reductions()?;
    }
    if wanted("scans") {
        scans()?;
    }
    if wanted("mdrange") {
        md_range()?;
    }
    if wanted("kernels") {
        kernels()?;
    }
    if wanted("teams") {
        teams()?;
    }
    if wanted("tokens") {
        unique_tokens()?;
    }
    if wanted("graphs")
        && let Err(e) = graphs()
    {
        println!("graphs failed: {e}");
    }
    if wanted("selection")
        && let Err(e) = selection()
    {
        println!("selection failed: {e}");
    }
    if wanted("dag")
        && let Err(e) = implicit_dag()
    {
        println!("implicit DAG failed: {e}");
    }
    #[cfg(feature = "numa")]
    if wanted("numa")
        && let Err(e) = numa()
    {
        println!("NUMA failed: {e}");
    }
    #[cfg(feature = "cuda")]
    if wanted("cuda")
        && let Err(e) = cuda()
    {
        println!("CUDA failed: {e}");
    }
    if wanted("errors") {
        errors()?;
    }

    // The connector writes its report now (it would at exit too).
    hoplite::finalize();
    println!("\ntour finished in {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// Prints a section's title and opens a profile region named after it, which a Kokkos Tools
/// connector sees until the section's function returns.
fn section(title: &str) -> hoplite::profiling::ScopedRegion {
    println!("\n-- {title} --");
    hoplite::profiling::ScopedRegion::new(title.split(':').next().unwrap_or(title))
}

/// Runs `f` `reps` times and returns its last result and the best time.
fn timed<T>(reps: usize, mut f: impl FnMut() -> T) -> (T, Duration) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..reps {
        let t = Instant::now();
        let r = black_box(f());
        best = best.min(t.elapsed());
        out = Some(r);
    }
    match out {
        Some(r) => (r, best),
        None => unreachable!("reps is at least 1"),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn profiling() -> Result<()> {
    let _region = section("Profiling: Kokkos Tools connectors see every section, kernel and view");
    use hoplite::profiling::{Section, mark_event, tools_loaded};
    // Every section of the tour is a profile region; kernels, allocations, copies and fences
    // are reported without asking. A section times repeated work; an event marks an instant.
    let x = View::<f64, 1>::new("profiling x", [1 << 16])?;
    let sweeps = Section::new("tour: fill sweeps");
    for sweep in 0..3 {
        sweeps.start();
        parallel_for("fill", (x.len(), (x.write(),)), |(i, (x,))| {
            x.set(i, (sweep * *i) as f64)
        })?;
        sweeps.stop();
    }
    mark_event("tour: fills done");
    if tools_loaded() {
        println!("a Kokkos Tools connector is loaded: it reports this run (docs/profiling.md)");
    } else {
        println!(
            "no Kokkos Tools connector loaded; to profile the tour with one, build a connector \
             (docs/profiling.md) and run\n  KOKKOS_TOOLS_LIBS=/path/to/libkp_kernel_timer.so \
             cargo run --release --example tour"
        );
    }
    Ok(())
}

fn views() -> Result<()> {
    let _region = section("Views and the access model: axpy, a 2-D stencil, a histogram");
    let n = 1 << 22;
    let x_data: Vec<f64> = (0..n).map(|i| (i % 100) as f64 * 0.01).collect();
    let x = View::<f64, 1>::from_slice("x", [n], &x_data)?;
    let y = View::<f64, 1>::new("y", [n])?;
    let a = 2.0;
    // Writers are handed to the launch and come back bound to it: `y.set` takes only this
    // launch's tokens, so no two iterations can store to one element.
    let (done, t) = timed(5, || {
        parallel_for("axpy", (n, (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, a * x.get(i) + y.get(i))
        })
    });
    done?;
    let (ys, xs) = (y.host_read()?, x.host_read()?);
    println!(
        "axpy over {n} doubles ({} GB/s): y[123] = {} after 5 runs (5 * {a} * x[123] = {})",
        gbps(3 * n * size_of::<f64>(), t),
        ys.get(123),
        5.0 * a * xs.get(123)
    );
    drop((ys, xs));

    let side = 2048;
    let u = View::<f64, 2>::from_slice(
        "u",
        [side, side],
        &(0..side * side)
            .map(|k| ((k * 7) % 23) as f64)
            .collect::<Vec<_>>(),
    )?;
    let lap = View::<f64, 2>::new("laplacian", [side, side])?;
    let interior = MDRangePolicy::new(DefaultExecutionSpace::default(), [1, 1], [side - 1, side - 1]);
    let (done, t) = timed(3, || {
        parallel_for(
            "stencil",
            (interior.clone(), (lap.write(), u.read())),
            |(ij, (out, u))| {
                let sum = u.neighbor(ij, [-1, 0])
                    + u.neighbor(ij, [1, 0])
                    + u.neighbor(ij, [0, -1])
                    + u.neighbor(ij, [0, 1]);
                out.set(ij, sum - 4.0 * u.get(ij));
            },
        )
    });
    done?;
    let check = {
        let (l, u) = (lap.host_read()?, u.host_read()?);
        let (i, j) = (700, 900);
        let expect = u.get([i - 1, j]) + u.get([i + 1, j]) + u.get([i, j - 1]) + u.get([i, j + 1])
            - 4.0 * u.get([i, j]);
        (l.get([i, j]), expect)
    };
    println!(
        "5-point Laplacian of a {side}x{side} grid in {} ({} GB/s): lap[700][900] = {} (by hand {})",
        ms(t),
        gbps(2 * side * side * size_of::<f64>(), t),
        check.0,
        check.1
    );

    // Atomic handles may be captured: scatter-add into 10 bins.
    let bins = View::<u64, 1>::new("bins", [10])?;
    {
        let hist = bins.atomic();
        let (done, t) = timed(1, || {
            parallel_for("histogram", n, |i| {
                hist.fetch_add((*i * 7919) % 10, 1);
            })
        });
        done?;
        println!("histogram of {n} samples in {}", ms(t));
    }
    println!("bins: {:?}", bins.to_vec()?);

    // A scatter view (Kokkos' ScatterView): the same scatter-add into each thread's private
    // copy of the bins, folded into the view once by `contribute` — no atomics.
    let scattered = View::<u64, 1>::new("scattered bins", [10])?;
    let mut scatter = ScatterView::new(&scattered);
    let (done, t) = timed(1, || {
        parallel_for(
            "histogram (scatter view)",
            (
                RangePolicy::new(DefaultExecutionSpace::default(), 0..n),
                (scatter.access(),),
            ),
            |(i, (hist,))| hist.add((*i * 7919) % 10, 1),
        )
    });
    done?;
    scatter.contribute()?;
    println!(
        "scatter-view histogram of {n} samples in {} ({} private copies): the same bins: {}",
        ms(t),
        scatter.copies(),
        scattered.to_vec()? == bins.to_vec()?
    );

    // A lookup table read at computed indices in a wider launch, and a scalar view stored by
    // the one iteration of a single-iteration launch.
    let stencil = View::<f64, 1>::from_slice("weights", [3], &[0.25, 0.5, 0.25])?;
    let max_weight = View::<f64, 0>::new("max weight", [])?;
    parallel_for(
        "smooth",
        (n, (y.write(), x.read(), stencil.lookup())),
        |(i, (y, x, w))| {
            let k = *i % 3;
            y.set(i, w.get(k) * x.get(i));
        },
    )?;
    parallel_for(
        "scalar",
        (1, (max_weight.write(), stencil.lookup())),
        |(i, (m, w))| {
            m.set(i, (0..3).map(|k| w.get(k)).fold(f64::MIN, f64::max));
        },
    )?;
    println!(
        "lookup table of 3 weights in a launch of {n}: y[4] = {}; rank-0 view set by one iteration: {}",
        y.host_read()?.get(4),
        max_weight.host_read()?.get([])
    );

    // Handles borrow like RefCell: a reader beside a writer of the same data is an error.
    let w = y.write();
    if let Err(e) = parallel_reduce(
        "conflict",
        (n, (y.read(),)),
        |(i, (y,)), acc| *acc += y.get(i),
        Sum::<f64>::new(),
    ) {
        println!("reader beside a live writer: {e}");
    }
    drop(w);
    let mut records = Vec::new();
    let _ = HostSpace.print_records(&mut records, false);
    print!("{}", String::from_utf8_lossy(&records));
    Ok(())
}

fn backends_side_by_side() -> Result<()> {
    use rayon::prelude::*;
    let _region = section("Backends side by side: the same kernels on serial and rayon, beside raw loops");
    let serial = hoplite::Serial::default();
    let pool = hoplite::RayonSpace::default();
    println!("rayon instance: {} threads", pool.concurrency());
    let n = 1 << 24;
    let x_data: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 1e-3).collect();
    let x = View::<f64, 1>::from_slice("x", [n], &x_data)?;
    let y = View::<f64, 1>::new("y", [n])?;

    let dot = |label: &str, t: Duration, v: f64| {
        println!(
            "  dot  {label:<12} {:>10} {:>6} GB/s  = {v:.3}",
            ms(t),
            gbps(n * size_of::<f64>(), t)
        )
    };
    // One generic function for every backend: `FullSpace` bundles every launch the concepts
    // define, so it needs no bound per policy kind.
    fn norm2<S: FullSpace>(space: &S, x: &View<f64, 1>) -> Result<f64> {
        parallel_reduce(
            "dot",
            (RangePolicy::new(space.clone(), 0..x.len()), (x.read(),)),
            |(i, (x,)), acc| *acc += x.get(i) * x.get(i),
            Sum::<f64>::new(),
        )
    }
    let (v, t) = timed(5, || norm2(&serial, &x));
    dot("serial", t, v?);
    let (v, t) = timed(5, || norm2(&pool, &x));
    dot("rayon", t, v?);
    let (v, t) = timed(5, || x_data.iter().map(|v| v * v).sum::<f64>());
    dot("raw loop", t, v);
    let (v, t) = timed(5, || {
        pool.install(|| x_data.par_iter().map(|v| v * v).sum::<f64>())
    });
    dot("raw rayon", t, v);

    let triad = |label: &str, t: Duration| {
        println!(
            "  axpy {label:<12} {:>10} {:>6} GB/s",
            ms(t),
            gbps(3 * n * size_of::<f64>(), t)
        )
    };
    let (r, t) = timed(5, || {
        parallel_for(
            "axpy",
            (RangePolicy::new(serial.clone(), 0..n), (y.write(), x.read())),
            |(i, (y, x))| y.set(i, 0.5 * x.get(i) + y.get(i)),
        )
    });
    r?;
    triad("serial", t);
    let (r, t) = timed(5, || {
        parallel_for(
            "axpy",
            (RangePolicy::new(pool.clone(), 0..n), (y.write(), x.read())),
            |(i, (y, x))| y.set(i, 0.5 * x.get(i) + y.get(i)),
        )
    });
    r?;
    triad("rayon", t);
    let mut ys = vec![0.0f64; n];
    let (_, t) = timed(5, || ys.iter_mut().zip(&x_data).for_each(|(y, x)| *y += 0.5 * x));
    triad("raw loop", t);
    let (_, t) = timed(5, || {
        pool.install(|| {
            ys.par_chunks_mut(1 << 14)
                .zip(x_data.par_chunks(1 << 14))
                .for_each(|(y, x)| y.iter_mut().zip(x).for_each(|(y, x)| *y += 0.5 * x))
        })
    });
    triad("raw rayon", t);

    let empty = |label: &str, t: Duration| {
        println!(
            "  empty parallel_for {label:<8} {:>8.2} µs",
            t.as_secs_f64() * 1e6
        )
    };
    let (r, t) = timed(2000, || {
        parallel_for("empty", RangePolicy::new(serial.clone(), 0..2), |_| {})
    });
    r?;
    empty("serial", t);
    let (r, t) = timed(2000, || {
        parallel_for(
            "empty",
            RangePolicy::new(pool.clone(), 0..pool.concurrency()),
            |_| {},
        )
    });
    r?;
    empty("rayon", t);
    let (_, t) = timed(2000, || {
        pool.install(|| {
            (0..pool.concurrency()).into_par_iter().for_each(|i| {
                black_box(i);
            })
        })
    });
    empty("raw rayon", t);
    Ok(())
}

fn gbps(bytes: usize, t: Duration) -> String {
    format!("{:.1}", bytes as f64 / t.as_secs_f64() / 1e9)
}

fn reductions() -> Result<()> {
    let _region = section("parallel_reduce: dot product and location reducers");
    let n = 1 << 22;
    let x: Vec<f64> = (0..n).map(|i| ((i % 1000) as f64) * 0.5).collect();
    let y: Vec<f64> = (0..n).map(|i| ((i % 7) as f64) - 3.0).collect();

    let (dot, t_hoplite) = timed(5, || {
        parallel_reduce("dot", n, |i, acc| *acc += x[*i] * y[*i], Sum::<f64>::new())
    });
    let dot = dot?;
    let (raw, t_raw) = timed(5, || x.iter().zip(&y).map(|(a, b)| a * b).sum::<f64>());
    println!(
        "dot of {n} doubles = {dot} in {} (raw loop: {raw} in {}, ratio {:.2})",
        ms(t_hoplite),
        ms(t_raw),
        t_hoplite.as_secs_f64() / t_raw.as_secs_f64()
    );

    // Several reducers in one launch, each result into its own target (a rank-0 view, a
    // host variable), as Kokkos' reductions into views.
    let norm1: View<f64, 0> = View::new("norm1", [])?;
    let mut largest = 0.0;
    parallel_reduce_into(
        "norms",
        n,
        |i, (sum, max): &mut (f64, f64)| {
            *sum += y[*i].abs();
            *max = max.max(y[*i].abs());
        },
        (Sum::<f64>::new(), Max::<f64>::new()),
        (&norm1, &mut largest),
    )?;
    println!(
        "one launch, two reducers into a view and a variable: |y|_1 = {}, |y|_inf = {largest}",
        norm1.host_read()?.get([])
    );

    let v: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 10007 - 5000).collect();
    let (mm, t) = timed(3, || {
        parallel_reduce(
            "minmaxloc",
            n,
            |i, acc: &mut MinMaxLocScalar<i64>| acc.update(v[*i], *i),
            MinMaxLoc::<i64>::new(),
        )
    });
    let mm = mm?;
    println!(
        "MinMaxLoc over {n} values: min {} at {:?}, max {} at {:?} (ties go to the lowest index) in {}",
        mm.min_val,
        mm.min_loc,
        mm.max_val,
        mm.max_loc,
        ms(t)
    );
    let first_negative = parallel_reduce(
        "firstloc",
        n,
        |i, acc| {
            if v[*i] < -4990 {
                FirstLoc::update(acc, *i)
            }
        },
        FirstLoc::new(),
    )?;
    let all_small = parallel_reduce(
        "land",
        n,
        |i, acc| *acc = *acc && v[*i].abs() <= 5006,
        LAnd::new(),
    )?;
    println!("first index below -4990: {first_negative:?}; every |v| <= 5006: {all_small}");

    // A tuple of reducers gives several results in one pass over the data.
    let (stats, t) = timed(3, || {
        parallel_reduce(
            "mean, count of negatives, argmax",
            n,
            |i, acc: &mut (i64, usize, ValLoc<i64>)| {
                acc.0 += v[*i];
                acc.1 += usize::from(v[*i] < 0);
                acc.2.update_max(v[*i], *i);
            },
            (Sum::<i64>::new(), Sum::<usize>::new(), MaxLoc::<i64>::new()),
        )
    });
    let (total, negatives, max) = stats?;
    println!(
        "one pass, three reducers: mean {:.3}, {negatives} negatives, max {} at {:?} in {}",
        total as f64 / n as f64,
        max.val,
        max.loc,
        ms(t)
    );

    // Complex numbers and fixed-size arrays reduce like numbers; complex atomics use Kokkos'
    // lock table.
    let z = |i: usize| Complex::from_polar(1.0, i as f64 * std::f64::consts::PI / 8.0);
    let ring: Complex<f64> = parallel_reduce("ring", 16, |i, acc| *acc += z(*i), Sum::<Complex<f64>>::new())?;
    let moments = parallel_reduce(
        "moments",
        n,
        |i, acc: &mut [f64; 3]| {
            let x = v[*i] as f64;
            *acc = [acc[0] + 1.0, acc[1] + x, acc[2] + x * x];
        },
        Sum::<[f64; 3]>::new(),
    )?;
    let bins = View::<Complex<f64>, 1>::new("complex bins", [2])?;
    {
        let atomics = bins.atomic();
        parallel_for("complex scatter", 16, |i| {
            atomics.fetch_add(*i % 2, Complex::new(*i as f64, 1.0));
        })?;
    }
    println!(
        "sum of the 16th roots of unity {:.1e}; [count, sum, sum of squares] = {moments:?}; complex atomics by parity: {:?}",
        ring.norm(),
        bins.to_vec()?
    );
    Ok(())
}

fn scans() -> Result<()> {
    let _region = section("parallel_scan: exclusive and inclusive prefix sums with total");
    let n = 1_000_000;
    let counts: Vec<i64> = (0..n).map(|i| (i % 5) as i64).collect();
    let offsets: Vec<AtomicI64> = (0..n).map(|_| AtomicI64::new(0)).collect();
    let (total, t) = timed(3, || {
        parallel_scan("offsets", n, |i, partial: &mut i64, is_final| {
            if is_final {
                offsets[*i].store(*partial, Ordering::Relaxed); // exclusive: store, then add
            }
            *partial += counts[*i];
        })
    });
    let total: i64 = total?;
    println!(
        "exclusive scan of {n} counts: offsets[0..6] = {:?}, total {total}, in {}",
        offsets[..6]
            .iter()
            .map(|o| o.load(Ordering::Relaxed))
            .collect::<Vec<_>>(),
        ms(t)
    );
    let running: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
    let total: f64 = parallel_scan("running-mean", 8, |i, partial: &mut f64, is_final| {
        *partial += 0.5 * (*i as f64 + 1.0); // inclusive: add, then store
        if is_final {
            running[*i].store(partial.to_bits(), Ordering::Relaxed);
        }
    })?;
    println!(
        "inclusive scan of 0.5, 1.0, ..., 4.0: {:?} (total {total})",
        running
            .iter()
            .map(|b| f64::from_bits(b.load(Ordering::Relaxed)))
            .collect::<Vec<_>>()
    );
    Ok(())
}

/// One function, two compilations: the native kernel and its CUDA C.
#[hoplite::kernel]
fn scaled_sum(
    i: Idx<'_>,
    out: hoplite::BoundWriter<'_, f64, 1>,
    x: hoplite::BoundReader<'_, f64, 1>,
    y: hoplite::BoundReader<'_, f64, 1>,
    a: f64,
) {
    out.set(i, a * x.get(i) + y.get(i).sqrt());
}

fn kernels() -> Result<()> {
    let _region = section("#[kernel]: one function, a native kernel and CUDA C");
    let n = 1 << 20;
    let x = View::<f64, 1>::from_slice("x", [n], &(0..n).map(|k| k as f64).collect::<Vec<_>>())?;
    let y = View::<f64, 1>::from_slice("y", [n], &(0..n).map(|k| (k * k) as f64).collect::<Vec<_>>())?;
    let out = View::<f64, 1>::new("out", [n])?;
    let (done, t) = timed(3, || {
        parallel_for(
            "scaled sum",
            (n, (out.write(), x.read(), y.read())),
            scaled_sum::with(0.5),
        )
    });
    done?;
    println!(
        "native: out[10] = {} (0.5 * 10 + sqrt(100)) over {n} elements in {}",
        out.host_read()?.get(10),
        ms(t)
    );
    let source = scaled_sum::cuda_source();
    // The prelude of helpers comes first; show the translated body and the entry.
    let body = source
        .find("HL_DEV void scaled_sum_body")
        .map_or(source, |at| &source[at..]);
    println!(
        "generated CUDA C ({} bytes in all), body and entry:\n{body}",
        source.len()
    );
    match nvrtc_ptx_size(source) {
        Ok(bytes) => println!("NVRTC compiled it for compute_90: {bytes} bytes of PTX"),
        Err(why) => println!("PTX size not shown: {why}"),
    }
    Ok(())
}

/// Compiles `source` with NVRTC from `$HOPLITE_NVRTC_LIB` or the wheel `cargo xtask test`
/// installs, and returns the PTX size.
fn nvrtc_ptx_size(source: &str) -> std::result::Result<usize, String> {
    use hoplite_kernel_check::nvrtc::{NVRTC_ENV, Nvrtc};
    let path = std::env::var_os(NVRTC_ENV)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/cuda-wheels/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
        });
    if !path.is_file() {
        return Err(format!(
            "no NVRTC at {} (`cargo xtask test` installs it)",
            path.display()
        ));
    }
    let nvrtc = Nvrtc::open(&path).map_err(|e| e.to_string())?;
    nvrtc
        .compile("scaled_sum", source)
        .map(|ptx| ptx.len())
        .map_err(|e| e.to_string())
}

/// A sum of squares: a device reduction when the tour runs with `--features cuda`.
#[cfg(feature = "cuda")]
#[hoplite::kernel]
fn sum_of_squares(i: Idx<'_>, x: hoplite::BoundReader<'_, f64, 1>, acc: &mut f64) {
    let v = x.get(i);
    *acc += v * v;
}

/// One function for every backend, a GPU included: the data goes into the space's own memory
/// (`from_slice` copies to the device where the space is one) and a `#[kernel]` reduces it.
#[cfg(feature = "cuda")]
fn sum_of_squares_on<S: LaunchSpace>(space: &S, data: &[f64]) -> Result<f64> {
    let x = View::<f64, 1, LayoutRight, S::MemorySpace>::from_slice("x", [data.len()], data)?;
    parallel_reduce(
        "sum of squares",
        (RangePolicy::new(space.clone(), 0..data.len()), (x.read(),)),
        sum_of_squares::with(),
        Sum::new(),
    )
}

/// The CUDA backend: on a GPU, a reduction on the device; without one, what still runs (the
/// reduction kernel compiled to PTX, the checks before the device) and the typed error.
#[cfg(feature = "cuda")]
fn cuda() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use hoplite::cuda::graph::CudaGraph;
    use hoplite::cuda::nvrtc::{NVRTC_ENV, Nvrtc};
    use hoplite::{Cuda, CudaSpace, LayoutRight};
    let _region = section("CUDA: a reduction on the device, or what runs without one");
    // Without a GPU, `HOPLITE_CUDA_DRIVER=emulated` runs all of this section on the emulated
    // CUDA driver: streams as threads, kernels compiled by the host C++ compiler.
    if hoplite::cuda::driver_is_emulated() {
        println!(
            "on the emulated CUDA driver ({}=emulated): kernels run on the CPU, as a GPU would run them",
            hoplite::cuda::DRIVER_ENV
        );
    }
    let cuda = Cuda::default();
    let wheel = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/cuda-wheels/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    let nvrtc = std::env::var_os(NVRTC_ENV).map_or(wheel, std::path::PathBuf::from);
    match Nvrtc::open(&nvrtc)
        .and_then(|n| n.compile("sum_of_squares", "compute_90", sum_of_squares::cuda_source()))
    {
        Ok(ptx) => println!(
            "the reduce entry `{}` compiles to {} bytes of PTX for compute_90",
            <sum_of_squares as hoplite::device_kernel::DeviceKernel>::ENTRY,
            ptx.len()
        ),
        Err(e) => println!("PTX size not shown: {e}"),
    }
    // Launches wait for their kernel unless `HOPLITE_CUDA_LAUNCHES=async`: then they return
    // once it is queued, the views kept alive until the next fence and conflicting launches
    // of other instances ordered after it.
    let queued = std::env::var("HOPLITE_CUDA_LAUNCHES").is_ok_and(|v| v == "async");
    println!(
        "Cuda launches {}",
        if queued {
            "return once their kernel is queued (HOPLITE_CUDA_LAUNCHES=async)"
        } else {
            "wait for their kernel (HOPLITE_CUDA_LAUNCHES=async makes them return once it is queued)"
        }
    );
    // The same launch as on every host backend; a GPU runs `#[kernel]`s, never closures.
    let on_gpu = |n: usize| RangePolicy::new(cuda.clone(), 0..n);
    if let Err(e) = parallel_reduce(
        "closure",
        on_gpu(4),
        |i, acc: &mut f64| *acc += *i as f64,
        Sum::new(),
    ) {
        println!("a closure is refused: {e}");
    }
    // A GrCUDA-style raw kernel: CUDA C plus a signature, parsed and checked without a device.
    let axpy_source = r#"extern "C" __global__ void axpy(double* y, const double* x, double a, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) y[i] += a * x[i];
    }"#;
    let axpy = hoplite::RawKernel::new(
        axpy_source,
        "axpy(y: inout pointer double, x: in pointer double, a: double, n: sint64)",
    )?;
    println!(
        "raw kernel `{}` takes {} parameters",
        axpy.name(),
        axpy.params().len()
    );
    if let Err(e) = hoplite::RawKernel::new(axpy_source, "axpy(y: inout pointer, n: sint64)") {
        println!("a pointer without its element type is refused: {e}");
    }
    let n = 1 << 20;
    let host: Vec<f64> = (0..n).map(|k| (k % 7) as f64).collect();
    let on_host = sum_of_squares_on(&DefaultExecutionSpace::default(), &host)?;
    println!("the generic sum of squares on the host: {on_host}");
    // The generic graph builder makes a CUDA Graph of the same nodes: the reduction is a
    // kernel, a copy of its partials and a host join, and its value lands in `squares` as on
    // the host. The host node after it cuts the graph into two stages: the CUDA graph, then
    // the host function on this thread, which sees the value.
    let x = if cuda.is_available() {
        View::<f64, 1, LayoutRight, CudaSpace>::from_slice("x", [n], &host)?
    } else {
        View::default() // no device memory without a device: an empty view
    };
    let squares = hoplite::graph::ReduceResult::<f64>::new();
    let seen = squares.clone();
    let mut graph = hoplite::graph::create_graph_with(&cuda, CudaGraph::new(&cuda), |g| {
        g.parallel_reduce(
            "sum of squares",
            (on_gpu(x.extent(0)), (x.read(),)),
            sum_of_squares::with(),
            Sum::<f64>::new(),
            squares.clone(),
        )
        .then_host("report", move || {
            println!("a host node after the reduce node sees {:?}", seen.get());
        });
    })?;
    match graph.submit() {
        Ok(()) => println!("the sum of squares as a CUDA graph: {:?}", squares.get()),
        Err(e) => println!("a CUDA graph of a reduce node, built without a device: {e}"),
    }
    if !cuda.is_available() {
        let e = sum_of_squares_on(&cuda, &host).err();
        println!(
            "the same function on Cuda, no device: {}",
            e.map_or_else(|| "?".to_owned(), |e| e.to_string())
        );
        return Ok(());
    }
    println!(
        "the same function on Cuda: {} (the host's: {on_host})",
        sum_of_squares_on(&cuda, &host)?
    );
    let (sum, t) = timed(3, || {
        parallel_reduce(
            "sum of squares",
            (on_gpu(n), (x.read(),)),
            sum_of_squares::with(),
            Sum::<f64>::new(),
        )
    });
    println!("sum of squares of {n} values on the GPU = {} in {}", sum?, ms(t));
    println!(
        "the generic token histogram on the GPU (one id per resident thread): {:?}",
        token_histogram_on(&cuda, 100_000, 16)?
    );
    // Two streams ordered by hand, as CUDA programs order them: `b` waits on the device for
    // the event recorded on `a` after its launch (cuEventRecord, cuStreamWaitEvent), so its
    // reduction reads what `a` wrote.
    let (a, b) = (Cuda::new()?, Cuda::new()?);
    let scaled = View::<f64, 1, LayoutRight, CudaSpace>::new("scaled", [n])?;
    parallel_for(
        "scaled = 2x + sqrt(x)",
        (
            RangePolicy::new(a.clone(), 0..n),
            (scaled.write(), x.read(), x.read()),
        ),
        scaled_sum::with(2.0),
    )?;
    let written = a.record_event()?;
    b.wait_event(&written)?;
    let total = parallel_reduce(
        "sum of squares after the event",
        (RangePolicy::new(b.clone(), 0..n), (scaled.read(),)),
        sum_of_squares::with(),
        Sum::<f64>::new(),
    )?;
    println!("a launch on stream a, its event, then a reduction on stream b: {total}");
    // Two independent launches that each ask for half the device's resident blocks (Kokkos'
    // DesiredOccupancy): neither fills the GPU, so where launches return once queued
    // (HOPLITE_CUDA_LAUNCHES=async) the one on stream b runs beside the one on stream a
    // instead of after it; their threads walk the whole range either way.
    let other = View::<f64, 1, LayoutRight, CudaSpace>::new("other", [n])?;
    let t0 = Instant::now();
    parallel_for(
        "half the device on a",
        (
            RangePolicy::new(a.clone(), 0..n).with_desired_occupancy(50),
            (scaled.write(), x.read(), x.read()),
        ),
        scaled_sum::with(3.0),
    )?;
    parallel_for(
        "half the device on b",
        (
            RangePolicy::new(b.clone(), 0..n).with_desired_occupancy(50),
            (other.write(), x.read(), x.read()),
        ),
        scaled_sum::with(1.0),
    )?;
    a.fence()?;
    b.fence()?;
    let halves = (scaled.to_vec()?[n - 1], other.to_vec()?[n - 1]);
    println!(
        "two launches at 50% occupancy on streams a and b: last elements {halves:?} in {}",
        ms(t0.elapsed())
    );
    Ok(())
}

fn md_range() -> Result<()> {
    let _region = section("MDRangePolicy: a 2-D box in tiles");
    let (rows, cols) = (1500, 1700);
    let space = DefaultExecutionSpace::default();
    let grid: Vec<f64> = (0..rows * cols).map(|k| ((k % 13) as f64) - 6.0).collect();
    let policy = MDRangePolicy::new(space, [1, 1], [rows - 1, cols - 1]).with_tiles([64, 100]);
    println!(
        "interior of a {rows}x{cols} grid: {} tiles of 64x100 ({:?} per dimension, edge tiles cut short)",
        policy.num_tiles(),
        policy.tile_counts()
    );
    // A 5-point Laplacian, reduced to its sum of squares.
    let (energy, t) = timed(3, || {
        parallel_reduce(
            "laplacian-energy",
            policy.clone(),
            |ij, acc| {
                let [i, j] = *ij;
                let at = |i: usize, j: usize| grid[i * cols + j];
                let lap = at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4.0 * at(i, j);
                *acc += lap * lap;
            },
            Sum::<f64>::new(),
        )
    });
    println!("sum of squared Laplacian = {} in {}", energy?, ms(t));

    // A lower-triangular box: row i holds i points of work, so equal shares of rows are
    // unequal work. The dynamic schedule hands tiles out on demand; the sum does not change.
    let n = 1200;
    let triangle = |schedule: Schedule| {
        let policy = MDRangePolicy::new(DefaultExecutionSpace::default(), [0, 0], [n, n])
            .with_tiles([8, n])
            .with_schedule(schedule);
        timed(3, || {
            parallel_reduce(
                "triangle",
                policy.clone(),
                |ij, acc| {
                    let [i, j] = *ij;
                    if j <= i {
                        *acc += ((i * j) as f64).sqrt();
                    }
                },
                Sum::<f64>::new(),
            )
        })
    };
    let ((fixed, t_static), (balanced, t_dynamic)) =
        (triangle(Schedule::Static), triangle(Schedule::Dynamic));
    let (fixed, balanced) = (fixed?, balanced?);
    println!(
        "triangular {n}x{n} box: static {} ({}), dynamic {} ({}), relative difference {:.1e}",
        fixed,
        ms(t_static),
        balanced,
        ms(t_dynamic),
        ((fixed - balanced) / fixed).abs()
    );

    // Fortran-style bounds with a ghost layer: u(-1:64, -1:32) iterated by its logical bounds
    // (any integer type), the origin mapping them to the view's elements; the argmax comes back
    // as a multi-index, reduced straight into a view.
    let u = View::<f64, 2>::new("u with ghosts", [66, 34])?;
    let whole =
        MDRangePolicy::new(DefaultExecutionSpace::default(), [-1i32, -1], [65, 33]).with_origin([-1, -1]);
    parallel_for("init u", (whole, (u.write(),)), |(ij, (u,))| {
        let [i, j] = ij.get().map(|k| k as f64 - 1.0);
        u.set(ij, (i - 20.0).powi(2) + (j - 7.0).powi(2));
    })?;
    let peak = View::<ValLoc<f64, [usize; 2]>, 0>::new("closest to (20, 7)", [])?;
    let interior =
        MDRangePolicy::new(DefaultExecutionSpace::default(), [0i32, 0], [64, 32]).with_origin([-1, -1]);
    parallel_reduce_into(
        "argmin",
        (interior, (u.read(),)),
        |(ij, (u,)), acc: &mut ValLoc<f64, [usize; 2]>| acc.update_min(u.get(ij), ij.get()),
        MinLoc::<f64, [usize; 2]>::new(),
        &peak,
    )?;
    let found = peak.host_read()?.get([]);
    println!(
        "u(-1:64, -1:32) by its logical bounds: the minimum {} sits at element {:?}, i.e. u(20, 7)",
        found.val, found.loc
    );
    Ok(())
}

fn teams() -> Result<()> {
    let _region = section("TeamPolicy: one team per matrix row, nested ranges and scratch");
    let (rows, cols) = (2000, 1000);
    let a: Vec<f64> = (0..rows * cols).map(|k| ((k % 17) as f64) * 0.25).collect();
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 3) as f64).collect();
    let space = DefaultExecutionSpace::default();
    let bytes = cols * size_of::<f64>();
    let policy =
        TeamPolicy::new(space, rows, TeamSize::Auto).with_scratch_size(0, PerTeam(bytes), PerThread(0));
    println!(
        "league of {rows} teams of team size {} (team_size_max {}), {bytes} bytes of team scratch each",
        policy.team_size(),
        policy.team_size_max()
    );
    let (norm2, t) = timed(3, || {
        parallel_reduce(
            "row-norms",
            policy.clone(),
            |member, acc: &mut f64| {
                let row = member.league_rank();
                // Stage x in team scratch, then reduce the row against it.
                let Ok(xs) = member.team_scratch(0).alloc::<f64>(cols) else {
                    panic!("the policy requested {bytes} bytes of scratch");
                };
                TeamThreadRange::new(member, cols).parallel_for(|j| xs.set(*j, x[*j]));
                member.team_barrier();
                let dot = TeamThreadRange::new(member, cols)
                    .parallel_reduce(|j, s: &mut f64| *s += a[row * cols + *j] * xs.get(*j), Sum::new());
                if member.team_rank() == 0 {
                    *acc += dot * dot;
                }
            },
            Sum::<f64>::new(),
        )
    });
    println!("|A x|^2 = {} in {}", norm2?, ms(t));

    // Team tokens: each team owns its row of a rank-2 writer (each column stored by the one
    // thread that owns it), and one thread of the team stores the row's result at the league
    // rank. Here: y = A x, and each row of A scaled by its y.
    let av: View<f64, 2> = View::from_slice("A", [rows, cols], &a)?;
    let xv: View<f64, 1> = View::from_slice("x", [cols], &x)?;
    let scaled: View<f64, 2> = View::new("A scaled", [rows, cols])?;
    let y: View<f64, 1> = View::new("y", [rows])?;
    let (done, t) = timed(3, || {
        let args = (scaled.write(), y.write(), av.read(), xv.read());
        parallel_for("gemv-scale", (policy.clone(), args), |(m, (scaled, y, a, x))| {
            let league = m.league_token();
            let a_row = a.row(*league);
            let dot = TeamThreadRange::new(m, cols)
                .parallel_reduce(|j, s: &mut f64| *s += a_row.get(j) * x.get(*j), Sum::new());
            let row = scaled.team_row(league);
            TeamThreadRange::new(m, cols).parallel_for(|j| row.set(j, a_row.get(j) / dot));
            if let Some(t) = league.single() {
                y.set(t, dot);
            }
        })
    });
    done?;
    let ys = y.to_vec()?;
    let norm2_views: f64 = ys.iter().map(|v| v * v).sum();
    let row0: View<f64, 1> = scaled.subview([Slice::Index(0), Slice::All])?;
    let scaled_row0: f64 = row0.to_vec()?.iter().sum();
    println!(
        "y = A x through team rows and league tokens in {}: |y|^2 = {norm2_views}, row 0 of A/y sums to {scaled_row0:.6}",
        ms(t)
    );

    // Batched outer products C[b] = u[b] v[b]^T through team planes: league over the batch,
    // team threads over rows, vector lanes over columns.
    let (batch, n) = (64, 96);
    let u: Vec<f64> = (0..batch * n).map(|k| (k % 7) as f64 - 3.0).collect();
    let v: Vec<f64> = (0..batch * n).map(|k| (k % 5) as f64 * 0.5).collect();
    let c = View::<f64, 3>::new("C", [batch, n, n])?;
    let (done, t) = timed(3, || {
        let policy = TeamPolicy::new(DefaultExecutionSpace::default(), batch, TeamSize::Auto);
        parallel_for("outer products", (policy, (c.write(),)), |(m, (c,))| {
            let plane = c.team_plane(m.league_token());
            let b = plane.plane();
            TeamThreadRange::new(m, plane.rows()).parallel_for(|i| {
                let row = plane.row(i);
                let ui = u[b * n + *i];
                ThreadVectorRange::new(m, row.len()).parallel_for(|k| row.set(*k, ui * v[b * n + *k]));
            });
        })
    });
    done?;
    let total: f64 = c.to_vec()?.iter().sum();
    let want: f64 = (0..batch)
        .map(|b| u[b * n..(b + 1) * n].iter().sum::<f64>() * v[b * n..(b + 1) * n].iter().sum::<f64>())
        .sum();
    println!(
        "{batch} outer products of length {n} through team planes in {}: sum {total} (expected {want})",
        ms(t)
    );

    // Team conveniences: a value computed once per team and shared (Kokkos `single(PerTeam)`),
    // and one unique-token id per team for a team-private slot of a shared buffer.
    let space = DefaultExecutionSpace::default();
    let tokens = space.unique_token_with_size(2)?;
    let slots = View::<f64, 1>::new("team slots", [2])?;
    let policy = TeamPolicy::new(space, 16, TeamSize::Auto).with_vector_length(VectorLength::Auto);
    let atomics = slots.atomic();
    let shared = parallel_reduce(
        "team single",
        policy,
        |m, acc: &mut usize| {
            let seed = m.team_single(|| 1000 + m.league_rank());
            let id = tokens.team_guard(m);
            if m.team_rank() == 0 {
                atomics.fetch_add(*id, 1.0);
                *acc += seed;
            }
        },
        Sum::<usize>::new(),
    )?;
    drop(atomics);
    println!(
        "team_single gave each of 16 teams its seed (sum {shared}); team-level unique ids split them over 2 slots: {:?}",
        slots.to_vec()?
    );
    Ok(())
}

fn unique_tokens() -> Result<()> {
    let _region = section("UniqueToken: private histogram rows without atomics contention");
    let space = DefaultExecutionSpace::default();
    let tokens = space.unique_token();
    let bins = 16;
    let rows: Vec<AtomicU64> = (0..tokens.size() * bins).map(|_| AtomicU64::new(0)).collect();
    let n = 100_000;
    parallel_for("histogram", n, |i| {
        let id = tokens.guard();
        rows[*id * bins + (*i * 31) % bins].fetch_add(1, Ordering::Relaxed);
    })?;
    let counts: Vec<u64> = (0..bins)
        .map(|b| {
            (0..tokens.size())
                .map(|r| rows[r * bins + b].load(Ordering::Relaxed))
                .sum()
        })
        .collect();
    println!(
        "{} token id(s) for concurrency {}; {n} samples in {bins} bins: {:?}",
        tokens.size(),
        space.concurrency(),
        counts
    );
    // The same idiom as a `#[kernel]`, generic over every backend: the space gives its kind of
    // token (a host pool here, lock words in device memory on a GPU) and the rows live in its
    // memory.
    let counts = token_histogram_on(&space, n, bins)?;
    println!("as a #[kernel] over any LaunchSpace: {counts:?}");
    Ok(())
}

/// Counts `(i * 31) % bins` over `0..n` in a private row of counters per token id.
#[hoplite::kernel]
fn private_row_histogram(
    i: Idx<'_>,
    rows: hoplite::BoundAtomic<'_, u64, 1>,
    tokens: &impl UniqueToken,
    bins: usize,
) {
    let id = tokens.guard();
    rows.fetch_add(*id * bins + (*i * 31) % bins, 1);
}

/// [`private_row_histogram`] on `space`, the rows summed per bin on the host.
fn token_histogram_on<S: LaunchSpace>(space: &S, n: usize, bins: usize) -> Result<Vec<u64>> {
    let tokens = space.kernel_token()?;
    let rows = View::<u64, 1, LayoutRight, S::MemorySpace>::new("rows", [tokens.id_count() * bins])?;
    parallel_for(
        "token histogram",
        (RangePolicy::new(space.clone(), 0..n), (rows.atomic(),)),
        private_row_histogram::with(&tokens, bins),
    )?;
    let rows = rows.to_vec()?;
    Ok((0..bins)
        .map(|b| rows.iter().skip(b).step_by(bins).sum())
        .collect())
}

fn graphs() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use hoplite::graph::{ReduceResult, create_graph};
    let _region = section("Explicit graphs: build once, submit many times");
    let space = DefaultExecutionSpace::default();
    let n = 100_000;
    let x = View::<f64, 1>::new("x", [n])?;
    let y = View::<f64, 1>::new("y", [n])?;
    let dot = ReduceResult::<f64>::new();
    let step = View::<f64, 0>::new("step", [])?;
    let range = RangePolicy::new(space.clone(), 0..n);
    let mut graph = create_graph(&space, |g| {
        // A host node declares the views it touches, as a kernel does: the race check sees it.
        let next_step = g.host_with("next step", (step.write(),), |(mut s,)| {
            s.set([], s.get([]) + 1.0)
        });
        let fill_x = next_step.then_parallel_for(
            "fill x",
            (range.clone(), (x.write(), step.read())),
            |(i, (x, s))| x.set(i, 0.5 * s.get([])),
        );
        let fill_y = g.parallel_for("fill y", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 4.0));
        g.when_all([fill_x.erase(), fill_y.erase()]).then_parallel_reduce(
            "dot",
            (range.clone(), (x.read(), y.read())),
            |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
            Sum::<f64>::new(),
            dot.clone(),
        );
    })?;
    let t = Instant::now();
    for _ in 0..100 {
        graph.submit()?;
    }
    space.fence()?;
    let t_graph = t.elapsed();
    // The same work as eager launches, for comparison.
    step.host_write()?.set([], 0.0);
    let t = Instant::now();
    let mut eager_dot = 0.0;
    for _ in 0..100 {
        let mut s = step.host_write()?;
        s.set([], s.get([]) + 1.0);
        drop(s);
        parallel_for(
            "fill x",
            (range.clone(), (x.write(), step.read())),
            |(i, (x, s))| x.set(i, 0.5 * s.get([])),
        )?;
        parallel_for("fill y", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 4.0))?;
        eager_dot = parallel_reduce(
            "dot",
            (range.clone(), (x.read(), y.read())),
            |(i, (x, y)), acc| *acc += x.get(i) * y.get(i),
            Sum::<f64>::new(),
        )?;
    }
    let t_eager = t.elapsed();
    println!(
        "5-node graph (a host step, two fills, then a dot) submitted 100 times in {}, the same launches eagerly in {}: dot = {:?} (eager {eager_dot}, 2 * step * n = {})",
        ms(t_graph),
        ms(t_eager),
        dot.get(),
        2.0 * 100.0 * n as f64
    );
    println!("{}", graph.to_dot().trim_end());

    // Two nodes that write one view with no order between them are a data race: rejected.
    let race = create_graph(&space, |g| {
        g.parallel_for("a", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 1.0));
        g.parallel_for("b", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 2.0));
    })
    .and_then(|mut graph| graph.instantiate());
    if let Err(e) = race {
        println!("unordered writers: {e}");
    }
    // So is a host node that rewrites a view a kernel reads, with no order between them.
    let race = create_graph(&space, |g| {
        g.parallel_for("scale", (range.clone(), (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, 2.0 * x.get(i))
        });
        g.host_with("reload x", (x.write(),), |(mut x,)| x.fill(1.0));
    })
    .and_then(|mut graph| graph.instantiate());
    if let Err(e) = race {
        println!("unordered host writer: {e}");
    }

    // A node's policy may name another instance of the graph's space, as in Kokkos: the two
    // branches of this diamond run on the pool's two partitions, at the same time.
    let halves = space.partition_space(2)?;
    let (left, right) = (
        View::<f64, 1>::new("left", [n])?,
        View::<f64, 1>::new("right", [n])?,
    );
    let mut diamond = create_graph(&space, |g| {
        let start = g.host("start", || {});
        let l = start.then_parallel_for(
            "left half",
            (
                RangePolicy::new(halves[0].clone(), 0..n),
                (left.write(), x.read()),
            ),
            |(i, (l, x))| l.set(i, x.get(i) + 1.0),
        );
        let r = start.then_parallel_for(
            "right half",
            (
                RangePolicy::new(halves[1].clone(), 0..n),
                (right.write(), x.read()),
            ),
            |(i, (r, x))| r.set(i, x.get(i) - 1.0),
        );
        g.when_all([l.erase(), r.erase()]).then_host("join", || {});
    })?;
    diamond.submit()?;
    let own = diamond
        .nodes()
        .as_slice()
        .iter()
        .filter(|n| n.own_instance().is_some())
        .count();
    println!(
        "a diamond with {own} nodes on partitions of their own: left[0] + right[0] = {} (2 x[0] = {})",
        left.to_vec()?[0] + right.to_vec()?[0],
        2.0 * x.to_vec()?[0]
    );
    Ok(())
}

/// A GrCUDA-style image pipeline (its benchmark 8, in `benches/common/image.rs`): three blurs
/// of one image feed a sobel branch, a saturating contrast stretch and an unsharp mask, which
/// two combines join. The launches are written one after another, as if eager; the context
/// infers the four-branch DAG from their handles and overlaps the branches on streams.
fn implicit_dag() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use hoplite::dag::device::HostDevice;
    use hoplite::dag::{Context, ContextOptions, Execution};
    use image::{Eager, Images, pipeline};
    let _region =
        section("Implicit DAG: launches as if eager, dependencies from the handles, branches overlapped");
    let n = 2048;
    let images = Images::new(n).map_err(|e| e.to_string())?;
    let space = DefaultExecutionSpace::default();
    let interior = MDRangePolicy::new(space.clone(), [3, 3], [n - 3, n - 3]);
    let run =
        |to: &dyn Fn() -> std::result::Result<f64, image::PipelineError>| to().map_err(|e| e.to_string());

    // Async on partitions: the branches run side by side, each on its share of the pool's
    // threads. Async on the pool: one stream launches on the whole pool, in launch order (a
    // second stream there would only take turns on its launch lock; the host thread is free
    // meanwhile). Sync: every launch waits. Eager: the same launches with `parallel_for`.
    let parts = space.concurrency().clamp(1, 4);
    let async_ctx = Context::new(
        vec![HostDevice::partitioned("cpu", &space, parts)?],
        ContextOptions::default(),
    )?;
    let pool_ctx = Context::new(
        vec![HostDevice::new("cpu", vec![space.clone()])?],
        ContextOptions::default(),
    )?;
    let sync_ctx = Context::new(
        vec![HostDevice::new("cpu", vec![space.clone()])?],
        ContextOptions::default().execution(Execution::Sync),
    )?;
    let reps = 5;
    let mut times = [Duration::ZERO; 4];
    let mut sums = [0.0; 4];
    // Interleaved, so that a slow moment of the machine falls on every variant alike.
    for round in 0..=reps {
        let variants: [&dyn Fn() -> std::result::Result<f64, image::PipelineError>; 4] = [
            &|| pipeline(&async_ctx, &interior, &images),
            &|| pipeline(&pool_ctx, &interior, &images),
            &|| pipeline(&sync_ctx, &interior, &images),
            &|| pipeline(&Eager, &interior, &images),
        ];
        // The order rotates too: threads still spinning after one variant slow the next.
        for k in (0..4).map(|j| (j + round) % 4) {
            let t = Instant::now();
            sums[k] = run(variants[k])?;
            if round > 0 {
                times[k] += t.elapsed();
            }
        }
    }
    let per = |k: usize| ms(times[k] / reps as u32);
    println!(
        "{n}x{n} image, 11 launches, per pipeline: async on {parts} partitions {}, async on one stream on the pool {}, sync {}, eager {}; sums agree: {}",
        per(0),
        per(1),
        per(2),
        per(3),
        sums.iter().all(|s| *s == sums[0])
    );
    println!(
        "  async on the pool / eager = {:.2}; on partitions each kernel gets part of the threads, so the longest branch (a 7x7 blur, a sobel, three combines) sets the time",
        times[1].as_secs_f64() / times[3].as_secs_f64()
    );

    let fresh = Context::new(
        vec![HostDevice::partitioned("cpu", &space, parts)?],
        ContextOptions::default(),
    )?;
    run(&|| pipeline(&fresh, &interior, &images))?;
    println!("the inferred DAG:\n{}", fresh.to_dot().trim_end());
    // Inspection as GrCUDA users debug: the vertices with parents and children, the frontier,
    // the streams, and where a view is up to date.
    let snapshot = fresh.snapshot();
    if let Some(join) = snapshot.vertices.iter().max_by_key(|v| v.parents.len()) {
        let parents: Vec<&str> = join
            .parents
            .iter()
            .filter_map(|(p, _)| snapshot.vertex(*p).map(|v| v.label.as_str()))
            .collect();
        println!(
            "snapshot: {} vertices on {} streams, frontier {:?}; `{}` waits for {parents:?}; the output is up to date at {:?}",
            snapshot.vertices.len(),
            snapshot.streams.len(),
            snapshot.frontier,
            join.label,
            fresh.locations(&images.out)
        );
    }
    let trace = std::env::temp_dir().join("hoplite-dag-trace.json");
    fresh.write_trace(&trace)?;
    println!(
        "Chrome trace (chrome://tracing, ui.perfetto.dev), one row per stream: {}",
        trace.display()
    );

    // What a vertex costs: empty one-iteration launches over four views (a chain on one
    // stream), against the same launches made eagerly. On the serial instance, as the
    // benchmark measures it: the runtime's own cost, not a pool's dispatch (on two cores the
    // launching thread, the stream's thread and the pool's workers would share them).
    let views = (0..4)
        .map(|k| View::<f64, 1>::new(&format!("v{k}"), [1]))
        .collect::<Result<Vec<_>>>()?;
    let one = RangePolicy::new(hoplite::Serial::default(), 0..1);
    let serial_ctx = Context::new(
        vec![HostDevice::new("cpu", vec![hoplite::Serial::default()])?],
        ContextOptions::default(),
    )?;
    let launches = 20_000;
    let spec = || {
        (
            one.clone(),
            (
                views[0].write(),
                views[1].read(),
                views[2].read(),
                views[3].read(),
            ),
        )
    };
    let (dag_run, t_dag) = timed(3, || -> std::result::Result<(), hoplite::dag::DagError> {
        for _ in 0..launches {
            serial_ctx.launch("empty", spec(), |item| {
                std::hint::black_box(item);
            })?;
        }
        serial_ctx.synchronize()
    });
    let (eager_run, t_eager) = timed(3, || -> Result<()> {
        for _ in 0..launches {
            parallel_for("empty", spec(), |item| {
                std::hint::black_box(item);
            })?;
        }
        Ok(())
    });
    dag_run?;
    eager_run?;
    println!(
        "{launches} empty launches over four views: {:.2} us per vertex, {:.2} us per eager launch, {:.2} us of DAG overhead each",
        t_dag.as_secs_f64() * 1e6 / launches as f64,
        t_eager.as_secs_f64() * 1e6 / launches as f64,
        (t_dag.as_secs_f64() - t_eager.as_secs_f64()) * 1e6 / launches as f64
    );

    // A failure stops exactly what depends on it; the context goes on. (The panic message
    // is silenced: it is expected.)
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let broken = View::<f32, 2>::new("broken", [n, n])?;
    async_ctx.launch(
        "panics",
        (interior.clone(), (broken.write(),)),
        move |(ij, (_b,))| {
            if *ij == [n / 2, n / 2] {
                panic!("bad pixel");
            }
        },
    )?;
    let after = async_ctx.launch(
        "uses broken",
        (interior.clone(), (images.out.write(), broken.read())),
        |(ij, (o, b))| o.set(ij, b.get(ij)),
    )?;
    println!(
        "a descendant of a failed launch: {}",
        after.wait().err().map_or("ran".into(), |e| e.to_string())
    );
    std::panic::set_hook(default_hook);
    async_ctx.write(&images.out)?.fill(0.0);
    println!(
        "the context is still usable: pipeline sum {:.1}",
        run(&|| pipeline(&async_ctx, &interior, &images))?
    );
    Ok(())
}

fn selection() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use hoplite::select::{AutoTune, DynamicLoad, RoundRobin, submit, submit_and_wait};
    let _region = section("Dynamic selection: a policy picks the pool for each submission");
    let pools = hoplite::RayonSpace::default().partition_space(2)?;
    fn sum_on(space: &hoplite::RayonSpace, n: usize) -> Result<f64> {
        let kernel = |i: Idx<'_>, acc: &mut f64| *acc += (*i as f64).sqrt();
        parallel_reduce(
            "sum",
            RangePolicy::new(space.clone(), 0..n),
            kernel,
            Sum::<f64>::new(),
        )
    }
    let rr = RoundRobin::<hoplite::RayonSpace>::with_resources(pools.clone());
    let mut picks = Vec::new();
    for _ in 0..4 {
        let (sum, pick) = submit_and_wait(&rr, |space, n| (sum_on(space, n), space.instance_id()), 1000)?;
        picks.push(pick);
        assert!((sum? - 21_065.833).abs() < 1e-2);
    }
    println!(
        "round robin over {} partitions picked instances {picks:?}",
        pools.len()
    );

    // Auto-tune: the whole pool against one of its halves; trial rounds, then the fastest.
    let whole = hoplite::RayonSpace::default();
    let tune = AutoTune::<hoplite::RayonSpace>::with_resources(vec![pools[0].clone(), whole.clone()]);
    let mut chosen = Vec::new();
    let t = Instant::now();
    for _ in 0..12 {
        let (sum, pick) = submit_and_wait(
            &tune,
            |space, n| (sum_on(space, n), space.concurrency()),
            1usize << 22,
        )?;
        sum?;
        chosen.push(pick);
    }
    println!(
        "auto-tune between a 1-thread partition and the {}-thread pool chose threads {chosen:?} in {}",
        whole.concurrency(),
        ms(t.elapsed())
    );

    // Plain values as resources, and a dynamic-load limit: `submit` waits for a free device.
    let devices = DynamicLoad::from_values(vec!["gpu0", "gpu1"]).with_limit(1);
    let held = submit(&devices, |d, ()| *d, ())?;
    let next = submit(&devices, |d, ()| *d, ())?;
    let waiter = std::thread::scope(|scope| -> std::result::Result<&str, Box<dyn std::error::Error>> {
        let waiter = scope.spawn(|| submit(&devices, |d, ()| *d, ()).map(|s| s.unwrap()));
        std::thread::sleep(std::time::Duration::from_millis(5));
        held.wait()?; // frees gpu0: the blocked submit goes there
        Ok(waiter.join().map_err(|_| "the waiting thread panicked")??)
    })?;
    println!(
        "dynamic load over plain values: {:?} and {:?} busy, a third submit waited for {waiter:?}",
        held.unwrap(),
        next.unwrap()
    );
    Ok(())
}

fn errors() -> Result<()> {
    let _region = section("Errors: bad input and panics come back as typed errors");
    let space = DefaultExecutionSpace::default();
    #[expect(clippy::reversed_empty_ranges, reason = "the point is to show the error")]
    let reversed = RangePolicy::new(space.clone(), 10..3);
    if let Err(e) = parallel_for("reversed", reversed, |_| {}) {
        println!("begin > end:        {e}");
    }
    let too_big = TeamPolicy::new(space.clone(), 8, space.max_team_size() + 1);
    if let Err(e) = parallel_for("big-teams", too_big, |_| {}) {
        println!("team too large:     {e}");
    }
    let zero_tile = MDRangePolicy::new(space.clone(), [0, 0], [4, 4]).with_tiles([2, 0]);
    if let Err(e) = parallel_for("zero-tile", zero_tile, |_| {}) {
        println!("zero tile:          {e}");
    }
    // A share of a GPU (host backends ignore it, but check it alike).
    let no_share = RangePolicy::new(space, 0..4).with_desired_occupancy(0);
    if let Err(e) = parallel_for("no-share", no_share, |_| {}) {
        println!("occupancy 0%:       {e}");
    }
    // A thread count in the wrong unit starts nothing.
    if let Err(e) = hoplite::RayonSpace::with_threads(hoplite::rayon_backend::max_threads() + 1) {
        println!("too many threads:   {e}");
    }
    // The panic below is on purpose; keep the default hook from printing it.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let panicked = parallel_reduce(
        "fragile",
        100,
        |i, acc| {
            assert!(*i != 42, "index {} is cursed", *i);
            *acc += 1;
        },
        Sum::<usize>::new(),
    );
    std::panic::set_hook(default_hook);
    if let Err(e) = panicked {
        println!("kernel panic:       {e}");
    }
    let after = parallel_reduce("after-panic", 100, |_, acc| *acc += 1, Sum::<usize>::new())?;
    println!("next launch after the panic counted {after} of 100 iterations: the runtime is fine");
    Ok(())
}

/// The NUMA backend: the topology, then the triad `a = b + 3 c` per node (arrays bound to the
/// node, run on its pool), on every node at once with first-touch arrays, and with interleaved
/// arrays.
#[cfg(feature = "numa")]
fn numa() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use hoplite::numa::{NumaMemory, NumaSpace, NumaTopology, memory_binding};

    let _region = section("NUMA: a pool per node, memory bound to nodes");
    let space = NumaSpace::new()?;
    let mut out = Vec::new();
    space.print_configuration(&mut out, false)?;
    print!("{}", String::from_utf8_lossy(&out));

    let n = 1 << 22;
    type Numa1 = View<f64, 1, LayoutRight, NumaMemory>;
    let triad = |label: &str, on: &NumaSpace, a: &Numa1, b: &Numa1, c: &Numa1| -> Result<()> {
        let (r, t) = timed(5, || {
            parallel_for(
                "triad",
                (
                    RangePolicy::new(on.clone(), 0..n),
                    (a.write(), b.read(), c.read()),
                ),
                |(i, (a, b, c))| a.set(i, b.get(i) + 3.0 * c.get(i)),
            )
        });
        r?;
        println!(
            "  triad {label:<28} {:>2} threads {:>10} {:>6} GB/s",
            on.concurrency(),
            ms(t),
            gbps(3 * n * size_of::<f64>(), t)
        );
        Ok(())
    };
    let filled = |on: &NumaSpace, mem: NumaMemory, label: &str, value: f64| -> Result<Numa1> {
        let v = View::new_in(mem, label, [n])?;
        parallel_for(
            "fill",
            (RangePolicy::new(on.clone(), 0..n), v.write()),
            |(i, v)| v.set(i, value),
        )?;
        Ok(v)
    };

    for k in space.nodes() {
        let node = space.node(k)?;
        let mem = space.memory_on(k)?;
        let (a, b, c) = (
            filled(&node, mem.clone(), "a", 0.0)?,
            filled(&node, mem.clone(), "b", 1.0)?,
            filled(&node, mem, "c", 2.0)?,
        );
        triad(&format!("on node {k}, memory bound"), &node, &a, &b, &c)?;
        match memory_binding(space.topology(), &a) {
            Ok(binding) => println!(
                "    hwloc: the pages of `a` are on nodes {:?}, policy {:?}",
                binding.nodes, binding.policy
            ),
            Err(e) => println!("    {e}"),
        }
    }
    let (a, b, c) = (
        space.first_touch_view("a", n, 0.0)?,
        space.first_touch_view("b", n, 1.0)?,
        space.first_touch_view("c", n, 2.0)?,
    );
    triad("every node, first touch", &space, &a, &b, &c)?;
    let mem = space.memory_interleaved();
    let (a, b, c) = (
        filled(&space, mem.clone(), "a", 0.0)?,
        filled(&space, mem.clone(), "b", 1.0)?,
        filled(&space, mem, "c", 2.0)?,
    );
    triad("every node, interleaved", &space, &a, &b, &c)?;
    let sum = parallel_reduce(
        "check",
        (RangePolicy::new(space.clone(), 0..n), a.read()),
        |(i, a), acc| *acc += a.get(i),
        Sum::<f64>::new(),
    )?;
    println!("  sum of a = {sum} (expected {})", 7.0 * n as f64);

    if space.node_count() < 2 {
        // Two nodes of half the cores each, as a two-socket machine of this size would be.
        let cores = space.concurrency().max(2);
        let description = format!("pack:2 numa:1 core:{} pu:1", cores.div_ceil(2));
        let plan = NumaSpace::with_topology(&NumaTopology::synthetic(&description)?, 0)?;
        println!(
            "  this machine has one NUMA node; on two nodes (synthetic \"{description}\", unbound) the plan is:"
        );
        let ranks = plan.rank_nodes();
        let mut before = 0;
        for (node, threads) in plan.threads_on_nodes() {
            let (lo, hi) = (n * before / ranks.len(), n * (before + threads) / ranks.len());
            println!(
                "    node {node}: {threads} thread(s), indices {lo}..{hi} of a launch over 0..{n}, and their first-touched pages"
            );
            before += threads;
        }
        let (a, b, c) = (
            plan.first_touch_view("a", n, 0.0)?,
            plan.first_touch_view("b", n, 1.0)?,
            plan.first_touch_view("c", n, 2.0)?,
        );
        triad("synthetic 2 nodes (unbound)", &plan, &a, &b, &c)?;
    }
    Ok(())
}
