//! Behaviour of the policies, the backends and the free functions; every test asserts values.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use hoplite_select::{
    AutoTune, Backend, BackendFor, DefaultBackend, DynamicLoad, FixedResource, FromResources, InfoSet,
    KeyedAutoTune, Logic, Policy, Report, RoundRobin, SelectError, Selection, SpaceBackend, Wait, WaitAll,
    get_resources, get_submission_group, select, submit, submit_and_wait, try_submit, wait, wait_each,
};
use hoplite_serial::Serial;

fn serials(n: usize) -> Vec<Serial> {
    (0..n).map(|_| Serial::new()).collect()
}

fn picks<L, B>(p: &Policy<L, Serial, B>, n: usize) -> Vec<usize>
where
    L: hoplite_select::KeyFor<fn(&Serial, ()), ()>,
    B: Backend<Resource = Serial>,
{
    let f: fn(&Serial, ()) = |_, ()| {};
    (0..n)
        .map(|_| submit(p, f, ()).expect("submit").index())
        .collect()
}

#[test]
fn round_robin_picks_in_order_cyclically() {
    let p = RoundRobin::new(serials(4));
    assert_eq!(picks(&p, 10), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
    // The submitted function runs on the selected resource.
    let ids: Vec<u64> = p
        .resources()
        .expect("ready")
        .iter()
        .map(Serial::instance_id)
        .collect();
    let got = submit(&p, |s, ()| s.instance_id(), ()).expect("submit");
    assert_eq!((got.index(), got.unwrap()), (2, ids[2]));
}

#[test]
fn round_robin_is_balanced_and_counter_consistent_across_threads() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 250;
    let p = RoundRobin::new(serials(4));
    let sequences: Vec<Vec<usize>> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS).map(|_| s.spawn(|| picks(&p, PER_THREAD))).collect();
        handles.into_iter().map(|h| h.join().expect("no panic")).collect()
    });
    let mut counts = [0usize; 4];
    for seq in &sequences {
        for &i in seq {
            counts[i] += 1;
        }
        // Each thread saw increasing values of one shared counter: the smallest counter values
        // that explain its picks stay below the total number of picks.
        let mut counter = seq[0];
        for &i in &seq[1..] {
            counter += (i + 4 - counter % 4 - 1) % 4 + 1;
        }
        assert!(counter < THREADS * PER_THREAD, "sequence needs counter {counter}");
    }
    assert_eq!(counts, [THREADS * PER_THREAD / 4; 4]);
    // The shared counter went up once per pick: the next pick continues the cycle.
    assert_eq!(picks(&p, 1), [0]);
}

#[test]
fn fixed_resource_always_picks_its_offset() {
    let p = FixedResource::new(serials(4)).with_offset(2);
    assert_eq!(picks(&p, 5), [2; 5]);
    assert_eq!(picks(&FixedResource::new(serials(3)), 2), [0, 0]);
    let out = FixedResource::new(serials(2)).with_offset(5);
    let err = submit(&out, |_, ()| (), ()).expect_err("offset past the resources");
    assert_eq!(
        err,
        SelectError::OffsetOutOfRange {
            offset: 5,
            resources: 2
        }
    );
    assert!(err.to_string().contains("only 2 resources"), "{err}");
}

/// A blocking-task resource: a group of threads; `spawn` runs a task on a new thread, `wait`
/// joins every task spawned so far (like a TBB task group).
#[derive(Default)]
struct Worker {
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Worker {
    fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        let handle = thread::spawn(task);
        self.tasks.lock().expect("not poisoned").push(handle);
    }
}

impl Wait for Worker {
    fn wait(&self) -> Result<(), SelectError> {
        let tasks: Vec<_> = self.tasks.lock().expect("not poisoned").drain(..).collect();
        for t in tasks {
            t.join()
                .map_err(|_| SelectError::Wait("a task panicked".into()))?;
        }
        Ok(())
    }
}

/// The backend of [`Worker`]s: reports submissions (and so completions, when a submission is
/// waited on or dropped); a submission waits by joining its worker's tasks.
struct WorkerBackend {
    workers: Vec<Worker>,
}

