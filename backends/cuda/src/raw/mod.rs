//! Raw kernels in GrCUDA's style: CUDA C source plus a signature string in GrCUDA's NIDL
//! syntax, compiled by the module cache (NVRTC) and launched with an explicit geometry.
//!
//! A signature names the kernel and its parameters:
//!
//! ```text
//! axpy(y: out pointer double, x: in pointer double, a: double, n: sint64)
//! ```
//!
//! * A pointer parameter is `[in | out | inout | const] pointer TYPE`: `in` and `const` (as
//!   GrCUDA reads a `const` pointer) are read only and take [`RawArg::read`]; `out` and
//!   `inout`, and a pointer without a direction (GrCUDA's default), are written and take
//!   [`RawArg::write`] or [`RawArg::atomic`].
//! * A scalar parameter is `TYPE`, with the NFI type names GrCUDA uses: `sint32`, `uint32`,
//!   `sint64`, `uint64`, `float`, `double`, and `bool`. The 8- and 16-bit types (`sint8`,
//!   `char`, ...) parse to a typed error, since hoplite's device scalars have none.
//!
//! The kernel must be `extern "C" __global__` in the source (GrCUDA mangles C++ names; here
//! the name in the signature is the entry's symbol). After NVRTC compiles the source, the
//! entry's parameters in the PTX are checked against the signature (count and sizes), so a
//! signature that disagrees with the source is refused before any launch.
//!
//! Before anything reaches the device a launch checks the arguments against the signature:
//! their number, pointer or scalar, element type, access (readers for `in`, writers for
//! `out`), that views are contiguous (a raw kernel indexes a flat array) and that no written
//! view overlaps another view.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use hoplite_core::device_kernel::{HandleAccess, ScalarType, stable_hash};
use parking_lot::Mutex;

mod arg;
mod signature;

pub use self::arg::RawArg;
use self::arg::device_args;
pub use self::signature::{PointerDirection, RawParam, RawSignature, parse_signature};

use crate::geometry::{KernelResources, LaunchGeometry, blocks_per_sm, fits};
use crate::launch::DeviceArg;
use crate::launch::{Plan, check_arg_devices, load_source};
use crate::nvrtc::ModuleCache;
use crate::params::{KernelArg, MAX_PARAM_BYTES, ParamBuffer, ScalarArg};
use crate::{Cuda, CudaError};

