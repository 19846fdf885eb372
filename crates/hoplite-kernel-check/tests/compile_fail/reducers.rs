use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::BoundAtomic;
use hoplite::BoundReader;

// Locations in team and nested reductions are not translated yet.
#[kernel]
fn nested_argmin(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, a: BoundReader<'_, f64, 1>, n: usize) {
    let best = TeamThreadRange::new(m, n).parallel_reduce(
        |j, acc: &mut ValLoc<f64>| acc.update_min(a.get(*j), *j),
        MinLoc::new(),
    );
    out.fetch_add(m.league_rank(), best.val);
}

// Tuples of reducers: in a team reduction, a nested reduction and as the accumulator.
#[kernel]
fn team_pair(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, a: BoundReader<'_, f64, 1>) {
    let v = a.get(m.team_rank());
    let both = m.team_reduce(&(Sum::new(), Max::new()), (v, v));
    out.fetch_add(m.league_rank(), both.0);
}

#[kernel]
fn nested_pair(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, a: BoundReader<'_, f64, 1>, n: usize) {
    let both = TeamThreadRange::new(m, n).parallel_reduce(
        |j, acc: &mut (f64, f64)| {
            acc.0 += a.get(*j);
        },
        (Sum::new(), Max::new()),
    );
    out.fetch_add(m.league_rank(), both.0);
}

#[kernel]
fn sum_and_max(i: Idx<'_>, a: BoundReader<'_, f64, 1>, acc: &mut (f64, f64)) {
    acc.0 += a.get(i);
}

fn main() {}
