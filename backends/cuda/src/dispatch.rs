//! The core's launches on [`Cuda`]: `parallel_for`, `parallel_reduce` and `parallel_scan` over
//! range, MDRange and team policies of a `Cuda` instance, for `#[kernel]` kernels: the same
//! `parallel_for(label, (policy, (y.write(), x.read())), axpy::with(a))` as on every host
//! backend.
//!
//! A device runs no closures. The core recognises a `#[kernel]`'s `with(..)` closure and hands
//! the launch over as a [`DeviceLaunch`] (the kernel, its scalar captures, its handles' views;
//! see [`hoplite_core::device_kernel`]); any other kernel is refused with
//! [`Error::NotADeviceKernel`]. This module lays the launch out as the kernel's parameters
//! (handles and scalars in declaration order) and runs it with the explicit launches' checks:
//! element types, ranks and scalar types against the kernel's parameters, writers containing
//! the iteration space, views on the instance's GPU.
//!
//! Handles of device views reach a `Cuda` launch ([`SpaceAccessibility`] for `CudaSpace` and
//! `CudaUVMSpace`), and only a `Cuda` launch: a device view in a host launch is a compile
//! error. Host views reach every launch at compile time; here they are refused with a typed
//! error naming the view (a GPU that addresses host memory is a later step).
//!
//! These launches wait for the device before they return, unless `HOPLITE_CUDA_LAUNCHES=async`
//! is set: then a `parallel_for` returns once its kernel is queued, and `crate::pending` says
//! what keeps that safe although the core's borrows end when the call returns (the views'
//! allocations live until the instance's next fence, the host's copies wait for queued
//! kernels, a conflicting launch on another instance waits for the one queued). Reductions
//! and scans always wait (they return the value), as do launches with managed memory or
//! unique tokens. For overlap with waiting launches, launch through the DAG runtime, which
//! runs vertices on streams of their own.

use std::any::{Any, TypeId};

use hoplite_core::device_kernel::{DeviceHandle, DeviceLaunch, DeviceTokenArg, ScalarType};
use hoplite_core::{
    Error, ExecutionPolicy, ExecutionSpace, ForKernel, MDRangePolicy, ParallelFor, ParallelReduce,
    ParallelScan, RangePolicy, ReduceKernel, Reducer, Result, ScanKernel, ScanValue, SpaceAccessibility,
    TeamPolicy,
};

use crate::launch::DeviceArg;
use crate::params::{HandleArg, KernelArg};
use crate::{Cuda, CudaError, CudaSpace, CudaUVMSpace, DeviceAccessibleSpace, DeviceScalar};

// SAFETY: `Cuda` kernels run on GPUs, never on host threads; `CudaSpace` and `CudaUVMSpace`
// allocations are device-addressable memory of the GPU their `device_ordinal` names
// (`DeviceAccessibleSpace`), and every launch checks that the views are on the instance's GPU
// (or one whose memory it reaches as a peer) before it passes their addresses on.
unsafe impl SpaceAccessibility<CudaSpace> for Cuda {}
// SAFETY: as above.
unsafe impl SpaceAccessibility<CudaUVMSpace> for Cuda {}

/// The device launch behind `kernel`, or the error that says a closure cannot run on a GPU.
fn device_launch<'k>(label: &str, launch: Option<DeviceLaunch<'k>>) -> Result<DeviceLaunch<'k>> {
    launch.ok_or_else(|| Error::NotADeviceKernel {
        label: label.to_owned(),
        space: "Cuda",
    })
}

