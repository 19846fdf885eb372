//! A distributed 2-D heat equation (Jacobi iteration) on N ranks, checked against the
//! single-process run of the same kernel.
//!
//! ```text
//! cargo build -p hoplite-mpi --example heat
//! mpirun --oversubscribe -np 4 target/debug/examples/heat [--dag] [steps] [side]
//! ```
//!
//! The global `side x side` grid, with a fixed boundary of zeros, is split into blocks over a
//! process grid that MPI picks. Each rank stores its block with one ghost layer; every step
//! exchanges the ghost layers ([`Halo::exchange`]) and applies the five-point update on the
//! interior. Rank 0 then gathers the blocks and runs the whole grid alone with the same kernel:
//! every point's update is the same arithmetic on the same values in the same order, so the
//! two fields are bitwise identical, whatever the number of ranks.
//!
//! With `--dag` the step runs on the implicit DAG runtime instead: the halo exchange is a
//! vertex, the interior update (which needs no ghost) another one that overlaps it, and the
//! boundary rows and columns a third one that the runtime orders after the exchange.

use hoplite_core::{LayoutStride, MDRangePolicy, Slice, View, parallel_for};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions, Execution};
use hoplite_mpi::{CommExt, Error, Halo, Mpi};
use hoplite_serial::Serial;

/// The diffusion number of the explicit update (stable below 0.25).
const ALPHA: f64 = 0.2;

/// The initial temperature at global point (i, j) of the interior.
fn initial(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 13) % 17) as f64
}

/// One Jacobi step on the points of `policy`: `next = u + ALPHA * laplacian(u)`.
fn step(policy: MDRangePolicy<Serial, 2>, next: &View<f64, 2>, u: &View<f64, 2>) -> hoplite_core::Result<()> {
    parallel_for("jacobi", (policy, (next.write(), u.read())), |(ij, (next, u))| {
        let c = u.get(ij);
        let lap = u.neighbor(ij, [-1, 0])
            + u.neighbor(ij, [1, 0])
            + u.neighbor(ij, [0, -1])
            + u.neighbor(ij, [0, 1])
            - 4.0 * c;
        next.set(ij, c + ALPHA * lap);
    })
}

fn interior(rows: usize, cols: usize) -> MDRangePolicy<Serial, 2> {
    MDRangePolicy::new(Serial::default(), [1, 1], [rows + 1, cols + 1])
}

