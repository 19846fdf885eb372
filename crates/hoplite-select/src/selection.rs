//! [`Selection`]: one choice of resource by a policy, and the reports it forwards to the
//! policy's logic.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, Submission};
use crate::generic_policy::Logic;
use crate::info::{InfoSet, Report};

/// One choice of resource by a policy (the seed's *Selection*): the resource, the policy's
/// ticket for the reports about it, and the backend's scratch space.
///
/// ```
/// use hoplite_select::{select, RoundRobin};
/// use hoplite_serial::Serial;
/// let p = RoundRobin::new(vec![Serial::new(), Serial::new()]);
/// let f = |s: &Serial, ()| s.instance_id();
/// let sel = select(&p, &f, &())?;
/// assert_eq!(sel.index(), 0);
/// assert_eq!(sel.submit(f, ()).unwrap(), p.resources()?[0].instance_id());
/// # Ok::<(), hoplite_select::SelectError>(())
/// ```
pub struct Selection<'p, L: Logic, B: Backend> {
    logic: &'p L,
    backend: &'p B,
    state: &'p L::State,
    index: usize,
    ticket: L::Ticket,
    scratch: B::Scratch<L::Infos>,
    /// Reported as submitted and not yet as completed.
    open: AtomicBool,
}

impl<L: Logic, B: Backend> Drop for Selection<'_, L, B> {
    /// Reports the completion of a submitted task that was not waited on (it was unwrapped or
    /// dropped, or its function panicked), so that counts of unfinished work never leak.
    #[inline(always)]
    fn drop(&mut self) {
        if <L::Infos as InfoSet>::TASK_COMPLETION && *self.open.get_mut() {
            self.logic
                .report(self.state, self.index, &self.ticket, Report::TaskCompletion);
        }
    }
}

impl<'p, L: Logic, B: Backend> Selection<'p, L, B> {
    /// The choice of resource `index` by `logic`, whose reports carry `ticket`.
    pub(crate) fn new(
        logic: &'p L,
        backend: &'p B,
        state: &'p L::State,
        index: usize,
        ticket: L::Ticket,
    ) -> Self {
        Selection {
            logic,
            backend,
            state,
            index,
            ticket,
            scratch: Default::default(),
            open: AtomicBool::new(false),
        }
    }

    /// Index of the selected resource.
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The selected resource (the seed's `unwrap(selection)`).
    #[inline(always)]
    pub fn resource(&self) -> &'p B::Resource {
        &self.backend.resources()[self.index]
    }

    /// The backend that holds the resource.
    #[inline(always)]
    pub fn backend(&self) -> &'p B {
        self.backend
    }

    /// Reports execution info about this selection to the policy. Infos the policy did not ask
    /// for are dropped (decided at compile time).
    ///
    /// A [`Report::TaskSubmission`] opens the selection; the first [`Report::TaskCompletion`]
    /// after it closes it and later ones are dropped, and a selection still open when it is
    /// dropped reports its completion then. So a backend that reports submissions gets each
    /// completion reported exactly once — also when the submitted function panics.
    #[inline(always)]
    pub fn report(&self, report: Report) {
        let forward = match report {
            Report::TaskSubmission => {
                self.open.store(true, Ordering::Release);
                true
            }
            Report::TaskCompletion => self.open.swap(false, Ordering::AcqRel),
            Report::TaskTime(_) => true,
        };
        if <L::Infos as InfoSet>::wants(&report) && forward {
            self.logic.report(self.state, self.index, &self.ticket, report);
        }
    }

    /// The backend's scratch space for this selection.
    #[inline(always)]
    pub fn scratch(&self) -> &B::Scratch<L::Infos> {
        &self.scratch
    }

    /// The backend's scratch space for this selection, to fill in
    /// [`instrument_before`](Backend::instrument_before).
    #[inline(always)]
    pub fn scratch_mut(&mut self) -> &mut B::Scratch<L::Infos> {
        &mut self.scratch
    }

    /// Submits `f(resource, args)` to the selected resource through the backend.
    #[inline(always)]
    pub fn submit<A, W>(self, f: impl FnOnce(&B::Resource, A) -> W, args: A) -> Submission<'p, L, B, W> {
        let backend = self.backend;
        backend.submit(self, f, args)
    }
}

impl<L: Logic, B: Backend> fmt::Debug for Selection<'_, L, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selection")
            .field("policy", &L::NAME)
            .field("index", &self.index)
            .finish()
    }
}
