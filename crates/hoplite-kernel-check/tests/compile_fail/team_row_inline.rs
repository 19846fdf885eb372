use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

#[kernel]
fn rows(m: &impl TeamMember, out: BoundWriter<'_, f64, 2>, cols: usize) {
    TeamThreadRange::new(m, cols).parallel_for(|j| {
        out.team_row(m.league_token()).set(j, 1.0);
    });
}

fn main() {}
