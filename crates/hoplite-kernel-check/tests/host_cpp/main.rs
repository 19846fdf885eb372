//! Each kernel runs twice on the same inputs: natively (serial and rayon backends) and as its
//! generated CUDA C compiled by the host C++ compiler under the host header. The results must
//! be equal, bit for bit. Skipped, with a printed reason, when there is no C++ compiler.

#[path = "../kernels/mod.rs"]
mod kernels;

mod launches;
mod reducers;
mod semantics;
mod teams;
mod tokens;
mod walks;

use std::path::PathBuf;

use hoplite::device_kernel::DeviceJoin;
use hoplite::device_kernel::DeviceKernel;
use hoplite::prelude::*;
use hoplite::{RayonSpace, Serial};
use hoplite_kernel_check::{Grid, HostArray, HostModule, Outcome, Scratch, Value, host_compiler};
use kernels::*;

/// Compiles `K` for the host, or says why the check is skipped.
fn module<K: DeviceKernel>() -> Option<HostModule> {
    let Some(cxx) = host_compiler() else {
        println!("skipped: no host C++ compiler (set CXX, or install g++) to run the generated CUDA C");
        return None;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-host");
    match HostModule::compile::<K>(&cxx, &dir) {
        Ok(m) => Some(m),
        Err(e) => panic!("{e}\n--- generated source ---\n{}", K::cuda_source()),
    }
}

const ONE_BLOCK: Grid = Grid {
    blocks: [1, 1, 1],
    threads: [1, 1, 1],
};
/// A grid that covers ranges with several blocks and grid-stride steps.
const GRID_1D: Grid = Grid {
    blocks: [3, 1, 1],
    threads: [4, 1, 1],
};
const GRID_2D: Grid = Grid {
    blocks: [2, 3, 1],
    threads: [3, 2, 1],
};
const GRID_3D: Grid = Grid {
    blocks: [2, 1, 2],
    threads: [2, 3, 1],
};

/// A host view holding `data`.
fn view<T: hoplite::ViewValue, const R: usize>(
    label: &str,
    extents: [usize; R],
    data: &[T],
) -> Result<View<T, R>> {
    View::from_slice(label, extents, data)
}

fn f64s(n: usize, f: impl Fn(usize) -> f64) -> Vec<f64> {
    (0..n).map(f).collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Joins host partials in thread order, as a backend joins them.
/// Launches a `parallel_reduce` kernel on the host side, checks that it completed and
/// returns the partials in thread order.
fn device_partials(
    m: &HostModule,
    grid: Grid,
    begin: &[usize],
    end: &[usize],
    arrays: &mut [HostArray<'_>],
    scalars: &[Value],
    init: Value,
) -> Vec<Value> {
    let (outcome, partials) = m
        .launch_reduce(grid, begin, end, arrays, scalars, init)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
    partials
}

/// Launches a `parallel_for` kernel on the host side and checks that it completed.
fn run_for(
    m: &HostModule,
    grid: Grid,
    begin: &[usize],
    end: &[usize],
    arrays: &mut [HostArray<'_>],
    scalars: &[Value],
) {
    let outcome = m
        .launch_for(grid, begin, end, arrays, scalars)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
}

fn join_f64(partials: &[Value], join: impl Fn(f64, f64) -> f64, init: f64) -> f64 {
    partials.iter().fold(init, |a, p| match p {
        Value::F64(v) => join(a, *v),
        other => panic!("unexpected partial {other:?}"),
    })
}

/// A grid of `blocks` blocks, each one team of `team` threads.
fn team_grid(blocks: u32, team: usize) -> Grid {
    Grid {
        blocks: [blocks, 1, 1],
        threads: [team as u32, 1, 1],
    }
}

/// Runs a team `parallel_for` kernel over `rows` teams of `team` threads on the host side.
fn team_device(m: &HostModule, team: usize, rows: usize, arrays: &mut [HostArray<'_>], scalars: &[Value]) {
    let grid = team_grid(2, team);
    let outcome = m
        .launch_team_for(grid, rows, arrays, scalars)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
}
