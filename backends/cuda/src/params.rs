//! The parameter buffer of a kernel launch, laid out exactly as
//! `hoplite_core::device_kernel` documents the entry's parameters: pure code, tested without
//! a GPU.
//!
//! Each parameter sits at an offset aligned to its size, as the CUDA ABI places kernel
//! parameters, so the buffer is both the storage `cuLaunchKernel`'s `kernelParams` pointers
//! point into and a valid packed argument block.

use hoplite_core::device_kernel::{
    DeviceIteration, DeviceJoin, DeviceKernel, DeviceKernelInfo, DeviceParam, DevicePattern, HandleAccess,
    ScalarType,
};

use crate::CudaError;
use crate::geometry::{IndexOrder, TeamScratch};
use crate::reduce::{DeviceReduceValue, ValueLayout, device_join_for, value_layout};

/// The most bytes of parameters a kernel may take (the limit every CUDA driver accepts).
pub const MAX_PARAM_BYTES: usize = 4096;

/// A scalar argument with its type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarArg {
    /// `bool`
    Bool(bool),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `u32`
    U32(u32),
    /// `u64`
    U64(u64),
    /// `usize` (64 bits on the device)
    Usize(usize),
    /// `isize` (64 bits on the device)
    Isize(isize),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
}

impl ScalarArg {
    /// The argument's type.
    ///
    /// ```
    /// use hoplite_cuda::params::ScalarArg;
    /// use hoplite_core::device_kernel::ScalarType;
    /// assert_eq!(ScalarArg::F64(2.0).ty(), ScalarType::F64);
    /// ```
    pub fn ty(&self) -> ScalarType {
        match self {
            ScalarArg::Bool(_) => ScalarType::Bool,
            ScalarArg::I32(_) => ScalarType::I32,
            ScalarArg::I64(_) => ScalarType::I64,
            ScalarArg::U32(_) => ScalarType::U32,
            ScalarArg::U64(_) => ScalarType::U64,
            ScalarArg::Usize(_) => ScalarType::Usize,
            ScalarArg::Isize(_) => ScalarType::Isize,
            ScalarArg::F32(_) => ScalarType::F32,
            ScalarArg::F64(_) => ScalarType::F64,
        }
    }

    /// The bytes the device reads (little-endian, its size).
    pub(crate) fn bytes(&self) -> Vec<u8> {
        match *self {
            ScalarArg::Bool(v) => vec![u8::from(v)],
            ScalarArg::I32(v) => v.to_le_bytes().to_vec(),
            ScalarArg::I64(v) => v.to_le_bytes().to_vec(),
            ScalarArg::U32(v) => v.to_le_bytes().to_vec(),
            ScalarArg::U64(v) => v.to_le_bytes().to_vec(),
            ScalarArg::Usize(v) => (v as u64).to_le_bytes().to_vec(),
            ScalarArg::Isize(v) => (v as i64).to_le_bytes().to_vec(),
            ScalarArg::F32(v) => v.to_le_bytes().to_vec(),
            ScalarArg::F64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// A view handle argument as the device sees it: the element pointer (a device address), the
/// extents and the strides in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandleArg {
    /// The device address of element 0.
    pub ptr: u64,
    /// Reader, writer or atomic handle: must be the parameter's.
    pub access: HandleAccess,
    /// The element type.
    pub element: ScalarType,
    /// The extent of each dimension.
    pub extents: Vec<u64>,
    /// The stride of each dimension, in elements.
    pub strides: Vec<u64>,
}

/// A unique token argument as the device sees it: the device address of its lock words and
/// its number of ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenArg {
    /// The device address of the first `u32` lock word.
    pub words: u64,
    /// The number of ids (the words hold at least this many bits).
    pub size: u64,
}

/// One argument of a kernel, in the kernel's parameter order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// A view handle.
    Handle(HandleArg),
    /// A scalar capture.
    Scalar(ScalarArg),
    /// A unique token.
    TokenBits(TokenArg),
}

