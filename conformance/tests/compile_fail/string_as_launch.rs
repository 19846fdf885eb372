//! Misuse: a type that is not a policy where a launch is expected.
//!
//! `parallel_for` runs over a policy, or a policy with view handles. A `String` describing a
//! range is neither; the error must say so in the words of the concept (`LaunchSpec`'s
//! `#[diagnostic::on_unimplemented]`), not as an unsatisfied bound deep in the generics.

use hoplite_core::parallel_for;

fn main() {
    let _ = parallel_for("text", String::from("0..4"), |i: usize| {
        let _ = i;
    });
}
