//! MPI benchmarks on two ranks: ping-pong of a contiguous view through hoplite against raw
//! rsmpi on the same buffer; a strided column sent through a derived datatype against one packed
//! and unpacked by hand; a Jacobi step with the eager halo exchange against the DAG one that
//! overlaps the deep interior.
//!
//! `cargo bench -p hoplite-mpi` starts itself under `mpirun -np 2`. Rank 0 runs criterion; for
//! each batch it tells rank 1 what to do and how many times (`iter_custom`), so that both ranks
//! stay in step whatever iteration counts criterion picks.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use hoplite_core::{LayoutStride, MDRangePolicy, Slice, View, parallel_for};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions, Execution};
use hoplite_mpi::mpi::topology::{Communicator, SimpleCommunicator};
use hoplite_mpi::mpi::traits::{Destination, Source};
use hoplite_mpi::{Comm, CommExt, Halo, Mpi};
use hoplite_serial::Serial;

const STOP: u64 = 0;
const PING_HOPLITE: u64 = 1;
const PING_RAW: u64 = 2;
const COLUMN_DATATYPE: u64 = 3;
const COLUMN_PACKED: u64 = 4;
const JACOBI_EAGER: u64 = 5;
const JACOBI_DAG: u64 = 6;

/// Ping-pong sizes in f64 elements: 8 KiB, 1 MiB, 8 MiB.
const SIZES: [usize; 3] = [1 << 10, 1 << 17, 1 << 20];
const SIDE: usize = 1024;
const JACOBI_SIDE: usize = 512;

struct Buffers {
    world: Comm,
    raw: SimpleCommunicator,
    ping: Vec<View<f64, 1>>,
    matrix: View<f64, 2>,
    halo: Halo<2>,
    u: View<f64, 2>,
    next: View<f64, 2>,
    ctx: Context<HostDevice<Serial>>,
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none() {
        relaunch_under_mpirun();
        return;
    }
    let mpi = Mpi::init().expect("MPI");
    let world = mpi.world();
    assert_eq!(world.size(), 2, "the benchmarks run on exactly 2 ranks");
    let halo = Halo::<2>::new(&world, [0, 0], [false, false], 1).expect("halo");
    let [pr, pc] = halo.dims();
    let (rows, cols) = (JACOBI_SIDE / pr, JACOBI_SIDE / pc);
    let b = Buffers {
        world: world.clone(),
        raw: SimpleCommunicator::world(),
        ping: SIZES
            .iter()
            .map(|&n| View::new("ping", [n]).expect("view"))
            .collect(),
        matrix: View::new("matrix", [SIDE, SIDE]).expect("matrix"),
        halo,
        u: View::new("u", [rows + 2, cols + 2]).expect("u"),
        next: View::new("next", [rows + 2, cols + 2]).expect("next"),
        ctx: Context::new(
            vec![HostDevice::partitioned("cpu", &Serial::default(), 2).expect("device")],
            ContextOptions::default().execution(Execution::Async),
        )
        .expect("context"),
    };
    if world.rank() == 0 {
        drive(&b);
        command(&b, STOP, 0, 0);
    } else {
        serve(&b);
    }
}

/// Starts this binary on two ranks and exits with mpirun's status.
fn relaunch_under_mpirun() {
    let exe = std::env::current_exe().expect("this binary");
    let mut cmd = std::process::Command::new("mpirun");
    cmd.arg("--oversubscribe");
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        cmd.arg("--allow-run-as-root");
    }
    let status = cmd
        .args(["-np", "2"])
        .arg(exe)
        .args(std::env::args().skip(1))
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => println!("skipped: cannot start mpirun ({e}); install Open MPI (cargo xtask test does)"),
    }
}

/// Rank 0 tells rank 1 the next operation, its parameter and the iteration count.
fn command(b: &Buffers, op: u64, param: u64, iters: u64) {
    b.raw.process_at_rank(1).send(&[op, param, iters][..]);
}

fn serve(b: &Buffers) {
    loop {
        let mut cmd = [0u64; 3];
        b.raw.process_at_rank(0).receive_into(&mut cmd[..]);
        let [op, param, iters] = cmd;
        if op == STOP {
            return;
        }
        run(b, op, param as usize, iters, 1);
    }
}

/// One point of the five-point average (the benchmark's Jacobi kernel).
#[inline(always)]
fn average(up: f64, down: f64, left: f64, right: f64) -> f64 {
    0.25 * (up + down + left + right)
}

