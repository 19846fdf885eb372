//! NVRTC and ptxas, opened at run time: compiles a kernel's CUDA C to PTX for `compute_90` and
//! assembles the PTX for `sm_90`, recording registers and spills. No GPU is needed.
//!
//! The library is opened by path (the PyPI wheel `nvidia-cuda-nvrtc-cu12` puts it in a cache
//! folder that `cargo xtask test` installs): cudarc's dynamic loader tries only library file
//! names resolved by the system search path, which a process cannot point at a folder once it
//! runs.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::CheckError;

type Program = *mut c_void;
type CreateProgram = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileProgram = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
type GetSize = unsafe extern "C" fn(Program, *mut usize) -> c_int;
type GetText = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
type DestroyProgram = unsafe extern "C" fn(*mut Program) -> c_int;
type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// The environment variable naming `libnvrtc.so.12` (set by `cargo xtask test`).
pub const NVRTC_ENV: &str = "HOPLITE_NVRTC_LIB";
/// The environment variable naming the `ptxas` program (set by `cargo xtask test`).
pub const PTXAS_ENV: &str = "HOPLITE_PTXAS";

/// The options every kernel is compiled with: Rust never contracts `a * b + c` into a fused
/// multiply-add, so neither does the device code.
pub const NVRTC_OPTIONS: [&str; 3] = ["--gpu-architecture=compute_90", "--fmad=false", "--std=c++17"];

/// NVRTC, loaded from a file.
pub struct Nvrtc {
    create: CreateProgram,
    compile: CompileProgram,
    log_size: GetSize,
    log: GetText,
    ptx_size: GetSize,
    ptx: GetText,
    destroy: DestroyProgram,
    version: Version,
    // Keeps the functions above loaded.
    _library: libloading::Library,
}

fn load_error(what: &str, e: impl std::fmt::Display) -> CheckError {
    CheckError::Arguments {
        kernel: "nvrtc",
        message: format!("{what}: {e}"),
    }
}

impl Nvrtc {
    /// Opens NVRTC from `path` (`libnvrtc.so.12`).
    ///
    /// # Errors
    ///
    /// When the file cannot be loaded or lacks an NVRTC function.
    pub fn open(path: &Path) -> Result<Nvrtc, CheckError> {
        // SAFETY: loading NVRTC runs its initializers, which only set up the library itself.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| load_error(&format!("opening {}", path.display()), e))?;
        macro_rules! symbol {
            ($name:literal, $ty:ty) => {
                // SAFETY: the NVRTC C API declares this function with exactly this signature
                // (nvrtc.h); the pointer stays valid while `library` is loaded, which `Nvrtc`
                // keeps.
                unsafe { library.get::<$ty>($name) }
                    .map(|s| *s)
                    .map_err(|e| load_error("a missing NVRTC function", e))?
            };
        }
        Ok(Nvrtc {
            create: symbol!(b"nvrtcCreateProgram\0", CreateProgram),
            compile: symbol!(b"nvrtcCompileProgram\0", CompileProgram),
            log_size: symbol!(b"nvrtcGetProgramLogSize\0", GetSize),
            log: symbol!(b"nvrtcGetProgramLog\0", GetText),
            ptx_size: symbol!(b"nvrtcGetPTXSize\0", GetSize),
            ptx: symbol!(b"nvrtcGetPTX\0", GetText),
            destroy: symbol!(b"nvrtcDestroyProgram\0", DestroyProgram),
            version: symbol!(b"nvrtcVersion\0", Version),
            _library: library,
        })
    }

    /// NVRTC's version (major, minor).
    pub fn version(&self) -> (i32, i32) {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: both pointers are to live integers.
        unsafe { (self.version)(&mut major, &mut minor) };
        (major, minor)
    }

    /// Compiles `source` with [`NVRTC_OPTIONS`] and returns the PTX.
    ///
    /// # Errors
    ///
    /// [`CheckError::Compile`] with NVRTC's log when it rejects the source.
    pub fn compile(&self, kernel: &'static str, source: &str) -> Result<String, CheckError> {
        let source_c = CString::new(source).map_err(|e| load_error("the source holds a NUL", e))?;
        let name =
            CString::new(format!("{kernel}.cu")).map_err(|e| load_error("the kernel name holds a NUL", e))?;
        let options: Vec<CString> = NVRTC_OPTIONS
            .iter()
            .filter_map(|o| CString::new(*o).ok())
            .collect();
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut program: Program = std::ptr::null_mut();
        // SAFETY: the source and name are NUL-terminated strings that outlive the call; no
        // headers are passed (count 0, null arrays).
        let status = unsafe {
            (self.create)(
                &mut program,
                source_c.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if status != 0 {
            return Err(load_error("nvrtcCreateProgram failed", status));
        }
        // SAFETY: `program` was created above; the options are NUL-terminated strings that
        // outlive the call.
        let status = unsafe { (self.compile)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        let result = if status != 0 {
            Err(CheckError::Compile {
                kernel,
                compiler: "nvrtc".to_owned(),
                log: self.text(program, self.log_size, self.log),
            })
        } else {
            Ok(self.text(program, self.ptx_size, self.ptx))
        };
        // SAFETY: `program` was created above and is not used after this.
        unsafe { (self.destroy)(&mut program) };
        result
    }

    /// A text NVRTC holds for `program`: its log or its PTX.
    fn text(&self, program: Program, size: GetSize, get: GetText) -> String {
        let mut len = 0usize;
        // SAFETY: `program` is live; `len` is a live integer.
        if unsafe { size(program, &mut len) } != 0 || len == 0 {
            return String::new();
        }
        let mut buffer = vec![0u8; len];
        // SAFETY: NVRTC writes exactly `len` bytes (the size it reported, NUL included).
        if unsafe { get(program, buffer.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        CStr::from_bytes_until_nul(&buffer)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// What ptxas reports for one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxasReport {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of stack frame.
    pub stack_frame: u32,
}

/// Assembles `ptx` for `sm_90` with `ptxas -v` in `dir` and reads the resource usage.
///
/// # Errors
///
/// [`CheckError::Compile`] with ptxas's output when it rejects the PTX or reports nothing.
pub fn ptxas(program: &Path, kernel: &'static str, ptx: &str, dir: &Path) -> Result<PtxasReport, CheckError> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| CheckError::Io { kernel, what, source }
    };
    std::fs::create_dir_all(dir).map_err(io("creating the build folder"))?;
    let input: PathBuf = dir.join(format!("{kernel}.ptx"));
    let output: PathBuf = dir.join(format!("{kernel}.cubin"));
    std::fs::write(&input, ptx).map_err(io("writing the PTX"))?;
    let run = Command::new(program)
        .args(["-arch=sm_90", "-v", "-o"])
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(io("running ptxas"))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let number_before = |key: &str| -> Option<u32> {
        let at = log.find(key)?;
        log[..at].split_whitespace().last()?.parse().ok()
    };
    match (run.status.success(), number_before(" registers")) {
        (true, Some(registers)) => Ok(PtxasReport {
            registers,
            spill_stores: number_before(" bytes spill stores").unwrap_or(0),
            spill_loads: number_before(" bytes spill loads").unwrap_or(0),
            stack_frame: number_before(" bytes stack frame").unwrap_or(0),
        }),
        _ => Err(CheckError::Compile {
            kernel,
            compiler: program.display().to_string(),
            log,
        }),
    }
}
