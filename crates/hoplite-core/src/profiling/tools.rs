//! The loaded connector: the state word every hook reads, loading from `KOKKOS_TOOLS_LIBS`,
//! the handshakes, finalization, and the calls into the library.
//!
//! # Protocol
//!
//! 1. [`STATE`] starts at `UNINIT`. Every hook loads it with `Relaxed` ordering and returns at
//!    once when it reads `OFF`: that load and its compare are all a launch pays without a
//!    connector.
//! 2. A hook that reads anything else goes to [`tool`] (out of line). On `UNINIT` it loads the
//!    connector first ([`load`]): under the `LOAD` lock, if the state is still `UNINIT`, it
//!    reads the variable, opens the first library of the list, resolves the entry points it
//!    defines, publishes them in [`TOOL`] (written once), runs the handshakes (init, tool
//!    settings, programming interface, arguments) and only then stores `ON` (`Release`), or
//!    `OFF` when there is no connector or it failed to load. The outcome is kept, so that
//!    [`initialize`] reports a failure that a first use met.
//! 3. A hook that reads `ON` takes the connector from [`TOOL`] (its `OnceLock` read is an
//!    `Acquire`, which pairs with the write in step 2) and calls the entry point under
//!    `CALL_LOCK`. Connectors are written for one thread (the simple kernel timer keeps its
//!    current kernel in a global), while hoplite launches from DAG streams and graph waves at
//!    once; the lock makes their calls one at a time. It is reentrant: a connector that asks
//!    for a fence from inside a callback gets the fence's own callbacks on the same thread.
//! 4. While the loading thread runs the handshakes, its own hooks (a fence the connector asks
//!    for during them) see `UNINIT` and the thread-local `LOADING`, and report nothing rather
//!    than wait for the lock they hold.
//! 5. [`finalize`] stores `OFF` and `FINALIZED` under `LOAD`, then calls
//!    `kokkosp_finalize_library` once. A hook racing on another thread may still reach the
//!    connector after that, as in Kokkos. A connector that loaded is finalized at process exit
//!    (an `atexit` handler) unless [`finalize`] ran before.
//! 6. The library is never closed: the entry points stay valid for the life of the process.

use std::cell::Cell;
use std::ffi::{CString, c_char, c_int};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use parking_lot::{Mutex, ReentrantMutex};

use super::ffi::{self, ToolProgrammingInterface, ToolSettings};
use crate::error::{Error, Result};

/// No connector has been looked for yet.
const UNINIT: u8 = 0;
/// No connector: hooks return at once.
const OFF: u8 = 1;
/// A connector is loaded and initialized: hooks call it.
const ON: u8 = 2;

/// The state word of step 1.
static STATE: AtomicU8 = AtomicU8::new(UNINIT);

/// The loaded connector (step 2), written once.
static TOOL: OnceLock<Tool> = OnceLock::new();

/// What loading gave (`None` until it ran) and whether [`finalize`] ran.
struct LoadState {
    outcome: Option<Result<()>>,
    finalized: bool,
}

static LOAD: Mutex<LoadState> = Mutex::new(LoadState {
    outcome: None,
    finalized: false,
});

/// Serializes the calls into the connector (step 3).
static CALL_LOCK: ReentrantMutex<()> = ReentrantMutex::new(());

/// Held around a kernel by front ends that run kernels on several threads, while a connector
/// is loaded (`profiling::order_kernels`).
static KERNEL_ORDER: ReentrantMutex<()> = ReentrantMutex::new(());

/// The guard of [`KERNEL_ORDER`].
pub(crate) type KernelOrderGuard = parking_lot::ReentrantMutexGuard<'static, ()>;

/// Waits until no other thread runs an ordered kernel.
pub(crate) fn order_kernels() -> KernelOrderGuard {
    KERNEL_ORDER.lock()
}

/// A fence of every instance (see [`set_global_fence`]).
type GlobalFence = fn() -> Result<()>;

/// The function a connector's fence request runs (see [`set_global_fence`]).
static GLOBAL_FENCE: Mutex<Option<GlobalFence>> = Mutex::new(None);

thread_local! {
    /// Set on the thread that runs the handshakes (step 4).
    static LOADING: Cell<bool> = const { Cell::new(false) };
}

