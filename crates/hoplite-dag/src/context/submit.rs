//! Submission: how one launch becomes a vertex — its handles' borrows, its parents, its
//! device and stream, and its place in the stream's queue.

use std::collections::VecDeque;
use std::sync::Arc;

use hoplite_core::AccessKind;
use hoplite_core::held::{Access, RecordedArgs};
use hoplite_core::{ExecutionPolicy, ValidatedPolicy};
use hoplite_graph::GraphLaunch;
use smallvec::SmallVec;

use super::held::{HeldSlots, LaunchSlots};
use super::history::Record;
use super::job::{VertexJob, VertexWork};
use super::state::{State, UnfinishedVertex};
use super::vertex::VertexStatus;
use super::{Context, Execution, SpaceOf, Vertex};
use crate::device::{Device, Job, Stream};
use crate::model::{Edges, Plan, VertexId};
use crate::selection::{ArgumentData, DeviceSelectionPolicy, Location, LocationSet};
use crate::streams::{Assignment, ParentStreamPolicy};
use crate::sync_prims::{self, Mutex};
use crate::{DagError, Result};

/// Where a vertex runs.
#[derive(Clone, Copy, Debug)]
pub(super) enum Placement {
    /// On the device given (`None`: where the selection policy says).
    On(Option<usize>),
    /// On the device that holds its views' memory (`Context::device_of_data`), else where the
    /// selection policy says: kernel launches.
    ByData,
}

