//! MPI operations as profile regions: with the trace connector recording, every rank's trace
//! holds a region per barrier, collective and point-to-point call, beside its kernels.

mod support;

use hoplite_core::profiling::{start_trace, write_trace};
use hoplite_core::{RangePolicy, Sum, View, parallel_for};
use hoplite_mpi::{Error, Mpi};
use hoplite_serial::Serial;

#[test]
fn mpi_calls_are_regions_on_2_ranks() {
    support::run_ranks("rank_regions", 2);
}

#[test]
#[ignore = "a rank of `mpi_calls_are_regions_on_2_ranks`, run under mpirun"]
fn rank_regions() {
    if !support::is_rank() {
        println!("skipped: runs only as a rank under mpirun (see mpi_calls_are_regions_on_2_ranks)");
        return;
    }
    // A failed check panics, and the panic aborts every rank (see `support::is_rank`).
    regions_checks().expect("the rank's checks");
}

fn regions_checks() -> Result<(), Error> {
    start_trace()?;
    let mpi = Mpi::init()?;
    let world = mpi.world();
    let rank = world.rank();
    let x: View<f64, 1> = View::new("x", [100])?;
    parallel_for(
        "fill",
        (RangePolicy::new(Serial::default(), 0..100), (x.write(),)),
        |(i, (x,))| x.set(i, rank as f64),
    )?;
    world.barrier()?;
    let total = world.all_reduce(rank as i64 + 1, &Sum::new())?;
    assert_eq!(total, 3);
    if rank == 0 {
        world.send(&x, 1, 7)?;
    } else {
        world.recv(&x, 0, 7)?;
        assert_eq!(x.to_vec()?, vec![0.0; 100]);
    }
    let path = std::env::temp_dir().join(format!("hoplite-mpi-regions-{}-{rank}.json", std::process::id()));
    write_trace(&path)?;
    let trace = std::fs::read_to_string(&path).expect("the trace was written");
    let _ = std::fs::remove_file(&path);
    let p2p = if rank == 0 { "send" } else { "recv" };
    for name in ["barrier", "all_reduce", p2p] {
        let begin = format!(r#""ph":"B","name":"hoplite-mpi {name}""#);
        assert!(
            trace.contains(&begin),
            "rank {rank}: no region `hoplite-mpi {name}` in {trace}"
        );
    }
    assert!(
        trace.contains(r#""name":"fill","cat":"parallel_for""#),
        "rank {rank}: {trace}"
    );
    println!("{}", support::PASSED);
    Ok(())
}
