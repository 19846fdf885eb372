//! Submission: how one launch becomes a vertex — its handles' borrows, its parents, its
//! device and stream, and its place in the stream's queue.

use std::collections::VecDeque;
use std::sync::Arc;

use hoplite_core::view::AccessKind;
use hoplite_core::{ExecutionPolicy, ValidatedPolicy};
use hoplite_graph::{Access, GraphArgs, GraphLaunch, GraphPolicy};
use parking_lot::Mutex;
use smallvec::SmallVec;

use super::held::{HeldSlots, Taking};
use super::history::Record;
use super::job::{VertexJob, VertexWork};
use super::state::Live;
use super::vertex::Cell;
use super::{Context, Execution, SpaceOf, Vertex};
use crate::device::{Device, Job, Stream};
use crate::model::VertexId;
use crate::selection::{ArgumentData, DeviceSelectionPolicy, Location, LocationSet};
use crate::streams::Assignment;
use crate::{DagError, Result};

impl<D: Device> Context<D> {
    /// The common path of every launch: record the accesses, hand the handles' borrows to the
    /// context (`HeldSlots`), find the parents, pick device and stream, enqueue.
    pub(super) fn submit<L, K>(&self, label: &str, policy: L::Policy, args: L::Args, run: K) -> Result<Vertex>
    where
        L: GraphLaunch<SpaceOf<D>> + 'static,
        K: FnOnce(&str, &ValidatedPolicy<L::Policy>, &L::Args) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.submit_on::<L, K>(label, None, policy, args, run)
    }

    /// [`submit`](Self::submit) on device `pin` when given (a stream of that device, a
    /// parent's if the stream policy picks one there), else where the policies say.
    pub(super) fn submit_on<L, K>(
        &self,
        label: &str,
        pin: Option<usize>,
        policy: L::Policy,
        args: L::Args,
        run: K,
    ) -> Result<Vertex>
    where
        L: GraphLaunch<SpaceOf<D>> + 'static,
        K: FnOnce(&str, &ValidatedPolicy<L::Policy>, &L::Args) -> hoplite_core::Result<()> + Send + 'static,
    {
        // The policy is checked now, so that a bad one is this call's error.
        policy.validate(label)?;
        if let Some(device) = pin
            && device >= self.devices.len()
        {
            return Err(DagError::NoSuchDevice {
                device,
                devices: self.devices.len(),
            });
        }
        let mut state = self.state.lock();
        let mut held = self.held.lock();
        Self::retire(&mut state, &mut held);
        held.bound();
        // Recorded into a list a finished vertex left, which the model then keeps.
        let mut accesses = state.model.access_list();
        GraphArgs::record_handles(&args, &mut accesses);
        let handle_count = accesses.len();
        // Handles in the group are not checked against each other: two of this launch that
        // conflict (`(x.write(), x.read())`) are refused here, as an eager launch refuses them.
        if let Some(conflict) = Access::conflict_within(&accesses) {
            return Err(DagError::Core(conflict));
        }
        let (handles, used, asked) = {
            let mut taking = Taking {
                slots: &mut held,
                group: &self.group,
                used: SmallVec::new(),
                asked: 0,
            };
            // SAFETY: handles of the context's group (and those relying on its held borrows)
            // are used only by the kernels of its vertices, and the context orders every two
            // vertices whose accesses conflict (the model gives the later one an edge to the
            // earlier, or the earlier has finished before the later is made): its kernel starts
            // after the earlier kernel has returned, through stream order or an event (each a
            // mutex hand-off). Host access goes through outside borrows, which the group's and
            // the held borrows are checked against. A held borrow stays until every vertex that
            // uses it has ended (`HeldSlots`), and a vertex's work is done with its handles
            // before it ends (`VertexJob::run`: the handles it keeps afterwards end nothing and
            // are never used again); a refused launch drops its handles unused before its slots
            // are released. `held` stays locked until the vertex is a user of its slots, so no
            // host wait ends them in between.
            let handles = unsafe { GraphArgs::into_held(args, &self.group, &mut taking) };
            (handles, taking.used, taking.asked)
        };
        // Every handle relies on a held borrow (or the launch is refused below): none ends a
        // borrow when dropped, so the vertex's job keeps them, to be dropped here.
        let all_held = asked == handle_count;
        // Gives back the slots a refused launch took (those no earlier vertex uses).
        let refuse = |handles: L::Args, held: &mut HeldSlots, e: DagError| {
            drop(handles);
            for &k in &used {
                held.release_if_unused(k);
            }
            Err(e)
        };
        if let Some(conflict) = GraphArgs::conflict(&handles) {
            let e = DagError::Core(conflict.clone());
            return refuse(handles, &mut held, e);
        }
        let cell = state.fresh_cell();
        // Launches in a loop repeat their label: the last one is shared rather than copied.
        let label_owned: Arc<str> = match &state.last_label {
            Some(last) if **last == *label => last.clone(),
            _ => {
                let fresh: Arc<str> = Arc::from(label);
                state.last_label = Some(fresh.clone());
                fresh
            }
        };
        // A launch that conflicts with a failed vertex's access would have been its
        // descendant had it come before the failed vertex finished: it fails the same way,
        // whatever the timing.
        // Boxed: the vertex's work carries it, and an error inline would add 120 bytes to
        // every launch's work for the rare one that inherits a failure.
        let poisoned: Option<Box<DagError>> = state
            .poisoned
            .iter()
            .find(|(p, _)| accesses.iter().any(|a| state.model.conflicts(p, a)))
            .map(|(_, e)| Box::new(e.clone()));
        // Planned, not yet added: nothing below may leave the model changed for a launch
        // that fails (an earlier vertex would lose an active access, and a later launch the
        // edge that orders it).
        let plan = state.model.plan(&accesses);
        let parents: SmallVec<[VertexId; 4]> = plan.edges().iter().map(|e| e.parent).collect();

        // A parent's stream if the policy gives one, else a free or new stream on the device
        // the selection policy picks.
        let assignment = match state.assigner.parent_stream_on(&parents, pin) {
            Some(s) => Assignment::Existing(s),
            None if let Some(device) = pin => state
                .assigner
                .free_or_new(device, self.devices[device].max_streams()),
            None => {
                // Only the data-aware policies look at where the arguments are.
                let data: SmallVec<[ArgumentData; 8]> = if state.selector.needs_data() {
                    accesses
                        .iter()
                        .map(|a| ArgumentData {
                            bytes: a.bytes,
                            up_to_date: state
                                .locations
                                .get(&a.allocation)
                                .copied()
                                .unwrap_or(LocationSet::only(Location::Cpu)),
                        })
                        .collect()
                } else {
                    SmallVec::new()
                };
                let busy = if state.selector.policy() == DeviceSelectionPolicy::StreamAware {
                    state.assigner.busy_streams(self.devices.len())
                } else {
                    Vec::new()
                };
                let device = state.selector.select(&data, &busy);
                state
                    .assigner
                    .free_or_new(device, self.devices[device].max_streams())
            }
        };
        let stream_index = match assignment {
            Assignment::Existing(s) => s,
            Assignment::New { device, .. } => {
                let stream = match self.devices[device].new_stream() {
                    Ok(stream) => stream,
                    Err(e) => return refuse(handles, &mut held, e),
                };
                state.streams.push(stream);
                state.in_stream_order.push(VecDeque::new());
                state.assigner.add_stream(device)
            }
        };
        let device = state.assigner.streams()[stream_index].device;
        let policy =
            match ValidatedPolicy::new(label, policy.on_instance(state.streams[stream_index].space())) {
                Ok(policy) => policy,
                Err(e) => return refuse(handles, &mut held, e.into()),
            };
        // Where the data will be up to date once the vertex ran.
        for a in accesses.iter() {
            let at = Location::Device(device);
            let locations = state
                .locations
                .entry(a.allocation)
                .or_insert(LocationSet::only(Location::Cpu));
            match a.kind {
                AccessKind::Read => locations.insert(at),
                AccessKind::Write | AccessKind::Atomic => *locations = LocationSet::only(at),
            }
        }
        let (id, edges) = state.model.commit(accesses, plan);
        state.assigner.place(id, &parents, stream_index);
        // The vertex uses its slots from now on; `held` is given back before anything below
        // could wait on a stream (whose work may be a task sweeping the slots).
        let mut slots = SmallVec::new();
        for &k in &used {
            if held.slots[k as usize].held.is_some() {
                held.use_slot(k, stream_index, &cell);
                slots.push(k);
            } else {
                // Handles that keep their own borrows (`into_held`'s default) took no slot.
                held.release_if_unused(k);
            }
        }
        drop(held);

        // Parents on other streams are waited for through their events; those on this
        // stream come first by stream order.
        let mut parent_cells: SmallVec<[Arc<Cell>; 4]> = SmallVec::new();
        for p in &parents {
            if let Some(parent) = state.live.get(*p) {
                parent_cells.push(parent.cell.clone());
                if parent.stream != stream_index {
                    state.streams[stream_index].wait_event(&parent.event);
                }
            }
        }
        let label_owned_record = label_owned.clone();
        let job: Arc<dyn Job<SpaceOf<D>>> = Arc::new(VertexJob {
            work: Mutex::new(VertexWork {
                run: Some(run),
                policy,
                handles: Some(handles),
            }),
            release_handles: !all_held,
            label: label_owned,
            cell: cell.clone(),
            parent_cells,
            poisoned,
        });
        let event = state.streams[stream_index].enqueue_recorded_job(job.clone());
        state.live.insert(
            id,
            Live {
                event,
                stream: stream_index,
                cell: cell.clone(),
                job,
                slots,
            },
        );
        state.in_stream_order[stream_index].push_back(id);
        state.history.push(Record {
            id,
            label: label_owned_record,
            device,
            stream: stream_index,
            edges,
            ended: None,
        });
        drop(state);
        let vertex = Vertex {
            id,
            cell,
            held: Arc::downgrade(&self.held),
        };
        if self.execution == Execution::Sync {
            vertex.wait()?;
        }
        Ok(vertex)
    }
}
