//! The `ExecutionSpace`, `MemorySpace` and `ArrayLayout` concepts, and [`HostSpace`].

use std::alloc::Layout;
use std::fmt::Debug;
use std::io;
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::team::TeamMember;

mod records;

pub use records::{AllocationRecord, AllocationRecords};

/// Where and how kernels run (Kokkos `ExecutionSpace`).
///
/// A value is an *instance* — a pool of threads, a stream. Clones are the same instance;
/// `Default` gives the space's default instance.
///
/// # Requirements
///
/// `Clone + Default + Send + Sync + PartialEq + Debug + 'static` (the C++ concept's
/// `CopyConstructible && DefaultConstructible && Destructible`, plus `operator==` that the seed
/// asks for to make it semiregular), the associated memory, scratch and layout types, and the
/// methods below. The dispatch traits ([`ParallelFor`](crate::ParallelFor),
/// [`ParallelReduce`](crate::ParallelReduce), [`ParallelScan`](crate::ParallelScan)) are the
/// seed's `ExecutionSpaceOf` requirements, kept separate so a space can support a subset.
///
/// # Axioms
///
/// 1. *Instances are values.* `a == a.clone()`; `S::default() == S::default()`.
/// 2. *In-order execution.* Work submitted to one instance runs in submission order: a launch
///    observes every effect of the launches submitted before it to the same instance.
/// 3. *Fence.* When [`fence`](Self::fence) returns `Ok`, every launch submitted to the instance
///    before the call has completed and its effects are visible to the caller.
/// 4. *Concurrency.* [`concurrency`](Self::concurrency) is at least 1 and no more kernel
///    iterations of one launch run at the same time than it says.
/// 5. *In parallel.* [`in_parallel`](Self::in_parallel) is `true` exactly while the calling
///    thread is running a kernel of this space.
/// 6. *Team limits.* A team policy whose team size is at most
///    [`max_team_size`](Self::max_team_size) can be launched; one above it is rejected with
///    [`Error::TeamSizeTooLarge`].
/// 7. *Auto teams.* [`recommended_team_size`](Self::recommended_team_size) is at most
///    `max_team_size` (and at least 1 where that is), and a `TeamSize::Auto` policy launches
///    teams of exactly the size it gives for the policy's scratch.
///
/// ```
/// use hoplite_core::ExecutionSpace;
/// fn describe<S: ExecutionSpace>(space: &S) -> String {
///     format!("{} runs {} iterations at once", space.name(), space.concurrency())
/// }
/// # let _ = describe::<hoplite_serial::Serial>;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an execution space",
    label = "this type does not implement the ExecutionSpace concept",
    note = "an execution space implements `hoplite_core::ExecutionSpace` (see docs/writing-a-backend.md); enable a backend feature such as `serial` or `rayon` and use its space"
)]
pub trait ExecutionSpace: Clone + Default + Send + Sync + PartialEq + Debug + 'static {
    /// Where this space's kernels allocate by default.
    type MemorySpace: MemorySpace;
    /// Where team scratch memory lives.
    type ScratchMemorySpace: MemorySpace;
    /// The layout that makes the innermost loop of this space contiguous.
    type ArrayLayout: ArrayLayout;
    /// The handle a team kernel receives: league and team ranks, barriers, collectives.
    type TeamMember<'t>: TeamMember;

    /// The space's name, such as `"Serial"`.
    fn name(&self) -> &'static str;

    /// Waits until every launch submitted to this instance has completed.
    ///
    /// A device space reports an asynchronous launch failure here.
    fn fence(&self) -> Result<()>;

    /// Whether the calling thread is currently running a kernel of this space.
    fn in_parallel(&self) -> bool;

    /// How many kernel iterations of this instance can run at the same time.
    fn concurrency(&self) -> usize;

    /// The largest team size a team policy may request.
    fn max_team_size(&self) -> usize;

    /// The team size `TeamSize::Auto` launches with (Kokkos `team_size_recommended`), for a
    /// team asking for `scratch[level] = (bytes per team, bytes per thread)` of scratch at
    /// each level: what the space runs best without knowing the kernel, between 1 and
    /// [`max_team_size`](Self::max_team_size). A policy reports it as its `team_size()`, so
    /// kernels see the size the policy says.
    ///
    /// Provided as `max_team_size()`: on a host space a team's threads are workers of the
    /// pool, and more of them share a team's work. A device space whose best team is smaller
    /// than its largest (a GPU keeps more threads resident with several small blocks than
    /// with one of 1024) overrides it.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// let serial = hoplite_serial::Serial::default();
    /// assert_eq!(serial.recommended_team_size(&[(1024, 64), (0, 0)]), serial.max_team_size());
    /// ```
    fn recommended_team_size(&self, scratch: &[(usize, usize)]) -> usize {
        let _ = scratch;
        self.max_team_size()
    }

    /// The largest vector length a team policy may request (a power of two).
    fn max_vector_length(&self) -> usize;

    /// The largest scratch allocation per team at `level` (0 or 1), in bytes.
    fn max_scratch_size(&self, level: usize) -> usize;

    /// Prints the space's configuration: threads, devices, versions; more with `detail`.
    fn print_configuration(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()>;

    /// Whether every launch on this instance has completed when its launch function returns
    /// (serial, rayon: yes; a device space that enqueues kernels on a stream: no). Schedulers
    /// use it to count work as finished without a fence. Provided as `true`; an asynchronous
    /// space overrides it.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// assert!(hoplite_serial::Serial::default().synchronous_launches());
    /// ```
    fn synchronous_launches(&self) -> bool {
        true
    }

    /// The id Kokkos Tools connectors get for this instance in the begin callbacks of its
    /// kernels and fences ([`DeviceId`](crate::profiling::DeviceId): Kokkos' device type,
    /// device and instance), so that connectors that group by instance tell instances apart.
    /// Called only when a connector is loaded. The provided one is instance 1 of device 0 of
    /// type [`Unknown`](crate::profiling::DeviceType::UNKNOWN); every backend overrides it.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_core::profiling::DeviceType;
    /// let id = hoplite_serial::Serial::default().profiling_device_id();
    /// assert_eq!((id.device_type(), id.instance()), (DeviceType::SERIAL, 1));
    /// ```
    fn profiling_device_id(&self) -> crate::profiling::DeviceId {
        crate::profiling::DeviceId::new(crate::profiling::DeviceType::UNKNOWN, 0, 1)
    }

    /// Splits this instance into `weights.len()` instances whose shares of its resources are
    /// proportional to `weights` (Kokkos `partition_space`): launches on different parts may
    /// run at the same time. Weights that are negative, NaN or infinite count as zero; if none
    /// is positive the resources are split evenly.
    ///
    /// The provided implementation is for spaces whose instances cannot be divided (one
    /// thread, one device queue): it returns `weights.len()` clones of this instance, which
    /// stay one instance (launches on them run in order, axiom 2). A space that can divide its
    /// resources (a thread pool, a device with streams) overrides it.
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// use hoplite_serial::Serial;
    /// let parts = Serial::default().partition_space_weighted(&[2.0, 1.0])?;
    /// assert_eq!(parts.len(), 2);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ThreadsUnavailable`] for more than [`MAX_PARTITIONS`] parts or when the
    /// resources for the parts cannot be had.
    fn partition_space_weighted(&self, weights: &[f64]) -> Result<Vec<Self>> {
        check_partition_count(self.name(), weights.len())?;
        Ok(vec![self.clone(); weights.len()])
    }

    /// Splits this instance into `n` equal parts: [`partition_space_weighted`] with equal
    /// weights.
    ///
    /// [`partition_space_weighted`]: Self::partition_space_weighted
    ///
    /// ```
    /// use hoplite_core::ExecutionSpace;
    /// fn per_part<S: ExecutionSpace>(space: &S) -> hoplite_core::Result<Vec<usize>> {
    ///     Ok(space.partition_space(2)?.iter().map(|p| p.concurrency()).collect())
    /// }
    /// assert_eq!(per_part(&hoplite_serial::Serial::default())?, [1, 1]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`partition_space_weighted`](Self::partition_space_weighted).
    fn partition_space(&self, n: usize) -> Result<Vec<Self>> {
        // Checked before the weights are allocated: `n` may be anything.
        check_partition_count(self.name(), n)?;
        self.partition_space_weighted(&vec![1.0; n])
    }
}

