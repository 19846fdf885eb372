//! Point-to-point transfers of every layout, strided subviews and bad input, on 2 and 4 ranks.

mod support;

use hoplite_core::{LayoutLeft, LayoutStride, Slice, View};
use hoplite_mpi::{Error, Mpi, MpiValue};

#[test]
fn p2p_on_2_ranks() {
    support::run_ranks("rank_p2p", 2);
}

#[test]
fn p2p_on_4_ranks() {
    support::run_ranks("rank_p2p", 4);
}

#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Particle {
    x: f64,
    id: u32,
}
// SAFETY: a number and an integer; no pointers.
unsafe impl MpiValue for Particle {}
// SAFETY: every field is zeroable.
unsafe impl bytemuck::Zeroable for Particle {}

fn value(i: usize, j: usize) -> f64 {
    (i * 100 + j) as f64 + 0.25
}

#[test]
#[ignore = "a rank of `p2p_on_*_ranks`, run under mpirun"]
fn rank_p2p() {
    if !support::is_rank() {
        println!("skipped: runs only as a rank under mpirun (see p2p_on_2_ranks)");
        return;
    }
    // A failed check panics, and the panic aborts every rank (see `support::is_rank`).
    p2p_checks().expect("the rank's checks");
}

fn p2p_checks() -> Result<(), Error> {
    let mpi = Mpi::init()?;
    let world = mpi.world();
    let rank = world.rank();
    let partner = rank ^ 1;
    let sender = rank % 2 == 0;

    // 1-D contiguous.
    let x: View<f64, 1> = View::new("x", [1000])?;
    if sender {
        x.host_write()?
            .as_mut_slice()
            .expect("contiguous")
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = i as f64);
        world.send(&x, partner, 1)?;
    } else {
        world.recv(&x, partner, 1)?;
        let got = x.to_vec()?;
        assert!(
            got.iter().enumerate().all(|(i, &v)| v == i as f64),
            "1-D contiguous"
        );
    }

    // A LayoutLeft matrix sent into a LayoutRight one: the same index gets the same value.
    let left: View<f64, 2, LayoutLeft> = View::new("left", [5, 7])?;
    let right: View<f64, 2> = View::new("right", [5, 7])?;
    if sender {
        let mut w = left.host_write()?;
        for i in 0..5 {
            for j in 0..7 {
                w.set([i, j], value(i, j));
            }
        }
        drop(w);
        world.send(&left, partner, 2)?;
        world.recv(&right, partner, 3)?;
        let r = right.host_read()?;
        for i in 0..5 {
            for j in 0..7 {
                assert_eq!(r.get([i, j]), -value(i, j), "LayoutRight back into the sender");
            }
        }
    } else {
        world.recv(&right, partner, 2)?;
        let r = right.host_read()?;
        for i in 0..5 {
            for j in 0..7 {
                assert_eq!(
                    r.get([i, j]),
                    value(i, j),
                    "LayoutLeft into LayoutRight at [{i}, {j}]"
                );
            }
        }
        drop(r);
        let mut w = left.host_write()?;
        for i in 0..5 {
            for j in 0..7 {
                w.set([i, j], -value(i, j));
            }
        }
        drop(w);
        // And back, negated, from a view made here.
        let back: View<f64, 2> = View::new("back", [5, 7])?;
        deep_negate(&right, &back)?;
        world.send(&back, partner, 3)?;
    }

    // Strided subviews: a column of a matrix into a row of another, and a 3-D block.
    let m: View<f64, 2> = View::new("m", [6, 9])?;
    let column: View<f64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(4)])?;
    let cube: View<i32, 3> = View::new("cube", [4, 5, 6])?;
    let block: View<i32, 3, LayoutStride> =
        cube.subview([Slice::Range(1..3), Slice::Range(1..4), Slice::Range(2..6)])?;
    if sender {
        let mut w = m.host_write()?;
        for i in 0..6 {
            for j in 0..9 {
                w.set([i, j], value(i, j));
            }
        }
        drop(w);
        world.send(&column, partner, 4)?;
        let mut c = cube.host_write()?;
        for i in 0..4 {
            for j in 0..5 {
                for k in 0..6 {
                    c.set([i, j, k], (i * 100 + j * 10 + k) as i32);
                }
            }
        }
        drop(c);
        world.send(&block, partner, 5)?;
    } else {
        let row: View<f64, 1> = m.subview([Slice::Index(2), Slice::Range(0..6)])?;
        world.recv(&row, partner, 4)?;
        let r = m.host_read()?;
        for i in 0..6 {
            assert_eq!(r.get([2, i]), value(i, 4), "column into row at {i}");
        }
        assert_eq!(r.get([1, 0]), 0.0, "outside the row stays untouched");
        assert_eq!(r.get([2, 6]), 0.0, "outside the row stays untouched");
        drop(r);
        // Received into a strided block of the same shape elsewhere in a zeroed cube.
        let target: View<i32, 3, LayoutStride> =
            cube.subview([Slice::Range(2..4), Slice::Range(2..5), Slice::Range(0..4)])?;
        world.recv(&target, partner, 5)?;
        let c = cube.host_read()?;
        for i in 0..4 {
            for j in 0..5 {
                for k in 0..6 {
                    let inside = (2..4).contains(&i) && (2..5).contains(&j) && k < 4;
                    let expected = if inside {
                        ((i - 1) * 100 + (j - 1) * 10 + (k + 2)) as i32
                    } else {
                        0
                    };
                    assert_eq!(c.get([i, j, k]), expected, "3-D block at [{i}, {j}, {k}]");
                }
            }
        }
    }

    // A user type sent as bytes; non-blocking both ways.
    let particles: View<Particle, 1> = View::new("particles", [16])?;
    if sender {
        let mut w = particles.host_write()?;
        for i in 0..16 {
            w.set(
                i,
                Particle {
                    x: i as f64 * 0.5,
                    id: i as u32,
                },
            );
        }
        drop(w);
        let request = world.isend(&particles, partner, 6)?;
        assert!(particles.host_read().is_ok(), "a send only reads");
        assert!(particles.host_write().is_err(), "a send keeps writers out");
        request.wait()?;
    } else {
        let request = world.irecv(&particles, partner, 6)?;
        assert!(particles.host_read().is_err(), "no reads of half-received data");
        request.wait()?;
        let r = particles.host_read()?;
        for i in 0..16 {
            assert_eq!(
                r.get(i),
                Particle {
                    x: i as f64 * 0.5,
                    id: i as u32
                }
            );
        }
    }

    // Bad input.
    let err = world.send(&x, world.size(), 0).expect_err("rank out of range");
    assert!(
        matches!(err, Error::RankOutOfRange { rank, .. } if rank == world.size()),
        "{err}"
    );
    let err = world.send(&x, partner, -1).expect_err("negative tag");
    assert!(matches!(err, Error::InvalidTag { .. }), "{err}");
    let short: View<f64, 1> = View::new("short", [10])?;
    if sender {
        world.send(&short, partner, 7)?;
        world.send(&short, partner, 8)?;
    } else {
        let guard = x.host_read()?;
        let err = world
            .recv(&x, partner, 7)
            .expect_err("receive into a borrowed view");
        assert!(
            matches!(err, Error::View(hoplite_core::Error::BorrowConflict { .. })),
            "{err}"
        );
        drop(guard);
        // Ten elements into eight: MPI reports truncation, hoplite a size mismatch.
        let small: View<f64, 1> = View::new("small", [8])?;
        let err = world
            .recv(&small, partner, 7)
            .expect_err("message larger than the view");
        assert!(matches!(err, Error::SizeMismatch { expected: 64, .. }), "{err}");
        // Ten elements into twelve.
        let large: View<f64, 1> = View::new("large", [12])?;
        let err = world
            .recv(&large, partner, 8)
            .expect_err("message smaller than the view");
        assert!(
            matches!(
                err,
                Error::SizeMismatch {
                    received: 80,
                    expected: 96,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("`large`"), "{err}");
    }
    world.barrier()?;
    println!("{}", support::PASSED);
    Ok(())
}

/// `dst = -src`, element by element.
fn deep_negate(src: &View<f64, 2>, dst: &View<f64, 2>) -> Result<(), Error> {
    let s = src.host_read()?;
    let mut d = dst.host_write()?;
    for i in 0..src.extent(0) {
        for j in 0..src.extent(1) {
            d.set([i, j], -s.get([i, j]));
        }
    }
    Ok(())
}
