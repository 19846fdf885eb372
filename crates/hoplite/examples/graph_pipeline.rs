//! A filter pipeline as an explicit graph (Kokkos Graphs): built once with its branches spelled
//! out, then submitted once per frame of a signal. A host node loads the next frame, two filter
//! branches run side by side, a join combines them and a reduction node measures the result.
//! Each frame's energy is checked against the same launches made eagerly, and the two ways are
//! timed.
//!
//! `cargo run --release --example graph_pipeline` (a trace of the submits goes to
//! `target/graph_pipeline_trace.json`; open it in ui.perfetto.dev)

use std::time::Instant;

use hoplite::graph::{ReduceResult, create_graph};
use hoplite::prelude::*;

#[path = "common/filters.rs"]
mod filters;
use filters::{combine, derivative, eager_energy, energy, smooth};

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

    // The submits traced by the built-in connector (not where KOKKOS_TOOLS_LIBS loaded a
    // connector: a process has one).
    let traced = hoplite::profiling::start_trace().is_ok();
    let t = Instant::now();
    let mut by_graph = Vec::with_capacity(frames);
    for _ in 0..frames {
        graph.submit()?;
        by_graph.push(result.get().ok_or("the energy node ran")?);
    }
    let t_graph = t.elapsed();
    if traced {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/graph_pipeline_trace.json");
        hoplite::profiling::write_trace(&path)?;
        // The trace is Trace Event JSON with each kernel node's kernel once per submit, each
        // node's run once per submit, and each of the graph's five edges (load to both
        // filters, both to combine through the join, combine to energy) as an arrow per submit.
        let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        let events = trace["traceEvents"].as_array().ok_or("a list of events")?;
        let count = |pred: &dyn Fn(&serde_json::Value) -> bool| events.iter().filter(|e| pred(e)).count();
        for node in ["smooth", "derivative", "combine", "energy"] {
            let kernels = count(&|e| e["ph"] == "X" && e["name"] == node && e["cat"] != "graph_node");
            assert_eq!(kernels, frames, "kernel `{node}` in the trace once per submit");
        }
        assert_eq!(
            count(&|e| e["cat"] == "graph_node"),
            5 * frames,
            "every node's run"
        );
        let arrows = count(&|e| e["ph"] == "s" && e["cat"] == "graph_edge");
        assert_eq!(arrows, 5 * frames, "an arrow per edge and submit");
        assert_eq!(count(&|e| e["ph"] == "f" && e["cat"] == "graph_edge"), arrows);
        println!("trace of the submits: {}", path.display());
    }

    let t = Instant::now();
    for (f, &want) in by_graph.iter().enumerate() {
        x.copy_from_slice(&frame(f, n))?;
        let e = eager_energy(&x, &low, &slope, &out)?;
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
