// Over 800 lines: the connector's one protocol (loading, the C entry points, the dispatch of
// every event with its fast no-connector path) and the profiling API built on it.
//! Profiling through Kokkos Tools connectors, and the profiling API (Kokkos'
//! `Kokkos::Profiling`).
//!
//! A program that sets `KOKKOS_TOOLS_LIBS` to a Kokkos Tools connector (the simple kernel
//! timer `libkp_kernel_timer.so`, `libkp_space_time_stack.so`, the memory-events and NVTX
//! connectors, Caliper, TAU, APEX...) gets hoplite's kernels, allocations, deep copies,
//! fences, regions, sections and events in that connector's reports, with no rebuild. The
//! connector is loaded at the first event, or at [`initialize_tools`] (`hoplite::initialize`
//! in the facade), and finalized at [`finalize_tools`] or at process exit.
//!
//! | Kokkos                                  | hoplite                                   |
//! |-----------------------------------------|-------------------------------------------|
//! | `Kokkos::Profiling::pushRegion(name)`   | [`push_region`]                           |
//! | `Kokkos::Profiling::popRegion()`        | [`pop_region`]                            |
//! | `Kokkos::Profiling::ScopedRegion`       | [`ScopedRegion`]                          |
//! | `Kokkos::Profiling::ProfilingSection`   | [`Section`]                               |
//! | `Kokkos::Profiling::markEvent(name)`    | [`mark_event`]                            |
//! | `Kokkos::Tools::declareMetadata(k, v)`  | [`declare_metadata`]                      |
//!
//! Every launch — eager, a graph node's, a DAG vertex's — calls the connector's
//! `kokkosp_begin_parallel_{for,reduce,scan}` with its label and its instance's [`DeviceId`]
//! and the matching `end` when it returns; views call `kokkosp_allocate_data` and
//! `kokkosp_deallocate_data`; `deep_copy`, `deep_copy_fill` and `deep_copy_on` call
//! `kokkosp_begin_deep_copy`/`end_deep_copy`; `ExecutionSpace::fence` calls
//! `kokkosp_begin_fence`/`end_fence`. `docs/profiling.md` shows the real connectors' output.
//!
//! Without a connector every hook costs one relaxed atomic load and a compare.
//!
//! ```
//! use hoplite_core::profiling::{ScopedRegion, Section, mark_event};
//! use hoplite_core::{RangePolicy, Sum, parallel_reduce};
//! use hoplite_serial::Serial;
//!
//! let _solve = ScopedRegion::new("solve"); // popped when dropped
//! let section = Section::new("iterations");
//! for _ in 0..3 {
//!     section.start();
//!     let s = parallel_reduce("sum", RangePolicy::new(Serial::default(), 0..100), |i, acc| *acc += *i, Sum::<usize>::new())?;
//!     assert_eq!(s, 4950);
//!     section.stop();
//! }
//! mark_event("converged");
//! # Ok::<(), hoplite_core::Error>(())
//! ```

mod ffi;
mod tools;
mod trace;

use std::ffi::c_void;
use std::fmt;

use crate::error::Result;
use tools::{c_name, may_be_on, tool};

/// Whether a hook must look for the connector: false exactly when there is none (a relaxed
/// load and a compare, step 1 of the protocol in `tools`).
#[inline(always)]
pub(crate) fn hooks_may_run() -> bool {
    may_be_on()
}

/// Loads the connector that `KOKKOS_TOOLS_LIBS` names (the first library of the
/// `;`-separated list, as Kokkos does) and initializes it, unless that already happened. A
/// program need not call it — the first launch, allocation, fence or region does the same —
/// but here a connector that fails to load is a typed error, where a first use prints it on
/// standard error and runs without profiling. With the variable unset or empty it does
/// nothing. Applications call the facade's `hoplite::initialize`, which also lets connectors
/// fence the default instances.
///
/// ```
/// hoplite_core::profiling::initialize_tools()?;
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::ToolLoad`](crate::Error::ToolLoad) naming the library and why it did not load
/// (also when a first use met the failure before); [`Error::ToolsFinalized`] after
/// [`finalize_tools`].
///
/// [`Error::ToolsFinalized`]: crate::Error::ToolsFinalized
pub fn initialize_tools() -> Result<()> {
    tools::initialize()
}

/// Starts the built-in trace connector: from now on every launch (eager, a graph node's, a DAG
/// vertex's, a device's), fence, deep copy, allocation, region, section and event is recorded,
/// to be written as a Chrome Trace Event Format file by [`write_trace`] (ui.perfetto.dev and
/// `chrome://tracing` open it): one row per execution-space instance for its kernels and
/// fences, one per host thread for regions, sections and copies. It takes the place of a
/// connector library, on the same callbacks; `HOPLITE_TRACE=file` in the environment (with no
/// `KOKKOS_TOOLS_LIBS`) starts it at the first event and writes the file at finalization.
/// Starting it again starts a new recording.
///
/// ```no_run
/// use hoplite_core::profiling::{ScopedRegion, start_trace, write_trace};
/// use hoplite_core::{RangePolicy, parallel_for};
/// use hoplite_serial::Serial;
/// start_trace()?;
/// {
///     let _solve = ScopedRegion::new("solve");
///     parallel_for("fill", RangePolicy::new(Serial::default(), 0..100), |_| {})?;
/// }
/// write_trace("trace.json")?;
/// # Ok::<(), hoplite_core::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::ToolLoad`](crate::Error::ToolLoad) when a connector library is loaded (a process
/// has one connector); [`Error::ToolsFinalized`](crate::Error::ToolsFinalized) after
/// [`finalize_tools`].
pub fn start_trace() -> Result<()> {
    tools::install_trace(None)
}