/// Runs `iters` rounds of `op` as rank `me`; returns the time taken.
fn run(b: &Buffers, op: u64, param: usize, iters: u64, me: i32) -> Duration {
    let other = 1 - me;
    let start = Instant::now();
    match op {
        PING_HOPLITE => {
            let v = &b.ping[param];
            for _ in 0..iters {
                if me == 0 {
                    b.world.send(v, other, 0).expect("send");
                    b.world.recv(v, other, 0).expect("recv");
                } else {
                    b.world.recv(v, other, 0).expect("recv");
                    b.world.send(v, other, 0).expect("send");
                }
            }
        }
        PING_RAW => {
            let v = &b.ping[param];
            let mut guard = v.host_write().expect("guard");
            let slice = guard.as_mut_slice().expect("contiguous");
            let peer = b.raw.process_at_rank(other);
            for _ in 0..iters {
                if me == 0 {
                    peer.send(&slice[..]);
                    peer.receive_into(&mut slice[..]);
                } else {
                    peer.receive_into(&mut slice[..]);
                    peer.send(&slice[..]);
                }
            }
        }
        COLUMN_DATATYPE => {
            let column: View<f64, 1, LayoutStride> =
                b.matrix.subview([Slice::All, Slice::Index(7)]).expect("column");
            for _ in 0..iters {
                if me == 0 {
                    b.world.send(&column, other, 0).expect("send");
                    b.world.recv(&column, other, 0).expect("recv");
                } else {
                    b.world.recv(&column, other, 0).expect("recv");
                    b.world.send(&column, other, 0).expect("send");
                }
            }
        }
        COLUMN_PACKED => {
            let mut packed = vec![0.0f64; SIDE];
            let peer = b.raw.process_at_rank(other);
            let pack = |packed: &mut [f64]| {
                let g = b.matrix.host_read().expect("read");
                for (i, p) in packed.iter_mut().enumerate() {
                    *p = g.get([i, 7]);
                }
            };
            let unpack = |packed: &[f64]| {
                let mut g = b.matrix.host_write().expect("write");
                for (i, &p) in packed.iter().enumerate() {
                    g.set([i, 7], p);
                }
            };
            for _ in 0..iters {
                if me == 0 {
                    pack(&mut packed);
                    peer.send(&packed[..]);
                    peer.receive_into(&mut packed[..]);
                    unpack(&packed);
                } else {
                    peer.receive_into(&mut packed[..]);
                    unpack(&packed);
                    pack(&mut packed);
                    peer.send(&packed[..]);
                }
            }
        }
        JACOBI_EAGER | JACOBI_DAG => {
            let (mut u, mut next) = (b.u.clone(), b.next.clone());
            let [rows, cols] = [u.extent(0) - 2, u.extent(1) - 2];
            let p = |lo: [usize; 2], hi: [usize; 2]| MDRangePolicy::new(Serial::default(), lo, hi);
            for _ in 0..iters {
                if op == JACOBI_EAGER {
                    b.halo.exchange(&u).expect("exchange");
                    parallel_for(
                        "jacobi",
                        (p([1, 1], [rows + 1, cols + 1]), (next.write(), u.read())),
                        |(ij, (n, u))| {
                            n.set(
                                ij,
                                average(
                                    u.neighbor(ij, [-1, 0]),
                                    u.neighbor(ij, [1, 0]),
                                    u.neighbor(ij, [0, -1]),
                                    u.neighbor(ij, [0, 1]),
                                ),
                            );
                        },
                    )
                    .expect("jacobi");
                } else {
                    b.ctx.halo_exchange("halo", &b.halo, &u).expect("exchange");
                    let inner = [Slice::Range(1..rows + 1), Slice::Range(1..cols + 1)];
                    let u_in: View<f64, 2, LayoutStride> = u.subview(inner.clone()).expect("u_in");
                    let next_in: View<f64, 2, LayoutStride> = next.subview(inner).expect("next_in");
                    b.ctx
                        .launch(
                            "inner",
                            (p([1, 1], [rows - 1, cols - 1]), (next_in.write(), u_in.read())),
                            |(ij, (n, u))| {
                                n.set(
                                    ij,
                                    average(
                                        u.neighbor(ij, [-1, 0]),
                                        u.neighbor(ij, [1, 0]),
                                        u.neighbor(ij, [0, -1]),
                                        u.neighbor(ij, [0, 1]),
                                    ),
                                );
                            },
                        )
                        .expect("inner");
                    let edges = [
                        p([1, 1], [2, cols + 1]),
                        p([rows, 1], [rows + 1, cols + 1]),
                        p([2, 1], [rows, 2]),
                        p([2, cols], [rows, cols + 1]),
                    ];
                    for policy in edges {
                        b.ctx
                            .launch("boundary", (policy, (next.write(), u.read())), |(ij, (n, u))| {
                                n.set(
                                    ij,
                                    average(
                                        u.neighbor(ij, [-1, 0]),
                                        u.neighbor(ij, [1, 0]),
                                        u.neighbor(ij, [0, -1]),
                                        u.neighbor(ij, [0, 1]),
                                    ),
                                );
                            })
                            .expect("boundary");
                    }
                }
                std::mem::swap(&mut u, &mut next);
            }
            if op == JACOBI_DAG {
                b.ctx.synchronize().expect("synchronize");
            }
        }
        _ => unreachable!("unknown operation {op}"),
    }
    start.elapsed()
}

fn drive(b: &Buffers) {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let batch = |op: u64, param: usize, iters: u64| {
        command(b, op, param as u64, iters);
        run(b, op, param, iters, 0)
    };
    {
        let mut g = c.benchmark_group("ping-pong");
        for (k, &n) in SIZES.iter().enumerate() {
            // Two messages per round.
            g.throughput(Throughput::Bytes((2 * n * size_of::<f64>()) as u64));
            g.bench_function(BenchmarkId::new("hoplite view", n * 8), |bench| {
                bench.iter_custom(|iters| batch(PING_HOPLITE, k, iters))
            });
            g.bench_function(BenchmarkId::new("raw rsmpi", n * 8), |bench| {
                bench.iter_custom(|iters| batch(PING_RAW, k, iters))
            });
        }
    }
    {
        let mut g = c.benchmark_group("strided column round trip, 1024 of 1024x1024");
        g.bench_function("derived datatype", |bench| {
            bench.iter_custom(|iters| batch(COLUMN_DATATYPE, 0, iters))
        });
        g.bench_function("packed by hand", |bench| {
            bench.iter_custom(|iters| batch(COLUMN_PACKED, 0, iters))
        });
    }
    {
        let mut g = c.benchmark_group("jacobi step 512x512 on 2 ranks");
        g.bench_function("eager exchange", |bench| {
            bench.iter_custom(|iters| batch(JACOBI_EAGER, 0, iters))
        });
        g.bench_function("DAG overlap", |bench| {
            bench.iter_custom(|iters| batch(JACOBI_DAG, 0, iters))
        });
    }
    c.final_summary();
}
