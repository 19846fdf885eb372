//! The entry points: `parallel_for`, `parallel_reduce`, `parallel_reduce_into` and
//! `parallel_scan` (and their `_validated` forms), which check the launch, run it, report panics
//! as errors and trace it. Every launch style (eager, graph node, DAG vertex) enters here, so
//! this is where a launch is reported to a Kokkos Tools connector (`begin_tools`, and the drop
//! of what it returns).

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::launch_spec::{BoundKernel, LaunchSpec};
use super::pattern::{ParallelFor, ParallelReduce, ParallelScan};
use crate::error::{Error, Result};
use crate::policy::ExecutionPolicy;
use crate::profiling::{self, KernelKind, KernelScope};
use crate::reducer::{Reducer, ScanValue};
use crate::space::ExecutionSpace;
use crate::view::LaunchArgs;

/// Validates the policy and the handles, runs the launch, and turns a panic in the kernel into
/// [`Error::KernelPanicked`]. The handles (and their borrows) live until the launch returns.
///
/// Inlined so that the policy is built in place in the caller's frame: passed by value it was
/// copied through memory, which cost more than the serial launch itself.
///
/// Every eager launch enters here, so this is where a launch is reported to a Kokkos Tools
/// connector ([`begin_tools`]). The end is reported inside the closure, right after the
/// kernel: held until after `catch_unwind` (a drop after the result is made, or a call
/// between the result and the return), the compiler built the launch's result on the stack
/// and copied it out, which cost 2 to 5 ns on the serial empty launch; so did a second,
/// out-of-line copy of this body for the reporting launch.
#[inline(always)]
fn launch<L: LaunchSpec, F, T>(
    label: &str,
    pattern: Pattern,
    spec: L,
    kernel: F,
    run: impl FnOnce(&L::Policy, BoundKernel<'_, L, F>) -> Result<T>,
) -> Result<T> {
    let (policy, args) = spec.into_parts();
    policy.validate(label)?;
    let prepared = args.prepare(label, &policy.index_bounds())?;
    let bound = BoundKernel {
        kernel: &kernel,
        args: &args,
        prepared,
    };
    let tools = begin_tools::<_, F>(label, pattern, policy.space());
    let _span = pattern.span(label, &policy);
    let result = catch_unwind(AssertUnwindSafe(|| {
        let result = run(&policy, bound);
        // Ends the kernel for the connector (when `run` panics, the unwinding drop does).
        drop(tools);
        result
    }));
    // The handles, and so their borrows, are released only now that the launch is over.
    drop(args);
    result.unwrap_or_else(|payload| Err(Error::from_panic(label, payload)))
}

/// A policy that passed [`ExecutionPolicy::validate`] once, to launch any number of times with
/// [`parallel_for_validated`], [`parallel_reduce_validated`] or [`parallel_scan_validated`]
/// without checking it again. It cannot be changed: [`policy`](Self::policy) gives only a
/// shared reference.
///
/// This is for front ends that record a launch and replay it (explicit graphs): they validate
/// when the launch is recorded and pay only for the dispatch on every replay.
///
/// ```
/// use hoplite_core::{RangePolicy, ValidatedPolicy};
/// use hoplite_serial::Serial;
/// let ok = ValidatedPolicy::new("fill", RangePolicy::new(Serial::default(), 0..4))?;
/// assert_eq!(ok.policy().len(), 4);
/// #[expect(clippy::reversed_empty_ranges, reason = "an invalid range on purpose")]
/// let bad = ValidatedPolicy::new("fill", RangePolicy::new(Serial::default(), 4..0));
/// assert!(bad.is_err());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ValidatedPolicy<P> {
    policy: P,
}

impl<P: ExecutionPolicy> ValidatedPolicy<P> {
    /// Validates `policy` for a launch labelled `label`.
    ///
    /// # Errors
    ///
    /// What [`ExecutionPolicy::validate`] reports: [`Error::InvalidRange`],
    /// [`Error::ZeroTile`], [`Error::TeamSizeTooLarge`], ...
    pub fn new(label: &str, policy: P) -> Result<Self> {
        policy.validate(label)?;
        Ok(ValidatedPolicy { policy })
    }