/// Whether a hook must go to [`tool`]: false exactly when there is no connector (step 1).
#[inline(always)]
pub(crate) fn may_be_on() -> bool {
    STATE.load(Ordering::Relaxed) != OFF
}

/// The connector, loading it on first use (step 2); `None` when there is none.
#[cold]
#[inline(never)]
pub(crate) fn tool() -> Option<&'static Tool> {
    match STATE.load(Ordering::Acquire) {
        ON => TOOL.get(),
        UNINIT => {
            if LOADING.with(Cell::get) {
                return None;
            }
            // A failure is printed by the call that met it (the caller has no `Result` to
            // take it), once; `initialize` returns it.
            let _ = load(true);
            match STATE.load(Ordering::Acquire) {
                ON => TOOL.get(),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Loads the connector named by the environment unless that was done (step 2), and returns
/// how it went; with `print_failure`, a failure of this load (not of an earlier one) is also
/// printed on standard error.
pub(crate) fn load(print_failure: bool) -> Result<()> {
    let mut state = LOAD.lock();
    if state.finalized {
        return Err(Error::ToolsFinalized);
    }
    if let Some(outcome) = &state.outcome {
        return outcome.clone();
    }
    LOADING.with(|l| l.set(true));
    let outcome = load_from_environment();
    LOADING.with(|l| l.set(false));
    if print_failure && let Err(e) = &outcome {
        eprintln!(
            "hoplite: {e}. Profiling is off; call `hoplite::initialize()` to get this error as a value"
        );
    }
    let on = matches!(outcome, Ok(true));
    state.outcome = Some(outcome.map(|_| ()));
    STATE.store(if on { ON } else { OFF }, Ordering::Release);
    if on {
        register_at_exit();
    }
    state.outcome.clone().unwrap_or(Ok(()))
}

/// Reads `KOKKOS_TOOLS_LIBS` (or the older `KOKKOS_PROFILE_LIBRARY`), opens the first library
/// of the list and runs the handshakes; `Ok(false)` when the variable names none.
fn load_from_environment() -> Result<bool> {
    let Some(list) =
        std::env::var_os("KOKKOS_TOOLS_LIBS").or_else(|| std::env::var_os("KOKKOS_PROFILE_LIBRARY"))
    else {
        // No connector library: the built-in trace connector, if `HOPLITE_TRACE` names a file.
        let Some(path) = std::env::var_os("HOPLITE_TRACE").filter(|p| !p.is_empty()) else {
            return Ok(false);
        };
        super::trace::start(Some(path.into()));
        TOOL.get_or_init(|| Tool::builtin(super::trace::entry_points()));
        return Ok(true);
    };
    let list = list.into_string().map_err(|raw| Error::ToolLoad {
        path: raw.to_string_lossy().into_owned(),
        reason: "the variable is not valid UTF-8".to_owned(),
    })?;
    // Kokkos loads the first library of the list; the others are for connectors that chain
    // to the next one (the sampler, the kernel filter), which read the variable themselves.
    let first = list.split(';').next().unwrap_or_default().trim();
    if first.is_empty() {
        return Ok(false);
    }
    let tool = Tool::open(first)?;
    let tool = TOOL.get_or_init(|| tool);
    tool.handshake();
    Ok(true)
}

/// Makes the built-in trace connector the process's connector (recording from now on, the
/// file written at finalization to `path` when given), unless a connector is already loaded.
pub(crate) fn install_trace(path: Option<std::path::PathBuf>) -> Result<()> {
    let mut state = LOAD.lock();
    if state.finalized {
        return Err(Error::ToolsFinalized);
    }
    if TOOL.get().is_some() {
        // The trace connector itself, started again, starts a new recording.
        if STATE.load(Ordering::Acquire) == ON && is_trace_connector() {
            super::trace::start(path);
            return Ok(());
        }
        return Err(Error::ToolLoad {
            path: "the built-in trace connector".to_owned(),
            reason: "a connector from KOKKOS_TOOLS_LIBS is loaded, and a process has one connector"
                .to_owned(),
        });
    }
    super::trace::start(path);
    TOOL.get_or_init(|| Tool::builtin(super::trace::entry_points()));
    state.outcome = Some(Ok(()));
    STATE.store(ON, Ordering::Release);
    drop(state);
    register_at_exit();
    Ok(())
}

/// Whether the loaded connector is the built-in trace connector.
fn is_trace_connector() -> bool {
    TOOL.get().is_some_and(|t| t._library.is_none())
}

/// Registers [`finalize_at_exit`] with the C library's `atexit`, once.
fn register_at_exit() {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    unsafe extern "C" {
        fn atexit(callback: extern "C" fn()) -> c_int;
    }
    // SAFETY: `atexit` is the C standard library's, declared with its signature; the callback
    // is a plain `extern "C"` function that lives as long as the program. It runs before the
    // connector's own static destructors (registered earlier, when it was loaded; exit runs
    // the handlers in reverse order), so the connector can still write its report.
    let failed = unsafe { atexit(finalize_at_exit) } != 0;
    if failed {
        eprintln!(
            "hoplite: could not register the Kokkos Tools finalization at exit; call `hoplite::finalize()`"
        );
    }
}

/// The `atexit` handler: [`finalize`], unless another thread holds the loading lock (then the
/// connector is not finalized rather than the exit waiting).
extern "C" fn finalize_at_exit() {
    if let Some(state) = LOAD.try_lock() {
        drop(state);
        finalize();
    }
}

/// Loads the connector now (see [`load`]): the explicit form of the first use.
pub(crate) fn initialize() -> Result<()> {
    load(false)
}

/// Finalizes the connector, once (step 5). Later hooks do nothing and [`initialize`] reports
/// [`Error::ToolsFinalized`].
pub(crate) fn finalize() {
    let mut state = LOAD.lock();
    if state.finalized {
        return;
    }
    state.finalized = true;
    let was_on = STATE.swap(OFF, Ordering::AcqRel) == ON;
    drop(state);
    if was_on
        && let Some(tool) = TOOL.get()
        && let Some(f) = tool.finalize
    {
        let _calls = CALL_LOCK.lock();
        // SAFETY: `f` is the connector's `kokkosp_finalize_library`, resolved with the
        // interface's signature `void (void)` from a library that is never closed.
        unsafe { f() };
    }
}

/// Whether a connector is loaded and not finalized (loading it on first use).
pub(crate) fn is_on() -> bool {
    may_be_on() && tool().is_some()
}

/// Sets the function a connector's fence request runs.
pub(crate) fn set_global_fence(fence: GlobalFence) {
    *GLOBAL_FENCE.lock() = Some(fence);
}

/// The fence of the programming interface: runs the function [`set_global_fence`] registered,
/// if any. Its error cannot reach the connector (the entry point returns nothing): the next
/// fence of the instance reports it again.
extern "C" fn tool_invoked_fence(_device: u32) {
    let fence = *GLOBAL_FENCE.lock();
    if let Some(fence) = fence {
        let _ = std::panic::catch_unwind(fence);
    }
}

/// A name as a C string: interior NULs (which C would read as the end) are dropped.
pub(crate) fn c_name(name: &str) -> CString {
    CString::new(name).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|&b| b != 0);
        CString::new(bytes).unwrap_or_default()
    })
}

