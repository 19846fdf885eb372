//! Emulated modules: a kernel's CUDA C compiled once by the host C++ compiler under
//! `hoplite_abi::HOST_DEVICE_HEADER` (the CUDA built-ins for the CPU) into a shared library, loaded, and run block by
//! block. As on a GPU, the driver knows nothing of hoplite: it finds the entry by name, reads
//! its parameters' sizes from the compiled entry itself (as a driver reads them from the
//! module), copies the values at launch and runs the grid.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::AtomicU32;

use super::sanitizer::Access;
use super::stream::{Fault, LAUNCH_FAILED};
use crate::CudaError;
use crate::geometry::LaunchGeometry;

/// The CUDA built-ins for the CPU and the run of a grid.
const DEVICE_HEADER: &str = hoplite_abi::HOST_DEVICE_HEADER;

/// The environment setting naming the folder compiled kernels go to (default: a folder of
/// the system's temporary directory).
pub const BUILD_DIR_ENV: &str = "HOPLITE_CUDA_EMULATED_BUILD";

/// `hl_emu_launch(grid, block, shared, params)`.
type LaunchFn = unsafe extern "C" fn(*const u32, *const u32, u64, *mut *mut c_void) -> i32;
/// `hl_emu_params(sizes, aligns, kinds, capacity)`.
type ParamsFn = unsafe extern "C" fn(*mut u64, *mut u64, *mut u64, i32) -> i32;

/// A loaded kernel.
pub(super) struct EmuFunction {
    pub(super) kernel: &'static str,
    launch: LaunchFn,
    /// Each parameter's size and alignment.
    params: Vec<(usize, usize)>,
    /// Each parameter's kind: a value, or a pointer to memory the kernel reads or may write.
    kinds: Vec<ParamKind>,
    /// The dynamic shared memory a launch may ask for
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub(super) max_dynamic_shared: AtomicU32,
    // Keeps the code `launch` points into loaded.
    _library: libloading::Library,
}

