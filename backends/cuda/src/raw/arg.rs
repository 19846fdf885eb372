//! [`RawArg`], the arguments of a raw kernel launch: views of device memory and scalars, as
//! the launch's own argument list wrapped.

use hoplite_core::{ArrayLayout, View};

use crate::launch::DeviceArg;
use crate::params::ScalarArg;
use crate::{DeviceAccessibleSpace, DeviceScalar};

/// One argument of a raw kernel launch, in the signature's order: a view of device memory
/// for a pointer parameter (a reader for `in` and `const`, a writer or an atomic handle for the
/// others) or a scalar. Built only from views of device memory, so a launch never hands the
/// device an address it cannot use; the launch keeps the views alive until the instance is
/// fenced.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::CudaSpace;
/// use hoplite_cuda::raw::RawArg;
/// let n = RawArg::scalar(10i64);
/// if let Ok(y) = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [10]) {
///     let _args = [RawArg::write(&y), n];
/// }
/// ```
#[repr(transparent)]
pub struct RawArg(DeviceArg);

impl std::fmt::Debug for RawArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RawArg").field(&self.0).finish()
    }
}

impl RawArg {
    /// A pointer to `view`'s elements that the kernel only reads (`in`, `const`).
    pub fn read<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> RawArg {
        RawArg(DeviceArg::read(view))
    }

    /// A pointer to `view`'s elements that the kernel writes (`out`, `inout`, no direction):
    /// the launch checks that no other argument overlaps the view.
    pub fn write<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> RawArg {
        RawArg(DeviceArg::write(view))
    }

    /// A pointer to `view`'s elements that the kernel updates with atomics (`out`, `inout`):
    /// other arguments may read the same view.
    pub fn atomic<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> RawArg {
        RawArg(DeviceArg::atomic(view))
    }

    /// A scalar parameter.
    pub fn scalar(value: impl Into<ScalarArg>) -> RawArg {
        RawArg(DeviceArg::scalar(value))
    }
}

/// The launch arguments `args` hold.
pub(super) fn device_args(args: &[RawArg]) -> &[DeviceArg] {
    // SAFETY: `RawArg` is a `#[repr(transparent)]` wrapper of `DeviceArg`, so a slice of one
    // has the layout and validity of a slice of the other; the borrow keeps `args`'s lifetime.
    unsafe { std::slice::from_raw_parts(args.as_ptr().cast::<DeviceArg>(), args.len()) }
}
