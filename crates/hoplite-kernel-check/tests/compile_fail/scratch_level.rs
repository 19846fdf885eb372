use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::view::access::BoundAtomic;

#[kernel]
fn level_one(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>) {
    let s = m.team_scratch(1).alloc::<f64>(4).unwrap();
    s.set(0, 1.0);
    out.fetch_add(m.league_rank(), s.get(0));
}

fn main() {}