/// The launch's arguments in the kernel's parameter order, checked for kind and count (the
/// explicit launches' packer checks the rest).
pub(crate) fn device_args(launch: &DeviceLaunch<'_>) -> std::result::Result<Vec<DeviceArg>, CudaError> {
    use hoplite_core::device_kernel::DeviceParam;
    let kernel = launch.kernel.name;
    let invalid = |reason: String| CudaError::InvalidLaunch { kernel, reason };
    let mut handles = launch.handles.iter();
    let mut scalars = launch.scalars.iter();
    let mut tokens = launch.tokens.iter();
    let mut args = Vec::with_capacity(launch.kernel.params.len());
    for param in launch.kernel.params {
        match param {
            DeviceParam::Handle { name, .. } => {
                let handle = handles.next().ok_or_else(|| {
                    invalid(format!(
                        "no handle for parameter `{name}`; pass one per handle parameter"
                    ))
                })?;
                args.push(handle_arg(kernel, handle)?);
            }
            DeviceParam::Scalar { name, .. } => {
                let value = scalars
                    .next()
                    .ok_or_else(|| invalid(format!("no value for the scalar `{name}`")))?;
                args.push(DeviceArg::scalar(*value));
            }
            DeviceParam::TokenBits { name } => {
                let token = tokens
                    .next()
                    .ok_or_else(|| invalid(format!("no unique token for `{name}`")))?;
                args.push(token_arg(kernel, name, token)?);
            }
        }
    }
    if handles.next().is_some() {
        return Err(invalid(format!(
            "{} handles for {} handle parameters; pass one per handle parameter, in order",
            launch.handles.len(),
            launch
                .kernel
                .params
                .iter()
                .filter(|p| matches!(p, DeviceParam::Handle { .. }))
                .count()
        )));
    }
    Ok(args)
}

/// The device type of a view's elements, if they are device scalars.
fn element_scalar(element: TypeId) -> Option<ScalarType> {
    macro_rules! scalars {
        ($($t:ty),*) => {$(
            if element == TypeId::of::<$t>() {
                return Some(<$t as DeviceScalar>::SCALAR);
            }
        )*};
    }
    scalars!(bool, i32, i64, u32, u64, f32, f64);
    #[cfg(target_pointer_width = "64")]
    scalars!(usize, isize);
    None
}

/// The GPU whose memory a view of `space` is.
fn space_device(space: &dyn Any) -> Option<usize> {
    if let Some(s) = space.downcast_ref::<CudaSpace>() {
        return Some(s.device_ordinal());
    }
    space
        .downcast_ref::<CudaUVMSpace>()
        .map(DeviceAccessibleSpace::device_ordinal)
}

/// A unique token's lock words as a kernel argument: a device token in Cuda memory (the
/// launch checks its GPU with the views'), never a host pool. The launch borrows the token
/// until it returns, and a `Cuda` launch waits for its kernel, so the words outlive it.
pub(crate) fn token_arg(
    kernel: &'static str,
    name: &str,
    token: &DeviceTokenArg,
) -> std::result::Result<DeviceArg, CudaError> {
    let invalid = |reason: String| CudaError::InvalidLaunch { kernel, reason };
    let Some(device_token) = &token.token else {
        return Err(invalid(format!(
            "`{name}` is a host unique token (`{}`), which kernels on a GPU cannot acquire from; pass a token of the GPU (`cuda.unique_token()` or `KernelTokenSpace::kernel_token`)",
            token.type_name
        )));
    };
    let device = space_device(&*device_token.memory_space).ok_or_else(|| {
        invalid(format!(
            "the unique token `{name}` (`{}`) is in memory Cuda launches do not know; make it with `cuda.unique_token()`",
            token.type_name
        ))
    })?;
    Ok(DeviceArg::token_parts(
        device_token.words as u64,
        device_token.size as u64,
        device,
        None,
    ))
}

fn handle_arg(kernel: &'static str, handle: &DeviceHandle<'_>) -> std::result::Result<DeviceArg, CudaError> {
    let invalid = |reason: String| CudaError::InvalidLaunch { kernel, reason };
    let element = element_scalar(handle.element).ok_or_else(|| {
        invalid(format!(
            "view `{}` holds `{}`, which no device kernel takes; use a view of a scalar type",
            handle.label, handle.element_name
        ))
    })?;
    let device = space_device(handle.space).ok_or_else(|| {
        invalid(format!(
            "view `{}` is in a memory space Cuda launches do not know; use `CudaSpace` or `CudaUVMSpace`",
            handle.label
        ))
    })?;
    let ptr = handle.data as u64;
    let writer = handle.access == hoplite_core::device_kernel::HandleAccess::Write;
    Ok(DeviceArg {
        arg: KernelArg::Handle(HandleArg {
            ptr,
            access: handle.access,
            element,
            extents: handle.extents.clone(),
            strides: handle.strides.clone(),
        }),
        writer_extents: writer.then(|| handle.extents.clone()),
        bytes: Some((ptr, ptr + handle.span_bytes)),
        device: Some(device),
        // Kept by the instance until its next fence: an asynchronous launch returns before
        // the device has run it (see `crate::pending`).
        keep: Some(handle.owner.clone()),
    })
}