/// One run of a graph node, for the built-in trace ([`trace_graph_node`]).
#[derive(Clone, Copy, Debug)]
pub struct GraphNodeRun<'a> {
    /// The graph (an id unique in the process).
    pub graph: u64,
    /// The submit of the graph this run belongs to.
    pub submit: u64,
    /// The node's id in its graph.
    pub node: usize,
    /// The node's label.
    pub label: &'a str,
    /// The nodes with work it waits for (through joins), by id.
    pub predecessors: &'a [usize],
    /// When the run began.
    pub start: std::time::Instant,
    /// When it ended.
    pub end: std::time::Instant,
}

/// Whether [`trace_graph_node`] records anything (the built-in trace connector is on): a
/// graph runtime measures its nodes' runs only then.
pub fn tracing_graphs() -> bool {
    tools_loaded() && trace::recording()
}

/// Records a graph node's run in the built-in trace ([`start_trace`]): a slice named by the
/// node on the running thread's row (category `graph_node`, with graph, submit and node in
/// `args`), and a flow arrow from each predecessor's run in the same submit, so a graph's
/// edges show as arrows, as the DAG's do. Kokkos Tools connectors get no such callback (the
/// interface carries no dependencies); without the built-in trace this does nothing.
///
/// ```
/// use std::time::Instant;
/// use hoplite_core::profiling::{start_trace, trace_graph_node, write_trace, GraphNodeRun};
/// start_trace()?;
/// let t = Instant::now();
/// fn run(node: usize, predecessors: &[usize], start: Instant) -> GraphNodeRun<'_> {
///     GraphNodeRun { graph: 1, submit: 0, node, label: "step", predecessors, start, end: Instant::now() }
/// }
/// trace_graph_node(run(1, &[], t));
/// trace_graph_node(run(2, &[1], t));
/// write_trace(std::env::temp_dir().join("graph-node-doc.json"))?;
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub fn trace_graph_node(run: GraphNodeRun<'_>) {
    if tools_loaded() {
        trace::graph_node(&run);
    }
}

/// Writes what the built-in trace connector recorded so far ([`start_trace`]) to `path` as
/// Trace Event Format JSON (an empty trace when it is not recording).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the file, with the I/O error as its source.
pub fn write_trace(path: impl AsRef<std::path::Path>) -> Result<()> {
    trace::write(path.as_ref())
}

/// Finalizes the connector (`kokkosp_finalize_library`, where most connectors write their
/// report) and stops every hook; later hooks do nothing. Runs once: at the first call, or at
/// process exit if no one called it. A connector is loaded once per process: after this,
/// [`initialize_tools`] reports [`Error::ToolsFinalized`](crate::Error::ToolsFinalized).
///
/// ```
/// use hoplite_core::profiling::{finalize_tools, initialize_tools, tools_loaded};
/// finalize_tools();
/// assert!(!tools_loaded());
/// assert!(initialize_tools().is_err());
/// ```
pub fn finalize_tools() {
    tools::finalize();
}

/// Whether a connector is loaded and not finalized (loading it from the environment if that
/// has not happened yet).
///
/// ```
/// // No connector is named in the environment of the doctests.
/// # if std::env::var_os("KOKKOS_TOOLS_LIBS").is_none() {
/// assert!(!hoplite_core::profiling::tools_loaded());
/// # }
/// ```
pub fn tools_loaded() -> bool {
    tools::is_on()
}

