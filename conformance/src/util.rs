//! Helpers shared by the checks: recording what kernels observe without data races, and
//! comparing results.

use std::fmt::Debug;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{Error, ExecutionSpace, Schedule};

use crate::Failure;

/// At most this many problems are kept; the rest are only counted.
const KEPT: usize = 8;

/// What kernels report from inside a launch (a kernel cannot return a failure): shared by all
/// iterations, safe to use from any thread.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    count: AtomicUsize,
    first: Mutex<Vec<String>>,
}

impl Problems {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records `what()` unless `ok`.
    pub(crate) fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.report(what());
        }
    }

    /// Records a problem.
    pub(crate) fn report(&self, what: String) {
        if self.count.fetch_add(1, Ordering::Relaxed) < KEPT {
            self.first
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(what);
        }
    }

    /// `Ok` if nothing was reported, otherwise a failure listing the first problems.
    pub(crate) fn into_outcome(self, context: &str) -> crate::Outcome {
        let count = self.count.into_inner();
        if count == 0 {
            return Ok(());
        }
        let first = self
            .first
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Err(Failure::msg(format!(
            "{context}: {count} problem(s) seen inside kernels, first: {}",
            first.join("; ")
        )))
    }
}

/// `None` if the slices are equal, else where they first differ.
pub(crate) fn mismatch<T: PartialEq + Debug>(got: &[T], want: &[T]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} values instead of {}", got.len(), want.len()));
    }
    let i = got.iter().zip(want).position(|(g, w)| g != w)?;
    Some(format!(
        "at position {i}: got {:?}, expected {:?}",
        got[i], want[i]
    ))
}

/// Fails unless the slices are equal, naming the first difference.
pub(crate) fn same<T: PartialEq + Debug>(
    got: &[T],
    want: &[T],
    context: impl Fn() -> String,
) -> crate::Outcome {
    match mismatch(got, want) {
        None => Ok(()),
        Some(m) => Err(Failure::msg(format!("{}: {m}", context()))),
    }
}

/// The team sizes a check runs with: 1, and 2 if the space allows it.
pub(crate) fn team_sizes<S: ExecutionSpace>(space: &S) -> Vec<usize> {
    if space.max_team_size() > 1 {
        vec![1, 2]
    } else {
        vec![1]
    }
}

/// The schedules and chunk sizes a range check runs with.
pub(crate) const SCHEDULES: [(Schedule, Option<usize>); 7] = [
    (Schedule::Static, None),
    (Schedule::Static, Some(1)),
    (Schedule::Static, Some(7)),
    (Schedule::Static, Some(5000)),
    (Schedule::Dynamic, None),
    (Schedule::Dynamic, Some(3)),
    (Schedule::Dynamic, Some(64)),
];

/// Sequential exclusive prefix sums and the total.
pub(crate) fn exclusive_prefix<T: Copy + std::ops::Add<Output = T>>(x: &[T], zero: T) -> (Vec<T>, T) {
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

/// Fails unless `result` is the error `matches` accepts.
pub(crate) fn expect_error<T: Debug>(
    result: hoplite_core::Result<T>,
    what: &str,
    matches: impl Fn(&Error) -> bool,
) -> Result<Error, Failure> {
    match result {
        Err(e) if matches(&e) => Ok(e),
        Err(e) => Err(Failure::msg(format!("{what}: wrong error: {e:?}"))),
        Ok(v) => Err(Failure::msg(format!(
            "{what}: succeeded with {v:?} but must fail"
        ))),
    }
}

/// Fails unless `message` contains every part.
pub(crate) fn mentions(message: &str, parts: &[&str]) -> crate::Outcome {
    match parts.iter().find(|p| !message.contains(*p)) {
        None => Ok(()),
        Some(p) => Err(Failure::msg(format!(
            "the message `{message}` does not mention `{p}`"
        ))),
    }
}

/// Integer data with repeated values, mixed signs and no pattern a split would align with.
pub(crate) fn int_data(n: usize) -> Vec<i64> {
    (0..n).map(|i| ((i * 7919 + 13) % 1009) as i64 - 500).collect()
}

/// Multiples of 0.5 in [-2, 2]: every sum of up to 2^50 of them is exact in f64, in any order.
pub(crate) fn exact_f64_data(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 5 % 9) as f64 - 4.0) * 0.5).collect()
}
