//! Range, MDRange, reduction and scan patterns on pools of 1, 2 and 3 threads, checked value by
//! value against sequential oracles.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use hoplite_core::{
    Custom, IterationOrder, LAnd, MDRangePolicy, MaxLoc, MinLoc, RangePolicy, Schedule, Sum, ValLoc,
    parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_rayon::RayonSpace;

/// Pools of 1, 2 and 3 threads, shared by the tests of this binary.
fn pools() -> &'static [RayonSpace; 3] {
    static POOLS: OnceLock<[RayonSpace; 3]> = OnceLock::new();
    POOLS.get_or_init(|| [1, 2, 3].map(|n| RayonSpace::with_threads(n).expect("a pool")))
}

/// Static and dynamic schedules, with and without chunk sizes.
const SCHEDULES: [(Schedule, Option<usize>); 6] = [
    (Schedule::Static, None),
    (Schedule::Static, Some(7)),
    (Schedule::Static, Some(4096)),
    (Schedule::Dynamic, None),
    (Schedule::Dynamic, Some(1)),
    (Schedule::Dynamic, Some(333)),
];

fn policy(
    space: &RayonSpace,
    range: std::ops::Range<usize>,
    schedule: Schedule,
    chunk: Option<usize>,
) -> RangePolicy<RayonSpace> {
    let p = RangePolicy::new(space.clone(), range).with_schedule(schedule);
    match chunk {
        Some(c) => p.with_chunk_size(c),
        None => p,
    }
}

fn counters(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

#[test]
fn range_for_visits_every_index_exactly_once() {
    for space in pools() {
        for (schedule, chunk) in SCHEDULES {
            for n in [0, 1, 2, 5, 10_007] {
                let hits = counters(n);
                parallel_for("hits", policy(space, 3..3 + n, schedule, chunk), |i| {
                    hits[*i - 3].fetch_add(1, Ordering::Relaxed);
                })
                .expect("launch");
                let bad = hits.iter().position(|h| h.load(Ordering::Relaxed) != 1);
                assert_eq!(bad, None, "{space:?} {schedule:?} {chunk:?} n = {n}");
            }
        }
    }
}

#[test]
fn range_reductions_give_the_sequential_values() {
    let n = 20_011usize;
    let x: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % 1013 - 500).collect();
    let expected_sum: i64 = x.iter().sum();
    let min = *x.iter().min().expect("non-empty");
    let max = *x.iter().max().expect("non-empty");
    let first_min = x.iter().position(|&v| v == min);
    let first_max = x.iter().position(|&v| v == max);
    for space in pools() {
        for (schedule, chunk) in SCHEDULES {
            let p = || policy(space, 0..n, schedule, chunk);
            let sum = parallel_reduce("sum", p(), |i, acc| *acc += x[*i], Sum::<i64>::new()).expect("sum");
            assert_eq!(sum, expected_sum, "{space:?} {schedule:?} {chunk:?}");
            let lo = parallel_reduce(
                "minloc",
                p(),
                |i, acc: &mut ValLoc<i64>| acc.update_min(x[*i], *i),
                MinLoc::<i64>::new(),
            )
            .expect("minloc");
            assert_eq!((lo.val, lo.loc), (min, first_min), "ties go to the lowest index");
            let hi = parallel_reduce(
                "maxloc",
                p(),
                |i, acc: &mut ValLoc<i64>| acc.update_max(x[*i], *i),
                MaxLoc::<i64>::new(),
            )
            .expect("maxloc");
            assert_eq!((hi.val, hi.loc), (max, first_max));
            let all =
                parallel_reduce("land", p(), |i, acc: &mut bool| *acc &= x[*i] < 1000, LAnd).expect("land");
            assert!(all);
            // Concatenation is not commutative: joins must happen in index order.
            let concat = Custom::new(Vec::new, |dst: &mut Vec<usize>, src: Vec<usize>| dst.extend(src));
            let order = parallel_reduce("concat", p(), |i, acc: &mut Vec<usize>| acc.push(*i), concat)
                .expect("concat");
            assert!(order.iter().copied().eq(0..n), "{space:?} {schedule:?} {chunk:?}");
        }
        let empty = parallel_reduce(
            "empty",
            RangePolicy::new(space.clone(), 5..5),
            |_, acc| *acc += 1,
            Sum::<u32>::new(),
        );
        assert_eq!(empty, Ok(0));
    }
}