    /// The policy.
    #[inline(always)]
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The policy, given back.
    pub fn into_inner(self) -> P {
        self.policy
    }
}

/// Prepares `args` for `policy`'s index space and hands `dispatch` the kernel with them bound;
/// `dispatch` must run it over `policy` and no other policy (the `BoundKernel` contract).
#[inline(always)]
fn dispatch_validated<L: LaunchSpec, F, T>(
    label: &str,
    pattern: Pattern,
    policy: &L::Policy,
    args: &L::Args,
    kernel: &F,
    dispatch: impl FnOnce(BoundKernel<'_, L, F>) -> Result<T>,
) -> Result<T> {
    let prepared = args.prepare(label, &policy.index_bounds())?;
    // Ends the launch for the connector when it drops: after the result is made, or while a
    // panic unwinds through here.
    let _tools = begin_tools::<_, F>(label, pattern, policy.space());
    let _span = pattern.span(label, policy);
    dispatch(BoundKernel {
        kernel,
        args,
        prepared,
    })
}

/// Reports the start of a launch to the Kokkos Tools connector (see [`crate::profiling`]);
/// the value reports its end when it drops. Without a connector this is a relaxed load and a
/// branch, and the drop a branch on a register (what lives across the kernel is one pointer);
/// everything else is out of line. It cannot fail: an error path here joins the launch's own
/// result, which the compiler then builds on the stack and copies out (a copy of the whole
/// `Error` that tripled the cost of a serial empty launch).
#[inline(always)]
fn begin_tools<S: ExecutionSpace, F>(label: &str, pattern: Pattern, space: &S) -> ToolsLaunch<S> {
    if profiling::hooks_may_run() {
        return begin_tools_cold::<S, F>(label, pattern, space.clone());
    }
    ToolsLaunch(None)
}

/// With a connector: fences an asynchronous instance first when the connector asked for
/// fencing (so that its clock starts with the kernel), then calls its begin callback with the
/// label (or, for an empty label, the kernel's type name, as Kokkos passes the functor's: the
/// kernel timer stops the program on an empty name) and the instance's device id.
///
/// The fences a connector asks for are not the program's: their errors (an earlier kernel's
/// failure) are left to the program's own next launch or fence, which reports them as it
/// would without a connector (a device keeps a failed kernel's error until then). So a program
/// sees the same results with and without a connector.
#[cold]
#[inline(never)]
fn begin_tools_cold<S: ExecutionSpace, F>(label: &str, pattern: Pattern, space: S) -> ToolsLaunch<S> {
    if !space.synchronous_launches() && profiling::kernels_need_fences() {
        let _ = space.fence();
    }
    let name = if label.is_empty() {
        std::any::type_name::<F>()
    } else {
        label
    };
    let scope = KernelScope::begin(pattern.kind(), name, || space.profiling_device_id());
    if !scope.is_open() {
        // No connector after all (the first look found none).
        return ToolsLaunch(None);
    }
    ToolsLaunch(Some(Box::new(OpenLaunch { scope, space })))
}

/// A launch the connector saw begin, ended when this drops; `None` without a connector. The
/// open launch is boxed, so that what lives across the kernel is one pointer (one register)
/// rather than the scope and the space.
struct ToolsLaunch<S: ExecutionSpace>(Option<Box<OpenLaunch<S>>>);

/// What the end of a launch needs: the connector's scope and the space, to fence.
struct OpenLaunch<S> {
    scope: KernelScope,
    space: S,
}

impl<S: ExecutionSpace> Drop for ToolsLaunch<S> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(open) = self.0.take() {
            end_tools_cold(open);
        }
    }
}

