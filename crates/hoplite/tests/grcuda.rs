//! GrCUDA's six benchmarks (`benches/common/grcuda`) at small sizes, through the implicit DAG
//! on every backend built here: serial streams, partitions of a rayon pool, CUDA streams (with
//! `--features cuda`; without a device each CUDA test says it is skipped and why), and eagerly
//! on rayon; and the five without host reads between launches recorded into a graph and
//! replayed. Each result is checked against the benchmark's serial reference.

#[path = "../benches/common/grcuda/mod.rs"]
mod grcuda;

use grcuda::{BenchError, Dag, Eager, Launcher, bs, dl, hits, img, ml, record, vec};
use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions};
use hoplite::graph::{GraphBackend, HostGraph};
use hoplite::{LaunchSpace, RayonSpace, Serial};

/// The small sizes: every benchmark's full DAG, each test well under a second.
const VEC_N: usize = 10_000;
const BS_N: usize = 2_000;
const BS_M: usize = 10;
const ML: (usize, usize, usize) = (500, 40, 10);
const HITS_N: usize = 2_000;
const HITS_DEGREE: usize = 3;
const HITS_ITERATIONS: usize = 5;
const IMG_N: usize = 64;
const DL_N: usize = 64;

/// Runs all six on `to` and checks each against its reference.
fn all_six<S: LaunchSpace, L: Launcher<S>>(to: &L) -> Result<(), BenchError> {
    let b = vec::Buffers::<S>::new(VEC_N)?;
    vec::check(vec::run(to, &b)?.get()?, vec::reference(VEC_N));

    let b = bs::Buffers::<S>::new(BS_N, BS_M)?;
    bs::run(to, &b)?;
    bs::check(&b.result()?, &bs::reference(BS_N));

    let input = ml::Input::new(ML.0, ML.1, ML.2);
    let b = ml::Buffers::<S>::new(&input)?;
    ml::run(to, &b)?;
    b.result()?.check(&ml::reference(&input));

    let input = hits::Input::new(HITS_N, HITS_DEGREE);
    let b = hits::Buffers::<S>::new(&input)?;
    hits::run(to, &b, HITS_ITERATIONS)?;
    hits::check(&b.result()?, &hits::reference(&input, HITS_ITERATIONS));

    let b = img::Buffers::<S>::new(IMG_N)?;
    let sum = img::run(to, &b)?.get()?;
    to.finish()?;
    img::check(&b.result()?, sum, &img::reference(IMG_N));

    let input = dl::Input::new(DL_N);
    let b = dl::Buffers::<S>::new(&input)?;
    let out = dl::run(to, &b)?.get()?;
    to.finish()?;
    dl::check(&b.features()?, out, &dl::reference(&input));
    Ok(())
}

/// Records the five benchmarks that read no value between their launches (HITS reads its
/// norms) into graphs of `backend()` on `space`, replays each twice and checks the second
/// replay: a replay recomputes everything from the inputs, which it leaves as they were.
fn five_replayed<S: LaunchSpace, B: GraphBackend<S> + 'static>(
    space: &S,
    backend: impl Fn() -> B,
) -> Result<(), BenchError> {
    let b = vec::Buffers::<S>::new(VEC_N)?;
    let (mut graph, sum) = record(space, backend(), |r| vec::run(r, &b))?;
    assert!(sum.replayed().is_none(), "no value before a replay");
    graph.submit()?;
    graph.submit()?;
    vec::check(sum.get()?, vec::reference(VEC_N));

    let b = bs::Buffers::<S>::new(BS_N, BS_M)?;
    let (mut graph, ()) = record(space, backend(), |r| bs::run(r, &b))?;
    graph.submit()?;
    graph.submit()?;
    bs::check(&b.result()?, &bs::reference(BS_N));

    let input = ml::Input::new(ML.0, ML.1, ML.2);
    let b = ml::Buffers::<S>::new(&input)?;
    let (mut graph, ()) = record(space, backend(), |r| ml::run(r, &b))?;
    graph.submit()?;
    graph.submit()?;
    b.result()?.check(&ml::reference(&input));

    let b = img::Buffers::<S>::new(IMG_N)?;
    let (mut graph, sum) = record(space, backend(), |r| img::run(r, &b))?;
    graph.submit()?;
    graph.submit()?;
    img::check(&b.result()?, sum.get()?, &img::reference(IMG_N));

    let input = dl::Input::new(DL_N);
    let b = dl::Buffers::<S>::new(&input)?;
    let (mut graph, out) = record(space, backend(), |r| dl::run(r, &b))?;
    graph.submit()?;
    graph.submit()?;
    dl::check(&b.features()?, out.get()?, &dl::reference(&input));
    Ok(())
}