/// The most parts [`ExecutionSpace::partition_space`] makes: more would only be clones or
/// one-thread pools fighting over the same cores.
pub const MAX_PARTITIONS: usize = 1 << 12;

/// Refuses a partition into more than [`MAX_PARTITIONS`] parts with a typed error, before
/// anything is allocated for the parts.
///
/// # Errors
///
/// [`Error::ThreadsUnavailable`] naming `space` when `parts` is above the limit.
pub fn check_partition_count(space: &'static str, parts: usize) -> Result<()> {
    if parts > MAX_PARTITIONS {
        return Err(Error::ThreadsUnavailable {
            space,
            requested: parts,
            started: 0,
            reason: format!("a partition into {parts} instances: at most {MAX_PARTITIONS}"),
        });
    }
    Ok(())
}

/// Where data lives (Kokkos `MemorySpace`).
///
/// # Axioms
///
/// 1. [`allocate`](Self::allocate) returns memory aligned to [`ALIGNMENT`](Self::ALIGNMENT) or
///    an [`Error::AllocationFailed`]; it never aborts the process.
/// 2. Memory from `allocate(label, n)` stays valid until `deallocate(ptr, n)`.
/// 3. A zero-byte allocation succeeds and returns an aligned, dangling pointer.
///
/// The seed also names a default execution space per memory space. That link points from the
/// core to a backend, which the crate graph does not allow, so it lives in the facade:
/// `hoplite::DefaultHostExecutionSpace` is the one for [`HostSpace`].
///
/// ```
/// use hoplite_core::{HostSpace, MemorySpace};
/// let p = HostSpace.allocate("buffer", 1024)?;
/// assert_eq!(p.as_ptr() as usize % HostSpace::ALIGNMENT, 0);
/// // SAFETY: `p` came from `allocate` with the same size and is not used afterwards.
/// unsafe { HostSpace.deallocate(p, 1024) };
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Safety
///
/// Views write into what [`allocate`](Self::allocate) returns without further checks. An
/// implementation promises that a successful `allocate(label, bytes)` (and
/// `allocate_zeroed`) returns memory valid for reads and writes of `bytes` bytes where the
/// space is accessible (host memory for a host space; for a device space, memory of its
/// device, which host code never dereferences because such a space is not
/// [`HostAccessibleSpace`]), aligned to
/// [`ALIGNMENT`](Self::ALIGNMENT) (a power of two, at least 8), not used by anything else
/// until it is passed to `deallocate`, and that `allocate_zeroed` memory reads as zeros (a
/// device space overrides it: the provided one clears the memory from the host);
/// `records` always returns the same records; [`HOST_ACCESSIBLE`](Self::HOST_ACCESSIBLE) is
/// `true` only if host threads may read and write every allocation in place; and
/// [`copy_from_host`](Self::copy_from_host) and [`copy_to_host`](Self::copy_to_host), when
/// they succeed, have copied exactly the bytes asked for (a space that is not host accessible
/// overrides them, or keeps the provided ones, which refuse).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a memory space",
    label = "this type does not implement the MemorySpace concept",
    note = "memory spaces implement `hoplite_core::MemorySpace`; `HostSpace` is the one every host backend uses"
)]
pub unsafe trait MemorySpace: Clone + Default + Send + Sync + Debug + 'static {
    /// The alignment of every allocation, in bytes (a power of two).
    const ALIGNMENT: usize;

    /// Whether host threads may dereference this space's memory: `true` exactly for the
    /// spaces that are [`HostAccessibleSpace`]. Generic view operations that work in every
    /// space ([`View::new`](crate::View::new), [`from_slice`](crate::View::from_slice),
    /// [`to_vec`](crate::View::to_vec)) read and write the memory in place when it is `true`
    /// and go through [`copy_from_host`](Self::copy_from_host) and
    /// [`copy_to_host`](Self::copy_to_host) when it is not.
    const HOST_ACCESSIBLE: bool;

    /// The space's name, such as `"HostSpace"`.
    fn name(&self) -> &'static str;

    /// Allocates `bytes` bytes, aligned to [`ALIGNMENT`](Self::ALIGNMENT).
    fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>>;

    /// Allocates `bytes` bytes set to zero. The default allocates and clears; spaces with a
    /// cheaper way (the OS hands out zeroed pages) override it.
    fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        let ptr = self.allocate(label, bytes)?;
        // SAFETY: `ptr` is valid for `bytes` bytes of writes (just allocated).
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
        Ok(ptr)
    }

    /// The name Kokkos Tools connectors get for this space (the `Kokkos_Profiling_SpaceHandle`
    /// of allocations and deep copies): Kokkos' names, which connectors match on —
    /// space-time-stack accepts `"Host"` and names that start with `"Cuda"`, `"HIP"`, `"SYCL"`
    /// or `"OpenMPTarget"`, and stops the program on any other. The provided one is `"Host"`
    /// for a host-accessible space and [`name`](Self::name) otherwise; a device backend
    /// overrides it with Kokkos' name for its space (`"Cuda"`, `"CudaUVM"`...).
    ///
    /// ```
    /// use hoplite_core::{HostSpace, MemorySpace};
    /// assert_eq!(HostSpace.profiling_name(), "Host");
    /// ```
    fn profiling_name(&self) -> &'static str {
        if Self::HOST_ACCESSIBLE {
            "Host"
        } else {
            self.name()
        }
    }

    /// The records of this space's live tracked allocations (those of views).
    fn records(&self) -> &'static AllocationRecords;

    /// Where this memory is: the ordinal of the accelerator whose memory it is, `None` for
    /// memory of the host. Runtimes that place work by its data (the implicit DAG) run a
    /// launch on views of this space where their memory is.
    ///
    /// ```
    /// use hoplite_core::{HostSpace, MemorySpace};
    /// assert_eq!(HostSpace.location(), None);
    /// ```
    fn location(&self) -> Option<usize> {
        None
    }

    /// Prints the live tracked allocations and the byte totals (Kokkos `print_records`).
    fn print_records(&self, out: &mut dyn io::Write, detail: bool) -> io::Result<()> {
        self.records().print(out, self.name(), detail)
    }

    /// Bytes of tracked allocations currently live in this space.
    fn current_bytes(&self) -> usize {
        self.records().current_bytes()
    }

    /// The most bytes of tracked allocations ever live at once in this space.
    fn high_water_bytes(&self) -> usize {
        self.records().high_water_bytes()
    }

    /// Copies `bytes` bytes from host memory at `src` into this space's memory at `dst` (Kokkos'
    /// `deep_copy` from a host mirror), waiting until the copy is done. The default copies
    /// with the host when [`HOST_ACCESSIBLE`](Self::HOST_ACCESSIBLE) and otherwise refuses
    /// with [`Error::Device`]: a space the host cannot dereference overrides it with its
    /// device's copy.
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of `bytes` bytes; `dst` points into an allocation of an equal
    /// space, valid for `bytes` bytes, that nothing else uses during the call.
    unsafe fn copy_from_host(&self, dst: NonNull<u8>, src: *const u8, bytes: usize) -> Result<()> {
        if !Self::HOST_ACCESSIBLE {
            return Err(no_host_copy(self.name()));
        }
        // SAFETY: the caller promises both ranges are valid and unshared; host-accessible
        // memory is host memory of this process.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_ptr(), bytes) };
        Ok(())
    }

    /// Copies `bytes` bytes of this space's memory at `src` into host memory at `dst`, waiting
    /// until the copy is done; the counterpart of [`copy_from_host`](Self::copy_from_host),
    /// with the same default.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `bytes` bytes; `src` points into an allocation of an equal
    /// space, valid for `bytes` bytes, that nothing writes during the call.
    unsafe fn copy_to_host(&self, dst: *mut u8, src: NonNull<u8>, bytes: usize) -> Result<()> {
        if !Self::HOST_ACCESSIBLE {
            return Err(no_host_copy(self.name()));
        }
        // SAFETY: as in `copy_from_host`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, bytes) };
        Ok(())
    }

    /// Frees memory from [`allocate`](Self::allocate) or [`allocate_zeroed`](Self::allocate_zeroed).
    ///
    /// # Safety
    ///
    /// `ptr` came from `self.allocate(_, bytes)` of an equal space with the same `bytes`, and is
    /// not used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize);
}