impl Backend for WorkerBackend {
    type Resource = Worker;
    type Scratch<I: InfoSet> = ();

    fn resources(&self) -> &[Worker] {
        &self.workers
    }

    fn instrument_before<L: Logic>(&self, selection: &mut Selection<'_, L, Self>) {
        selection.report(Report::TaskSubmission);
    }

    fn wait_submission<W>(&self, worker: &Worker, _: &W) -> Result<(), SelectError> {
        worker.wait()
    }
}

impl FromResources for WorkerBackend {
    fn from_resources(workers: Vec<Worker>) -> Self {
        WorkerBackend { workers }
    }
}

impl WaitAll for WorkerBackend {
    fn wait_all(&self) -> Result<(), SelectError> {
        wait_each(&self.workers)
    }
}

impl BackendFor for Worker {
    type Backend = WorkerBackend;
}

fn workers(n: usize) -> Vec<Worker> {
    (0..n).map(|_| Worker::default()).collect()
}

#[test]
fn dynamic_load_picks_the_resource_with_fewest_unfinished_submissions() {
    let p = DynamicLoad::new(workers(3));
    let gate = Arc::new(Barrier::new(3)); // two held tasks + this thread
    let hold = |w: &Worker, gate: Arc<Barrier>| {
        w.spawn(move || {
            gate.wait();
        })
    };
    let s0 = submit(&p, hold, Arc::clone(&gate)).expect("submit");
    let s1 = submit(&p, hold, Arc::clone(&gate)).expect("submit");
    assert_eq!((s0.index(), s1.index()), (0, 1));
    assert_eq!(p.loads().expect("ready"), [1, 1, 0]);

    // Resource 2 is idle: it takes every quick task that finishes before the next one.
    for _ in 0..3 {
        let quick = submit(&p, |w, ()| w.spawn(|| {}), ()).expect("submit");
        assert_eq!(quick.index(), 2);
        assert_eq!(p.loads().expect("ready"), [1, 1, 1]);
        quick.wait().expect("joined");
    }
    // With a tie the lowest index wins.
    let open = submit(&p, |w, ()| w.spawn(|| {}), ()).expect("submit");
    assert_eq!(open.index(), 2);
    let tie = submit(&p, |_, ()| {}, ()).expect("submit");
    assert_eq!(tie.index(), 0);
    assert_eq!(p.loads().expect("ready"), [2, 1, 1]);
    drop(tie); // dropping a submission ends it for the policy
    open.wait().expect("joined");
    assert_eq!(p.loads().expect("ready"), [1, 1, 0]);

    gate.wait(); // release the two held tasks
    s1.wait().expect("joined");
    assert_eq!(p.loads().expect("ready"), [1, 0, 0]);
    let s2 = submit(&p, |_, ()| {}, ()).expect("submit");
    assert_eq!(s2.index(), 1);
    s2.wait().expect("waited");
    s0.wait().expect("joined");
    s0.wait().expect("waiting twice is fine");
    assert_eq!(p.loads().expect("ready"), [0, 0, 0]);
    wait(&get_submission_group(&p).expect("ready")).expect("group");
}

#[test]
fn dynamic_load_with_a_limit_makes_busy_resources_unavailable() {
    // Workers run their tasks on threads of their own: a submission is busy until waited on.
    let p = DynamicLoad::new(workers(2)).with_limit(1);
    let a = try_submit(&p, |w, ()| w.spawn(|| {}), ())
        .expect("ready")
        .expect("idle resource");
    let b = try_submit(&p, |w, ()| w.spawn(|| {}), ())
        .expect("ready")
        .expect("idle resource");
    assert_eq!((a.index(), b.index()), (0, 1));
    assert!(try_submit(&p, |_, ()| (), ()).expect("ready").is_none());
    // This thread holds both unfinished submissions: a wait limit turns the wait into an error.
    let bounded = DynamicLoad::new(workers(2))
        .with_limit(1)
        .with_wait_limit(Duration::from_millis(20));
    let held: Vec<_> = (0..2)
        .map(|_| submit(&bounded, |w, ()| w.spawn(|| {}), ()).expect("idle resource"))
        .collect();
    let err = submit(&bounded, |_, ()| (), ()).expect_err("all busy");
    let SelectError::NoResourceAvailable {
        policy,
        resources,
        limit,
        waited,
    } = err.clone()
    else {
        panic!("expected NoResourceAvailable, got {err:?}");
    };
    assert_eq!((policy, resources, limit), ("dynamic-load", 2, Some(1)));
    assert!(waited >= Duration::from_millis(20), "waited {waited:?}");
    let message = err.to_string();
    assert!(
        message.contains("each of its 2 resources has 1 unfinished submissions"),
        "{message}"
    );
    held.iter().for_each(|s| s.wait().expect("joined"));
    b.wait().expect("joined");
    let c = try_submit(&p, |w, ()| w.spawn(|| {}), ())
        .expect("ready")
        .expect("resource 1 is free");
    assert_eq!(c.index(), 1);
    c.wait().expect("joined");
    a.wait().expect("joined");
}