/// A launch's arguments are [`KernelArg`]s or hold them (`DeviceArg`), so the crate's packers
/// take either without copying.
impl AsRef<KernelArg> for KernelArg {
    fn as_ref(&self) -> &KernelArg {
        self
    }
}

/// The iteration space of a launch, as the entry's first parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IterationArgs {
    /// A range `begin..end`.
    Range {
        /// The first index.
        begin: u64,
        /// One past the last index.
        end: u64,
    },
    /// An MDRange: per dimension, first index first.
    MdRange {
        /// The first index of each dimension.
        begins: Vec<u64>,
        /// One past the last index of each dimension.
        ends: Vec<u64>,
        /// Which index the threads' x walks (the launch's geometry must match).
        order: IndexOrder,
    },
    /// A league of this many teams.
    Team {
        /// The number of teams.
        league_size: u64,
        /// The scratch each team and thread asks for.
        scratch: TeamScratch,
    },
}

/// A packed parameter buffer: the bytes, and where each parameter starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamBuffer {
    /// The storage, in 8-byte words so every offset below is aligned in memory too.
    words: Vec<u64>,
    /// The byte length used.
    len: usize,
    /// The byte offset of each parameter, in order.
    offsets: Vec<usize>,
}

impl ParamBuffer {
    pub(crate) fn new() -> Self {
        // Room for a typical entry's parameters, so packing does not grow the lists on every
        // launch (a rank-2 handle alone is five words).
        ParamBuffer {
            words: Vec::with_capacity(32),
            len: 0,
            offsets: Vec::with_capacity(24),
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.push_aligned(bytes, bytes.len().max(1));
    }

    /// Appends a parameter at the next multiple of `align` (a struct's alignment, which may
    /// be less than its size).
    fn push_aligned(&mut self, bytes: &[u8], align: usize) {
        let offset = self.len.next_multiple_of(align);
        let end = offset + bytes.len();
        self.words.resize(end.div_ceil(8), 0);
        for (k, &b) in bytes.iter().enumerate() {
            let at = offset + k;
            let word = &mut self.words[at / 8];
            let shift = (at % 8) * 8;
            *word = (*word & !(0xffu64 << shift)) | (u64::from(b) << shift);
        }
        self.offsets.push(offset);
        self.len = end;
    }

    pub(crate) fn push_u64(&mut self, v: u64) {
        self.push(&v.to_le_bytes());
    }

    /// Overwrites parameter `index` with `bytes` (its size): the partials pointer once it is
    /// allocated, the scan's final-pass flag between its two launches.
    pub(crate) fn set(&mut self, index: usize, bytes: &[u8]) {
        let offset = self.offsets[index];
        for (k, &b) in bytes.iter().enumerate() {
            let at = offset + k;
            let word = &mut self.words[at / 8];
            let shift = (at % 8) * 8;
            *word = (*word & !(0xffu64 << shift)) | (u64::from(b) << shift);
        }
    }

    /// The packed bytes, `len()` of them.
    pub fn bytes(&self) -> Vec<u8> {
        self.words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(self.len)
            .collect()
    }

    /// The byte length of the packed parameters.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The byte offset of each parameter, in the entry's order.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// One pointer per parameter into the buffer: `cuLaunchKernel`'s `kernelParams`. They
    /// stay valid while `self` is neither moved nor changed.
    pub(crate) fn pointers(&mut self) -> Vec<*mut std::ffi::c_void> {
        let base = self.words.as_mut_ptr().cast::<u8>();
        self.offsets
            .iter()
            // `wrapping_add` keeps this safe code; every offset is inside `words`.
            .map(|&off| base.wrapping_add(off).cast())
            .collect()
    }
}

/// Packs the parameters of `K`'s entry for a `parallel_for` launch: the iteration space,
/// then each handle (pointer, extents, strides) and scalar in `K::params()` order.
///
/// ```
/// use hoplite_core::device_kernel::{DeviceIteration, DeviceKernel, DevicePattern, DeviceParam, ScalarType};
/// use hoplite_cuda::params::{pack_for, IterationArgs, KernelArg, ScalarArg};
///
/// struct Scale;
/// // SAFETY: the entry touches no memory.
/// unsafe impl DeviceKernel for Scale {
///     const NAME: &'static str = "scale";
///     const ENTRY: &'static str = "scale_for";
///     const ITERATION: DeviceIteration = DeviceIteration::Range;
///     const PATTERN: DevicePattern = DevicePattern::For;
///     fn params() -> &'static [DeviceParam] {
///         &[DeviceParam::Scalar { name: "a", ty: ScalarType::F32 }]
///     }
///     fn cuda_source() -> &'static str { "" }
/// }
/// let p = pack_for::<Scale>(&IterationArgs::Range { begin: 0, end: 10 }, &[KernelArg::Scalar(ScalarArg::F32(2.0))])?;
/// assert_eq!(p.offsets(), [0, 8, 16]);
/// assert_eq!(p.len(), 20);
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::InvalidLaunch`] when the kernel is not a `parallel_for`, the iteration space
/// is not the kernel's, the arguments do not match `K::params()` in number, kind, element
/// type, rank or scalar type, or the parameters exceed [`MAX_PARAM_BYTES`].
pub fn pack_for<K: DeviceKernel>(
    iteration: &IterationArgs,
    args: &[KernelArg],
) -> Result<ParamBuffer, CudaError> {
    pack_for_args::<K>(iteration, args)
}

/// [`pack_for`] of a launch's own arguments, which hold their [`KernelArg`]s.
pub(crate) fn pack_for_args<K: DeviceKernel>(
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    pack_for_args_info(&DeviceKernelInfo::of::<K>(), iteration, args)
}

/// [`pack_for_args`] for the kernel `k`, which a launch found at run time.
pub(crate) fn pack_for_args_info(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    if k.pattern != DevicePattern::For {
        return Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!(
                "the kernel computes {:?}; launch it with the reduce or scan launch of its pattern",
                k.pattern
            ),
        });
    }
    let buf = pack_common(k, iteration, args)?;
    check_size(k, buf)
}

/// Packs the parameters of `K`'s entry for a reduction: the `parallel_for` parameters, then
/// the code of the join the device applies to each block's values (`join` where
/// [`device_join_for`] keeps it, else -1: a partial per thread), the reducer's identity in the
/// device layout of `V` and the partials pointer (0 here; the launch sets it once the
/// partials are allocated).
///
/// ```
/// use hoplite_core::device_kernel::{DeviceIteration, DeviceKernel, DevicePattern, DeviceParam, ScalarType};
/// use hoplite_core::ValLoc;
/// use hoplite_cuda::params::{pack_reduce, IterationArgs};
///
/// struct ArgMin;
/// // SAFETY: never launched.
/// unsafe impl DeviceKernel for ArgMin {
///     const NAME: &'static str = "argmin";
///     const ENTRY: &'static str = "argmin_reduce_range";
///     const ITERATION: DeviceIteration = DeviceIteration::Range;
///     const PATTERN: DevicePattern = DevicePattern::ReduceValLoc(ScalarType::F32);
///     fn params() -> &'static [DeviceParam] { &[] }
///     fn cuda_source() -> &'static str { "" }
/// }
/// let identity = ValLoc { val: f32::MAX, loc: None };
/// let p = pack_reduce::<ArgMin, _>(&IterationArgs::Range { begin: 0, end: 10 }, &[], &identity, None)?;
/// // begin, end, the device join (-1: none for a location), the 16-byte identity (8-byte
/// // aligned), the partials pointer.
/// assert_eq!(p.offsets(), [0, 8, 16, 24, 40]);
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// As for [`pack_for`], and [`CudaError::InvalidLaunch`] when the kernel's pattern is not
/// the reduction of `V` (a `Sum<f64>` reducer for a kernel accumulating `f32`, a `MinLoc`
/// reducer for a plain `f64` accumulator).
pub fn pack_reduce<K: DeviceKernel, V: DeviceReduceValue>(
    iteration: &IterationArgs,
    args: &[KernelArg],
    identity: &V,
    join: Option<DeviceJoin>,
) -> Result<ParamBuffer, CudaError> {
    pack_reduce_args::<K, V>(iteration, args, identity, join)
}

/// [`pack_reduce`] of a launch's own arguments, which hold their [`KernelArg`]s.
pub(crate) fn pack_reduce_args<K: DeviceKernel, V: DeviceReduceValue>(
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    identity: &V,
    join: Option<DeviceJoin>,
) -> Result<ParamBuffer, CudaError> {
    pack_reduce_args_info::<V>(&DeviceKernelInfo::of::<K>(), iteration, args, identity, join)
}

/// [`pack_reduce_args`] for the kernel `k`, which a launch found at run time.
pub(crate) fn pack_reduce_args_info<V: DeviceReduceValue>(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    identity: &V,
    join: Option<DeviceJoin>,
) -> Result<ParamBuffer, CudaError> {
    check_reduce_pattern::<V>(k)?;
    let mut buf = pack_common(k, iteration, args)?;
    let code = device_join_for(k.pattern, join).map_or(-1, DeviceJoin::code);
    buf.push(&code.to_le_bytes());
    push_value(&mut buf, identity);
    buf.push_u64(0);
    check_size(k, buf)
}

/// Packs the parameters of `K`'s scan entry: the `parallel_for` parameters, the identity
/// (zero), the per-thread values pointer (0 here) and the final-pass flag (`false`).
///
/// # Errors
///
/// As for [`pack_for`], and [`CudaError::InvalidLaunch`] when `K` is not a scan of `T`.
pub fn pack_scan<K: DeviceKernel, T: DeviceReduceValue + hoplite_core::ScanValue>(
    iteration: &IterationArgs,
    args: &[KernelArg],
) -> Result<ParamBuffer, CudaError> {
    pack_scan_args::<K, T>(iteration, args)
}

/// [`pack_scan`] of a launch's own arguments, which hold their [`KernelArg`]s.
pub(crate) fn pack_scan_args<K: DeviceKernel, T: DeviceReduceValue + hoplite_core::ScanValue>(
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    pack_scan_args_info::<T>(&DeviceKernelInfo::of::<K>(), iteration, args)
}

/// [`pack_scan_args`] for the kernel `k`, which a launch found at run time.
pub(crate) fn pack_scan_args_info<T: DeviceReduceValue + hoplite_core::ScanValue>(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    if !matches!((k.pattern, plain_scalar(T::PATTERN)), (DevicePattern::Scan(s), Some(t)) if s == t) {
        return Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!(
                "the kernel computes {:?}, but the scan accumulates {}; scan with the kernel's value type",
                k.pattern,
                std::any::type_name::<T>()
            ),
        });
    }
    let mut buf = pack_common(k, iteration, args)?;
    push_value(&mut buf, &T::zero());
    buf.push_u64(0);
    buf.push(&[0]);
    check_size(k, buf)
}