/// How memory spaces relate (Kokkos `MemorySpaceAccess`): implemented for `Self` as the
/// destination and `Src` as the source.
///
/// # Axioms
///
/// `ASSIGNABLE` implies `ACCESSIBLE`; `ACCESSIBLE` implies `DEEPCOPY`; every space is
/// assignable from itself.
///
/// ```
/// use hoplite_core::{HostSpace, MemorySpaceAccess};
/// assert!(<HostSpace as MemorySpaceAccess<HostSpace>>::ACCESSIBLE);
/// ```
///
/// # Safety
///
/// Code that runs where `Self` is accessible dereferences `Src` memory when `ACCESSIBLE` is
/// true, and views of `Src` are assigned to views of `Self` when `ASSIGNABLE` is true. An
/// implementation promises that these constants are true only when it is so: `Src`
/// allocations are addressable (same address space) from where `Self` memory is, and for
/// `ASSIGNABLE` also that they are laid out the same.
#[diagnostic::on_unimplemented(
    message = "no MemorySpaceAccess relation from `{Src}` to `{Self}`",
    note = "the backend that defines these spaces states how they relate by implementing `MemorySpaceAccess`"
)]
pub unsafe trait MemorySpaceAccess<Src: MemorySpace>: MemorySpace {
    /// A view of `Src` can be assigned to a view of `Self` (same address space and layout).
    const ASSIGNABLE: bool;
    /// Code running where `Self` is accessible can dereference `Src` memory.
    const ACCESSIBLE: bool;
    /// `deep_copy` from `Src` into `Self` is implemented.
    const DEEPCOPY: bool;
}

