//! NVRTC, opened at run time by path or by its usual names, and the module cache: a
//! [`DeviceKernel`]'s CUDA C compiled to PTX at first use, keyed by the kernel's stable
//! source hash and the device's architecture, kept in memory and on disk.
//!
//! NVRTC needs no GPU, so this part is tested on any machine that has the library (the PyPI
//! wheel `nvidia-cuda-nvrtc-cu12` is enough; `cargo xtask test` installs it and names it in
//! `HOPLITE_NVRTC_LIB`). cudarc's own loader only tries library names on the system search
//! path, which cannot point at the wheel's folder, so NVRTC is opened here with libloading.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use hoplite_core::device_kernel::DeviceKernel;
use parking_lot::Mutex;

use crate::CudaError;

/// The environment variable naming the NVRTC library file (`libnvrtc.so.12`).
pub const NVRTC_ENV: &str = "HOPLITE_NVRTC_LIB";
/// The environment variable naming the folder of the on-disk module cache.
pub const CACHE_ENV: &str = "HOPLITE_CUDA_CACHE";

/// Names tried when [`NVRTC_ENV`] is unset, through the system's library search path.
const NVRTC_NAMES: [&str; 3] = ["libnvrtc.so.12", "libnvrtc.so", "nvrtc64_120_0.dll"];

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
type NumArchs = unsafe extern "C" fn(*mut c_int) -> c_int;
type Archs = unsafe extern "C" fn(*mut c_int) -> c_int;

/// NVRTC, loaded.
pub struct Nvrtc {
    create: CreateProgram,
    compile: CompileProgram,
    log_size: GetSize,
    log: GetText,
    ptx_size: GetSize,
    ptx: GetText,
    destroy: DestroyProgram,
    version: Version,
    num_archs: NumArchs,
    archs: Archs,
    path: String,
    // Keeps the functions above loaded.
    _library: libloading::Library,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc").field("path", &self.path).finish()
    }
}