/// With a connector: fences an asynchronous instance when the connector asked for fencing, so
/// that the end callback comes when the kernel is done (not while a panic unwinds), then calls
/// the end callback. The fence's result is not the launch's (see [`begin_tools_cold`]): without
/// a connector the launch would have returned before its kernel ran.
#[cold]
#[inline(never)]
#[expect(
    clippy::boxed_local,
    reason = "the launch keeps the box; unboxing at the call would put the move in every launch's code"
)]
fn end_tools_cold<S: ExecutionSpace>(open: Box<OpenLaunch<S>>) {
    let OpenLaunch { scope, space } = *open;
    if !std::thread::panicking() && !space.synchronous_launches() && profiling::kernels_need_fences() {
        let _ = space.fence();
    }
    scope.end();
}

/// The pattern a launch runs, as profiling names it.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    For,
    Reduce,
    Scan,
}

impl Pattern {
    /// The kernel kind Kokkos Tools connectors get.
    #[inline(always)]
    fn kind(self) -> KernelKind {
        match self {
            Pattern::For => KernelKind::For,
            Pattern::Reduce => KernelKind::Reduce,
            Pattern::Scan => KernelKind::Scan,
        }
    }

    /// With the `tracing` feature, enters an `INFO` span `launch` (target `hoplite::launch`)
    /// with the launch's label, pattern and space, which ends when the launch returns: the
    /// Kokkos Tools begin/end hooks of a kernel, for any `tracing` subscriber. Without the
    /// feature it does nothing and costs nothing.
    #[inline(always)]
    fn span<P: ExecutionPolicy>(self, label: &str, policy: &P) -> LaunchSpan {
        #[cfg(feature = "tracing")]
        {
            // Until a subscriber is set anywhere, skip even the span's callsite check: a
            // process that enables the feature but listens to nothing pays one load.
            if !tracing::dispatcher::has_been_set() {
                return LaunchSpan(None);
            }
            LaunchSpan(Some(enter_launch_span(
                label,
                self,
                crate::space::ExecutionSpace::name(policy.space()),
            )))
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (self, label, policy);
            LaunchSpan
        }
    }
}

/// Opens and enters a launch's span. Out of line, like the span's end, so that the launch
/// functions stay small enough to inline into their callers with the feature on.
#[cfg(feature = "tracing")]
#[inline(never)]
fn enter_launch_span(label: &str, pattern: Pattern, space: &'static str) -> tracing::span::EnteredSpan {
    let pattern = match pattern {
        Pattern::For => "parallel_for",
        Pattern::Reduce => "parallel_reduce",
        Pattern::Scan => "parallel_scan",
    };
    tracing::info_span!(target: "hoplite::launch", "launch", label, pattern, space).entered()
}

/// The open profiling span of a launch (nothing without the `tracing` feature).
#[cfg(feature = "tracing")]
struct LaunchSpan(Option<tracing::span::EnteredSpan>);

#[cfg(feature = "tracing")]
impl Drop for LaunchSpan {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.is_some() {
            close_launch_span(&mut self.0);
        }
    }
}

/// Exits and closes a launch's span (see [`enter_launch_span`]).
#[cfg(feature = "tracing")]
#[inline(never)]
fn close_launch_span(span: &mut Option<tracing::span::EnteredSpan>) {
    span.take();
}

/// The open profiling span of a launch (nothing without the `tracing` feature).
#[cfg(not(feature = "tracing"))]
struct LaunchSpan;

