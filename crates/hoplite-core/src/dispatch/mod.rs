//! Dispatch: the traits a space implements per policy and kernel kind (the seed's
//! `ExecutionSpaceOf`), and the free functions `parallel_for`, `parallel_reduce` and
//! `parallel_scan` that route to them.
//!
//! The free functions check the policy, run the launch and turn a panic inside the kernel into
//! [`Error::KernelPanicked`](crate::Error::KernelPanicked), so the runtime stays usable after a failing kernel. Backends
//! implement only the traits and get all of that for free.
//!
//! Kernels are closures. A launch is generic over the iteration brand `'it`
//! (`for<'it> Fn(P::Item<'it>)`), which is what keeps iteration tokens inside their iteration.
//!
//! A launch is a policy, or a policy with the view handles it uses — `(policy, (y.write(),
//! x.read()))` — in which case each iteration receives `(token, (bound_y, bound_x))`. Backends
//! never see the handles: the free functions check them once against the policy and bind them
//! inside the kernel they pass on.

mod kernel;
mod launch;
mod launch_spec;
mod pattern;

pub use kernel::{ForKernel, ReduceKernel, ScanKernel};
pub use launch::{
    ReduceInto, ValidatedPolicy, parallel_for, parallel_for_validated, parallel_reduce, parallel_reduce_into,
    parallel_reduce_validated, parallel_scan, parallel_scan_validated,
};
pub use launch_spec::{IntoLaunch, LaunchSpec};
pub use pattern::{FullSpace, LaunchSpace, ParallelFor, ParallelReduce, ParallelScan};
