use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};

#[kernel]
fn leader(m: &impl TeamMember, out: BoundWriter<'_, f64, 1>) {
    let token = m.league_token();
    if let Some(l) = token.single() {
        out.set(l, 1.0);
    }
}

fn main() {}
