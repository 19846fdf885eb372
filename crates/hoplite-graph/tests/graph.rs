//! Explicit graphs on the serial and rayon backends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionSpace, ParallelFor, ParallelReduce, ParallelScan, Prod, RangePolicy, Slice, Sum,
    TeamPolicy, View,
};
use hoplite_graph::{
    Access, GraphError, GraphNodes, NodeId, NodeKernel, NodeKind, NodeRef, ReduceResult, SEQUENCE_MAX,
    WAVE_MIN_WORK, create_graph,
};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

/// What the tests need of a space.
trait Space:
    ExecutionSpace
    + ParallelFor<RangePolicy<Self>>
    + ParallelReduce<RangePolicy<Self>>
    + ParallelScan<RangePolicy<Self>>
{
}

impl<S> Space for S where
    S: ExecutionSpace
        + ParallelFor<RangePolicy<S>>
        + ParallelReduce<RangePolicy<S>>
        + ParallelScan<RangePolicy<S>>
{
}

fn rayon() -> RayonSpace {
    RayonSpace::with_threads(2).expect("a rayon instance")
}

/// Runs a generic test on serial and on a two-thread rayon instance.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod serial {
            $(
                #[test]
                fn $name() {
                    super::$name(hoplite_serial::Serial::default());
                }
            )*
        }
        mod rayon {
            $(
                #[test]
                fn $name() {
                    super::$name(super::rayon());
                }
            )*
        }
    };
}

on_both!(
    dependency_order_chain,
    fan_out_after_when_all,
    when_all_with_redundant_edges,
    diamond,
    several_sinks,
    repeated_submits_give_the_same_result,
    empty_graph,
    empty_reduce_writes_identity,
    unordered_race_is_an_error,
    panicking_node_then_resubmit,
    instantiate_twice_is_an_error,
    conflict_at_submit_then_host_reads,
    scan_node,
    concurrent_wave,
    panic_deep_in_a_long_chain_names_its_node,
    conflict_in_the_middle_of_a_chain,
    long_chain_runs_every_node_in_order,
    host_nodes_with_views_run_in_order,
    host_node_races_are_found_at_instantiation,
    host_node_borrow_refused_at_submit,
    host_node_panic_releases_its_guards,
    lookup_table_between_submits,
);

fn cells() -> (View<usize, 1>, View<usize, 1>) {
    let count = View::new("count", [1]).expect("count");
    let bugs = View::new("bugs", [1]).expect("bugs");
    (count, bugs)
}

fn get(v: &View<usize, 1>) -> usize {
    v.host_read().expect("no conflict").get(0)
}

fn dependency_order_chain<S: Space>(space: S) {
    counting_chain(space, 20);
}

/// A chain of `len` counting nodes: node `k` records a bug unless `k` nodes ran before it.
fn counting_chain<S: Space>(space: S, len: usize) {
    let (count, bugs) = cells();
    let one = RangePolicy::new(space.clone(), 0..1);
    let mut graph = create_graph(&space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for k in 0..len {
            last = last
                .then_parallel_for(
                    &format!("step {k}"),
                    (one.clone(), (count.atomic(), bugs.atomic())),
                    move |(_i, (count, bugs))| {
                        if count.load(0) != k {
                            bugs.fetch_add(0, 1);
                        }
                        count.fetch_add(0, 1);
                    },
                )
                .erase();
        }
    })
    .expect("graph");
    graph.submit().expect("submit");
    space.fence().expect("fence");
    assert_eq!((get(&count), get(&bugs)), (len, 0));
}