#[test]
fn submit_waits_until_another_thread_finishes_a_submission() {
    let p = DynamicLoad::new(workers(1)).with_limit(1);
    let first = submit(&p, |w, ()| w.spawn(|| {}), ()).expect("idle resource");
    let finished = AtomicUsize::new(0);
    thread::scope(|scope| {
        scope.spawn(|| {
            thread::sleep(Duration::from_millis(30));
            finished.store(1, Ordering::SeqCst);
            first.wait().expect("joined");
        });
        // Blocks (oneDPL's `submit`) until the other thread has waited on `first`.
        let second = submit(&p, |w, ()| w.spawn(|| {}), ()).expect("waits, then selects");
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "selected only after the first finished"
        );
        assert_eq!(second.index(), 0);
        second.wait().expect("joined");
    });
    assert_eq!(p.loads().expect("ready"), [0]);
}

#[test]
fn a_custom_policy_without_a_limit_says_it_declined() {
    /// Declines every resource.
    #[derive(Default)]
    struct Never;
    impl Logic for Never {
        const NAME: &'static str = "never";
        type Infos = ();
        type State = ();
        type Ticket = ();
        type Key = ();
        fn new_state(&self, _: usize) {}
        fn try_select(&self, _: &(), _: usize, _: ()) -> Result<Option<(usize, ())>, SelectError> {
            Ok(None)
        }
    }
    impl<F, A> hoplite_select::KeyFor<F, A> for Never {
        fn key(_: &F, _: &A) {}
    }
    let p: Policy<Never, Serial> = Policy::new(serials(3)).with_wait_limit(Duration::from_millis(1));
    let message = submit(&p, |_, ()| (), ()).expect_err("declined").to_string();
    assert!(
        message.contains("the never policy found no available resource")
            && message.contains("declined each of its 3 resources")
            && !message.contains(&usize::MAX.to_string()),
        "{message}"
    );
}

#[test]
fn plain_values_are_resources_whose_group_can_be_waited_on() {
    let p = RoundRobin::from_values(vec![7_i32, 8]);
    let got: Vec<i32> = (0..3)
        .map(|_| submit(&p, |r, x: i32| *r + x, 100).expect("submit").unwrap())
        .collect();
    assert_eq!(got, [107, 108, 107]);
    wait(&get_submission_group(&p).expect("ready")).expect("plain values wait at once");
    let names = DynamicLoad::from_values(vec![String::from("gpu0"), String::from("gpu1")]);
    let held = submit(&names, |r, ()| r.clone(), ()).expect("submit");
    assert_eq!(
        submit(&names, |r, ()| r.clone(), ()).expect("submit").unwrap(),
        "gpu1"
    );
    assert_eq!(held.unwrap(), "gpu0");
    wait(&names.get_submission_group().expect("ready")).expect("group");
}

