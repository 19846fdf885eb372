//! Heat diffusion over NUMA nodes: the plate's rows are cut into blocks, each block in memory
//! bound to one node and swept by that node's pool, all blocks at once; between sweeps each
//! block's first and last rows go to its neighbours' ghost rows. The result is checked against
//! the whole plate swept on one serial instance: the same arithmetic, so the same bits.
//!
//! `cargo run --release --example numa_heat --features numa`; on a machine with one node,
//! `HOPLITE_NUMA_TOPOLOGY="pack:2 numa:1 core:1 pu:1"` runs it as if on two (pools unbound).

use hoplite::numa::{NumaMemory, NumaSpace};
use hoplite::prelude::*;
use hoplite::{LayoutRight, Serial};

#[path = "common/stencil.rs"]
mod stencil;
use stencil::sweep;

type Block = View<f64, 2, LayoutRight, NumaMemory>;

/// One block: global rows `first..end` with a ghost row on each side, twice (the sweeps
/// ping-pong), in the memory of one node, swept by that node's pool.
struct Part {
    pool: NumaSpace,
    first: usize,
    end: usize,
    bufs: [Block; 2],
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (n, steps, alpha) = (192, 200, 0.2);
    let start = |i: usize, j: usize| {
        if (80..112).contains(&i) && (80..112).contains(&j) {
            100.0
        } else {
            0.0
        }
    };
    let space = NumaSpace::new()?;
    let nodes = space.nodes();
    // At least two blocks, so that ghost rows are exchanged on a machine of one node too.
    let blocks = nodes.len().max(2);
    let mut parts = Vec::new();
    for b in 0..blocks {
        let node = nodes[b % nodes.len()];
        let (first, end) = (b * n / blocks, (b + 1) * n / blocks);
        let fill = |label: &str| -> std::result::Result<Block, Box<dyn std::error::Error + Send + Sync>> {
            let v = View::new_in(space.memory_on(node)?, label, [end - first + 2, n])?;
            let mut w = v.host_write()?;
            for (r, i) in (first..end).enumerate() {
                (0..n).for_each(|j| w.set([r + 1, j], start(i, j)));
            }
            drop(w);
            Ok(v)
        };
        parts.push(Part {
            pool: space.node(node)?,
            first,
            end,
            bufs: [fill("u")?, fill("next")?],
        });
    }

    for step in 0..steps {
        let (from, to) = (step % 2, (step + 1) % 2);
        // Ghost rows: the last row of the block above, the first of the block below.
        for b in 1..blocks {
            let (above, below) = (&parts[b - 1], &parts[b]);
            let rows = above.end - above.first;
            let last: Vec<f64> = {
                let r = above.bufs[from].host_read()?;
                (0..n).map(|j| r.get([rows, j])).collect()
            };
            let head: Vec<f64> = {
                let r = below.bufs[from].host_read()?;
                (0..n).map(|j| r.get([1, j])).collect()
            };
            let mut w = below.bufs[from].host_write()?;
            last.iter().enumerate().for_each(|(j, &v)| w.set([0, j], v));
            drop(w);
            let mut w = above.bufs[from].host_write()?;
            head.iter()
                .enumerate()
                .for_each(|(j, &v)| w.set([rows + 1, j], v));
        }
        // Every block at once, each on its node's pool: the plate's interior rows it holds.
        std::thread::scope(|scope| {
            let sweeps: Vec<_> = parts
                .iter()
                .map(|p| {
                    scope.spawn(move || {
                        let (lo, hi) = (p.first.max(1), p.end.min(n - 1));
                        let rows = MDRangePolicy::new(
                            p.pool.clone(),
                            [lo - p.first + 1, 1],
                            [hi - p.first + 1, n - 1],
                        );
                        parallel_for(
                            "sweep",
                            (rows, (p.bufs[to].write(), p.bufs[from].read())),
                            sweep::with(alpha),
                        )
                    })
                })
                .collect();
            sweeps.into_iter().try_for_each(
                |s| -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
                    Ok(s.join().map_err(|_| "a sweep panicked")??)
                },
            )
        })?;
    }

    // The same sweeps on the whole plate, on one serial instance.
    let whole = |label: &str| {
        View::<f64, 2>::from_slice(
            label,
            [n, n],
            &(0..n * n).map(|k| start(k / n, k % n)).collect::<Vec<_>>(),
        )
    };
    let (mut u, mut next) = (whole("u")?, whole("next")?);
    let interior = MDRangePolicy::new(Serial::default(), [1, 1], [n - 1, n - 1]);
    for _ in 0..steps {
        parallel_for(
            "sweep",
            (interior.clone(), (next.write(), u.read())),
            sweep::with(alpha),
        )?;
        std::mem::swap(&mut u, &mut next);
    }
    let want = u.host_read()?;
    let last = steps % 2;
    let mut heat = 0.0;
    for p in &parts {
        let got = p.bufs[last].host_read()?;
        for (r, i) in (p.first..p.end).enumerate() {
            for j in 0..n {
                assert_eq!(got.get([r + 1, j]), want.get([i, j]), "point ({i}, {j})");
                heat += got.get([r + 1, j]);
            }
        }
    }
    println!(
        "{steps} sweeps of a {n}x{n} plate in {blocks} blocks over {} NUMA node(s) ({:?}): the serial plate's values, heat left {heat:.1}",
        nodes.len(),
        parts.iter().map(|p| p.first..p.end).collect::<Vec<_>>()
    );
    Ok(())
}
