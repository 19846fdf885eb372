//! Misuse: a pattern the space does not dispatch for the policy: a scan over an MDRange.
//!
//! A prefix sum needs one order of the indices; an MDRange has none that all backends share,
//! so no backend implements `ParallelScan` for it. The error must name the space, the policy
//! and the remedy (`ParallelScan`'s `#[diagnostic::on_unimplemented]`).

use hoplite_core::{MDRangePolicy, parallel_scan};
use hoplite_serial::Serial;

fn main() {
    let _ = parallel_scan(
        "md-scan",
        MDRangePolicy::new(Serial::default(), [0, 0], [4, 4]),
        |ij, partial: &mut i64, _is_final: bool| *partial += (ij[0] + ij[1]) as i64,
    );
}