#[test]
fn auto_tune_with_an_explicit_key_accepts_borrowing_closures() {
    let p = AutoTune::new(serials(2)).with_trial_rounds(1);
    let ids: Vec<u64> = p
        .resources()
        .expect("ready")
        .iter()
        .map(Serial::instance_id)
        .collect();
    let delays = [20_u64, 1];
    let local = [1_u64, 2, 3]; // borrowed, so the closures are not `'static`
    let order: Vec<usize> = (0..4)
        .map(|_| {
            p.submit_with_key(
                ("sum", 3_usize),
                |s: &Serial, ()| {
                    sleep_by_instance(&ids, &delays, s);
                    local.iter().sum::<u64>()
                },
                (),
            )
            .expect("submit")
            .index()
        })
        .collect();
    assert_eq!(order, [0, 1, 1, 1], "one trial round, then the faster resource 1");
    // Another key has a history of its own; a key of another type never matches.
    assert_eq!(
        p.submit_with_key(("sum", 4_usize), |_, ()| (), ())
            .expect("submit")
            .index(),
        0
    );
    assert_eq!(
        p.submit_with_key(3_u32, |_, ()| (), ()).expect("submit").index(),
        0
    );
    assert_eq!(
        p.submit_with_key(3_u64, |_, ()| (), ()).expect("submit").index(),
        0
    );
}

#[test]
fn dynamic_load_counts_synchronous_launches_as_done_when_they_return() {
    // Serial launches are done when the submitted function returns: a submission nobody has
    // waited on yet does not keep its resource busy.
    let p = DynamicLoad::new(serials(2)).with_limit(1);
    let held: Vec<_> = (0..4)
        .map(|k| submit(&p, move |_, ()| k, ()).expect("never busy"))
        .collect();
    assert!(
        held.iter().all(|s| s.index() == 0),
        "the first resource is never busy"
    );
    assert_eq!(p.loads().expect("ready"), [0, 0]);
    let values: Vec<i32> = held.into_iter().map(|s| s.unwrap()).collect();
    assert_eq!(values, [0, 1, 2, 3]);
}

#[test]
fn try_submit_returns_none_without_resources() {
    let p: RoundRobin<char, DefaultBackend<char>> = RoundRobin::default();
    assert_eq!(get_resources(&p).expect("ready"), Vec::<char>::new());
    assert!(try_submit(&p, |c, ()| *c, ()).expect("initialized").is_none());
    let err = submit(&p, |c, ()| *c, ()).expect_err("no resources");
    assert_eq!(
        err,
        SelectError::NoResources {
            policy: "round-robin"
        }
    );
}

#[test]
fn unwrap_gives_back_what_the_function_returned() {
    let p = RoundRobin::new(serials(2));
    let s = submit(&p, |_, (name, n): (&str, usize)| name.repeat(n), ("ab", 3)).expect("submit");
    s.wait().expect("fence");
    assert_eq!(s.value(), "ababab");
    assert_eq!(s.unwrap(), "ababab");
    assert_eq!(
        submit_and_wait(&p, |_, v: Vec<i32>| v.iter().sum::<i32>(), vec![1, 2, 3]),
        Ok(6)
    );
    // Selecting first, then submitting to the selection.
    let f = |s: &Serial, x: u64| s.instance_id() + x;
    let sel = select(&p, &f, &1).expect("select");
    let expected = sel.resource().instance_id() + 1;
    assert_eq!(sel.submit(f, 1).unwrap(), expected);
}

#[test]
fn a_deferred_policy_is_a_typed_error_until_initialized() {
    let p = AutoTune::<Serial>::deferred();
    let not_ready = SelectError::NotInitialized { policy: "auto-tune" };
    assert!(!p.is_initialized());
    assert_eq!(submit(&p, |_, ()| (), ()).err(), Some(not_ready.clone()));
    assert_eq!(try_submit(&p, |_, ()| (), ()).err(), Some(not_ready.clone()));
    assert_eq!(get_resources(&p).err(), Some(not_ready.clone()));
    assert_eq!(get_submission_group(&p).err(), Some(not_ready.clone()));
    assert!(not_ready.to_string().contains("initialize"));
    p.initialize(serials(2)).expect("first initialize");
    assert_eq!(
        p.initialize(serials(2)),
        Err(SelectError::AlreadyInitialized { policy: "auto-tune" })
    );
    assert_eq!(submit_and_wait(&p, |_, x: i32| x * 2, 21), Ok(42));
}

