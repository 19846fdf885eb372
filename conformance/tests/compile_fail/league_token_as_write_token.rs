//! Misuse: storing at the league token that every thread of a team holds.
//!
//! All threads of a team get the same league token, so a store at it from each of them would
//! race. Only `league.single()` — the token on one thread of the team — is a write token; the
//! shared league token selects the team's row and reads as a number, but `set` must not take it.

use hoplite_core::{TeamMember, TeamPolicy, View, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let y: View<f64, 1> = View::new("y", [4]).expect("allocates");
    let _ = parallel_for(
        "league-store",
        (TeamPolicy::new(Serial::default(), 4, 1), (y.write(),)),
        |(m, (y,))| y.set(m.league_token(), 1.0),
    );
}