#[test]
fn five_recorded_and_replayed_as_graphs_match_the_reference() {
    let serial = Serial::default();
    five_replayed(&serial, || HostGraph::new(serial.clone())).expect("serial graphs");
    let rayon = RayonSpace::default();
    five_replayed(&rayon, || HostGraph::new(rayon.clone())).expect("rayon graphs");
}

/// HITS reads its norms between launches: recording it is refused with the reason, rather
/// than replaying a graph without its divisions' values.
#[test]
fn a_recorded_benchmark_that_reads_a_value_between_launches_is_refused() {
    let input = hits::Input::new(HITS_N, HITS_DEGREE);
    let b = hits::Buffers::<Serial>::new(&input).expect("buffers");
    let serial = Serial::default();
    let e = record(&serial, HostGraph::new(serial.clone()), |r| hits::run(r, &b, 1))
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("before its graph is submitted"), "{e}");
}

/// The parents the implicit DAG infers for each launch of `run`, by launch index: the launches
/// recorded (nothing runs, so no parent finishes and drops out of the model before its child
/// is launched) into a graph with the DAG's edges, whose join nodes are looked through.
fn inferred_parents<O>(
    run: impl FnOnce(&grcuda::Recording<'_, '_, '_, Serial>) -> Result<O, BenchError>,
) -> Vec<Vec<usize>> {
    use hoplite::graph::NodeKind;
    let serial = Serial::default();
    let (graph, _) = record(&serial, HostGraph::new(serial.clone()), run).expect("records");
    let nodes = graph.structure().nodes;
    let is_launch = |id: usize| !matches!(nodes[id].kind, NodeKind::Root | NodeKind::Aggregate);
    // Launch index of each node that is a launch.
    let mut launch_of = vec![None; nodes.len()];
    for (k, id) in (0..nodes.len()).filter(|&id| is_launch(id)).enumerate() {
        launch_of[id] = Some(k);
    }
    (0..nodes.len())
        .filter(|&id| is_launch(id))
        .map(|id| {
            let mut parents = Vec::new();
            let mut pending = nodes[id].predecessors.clone();
            while let Some(p) = pending.pop() {
                match launch_of[p] {
                    Some(k) => parents.push(k),
                    None => pending.extend(&nodes[p].predecessors),
                }
            }
            parents.sort_unstable();
            parents.dedup();
            parents
        })
        .collect()
}

/// The hand-written two-stream schedules (the CUDA baseline `cuda-streams`) order every
/// dependency the DAG infers from the same launches' handles, and a schedule missing an
/// event is caught.
#[test]
fn hand_written_schedules_order_every_dependency_the_dag_infers() {
    let b = vec::Buffers::<Serial>::new(VEC_N).expect("buffers");
    let parents = inferred_parents(|r| vec::run(r, &b));
    assert_eq!(parents, [vec![], vec![], vec![0, 1]]);
    assert_eq!(vec::schedule().covers(&parents), Ok(()));
    let missing = grcuda::streams::Schedule::new(&[(0, &[]), (1, &[]), (0, &[])]);
    assert_eq!(
        missing.covers(&parents),
        Err("launch 2 may start before its parent 1".to_owned())
    );

    let b = bs::Buffers::<Serial>::new(BS_N, BS_M).expect("buffers");
    assert_eq!(
        bs::schedule(BS_M).covers(&inferred_parents(|r| bs::run(r, &b))),
        Ok(())
    );

    let input = ml::Input::new(ML.0, ML.1, ML.2);
    let b = ml::Buffers::<Serial>::new(&input).expect("buffers");
    assert_eq!(
        ml::schedule().covers(&inferred_parents(|r| ml::run(r, &b))),
        Ok(())
    );

    let b = img::Buffers::<Serial>::new(IMG_N).expect("buffers");
    assert_eq!(
        img::schedule().covers(&inferred_parents(|r| img::run(r, &b))),
        Ok(())
    );

    let input = dl::Input::new(DL_N);
    let b = dl::Buffers::<Serial>::new(&input).expect("buffers");
    assert_eq!(
        dl::schedule().covers(&inferred_parents(|r| dl::run(r, &b))),
        Ok(())
    );
}

#[test]
fn the_six_on_serial_streams_match_the_reference() {
    let device = HostDevice::new("serial", vec![Serial::default(); 2]).expect("device");
    let to = Dag {
        ctx: Context::new(vec![device], ContextOptions::default()).expect("context"),
        space: Serial::default(),
    };
    all_six(&to).expect("runs");
}

#[test]
fn the_six_on_rayon_partitions_match_the_reference() {
    let space = RayonSpace::default();
    let device = HostDevice::partitioned("cpu", &space, 2).expect("device");
    let to = Dag {
        ctx: Context::new(vec![device], ContextOptions::default()).expect("context"),
        space,
    };
    all_six(&to).expect("runs");
}

#[test]
fn the_six_eager_on_rayon_match_the_reference() {
    all_six(&Eager(RayonSpace::default())).expect("runs");
}

#[cfg(feature = "cuda")]
#[test]
fn the_six_on_cuda_streams_match_the_reference() {
    use hoplite::Cuda;
    use hoplite::cuda::dag::CudaDevice;
    let device = match CudaDevice::new(0, 2) {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: the GrCUDA benchmarks on CUDA streams need a device ({e})");
            return;
        }
    };
    let to = Dag {
        ctx: Context::new(vec![device], ContextOptions::default()).expect("context"),
        space: Cuda::default(),
    };
    all_six(&to).expect("runs");
}