/// The entry points a connector defines (a missing one is `None` and never called), and the
/// library that keeps them valid.
pub(crate) struct Tool {
    /// The connector library, kept open; `None` for the built-in trace connector.
    _library: Option<Library>,
    pub(crate) init: Option<ffi::InitFn>,
    pub(crate) finalize: Option<ffi::FinalizeFn>,
    pub(crate) parse_args: Option<ffi::ParseArgsFn>,
    pub(crate) begin_parallel_for: Option<ffi::BeginFn>,
    pub(crate) end_parallel_for: Option<ffi::EndFn>,
    pub(crate) begin_parallel_reduce: Option<ffi::BeginFn>,
    pub(crate) end_parallel_reduce: Option<ffi::EndFn>,
    pub(crate) begin_parallel_scan: Option<ffi::BeginFn>,
    pub(crate) end_parallel_scan: Option<ffi::EndFn>,
    pub(crate) push_region: Option<ffi::PushFn>,
    pub(crate) pop_region: Option<ffi::PopFn>,
    pub(crate) allocate_data: Option<ffi::DataFn>,
    pub(crate) deallocate_data: Option<ffi::DataFn>,
    pub(crate) create_section: Option<ffi::CreateSectionFn>,
    pub(crate) start_section: Option<ffi::SectionFn>,
    pub(crate) stop_section: Option<ffi::SectionFn>,
    pub(crate) destroy_section: Option<ffi::SectionFn>,
    pub(crate) profile_event: Option<ffi::EventFn>,
    pub(crate) begin_deep_copy: Option<ffi::BeginDeepCopyFn>,
    pub(crate) end_deep_copy: Option<ffi::EndDeepCopyFn>,
    pub(crate) begin_fence: Option<ffi::BeginFn>,
    pub(crate) end_fence: Option<ffi::EndFn>,
    pub(crate) declare_metadata: Option<ffi::MetadataFn>,
    pub(crate) request_tool_settings: Option<ffi::RequestSettingsFn>,
    pub(crate) provide_tool_programming_interface: Option<ffi::ProvideInterfaceFn>,
    /// What the connector answered to the tool-settings request (Kokkos' default: true).
    requires_fencing: AtomicBool,
}

