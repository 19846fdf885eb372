//! Misuse: storing into an outer team's row at the column tokens of a member of a
//! nested team launch, with the `Send + Sync` wall deliberately (and unsoundly) removed by an
//! `unsafe impl`.
//!
//! Team loops hand column `j` to the thread that owns it in *its* team; a nested launch's
//! one-thread team owns every column. Were its tokens accepted, every thread of the outer team
//! could store to every element of the row. Team tokens carry the brand of the member they came
//! from, and the row accepts only its own launch's brand (E0521). The same holds for team planes
//! (`team_plane_row_with_tokens_of_a_nested_member.rs`).

use hoplite_core::{TeamMember, TeamPolicy, TeamThreadRange, View, parallel_for};
use hoplite_serial::Serial;

/// Pretends its contents can be shared between threads (the unsound part of the misuse).
struct AssertShared<T>(T);
// SAFETY: it is not; this file must not compile.
unsafe impl<T> Send for AssertShared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for AssertShared<T> {}

impl<T> AssertShared<T> {
    fn get(&self) -> &T {
        &self.0
    }
}

fn main() {
    let a: View<f64, 2> = View::new("a", [2, 8]).expect("allocates");
    let outer = TeamPolicy::new(Serial::default(), 2, 1);
    let _ = parallel_for("outer", (outer, (a.write(),)), |(m, (a,))| {
        let row = AssertShared(a.team_row(m.league_token()));
        let _ = parallel_for("inner", TeamPolicy::new(Serial::default(), 1, 1), |m2| {
            TeamThreadRange::new(m2, 8).parallel_for(|j| row.get().set(j, 1.0));
        });
    });
}