/// Sleeps for the delay of the resource's instance among `ids`.
fn sleep_by_instance(ids: &[u64], delays_ms: &[u64], s: &Serial) {
    let i = ids
        .iter()
        .position(|&id| id == s.instance_id())
        .expect("one of ours");
    thread::sleep(Duration::from_millis(delays_ms[i]));
}

#[test]
fn auto_tune_runs_trial_rounds_in_order_then_keeps_the_fastest() {
    let spaces = serials(3);
    let ids: Vec<u64> = spaces.iter().map(Serial::instance_id).collect();
    let p = AutoTune::new(spaces);
    let work = move |s: &Serial, ()| sleep_by_instance(&ids, &[12, 1, 5], s);
    let order: Vec<usize> = (0..9)
        .map(|_| submit(&p, work.clone(), ()).expect("submit").index())
        .collect();
    assert_eq!(order, [0, 1, 2, 0, 1, 2, 1, 1, 1]);
}

#[test]
fn auto_tune_keeps_a_history_per_key_argument() {
    let spaces = serials(2);
    let ids: Vec<u64> = spaces.iter().map(Serial::instance_id).collect();
    let p: KeyedAutoTune<Serial, usize> = KeyedAutoTune::new(spaces);
    // Key 0 runs fast on resource 1, key 1 on resource 0.
    let work = move |s: &Serial, key: usize| {
        let delays = if key == 0 { [10, 1] } else { [1, 10] };
        sleep_by_instance(&ids, &delays, s)
    };
    let mut order = Vec::new();
    for _ in 0..6 {
        for key in [0, 1] {
            order.push(submit(&p, work.clone(), key).expect("submit").index());
        }
    }
    // Interleaved keys each run their own trial rounds [0, 1, 0, 1], then their own choice.
    assert_eq!(order, [0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0]);
    // Another function type is another key, with fresh trials.
    let other = |_: &Serial, _: usize| ();
    assert_eq!(submit(&p, other, 0).expect("submit").index(), 0);
}

#[test]
fn auto_tune_resamples_after_its_interval() {
    let spaces = serials(2);
    let ids: Vec<u64> = spaces.iter().map(Serial::instance_id).collect();
    let p = AutoTune::new(spaces)
        .with_trial_rounds(1)
        .with_resample_interval(Duration::from_millis(30));
    let slow_first = Arc::new(AtomicUsize::new(1));
    let flag = Arc::clone(&slow_first);
    let work = move |s: &Serial, ()| {
        let delays = if flag.load(Ordering::Relaxed) == 1 {
            [10, 1]
        } else {
            [1, 10]
        };
        sleep_by_instance(&ids, &delays, s)
    };
    let run = |n| -> Vec<usize> {
        (0..n)
            .map(|_| submit(&p, work.clone(), ()).expect("submit").index())
            .collect()
    };
    assert_eq!(run(4), [0, 1, 1, 1]);
    slow_first.store(0, Ordering::Relaxed);
    thread::sleep(Duration::from_millis(40));
    // The choice is 40 ms old: one new trial round, then the new fastest.
    assert_eq!(run(4), [0, 1, 0, 0]);
}

#[test]
fn auto_tune_learns_over_the_default_backend() {
    // The default backend times the submitted function: the tuner learns that 'b' is faster.
    let p: AutoTune<char, DefaultBackend<char>> = AutoTune::with_resources(vec!['a', 'b']);
    let work = |c: &char, ()| {
        if *c == 'a' {
            thread::sleep(Duration::from_millis(5));
        }
        *c
    };
    let got: Vec<char> = (0..6)
        .map(|_| submit(&p, work, ()).expect("submit").unwrap())
        .collect();
    assert_eq!(got, ['a', 'b', 'a', 'b', 'b', 'b']);
}

#[test]
fn submission_group_waits_for_all_blocking_tasks() {
    let p = RoundRobin::new(workers(2));
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..4 {
        let s = submit(
            &p,
            |w, done: Arc<AtomicUsize>| {
                w.spawn(move || {
                    thread::sleep(Duration::from_millis(2));
                    done.fetch_add(1, Ordering::SeqCst);
                })
            },
            Arc::clone(&done),
        )
        .expect("submit");
        s.unwrap();
    }
    wait(&get_submission_group(&p).expect("ready")).expect("group");
    assert_eq!(done.load(Ordering::SeqCst), 4);
}

