//! Collectives with every built-in reducer and a custom one, on views and scalars, and bad
//! input, on 2 and 4 ranks.

mod support;

use hoplite_core::{
    BAnd, BOr, Custom, LAnd, LOr, LayoutLeft, LayoutStride, Max, MaxLoc, Min, MinLoc, Prod, RangePolicy,
    Slice, Sum, ValLoc, View, parallel_reduce,
};
use hoplite_mpi::{Error, Mpi};
use hoplite_serial::Serial;

#[test]
fn collectives_on_2_ranks() {
    support::run_ranks("rank_collectives", 2);
}

#[test]
fn collectives_on_4_ranks() {
    support::run_ranks("rank_collectives", 4);
}

#[test]
#[ignore = "a rank of `collectives_on_*_ranks`, run under mpirun"]
fn rank_collectives() {
    if !support::is_rank() {
        println!("skipped: runs only as a rank under mpirun (see collectives_on_2_ranks)");
        return;
    }
    // A failed check panics, and the panic aborts every rank (see `support::is_rank`).
    collectives_checks().expect("the rank's checks");
}

fn collectives_checks() -> Result<(), Error> {
    let mpi = Mpi::init()?;
    let world = mpi.world();
    let rank = world.rank();
    let size = world.size();
    let r = rank as i64;
    let n = size as i64;

    // Built-in operations on scalars.
    assert_eq!(
        world.all_reduce(r as f64 + 0.5, &Sum::<f64>::new())?,
        (0..n).map(|k| k as f64 + 0.5).sum::<f64>()
    );
    assert_eq!(world.all_reduce(r, &Sum::<i64>::new())?, n * (n - 1) / 2);
    assert_eq!(
        world.all_reduce(rank + 1, &Prod::<i32>::new())?,
        (1..=size).product::<i32>()
    );
    assert_eq!(
        world.all_reduce(-(r as f64), &Min::<f64>::new())?,
        -((n - 1) as f64)
    );
    assert_eq!(world.all_reduce(rank, &Max::<i32>::new())?, size - 1);
    assert!(!world.all_reduce(rank != 1, &LAnd)?, "rank 1 says false");
    assert!(
        world.all_reduce(rank == size - 1, &LOr)?,
        "the last rank says true"
    );
    assert_eq!(
        world.all_reduce(!(1u32 << rank), &BAnd::<u32>::new())?,
        !((1u32 << size) - 1)
    );
    assert_eq!(
        world.all_reduce(1u64 << rank, &BOr::<u64>::new())?,
        (1u64 << size) - 1
    );

    // parallel_reduce on each rank, then all_reduce with the same reducer: rank r minimizes
    // f(i) = (i - 100 r - 7)^2 + r over its indices 100 r..100 (r + 1).
    let minloc = MinLoc::<f64>::new();
    let base = 100 * rank as usize;
    let local = parallel_reduce(
        "local minimum",
        RangePolicy::new(Serial::default(), base..base + 100),
        |i, acc: &mut ValLoc<f64>| {
            let x = *i as f64 - (base + 7) as f64;
            acc.update_min(x * x + rank as f64, *i);
        },
        &minloc,
    )?;
    assert_eq!(local.loc, Some(base + 7));
    let global = world.all_reduce(local, &minloc)?;
    assert_eq!(
        global,
        ValLoc {
            val: 0.0,
            loc: Some(7)
        },
        "rank 0 has the smallest"
    );
    // Ties keep the lowest location, whichever rank holds it.
    let tie = ValLoc {
        val: 1.0,
        loc: Some(1000 - rank as usize),
    };
    assert_eq!(
        world.all_reduce(tie, &MaxLoc::<f64>::new())?.loc,
        Some(1001 - size as usize)
    );
    assert_eq!(
        world.reduce(tie, &MinLoc::<f64>::new(), size - 1)?.map(|v| v.loc),
        (rank == size - 1).then_some(Some(1001 - size as usize))
    );

    // A custom, non-commutative reducer: digits concatenated in rank order.
    let concat = Custom::new(
        || (0u64, 0u32),
        |dst: &mut (u64, u32), src: (u64, u32)| {
            *dst = (dst.0 * 10u64.pow(src.1) + src.0, dst.1 + src.1);
        },
    );
    let digits = world.all_reduce(((rank + 1) as u64, 1u32), &concat)?;
    let expected: u64 = (1..=size as u64).fold(0, |acc, d| acc * 10 + d);
    assert_eq!(digits, (expected, size as u32), "rank order kept");

    // Views: element-wise, in place, a strided subview included.
    let m: View<i64, 2> = View::new("m", [4, 5])?;
    {
        let mut w = m.host_write()?;
        for i in 0..4 {
            for j in 0..5 {
                w.set([i, j], (i * 5 + j) as i64 * (r + 1));
            }
        }
    }
    world.all_reduce_view(&m, &Sum::<i64>::new())?;
    let total = n * (n + 1) / 2;
    let got = m.to_vec()?;
    assert!(
        got.iter().enumerate().all(|(k, &v)| v == k as i64 * total),
        "{got:?}"
    );
    let column: View<i64, 1, LayoutStride> = m.subview([Slice::All, Slice::Index(2)])?;
    column.fill_host(r)?;
    world.all_reduce_view(&column, &Max::<i64>::new())?;
    assert_eq!(column.to_vec()?, vec![n - 1; 4]);
    assert_eq!(m.host_read()?.get([0, 1]), total, "outside the column untouched");

    // Broadcast of a LayoutLeft view and of a scalar.
    let left: View<f64, 2, LayoutLeft> = View::new("left", [3, 2])?;
    if rank == 1 {
        let mut w = left.host_write()?;
        for i in 0..3 {
            for j in 0..2 {
                w.set([i, j], (i * 10 + j) as f64);
            }
        }
    }
    world.broadcast_view(&left, 1)?;
    assert_eq!(left.host_read()?.get([2, 1]), 21.0);
    assert_eq!(world.broadcast(if rank == 1 { 42u16 } else { 0 }, 1)?, 42);

    // Gather a strided 2x2 block of each rank into rank 0, in rank order.
    let block: View<i64, 2, LayoutStride> = m.subview([Slice::Range(1..3), Slice::Range(3..5)])?;
    block.fill_host(r)?;
    block.host_write()?.set([1, 1], 100 + r);
    let all: View<i64, 1> = View::new("all", [4 * size as usize])?;
    world.gather_view(&block, (rank == 0).then_some(&all), 0)?;
    if rank == 0 {
        let expected: Vec<i64> = (0..n).flat_map(|k| [k, k, k, 100 + k]).collect();
        assert_eq!(all.to_vec()?, expected);
    }

    // Bad input: every rank gets the same typed error, nobody hangs.
    let len = if rank == 0 { 3 } else { 4 };
    let uneven: View<f64, 1> = View::new("uneven", [len])?;
    let err = world
        .all_reduce_view(&uneven, &Sum::<f64>::new())
        .expect_err("uneven lengths");
    assert!(
        matches!(
            err,
            Error::CollectiveMismatch {
                what: "element count",
                min: 3,
                max: 4,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("`uneven`"), "{err}");
    let err = if rank == 0 {
        world.all_reduce(1.0f64, &Sum::<f64>::new()).map(|_| ())
    } else {
        world.all_reduce(1i64, &Sum::<i64>::new()).map(|_| ())
    }
    .expect_err("different element types");
    assert!(
        matches!(
            err,
            Error::CollectiveMismatch {
                what: "element type",
                ..
            }
        ),
        "{err}"
    );
    let err = world.broadcast(1u8, size).expect_err("root out of range");
    assert!(matches!(err, Error::RankOutOfRange { .. }), "{err}");
    let err = world.gather_view(&block, None::<&View<i64, 1>>, 0);
    if rank == 0 {
        assert!(matches!(err, Err(Error::BadExtent { .. })), "{err:?}");
        // The others are inside the gather now: complete it.
        world.gather_view(&block, Some(&all), 0)?;
    } else {
        err?;
    }
    let guard = m.host_read()?;
    let err = world
        .all_reduce_view(&m, &Sum::<i64>::new())
        .expect_err("a borrowed view");
    assert!(
        matches!(err, Error::View(hoplite_core::Error::BorrowConflict { .. })),
        "{err}"
    );
    drop(guard);

    world.barrier()?;
    println!("{}", support::PASSED);
    Ok(())
}
