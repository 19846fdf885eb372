//! Misuse: handing a team loop's column token to another thread.
//!
//! A column token is the proof that this thread owns the column for the whole launch; on
//! another thread it could be used while the owner stores at the same column. Team tokens are
//! neither `Send` nor `Sync`, so moving one into a spawned thread must not compile.

use hoplite_core::{TeamPolicy, TeamThreadRange, parallel_for};
use hoplite_serial::Serial;

fn main() {
    let _ = parallel_for("column-send", TeamPolicy::new(Serial::default(), 2, 1), |m| {
        TeamThreadRange::new(m, 8).parallel_for(|j| {
            let handle = std::thread::spawn(move || *j);
            let _ = handle.join();
        });
    });
}