fn build_dir() -> PathBuf {
    std::env::var_os(BUILD_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hoplite-cuda-emulated"))
}

/// The source compiled for `entry` of `source`: the header, the kernel, and the two functions
/// the driver calls.
fn module_source(source: &str, entry: &str) -> String {
    format!(
        "{DEVICE_HEADER}\n#line 1 \"kernel.cu\"\n{source}\n\
         static void hl_emu_body(void* p) {{ hl_call(&{entry}, (void**)p); }}\n\
         extern \"C\" int hl_emu_launch(const unsigned* grid, const unsigned* block, unsigned long long shared, void** p) {{\n\
         \x20   return hl_run_grid(grid, block, shared, hl_emu_body, (void*)p);\n}}\n\
         extern \"C\" int hl_emu_params(unsigned long long* sizes, unsigned long long* aligns, unsigned long long* kinds, int cap) {{\n\
         \x20   return hl_param_layout(&{entry}, sizes, aligns, kinds, cap);\n}}\n"
    )
}

impl EmuFunction {
    /// Compiles (or finds compiled) and loads the entry `entry` of `source`.
    pub(super) fn load(kernel: &'static str, entry: &str, source: &str) -> Result<EmuFunction, CudaError> {
        let compile_error = |status: &str, log: String| CudaError::Compile {
            kernel,
            arch: "the emulated device".into(),
            status: status.to_owned(),
            log,
        };
        if entry.is_empty() || !entry.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(compile_error(
                "invalid entry name",
                format!("`{entry}` is not a C identifier"),
            ));
        }
        let Some(compiler) = hoplite_abi::host_compiler() else {
            return Err(compile_error(
                "no host C++ compiler",
                "the emulated driver compiles kernels with $CXX, g++ or c++; none runs".into(),
            ));
        };
        let text = module_source(source, entry);
        let library =
            hoplite_abi::build_host_library(&compiler, &build_dir(), entry, &text).map_err(|e| match e {
                hoplite_abi::HostBuildError::Rejected { compiler, log } => {
                    compile_error(&format!("`{compiler}` rejected it"), log)
                }
                other => compile_error("building the kernel failed", other.to_string()),
            })?;
        // SAFETY: the library was compiled from exactly this source and the device header
        // (its name is their hash); its initializers only set up the header's globals.
        let lib = unsafe { libloading::Library::new(&library) }
            .map_err(|e| compile_error("loading the compiled kernel failed", e.to_string()))?;
        // SAFETY: `module_source` defines both symbols with exactly these signatures.
        let (launch, params_fn) = unsafe {
            let launch = lib.get::<LaunchFn>(b"hl_emu_launch\0").map(|s| *s);
            let params = lib.get::<ParamsFn>(b"hl_emu_params\0").map(|s| *s);
            (launch, params)
        };
        let missing =
            |e: libloading::Error| compile_error("the compiled kernel lacks its launcher", e.to_string());
        // As `cuModuleGetFunction`, the entry is found by its plain name: an `extern "C"` one.
        let mut symbol = entry.as_bytes().to_vec();
        symbol.push(0);
        // SAFETY: only the symbol's presence is asked; the address is not used.
        if unsafe { lib.get::<*const c_void>(&symbol) }.is_err() {
            return Err(CudaError::Driver {
                call: "cuModuleGetFunction",
                code: 500,
                name: "CUDA_ERROR_NOT_FOUND".into(),
                description: format!(
                    "named symbol not found: the module defines no `extern \"C\"` entry `{entry}`"
                ),
            });
        }
        let (launch, params_fn) = (launch.map_err(missing)?, params_fn.map_err(missing)?);
        let mut sizes = [0u64; 256];
        let mut aligns = [0u64; 256];
        let mut kinds = [0u64; 256];
        // SAFETY: the three arrays hold the 256 entries the capacity says.
        let count = unsafe { params_fn(sizes.as_mut_ptr(), aligns.as_mut_ptr(), kinds.as_mut_ptr(), 256) };
        let count = usize::try_from(count).unwrap_or(0).min(256);
        let params = (0..count)
            .map(|k| (sizes[k] as usize, aligns[k].max(1) as usize))
            .collect();
        let kinds = kinds[..count]
            .iter()
            .map(|&k| match k {
                1 => ParamKind::Reads,
                2 => ParamKind::Writes,
                3 => ParamKind::Atomic,
                _ => ParamKind::Value,
            })
            .collect();
        Ok(EmuFunction {
            kernel,
            launch,
            params,
            kinds,
            max_dynamic_shared: AtomicU32::new(0),
            _library: lib,
        })
    }

    /// The addresses a launch with `params` passes in pointer parameters, and how the kernel
    /// touches them.
    pub(super) fn pointers(&self, params: &ParamBlock) -> Vec<(u64, Access)> {
        let base = params.words.as_ptr().cast::<u8>();
        self.kinds
            .iter()
            .zip(&params.offsets)
            .filter(|(k, _)| **k != ParamKind::Value)
            .map(|(k, &at)| {
                // SAFETY: a pointer parameter is 8 bytes at `at`, inside the block.
                let address = unsafe { base.add(at).cast::<u64>().read_unaligned() };
                let access = match k {
                    ParamKind::Reads => Access::Read,
                    ParamKind::Atomic => Access::Atomic,
                    ParamKind::Value | ParamKind::Writes => Access::Write,
                };
                (address, access)
            })
            .collect()
    }

    /// The sizes of the entry's parameters.
    pub(super) fn param_sizes(&self) -> Vec<usize> {
        self.params.iter().map(|&(size, _)| size).collect()
    }

    /// Copies the parameter values `pointers` point at, as `cuLaunchKernel` does before it
    /// returns; `None` when their count is not the entry's.
    ///
    /// # Safety
    ///
    /// Each pointer is valid for reads of its parameter's size.
    pub(super) unsafe fn copy_params(&self, pointers: &[*mut c_void]) -> Option<ParamBlock> {
        if pointers.len() != self.params.len() {
            return None;
        }
        let mut offsets = Vec::with_capacity(self.params.len());
        let mut end = 0usize;
        for &(size, align) in &self.params {
            let at = end.div_ceil(align.min(16)) * align.min(16);
            offsets.push(at);
            end = at + size;
        }
        let mut words = vec![0u128; end.div_ceil(16).max(1)];
        let base = words.as_mut_ptr().cast::<u8>();
        for ((&(size, _), &at), &p) in self.params.iter().zip(&offsets).zip(pointers) {
            // SAFETY: `p` is readable for `size` bytes (the caller's promise); the block holds
            // `end >= at + size` bytes.
            unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), base.add(at), size) };
        }
        Some(ParamBlock { words, offsets })
    }

    /// Runs the grid `g` with the parameter values `params` on the calling thread.
    ///
    /// # Safety
    ///
    /// As for a kernel launch: the values are the entry's parameters, and every address among
    /// them is memory the kernel may touch, alive until this returns.
    pub(super) unsafe fn run(&self, g: &LaunchGeometry, params: &mut ParamBlock) -> Result<(), Fault> {
        let base = params.words.as_mut_ptr().cast::<u8>();
        // SAFETY: each offset lies inside the block (see `copy_params`).
        let mut pointers: Vec<*mut c_void> = params
            .offsets
            .iter()
            .map(|&at| unsafe { base.add(at) }.cast())
            .collect();
        // SAFETY: the launcher reads one value per pointer with the entry's own types, which
        // `copy_params` laid out with the entry's sizes and alignments; the memory is the
        // caller's promise.
        let status = unsafe {
            (self.launch)(
                g.grid.as_ptr(),
                g.block.as_ptr(),
                u64::from(g.shared_bytes),
                pointers.as_mut_ptr(),
            )
        };
        if status == 0 { Ok(()) } else { Err(LAUNCH_FAILED) }
    }
}

/// What a parameter of an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ParamKind {
    /// A value.
    Value,
    /// A pointer to `const`: memory the kernel reads.
    Reads,
    /// A pointer to mutable memory: memory the kernel may write.
    Writes,
    /// A pointer to volatile memory: memory the kernel updates atomically.
    Atomic,
}

/// A launch's copied parameter values.
pub(super) struct ParamBlock {
    words: Vec<u128>,
    offsets: Vec<usize>,
}