#[test]
fn finalize_runs_once_on_the_total() {
    let finals = AtomicUsize::new(0);
    for space in pools() {
        for n in [0, 1, 1000] {
            finals.store(0, Ordering::Relaxed);
            let mean = Custom::with_finalize(
                || (0u64, 0.0f64),
                |d: &mut (u64, f64), s: (u64, f64)| {
                    d.0 += s.0;
                    d.1 += s.1;
                },
                |v: &mut (u64, f64)| {
                    finals.fetch_add(1, Ordering::Relaxed);
                    if v.0 > 0 {
                        v.1 /= v.0 as f64;
                    }
                },
            );
            let (count, avg) = parallel_reduce(
                "mean",
                RangePolicy::new(space.clone(), 0..n).with_schedule(Schedule::Dynamic),
                |i, acc: &mut (u64, f64)| {
                    acc.0 += 1;
                    acc.1 += *i as f64;
                },
                mean,
            )
            .expect("mean");
            assert_eq!(count, n as u64);
            if n > 0 {
                assert_eq!(avg, (n - 1) as f64 / 2.0);
            }
            assert_eq!(finals.load(Ordering::Relaxed), 1);
        }
    }
}

/// 10^6 values spanning many orders of magnitude and both signs: a sum whose rounding depends
/// on the order of additions.
fn wild_floats(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let mantissa = ((i as u64 * 2_654_435_761) % 1_000_003) as f64 / 1_000_003.0 - 0.37;
            mantissa * 10f64.powi((i % 23) as i32 - 11)
        })
        .collect()
}

#[test]
fn deterministic_reductions_give_identical_bits_for_any_thread_count() {
    let x = wild_floats(1_000_000);
    for chunk in [None, Some(1000)] {
        let mut results = Vec::new();
        for space in pools() {
            for schedule in [Schedule::Static, Schedule::Dynamic] {
                for _run in 0..2 {
                    let p = policy(space, 0..x.len(), schedule, chunk).with_deterministic_reduction(true);
                    let sum =
                        parallel_reduce("det", p, |i, acc| *acc += x[*i], Sum::<f64>::new()).expect("sum");
                    results.push((sum.to_bits(), space.clone(), schedule));
                }
            }
        }
        let first = results[0].0;
        for (bits, space, schedule) in &results {
            assert_eq!(*bits, first, "chunk {chunk:?}: {space:?} {schedule:?} differs");
        }
        // And it is the sum, up to rounding.
        let reference: f64 = x.iter().sum();
        assert!((f64::from_bits(first) - reference).abs() <= 1e-9 * x.iter().map(|v| v.abs()).sum::<f64>());
    }

    // MDRange: one partial per tile, joined in a fixed tree.
    let (rows, cols) = (700, 900);
    let mut md_results = Vec::new();
    for space in pools() {
        for schedule in [Schedule::Static, Schedule::Dynamic] {
            let p = MDRangePolicy::new(space.clone(), [0, 0], [rows, cols])
                .with_tiles([16, 64])
                .with_schedule(schedule)
                .with_deterministic_reduction(true);
            let sum = parallel_reduce(
                "md-det",
                p,
                |ij, acc| *acc += x[ij[0] * cols + ij[1]],
                Sum::<f64>::new(),
            )
            .expect("md sum");
            md_results.push(sum.to_bits());
        }
    }
    assert!(md_results.iter().all(|&b| b == md_results[0]), "{md_results:?}");
}

const SCAN_SIZES: [usize; 5] = [0, 1, 2, 1000, 1_000_003];

fn int_data(n: usize) -> Vec<i64> {
    (0..n).map(|i| (i * 7 % 13) as i64 - 6).collect()
}

/// Multiples of 0.5 in [-2, 2]: every prefix sum is exact in f64.
fn float_data(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 5 % 9) as f64 - 4.0) * 0.5).collect()
}