/// [`parallel_for`] over a policy validated once, with the launch's handles borrowed from the
/// caller: checks the handles against the policy (borrow conflicts, extents) and dispatches.
/// `L` is the launch type the kernel's argument comes from: the policy type for a launch
/// without handles, `(policy, args)` otherwise.
///
/// Unlike [`parallel_for`], a panic in the kernel is not caught: it unwinds out of this call
/// (the handles stay with the caller, which releases them as it unwinds). A front end that runs
/// many launches in a row catches once around all of them.
///
/// ```
/// use hoplite_core::{parallel_for_validated, HostSpace, LayoutRight, RangePolicy, ValidatedPolicy, View, Writer};
/// use hoplite_serial::Serial;
/// type Launch = (RangePolicy<Serial>, (Writer<u32, 1, LayoutRight, HostSpace>,));
/// let y: View<u32, 1> = View::new("y", [4])?;
/// let policy = ValidatedPolicy::new("inc", RangePolicy::new(Serial::default(), 0..4))?;
/// for _ in 0..3 {
///     let args = (y.write(),); // borrowed for this launch only
///     parallel_for_validated::<Launch, _>("inc", &policy, &args, &|(i, (y,))| y.set(i, y.get(i) + 1))?;
/// }
/// assert_eq!(y.to_vec()?, [3; 4]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// A handle that conflicts ([`Error::BorrowConflict`]) or is too small for the policy
/// ([`Error::OutOfExtent`]), or a backend failure.
#[inline]
pub fn parallel_for_validated<L, F>(
    label: &str,
    policy: &ValidatedPolicy<L::Policy>,
    args: &L::Args,
    kernel: &F,
) -> Result<()>
where
    L: LaunchSpec,
    <L::Policy as ExecutionPolicy>::Space: ParallelFor<L::Policy>,
    F: for<'it> Fn(L::Item<'it>) + Send + Sync,
{
    let policy = &policy.policy;
    dispatch_validated::<L, F, ()>(label, Pattern::For, policy, args, kernel, |k| {
        policy.space().parallel_for(label, policy, k)
    })
}

/// [`parallel_reduce`] over a policy validated once; see [`parallel_for_validated`] (a panic
/// in the kernel unwinds out of this call).
///
/// ```
/// use hoplite_core::{parallel_reduce_validated, RangePolicy, Sum, ValidatedPolicy};
/// use hoplite_serial::Serial;
/// let policy = ValidatedPolicy::new("sum", RangePolicy::new(Serial::default(), 0..10))?;
/// let total = parallel_reduce_validated::<RangePolicy<Serial>, _, _>("sum", &policy, &(), &|i, acc| *acc += *i, &Sum::<usize>::new())?;
/// assert_eq!(total, 45);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for_validated`].
#[inline]
pub fn parallel_reduce_validated<L, F, R>(
    label: &str,
    policy: &ValidatedPolicy<L::Policy>,
    args: &L::Args,
    kernel: &F,
    reducer: &R,
) -> Result<R::Value>
where
    L: LaunchSpec,
    R: Reducer,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
{
    let policy = &policy.policy;
    dispatch_validated::<L, F, R::Value>(label, Pattern::Reduce, policy, args, kernel, |k| {
        policy.space().parallel_reduce(label, policy, k, reducer)
    })
}

/// [`parallel_scan`] over a policy validated once; see [`parallel_for_validated`] (a panic in
/// the kernel unwinds out of this call).
///
/// ```
/// use hoplite_core::{parallel_scan_validated, RangePolicy, ValidatedPolicy};
/// use hoplite_serial::Serial;
/// let policy = ValidatedPolicy::new("count", RangePolicy::new(Serial::default(), 0..4))?;
/// let total: u64 = parallel_scan_validated::<RangePolicy<Serial>, _, _>("count", &policy, &(), &|_i, partial, _is_final| *partial += 1)?;
/// assert_eq!(total, 4);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for_validated`].
#[inline]
pub fn parallel_scan_validated<L, F, T>(
    label: &str,
    policy: &ValidatedPolicy<L::Policy>,
    args: &L::Args,
    kernel: &F,
) -> Result<T>
where
    L: LaunchSpec,
    T: ScanValue,
    <L::Policy as ExecutionPolicy>::Space: ParallelScan<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut T, bool) + Send + Sync,
{
    let policy = &policy.policy;
    dispatch_validated::<L, F, T>(label, Pattern::Scan, policy, args, kernel, |k| {
        policy.space().parallel_scan(label, policy, k)
    })
}

