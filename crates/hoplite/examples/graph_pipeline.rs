//! A filter pipeline as an explicit graph (Kokkos Graphs): built once with its branches spelled
//! out, then submitted once per frame of a signal. A host node loads the next frame, two filter
//! branches run side by side, a join combines them and a reduction node measures the result.
//! Each frame's energy is checked against the same launches made eagerly, and the two ways are
//! timed.
//!
//! `cargo run --release --example graph_pipeline`

use std::time::Instant;

use hoplite::graph::{ReduceResult, create_graph};
use hoplite::prelude::*;

#[path = "common/filters.rs"]
mod filters;
use filters::{combine, derivative, energy, smooth};

/// Frame `f` of the signal.
fn frame(f: usize, n: usize) -> Vec<f64> {
    (0..n).map(|k| ((k + 37 * f) as f64 * 0.01).sin()).collect()
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let (n, frames) = (1 << 18, 20);
    let space = DefaultExecutionSpace::default();
    let [x, low, slope, out] = ["frame", "smoothed", "slope", "out"].map(|l| View::<f64, 1>::new(l, [n]));
    let (x, low, slope, out) = (x?, low?, slope?, out?);
    let next = View::<u64, 0>::new("next frame", [])?;
    let result = ReduceResult::<f64>::new();
    let all = || RangePolicy::new(space.clone(), 0..n);

    let mut graph = create_graph(&space, |g| {
        // The host node declares what it touches, as a kernel does.
        let load = g.host_with(
            "load frame",
            (x.write(), next.write()),
            move |(mut x, mut next)| {
                let f = next.get([]);
                x.copy_from_slice("frame", &frame(f as usize, n))
                    .expect("a frame has n samples");
                next.set([], f + 1);
            },
        );
        let smoothed = load.then_parallel_for("smooth", (all(), (low.write(), x.read())), smooth::with(8, n));
        let sloped = load.then_parallel_for(
            "derivative",
            (all(), (slope.write(), x.read())),
            derivative::with(n),
        );
        g.when_all([smoothed.erase(), sloped.erase()])
            .then_parallel_for(
                "combine",
                (all(), (out.write(), low.read(), slope.read())),
                combine::with(10.0),
            )
            .then_parallel_reduce(
                "energy",
                (all(), (out.read(),)),
                energy::with(),
                Sum::new(),
                result.clone(),
            );
    })?;
    println!("{}", graph.to_dot());

    let t = Instant::now();
    let mut by_graph = Vec::with_capacity(frames);
    for _ in 0..frames {
        graph.submit()?;
        by_graph.push(result.get().ok_or("the energy node ran")?);
    }
    let t_graph = t.elapsed();

    let t = Instant::now();
    for (f, &want) in by_graph.iter().enumerate() {
        x.copy_from_slice(&frame(f, n))?;
        parallel_for("smooth", (all(), (low.write(), x.read())), smooth::with(8, n))?;
        parallel_for(
            "derivative",
            (all(), (slope.write(), x.read())),
            derivative::with(n),
        )?;
        parallel_for(
            "combine",
            (all(), (out.write(), low.read(), slope.read())),
            combine::with(10.0),
        )?;
        let e = parallel_reduce("energy", (all(), (out.read(),)), energy::with(), Sum::new())?;
        assert!(
            (e - want).abs() <= 1e-12 * want.abs().max(1.0),
            "frame {f}: graph {want}, eager {e}"
        );
    }
    let t_eager = t.elapsed();
    println!(
        "{frames} frames of {n} samples: graph {:.2} ms, eager {:.2} ms; first energies {:.3?}",
        t_graph.as_secs_f64() * 1e3,
        t_eager.as_secs_f64() * 1e3,
        &by_graph[..3]
    );
    Ok(())
}
