//! The one error type of hoplite: every misuse and every failed launch is a value of [`Error`].

/// Short for `std::result::Result<T, hoplite_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, with the label of the launch or allocation, the offending value and the limit.
///
/// Every message says what to change. The enum is `#[non_exhaustive]`: backends and later
/// versions add variants (a device error, a transfer failure) without breaking matches.
///
/// ```
/// use hoplite_core::Error;
/// let e = Error::InvalidRange { label: "axpy".into(), dim: None, begin: 5, end: 3 };
/// assert!(e.to_string().contains("begin 5"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A range (or one dimension of a multi-dimensional range) starts after it ends.
    #[error(
        "`{label}`: range begin {begin} is greater than end {end}{}; a range needs begin <= end",
        dim_suffix(*dim)
    )]
    InvalidRange {
        /// Label of the launch.
        label: String,
        /// Dimension of an MDRange, `None` for a one-dimensional range.
        dim: Option<usize>,
        /// The requested begin.
        begin: usize,
        /// The requested end.
        end: usize,
    },
    /// A tile extent of an MDRange is zero.
    #[error("`{label}`: tile extent 0 in dimension {dim}; every tile extent must be at least 1")]
    ZeroTile {
        /// Label of the launch.
        label: String,
        /// The dimension whose tile is zero.
        dim: usize,
    },
    /// A chunk size of zero was requested.
    #[error("`{label}`: chunk size 0; a chunk size must be at least 1 (leave it unset for the default)")]
    ZeroChunk {
        /// Label of the launch.
        label: String,
    },
    /// A desired occupancy outside 1 to 100 percent.
    #[error(
        "`{label}`: desired occupancy {percent}%; it is a share of the device from 1 to 100 percent (leave it unset for the whole device)"
    )]
    InvalidOccupancy {
        /// Label of the launch.
        label: String,
        /// The percentage asked for.
        percent: u8,
    },
    /// A multi-dimensional argument has the wrong number of entries for the policy's rank.
    #[error("{what}: rank mismatch, expected {expected} entries (the policy's rank) but got {found}")]
    RankMismatch {
        /// What was being built (e.g. "MDRangePolicy tiles").
        what: String,
        /// The rank the policy has.
        expected: usize,
        /// The number of entries given.
        found: usize,
    },
    /// A team size above the backend's limit.
    #[error(
        "`{label}`: team size {requested} exceeds the maximum team size {max} of the `{space}` execution space; request at most {max} or use TeamSize::Auto"
    )]
    TeamSizeTooLarge {
        /// Label of the launch.
        label: String,
        /// The team size asked for.
        requested: usize,
        /// The largest team size the space supports for this policy.
        max: usize,
        /// The execution space's name.
        space: &'static str,
    },
    /// A vector length above the backend's limit (or not a power of two).
    #[error(
        "`{label}`: vector length {requested} is not supported by the `{space}` execution space; use a power of two no larger than {max}"
    )]
    InvalidVectorLength {
        /// Label of the launch.
        label: String,
        /// The vector length asked for.
        requested: usize,
        /// The largest vector length the space supports.
        max: usize,
        /// The execution space's name.
        space: &'static str,
    },
    /// A team policy asked for a team size of zero.
    #[error(
        "`{label}`: team size 0; a team has at least one thread (use TeamSize::Auto to let the backend choose)"
    )]
    ZeroTeamSize {
        /// Label of the launch.
        label: String,
    },
    /// Scratch memory asked for at a level the space does not have.
    #[error("`{label}`: scratch level {level} does not exist; levels are 0 (fast, small) and 1 (large)")]
    InvalidScratchLevel {
        /// Label of the launch.
        label: String,
        /// The level asked for.
        level: usize,
    },
    /// More scratch memory than the space offers at that level.
    #[error("`{label}`: {requested} bytes of level-{level} scratch per team exceed the limit of {max} bytes")]
    ScratchTooLarge {
        /// Label of the launch.
        label: String,
        /// The scratch level.
        level: usize,
        /// Bytes per team asked for (team part plus team size times the thread part).
        requested: usize,
        /// The largest amount the space offers.
        max: usize,
    },
    /// A policy cannot be converted into another kind.
    #[error("cannot convert {from} into {to}: {reason}")]
    PolicyConversion {
        /// The source policy.
        from: &'static str,
        /// The target policy.
        to: &'static str,
        /// Why not, and what to do instead.
        reason: String,
    },
    /// A user kernel panicked. The runtime is still usable.
    #[error("`{label}`: a kernel panicked: {message}")]
    KernelPanicked {
        /// Label of the launch.
        label: String,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// An allocation could not be made.
    #[error("allocation `{label}` of {bytes} bytes in {space} failed: {reason}")]
    AllocationFailed {
        /// Label of the allocation.
        label: String,
        /// Bytes requested.
        bytes: usize,
        /// Name of the memory space.
        space: &'static str,
        /// Why (out of memory, size overflow, bad alignment).
        reason: String,
    },
    /// A unique-token pool of size zero, or one larger than the space allows.
    #[error("unique token of size {requested} for `{space}`: {reason}")]
    InvalidTokenSize {
        /// The size asked for.
        requested: usize,
        /// The execution space's name.
        space: &'static str,
        /// The rule that was broken.
        reason: String,
    },
    /// A handle conflicts with a live handle of the same data (one writer or many readers).
    #[error(
        "{kind} of view `{label}` conflicts with a live {other_kind} of view `{other_label}` over the same elements; drop one handle first (one writer or many readers, and atomic handles only beside atomic handles)"
    )]
    BorrowConflict {
        /// Label of the view whose handle was asked for.
        label: String,
        /// What was asked for: "reader", "writer" or "atomic handle".
        kind: &'static str,
        /// Label of the view holding the conflicting handle.
        other_label: String,
        /// What it holds.
        other_kind: &'static str,
    },
    /// A launch iterates past the extent of a view handed to it.
    #[error(
        "`{label}`: the launch covers indices up to {end} in dimension {dim}, past the extent {extent} of view `{view}`; if the kernel reads that view only at indices it computes (a coefficient table, a gather), hand it over as `view.lookup()`, which checks each access instead"
    )]
    OutOfExtent {
        /// Label of the launch.
        label: String,
        /// Label of the view.
        view: String,
        /// The dimension.
        dim: usize,
        /// One past the largest index the launch visits in that dimension.
        end: usize,
        /// The view's extent there.
        extent: usize,
    },
    /// An MDRange bound lies below the policy's origin or past `usize::MAX` once shifted.
    #[error(
        "`{label}`: MDRange bound {bound} in dimension {dim} is outside the index space of origin {origin}: tokens index views from 0, so bounds must satisfy origin <= bound <= origin + usize::MAX; for negative lower bounds (ghost cells) set `.with_origin(..)` to the logical index of the views' element 0"
    )]
    BoundOutsideIndexSpace {
        /// Label of the launch.
        label: String,
        /// The dimension.
        dim: usize,
        /// The bound as given (saturated to the `i64` range).
        bound: i64,
        /// The origin of that dimension (saturated to the `i64` range).
        origin: i64,
    },
    /// An MDRange bound or origin that no `i128` holds (a `u128` past `i128::MAX`): the index
    /// space it names cannot be represented, so the launch is refused rather than run over a
    /// saturated box.
    #[error(
        "`{label}`: MDRange {what} {value} in dimension {dim} is past i128::MAX, so its index space cannot be represented; give bounds and origins within the i128 range"
    )]
    BoundNotRepresentable {
        /// Label of the launch.
        label: String,
        /// The dimension.
        dim: usize,
        /// `"begin"`, `"end"` or `"origin"`.
        what: &'static str,
        /// The value as given.
        value: String,
    },
    /// The writer of a rank-0 view was handed to a launch of more than one iteration: every
    /// iteration's token would store the one element, a data race.
    #[error(
        "`{label}`: the writer of rank-0 view `{view}` was handed to a launch of {iterations} iterations; each could store its one element at once. Store it from a launch of one iteration (`parallel_for(label, (1, (v.write(),)), ..)`), reduce into it (`parallel_reduce_into`), or use an atomic handle (`v.atomic()`)"
    )]
    ScalarWriterInWideLaunch {
        /// Label of the launch.
        label: String,
        /// Label of the view.
        view: String,
        /// How many iterations the launch has.
        iterations: usize,
    },
    /// Two views that must have the same extents do not.
    #[error("{what}: extents {left:?} of `{left_label}` and {right:?} of `{right_label}` differ")]
    ExtentMismatch {
        /// The operation (e.g. "deep_copy").
        what: &'static str,
        /// Label of the first view.
        left_label: String,
        /// Its extents.
        left: Vec<usize>,
        /// Label of the second view.
        right_label: String,
        /// Its extents.
        right: Vec<usize>,
    },
    /// A subview or index range outside a view.
    #[error("view `{label}`: {what} {begin}..{end} is outside the extent {extent} of dimension {dim}")]
    SubviewOutOfBounds {
        /// Label of the view.
        label: String,
        /// What was asked ("range" or "index").
        what: &'static str,
        /// The dimension.
        dim: usize,
        /// Start asked for.
        begin: usize,
        /// End asked for.
        end: usize,
        /// The extent of that dimension.
        extent: usize,
    },
    /// Strides that would map two indices to one element, or a shape too large to address.
    #[error("view `{label}`: {reason}")]
    InvalidLayout {
        /// Label of the view.
        label: String,
        /// What is wrong with the extents or strides.
        reason: String,
    },
    /// A policy whose index arithmetic does not fit in `usize`: more points or tiles than
    /// `usize` counts, or a tile reaching past `usize::MAX`.
    #[error("`{label}`: {reason}; make the index space or its tiles smaller")]
    IndexSpaceTooLarge {
        /// Label of the launch.
        label: String,
        /// Which count overflows, with the numbers.
        reason: String,
    },
    /// An instance could not get the threads it was asked for (too many, or the operating
    /// system refused to start one). Nothing is kept: the threads started are stopped again.
    #[error("`{space}` instance of {requested} threads: {reason}; ask for fewer threads")]
    ThreadsUnavailable {
        /// The execution space's name.
        space: &'static str,
        /// The number of threads asked for.
        requested: usize,
        /// How many had been started when it failed (all of them are stopped).
        started: usize,
        /// Why: the limit, or the operating system's error.
        reason: String,
    },
    /// A device backend could not do what was asked: no driver or device, a failed driver
    /// call, a kernel that did not compile. The backend's own error type has the details;
    /// this carries its message.
    #[error("{space}: {reason}")]
    Device {
        /// The execution or memory space's name, such as `"Cuda"`.
        space: &'static str,
        /// What failed and how to fix it (the backend error's message).
        reason: String,
    },
    /// The Kokkos Tools connector that `KOKKOS_TOOLS_LIBS` names (its first library) could
    /// not be loaded. Profiling stays off and the program runs as without the variable.
    #[error(
        "Kokkos Tools connector `{path}` (the first library of KOKKOS_TOOLS_LIBS) could not be loaded: {reason}; give the connector's path (for example /opt/kokkos-tools/lib/libkp_kernel_timer.so) or unset KOKKOS_TOOLS_LIBS"
    )]
    ToolLoad {
        /// The library as the variable names it.
        path: String,
        /// Why it did not load (the dynamic loader's message).
        reason: String,
    },
    /// Kokkos Tools were asked to initialize after they were finalized: a connector is loaded
    /// once per process, and finalizing it wrote its report.
    #[error(
        "the Kokkos Tools connector was already finalized (hoplite::finalize); a connector is loaded once per process, so call hoplite::initialize before hoplite::finalize"
    )]
    ToolsFinalized,
    /// A file could not be written (a trace): which, and the I/O error (its source).
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        #[source]
        source: IoError,
    },
    /// A launch on a device space whose kernel is not a `#[kernel]`: a device runs no
    /// closures, only the CUDA C that `#[kernel]` generates.
    #[error(
        "`{label}`: `{space}` runs only `#[kernel]` kernels, and this kernel is a closure; write it as a `#[kernel]` fn and pass `name::with(captures..)` as the kernel"
    )]
    NotADeviceKernel {
        /// The launch's label.
        label: String,
        /// The device space's name, such as `"Cuda"`.
        space: &'static str,
    },
    /// An error of one of hoplite's runtimes (an explicit graph, the implicit DAG, dynamic
    /// selection) that is not an [`Error`] itself, converted so that `?` takes every hoplite
    /// error into a [`Result`]; the runtime's typed error is the source
    /// ([`RuntimeError::downcast_ref`]).
    #[error("{runtime}: {source}")]
    Runtime {
        /// Which runtime: `"graph"`, `"DAG"` or `"selection"`.
        runtime: &'static str,
        /// The runtime's own error.
        #[source]
        source: RuntimeError,
    },
}