/// The hand-written baseline: five benchmarks (HITS reads values between its launches and has
/// no schedule) on two `Cuda` instances by their schedules, events placed by hand.
#[cfg(feature = "cuda")]
#[test]
fn five_on_hand_placed_cuda_streams_match_the_reference() {
    use grcuda::streams::Streams;
    let streams = |schedule| match Streams::new(schedule) {
        Ok(s) => Some(s),
        Err(e) => {
            println!("skipped: hand-placed CUDA streams need a device ({e})");
            None
        }
    };
    let Some(to) = streams(vec::schedule()) else {
        return;
    };
    let b = vec::Buffers::new(VEC_N).expect("buffers");
    vec::check(
        vec::run(&to, &b).and_then(|s| s.get()).expect("runs"),
        vec::reference(VEC_N),
    );
    // A second run starts the schedule over.
    vec::check(
        vec::run(&to, &b).and_then(|s| s.get()).expect("runs"),
        vec::reference(VEC_N),
    );

    let Some(to) = streams(bs::schedule(BS_M)) else {
        return;
    };
    let b = bs::Buffers::new(BS_N, BS_M).expect("buffers");
    bs::run(&to, &b).expect("runs");
    bs::check(&b.result().expect("result"), &bs::reference(BS_N));

    let Some(to) = streams(ml::schedule()) else { return };
    let input = ml::Input::new(ML.0, ML.1, ML.2);
    let b = ml::Buffers::new(&input).expect("buffers");
    ml::run(&to, &b).expect("runs");
    b.result().expect("result").check(&ml::reference(&input));

    let Some(to) = streams(img::schedule()) else {
        return;
    };
    let b = img::Buffers::new(IMG_N).expect("buffers");
    let sum = img::run(&to, &b).and_then(|s| s.get()).expect("runs");
    to.finish().expect("finishes");
    img::check(&b.result().expect("result"), sum, &img::reference(IMG_N));

    let Some(to) = streams(dl::schedule()) else { return };
    let input = dl::Input::new(DL_N);
    let b = dl::Buffers::new(&input).expect("buffers");
    let out = dl::run(&to, &b).and_then(|s| s.get()).expect("runs");
    to.finish().expect("finishes");
    dl::check(&b.features().expect("features"), out, &dl::reference(&input));
}

/// The five replayable benchmarks recorded into CUDA Graphs of the generic builder's
/// kernel and reduction nodes.
#[cfg(feature = "cuda")]
#[test]
fn five_recorded_as_cuda_graphs_match_the_reference() {
    use hoplite::Cuda;
    use hoplite::cuda::graph::CudaGraph;
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: CUDA graphs need a device ({e})");
            return;
        }
    };
    five_replayed(&cuda, || CudaGraph::new(&cuda)).expect("CUDA graphs");
}

/// One DAG device per NUMA node of a synthetic two-node machine (hwloc's description, so the
/// test does not depend on this machine's nodes): the selection policy spreads the launches
/// without parents over the nodes.
#[cfg(feature = "numa")]
#[test]
fn the_six_on_numa_node_devices_match_the_reference() {
    use hoplite::NumaSpace;
    use hoplite::numa::NumaTopology;
    let topology = NumaTopology::synthetic("numa:2 core:1 pu:1").expect("a valid description");
    let space = NumaSpace::with_topology(&topology, 0).expect("pools");
    let devices: Vec<HostDevice<NumaSpace>> = space
        .partition_by_node()
        .expect("node pools")
        .into_iter()
        .map(|node| HostDevice::new(&format!("numa node {}", node.nodes()[0]), vec![node]).expect("device"))
        .collect();
    let to = Dag {
        ctx: Context::new(devices, ContextOptions::default()).expect("context"),
        space,
    };
    all_six(&to).expect("runs");
}
