//! Misuse: joining nodes of two different graphs.
//!
//! Each graph's builder has its own brand `'g`; the brand is invariant, so a `when_all` of one
//! graph accepts only nodes of that graph. It must not compile.

use hoplite_graph::create_graph;
use hoplite_serial::Serial;

fn main() {
    let space = Serial::default();
    let _outer = create_graph(&space, |outer| {
        let a = outer.host("a", || {}).erase();
        let _inner = create_graph(&space, |inner| {
            let b = inner.host("b", || {}).erase();
            inner.when_all([a, b]);
        });
    });
}