fn exclusive_prefix(x: &[i64]) -> (Vec<i64>, i64) {
    let mut acc = 0;
    let out = x
        .iter()
        .map(|v| {
            let before = acc;
            acc += v;
            before
        })
        .collect();
    (out, acc)
}

#[test]
fn integer_scans_match_the_sequential_prefix_sum() {
    for space in pools() {
        for n in SCAN_SIZES {
            let x = int_data(n);
            let (expected, expected_total) = exclusive_prefix(&x);
            for (chunk, inclusive) in [(None, false), (None, true), (Some(100), false), (Some(1), true)] {
                let out: Vec<AtomicI64> = (0..n).map(|_| AtomicI64::new(i64::MIN)).collect();
                let finals = counters(n);
                let mut p = RangePolicy::new(space.clone(), 0..n);
                if let Some(c) = chunk {
                    p = p.with_chunk_size(c);
                }
                let total: i64 = parallel_scan("scan", p, |i, partial, is_final| {
                    if is_final && !inclusive {
                        out[*i].store(*partial, Ordering::Relaxed);
                    }
                    *partial += x[*i];
                    if is_final {
                        finals[*i].fetch_add(1, Ordering::Relaxed);
                        if inclusive {
                            out[*i].store(*partial, Ordering::Relaxed);
                        }
                    }
                })
                .expect("scan");
                let what = format!("{space:?} n = {n} chunk {chunk:?} inclusive {inclusive}");
                assert_eq!(total, expected_total, "{what}");
                assert_eq!(
                    finals.iter().position(|f| f.load(Ordering::Relaxed) != 1),
                    None,
                    "{what}"
                );
                for (i, got) in out.iter().enumerate() {
                    let want = if inclusive {
                        expected[i] + x[i]
                    } else {
                        expected[i]
                    };
                    assert_eq!(got.load(Ordering::Relaxed), want, "{what}, i = {i}");
                }
            }
        }
    }
}

#[test]
fn float_scans_match_the_sequential_prefix_sum() {
    for space in pools() {
        for n in SCAN_SIZES {
            let x = float_data(n);
            for inclusive in [false, true] {
                let out: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(f64::NAN.to_bits())).collect();
                let total: f64 = parallel_scan(
                    "fscan",
                    RangePolicy::new(space.clone(), 0..n).with_schedule(Schedule::Dynamic),
                    |i, partial: &mut f64, is_final| {
                        if is_final && !inclusive {
                            out[*i].store(partial.to_bits(), Ordering::Relaxed);
                        }
                        *partial += x[*i];
                        if is_final && inclusive {
                            out[*i].store(partial.to_bits(), Ordering::Relaxed);
                        }
                    },
                )
                .expect("scan");
                let mut acc = 0.0;
                for (i, got) in out.iter().enumerate() {
                    if inclusive {
                        acc += x[i];
                    }
                    assert_eq!(
                        f64::from_bits(got.load(Ordering::Relaxed)),
                        acc,
                        "{space:?} n = {n} i = {i}"
                    );
                    if !inclusive {
                        acc += x[i];
                    }
                }
                assert_eq!(total, acc, "{space:?} n = {n}");
            }
        }
    }
}

/// Visits a rank-`R` box and checks each point is seen exactly once, and that a reduction
/// over it gives the sequential value.
fn check_mdrange<const R: usize>(
    space: &RayonSpace,
    begin: [usize; R],
    end: [usize; R],
    tiles: Option<[usize; R]>,
    outer: IterationOrder,
    inner: IterationOrder,
) {
    let ext: [usize; R] = std::array::from_fn(|d| end[d] - begin[d]);
    let total: usize = ext.iter().product();
    let linear = |p: [usize; R]| (0..R).fold(0, |acc, d| acc * ext[d] + (p[d] - begin[d]));
    let mut policy = MDRangePolicy::new(space.clone(), begin, end).with_iteration(outer, inner);
    if let Some(t) = tiles {
        policy = policy.with_tiles(t);
    }
    let hits = counters(total);
    parallel_for("md", policy.clone(), |p| {
        for d in 0..R {
            assert!(p[d] >= begin[d] && p[d] < end[d]);
        }
        hits[linear(*p)].fetch_add(1, Ordering::Relaxed);
    })
    .expect("md for");
    let what = format!("{space:?} rank {R} {begin:?}..{end:?} tiles {tiles:?} {outer:?}/{inner:?}");
    assert_eq!(
        hits.iter().position(|h| h.load(Ordering::Relaxed) != 1),
        None,
        "{what}"
    );
    let sum = parallel_reduce("md sum", policy, |p, acc| *acc += linear(*p), Sum::<usize>::new())
        .expect("md reduce");
    assert_eq!(sum, total * total.saturating_sub(1) / 2, "{what}");
}

