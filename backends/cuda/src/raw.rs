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
use hoplite_core::{ArrayLayout, View};
use parking_lot::Mutex;

use crate::geometry::{KernelResources, LaunchGeometry, blocks_per_sm, fits};
use crate::launch::DeviceArg;
use crate::launch::{Plan, check_arg_devices, load_source};
use crate::nvrtc::ModuleCache;
use crate::params::{KernelArg, MAX_PARAM_BYTES, ParamBuffer, ScalarArg};
use crate::{Cuda, CudaError, DeviceAccessibleSpace, DeviceScalar};

/// One argument of a raw kernel launch, in the signature's order: a view of device memory
/// for a pointer parameter (a reader for `in` and `const`, a writer or an atomic handle for the
/// others) or a scalar. Built only from views of device memory, so a launch never hands the
/// device an address it cannot use; the launch keeps the views alive until the instance is
/// fenced.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::CudaSpace;
/// use hoplite_cuda::raw::RawArg;
/// let n = RawArg::scalar(10i64);
/// if let Ok(y) = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [10]) {
///     let _args = [RawArg::write(&y), n];
/// }
/// ```
#[repr(transparent)]
pub struct RawArg(DeviceArg);

impl std::fmt::Debug for RawArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RawArg").field(&self.0).finish()
    }
}

impl RawArg {
    /// A pointer to `view`'s elements that the kernel only reads (`in`, `const`).
    pub fn read<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> RawArg {
        RawArg(DeviceArg::read(view))
    }

    /// A pointer to `view`'s elements that the kernel writes (`out`, `inout`, no direction):
    /// the launch checks that no other argument overlaps the view.
    pub fn write<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> RawArg {
        RawArg(DeviceArg::write(view))
    }

    /// A pointer to `view`'s elements that the kernel updates with atomics (`out`, `inout`):
    /// other arguments may read the same view.
    pub fn atomic<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace>(
        view: &View<T, R, L, S>,
    ) -> RawArg {
        RawArg(DeviceArg::atomic(view))
    }

    /// A scalar parameter.
    pub fn scalar(value: impl Into<ScalarArg>) -> RawArg {
        RawArg(DeviceArg::scalar(value))
    }
}

/// The launch arguments `args` hold.
fn device_args(args: &[RawArg]) -> &[DeviceArg] {
    // SAFETY: `RawArg` is a `#[repr(transparent)]` wrapper of `DeviceArg`, so a slice of one
    // has the layout and validity of a slice of the other; the borrow keeps `args`'s lifetime.
    unsafe { std::slice::from_raw_parts(args.as_ptr().cast::<DeviceArg>(), args.len()) }
}

/// How a raw kernel uses a pointer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointerDirection {
    /// Read only (`in`, `const`).
    In,
    /// Written (`out`).
    Out,
    /// Read and written (`inout`, or no direction).
    InOut,
}

impl PointerDirection {
    /// Whether the kernel writes through the pointer.
    ///
    /// ```
    /// use hoplite_cuda::raw::PointerDirection;
    /// assert!(!PointerDirection::In.writes());
    /// assert!(PointerDirection::InOut.writes());
    /// ```
    pub fn writes(self) -> bool {
        self != PointerDirection::In
    }
}

/// One parameter of a raw kernel's signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RawParam {
    /// A device pointer to elements of `element`.
    Pointer {
        /// The parameter's name.
        name: String,
        /// How the kernel uses it.
        direction: PointerDirection,
        /// The element type.
        element: ScalarType,
    },
    /// A scalar passed by value.
    Scalar {
        /// The parameter's name.
        name: String,
        /// Its type.
        ty: ScalarType,
    },
}

impl RawParam {
    /// The parameter's name.
    pub fn name(&self) -> &str {
        match self {
            RawParam::Pointer { name, .. } | RawParam::Scalar { name, .. } => name,
        }
    }

    /// The bytes the parameter takes in the kernel's parameter block (8 for a pointer).
    pub fn size(&self) -> usize {
        match self {
            RawParam::Pointer { .. } => 8,
            RawParam::Scalar { ty, .. } => ty.size(),
        }
    }
}

