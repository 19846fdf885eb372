//! A wait on a context from inside one of its own vertices waits for itself (or for a vertex
//! queued behind it) and would never return: it is refused with `DagError::WaitInsideVertex`,
//! on serial and rayon devices, and the context stays usable.

use std::sync::{Arc, Mutex};

use hoplite_core::{ExecutionSpace, RangePolicy, View};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions, DagError, Execution};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

fn context<S: ExecutionSpace>(space: S) -> Arc<Context<HostDevice<S>>> {
    let device = HostDevice::new("host", vec![space; 2]).expect("device");
    Arc::new(
        Context::new(
            vec![device],
            ContextOptions::default().execution(Execution::Async),
        )
        .expect("context"),
    )
}

/// What a wait inside a vertex returned, kept for the test to look at.
type Seen = Arc<Mutex<Vec<String>>>;

fn refused(seen: &Seen, result: Result<(), DagError>) {
    let text = match result {
        Err(e @ DagError::WaitInsideVertex { .. }) => e.to_string(),
        other => format!("not refused: {other:?}"),
    };
    seen.lock().expect("not poisoned").push(text);
}

fn check_on<S: ExecutionSpace + hoplite_core::ParallelFor<RangePolicy<S>>>(space: S) {
    let ctx = context(space.clone());
    let y: View<i64, 1> = View::new("y", [8]).expect("view");
    let seen: Seen = Arc::default();

    // A task that synchronizes its own context.
    let (inner, log) = (ctx.clone(), seen.clone());
    let task = ctx
        .task("synchronizes", (), move |()| {
            refused(&log, inner.synchronize());
            Ok(())
        })
        .expect("submitted");
    task.wait().expect("the task ran and returned");

    // A kernel that reads a view a vertex queued behind it writes.
    let (inner, log, y_in) = (ctx.clone(), seen.clone(), y.clone());
    let first = ctx
        .launch(
            "reads from inside",
            RangePolicy::new(space.clone(), 0..1),
            move |_i| {
                refused(&log, inner.read(&y_in).map(drop));
            },
        )
        .expect("submitted");
    ctx.launch(
        "writes y",
        (RangePolicy::new(space.clone(), 0..8), (y.write(),)),
        |(i, (y,))| y.set(i, 7),
    )
    .expect("submitted");
    // A task that waits for a vertex of its own context.
    let (log, vertex) = (seen.clone(), first.clone());
    ctx.task("waits for a vertex", (), move |()| {
        refused(&log, vertex.wait());
        Ok(())
    })
    .expect("submitted");

    ctx.synchronize()
        .expect("every vertex ran: none waited for itself");
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen[0].contains("`Context::synchronize`") && seen[0].contains("`synchronizes`"),
        "{seen:?}"
    );
    assert!(seen[1].contains("`Context::read`"), "{seen:?}");
    assert!(
        seen[2].contains("`Vertex::wait`") && seen[2].contains("`waits for a vertex`"),
        "{seen:?}"
    );
    // From the host, the same waits work.
    assert_eq!(ctx.read(&y).expect("the host reads").get([3]), 7);
    first.wait().expect("the host waits for a vertex");
}

#[test]
fn waits_inside_vertices_are_refused_on_serial() {
    check_on(Serial::default());
}

#[test]
fn waits_inside_vertices_are_refused_on_rayon() {
    check_on(RayonSpace::with_threads(2).expect("a pool"));
}