/// A runtime's own error inside [`Error::Runtime`]: shared (so the error stays `Clone`), and
/// compared by its message.
///
/// ```
/// use hoplite_core::{Error, RuntimeError};
/// #[derive(Debug)]
/// struct Stalled;
/// impl std::fmt::Display for Stalled {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("no progress")
///     }
/// }
/// impl std::error::Error for Stalled {}
/// let e = Error::Runtime { runtime: "DAG", source: RuntimeError::new(Stalled) };
/// assert_eq!(e.to_string(), "DAG: no progress");
/// let Error::Runtime { source, .. } = &e else { unreachable!() };
/// assert!(source.downcast_ref::<Stalled>().is_some());
/// ```
#[derive(Debug, Clone)]
pub struct RuntimeError(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl RuntimeError {
    /// Wraps a runtime's error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        RuntimeError(std::sync::Arc::new(error))
    }

    /// The runtime's error as its own type, if it is a `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl PartialEq for RuntimeError {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for RuntimeError {}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

fn dim_suffix(dim: Option<usize>) -> String {
    dim.map(|d| format!(" in dimension {d}")).unwrap_or_default()
}

impl Error {
    /// Turns a caught panic payload into [`Error::KernelPanicked`].
    ///
    /// ```
    /// let payload = std::panic::catch_unwind(|| panic!("boom")).unwrap_err();
    /// let e = hoplite_core::Error::from_panic("k", payload);
    /// assert_eq!(e.to_string(), "`k`: a kernel panicked: boom");
    /// ```
    pub fn from_panic(label: &str, payload: Box<dyn std::any::Any + Send>) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&'static str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_owned()
        };
        drop_panic_payload(payload);
        Error::KernelPanicked {
            label: label.to_owned(),
            message,
        }
    }
}