/// Sets what a connector's fence request (the `fence` of the programming interface it gets
/// through `kokkosp_provide_tool_programming_interface`) runs. The core knows no backend, so
/// it fences nothing until the facade's `hoplite::initialize` sets a fence of the enabled
/// backends' default instances; an error it returns cannot reach the connector.
///
/// ```
/// fn fence_everything() -> hoplite_core::Result<()> {
///     use hoplite_core::ExecutionSpace;
///     hoplite_serial::Serial::default().fence()
/// }
/// hoplite_core::profiling::set_global_fence(fence_everything);
/// ```
pub fn set_global_fence(fence: fn() -> Result<()>) {
    tools::set_global_fence(fence);
}

/// The device types of Kokkos' device ids (`Kokkos::Tools::Experimental::DeviceType`), in
/// Kokkos' numbering, so that connectors that group by device type read hoplite's ids as
/// Kokkos'. hoplite's serial backend reports [`SERIAL`](Self::SERIAL), rayon and NUMA pools
/// [`THREADS`](Self::THREADS) (a pool of host threads, as Kokkos' `Threads` backend), CUDA
/// streams [`CUDA`](Self::CUDA).
///
/// The types are constants rather than enum variants named `Serial` or `Cuda`: a second item
/// of such a name would make compiler messages spell the backends' types with their crate
/// paths (`hoplite_serial::Serial`).
///
/// ```
/// use hoplite_core::profiling::DeviceType;
/// assert_eq!(DeviceType::CUDA.number(), 2);
/// assert_eq!(format!("{:?}", DeviceType::THREADS), "Threads");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceType(u8);

impl DeviceType {
    /// One host thread.
    pub const SERIAL: Self = DeviceType(0);
    /// OpenMP threads.
    pub const OPENMP: Self = DeviceType(1);
    /// A CUDA device.
    pub const CUDA: Self = DeviceType(2);
    /// A HIP device.
    pub const HIP: Self = DeviceType(3);
    /// OpenMP offload.
    pub const OPENMP_TARGET: Self = DeviceType(4);
    /// HPX.
    pub const HPX: Self = DeviceType(5);
    /// A pool of host threads.
    pub const THREADS: Self = DeviceType(6);
    /// A SYCL device.
    pub const SYCL: Self = DeviceType(7);
    /// OpenACC.
    pub const OPENACC: Self = DeviceType(8);
    /// Anything else.
    pub const UNKNOWN: Self = DeviceType(9);

    /// Kokkos' number for the type (the top 8 bits of a device id).
    pub const fn number(self) -> u8 {
        self.0
    }

    /// The type of Kokkos' number `bits`; numbers Kokkos does not define are [`UNKNOWN`](Self::UNKNOWN).
    const fn from_bits(bits: u32) -> Self {
        if bits <= 9 {
            DeviceType(bits as u8)
        } else {
            Self::UNKNOWN
        }
    }
}

impl fmt::Debug for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 10] = [
            "Serial",
            "OpenMP",
            "Cuda",
            "HIP",
            "OpenMPTarget",
            "HPX",
            "Threads",
            "SYCL",
            "OpenACC",
            "Unknown",
        ];
        f.write_str(NAMES.get(usize::from(self.0)).copied().unwrap_or("Unknown"))
    }
}

/// An execution space instance as Kokkos Tools name it: the `devID` of the begin callbacks
/// (`Kokkos::Tools::Experimental::device_id`). The 32 bits hold the device type (8 bits), the
/// device (7 bits) and the instance (17 bits), from the top. Instance 0 is reserved for
/// fences of a whole device; an instance's id counts from 1 (Kokkos' `NumReservedDeviceIDs`).
///
/// ```
/// use hoplite_core::profiling::{DeviceId, DeviceType};
/// let id = DeviceId::new(DeviceType::CUDA, 1, 3);
/// assert_eq!(id.raw(), (2 << 24) | (1 << 17) | 3);
/// assert_eq!((id.device_type(), id.device(), id.instance()), (DeviceType::CUDA, 1, 3));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId(u32);

impl DeviceId {
    /// Bits of the instance field.
    const INSTANCE_BITS: u32 = 17;
    /// Bits of the device field.
    const DEVICE_BITS: u32 = 7;

    /// The id of `instance` on `device` of type `device_type`. `device` keeps its low 7 bits
    /// and `instance` its low 17 bits (Kokkos' field widths).
    pub const fn new(device_type: DeviceType, device: u32, instance: u32) -> Self {
        let device = device & ((1 << Self::DEVICE_BITS) - 1);
        let instance = instance & ((1 << Self::INSTANCE_BITS) - 1);
        DeviceId(
            ((device_type.0 as u32) << (Self::INSTANCE_BITS + Self::DEVICE_BITS))
                | (device << Self::INSTANCE_BITS)
                | instance,
        )
    }

