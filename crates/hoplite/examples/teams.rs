//! Hierarchical parallelism with `TeamPolicy`: a matrix-vector product with one team per row
//! block, the rows split over the team's threads, each row's dot product a nested reduction,
//! and the team's slice of `x` staged once in team scratch memory. Checked against a plain
//! loop; the same `#[kernel]` runs on a GPU, where a team is a block and scratch is shared
//! memory.
//!
//! `cargo run --release --example teams`

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};

/// `y = A x` for the rows of one team (its row of `y`, `rows_per_team` entries): the team
/// copies `x` into its scratch once, then each thread takes rows and reduces each over the
/// columns.
#[kernel]
fn matvec(
    m: &impl TeamMember,
    y: BoundWriter<'_, f64, 2>,
    a: BoundReader<'_, f64, 2>,
    x: BoundReader<'_, f64, 1>,
    rows_per_team: usize,
    n: usize,
) {
    let xs = m
        .team_scratch(0)
        .alloc::<f64>(n)
        .expect("the policy asks for n values of team scratch");
    TeamThreadRange::new(m, n).parallel_for(|k| xs.set(*k, x.get(*k)));
    m.team_barrier();
    let out = y.team_row(m.league_token());
    let first = m.league_rank() * rows_per_team;
    TeamThreadRange::new(m, rows_per_team).parallel_for(|r| {
        let row = first + *r;
        let dot = ThreadVectorRange::new(m, n).parallel_reduce(
            |j, acc: &mut f64| *acc += a.get([row, *j]) * xs.get(*j),
            Sum::new(),
        );
        out.set(r, dot);
    });
}

fn main() -> Result<()> {
    let (rows, n, rows_per_team) = (2048, 256, 16);
    let a_host: Vec<f64> = (0..rows * n).map(|k| ((k % 19) as f64 - 8.0) / 8.0).collect();
    let x_host: Vec<f64> = (0..n).map(|j| (j % 5) as f64 + 0.5).collect();
    let a = View::<f64, 2>::from_slice("A", [rows, n], &a_host)?;
    let x = View::<f64, 1>::from_slice("x", [n], &x_host)?;
    let y = View::<f64, 2>::new("y", [rows / rows_per_team, rows_per_team])?;

    let space = DefaultExecutionSpace::default();
    let league = rows / rows_per_team;
    let policy = TeamPolicy::new(space, league, TeamSize::Auto).with_scratch_size(
        0,
        PerTeam(n * size_of::<f64>()),
        PerThread(0),
    );
    println!(
        "{league} teams of {} threads, {} bytes of team scratch each",
        policy.team_size(),
        n * size_of::<f64>()
    );
    parallel_for(
        "matvec",
        (policy, (y.write(), a.read(), x.read())),
        matvec::with::<DefaultExecutionSpace>(rows_per_team, n),
    )?;

    let want: Vec<f64> = (0..rows)
        .map(|i| (0..n).map(|j| a_host[i * n + j] * x_host[j]).sum())
        .collect();
    let got = y.to_vec()?;
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-9, "y differs from the plain loop by {worst}");
    println!(
        "y = A x over {rows} x {n}: the first entries {:?}, equal to the plain loop",
        &got[..4]
    );
    Ok(())
}
