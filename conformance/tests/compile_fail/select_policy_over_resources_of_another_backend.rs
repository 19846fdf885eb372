//! Misuse: a policy built over resources of the wrong type for its backend.
//!
//! The policy names the backend for serial spaces, so its resources must be serial spaces;
//! a vector of numbers is rejected at compile time.

use hoplite_select::{RoundRobin, SpaceBackend};
use hoplite_serial::Serial;

fn main() {
    let _policy: RoundRobin<u32, SpaceBackend<Serial>> = RoundRobin::with_resources(vec![1u32, 2]);
}
