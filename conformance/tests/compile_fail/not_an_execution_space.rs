//! Misuse: a type missing the `ExecutionSpace` concept used as an execution space.
//!
//! A policy launches on an execution-space instance; a `String` has no threads, fence, memory
//! space or limits. The error must come from `ExecutionSpace`'s
//! `#[diagnostic::on_unimplemented]` ("is not an execution space").

use hoplite_core::RangePolicy;

fn main() {
    let _policy = RangePolicy::new(String::from("cpu"), 0..4);
}