impl Nvrtc {
    /// The process's NVRTC: the file [`NVRTC_ENV`] names, else the first of the usual library
    /// names the system finds. Opened once.
    ///
    /// ```
    /// match hoplite_cuda::nvrtc::Nvrtc::get() {
    ///     Ok(nvrtc) => println!("NVRTC {:?}", nvrtc.version()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::NoNvrtc`] naming what was tried.
    pub fn get() -> Result<&'static Nvrtc, CudaError> {
        static NVRTC: OnceLock<Result<Nvrtc, CudaError>> = OnceLock::new();
        NVRTC
            .get_or_init(|| {
                let candidates: Vec<String> = match std::env::var(NVRTC_ENV) {
                    Ok(path) if !path.is_empty() => vec![path],
                    _ => NVRTC_NAMES.iter().map(|s| (*s).to_owned()).collect(),
                };
                let mut tried = Vec::new();
                for c in &candidates {
                    match Nvrtc::open_named(c) {
                        Ok(n) => return Ok(n),
                        Err(e) => tried.push(format!("{c} ({e})")),
                    }
                }
                Err(CudaError::NoNvrtc {
                    looked_for: tried.join(", "),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Opens NVRTC from the file `path` (`libnvrtc.so.12`), apart from the process's
    /// [`get`](Self::get): for tools that name the library themselves.
    ///
    /// ```
    /// let e = hoplite_cuda::nvrtc::Nvrtc::open(std::path::Path::new("/no/such/libnvrtc.so"));
    /// assert!(matches!(e, Err(hoplite_cuda::CudaError::NoNvrtc { .. })));
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::NoNvrtc`] with why the file does not load.
    pub fn open(path: &Path) -> Result<Nvrtc, CudaError> {
        let name = path.to_string_lossy();
        Nvrtc::open_named(&name).map_err(|e| CudaError::NoNvrtc {
            looked_for: format!("{name} ({e})"),
        })
    }

    fn open_named(path: &str) -> Result<Nvrtc, String> {
        // SAFETY: loading NVRTC runs its initializers, which only set up the library itself.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
        macro_rules! symbol {
            ($name:literal, $ty:ty) => {
                // SAFETY: the NVRTC C API declares this function with exactly this signature
                // (nvrtc.h); the pointer stays valid while `library` is loaded, which `Nvrtc`
                // keeps.
                unsafe { library.get::<$ty>($name) }
                    .map(|s| *s)
                    .map_err(|e| e.to_string())?
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
            num_archs: symbol!(b"nvrtcGetNumSupportedArchs\0", NumArchs),
            archs: symbol!(b"nvrtcGetSupportedArchs\0", Archs),
            path: path.to_owned(),
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

    /// The architectures this NVRTC compiles for, as compute capabilities times ten (`90`
    /// for `compute_90`), in increasing order. Each CUDA release drops old ones (NVRTC 13
    /// starts at 75).
    ///
    /// ```
    /// if let Ok(nvrtc) = hoplite_cuda::nvrtc::Nvrtc::get() {
    ///     assert!(nvrtc.supported_architectures().contains(&90));
    /// }
    /// ```
    pub fn supported_architectures(&self) -> Vec<u32> {
        let mut count: c_int = 0;
        // SAFETY: a pointer to a live integer.
        if unsafe { (self.num_archs)(&mut count) } != 0 || count <= 0 {
            return Vec::new();
        }
        let mut archs: Vec<c_int> = vec![0; count as usize];
        // SAFETY: `archs` has room for the `count` integers NVRTC writes.
        if unsafe { (self.archs)(archs.as_mut_ptr()) } != 0 {
            return Vec::new();
        }
        archs.into_iter().filter_map(|a| u32::try_from(a).ok()).collect()
    }

    /// The architecture to compile for a device of virtual architecture `arch` (such as
    /// `compute_90`): `arch` itself where this NVRTC supports it, else the newest it supports
    /// below it, whose PTX the driver compiles for the newer device when it loads it. Other
    /// names come back unchanged (NVRTC then reports them).
    ///
    /// ```
    /// if let Ok(nvrtc) = hoplite_cuda::nvrtc::Nvrtc::get() {
    ///     assert_eq!(nvrtc.target_for("compute_90"), "compute_90");
    ///     assert!(nvrtc.target_for("compute_990").starts_with("compute_"));
    /// }
    /// ```
    pub fn target_for(&self, arch: &str) -> String {
        let Some(cc) = arch.strip_prefix("compute_").and_then(|d| d.parse::<u32>().ok()) else {
            return arch.to_owned();
        };
        match self
            .supported_architectures()
            .into_iter()
            .filter(|&s| s <= cc)
            .max()
        {
            Some(best) => format!("compute_{best}"),
            None => arch.to_owned(),
        }
    }

    /// Compiles `source` for the virtual architecture `arch` (such as `compute_90`) and
    /// returns the PTX. Floating-point contraction is off: Rust never fuses `a * b + c`, so
    /// neither does the device.
    ///
    /// # Errors
    ///
    /// [`CudaError::Compile`] with NVRTC's log.
    pub fn compile(&self, kernel: &'static str, arch: &str, source: &str) -> Result<String, CudaError> {
        let fail = |status: String, log: String| CudaError::Compile {
            kernel,
            arch: arch.to_owned(),
            status,
            log,
        };
        let source_c =
            CString::new(source).map_err(|_| fail("the source holds a NUL byte".into(), String::new()))?;
        let name = CString::new(format!("{kernel}.cu"))
            .map_err(|_| fail("the name holds a NUL byte".into(), String::new()))?;
        let options: Vec<CString> = [
            format!("--gpu-architecture={arch}"),
            "--fmad=false".to_owned(),
            "--std=c++17".to_owned(),
        ]
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| fail("an option holds a NUL byte".into(), String::new())))
        .collect::<Result<_, _>>()?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut program: Program = std::ptr::null_mut();
        // SAFETY: the strings are NUL-terminated and outlive the call; no headers (0, null).
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
            return Err(fail(
                format!("nvrtcCreateProgram returned {status}"),
                String::new(),
            ));
        }
        // SAFETY: `program` was created above; the options outlive the call.
        let status = unsafe { (self.compile)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        let result = if status == 0 {
            Ok(self.text(program, self.ptx_size, self.ptx))
        } else {
            Err(fail(
                format!("nvrtcCompileProgram returned {status}"),
                self.text(program, self.log_size, self.log),
            ))
        };
        // SAFETY: `program` is live and not used afterwards.
        unsafe { (self.destroy)(&mut program) };
        result
    }

    /// Reads a size-then-text pair (the log or the PTX) of `program`, without the final NUL.
    fn text(&self, program: Program, size: GetSize, get: GetText) -> String {
        let mut n = 0usize;
        // SAFETY: `program` is live; `n` is a live out pointer.
        if unsafe { size(program, &mut n) } != 0 || n == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` holds the `n` bytes NVRTC said the text takes.
        if unsafe { get(program, buf.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        while buf.last() == Some(&0) {
            buf.pop();
        }
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// The environment variable naming the `ptxas` program (`cargo xtask test` sets it to the
/// one of the PyPI wheel `nvidia-cuda-nvcc-cu12`).
pub const PTXAS_ENV: &str = "HOPLITE_PTXAS";

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

/// Assembles `ptx` for `sm_90` with `ptxas -v` (the program at `program`) in the folder
/// `dir` and reads the resource usage of its entry. No GPU is needed.
///
/// ```
/// use hoplite_cuda::nvrtc::ptxas;
/// let dir = std::env::temp_dir();
/// let e = ptxas(std::path::Path::new("/no/such/ptxas"), "k", "", &dir);
/// assert!(matches!(e, Err(hoplite_cuda::CudaError::Compile { .. })));
/// ```
///
/// # Errors
///
/// [`CudaError::Compile`] (architecture `sm_90`) with ptxas's output when it rejects the PTX
/// or reports nothing, or with the reason the files could not be written or ptxas not run.
pub fn ptxas(program: &Path, kernel: &'static str, ptx: &str, dir: &Path) -> Result<PtxasReport, CudaError> {
    let fail = |status: String, log: String| CudaError::Compile {
        kernel,
        arch: "sm_90".to_owned(),
        status,
        log,
    };
    let io = |what: &str| {
        let what = what.to_owned();
        move |e: std::io::Error| fail(format!("{what}: {e}"), String::new())
    };
    std::fs::create_dir_all(dir).map_err(io("creating the build folder"))?;
    let input = dir.join(format!("{kernel}.ptx"));
    let output = dir.join(format!("{kernel}.cubin"));
    std::fs::write(&input, ptx).map_err(io("writing the PTX"))?;
    let run = std::process::Command::new(program)
        .args(["-arch=sm_90", "-v", "-o"])
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(io(&format!("running {}", program.display())))?;
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
        _ => Err(fail(
            format!("{} rejected the PTX ({})", program.display(), run.status),
            log,
        )),
    }
}

/// Compiled kernels: PTX per (source hash, architecture), in memory and in a folder on disk.
///
/// ```
/// use hoplite_cuda::nvrtc::ModuleCache;
/// let cache = ModuleCache::new(Some(std::env::temp_dir().join("hoplite-doc-cache")));
/// assert_eq!(cache.len(), 0);
/// ```
#[derive(Debug)]
pub struct ModuleCache {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<(u64, String), Arc<str>>>,
}

/// Where a [`ModuleCache::ptx`] answer came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheHit {
    /// Already compiled in this process.
    Memory,
    /// Read from the cache folder.
    Disk,
    /// Compiled with NVRTC now.
    Compiled,
}

impl ModuleCache {
    /// A cache keeping files in `dir` (none: in memory only).
    pub fn new(dir: Option<PathBuf>) -> ModuleCache {
        ModuleCache {
            dir,
            memory: Mutex::new(HashMap::new()),
        }
    }

    /// The process's cache: its folder is [`CACHE_ENV`] if set, else `hoplite-cuda` under
    /// `$XDG_CACHE_HOME` or `$HOME/.cache`, else in memory only.
    pub fn global() -> &'static ModuleCache {
        static CACHE: OnceLock<ModuleCache> = OnceLock::new();
        CACHE.get_or_init(|| {
            let dir = std::env::var_os(CACHE_ENV)
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("hoplite-cuda")))
                .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache/hoplite-cuda")));
            ModuleCache::new(dir)
        })
    }

    /// The number of modules held in memory.
    pub fn len(&self) -> usize {
        self.memory.lock().len()
    }

    /// Whether no module is held in memory.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file a module of `hash` for `arch` is kept in.
    pub fn path_of(&self, hash: u64, arch: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{hash:016x}-{arch}.ptx")))
    }

    /// `K`'s PTX for `arch`: from memory, else the cache folder, else compiled with NVRTC
    /// (and then stored in both). A folder that cannot be written only costs a compile next
    /// time.
    ///
    /// # Errors
    ///
    /// [`CudaError::NoNvrtc`] when it must compile and NVRTC is missing;
    /// [`CudaError::Compile`] with NVRTC's log when the source does not compile.
    pub fn ptx<K: DeviceKernel>(&self, arch: &str) -> Result<(Arc<str>, CacheHit), CudaError> {
        self.ptx_of_source(K::source_hash(), K::NAME, K::ENTRY, arch, K::cuda_source())
    }

    /// The PTX of `source` for `arch`, under the key `hash` (which must change with the
    /// source and the entry: `stable_hash(&[entry, source])`, as `#[kernel]` kernels and raw
    /// kernels compute it): from memory, else the cache folder (a file that does not hold
    /// `entry` is compiled again), else compiled with NVRTC and stored in both. `kernel`
    /// names the kernel in errors.
    ///
    /// ```
    /// use hoplite_core::device_kernel::stable_hash;
    /// use hoplite_cuda::nvrtc::ModuleCache;
    /// let src = "extern \"C\" __global__ void noop() {}";
    /// let cache = ModuleCache::new(None);
    /// match cache.ptx_of_source(stable_hash(&[b"noop", src.as_bytes()]), "noop", "noop", "compute_90", src) {
    ///     Ok((ptx, _)) => assert!(ptx.contains(".entry noop")),
    ///     Err(e) => println!("{e}"), // no NVRTC here
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`ptx`](Self::ptx).
    pub fn ptx_of_source(
        &self,
        hash: u64,
        kernel: &'static str,
        entry: &str,
        arch: &str,
        source: &str,
    ) -> Result<(Arc<str>, CacheHit), CudaError> {
        let key = (hash, arch.to_owned());
        if let Some(ptx) = self.memory.lock().get(&key) {
            return Ok((ptx.clone(), CacheHit::Memory));
        }
        let path = self.path_of(key.0, arch);
        if let Some(ptx) = path.as_deref().and_then(|p| read_cached(p, entry)) {
            let ptx: Arc<str> = ptx.into();
            self.memory.lock().insert(key, ptx.clone());
            return Ok((ptx, CacheHit::Disk));
        }
        let nvrtc = Nvrtc::get()?;
        let ptx = nvrtc.compile(kernel, &nvrtc.target_for(arch), source)?;
        if let Some(p) = &path {
            write_cached(p, &ptx);
        }
        let ptx: Arc<str> = ptx.into();
        self.memory.lock().insert(key, ptx.clone());
        Ok((ptx, CacheHit::Compiled))
    }
}

/// A cached file's PTX, if it is there and holds the entry (a torn or foreign file is
/// ignored and compiled again).
fn read_cached(path: &Path, entry: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    (text.contains(".entry") && text.contains(entry)).then_some(text)
}

/// Writes `ptx` to `path` through a temporary file and a rename, so readers never see half a
/// file. Failures are ignored: the cache is only an optimization.
fn write_cached(path: &Path, ptx: &str) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, ptx).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}
