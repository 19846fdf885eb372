//! Misuse: calling a backend's internal walk over a policy from user code.
//!
//! `SerialPolicy::run_all` and `RayonPolicy::rayon_for` make iteration tokens and team
//! members. Called from inside a team kernel they would hand a second member, which owns every
//! column of a team loop, to each thread of the team, so both threads could store to every
//! element of the team's row. They take a value of a type that only their crate can name, so
//! no code outside the backend can call them.

use hoplite_core::{TeamPolicy, View, parallel_for};
use hoplite_rayon::{RayonPolicy, RayonSpace};
use hoplite_serial::{Serial, SerialPolicy};

fn main() {
    let a: View<f64, 2> = View::new("a", [2, 8]).expect("allocates");
    let space = RayonSpace::with_threads(2).expect("pool");
    let _ = parallel_for("outer", (TeamPolicy::new(space.clone(), 2, 2), (a.write(),)), |(_m, (_a,))| {
        // The second argument must be the crate-private `Internal`: nothing else fits.
        let _ = SerialPolicy::run_all(&TeamPolicy::new(Serial::default(), 1, 1), (), "inner", &|_m2: &_| {});
        let _ = RayonPolicy::rayon_for(&TeamPolicy::new(space.clone(), 1, 1), (), "inner", &|_m2: &_| {});
    });
}
