//! A DAG vertex whose work launches on another `Cuda` instance than its stream's: those
//! launches are not ordered by the DAG's events (which cover the vertex's own stream only),
//! so they must be queued like any eager launch (`src/pending.rs`): recorded in the table of
//! queued accesses, and waited for by later work that conflicts with them, on any instance,
//! in a later vertex or in the same one. With `HOPLITE_CUDA_LAUNCHES=async` the launches
//! return once queued and the later work would otherwise race with them; in the default mode
//! every launch waits and the checks hold trivially. Without a device each test says it is
//! skipped.

use hoplite::prelude::*;
use hoplite_core::{LayoutRight, View};
use hoplite_cuda::dag::CudaDevice;
use hoplite_cuda::{Cuda, CudaSpace};
use hoplite_dag::{Context, ContextOptions, Vertex};

mod support;
use support::{axpy, scale};

/// A vector in device memory.
type DeviceVector = View<f64, 1, LayoutRight, CudaSpace>;

/// Elements of the vectors: large enough that the other instance's passes are still running
/// when the later work is queued.
const N: usize = 1 << 20;
/// The `z += x` launches the vertex queues on the other instance: `z` ends up `PASSES`.
const PASSES: usize = 8;
/// Each test repeats its round, so that a missing wait shows whatever the timing of one.
const ROUNDS: usize = 3;

/// A DAG context over two streams of device 0 and another instance of device 0, or `None`
/// after saying why the test is skipped.
fn context_and_other() -> Option<(Context<CudaDevice>, Cuda)> {
    let device = match CudaDevice::new(0, 2) {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: no device for a DAG on CUDA streams ({e})");
            return None;
        }
    };
    let other = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: no device for another instance ({e})");
            return None;
        }
    };
    let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
    Some((ctx, other))
}

/// A device view of `N` elements, each `value`.
fn filled(label: &str, value: f64) -> DeviceVector {
    let v = DeviceVector::new(label, [N]).expect("device memory");
    v.copy_from_slice(&vec![value; N]).expect("upload");
    v
}

/// Queues `z += x` `PASSES` times on `on`: long-running writes of `z`.
fn add_passes(on: &Cuda, z: &DeviceVector, x: &DeviceVector) -> hoplite_core::Result<()> {
    for _ in 0..PASSES {
        parallel_for(
            "z += x on another instance",
            (RangePolicy::new(on.clone(), 0..N), (z.write(), x.read())),
            axpy::with(1.0),
        )?;
    }
    Ok(())
}

/// `out = z` on `on`.
fn copy_on(on: &Cuda, out: &DeviceVector, z: &DeviceVector) -> hoplite_core::Result<()> {
    parallel_for(
        "out = z",
        (RangePolicy::new(on.clone(), 0..N), (out.write(), z.read())),
        scale::with(1.0),
    )
}

/// Asserts every element of `v` is `PASSES`, naming how many are not (a read that raced with
/// the passes sees fewer).
fn assert_all_passes(v: &DeviceVector, what: &str, round: usize) {
    let values = v.to_vec().expect("download");
    let wrong = values.iter().filter(|&&e| e != PASSES as f64).count();
    assert_eq!(
        wrong,
        0,
        "round {round}: {wrong} of {N} elements of {what} are not {PASSES} (first {:?})",
        values.first()
    );
}

/// Queues the vertex that writes `z` on `other` (the DAG knows only its `marker` handle):
/// `x` moves into its work, so it lives only as long as the other instance keeps it.
fn queue_writer_vertex(
    ctx: &Context<CudaDevice>,
    other: &Cuda,
    z: &DeviceVector,
    marker: &DeviceVector,
) -> Vertex {
    let (other, z, x) = (other.clone(), z.clone(), filled("x", 1.0));
    ctx.task_on(
        "writes z on another instance",
        (marker.read(),),
        move |_: &Cuda, _| add_passes(&other, &z, &x),
    )
    .expect("accepted")
}

/// An eager launch on a third instance, after the vertex, reads what the vertex's launches on
/// the other instance wrote: it waits for them first.
#[test]
fn an_eager_launch_waits_for_a_vertexs_launches_on_another_instance() {
    let Some((ctx, other)) = context_and_other() else {
        return;
    };
    let reader = Cuda::new().expect("a third instance");
    let marker = filled("marker", 0.0);
    for round in 0..ROUNDS {
        let (z, out) = (filled("z", 0.0), filled("out", -1.0));
        let _ = queue_writer_vertex(&ctx, &other, &z, &marker);
        // The vertex's own stream is done; the other instance may still run its passes.
        ctx.synchronize().expect("the vertex runs");
        copy_on(&reader, &out, &z).expect("launch on a third instance");
        assert_all_passes(&out, "out = z", round);
        // The host's copy waits for every stream of the device.
        assert_all_passes(&z, "z", round);
    }
    other.fence().expect("fence the other instance");
    reader.fence().expect("fence the reader");
}

/// A vertex that reads `z`, queued once the writer has finished (its borrow of `z` ended, and
/// its event, which covers its own stream only, completed), waits for the writer's launches on
/// the other instance.
#[test]
fn a_later_vertex_waits_for_a_vertexs_launches_on_another_instance() {
    let Some((ctx, other)) = context_and_other() else {
        return;
    };
    let marker = filled("marker", 0.0);
    for round in 0..ROUNDS {
        let (z, out) = (filled("z", 0.0), filled("out", -1.0));
        queue_writer_vertex(&ctx, &other, &z, &marker)
            .wait()
            .expect("the writer runs");
        ctx.launch("out = z", (N, (out.write(), z.read())), scale::with(1.0))
            .expect("accepted");
        ctx.synchronize().expect("both vertices run");
        assert_all_passes(&out, "out = z", round);
    }
    other.fence().expect("fence the other instance");
}

/// In one vertex, a launch on the vertex's own instance reads what its launches on the other
/// instance wrote: it waits for them first.
#[test]
fn a_vertexs_own_launch_waits_for_its_launches_on_another_instance() {
    let Some((ctx, other)) = context_and_other() else {
        return;
    };
    let marker = filled("marker", 0.0);
    for round in 0..ROUNDS {
        let (z, out) = (filled("z", 0.0), filled("out", -1.0));
        let (writer, x, z_in, out_in) = (other.clone(), filled("x", 1.0), z.clone(), out.clone());
        ctx.task_on(
            "writes z elsewhere, reads it here",
            (marker.read(),),
            move |cuda: &Cuda, _| {
                add_passes(&writer, &z_in, &x)?;
                copy_on(cuda, &out_in, &z_in)
            },
        )
        .expect("accepted");
        ctx.synchronize().expect("the vertex runs");
        assert_all_passes(&out, "out = z", round);
    }
    other.fence().expect("fence the other instance");
}