impl<D: Device> Context<D> {
    /// The common path of every launch: record the accesses, hand the handles' borrows to the
    /// context (`HeldSlots`), find the parents, pick device and stream, enqueue.
    pub(super) fn submit<L, K>(&self, label: &str, policy: L::Policy, args: L::Args, run: K) -> Result<Vertex>
    where
        L: GraphLaunch<SpaceOf<D>> + 'static,
        K: FnOnce(&str, &ValidatedPolicy<L::Policy>, &L::Args) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.submit_on::<L, K>(label, Placement::ByData, policy, args, run)
    }

    /// The device a launch with `accesses` runs on by its data: the first of the context's
    /// devices that holds the memory of the first view in an accelerator's memory (as GrCUDA
    /// runs a kernel where its arrays are), `None` when no view is or no device holds it.
    fn device_of_data(&self, accesses: &[Access]) -> Option<usize> {
        let memory = accesses.iter().find_map(|a| a.location)?;
        self.devices.iter().position(|d| d.holds_memory_of(memory))
    }

    /// [`submit`](Self::submit) on device `pin` when given (a stream of that device, a
    /// parent's if the stream policy picks one there), else where the policies say.
    ///
    /// The steps, under the state and held-borrow locks: [`take_borrows`](Self::take_borrows),
    /// [`plan_dependencies`](Self::plan_dependencies), [`assign_stream`](Self::assign_stream),
    /// then, once nothing can fail, [`add_vertex`](Self::add_vertex),
    /// [`use_slots`](Self::use_slots) and [`enqueue`](Self::enqueue). A launch refused on the
    /// way leaves the model and the held borrows as they were.
    pub(super) fn submit_on<L, K>(
        &self,
        label: &str,
        placement: Placement,
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
        let pin = match placement {
            Placement::On(pin) => pin,
            Placement::ByData => None,
        };
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
        let taken = self.take_borrows(&mut state, &mut held, args)?;
        let status = state.fresh_status();
        let label_owned = Self::shared_label(&mut state, label);
        let planned = Self::plan_dependencies(&state, &taken.accesses);
        let pin = match placement {
            Placement::On(pin) => pin,
            Placement::ByData => self.device_of_data(&taken.accesses),
        };
        let stream = match self.assign_stream(&mut state, pin, &planned.parents, &taken.accesses) {
            Ok(stream) => stream,
            Err(e) => return taken.refuse(&mut held, e),
        };
        let policy = match ValidatedPolicy::new(
            label,
            policy.clone().with_space(state.streams[stream].space().clone()),
        ) {
            Ok(policy) => policy,
            Err(e) => return taken.refuse(&mut held, e.into()),
        };
        // Nothing refuses the launch from here on.
        let Taken {
            handles,
            accesses,
            used,
            all_held,
        } = taken;
        let Planned {
            plan,
            parents,
            poisoned,
        } = planned;
        let (id, edges) = Self::add_vertex(&mut state, accesses, plan, &parents, stream);
        let slots = Self::use_slots(&mut held, &used, stream, &status);
        // Given back before anything below could wait on a stream (whose work may be a task
        // sweeping the slots).
        drop(held);
        let job = VertexJob {
            work: Mutex::new(VertexWork {
                run: Some(run),
                policy,
                handles: Some(handles),
            }),
            release_handles: !all_held,
            label: label_owned,
            status: status.clone(),
            // Filled by `enqueue`, with the parents it finds unfinished.
            parent_statuses: SmallVec::new(),
            poisoned,
            context: super::job::context_key(Arc::as_ptr(&self.held)),
        };
        Self::enqueue(&mut state, id, stream, &parents, edges, slots, job);
        drop(state);
        let vertex = Vertex {
            id,
            status,
            held: Arc::downgrade(&self.held),
        };
        if self.execution == Execution::Sync {
            vertex.wait()?;
        }
        Ok(vertex)
    }

    /// Takes the borrows: records the accesses of `args` and turns its handles into handles
    /// of the context's group that rely on its held borrows (`HeldSlots`).
    ///
    /// On `Ok`, no two handles of the launch conflict, and every slot a handle took is in
    /// `Taken::used`. On `Err`, no slot is left taken for the launch and the handles are
    /// dropped.
    fn take_borrows<A: RecordedArgs>(
        &self,
        state: &mut State<D>,
        held: &mut HeldSlots,
        args: A,
    ) -> Result<Taken<A>> {
        // Recorded into a list a finished vertex left, which the model then keeps.
        let mut accesses = state.model.access_list();
        RecordedArgs::record_handles(&args, &mut accesses);
        let handle_count = accesses.len();
        // Handles in the group are not checked against each other: two of this launch that
        // conflict (`(x.write(), x.read())`) are refused here, as an eager launch refuses them.
        if let Some(conflict) = Access::conflict_within(&accesses) {
            return Err(DagError::Core(conflict));
        }
        let (handles, used, asked) = {
            let mut launch_slots = LaunchSlots {
                slots: held,
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
            let handles = unsafe { RecordedArgs::into_held(args, &self.group, &mut launch_slots) };
            (handles, launch_slots.used, launch_slots.asked)
        };
        let taken = Taken {
            handles,
            accesses,
            used,
            // Every handle relies on a held borrow (or the launch is refused below): none ends
            // a borrow when dropped, so the vertex's job keeps them, to be dropped here.
            all_held: asked == handle_count,
        };
        if let Some(conflict) = RecordedArgs::conflict(&taken.handles) {
            let e = DagError::Core(conflict.clone());
            return taken.refuse(held, e);
        }
        Ok(taken)
    }

    /// The launch's label, as shared with the last launch when they are the same: launches in
    /// a loop repeat their label, which is then shared rather than copied.
    fn shared_label(state: &mut State<D>, label: &str) -> Arc<str> {
        match &state.last_label {
            Some(last) if **last == *label => last.clone(),
            _ => {
                let fresh: Arc<str> = Arc::from(label);
                state.last_label = Some(fresh.clone());
                fresh
            }
        }
    }

    /// Plans the dependencies of a launch with `accesses`: its parents, and the failure it
    /// inherits from a failed vertex it conflicts with.
    ///
    /// Changes nothing: the plan is added only by [`add_vertex`](Self::add_vertex), so a launch
    /// refused before then leaves the model as it was (where an earlier vertex would otherwise
    /// lose an active access, and a later launch the edge that orders it).
    fn plan_dependencies(state: &State<D>, accesses: &[Access]) -> Planned {
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
        let plan = state.model.plan(accesses);
        let parents: SmallVec<[VertexId; 4]> = plan.edges().iter().map(|e| e.parent).collect();
        Planned {
            plan,
            parents,
            poisoned,
        }
    }

    /// Assigns the vertex a stream: a parent's if the parent-stream policy gives one (on device
    /// `pin`, when given), else a free or new stream on `pin` or on the device the selection
    /// policy picks. A new stream is made on its device and added to the state.
    ///
    /// On `Ok(s)`, stream `s` exists in `state.streams`, `state.in_stream_order` and the
    /// assigner. On `Err` (the device could not make a stream, or a transfer-time policy found
    /// an argument up to date nowhere) no stream was added.
    fn assign_stream(
        &self,
        state: &mut State<D>,
        pin: Option<usize>,
        parents: &[VertexId],
        accesses: &[Access],
    ) -> Result<usize> {
        let multi_gpu = pin.is_none() && !parents.is_empty();
        let assignment = match state.assigner.parent_policy() {
            // The device first, then a parent's stream there or a stream of that device.
            ParentStreamPolicy::MultiGpuEarlyDisjoint if multi_gpu => {
                let device = self.select_device(state, accesses, None)?;
                match state.assigner.parent_stream_on(parents, Some(device)) {
                    Some(s) => Assignment::Existing(s),
                    None => state
                        .assigner
                        .free_or_new(device, self.devices[device].max_streams()),
                }
            }
            // The best of the free parents' devices, and that parent's stream.
            ParentStreamPolicy::MultiGpuDisjoint if multi_gpu => {
                let free = state.assigner.free_parent_streams(parents);
                if free.is_empty() {
                    let device = self.select_device(state, accesses, None)?;
                    state
                        .assigner
                        .free_or_new(device, self.devices[device].max_streams())
                } else {
                    let candidates: SmallVec<[usize; 4]> = free.iter().map(|&(d, _)| d).collect();
                    let device = self.select_device(state, accesses, Some(&candidates))?;
                    let stream = free
                        .iter()
                        .find(|&&(d, _)| d == device)
                        .map_or(free[0].1, |&(_, s)| s);
                    Assignment::Existing(stream)
                }
            }
            _ => match state.assigner.parent_stream_on(parents, pin) {
                Some(s) => Assignment::Existing(s),
                None => {
                    let device = match pin {
                        Some(device) => device,
                        None => self.select_device(state, accesses, None)?,
                    };
                    state
                        .assigner
                        .free_or_new(device, self.devices[device].max_streams())
                }
            },
        };
        Ok(match assignment {
            Assignment::Existing(s) => s,
            Assignment::New { device, .. } => {
                let stream = self.devices[device].new_stream()?;
                state.streams.push(stream);
                state.in_stream_order.push(VecDeque::new());
                state.assigner.add_stream(device)
            }
        })
    }

    /// The device the selection policy picks for a launch with `accesses`, among `candidates`
    /// when given, else among all devices.
    fn select_device(
        &self,
        state: &mut State<D>,
        accesses: &[Access],
        candidates: Option<&[usize]>,
    ) -> Result<usize> {
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
        Ok(match candidates {
            Some(candidates) => state.selector.select_among(&data, &busy, candidates)?,
            None => state.selector.select(&data, &busy)?,
        })
    }

    /// Adds the vertex, placed on `stream`, to the model (committing `plan`), the stream
    /// assigner and the data locations; returns its id and edges.
    ///
    /// Cannot fail: called once nothing can refuse the launch any more. Afterwards later
    /// launches see the vertex's accesses, and where its data will be once it ran.
    fn add_vertex(
        state: &mut State<D>,
        accesses: Vec<Access>,
        plan: Plan,
        parents: &[VertexId],
        stream: usize,
    ) -> (VertexId, Edges) {
        let device = state.assigner.streams()[stream].device;
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
        state.assigner.place(id, parents, stream);
        (id, edges)
    }

    /// Makes the vertex of `status`, on `stream`, a user of the slots its handles took; returns
    /// those slots.
    ///
    /// From then on each of them keeps its borrow until the vertex has ended; the slots taken
    /// by handles that keep their own borrows (and so hold none) are given back.
    fn use_slots(
        held: &mut HeldSlots,
        used: &[u32],
        stream: usize,
        status: &sync_prims::Arc<VertexStatus>,
    ) -> SmallVec<[u32; 4]> {
        let mut slots = SmallVec::new();
        for &k in used {
            if held.slots[k as usize].held.is_some() {
                held.use_slot(k, stream, status);
                slots.push(k);
            } else {
                // Handles that keep their own borrows (`into_held`'s default) took no slot.
                held.release_if_unused(k);
            }
        }
        slots
    }

    /// Enqueues vertex `id`'s `job` on `stream`, after events of its parents on other streams,
    /// and records it as live, in its stream's order, and in the history.
    ///
    /// The job gets the statuses of the parents still unfinished (a failed one fails it);
    /// those on this stream come before it by stream order, those on others through their
    /// events, so its kernel starts after every parent's has returned.
    fn enqueue<P, A, K>(
        state: &mut State<D>,
        id: VertexId,
        stream: usize,
        parents: &[VertexId],
        edges: Edges,
        slots: SmallVec<[u32; 4]>,
        mut job: VertexJob<P, A, K>,
    ) where
        VertexJob<P, A, K>: Job<SpaceOf<D>> + 'static,
    {
        // Parents on other streams are waited for through their events; those on this
        // stream come first by stream order.
        for p in parents {
            if let Some(parent) = state.live.get(*p) {
                job.parent_statuses.push(parent.status.clone());
                if parent.stream != stream {
                    state.streams[stream].wait_event(&parent.event);
                }
            }
        }
        let label = job.label.clone();
        let status = job.status.clone();
        let job: Arc<dyn Job<SpaceOf<D>>> = Arc::new(job);
        let event = state.streams[stream].enqueue_recorded_job(job.clone());
        state.live.insert(
            id,
            UnfinishedVertex {
                event,
                stream,
                status,
                job,
                slots,
            },
        );
        state.in_stream_order[stream].push_back(id);
        state.history.push(Record {
            id,
            label,
            device: state.assigner.streams()[stream].device,
            stream,
            edges,
            ended: None,
        });
    }
}

