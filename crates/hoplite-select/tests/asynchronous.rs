//! Asynchronous submission: each resource's queue runs its functions in order on a thread of
//! its own, beside the other resources' queues.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hoplite_core::{Error, RangePolicy, View, parallel_for};
use hoplite_rayon::RayonSpace;
use hoplite_select::{
    DefaultBackend, DynamicLoad, FixedResource, RoundRobin, SelectError, submit_async, try_submit_async, wait,
};
use hoplite_serial::Serial;

/// Waits (bounded) for `flag`; returns whether it was set in time, so a test that would
/// otherwise hang fails instead.
fn wait_for(flag: &AtomicBool) -> bool {
    let start = Instant::now();
    while !flag.load(Ordering::Acquire) {
        if start.elapsed() > Duration::from_secs(20) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Functions on two resources run at the same time: each waits until the other has started,
/// which only finishes if they overlap.
#[test]
fn functions_on_different_resources_run_at_the_same_time() {
    let policy = RoundRobin::new(vec![Serial::new(), Serial::new()]);
    let (a_started, b_started) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let (a_mark, a_sees_b) = (a_started.clone(), b_started.clone());
    let (b_mark, b_sees_a) = (b_started, a_started);
    let a = submit_async(
        &policy,
        move |_, ()| {
            a_mark.store(true, Ordering::Release);
            wait_for(&a_sees_b)
        },
        (),
    )
    .expect("queued");
    let b = submit_async(
        &policy,
        move |_, ()| {
            b_mark.store(true, Ordering::Release);
            wait_for(&b_sees_a)
        },
        (),
    )
    .expect("queued");
    assert_eq!((a.index(), b.index()), (0, 1));
    assert!(
        a.unwrap().expect("a ran") && b.unwrap().expect("b ran"),
        "they overlapped"
    );
}

/// One resource's functions run in submission order, on one thread, not the caller's.
#[test]
fn one_resources_functions_run_in_order_off_the_calling_thread() {
    let policy = FixedResource::new(vec![Serial::new(), Serial::new()]);
    let order = Arc::new(Mutex::new(Vec::new()));
    let caller = std::thread::current().id();
    let submissions: Vec<_> = (0..5u64)
        .map(|k| {
            let order = order.clone();
            submit_async(
                &policy,
                move |_, ()| {
                    std::thread::sleep(Duration::from_millis(5 - k));
                    order.lock().expect("order").push(k);
                    std::thread::current().id()
                },
                (),
            )
            .expect("queued")
        })
        .collect();
    let threads: Vec<_> = submissions
        .into_iter()
        .map(|s| s.unwrap().expect("ran"))
        .collect();
    assert_eq!(*order.lock().expect("order"), [0, 1, 2, 3, 4]);
    assert!(threads.iter().all(|t| *t == threads[0] && *t != caller));
}

/// A panicking function is its submission's typed error; the queue runs the next one.
#[test]
fn a_panic_is_the_submissions_error_and_the_queue_goes_on() {
    let policy = FixedResource::new(vec![Serial::new()]);
    let boom = submit_async(&policy, |_, ()| -> u32 { panic!("queued boom") }, ()).expect("queued");
    let next = submit_async(&policy, |_, x: u32| x + 1, 41).expect("queued");
    match boom.unwrap() {
        Err(SelectError::Resource(Error::KernelPanicked { message, .. })) => {
            assert!(message.contains("queued boom"), "{message}")
        }
        other => panic!("expected the panic as an error, got {other:?}"),
    }
    assert_eq!(next.unwrap().expect("ran"), 42);
}

/// A load-counting policy counts a queued function as unfinished until it is waited on, so
/// `try_submit_async` finds no resource while the limit is reached.
#[test]
fn dynamic_load_counts_queued_functions_until_they_are_waited_on() {
    let policy = DynamicLoad::<char, DefaultBackend<char>>::with_resources(vec!['a']).with_limit(1);
    let first = try_submit_async(&policy, |c, ()| *c, ())
        .expect("no error")
        .expect("resource 0 is idle");
    assert!(
        try_submit_async(&policy, |c, ()| *c, ())
            .expect("no error")
            .is_none()
    );
    first.wait().expect("ran");
    let second = try_submit_async(&policy, |c, ()| *c, ())
        .expect("no error")
        .expect("free again");
    assert_eq!(second.unwrap().expect("ran"), 'a');
}

/// The submission group waits for every queued function (and fences the resources); the
/// launches the functions make on their partitions compute what they should.
#[test]
fn the_submission_group_waits_for_queued_launches_on_partitions() {
    let halves = RayonSpace::with_threads(2)
        .expect("a pool")
        .partition_space(2)
        .expect("two partitions");
    let policy = RoundRobin::new(halves);
    let views: Vec<View<u64, 1>> = (0..6)
        .map(|k| View::new(&format!("v{k}"), [1000]).expect("view"))
        .collect();
    let ran = Arc::new(AtomicUsize::new(0));
    for (k, v) in views.iter().enumerate() {
        let (v, ran) = (v.clone(), ran.clone());
        let submission = submit_async(
            &policy,
            move |half, ()| {
                let r = parallel_for(
                    "fill",
                    (RangePolicy::new(half.clone(), 0..1000), (v.write(),)),
                    move |(i, (v,))| v.set(i, (k * 1000 + *i) as u64),
                );
                ran.fetch_add(1, Ordering::Relaxed);
                r
            },
            (),
        )
        .expect("queued");
        drop(submission);
    }
    wait(&policy.get_submission_group().expect("a group")).expect("waited");
    assert_eq!(ran.load(Ordering::Relaxed), 6);
    for (k, v) in views.iter().enumerate() {
        let got = v.to_vec().expect("read");
        assert!(
            got.iter().enumerate().all(|(i, x)| *x == (k * 1000 + i) as u64),
            "view {k}"
        );
    }
}

/// A policy dropped with functions still queued runs them first.
#[test]
fn dropping_the_policy_runs_what_was_queued() {
    let ran = Arc::new(AtomicUsize::new(0));
    {
        let policy = RoundRobin::new(vec![Serial::new(), Serial::new()]);
        for _ in 0..4 {
            let ran = ran.clone();
            let submission = submit_async(
                &policy,
                move |_, ()| {
                    std::thread::sleep(Duration::from_millis(2));
                    ran.fetch_add(1, Ordering::Relaxed);
                },
                (),
            )
            .expect("queued");
            drop(submission);
        }
    }
    assert_eq!(ran.load(Ordering::Relaxed), 4);
}
