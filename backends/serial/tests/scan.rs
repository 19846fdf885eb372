//! `parallel_scan` on the serial backend: exclusive and inclusive prefix sums with their totals,
//! compared element by element against a sequential prefix sum.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use hoplite_core::{RangePolicy, parallel_scan};
use hoplite_serial::Serial;

const SIZES: [usize; 5] = [0, 1, 2, 1000, 1_000_003];

fn int_data(n: usize) -> Vec<i64> {
    (0..n).map(|i| (i * 7 % 13) as i64 - 6).collect()
}

/// Multiples of 0.5 in [-2, 2]: every prefix sum is exact in f64.
fn float_data(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 5 % 9) as f64 - 4.0) * 0.5).collect()
}

fn zeros_i64(n: usize) -> Vec<AtomicI64> {
    (0..n).map(|_| AtomicI64::new(i64::MIN)).collect()
}

fn zeros_f64_bits(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(f64::NAN.to_bits())).collect()
}

/// Sequential exclusive prefix sums and the total.
fn exclusive<T: Copy + std::ops::Add<Output = T>>(x: &[T], zero: T) -> (Vec<T>, T) {
    let mut acc = zero;
    let out = x
        .iter()
        .map(|&v| {
            let before = acc;
            acc = acc + v;
            before
        })
        .collect();
    (out, acc)
}

#[test]
fn i64_exclusive_and_inclusive_scans() {
    let space = Serial::default();
    for n in SIZES {
        let x = int_data(n);
        let (expected_ex, expected_total) = exclusive(&x, 0i64);

        let out = zeros_i64(n);
        let total: i64 = parallel_scan(
            "scan-ex-i64",
            RangePolicy::new(space.clone(), 0..n),
            |i, partial, is_final| {
                if is_final {
                    out[*i].store(*partial, Ordering::Relaxed);
                }
                *partial += x[*i];
            },
        )
        .expect("exclusive scan launches");
        assert_eq!(total, expected_total, "n = {n}");
        for (i, (got, want)) in out.iter().zip(&expected_ex).enumerate() {
            assert_eq!(got.load(Ordering::Relaxed), *want, "exclusive, n = {n}, i = {i}");
        }

        let out = zeros_i64(n);
        let total: i64 = parallel_scan(
            "scan-in-i64",
            RangePolicy::new(space.clone(), 0..n),
            |i, partial, is_final| {
                *partial += x[*i];
                if is_final {
                    out[*i].store(*partial, Ordering::Relaxed);
                }
            },
        )
        .expect("inclusive scan launches");
        assert_eq!(total, expected_total, "n = {n}");
        for (i, got) in out.iter().enumerate() {
            assert_eq!(
                got.load(Ordering::Relaxed),
                expected_ex[i] + x[i],
                "inclusive, n = {n}, i = {i}"
            );
        }
    }
}

#[test]
fn f64_exclusive_and_inclusive_scans() {
    let space = Serial::default();
    for n in SIZES {
        let x = float_data(n);
        let (expected_ex, expected_total) = exclusive(&x, 0.0f64);

        let out = zeros_f64_bits(n);
        let total: f64 = parallel_scan(
            "scan-ex-f64",
            RangePolicy::new(space.clone(), 0..n),
            |i, partial: &mut f64, is_final| {
                if is_final {
                    out[*i].store(partial.to_bits(), Ordering::Relaxed);
                }
                *partial += x[*i];
            },
        )
        .expect("exclusive scan launches");
        assert_eq!(total, expected_total, "n = {n}");
        for (i, (got, want)) in out.iter().zip(&expected_ex).enumerate() {
            assert_eq!(
                f64::from_bits(got.load(Ordering::Relaxed)),
                *want,
                "exclusive, n = {n}, i = {i}"
            );
        }

        let out = zeros_f64_bits(n);
        let total: f64 = parallel_scan(
            "scan-in-f64",
            RangePolicy::new(space.clone(), 0..n),
            |i, partial: &mut f64, is_final| {
                *partial += x[*i];
                if is_final {
                    out[*i].store(partial.to_bits(), Ordering::Relaxed);
                }
            },
        )
        .expect("inclusive scan launches");
        assert_eq!(total, expected_total, "n = {n}");
        for (i, got) in out.iter().enumerate() {
            let want = expected_ex[i] + x[i];
            assert_eq!(
                f64::from_bits(got.load(Ordering::Relaxed)),
                want,
                "inclusive, n = {n}, i = {i}"
            );
        }
    }
}

#[test]
fn scan_over_a_range_not_starting_at_zero() {
    let x = int_data(100);
    let (lo, hi) = (37, 91);
    let (expected_ex, expected_total) = exclusive(&x[lo..hi], 0i64);
    let out = zeros_i64(hi - lo);
    let visited = Mutex::new(Vec::new());
    let total: i64 = parallel_scan(
        "scan-offset",
        RangePolicy::new(Serial::default(), lo..hi).with_chunk_size(5),
        |i, partial, is_final| {
            if is_final {
                visited.lock().expect("not poisoned").push(*i);
                out[*i - lo].store(*partial, Ordering::Relaxed);
            }
            *partial += x[*i];
        },
    )
    .expect("offset scan launches");
    assert_eq!(total, expected_total);
    assert_eq!(
        *visited.lock().expect("not poisoned"),
        (lo..hi).collect::<Vec<_>>()
    );
    let got: Vec<i64> = out.iter().map(|v| v.load(Ordering::Relaxed)).collect();
    assert_eq!(got, expected_ex);

    // An empty range that does not start at zero: total zero, kernel never runs.
    let total: f64 = parallel_scan(
        "scan-empty",
        RangePolicy::new(Serial::default(), 9..9),
        |_, partial, _| {
            *partial += 1.0;
        },
    )
    .expect("empty scan launches");
    assert_eq!(total, 0.0);
}

#[test]
fn scan_calls_the_final_pass_once_per_index() {
    let n = 257;
    let finals: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let total: u64 = parallel_scan(
        "scan-count",
        RangePolicy::new(Serial::default(), 0..n),
        |i, partial, is_final| {
            if is_final {
                finals[*i].fetch_add(1, Ordering::Relaxed);
            }
            *partial += 1;
        },
    )
    .expect("count scan launches");
    // Non-final passes (allowed by the contract) must not change the total either.
    assert_eq!(total, n as u64);
    assert!(finals.iter().all(|c| c.load(Ordering::Relaxed) == 1));
}
