//! What `#[kernel]` tells a device backend about a kernel: its iteration, pattern and
//! parameters, as a trait ([`DeviceKernel`]) and as a value ([`DeviceKernelInfo`]); the joins
//! device code applies; the device layout of reduced values; the stable source hash.

use crate::ScalarType;

/// How a kernel's entry iterates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceIteration {
    /// A `RangePolicy`: the kernel takes an `Idx` token.
    Range,
    /// An `MDRangePolicy` of this rank: the kernel takes an `MdIdx` token. Ranks up to 3 map
    /// to the grid's z, y, x (x the last, fastest index); higher ranks are flattened onto x.
    MdRange(usize),
    /// A `TeamPolicy`: the kernel takes the team member. A block is a team (launch it with
    /// `blockDim.x` = the team size and `blockDim.y = blockDim.z = 1`); blocks walk the league
    /// with a grid-stride loop, all threads of a block together, so barriers line up.
    Team,
}

impl DeviceIteration {
    /// The number of dimensions (1 for a range and for a league of teams).
    ///
    /// ```
    /// use hoplite_abi::DeviceIteration;
    /// assert_eq!(DeviceIteration::MdRange(3).rank(), 3);
    /// ```
    pub const fn rank(self) -> usize {
        match self {
            DeviceIteration::Range | DeviceIteration::Team => 1,
            DeviceIteration::MdRange(rank) => rank,
        }
    }
}

/// The pattern a kernel's entry runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DevicePattern {
    /// `parallel_for`.
    For,
    /// `parallel_reduce` accumulating a value of this type.
    Reduce(ScalarType),
    /// `parallel_reduce` accumulating a `ValLoc<T>` of this `T` (`MinLoc`, `MaxLoc`): on the
    /// device a `struct { T val; unsigned long long loc; }` with `loc == ~0` for no location,
    /// 16 bytes with the value first.
    ReduceValLoc(ScalarType),
    /// `parallel_reduce` accumulating a `MinMaxScalar<T>` of this `T` (`MinMax`): on the
    /// device a `struct { T min; T max; }` of 16 bytes, `min` at byte 0 and `max` at byte 8.
    ReduceMinMax(ScalarType),
    /// `parallel_reduce` accumulating a `MinMaxLocScalar<T>` of this `T` (`MinMaxLoc`): on the
    /// device two `ValLoc` structs, the minimum's then the maximum's, 32 bytes: `min_val` at
    /// byte 0, `min_loc` at 8, `max_val` at 16, `max_loc` at 24 (`~0` for no location).
    ReduceMinMaxLoc(ScalarType),
    /// `parallel_reduce` accumulating a `MinMaxLocScalar<T>` of this `T` through
    /// `update_first_last` (`MinMaxFirstLastLoc`): the layout of
    /// [`ReduceMinMaxLoc`](Self::ReduceMinMaxLoc), with ties of the maximum going to the
    /// highest index.
    ReduceMinMaxFirstLastLoc(ScalarType),
    /// `parallel_reduce` accumulating an `Option<usize>` through `FirstLoc::update` or
    /// `LastLoc::update` (`FirstLoc`, `LastLoc`): on the device an `unsigned long long`, `~0` for
    /// none, 8 bytes.
    ReduceIndex,
    /// `parallel_scan` summing values of this type (two launches of the entry; see the
    /// [crate documentation](crate#entry-parameters)).
    Scan(ScalarType),
}

/// What a handle parameter lets the kernel do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandleAccess {
    /// A reader (`x.read()`): loads anywhere.
    Read,
    /// A writer (`y.write()`): loads and stores at the launch's tokens.
    Write,
    /// An atomic handle (`h.atomic()`): atomic updates anywhere.
    Atomic,
    /// A team-slots handle (`v.team_slots()`, rank 2): each thread of a team kernel loads and
    /// stores at its own `[league rank, team rank]`, checked against the extents.
    TeamSlots,
}

