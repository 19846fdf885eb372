//! Misuse: storing into an outer launch's team slots at the slot token of a member of a nested
//! team launch, with the `Send + Sync` wall deliberately (and unsoundly) removed by an
//! `unsafe impl`.
//!
//! Every thread of the outer team runs the nested launch, whose one team thread has slot
//! `[0, 0]`: were that token accepted, several outer threads would store to one element. The
//! slot token carries the brand of the member it came from, and the bound slots accept only
//! their own launch's brand (E0521).

use hoplite_core::{TeamMember, TeamPolicy, View, parallel_for};
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
    let partial: View<f64, 2> = View::new("partial", [2, 2]).expect("allocates");
    let outer = TeamPolicy::new(Serial::default(), 2, 1);
    let _ = parallel_for("outer", (outer, (partial.team_slots(),)), |(_m, (p,))| {
        let slots = AssertShared(p);
        let _ = parallel_for("inner", TeamPolicy::new(Serial::default(), 1, 1), |m2| {
            slots.get().set(m2.team_slot(), 1.0);
        });
    });
}
