//! Layer 1: which stream a launch goes to, as pure code over the streams' states.

use crate::model::VertexId;
use crate::vertex_table::VertexTable;

/// Where a launch without a usable parent stream goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NewStreamPolicy {
    /// A free stream of the device (no unfinished launch on it), else a new one.
    #[default]
    Reuse,
    /// Always a new stream.
    AlwaysNew,
}

/// Whether a launch with parents goes to a parent's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ParentStreamPolicy {
    /// The stream of the first parent: children of one parent line up behind it.
    SameAsParent,
    /// The stream of the first parent whose stream no other child took yet, else a free or
    /// new stream: siblings run side by side.
    #[default]
    Disjoint,
    /// As `Disjoint` over several devices, choosing the device first (GrCUDA's
    /// `MULTIGPU_EARLY_DISJOINT`): the device selection policy picks the launch's device, then
    /// the launch takes a parent's stream there that no other child took, else a free or new
    /// stream on that device.
    MultiGpuEarlyDisjoint,
    /// As `Disjoint` over several devices, choosing among the parents' devices (GrCUDA's
    /// `MULTIGPU_DISJOINT`): of the parents whose streams no other child took (the first per
    /// device), the device selection policy picks the device, and the launch takes that
    /// parent's stream; with no such parent, a free or new stream on the device the policy
    /// picks.
    MultiGpuDisjoint,
}

/// A stream of the assigner's view: its device and how many unfinished launches it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamState {
    /// The device the stream belongs to.
    pub device: usize,
    /// Unfinished launches on it.
    pub busy: usize,
}

/// What [`StreamAssigner::free_or_new`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assignment {
    /// An existing stream.
    Existing(usize),
    /// A new stream on this device; its index is the next one.
    New {
        /// The device.
        device: usize,
        /// The stream's index.
        stream: usize,
    },
}

impl Assignment {
    /// The stream's index.
    pub fn stream(self) -> usize {
        match self {
            Assignment::Existing(s) | Assignment::New { stream: s, .. } => s,
        }
    }
}

/// The stream manager's decisions (GrCUDA's `GrCUDAStreamManager` policies).
#[derive(Clone, Debug, Default)]
pub struct StreamAssigner {
    new_policy: NewStreamPolicy,
    parent_policy: ParentStreamPolicy,
    streams: Vec<StreamState>,
    /// The stream of each unfinished launch, and whether a child already took it.
    placed: VertexTable<(usize, bool)>,
    /// Launches that would have had a new stream but queued behind a busy one: their device
    /// makes no more streams.
    capped: usize,
}

impl StreamAssigner {
    /// An assigner with no streams yet.
    pub fn new(new_policy: NewStreamPolicy, parent_policy: ParentStreamPolicy) -> Self {
        StreamAssigner {
            new_policy,
            parent_policy,
            streams: Vec::new(),
            placed: VertexTable::default(),
            capped: 0,
        }
    }

    /// How many launches queued behind a busy stream because their device had as many
    /// streams as it runs at once ([`free_or_new`](Self::free_or_new)'s `limit`), where a
    /// device without the limit would have been given a new stream.
    ///
    /// ```
    /// use hoplite_dag::{Assignment, NewStreamPolicy, ParentStreamPolicy, StreamAssigner};
    /// let mut streams = StreamAssigner::new(NewStreamPolicy::AlwaysNew, ParentStreamPolicy::Disjoint);
    /// let s0 = streams.add_stream(0);
    /// assert_eq!(streams.free_or_new(0, Some(1)), Assignment::Existing(s0));
    /// assert_eq!(streams.capped(), 1);
    /// ```
    pub fn capped(&self) -> usize {
        self.capped
    }

    /// The streams so far.
    pub fn streams(&self) -> &[StreamState] {
        &self.streams
    }

    /// Busy streams per device (for stream-aware selection).
    pub fn busy_streams(&self, devices: usize) -> Vec<usize> {
        let mut busy = vec![0; devices];
        for s in &self.streams {
            if s.busy > 0 && s.device < devices {
                busy[s.device] += 1;
            }
        }
        busy
    }

    /// The parent stream a launch with `parents` (unfinished ones, in launch order) takes
    /// under the parent-stream policy, if any.
    pub fn parent_stream(&self, parents: &[VertexId]) -> Option<usize> {
        self.parent_stream_on(parents, None)
    }

