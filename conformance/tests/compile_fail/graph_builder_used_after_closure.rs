//! Misuse: the graph builder kept after the construction closure.
//!
//! The closure *is* the construction phase; a builder that escaped it could add nodes to a
//! graph that is already running. The builder's brand `'g` is fresh for each closure
//! (`for<'g> FnOnce(&GraphBuilder<'g, S>)`), so no outer variable can hold it. It must not
//! compile.

use hoplite_graph::create_graph;
use hoplite_serial::Serial;

fn main() {
    let mut kept = None;
    let _graph = create_graph(&Serial::default(), |g| {
        kept = Some(g);
    });
    if let Some(g) = kept {
        g.host("late", || {});
    }
}
