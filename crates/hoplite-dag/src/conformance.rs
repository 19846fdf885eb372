//! Checks that any [`Stream`]/[`Device`] implementation keeps the traits' axioms, so a device
//! backend (CUDA streams, NUMA node pools) can run the same checks as the host streams.
//!
//! ```
//! use hoplite_dag::conformance;
//! use hoplite_dag::device::HostDevice;
//! use hoplite_serial::Serial;
//! let device = HostDevice::new("cpu", vec![Serial::default()])?;
//! assert_eq!(conformance::run_all(&device), Vec::<String>::new());
//! # Ok::<(), hoplite_dag::DagError>(())
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::device::{Device, Event, Job, OnceJob, Stream};

/// One axiom check: its name and the function that returns what went wrong.
pub type Check<D> = (&'static str, fn(&D) -> Result<(), String>);

/// Every check, in order.
pub fn checks<D: Device>() -> Vec<Check<D>> {
    vec![
        ("stream::runs_work_in_order_once", runs_work_in_order_once::<D>),
        (
            "stream::event_completes_after_earlier_work",
            event_completes_after_earlier_work::<D>,
        ),
        (
            "stream::waits_for_another_streams_event_without_blocking_the_host",
            waits_without_blocking_the_host::<D>,
        ),
        (
            "stream::recorded_work_completes_its_event_after_running",
            recorded_work_completes_its_event_after_running::<D>,
        ),
        (
            "stream::a_recorded_job_runs_once_and_is_let_go_before_its_event",
            recorded_job_runs_once_and_is_let_go::<D>,
        ),
        ("stream::synchronize_and_is_idle", synchronize_and_is_idle::<D>),
        ("stream::survives_panicking_work", survives_panicking_work::<D>),
    ]
}

/// Runs every check on `device`; returns the failures as `"name: what happened"`.
pub fn run_all<D: Device>(device: &D) -> Vec<String> {
    checks::<D>()
        .into_iter()
        .filter_map(|(name, check)| check(device).err().map(|e| format!("{name}: {e}")))
        .collect()
}

fn stream<D: Device>(device: &D) -> Result<D::Stream, String> {
    device.new_stream().map_err(|e| format!("new_stream failed: {e}"))
}

/// Work runs in the order it was enqueued, each item once.
pub fn runs_work_in_order_once<D: Device>(device: &D) -> Result<(), String> {
    let s = stream(device)?;
    let log = Arc::new(Mutex::new(Vec::new()));
    for k in 0..100 {
        let log = log.clone();
        s.enqueue(Box::new(move |_| log.lock().push(k)));
    }
    s.synchronize();
    let got = log.lock().clone();
    if got != (0..100).collect::<Vec<_>>() {
        return Err(format!("ran {got:?}"));
    }
    Ok(())
}

/// An event recorded after some work completes only after that work has run.
pub fn event_completes_after_earlier_work<D: Device>(device: &D) -> Result<(), String> {
    let s = stream(device)?;
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    s.enqueue(Box::new(move |_| {
        std::thread::sleep(Duration::from_millis(20));
        r.store(true, Ordering::Release);
    }));
    let e = s.record_event();
    e.wait();
    if !ran.load(Ordering::Acquire) || !e.is_complete() {
        return Err("the event completed before the work before it".into());
    }
    Ok(())
}

/// The event of [`Stream::enqueue_recorded`] completes only after its work (and the work
/// before it) has run, and another stream can wait for it.
pub fn recorded_work_completes_its_event_after_running<D: Device>(device: &D) -> Result<(), String> {
    let (s, t) = (stream(device)?, stream(device)?);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    s.enqueue(Box::new(move |_| {
        std::thread::sleep(Duration::from_millis(10));
        r.fetch_add(1, Ordering::AcqRel);
    }));
    let r = ran.clone();
    let e = s.enqueue_recorded(Box::new(move |_| {
        std::thread::sleep(Duration::from_millis(10));
        r.fetch_add(1, Ordering::AcqRel);
    }));
    t.wait_event(&e);
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    let sn = seen.clone();
    let r = ran.clone();
    t.enqueue(Box::new(move |_| {
        sn.store(r.load(Ordering::Acquire), Ordering::Release)
    }));
    e.wait();
    if ran.load(Ordering::Acquire) != 2 || !e.is_complete() {
        return Err("the recorded event completed before its work".into());
    }
    t.synchronize();
    match seen.load(Ordering::Acquire) {
        2 => Ok(()),
        n => Err(format!(
            "work waiting for the recorded event saw {n} of 2 items run"
        )),
    }
}

/// A job of [`Stream::enqueue_recorded_job`] runs once, after the work before it, and the
/// stream has dropped its reference by the time the job's event completes, so the caller holds
/// the last one.
pub fn recorded_job_runs_once_and_is_let_go<D: Device>(device: &D) -> Result<(), String> {
    let s = stream(device)?;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    s.enqueue(Box::new(move |_| {
        std::thread::sleep(Duration::from_millis(10));
        r.fetch_add(1, Ordering::AcqRel);
    }));
    let r = ran.clone();
    let job: Arc<dyn Job<<D::Stream as Stream>::Space>> = Arc::new(OnceJob::new(move |_: &_| {
        // The item before it has run.
        r.fetch_add(
            if r.load(Ordering::Acquire) == 1 { 10 } else { 100 },
            Ordering::AcqRel,
        );
    }));
    let e = s.enqueue_recorded_job(job.clone());
    e.wait();
    match ran.load(Ordering::Acquire) {
        11 => {}
        n => return Err(format!("the job ran out of order or more than once (count {n})")),
    }
    if Arc::strong_count(&job) != 1 {
        return Err("the stream still held the job when its event completed".into());
    }
    job.run(s.space());
    if ran.load(Ordering::Acquire) != 11 {
        return Err("a job ran a second time".into());
    }
    Ok(())
}

/// Work after `wait_event(e)` starts only after `e`; the host is not blocked meanwhile.
pub fn waits_without_blocking_the_host<D: Device>(device: &D) -> Result<(), String> {
    let (a, b) = (stream(device)?, stream(device)?);
    let gate = Arc::new(AtomicBool::new(false));
    let order = Arc::new(Mutex::new(Vec::new()));
    {
        let (gate, order) = (gate.clone(), order.clone());
        a.enqueue(Box::new(move |_| {
            // Holds stream `a` until the host opens the gate.
            let start = Instant::now();
            while !gate.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
            }
            order.lock().push("a");
        }));
    }
    let e = a.record_event();
    b.wait_event(&e);
    {
        let order = order.clone();
        b.enqueue(Box::new(move |_| order.lock().push("b")));
    }
    // The host got here while `a` is held: waiting was the stream's, not the host's.
    if e.is_complete() {
        return Err("the event completed while its work was still held".into());
    }
    gate.store(true, Ordering::Release);
    b.synchronize();
    let got = order.lock().clone();
    if got != ["a", "b"] {
        return Err(format!("order {got:?}, expected a then b"));
    }
    Ok(())
}

