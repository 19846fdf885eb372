//! Dynamic schedules: units `0..count` handed out one at a time by the instance's rayon pool
//! (work stealing), each run as a kernel of the instance on whichever pool thread takes it.

use hoplite_core::Reducer;
use rayon::ThreadPool;
use rayon::prelude::*;

use crate::context::InKernel;

/// Runs `run(u)` for every unit `u` of `0..count` on `pool`, as kernels of instance `id`.
pub(crate) fn for_each(pool: &ThreadPool, id: u64, count: usize, run: impl Fn(usize) + Sync + Send) {
    pool.install(|| {
        (0..count).into_par_iter().with_max_len(1).for_each(|u| {
            let _in = InKernel::enter(id, None);
            run(u);
        });
    });
}

/// Folds every unit of `0..count` into accumulators started from `reducer.init()` and joins
/// them in unit order (indexed rayon folds cover contiguous runs of units, and `reduce` joins
/// neighbours left to right), as kernels of instance `id`.
pub(crate) fn fold<R: Reducer>(
    pool: &ThreadPool,
    id: u64,
    count: usize,
    reducer: &R,
    fold_unit: impl Fn(usize, &mut R::Value) + Sync + Send,
) -> R::Value {
    pool.install(|| {
        (0..count)
            .into_par_iter()
            .with_max_len(1)
            .fold(
                || reducer.init(),
                |mut acc, u| {
                    let _in = InKernel::enter(id, None);
                    fold_unit(u, &mut acc);
                    acc
                },
            )
            .reduce(
                || reducer.init(),
                |mut left, right| {
                    reducer.join(&mut left, right);
                    left
                },
            )
    })
}

/// `partial(u)` for every unit of `0..count`, collected in unit order (the partial results of a
/// deterministic reduction), as kernels of instance `id`.
pub(crate) fn partials<V: Send>(
    pool: &ThreadPool,
    id: u64,
    count: usize,
    partial: impl Fn(usize) -> V + Sync + Send,
) -> Vec<V> {
    pool.install(|| {
        (0..count)
            .into_par_iter()
            .with_max_len(1)
            .map(|u| {
                let _in = InKernel::enter(id, None);
                partial(u)
            })
            .collect()
    })
}