/// The ordinary host heap, aligned to a cache line (64 bytes).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct HostSpace;

// SAFETY: allocations come from the global allocator with the size and `ALIGNMENT` (64)
// asked for, or are an aligned dangling pointer for zero bytes; zeroed ones from
// `alloc_zeroed`; the records are one static.
unsafe impl MemorySpace for HostSpace {
    const ALIGNMENT: usize = 64;
    const HOST_ACCESSIBLE: bool = true;

    fn name(&self) -> &'static str {
        "HostSpace"
    }

    fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        host_allocate(label, bytes, std::alloc::alloc)
    }

    fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        // Large zeroed allocations come straight from the OS as untouched pages, so the first
        // touch is the first kernel's.
        host_allocate(label, bytes, std::alloc::alloc_zeroed)
    }

    fn records(&self) -> &'static AllocationRecords {
        static HOST_RECORDS: AllocationRecords = AllocationRecords::new();
        &HOST_RECORDS
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
        if bytes == 0 {
            return;
        }
        // The layout was valid when the same `bytes` were allocated, so it is valid now.
        if let Ok(layout) = Layout::from_size_align(bytes, Self::ALIGNMENT) {
            // SAFETY: the caller guarantees `ptr` came from `allocate` with this size, which
            // used exactly this layout.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}

/// The error of a host copy that a space the host cannot dereference did not provide.
#[cold]
fn no_host_copy(space: &'static str) -> Error {
    Error::Device {
        space,
        reason: "this memory space does not copy to or from the host; its backend must implement `MemorySpace::copy_from_host` and `copy_to_host`".to_owned(),
    }
}

/// Allocates `bytes` bytes aligned to [`HostSpace::ALIGNMENT`] with `alloc` (the global
/// allocator's `alloc` or `alloc_zeroed`); zero bytes give an aligned dangling pointer.
fn host_allocate(label: &str, bytes: usize, alloc: unsafe fn(Layout) -> *mut u8) -> Result<NonNull<u8>> {
    let fail = |reason: String| Error::AllocationFailed {
        label: label.to_owned(),
        bytes,
        space: "HostSpace",
        reason,
    };
    if bytes == 0 {
        return Ok(dangling_aligned(HostSpace::ALIGNMENT));
    }
    let layout = Layout::from_size_align(bytes, HostSpace::ALIGNMENT)
        .map_err(|e| fail(format!("invalid size: {e}")))?;
    // SAFETY: `layout` has a non-zero size (checked above), as both global allocator functions
    // passed here require.
    let ptr = unsafe { alloc(layout) };
    NonNull::new(ptr).ok_or_else(|| fail("out of memory".to_owned()))
}

// SAFETY: a space is accessible from and assignable to itself.
unsafe impl MemorySpaceAccess<HostSpace> for HostSpace {
    const ASSIGNABLE: bool = true;
    const ACCESSIBLE: bool = true;
    const DEEPCOPY: bool = true;
}

/// An aligned, dangling, non-null pointer: what a zero-byte allocation returns.
fn dangling_aligned(align: usize) -> NonNull<u8> {
    NonNull::new(std::ptr::without_provenance_mut(align)).unwrap_or(NonNull::dangling())
}

/// How a multi-dimensional array maps indices to memory (Kokkos `MemoryLayout`).
///
/// A view stores one stride per dimension; the layout says which strides are fixed, so the
/// compiler can drop a multiplication (`LayoutRight`'s last stride is always 1) and so the
/// innermost loop vectorizes.
///
/// # Axioms
///
/// 1. The strides from [`strides`](Self::strides) describe a bijection between the index space
///    of the extents and `0..product(extents)`, and [`accepts`](Self::accepts) them.
/// 2. [`offset`](Self::offset) equals `sum(index[d] * strides[d])` for strides it accepts.
///
/// ```
/// use hoplite_core::{ArrayLayout, LayoutLeft, LayoutRight};
/// let mut s = [0; 3];
/// LayoutRight::strides(&[2, 3, 4], &mut s);
/// assert_eq!(s, [12, 4, 1]);
/// assert_eq!(LayoutRight::offset(&s, &[1, 2, 3]), 23);
/// LayoutLeft::strides(&[2, 3, 4], &mut s);
/// assert_eq!(s, [1, 2, 6]);
/// ```
///
/// # Safety
///
/// Handles check an index against the view's extents and then load or store at
/// `offset(strides, index)` without further checks, and writers rely on distinct indices
/// having distinct offsets. Views get their strides from [`strides`](Self::strides) or derive
/// them from a parent's by subviewing, which keeps the sum formula inside the parent's
/// allocation and injective. An implementation promises axioms 1 and 2 exactly: `strides`
/// writes strides for which the sum formula is a bijection onto `0..product(extents)`, and
/// `offset` computes the sum formula (nothing else) for every stride set it accepts.
pub unsafe trait ArrayLayout: Copy + Default + Send + Sync + Debug + 'static {
    /// The layout's name.
    const NAME: &'static str;

    /// Writes the element stride of each dimension for a contiguous array of `extents`.
    ///
    /// `strides` must have the same length as `extents`.
    fn strides(extents: &[usize], strides: &mut [usize]);

    /// Whether a view with these strides has this layout (the fixed strides are right).
    fn accepts(strides: &[usize]) -> bool;

    /// The element offset of `index`.
    fn offset<const R: usize>(strides: &[usize; R], index: &[usize; R]) -> usize;
}

