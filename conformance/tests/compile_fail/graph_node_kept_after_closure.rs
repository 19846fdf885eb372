//! Misuse: a graph node kept after the construction closure.
//!
//! A node that escaped could get successors (`then_*`) after the graph was built. Nodes carry
//! the builder's invariant brand `'g`, which cannot leave the closure. It must not compile.

use hoplite_graph::{NodeRef, create_graph};
use hoplite_serial::Serial;

fn main() {
    let mut kept: Option<NodeRef<'_, Serial>> = None;
    let _graph = create_graph(&Serial::default(), |g| {
        kept = Some(g.host("first", || {}).erase());
    });
    if let Some(node) = kept {
        node.then_host("late", || {});
    }
}
