//! Heat diffusion on a square plate: a 5-point `#[kernel]` stencil, Jacobi sweeps between two
//! views, written once for any launch space (`S: LaunchSpace` over views of memory it reaches).
//! The edges are held at 0 and a hot square in the middle spreads out; the example checks that
//! no temperature leaves the range it started in and prints how the plate cools.
//!
//! `cargo run --release --example heat`

use hoplite::prelude::*;
use hoplite::{BoundReader, LaunchSpace, LayoutRight, MemorySpace, SpaceAccessibility, kernel};

#[path = "common/stencil.rs"]
mod stencil;
use stencil::sweep;

/// The hottest point and the plate's total heat.
#[kernel]
fn hottest(ij: MdIdx<'_, 2>, u: BoundReader<'_, f64, 2>, acc: &mut f64) {
    let v = u.get(ij);
    if v > *acc {
        *acc = v;
    }
}

/// `steps` sweeps on `space`, ping-ponging between `a` and `b`; returns the view holding the
/// last state.
fn diffuse<'v, S, M>(
    space: &S,
    a: &'v View<f64, 2, LayoutRight, M>,
    b: &'v View<f64, 2, LayoutRight, M>,
    steps: usize,
) -> hoplite::Result<&'v View<f64, 2, LayoutRight, M>>
where
    S: LaunchSpace + SpaceAccessibility<M>,
    M: MemorySpace,
{
    let [rows, cols] = a.extents();
    let interior = MDRangePolicy::new(space.clone(), [1, 1], [rows - 1, cols - 1]);
    let (mut from, mut to) = (a, b);
    for _ in 0..steps {
        // alpha <= 1/4 keeps the explicit scheme stable.
        parallel_for(
            "sweep",
            (interior.clone(), (to.write(), from.read())),
            sweep::with(0.2),
        )?;
        std::mem::swap(&mut from, &mut to);
    }
    Ok(from)
}

fn main() -> Result<()> {
    let n = 256;
    let hot = |k: usize| {
        let (i, j) = (k / n, k % n);
        if (n / 2 - 16..n / 2 + 16).contains(&i) && (n / 2 - 16..n / 2 + 16).contains(&j) {
            100.0
        } else {
            0.0
        }
    };
    let start: Vec<f64> = (0..n * n).map(hot).collect();
    let a = View::<f64, 2>::from_slice("a", [n, n], &start)?;
    let b = View::<f64, 2>::from_slice("b", [n, n], &start)?; // edges stay 0 in both
    let space = DefaultExecutionSpace::default();
    let whole = MDRangePolicy::new(space.clone(), [0, 0], [n, n]);
    let mut steps_done = 0;
    for steps in [10, 90, 400] {
        let last = diffuse(&space, &a, &b, steps)?;
        steps_done += steps;
        let peak = parallel_reduce(
            "peak",
            (whole.clone(), (last.read(),)),
            hottest::with(),
            Max::<f64>::new(),
        )?;
        let total = parallel_reduce(
            "heat",
            (whole.clone(), (last.read(),)),
            |(ij, (u,)), acc: &mut f64| *acc += u.get(ij),
            Sum::<f64>::new(),
        )?;
        let lowest = parallel_reduce(
            "coldest",
            (whole.clone(), (last.read(),)),
            |(ij, (u,)), acc: &mut f64| *acc = acc.min(u.get(ij)),
            Min::<f64>::new(),
        )?;
        assert!(
            peak <= 100.0 && lowest >= 0.0,
            "the scheme left the starting range"
        );
        println!("after {steps_done:>3} sweeps: hottest {peak:7.3}, total heat {total:10.1}");
        // Keep iterating from the last state: copy it back into `a` when it ended in `b`.
        if std::ptr::eq(last, &b) {
            deep_copy(&a, &b)?;
        }
    }
    Ok(())
}
