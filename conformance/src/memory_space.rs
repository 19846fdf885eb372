//! The `MemorySpace` axioms for the space's memory and scratch memory spaces, and the
//! `MemorySpaceAccess` relations of `HostSpace`.
//!
//! Memory of the space under test is only allocated, recorded and freed, never dereferenced,
//! so the checks of the space's memory and scratch memory spaces run on every space, a GPU's
//! included: they need no kernel, and `deep_copy` moves data between the space's memory and
//! the host's through the space's host copies. The check of `HostSpace`'s access flags is
//! about the host's memory whatever the space, and runs on host spaces.

use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionSpace, HostSpace, LayoutLeft, LayoutRight, MemorySpace, MemorySpaceAccess, View,
    deep_copy,
};

use crate::util::same;
use crate::{Failure, FullSpace, LaunchSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

/// Allocates and frees `bytes` in `mem`, checking the alignment of plain and zeroed memory.
fn aligned_round_trip<M: MemorySpace>(mem: &M, bytes: usize) -> Outcome {
    for zeroed in [false, true] {
        let ptr = if zeroed {
            mem.allocate_zeroed("conformance-aligned", bytes)?
        } else {
            mem.allocate("conformance-aligned", bytes)?
        };
        let address = ptr.as_ptr() as usize;
        // SAFETY: `ptr` came from `allocate`/`allocate_zeroed` of `mem` with `bytes` bytes and
        // is not used afterwards.
        unsafe { mem.deallocate(ptr, bytes) };
        ensure!(
            address.is_multiple_of(M::ALIGNMENT),
            "{} allocated {bytes} bytes (zeroed: {zeroed}) at {address:#x}, not aligned to {}",
            mem.name(),
            M::ALIGNMENT
        );
    }
    Ok(())
}

fn check_alignment<M: MemorySpace>(mem: &M) -> Outcome {
    ensure!(
        M::ALIGNMENT.is_power_of_two(),
        "{}::ALIGNMENT is {}, not a power of two",
        mem.name(),
        M::ALIGNMENT
    );
    ensure!(!mem.name().is_empty(), "a memory space has an empty name");
    for bytes in [1, 7, 8, 63, 64, 65, 1000, 4096, 1 << 20] {
        aligned_round_trip(mem, bytes)?;
    }
    Ok(())
}

fn check_zero_bytes<M: MemorySpace>(mem: &M) -> Outcome {
    aligned_round_trip(mem, 0)
}

fn check_failure<M: MemorySpace>(mem: &M) -> Outcome {
    let label = "conformance-too-large";
    match mem.allocate(label, usize::MAX) {
        Err(Error::AllocationFailed {
            label: l,
            bytes,
            space,
            reason,
        }) => {
            ensure_eq!(l.as_str(), label, "the label of a failed allocation");
            ensure_eq!(bytes, usize::MAX, "the size of a failed allocation");
            ensure_eq!(space, mem.name(), "the space of a failed allocation");
            ensure!(!reason.is_empty(), "a failed allocation gives no reason");
        }
        Err(e) => {
            return Err(Failure::msg(format!(
                "allocating usize::MAX bytes: wrong error {e:?}"
            )));
        }
        Ok(ptr) => {
            // SAFETY: it came from `allocate` with this size (it cannot have, but if it did, it
            // is given back).
            unsafe { mem.deallocate(ptr, usize::MAX) };
            return Err(Failure::msg(format!("{} allocated usize::MAX bytes", mem.name())));
        }
    }
    // Valid as a layout but more than any machine has: an error (or, on a machine that can,
    // memory), never an abort.
    let huge = 1usize << 62;
    match mem.allocate_zeroed(label, huge) {
        Err(Error::AllocationFailed { bytes, .. }) => {
            ensure_eq!(bytes, huge, "the size of a failed allocation")
        }
        Err(e) => return Err(Failure::msg(format!("allocating 2^62 bytes: wrong error {e:?}"))),
        // SAFETY: from `allocate_zeroed` with this size, not used afterwards.
        Ok(ptr) => unsafe { mem.deallocate(ptr, huge) },
    }
    Ok(())
}

/// Axiom 1: memory is aligned to `ALIGNMENT` (a power of two), in the space's memory and
/// scratch memory spaces, plain or zeroed.
pub fn allocation_is_aligned<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        check_alignment(&<S as ExecutionSpace>::MemorySpace::default())?;
        check_alignment(&<S as ExecutionSpace>::ScratchMemorySpace::default())
    })
}

/// Axiom 3: a zero-byte allocation succeeds with an aligned pointer, and can be freed.
pub fn zero_byte_allocation_succeeds<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        check_zero_bytes(&<S as ExecutionSpace>::MemorySpace::default())?;
        check_zero_bytes(&<S as ExecutionSpace>::ScratchMemorySpace::default())
    })
}

