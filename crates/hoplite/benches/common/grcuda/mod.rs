//! GrCUDA's six single-GPU benchmarks (`projects/resources/cuda/single_gpu/b1, b5, b6, b7, b8,
//! b10` in necst/grcuda), written as `#[kernel]` kernels over views of a space's own memory, so
//! that one function per benchmark runs on every backend: launched through the implicit DAG
//! ([`Dag`], any `hoplite_dag::Device`: host streams, partitions of a pool, CUDA streams) or
//! eagerly ([`Eager`]). Each benchmark has a plain serial reference (`reference`) and a check
//! (`Output::check`) that states its tolerance.
//!
//! | benchmark | GrCUDA | DAG shape |
//! |---|---|---|
//! | [`vec`] | b1, VEC | two squares side by side, then a reduction of their difference |
//! | [`bs`] | b5, B&S | `M` independent Black & Scholes kernels |
//! | [`ml`] | b6, ML | a naive Bayes branch and a ridge regression branch (5 kernels each), joined by an argmax |
//! | [`hits`] | b7, HITS | per iteration two SpMVs, two sums, two divisions: two branches that meet at the norms |
//! | [`img`] | b8, IMG | three blurs feed a sobel branch, a contrast stretch and an unsharp mask; two combines join them |
//! | [`dl`] | b10, DL | two branches of convolution, pooling, convolution, joined by a concatenation and a dense layer |
//!
//! The norms of HITS are reductions whose values the host reads before the divisions (GrCUDA
//! keeps them in device memory); the two branches still overlap, the host waits at the norms.

#![allow(dead_code)]

use std::cell::RefCell;

use hoplite::dag::device::{Device, Stream};
use hoplite::dag::{Context, DependencyPolicy, Pending, Recorder, record_with};
use hoplite::graph::{Graph, GraphBackend, GraphLaunch, ReduceResult};
use hoplite::prelude::*;
use hoplite::{
    ExecutionSpace, IntoLaunch, LaunchSpace, LaunchSpec, LayoutRight, MDRangePolicy, ParallelFor,
    ParallelReduce, Reducer,
};

pub mod bs;
pub mod dl;
pub mod hits;
pub mod img;
pub mod ml;
pub mod streams;
pub mod vec;

/// The desired occupancy, in percent, of every launch of the benchmarks
/// (`with_desired_occupancy`), from `HOPLITE_GRCUDA_OCCUPANCY`; unset (or not a number from 1
/// to 100) for none, where each launch covers its whole range. GrCUDA's own runs launch every
/// kernel with a fixed, small grid (64 blocks of 32 threads by default, 8 blocks per SM on its
/// larger GPUs), which leaves a GPU room to run kernels of other streams beside it; with a
/// percentage the CUDA rows measure that configuration, scaled to the device. Host backends
/// ignore it.
pub fn occupancy() -> Option<u8> {
    static PERCENT: std::sync::OnceLock<Option<u8>> = std::sync::OnceLock::new();
    *PERCENT.get_or_init(|| {
        let value = std::env::var("HOPLITE_GRCUDA_OCCUPANCY").ok()?;
        let percent = value.trim().parse::<u8>().ok().filter(|p| (1..=100).contains(p));
        if percent.is_none() {
            eprintln!("HOPLITE_GRCUDA_OCCUPANCY={value}: not a percentage from 1 to 100; launches cover their whole range");
        }
        percent
    })
}

/// `RangePolicy::new(space, range)` with the run's [`occupancy`].
pub fn range_policy<S: ExecutionSpace>(space: S, range: std::ops::Range<usize>) -> RangePolicy<S> {
    let policy = RangePolicy::new(space, range);
    match occupancy() {
        Some(percent) => policy.with_desired_occupancy(percent),
        None => policy,
    }
}

