// Over 800 lines: the launch argument types and the one packer that lays them out for every
// iteration and pattern, with its unit tests beside it.
//! The arguments of a launch as the device sees them, and the packer that checks them against
//! a kernel's parameters and lays them out as the entry takes them (the
//! [crate documentation](crate#entry-parameters) gives the order).

use std::fmt;

use crate::{
    DeviceIteration, DeviceJoin, DeviceKernelInfo, DeviceParam, DevicePattern, HandleAccess, ReduceWalk,
    ScalarType, ScalarValue, device_join_for, value_layout,
};

/// The most bytes of parameters a kernel may take (the limit every CUDA driver accepts).
pub const MAX_PARAM_BYTES: usize = 4096;

/// Which index of an MDRange the threads' x walks, so that neighbouring threads touch
/// neighbouring elements: the last for row-major (`LayoutRight`) views, the first for
/// column-major (`LayoutLeft`) ones. An MDRange entry takes it as a parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IndexOrder {
    /// The last index on x, then y, then z (row-major views).
    #[default]
    LastFastest,
    /// The first index on x, then y, then z (column-major views).
    FirstFastest,
}

impl IndexOrder {
    /// The order of a view with these strides (in elements): first-fastest when its first
    /// dimension is the contiguous one and the last is not, else last-fastest.
    ///
    /// ```
    /// use hoplite_abi::IndexOrder;
    /// assert_eq!(IndexOrder::of_strides(&[1, 100]), IndexOrder::FirstFastest);
    /// assert_eq!(IndexOrder::of_strides(&[100, 1]), IndexOrder::LastFastest);
    /// assert_eq!(IndexOrder::of_strides(&[1]), IndexOrder::LastFastest);
    /// ```
    pub fn of_strides(strides: &[u64]) -> IndexOrder {
        match strides {
            [1, .., last] if *last != 1 => IndexOrder::FirstFastest,
            _ => IndexOrder::LastFastest,
        }
    }

    /// The entry's `hl_order` parameter.
    ///
    /// ```
    /// use hoplite_abi::IndexOrder;
    /// assert_eq!(IndexOrder::FirstFastest.code(), 1);
    /// ```
    pub const fn code(self) -> i32 {
        match self {
            IndexOrder::LastFastest => 0,
            IndexOrder::FirstFastest => 1,
        }
    }
}

/// Scratch memory a team asks for, in bytes: the per-team and per-thread parts of levels 0
/// and 1. Both levels live in the block's dynamic shared memory (the
/// [crate documentation](crate#team-scratch) gives the layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TeamScratch {
    /// Bytes per team at level 0.
    pub per_team: usize,
    /// Bytes per thread at level 0.
    pub per_thread: usize,
    /// Bytes per team at level 1.
    pub level1_per_team: usize,
    /// Bytes per thread at level 1.
    pub level1_per_thread: usize,
}

impl TeamScratch {
    /// The dynamic shared memory of a block of `threads` threads: the team's level 0 and
    /// level 1, then every thread's level 0 and level 1 parts. Each part is rounded up to 8
    /// bytes, as the host backends round a scratch request, so an allocation that fits on the
    /// host fits on the device.
    ///
    /// ```
    /// use hoplite_abi::TeamScratch;
    /// let s = TeamScratch { per_team: 12, per_thread: 4, level1_per_team: 8, level1_per_thread: 8 };
    /// assert_eq!(s.bytes(2), 16 + 8 + 2 * (8 + 8));
    /// ```
    pub fn bytes(&self, threads: u32) -> usize {
        let round = |b: usize| b.checked_next_multiple_of(8).unwrap_or(usize::MAX);
        let per_thread = round(self.per_thread).saturating_add(round(self.level1_per_thread));
        round(self.per_team)
            .saturating_add(round(self.level1_per_team))
            .saturating_add(per_thread.saturating_mul(threads as usize))
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
    Scalar(ScalarValue),
    /// A unique token.
    TokenBits(TokenArg),
}

/// A launch's arguments are [`KernelArg`]s or hold them (a backend's own argument type), so
/// the packers take either without copying.
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
        /// The policy's vector length, which the members report (`m.vector_length()`).
        vector_length: u64,
    },
}

