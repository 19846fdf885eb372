//! Loom models of the context (`RUSTFLAGS="--cfg loom" cargo test --release -p hoplite-dag
//! --lib loom`): the real `Context` on host devices of `Serial` instances, whose stream
//! threads, locks, statuses and marks are loom's, raced against host waits, launches and
//! drops.
//!
//! Each kernel or task also writes a loom cell that the thread which waited for it reads, so
//! loom reports a wait that returns before the vertex's work happened-before it; a lost
//! wake-up is a loom deadlock; a status, mark or result cell (loom `Arc`s) left unfreed at the
//! end of an execution is a leak loom reports. The views' elements are plain memory loom does
//! not see: their values are checked, the ordering is the cells'.
//!
//! The wait-inside-vertex check reads thread-locals: the context's own are loom's under loom,
//! one per model thread, as they are one per OS thread outside it. The serial backend's
//! kernel depth is std's, which the model threads (run in turn on one OS thread) share; the
//! models' kernels make no loom operation, so no other model thread runs while one is inside
//! a kernel and none sees that depth. What the models leave to other tests: the host
//! stream's spinning and batching (under loom one look and no batching, as time does not
//! pass), rayon-backed and CUDA streams, and the ordering of the std `Arc`s the loom switch
//! leaves out (`sync_prims`).

use hoplite_core::{RangePolicy, Sum, View};
use hoplite_serial::Serial;

use super::{Context, ContextOptions, VertexState};
use crate::DagError;
use crate::device::HostDevice;
use crate::sync_prims::model_support::{Cell, check};
use crate::sync_prims::thread;

type Ctx = Context<HostDevice<Serial>>;

/// A context over `devices` devices of one instance (so one stream) each.
fn context(devices: usize) -> Ctx {
    let devices = (0..devices)
        .map(|d| HostDevice::new(&format!("device {d}"), vec![Serial::default()]).expect("device"))
        .collect();
    Context::new(devices, ContextOptions::default()).expect("context")
}

fn one_point() -> RangePolicy<Serial> {
    RangePolicy::new(Serial::default(), 0..1)
}

fn view(label: &str) -> View<i64, 1> {
    View::new(label, [1]).expect("view")
}

/// The error of the models' failing tasks.
fn deliberate() -> hoplite_core::Error {
    hoplite_core::Error::Device {
        space: "model",
        reason: "deliberate failure".to_owned(),
    }
}

/// A vertex retires while two threads wait for it: another thread in `Vertex::wait`, the
/// host in `Context::read` (which retires it and ends its borrows). Both return, both see
/// it done and what its kernel wrote; its borrow of the view has ended.
#[test]
fn loom_waits_race_the_vertex_retiring() {
    check("loom_waits_race_the_vertex_retiring", Some(3), || {
        let ctx = context(1);
        let x = view("x");
        let cell = Cell::new();
        let written = cell.clone();
        let vertex = ctx
            .launch("fill", (one_point(), (x.write(),)), move |(i, (x,))| {
                x.set(i, 7);
                written.set(7);
            })
            .expect("launch");
        let waiter = {
            let (vertex, cell) = (vertex.clone(), cell.clone());
            thread::spawn(move || {
                let waited = vertex.wait();
                (waited, cell.get(), vertex.state())
            })
        };
        assert_eq!(ctx.read(&x).expect("read").get([0]), 7);
        assert_eq!(cell.get(), 7);
        let (waited, seen, state) = waiter.join().expect("the waiter");
        assert_eq!(waited, Ok(()));
        assert_eq!(seen, 7);
        assert_eq!(state, VertexState::Done);
        assert!(x.host_write().is_ok(), "no borrow left for the finished vertex");
    });
}

