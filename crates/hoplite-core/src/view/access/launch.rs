//! [`LaunchArgs`]: how handles handed to a launch are checked once, prepared, and bound to each
//! iteration; tuples of handles.

use std::marker::PhantomData;

use super::atomic::AtomicValue;
use super::bound::{
    BoundAtomic, BoundLookup, BoundReader, BoundWriter, PreparedAtomic, PreparedReader, PreparedWriter,
};
use super::handle::{AtomicHandle, Handle, Lookup, Reader, TeamSlots, Writer, bounds_nonempty};
use super::team::BoundTeamSlots;
use crate::device_kernel::{DeviceHandle, HandleAccess};
use crate::error::{Error, Result};
use crate::index::IndexBounds;
use crate::space::{ArrayLayout, ExecutionSpace, MemorySpace, SpaceAccessibility};
use crate::view::ViewValue;

/// The handles a launch takes (a handle, or a tuple of up to eight): checked once against the
/// launch's index space, then bound to its iteration brand.
///
/// Implemented for [`Reader`], [`Writer`], [`AtomicHandle`], `()` and tuples of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be handed to a launch",
    label = "expected view handles such as `(y.write(), x.read())`",
    note = "launch arguments are a tuple of handles made with `read()`, `write()` or `atomic()`"
)]
pub trait LaunchArgs: Send + Sync {
    /// What the launch computes once per handle (addresses, strides, margins).
    type Prepared: Send + Sync + Copy;
    /// The handles bound to a launch with brand `'it`.
    type Bound<'it>;

    /// Checks every handle — no borrow conflict, the index space inside its extents — and
    /// computes what binding needs.
    fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared>;

    /// Binds prepared handles to brand `'it`.
    ///
    /// # Safety
    ///
    /// `prepared` came from [`prepare`](Self::prepare) of handles that are still alive, for the
    /// launch's index space; the bound handles are used only with tokens of that launch (brand
    /// `'it`), and the launch hands each token to one iteration at a time.
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> Self::Bound<'it>;

    /// The prepared handles as the thread that runs one share of the launch uses them: called
    /// on that thread, once, before the share's points are bound ([`PointSet::visit`](
    /// crate::point_loop::PointSet::visit) runs a share on one thread). A handle with
    /// per-thread state — a scatter view's private copy — resolves it here rather than at
    /// every point; the default is `prepared` unchanged. Binding a `prepared` that did not
    /// come through here (team launches, where one team's members may run on several
    /// threads) stays correct: such a handle resolves its state at each access then.
    #[doc(hidden)]
    #[inline(always)]
    fn for_this_thread(prepared: &Self::Prepared) -> Self::Prepared {
        *prepared
    }

    /// Whether point loops over these handles run unrolled ([`PointSet::visit_lanes`](
    /// crate::point_loop::PointSet::visit_lanes)): for handles whose accesses are short
    /// read-modify-writes with a bounds check (a scatter view's update), which the compiler
    /// does not unroll by itself. Other loops keep the plain form the vectorizer sees best.
    #[doc(hidden)]
    const UNROLL: bool = false;

    /// Appends a description of every handle, in order, for a device backend (see
    /// [`DeviceLaunch`](crate::device_kernel::DeviceLaunch)). Handles a device cannot take
    /// describe nothing, so that a device launch of them reports a parameter mismatch.
    #[doc(hidden)]
    fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
        let _ = out;
    }
}

/// Launch arguments every view of which the kernels of space `E` can access
/// ([`SpaceAccessibility`]): a launch on `E` takes them. Implemented for the handles and
/// tuples of them.
///
/// # Safety
///
/// A backend of `E` binds and dereferences the handles (or hands their addresses to its
/// device). An implementation promises that `E`'s kernels can access the memory of every view
/// `self` covers.
#[diagnostic::on_unimplemented(
    message = "the kernels of `{E}` cannot access every view of `{Self}`",
    label = "a handle of a view in a memory space this launch's space cannot reach",
    note = "host spaces take handles of host views, device spaces of device views: copy the view into a space the launch's space reaches (`deep_copy`, `create_mirror_view`)"
)]
pub unsafe trait AccessibleArgs<E: ExecutionSpace>: LaunchArgs {}

// SAFETY: no views.
unsafe impl<E: ExecutionSpace> AccessibleArgs<E> for () {}

/// What a device backend needs of one handle's view.
fn device_handle<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace>(
    handle: &Handle<T, R, L, S>,
    access: HandleAccess,
) -> DeviceHandle<'_> {
    let view = &handle.view;
    DeviceHandle {
        access,
        element: std::any::TypeId::of::<T>(),
        element_name: std::any::type_name::<T>(),
        label: view.label(),
        data: view.data() as usize,
        extents: view.extents().iter().map(|&e| e as u64).collect(),
        strides: view.strides().iter().map(|&s| s as u64).collect(),
        span_bytes: (view.span() * size_of::<T>()) as u64,
        space: view.space(),
        owner: view.alloc.clone(),
    }
}

// SAFETY: the handle covers one view, of space `S`, which `E` reaches.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace, E: SpaceAccessibility<S>>
    AccessibleArgs<E> for Writer<T, R, L, S>
{
}
// SAFETY: as above.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace, E: SpaceAccessibility<S>>
    AccessibleArgs<E> for Reader<T, R, L, S>
{
}
// SAFETY: as above.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace, E: SpaceAccessibility<S>>
    AccessibleArgs<E> for Lookup<T, R, L, S>
{
}
// SAFETY: as above.
unsafe impl<T: ViewValue, L: ArrayLayout, S: MemorySpace, E: SpaceAccessibility<S>> AccessibleArgs<E>
    for TeamSlots<T, L, S>
{
}
// SAFETY: as above.
unsafe impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace, E: SpaceAccessibility<S>>
    AccessibleArgs<E> for AtomicHandle<T, R, L, S>
{
}

