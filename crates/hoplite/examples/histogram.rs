//! A 256-bin histogram of bytes, four ways, each checked against a plain loop:
//!
//! * the fast idiom: a reduction whose value is the whole histogram (`Sum::<[u64; 256]>`),
//!   so each thread counts into its own copy and the copies are added once at the end;
//! * a `ScatterView` (Kokkos' `ScatterView`): the same private copies for a view of any size
//!   and rank, updated with `add` and folded into the view by `contribute`;
//! * an atomic handle of a view: simple, but every sample is an atomic add that threads
//!   contend on;
//! * a `UniqueToken`: each iteration holds a thread-private row of a rank-2 view and the rows
//!   are summed afterwards.
//!
//! `cargo run --release --example histogram`

use std::time::Instant;

use hoplite::prelude::*;
use hoplite::{UniqueToken, UniqueTokenSpace};

const BINS: usize = 256;

fn main() -> Result<()> {
    let n = 1 << 22;
    let bytes: Vec<u8> = (0..n)
        .map(|k| ((k as u64).wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut expected = [0u64; BINS];
    for &b in &bytes {
        expected[b as usize] += 1;
    }
    let space = DefaultExecutionSpace::default();

    // 1. The histogram as a reduction value.
    let t = Instant::now();
    let by_reduction = parallel_reduce(
        "histogram (reduction)",
        RangePolicy::new(space.clone(), 0..n),
        |i, hist: &mut [u64; BINS]| hist[bytes[*i] as usize] += 1,
        Sum::<[u64; BINS]>::new(),
    )?;
    println!("reduction:   {:>7.2} ms", t.elapsed().as_secs_f64() * 1e3);
    assert_eq!(by_reduction, expected);

    // 2. A scatter view: `add` goes into the running thread's private copy of the bins.
    let scattered = View::<u64, 1>::new("scattered", [BINS])?;
    let mut scatter = ScatterView::new(&scattered);
    let t = Instant::now();
    parallel_for(
        "histogram (scatter view)",
        (RangePolicy::new(space.clone(), 0..n), (scatter.access(),)),
        |(i, (hist,))| hist.add(bytes[*i] as usize, 1),
    )?;
    scatter.contribute()?;
    println!("scatter view: {:>6.2} ms", t.elapsed().as_secs_f64() * 1e3);
    assert_eq!(scattered.to_vec()?, expected);

    // 3. Atomic adds into one view.
    let bins = View::<u64, 1>::new("bins", [BINS])?;
    let t = Instant::now();
    {
        let hist = bins.atomic();
        parallel_for(
            "histogram (atomics)",
            RangePolicy::new(space.clone(), 0..n),
            |i| {
                hist.fetch_add(bytes[*i] as usize, 1);
            },
        )?;
    }
    println!("atomics:     {:>7.2} ms", t.elapsed().as_secs_f64() * 1e3);
    assert_eq!(bins.to_vec()?, expected);

    // 4. Thread-private rows chosen by a unique token, summed on the host.
    let tokens = space.unique_token();
    let rows = View::<u64, 2>::new("rows", [tokens.size(), BINS])?;
    let t = Instant::now();
    {
        let hist = rows.atomic(); // each row is touched by one holder at a time: no contention
        parallel_for("histogram (tokens)", RangePolicy::new(space.clone(), 0..n), |i| {
            let id = tokens.guard();
            hist.fetch_add([*id, bytes[*i] as usize], 1);
        })?;
    }
    let summed: Vec<u64> = {
        let rows = rows.host_read()?;
        (0..BINS)
            .map(|b| (0..tokens.size()).map(|r| rows.get([r, b])).sum())
            .collect()
    };
    println!("tokens:      {:>7.2} ms", t.elapsed().as_secs_f64() * 1e3);
    assert_eq!(summed, expected);

    println!("all four give the plain loop's {BINS} bins over {n} bytes");
    Ok(())
}