/// A packed parameter buffer: the bytes, and where each parameter starts.
///
/// Each parameter sits at the next offset aligned to its size (or to the alignment given to
/// [`push_aligned`](Self::push_aligned)), little-endian, so the buffer is both a packed
/// argument block and the storage one pointer per parameter ([`pointers`](Self::pointers),
/// `cuLaunchKernel`'s `kernelParams`) points into.
///
/// ```
/// use hoplite_abi::ParamBuffer;
/// let mut p = ParamBuffer::new();
/// p.push(&[1]); // a bool at 0
/// p.push(&7u32.to_le_bytes()); // a u32 at the next multiple of 4
/// p.push_u64(9); // a u64 at the next multiple of 8
/// assert_eq!(p.offsets(), [0, 4, 8]);
/// assert_eq!(p.len(), 16);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamBuffer {
    /// The storage, in 8-byte words so every offset below is aligned in memory too.
    words: Vec<u64>,
    /// The byte length used.
    len: usize,
    /// The byte offset of each parameter, in order.
    offsets: Vec<usize>,
}

impl Default for ParamBuffer {
    fn default() -> Self {
        ParamBuffer::new()
    }
}

impl ParamBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        // Room for a typical entry's parameters, so packing does not grow the lists on every
        // launch (a rank-2 handle alone is five words).
        ParamBuffer {
            words: Vec::with_capacity(32),
            len: 0,
            offsets: Vec::with_capacity(24),
        }
    }

    /// Appends a parameter of `bytes` at the next multiple of its size (a scalar's alignment).
    pub fn push(&mut self, bytes: &[u8]) {
        self.push_aligned(bytes, bytes.len().max(1));
    }

    /// Appends a parameter at the next multiple of `align` (a struct's alignment, which may
    /// be less than its size).
    ///
    /// # Panics
    ///
    /// If `align` is 0.
    pub fn push_aligned(&mut self, bytes: &[u8], align: usize) {
        let offset = self.len.next_multiple_of(align);
        let end = offset + bytes.len();
        self.words.resize(end.div_ceil(8), 0);
        self.write(offset, bytes);
        self.offsets.push(offset);
        self.len = end;
    }

    /// Appends a `u64` (an `unsigned long long` or a pointer).
    pub fn push_u64(&mut self, v: u64) {
        self.push(&v.to_le_bytes());
    }

    /// Overwrites parameter `index` with `bytes` (its size): the partials pointer once it is
    /// allocated, the scan's final-pass flag between its two launches.
    ///
    /// ```
    /// use hoplite_abi::ParamBuffer;
    /// let mut p = ParamBuffer::new();
    /// p.push_u64(0);
    /// p.set(0, &0xabcu64.to_le_bytes());
    /// assert_eq!(p.bytes(), 0xabcu64.to_le_bytes());
    /// ```
    ///
    /// # Panics
    ///
    /// If there is no parameter `index`, or `bytes` reach past the buffer.
    pub fn set(&mut self, index: usize, bytes: &[u8]) {
        let offset = self.offsets[index];
        self.write(offset, bytes);
    }

    fn write(&mut self, offset: usize, bytes: &[u8]) {
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

    /// One pointer per parameter into the buffer: `cuLaunchKernel`'s `kernelParams`, and
    /// what a host launcher of the generated C reads its parameters through. They stay valid
    /// while `self` is neither moved nor changed.
    pub fn pointers(&mut self) -> Vec<*mut std::ffi::c_void> {
        let base = self.words.as_mut_ptr().cast::<u8>();
        self.offsets
            .iter()
            // `wrapping_add` keeps this safe code; every offset is inside `words`.
            .map(|&off| base.wrapping_add(off).cast())
            .collect()
    }
}

/// Arguments that do not fit a kernel's parameters: the kernel and what does not fit, with
/// the fix. A backend reports it as its own launch error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackError {
    /// The kernel's name.
    pub kernel: &'static str,
    /// What does not fit, with the numbers and the fix.
    pub reason: String,
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel `{}`: {}", self.kernel, self.reason)
    }
}

impl std::error::Error for PackError {}