/// Axiom 1: an allocation that cannot be made is `Error::AllocationFailed` with the label,
/// size, space and a reason; it never aborts.
pub fn allocation_failure_is_typed<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        check_failure(&<S as ExecutionSpace>::MemorySpace::default())?;
        check_failure(&<S as ExecutionSpace>::ScratchMemorySpace::default())
    })
}

/// A view's allocation in the space's memory space is listed in its records while the view
/// lives, with its label and size, and removed when the last handle is dropped.
pub fn view_allocations_are_recorded<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        let mem = <S as ExecutionSpace>::MemorySpace::default();
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let label = format!("conformance-record-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let view = View::<u64, 1, LayoutRight, <S as ExecutionSpace>::MemorySpace>::without_initializing(
            &label,
            [512],
        )?;
        let listed = mem.records().snapshot().into_iter().find(|r| r.label == label);
        match listed {
            Some(record) => ensure_eq!(record.bytes, 512 * 8, "the recorded size of `{label}`"),
            None => {
                return Err(Failure::msg(format!(
                    "the live view `{label}` is not in {}'s records",
                    mem.name()
                )));
            }
        }
        ensure!(
            mem.high_water_bytes() >= 4096 && mem.current_bytes() >= 4096,
            "current {} and high-water {} bytes while a 4096-byte view lives",
            mem.current_bytes(),
            mem.high_water_bytes()
        );
        let mut printed = Vec::new();
        mem.print_records(&mut printed, true)
            .map_err(|e| Failure::msg(format!("print_records failed: {e}")))?;
        ensure!(
            String::from_utf8_lossy(&printed).contains(&label),
            "print_records does not list `{label}`"
        );
        let clone = view.clone();
        drop(view);
        ensure!(
            mem.records().snapshot().iter().any(|r| r.label == label),
            "a clone still lives, but `{label}` was removed"
        );
        drop(clone);
        ensure!(
            !mem.records().snapshot().iter().any(|r| r.label == label),
            "`{label}` is still recorded after its last handle was dropped"
        );
        Ok(())
    })
}

/// `MemorySpaceAccess` of `HostSpace`: assignable from itself, and
/// ASSIGNABLE implies ACCESSIBLE implies DEEPCOPY.
pub fn host_space_access_flags_are_ordered<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        let assignable = <HostSpace as MemorySpaceAccess<HostSpace>>::ASSIGNABLE;
        let accessible = <HostSpace as MemorySpaceAccess<HostSpace>>::ACCESSIBLE;
        let deepcopy = <HostSpace as MemorySpaceAccess<HostSpace>>::DEEPCOPY;
        ensure!(assignable, "HostSpace is not assignable from itself");
        ensure!(!assignable || accessible, "ASSIGNABLE without ACCESSIBLE");
        ensure!(!accessible || deepcopy, "ACCESSIBLE without DEEPCOPY");
        ensure_eq!(HostSpace.name(), "HostSpace", "HostSpace's name");
        Ok(())
    })
}

/// `deep_copy` copies every element between views of the space's memory and host views, in
/// every direction and across layouts (column-major and row-major), and a copy across
/// different extents is `Error::ExtentMismatch` that leaves the destination untouched.
pub fn deep_copy_between_views_copies_every_element<S: LaunchSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let _ = space;
        let data: Vec<i32> = (0..35).collect();
        let column_major: Vec<i32> = (0..7).flat_map(|j| (0..5).map(move |i| i * 7 + j)).collect();
        let host: View<i32, 2> = View::from_slice("host", [5, 7], &data)?;
        let left = View::<i32, 2, LayoutLeft, S::MemorySpace>::new("left", [5, 7])?;
        deep_copy(&left, &host)?;
        same(&left.to_vec()?, &column_major, || {
            "a row-major host view copied into a column-major view of the space".to_owned()
        })?;
        let right = View::<i32, 2, LayoutRight, S::MemorySpace>::new("right", [5, 7])?;
        deep_copy(&right, &left)?;
        same(&right.to_vec()?, &data, || {
            "a copy between two views of the space, across layouts".to_owned()
        })?;
        let back: View<i32, 2, LayoutLeft> = View::new("back", [5, 7])?;
        deep_copy(&back, &right)?;
        same(&back.to_vec()?, &column_major, || {
            "a view of the space copied back to a column-major host view".to_owned()
        })?;
        let wrong = View::<i32, 2, LayoutRight, S::MemorySpace>::new("wrong", [7, 5])?;
        let err = deep_copy(&wrong, &right);
        ensure!(
            matches!(err, Err(Error::ExtentMismatch { .. })),
            "deep_copy across extents [7, 5] and [5, 7] gave {err:?}"
        );
        same(&wrong.to_vec()?, &[0; 35], || {
            "the destination of a refused copy".to_owned()
        })
    })
}