/// Runs `kernel` once for every point of the launch (Kokkos `parallel_for`).
///
/// The launch is a policy, or `(policy, handles)`; see [`LaunchSpec`].
///
/// ```
/// use hoplite_core::{parallel_for, RangePolicy, View};
/// use hoplite_serial::Serial;
/// let x: View<f64, 1> = View::from_slice("x", [4], &[1.0, 2.0, 3.0, 4.0])?;
/// let y: View<f64, 1> = View::new("y", [4])?;
/// let policy = RangePolicy::new(Serial::default(), 0..4);
/// parallel_for("axpy", (policy, (y.write(), x.read())), |(i, (y, x))| {
///     y.set(i, 2.0 * x.get(i) + y.get(i))
/// })?;
/// assert_eq!(y.to_vec()?, [2.0, 4.0, 6.0, 8.0]);
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// An invalid policy ([`Error::InvalidRange`], [`Error::ZeroTile`], [`Error::TeamSizeTooLarge`],
/// ...), a handle that conflicts ([`Error::BorrowConflict`]) or is too small for the policy
/// ([`Error::OutOfExtent`]), a panic in the kernel ([`Error::KernelPanicked`]), or a backend
/// failure.
#[inline(always)]
pub fn parallel_for<L, F>(label: &str, launch_spec: L, kernel: F) -> Result<()>
where
    L: LaunchSpec,
    <L::Policy as ExecutionPolicy>::Space: ParallelFor<L::Policy>,
    F: for<'it> Fn(L::Item<'it>) + Send + Sync,
{
    launch(label, Pattern::For, launch_spec, kernel, |policy, k| {
        policy.space().parallel_for(label, policy, k)
    })
}

/// Folds `kernel`'s contributions over the launch with `reducer` and returns the result
/// (Kokkos `parallel_reduce` into a host scalar: the call waits for the launch).
///
/// ```
/// use hoplite_core::{parallel_reduce, MinLoc, RangePolicy, Sum, ValLoc};
/// use hoplite_serial::Serial;
/// let x = [3.0, -1.0, 4.0, -1.0, 5.0];
/// let space = Serial::default();
/// let sum = parallel_reduce("sum", RangePolicy::new(space.clone(), 0..5), |i, acc| *acc += x[*i], Sum::<f64>::new())?;
/// let min = parallel_reduce("min", RangePolicy::new(space, 0..5),
///     |i, acc: &mut ValLoc<f64>| acc.update_min(x[*i], *i), MinLoc::<f64>::new())?;
/// assert_eq!((sum, min.val, min.loc), (10.0, -1.0, Some(1)));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
#[inline(always)]
pub fn parallel_reduce<L, F, R>(label: &str, launch_spec: L, kernel: F, reducer: R) -> Result<R::Value>
where
    L: LaunchSpec,
    R: Reducer,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
{
    launch(label, Pattern::Reduce, launch_spec, kernel, |policy, k| {
        policy.space().parallel_reduce(label, policy, k, &reducer)
    })
}

/// Where [`parallel_reduce_into`] puts a reduction's result: a rank-0 view (Kokkos' reduction
/// into a view), a host variable (`&mut value`), or a tuple of targets for a tuple of reducers,
/// one per component.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot receive a reduction result of type `{V}`",
    label = "expected a rank-0 view, `&mut value`, or a tuple of them for a tuple of reducers",
    note = "a reduction stores into `&View<T, 0, L, S>` (of any memory space), `&mut T`, or one target per reducer of a tuple"
)]
pub trait ReduceInto<V> {
    /// Stores the result.
    ///
    /// # Errors
    ///
    /// A borrow conflict on a target view (a handle of it is held elsewhere).
    fn store(self, value: V) -> Result<()>;
}

impl<V> ReduceInto<V> for &mut V {
    fn store(self, value: V) -> Result<()> {
        *self = value;
        Ok(())
    }
}

impl<T, L, S> ReduceInto<T> for &crate::view::View<T, 0, L, S>
where
    T: crate::view::ViewValue,
    L: crate::space::ArrayLayout,
    S: crate::space::MemorySpace,
{
    fn store(self, value: T) -> Result<()> {
        // In place in host memory, through the space's host copy in a device's.
        self.copy_from_slice(&[value])
    }
}

