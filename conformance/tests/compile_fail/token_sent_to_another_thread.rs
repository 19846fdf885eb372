//! Misuse: a token sent to another thread.
//!
//! A token belongs to the thread running its iteration; on another thread it could be used
//! while the launch hands the same index to a later iteration. Tokens are neither `Send` nor
//! `Sync` (their brand holds a raw pointer), so moving one into `std::thread::spawn` must not
//! compile.

use hoplite_core::{RangePolicy, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let _ = parallel_for("send", RangePolicy::new(Serial::default(), 0..4), |i| {
        let handle = std::thread::spawn(move || i);
        let _ = handle.join();
    });
}
