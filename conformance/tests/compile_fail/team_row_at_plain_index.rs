//! Misuse: storing into a team's row at a plain column index.
//!
//! A row belongs to a whole team; each column belongs to one of its threads, and the proof of
//! that is the `TeamIdx` a team loop hands the owner. A plain `usize` would let every thread of
//! the team store at column 0 at once, so the row must not accept one.

use hoplite_core::{TeamMember, TeamPolicy, View, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let a: View<f64, 2> = View::new("a", [4, 8]).expect("allocates");
    let _ = parallel_for(
        "row-plain-index",
        (TeamPolicy::new(Serial::default(), 4, 1), (a.write(),)),
        |(m, (a,))| a.team_row(m.league_token()).set(0usize, 1.0),
    );
}
