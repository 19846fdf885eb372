//! The host implementation on a space whose launches may return before they complete (a
//! device space): node by node in order, a fence before each host function, and no launch of
//! its own (a device runs no closures, so the waves' host closures cannot run there).

use std::cell::RefCell;
use std::io;

use hoplite_core::{ForKernel, HostSpace, Idx, LayoutRight, Result};
use hoplite_serial::SerialTeamMember;

use super::*;

thread_local! {
    /// What happened on this thread, in order: each launch's label, `fence`, and what the
    /// host functions of the test push.
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn log(entry: &str) {
    LOG.with(|l| l.borrow_mut().push(entry.to_owned()));
}

fn take_log() -> Vec<String> {
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// A space whose launches are asynchronous as far as its callers know (as a device's are) and
/// whose concurrency is that of a small device; it runs each launch through the serial
/// backend, on the calling thread, and logs it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Queue;

impl ExecutionSpace for Queue {
    type MemorySpace = HostSpace;
    type ScratchMemorySpace = HostSpace;
    type ArrayLayout = LayoutRight;
    type TeamMember<'t> = SerialTeamMember<'t>;

    fn name(&self) -> &'static str {
        "Queue"
    }
    fn fence(&self) -> Result<()> {
        log("fence");
        Ok(())
    }
    fn in_parallel(&self) -> bool {
        Serial::default().in_parallel()
    }
    fn concurrency(&self) -> usize {
        1024
    }
    fn max_team_size(&self) -> usize {
        1
    }
    fn max_vector_length(&self) -> usize {
        1
    }
    fn max_scratch_size(&self, level: usize) -> usize {
        Serial::default().max_scratch_size(level)
    }
    fn print_configuration(&self, out: &mut dyn io::Write, _detail: bool) -> io::Result<()> {
        writeln!(out, "Queue: the serial backend, reporting asynchronous launches")
    }
    fn synchronous_launches(&self) -> bool {
        false
    }
}

// SAFETY: forwards each item to the serial backend's dispatch of the same range, which is the
// only dispatch the kernel reaches.
unsafe impl ParallelFor<RangePolicy<Self>> for Queue {
    fn parallel_for<K: ForKernel<RangePolicy<Self>>>(
        &self,
        label: &str,
        p: &RangePolicy<Self>,
        k: K,
    ) -> Result<()> {
        log(label);
        let range = RangePolicy::new(Serial::default(), p.begin()..p.end());
        Serial::default().parallel_for(label, &range, |i: Idx<'_>| k.call(i))
    }
}

/// Two small independent kernels (which a concurrent host instance would run together or
/// inline, inside a launch of its own), a host function after both, and a kernel after it:
/// on every submit each runs through its own launch, in id order, and the host function
/// after a fence.
#[test]
fn an_asynchronous_space_runs_node_by_node_with_a_fence_before_host_functions() {
    let space = Queue;
    let a: View<u64, 1> = View::new("a", [8]).expect("a");
    let b: View<u64, 1> = View::new("b", [8]).expect("b");
    let range = RangePolicy::new(space.clone(), 0..8);
    let (ha, hb) = (a.clone(), b.clone());
    let mut graph = create_graph(&space, |g| {
        let fill_a = g.parallel_for("fill a", (range.clone(), (a.write(),)), |(i, (a,))| {
            a.set(i, *i as u64)
        });
        let fill_b = g.parallel_for("fill b", (range.clone(), (b.write(),)), |(i, (b,))| {
            b.set(i, 2 * *i as u64)
        });
        g.when_all([fill_a.erase(), fill_b.erase()])
            .then_host("check", move || {
                assert_eq!(ha.to_vec().expect("a"), (0..8).collect::<Vec<u64>>());
                assert_eq!(
                    hb.to_vec().expect("b"),
                    (0..8).map(|i| 2 * i).collect::<Vec<u64>>()
                );
                log("check");
            })
            .then_parallel_for("add", (range.clone(), (a.write(), b.read())), |(i, (a, b))| {
                a.set(i, a.get(i) + b.get(i))
            });
    })
    .expect("graph");
    for submit in 0..2 {
        take_log();
        graph.submit().expect("submit");
        assert_eq!(
            take_log(),
            ["fill a", "fill b", "fence", "check", "add"],
            "submit {submit}"
        );
        assert_eq!(
            a.to_vec().expect("a"),
            (0..8).map(|i| 3 * i).collect::<Vec<u64>>()
        );
    }
    // Another instance of the space: the same order.
    graph.submit_on(&Queue).expect("submit on");
    assert_eq!(take_log(), ["fill a", "fill b", "fence", "check", "add"]);
}