impl LaunchArgs for () {
    type Prepared = ();
    type Bound<'it> = ();
    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<()> {
        Ok(())
    }
    #[inline(always)]
    unsafe fn bind<'it>(_prepared: &()) -> Self::Bound<'it> {}
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> LaunchArgs for Writer<T, R, L, S> {
    type Prepared = PreparedWriter<T, R>;
    type Bound<'it> = BoundWriter<'it, T, R, L>;

    fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared> {
        self.handle.check(label, bounds)?;
        if R == 0 {
            // Rank-1 tokens store the one element (`Token<0> for Idx`): only one may exist.
            if let IndexBounds::Range { begin, end } = *bounds
                && end.saturating_sub(begin) > 1
            {
                return Err(Error::ScalarWriterInWideLaunch {
                    label: label.to_owned(),
                    view: self.handle.view.label().to_owned(),
                    iterations: end - begin,
                });
            }
        }
        Ok(PreparedWriter::of(&self.handle))
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundWriter<'it, T, R, L> {
        BoundWriter {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }

    fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
        out.push(device_handle(&self.handle, HandleAccess::Write));
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> LaunchArgs for Reader<T, R, L, S> {
    type Prepared = PreparedReader<T, R>;
    type Bound<'it> = BoundReader<'it, T, R, L>;

    fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared> {
        self.handle.check(label, bounds)?;
        let extents = self.handle.extents;
        let mut room_below = [0; R];
        let mut room_above = [0; R];
        if let Some((rank, lo, hi)) = bounds.token_extents()
            && rank == R
            && bounds_nonempty(bounds)
        {
            for d in 0..R {
                room_below[d] = lo[d];
                // `check` guaranteed hi <= extent, and the box is non-empty so hi >= 1.
                room_above[d] = extents[d] - hi[d];
            }
        }
        Ok(PreparedReader::of(&self.handle, room_below, room_above))
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundReader<'it, T, R, L> {
        BoundReader {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }

    fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
        out.push(device_handle(&self.handle, HandleAccess::Read));
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: MemorySpace> LaunchArgs for Lookup<T, R, L, S> {
    type Prepared = PreparedReader<T, R>;
    type Bound<'it> = BoundLookup<'it, T, R, L>;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // No range check: every access is checked instead. Only a refused borrow fails.
        self.handle.borrowed()?;
        Ok(PreparedReader::of(&self.handle, [0; R], [0; R]))
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundLookup<'it, T, R, L> {
        BoundLookup {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }

    fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
        out.push(device_handle(&self.handle, HandleAccess::Read));
    }
}

impl<T: ViewValue, L: ArrayLayout, S: MemorySpace> LaunchArgs for TeamSlots<T, L, S> {
    type Prepared = PreparedWriter<T, 2>;
    type Bound<'it> = BoundTeamSlots<'it, T, L>;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // No launch-wide check: slots are checked per access.
        self.handle.borrowed()?;
        Ok(PreparedWriter::of(&self.handle))
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundTeamSlots<'it, T, L> {
        BoundTeamSlots {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }

    fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
        out.push(device_handle(&self.handle, HandleAccess::TeamSlots));
    }
}

impl<T: AtomicValue, const R: usize, L: ArrayLayout, S: MemorySpace> LaunchArgs for AtomicHandle<T, R, L, S> {
    type Prepared = PreparedAtomic<T, R>;
    type Bound<'it> = BoundAtomic<'it, T, R, L>;

    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> Result<Self::Prepared> {
        // Atomic accesses are checked per element; only the borrow matters here.
        self.handle.borrowed()?;
        Ok(PreparedAtomic::of(self))
    }

    #[inline(always)]
    unsafe fn bind<'it>(prepared: &Self::Prepared) -> BoundAtomic<'it, T, R, L> {
        BoundAtomic {
            prepared: *prepared,
            brand: PhantomData,
            _layout: PhantomData,
        }
    }

    fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
        out.push(device_handle(&self.handle, HandleAccess::Atomic));
    }
}

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<$($name: LaunchArgs),+> LaunchArgs for ($($name,)+) {
            type Prepared = ($($name::Prepared,)+);
            type Bound<'it> = ($($name::Bound<'it>,)+);

            const UNROLL: bool = false $(|| $name::UNROLL)+;

            fn prepare(&self, label: &str, bounds: &IndexBounds) -> Result<Self::Prepared> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                Ok(($($name.prepare(label, bounds)?,)+))
            }

            #[inline(always)]
            fn for_this_thread(prepared: &Self::Prepared) -> Self::Prepared {
                #[allow(non_snake_case)]
                let ($($name,)+) = prepared;
                ($(<$name as LaunchArgs>::for_this_thread($name),)+)
            }

            #[inline(always)]
            unsafe fn bind<'it>(prepared: &Self::Prepared) -> Self::Bound<'it> {
                #[allow(non_snake_case)]
                let ($($name,)+) = prepared;
                // SAFETY: the caller upholds `bind`'s contract for the whole tuple, hence for
                // each element.
                unsafe { ($(<$name as LaunchArgs>::bind($name),)+) }
            }

            fn device_handles<'a>(&'a self, out: &mut Vec<DeviceHandle<'a>>) {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                $($name.device_handles(out);)+
            }
        }

        // SAFETY: every element's views are reachable from `E`, so all of the tuple's are.
        unsafe impl<Space: ExecutionSpace, $($name: AccessibleArgs<Space>),+> AccessibleArgs<Space> for ($($name,)+) {}
    };
}

tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);
