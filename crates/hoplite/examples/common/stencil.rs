//! The heat examples' stencil: one Jacobi sweep of `u_t = alpha * laplacian(u)`.

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};

/// One Jacobi sweep of `u_t = alpha * laplacian(u)` at an interior point.
#[kernel]
pub fn sweep(ij: MdIdx<'_, 2>, next: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>, alpha: f64) {
    let around =
        u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    next.set(ij, u.get(ij) + alpha * (around - 4.0 * u.get(ij)));
}
