//! Retiring finished vertices, and the host's access to views: `read`, `write` and
//! `synchronize` wait only for the vertices they need.

use std::sync::Arc;

use hoplite_core::AccessKind;
use hoplite_core::held::Access;
use hoplite_core::{ArrayLayout, HostAccessibleSpace, HostRead, HostWrite, View, ViewValue};

use super::Context;
use super::held::HeldSlots;
use super::history::Ended;
use super::state::{LOCATIONS_LIMIT, State};
use super::vertex::{VertexState, VertexStatus};
use crate::Result;
use crate::device::Device;
use crate::model::VertexId;
use crate::selection::{Location, LocationSet};
use crate::sync_prims;

impl<D: Device> Context<D> {
    /// Retires the vertices whose kernels ended: they leave the frontier and free their
    /// streams; the accesses of failed ones are remembered (see `State::poisoned`).
    pub(super) fn retire(state: &mut State<D>, held: &mut HeldSlots) {
        for s in 0..state.in_stream_order.len() {
            while let Some(&id) = state.in_stream_order[s].front() {
                // Retired already (by a host wait), or its work has ended.
                let ended = state.live.get(id).is_none_or(|l| l.status.has_ended());
                if !ended {
                    break;
                }
                state.in_stream_order[s].pop_front();
                Self::retire_one(state, held, id);
            }
        }
        if state.locations.len() > state.prune_locations_at {
            let State { locations, model, .. } = &mut *state;
            locations.retain(|key, _| model.uses(*key));
            // What unfinished vertices still use stays; scan again only once that has doubled.
            state.prune_locations_at = LOCATIONS_LIMIT.max(2 * state.locations.len());
        }
    }

    /// Retires one finished vertex (its status holds its final state), unless that happened
    /// already.
    pub(super) fn retire_one(state: &mut State<D>, held: &mut HeldSlots, id: VertexId) {
        let Some(live) = state.live.remove(id) else {
            return;
        };
        // The history keeps how it ended; the status goes (see `Record::ended`).
        if let Some(record) = state.history.get_mut(id) {
            let p = live.status.progress.lock();
            record.ended = Some(Ended {
                state: p.state.name(),
                start: p.start,
                end: p.end,
            });
        }
        if live.status.has_failed()
            && let VertexState::Failed(e) = live.status.state()
        {
            for a in state.model.accesses(id).unwrap_or_default() {
                state.poisoned.push((a.clone(), e.clone()));
            }
            state.unreported.push(e);
        }
        state.model.finish(id);
        state.assigner.finish(id);
        state.spent_statuses.push_back(live.status);
        state.spent_jobs.push_back(live.job);
        state.sweep_jobs();
        // After the job, whose handles hold views too, has most likely gone.
        for &k in &live.slots {
            held.release_if_orphaned(k);
        }
    }

    /// Waits for the unfinished vertices whose accesses conflict with `access`. A read then
    /// returns the failure of a failed vertex it conflicts with; a write takes the elements
    /// back for the host, clearing the failures it covers.
    /// Refuses a wait from inside one of this context's vertices (this thread runs it), or from
    /// a kernel on one of its streams' spaces while a vertex runs (see
    /// [`DagError::WaitInsideVertex`]).
    pub(super) fn refuse_wait_inside(&self, wait: &'static str) -> Result<()> {
        super::job::refuse_wait_in_vertex(super::job::context_key(Arc::as_ptr(&self.held)), wait)?;
        let state = self.state.lock();
        let running = state
            .live
            .iter()
            .any(|(_, l)| matches!(l.status.state(), super::vertex::VertexState::Running));
        if running
            && state
                .streams
                .iter()
                .any(|s| hoplite_core::ExecutionSpace::in_parallel(crate::device::Stream::space(s)))
        {
            return Err(crate::DagError::WaitInsideVertex {
                wait,
                inside: "a kernel running on one of its spaces".to_owned(),
            });
        }
        Ok(())
    }

