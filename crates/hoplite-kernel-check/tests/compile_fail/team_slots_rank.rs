use hoplite::prelude::*;
use hoplite::{BoundTeamSlots, kernel};

#[kernel]
fn slots(m: &impl TeamMember, out: BoundTeamSlots<'_, f64, 2>) {
    out.set(m.team_slot(), 1.0);
}

fn main() {}