/// Row-major: the last index is contiguous (C, Kokkos host default). Other strides may be
/// padded, as for a row of a larger matrix.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct LayoutRight;

/// Column-major: the first index is contiguous (Fortran, Kokkos device default).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct LayoutLeft;

/// Any strides (Kokkos `LayoutStride`): what a general subview has.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct LayoutStride;

// SAFETY: `offset` is the sum of index times stride with the last stride fixed at 1 (which
// `accepts` checks); `strides` gives the contiguous row-major strides, a bijection.
unsafe impl ArrayLayout for LayoutRight {
    const NAME: &'static str = "LayoutRight";

    fn strides(extents: &[usize], strides: &mut [usize]) {
        let mut s = 1;
        for (stride, extent) in strides.iter_mut().zip(extents).rev() {
            *stride = s;
            s = s.saturating_mul(*extent);
        }
    }

    fn accepts(strides: &[usize]) -> bool {
        strides.last().is_none_or(|&s| s == 1)
    }

    #[inline(always)]
    fn offset<const R: usize>(strides: &[usize; R], index: &[usize; R]) -> usize {
        if R == 0 {
            return 0;
        }
        let mut off = index[R - 1];
        for d in 0..R - 1 {
            off += index[d] * strides[d];
        }
        off
    }
}

