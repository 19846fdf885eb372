//! The hand-written baseline: each benchmark's launches on two streams with the events placed
//! by hand, as GrCUDA's multi-stream CUDA versions place them, where the implicit DAG infers
//! the same order from the handles.
//!
//! A [`Schedule`] says, per launch of one run, which stream it goes to and which earlier
//! launches of the other stream it waits for; [`Schedule::covers`] checks it against the
//! dependencies the DAG infers (the host test does, for every schedule). [`Streams`] runs a
//! benchmark by its schedule on two `Cuda` instances, recording an event after each launch
//! that a later one waits for.

/// One launch of a schedule: its stream (0 or 1) and the earlier launches, by their index in
/// the run, whose events it waits for.
#[derive(Clone, Debug)]
pub struct Step {
    /// The stream the launch goes to.
    pub stream: usize,
    /// The launches of the other stream it waits for.
    pub after: Vec<usize>,
}

/// A benchmark's launches, in the order its `run` makes them, placed by hand.
#[derive(Clone, Debug)]
pub struct Schedule(pub Vec<Step>);

impl Schedule {
    /// A schedule from `(stream, after)` pairs.
    pub fn new(steps: &[(usize, &[usize])]) -> Self {
        Schedule(
            steps
                .iter()
                .map(|&(stream, after)| Step {
                    stream,
                    after: after.to_vec(),
                })
                .collect(),
        )
    }

    /// Whether every launch starts after each of its `parents` (launch `k`'s parents are
    /// `parents[k]`, as `Context::parents` gives them): through its stream's order or,
    /// transitively, the events it waits for. On `Err`, the first edge it leaves unordered.
    pub fn covers(&self, parents: &[Vec<usize>]) -> Result<(), String> {
        let steps = &self.0;
        if steps.len() != parents.len() {
            return Err(format!("{} steps for {} launches", steps.len(), parents.len()));
        }
        // before[k]: the launches that finish before launch k starts.
        let mut before: Vec<Vec<bool>> = Vec::with_capacity(steps.len());
        for (k, step) in steps.iter().enumerate() {
            let mut mine = vec![false; steps.len()];
            let mut direct: Vec<usize> = step.after.clone();
            if let Some(previous) = (0..k).rev().find(|&j| steps[j].stream == step.stream) {
                direct.push(previous);
            }
            for j in direct {
                if j >= k {
                    return Err(format!("launch {k} waits for launch {j}, which comes later"));
                }
                mine[j] = true;
                for (i, b) in before[j].iter().enumerate() {
                    mine[i] |= *b;
                }
            }
            before.push(mine);
        }
        for (k, ps) in parents.iter().enumerate() {
            if let Some(p) = ps.iter().find(|&&p| !before[k][p]) {
                return Err(format!("launch {k} may start before its parent {p}"));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "cuda")]
pub use self::cuda::Streams;

#[cfg(feature = "cuda")]
mod cuda {
    use std::cell::RefCell;

    use hoplite::cuda::StreamEvent;
    use hoplite::graph::GraphLaunch;
    use hoplite::{
        Cuda, ExecutionPolicy, ExecutionSpace, IntoLaunch, LaunchSpec, ParallelFor, ParallelReduce, Reducer,
        ValidatedPolicy, parallel_for_validated, parallel_reduce_validated,
    };

    use super::Schedule;
    use crate::grcuda::{BenchError, Deferred, Launcher};

    /// Launches by a [`Schedule`] on two `Cuda` instances: each launch goes to its stream
    /// after that stream waits for the events of the launches the step names. With
    /// asynchronous launches (`HOPLITE_CUDA_LAUNCHES=async`) the host only queues; a launch
    /// ordered by an event does not fence the other instance.
    pub struct Streams {
        streams: [Cuda; 2],
        schedule: Schedule,
        /// The launches of the current run: each one's event, if a later launch waits for it.
        events: RefCell<Vec<Option<StreamEvent>>>,
    }

    impl Streams {
        /// Two new instances of device 0, for launches placed by `schedule`.
        ///
        /// # Errors
        ///
        /// Without a driver or device, the typed error.
        pub fn new(schedule: Schedule) -> Result<Self, BenchError> {
            Ok(Streams {
                streams: [Cuda::new()?, Cuda::new()?],
                schedule,
                events: RefCell::new(Vec::new()),
            })
        }

        /// The instance the next launch goes to, once it waits for the events its step names.
        /// The launch after the last step starts the schedule over (a run that returns a
        /// reduction's value ends without `finish`), so a schedule must have exactly as many
        /// steps as its run has launches, which `Schedule::covers` checks against the DAG on
        /// the host; an empty schedule refuses every launch.
        fn next(&self) -> Result<(usize, &Cuda), BenchError> {
            if self.events.borrow().len() == self.schedule.0.len() {
                self.events.borrow_mut().clear();
            }
            let k = self.events.borrow().len();
            let step = self
                .schedule
                .0
                .get(k)
                .ok_or_else(|| format!("launch {k}: the schedule has no step for it"))?;
            let to = &self.streams[step.stream];
            for &j in &step.after {
                if let Some(Some(event)) = self.events.borrow().get(j) {
                    to.wait_event(event)?;
                }
            }
            Ok((k, to))
        }

        /// Records launch `k`'s event if a later launch waits for it.
        fn launched(&self, k: usize, on: &Cuda) -> Result<(), BenchError> {
            let awaited = self.schedule.0.iter().any(|s| s.after.contains(&k));
            let event = if awaited { Some(on.record_event()?) } else { None };
            self.events.borrow_mut().push(event);
            Ok(())
        }
    }

    impl Launcher<Cuda> for Streams {
        fn space(&self) -> Cuda {
            self.streams[0].clone()
        }

        fn launch<L, F>(&self, label: &str, launch: L, kernel: F) -> Result<(), BenchError>
        where
            L: IntoLaunch<Cuda>,
            L::Launch: GraphLaunch<Cuda> + IntoLaunch<Cuda, Launch = L::Launch> + 'static,
            Cuda: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
            F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
        {
            let (k, on) = self.next()?;
            let (policy, args) = launch.into_launch().into_parts();
            let policy = ValidatedPolicy::new(label, policy.with_space(on.clone()))?;
            parallel_for_validated::<L::Launch, _>(label, &policy, &args, &kernel)?;
            self.launched(k, on)
        }

        fn reduce<L, F, R>(
            &self,
            label: &str,
            launch: L,
            kernel: F,
            reducer: R,
        ) -> Result<Deferred<R::Value>, BenchError>
        where
            L: IntoLaunch<Cuda>,
            L::Launch: GraphLaunch<Cuda> + IntoLaunch<Cuda, Launch = L::Launch> + 'static,
            Cuda: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
            R: Reducer + Send + Sync + 'static,
            R::Value: Send + 'static,
            F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
        {
            let (k, on) = self.next()?;
            let (policy, args) = launch.into_launch().into_parts();
            let policy = ValidatedPolicy::new(label, policy.with_space(on.clone()))?;
            let value =
                parallel_reduce_validated::<L::Launch, _, _>(label, &policy, &args, &kernel, &reducer)?;
            self.launched(k, on)?;
            Ok(Deferred::Ready(value))
        }

        /// Waits for both streams and starts the schedule over for the next run.
        fn finish(&self) -> Result<(), BenchError> {
            self.events.borrow_mut().clear();
            for stream in &self.streams {
                stream.fence()?;
            }
            Ok(())
        }
    }
}
