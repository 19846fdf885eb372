//! The arguments of a device launch: [`DeviceScalar`], the element types device kernels use,
//! and [`DeviceArg`], a view handle or a scalar as a launch, a graph node or a raw kernel takes
//! it.

use std::any::Any;
use std::sync::Arc;

use hoplite_core::device_kernel::{HandleAccess, ScalarType};
use hoplite_core::{ArrayLayout, View, ViewValue};

use crate::DeviceAccessibleSpace;
use crate::params::{HandleArg, KernelArg, ScalarArg, TokenArg};

/// An element type device kernels use, with its [`ScalarType`].
///
/// # Safety
///
/// Launches pass views of `Self` to entries declared over [`SCALAR`](Self::SCALAR). An
/// implementation promises that `Self` has exactly that type's size and representation on
/// the device.
pub unsafe trait DeviceScalar: ViewValue {
    /// The device type.
    const SCALAR: ScalarType;
}

macro_rules! device_scalar {
    ($($t:ty => $s:ident),*) => {$(
        // SAFETY: the Rust type and the CUDA C type have the same size and representation
        // (two's complement integers, IEEE floats, 64-bit `usize`/`isize` on 64-bit hosts
        // and devices; `bool` is one byte of 0 or 1 in both).
        unsafe impl DeviceScalar for $t {
            const SCALAR: ScalarType = ScalarType::$s;
        }
    )*};
}
device_scalar!(bool => Bool, i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64);
#[cfg(target_pointer_width = "64")]
device_scalar!(usize => Usize, isize => Isize);

/// One argument of a device launch, in the kernel's parameter order: a view handle, a unique
/// token's lock words or a scalar, as `crate::dispatch` reads them from a launch's handles and
/// captures (and [`RawArg`](crate::raw::RawArg) from a raw kernel's arguments). Built only
/// from views of device memory, so a launch never hands the device an address it cannot use.
pub(crate) struct DeviceArg {
    pub(crate) arg: KernelArg,
    /// For a writer: its extents, which the launch's iteration space must stay inside.
    pub(crate) writer_extents: Option<Vec<u64>>,
    /// The bytes the handle covers, to refuse a writer that overlaps another handle.
    pub(crate) bytes: Option<(u64, u64)>,
    /// For a view: the GPU whose memory it is.
    pub(crate) device: Option<usize>,
    pub(crate) keep: Option<Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for DeviceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceArg").field("arg", &self.arg).finish()
    }
}

impl DeviceArg {
    fn handle<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
        access: HandleAccess,
    ) -> DeviceArg {
        DeviceArg::handle_as(view, access, T::SCALAR)
    }

    /// A handle of `view` that the kernel sees as elements of `element`, which must have
    /// `T`'s size (the library's fill and copy kernels move bits through a carrier type).
    pub(crate) fn handle_as<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
        access: HandleAccess,
        element: ScalarType,
    ) -> DeviceArg {
        debug_assert_eq!(element.size(), T::SCALAR.size());
        let writer = access == HandleAccess::Write;
        let extents: Vec<u64> = view.extents().iter().map(|&e| e as u64).collect();
        let ptr = view.data() as usize as u64;
        let span = (view.span() * size_of::<T>()) as u64;
        DeviceArg {
            arg: KernelArg::Handle(HandleArg {
                ptr,
                access,
                element,
                extents: extents.clone(),
                strides: view.strides().iter().map(|&s| s as u64).collect(),
            }),
            writer_extents: writer.then_some(extents),
            bytes: Some((ptr, ptr + span)),
            device: Some(view.space().device_ordinal()),
            keep: Some(Arc::new(view.clone())),
        }
    }

    /// A reader of `view` (a `Reader` parameter).
    pub(crate) fn read<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> DeviceArg {
        DeviceArg::handle(view, HandleAccess::Read)
    }

    /// A writer of `view` (a `Writer` parameter): the launch checks that its iteration space
    /// lies inside the view's extents and that no other handle overlaps the view.
    pub(crate) fn write<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> DeviceArg {
        DeviceArg::handle(view, HandleAccess::Write)
    }

    /// An atomic handle of `view` (an `AtomicHandle` parameter): atomic updates anywhere in
    /// the view, each checked against its extents by the kernel.
    pub(crate) fn atomic<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> DeviceArg {
        DeviceArg::handle(view, HandleAccess::Atomic)
    }

    /// The GPU of the memory the argument updates atomically (an atomic handle's view, a
    /// unique token's words), `None` for any other argument.
    pub(crate) fn atomic_device(&self) -> Option<usize> {
        match &self.arg {
            KernelArg::Handle(h) if h.access == HandleAccess::Atomic => self.device,
            KernelArg::TokenBits(_) => self.device,
            _ => None,
        }
    }

    /// The device bytes the argument touches and whether it writes them (atomic handles and
    /// token words count as writes), for the table of queued launches (`crate::pending`).
    pub(crate) fn access(&self) -> Option<crate::pending::Access> {
        let (lo, hi) = self.bytes?;
        let writes = match &self.arg {
            KernelArg::Handle(h) => h.access != HandleAccess::Read,
            _ => true,
        };
        Some(crate::pending::Access { lo, hi, writes })
    }

    /// What keeps the argument's view alive while the device may use it.
    pub(crate) fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.keep.clone()
    }

    /// A unique token's lock words at the device address `words` of GPU `device`, holding
    /// `size` ids, kept alive by `keep` (`crate::dispatch::token_arg` builds it).
    pub(crate) fn token_parts(
        words: u64,
        size: u64,
        device: usize,
        keep: Option<Arc<dyn Any + Send + Sync>>,
    ) -> DeviceArg {
        DeviceArg {
            arg: KernelArg::TokenBits(TokenArg { words, size }),
            writer_extents: None,
            // The lock words are no view a writer could overlap: a token is its own memory.
            bytes: None,
            device: Some(device),
            keep,
        }
    }

    /// A scalar capture.
    pub(crate) fn scalar(value: impl Into<ScalarArg>) -> DeviceArg {
        DeviceArg {
            arg: KernelArg::Scalar(value.into()),
            writer_extents: None,
            bytes: None,
            device: None,
            keep: None,
        }
    }
}

/// The argument as the packer sees it, without a copy.
impl AsRef<KernelArg> for DeviceArg {
    fn as_ref(&self) -> &KernelArg {
        &self.arg
    }
}