    /// The id of instance number `n` (counting from 0) of a backend: instance `n % (2^17 - 1)
    /// + 1`, so that it is never the reserved 0.
    ///
    /// ```
    /// use hoplite_core::profiling::{DeviceId, DeviceType};
    /// assert_eq!(DeviceId::numbered(DeviceType::THREADS, 0, 0).instance(), 1);
    /// ```
    pub const fn numbered(device_type: DeviceType, device: u32, n: u64) -> Self {
        let span = (1u64 << Self::INSTANCE_BITS) - 1;
        DeviceId::new(device_type, device, (n % span) as u32 + 1)
    }

    /// The 32-bit value connectors receive.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The device type.
    pub const fn device_type(self) -> DeviceType {
        DeviceType::from_bits(self.0 >> (Self::INSTANCE_BITS + Self::DEVICE_BITS))
    }

    /// The device number.
    pub const fn device(self) -> u32 {
        (self.0 >> Self::INSTANCE_BITS) & ((1 << Self::DEVICE_BITS) - 1)
    }

    /// The instance number.
    pub const fn instance(self) -> u32 {
        self.0 & ((1 << Self::INSTANCE_BITS) - 1)
    }
}

impl fmt::Debug for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceId")
            .field("type", &self.device_type())
            .field("device", &self.device())
            .field("instance", &self.instance())
            .finish()
    }
}

/// Opens a profile region (Kokkos `Profiling::pushRegion`): connectors nest the kernels and
/// regions that follow under it until the matching [`pop_region`]. [`ScopedRegion`] pops by
/// itself.
///
/// ```
/// use hoplite_core::profiling::{pop_region, push_region};
/// push_region("assemble");
/// // ... launches ...
/// pop_region();
/// ```
#[inline]
pub fn push_region(name: &str) {
    if may_be_on() {
        push_region_cold(name);
    }
}

#[cold]
#[inline(never)]
fn push_region_cold(name: &str) -> bool {
    let Some(tool) = tool() else { return false };
    if let Some(f) = tool.push_region {
        let name = c_name(name);
        // SAFETY: `f` is the connector's `kokkosp_push_profile_region`, resolved with the
        // interface's signature from a library that stays open; `name` is NUL-terminated and
        // outlives the call.
        tool.call(|| unsafe { f(name.as_ptr()) });
    }
    true
}

/// Closes the innermost region opened by [`push_region`] (Kokkos `Profiling::popRegion`).
///
/// ```
/// hoplite_core::profiling::push_region("io");
/// hoplite_core::profiling::pop_region();
/// ```
#[inline]
pub fn pop_region() {
    if may_be_on() {
        pop_region_cold();
    }
}

#[cold]
#[inline(never)]
fn pop_region_cold() {
    if let Some(tool) = tool()
        && let Some(f) = tool.pop_region
    {
        // SAFETY: `f` is the connector's `kokkosp_pop_profile_region` (`void (void)`), from a
        // library that stays open.
        tool.call(|| unsafe { f() });
    }
}

/// A profile region that is popped when this value drops (Kokkos `Profiling::ScopedRegion`).
///
/// ```
/// use hoplite_core::profiling::ScopedRegion;
/// {
///     let _setup = ScopedRegion::new("setup");
///     // ... launches, reported inside "setup" ...
/// } // popped here
/// ```
#[must_use = "the region is popped when this value drops; bind it with `let _region = ...`"]
pub struct ScopedRegion {
    pushed: bool,
}

impl ScopedRegion {
    /// Pushes the region `name`.
    #[inline]
    pub fn new(name: &str) -> Self {
        let pushed = may_be_on() && push_region_cold(name);
        ScopedRegion { pushed }
    }
}

impl Drop for ScopedRegion {
    #[inline]
    fn drop(&mut self) {
        if self.pushed {
            pop_region();
        }
    }
}

impl fmt::Debug for ScopedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedRegion")
            .field("pushed", &self.pushed)
            .finish()
    }
}

/// A profile section (Kokkos `Profiling::ProfilingSection`): a named timer that connectors
/// accumulate over every [`start`](Self::start)–[`stop`](Self::stop) pair. Created with
/// `kokkosp_create_profile_section`, destroyed when dropped.
///
/// ```
/// use hoplite_core::profiling::Section;
/// let exchange = Section::new("halo exchange");
/// for _ in 0..4 {
///     exchange.start();
///     // ... communication ...
///     exchange.stop();
/// }
/// ```
pub struct Section {
    /// The connector's id for the section; `None` when no connector was loaded at creation.
    id: Option<u32>,
}