/// A parsed signature: the kernel's name (its `extern "C"` symbol) and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawSignature {
    /// The kernel's name.
    pub name: String,
    /// The parameters, in order.
    pub params: Vec<RawParam>,
}

/// Parses a signature in GrCUDA's NIDL syntax (see the [module](self) documentation).
///
/// ```
/// use hoplite_core::device_kernel::ScalarType;
/// use hoplite_cuda::CudaError;
/// use hoplite_cuda::raw::{parse_signature, PointerDirection, RawParam};
///
/// let sig = parse_signature("axpy(y: out pointer double, x: in pointer double, a: double, n: sint64)")?;
/// assert_eq!(sig.name, "axpy");
/// assert_eq!(sig.params[0], RawParam::Pointer {
///     name: "y".into(), direction: PointerDirection::Out, element: ScalarType::F64,
/// });
/// assert_eq!(sig.params[3], RawParam::Scalar { name: "n".into(), ty: ScalarType::I64 });
///
/// let e = parse_signature("axpy(y: out pointer, n: sint64)").unwrap_err();
/// assert!(matches!(e, CudaError::Signature { position: 19, .. }), "{e}");
/// # Ok::<(), CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::Signature`] with the byte offset where the text stops making sense and what
/// was expected there.
pub fn parse_signature(signature: &str) -> Result<RawSignature, CudaError> {
    Parser {
        text: signature,
        at: 0,
    }
    .signature()
}

/// A cursor over the signature text.
struct Parser<'s> {
    text: &'s str,
    at: usize,
}