/// One parameter of a device kernel, in the order the kernel function declares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceParam {
    /// A view handle of `rank` dimensions over elements of `element`: passed as a pointer,
    /// `rank` extents and `rank` strides.
    Handle {
        /// The parameter's name in the kernel.
        name: &'static str,
        /// Reader, writer or atomic handle.
        access: HandleAccess,
        /// The element type.
        element: ScalarType,
        /// The number of dimensions.
        rank: usize,
    },
    /// A scalar capture, passed by value.
    Scalar {
        /// The parameter's name in the kernel.
        name: &'static str,
        /// Its type.
        ty: ScalarType,
    },
    /// A unique token (`tokens: &impl UniqueToken` in a `#[kernel]`): passed as a pointer to
    /// the token's lock words (`unsigned int`, one bit per id, all zero between launches)
    /// and its size (`unsigned long long`), the number of ids.
    ///
    /// ```
    /// use hoplite_abi::DeviceParam;
    /// assert_eq!(DeviceParam::TokenBits { name: "tokens" }.name(), "tokens");
    /// ```
    TokenBits {
        /// The parameter's name in the kernel.
        name: &'static str,
    },
}

impl DeviceParam {
    /// The parameter's name in the kernel.
    ///
    /// ```
    /// use hoplite_abi::{DeviceParam, ScalarType};
    /// assert_eq!(DeviceParam::Scalar { name: "a", ty: ScalarType::F64 }.name(), "a");
    /// ```
    pub const fn name(&self) -> &'static str {
        match self {
            DeviceParam::Handle { name, .. }
            | DeviceParam::Scalar { name, .. }
            | DeviceParam::TokenBits { name } => name,
        }
    }
}

/// A kernel translated to CUDA C: implemented by `#[kernel]`, never by hand.
///
/// ```
/// use hoplite_abi::{DeviceIteration, DeviceKernel, DevicePattern, DeviceParam};
///
/// struct Noop;
/// // SAFETY: the entry touches no memory at all.
/// unsafe impl DeviceKernel for Noop {
///     const NAME: &'static str = "noop";
///     const ENTRY: &'static str = "noop_for";
///     const ITERATION: DeviceIteration = DeviceIteration::Range;
///     const PATTERN: DevicePattern = DevicePattern::For;
///     fn params() -> &'static [DeviceParam] { &[] }
///     fn cuda_source() -> &'static str {
///         "extern \"C\" __global__ void noop_for(unsigned long long b, unsigned long long e) {}"
///     }
/// }
/// assert_eq!(Noop::source_hash(), Noop::source_hash());
/// ```
///
/// # Safety
///
/// A device backend launches [`ENTRY`](Self::ENTRY) of [`cuda_source`](Self::cuda_source) with
/// raw pointers to view data laid out as the [crate documentation](crate#entry-parameters) describes, for the
/// [`params`](Self::params) this trait reports, and trusts the code to stay inside them. An
/// implementation promises that the entry has exactly that parameter list; that it stores
/// through a writer only at indices of the launch's iteration space (which the launch checked
/// against the writer's extents) or, in a team kernel, in its team's row of a rank-2 writer
/// at columns the thread owns by `team_owner` (row and column checked against the extents in
/// the kernel), through a team-slots handle only at its own `[league rank, team rank]` (checked
/// against the extents in the kernel), and through a reduction's partials only at its own
/// thread's slot; and that
/// every other load or store is checked against the extents it was given, or is an atomic
/// operation on an atomic handle.
///
/// For every [`DeviceParam::TokenBits`] the backend passes lock words that hold `size` bits (at
/// least `ceil(size / 32)` words, all zero when the launch starts) and trusts the entry to
/// keep them so: it touches the words only with atomic operations at words below
/// `ceil(size / 32)`; it sets a bit only by acquiring an id, which is in `[0, size)` and was
/// clear, so no two threads hold one id at once; it clears only bits it set itself; and every
/// id a thread acquires is released before the thread exits, so the words are all zero again
/// when the launch ends and the next launch finds every id free.
pub unsafe trait DeviceKernel {
    /// The kernel's name (the Rust function's).
    const NAME: &'static str;
    /// The name of the `extern "C" __global__` entry in the source.
    const ENTRY: &'static str;
    /// How the entry iterates.
    const ITERATION: DeviceIteration;
    /// What the entry computes.
    const PATTERN: DevicePattern;

    /// The kernel's handle and scalar parameters, in declaration order.
    fn params() -> &'static [DeviceParam];

