//! The `UniqueToken` axioms for both scopes: ids in range, no two live ids equal (also across
//! clones and concurrent iterations), `try_acquire` fails only when every id is live, guards
//! release, and a size of 0 is an error.
//!
//! The portable checks hold ids in `#[kernel]`s, with the token of the space's kind
//! ([`KernelTokenSpace`](hoplite_core::KernelTokenSpace): a host pool on host spaces, lock words in device memory on a GPU);
//! the host checks use what only host pools offer (`try_acquire`, ids held outside launches,
//! the global scope).

use hoplite_core::BoundAtomic;
use hoplite_core::{
    BoundWriter, Error, Idx, KernelToken, RangePolicy, TeamMember, TeamPolicy, UniqueToken, View,
    parallel_for,
};
use hoplite_macros::kernel;

use crate::util::Problems;
use crate::{Failure, FullSpace, LaunchSpace, Outcome, SpaceView, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[
    hoplite_core::device_kernel::DeviceKernelInfo::of::<record_token_id>,
    hoplite_core::device_kernel::DeviceKernelInfo::of::<hold_token_id>,
    hoplite_core::device_kernel::DeviceKernelInfo::of::<hold_team_token_id>,
];

/// A kernel of these checks: stores the id iteration `i` held.
#[kernel(crate = hoplite_core)]
pub fn record_token_id(i: Idx<'_>, ids: BoundWriter<'_, usize, 1>, tokens: &impl UniqueToken) {
    let id = tokens.guard();
    ids.set(i, *id);
}

/// A kernel of these checks: holds an id while it checks, 32 times, that it is the id's only
/// holder (`holders[id]` is 1); counts in `problems[0]` ids not below `size` and in
/// `problems[1]` the times another holder was seen.
#[kernel(crate = hoplite_core)]
pub fn hold_token_id(
    _i: Idx<'_>,
    holders: BoundAtomic<'_, i32, 1>,
    problems: BoundAtomic<'_, u32, 1>,
    tokens: &impl UniqueToken,
    size: usize,
) {
    let id = tokens.guard();
    if *id >= size {
        problems.fetch_add(0, 1);
    } else {
        if holders.fetch_add(*id, 1) != 0 {
            problems.fetch_add(1, 1);
        }
        for _k in 0..32 {
            if holders.fetch_add(*id, 0) != 1 {
                problems.fetch_add(1, 1);
            }
        }
        holders.fetch_add(*id, -1);
    }
}

/// A kernel of these checks: every thread of a team takes the team's id (`team_guard`) and
/// stores it plus 1 at its own slot of `seen` (teams of `team_size` threads); the team's rank
/// 0 counts the team as a holder of the id in `holders` until the team is done, counting in
/// `problems[0]` ids not below `size` and in `problems[1]` other holders seen.
#[kernel(crate = hoplite_core)]
pub fn hold_team_token_id(
    m: &impl TeamMember,
    holders: BoundAtomic<'_, i32, 1>,
    seen: BoundAtomic<'_, u64, 1>,
    problems: BoundAtomic<'_, u32, 1>,
    tokens: &impl UniqueToken,
    size: usize,
) {
    let id = tokens.team_guard(m);
    let slot = m.league_rank() * m.team_size() + m.team_rank();
    seen.fetch_add(slot, *id as u64 + 1);
    if *id >= size {
        if m.team_rank() == 0 {
            problems.fetch_add(0, 1);
        }
    } else {
        if m.team_rank() == 0 && holders.fetch_add(*id, 1) != 0 {
            problems.fetch_add(1, 1);
        }
        m.team_barrier();
        if m.team_rank() == 0 {
            if holders.fetch_add(*id, 0) != 1 {
                problems.fetch_add(1, 1);
            }
            holders.fetch_add(*id, -1);
        }
    }
}

/// The two counts the holding kernels keep: ids not below the size, and other holders seen.
fn problem_counts<S: LaunchSpace>(problems: &SpaceView<S, u32, 1>) -> Result<(u32, u32), Failure> {
    match problems.to_vec()?[..] {
        [out_of_range, shared] => Ok((out_of_range, shared)),
        ref other => Err(Failure::msg(format!(
            "a view of 2 counts read back {} values",
            other.len()
        ))),
    }
}

/// Runs `hold_token_id` over `n` iterations with `token` and reports what it counted.
fn kernel_holds_are_distinct<S: LaunchSpace>(
    space: &S,
    token: &S::KernelToken,
    n: usize,
    what: &str,
) -> Outcome {
    let size = token.id_count();
    let holders = SpaceView::<S, i32, 1>::new("token-holders", [size])?;
    let problems = SpaceView::<S, u32, 1>::new("token-problems", [2])?;
    parallel_for(
        "token-holds",
        (
            RangePolicy::new(space.clone(), 0..n),
            (holders.atomic(), problems.atomic()),
        ),
        hold_token_id::with(token, size),
    )?;
    ensure_eq!(
        problem_counts::<S>(&problems)?,
        (0, 0),
        "(ids not below {size}, other holders seen) over {n} iterations with the {what}"
    );
    ensure!(
        holders.to_vec()?.iter().all(|&h| h == 0),
        "ids of the {what} are still counted as held after the launch"
    );
    Ok(())
}

/// Axiom 1 in kernels: every id an iteration acquires is in `[0, size)`, for tokens of 1 to
/// 130 ids, and a token of the space's kind has the ids asked for.
pub fn kernel_ids_are_in_range<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 1000;
        for size in [1, 5, 64, 65, 130] {
            let token = space.kernel_token_with_size(size)?;
            ensure_eq!(token.id_count(), size, "the ids of a token asked for {size}");
            let ids = SpaceView::<S, usize, 1>::new("token-ids", [n])?;
            parallel_for(
                "token-ids",
                (RangePolicy::new(space.clone(), 0..n), (ids.write(),)),
                record_token_id::with(&token),
            )?;
            let ids = ids.to_vec()?;
            if let Some((i, id)) = ids.iter().enumerate().find(|(_, id)| **id >= size) {
                return Err(Failure::msg(format!(
                    "iteration {i} held id {id} of a token of {size} ids"
                )));
            }
            if size == 130 {
                ensure!(
                    ids.iter().any(|&id| id > 0) || space.concurrency() == 1,
                    "every iteration held id 0"
                );
            }
        }
        Ok(())
    })
}