impl<'s> Parser<'s> {
    fn fail<T>(&self, at: usize, reason: impl Into<String>) -> Result<T, CudaError> {
        Err(CudaError::Signature {
            signature: self.text.to_owned(),
            position: at,
            reason: reason.into(),
        })
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    /// An identifier (`[A-Za-z_][A-Za-z0-9_]*`) and where it starts, after white space.
    fn ident(&mut self, what: &str) -> Result<(usize, &'s str), CudaError> {
        self.skip_ws();
        let start = self.at;
        let rest = &self.text[start..];
        let len = rest
            .char_indices()
            .find(|&(k, c)| !(c == '_' || c.is_ascii_alphabetic() || (k > 0 && c.is_ascii_digit())))
            .map_or(rest.len(), |(k, _)| k);
        if len == 0 {
            let found = self.peek().map_or("the end".to_owned(), |c| format!("`{c}`"));
            return self.fail(start, format!("expected {what}, found {found}"));
        }
        self.at += len;
        Ok((start, &rest[..len]))
    }

    /// The punctuation `c`, after white space.
    fn expect(&mut self, c: char, what: &str) -> Result<(), CudaError> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            Ok(())
        } else {
            let found = self.peek().map_or("the end".to_owned(), |c| format!("`{c}`"));
            self.fail(self.at, format!("expected {what}, found {found}"))
        }
    }

    fn signature(mut self) -> Result<RawSignature, CudaError> {
        let (_, name) = self.ident("the kernel's name")?;
        self.skip_ws();
        if self.text[self.at..].starts_with("::") {
            return self.fail(
                self.at,
                "C++ names are not mangled here; declare the kernel `extern \"C\"` and give its plain name",
            );
        }
        self.expect('(', "`(` after the kernel's name")?;
        let mut params: Vec<RawParam> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(')') {
            self.at += 1;
        } else {
            loop {
                let (at, pname) = self.ident("a parameter name")?;
                if params.iter().any(|p| p.name() == pname) {
                    return self.fail(at, format!("parameter `{pname}` is named twice"));
                }
                self.expect(':', &format!("`:` after parameter `{pname}`"))?;
                params.push(self.param_type(pname)?);
                self.skip_ws();
                match self.peek() {
                    Some(',') => self.at += 1,
                    Some(')') => {
                        self.at += 1;
                        break;
                    }
                    other => {
                        let found = other.map_or("the end".to_owned(), |c| format!("`{c}`"));
                        return self.fail(
                            self.at,
                            format!("expected `,` or `)` after a parameter, found {found}"),
                        );
                    }
                }
            }
        }
        self.skip_ws();
        if self.at < self.text.len() {
            return self.fail(self.at, "unexpected text after `)`");
        }
        Ok(RawSignature {
            name: name.to_owned(),
            params,
        })
    }

    /// `[direction] pointer TYPE` or `TYPE`.
    fn param_type(&mut self, name: &str) -> Result<RawParam, CudaError> {
        let (at, word) = self.ident(&format!("the type of parameter `{name}`"))?;
        let direction = match word {
            "in" | "const" => Some(PointerDirection::In),
            "out" => Some(PointerDirection::Out),
            "inout" => Some(PointerDirection::InOut),
            _ => None,
        };
        let pointer_at = if direction.is_some() {
            let (pat, pointer) = self.ident(&format!("`pointer` after `{word}`"))?;
            if pointer != "pointer" {
                return self.fail(
                    pat,
                    format!("expected `pointer` after `{word}`, found `{pointer}`"),
                );
            }
            Some(pat)
        } else if word == "pointer" {
            Some(at)
        } else {
            None
        };
        if pointer_at.is_some() {
            self.skip_ws();
            let type_at = self.at;
            let element = match self.peek() {
                Some(c) if c.is_ascii_alphabetic() => {
                    let (tat, t) = self.ident("the element type")?;
                    self.scalar(tat, t)?
                }
                _ => {
                    return self.fail(
                        type_at,
                        format!("give the element type of pointer `{name}`, such as `pointer double`"),
                    );
                }
            };
            return Ok(RawParam::Pointer {
                name: name.to_owned(),
                direction: direction.unwrap_or(PointerDirection::InOut),
                element,
            });
        }
        Ok(RawParam::Scalar {
            name: name.to_owned(),
            ty: self.scalar(at, word)?,
        })
    }

    /// An NFI scalar type name.
    fn scalar(&self, at: usize, word: &str) -> Result<ScalarType, CudaError> {
        match word {
            "sint32" => Ok(ScalarType::I32),
            "uint32" => Ok(ScalarType::U32),
            "sint64" => Ok(ScalarType::I64),
            "uint64" => Ok(ScalarType::U64),
            "float" => Ok(ScalarType::F32),
            "double" => Ok(ScalarType::F64),
            "bool" => Ok(ScalarType::Bool),
            "sint8" | "uint8" | "sint16" | "uint16" | "char" => self.fail(
                at,
                format!("`{word}` is not a device scalar of hoplite; use sint32, uint32, sint64, uint64, float, double or bool"),
            ),
            _ => self.fail(
                at,
                format!("unknown type `{word}`; use sint32, uint32, sint64, uint64, float, double or bool, or `in|out|inout pointer TYPE`"),
            ),
        }
    }
}

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
        let expected: Vec<usize> = self.params().iter().map(RawParam::size).collect();
        if sizes != expected {
            return Err(invalid(format!(
                "the compiled entry takes parameters of {sizes:?} bytes, but the signature says {expected:?}; make the signature match the source"
            )));
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
    /// queued; the views passed are kept alive until the next fence.
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
        kernel.ptx(&device.limits.arch())?;
        let loaded = load_source(device, kernel.hash, kernel.name, kernel.name, &kernel.source)?;
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
        // SAFETY: `params` was packed by `kernel.pack` against the signature, and the
        // compiled entry was checked to take parameters of exactly those sizes in that order
        // (`kernel.ptx`); every pointer is the address of a live device view of the pointer's
        // element type, kept alive below until the next fence; every written view overlaps no
        // other view; the kernel stays inside those views by the caller's promise.
        unsafe { plan.launch(&mut params) }?;
        self.inner
            .keep_alive
            .lock()
            .extend(args.iter().filter_map(DeviceArg::keep));
        Ok(())
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
