//! The traits of unique tokens and the guards that release their ids.

use std::fmt;

use crossbeam_utils::Backoff;

use crate::error::Result;
use crate::space::ExecutionSpace;

/// The `UniqueToken` concept (Kokkos `Experimental::UniqueToken`).
///
/// # Axioms
///
/// 1. Every id returned by `acquire` or `try_acquire` is in `[0, size())`.
/// 2. No two live ids (acquired and not yet released) of one token — or of clones of it — are
///    equal.
/// 3. `try_acquire` returns `None` only when `size()` ids are live, or held for threads of a
///    running launch that gave them back and take them again ([`lease_rank_id`](crate::lease_rank_id): the id of a
///    thread's rank stays with it until its share ends or it waits for another thread).
/// 4. `acquire` waits until an id is free. Holding `size()` ids on one thread and asking for
///    another therefore never returns, as in Kokkos; use `try_acquire` where that can happen.
///
/// ```
/// use hoplite_core::{UniqueToken, UniqueTokenSpace};
/// use hoplite_serial::Serial;
/// let tokens = Serial::default().unique_token_with_size(4)?;
/// let a = tokens.guard();
/// let b = tokens.guard();
/// assert_ne!(*a, *b);
/// assert!(*a < 4 && *b < 4);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a unique token",
    note = "get one from `UniqueTokenSpace::unique_token` of an execution space"
)]
pub trait UniqueToken: Clone + Send + Sync {
    /// The number of distinct ids.
    fn size(&self) -> usize;

    /// An id nobody else holds, or `None` if all are taken.
    fn try_acquire(&self) -> Option<usize>;

    /// Gives `id` back.
    ///
    /// # Panics
    ///
    /// If `id` is not currently held: releasing an id twice would let two holders share it.
    fn release(&self, id: usize);

    /// An id nobody else holds, waiting (spinning, then yielding) until one is free.
    fn acquire(&self) -> usize {
        wait_for_id(self)
    }

    /// Acquires one id for a whole team (Kokkos' team-level `acquire`): team rank 0 acquires
    /// it, every thread of the team gets it, and it is released once every thread of the team
    /// has dropped its guard (the drop is a team barrier). Call it on every thread of the team,
    /// as any team collective.
    ///
    /// ```
    /// use hoplite_core::{parallel_for, TeamPolicy, UniqueToken, UniqueTokenSpace};
    /// use hoplite_serial::Serial;
    /// let space = Serial::default();
    /// let tokens = space.unique_token_with_size(2)?;
    /// parallel_for("team ids", TeamPolicy::new(space, 8, 1), |m| {
    ///     let id = tokens.team_guard(m);
    ///     assert!(*id < 2);
    /// })?;
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    fn team_guard<'t, 'm, M: crate::team::TeamMember>(
        &'t self,
        member: &'m M,
    ) -> TeamTokenGuard<'t, 'm, Self, M>
    where
        Self: Sized,
    {
        let mine = (member.team_rank() == 0).then(|| self.acquire());
        let id = match member.team_broadcast(mine, 0) {
            Some(id) => id,
            // Axiom 3 of `TeamMember`: rank 0's value reaches every thread, and it made one.
            None => unreachable!("team_broadcast returned another rank's value"),
        };
        TeamTokenGuard {
            id,
            token: self,
            member,
        }
    }

    /// Acquires an id that is released when the guard drops.
    fn guard(&self) -> TokenGuard<'_, Self>
    where
        Self: Sized,
    {
        TokenGuard {
            id: self.acquire(),
            token: self,
        }
    }
}

/// Asks `token` for an id until one is free, spinning, then yielding.
pub(super) fn wait_for_id<T: UniqueToken>(token: &T) -> usize {
    let backoff = Backoff::new();
    loop {
        if let Some(id) = token.try_acquire() {
            return id;
        }
        if backoff.is_completed() {
            std::thread::yield_now();
        } else {
            backoff.snooze();
        }
    }
}

/// An execution space that hands out unique tokens of both scopes.
///
/// *Instance* scope: ids unique among the work of one instance, `size() ==
/// concurrency()` by default. *Global* scope: ids unique among all instances of the space.
pub trait UniqueTokenSpace: ExecutionSpace {
    /// The instance-scope token.
    type InstanceToken: UniqueToken;
    /// The global-scope token.
    type GlobalToken: UniqueToken;

    /// An instance-scope token sized to the instance's concurrency.
    fn unique_token(&self) -> Self::InstanceToken;

    /// An instance-scope token of `size` ids (at least 1).
    fn unique_token_with_size(&self, size: usize) -> Result<Self::InstanceToken>;

    /// The global-scope token of this space type.
    fn global_unique_token() -> Self::GlobalToken;
}

/// RAII holder of one id: released on drop. Derefs to the id.
pub struct TokenGuard<'t, T: UniqueToken> {
    id: usize,
    token: &'t T,
}

impl<T: UniqueToken> TokenGuard<'_, T> {
    /// The id held.
    pub fn id(&self) -> usize {
        self.id
    }
}

impl<T: UniqueToken> std::ops::Deref for TokenGuard<'_, T> {
    type Target = usize;
    fn deref(&self) -> &usize {
        &self.id
    }
}

impl<T: UniqueToken> Drop for TokenGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.token.release(self.id);
    }
}

/// One id held by a whole team ([`UniqueToken::team_guard`]); derefs to the id. Dropping it is
/// a team barrier, after which team rank 0 releases the id.
pub struct TeamTokenGuard<'t, 'm, T: UniqueToken, M: crate::team::TeamMember> {
    id: usize,
    token: &'t T,
    member: &'m M,
}

impl<T: UniqueToken, M: crate::team::TeamMember> std::ops::Deref for TeamTokenGuard<'_, '_, T, M> {
    type Target = usize;
    fn deref(&self) -> &usize {
        &self.id
    }
}

impl<T: UniqueToken, M: crate::team::TeamMember> Drop for TeamTokenGuard<'_, '_, T, M> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The launch is failing; a barrier now could wait for threads that have left.
            // Rank 0 still gives the id back so the pool stays whole for later launches.
            if self.member.team_rank() == 0 {
                self.token.release(self.id);
            }
            return;
        }
        // Every thread of the team is done with the id before it goes back.
        self.member.team_barrier();
        if self.member.team_rank() == 0 {
            self.token.release(self.id);
        }
    }
}

impl<T: UniqueToken, M: crate::team::TeamMember> fmt::Debug for TeamTokenGuard<'_, '_, T, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TeamTokenGuard").field(&self.id).finish()
    }
}

impl<T: UniqueToken> fmt::Debug for TokenGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TokenGuard").field(&self.id).finish()
    }
}
