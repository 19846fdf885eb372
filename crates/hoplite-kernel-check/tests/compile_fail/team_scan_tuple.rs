use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::BoundAtomic;

#[kernel]
fn scanned(m: &impl TeamMember, out: BoundAtomic<'_, usize, 1>) {
    let both = m.team_scan(m.team_rank());
    out.fetch_add(m.league_rank(), both.0);
}

fn main() {}
