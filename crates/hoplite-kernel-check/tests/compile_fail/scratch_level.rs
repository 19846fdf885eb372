use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::BoundAtomic;

#[kernel]
fn level_two(m: &impl TeamMember, out: BoundAtomic<'_, f64, 1>) {
    let s = m.thread_scratch(2).alloc::<f64>(4).unwrap();
    s.set(0, 1.0);
    out.fetch_add(m.league_rank(), s.get(0));
}

fn main() {}
