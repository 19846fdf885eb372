//! The C side of the Kokkos Tools interface: the structs a connector shares with the library
//! and the types of its `kokkosp_*` entry points, as `Kokkos_Profiling_C_Interface.h` (Kokkos
//! 4, `KOKKOSP_INTERFACE_VERSION` 20240906) declares them.

use std::ffi::{c_char, c_int, c_void};

/// The interface version hoplite passes to `kokkosp_init_library`: the one whose callbacks it
/// calls.
pub(crate) const INTERFACE_VERSION: u64 = 20240906;

/// `struct Kokkos_Profiling_KokkosPDeviceInfo`: what `kokkosp_init_library` is told about the
/// devices. Kokkos passes none (a count of 0 and a null pointer), and so does hoplite.
#[repr(C)]
pub(crate) struct DeviceInfo {
    /// Unused: hoplite passes no device info.
    _device_id: usize,
}

/// `struct Kokkos_Profiling_SpaceHandle`: a memory space's name, NUL-terminated in 64 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct SpaceHandle {
    pub(crate) name: [c_char; 64],
}

impl SpaceHandle {
    /// The handle of `name`, cut to 63 bytes (the last byte is the terminating NUL).
    pub(crate) fn new(name: &str) -> Self {
        let mut handle = SpaceHandle { name: [0; 64] };
        for (slot, byte) in handle
            .name
            .iter_mut()
            .zip(name.bytes().filter(|&b| b != 0).take(63))
        {
            *slot = byte as c_char;
        }
        handle
    }
}

/// `struct Kokkos_Tools_ToolSettings`: what a connector asks of the library.
#[repr(C)]
pub(crate) struct ToolSettings {
    /// Whether the connector wants the work before a kernel's begin and end callbacks
    /// finished (Kokkos fences globally; hoplite fences the launch's instance).
    pub(crate) requires_global_fencing: bool,
    /// Room for later settings.
    _padding: [bool; 255],
}

impl ToolSettings {
    /// Kokkos' defaults: fencing required.
    pub(crate) fn new() -> Self {
        ToolSettings {
            requires_global_fencing: true,
            _padding: [false; 255],
        }
    }
}

/// A function of the programming interface that takes no arguments (the padding's type).
pub(crate) type ToolAction = Option<unsafe extern "C" fn()>;

/// `struct Kokkos_Tools_ToolProgrammingInterface`: what a connector may ask the library to do.
#[repr(C)]
pub(crate) struct ToolProgrammingInterface {
    /// Fence the devices (the argument is a device id; Kokkos fences all of them).
    pub(crate) fence: Option<extern "C" fn(u32)>,
    /// Room for later actions.
    pub(crate) padding: [ToolAction; 31],
}

pub(crate) type InitFn = unsafe extern "C" fn(c_int, u64, u32, *mut DeviceInfo);
pub(crate) type FinalizeFn = unsafe extern "C" fn();
pub(crate) type ParseArgsFn = unsafe extern "C" fn(c_int, *mut *mut c_char);
pub(crate) type BeginFn = unsafe extern "C" fn(*const c_char, u32, *mut u64);
pub(crate) type EndFn = unsafe extern "C" fn(u64);
pub(crate) type PushFn = unsafe extern "C" fn(*const c_char);
pub(crate) type PopFn = unsafe extern "C" fn();
pub(crate) type DataFn = unsafe extern "C" fn(SpaceHandle, *const c_char, *const c_void, u64);
pub(crate) type CreateSectionFn = unsafe extern "C" fn(*const c_char, *mut u32);
pub(crate) type SectionFn = unsafe extern "C" fn(u32);
pub(crate) type EventFn = unsafe extern "C" fn(*const c_char);
pub(crate) type BeginDeepCopyFn = unsafe extern "C" fn(
    SpaceHandle,
    *const c_char,
    *const c_void,
    SpaceHandle,
    *const c_char,
    *const c_void,
    u64,
);
pub(crate) type EndDeepCopyFn = unsafe extern "C" fn();
pub(crate) type MetadataFn = unsafe extern "C" fn(*const c_char, *const c_char);
pub(crate) type RequestSettingsFn = unsafe extern "C" fn(u32, *mut ToolSettings);
pub(crate) type ProvideInterfaceFn = unsafe extern "C" fn(u32, ToolProgrammingInterface);

// The layouts Kokkos checks with static_asserts: a connector built against Kokkos' header
// reads these structs at these sizes.
const _: () = assert!(std::mem::size_of::<SpaceHandle>() == 64);
const _: () = assert!(std::mem::size_of::<ToolSettings>() == 256);
const _: () = assert!(std::mem::size_of::<ToolProgrammingInterface>() == 32 * std::mem::size_of::<usize>());

/// The entry points of a connector written in this program.
pub(crate) struct EntryPoints {
    pub(crate) finalize: Option<FinalizeFn>,
    pub(crate) begin_parallel_for: Option<BeginFn>,
    pub(crate) end_parallel_for: Option<EndFn>,
    pub(crate) begin_parallel_reduce: Option<BeginFn>,
    pub(crate) end_parallel_reduce: Option<EndFn>,
    pub(crate) begin_parallel_scan: Option<BeginFn>,
    pub(crate) end_parallel_scan: Option<EndFn>,
    pub(crate) begin_fence: Option<BeginFn>,
    pub(crate) end_fence: Option<EndFn>,
    pub(crate) push_region: Option<PushFn>,
    pub(crate) pop_region: Option<PopFn>,
    pub(crate) allocate_data: Option<DataFn>,
    pub(crate) deallocate_data: Option<DataFn>,
    pub(crate) begin_deep_copy: Option<BeginDeepCopyFn>,
    pub(crate) end_deep_copy: Option<EndDeepCopyFn>,
    pub(crate) create_section: Option<CreateSectionFn>,
    pub(crate) start_section: Option<SectionFn>,
    pub(crate) stop_section: Option<SectionFn>,
    pub(crate) profile_event: Option<EventFn>,
}