/// A launch's handles once they rely on the context's held borrows, and what taking them
/// found.
struct Taken<A> {
    handles: A,
    /// The launch's accesses, one per handle.
    accesses: Vec<Access>,
    /// The slots the handles took, each once.
    used: SmallVec<[u32; 4]>,
    /// Whether every handle relies on a held borrow (see `VertexJob::release_handles`).
    all_held: bool,
}

impl<A> Taken<A> {
    /// Refuses the launch with `e`: drops its handles unused, then gives back the slots it
    /// took that no earlier vertex uses.
    fn refuse<T>(self, held: &mut HeldSlots, e: DagError) -> Result<T> {
        drop(self.handles);
        for &k in &self.used {
            held.release_if_unused(k);
        }
        Err(e)
    }
}

/// A launch's planned dependencies (see `plan_dependencies`).
struct Planned {
    /// What adding the vertex will do to the model.
    plan: Plan,
    /// Its parents, in launch order.
    parents: SmallVec<[VertexId; 4]>,
    /// The failure it inherits from a failed vertex it conflicts with.
    poisoned: Option<Box<DagError>>,
}

#[cfg(test)]
mod tests {
    use hoplite_core::AccessKind;
    use hoplite_core::View;
    use hoplite_serial::Serial;

    use super::*;
    use crate::ContextOptions;
    use crate::device::{HostDevice, HostStream};

