//! The built-in trace connector (`hoplite::profiling::start_trace`): an eager launch, a graph
//! node, a DAG vertex, a region, a section, an event, an allocation and a deep copy all reach
//! the trace, which parses as Trace Event Format JSON with named rows. One test: the connector
//! is the process's, so it gets a process of its own (this test binary).

use hoplite::Serial;
use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions};
use hoplite::graph::create_graph;
use hoplite::prelude::*;
use hoplite::profiling::{ScopedRegion, Section, mark_event, start_trace, write_trace};
use serde_json::Value;

#[test]
fn every_launch_style_reaches_the_trace() -> std::result::Result<(), Box<dyn std::error::Error>> {
    start_trace()?;
    let space = Serial::default();
    let x = View::<f64, 1>::new("traced x", [64])?;
    let y = View::<f64, 1, LayoutLeft>::new("traced y", [64])?;
    {
        let _region = ScopedRegion::new("solve");
        let section = Section::new("sweeps");
        section.start();
        parallel_for(
            "eager fill",
            (RangePolicy::new(space.clone(), 0..64), (x.write(),)),
            |(i, (x,))| x.set(i, 1.0),
        )?;
        section.stop();
        let mut graph = create_graph(&space, |g| {
            g.parallel_for(
                "graph node",
                (RangePolicy::new(space.clone(), 0..64), (x.write(),)),
                |(i, (x,))| x.set(i, 2.0),
            );
        })?;
        graph.submit()?;
        let ctx = Context::new(
            vec![HostDevice::new("cpu", vec![space.clone()])?],
            ContextOptions::default(),
        )?;
        let total = ctx.reduce(
            "dag vertex",
            (64, (x.read(),)),
            |(i, (x,)), acc: &mut f64| *acc += x.get(i),
            Sum::new(),
        )?;
        assert_eq!(total.get()?, 128.0);
        ctx.synchronize()?;
        deep_copy(&y, &x)?;
        mark_event("converged");
    }
    let path = std::env::temp_dir().join(format!("hoplite-trace-{}.json", std::process::id()));
    write_trace(&path)?;
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let _ = std::fs::remove_file(&path);
    let events = trace["traceEvents"].as_array().ok_or("a list of events")?;
    let named = |ph: &str, name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == ph && e["name"].as_str().is_some_and(|n| n.contains(name)))
    };
    for (label, category) in [
        ("eager fill", "parallel_for"),
        ("graph node", "parallel_for"),
        ("dag vertex", "parallel_reduce"),
    ] {
        let e = named("X", label).ok_or_else(|| format!("no complete event `{label}` in {events:?}"))?;
        assert_eq!(e["cat"], category, "{e}");
        assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
        // Kernels appear on the row of their instance, which a metadata event names.
        let row = &e["tid"];
        assert!(
            events.iter().any(|m| m["ph"] == "M"
                && m["name"] == "thread_name"
                && &m["tid"] == row
                && m["args"]["name"].as_str().is_some_and(|n| n.contains("instance"))),
            "no name for the row of {e}"
        );
    }
    assert!(
        named("B", "solve").is_some() && named("B", "sweeps").is_some(),
        "{events:?}"
    );
    assert_eq!(
        events.iter().filter(|e| e["ph"] == "B").count(),
        events.iter().filter(|e| e["ph"] == "E").count(),
        "every region and section ends"
    );
    assert!(named("i", "converged").is_some(), "the event");
    assert!(named("i", "allocate traced x").is_some(), "the allocation");
    let copy = named("X", "deep_copy traced y").ok_or("the deep copy")?;
    assert_eq!(copy["args"]["bytes"], 64 * 8);
    assert!(events.iter().any(|e| e["ph"] == "C"), "the live-bytes counters");
    assert!(named("M", "process_name").is_some());
    Ok(())
}