/// Packs the parameters of `kernel`'s entry for a `parallel_for` launch: the iteration space,
/// then each handle (pointer, extents, strides), scalar and unique token in `kernel.params`
/// order.
///
/// ```
/// use hoplite_abi::*;
/// const PARAMS: &[DeviceParam] = &[
///     DeviceParam::Handle { name: "y", access: HandleAccess::Write, element: ScalarType::F64, rank: 1 },
///     DeviceParam::Scalar { name: "n", ty: ScalarType::I32 },
/// ];
/// let kernel = DeviceKernelInfo {
///     name: "fill", entry: "fill_for", iteration: DeviceIteration::Range,
///     pattern: DevicePattern::For, params: PARAMS, cuda_source: "", source_hash: 0,
/// };
/// let y = HandleArg {
///     ptr: 0x1000, access: HandleAccess::Write, element: ScalarType::F64,
///     extents: vec![10], strides: vec![1],
/// };
/// let args = [KernelArg::Handle(y), KernelArg::Scalar(ScalarValue::I32(3))];
/// let p = pack_for(&kernel, &IterationArgs::Range { begin: 0, end: 10 }, &args)?;
/// // begin, end, pointer, extent, stride, then the int.
/// assert_eq!(p.offsets(), [0, 8, 16, 24, 32, 40]);
/// let wrong = [args[1].clone(), args[0].clone()];
/// let e = pack_for(&kernel, &IterationArgs::Range { begin: 0, end: 10 }, &wrong).unwrap_err();
/// assert!(e.to_string().contains("parameter `y` is a view handle"));
/// # Ok::<(), PackError>(())
/// ```
///
/// # Errors
///
/// When the kernel is not a `parallel_for`, the iteration space is not the kernel's, the
/// arguments do not match `kernel.params` in number, kind, access, element type, rank or
/// scalar type, a token has no ids, or the parameters exceed [`MAX_PARAM_BYTES`].
pub fn pack_for(
    kernel: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, PackError> {
    if kernel.pattern != DevicePattern::For {
        return Err(PackError {
            kernel: kernel.name,
            reason: format!(
                "the kernel computes {:?}; launch it with the reduce or scan launch of its pattern",
                kernel.pattern
            ),
        });
    }
    let buf = pack_common(kernel, iteration, args)?;
    check_size(kernel, buf)
}

/// Packs the parameters of `kernel`'s reduce entry: the [`pack_for`] parameters, then the
/// code of `walk` (how the threads share the iteration space: [`ReduceWalk::for_join`] of
/// the reducer's commutativity), the code of the join the device applies to each block's
/// values ([`device_join_for`] of `join`, else -1: a partial per thread), the reducer's
/// `identity` in the device layout of the kernel's value ([`value_layout`]) and the partials
/// pointer (0 here; set it with [`ParamBuffer::set`] on the last parameter once the partials
/// are allocated).
///
/// ```
/// use hoplite_abi::*;
/// let kernel = DeviceKernelInfo {
///     name: "argmin", entry: "argmin_reduce_range", iteration: DeviceIteration::Range,
///     pattern: DevicePattern::ReduceValLoc(ScalarType::F32), params: &[], cuda_source: "",
///     source_hash: 0,
/// };
/// // `ValLoc { val: f32::MAX, loc: None }`: the value, then `~0` for no location.
/// let mut identity = [0u8; 16];
/// identity[..8].copy_from_slice(&ScalarValue::F32(f32::MAX).to_device_bytes());
/// identity[8..].copy_from_slice(&u64::MAX.to_le_bytes());
/// let range = IterationArgs::Range { begin: 0, end: 10 };
/// let p = pack_reduce(&kernel, &range, &[] as &[KernelArg], &identity, None, ReduceWalk::Strided)?;
/// // begin, end, the walk, the device join (-1: none for a location), the 16-byte identity
/// // (8-byte aligned), the partials pointer.
/// assert_eq!(p.offsets(), [0, 8, 16, 20, 24, 40]);
/// # Ok::<(), PackError>(())
/// ```
///
/// # Errors
///
/// As for [`pack_for`], and when the kernel is not a reduction or `identity` is not as long
/// as its value.
pub fn pack_reduce(
    kernel: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    identity: &[u8],
    join: Option<DeviceJoin>,
    walk: ReduceWalk,
) -> Result<ParamBuffer, PackError> {
    let layout = match (kernel.pattern, value_layout(kernel.pattern)) {
        (DevicePattern::For | DevicePattern::Scan(_), _) | (_, None) => {
            return Err(PackError {
                kernel: kernel.name,
                reason: format!(
                    "the kernel computes {:?}, not a reduction; launch it with the launch of its pattern",
                    kernel.pattern
                ),
            });
        }
        (_, Some(layout)) => layout,
    };
    check_value(kernel, "identity", identity, layout.size)?;
    let mut buf = pack_common(kernel, iteration, args)?;
    buf.push(&walk.code().to_le_bytes());
    let code = device_join_for(kernel.pattern, join).map_or(-1, DeviceJoin::code);
    buf.push(&code.to_le_bytes());
    buf.push_aligned(identity, layout.align);
    buf.push_u64(0);
    check_size(kernel, buf)
}

/// Packs the parameters of `kernel`'s scan entry: the [`pack_for`] parameters, the identity
/// `zero` (the device bytes of the scanned type's zero), the per-thread values pointer (0
/// here; the next to last parameter) and the final-pass flag (`false`; the last).
///
/// ```
/// use hoplite_abi::*;
/// let kernel = DeviceKernelInfo {
///     name: "prefix", entry: "prefix_scan", iteration: DeviceIteration::Range,
///     pattern: DevicePattern::Scan(ScalarType::I32), params: &[], cuda_source: "",
///     source_hash: 0,
/// };
/// let zero = ScalarValue::I32(0).to_device_bytes();
/// let p = pack_scan(&kernel, &IterationArgs::Range { begin: 0, end: 10 }, &[] as &[KernelArg], &zero[..4])?;
/// assert_eq!(p.offsets(), [0, 8, 16, 24, 32]);
/// # Ok::<(), PackError>(())
/// ```
///
/// # Errors
///
/// As for [`pack_for`], and when the kernel is not a scan or `zero` is not as long as its
/// value.
pub fn pack_scan(
    kernel: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    zero: &[u8],
) -> Result<ParamBuffer, PackError> {
    let DevicePattern::Scan(scalar) = kernel.pattern else {
        return Err(PackError {
            kernel: kernel.name,
            reason: format!(
                "the kernel computes {:?}, not a scan; launch it with the launch of its pattern",
                kernel.pattern
            ),
        });
    };
    check_value(kernel, "zero", zero, scalar.size())?;
    let mut buf = pack_common(kernel, iteration, args)?;
    buf.push(zero);
    buf.push_u64(0);
    buf.push(&[0]);
    check_size(kernel, buf)
}

fn check_value(kernel: &DeviceKernelInfo, what: &str, bytes: &[u8], size: usize) -> Result<(), PackError> {
    if bytes.len() == size {
        return Ok(());
    }
    Err(PackError {
        kernel: kernel.name,
        reason: format!(
            "the {what} takes {} bytes, but the kernel's {:?} value takes {size}; pass the device bytes of the kernel's value type",
            bytes.len(),
            kernel.pattern
        ),
    })
}

fn check_size(k: &DeviceKernelInfo, buf: ParamBuffer) -> Result<ParamBuffer, PackError> {
    if buf.len() > MAX_PARAM_BYTES {
        return Err(PackError {
            kernel: k.name,
            reason: format!(
                "{} bytes of parameters exceed the {MAX_PARAM_BYTES} bytes a kernel may take; pass fewer views or scalars",
                buf.len()
            ),
        });
    }
    Ok(buf)
}

/// The iteration space, handles, scalars and tokens, checked against `k.params`.
fn pack_common(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, PackError> {
    let invalid = |reason: String| PackError {
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
        (
            DeviceIteration::Team,
            IterationArgs::Team {
                league_size,
                scratch,
                vector_length,
            },
        ) => {
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
            buf.push_u64(*vector_length);
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
                if s.scalar_type() != *ty {
                    return Err(invalid(format!(
                        "parameter `{name}` is {ty}, but the argument is {}",
                        s.scalar_type()
                    )));
                }
                buf.push(&s.to_device_bytes()[..ty.size()]);
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
                        DeviceParam::TokenBits { .. } =>
                            "unique token (pass one, such as `Cuda::unique_token`, to the kernel's `with`)",
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

    const MD_PARAMS: &[DeviceParam] = &[
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
        DeviceParam::TokenBits { name: "tokens" },
    ];

    fn kernel(pattern: DevicePattern) -> DeviceKernelInfo {
        DeviceKernelInfo {
            name: "md",
            entry: "md_entry",
            iteration: DeviceIteration::MdRange(2),
            pattern,
            params: MD_PARAMS,
            cuda_source: "",
            source_hash: 0,
        }
    }

    fn iteration() -> IterationArgs {
        IterationArgs::MdRange {
            begins: vec![1, 2],
            ends: vec![3, 4],
            order: IndexOrder::FirstFastest,
        }
    }

    fn args() -> Vec<KernelArg> {
        vec![
            KernelArg::Scalar(ScalarValue::Bool(true)),
            KernelArg::Handle(HandleArg {
                ptr: 0xdead_beef_0000,
                access: HandleAccess::Read,
                element: ScalarType::F64,
                extents: vec![3, 4],
                strides: vec![4, 1],
            }),
            KernelArg::Scalar(ScalarValue::I32(-7)),
            KernelArg::TokenBits(TokenArg {
                words: 0x5000,
                size: 40,
            }),
        ]
    }

    #[test]
    fn a_reduction_appends_the_walk_the_join_the_aligned_identity_and_the_partials() {
        let k = kernel(DevicePattern::ReduceMinMax(ScalarType::F32));
        let identity: Vec<u8> = (1..=16).collect();
        let blocked = ReduceWalk::Blocked;
        let p = pack_reduce(
            &k,
            &iteration(),
            &args(),
            &identity,
            Some(DeviceJoin::Max),
            blocked,
        )
        .expect("fits");
        // 4 bounds, the order at 32, bool at 36, handle at 40..80, int at 80, token at 88 and
        // 96, the walk at 104, the join code at 108, the identity aligned to 8 at 112, the
        // partials at 128.
        assert_eq!(
            p.offsets(),
            [
                0, 8, 16, 24, 32, 36, 40, 48, 56, 64, 72, 80, 88, 96, 104, 108, 112, 128
            ]
        );
        let bytes = p.bytes();
        assert_eq!(&bytes[104..108], &1i32.to_le_bytes());
        // No device join for a MinMax value: -1.
        assert_eq!(&bytes[108..112], &(-1i32).to_le_bytes());
        assert_eq!(&bytes[112..128], &identity[..]);
        assert_eq!(&bytes[88..96], &0x5000u64.to_le_bytes());
        assert_eq!(&bytes[96..104], &40u64.to_le_bytes());
        let p = pack_reduce(&k, &iteration(), &args(), &identity, None, ReduceWalk::Strided).expect("fits");
        assert_eq!(&p.bytes()[104..108], &0i32.to_le_bytes());
        let e = pack_reduce(&k, &iteration(), &args(), &identity[..8], None, blocked)
            .expect_err("short identity");
        assert!(e.to_string().contains("the identity takes 8 bytes"), "{e}");
        let e = pack_reduce(
            &kernel(DevicePattern::For),
            &iteration(),
            &args(),
            &identity,
            None,
            blocked,
        )
        .expect_err("not a reduction");
        assert!(e.to_string().contains("not a reduction"), "{e}");
    }

    #[test]
    fn walks_share_the_space_as_documented() {
        for (len, threads) in [(0, 4), (1, 4), (10, 4), (1000, 1024), (1 << 20, 3000), (7, 1)] {
            for walk in [ReduceWalk::Strided, ReduceWalk::Blocked] {
                let shares: Vec<Vec<u64>> = (0..threads)
                    .map(|t| walk.offsets(len, threads, t).collect())
                    .collect();
                // Every offset once.
                let mut all: Vec<u64> = shares.concat();
                all.sort_unstable();
                assert!(
                    all.iter().copied().eq(0..len),
                    "{walk:?} over {len} with {threads}"
                );
                if walk == ReduceWalk::Blocked {
                    // In thread order, each thread a contiguous run: the concatenation is 0..len.
                    assert!(shares.concat().into_iter().eq(0..len), "{len} with {threads}");
                }
            }
        }
        // Threads past the blocks get nothing: 1000 indices over 1024 threads.
        assert_eq!(
            ReduceWalk::Blocked.offsets(1000, 1024, 999).collect::<Vec<_>>(),
            [999]
        );
        assert_eq!(ReduceWalk::Blocked.offsets(1000, 1024, 1000).count(), 0);
        assert_eq!(ReduceWalk::Strided.offsets(1000, 1024, 1000).count(), 0);
    }

    #[test]
    fn a_scan_appends_the_zero_the_values_and_the_final_flag() {
        let k = kernel(DevicePattern::Scan(ScalarType::F64));
        let mut p = pack_scan(&k, &iteration(), &args(), &0f64.to_le_bytes()).expect("fits");
        let n = p.offsets().len();
        assert_eq!(&p.offsets()[n - 3..], [104, 112, 120]);
        assert_eq!(p.len(), 121);
        p.set(n - 1, &[1]);
        assert_eq!(p.bytes()[120], 1);
        assert!(pack_for(&k, &iteration(), &args()).is_err());
        let e = pack_scan(
            &kernel(DevicePattern::Reduce(ScalarType::F64)),
            &iteration(),
            &args(),
            &[0; 8],
        )
        .expect_err("not a scan");
        assert!(
            e.to_string()
                .starts_with("kernel `md`: the kernel computes Reduce(F64)"),
            "{e}"
        );
    }

    #[test]
    fn a_token_needs_ids_and_its_own_place() {
        let k = kernel(DevicePattern::For);
        let mut a = args();
        a[3] = KernelArg::TokenBits(TokenArg { words: 0, size: 0 });
        let e = pack_for(&k, &iteration(), &a).expect_err("no ids");
        assert!(e.to_string().contains("unique token of no ids"), "{e}");
        let mut a = args();
        a[3] = KernelArg::Scalar(ScalarValue::U64(1));
        let e = pack_for(&k, &iteration(), &a).expect_err("a scalar for a token");
        assert!(
            e.to_string().contains("parameter `tokens` is a unique token"),
            "{e}"
        );
    }
}