/// The kernel name as the `'static` string errors carry: each distinct name is kept once for
/// the life of the process.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(|| Mutex::new(HashSet::new())).lock();
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A kernel from CUDA C source and a NIDL signature (GrCUDA's `buildkernel`): launched with
/// [`Cuda::launch_raw`] or [`Cuda::launch_raw_elements`], which are `unsafe` because hoplite
/// cannot see what the source does with its pointers.
///
/// ```
/// use hoplite_cuda::raw::RawKernel;
/// let axpy = RawKernel::new(
///     r#"extern "C" __global__ void axpy(double* y, const double* x, double a, long long n) {
///         for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
///              i += (long long)gridDim.x * blockDim.x) {
///             y[i] += a * x[i];
///         }
///     }"#,
///     "axpy(y: inout pointer double, x: in pointer double, a: double, n: sint64)",
/// )?;
/// assert_eq!(axpy.name(), "axpy");
/// assert_eq!(axpy.params().len(), 4);
/// match axpy.ptx("compute_90") {
///     Ok(ptx) => assert!(ptx.contains(".entry axpy(")),
///     Err(e) => println!("{e}"), // no NVRTC here
/// }
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RawKernel {
    name: &'static str,
    signature: RawSignature,
    source: Arc<str>,
    hash: u64,
    /// The architectures whose PTX passed the entry check, so launches check once.
    checked: Arc<Mutex<Vec<String>>>,
}

impl RawKernel {
    /// Parses `signature`; the source is compiled at the first launch (or [`ptx`](Self::ptx)).
    ///
    /// # Errors
    ///
    /// [`CudaError::Signature`] for a signature that does not parse.
    pub fn new(source: impl Into<String>, signature: &str) -> Result<RawKernel, CudaError> {
        let signature = parse_signature(signature)?;
        let source: Arc<str> = source.into().into();
        let hash = stable_hash(&[signature.name.as_bytes(), source.as_bytes()]);
        Ok(RawKernel {
            name: intern(&signature.name),
            signature,
            source,
            hash,
            checked: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// The kernel's name (its `extern "C"` symbol).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The parameters of the signature.
    pub fn params(&self) -> &[RawParam] {
        &self.signature.params
    }

    /// The CUDA C source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The PTX for `arch` (such as `compute_90`), from the module cache or compiled by NVRTC,
    /// checked to define the entry with parameters of the signature's sizes.
    ///
    /// # Errors
    ///
    /// [`CudaError::NoNvrtc`], [`CudaError::Compile`] with NVRTC's log, or
    /// [`CudaError::InvalidLaunch`] when the compiled source has no `extern "C"` entry of the
    /// signature's name or its parameters differ from the signature.
    pub fn ptx(&self, arch: &str) -> Result<Arc<str>, CudaError> {
        let (ptx, _) =
            ModuleCache::global().ptx_of_source(self.hash, self.name, self.name, arch, &self.source)?;
        let mut checked = self.checked.lock();
        if !checked.iter().any(|a| a == arch) {
            self.check_entry(&ptx)?;
            checked.push(arch.to_owned());
        }
        Ok(ptx)
    }

    /// Checks that `ptx` defines the entry with parameters of the signature's sizes.
    fn check_entry(&self, ptx: &str) -> Result<(), CudaError> {
        let invalid = |reason: String| CudaError::InvalidLaunch {
            kernel: self.name,
            reason,
        };
        let Some(sizes) = ptx_entry_param_sizes(ptx, self.name) else {
            return Err(invalid(format!(
                "the source defines no entry `{}`; declare it `extern \"C\" __global__ void {}(...)`",
                self.name, self.name
            )));
        };
        self.check_sizes(&sizes)
    }

    /// Checks that the compiled entry's parameters have the signature's sizes.
    fn check_sizes(&self, sizes: &[usize]) -> Result<(), CudaError> {
        let expected: Vec<usize> = self.params().iter().map(RawParam::size).collect();
        if sizes != expected {
            return Err(CudaError::InvalidLaunch {
                kernel: self.name,
                reason: format!(
                    "the compiled entry takes parameters of {sizes:?} bytes, but the signature says {expected:?}; make the signature match the source"
                ),
            });
        }
        Ok(())
    }

    /// Checks `args` against the signature and packs them as the entry's parameter block: a
    /// pure function, so bad arguments are refused the same with or without a device.
    ///
    /// ```
    /// use hoplite_cuda::CudaError;
    /// use hoplite_cuda::raw::{RawArg, RawKernel};
    /// let k = RawKernel::new("", "scale(a: double, n: sint64)")?;
    /// assert_eq!(k.pack(&[RawArg::scalar(2.0), RawArg::scalar(10i64)])?.offsets(), [0, 8]);
    /// let e = k.pack(&[RawArg::scalar(2.0f32), RawArg::scalar(10i64)]).unwrap_err();
    /// assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    /// # Ok::<(), CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::InvalidLaunch`] naming the argument: a wrong number of arguments, a view
    /// for a scalar or a scalar for a pointer, another element or scalar type, a writer for an
    /// `in` pointer or a reader for an `out` one, a view that is not contiguous, a written
    /// view that overlaps another view, or parameters past [`MAX_PARAM_BYTES`].
    pub fn pack(&self, args: &[RawArg]) -> Result<ParamBuffer, CudaError> {
        self.pack_args(device_args(args))
    }

    /// [`pack`](Self::pack) of the launch arguments `args`.
    fn pack_args(&self, args: &[DeviceArg]) -> Result<ParamBuffer, CudaError> {
        let invalid = |reason: String| CudaError::InvalidLaunch {
            kernel: self.name,
            reason,
        };
        let params = self.params();
        if args.len() != params.len() {
            return Err(invalid(format!(
                "the signature takes {} arguments, {} were given",
                params.len(),
                args.len()
            )));
        }
        let mut buf = ParamBuffer::new();
        for (k, (param, arg)) in params.iter().zip(args).enumerate() {
            let pname = param.name();
            match (param, &arg.arg) {
                (
                    RawParam::Pointer {
                        direction, element, ..
                    },
                    KernelArg::Handle(h),
                ) => {
                    if h.element != *element {
                        return Err(invalid(format!(
                            "argument {k} (`{pname}`): a view of {:?} for a pointer to {element:?}",
                            h.element
                        )));
                    }
                    let writes = h.access != HandleAccess::Read;
                    if writes != direction.writes() {
                        let fix = if direction.writes() {
                            "RawArg::write or RawArg::atomic"
                        } else {
                            "RawArg::read"
                        };
                        return Err(invalid(format!(
                            "argument {k} (`{pname}`) is a {:?} handle for an {direction:?} pointer; pass {fix}",
                            h.access
                        )));
                    }
                    let elements: u64 = h.extents.iter().product();
                    if let Some((lo, hi)) = arg.bytes
                        && elements > 0
                        && hi - lo != elements * element.size() as u64
                    {
                        return Err(invalid(format!(
                            "argument {k} (`{pname}`): the view of extents {:?} and strides {:?} is not contiguous; a raw kernel indexes a flat array",
                            h.extents, h.strides
                        )));
                    }
                    buf.push_u64(h.ptr);
                }
                (RawParam::Scalar { ty, .. }, KernelArg::Scalar(s)) => {
                    if !scalar_fits(*ty, s) {
                        return Err(invalid(format!(
                            "argument {k} (`{pname}`): a {:?} for a parameter of {ty:?}",
                            s.scalar_type()
                        )));
                    }
                    buf.push(&s.to_device_bytes()[..s.scalar_type().size()]);
                }
                (RawParam::Pointer { .. }, KernelArg::Scalar(_)) => {
                    return Err(invalid(format!(
                        "argument {k} (`{pname}`) is a scalar for a pointer; pass a view of device memory"
                    )));
                }
                (RawParam::Scalar { .. }, KernelArg::Handle(_)) => {
                    return Err(invalid(format!(
                        "argument {k} (`{pname}`) is a view for a scalar; pass RawArg::scalar"
                    )));
                }
                (_, KernelArg::TokenBits(_)) => {
                    return Err(invalid(format!(
                        "argument {k} (`{pname}`) is a unique token, which only `#[kernel]` kernels take; pass a view or a scalar"
                    )));
                }
            }
        }
        for (k, (param, arg)) in params.iter().zip(args).enumerate() {
            let (RawParam::Pointer { direction, .. }, Some((lo, hi))) = (param, arg.bytes) else {
                continue;
            };
            if !direction.writes() || lo == hi {
                continue;
            }
            if let Some(j) = args
                .iter()
                .enumerate()
                .position(|(j, b)| j != k && b.bytes.is_some_and(|(blo, bhi)| blo < hi && lo < bhi))
            {
                return Err(invalid(format!(
                    "argument {k} (`{}`) is written and its memory overlaps argument {j}; pass disjoint views",
                    param.name()
                )));
            }
        }
        if buf.len() > MAX_PARAM_BYTES {
            return Err(invalid(format!(
                "the parameters take {} bytes, more than the {MAX_PARAM_BYTES} a launch may pass",
                buf.len()
            )));
        }
        Ok(buf)
    }
}

/// Whether scalar `s` may be passed for a parameter of `ty`: the same type, or `usize` and
/// `isize` for `uint64` and `sint64` (the same bytes on a 64-bit device).
fn scalar_fits(ty: ScalarType, s: &ScalarArg) -> bool {
    let given = s.scalar_type();
    given == ty
        || matches!(
            (ty, given),
            (ScalarType::U64, ScalarType::Usize) | (ScalarType::I64, ScalarType::Isize)
        )
}

/// The parameter sizes of `.entry name(...)` in `ptx`, or `None` when there is no such entry.
/// Each parameter is `.param [.align N] .TYPE name` or `.param [.align N] .b8 name[BYTES]`.
///
/// ```
/// use hoplite_cuda::raw::ptx_entry_param_sizes;
/// let ptx = ".visible .entry axpy(\n\t.param .u64 axpy_param_0,\n\t.param .f64 axpy_param_1,\n\t.param .align 4 .b8 axpy_param_2[12]\n)\n{ ret; }";
/// assert_eq!(ptx_entry_param_sizes(ptx, "axpy"), Some(vec![8, 8, 12]));
/// assert_eq!(ptx_entry_param_sizes(ptx, "ax"), None);
/// ```
pub fn ptx_entry_param_sizes(ptx: &str, name: &str) -> Option<Vec<usize>> {
    let marker = format!(".entry {name}(");
    let start = ptx.find(&marker)? + marker.len();
    let end = start + ptx[start..].find(')')?;
    let list = ptx[start..end].trim();
    if list.is_empty() {
        return Some(Vec::new());
    }
    list.split(',')
        .map(|param| {
            let words: Vec<&str> = param.split_whitespace().collect();
            let ty = words
                .iter()
                .skip(1)
                .find(|w| w.starts_with('.') && **w != ".align" && !w.starts_with(".ptr"))?;
            let bits: usize = ty.get(2..)?.parse().ok()?;
            let count = match words.last()?.split_once('[') {
                Some((_, n)) => n.trim_end_matches(']').parse().ok()?,
                None => 1,
            };
            Some(bits / 8 * count)
        })
        .collect()
}

/// `n` elements in blocks of `block_threads` threads along x: `ceil(n / block)` blocks, one
/// thread per element (a raw kernel may not loop), or `None` for no elements.
///
/// ```
/// use hoplite_cuda::raw::elements_geometry;
/// let g = elements_geometry(1000, 256)?.expect("elements");
/// assert_eq!((g.grid, g.block), ([4, 1, 1], [256, 1, 1]));
/// assert!(elements_geometry(0, 256)?.is_none());
/// assert!(elements_geometry(1 << 40, 256).is_err()); // more blocks than a grid holds
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::InvalidLaunch`] for a block of 0 or more than 1024 threads, or more blocks
/// than a grid's x dimension takes (2^31 - 1).
pub fn elements_geometry(n: u64, block_threads: u32) -> Result<Option<LaunchGeometry>, CudaError> {
    if !(1..=1024).contains(&block_threads) {
        return Err(CudaError::InvalidLaunch {
            kernel: "raw kernel",
            reason: format!("a block of {block_threads} threads; use 1 to 1024"),
        });
    }
    if n == 0 {
        return Ok(None);
    }
    let blocks = n.div_ceil(u64::from(block_threads));
    let grid = u32::try_from(blocks)
        .ok()
        .filter(|&b| b <= i32::MAX as u32)
        .ok_or_else(|| CudaError::InvalidLaunch {
            kernel: "raw kernel",
            reason: format!(
                "{n} elements need {blocks} blocks of {block_threads}, more than a grid's 2^31 - 1; loop in the kernel over a smaller grid"
            ),
        })?;
    Ok(Some(LaunchGeometry {
        grid: [grid, 1, 1],
        block: [block_threads, 1, 1],
        shared_bytes: 0,
    }))
}

/// Refuses a geometry with an empty dimension or more than 1024 threads per block before the
/// device is asked.
fn check_geometry(kernel: &'static str, g: &LaunchGeometry) -> Result<(), CudaError> {
    if g.grid.contains(&0) || g.block.contains(&0) {
        return Err(CudaError::InvalidLaunch {
            kernel,
            reason: format!(
                "grid {:?} and block {:?} must have no dimension of 0",
                g.grid, g.block
            ),
        });
    }
    if g.block_threads() > 1024 {
        return Err(CudaError::InvalidLaunch {
            kernel,
            reason: format!(
                "a block of {:?} is {} threads; CUDA allows at most 1024",
                g.block,
                g.block_threads()
            ),
        });
    }
    Ok(())
}

impl Cuda {
    /// Launches a raw kernel with `geometry` (grid, block, dynamic shared memory) on this
    /// instance's stream, with `args` in the signature's order. Returns once the launch is
    /// queued, after the conflicting work queued on other instances (another instance's later
    /// work on its views waits for it in turn); the views passed are kept alive until the
    /// next fence.
    ///
    /// ```
    /// use hoplite_cuda::geometry::LaunchGeometry;
    /// use hoplite_cuda::raw::{RawArg, RawKernel};
    /// use hoplite_cuda::{Cuda, CudaError};
    /// let k = RawKernel::new("extern \"C\" __global__ void nop(int n) {}", "nop(n: sint32)")?;
    /// let g = LaunchGeometry { grid: [1, 1, 1], block: [32, 1, 1], shared_bytes: 0 };
    /// // A wrong argument is refused before the device is asked.
    /// // SAFETY: the kernel touches no memory.
    /// let e = unsafe { Cuda::default().launch_raw(&k, g, &[RawArg::scalar(1u32)]) }.unwrap_err();
    /// assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    /// // SAFETY: the kernel touches no memory.
    /// if let Err(e) = unsafe { Cuda::default().launch_raw(&k, g, &[RawArg::scalar(1i32)]) } {
    ///     println!("{e}"); // no device here
    /// }
    /// # Ok::<(), CudaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::InvalidLaunch`] for arguments that do not match the signature (see
    /// [`RawKernel::pack`]), a geometry with an empty dimension, a block past 1024 threads or
    /// past the device's limits, or a source whose entry differs from the signature; why
    /// this instance has no device; NVRTC's errors; the driver's error.
    ///
    /// # Safety
    ///
    /// The source is CUDA C that hoplite cannot check: run with this geometry and these
    /// arguments, the kernel must read only inside the views it is given, write only inside
    /// the views of its `out` and `inout` pointers, and not race with itself on an element
    /// (unless through atomics). The launch checks everything else: the arguments against
    /// the signature, the signature against the compiled entry, the geometry against the
    /// device, and that written views overlap no other view.
    pub unsafe fn launch_raw(
        &self,
        kernel: &RawKernel,
        geometry: LaunchGeometry,
        args: &[RawArg],
    ) -> Result<(), CudaError> {
        let mut params = kernel.pack(args)?;
        let args = device_args(args);
        check_geometry(kernel.name, &geometry)?;
        let stream = self.stream()?;
        let device = &stream.device;
        check_arg_devices(kernel.name, device.ordinal, args)?;
        let loaded = load_source(device, kernel.hash, kernel.name, kernel.name, &kernel.source)?;
        // The entry against the signature: from the loaded function where the driver reads its
        // parameters there (the emulated driver), else from the PTX.
        match loaded.function.param_sizes(device)? {
            Some(sizes) => kernel.check_sizes(&sizes)?,
            None => drop(kernel.ptx(&device.limits.arch())?),
        }
        let resources: &KernelResources = &loaded.resources;
        if !fits(&device.limits, &geometry)
            || blocks_per_sm(
                &device.limits,
                resources,
                geometry.block_threads() as u32,
                geometry.shared_bytes as usize,
            ) == 0
        {
            return Err(CudaError::InvalidLaunch {
                kernel: kernel.name,
                reason: format!(
                    "the geometry {geometry:?} does not fit the device (a kernel using {resources:?})"
                ),
            });
        }
        // Dynamic shared memory past the default per-block limit needs the function's opt-in
        // (`blocks_per_sm` above checked it against the opt-in limit).
        if resources.static_shared + geometry.shared_bytes as usize > device.limits.shared_per_block {
            // Within the opt-in limit, as checked above.
            loaded
                .function
                .allow_dynamic_shared(device, geometry.shared_bytes)?;
        }
        let plan = Plan {
            stream,
            function: loaded.function,
            geometry,
        };
        let accesses: Vec<crate::pending::Access> = args.iter().filter_map(DeviceArg::access).collect();
        let devices: Vec<usize> = args.iter().filter_map(|a| a.device).collect();
        self.queue_work(kernel.name, &accesses, &devices, || {
            // SAFETY: `params` was packed by `kernel.pack` against the signature, and the
            // compiled entry was checked to take parameters of exactly those sizes in that
            // order (`check_sizes`); every pointer is the address of a live device view of the
            // pointer's element type, kept alive below until the next fence; every written
            // view overlaps no other view; the kernel stays inside those views by the
            // caller's promise.
            unsafe { plan.launch(&mut params) }?;
            self.inner
                .keep_alive
                .keep(args.iter().filter_map(DeviceArg::keep));
            Ok(())
        })
    }

    /// Launches a raw kernel with one thread per element: `ceil(n / 256)` blocks of 256
    /// threads ([`elements_geometry`]); the kernel checks its index against `n` itself.
    ///
    /// # Errors
    ///
    /// As for [`launch_raw`](Self::launch_raw), and more blocks than a grid holds.
    ///
    /// # Safety
    ///
    /// As for [`launch_raw`](Self::launch_raw), with one thread per element of `n`, rounded
    /// up to whole blocks.
    pub unsafe fn launch_raw_elements(
        &self,
        kernel: &RawKernel,
        n: usize,
        args: &[RawArg],
    ) -> Result<(), CudaError> {
        let Some(geometry) = elements_geometry(n as u64, 256)? else {
            kernel.pack(args)?;
            return Ok(());
        };
        // SAFETY: the caller's promise for this geometry.
        unsafe { self.launch_raw(kernel, geometry, args) }
    }
}
