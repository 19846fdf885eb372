//! Work on two `Cuda` instances that touches the same views, correct whether launches wait
//! (the default) or return once queued (`HOPLITE_CUDA_LAUNCHES=async`, which the GPU bundle
//! runs this binary with too): launches, fills, copies, mirror copies, reductions and
//! managed-memory launches on one instance wait for the conflicting work queued on the other
//! (`src/pending.rs`), events order them by hand, and dropped views and instances live as
//! long as their queued work. Without a device each test says it is skipped.

use hoplite::prelude::*;
use hoplite_core::{LayoutRight, View};
use hoplite_cuda::{
    CONFLICT_FENCE, Cuda, CudaHostPinnedSpace, CudaSpace, CudaUVMSpace, create_mirror_view,
    create_mirror_view_in,
};

mod support;
use support::{axpy, dot};

/// Launches on two instances that touch the same view, and a view dropped right after its
/// launch: correct whether launches wait (the default) or return once queued
/// (`HOPLITE_CUDA_LAUNCHES=async`, which the GPU bundle runs this binary with too): the
/// second instance waits for the first's queued writes, the dropped view lives until its
/// launch has run, and the host's reads see every queued launch's stores.
#[test]
fn launches_on_two_instances_order_their_conflicts_and_keep_dropped_views_alive() {
    let n = 1 << 20;
    let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    add_twice_ten_times(&a, &y, &x);
    // Reads what `a`'s queued launches write: waits for them first.
    add(&b, "z += y", &z, &y);
    {
        let dropped = filled("dropped", n, 3.0);
        parallel_for(
            "z += dropped",
            (RangePolicy::new(b.clone(), 0..n), (z.write(), dropped.read())),
            axpy::with(1.0),
        )
        .expect("launch on b");
    }
    assert_eq!(z.to_vec().expect("z"), vec![23.0; n]);
    assert_eq!(y.to_vec().expect("y"), vec![20.0; n]);
    a.fence().expect("fence a");
    b.fence().expect("fence b");
}

/// Streams ordered by hand: an event recorded on one instance after its launches, waited for
/// by another, orders the second instance's launches after them on the device (where the
/// asynchronous launches would otherwise fence the first instance from the host); the host
/// waits for the event, and an event recorded on an idle instance is complete at once.
#[test]
fn an_event_waited_for_on_another_instance_orders_its_launches() {
    let n = 1 << 20;
    let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    for round in 1..=3 {
        add_twice_ten_times(&a, &y, &x);
        let written = a.record_event().expect("an event");
        b.wait_event(&written).expect("b waits");
        add(&b, "z += y", &z, &y);
        let read = b.record_event().expect("an event");
        read.synchronize().expect("the host waits");
        assert!(read.is_complete() && written.is_complete());
        // y after `round` rounds is 20 * round; z sums y after each.
        let want: f64 = (1..=round).map(|r| 20.0 * f64::from(r)).sum();
        assert_eq!(z.to_vec().expect("z"), vec![want; n], "round {round}");
    }
    let idle = a.record_event().expect("an event");
    idle.synchronize().expect("the host waits");
    assert!(idle.is_complete());
    a.fence().expect("fence a");
    b.fence().expect("fence b");
}

