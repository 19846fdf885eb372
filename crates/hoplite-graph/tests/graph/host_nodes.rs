//! Host nodes that declare their views: order, races, refused borrows and panics.

use super::*;

/// Host nodes that declare their views: a host load, a kernel, a host check, a host atomic
/// tally, in order, on every submit; the guards are released between submits.
pub(crate) fn host_nodes_with_views_run_in_order<S: Space>(space: S) {
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
pub(crate) fn host_node_races_are_found_at_instantiation<S: Space>(space: S) {
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
pub(crate) fn host_node_borrow_refused_at_submit<S: Space>(space: S) {
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
pub(crate) fn host_node_panic_releases_its_guards<S: Space>(space: S) {
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