    /// [`parent_stream`](Self::parent_stream) among the parents on `device` only, when given
    /// (a launch that must run there).
    ///
    /// ```
    /// use hoplite_dag::{NewStreamPolicy, ParentStreamPolicy, StreamAssigner};
    /// let mut streams = StreamAssigner::new(NewStreamPolicy::Reuse, ParentStreamPolicy::SameAsParent);
    /// let on_0 = streams.add_stream(0);
    /// streams.place(0, &[], on_0);
    /// assert_eq!(streams.parent_stream_on(&[0], Some(0)), Some(on_0));
    /// assert_eq!(streams.parent_stream_on(&[0], Some(1)), None, "the parent is on device 0");
    /// ```
    pub fn parent_stream_on(&self, parents: &[VertexId], device: Option<usize>) -> Option<usize> {
        let placed = parents
            .iter()
            .filter_map(|&p| self.placed.get(p))
            .filter(|&&(s, _)| device.is_none_or(|d| self.streams[s].device == d));
        match self.parent_policy {
            ParentStreamPolicy::SameAsParent => placed.map(|&(s, _)| s).next(),
            ParentStreamPolicy::Disjoint
            | ParentStreamPolicy::MultiGpuEarlyDisjoint
            | ParentStreamPolicy::MultiGpuDisjoint => {
                placed.filter(|&&(_, taken)| !taken).map(|&(s, _)| s).next()
            }
        }
    }

    /// The parent-stream policy.
    pub fn parent_policy(&self) -> ParentStreamPolicy {
        self.parent_policy
    }

    /// The streams of `parents` (unfinished ones, in launch order) that no child took yet, the
    /// first per device, as `(device, stream)` in parent order: the candidates of
    /// [`ParentStreamPolicy::MultiGpuDisjoint`].
    ///
    /// ```
    /// use hoplite_dag::{NewStreamPolicy, ParentStreamPolicy, StreamAssigner};
    /// let mut streams = StreamAssigner::new(NewStreamPolicy::Reuse, ParentStreamPolicy::MultiGpuDisjoint);
    /// let (a, b, c) = (streams.add_stream(0), streams.add_stream(1), streams.add_stream(1));
    /// streams.place(0, &[], a);
    /// streams.place(1, &[], b);
    /// streams.place(2, &[], c);
    /// assert_eq!(streams.free_parent_streams(&[2, 1, 0]), [(1, c), (0, a)]);
    /// streams.place(3, &[2], c); // a child takes vertex 2's stream
    /// assert_eq!(streams.free_parent_streams(&[2, 1, 0]), [(1, b), (0, a)]);
    /// ```
    pub fn free_parent_streams(&self, parents: &[VertexId]) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for &(stream, taken) in parents.iter().filter_map(|&p| self.placed.get(p)) {
            let device = self.streams[stream].device;
            if !taken && !out.iter().any(|&(d, _)| d == device) {
                out.push((device, stream));
            }
        }
        out
    }

    /// A stream on `device` for a launch that takes no parent's stream. A device that can run
    /// at most `limit` streams at once gets no more: the launch then queues behind the least
    /// busy of them (lowest index on ties).
    pub fn free_or_new(&mut self, device: usize, limit: Option<usize>) -> Assignment {
        let mut on_device = self
            .streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.device == device);
        if self.new_policy == NewStreamPolicy::Reuse
            && let Some((s, _)) = on_device.clone().find(|(_, s)| s.busy == 0)
        {
            return Assignment::Existing(s);
        }
        if limit.is_some_and(|l| on_device.clone().count() >= l.max(1))
            && let Some((s, _)) = on_device.by_ref().min_by_key(|(_, s)| s.busy)
        {
            self.capped += 1;
            return Assignment::Existing(s);
        }
        Assignment::New {
            device,
            stream: self.streams.len(),
        }
    }

    /// Registers a new stream on `device`; returns its index (the one
    /// [`Assignment::New`] announced).
    pub fn add_stream(&mut self, device: usize) -> usize {
        self.streams.push(StreamState { device, busy: 0 });
        self.streams.len() - 1
    }

    /// Records that launch `vertex` with `parents` went to stream `stream`.
    pub fn place(&mut self, vertex: VertexId, parents: &[VertexId], stream: usize) {
        self.streams[stream].busy += 1;
        for p in parents {
            if let Some((s, taken)) = self.placed.get_mut(*p)
                && *s == stream
            {
                *taken = true;
            }
        }
        self.placed.insert(vertex, (stream, false));
    }

    /// The stream of an unfinished launch.
    pub fn stream_of(&self, vertex: VertexId) -> Option<usize> {
        self.placed.get(vertex).map(|&(s, _)| s)
    }

    /// Records that `vertex` finished: its stream holds one launch fewer.
    pub fn finish(&mut self, vertex: VertexId) {
        if let Some((s, _)) = self.placed.remove(vertex) {
            self.streams[s].busy -= 1;
        }
    }
}
