//! Halo exchange of block-decomposed 1-, 2- and 3-D views against the global field, periodic
//! and not, on 2 and 4 ranks.

mod support;

use hoplite_core::{LayoutLeft, View};
use hoplite_mpi::{Error, Halo, Mpi};

#[test]
fn halo_on_2_ranks() {
    support::run_ranks("rank_halo", 2);
}

#[test]
fn halo_on_4_ranks() {
    support::run_ranks("rank_halo", 4);
}

/// The global field: a distinct value per global index.
fn global(index: &[i64]) -> f64 {
    index.iter().fold(0.0, |acc, &i| acc * 1000.0 + i as f64)
}

/// What a ghost or interior cell at local `idx` must hold after an exchange: the global value
/// of its (wrapped) global index, or the sentinel past a non-periodic edge.
fn expected<const D: usize>(halo: &Halo<D>, local: [usize; D], idx: [usize; D], sentinel: f64) -> f64 {
    let g = halo.ghost();
    let mut global_idx = [0i64; D];
    for d in 0..D {
        let n_global = (halo.dims()[d] * local[d]) as i64;
        let mut i = (halo.coords()[d] * local[d]) as i64 + idx[d] as i64 - g as i64;
        if i < 0 || i >= n_global {
            if !halo.periodic()[d] {
                return sentinel;
            }
            i = i.rem_euclid(n_global);
        }
        global_idx[d] = i;
    }
    global(&global_idx)
}

/// Fills the interior of `view` from the global field and its ghosts with `sentinel`.
fn fill<const D: usize, L: hoplite_core::ArrayLayout>(
    halo: &Halo<D>,
    view: &View<f64, D, L>,
    local: [usize; D],
    sentinel: f64,
) -> Result<(), Error> {
    let g = halo.ghost();
    let mut w = view.host_write()?;
    for_each(view.extents(), |idx| {
        let interior = (0..D).all(|d| idx[d] >= g && idx[d] < g + local[d]);
        w.set(
            idx,
            if interior {
                expected(halo, local, idx, sentinel)
            } else {
                sentinel
            },
        );
    });
    Ok(())
}

fn check<const D: usize, L: hoplite_core::ArrayLayout>(
    halo: &Halo<D>,
    view: &View<f64, D, L>,
    local: [usize; D],
    sentinel: f64,
) -> Result<(), Error> {
    let r = view.host_read()?;
    for_each(view.extents(), |idx| {
        assert_eq!(
            r.get(idx),
            expected(halo, local, idx, sentinel),
            "`{}` at {idx:?} on coords {:?}",
            view.label(),
            halo.coords()
        );
    });
    Ok(())
}

fn for_each<const D: usize>(extents: [usize; D], mut f: impl FnMut([usize; D])) {
    let len: usize = extents.iter().product();
    let mut idx = [0usize; D];
    for _ in 0..len {
        f(idx);
        for d in (0..D).rev() {
            idx[d] += 1;
            if idx[d] < extents[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[test]
#[ignore = "a rank of `halo_on_*_ranks`, run under mpirun"]
fn rank_halo() {
    if !support::is_rank() {
        println!("skipped: runs only as a rank under mpirun (see halo_on_2_ranks)");
        return;
    }
    // A failed check panics, and the panic aborts every rank (see `support::is_rank`).
    halo_checks().expect("the rank's checks");
}

fn halo_checks() -> Result<(), Error> {
    let mpi = Mpi::init()?;
    let world = mpi.world();
    let sentinel = -1.0;

    // 1-D, periodic, two ghost layers.
    let halo = Halo::<1>::new(&world, [0], [true], 2)?;
    let local = [5];
    let u: View<f64, 1> = View::new("u1", [local[0] + 4])?;
    fill(&halo, &u, local, sentinel)?;
    halo.exchange(&u)?;
    check(&halo, &u, local, sentinel)?;

    // 2-D, periodic in the first dimension only, one ghost layer; LayoutRight and LayoutLeft.
    let halo = Halo::<2>::new(&world, [0, 0], [true, false], 1)?;
    let local = [4, 6];
    let u: View<f64, 2> = View::new("u2", [local[0] + 2, local[1] + 2])?;
    fill(&halo, &u, local, sentinel)?;
    halo.exchange(&u)?;
    check(&halo, &u, local, sentinel)?;
    let left: View<f64, 2, LayoutLeft> = View::new("u2 left", [local[0] + 2, local[1] + 2])?;
    fill(&halo, &left, local, sentinel)?;
    halo.exchange(&left)?;
    check(&halo, &left, local, sentinel)?;

    // 3-D, periodic everywhere: edges and corners come through two hops.
    let halo = Halo::<3>::new(&world, [0, 0, 0], [true, true, true], 1)?;
    let local = [3, 4, 3];
    let u: View<f64, 3> = View::new("u3", [local[0] + 2, local[1] + 2, local[2] + 2])?;
    fill(&halo, &u, local, sentinel)?;
    halo.exchange(&u)?;
    check(&halo, &u, local, sentinel)?;

    // Bad input.
    let tiny: View<f64, 3> = View::new("tiny", [2, 5, 5])?;
    let err = halo.exchange(&tiny).expect_err("an extent under 3 x ghost");
    assert!(matches!(err, Error::BadExtent { .. }), "{err}");
    let err = Halo::<2>::new(&world, [world.size() as usize + 1, 1], [false, false], 1)
        .expect_err("a grid of the wrong size");
    assert!(matches!(err, Error::BadDecomposition { .. }), "{err}");
    let err = Halo::<1>::new(&world, [0], [false], 0).expect_err("no ghost layers");
    assert!(matches!(err, Error::BadDecomposition { .. }), "{err}");

    world.barrier()?;
    println!("{}", support::PASSED);
    Ok(())
}