/// Drops a caught panic payload without letting its `Drop` unwind into the caller.
///
/// A payload is any `Send` value a kernel passed to `panic_any`, and its `Drop` may panic
/// too. Dropping it where a runtime keeps its promises (a pool worker between a kernel and
/// its completion signal, a launch turning a panic into [`Error::KernelPanicked`]) would let
/// that second panic escape: a lost worker, a hung launch, a panic out of a call that
/// returns `Result`. This drops the payload inside `catch_unwind`; if its `Drop` panics, the
/// new payload is leaked (dropping it could panic again, without end).
///
/// ```
/// struct Nasty;
/// impl Drop for Nasty {
///     fn drop(&mut self) {
///         panic!("a payload that panics when dropped");
///     }
/// }
/// # std::panic::set_hook(Box::new(|_| {}));
/// let payload = std::panic::catch_unwind(|| std::panic::panic_any(Nasty)).unwrap_err();
/// hoplite_core::drop_panic_payload(payload); // returns normally
/// ```
pub fn drop_panic_payload(payload: Box<dyn std::any::Any + Send>) {
    if let Err(second) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(second);
    }
}

/// An I/O error as [`Error::Io`] (and hoplite-dag's `DagError::Io`) keeps it: shared, so that
/// the error stays `Clone`, and compared by kind and message, so that it stays `Eq`.
/// [`io`](Self::io) gives the original.
///
/// ```
/// use hoplite_core::IoError;
/// let e = IoError::from(std::io::Error::new(std::io::ErrorKind::NotFound, "no such folder"));
/// assert_eq!(e.io().kind(), std::io::ErrorKind::NotFound);
/// assert_eq!(e.to_string(), "no such folder");
/// ```
#[derive(Debug, Clone)]
pub struct IoError(std::sync::Arc<std::io::Error>);

impl IoError {
    /// The original I/O error.
    pub fn io(&self) -> &std::io::Error {
        &self.0
    }
}

impl From<std::io::Error> for IoError {
    fn from(e: std::io::Error) -> Self {
        IoError(std::sync::Arc::new(e))
    }
}

impl PartialEq for IoError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for IoError {}

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for IoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
