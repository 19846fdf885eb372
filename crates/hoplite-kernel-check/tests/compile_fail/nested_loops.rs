use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::BoundAtomic;

#[kernel]
fn early_out(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, n: usize) {
    TeamThreadRange::new(m, n).parallel_for(|j| {
        if *j == 3 {
            return;
        }
        out.fetch_add(*j, 1.0);
    });
}

#[kernel]
fn custom(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>, n: usize) {
    let p = TeamThreadRange::new(m, n).parallel_reduce(
        |j, acc: &mut f64| *acc += *j as f64,
        Custom::new(|| 0.0, |a: &mut f64, b: f64| *a += b),
    );
    out.fetch_add(m.league_rank(), p);
}

fn main() {}
