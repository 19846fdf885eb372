//! Nodes run once, after their predecessors: chains, fan-outs, diamonds, sinks, repeated
//! submits, empty graphs, scans, concurrent waves, other instances.

use super::*;

pub(crate) fn dependency_order_chain<S: Space>(space: S) {
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

pub(crate) fn fan_out_after_when_all<S: Space>(space: S) {
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

pub(crate) fn when_all_with_redundant_edges<S: Space>(space: S) {
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

pub(crate) fn diamond<S: Space>(space: S) {
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
pub(crate) fn lookup_table_between_submits<S: Space>(space: S) {
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

pub(crate) fn several_sinks<S: Space>(space: S) {
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

pub(crate) fn repeated_submits_give_the_same_result<S: Space>(space: S) {
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

pub(crate) fn empty_graph<S: Space>(space: S) {
    let mut graph = create_graph(&space, |_g| {}).expect("graph");
    assert!(graph.is_empty());
    graph.submit().expect("submit");
    graph.submit_on(&space).expect("submit on");
    graph.execution_space().fence().expect("fence");
}

pub(crate) fn empty_reduce_writes_identity<S: Space>(space: S) {
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

pub(crate) fn scan_node<S: Space>(space: S) {
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
pub(crate) fn concurrent_wave<S: Space>(space: S) {
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
    // A policy that names another instance keeps it: the node runs there.
    let s = seen.clone();
    let mut elsewhere = create_graph(&space, |g| {
        g.parallel_for("where", RangePolicy::new(other.clone(), 0..1), move |_i| s.hit());
    })
    .expect("a node on another instance");
    elsewhere.submit().expect("submit");
    assert_eq!(seen.count(), 3);
    assert!(
        elsewhere.nodes().as_slice()[1].own_instance() == Some(&other),
        "the node keeps its instance"
    );
    // On the graph's own instance it is fine.
    let s = seen.clone();
    let mut own = create_graph(&space, |g| {
        g.parallel_for("own", RangePolicy::new(space.clone(), 0..1), move |_i| s.hit());
    })
    .expect("graph");
    own.submit().expect("submit");
    assert_eq!(seen.count(), 4);
}

/// Kokkos lets a node's policy name another instance of the graph's space: the node is
/// validated on that instance (a team of two does not fit a one-thread partition, though it
/// fits the graph's two-thread pool), and the two branches of a diamond on two partitions run
/// at the same time (each waits until the other has started, so it finishes only if they
/// overlap), after the root and before the join, also when the graph is submitted elsewhere.
#[test]
fn nodes_on_instances_of_their_own_are_validated_and_run_there_side_by_side() {
    let space = RayonSpace::with_threads(2).expect("pool");
    let parts = RayonSpace::with_threads(2)
        .expect("pool")
        .partition_space(2)
        .expect("two partitions");
    let e = create_graph(&space, |g| {
        g.parallel_for("team", TeamPolicy::new(parts[0].clone(), 1, 2), |_m| {});
    })
    .expect_err("a team of two on a one-thread partition");
    assert!(
        matches!(e, GraphError::Core(Error::TeamSizeTooLarge { .. })),
        "{e:?}"
    );

    let started = [Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false))];
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let wait_for = |flag: &AtomicBool| {
        let start = std::time::Instant::now();
        while !flag.load(Ordering::Acquire) {
            if start.elapsed() > std::time::Duration::from_secs(20) {
                return false;
            }
            std::thread::yield_now();
        }
        true
    };
    let mut graph = create_graph(&space, |g| {
        let first = {
            let order = order.clone();
            g.host("first", move || order.lock().expect("order").push("first"))
        };
        let branch = |k: usize| {
            let (mine, other, order) = (started[k].clone(), started[1 - k].clone(), order.clone());
            first.then_parallel_for(
                if k == 0 { "left" } else { "right" },
                RangePolicy::new(parts[k].clone(), 0..1),
                move |_i| {
                    mine.store(true, Ordering::Release);
                    let overlapped = wait_for(&other);
                    order
                        .lock()
                        .expect("order")
                        .push(if overlapped { "overlapped" } else { "alone" });
                },
            )
        };
        let (left, right) = (branch(0), branch(1));
        let order = order.clone();
        g.when_all([left.erase(), right.erase()])
            .then_host("join", move || order.lock().expect("order").push("join"));
    })
    .expect("graph");
    for round in 0..2 {
        for flag in &started {
            flag.store(false, Ordering::Release);
        }
        order.lock().expect("order").clear();
        if round == 0 {
            graph.submit().expect("submit");
        } else {
            graph.submit_on(&parts[0]).expect("submit on a partition");
        }
        assert_eq!(
            *order.lock().expect("order"),
            ["first", "overlapped", "overlapped", "join"],
            "round {round}"
        );
    }
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

/// Thousands of nodes in a chain: every node runs once, in order, however the serial pass
/// splits the chain (in unoptimized builds too, where each node of a sequence nests a call).
pub(crate) fn long_chain_runs_every_node_in_order<S: Space>(space: S) {
    // Long enough that a pass nesting one call per node would overflow the stack.
    counting_chain(space, 4000);
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