/// The table's waits show in a trace as fences of the instance waited for
/// ([`CONFLICT_FENCE`], on that instance's row), and an event spares them: a launch on `b`
/// after fills queued on `a` fences `a` once; after `b.wait_event` on an event recorded on `a`
/// behind the same fills, it does not fence `a` and still reads what they wrote. Fills queue in
/// either launch mode; the conflicting work is not a kernel launch because the built-in trace,
/// like Kokkos' timing connectors, fences every kernel's instance around its callbacks, which
/// leaves no launch queued to conflict.
#[test]
fn an_event_spares_the_fence_a_conflict_costs_and_the_trace_shows_it() {
    let n = 1 << 20;
    let Some((a, b, [_x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    if let Err(e) = hoplite_core::profiling::start_trace() {
        println!("skipped: the built-in trace cannot start ({e})");
        return;
    }
    let path = std::env::temp_dir().join(format!("hoplite-conflict-fences-{}.json", std::process::id()));
    let on_a = format!(
        r#""name":"{CONFLICT_FENCE}","cat":"fence","pid":1,"tid":{},"#,
        a.profiling_device_id().raw()
    );
    let fences_of_a = || {
        hoplite_core::profiling::write_trace(&path).expect("the trace is written");
        let trace = std::fs::read_to_string(&path).expect("the trace is read");
        trace.matches(on_a.as_str()).count()
    };
    let fill_ten_times = |value: f64| {
        for _ in 0..10 {
            a.fill(&y, value).expect("a fill");
        }
    };
    let before = fences_of_a();
    fill_ten_times(20.0);
    add(&b, "z += y", &z, &y);
    let after_conflict = fences_of_a();
    assert_eq!(
        after_conflict - before,
        1,
        "fences of a for b's launch after a's queued fills"
    );
    fill_ten_times(40.0);
    let written = a.record_event().expect("an event");
    b.wait_event(&written).expect("b waits");
    add(&b, "z += y", &z, &y);
    assert_eq!(
        fences_of_a(),
        after_conflict,
        "b's launch after the event fenced a"
    );
    // y is 20, then 40; z sums both.
    assert_eq!(z.to_vec().expect("z"), vec![60.0; n]);
    a.fence().expect("fence a");
    b.fence().expect("fence b");
    std::fs::remove_file(&path).ok();
}

/// Stream work of every kind on one instance after conflicting work queued on another, in
/// either launch mode: a fill after queued reads of what it writes, a launch after a queued
/// fill, a copy, mirror copies into pageable and page-locked memory, an upload from
/// page-locked memory, a reduction and a launch with managed memory each see the other
/// instance's work done first, and their own work is waited for by the next conflicting
/// launch elsewhere (the values would mix otherwise: each step changes every element).
#[test]
fn stream_work_of_every_kind_waits_for_conflicting_work_of_another_instance() {
    let n = 1 << 20;
    let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
        return;
    };
    // y = 20 on `a`, read there into z; `b`'s fill of y waits for the read, and `a`'s next
    // read of y for the fill.
    add_twice_ten_times(&a, &y, &x);
    add(&a, "z += y", &z, &y);
    b.fill(&y, 5.0).expect("fill on b");
    add(&a, "z += y", &z, &y);
    assert_eq!(z.to_vec().expect("z"), vec![25.0; n], "fill");
    // y = 25 on `a`; `b` copies it into z and into the host.
    add_twice_ten_times(&a, &y, &x);
    b.copy(&z, &y).expect("copy on b");
    let pageable = create_mirror_view(&y).expect("a host mirror");
    b.deep_copy_to_host(&pageable, &y).expect("download on b");
    assert_eq!(
        pageable.to_vec().expect("mirror"),
        vec![25.0; n],
        "pageable download"
    );
    // `a` writes z after `b`'s queued copy wrote it: z = 45; `b` downloads it, page-locked.
    add_twice_ten_times(&a, &z, &x);
    let pinned = create_mirror_view_in(CudaHostPinnedSpace, &z).expect("a pinned mirror");
    b.deep_copy_to_host(&pinned, &z).expect("download on b");
    b.fence().expect("fence b");
    assert_eq!(pinned.to_vec().expect("mirror"), vec![45.0; n], "pinned download");
    // `a` uploads 3 into x from page-locked memory; `b` reads it: y = 28.
    let threes = create_mirror_view_in(CudaHostPinnedSpace, &x).expect("a pinned mirror");
    threes.host_write().expect("the host writes it").fill(3.0);
    a.deep_copy_to_device(&x, &threes).expect("upload on a");
    add(&b, "y += x", &y, &x);
    assert_eq!(y.to_vec().expect("y"), vec![28.0; n], "upload");
    // y = 88 on `a`; `b` reduces x . y.
    add_twice_ten_times(&a, &y, &x);
    let dot = parallel_reduce(
        "x . y",
        (RangePolicy::new(b.clone(), 0..n), (x.read(), y.read())),
        dot::with(),
        Sum::new(),
    )
    .expect("a reduction on b");
    assert_eq!(dot, 3.0 * 88.0 * n as f64, "reduction");
    // y = 148 on `a`; `b` adds it into managed memory.
    add_twice_ten_times(&a, &y, &x);
    let managed = View::<f64, 1, LayoutRight, CudaUVMSpace>::new("managed", [n]).expect("managed memory");
    parallel_for(
        "managed += y",
        (RangePolicy::new(b.clone(), 0..n), (managed.write(), y.read())),
        axpy::with(1.0),
    )
    .expect("launch on b");
    assert_eq!(managed.to_vec().expect("managed"), vec![148.0; n], "managed");
    a.fence().expect("fence a");
    b.fence().expect("fence b");
}

/// An instance dropped on another thread with its launches still queued: a conflicting
/// launch elsewhere waits for them, whether it finds the instance alive (and fences it) or
/// being dropped (and waits until its drop has waited for its stream).
#[test]
fn a_launch_waits_for_the_queued_work_of_an_instance_being_dropped() {
    let n = 1 << 20;
    for round in 0..5 {
        let Some((a, b, [x, y, z])) = two_instances_with_xyz(n) else {
            return;
        };
        add_twice_ten_times(&a, &y, &x);
        let dropper = std::thread::spawn(move || drop(a));
        add(&b, "z += y", &z, &y);
        dropper.join().expect("the drop returns");
        assert_eq!(z.to_vec().expect("z"), vec![20.0; n], "round {round}");
    }
}

/// The queued-work protocol's order (`pending::synchronize`: the table's mark, the kept
/// values taken, the stream's wait, then the values dropped) under contention: one thread
/// queues launches on `a` over fresh views it drops at once, so that only `a` keeps them
/// alive, while another thread synchronizes `a` over and over. A view dropped before the
/// launch that reads it has run would be read after its memory is freed: on the emulated
/// driver with its sanitizer on, a finding at the free; otherwise a wrong sum.
#[test]
fn views_outlive_their_queued_launches_while_another_thread_synchronizes() {
    let n = 1 << 16;
    let Some((a, _b, [_x, _y, out])) = two_instances_with_xyz(n) else {
        return;
    };
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let syncer = {
        let (a, done) = (a.clone(), done.clone());
        std::thread::spawn(move || {
            let mut synchronizations = 0u32;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                a.synchronize().expect("a synchronization");
                synchronizations += 1;
            }
            synchronizations
        })
    };
    let rounds = 40;
    for round in 0..rounds {
        let x = DeviceVector::new("x", [n]).expect("device memory");
        a.fill(&x, f64::from(round)).expect("a fill");
        add(&a, "out += x", &out, &x);
        drop(x);
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let synchronizations = syncer.join().expect("the synchronizing thread");
    assert!(synchronizations > 0);
    a.fence().expect("fence a");
    let want: f64 = (0..rounds).map(f64::from).sum();
    assert_eq!(out.to_vec().expect("out"), vec![want; n]);
}

/// A vector in device memory.
type DeviceVector = View<f64, 1, LayoutRight, CudaSpace>;

/// Two instances of device 0 and device views `x` (all 1), `y` and `z` (all 0) of `n`
/// elements, or `None` after saying why the test is skipped.
fn two_instances_with_xyz(n: usize) -> Option<(Cuda, Cuda, [DeviceVector; 3])> {
    match (Cuda::new(), Cuda::new()) {
        (Ok(a), Ok(b)) => Some((
            a,
            b,
            [filled("x", n, 1.0), filled("y", n, 0.0), filled("z", n, 0.0)],
        )),
        (Err(e), _) | (_, Err(e)) => {
            println!("skipped: needs a CUDA device ({e})");
            None
        }
    }
}

/// A device view of `n` elements, each `value`.
fn filled(label: &str, n: usize, value: f64) -> DeviceVector {
    let v = DeviceVector::new(label, [n]).expect("device memory");
    v.copy_from_slice(&vec![value; n]).expect("upload");
    v
}

/// Launches `to += from` on `on`, named `label`.
fn add(on: &Cuda, label: &str, to: &DeviceVector, from: &DeviceVector) {
    parallel_for(
        label,
        (
            RangePolicy::new(on.clone(), 0..to.extent(0)),
            (to.write(), from.read()),
        ),
        axpy::with(1.0),
    )
    .expect("a launch");
}

/// Queues `y += 2x` ten times on `a` (launches that write `y` for another instance to wait for).
fn add_twice_ten_times(a: &Cuda, y: &DeviceVector, x: &DeviceVector) {
    for _ in 0..10 {
        parallel_for(
            "y += 2x",
            (RangePolicy::new(a.clone(), 0..x.extent(0)), (y.write(), x.read())),
            axpy::with(2.0),
        )
        .expect("launch on a");
    }
}