impl Section {
    /// Creates the section `name`.
    #[inline]
    pub fn new(name: &str) -> Self {
        let id = if may_be_on() { create_section(name) } else { None };
        Section { id }
    }

    /// Starts timing (`kokkosp_start_profile_section`).
    #[inline]
    pub fn start(&self) {
        if let Some(id) = self.id {
            section_call(id, |t| t.start_section);
        }
    }

    /// Stops timing (`kokkosp_stop_profile_section`).
    #[inline]
    pub fn stop(&self) {
        if let Some(id) = self.id {
            section_call(id, |t| t.stop_section);
        }
    }
}

impl Drop for Section {
    #[inline]
    fn drop(&mut self) {
        if let Some(id) = self.id {
            section_call(id, |t| t.destroy_section);
        }
    }
}

impl fmt::Debug for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Section").field("id", &self.id).finish()
    }
}

#[cold]
#[inline(never)]
fn create_section(name: &str) -> Option<u32> {
    let tool = tool()?;
    let mut id = 0u32;
    if let Some(f) = tool.create_section {
        let name = c_name(name);
        // SAFETY: `f` is the connector's `kokkosp_create_profile_section`, from a library that
        // stays open; `name` is NUL-terminated and `id` a live `u32` it writes the section's
        // id to, both outliving the call.
        tool.call(|| unsafe { f(name.as_ptr(), &mut id) });
    }
    Some(id)
}

#[cold]
#[inline(never)]
fn section_call(id: u32, entry: fn(&tools::Tool) -> Option<ffi::SectionFn>) {
    if !may_be_on() {
        return;
    }
    if let Some(tool) = tool()
        && let Some(f) = entry(tool)
    {
        // SAFETY: `f` is one of the connector's `kokkosp_{start,stop,destroy}_profile_section`
        // (`void (uint32_t)`), from a library that stays open; `id` is the one it gave.
        tool.call(|| unsafe { f(id) });
    }
}

/// Marks an instant (Kokkos `Profiling::markEvent`, `kokkosp_profile_event`).
///
/// ```
/// hoplite_core::profiling::mark_event("checkpoint written");
/// ```
#[inline]
pub fn mark_event(name: &str) {
    if may_be_on() {
        mark_event_cold(name);
    }
}

#[cold]
#[inline(never)]
fn mark_event_cold(name: &str) {
    if let Some(tool) = tool()
        && let Some(f) = tool.profile_event
    {
        let name = c_name(name);
        // SAFETY: `f` is the connector's `kokkosp_profile_event`, from a library that stays
        // open; `name` is NUL-terminated and outlives the call.
        tool.call(|| unsafe { f(name.as_ptr()) });
    }
}

/// Tells the connector a key and a value about the run (Kokkos `Tools::declareMetadata`,
/// `kokkosp_declare_metadata`): a problem size, an input file.
///
/// ```
/// hoplite_core::profiling::declare_metadata("grid", "4096 x 4096");
/// ```
#[inline]
pub fn declare_metadata(key: &str, value: &str) {
    if may_be_on() {
        declare_metadata_cold(key, value);
    }
}

#[cold]
#[inline(never)]
fn declare_metadata_cold(key: &str, value: &str) {
    if let Some(tool) = tool()
        && let Some(f) = tool.declare_metadata
    {
        let (key, value) = (c_name(key), c_name(value));
        // SAFETY: `f` is the connector's `kokkosp_declare_metadata`, from a library that stays
        // open; both strings are NUL-terminated and outlive the call.
        tool.call(|| unsafe { f(key.as_ptr(), value.as_ptr()) });
    }
}

/// The kind of a kernel, which picks the connector's begin and end entry points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// `kokkosp_begin_parallel_for` / `kokkosp_end_parallel_for`.
    For,
    /// `kokkosp_begin_parallel_reduce` / `kokkosp_end_parallel_reduce`.
    Reduce,
    /// `kokkosp_begin_parallel_scan` / `kokkosp_end_parallel_scan`.
    Scan,
}