/// The scalar type of a plain value (`Reduce(s)`), which is what a scan sums.
fn plain_scalar(pattern: DevicePattern) -> Option<ScalarType> {
    match pattern {
        DevicePattern::Reduce(s) => Some(s),
        _ => None,
    }
}

fn push_value<V: DeviceReduceValue>(buf: &mut ParamBuffer, value: &V) {
    let layout = value_layout(V::PATTERN).unwrap_or(ValueLayout { size: 0, align: 1 });
    let mut bytes = vec![0u8; layout.size];
    value.write_device(&mut bytes);
    buf.push_aligned(&bytes, layout.align);
}

/// Refuses a kernel whose pattern is not the reduction `expected`.
fn check_reduce_pattern<V: DeviceReduceValue>(k: &DeviceKernelInfo) -> Result<(), CudaError> {
    let expected = V::PATTERN;
    if V::reduced_by(k.pattern)
        && value_layout(expected).is_some()
        && !matches!(expected, DevicePattern::Scan(_))
    {
        return Ok(());
    }
    Err(CudaError::InvalidLaunch {
        kernel: k.name,
        reason: format!(
            "the kernel computes {:?}, but the reducer's value is reduced as {expected:?}; use the reducer the kernel's accumulator was written for",
            k.pattern
        ),
    })
}