// SAFETY: as for `LayoutRight`, mirrored: the first stride is fixed at 1.
unsafe impl ArrayLayout for LayoutLeft {
    const NAME: &'static str = "LayoutLeft";

    fn strides(extents: &[usize], strides: &mut [usize]) {
        let mut s = 1;
        for (stride, extent) in strides.iter_mut().zip(extents) {
            *stride = s;
            s = s.saturating_mul(*extent);
        }
    }

    fn accepts(strides: &[usize]) -> bool {
        strides.first().is_none_or(|&s| s == 1)
    }

    #[inline(always)]
    fn offset<const R: usize>(strides: &[usize; R], index: &[usize; R]) -> usize {
        if R == 0 {
            return 0;
        }
        let mut off = index[0];
        for d in 1..R {
            off += index[d] * strides[d];
        }
        off
    }
}

// SAFETY: `offset` is exactly the sum of index times stride; `strides` are `LayoutRight`'s.
unsafe impl ArrayLayout for LayoutStride {
    const NAME: &'static str = "LayoutStride";

    /// Contiguous row-major strides, the default shape of a new strided view.
    fn strides(extents: &[usize], strides: &mut [usize]) {
        LayoutRight::strides(extents, strides)
    }

    fn accepts(_strides: &[usize]) -> bool {
        true
    }

