//! `MDRangePolicy`: tiles are the unit of work. With the static schedule each thread gets a
//! contiguous share of the tiles (in the policy's tile order); with the dynamic schedule the
//! instance's work-stealing pool hands tiles out one at a time. Either way a thread visits the
//! points of a tile in the inner order.

use hoplite_core::{ExecutionPolicy, ForKernel, MDRangePolicy, ReduceKernel, Reducer, Result, Schedule};

use crate::pool::Job;
use crate::sealed::Internal;
use crate::split::{Slot, join_in_order, join_tree, share};
use crate::steal;
use crate::{Mode, RayonPolicy, RayonSpace};

type Md<const R: usize> = MDRangePolicy<RayonSpace, R>;

/// Calls `kernel` for every point of tiles `tiles`, tile by tile, on this thread (in the
/// kernel's own point loop: see `hoplite_core::point_loop`).
#[inline(always)]
fn for_each_tile_point<K: ForKernel<Md<R>>, const R: usize>(
    policy: &Md<R>,
    tiles: std::ops::Range<usize>,
    kernel: &K,
) {
    // SAFETY: tiles partition the box, and each tile is handed to one participant, which
    // visits it once, on this thread.
    unsafe { kernel.run_share(policy.tile_share(tiles)) }
}

/// Folds `kernel` over every point of tiles `tiles` into `acc`, on this thread.
#[inline(always)]
fn fold_tile_points<K: ReduceKernel<Md<R>, Red::Value>, Red: Reducer, const R: usize>(
    policy: &Md<R>,
    tiles: std::ops::Range<usize>,
    kernel: &K,
    reducer: &Red,
    acc: &mut Red::Value,
) {
    // SAFETY: as in `for_each_tile_point`.
    unsafe { kernel.fold_share(policy.tile_share(tiles), reducer, acc) }
}

fn tile_partial<F, Red, const R: usize>(policy: &Md<R>, t: usize, kernel: &F, reducer: &Red) -> Red::Value
where
    Red: Reducer,
    F: ReduceKernel<Md<R>, Red::Value>,
{
    let mut acc = reducer.init();
    fold_tile_points(policy, t..t + 1, kernel, reducer, &mut acc);
    acc
}

struct ForJob<'a, F, const R: usize> {
    policy: &'a Md<R>,
    tiles: usize,
    parts: usize,
    kernel: &'a F,
}

impl<K: ForKernel<Md<R>>, const R: usize> Job for ForJob<'_, K, R> {
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.tiles, self.parts, rank);
        for_each_tile_point(self.policy, lo..hi, self.kernel);
    }
}

/// Ordinary reduction (`per_tile == false`: one partial per participant) or deterministic
/// reduction (`per_tile == true`: one partial per tile).
struct ReduceJob<'a, F, Red: Reducer, const R: usize> {
    policy: &'a Md<R>,
    tiles: usize,
    parts: usize,
    kernel: &'a F,
    reducer: &'a Red,
    per_tile: bool,
    slots: &'a [Slot<Vec<Red::Value>>],
}

impl<F, Red, const R: usize> Job for ReduceJob<'_, F, Red, R>
where
    Red: Reducer,
    F: ReduceKernel<Md<R>, Red::Value>,
{
    fn run(&self, rank: usize) {
        let (lo, hi) = share(self.tiles, self.parts, rank);
        let partials = if self.per_tile {
            (lo..hi)
                .map(|t| tile_partial(self.policy, t, self.kernel, self.reducer))
                .collect()
        } else {
            let mut acc = self.reducer.init();
            fold_tile_points(self.policy, lo..hi, self.kernel, self.reducer, &mut acc);
            vec![acc]
        };
        self.slots[rank].put(partials);
    }
}

impl<const R: usize> RayonPolicy for Md<R> {
    fn rayon_for<K: ForKernel<Self>>(&self, _internal: Internal, _label: &str, kernel: &K) -> Result<()> {
        md_for(self, kernel);
        Ok(())
    }

    fn rayon_reduce<Red: Reducer, K: ReduceKernel<Self, Red::Value>>(
        &self,
        _internal: Internal,
        _label: &str,
        kernel: &K,
        reducer: &Red,
    ) -> Result<Red::Value> {
        Ok(md_reduce(self, kernel, reducer))
    }
}

fn md_for<const R: usize, K: ForKernel<Md<R>>>(policy: &Md<R>, kernel: &K) {
    let tiles = if policy.is_empty() { 0 } else { policy.num_tiles() };
    if tiles == 0 {
        return;
    }
    let space = policy.space();
    let guard = match space.mode() {
        Mode::Inline => {
            let _in = space.enter_inline();
            return for_each_tile_point(policy, 0..tiles, kernel);
        }
        Mode::Team(guard) => guard,
    };
    let threads = space.threads();
    if tiles == 1 || threads == 1 {
        return space.execute_here(&guard, || for_each_tile_point(policy, 0..tiles, kernel));
    }
    if policy.schedule() == Schedule::Dynamic
        && let Some(pool) = space.rayon_pool()
    {
        steal::for_each(pool, space.instance_id(), tiles, |t| {
            for_each_tile_point(policy, t..t + 1, kernel)
        });
        return;
    }
    let job = ForJob {
        policy,
        tiles,
        parts: threads,
        kernel,
    };
    space.execute(&guard, &job);
}

fn md_reduce<const R: usize, Red: Reducer, K: ReduceKernel<Md<R>, Red::Value>>(
    policy: &Md<R>,
    kernel: &K,
    reducer: &Red,
) -> Red::Value {
    let deterministic = policy.deterministic_reduction();
    let finish = |partials: Vec<Red::Value>| {
        if deterministic {
            join_tree(reducer, partials)
        } else {
            join_in_order(reducer, partials)
        }
    };
    let tiles = if policy.is_empty() { 0 } else { policy.num_tiles() };
    if tiles == 0 {
        return finish(Vec::new());
    }
    let space = policy.space();
    let sequential = |policy: &Md<R>| -> Vec<Red::Value> {
        if deterministic {
            (0..tiles)
                .map(|t| tile_partial(policy, t, kernel, reducer))
                .collect()
        } else {
            let mut acc = reducer.init();
            fold_tile_points(policy, 0..tiles, kernel, reducer, &mut acc);
            vec![acc]
        }
    };
    let guard = match space.mode() {
        Mode::Inline => {
            let _in = space.enter_inline();
            return finish(sequential(policy));
        }
        Mode::Team(guard) => guard,
    };
    let threads = space.threads();
    if tiles == 1 || threads == 1 {
        let partials = space.execute_here(&guard, || sequential(policy));
        return finish(partials);
    }
    if policy.schedule() == Schedule::Dynamic
        && let Some(pool) = space.rayon_pool()
    {
        let id = space.instance_id();
        let partials = if deterministic {
            // One partial per tile, in tile order: the join tree is fixed.
            steal::partials(pool, id, tiles, |t| tile_partial(policy, t, kernel, reducer))
        } else {
            vec![steal::fold(pool, id, tiles, reducer, |t, acc| {
                fold_tile_points(policy, t..t + 1, kernel, reducer, acc)
            })]
        };
        return finish(partials);
    }
    let slots = Slot::many(threads);
    let job = ReduceJob {
        policy,
        tiles,
        parts: threads,
        kernel,
        reducer,
        per_tile: deterministic,
        slots: &slots,
    };
    space.execute(&guard, &job);
    drop(guard);
    finish(slots.iter().filter_map(Slot::take).flatten().collect())
}
