//! With the `serde` feature, what a context and a recorded graph report goes through JSON and
//! comes back equal: timings, snapshots, graph structures.
#![cfg(feature = "serde")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hoplite_core::{AccessKind, RangePolicy, View};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions, DagSnapshot, DependencyPolicy, Progress, VertexTiming, record};
use hoplite_graph::{GraphStructure, NodeKind};
use hoplite_serial::Serial;

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> (String, T) {
    let json = serde_json::to_string(value).expect("serializes");
    let back = serde_json::from_str(&json).expect("deserializes");
    (json, back)
}

#[test]
fn timings_and_snapshots_go_through_json_unchanged() {
    let device = HostDevice::new("cpu", vec![Serial::default(); 2]).expect("device");
    let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
    let (x, y) = (
        View::<f64, 1>::new("x", [8]).expect("x"),
        View::<f64, 1>::new("y", [8]).expect("y"),
    );
    let range = RangePolicy::new(Serial::default(), 0..8);
    // The fill waits until the copy is launched: a fill that finished first would be retired
    // before the copy's launch, which then records no edge to it.
    let copy_launched = Arc::new(AtomicBool::new(false));
    let gate = copy_launched.clone();
    ctx.launch("fill", (range.clone(), (x.write(),)), move |(i, (x,))| {
        while !gate.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        x.set(i, 2.0)
    })
    .expect("fill");
    ctx.launch("copy", (range, (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, x.get(i))
    })
    .expect("copy");
    copy_launched.store(true, Ordering::Release);
    ctx.synchronize().expect("ran");

    let timings = ctx.timings();
    let (json, back): (String, Vec<VertexTiming>) = round_trip(&timings);
    assert_eq!(back, timings);
    assert!(
        json.contains("\"label\":\"copy\"") && json.contains("\"parents\":[[0,\"x\"]]"),
        "{json}"
    );

    let snapshot = ctx.snapshot();
    let (json, back): (String, DagSnapshot) = round_trip(&snapshot);
    assert_eq!(back, snapshot);
    assert!(snapshot.vertices.iter().all(|v| v.progress == Progress::Done));
    assert!(json.contains("\"progress\":\"Done\""), "{json}");
}

#[test]
fn a_recorded_graphs_structure_goes_through_json_unchanged() {
    let space = Serial::default();
    let (x, y) = (
        View::<f64, 1>::new("x", [8]).expect("x"),
        View::<f64, 1>::new("y", [8]).expect("y"),
    );
    let graph = record(&space, DependencyPolicy::WithConst, |r| {
        let range = RangePolicy::new(space.clone(), 0..8);
        r.launch("fill", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 2.0));
        r.launch("copy", (range, (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, x.get(i))
        });
    })
    .expect("records");
    let structure = graph.structure();
    let (json, back): (String, GraphStructure) = round_trip(&structure);
    assert_eq!(back, structure);
    let copy = structure
        .nodes
        .iter()
        .find(|n| n.label == "copy")
        .expect("a copy node");
    let fill = structure
        .nodes
        .iter()
        .find(|n| n.label == "fill")
        .expect("a fill node");
    assert_eq!(copy.kind, NodeKind::For);
    assert_eq!(copy.predecessors, [fill.id], "the inferred edge");
    assert_eq!(
        copy.accesses
            .iter()
            .map(|a| (a.view.as_str(), a.kind))
            .collect::<Vec<_>>(),
        [("y", AccessKind::Write), ("x", AccessKind::Read)]
    );
    assert!(json.contains("\"kind\":\"Write\""), "{json}");
    assert_eq!(back.to_dot(), graph.to_dot(), "DOT is written from the structure");
}
