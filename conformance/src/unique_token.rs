//! The `UniqueToken` axioms for both scopes: ids in range, no two live ids equal (also across
//! clones and concurrent iterations), `try_acquire` fails only when every id is live, guards
//! release, and a size of 0 is an error.

use hoplite_core::{Error, RangePolicy, UniqueToken, View, parallel_for};

use crate::util::Problems;
use crate::{Failure, FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

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

/// Axiom 2: no two live ids are equal, while every iteration of a launch holds one of the
/// space's instance token (sized to its concurrency).
pub fn live_ids_are_distinct<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        distinct_under_load(space, &space.unique_token(), "instance token")?;
        distinct_under_load(space, &space.unique_token_with_size(3)?, "token of size 3")
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

/// The instance token (`unique_token()`) has as many ids as the instance's concurrency.
pub fn instance_token_is_sized_to_the_concurrency<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        ensure_eq!(
            space.unique_token().size(),
            space.concurrency(),
            "the size of the instance token"
        );
        Ok(())
    })
}

/// A token of size 0 is `Error::InvalidTokenSize` naming the space.
pub fn zero_size_is_rejected<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || match space.unique_token_with_size(0) {
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
            t.size()
        ))),
    })
}

/// A token too large to allocate is `Error::InvalidTokenSize`, not an aborted process; a
/// large one that can be had works.
pub fn huge_size_is_an_error_not_an_abort<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        match space.unique_token_with_size(usize::MAX) {
            Err(Error::InvalidTokenSize { requested, .. }) => {
                ensure_eq!(requested, usize::MAX, "the size the error names")
            }
            Err(e) => {
                return Err(Failure::msg(format!(
                    "a token of usize::MAX ids: wrong error {e:?}"
                )));
            }
            Ok(t) => ensure_eq!(t.size(), usize::MAX, "the size of a pool of usize::MAX ids"),
        }
        // 2^40 ids (128 GiB of bitmap): refused where memory is short, else made lazily.
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