/// A kernel as the connector sees it, from [`begin`](Self::begin) to [`end`](Self::end) (or
/// the drop, when the launch unwinds). The core's launch functions report every launch
/// through this; a backend or front end that runs kernels without them (a device graph)
/// reports its kernels with it.
///
/// ```
/// use hoplite_core::profiling::{DeviceId, DeviceType, KernelKind, KernelScope};
/// let kernel = KernelScope::begin(KernelKind::For, "pack", || DeviceId::new(DeviceType::SERIAL, 0, 1));
/// // ... run the kernel ...
/// kernel.end();
/// ```
#[must_use = "the kernel ends when this value drops"]
pub struct KernelScope {
    open: Option<(KernelKind, u64)>,
}

impl KernelScope {
    /// Reports the start of kernel `name` of `kind` on the instance `device` names (called
    /// only when a connector is loaded).
    #[inline]
    pub fn begin(kind: KernelKind, name: &str, device: impl FnOnce() -> DeviceId) -> Self {
        if may_be_on() {
            return Self::begin_cold(kind, name, device());
        }
        KernelScope { open: None }
    }

    #[cold]
    #[inline(never)]
    fn begin_cold(kind: KernelKind, name: &str, device: DeviceId) -> Self {
        let Some(tool) = tool() else {
            return KernelScope { open: None };
        };
        let begin = match kind {
            KernelKind::For => tool.begin_parallel_for,
            KernelKind::Reduce => tool.begin_parallel_reduce,
            KernelKind::Scan => tool.begin_parallel_scan,
        };
        let mut id = 0u64;
        if let Some(f) = begin {
            let name = c_name(name);
            // SAFETY: `f` is the connector's `kokkosp_begin_parallel_*` (`void (const char*,
            // uint32_t, uint64_t*)`), from a library that stays open; `name` is NUL-terminated
            // and `id` a live `u64` for the kernel id, both outliving the call.
            tool.call(|| unsafe { f(name.as_ptr(), device.raw(), &mut id) });
        }
        KernelScope {
            open: Some((kind, id)),
        }
    }

    /// Whether the connector saw the begin (so that [`end`](Self::end) calls it).
    #[inline]
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Reports the end of the kernel.
    #[inline]
    pub fn end(mut self) {
        if let Some((kind, id)) = self.open.take() {
            end_kernel(kind, id);
        }
    }
}

impl Drop for KernelScope {
    #[inline]
    fn drop(&mut self) {
        if let Some((kind, id)) = self.open.take() {
            end_kernel(kind, id);
        }
    }
}

impl fmt::Debug for KernelScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelScope").field("open", &self.open).finish()
    }
}

#[cold]
#[inline(never)]
fn end_kernel(kind: KernelKind, id: u64) {
    if !may_be_on() {
        return;
    }
    let Some(tool) = tool() else { return };
    let end = match kind {
        KernelKind::For => tool.end_parallel_for,
        KernelKind::Reduce => tool.end_parallel_reduce,
        KernelKind::Scan => tool.end_parallel_scan,
    };
    if let Some(f) = end {
        // SAFETY: `f` is the connector's `kokkosp_end_parallel_*` (`void (uint64_t)`), from a
        // library that stays open; `id` is the kernel id its begin gave.
        tool.call(|| unsafe { f(id) });
    }
}

/// Whether the loaded connector wants a kernel's instance fenced before its begin and end
/// callbacks (its answer to `kokkosp_request_tool_settings`; Kokkos' default is yes), so that
/// a timer measures the kernel and not its enqueueing on an asynchronous instance. False
/// without a connector.
///
/// ```
/// # if std::env::var_os("KOKKOS_TOOLS_LIBS").is_none() {
/// assert!(!hoplite_core::profiling::kernels_need_fences());
/// # }
/// ```
pub fn kernels_need_fences() -> bool {
    may_be_on() && tool().is_some_and(tools::Tool::requires_fencing)
}

/// Makes kernels run one at a time while a connector is loaded: the guard is held around a
/// kernel by a front end that runs kernels on several threads at once (the implicit DAG's
/// streams), so that connectors that keep one stack of kernels for the whole process
/// (space-time-stack stops the program when a kernel ends that is not the last one begun; the
/// simple kernel timer charges the wrong kernel) see each kernel's begin and end together.
/// Without a connector it returns `None`, after one relaxed load.
///
/// Hold it only around work that waits for no other holder: a kernel, not a task that may wait
/// for a message another vertex sends. It is reentrant on one thread.
///
/// ```
/// use hoplite_core::{RangePolicy, parallel_for};
/// use hoplite_serial::Serial;
/// let _one_at_a_time = hoplite_core::profiling::order_kernels();
/// parallel_for("step", RangePolicy::new(Serial::default(), 0..8), |_i| {})?;
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[inline]
pub fn order_kernels() -> Option<KernelOrder> {
    if may_be_on() { order_kernels_cold() } else { None }
}

