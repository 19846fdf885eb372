//! Kernels for devices: what `#[kernel]` (crate `hoplite-macros`) tells a device backend about
//! a kernel it translated to CUDA C.
//!
//! A closure cannot run on a GPU, so a device backend needs the kernel as source. The
//! `#[kernel]` attribute keeps a function as ordinary Rust for the host backends and also
//! implements [`DeviceKernel`] for it: the CUDA C source of one `extern "C" __global__` entry,
//! the layout of that entry's parameters and a stable hash to cache the compiled module by.
//! Nothing here depends on CUDA; a backend compiles [`cuda_source`](DeviceKernel::cuda_source)
//! with NVRTC and launches [`ENTRY`](DeviceKernel::ENTRY) with the parameters laid out as
//! [`params`](DeviceKernel::params) says.
//!
//! # Launches on a device
//!
//! A device space takes the same launches as a host space:
//! `parallel_for(label, (policy, (y.write(), x.read())), axpy::with(a))`. The kernel a launch
//! hands the backend is a closure; `#[kernel]`'s `with` makes one whose type is registered
//! with the kernel's description and a reader of its scalar captures, so a device backend asks
//! the launch's kernel for its [`DeviceLaunch`] (the kernel, the scalars in declaration order,
//! each handle's view as a [`DeviceHandle`]) and gets `None` for any other closure, which it
//! refuses with [`Error::NotADeviceKernel`](crate::Error::NotADeviceKernel). The protocol and
//! its safety argument are in `device_kernel/launch.rs`; [`with_closure_scalars`] shows what a
//! backend sees.
//!
//! # Entry parameters
//!
//! The entry takes, in order:
//!
//! 1. the iteration space: for a range `begin, end` (two `unsigned long long`); for an MDRange
//!    of rank `R`, `R` begins then `R` ends, then the index order (`int`: 0 walks the last
//!    index on the threads' x, then y, then z, 1 the first index; flattened ranks above 3 make
//!    that index the fastest); for teams, the league size then the policy's
//!    four scratch requests in bytes, as `with_scratch_size` gave them: per team at level 0,
//!    per team at level 1, per thread at level 0, per thread at level 1 (five
//!    `unsigned long long`);
//! 2. per handle, in the kernel's parameter order: the element pointer, then `R` extents
//!    (`unsigned long long`), then `R` strides in elements (`unsigned long long`);
//! 3. per scalar capture, its value, and per unique token ([`DeviceParam::TokenBits`]) a pointer
//!    to its lock words (`unsigned int*`, one bit per id, bit `id % 32` of word `id / 32`)
//!    then its size (`unsigned long long`), in the kernel's parameter order;
//! 4. for a reduction, the code of the join the device applies (`int`: [`DeviceJoin::code`],
//!    or -1 for none), the identity to start every thread's partial from, then a pointer to
//!    the partials: with a join, one per block (`gridDim` of them, x fastest; the block's
//!    first thread joins its threads' values in thread order), else one per launched thread
//!    (`gridDim * blockDim` of them, x fastest). The host joins them with the launch's
//!    reducer.
//!
//! For a scan the entry takes, after the scalars, the identity, a pointer to one value per
//! launched thread and a `bool`: whether this is the final pass. Each thread scans one
//! contiguous chunk of the range (`ceil(len / threads)` indices, in thread order). The first
//! launch (`false`) stores each thread's chunk sum; the host turns them into exclusive prefix
//! sums in thread order; the second launch (`true`) starts each thread from its prefix and
//! runs the kernel's final pass.
//!
//! Otherwise threads walk the iteration space with grid-stride loops, so any grid covers any
//! range.
//!
//! # Team scratch
//!
//! Both scratch levels of a team kernel, per team (`m.team_scratch(level)`) and per thread
//! (`m.thread_scratch(level)`), live in the block's dynamic shared memory, each part rounded
//! up to 8 bytes as the host backends round a request, in this order:
//!
//! | part | bytes |
//! |---|---|
//! | the team's level 0 | `round8(team0)` |
//! | the team's level 1 | `round8(team1)` |
//! | each thread's level 0, by team rank | `blockDim.x * round8(thread0)` |
//! | each thread's level 1, by team rank | `blockDim.x * round8(thread1)` |
//!
//! A device backend launches with the sum as the `sharedMemBytes` (hoplite-cuda's
//! `TeamScratch::bytes`) and the four requests as entry parameters. The entry traps if it
//! got less dynamic shared memory than the sum; the kernel allocates from each part with
//! each element type's alignment, as the host's `ScratchPad` does, and traps past a part, so
//! an allocation fails on the device exactly where it fails on the host.

