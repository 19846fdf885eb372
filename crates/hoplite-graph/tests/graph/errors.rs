//! What a graph refuses or reports: races, panics, conflicts at submit, a second
//! instantiation, invalid policies.

use super::*;

pub(crate) fn unordered_race_is_an_error<S: Space>(space: S) {
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

pub(crate) fn panicking_node_then_resubmit<S: Space>(space: S) {
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

pub(crate) fn instantiate_twice_is_an_error<S: Space>(space: S) {
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

pub(crate) fn conflict_at_submit_then_host_reads<S: Space>(space: S) {
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

/// A chain longer than several serial sequences: the node that panics is named, the nodes
/// before it ran, the ones after it did not, and the graph runs in full once it stops.
pub(crate) fn panic_deep_in_a_long_chain_names_its_node<S: Space>(space: S) {
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
pub(crate) fn conflict_in_the_middle_of_a_chain<S: Space>(space: S) {
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