/// Axiom 2 in kernels: no two iterations hold the same id at once, with the instance token
/// (sized to the concurrency) and with a token of 3 ids that many iterations wait for.
pub fn live_ids_are_distinct<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = (space.concurrency() * 64).clamp(256, 4096);
        kernel_holds_are_distinct(space, &space.kernel_token()?, n, "instance token")?;
        kernel_holds_are_distinct(space, &space.kernel_token_with_size(3)?, n, "token of 3 ids")
    })
}

/// Axiom 2 for teams (`team_guard`): every thread of a team gets the team's id, and no two
/// teams hold one at once.
pub fn team_ids_are_shared_by_the_team_and_distinct<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (league, team) = (64, 4.min(space.max_team_size()));
        for size in [2, 16] {
            let token = space.kernel_token_with_size(size)?;
            let holders = SpaceView::<S, i32, 1>::new("team-token-holders", [size])?;
            let seen = SpaceView::<S, u64, 1>::new("team-token-seen", [league * team])?;
            let problems = SpaceView::<S, u32, 1>::new("team-token-problems", [2])?;
            parallel_for(
                "team-token-holds",
                (
                    TeamPolicy::new(space.clone(), league, team),
                    (holders.atomic(), seen.atomic(), problems.atomic()),
                ),
                hold_team_token_id::with::<S>(&token, size),
            )?;
            ensure_eq!(
                problem_counts::<S>(&problems)?,
                (0, 0),
                "(ids not below {size}, other holding teams seen) over {league} teams"
            );
            for (t, ids) in seen.to_vec()?.chunks(team).enumerate() {
                ensure!(
                    ids.iter().all(|&id| id == ids[0] && id >= 1),
                    "team {t} of a token of {size} ids: its threads saw ids (plus 1) {ids:?}"
                );
            }
        }
        Ok(())
    })
}