#[cold]
#[inline(never)]
fn order_kernels_cold() -> Option<KernelOrder> {
    tool()?;
    Some(KernelOrder {
        _guard: tools::order_kernels(),
    })
}

/// The guard of [`order_kernels`]: kernels of other threads that take it wait until it drops.
#[must_use = "kernels are ordered only while this value lives"]
pub struct KernelOrder {
    _guard: tools::KernelOrderGuard,
}

impl fmt::Debug for KernelOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KernelOrder")
    }
}

/// A fence as the connector sees it (`kokkosp_begin_fence` / `kokkosp_end_fence`), ended
/// when this value drops. Every backend's [`ExecutionSpace::fence`](crate::ExecutionSpace::fence)
/// opens one.
///
/// ```
/// use hoplite_core::profiling::{DeviceId, DeviceType, FenceScope};
/// let _fence = FenceScope::begin("MySpace::fence", || DeviceId::new(DeviceType::UNKNOWN, 0, 1));
/// // ... wait ...
/// ```
#[must_use = "the fence ends when this value drops"]
pub struct FenceScope {
    handle: Option<u64>,
}

impl FenceScope {
    /// Reports the start of fence `name` of the instance `device` names.
    #[inline]
    pub fn begin(name: &str, device: impl FnOnce() -> DeviceId) -> Self {
        if may_be_on() {
            return Self::begin_cold(name, device());
        }
        FenceScope { handle: None }
    }

    #[cold]
    #[inline(never)]
    fn begin_cold(name: &str, device: DeviceId) -> Self {
        let Some(tool) = tool() else {
            return FenceScope { handle: None };
        };
        let mut handle = 0u64;
        if let Some(f) = tool.begin_fence {
            let name = c_name(name);
            // SAFETY: `f` is the connector's `kokkosp_begin_fence` (`void (const char*,
            // uint32_t, uint64_t*)`), from a library that stays open; `name` is NUL-terminated
            // and `handle` a live `u64`, both outliving the call.
            tool.call(|| unsafe { f(name.as_ptr(), device.raw(), &mut handle) });
        }
        FenceScope { handle: Some(handle) }
    }
}

impl Drop for FenceScope {
    #[inline]
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            end_fence(handle);
        }
    }
}

impl fmt::Debug for FenceScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FenceScope")
            .field("handle", &self.handle)
            .finish()
    }
}

#[cold]
#[inline(never)]
fn end_fence(handle: u64) {
    if !may_be_on() {
        return;
    }
    if let Some(tool) = tool()
        && let Some(f) = tool.end_fence
    {
        // SAFETY: `f` is the connector's `kokkosp_end_fence` (`void (uint64_t)`), from a
        // library that stays open; `handle` is the one its begin gave.
        tool.call(|| unsafe { f(handle) });
    }
}

/// Reports an allocation of `bytes` bytes at `ptr`, labelled `label`, in the memory space
/// connectors know as `space` ([`MemorySpace::profiling_name`](crate::MemorySpace::profiling_name):
/// `"Host"`, `"Cuda"`...). Views report theirs; a backend reports memory it allocates
/// outside views.
///
/// ```
/// let buffer = vec![0u8; 256];
/// hoplite_core::profiling::allocate_data("Host", "staging", buffer.as_ptr().cast(), 256);
/// hoplite_core::profiling::deallocate_data("Host", "staging", buffer.as_ptr().cast(), 256);
/// ```
#[inline]
pub fn allocate_data(space: &str, label: &str, ptr: *const c_void, bytes: u64) {
    if may_be_on() {
        data_event(|t| t.allocate_data, space, label, ptr, bytes);
    }
}

/// Reports that the allocation [`allocate_data`] reported is freed.
///
/// ```
/// hoplite_core::profiling::deallocate_data("Host", "staging", std::ptr::null(), 0);
/// ```
#[inline]
pub fn deallocate_data(space: &str, label: &str, ptr: *const c_void, bytes: u64) {
    if may_be_on() {
        data_event(|t| t.deallocate_data, space, label, ptr, bytes);
    }
}

#[cold]
#[inline(never)]
fn data_event(
    entry: fn(&tools::Tool) -> Option<ffi::DataFn>,
    space: &str,
    label: &str,
    ptr: *const c_void,
    bytes: u64,
) {
    if let Some(tool) = tool()
        && let Some(f) = entry(tool)
    {
        let handle = ffi::SpaceHandle::new(space);
        let label = c_name(label);
        // SAFETY: `f` is the connector's `kokkosp_allocate_data` or `kokkosp_deallocate_data`
        // (`void (SpaceHandle, const char*, const void*, uint64_t)`), from a library that
        // stays open; the handle is passed by value, `label` is NUL-terminated and outlives
        // the call, and `ptr` is only an address the connector records.
        tool.call(|| unsafe { f(handle, label.as_ptr(), ptr, bytes) });
    }
}