    /// The complete CUDA C++ source: a self-contained translation unit NVRTC compiles.
    fn cuda_source() -> &'static str;

    /// A hash of the source and the entry name that stays the same across builds and
    /// platforms (FNV-1a, 64 bits), to cache compiled modules by. Launches ask for it every
    /// time, so an implementation should return the same value computed ahead, as
    /// `#[kernel]` does: hashing a kernel's 16 KiB source takes about 20 µs.
    fn source_hash() -> u64 {
        stable_hash(&[Self::ENTRY.as_bytes(), Self::cuda_source().as_bytes()])
    }
}

/// A reducer's join that device code applies itself (hoplite-core's `Reducer::device_join`),
/// by the code the generated CUDA C's `hl_op<code>` names. Each reduces the scalar types its
/// host reducer does ([`applies_to`](Self::applies_to)).
///
/// ```
/// use hoplite_abi::{DeviceJoin, ScalarType};
/// assert_eq!(DeviceJoin::Sum.code(), 0);
/// assert!(DeviceJoin::BitAnd.applies_to(ScalarType::U32));
/// assert!(!DeviceJoin::BitAnd.applies_to(ScalarType::F64));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceJoin {
    /// `Sum`: `a + b` (integers wrap).
    Sum,
    /// `Max`: the larger; a NaN never replaces a number.
    Max,
    /// `Min`: the smaller; a NaN never replaces a number.
    Min,
    /// `Prod`: `a * b` (integers wrap).
    Prod,
    /// `BAnd`: `a & b`.
    BitAnd,
    /// `BOr`: `a | b`.
    BitOr,
    /// `LAnd`: `a && b`.
    LogicalAnd,
    /// `LOr`: `a || b`.
    LogicalOr,
}

impl DeviceJoin {
    /// The code the generated CUDA C dispatches on.
    pub const fn code(self) -> i32 {
        match self {
            DeviceJoin::Sum => 0,
            DeviceJoin::Max => 1,
            DeviceJoin::Min => 2,
            DeviceJoin::Prod => 3,
            DeviceJoin::BitAnd => 4,
            DeviceJoin::BitOr => 5,
            DeviceJoin::LogicalAnd => 6,
            DeviceJoin::LogicalOr => 7,
        }
    }

    /// Whether device code applies this join to values of `scalar`: arithmetic to numbers,
    /// bitwise to integers and `bool`, logical to `bool`, min and max to all.
    pub const fn applies_to(self, scalar: ScalarType) -> bool {
        let float = matches!(scalar, ScalarType::F32 | ScalarType::F64);
        let boolean = matches!(scalar, ScalarType::Bool);
        match self {
            DeviceJoin::Sum | DeviceJoin::Prod => !boolean,
            DeviceJoin::Max | DeviceJoin::Min => true,
            DeviceJoin::BitAnd | DeviceJoin::BitOr => !float,
            DeviceJoin::LogicalAnd | DeviceJoin::LogicalOr => boolean,
        }
    }
}

/// How the threads of a reduce entry share its iteration space, and so which indices each
/// partial covers: the entry's `hl_walk` parameter ([`code`](Self::code)).
///
/// [`offsets`](Self::offsets) is the share of one thread, in offsets from the iteration's
/// first index: of a range, of an MDRange flattened in its index order (`hl_order`; with
/// `Strided`, MDRanges of rank up to 3 walk each dimension with its own grid-stride loop
/// instead), or of a league, whose "threads" are the launch's blocks along x. A range or
/// MDRange numbers its threads `block * blockThreads + threadInBlock` (x fastest), as its
/// partials are numbered.
///
/// ```
/// use hoplite_abi::ReduceWalk;
/// assert_eq!(ReduceWalk::for_join(true), ReduceWalk::Strided);
/// assert_eq!(ReduceWalk::for_join(false).code(), 1);
/// // 10 indices over 4 threads: a block of 3 each, or every 4th index.
/// assert!(ReduceWalk::Blocked.offsets(10, 4, 1).eq(3..6));
/// assert!(ReduceWalk::Blocked.offsets(10, 4, 3).eq(9..10));
/// assert!(ReduceWalk::Strided.offsets(10, 4, 1).eq([1, 5, 9]));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReduceWalk {
    /// Grid-stride loops: thread `t` of `T` visits offsets `t`, `t + T`, `t + 2T`, ..., so
    /// neighbouring threads touch neighbouring elements. Partials interleave: for a
    /// commutative join, which the host may apply in any order.
    #[default]
    Strided,
    /// One contiguous block per thread, in thread order: thread `t` of `T` visits offsets
    /// `t * c .. (t + 1) * c` (cut at the length), `c = ceil(len / T)`. Partial `t` covers
    /// lower indices than partial `t + 1`, so joining the partials in order joins in index
    /// order: for a join that is not commutative.
    Blocked,
}