    #[inline(always)]
    fn offset<const R: usize>(strides: &[usize; R], index: &[usize; R]) -> usize {
        let mut off = 0;
        for d in 0..R {
            off += index[d] * strides[d];
        }
        off
    }
}

/// A memory space whose memory the host can read and write directly.
///
/// Host-to-host copies of views in such spaces are plain element loops; device backends add
/// their own `deep_copy` paths for the spaces the host cannot touch.
///
/// # Safety
///
/// Host guards, `deep_copy`, mirrors and host kernels dereference the memory of views in such
/// spaces on host threads. An implementation promises that every allocation of the space is
/// ordinary memory of this process that host threads may read and write (not device memory,
/// not a mapping that can go away while the allocation lives), and that
/// [`MemorySpace::HOST_ACCESSIBLE`] is `true` (`View::host_read` and `host_write` check it at
/// compile time).
pub unsafe trait HostAccessibleSpace: MemorySpace + MemorySpaceAccess<HostSpace> {}

// SAFETY: `HostSpace` allocates from the global allocator: host memory of this process.
unsafe impl HostAccessibleSpace for HostSpace {}

/// An execution space whose launches take handles of views in memory space `M` (Kokkos
/// `SpaceAccessibility<ExecSpace, MemSpace>::accessible`).
///
/// Every space takes handles of host-accessible memory; a device backend states which device
/// memory its kernels reach. So a view of device memory in a launch on a host space is a
/// compile error. A device space gets host views as [`DeviceHandle`]s and decides at launch
/// whether its device reaches them (pinned or managed memory, or a GPU that addresses host
/// memory), refusing them with a typed error otherwise.
///
/// [`DeviceHandle`]: crate::device_kernel::DeviceHandle
///
/// ```
/// use hoplite_core::{HostSpace, SpaceAccessibility};
/// fn reaches<E: SpaceAccessibility<HostSpace>>() {}
/// reaches::<hoplite_serial::Serial>();
/// ```
///
/// # Safety
///
/// Host backends bind the handles of a `(policy, handles)` launch and dereference them on
/// host threads, so only memory host threads may touch may be reachable from a space whose
/// kernels run on the host: an implementation for a memory space that is not
/// [`HostAccessibleSpace`] promises that `Self`'s kernels never run on host threads and that
/// the device they run on can address every allocation of `M` while it lives.
#[diagnostic::on_unimplemented(
    message = "launches on `{Self}` cannot take views of `{M}`",
    label = "a handle of a view this space cannot reach",
    note = "host spaces take views of host memory, device spaces views of their device's memory: copy the view into a space the launch's space reaches (`deep_copy`, `create_mirror_view`)"
)]
pub unsafe trait SpaceAccessibility<M: MemorySpace>: ExecutionSpace {}

// SAFETY: host-accessible memory is ordinary memory of this process (`HostAccessibleSpace`),
// which host threads may dereference; a device backend checks host views at launch (the
// dispatch traits' contract).
unsafe impl<E: ExecutionSpace, M: HostAccessibleSpace> SpaceAccessibility<M> for E {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri stops at an allocation it cannot make instead of returning null"
    )]
    fn host_allocation_is_aligned_and_huge_requests_fail_cleanly() {
        let p = HostSpace.allocate("a", 100).expect("100 bytes");
        assert_eq!(p.as_ptr() as usize % 64, 0);
        // SAFETY: allocated just above with 100 bytes, not used again.
        unsafe { HostSpace.deallocate(p, 100) };

        let zero = HostSpace.allocate("z", 0).expect("zero bytes");
        assert_eq!(zero.as_ptr() as usize % 64, 0);
        // SAFETY: a zero-byte allocation; deallocate is a no-op for it.
        unsafe { HostSpace.deallocate(zero, 0) };

        let err = HostSpace
            .allocate("huge", 1 << 62)
            .expect_err("2^62 bytes must fail");
        let msg = err.to_string();
        assert!(
            msg.contains("huge") && msg.contains(&(1usize << 62).to_string()),
            "{msg}"
        );
        let err = HostSpace.allocate("overflow", usize::MAX).expect_err("must fail");
        assert!(matches!(
            err,
            Error::AllocationFailed {
                bytes: usize::MAX,
                ..
            }
        ));
    }
}
