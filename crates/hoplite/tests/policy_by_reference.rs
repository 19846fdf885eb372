//! One policy, many launches: a policy passed by reference (`&policy`, alone or with handles)
//! launches a copy of it, eagerly, as a graph node and as a DAG vertex, with the results of
//! the same launches given the policy by value.

use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions};
use hoplite::graph::create_graph;
use hoplite::prelude::*;
use hoplite::{RayonSpace, Serial, TeamThreadRange};

#[test]
fn eager_launches_take_a_policy_by_reference() -> Result<()> {
    let space = RayonSpace::default();
    let range = RangePolicy::new(space.clone(), 0..100);
    let y: View<u64, 1> = View::new("y", [100])?;
    for step in 1..=3u64 {
        // The same policy three times, never cloned by the caller.
        parallel_for("step", (&range, (y.write(),)), |(i, (y,))| {
            y.set(i, y.get(i) + step)
        })?;
    }
    assert_eq!(y.to_vec()?, [6; 100]);
    let sum = parallel_reduce("sum", &range, |i, acc: &mut usize| *acc += *i, Sum::new())?;
    assert_eq!(sum, 4950);
    let count = parallel_scan("count", &range, |_i, partial: &mut u64, _last| *partial += 1)?;
    assert_eq!(count, 100);
    assert_eq!(
        (range.begin(), range.end()),
        (0, 100),
        "the caller keeps its policy"
    );

    let grid = MDRangePolicy::new(space.clone(), [0, 0], [4, 5]);
    let cells: View<u64, 2> = View::new("cells", [4, 5])?;
    parallel_for("fill", (&grid, (cells.write(),)), |(ij, (c,))| c.set(ij, 1))?;
    let total = parallel_reduce(
        "total",
        (&grid, (cells.read(),)),
        |(ij, (c,)), acc: &mut u64| *acc += c.get(ij),
        Sum::new(),
    )?;
    assert_eq!(total, 20);

    let teams = TeamPolicy::new(space, 3, TeamSize::Auto);
    let rows: View<u64, 1> = View::new("rows", [3])?;
    for _ in 0..2 {
        parallel_for("rows", (&teams, (rows.write(),)), |(m, (rows,))| {
            let n = TeamThreadRange::new(m, 4).parallel_reduce(|_, acc: &mut u64| *acc += 1, Sum::new());
            if let Some(i) = m.league_token().single() {
                rows.set(i, rows.get(i) + n);
            }
        })?;
    }
    assert_eq!(rows.to_vec()?, [8; 3]);
    Ok(())
}

#[test]
fn graph_nodes_and_dag_vertices_take_a_policy_by_reference()
-> std::result::Result<(), Box<dyn std::error::Error>> {
    let serial = Serial::default();
    let range = RangePolicy::new(serial.clone(), 0..16);
    let (x, y) = (View::<i64, 1>::new("x", [16])?, View::<i64, 1>::new("y", [16])?);

    let mut graph = create_graph(&serial, |g| {
        g.root()
            .then_parallel_for("x", (&range, (x.write(),)), |(i, (x,))| x.set(i, *i as i64))
            .then_parallel_for("y", (&range, (y.write(), x.read())), |(i, (y, x))| {
                y.set(i, 2 * x.get(i))
            });
    })?;
    graph.submit()?;
    assert_eq!(y.to_vec()?[15], 30);

    let ctx = Context::new(
        vec![HostDevice::new("cpu", vec![serial.clone(); 2])?],
        ContextOptions::default(),
    )?;
    ctx.launch("x", (&range, (x.write(),)), |(i, (x,))| x.set(i, 1))?;
    let sum = ctx.reduce(
        "sum",
        (&range, (x.read(),)),
        |(i, (x,)), acc: &mut i64| *acc += x.get(i),
        Sum::new(),
    )?;
    assert_eq!(sum.get()?, 16);
    Ok(())
}