impl ReduceWalk {
    /// The walk a reducer needs: [`Strided`](Self::Strided) for a commutative join,
    /// [`Blocked`](Self::Blocked) otherwise.
    pub const fn for_join(commutative: bool) -> ReduceWalk {
        if commutative {
            ReduceWalk::Strided
        } else {
            ReduceWalk::Blocked
        }
    }

    /// The code the generated CUDA C dispatches on: 0 strided, 1 blocked.
    pub const fn code(self) -> i32 {
        match self {
            ReduceWalk::Strided => 0,
            ReduceWalk::Blocked => 1,
        }
    }

    /// The offsets thread `thread` of `threads` visits in an iteration space of `len`
    /// points, in the order it visits them (the prelude's `hl_share` computes the same).
    pub fn offsets(self, len: u64, threads: u64, thread: u64) -> impl Iterator<Item = u64> {
        let threads = threads.max(1);
        let (first, end, step) = match self {
            ReduceWalk::Strided => (thread.min(len), len, threads),
            ReduceWalk::Blocked => {
                let chunk = len.div_ceil(threads);
                let first = thread.saturating_mul(chunk).min(len);
                (first, first + chunk.min(len - first), 1)
            }
        };
        (first..end).step_by(usize::try_from(step).unwrap_or(usize::MAX))
    }
}

/// FNV-1a over `parts`, with a separator between them: a hash that does not depend on the
/// platform or the compiler version, unlike `std`'s `DefaultHasher`.
///
/// ```
/// use hoplite_abi::stable_hash;
/// assert_eq!(stable_hash(&[b"a"]), stable_hash(&[b"a"]));
/// assert_ne!(stable_hash(&[b"ab"]), stable_hash(&[b"a", b"b"]));
/// ```
pub fn stable_hash(parts: &[&[u8]]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for (k, part) in parts.iter().enumerate() {
        if k > 0 {
            hash = (hash ^ 0xff).wrapping_mul(PRIME);
        }
        for &byte in *part {
            hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
        }
    }
    hash
}

/// What a device backend needs to know about a `#[kernel]`: [`DeviceKernel`] as a value.
///
/// ```
/// use hoplite_abi::{DeviceKernelInfo, DevicePattern};
/// # use hoplite_abi::*;
/// # struct Fill;
/// # unsafe impl DeviceKernel for Fill {
/// #     const NAME: &'static str = "fill";
/// #     const ENTRY: &'static str = "fill_entry";
/// #     const ITERATION: DeviceIteration = DeviceIteration::Range;
/// #     const PATTERN: DevicePattern = DevicePattern::For;
/// #     fn params() -> &'static [DeviceParam] { &[] }
/// #     fn cuda_source() -> &'static str { "" }
/// # }
/// let info = DeviceKernelInfo::of::<Fill>();
/// assert_eq!((info.name, info.pattern), ("fill", DevicePattern::For));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceKernelInfo {
    /// [`DeviceKernel::NAME`].
    pub name: &'static str,
    /// [`DeviceKernel::ENTRY`].
    pub entry: &'static str,
    /// [`DeviceKernel::ITERATION`].
    pub iteration: DeviceIteration,
    /// [`DeviceKernel::PATTERN`].
    pub pattern: DevicePattern,
    /// [`DeviceKernel::params`].
    pub params: &'static [DeviceParam],
    /// [`DeviceKernel::cuda_source`].
    pub cuda_source: &'static str,
    /// [`DeviceKernel::source_hash`].
    pub source_hash: u64,
}