    fn wait_for(&self, access: &Access) -> Result<()> {
        let waits: Vec<(VertexId, sync_prims::Arc<VertexStatus>)> = {
            let mut state = self.state.lock();
            Self::retire(&mut state, &mut self.held.lock());
            let ids = state.model.conflicting(access);
            ids.iter()
                .filter_map(|&id| state.live.get(id).map(|l| (id, l.status.clone())))
                .collect()
        };
        // The latest first: a stream ends its vertices in order, so once the latest of each
        // stream has ended the earlier ones have too, and the host sleeps once per stream
        // instead of once per vertex.
        for (_, status) in waits.iter().rev() {
            status.wait();
        }
        // The waited vertices are finished (their statuses say so, with their outcome): retire
        // them now, whether or not their streams have reported them yet, so that every
        // failure among them is recorded before the check below.
        let mut state = self.state.lock();
        let mut held = self.held.lock();
        Self::retire(&mut state, &mut held);
        for &(id, _) in &waits {
            Self::retire_one(&mut state, &mut held, id);
        }
        // The host takes the view next: the borrows only finished vertices use end now.
        held.sweep();
        drop(held);
        if access.kind == AccessKind::Write {
            let footprint = &access.footprint;
            state
                .poisoned
                .retain(|(p, _)| !(p.allocation == access.allocation && footprint.covers(&p.footprint)));
        } else if let Some((_, e)) = state
            .poisoned
            .iter()
            .find(|(p, _)| state.model.conflicts(p, access))
        {
            return Err(e.clone());
        }
        let locations = state
            .locations
            .entry(access.allocation)
            .or_insert(LocationSet::only(Location::Cpu));
        match access.kind {
            AccessKind::Read => locations.insert(Location::Cpu),
            _ => *locations = LocationSet::only(Location::Cpu),
        }
        Ok(())
    }

    /// Reads `view` on the host: waits for the vertices that write it (and, through their
    /// streams, their ancestors) — no other — and borrows it.
    ///
    /// # Errors
    ///
    /// The failure of a vertex that writes the view (or of its ancestor), or a borrow
    /// conflict with a handle held outside the context.
    pub fn read<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace>(
        &self,
        view: &'v View<T, R, L, S>,
    ) -> Result<HostRead<'v, T, R, L, S>> {
        self.refuse_wait_inside("Context::read")?;
        self.wait_for(&Access::of_view(view, AccessKind::Read))?;
        Ok(view.host_read()?)
    }

    /// Writes `view` on the host: waits for every vertex that reads or writes it, and borrows
    /// it exclusively. Writing on the host also clears a failed vertex's mark on the view.
    ///
    /// # Errors
    ///
    /// As for [`read`](Self::read).
    pub fn write<'v, T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace>(
        &self,
        view: &'v View<T, R, L, S>,
    ) -> Result<HostWrite<'v, T, R, L, S>> {
        self.refuse_wait_inside("Context::write")?;
        self.wait_for(&Access::of_view(view, AccessKind::Write))?;
        Ok(view.host_write()?)
    }

    /// Waits for every vertex; returns the first failure not returned by an earlier call.
    ///
    /// # Errors
    ///
    /// That failure.
    pub fn synchronize(&self) -> Result<()> {
        self.refuse_wait_inside("Context::synchronize")?;
        let statuses: Vec<(VertexId, sync_prims::Arc<VertexStatus>)> = {
            let state = self.state.lock();
            let mut statuses: Vec<(VertexId, sync_prims::Arc<VertexStatus>)> =
                state.live.iter().map(|(id, l)| (id, l.status.clone())).collect();
            statuses.sort_unstable_by_key(|&(id, _)| id);
            statuses
        };
        // The latest first, as in `wait_for`.
        for (_, status) in statuses.iter().rev() {
            status.wait();
        }
        let mut state = self.state.lock();
        let mut held = self.held.lock();
        Self::retire(&mut state, &mut held);
        for &(id, _) in &statuses {
            Self::retire_one(&mut state, &mut held, id);
        }
        held.sweep();
        drop(held);
        let unreported = std::mem::take(&mut state.unreported);
        match unreported.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