/// A task fails while its dependent is launched (so the dependent either finds it retired
/// and poisoned at launch, or waits for it in the stream and reads its status there) and
/// while another thread waits for the dependent. With two devices the dependent runs on the
/// other device's stream, which waits for the failed vertex's mark in its queue. Whatever the
/// interleaving, the dependent does not run and fails with the task's failure, the waiter
/// sees that, a host read of the view returns it, and `synchronize` reports it once.
fn failure_reaches_dependents_and_waiters(name: &str, devices: usize, preemption_bound: usize) {
    check(name, Some(preemption_bound), move || {
        let ctx = context(devices);
        let x = view("x");
        let cell = Cell::new();
        let ran = cell.clone();
        let failing = ctx
            .task_on_device("a", 0, (x.write(),), |_: &Serial, _| Err(deliberate()))
            .expect("launch a");
        let dependent = ctx
            .task_on_device("b", devices - 1, (x.read(),), move |_: &Serial, _| {
                ran.set(1);
                Ok(())
            })
            .expect("launch b");
        let waiter = thread::spawn(move || dependent.wait());
        match failing.wait() {
            Err(DagError::VertexFailed { vertex, .. }) => assert_eq!(vertex, "a"),
            other => panic!("a: {other:?}"),
        }
        match waiter.join().expect("the waiter") {
            Err(DagError::AncestorFailed { vertex, failed, .. }) => {
                assert_eq!((&*vertex, &*failed), ("b", "a"))
            }
            other => panic!("b: {other:?}"),
        }
        assert_eq!(cell.get(), 0, "the dependent did not run");
        let read = ctx.read(&x).map(|_| ());
        assert_eq!(read.err().as_ref().and_then(DagError::failed_vertex), Some("a"));
        match ctx.synchronize() {
            Err(DagError::VertexFailed { vertex, .. }) => assert_eq!(vertex, "a"),
            other => panic!("synchronize: {other:?}"),
        }
        assert_eq!(ctx.synchronize(), Ok(()), "reported once");
    });
}

#[test]
fn loom_a_failure_reaches_a_dependent_on_its_stream() {
    failure_reaches_dependents_and_waiters("loom_a_failure_reaches_a_dependent_on_its_stream", 1, 3);
}

#[test]
fn loom_a_failure_reaches_a_dependent_on_another_stream() {
    // Four threads (the host, the waiter, two streams): three preemptions take minutes.
    failure_reaches_dependents_and_waiters("loom_a_failure_reaches_a_dependent_on_another_stream", 2, 2);
}

/// The context is dropped while its vertices may still be queued, running or retiring, and
/// another thread waits for a reduction's result: the drop runs them first, the result
/// arrives, the vertices end done, the views are free again, and every status, mark and
/// result cell is freed (loom reports a leaked one).
#[test]
fn loom_dropping_the_context_while_vertices_retire() {
    check("loom_dropping_the_context_while_vertices_retire", Some(3), || {
        let ctx = context(1);
        let x = view("x");
        let cell = Cell::new();
        let written = cell.clone();
        let fill = ctx
            .launch("fill", (one_point(), (x.write(),)), move |(i, (x,))| {
                x.set(i, 5);
                written.set(5);
            })
            .expect("fill");
        let sum = ctx
            .reduce(
                "sum",
                (one_point(), (x.read(),)),
                |(i, (x,)), acc| *acc += x.get(i),
                Sum::<i64>::new(),
            )
            .expect("sum");
        let getter = thread::spawn(move || sum.get());
        drop(ctx);
        assert_eq!(cell.get(), 5, "the drop ran the queued vertex");
        assert_eq!(fill.state(), VertexState::Done);
        assert_eq!(fill.wait(), Ok(()));
        assert_eq!(getter.join().expect("the getter"), Ok(5));
        assert_eq!(x.host_write().expect("no borrow left").get([0]), 5);
    });
}

/// Launches in a loop recycle the statuses (and jobs) of retired vertices: a launch resets a
/// status once nobody else holds it, while the stream's thread may just have finished with
/// it. Each vertex is followed only through a `Vertex` dropped at once, and the host then
/// reads what the last one wrote.
#[test]
fn loom_launches_recycle_statuses_the_stream_let_go() {
    check(
        "loom_launches_recycle_statuses_the_stream_let_go",
        Some(3),
        || {
            let ctx = context(1);
            let x = view("x");
            let cell = Cell::new();
            for round in 1..=3 {
                let written = cell.clone();
                ctx.launch("step", (one_point(), (x.write(),)), move |(i, (x,))| {
                    x.set(i, round);
                    written.set(round as u64);
                })
                .expect("launch");
            }
            assert_eq!(ctx.read(&x).expect("read").get([0]), 3);
            assert_eq!(cell.get(), 3);
        },
    );
}