/// Runs `launch` on `cuda` after the conflicting work queued on other instances (see
/// `crate::pending`): waits for it, or, with asynchronous launches
/// (`HOPLITE_CUDA_LAUNCHES=async`), queues it and returns. Launches with managed-memory views
/// (the host reaches those without a copy), unique tokens, or views of another GPU (whose host
/// copies are not ordered after this stream) wait in both modes.
fn run_launch(
    cuda: &Cuda,
    device: &DeviceLaunch<'_>,
    args: &[DeviceArg],
    launch: impl FnOnce() -> std::result::Result<(), crate::CudaError>,
) -> Result<()> {
    let accesses: Vec<crate::pending::Access> = args.iter().filter_map(DeviceArg::access).collect();
    // Named in the error of a later wait that finds it failed on the device.
    let launch = || {
        launch()?;
        cuda.note_queued(device.kernel.name);
        Ok(())
    };
    if !crate::pending::asynchronous() {
        cuda.wait_for_queued(&accesses)?;
        launch()?;
        return cuda.fence();
    }
    let managed = device
        .handles
        .iter()
        .any(|h| h.space.downcast_ref::<CudaUVMSpace>().is_some());
    let here = cuda.device().ok();
    let peer = args.iter().any(|a| a.device.is_some_and(|d| Some(d) != here));
    if managed || peer || !device.tokens.is_empty() {
        cuda.wait_for_queued(&accesses)?;
        launch()?;
        return cuda.fence();
    }
    if cuda.in_dag_stream() {
        // A DAG vertex's launch on its own stream: ordered against the DAG's other vertices
        // by its events, and against queued eager launches here; not recorded: the DAG holds
        // the views until the vertex has run. Its launches on other instances are recorded.
        cuda.wait_for_queued(&accesses)?;
        launch()?;
        return Ok(cuda.bound_kept()?);
    }
    Ok(cuda.queue_launch(&accesses, launch)?)
}

/// Before a launch that waits for its value (a reduction, a scan): fences the other instances
/// whose queued work conflicts with its arguments.
fn after_queued_conflicts(cuda: &Cuda, args: &[DeviceArg]) -> Result<()> {
    let accesses: Vec<crate::pending::Access> = args.iter().filter_map(DeviceArg::access).collect();
    Ok(cuda.wait_for_queued(&accesses)?)
}

// SAFETY: the kernel is never called on the host. The device runs the `#[kernel]`'s entry,
// whose `DeviceKernel` contract keeps its stores at the launch's own points (or checked
// against the extents passed); `launch_range_info` checks every writer contains the range and
// overlaps no other handle, and every view is on the instance's GPU; `run_launch` returns
// once the device finished, or, asynchronously, with the views' allocations kept alive by the
// instance until its next fence, the launch queued after every conflicting launch of another
// instance and recorded for those to come, and the host's copies ordered after it by the
// driver (see `crate::pending`).
unsafe impl ParallelFor<RangePolicy<Cuda>> for Cuda {
    fn parallel_for<K: ForKernel<RangePolicy<Cuda>>>(
        &self,
        label: &str,
        policy: &RangePolicy<Cuda>,
        kernel: K,
    ) -> Result<()> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        let cuda = policy.space();
        run_launch(cuda, &launch, &args, || {
            cuda.launch_range_info(
                &launch.kernel,
                policy.begin()..policy.end(),
                &args,
                policy.desired_occupancy(),
            )
        })
    }
}

// SAFETY: as for the range policy; `launch_mdrange_info` checks the box.
unsafe impl<const R: usize> ParallelFor<MDRangePolicy<Cuda, R>> for Cuda {
    fn parallel_for<K: ForKernel<MDRangePolicy<Cuda, R>>>(
        &self,
        label: &str,
        policy: &MDRangePolicy<Cuda, R>,
        kernel: K,
    ) -> Result<()> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        let cuda = policy.space();
        run_launch(cuda, &launch, &args, || {
            cuda.launch_mdrange_info::<R>(
                &launch.kernel,
                policy.begin(),
                policy.end(),
                &args,
                policy.desired_occupancy(),
            )
        })
    }
}