#[test]
fn round_robin_needs_no_scratch_and_a_space_backend_times_only_for_auto_tune() {
    assert_eq!(size_of::<<SpaceBackend<Serial> as Backend>::Scratch<()>>(), 0);
    assert!(size_of::<<SpaceBackend<Serial> as Backend>::Scratch<(hoplite_select::TaskTime,)>>() > 0);
    // A default-constructed space policy has the default instance.
    let p = RoundRobin::<Serial>::default();
    assert_eq!(p.get_resources(), Ok(vec![Serial::default()]));
}

#[test]
fn a_panicking_function_does_not_leak_unfinished_work() {
    let p = DynamicLoad::new(serials(2));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = submit(&p, |_, ()| -> () { panic!("boom") }, ());
    }));
    assert!(caught.is_err());
    assert_eq!(p.loads().expect("ready"), [0, 0]);
    // Completion is reported once, however a submission ends.
    let s = submit(&p, |_, ()| 5, ()).expect("submit");
    s.wait().expect("fence");
    s.wait().expect("fence again");
    assert_eq!(p.loads().expect("ready"), [0, 0]);
    assert_eq!(s.unwrap(), 5);
    assert_eq!(p.loads().expect("ready"), [0, 0]);
}

#[test]
fn rayon_pool_instances_are_resources_with_reporting() {
    use hoplite_core::{ExecutionSpace, RangePolicy, Sum, parallel_reduce};
    use hoplite_rayon::RayonSpace;
    let pools = RayonSpace::with_threads(2)
        .and_then(|s| s.partition_space(2))
        .expect("pools");
    let sum = |pool: &RayonSpace, n: usize| {
        parallel_reduce(
            "sum",
            RangePolicy::new(pool.clone(), 0..n),
            |i, a| *a += *i,
            Sum::<usize>::new(),
        )
    };
    let tuner: AutoTune<RayonSpace> = AutoTune::new(pools.clone());
    let mut order = Vec::new();
    for n in [10, 100, 1000, 10_000] {
        let s = submit(&tuner, sum, n).expect("submit");
        order.push(s.index());
        assert_eq!(s.unwrap(), Ok(n * (n - 1) / 2));
    }
    assert_eq!(order, [0, 1, 0, 1]);
    let chosen = submit(&tuner, sum, 10).expect("submit").index();
    assert_eq!(submit(&tuner, sum, 10).expect("submit").index(), chosen);

    // Two application threads on a dynamic-load policy: every launch gets a pool and the
    // counts of unfinished work go back to zero.
    let load = DynamicLoad::new(pools);
    let totals: Vec<usize> = thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    (0..20)
                        .map(|_| submit_and_wait(&load, sum, 100).expect("submit").expect("launch"))
                        .sum::<usize>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("no panic")).collect()
    });
    assert_eq!(totals, [20 * 4950, 20 * 4950]);
    assert_eq!(load.loads().expect("ready"), [0, 0]);
    wait(&get_submission_group(&load).expect("ready")).expect("fence");
    assert!(
        load.resources()
            .expect("ready")
            .iter()
            .all(|p| p.concurrency() == 1)
    );
}

/// A backend that defers its reports: the policy flushes it before every selection.
struct LazyBackend {
    resources: Vec<char>,
    flushes: AtomicUsize,
}

impl Backend for LazyBackend {
    type Resource = char;
    type Scratch<I: InfoSet> = ();
    const LAZY_REPORT: bool = true;

    fn resources(&self) -> &[char] {
        &self.resources
    }

