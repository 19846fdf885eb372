//! Misuse: taking rows of an outer team's plane with the tokens of a member of a
//! nested team launch, with the `Send + Sync` wall deliberately (and unsoundly) removed by an
//! `unsafe impl`.
//!
//! Team loops hand column `j` to the thread that owns it in *its* team; a nested launch's
//! one-thread team owns every column. Were its tokens accepted, every thread of the outer team
//! could store to every element of the plane. Team tokens carry the brand of the member they
//! came from, and the plane accepts only its own launch's brand (E0521).

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
    let b: View<f64, 3> = View::new("b", [2, 8, 4]).expect("allocates");
    let outer = TeamPolicy::new(Serial::default(), 2, 1);
    let _ = parallel_for("outer", (outer, (b.write(),)), |(m, (b,))| {
        let plane = AssertShared(b.team_plane(m.league_token()));
        let _ = parallel_for("inner", TeamPolicy::new(Serial::default(), 1, 1), |m2| {
            TeamThreadRange::new(m2, 8).parallel_for(|j| plane.get().row(j).set(0, 1.0));
        });
    });
}