// SAFETY: as for the range policy; team kernels store through atomics, their team's row or
// their league rank, which `launch_team_info` checks against the league.
unsafe impl ParallelFor<TeamPolicy<Cuda>> for Cuda {
    fn parallel_for<K: ForKernel<TeamPolicy<Cuda>>>(
        &self,
        label: &str,
        policy: &TeamPolicy<Cuda>,
        kernel: K,
    ) -> Result<()> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        let cuda = policy.space();
        run_launch(cuda, &launch, &args, || {
            cuda.launch_team_info(&launch.kernel, policy, &args)
        })
    }
}

/// A reducer seen with its value as `T`, which is the same type as `R::Value` (checked by
/// the caller through type ids): lets the device reduction, which needs a
/// [`DeviceReduceValue`](crate::reduce::DeviceReduceValue), run a reducer whose value type the dispatch traits leave open.
struct Retyped<'r, R, T> {
    reducer: &'r R,
    value: std::marker::PhantomData<fn() -> T>,
}

impl<'r, R: Reducer, T: Send> Retyped<'r, R, T> {
    /// `None` unless `T` is `R::Value`.
    fn new(reducer: &'r R) -> Option<Self> {
        (typeid::of::<T>() == typeid::of::<R::Value>()).then_some(Retyped {
            reducer,
            value: std::marker::PhantomData,
        })
    }
}

/// Moves `value` into the type `B`, which is the same type as `A`.
///
/// # Safety
///
/// `A` and `B` are the same type (equal type ids).
unsafe fn same<A, B>(value: A) -> B {
    debug_assert_eq!(typeid::of::<A>(), typeid::of::<B>());
    let value = std::mem::ManuallyDrop::new(value);
    // SAFETY: the caller's contract: the same type, so the same layout and validity.
    unsafe { std::mem::transmute_copy::<A, B>(&value) }
}

impl<R: Reducer, T: Send> Reducer for Retyped<'_, R, T> {
    type Value = T;

    fn init(&self) -> T {
        // SAFETY: `Retyped::new` checked that `T` is `R::Value`.
        unsafe { same(self.reducer.init()) }
    }

    fn join(&self, dst: &mut T, src: T) {
        // SAFETY: as in `init`; a `&mut T` is a `&mut R::Value`.
        let dst = unsafe { &mut *std::ptr::from_mut(dst).cast::<R::Value>() };
        // SAFETY: as in `init`.
        self.reducer.join(dst, unsafe { same(src) });
    }

    fn finalize(&self, value: &mut T) {
        // SAFETY: as in `join`.
        self.reducer
            .finalize(unsafe { &mut *std::ptr::from_mut(value).cast::<R::Value>() });
    }

    fn is_commutative(&self) -> bool {
        self.reducer.is_commutative()
    }

    fn device_join(&self) -> Option<hoplite_core::device_kernel::DeviceJoin> {
        self.reducer.device_join()
    }
}

/// Tries `$run` with the reducer retyped (`$retyped`) to each of the value types listed after
/// the `;` (`$v` names it in `$run`), returning from the caller with the first that is the
/// reducer's value type.
macro_rules! reduce_as_device_value {
    ($reducer:expr, |$retyped:ident: $v:ident| $run:expr; $($t:ty),*) => {$(
        if let Some($retyped) = Retyped::<_, $t>::new($reducer) {
            type $v = $t;
            let value: $t = $run?;
            // SAFETY: `Retyped::new` found `$t` to be the reducer's value type.
            return Ok(unsafe { same(value) });
        }
    )*};
}

