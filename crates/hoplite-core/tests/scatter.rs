//! Scatter views: updates through thread-private copies, folded into the target by
//! `contribute`, with every operation, layout and failure the type documents.

use std::sync::{Arc, Barrier};

use hoplite_core::{
    Error, LayoutLeft, MDRangePolicy, RangePolicy, ScatterMax, ScatterMin, ScatterProd, ScatterView, View,
    parallel_for,
};
use hoplite_serial::Serial;

fn range(n: usize) -> RangePolicy<Serial> {
    RangePolicy::new(Serial::default(), 0..n)
}

fn samples(n: usize) -> Vec<u8> {
    (0..n as u64)
        .map(|k| (k.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// Threads launching at the same time into one scatter view each update a copy of their
/// own; `contribute` adds all of them to what the target held.
#[test]
fn concurrent_launches_fill_one_histogram_through_private_copies() {
    let bytes = Arc::new(samples(40_000));
    let mut want = [0u64; 256];
    for &b in bytes.iter() {
        want[b as usize] += 1;
    }
    let bins: View<u64, 1> = View::new("bins", [256]).expect("bins");
    bins.fill_host(5).expect("fill");
    let mut scatter = ScatterView::new(&bins);
    let threads = 4;
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (scatter, bytes, start) = (&scatter, bytes.clone(), &start);
            s.spawn(move || {
                start.wait();
                let quarter = bytes.len() / threads;
                parallel_for(
                    "histogram",
                    (
                        RangePolicy::new(Serial::default(), t * quarter..(t + 1) * quarter),
                        (scatter.access(),),
                    ),
                    |(i, (hist,))| hist.add(bytes[*i] as usize, 1),
                )
                .expect("launch");
                // Alive until all have updated: a thread that ended would leave its slot,
                // and its copy, to the next.
                start.wait();
            });
        }
    });
    assert_eq!(
        scatter.copies(),
        threads,
        "one copy per thread updating at the same time"
    );
    scatter.contribute().expect("contribute");
    let got = bins.to_vec().expect("bins");
    for b in 0..256 {
        assert_eq!(got[b], want[b] + 5, "bin {b}");
    }
    // The copies were reset: contributing again adds nothing, a second launch adds its own.
    scatter.contribute().expect("contribute");
    assert_eq!(bins.to_vec().expect("bins"), got);
    parallel_for("one more", (range(3), (scatter.access(),)), |(i, (hist,))| {
        hist.add(*i, 10)
    })
    .expect("launch");
    scatter.contribute().expect("contribute");
    let again = bins.to_vec().expect("bins");
    assert_eq!(again[..3], [got[0] + 10, got[1] + 10, got[2] + 10]);
    assert_eq!(again[3..], got[3..]);
}

/// Product, minimum and maximum over a rank-2 column-major target: the copies are
/// row-major whatever the target's layout, and each operation starts from its identity.
#[test]
fn every_operation_folds_into_a_column_major_target() {
    let policy = MDRangePolicy::new(Serial::default(), [0, 0], [2, 3]);
    let prod: View<i64, 2, LayoutLeft> = View::new("prod", [2, 3]).expect("prod");
    prod.fill_host(1).expect("fill");
    let mut scatter: ScatterView<i64, 2, ScatterProd, LayoutLeft> = ScatterView::new(&prod);
    for _ in 0..2 {
        parallel_for("prod", (policy.clone(), (scatter.access(),)), |(ij, (p,))| {
            let [i, j] = *ij;
            p.multiply([i, j], (10 * i + j + 1) as i64);
        })
        .expect("launch");
    }
    scatter.contribute().expect("contribute");
    let host = prod.host_read().expect("read");
    for i in 0..2 {
        for j in 0..3 {
            let v = (10 * i + j + 1) as i64;
            assert_eq!(host.get([i, j]), v * v, "[{i}, {j}]");
        }
    }
    drop(host);

    let lows: View<f64, 2, LayoutLeft> = View::new("lows", [2, 3]).expect("lows");
    lows.fill_host(0.5).expect("fill");
    let highs: View<f64, 2, LayoutLeft> = View::new("highs", [2, 3]).expect("highs");
    let mut min: ScatterView<f64, 2, ScatterMin, LayoutLeft> = ScatterView::new(&lows);
    let mut max: ScatterView<f64, 2, ScatterMax, LayoutLeft> = ScatterView::new(&highs);
    parallel_for(
        "extremes",
        (range(60), (min.access(), max.access())),
        |(i, (lo, hi))| {
            let at = [*i % 2, *i % 3];
            lo.min(at, *i as f64);
            hi.max(at, *i as f64);
        },
    )
    .expect("launch");
    min.contribute().expect("contribute");
    max.contribute().expect("contribute");
    // i % 2 and i % 3 name i % 6: the smallest such i is i % 6 itself, the largest 54 + i % 6;
    // the minimum keeps the target's 0.5 where that is smaller.
    let (lows, highs) = (lows.host_read().expect("read"), highs.host_read().expect("read"));
    for k in 0..6 {
        let at = [k % 2, k % 3];
        assert_eq!(lows.get(at), (k as f64).min(0.5), "min at {at:?}");
        assert_eq!(highs.get(at), (54 + k) as f64, "max at {at:?}");
    }
}

