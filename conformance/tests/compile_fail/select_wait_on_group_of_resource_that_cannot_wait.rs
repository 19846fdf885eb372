//! Misuse: waiting on the submission group of resources that cannot wait.
//!
//! The default backend's group waits on every resource, which needs the resource to implement
//! `hoplite_select::Wait`. oneDPL throws a `logic_error` at run time here; hoplite-select
//! refuses to compile `get_submission_group` for such a backend.

use hoplite_select::{DefaultBackend, RoundRobin, wait};

/// A resource with no way to wait for its work.
struct Ticket(u32);

fn main() {
    let policy: RoundRobin<Ticket, DefaultBackend<Ticket>> =
        RoundRobin::with_resources(vec![Ticket(0), Ticket(1)]);
    let group = policy.get_submission_group().expect("initialized");
    let _ = wait(&group);
}