fn fan_out_after_when_all<S: Space>(space: S) {
    let (count, bugs) = cells();
    let setup: View<usize, 1> = View::new("setup", [1]).expect("setup");
    let data: View<u64, 1> = View::new("data", [6 * 100]).expect("data");
    let one = RangePolicy::new(space.clone(), 0..1);
    let mut graph = create_graph(&space, |g| {
        let a = g.parallel_for("setup a", (one.clone(), (setup.atomic(),)), |(_i, (s,))| {
            s.fetch_add(0, 1);
        });
        let b = g.parallel_for("setup b", (one.clone(), (setup.atomic(),)), |(_i, (s,))| {
            s.fetch_add(0, 1);
        });
        let ready = g.when_all([a.erase(), b.erase()]);
        let mut fan = Vec::new();
        for k in 0..6 {
            let part: View<u64, 1> = data
                .subview([Slice::Range(k * 100..(k + 1) * 100)])
                .expect("subview");
            let node = ready.then_parallel_for(
                &format!("fan {k}"),
                (
                    RangePolicy::new(space.clone(), 0..100),
                    (part.write(), setup.atomic(), count.atomic(), bugs.atomic()),
                ),
                move |(i, (part, setup, count, bugs))| {
                    if setup.load(0) != 2 {
                        bugs.fetch_add(0, 1);
                    }
                    part.set(i, (k * 100 + *i) as u64);
                    if *i == 0 {
                        count.fetch_add(0, 1);
                    }
                },
            );
            fan.push(node.erase());
        }
        g.when_all(fan).then_parallel_for(
            "check",
            (one.clone(), (count.read(), bugs.atomic())),
            |(_i, (c, bugs))| {
                if c.get(0) != 6 {
                    bugs.fetch_add(0, 1);
                }
            },
        );
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert_eq!((get(&setup), get(&count), get(&bugs)), (2, 6, 0));
    let expected: Vec<u64> = (0..600).collect();
    assert_eq!(data.to_vec().expect("data"), expected);
}

fn when_all_with_redundant_edges<S: Space>(space: S) {
    let runs: Arc<[AtomicUsize; 4]> = Arc::new(Default::default());
    let bugs = Arc::new(AtomicUsize::new(0));
    let one = RangePolicy::new(space.clone(), 0..1);
    let mut graph = create_graph(&space, |g| {
        let r = runs.clone();
        let a = g.parallel_for("a", one.clone(), move |_i| {
            r[0].fetch_add(1, Ordering::SeqCst);
        });
        let r = runs.clone();
        let b = a.then_parallel_for("b", one.clone(), move |_i| {
            r[1].fetch_add(1, Ordering::SeqCst);
        });
        // a is already before b; the root is before everything; repeats on purpose.
        let join = g.when_all([a.erase(), b.erase(), a.erase(), g.root(), b.erase()]);
        let join2 = g.when_all([join.erase(), a.erase(), join.erase()]);
        let (r, bg) = (runs.clone(), bugs.clone());
        join2.then_parallel_for("c", one.clone(), move |_i| {
            if r[0].load(Ordering::SeqCst) != r[1].load(Ordering::SeqCst) {
                bg.fetch_add(1, Ordering::SeqCst);
            }
            r[2].fetch_add(1, Ordering::SeqCst);
        });
        let r = runs.clone();
        g.when_all(Vec::<NodeRef<'_, S>>::new()).then_host("d", move || {
            r[3].fetch_add(1, Ordering::SeqCst);
        });
    })
    .expect("graph");
    graph.submit().expect("submit");
    graph.submit().expect("submit again");
    let counts: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
    assert_eq!(counts, [2, 2, 2, 2]);
    assert_eq!(bugs.load(Ordering::SeqCst), 0);
}

fn diamond<S: Space>(space: S) {
    let n = 64;
    let x: View<f64, 1> = View::new("x", [n]).expect("x");
    let y: View<f64, 1> = View::new("y", [n]).expect("y");
    let z: View<f64, 1> = View::new("z", [n]).expect("z");
    let w: View<f64, 1> = View::new("w", [n]).expect("w");
    let range = RangePolicy::new(space.clone(), 0..n);
    let mut graph = create_graph(&space, |g| {
        let a = g.parallel_for("a", (range.clone(), (x.write(),)), |(i, (x,))| {
            x.set(i, *i as f64)
        });
        let b = a.then_parallel_for("b", (range.clone(), (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, 2.0 * x.get(i))
        });
        let c = a.then_parallel_for("c", (range.clone(), (z.write(), x.read())), |(i, (z, x))| {
            z.set(i, 3.0 * x.get(i))
        });
        g.when_all([b.erase(), c.erase()]).then_parallel_for(
            "d",
            (range.clone(), (w.write(), y.read(), z.read())),
            |(i, (w, y, z))| w.set(i, y.get(i) + z.get(i)),
        );
    })
    .expect("graph");
    graph.submit().expect("submit");
    let expected: Vec<f64> = (0..n).map(|i| 5.0 * i as f64).collect();
    assert_eq!(w.to_vec().expect("w"), expected);
}

/// A lookup table read by a node wider than the table; the host rewrites the table between
/// submits (the node borrows it only while it runs).
fn lookup_table_between_submits<S: Space>(space: S) {
    let coef: View<f64, 1> = View::from_slice("coef", [2], &[1.0, 2.0]).expect("coef");
    let y: View<f64, 1> = View::new("y", [16]).expect("y");
    let range = RangePolicy::new(space.clone(), 0..16);
    let mut graph = create_graph(&space, |g| {
        g.parallel_for(
            "affine",
            (range.clone(), (y.write(), coef.lookup())),
            |(i, (y, c))| y.set(i, c.get(0) + c.get(1) * *i as f64),
        );
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert_eq!(y.to_vec().expect("y")[15], 31.0);
    coef.host_write()
        .expect("not borrowed between submits")
        .set(1, -1.0);
    graph.submit().expect("submit again");
    assert_eq!(y.to_vec().expect("y")[15], -14.0);
}

fn several_sinks<S: Space>(space: S) {
    let hits: View<usize, 1> = View::new("hits", [4]).expect("hits");
    let one = RangePolicy::new(space.clone(), 0..1);
    let mut graph = create_graph(&space, |g| {
        let a = g.parallel_for("a", (one.clone(), (hits.atomic(),)), |(_i, (h,))| {
            h.fetch_add(0, 1);
        });
        a.then_parallel_for("sink b", (one.clone(), (hits.atomic(),)), |(_i, (h,))| {
            h.fetch_add(1, 1);
        });
        a.then_parallel_for("sink c", (one.clone(), (hits.atomic(),)), |(_i, (h,))| {
            h.fetch_add(2, 1);
        });
        g.parallel_for("sink d", (one.clone(), (hits.atomic(),)), |(_i, (h,))| {
            h.fetch_add(3, 1);
        });
    })
    .expect("graph");
    for _ in 0..3 {
        graph.submit().expect("submit");
    }
    assert_eq!(hits.to_vec().expect("hits"), [3, 3, 3, 3]);
}

fn repeated_submits_give_the_same_result<S: Space>(space: S) {
    let n = 1000;
    let y: View<f64, 1> = View::new("y", [n]).expect("y");
    let total = ReduceResult::<f64>::new();
    let range = RangePolicy::new(space.clone(), 0..n);
    let mut graph = create_graph(&space, |g| {
        g.parallel_for("init", (range.clone(), (y.write(),)), |(i, (y,))| {
            y.set(i, *i as f64)
        })
        .then_parallel_for("scale", (range.clone(), (y.write(),)), |(i, (y,))| {
            y.set(i, 0.5 * y.get(i))
        })
        .then_parallel_reduce(
            "sum",
            (range.clone(), (y.read(),)),
            |(i, (y,)), acc| *acc += y.get(i),
            Sum::<f64>::new(),
            total.clone(),
        );
    })
    .expect("graph");
    let mut results = Vec::new();
    for _ in 0..10 {
        graph.submit().expect("submit");
        space.fence().expect("fence");
        results.push(total.get().expect("a result"));
        // The host may read (and write) between submits: no borrow is kept by the graph.
        y.fill_host(-1.0).expect("host write between submits");
    }
    assert!(results.iter().all(|&r| r == 249_750.0), "{results:?}");
}

fn empty_graph<S: Space>(space: S) {
    let mut graph = create_graph(&space, |_g| {}).expect("graph");
    assert!(graph.is_empty());
    graph.submit().expect("submit");
    graph.submit_on(&space).expect("submit on");
    graph.execution_space().fence().expect("fence");
}

fn empty_reduce_writes_identity<S: Space>(space: S) {
    let sum: View<f64, 0> = View::new("sum", []).expect("sum");
    sum.fill_host(42.0).expect("fill");
    let prod = ReduceResult::<i64>::new();
    let empty = RangePolicy::new(space.clone(), 5..5);
    let mut graph = create_graph(&space, |g| {
        let a = g.parallel_reduce(
            "sum",
            empty.clone(),
            |_i, acc: &mut f64| *acc += 1.0,
            Sum::new(),
            sum.clone(),
        );
        a.then_parallel_reduce(
            "prod",
            empty.clone(),
            |_i, acc: &mut i64| *acc *= 2,
            Prod::new(),
            prod.clone(),
        );
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert_eq!(sum.host_read().expect("read").get([]), 0.0);
    assert_eq!(prod.get(), Some(1));
}

fn unordered_race_is_an_error<S: Space>(space: S) {
    let y: View<f64, 1> = View::new("y", [10]).expect("y");
    let x: View<f64, 1> = View::new("x", [10]).expect("x");
    let range = RangePolicy::new(space.clone(), 0..10);
    // Two writers of y with no path between them.
    let mut graph = create_graph(&space, |g| {
        let a = g.parallel_for("first writer", (range.clone(), (y.write(),)), |(i, (y,))| {
            y.set(i, 1.0)
        });
        a.then_parallel_for("ordered writer", (range.clone(), (y.write(),)), |(i, (y,))| {
            y.set(i, 2.0)
        });
        g.parallel_for(
            "second writer",
            (range.clone(), (y.write(), x.read())),
            |(i, (y, x))| y.set(i, x.get(i)),
        );
    })
    .expect("graph");
    let err = graph.instantiate().expect_err("a race");
    match &err {
        GraphError::UnorderedRace(race) => {
            assert_eq!(
                (race.first.as_str(), race.second.as_str()),
                ("first writer", "second writer")
            );
            assert_eq!((race.first_access, race.second_access), ("writes", "writes"));
        }
        other => panic!("unexpected {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("first writer") && msg.contains("second writer") && msg.contains("`y`"),
        "{msg}"
    );
    assert!(graph.submit().is_err(), "a racy graph never runs");

    // A reader and a writer of one subview region, unordered: also a race.
    let left: View<f64, 1> = y.subview([Slice::Range(0..5)]).expect("left");
    let right: View<f64, 1> = y.subview([Slice::Range(5..10)]).expect("right");
    let mut graph = create_graph(&space, |g| {
        g.parallel_for(
            "read all",
            (range.clone(), (x.write(), y.read())),
            |(i, (x, y))| x.set(i, y.get(i)),
        );
        g.parallel_for(
            "write left",
            (RangePolicy::new(space.clone(), 0..5), (left.write(),)),
            |(i, (l,))| l.set(i, 0.0),
        );
    })
    .expect("graph");
    assert!(matches!(graph.instantiate(), Err(GraphError::UnorderedRace(_))));

    // Disjoint subviews and shared readers are fine.
    let mut graph = create_graph(&space, |g| {
        let five = RangePolicy::new(space.clone(), 0..5);
        g.parallel_for("left", (five.clone(), (left.write(), x.read())), |(i, (l, x))| {
            l.set(i, x.get(i))
        });
        g.parallel_for(
            "right",
            (five.clone(), (right.write(), x.read())),
            |(i, (r, x))| r.set(i, x.get(i)),
        );
    })
    .expect("graph");
    graph.instantiate().expect("no race");
    graph.submit().expect("submit");
}

fn panicking_node_then_resubmit<S: Space>(space: S) {
    let fail = Arc::new(AtomicBool::new(true));
    let y: View<u32, 1> = View::new("y", [16]).expect("y");
    let range = RangePolicy::new(space.clone(), 0..16);
    let f = fail.clone();
    let mut graph = create_graph(&space, |g| {
        g.parallel_for("fill", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 1))
            .then_parallel_for("maybe panic", (range.clone(), (y.write(),)), move |(i, (y,))| {
                if f.load(Ordering::SeqCst) && *i == 7 {
                    panic!("boom at 7");
                }
                y.set(i, y.get(i) + 1);
            });
    })
    .expect("graph");
    let err = graph.submit().expect_err("the node panics");
    match err {
        GraphError::Core(Error::KernelPanicked { label, message }) => {
            assert_eq!(label, "maybe panic");
            assert!(message.contains("boom"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
    fail.store(false, Ordering::SeqCst);
    graph.submit().expect("usable again");
    assert_eq!(y.to_vec().expect("y"), [2; 16]);
}

fn instantiate_twice_is_an_error<S: Space>(space: S) {
    let mut graph = create_graph(&space, |g| {
        g.host("h", || {});
    })
    .expect("graph");
    graph.instantiate().expect("first");
    assert!(matches!(
        graph.instantiate(),
        Err(GraphError::AlreadyInstantiated)
    ));
    graph.submit().expect("submit");
    // Implicit instantiation at the first submit counts too.
    let mut graph = create_graph(&space, |g| {
        g.host("h", || {});
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert!(graph.is_instantiated());
    assert!(matches!(
        graph.instantiate(),
        Err(GraphError::AlreadyInstantiated)
    ));
}

fn conflict_at_submit_then_host_reads<S: Space>(space: S) {
    let y: View<f64, 1> = View::new("y", [4]).expect("y");
    let range = RangePolicy::new(space.clone(), 0..4);
    let mut graph = create_graph(&space, |g| {
        g.parallel_for("write y", (range.clone(), (y.write(),)), |(i, (y,))| {
            y.set(i, 3.0)
        });
    })
    .expect("graph");
    {
        let held = y.host_read().expect("host reader");
        let err = graph.submit().expect_err("conflict");
        assert!(
            matches!(err, GraphError::Core(Error::BorrowConflict { .. })),
            "{err}"
        );
        assert_eq!(held.get(0), 0.0);
    }
    graph.submit().expect("submit");
    assert_eq!(y.host_read().expect("read between submits").get(3), 3.0);
}

fn scan_node<S: Space>(space: S) {
    let x: View<i64, 1> = View::from_slice("x", [5], &[1, 2, 3, 4, 5]).expect("x");
    let offsets: View<i64, 1> = View::new("offsets", [5]).expect("offsets");
    let total = ReduceResult::<i64>::new();
    let range = RangePolicy::new(space.clone(), 0..5);
    let mut graph = create_graph(&space, |g| {
        g.root().then_parallel_scan_into(
            "offsets",
            (range.clone(), (offsets.write(), x.read())),
            |(i, (out, x)), partial: &mut i64, is_final| {
                if is_final {
                    out.set(i, *partial);
                }
                *partial += x.get(i);
            },
            total.clone(),
        );
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert_eq!(offsets.to_vec().expect("offsets"), [0, 1, 3, 6, 10]);
    assert_eq!(total.get(), Some(15));
}

/// A wave big enough to run its nodes at the same time on concurrent instances.
fn concurrent_wave<S: Space>(space: S) {
    let parts = 4;
    let len = WAVE_MIN_WORK;
    let data: View<u64, 1> = View::new("data", [parts * len]).expect("data");
    let sums = ReduceResult::<u64>::new();
    let fail = Arc::new(AtomicBool::new(true));
    let mut graph = create_graph(&space, |g| {
        let mut fills = Vec::new();
        for k in 0..parts {
            let part: View<u64, 1> = data
                .subview([Slice::Range(k * len..(k + 1) * len)])
                .expect("part");
            let f = fail.clone();
            fills.push(
                g.parallel_for(
                    &format!("fill {k}"),
                    (RangePolicy::new(space.clone(), 0..len), (part.write(),)),
                    move |(i, (p,))| {
                        if k == 2 && *i == 5 && f.load(Ordering::SeqCst) {
                            panic!("part 2 fails");
                        }
                        p.set(i, (k * len + *i) as u64);
                    },
                )
                .erase(),
            );
        }
        g.when_all(fills).then_parallel_reduce(
            "sum",
            (RangePolicy::new(space.clone(), 0..parts * len), (data.read(),)),
            |(i, (d,)), acc| *acc += d.get(i),
            Sum::<u64>::new(),
            sums.clone(),
        );
    })
    .expect("graph");
    let err = graph.submit().expect_err("part 2 panics");
    assert!(matches!(err, GraphError::Core(Error::KernelPanicked { ref label, .. }) if label == "fill 2"));
    assert_eq!(sums.get(), None, "the reduction depends on the failed node");
    fail.store(false, Ordering::SeqCst);
    let n = (parts * len) as u64;
    for _ in 0..3 {
        graph.submit().expect("submit");
        assert_eq!(sums.get(), Some(n * (n - 1) / 2));
    }
}

#[test]
fn submit_on_another_instance_of_a_partitioned_rayon_space() {
    let space = RayonSpace::with_threads(2).expect("pool");
    let parts = space.partition_space(2).expect("partition");
    let n = 3 * WAVE_MIN_WORK;
    let y: View<u64, 1> = View::new("y", [n]).expect("y");
    let total = ReduceResult::<u64>::new();
    let mut graph = create_graph(&space, |g| {
        g.parallel_for(
            "iota",
            (RangePolicy::new(space.clone(), 0..n), (y.write(),)),
            |(i, (y,))| y.set(i, *i as u64),
        )
        .then_parallel_reduce(
            "sum",
            (RangePolicy::new(space.clone(), 0..n), (y.read(),)),
            |(i, (y,)), acc| *acc += y.get(i),
            Sum::<u64>::new(),
            total.clone(),
        );
    })
    .expect("graph");
    let expected = (n as u64) * (n as u64 - 1) / 2;
    for part in &parts {
        y.fill_host(0).expect("reset");
        graph.submit_on(part).expect("submit on a partition");
        part.fence().expect("fence");
        assert_eq!(total.get(), Some(expected));
    }
    graph.submit().expect("submit on the graph's own instance");
    assert_eq!(total.get(), Some(expected));
}

#[test]
fn dot_export_has_labels_and_edges() {
    let y: View<f64, 1> = View::new("y \"quoted\"", [4]).expect("y");
    let graph = create_graph(&Serial::default(), |g| {
        let a = g.parallel_for("produce", (4usize, (y.write(),)), |(i, (y,))| y.set(i, 1.0));
        let b = g.host("side", || {});
        g.when_all([a.erase(), b.erase()]).then_parallel_for(
            "consume",
            (4usize, (y.read(),)),
            |(i, (y,))| {
                let _ = y.get(i);
            },
        );
    })
    .expect("graph");
    let dot = graph.to_dot();
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(
        dot.contains("produce\\nparallel_for\\nW y \\\"quoted\\\""),
        "{dot}"
    );
    assert!(dot.contains("consume\\nparallel_for\\nR y"), "{dot}");
    assert!(
        dot.contains("shape=diamond") && dot.contains("shape=hexagon"),
        "{dot}"
    );
    for edge in ["n0 -> n1", "n0 -> n2", "n1 -> n3", "n2 -> n3", "n3 -> n4"] {
        assert!(dot.contains(edge), "{edge} missing in\n{dot}");
    }
}

#[test]
#[expect(clippy::reversed_empty_ranges, reason = "an invalid range on purpose")]
fn invalid_policy_is_reported_by_create_graph() {
    let space = Serial::default();
    let result = create_graph(&space, |g| {
        g.parallel_for("backwards", RangePolicy::new(space.clone(), 5..2), |_i| {});
    });
    assert!(matches!(
        result,
        Err(GraphError::Core(Error::InvalidRange { .. }))
    ));
}

#[test]
fn graphs_are_send_and_policies_move_to_the_graphs_instance() {
    fn send<T: Send + 'static>() {}
    send::<hoplite_graph::Graph<Serial>>();
    send::<hoplite_graph::Graph<RayonSpace>>();
    let space = RayonSpace::with_threads(2).expect("pool");
    let other = RayonSpace::with_threads(2).expect("another pool");
    let seen = Arc::new(parking_lot_free::Seen::default());
    // A policy on the default instance (what a plain size gets) moves to the graph's.
    let (s1, s2) = (seen.clone(), seen.clone());
    let mut graph = create_graph(&space, |g| {
        g.parallel_for(
            "default",
            RangePolicy::new(RayonSpace::default(), 0..1),
            move |_i| s1.hit(),
        );
        g.parallel_for("size", 1, move |_i| s2.hit());
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert_eq!(seen.count(), 2);
    // A policy that names another instance would be moved silently: refused, naming the node.
    let s = seen.clone();
    let e = create_graph(&space, |g| {
        g.parallel_for("where", RangePolicy::new(other.clone(), 0..1), move |_i| s.hit());
    })
    .expect_err("a foreign instance");
    assert!(
        matches!(&e, hoplite_graph::GraphError::ForeignInstance { node } if node == "where"),
        "{e}"
    );
    // On the graph's own instance it is fine.
    let s = seen.clone();
    let mut own = create_graph(&space, |g| {
        g.parallel_for("own", RangePolicy::new(space.clone(), 0..1), move |_i| s.hit());
    })
    .expect("graph");
    own.submit().expect("submit");
    assert_eq!(seen.count(), 3);
}

mod parking_lot_free {
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    pub struct Seen(AtomicUsize);

    impl Seen {
        pub fn hit(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        pub fn count(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }
}

/// On a two-thread rayon instance, the two nodes of a wave worth sharing meet: each waits (with
/// a time limit) until the other has started, which only happens if they run at the same time.
#[test]
fn independent_nodes_run_at_the_same_time_on_rayon() {
    use std::time::{Duration, Instant};
    let space = RayonSpace::with_threads(2).expect("pool");
    let started = Arc::new(AtomicUsize::new(0));
    let met = Arc::new(AtomicUsize::new(0));
    let mut graph = create_graph(&space, |g| {
        for k in 0..2 {
            let (started, met) = (started.clone(), met.clone());
            g.parallel_for(
                &format!("side {k}"),
                RangePolicy::new(space.clone(), 0..WAVE_MIN_WORK),
                move |i| {
                    if *i == 0 {
                        started.fetch_add(1, Ordering::SeqCst);
                        let deadline = Instant::now() + Duration::from_secs(5);
                        while started.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                            std::hint::spin_loop();
                        }
                        if started.load(Ordering::SeqCst) >= 2 {
                            met.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                },
            );
        }
    })
    .expect("graph");
    graph.submit().expect("submit");
    assert_eq!(met.load(Ordering::SeqCst), 2, "the two nodes did not overlap");
}

/// A chain longer than several serial sequences: the node that panics is named, the nodes
/// before it ran, the ones after it did not, and the graph runs in full once it stops.
fn panic_deep_in_a_long_chain_names_its_node<S: Space>(space: S) {
    let len = 3 * SEQUENCE_MAX + 5;
    let bad = 2 * SEQUENCE_MAX + 3;
    let ran = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(AtomicBool::new(true));
    let one = RangePolicy::new(space.clone(), 0..1);
    let mut graph = create_graph(&space, |g| {
        let mut last: NodeRef<'_, S> = g.root();
        for k in 0..len {
            let (ran, fail) = (ran.clone(), fail.clone());
            last = last
                .then_parallel_for(&format!("node {k}"), one.clone(), move |_i| {
                    if k == bad && fail.load(Ordering::SeqCst) {
                        panic!("node {k} fails");
                    }
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .erase();
        }
    })
    .expect("graph");
    match graph.submit().expect_err("a node panics") {
        GraphError::Core(Error::KernelPanicked { label, message }) => {
            assert_eq!(label, format!("node {bad}"));
            assert!(message.contains("fails"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(
        ran.load(Ordering::SeqCst),
        bad,
        "exactly the nodes before the panic ran"
    );
    fail.store(false, Ordering::SeqCst);
    ran.store(0, Ordering::SeqCst);
    graph.submit().expect("usable again");
    space.fence().expect("fence");
    assert_eq!(ran.load(Ordering::SeqCst), len);
}

/// A handle held on the host conflicts with the middle node of a chain: the submit fails with
/// a `BorrowConflict` naming both views, the nodes after it do not run, and once the host lets
/// go the graph runs.
fn conflict_in_the_middle_of_a_chain<S: Space>(space: S) {
    let y: View<u32, 1> = View::new("y", [4]).expect("y");
    let z: View<u32, 1> = View::new("z", [4]).expect("z");
    let w: View<u32, 1> = View::new("w", [4]).expect("w");
    let range = RangePolicy::new(space.clone(), 0..4);
    let mut graph = create_graph(&space, |g| {
        g.parallel_for("write y", (range.clone(), (y.write(),)), |(i, (y,))| {
            y.set(i, y.get(i) + 1)
        })
        .then_parallel_for("write z", (range.clone(), (z.write(),)), |(i, (z,))| {
            z.set(i, z.get(i) + 1)
        })
        .then_parallel_for("write w", (range.clone(), (w.write(),)), |(i, (w,))| {
            w.set(i, w.get(i) + 1)
        });
    })
    .expect("graph");
    {
        let held = z.host_read().expect("host reader");
        match graph.submit().expect_err("conflict") {
            GraphError::Core(Error::BorrowConflict {
                label, other_label, ..
            }) => {
                assert_eq!((label.as_str(), other_label.as_str()), ("z", "z"));
            }
            other => panic!("unexpected {other}"),
        }
        assert_eq!(held.get(0), 0);
    }
    space.fence().expect("fence");
    assert_eq!(y.to_vec().expect("y"), [1; 4]);
    assert_eq!(
        w.to_vec().expect("w"),
        [0; 4],
        "nodes after the failing one do not run"
    );
    graph.submit().expect("submit");
    space.fence().expect("fence");
    assert_eq!(
        (
            y.to_vec().expect("y"),
            z.to_vec().expect("z"),
            w.to_vec().expect("w")
        ),
        (vec![2; 4], vec![1; 4], vec![1; 4])
    );
}

/// Thousands of nodes in a chain: every node runs once, in order, however the serial pass
/// splits the chain (in unoptimized builds too, where each node of a sequence nests a call).
fn long_chain_runs_every_node_in_order<S: Space>(space: S) {
    // Long enough that a pass nesting one call per node would overflow the stack.
    counting_chain(space, 4000);
}

/// A policy is validated once, on the graph's instance, when the node is made; `submit_on`
/// another instance validates it there, where it can fail although it is valid on the graph's.
#[test]
fn submit_on_validates_policies_on_the_other_instance() {
    let space = RayonSpace::with_threads(2).expect("pool");
    let parts = space.partition_space(2).expect("partition");
    assert!(parts.iter().all(|p| p.max_team_size() < 2));
    let teams = Arc::new(AtomicUsize::new(0));
    let t = teams.clone();
    let mut graph = create_graph(&space, |g| {
        g.parallel_for(
            "teams of two",
            TeamPolicy::new(space.clone(), 3, 2),
            move |member| {
                if hoplite_core::TeamMember::team_rank(member) == 0 {
                    t.fetch_add(1, Ordering::SeqCst);
                }
            },
        );
    })
    .expect("valid on the graph's instance");
    graph.submit().expect("submit");
    assert_eq!(teams.load(Ordering::SeqCst), 3);
    let err = graph.submit_on(&parts[0]).expect_err("too large for a partition");
    assert!(
        matches!(err, GraphError::Core(Error::TeamSizeTooLarge { .. })),
        "{err}"
    );
    assert_eq!(teams.load(Ordering::SeqCst), 3, "nothing ran on the partition");
    graph.submit().expect("still valid on the graph's instance");
    assert_eq!(teams.load(Ordering::SeqCst), 6);
}

/// Host nodes that declare their views: a host load, a kernel, a host check, a host atomic
/// tally, in order, on every submit; the guards are released between submits.
fn host_nodes_with_views_run_in_order<S: Space>(space: S) {
    let x: View<f64, 1> = View::new("x", [8]).expect("x");
    let seen: View<f64, 0> = View::new("seen", []).expect("seen");
    let tally: View<u64, 1> = View::new("tally", [2]).expect("tally");
    let range = RangePolicy::new(space.clone(), 0..8);
    let mut graph = create_graph(&space, |g| {
        let load = g.host_with("load", (x.write(),), |(mut x,)| {
            let data: Vec<f64> = (0..8).map(f64::from).collect();
            x.copy_from_slice("x", &data).expect("eight elements");
        });
        load.then_parallel_for("square", (range.clone(), (x.write(),)), |(i, (x,))| {
            x.set(i, x.get(i) * x.get(i))
        })
        .then_host_with("sum on host", (x.read(), seen.write()), |(x, mut seen)| {
            let mut total = 0.0;
            x.for_each_in_order(|v| total += v);
            seen.set([], total);
        })
        .then_host_with("tally", (tally.atomic(),), |(t,)| {
            t.fetch_add(0, 1);
            t.fetch_max(1, 7);
        });
    })
    .expect("graph");
    for submit in 1..=3u64 {
        graph.submit().expect("submit");
        // 0 + 1 + 4 + ... + 49: the square ran after the load and before the sum every time.
        assert_eq!(seen.host_read().expect("seen").get([]), 140.0);
        assert_eq!(tally.to_vec().expect("tally"), [submit, 7]);
    }
    let dot = graph.to_dot();
    assert!(
        dot.contains("sum on host\\nhost\\nR x, W seen") && dot.contains("A tally"),
        "{dot}"
    );
}

/// A host node's declared views take part in the race check like a launch node's.
fn host_node_races_are_found_at_instantiation<S: Space>(space: S) {
    let x: View<f64, 1> = View::new("x", [8]).expect("x");
    let y: View<f64, 1> = View::new("y", [8]).expect("y");
    let range = RangePolicy::new(space.clone(), 0..8);
    let mut graph = create_graph(&space, |g| {
        g.parallel_for("copy", (range.clone(), (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, x.get(i))
        });
        g.host_with("refill x", (x.write(),), |(mut x,)| x.fill(1.0));
    })
    .expect("graph");
    match graph
        .instantiate()
        .expect_err("host write of x races with the kernel's read")
    {
        GraphError::UnorderedRace(race) => {
            let mut pair = [race.first.as_str(), race.second.as_str()];
            pair.sort_unstable();
            assert_eq!(pair, ["copy", "refill x"]);
            assert_eq!(race.first_view, race.second_view);
            assert_eq!(race.first_view, "x");
        }
        other => panic!("unexpected {other}"),
    }

    // A host reader beside a kernel reader is fine, and so is a writer ordered after both.
    let mut graph = create_graph(&space, |g| {
        let copy = g.parallel_for("copy", (range.clone(), (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, x.get(i) + 1.0)
        });
        let peek = g.host_with("peek x", (x.read(),), |(x,)| assert!(x.get(0) >= 0.0));
        g.when_all([copy.erase(), peek.erase()])
            .then_host_with("refill x", (x.write(),), |(mut x,)| x.fill(2.0));
    })
    .expect("graph");
    graph.instantiate().expect("no race");
    graph.submit().expect("submit");
    graph.submit().expect("submit");
    assert_eq!(y.to_vec().expect("y"), [3.0; 8]);
}

/// A host node whose borrow is refused (the host holds a guard) fails the submit without
/// calling its function; the graph runs once the guard is gone.
fn host_node_borrow_refused_at_submit<S: Space>(space: S) {
    let x: View<u32, 1> = View::new("x", [4]).expect("x");
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mut graph = create_graph(&space, |g| {
        g.host_with("bump", (x.write(),), move |(mut x,)| {
            c.fetch_add(1, Ordering::SeqCst);
            x.set(2, x.get(2) + 1);
        });
    })
    .expect("graph");
    {
        let held = x.host_read().expect("host reader");
        match graph.submit().expect_err("the host holds a reader") {
            GraphError::Core(Error::BorrowConflict { .. }) => {}
            other => panic!("unexpected {other}"),
        }
        assert_eq!(held.get(2), 0);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the function did not run");
    graph.submit().expect("submit");
    assert_eq!(x.to_vec().expect("x"), [0, 0, 1, 0]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// A host function that panics while holding a write guard: the submit reports the panic with
/// the node's label, the guard is released, and the graph runs again.
fn host_node_panic_releases_its_guards<S: Space>(space: S) {
    let x: View<u32, 1> = View::new("x", [4]).expect("x");
    let fail = Arc::new(AtomicBool::new(true));
    let f = fail.clone();
    let mut graph = create_graph(&space, |g| {
        g.host_with("fill then maybe panic", (x.write(),), move |(mut x,)| {
            x.fill(5);
            assert!(!f.load(Ordering::SeqCst), "host boom");
        });
    })
    .expect("graph");
    match graph.submit().expect_err("the host function panics") {
        GraphError::Core(Error::KernelPanicked { label, message }) => {
            assert_eq!(label, "fill then maybe panic");
            assert!(message.contains("host boom"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(x.to_vec().expect("the write guard is gone"), [5; 4]);
    fail.store(false, Ordering::SeqCst);
    graph.submit().expect("usable again");
}

/// A graph on a one-thread instance has no wave schedule after `instantiate` (a serial pass
/// needs none); submitted on a concurrent instance it computes one and runs every node once.
#[test]
fn a_graph_on_one_thread_runs_on_more_threads() {
    let one = RayonSpace::with_threads(1).expect("pool");
    let two = RayonSpace::with_threads(2).expect("another pool");
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    let n = WAVE_MIN_WORK;
    let mut graph = create_graph(&one, |g| {
        let wave: Vec<NodeRef<'_, RayonSpace>> = (0..4)
            .map(|_| {
                let h = hits.clone();
                g.parallel_for("count", RangePolicy::new(one.clone(), 0..n), move |_i| {
                    h.fetch_add(1, Ordering::Relaxed);
                })
                .erase()
            })
            .collect();
        let (h, s) = (hits.clone(), seen.clone());
        g.when_all(wave).then_host("after", move || {
            s.store(h.load(Ordering::Relaxed), Ordering::Relaxed);
        });
    })
    .expect("graph");
    graph.instantiate().expect("instantiate");
    assert!(format!("{graph:?}").contains("instantiated: true"));
    graph.submit().expect("submit on one thread");
    assert_eq!(seen.load(Ordering::Relaxed), 4 * n);
    for round in 2..=3 {
        graph.submit_on(&two).expect("submit on two threads");
        two.fence().expect("fence");
        assert_eq!(hits.load(Ordering::Relaxed), round * 4 * n);
        assert_eq!(
            seen.load(Ordering::Relaxed),
            round * 4 * n,
            "the join waits for the wave"
        );
    }
}

/// A host node made outside the front end, for driving a node list directly.
struct Named(&'static str, NodeKind);

impl NodeKernel<Serial> for Named {
    fn label(&self) -> &str {
        self.0
    }
    fn kind(&self) -> NodeKind {
        self.1
    }
    fn accesses(&self) -> &[Access] {
        &[]
    }
    fn work(&self) -> Option<usize> {
        None
    }
    fn run(&self) -> Result<(), Error> {
        Ok(())
    }
    fn run_on(&self, _space: &Serial) -> Result<(), Error> {
        Ok(())
    }
}

/// A node list refuses a predecessor that is not an earlier node, and adds nothing then.
#[test]
fn a_node_list_refuses_a_later_predecessor() {
    let mut nodes = GraphNodes::<Serial>::new();
    let root = nodes
        .add(Arc::new(Named("root", NodeKind::Root)), &[])
        .expect("the root");
    let a: Arc<dyn NodeKernel<Serial>> = Arc::new(Named("a", NodeKind::Host));
    match nodes.add(a.clone(), &[root, NodeId(1)]) {
        Err(GraphError::InvalidPredecessor {
            node: 1,
            predecessor: 1,
        }) => {}
        other => panic!("expected InvalidPredecessor, got {:?}", other.map(|id| id.0)),
    }
    assert_eq!(nodes.len(), 1);
    let id = nodes.add(a.clone(), &[root]).expect("a node after the root");
    assert_eq!(nodes.preds(id), [root]);
    assert_eq!(nodes.node(id).label(), "a");
    assert_eq!(nodes.as_slice()[1].kind(), NodeKind::Host);
    drop(nodes);
    assert_eq!(
        Arc::strong_count(&a),
        1,
        "the list released the node it was given"
    );
}

/// Every node keeps its own label when labels repeat and alternate (nodes of one label share
/// one stored copy), and dropping the graph drops every node's closure exactly once.
#[test]
fn nodes_keep_their_labels_and_drop_with_the_graph() {
    let captured = Arc::new(());
    let labels = ["a", "a", "b", "a", "", "b", "b"];
    let graph = create_graph(&Serial::default(), |g| {
        let mut last = g.root();
        for (k, label) in labels.iter().enumerate() {
            let c = captured.clone();
            last = if k % 2 == 0 {
                last.then_host(label, move || drop(c.clone())).erase()
            } else {
                last.then_parallel_for(label, 1, move |_i| drop(c.clone()))
                    .erase()
            };
        }
    })
    .expect("graph");
    let got: Vec<&str> = graph.nodes().as_slice()[1..].iter().map(|n| n.label()).collect();
    assert_eq!(got, labels);
    assert_eq!(Arc::strong_count(&captured), 1 + labels.len());
    drop(graph);
    assert_eq!(
        Arc::strong_count(&captured),
        1,
        "each node's closure dropped once"
    );
}

/// The race check orders nodes through paths of any length, not only direct edges: a writer
/// after a `when_all` of readers (and a writer two nodes down a chain) is ordered with them; a
/// writer after only some of the readers races with the others.
#[test]
fn the_race_check_follows_paths_through_joins() {
    let space = Serial::default();
    let y: View<f64, 1> = View::new("y", [4]).expect("y");
    let range = RangePolicy::new(space.clone(), 0..4);
    let mut graph = create_graph(&space, |g| {
        let readers: Vec<NodeRef<'_, Serial>> = (0..3)
            .map(|_| {
                g.parallel_for("reader", (range.clone(), (y.read(),)), |(i, (y,))| {
                    assert!(y.get(i) >= 0.0);
                })
                .erase()
            })
            .collect();
        g.when_all(readers).then_host("between", || {}).then_parallel_for(
            "writer",
            (range.clone(), (y.write(),)),
            |(i, (y,))| y.set(i, 1.0),
        );
    })
    .expect("graph");
    graph
        .instantiate()
        .expect("the writer follows every reader through the join");

    let mut graph = create_graph(&space, |g| {
        let first = g.parallel_for("first reader", (range.clone(), (y.read(),)), |(i, (y,))| {
            assert!(y.get(i) >= 0.0);
        });
        g.parallel_for("second reader", (range.clone(), (y.read(),)), |(i, (y,))| {
            assert!(y.get(i) >= 0.0);
        });
        first.then_host("between", || {}).then_parallel_for(
            "writer",
            (range.clone(), (y.write(),)),
            |(i, (y,))| y.set(i, 1.0),
        );
    })
    .expect("graph");
    match graph.instantiate() {
        Err(GraphError::UnorderedRace(race)) => {
            assert_eq!(
                (race.first.as_str(), race.second.as_str()),
                ("second reader", "writer")
            );
        }
        other => panic!("expected a race of the second reader and the writer, got {other:?}"),
    }
}