/// Calls `$m!` with its arguments, then `;` and every value type a device reduction
/// produces.
macro_rules! with_device_values {
    ($m:ident!($($args:tt)*)) => {
        $m!($($args)*; i32, i64, u32, u64, f32, f64, usize, isize, bool,
            ::hoplite_core::ValLoc<i32>, ::hoplite_core::ValLoc<i64>, ::hoplite_core::ValLoc<u32>, ::hoplite_core::ValLoc<u64>, ::hoplite_core::ValLoc<f32>, ::hoplite_core::ValLoc<f64>, ::hoplite_core::ValLoc<usize>,
            ::hoplite_core::ValLoc<isize>,
            ::hoplite_core::MinMaxScalar<i32>, ::hoplite_core::MinMaxScalar<i64>, ::hoplite_core::MinMaxScalar<u32>, ::hoplite_core::MinMaxScalar<u64>, ::hoplite_core::MinMaxScalar<f32>,
            ::hoplite_core::MinMaxScalar<f64>, ::hoplite_core::MinMaxScalar<usize>, ::hoplite_core::MinMaxScalar<isize>,
            ::hoplite_core::MinMaxLocScalar<i32>, ::hoplite_core::MinMaxLocScalar<i64>, ::hoplite_core::MinMaxLocScalar<u32>, ::hoplite_core::MinMaxLocScalar<u64>,
            ::hoplite_core::MinMaxLocScalar<f32>, ::hoplite_core::MinMaxLocScalar<f64>, ::hoplite_core::MinMaxLocScalar<usize>, ::hoplite_core::MinMaxLocScalar<isize>,
            Option<usize>)
    };
}
#[cfg(feature = "graph")] // a CUDA Graph's reduce nodes type their reducers back the same way
pub(crate) use with_device_values;

/// Calls `$m!` with its arguments, then `;` and every value type a device scan produces.
macro_rules! with_scan_values {
    ($m:ident!($($args:tt)*)) => {
        $m!($($args)*; i32, i64, u32, u64, f32, f64, usize, isize)
    };
}
#[cfg(feature = "graph")] // a CUDA Graph's scan nodes type their values back the same way
pub(crate) use with_scan_values;

/// The error for a scan of a value type with no device layout.
pub(crate) fn no_scan_value(kernel: &'static str, value: &str) -> crate::CudaError {
    crate::CudaError::InvalidLaunch {
        kernel,
        reason: format!("a scan of `{value}`, which has no device layout; scan a numeric scalar"),
    }
}

/// The error for a reduction into a value type with no device layout.
pub(crate) fn no_device_value(kernel: &'static str, value: &str) -> crate::CudaError {
    crate::CudaError::InvalidLaunch {
        kernel,
        reason: format!(
            "a reduction into `{value}`, which has no device layout; reduce a scalar, a `ValLoc`, a `MinMaxScalar` or a `MinMaxLocScalar` of one, or an `Option<usize>` (`FirstLoc`, `LastLoc`)"
        ),
    }
}

/// Refuses a reduction over `policy` with a reducer that is not commutative where the policy
/// visits its box otherwise than as nested loops in its inner order: such a reducer's partials
/// join in visit order (the core's index order), and a device reduction walks the box as
/// nested loops ([`MDRangePolicy::visits_in_nested_order`]).
pub(crate) fn check_join_order<R: Reducer, const N: usize>(
    kernel: &'static str,
    policy: &MDRangePolicy<Cuda, N>,
    reducer: &R,
) -> std::result::Result<(), CudaError> {
    if reducer.is_commutative() || policy.visits_in_nested_order() {
        return Ok(());
    }
    Err(CudaError::UnorderedReduction {
        kernel,
        reducer: std::any::type_name::<R>(),
        tiles: format!("{:?} walked {:?}", policy.tiles(), policy.outer_order()),
        order: format!("{:?}", policy.inner_order()),
    })
}

// SAFETY: as for `ParallelFor`; reductions return the joined value, so the device finished.
unsafe impl ParallelReduce<RangePolicy<Cuda>> for Cuda {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<RangePolicy<Cuda>, R::Value>>(
        &self,
        label: &str,
        policy: &RangePolicy<Cuda>,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        let cuda = policy.space();
        after_queued_conflicts(cuda, &args)?;
        let range = policy.begin()..policy.end();
        with_device_values!(reduce_as_device_value!(reducer, |retyped: V| cuda
            .reduce_range_info::<Retyped<'_, R, V>>(
                &launch.kernel,
                range.clone(),
                &args,
                &retyped,
                policy.desired_occupancy()
            )));
        Err(no_device_value(launch.kernel.name, std::any::type_name::<R::Value>()).into())
    }
}