#[test]
fn mdrange_visits_every_point_exactly_once() {
    use IterationOrder::{Left, Right};
    for space in pools() {
        check_mdrange(space, [3], [1000], None, Right, Right);
        check_mdrange(space, [0], [1000], Some([7]), Right, Left);
        check_mdrange(space, [0], [0], None, Right, Right);
        check_mdrange(space, [1, 2], [40, 53], None, Right, Left);
        check_mdrange(space, [0, 0], [40, 53], Some([8, 5]), Left, Right);
        check_mdrange(space, [0, 0], [40, 53], Some([100, 100]), Right, Right);
        check_mdrange(space, [0, 0, 0], [9, 10, 11], Some([2, 3, 4]), Left, Left);
        check_mdrange(space, [2, 0, 1], [9, 10, 11], None, Right, Right);
        check_mdrange(space, [0, 0, 0], [5, 0, 7], Some([2, 2, 2]), Right, Right);
    }
}

#[test]
fn mdrange_points_of_a_tile_run_in_the_inner_order_on_one_thread() {
    // Record (tile id, sequence number within the tile) per point: within a tile the points
    // must arrive in the inner order.
    let (rows, cols) = (12usize, 10usize);
    for space in pools() {
        let seq: Vec<AtomicUsize> = (0..rows * cols).map(|_| AtomicUsize::new(usize::MAX)).collect();
        let next_in_tile: Vec<AtomicUsize> = (0..12).map(|_| AtomicUsize::new(0)).collect();
        let policy = MDRangePolicy::new(space.clone(), [0, 0], [rows, cols])
            .with_tiles([4, 5])
            .with_iteration(IterationOrder::Right, IterationOrder::Left);
        parallel_for("order", policy, |p| {
            let [i, j] = *p;
            let tile = (i / 4) * 2 + j / 5;
            seq[i * cols + j].store(
                next_in_tile[tile].fetch_add(1, Ordering::Relaxed),
                Ordering::Relaxed,
            );
        })
        .expect("launch");
        for i in 0..rows {
            for j in 0..cols {
                // Inner order Left: the first index runs fastest within the 4x5 tile.
                let expected = (j % 5) * 4 + i % 4;
                assert_eq!(
                    seq[i * cols + j].load(Ordering::Relaxed),
                    expected,
                    "{space:?} ({i}, {j})"
                );
            }
        }
    }
}

#[test]
fn views_and_access_handles_work_on_every_pool() {
    use hoplite_core::View;
    let n = 10_001;
    let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let x: View<f64, 1> = View::from_slice("x", [n], &xs).expect("x");
    for space in pools() {
        for schedule in [Schedule::Static, Schedule::Dynamic] {
            let y: View<f64, 1> = View::new("y", [n]).expect("y");
            let p = RangePolicy::new(space.clone(), 0..n).with_schedule(schedule);
            parallel_for("axpy", (p.clone(), (y.write(), x.read())), |(i, (y, x))| {
                y.set(i, 2.0 * x.get(i) + y.get(i))
            })
            .expect("axpy");
            let dot = parallel_reduce(
                "dot",
                (p, (y.read(), x.read())),
                |(i, (y, x)), acc| *acc += y.get(i) * x.get(i),
                Sum::<f64>::new(),
            )
            .expect("dot");
            let expected: f64 = xs.iter().map(|v| 2.0 * v * v).sum();
            assert_eq!(
                y.to_vec().expect("copy out"),
                xs.iter().map(|v| 2.0 * v).collect::<Vec<_>>()
            );
            assert_eq!(dot, expected, "{space:?} {schedule:?}");
        }
    }
}