    fn lazy_report(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_lazy_reporting_backend_is_flushed_before_each_selection() {
    let backend = LazyBackend {
        resources: vec!['a', 'b'],
        flushes: AtomicUsize::new(0),
    };
    let p = RoundRobin::with_backend(backend);
    let got: Vec<char> = (0..3)
        .map(|_| submit(&p, |c, ()| *c, ()).expect("submit").unwrap())
        .collect();
    assert_eq!(got, ['a', 'b', 'a']);
    assert_eq!(p.backend().expect("ready").flushes.load(Ordering::Relaxed), 3);
}

/// A logic may customize `submit`, `try_submit` and `submit_and_wait` one by one (oneDPL
/// lets a policy define each): the free functions and the policy's methods go through them,
/// and the customizations can fall back to the generic path.
#[test]
fn a_logic_customizes_each_submit_function_on_its_own() {
    /// Round robin over the resources, with a budget: `try_submit` finds nothing once it is
    /// spent, `submit` spends it, `submit_and_wait` runs the function on resource 1 directly.
    #[derive(Default)]
    struct Budget {
        left: AtomicUsize,
        waited: AtomicUsize,
    }
    impl Logic for Budget {
        const NAME: &'static str = "budget";
        type Infos = ();
        type State = AtomicUsize;
        type Ticket = ();
        type Key = ();
        fn new_state(&self, _resources: usize) -> AtomicUsize {
            AtomicUsize::new(0)
        }
        fn try_select(
            &self,
            next: &AtomicUsize,
            resources: usize,
            _: (),
        ) -> Result<Option<(usize, ())>, SelectError> {
            Ok(Some((next.fetch_add(1, Ordering::Relaxed) % resources, ())))
        }
        fn submit<'p, R, B, F, A, W>(
            policy: &'p Policy<Self, R, B>,
            f: F,
            args: A,
        ) -> Result<hoplite_select::Submission<'p, Self, B, W>, SelectError>
        where
            B: Backend<Resource = R>,
            F: FnOnce(&R, A) -> W,
        {
            policy.logic().left.fetch_sub(1, Ordering::Relaxed);
            policy.default_submit(f, args)
        }
        fn try_submit<'p, R, B, F, A, W>(
            policy: &'p Policy<Self, R, B>,
            f: F,
            args: A,
        ) -> Result<Option<hoplite_select::Submission<'p, Self, B, W>>, SelectError>
        where
            B: Backend<Resource = R>,
            F: FnOnce(&R, A) -> W,
        {
            if policy.logic().left.load(Ordering::Relaxed) == 0 {
                return Ok(None);
            }
            policy.default_try_submit(f, args)
        }
        fn submit_and_wait<R, B, F, A, W>(
            policy: &Policy<Self, R, B>,
            f: F,
            args: A,
        ) -> Result<W, SelectError>
        where
            B: Backend<Resource = R>,
            F: FnOnce(&R, A) -> W,
        {
            policy.logic().waited.fetch_add(1, Ordering::Relaxed);
            let resources = policy.resources()?;
            Ok(f(&resources[1], args))
        }
    }
    impl<F, A> hoplite_select::KeyFor<F, A> for Budget {
        fn key(_: &F, _: &A) {}
    }
    let logic = Budget {
        left: AtomicUsize::new(2),
        waited: AtomicUsize::new(0),
    };
    let spaces = serials(3);
    let ids: Vec<_> = spaces.iter().map(Serial::instance_id).collect();
    let policy: Policy<Budget, Serial> = Policy::with_logic(logic, SpaceBackend::from_resources(spaces));
    assert_eq!(
        submit(&policy, |s, ()| s.instance_id(), ())
            .expect("submit")
            .unwrap(),
        ids[0]
    );
    assert_eq!(
        try_submit(&policy, |s, ()| s.instance_id(), ())
            .expect("no error")
            .expect("budget left")
            .unwrap(),
        ids[1]
    );
    assert_eq!(
        policy
            .submit(|s, ()| s.instance_id(), ())
            .expect("submit")
            .unwrap(),
        ids[2]
    );
    assert!(
        try_submit(&policy, |_, ()| (), ()).expect("no error").is_none(),
        "budget spent"
    );
    assert_eq!(
        submit_and_wait(&policy, |s, ()| s.instance_id(), ()).expect("ran"),
        ids[1]
    );
    assert_eq!(policy.logic().waited.load(Ordering::Relaxed), 1);
}