// SAFETY: as for the range policy.
unsafe impl<const N: usize> ParallelReduce<MDRangePolicy<Cuda, N>> for Cuda {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<MDRangePolicy<Cuda, N>, R::Value>>(
        &self,
        label: &str,
        policy: &MDRangePolicy<Cuda, N>,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        check_join_order(launch.kernel.name, policy, reducer)?;
        let cuda = policy.space();
        after_queued_conflicts(cuda, &args)?;
        with_device_values!(reduce_as_device_value!(reducer, |retyped: V| cuda
            .reduce_mdrange_info::<Retyped<'_, R, V>, N>(
                &launch.kernel,
                policy,
                &args,
                &retyped
            )));
        Err(no_device_value(launch.kernel.name, std::any::type_name::<R::Value>()).into())
    }
}

// SAFETY: as for the range policy.
unsafe impl ParallelReduce<TeamPolicy<Cuda>> for Cuda {
    fn parallel_reduce<R: Reducer, K: ReduceKernel<TeamPolicy<Cuda>, R::Value>>(
        &self,
        label: &str,
        policy: &TeamPolicy<Cuda>,
        kernel: K,
        reducer: &R,
    ) -> Result<R::Value> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        let cuda = policy.space();
        after_queued_conflicts(cuda, &args)?;
        with_device_values!(reduce_as_device_value!(reducer, |retyped: V| cuda
            .reduce_team_info::<Retyped<'_, R, V>>(&launch.kernel, policy, &args, &retyped)));
        Err(no_device_value(launch.kernel.name, std::any::type_name::<R::Value>()).into())
    }
}

// SAFETY: as for `ParallelFor`; the scan's two passes run in order on the stream and the
// total is read back, so the device finished.
unsafe impl ParallelScan<RangePolicy<Cuda>> for Cuda {
    fn parallel_scan<T: ScanValue, K: ScanKernel<RangePolicy<Cuda>, T>>(
        &self,
        label: &str,
        policy: &RangePolicy<Cuda>,
        kernel: K,
    ) -> Result<T> {
        let launch = device_launch(label, kernel.device_launch())?;
        let args = device_args(&launch)?;
        let cuda = policy.space();
        after_queued_conflicts(cuda, &args)?;
        let range = policy.begin()..policy.end();
        macro_rules! attempt {
            (; $($t:ty),*) => {$(
                if typeid::of::<T>() == typeid::of::<$t>() {
                    let total: $t =
                        cuda.scan_range_info::<$t>(&launch.kernel, range, &args, policy.desired_occupancy())?;
                    // SAFETY: `T` is `$t` (equal type ids).
                    return Ok(unsafe { same(total) });
                }
            )*};
        }
        with_scan_values!(attempt!());
        Err(no_scan_value(launch.kernel.name, std::any::type_name::<T>()).into())
    }
}

#[cfg(test)]
mod tests {
    use hoplite_core::{Custom, IterationOrder, MinLoc, Sum};

    use super::*;

    #[test]
    fn tiles_that_are_not_nested_loops_refuse_non_commutative_reducers() {
        let concat = Custom::new(|| 0u64, |d: &mut u64, s: u64| *d = *d * 10 + s);
        let cuda = Cuda::default();
        let square = MDRangePolicy::new(cuda.clone(), [0, 0], [8, 8]).with_tiles([2, 2]);
        let e = check_join_order("k", &square, &concat).expect_err("square tiles");
        assert!(
            matches!(&e, CudaError::UnorderedReduction { kernel: "k", reducer, tiles, order }
                if reducer.contains("Custom") && tiles.starts_with("[2, 2]") && order == "Right"),
            "{e}"
        );
        // `MinLoc` is not declared commutative either; `Sum` is.
        assert!(check_join_order("k", &square, &MinLoc::<f64>::new()).is_err());
        assert!(check_join_order("k", &square, &Sum::<f64>::new()).is_ok());
        // Nested loops: the default tiles, rows of tiles, columns walked with the first index
        // fastest.
        let plain = MDRangePolicy::new(cuda.clone(), [0, 0], [8, 8]);
        assert!(check_join_order("k", &plain, &concat).is_ok());
        assert!(check_join_order("k", &plain.clone().with_tiles([3, 8]), &concat).is_ok());
        let columns = plain
            .with_iteration(IterationOrder::Left, IterationOrder::Left)
            .with_tiles([8, 2]);
        assert!(check_join_order("k", &columns, &concat).is_ok());
    }
}