#[cfg(unix)]
type Library = libloading::os::unix::Library;
#[cfg(not(unix))]
type Library = libloading::Library;

impl Tool {
    /// Opens `path` as Kokkos does (`dlopen(path, RTLD_NOW | RTLD_GLOBAL)`, so that a connector
    /// that loads another finds its symbols) and resolves the entry points.
    fn open(path: &str) -> Result<Tool> {
        let fail = |e: libloading::Error| Error::ToolLoad {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        // SAFETY: loading a library runs its initializers. The user names the connector to
        // run inside this process by setting the variable, as with Kokkos: that is the
        // contract of `KOKKOS_TOOLS_LIBS`, and what a connector's initializers do is its own.
        #[cfg(unix)]
        let library = unsafe {
            libloading::os::unix::Library::open(
                Some(path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        }
        .map_err(fail)?;
        // SAFETY: as above.
        #[cfg(not(unix))]
        let library = unsafe { libloading::Library::new(path) }.map_err(fail)?;
        macro_rules! entry {
            ($name:literal) => {
                // SAFETY: each entry point is looked up with the signature the Kokkos Tools C
                // interface declares for that name (`ffi`), which is what a connector that
                // defines it implements; the pointer is copied out and stays valid because the
                // library is kept open for the life of the process (in `TOOL`).
                unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .ok()
                    .map(|s| *s)
            };
        }
        Ok(Tool {
            init: entry!("kokkosp_init_library"),
            finalize: entry!("kokkosp_finalize_library"),
            parse_args: entry!("kokkosp_parse_args"),
            begin_parallel_for: entry!("kokkosp_begin_parallel_for"),
            end_parallel_for: entry!("kokkosp_end_parallel_for"),
            begin_parallel_reduce: entry!("kokkosp_begin_parallel_reduce"),
            end_parallel_reduce: entry!("kokkosp_end_parallel_reduce"),
            begin_parallel_scan: entry!("kokkosp_begin_parallel_scan"),
            end_parallel_scan: entry!("kokkosp_end_parallel_scan"),
            push_region: entry!("kokkosp_push_profile_region"),
            pop_region: entry!("kokkosp_pop_profile_region"),
            allocate_data: entry!("kokkosp_allocate_data"),
            deallocate_data: entry!("kokkosp_deallocate_data"),
            create_section: entry!("kokkosp_create_profile_section"),
            start_section: entry!("kokkosp_start_profile_section"),
            stop_section: entry!("kokkosp_stop_profile_section"),
            destroy_section: entry!("kokkosp_destroy_profile_section"),
            profile_event: entry!("kokkosp_profile_event"),
            begin_deep_copy: entry!("kokkosp_begin_deep_copy"),
            end_deep_copy: entry!("kokkosp_end_deep_copy"),
            begin_fence: entry!("kokkosp_begin_fence"),
            end_fence: entry!("kokkosp_end_fence"),
            declare_metadata: entry!("kokkosp_declare_metadata"),
            request_tool_settings: entry!("kokkosp_request_tool_settings"),
            provide_tool_programming_interface: entry!("kokkosp_provide_tool_programming_interface"),
            requires_fencing: AtomicBool::new(true),
            _library: Some(library),
        })
    }

    /// A connector of entry points in this program (the built-in trace connector).
    fn builtin(e: ffi::EntryPoints) -> Tool {
        Tool {
            _library: None,
            init: None,
            finalize: e.finalize,
            parse_args: None,
            begin_parallel_for: e.begin_parallel_for,
            end_parallel_for: e.end_parallel_for,
            begin_parallel_reduce: e.begin_parallel_reduce,
            end_parallel_reduce: e.end_parallel_reduce,
            begin_parallel_scan: e.begin_parallel_scan,
            end_parallel_scan: e.end_parallel_scan,
            push_region: e.push_region,
            pop_region: e.pop_region,
            allocate_data: e.allocate_data,
            deallocate_data: e.deallocate_data,
            create_section: e.create_section,
            start_section: e.start_section,
            stop_section: e.stop_section,
            destroy_section: None,
            profile_event: e.profile_event,
            begin_deep_copy: e.begin_deep_copy,
            end_deep_copy: e.end_deep_copy,
            begin_fence: e.begin_fence,
            end_fence: e.end_fence,
            declare_metadata: None,
            request_tool_settings: None,
            provide_tool_programming_interface: None,
            // Fenced callbacks: a kernel's event spans its work, as a device timeline shows it.
            requires_fencing: AtomicBool::new(true),
        }
    }

    /// Kokkos' start-up sequence: `init_library(0, version, 0, NULL)`, the tool-settings
    /// request, the programming interface (a fence), then `parse_args` with the words of
    /// `KOKKOS_TOOLS_ARGS` when it is set.
    fn handshake(&self) {
        let _calls = CALL_LOCK.lock();
        if let Some(init) = self.init {
            // SAFETY: `init` is `kokkosp_init_library` with the interface's signature; Kokkos
            // passes no device info (a count of 0 and a null pointer), which connectors accept.
            unsafe { init(0, ffi::INTERFACE_VERSION, 0, std::ptr::null_mut()) };
        }
        if let Some(request) = self.request_tool_settings {
            let mut settings = ToolSettings::new();
            // SAFETY: `request` is `kokkosp_request_tool_settings`; `settings` is a live,
            // initialized struct of the interface's layout that the connector may write
            // during the call.
            unsafe { request(1, &mut settings) };
            self.requires_fencing
                .store(settings.requires_global_fencing, Ordering::Relaxed);
        }
        if let Some(provide) = self.provide_tool_programming_interface {
            let interface = ToolProgrammingInterface {
                fence: Some(tool_invoked_fence),
                padding: [None; 31],
            };
            // SAFETY: `provide` is `kokkosp_provide_tool_programming_interface`, which takes
            // the count of actions and the struct by value; its one action is a function
            // that lives as long as the program.
            unsafe { provide(1, interface) };
        }
        if let Some(parse_args) = self.parse_args
            && let Some(args) = std::env::var_os("KOKKOS_TOOLS_ARGS")
        {
            let words: Vec<CString> = args.to_string_lossy().split_whitespace().map(c_name).collect();
            if !words.is_empty() {
                let mut argv: Vec<*mut c_char> = words.iter().map(|w| w.as_ptr().cast_mut()).collect();
                argv.push(std::ptr::null_mut());
                let argc = c_int::try_from(words.len()).unwrap_or(c_int::MAX);
                // SAFETY: `parse_args` is `kokkosp_parse_args`; `argv` holds `argc` pointers to
                // NUL-terminated strings that outlive the call, then a null pointer, as a C
                // `main` receives them. Connectors read the strings and do not keep them.
                unsafe { parse_args(argc, argv.as_mut_ptr()) };
            }
        }
    }

    /// Whether the connector wants a kernel's instance fenced around its callbacks.
    pub(crate) fn requires_fencing(&self) -> bool {
        self.requires_fencing.load(Ordering::Relaxed)
    }

    /// Runs `call` (a call of one of this connector's entry points) under the call lock.
    #[inline]
    pub(crate) fn call<R>(&self, call: impl FnOnce() -> R) -> R {
        let _calls = CALL_LOCK.lock();
        call()
    }
}