/// `synchronize` returns once everything before it ran; `is_idle` tells whether work is left.
pub fn synchronize_and_is_idle<D: Device>(device: &D) -> Result<(), String> {
    let s = stream(device)?;
    s.synchronize();
    if !s.is_idle() {
        return Err("a stream with nothing enqueued is not idle".into());
    }
    let count = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(AtomicBool::new(false));
    {
        let (count, gate) = (count.clone(), gate.clone());
        s.enqueue(Box::new(move |_| {
            let start = Instant::now();
            while !gate.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
            }
            count.fetch_add(1, Ordering::AcqRel);
        }));
    }
    if s.is_idle() {
        return Err("a stream with work held is idle".into());
    }
    gate.store(true, Ordering::Release);
    s.synchronize();
    if count.load(Ordering::Acquire) != 1 || !s.is_idle() {
        return Err("synchronize returned before the work ran, or the stream stayed busy".into());
    }
    Ok(())
}

/// A panic in work does not stop the stream: later work and events still run.
pub fn survives_panicking_work<D: Device>(device: &D) -> Result<(), String> {
    let s = stream(device)?;
    s.enqueue(Box::new(|_| panic!("work that panics (expected by the check)")));
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    s.enqueue(Box::new(move |_| r.store(true, Ordering::Release)));
    s.synchronize();
    if !ran.load(Ordering::Acquire) {
        return Err("work after a panic did not run".into());
    }
    Ok(())
}