fn check_size(k: &DeviceKernelInfo, buf: ParamBuffer) -> Result<ParamBuffer, CudaError> {
    if buf.len() > MAX_PARAM_BYTES {
        return Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!(
                "{} bytes of parameters exceed the {MAX_PARAM_BYTES} bytes a kernel may take; pass fewer views or scalars",
                buf.len()
            ),
        });
    }
    Ok(buf)
}

/// The iteration space, handles and scalars, checked against `K::params()`.
fn pack_common(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    let invalid = |reason: String| CudaError::InvalidLaunch {
        kernel: k.name,
        reason,
    };
    let mut buf = ParamBuffer::new();
    match (k.iteration, iteration) {
        (DeviceIteration::Range, IterationArgs::Range { begin, end }) => {
            buf.push_u64(*begin);
            buf.push_u64(*end);
        }
        (DeviceIteration::MdRange(rank), IterationArgs::MdRange { begins, ends, order })
            if begins.len() == rank && ends.len() == rank =>
        {
            for &b in begins {
                buf.push_u64(b);
            }
            for &e in ends {
                buf.push_u64(e);
            }
            buf.push(&order.code().to_le_bytes());
        }
        (DeviceIteration::Team, IterationArgs::Team { league_size, scratch }) => {
            buf.push_u64(*league_size);
            // The scratch requests in the entry's order: per team at levels 0 and 1, then per
            // thread at levels 0 and 1 (the kernel lays its dynamic shared memory out from them).
            for request in [
                scratch.per_team,
                scratch.level1_per_team,
                scratch.per_thread,
                scratch.level1_per_thread,
            ] {
                buf.push_u64(request as u64);
            }
        }
        (expected, found) => {
            return Err(invalid(format!(
                "the kernel iterates as {expected:?} but the launch gives {found:?}; use the policy the kernel was written for"
            )));
        }
    }
    let params = k.params;
    if params.len() != args.len() {
        return Err(invalid(format!(
            "{} arguments for {} parameters; pass one per kernel parameter, in order",
            args.len(),
            params.len()
        )));
    }
    for (param, arg) in params.iter().zip(args.iter().map(AsRef::as_ref)) {
        match (param, arg) {
            (
                DeviceParam::Handle {
                    name,
                    access,
                    element,
                    rank,
                },
                KernelArg::Handle(h),
            ) => {
                if h.access != *access {
                    return Err(invalid(format!(
                        "parameter `{name}` is a {access:?} handle, but the argument is a {:?} handle; pass the same kind",
                        h.access
                    )));
                }
                if h.element != *element || h.extents.len() != *rank || h.strides.len() != *rank {
                    return Err(invalid(format!(
                        "parameter `{name}` is a rank-{rank} view of {element}, but the argument is a rank-{} view of {}",
                        h.extents.len(),
                        h.element
                    )));
                }
                buf.push_u64(h.ptr);
                for &e in &h.extents {
                    buf.push_u64(e);
                }
                for &s in &h.strides {
                    buf.push_u64(s);
                }
            }
            (DeviceParam::Scalar { name, ty }, KernelArg::Scalar(s)) => {
                if s.ty() != *ty {
                    return Err(invalid(format!(
                        "parameter `{name}` is {ty}, but the argument is {}",
                        s.ty()
                    )));
                }
                buf.push(&s.bytes());
            }
            (DeviceParam::TokenBits { name }, KernelArg::TokenBits(t)) => {
                if t.size == 0 {
                    return Err(invalid(format!(
                        "parameter `{name}` is a unique token of no ids; make it with `Cuda::unique_token`"
                    )));
                }
                buf.push_u64(t.words);
                buf.push_u64(t.size);
            }
            (param, _) => {
                return Err(invalid(format!(
                    "parameter `{}` is a {}; pass that kind of argument in its place",
                    param.name(),
                    match param {
                        DeviceParam::Handle { .. } => "view handle",
                        DeviceParam::Scalar { .. } => "scalar",
                        DeviceParam::TokenBits { .. } => "unique token (`DeviceArg::token`)",
                    }
                )));
            }
        }
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Md;
    // SAFETY: test-only; never launched.
    unsafe impl DeviceKernel for Md {
        const NAME: &'static str = "md";
        const ENTRY: &'static str = "md_for";
        const ITERATION: DeviceIteration = DeviceIteration::MdRange(2);
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            &[
                DeviceParam::Scalar {
                    name: "flag",
                    ty: ScalarType::Bool,
                },
                DeviceParam::Handle {
                    name: "x",
                    access: HandleAccess::Read,
                    element: ScalarType::F64,
                    rank: 2,
                },
                DeviceParam::Scalar {
                    name: "n",
                    ty: ScalarType::I32,
                },
                DeviceParam::Scalar {
                    name: "a",
                    ty: ScalarType::F64,
                },
            ]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    fn md_args() -> Vec<KernelArg> {
        vec![
            KernelArg::Scalar(ScalarArg::Bool(true)),
            KernelArg::Handle(HandleArg {
                ptr: 0xdead_beef_0000,
                access: HandleAccess::Read,
                element: ScalarType::F64,
                extents: vec![3, 4],
                strides: vec![4, 1],
            }),
            KernelArg::Scalar(ScalarArg::I32(-7)),
            KernelArg::Scalar(ScalarArg::F64(1.5)),
        ]
    }

    #[test]
    fn offsets_follow_the_abi_alignment() {
        let it = IterationArgs::MdRange {
            begins: vec![1, 2],
            ends: vec![3, 4],
            order: IndexOrder::FirstFastest,
        };
        let mut p = pack_for::<Md>(&it, &md_args()).expect("matching arguments");
        // 4 bounds (0..32), the order (an int) at 32, bool at 36, handle pointer aligned up
        // to 40, 2 extents, 2 strides (48..80), i32 at 80, f64 aligned up to 88.
        assert_eq!(p.offsets(), [0, 8, 16, 24, 32, 36, 40, 48, 56, 64, 72, 80, 88]);
        assert_eq!(p.len(), 96);
        let bytes = p.bytes();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        assert_eq!([word(0), word(8), word(16), word(24)], [1, 2, 3, 4]);
        assert_eq!(i32::from_le_bytes(bytes[32..36].try_into().expect("4 bytes")), 1);
        assert_eq!(bytes[36], 1);
        assert_eq!(&bytes[37..40], &[0; 3]);
        assert_eq!(word(40), 0xdead_beef_0000);
        assert_eq!([word(48), word(56), word(64), word(72)], [3, 4, 4, 1]);
        assert_eq!(i32::from_le_bytes(bytes[80..84].try_into().expect("4 bytes")), -7);
        assert_eq!(f64::from_bits(word(88)), 1.5);
        // The pointers point at the offsets, each aligned to its parameter's size.
        let ptrs = p.pointers();
        let base = ptrs[0] as usize;
        for (ptr, off) in ptrs
            .iter()
            .zip([0, 8, 16, 24, 32, 36, 40, 48, 56, 64, 72, 80, 88])
        {
            assert_eq!(*ptr as usize - base, off);
        }
        assert_eq!(base % 8, 0);
    }

    struct Teams;
    // SAFETY: test-only; never launched.
    unsafe impl DeviceKernel for Teams {
        const NAME: &'static str = "teams";
        const ENTRY: &'static str = "teams_for_team";
        const ITERATION: DeviceIteration = DeviceIteration::Team;
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            &[DeviceParam::Scalar {
                name: "n",
                ty: ScalarType::U32,
            }]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    #[test]
    fn team_entries_get_the_league_then_the_four_scratch_requests() {
        let it = IterationArgs::Team {
            league_size: 12,
            scratch: TeamScratch {
                per_team: 100,
                per_thread: 8,
                level1_per_team: 4096,
                level1_per_thread: 24,
            },
        };
        let mut p = pack_for::<Teams>(&it, &[KernelArg::Scalar(ScalarArg::U32(5))]).expect("matching");
        assert_eq!(p.offsets(), [0, 8, 16, 24, 32, 40]);
        let bytes = p.bytes();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        // The league, then per team at levels 0 and 1, then per thread at levels 0 and 1.
        assert_eq!(
            [word(0), word(8), word(16), word(24), word(32)],
            [12, 100, 4096, 8, 24]
        );
        assert_eq!(u32::from_le_bytes(bytes[40..44].try_into().expect("4 bytes")), 5);
        assert_eq!(p.pointers().len(), 6);
    }

    #[test]
    fn mismatches_are_typed_errors() {
        let it = IterationArgs::MdRange {
            begins: vec![0, 0],
            ends: vec![3, 4],
            order: IndexOrder::LastFastest,
        };
        let mut args = md_args();
        args.pop();
        let e = pack_for::<Md>(&it, &args).expect_err("too few");
        assert!(e.to_string().contains("3 arguments for 4 parameters"), "{e}");

        let mut args = md_args();
        args[3] = KernelArg::Scalar(ScalarArg::F32(1.5));
        let e = pack_for::<Md>(&it, &args).expect_err("wrong scalar type");
        assert!(e.to_string().contains("`a` is f64"), "{e}");

        let mut args = md_args();
        args[1] = KernelArg::Handle(HandleArg {
            ptr: 0,
            access: HandleAccess::Read,
            element: ScalarType::F64,
            extents: vec![12],
            strides: vec![1],
        });
        let e = pack_for::<Md>(&it, &args).expect_err("wrong rank");
        assert!(e.to_string().contains("rank-2 view of f64"), "{e}");

        // A writer where the kernel takes a reader (or the reverse) is refused: the launch's
        // writer checks depend on the kinds matching.
        let mut args = md_args();
        if let KernelArg::Handle(h) = &mut args[1] {
            h.access = HandleAccess::Write;
        }
        let e = pack_for::<Md>(&it, &args).expect_err("wrong access");
        assert!(e.to_string().contains("`x` is a Read handle"), "{e}");

        let mut args = md_args();
        args.swap(0, 1);
        assert!(pack_for::<Md>(&it, &args).is_err());

        let e =
            pack_for::<Md>(&IterationArgs::Range { begin: 0, end: 1 }, &md_args()).expect_err("wrong policy");
        assert!(e.to_string().contains("MdRange(2)"), "{e}");
        let short = IterationArgs::MdRange {
            begins: vec![0],
            ends: vec![3],
            order: IndexOrder::LastFastest,
        };
        assert!(pack_for::<Md>(&short, &md_args()).is_err());
    }

    struct Wide;
    // SAFETY: test-only; never launched.
    unsafe impl DeviceKernel for Wide {
        const NAME: &'static str = "wide";
        const ENTRY: &'static str = "wide_for";
        const ITERATION: DeviceIteration = DeviceIteration::Range;
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            const P: DeviceParam = DeviceParam::Scalar {
                name: "s",
                ty: ScalarType::U64,
            };
            &[P; 600]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    #[test]
    fn too_many_parameter_bytes() {
        let args = vec![KernelArg::Scalar(ScalarArg::U64(1)); 600];
        let e = pack_for::<Wide>(&IterationArgs::Range { begin: 0, end: 1 }, &args).expect_err("4816 bytes");
        assert!(e.to_string().contains("4816 bytes"), "{e}");
    }
}