/// The whole grid on one process: the reference.
fn single_process(side: usize, steps: usize) -> Result<Vec<f64>, Error> {
    let mut u: View<f64, 2> = View::new("u", [side + 2, side + 2])?;
    let mut next: View<f64, 2> = View::new("next", [side + 2, side + 2])?;
    {
        let mut w = u.host_write()?;
        for i in 0..side {
            for j in 0..side {
                w.set([i + 1, j + 1], initial(i, j));
            }
        }
    }
    for _ in 0..steps {
        step(interior(side, side), &next, &u)?;
        std::mem::swap(&mut u, &mut next);
    }
    let inner: View<f64, 2, LayoutStride> =
        u.subview([Slice::Range(1..side + 1), Slice::Range(1..side + 1)])?;
    Ok(inner.to_vec()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let use_dag = args.iter().any(|a| a == "--dag");
    args.retain(|a| a != "--dag");
    let steps: usize = args.first().map_or(Ok(50), |s| s.parse())?;
    let side: usize = args.get(1).map_or(Ok(96), |s| s.parse())?;

    let mpi = Mpi::init()?;
    let world = mpi.world();
    let halo = Halo::<2>::new(&world, [0, 0], [false, false], 1)?;
    let grid = halo.comm().clone();
    let [pr, pc] = halo.dims();
    if !side.is_multiple_of(pr) || !side.is_multiple_of(pc) {
        return Err(format!(
            "side {side} is not divisible by the process grid {pr} x {pc}; pick another side"
        )
        .into());
    }
    let (rows, cols) = (side / pr, side / pc);
    let [cr, cc] = halo.coords();

    let mut u: View<f64, 2> = View::new("u", [rows + 2, cols + 2])?;
    let mut next: View<f64, 2> = View::new("next", [rows + 2, cols + 2])?;
    {
        let mut w = u.host_write()?;
        for i in 0..rows {
            for j in 0..cols {
                w.set([i + 1, j + 1], initial(cr * rows + i, cc * cols + j));
            }
        }
    }
    let start = std::time::Instant::now();
    if use_dag {
        let device = HostDevice::partitioned("cpu", &Serial::default(), 2)?;
        let ctx = Context::new(
            vec![device],
            ContextOptions::default().execution(Execution::Async),
        )?;
        let deep = |space: Serial| MDRangePolicy::new(space, [1, 1], [rows - 1, cols - 1]);
        for _ in 0..steps {
            // The exchange writes only ghost cells; the deep interior, taken through subviews
            // without ghosts, reads none of them, so it runs while the exchange is under way.
            // The boundary update reads ghosts: the runtime puts it after the exchange.
            ctx.halo_exchange("halo", &halo, &u)?;
            if rows > 2 && cols > 2 {
                let inner = [Slice::Range(1..rows + 1), Slice::Range(1..cols + 1)];
                let u_in: View<f64, 2, LayoutStride> = u.subview(inner.clone())?;
                let next_in: View<f64, 2, LayoutStride> = next.subview(inner)?;
                ctx.launch(
                    "jacobi inner",
                    (deep(Serial::default()), (next_in.write(), u_in.read())),
                    |(ij, (next, u))| {
                        next.set(
                            ij,
                            update(
                                u.get(ij),
                                u.neighbor(ij, [-1, 0]),
                                u.neighbor(ij, [1, 0]),
                                u.neighbor(ij, [0, -1]),
                                u.neighbor(ij, [0, 1]),
                            ),
                        );
                    },
                )?;
            }
            for policy in boundary_policies(rows, cols) {
                ctx.launch(
                    "jacobi boundary",
                    (policy, (next.write(), u.read())),
                    |(ij, (next, u))| {
                        next.set(
                            ij,
                            update(
                                u.get(ij),
                                u.neighbor(ij, [-1, 0]),
                                u.neighbor(ij, [1, 0]),
                                u.neighbor(ij, [0, -1]),
                                u.neighbor(ij, [0, 1]),
                            ),
                        );
                    },
                )?;
            }
            std::mem::swap(&mut u, &mut next);
        }
        ctx.synchronize()?;
    } else {
        for _ in 0..steps {
            halo.exchange(&u)?;
            step(interior(rows, cols), &next, &u)?;
            std::mem::swap(&mut u, &mut next);
        }
    }
    let elapsed = start.elapsed();

    // Gather the blocks in rank order (the grid's ranks are row-major over its coordinates).
    let block: View<f64, 2, LayoutStride> =
        u.subview([Slice::Range(1..rows + 1), Slice::Range(1..cols + 1)])?;
    let gathered: View<f64, 1> = View::new("gathered", [side * side])?;
    grid.gather_view(&block, (grid.rank() == 0).then_some(&gathered), 0)?;
    if grid.rank() == 0 {
        let blocks = gathered.to_vec()?;
        let mut field = vec![0.0; side * side];
        for r in 0..pr * pc {
            let (br, bc) = (r / pc, r % pc);
            for i in 0..rows {
                for j in 0..cols {
                    field[(br * rows + i) * side + bc * cols + j] = blocks[r * rows * cols + i * cols + j];
                }
            }
        }
        let reference = single_process(side, steps)?;
        let differing = field
            .iter()
            .zip(&reference)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        let max_diff = field
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!(
            "heat: {side}x{side}, {steps} steps on {} ranks ({pr}x{pc}){}: {:.3} ms, checksum {:.6}",
            pr * pc,
            if use_dag { " with the DAG runtime" } else { "" },
            elapsed.as_secs_f64() * 1e3,
            field.iter().sum::<f64>()
        );
        if differing == 0 {
            println!("heat: bitwise identical to the single-process run");
        } else {
            return Err(format!(
                "{differing} points differ from the single-process run (max difference {max_diff:e})"
            )
            .into());
        }
    }
    Ok(())
}

/// The explicit update of one point from its value and its four neighbours' (the one formula
/// of every run, so all runs do the same arithmetic).
#[inline(always)]
fn update(c: f64, up: f64, down: f64, left: f64, right: f64) -> f64 {
    c + ALPHA * (up + down + left + right - 4.0 * c)
}

/// The interior points next to a ghost layer: first and last rows, first and last columns.
fn boundary_policies(rows: usize, cols: usize) -> Vec<MDRangePolicy<Serial, 2>> {
    let p = |lo: [usize; 2], hi: [usize; 2]| MDRangePolicy::new(Serial::default(), lo, hi);
    if rows <= 2 || cols <= 2 {
        return vec![p([1, 1], [rows + 1, cols + 1])];
    }
    vec![
        p([1, 1], [2, cols + 1]),
        p([rows, 1], [rows + 1, cols + 1]),
        p([2, 1], [rows, 2]),
        p([2, cols], [rows, cols + 1]),
    ]
}