impl DeviceKernelInfo {
    /// The description of `K`.
    pub fn of<K: DeviceKernel>() -> DeviceKernelInfo {
        DeviceKernelInfo {
            name: K::NAME,
            entry: K::ENTRY,
            iteration: K::ITERATION,
            pattern: K::PATTERN,
            params: K::params(),
            cuda_source: K::cuda_source(),
            source_hash: K::source_hash(),
        }
    }
}

/// The size and alignment of a reduced value on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueLayout {
    /// Bytes per value (the stride of the partials).
    pub size: usize,
    /// The alignment of the value as a kernel parameter.
    pub align: usize,
}

/// The device layout of the value a pattern accumulates; `None` for `parallel_for`.
///
/// This is the one place a new reduce pattern needs an arm: the launch sizes the partials,
/// packs the identity and decodes the partials from it.
///
/// ```
/// use hoplite_abi::{DevicePattern, ScalarType, ValueLayout, value_layout};
/// assert_eq!(value_layout(DevicePattern::ReduceValLoc(ScalarType::F32)), Some(ValueLayout { size: 16, align: 8 }));
/// assert_eq!(value_layout(DevicePattern::For), None);
/// ```
pub const fn value_layout(pattern: DevicePattern) -> Option<ValueLayout> {
    match pattern {
        DevicePattern::For => None,
        DevicePattern::Reduce(s) | DevicePattern::Scan(s) => Some(ValueLayout {
            size: s.size(),
            align: s.size(),
        }),
        // `struct { T val; unsigned long long loc; }`: 16 bytes, 8-aligned.
        DevicePattern::ReduceValLoc(_) => Some(ValueLayout { size: 16, align: 8 }),
        // `struct alignas(8) { T min; alignas(8) T max; }`: 16 bytes, 8-aligned.
        DevicePattern::ReduceMinMax(_) => Some(ValueLayout { size: 16, align: 8 }),
        // Two `ValLoc` structs, the minimum's then the maximum's: 32 bytes, 8-aligned, whichever
        // way the maximum breaks ties.
        DevicePattern::ReduceMinMaxLoc(_) | DevicePattern::ReduceMinMaxFirstLastLoc(_) => {
            Some(ValueLayout { size: 32, align: 8 })
        }
        // `unsigned long long`, `~0` for none.
        DevicePattern::ReduceIndex => Some(ValueLayout { size: 8, align: 8 }),
    }
}

/// The device word of an index that may be absent (the location of a `ValLoc`, the
/// `Option<usize>` of `FirstLoc` and `LastLoc`): the index, `~0` for none.
///
/// ```
/// use hoplite_abi::{index_from_device, index_to_device};
/// assert_eq!((index_to_device(Some(7)), index_to_device(None)), (7, u64::MAX));
/// assert_eq!((index_from_device(7), index_from_device(u64::MAX)), (Some(7), None));
/// ```
pub const fn index_to_device(index: Option<usize>) -> u64 {
    match index {
        Some(i) => i as u64,
        None => u64::MAX,
    }
}

/// The index a device word holds ([`index_to_device`]'s inverse): `None` for `~0`, and for an
/// index the host cannot hold.
pub fn index_from_device(word: u64) -> Option<usize> {
    (word != u64::MAX).then(|| usize::try_from(word).ok()).flatten()
}

/// The join a reduce launch applies on the device: `join` where the kernel's `pattern`
/// accumulates a plain scalar that the join applies to, else `None` (one partial per thread,
/// joined on the host).
///
/// ```
/// use hoplite_abi::{DeviceJoin, DevicePattern, ScalarType, device_join_for};
/// let sum = Some(DeviceJoin::Sum);
/// assert_eq!(device_join_for(DevicePattern::Reduce(ScalarType::F64), sum), sum);
/// assert_eq!(device_join_for(DevicePattern::ReduceValLoc(ScalarType::F64), sum), None);
/// assert_eq!(device_join_for(DevicePattern::Reduce(ScalarType::F64), Some(DeviceJoin::BitOr)), None);
/// ```
pub fn device_join_for(pattern: DevicePattern, join: Option<DeviceJoin>) -> Option<DeviceJoin> {
    match (pattern, join) {
        (DevicePattern::Reduce(s), Some(j)) if j.applies_to(s) => Some(j),
        _ => None,
    }
}
