use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::BoundAtomic;

#[kernel]
fn inline_sum(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, n: usize) {
    out.fetch_add(
        m.league_rank(),
        TeamThreadRange::new(m, n).parallel_reduce(|j, acc: &mut f64| *acc += *j as f64, Sum::new()),
    );
}

#[kernel]
fn team_vector(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, n: usize) {
    TeamVectorRange::new(m, n).parallel_for(|j| {
        out.fetch_add(*j, 1.0);
    });
}

fn main() {}
