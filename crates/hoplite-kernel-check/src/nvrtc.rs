//! NVRTC and ptxas, opened at run time: compiles a kernel's CUDA C to PTX for `compute_90` and
//! assembles the PTX for `sm_90`, recording registers and spills. No GPU is needed.
//!
//! The loader and the ptxas runner are hoplite-cuda's (`hoplite_cuda::nvrtc`), so the checks
//! compile exactly what the CUDA backend's module cache compiles; this module gives them the
//! checks' error type. The library is opened by path (the PyPI wheel `nvidia-cuda-nvrtc-cu12`
//! puts it in a cache folder that `cargo xtask test` installs).

use std::path::Path;

use hoplite_cuda::CudaError;

use crate::CheckError;

pub use hoplite_cuda::nvrtc::{NVRTC_ENV, PTXAS_ENV, PtxasReport};

/// The architecture every kernel is compiled for.
const ARCH: &str = "compute_90";

/// The options every kernel is compiled with (hoplite-cuda's, for [`ARCH`]): Rust never
/// contracts `a * b + c` into a fused multiply-add, so neither does the device code.
pub const NVRTC_OPTIONS: [&str; 3] = ["--gpu-architecture=compute_90", "--fmad=false", "--std=c++17"];

/// The checks' error for a CUDA one: a compiler's rejection names the compiler and keeps its
/// status and log.
fn check_error(kernel: &'static str, compiler: &str, e: CudaError) -> CheckError {
    match e {
        CudaError::Compile { status, log, .. } => CheckError::Compile {
            kernel,
            compiler: compiler.to_owned(),
            log: format!("{status}\n{log}"),
        },
        other => CheckError::Arguments {
            kernel,
            message: other.to_string(),
        },
    }
}

/// NVRTC, loaded from a file.
pub struct Nvrtc {
    inner: hoplite_cuda::nvrtc::Nvrtc,
}

impl Nvrtc {
    /// Opens NVRTC from `path` (`libnvrtc.so.12`).
    ///
    /// # Errors
    ///
    /// When the file cannot be loaded or lacks an NVRTC function.
    pub fn open(path: &Path) -> Result<Nvrtc, CheckError> {
        hoplite_cuda::nvrtc::Nvrtc::open(path)
            .map(|inner| Nvrtc { inner })
            .map_err(|e| check_error("nvrtc", "nvrtc", e))
    }

    /// NVRTC's version (major, minor).
    pub fn version(&self) -> (i32, i32) {
        self.inner.version()
    }

    /// Compiles `source` with [`NVRTC_OPTIONS`] and returns the PTX.
    ///
    /// # Errors
    ///
    /// [`CheckError::Compile`] with NVRTC's log when it rejects the source.
    pub fn compile(&self, kernel: &'static str, source: &str) -> Result<String, CheckError> {
        self.inner
            .compile(kernel, ARCH, source)
            .map_err(|e| check_error(kernel, "nvrtc", e))
    }
}

/// Assembles `ptx` for `sm_90` with `ptxas -v` in `dir` and reads the resource usage.
///
/// # Errors
///
/// [`CheckError::Compile`] with ptxas's output when it rejects the PTX or reports nothing, or
/// with why the files could not be written or ptxas not run.
pub fn ptxas(program: &Path, kernel: &'static str, ptx: &str, dir: &Path) -> Result<PtxasReport, CheckError> {
    hoplite_cuda::nvrtc::ptxas(program, kernel, ptx, dir)
        .map_err(|e| check_error(kernel, &program.display().to_string(), e))
}