/// `MDRangePolicy::new(space, begin, end)` with the run's [`occupancy`].
pub fn md_policy<S: ExecutionSpace, const R: usize>(
    space: S,
    begin: [usize; R],
    end: [usize; R],
) -> MDRangePolicy<S, R> {
    let policy = MDRangePolicy::new(space, begin, end);
    match occupancy() {
        Some(percent) => policy.with_desired_occupancy(percent),
        None => policy,
    }
}

/// A benchmark's error: a launch's, the DAG's, or a view's.
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;

/// A view of `S`'s own memory.
pub type DeviceView<T, const R: usize, S> = View<T, R, LayoutRight, <S as ExecutionSpace>::MemorySpace>;

/// Where a benchmark's launches go: straight to a space ([`Eager`]) or into a DAG ([`Dag`]).
pub trait Launcher<S: LaunchSpace> {
    /// The instance the launches' policies name (a DAG runs them on its streams' instances).
    fn space(&self) -> S;

    /// A `parallel_for`.
    fn launch<L, F>(&self, label: &str, launch: L, kernel: F) -> Result<(), BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static;

    /// A `parallel_reduce`, whose value [`Deferred::get`] waits for.
    fn reduce<L, F, R>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        reducer: R,
    ) -> Result<Deferred<R::Value>, BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        R::Value: Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static;

    /// Waits for every launch so far.
    fn finish(&self) -> Result<(), BenchError>;
}

/// A reduction's value: known already (eager), pending on a DAG vertex, or stored by each
/// replay of a recorded graph.
pub enum Deferred<T> {
    /// An eager launch's value.
    Ready(T),
    /// A DAG vertex's value.
    Pending(Pending<T>),
    /// A recorded reduction node's value, as the last replay stored it.
    Replayed(ReduceResult<T>),
}

impl<T: Clone> Deferred<T> {
    /// The value, once its launch has run.
    pub fn get(self) -> Result<T, BenchError> {
        match self {
            Deferred::Ready(v) => Ok(v),
            Deferred::Pending(p) => Ok(p.get()?),
            Deferred::Replayed(target) => target.get().ok_or_else(|| {
                "a recorded reduction has no value before its graph is submitted: read it after a replay"
                    .into()
            }),
        }
    }

    /// The value the last replay of a recorded graph stored (a recorded reduction may be read
    /// after every submit); `None` for the other kinds, whose value is read once.
    pub fn replayed(&self) -> Option<T> {
        match self {
            Deferred::Replayed(target) => target.get(),
            _ => None,
        }
    }
}

/// Eager launches on one instance: each returns when its kernel has run.
pub struct Eager<S>(pub S);

impl<S: LaunchSpace> Launcher<S> for Eager<S> {
    fn space(&self) -> S {
        self.0.clone()
    }

    fn launch<L, F>(&self, label: &str, launch: L, kernel: F) -> Result<(), BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        Ok(hoplite::dispatch::parallel_for(
            label,
            launch.into_launch(),
            kernel,
        )?)
    }

    fn reduce<L, F, R>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        reducer: R,
    ) -> Result<Deferred<R::Value>, BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        R::Value: Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        Ok(Deferred::Ready(hoplite::dispatch::parallel_reduce(
            label,
            launch.into_launch(),
            kernel,
            reducer,
        )?))
    }

    fn finish(&self) -> Result<(), BenchError> {
        Ok(self.0.fence()?)
    }
}

/// Launches as vertices of an implicit DAG over devices whose streams run on `S`.
pub struct Dag<D: Device> {
    /// The context the launches go to.
    pub ctx: Context<D>,
    /// The instance the policies name.
    pub space: <D::Stream as Stream>::Space,
}

impl<S: LaunchSpace, D: Device> Launcher<S> for Dag<D>
where
    D::Stream: Stream<Space = S>,
{
    fn space(&self) -> S {
        self.space.clone()
    }

    fn launch<L, F>(&self, label: &str, launch: L, kernel: F) -> Result<(), BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        self.ctx.launch(label, launch, kernel)?;
        Ok(())
    }

    fn reduce<L, F, R>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        reducer: R,
    ) -> Result<Deferred<R::Value>, BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        R::Value: Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        Ok(Deferred::Pending(
            self.ctx.reduce(label, launch, kernel, reducer)?,
        ))
    }

    fn finish(&self) -> Result<(), BenchError> {
        Ok(self.ctx.synchronize()?)
    }
}

