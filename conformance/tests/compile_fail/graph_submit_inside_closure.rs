//! Misuse: submitting the graph from inside its construction closure.
//!
//! The construction phase cannot execute: the builder has no `submit`, and the runnable
//! `Graph` exists only once `create_graph` has returned. It must not compile.

use hoplite_graph::create_graph;
use hoplite_serial::Serial;

fn main() {
    let _graph = create_graph(&Serial::default(), |g| {
        g.host("step", || {});
        g.submit();
    });
}
