//! Misuse: a token kept after its iteration (stored in a thread-local).
//!
//! A token proves "this iteration owns this index" only while the iteration runs; kept past
//! it, a later iteration (or launch) could use it to store at an index it does not own. Kernels
//! are generic over the token's brand `'it` (`for<'it> Fn(Idx<'it>)`), so no storage that
//! outlives the call can hold one. It must not compile.

use std::cell::RefCell;

use hoplite_core::{Idx, RangePolicy, parallel_for};
use hoplite_serial::Serial;

thread_local! {
    static KEPT: RefCell<Vec<Idx<'static>>> = const { RefCell::new(Vec::new()) };
}

fn main() {
    let _ = parallel_for("keep", RangePolicy::new(Serial::default(), 0..4), |i| {
        KEPT.with(|kept| kept.borrow_mut().push(i));
    });
}