/// One side of a deep copy as connectors see it: the memory space's name for connectors, the
/// view's label and its first element.
#[derive(Clone, Copy, Debug)]
pub struct CopySide<'a> {
    /// The memory space's name for connectors
    /// ([`MemorySpace::profiling_name`](crate::MemorySpace::profiling_name)).
    pub space: &'a str,
    /// The view's label (`"Scalar"` for the value of a fill, as in Kokkos).
    pub label: &'a str,
    /// The address of the view's first element.
    pub ptr: *const c_void,
}

/// A deep copy as connectors see it (`kokkosp_begin_deep_copy` / `kokkosp_end_deep_copy`),
/// ended when this value drops.
///
/// ```
/// use hoplite_core::profiling::{CopySide, DeepCopyScope};
/// let (src, mut dst) = ([1u8; 8], [0u8; 8]);
/// let _copy = DeepCopyScope::begin(
///     CopySide { space: "Host", label: "dst", ptr: dst.as_ptr().cast() },
///     CopySide { space: "Host", label: "src", ptr: src.as_ptr().cast() },
///     8,
/// );
/// dst.copy_from_slice(&src);
/// ```
#[must_use = "the copy ends when this value drops"]
pub struct DeepCopyScope {
    open: bool,
}

impl DeepCopyScope {
    /// Reports the start of a copy of `bytes` bytes from `src` into `dst`.
    #[inline]
    pub fn begin(dst: CopySide<'_>, src: CopySide<'_>, bytes: u64) -> Self {
        let open = may_be_on() && begin_deep_copy(dst, src, bytes);
        DeepCopyScope { open }
    }
}

impl Drop for DeepCopyScope {
    #[inline]
    fn drop(&mut self) {
        if self.open {
            end_deep_copy();
        }
    }
}

impl fmt::Debug for DeepCopyScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeepCopyScope").field("open", &self.open).finish()
    }
}

#[cold]
#[inline(never)]
fn begin_deep_copy(dst: CopySide<'_>, src: CopySide<'_>, bytes: u64) -> bool {
    let Some(tool) = tool() else { return false };
    if let Some(f) = tool.begin_deep_copy {
        let (dst_space, src_space) = (ffi::SpaceHandle::new(dst.space), ffi::SpaceHandle::new(src.space));
        let (dst_label, src_label) = (c_name(dst.label), c_name(src.label));
        // SAFETY: `f` is the connector's `kokkosp_begin_deep_copy`, from a library that stays
        // open, called with the interface's arguments: the handles by value, NUL-terminated
        // labels that outlive the call, addresses the connector only records, and the size.
        tool.call(|| unsafe {
            f(
                dst_space,
                dst_label.as_ptr(),
                dst.ptr,
                src_space,
                src_label.as_ptr(),
                src.ptr,
                bytes,
            )
        });
    }
    true
}

#[cold]
#[inline(never)]
fn end_deep_copy() {
    if !may_be_on() {
        return;
    }
    if let Some(tool) = tool()
        && let Some(f) = tool.end_deep_copy
    {
        // SAFETY: `f` is the connector's `kokkosp_end_deep_copy` (`void (void)`), from a
        // library that stays open.
        tool.call(|| unsafe { f() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ids_follow_kokkos_field_widths() {
        let id = DeviceId::new(DeviceType::THREADS, 200, (1 << 17) + 5);
        assert_eq!(id.device_type(), DeviceType::THREADS);
        assert_eq!(id.device(), 200 & 0x7f);
        assert_eq!(id.instance(), 5);
        assert_eq!(DeviceId::new(DeviceType::SERIAL, 0, 1).raw(), 1);
        assert_eq!(
            DeviceId::numbered(DeviceType::CUDA, 0, (1 << 17) - 1).instance(),
            1
        );
        assert_eq!(DeviceType::from_bits(42), DeviceType::UNKNOWN);
    }

    #[test]
    fn space_handles_are_cut_and_terminated() {
        let handle = ffi::SpaceHandle::new(&"x".repeat(100));
        assert_eq!(handle.name[62], b'x' as std::ffi::c_char);
        assert_eq!(handle.name[63], 0);
        assert_eq!(tools::c_name("a\0b").as_bytes(), b"ab");
    }
}