/// Launches recorded into an explicit graph (`hoplite::dag::record_with`) with the edges a
/// context would infer: the DAG's scheduling paid once, each replay costs one graph submit.
/// A reduction's value is known only after a replay ([`Deferred::Replayed`]), so a benchmark
/// that reads one between its launches (HITS's norms) cannot be recorded.
pub struct Recording<'r, 'b, 'g, S: ExecutionSpace> {
    recorder: RefCell<&'r mut Recorder<'b, 'g, S>>,
    space: S,
}

impl<S: LaunchSpace> Launcher<S> for Recording<'_, '_, '_, S> {
    fn space(&self) -> S {
        self.space.clone()
    }

    fn launch<L, F>(&self, label: &str, launch: L, kernel: F) -> Result<(), BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        self.recorder.borrow_mut().launch(label, launch, kernel);
        Ok(())
    }

    fn reduce<L, F, R>(
        &self,
        label: &str,
        launch: L,
        kernel: F,
        reducer: R,
    ) -> Result<Deferred<R::Value>, BenchError>
    where
        L: IntoLaunch<S>,
        L::Launch: GraphLaunch<S> + IntoLaunch<S, Launch = L::Launch> + 'static,
        S: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        R::Value: Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        let target = ReduceResult::new();
        self.recorder
            .borrow_mut()
            .reduce(label, launch, kernel, reducer, target.clone());
        Ok(Deferred::Replayed(target))
    }

    fn finish(&self) -> Result<(), BenchError> {
        Ok(())
    }
}

/// Records what `run` launches on `space` into a graph of `backend` (the host's generic
/// graph, or a backend's own such as a CUDA Graph); returns the graph and what `run`
/// returned (recorded reductions, read after each submit).
pub fn record<S, B, O>(
    space: &S,
    backend: B,
    run: impl FnOnce(&Recording<'_, '_, '_, S>) -> Result<O, BenchError>,
) -> Result<(Graph<S>, O), BenchError>
where
    S: LaunchSpace,
    B: GraphBackend<S> + 'static,
{
    let mut out = None;
    let graph = record_with(space, backend, DependencyPolicy::WithConst, |r| {
        let recording = Recording {
            recorder: RefCell::new(r),
            space: space.clone(),
        };
        out = Some(run(&recording));
    })?;
    let out = out.ok_or("the recording did not run")??;
    Ok((graph, out))
}

/// A deterministic generator (xorshift64*), so every backend and the reference see one input.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Uploads `values` into a view of `S`'s memory.
pub fn upload<T: hoplite::ViewValue, const R: usize, S: ExecutionSpace>(
    label: &str,
    extents: [usize; R],
    values: &[T],
) -> Result<DeviceView<T, R, S>, BenchError> {
    Ok(View::from_slice(label, extents, values)?)
}

/// A zeroed view of `S`'s memory.
pub fn zeros<T: hoplite::ViewValue, const R: usize, S: ExecutionSpace>(
    label: &str,
    extents: [usize; R],
) -> Result<DeviceView<T, R, S>, BenchError> {
    Ok(View::new(label, extents)?)
}

/// Checks that `got` is within `rel` of `want` relative to `max(1, |want|)`, element by element.
pub fn assert_close<T: Copy + Into<f64>>(what: &str, got: &[T], want: &[T], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w): (f64, f64) = (g.into(), w.into());
        assert!(
            (g - w).abs() <= rel * w.abs().max(1.0),
            "{what}[{k}]: {g} against the reference's {w} (tolerance {rel} relative)"
        );
    }
}