/// The instance token (`kernel_token()`) has as many ids as the instance's concurrency.
pub fn instance_token_is_sized_to_the_concurrency<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        ensure_eq!(
            space.kernel_token()?.id_count(),
            space.concurrency(),
            "the size of the instance token"
        );
        Ok(())
    })
}

/// A token of size 0 is `Error::InvalidTokenSize` naming the space.
pub fn zero_size_is_rejected<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || match space.kernel_token_with_size(0) {
        Err(Error::InvalidTokenSize {
            requested,
            space: name,
            ..
        }) => {
            ensure_eq!((requested, name), (0, space.name()), "the InvalidTokenSize error");
            Ok(())
        }
        Err(e) => Err(Failure::msg(format!("a token of size 0: wrong error {e:?}"))),
        Ok(t) => Err(Failure::msg(format!(
            "a token of size 0 was made, of size {}",
            t.id_count()
        ))),
    })
}

/// A token too large to allocate is `Error::InvalidTokenSize`, not an aborted process.
pub fn huge_size_is_an_error_not_an_abort<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        match space.kernel_token_with_size(usize::MAX) {
            Err(Error::InvalidTokenSize { requested, .. }) => {
                ensure_eq!(requested, usize::MAX, "the size the error names")
            }
            Err(e) => {
                return Err(Failure::msg(format!(
                    "a token of usize::MAX ids: wrong error {e:?}"
                )));
            }
            Ok(t) => ensure_eq!(t.id_count(), usize::MAX, "the size of a pool of usize::MAX ids"),
        }
        Ok(())
    })
}

/// In a launch of many short iterations, each holds an id of `token` while it runs and checks
/// that nobody else holds it.
fn distinct_under_load<S: FullSpace, T: UniqueToken>(space: &S, token: &T, what: &str) -> Outcome {
    let size = token.size();
    let held: View<u32, 1> = View::new("token-holders", [size])?;
    let holders = held.atomic();
    let problems = Problems::new();
    let n = (space.concurrency() * 64).clamp(256, 4096);
    let policy = RangePolicy::new(space.clone(), 0..n)
        .with_schedule(hoplite_core::Schedule::Dynamic)
        .with_chunk_size(1);
    parallel_for("token-load", policy, |i| {
        let guard = token.guard();
        let id = *guard;
        if id >= size {
            return problems.report(format!("iteration {i}: id {id} is not below the size {size}"));
        }
        let before = holders.fetch_add(id, 1);
        problems.check(before == 0, || {
            format!("iteration {i}: id {id} was already held by {before} other holder(s)")
        });
        for _ in 0..50 {
            std::hint::spin_loop();
        }
        holders.fetch_add(id, u32::MAX);
        drop(guard);
    })?;
    problems.into_outcome(what)
}

/// Axiom 1: every id `acquire` and `try_acquire` return is in `[0, size)`; taking all of
/// them yields each id once.
pub fn ids_are_in_range<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for size in [1, 5, 64, 65, 130] {
            let token = space.unique_token_with_size(size)?;
            ensure_eq!(token.size(), size, "the size of a token asked for {size} ids");
            let mut ids: Vec<usize> = Vec::with_capacity(size);
            for _ in 0..size {
                match token.try_acquire() {
                    Some(id) => ids.push(id),
                    None => {
                        return Err(Failure::msg(format!(
                            "try_acquire failed with {} of {size} ids live",
                            ids.len()
                        )));
                    }
                }
            }
            ids.sort_unstable();
            ensure_eq!(
                ids,
                (0..size).collect::<Vec<_>>(),
                "all ids of a token of size {size}"
            );
            for id in ids {
                token.release(id);
            }
            let id = token.acquire();
            ensure!(id < size, "acquire returned {id} for a token of size {size}");
            token.release(id);
        }
        Ok(())
    })
}