/// An update outside the extents is the launch's panic, named by the view, and the scatter
/// view stays usable; a target borrowed elsewhere refuses `contribute` and keeps the copies.
#[test]
fn bad_updates_and_a_borrowed_target_lose_nothing() {
    let bins: View<u32, 1> = View::new("bins", [4]).expect("bins");
    let mut scatter = ScatterView::new(&bins);
    let e = parallel_for("past the end", (range(8), (scatter.access(),)), |(i, (hist,))| {
        hist.add(*i, 1)
    })
    .expect_err("index 4 is out of bounds");
    match e {
        Error::KernelPanicked { message, .. } => {
            assert!(
                message.contains("view `bins`") && message.contains("out of bounds"),
                "{message}"
            )
        }
        other => panic!("expected the kernel's panic, got {other:?}"),
    }
    // The panicking launch updated indices 0..4 once each before it stopped.
    scatter.reset();
    parallel_for("in bounds", (range(4), (scatter.access(),)), |(i, (hist,))| {
        hist.add(*i, 2)
    })
    .expect("launch");
    let reader = bins.read();
    let e = scatter.contribute().expect_err("the target is borrowed");
    assert!(matches!(e, Error::BorrowConflict { .. }), "{e:?}");
    drop(reader);
    scatter.contribute().expect("contribute");
    assert_eq!(
        bins.to_vec().expect("bins"),
        [2; 4],
        "the refused contribute kept the copies"
    );
}

/// More threads than there are private copies update through one shared copy under a lock,
/// and the result is the same.
#[test]
fn threads_past_the_private_copies_share_one() {
    let threads = 300;
    let bins: View<u64, 1> = View::new("bins", [8]).expect("bins");
    let mut scatter = ScatterView::new(&bins);
    let all_alive = Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (scatter, all_alive) = (&scatter, &all_alive);
            s.spawn(move || {
                // Every thread is alive at once, so they hold 300 different thread slots.
                all_alive.wait();
                parallel_for("one", (range(1), (scatter.access(),)), |(_, (hist,))| {
                    hist.add(t % 8, 1)
                })
                .expect("launch");
                all_alive.wait();
            });
        }
    });
    assert!(scatter.copies() < threads, "{} copies", scatter.copies());
    scatter.contribute().expect("contribute");
    assert_eq!(
        bins.to_vec().expect("bins"),
        [300 / 8 + 1, 38, 38, 38, 37, 37, 37, 37]
    );
}

/// The point loop of a scatter launch runs unrolled: ranges of every length, and starting
/// anywhere, still visit each index once.
#[test]
fn unrolled_scatter_loops_visit_every_index_of_uneven_ranges_once() {
    let bytes = samples(1_100);
    for (lo, hi) in [(0, 0), (0, 1), (0, 3), (2, 7), (5, 1_010), (1, 1_100)] {
        let mut want = [0u64; 256];
        for &b in &bytes[lo..hi] {
            want[b as usize] += 1;
        }
        let bins: View<u64, 1> = View::new("bins", [256]).expect("bins");
        let mut scatter = ScatterView::new(&bins);
        parallel_for(
            "histogram",
            (RangePolicy::new(Serial::default(), lo..hi), (scatter.access(),)),
            |(i, (hist,))| hist.add(bytes[*i] as usize, 1),
        )
        .expect("launch");
        scatter.contribute().expect("contribute");
        assert_eq!(bins.to_vec().expect("bins"), want, "range {lo}..{hi}");
    }
}