use std::fmt;

mod launch;

pub(crate) use launch::device_launch_of;
pub use launch::{DeviceHandle, DeviceKernelInfo, DeviceLaunch, ScalarValue, with_closure_scalars};
#[doc(hidden)]
pub use launch::{WithClosure, register_with_closure};

/// A scalar type a device kernel can use, with its CUDA C spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `bool`
    Bool,
    /// `i32` (`int`)
    I32,
    /// `i64` (`long long`)
    I64,
    /// `u32` (`unsigned int`)
    U32,
    /// `u64` (`unsigned long long`)
    U64,
    /// `usize` (`unsigned long long`; devices are 64-bit)
    Usize,
    /// `isize` (`long long`)
    Isize,
    /// `f32` (`float`)
    F32,
    /// `f64` (`double`)
    F64,
}

impl ScalarType {
    /// The type as CUDA C spells it.
    ///
    /// ```
    /// use hoplite_core::device_kernel::ScalarType;
    /// assert_eq!(ScalarType::Usize.cuda_name(), "unsigned long long");
    /// ```
    pub const fn cuda_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I32 => "int",
            ScalarType::I64 | ScalarType::Isize => "long long",
            ScalarType::U32 => "unsigned int",
            ScalarType::U64 | ScalarType::Usize => "unsigned long long",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
        }
    }

    /// The type as Rust spells it.
    ///
    /// ```
    /// use hoplite_core::device_kernel::ScalarType;
    /// assert_eq!(ScalarType::F32.rust_name(), "f32");
    /// ```
    pub const fn rust_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::Usize => "usize",
            ScalarType::Isize => "isize",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }

    /// The size in bytes on the device.
    ///
    /// ```
    /// use hoplite_core::device_kernel::ScalarType;
    /// assert_eq!(ScalarType::Usize.size(), 8);
    /// ```
    pub const fn size(self) -> usize {
        match self {
            ScalarType::Bool => 1,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            _ => 8,
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

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
    /// use hoplite_core::device_kernel::DeviceIteration;
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
    /// `parallel_scan` summing values of this type (two launches of the entry; see the
    /// module documentation).
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
    /// use hoplite_core::device_kernel::DeviceParam;
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
    /// use hoplite_core::device_kernel::{DeviceParam, ScalarType};
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
/// use hoplite_core::device_kernel::{DeviceIteration, DeviceKernel, DevicePattern, DeviceParam};
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
/// raw pointers to view data laid out as the module documentation describes, for the
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

/// A reducer's join that device code applies itself ([`Reducer::device_join`]), by the code
/// the generated CUDA C's `hl_op<code>` names. Each reduces the scalar types its host
/// reducer does ([`applies_to`](Self::applies_to)).
///
/// [`Reducer::device_join`]: crate::Reducer::device_join
///
/// ```
/// use hoplite_core::device_kernel::{DeviceJoin, ScalarType};
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

/// FNV-1a over `parts`, with a separator between them: a hash that does not depend on the
/// platform or the compiler version, unlike `std`'s `DefaultHasher`.
///
/// ```
/// use hoplite_core::device_kernel::stable_hash;
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