/// Axiom 3: `try_acquire` returns `None` only when `size()` ids are live, and a released id
/// can be acquired again.
pub fn try_acquire_fails_only_when_every_id_is_live<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let token = space.unique_token_with_size(5)?;
        let mut ids = Vec::new();
        while let Some(id) = token.try_acquire() {
            ids.push(id);
            ensure!(
                ids.len() <= 5,
                "try_acquire handed out more than 5 ids of a token of size 5"
            );
        }
        ensure_eq!(ids.len(), 5, "ids handed out before try_acquire failed");
        let freed = ids.remove(2);
        token.release(freed);
        ensure_eq!(
            token.try_acquire(),
            Some(freed),
            "try_acquire after releasing {freed}"
        );
        ensure_eq!(token.try_acquire(), None, "try_acquire with every id live again");
        token.release(freed);
        for id in ids {
            token.release(id);
        }
        Ok(())
    })
}

/// Axiom 2 across clones: clones share the ids.
pub fn clones_share_ids<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let token = space.unique_token_with_size(2)?;
        let clone = token.clone();
        let a = token.acquire();
        let b = clone.acquire();
        ensure!(a != b, "a token and its clone handed out the same id {a}");
        ensure_eq!(
            clone.try_acquire(),
            None,
            "try_acquire on a clone with both ids live"
        );
        ensure_eq!(token.try_acquire(), None, "try_acquire with both ids live");
        clone.release(a);
        ensure_eq!(
            token.try_acquire(),
            Some(a),
            "try_acquire after the clone released {a}"
        );
        token.release(a);
        token.release(b);
        Ok(())
    })
}

/// A guard holds its id until it is dropped, then the id is free again.
pub fn guard_releases_on_drop<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let token = space.unique_token_with_size(2)?;
        {
            let a = token.guard();
            let b = token.guard();
            ensure!(
                *a != *b && a.id() < 2 && b.id() < 2,
                "guards hold ids {} and {}",
                a.id(),
                b.id()
            );
            ensure_eq!(token.try_acquire(), None, "try_acquire while two guards live");
        }
        let (x, y) = (token.try_acquire(), token.try_acquire());
        ensure!(
            x.is_some() && y.is_some(),
            "ids are not free after the guards were dropped: {x:?} {y:?}"
        );
        for id in [x, y].into_iter().flatten() {
            token.release(id);
        }
        Ok(())
    })
}

/// Axiom 2 for the global scope: ids held by iterations on this instance and on the
/// default instance are never shared.
pub fn global_live_ids_are_distinct<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let global = S::global_unique_token();
        ensure!(global.size() >= 1, "the global token has no ids");
        distinct_under_load(space, &global, "global token")?;
        distinct_under_load(&S::default(), &global, "global token on the default instance")?;
        let clone = S::global_unique_token();
        let id = global.acquire();
        ensure!(
            id < clone.size(),
            "the global token handed out {id}, not below its size {}",
            clone.size()
        );
        global.release(id);
        Ok(())
    })
}

/// A host pool of 2^40 ids (128 GiB of bitmap) is refused where memory is short, else made
/// lazily and hands out ids.
pub fn huge_host_pool_is_made_lazily_or_refused<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        match space.unique_token_with_size(1 << 40) {
            Ok(t) => {
                let id = t.acquire();
                ensure!(id < 1 << 40, "id {id} of a pool of 2^40 ids");
                t.release(id);
            }
            Err(Error::InvalidTokenSize { requested, .. }) => {
                ensure_eq!(requested, 1 << 40, "the size the error names")
            }
            Err(e) => return Err(Failure::msg(format!("a token of 2^40 ids: wrong error {e:?}"))),
        }
        Ok(())
    })
}

/// Axiom 2 on host threads: in a launch of many short closure iterations, each holding an id of
/// the instance token or of a token of 3 ids, no two hold the same id at once.
pub fn live_ids_are_distinct_in_closures<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        distinct_under_load(space, &space.unique_token(), "instance token")?;
        distinct_under_load(space, &space.unique_token_with_size(3)?, "token of 3 ids")
    })
}