macro_rules! tuple_reduce_into {
    ($($target:ident $value:ident $idx:tt),+) => {
        impl<$($target: ReduceInto<$value>, $value),+> ReduceInto<($($value,)+)> for ($($target,)+) {
            fn store(self, value: ($($value,)+)) -> Result<()> {
                $(self.$idx.store(value.$idx)?;)+
                Ok(())
            }
        }
    };
}

tuple_reduce_into!(A VA 0, B VB 1);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4, F VF 5);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4, F VF 5, G VG 6);
tuple_reduce_into!(A VA 0, B VB 1, C VC 2, D VD 3, E VE 4, F VF 5, G VG 6, H VH 7);

/// As [`parallel_reduce`], storing the result into `target` (Kokkos' `parallel_reduce` into a
/// view or a host scalar): a rank-0 view, `&mut value`, or — for a tuple of reducers — a tuple
/// with one target per component. The launch's handles are released before the store, so the
/// target may be a view the kernel read.
///
/// ```
/// use hoplite_core::{Max, RangePolicy, Sum, View, parallel_reduce_into};
/// use hoplite_serial::Serial;
/// let x: View<i64, 1> = View::from_slice("x", [4], &[3, -1, 7, 2])?;
/// let total: View<i64, 0> = View::new("total", [])?;
/// let mut largest = 0;
/// parallel_reduce_into(
///     "sum and max",
///     (RangePolicy::new(Serial::default(), 0..4), (x.read(),)),
///     |(i, (x,)), (sum, max): &mut (i64, i64)| {
///         *sum += x.get(i);
///         *max = (*max).max(x.get(i));
///     },
///     (Sum::<i64>::new(), Max::<i64>::new()),
///     (&total, &mut largest),
/// )?;
/// assert_eq!((total.host_read()?.get([]), largest), (11, 7));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_reduce`], and a borrow conflict on a target view.
#[inline(always)]
pub fn parallel_reduce_into<L, F, R, Tg>(
    label: &str,
    launch_spec: L,
    kernel: F,
    reducer: R,
    target: Tg,
) -> Result<()>
where
    L: LaunchSpec,
    R: Reducer,
    <L::Policy as ExecutionPolicy>::Space: ParallelReduce<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut R::Value) + Send + Sync,
    Tg: ReduceInto<R::Value>,
{
    target.store(parallel_reduce(label, launch_spec, kernel, reducer)?)
}

/// Prefix sum over the launch with a Kokkos scan kernel `(i, partial, is_final)`; returns the
/// total. Store before adding for an exclusive scan, after adding for an inclusive one.
///
/// ```
/// use hoplite_core::{parallel_scan, RangePolicy, View};
/// use hoplite_serial::Serial;
/// let x: View<i64, 1> = View::from_slice("x", [4], &[1, 2, 3, 4])?;
/// let offsets: View<i64, 1> = View::new("offsets", [4])?;
/// let policy = RangePolicy::new(Serial::default(), 0..4);
/// let total: i64 = parallel_scan("scan", (policy, (offsets.write(), x.read())), |(i, (out, x)), partial, is_final| {
///     if is_final { out.set(i, *partial); } // exclusive: store, then add
///     *partial += x.get(i);
/// })?;
/// assert_eq!((total, offsets.to_vec()?), (10, vec![0, 1, 3, 6]));
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// As for [`parallel_for`].
#[inline(always)]
pub fn parallel_scan<L, F, T>(label: &str, launch_spec: L, kernel: F) -> Result<T>
where
    L: LaunchSpec,
    T: ScanValue,
    <L::Policy as ExecutionPolicy>::Space: ParallelScan<L::Policy>,
    F: for<'it> Fn(L::Item<'it>, &mut T, bool) + Send + Sync,
{
    launch(label, Pattern::Scan, launch_spec, kernel, |policy, k| {
        policy.space().parallel_scan(label, policy, k)
    })
}
