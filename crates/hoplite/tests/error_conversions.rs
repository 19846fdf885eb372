//! Every hoplite error takes `?` into a `hoplite::Result`: the explicit graph's, the implicit
//! DAG's and dynamic selection's errors convert into the core's `Error`, a core error inside
//! one as itself and any other as `Error::Runtime` with the runtime's typed error as its
//! source.

use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions, DagError};
use hoplite::graph::{GraphError, create_graph};
use hoplite::prelude::*;
use hoplite::select::{DefaultBackend, RoundRobin, SelectError, submit_and_wait};
use hoplite::{Error, Serial};

/// A graph, a DAG launch and a selection in one function returning `hoplite::Result`.
fn every_runtime() -> hoplite::Result<u64> {
    let space = Serial::default();
    let x = View::<u64, 1>::new("x", [8])?;
    let mut graph = create_graph(&space, |g| {
        g.parallel_for("fill", (8, (x.write(),)), |(i, (x,))| x.set(i, *i as u64));
    })?;
    graph.submit()?;
    let ctx = Context::new(
        vec![HostDevice::new("cpu", vec![space])?],
        ContextOptions::default(),
    )?;
    let total = ctx.reduce(
        "sum",
        (8, (x.read(),)),
        |(i, (x,)), acc: &mut u64| *acc += x.get(i),
        Sum::new(),
    )?;
    let sum = total.get()?;
    let pick = submit_and_wait(&RoundRobin::from_values(vec![10u64, 20]), |r, ()| *r, ())?;
    Ok(sum + pick)
}

#[test]
fn question_marks_cross_every_runtime() {
    assert_eq!(every_runtime(), Ok(28 + 10));
}

#[test]
fn runtime_errors_keep_their_type_and_core_errors_stay_themselves() {
    let twice = || -> hoplite::Result<()> {
        let mut graph = create_graph(&Serial::default(), |g| {
            g.host("noop", || {});
        })?;
        graph.instantiate()?;
        graph.instantiate()?;
        Ok(())
    };
    let e = twice().expect_err("a second instantiate");
    let Error::Runtime { runtime, source } = &e else {
        panic!("expected a runtime error, got {e:?}")
    };
    assert_eq!(*runtime, "graph");
    assert_eq!(
        source.downcast_ref::<GraphError>(),
        Some(&GraphError::AlreadyInstantiated)
    );
    assert!(
        std::error::Error::source(&e).is_some(),
        "the graph error is the source: {e}"
    );

    // A core error inside a graph error comes out as itself.
    let reversed = || -> hoplite::Result<()> {
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = RangePolicy::new(Serial::default(), 5..2);
        create_graph(&Serial::default(), |g| {
            g.parallel_for("backwards", backwards, |_| {});
        })?;
        Ok(())
    };
    assert!(matches!(reversed(), Err(Error::InvalidRange { .. })));

    let dag: Error = DagError::InvalidOptions("no devices".into()).into();
    assert!(matches!(&dag, Error::Runtime { runtime: "DAG", .. }), "{dag}");

    let unready = || -> hoplite::Result<u64> {
        let deferred = RoundRobin::<u64, DefaultBackend<u64>>::deferred();
        Ok(submit_and_wait(&deferred, |r, ()| *r, ())?)
    };
    let e = unready().expect_err("not initialized");
    let Error::Runtime {
        runtime: "selection",
        source,
    } = &e
    else {
        panic!("expected a selection error, got {e:?}")
    };
    assert!(matches!(
        source.downcast_ref::<SelectError>(),
        Some(SelectError::NotInitialized { .. })
    ));
}