    /// A host device that claims the memory of accelerator `holds`, as a GPU's device does.
    struct Holding {
        inner: HostDevice<Serial>,
        holds: Option<usize>,
    }

    impl Device for Holding {
        type Stream = HostStream<Serial>;
        fn name(&self) -> String {
            self.inner.name()
        }
        fn new_stream(&self) -> std::result::Result<HostStream<Serial>, crate::DagError> {
            self.inner.new_stream()
        }
        fn holds_memory_of(&self, location: usize) -> bool {
            self.holds == Some(location)
        }
    }

    fn device(name: &str, holds: Option<usize>) -> Holding {
        Holding {
            inner: HostDevice::new(name, vec![Serial::default()]).expect("a device"),
            holds,
        }
    }

    #[test]
    fn a_launch_runs_on_the_device_that_holds_its_views_memory() {
        let ctx = Context::new(
            vec![device("a", Some(3)), device("b", Some(7)), device("c", None)],
            ContextOptions::default(),
        )
        .expect("a context");
        let x: View<f64, 1> = View::new("x", [4]).expect("x");
        let on = |memory: Option<usize>| Access {
            location: memory,
            ..Access::of_view(&x, AccessKind::Read)
        };
        // The first view in an accelerator's memory decides; host memory does not.
        assert_eq!(ctx.device_of_data(&[on(None), on(Some(7)), on(Some(3))]), Some(1));
        assert_eq!(ctx.device_of_data(&[on(Some(3))]), Some(0));
        assert_eq!(ctx.device_of_data(&[on(None)]), None);
        // Memory no device of the context holds leaves the choice to the selection policy.
        assert_eq!(ctx.device_of_data(&[on(Some(5))]), None);
        assert_eq!(ctx.device_of_data(&[]), None);
    }
}
