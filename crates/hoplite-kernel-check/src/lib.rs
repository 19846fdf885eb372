// Over 800 lines: `HostModule` is one pipeline, from the generated C++ to the run on the CPU.
//! Checks of `#[kernel]` translations that need no GPU.
//!
//! [`HostModule`] compiles a kernel's generated CUDA C with the host C++ compiler under the
//! header that defines the CUDA built-ins for the CPU ([`hoplite_abi::HOST_DEVICE_HEADER`],
//! which hoplite-cuda's emulated driver runs kernels under too: the grid and block indices,
//! `__trap` as an exception the launcher catches, a block's threads as fibers that meet at
//! real barriers, a fresh buffer per block as the dynamic shared memory of team scratch,
//! atomics as `std::atomic_ref`), loads it, and
//! launches its entry with its parameters packed by the device ABI's packer
//! ([`hoplite_abi::pack_for`], [`pack_reduce`](hoplite_abi::pack_reduce),
//! [`pack_scan`](hoplite_abi::pack_scan)): the very parameter block a CUDA launch of
//! hoplite-cuda passes, reached through `void**`, one pointer per parameter. Tests run the
//! same inputs through the native kernel and compare: that proves the translation and the
//! parameter layout and packing a GPU launch gets, not a GPU. The device ABI is
//! little-endian, so the host checks run on little-endian hosts (x86-64, AArch64).
//!
//! ```no_run
//! use hoplite_kernel_check::{HostModule, host_compiler};
//! # fn demo<K: hoplite_abi::DeviceKernel>() -> Result<(), hoplite_kernel_check::CheckError> {
//! if let Some(cxx) = host_compiler() {
//!     let module = HostModule::compile::<K>(&cxx, std::path::Path::new("target/tmp"))?;
//!     # let _ = module;
//! }
//! # Ok(()) }
//! ```

#[cfg(feature = "nvrtc")]
pub mod nvrtc;

use std::ffi::c_void;
use std::path::Path;

use hoplite_abi::{
    DeviceIteration, DeviceJoin, DeviceKernel, DeviceKernelInfo, DeviceParam, DevicePattern, HandleAccess,
    HandleArg, IndexOrder, IterationArgs, KernelArg, PackError, ParamBuffer, ReduceWalk, ScalarType,
    TeamScratch, TokenArg,
};

/// The header that defines the CUDA built-ins for the CPU.
pub const HOST_HEADER: &str = hoplite_abi::HOST_DEVICE_HEADER;

/// What can go wrong compiling or launching a kernel on the host.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Writing the source or starting the compiler failed.
    #[error("kernel `{kernel}`: {what}: {source}")]
    Io {
        /// The kernel.
        kernel: &'static str,
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The host C++ compiler rejected the generated source.
    #[error("kernel `{kernel}`: `{compiler}` rejected the generated CUDA C:\n{log}")]
    Compile {
        /// The kernel.
        kernel: &'static str,
        /// The compiler.
        compiler: String,
        /// Its diagnostics.
        log: String,
    },
    /// Loading the compiled library failed.
    #[error("kernel `{kernel}`: loading the compiled library failed: {source}")]
    Load {
        /// The kernel.
        kernel: &'static str,
        /// The cause.
        source: libloading::Error,
    },
    /// The arguments do not match the kernel's parameters.
    #[error("kernel `{kernel}`: {message}")]
    Arguments {
        /// The kernel.
        kernel: &'static str,
        /// What does not match.
        message: String,
    },
}

/// The host C++ compiler: `$CXX`, else `g++` or `c++` if one runs; `None` when there is none
/// (callers print that they skip).
pub use hoplite_abi::host_compiler;

/// A scalar argument of a kernel: the device ABI's [`ScalarValue`](hoplite_abi::ScalarValue),
/// which a CUDA launch passes too.
pub use hoplite_abi::ScalarValue as Value;

/// An element type a host array can hold.
pub trait Element: Copy + 'static {
    /// Its scalar type.
    const TYPE: ScalarType;
}

macro_rules! element {
    ($($t:ty => $v:ident),*) => {$(impl Element for $t { const TYPE: ScalarType = ScalarType::$v; })*};
}
element!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, usize => Usize, isize => Isize, f32 => F32, f64 => F64);

/// Host data standing in for a view: a row-major array borrowed for one launch; or the lock
/// words of a unique token ([`HostArray::token`]).
pub struct HostArray<'a> {
    ptr: *mut c_void,
    len: usize,
    element: ScalarType,
    extents: Vec<usize>,
    /// For a unique token: its number of ids.
    token_size: Option<usize>,
    /// Laid out column-major (the first index fastest), as a `LayoutLeft` view.
    column_major: bool,
    _data: std::marker::PhantomData<&'a mut ()>,
}

impl<'a> HostArray<'a> {
    /// `data` as a row-major array of `extents` (their product must be `data.len()`).
    ///
    /// # Panics
    ///
    /// If the extents do not cover `data` exactly.
    pub fn new<T: Element>(data: &'a mut [T], extents: &[usize]) -> Self {
        assert_eq!(
            extents.iter().product::<usize>(),
            data.len(),
            "extents must cover the data"
        );
        HostArray {
            ptr: data.as_mut_ptr().cast(),
            len: data.len(),
            element: T::TYPE,
            extents: extents.to_vec(),
            token_size: None,
            column_major: false,
            _data: std::marker::PhantomData,
        }
    }

    /// `data` as a column-major array of `extents` (the first index fastest, as a
    /// `LayoutLeft` view). An MDRange launch whose first writer of rank 2 or more is
    /// column-major walks the first index on the threads' x, as a device backend does.
    ///
    /// # Panics
    ///
    /// If the extents do not cover `data` exactly.
    pub fn column_major<T: Element>(data: &'a mut [T], extents: &[usize]) -> Self {
        HostArray {
            column_major: true,
            ..HostArray::new(data, extents)
        }
    }

    /// The lock words of a unique token of `size` ids (one bit per id, bit `id % 32` of word
    /// `id / 32`, zero when free), for a kernel's `&impl UniqueToken` parameter: a launch
    /// passes the words and the size, as a device backend passes a device token. Tokens go in
    /// the arrays of a launch in the order of the kernel's token parameters, after its
    /// handles' arrays.
    ///
    /// ```
    /// use hoplite_kernel_check::HostArray;
    /// let mut words = [0u32; 2];
    /// let _tokens = HostArray::token(&mut words, 40);
    /// ```
    ///
    /// # Panics
    ///
    /// If `size` is 0 or the words hold fewer than `size` bits.
    pub fn token(words: &'a mut [u32], size: usize) -> Self {
        assert!(size > 0, "a unique token has at least one id");
        assert!(words.len() * 32 >= size, "the words must hold one bit per id");
        HostArray {
            ptr: words.as_mut_ptr().cast(),
            len: words.len(),
            element: ScalarType::U32,
            extents: vec![words.len()],
            token_size: Some(size),
            column_major: false,
            _data: std::marker::PhantomData,
        }
    }

    fn strides(&self) -> Vec<u64> {
        let mut strides = vec![1u64; self.extents.len()];
        if self.column_major {
            for d in 1..self.extents.len() {
                strides[d] = strides[d - 1] * self.extents[d - 1] as u64;
            }
        } else {
            for d in (0..self.extents.len().saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * self.extents[d + 1] as u64;
            }
        }
        strides
    }
}

/// One thread's partial of a `ValLoc` reduction: the value and its location (`None` when the
/// thread saw no index).
pub type LocPartial = (Value, Option<usize>);

/// A grid: blocks per dimension and threads per block (x, y, z).
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// Blocks along x, y, z.
    pub blocks: [u32; 3],
    /// Threads per block along x, y, z.
    pub threads: [u32; 3],
}

impl Grid {
    /// The number of threads launched.
    pub fn thread_count(&self) -> usize {
        self.blocks
            .iter()
            .chain(&self.threads)
            .map(|&n| n as usize)
            .product()
    }
}

/// The scratch a team launch asks for, in bytes: a `TeamPolicy`'s `with_scratch_size`
/// requests at levels 0 and 1. The entry gets the four requests; the block's dynamic shared
/// memory is [`bytes`](Self::bytes), as a device backend gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scratch {
    /// Bytes per team at levels 0 and 1.
    pub per_team: [usize; 2],
    /// Bytes per thread at levels 0 and 1.
    pub per_thread: [usize; 2],
}

impl Scratch {
    /// The dynamic shared memory of a team of `threads`: every part rounded up to 8 bytes, as
    /// the host backends round a request (team level 0, team level 1, then each thread's
    /// level 0 and level 1 parts).
    ///
    /// ```
    /// use hoplite_kernel_check::Scratch;
    /// let s = Scratch { per_team: [12, 0], per_thread: [3, 8] };
    /// assert_eq!(s.bytes(2), 16 + 2 * (8 + 8));
    /// ```
    pub fn bytes(&self, threads: usize) -> usize {
        TeamScratch::from(*self).bytes(u32::try_from(threads).unwrap_or(u32::MAX))
    }
}

/// The same requests in the device ABI's shape, as a team launch passes them.
impl From<Scratch> for TeamScratch {
    fn from(s: Scratch) -> TeamScratch {
        TeamScratch {
            per_team: s.per_team[0],
            level1_per_team: s.per_team[1],
            per_thread: s.per_thread[0],
            level1_per_thread: s.per_thread[1],
        }
    }
}

/// How a launch ended on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every thread returned.
    Completed,
    /// A thread trapped (where the native kernel panics: division by zero, an index outside).
    Trapped,
}

type Launcher = unsafe extern "C" fn(u32, u32, u32, u32, u32, u32, u64, *mut *mut c_void) -> i32;

/// A kernel's generated CUDA C compiled for the host and loaded.
pub struct HostModule {
    kernel: DeviceKernelInfo,
    launcher: Launcher,
    // Keeps the code `launcher` points into loaded.
    _library: libloading::Library,
}

impl HostModule {
    /// Compiles `K`'s CUDA C with `compiler` into `dir` and loads it.
    ///
    /// # Errors
    ///
    /// [`CheckError::Compile`] with the compiler's log when it rejects the source; I/O and
    /// loading errors otherwise.
    pub fn compile<K: DeviceKernel>(compiler: &str, dir: &Path) -> Result<HostModule, CheckError> {
        HostModule::compile_info(&DeviceKernelInfo::of::<K>(), compiler, dir)
    }

    /// Compiles the kernel `kernel` describes, as [`compile`](Self::compile) does: for a
    /// caller that has the description at run time only (a launch's
    /// [`DeviceKernelInfo`], as a device backend gets it), not the kernel's type.
    ///
    /// # Errors
    ///
    /// As for [`compile`](Self::compile).
    pub fn compile_info(
        kernel: &DeviceKernelInfo,
        compiler: &str,
        dir: &Path,
    ) -> Result<HostModule, CheckError> {
        let name = kernel.name;
        let text = format!(
            "{HOST_HEADER}\n{}\n{}",
            kernel.cuda_source,
            launcher_source(kernel.entry)
        );
        let library = hoplite_abi::build_host_library(compiler, dir, name, &text).map_err(|e| match e {
            hoplite_abi::HostBuildError::Rejected { compiler, log } => CheckError::Compile {
                kernel: name,
                compiler,
                log,
            },
            hoplite_abi::HostBuildError::Io { what, source } => CheckError::Io {
                kernel: name,
                what: what.to_owned(),
                source,
            },
        })?;
        // SAFETY: the library was compiled from exactly this generated source and the host
        // header (its name is their hash); its initializers only set up the header's globals.
        let lib = unsafe { libloading::Library::new(&library) }
            .map_err(|source| CheckError::Load { kernel: name, source })?;
        // SAFETY: `hl_host_launch` is defined by `launcher_source` with exactly the signature
        // of `Launcher`.
        let launcher = unsafe { lib.get::<Launcher>(b"hl_host_launch\0") }
            .map(|symbol| *symbol)
            .map_err(|source| CheckError::Load { kernel: name, source })?;
        Ok(HostModule {
            kernel: *kernel,
            launcher,
            _library: lib,
        })
    }

    /// Launches a `parallel_for` entry over `begin..end` (one bound per dimension).
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arrays or scalars do not match the kernel's parameters.
    pub fn launch_for(
        &self,
        grid: Grid,
        begin: &[usize],
        end: &[usize],
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
    ) -> Result<Outcome, CheckError> {
        if self.kernel.pattern != DevicePattern::For {
            return Err(self.arg_error("is not a parallel_for kernel".to_owned()));
        }
        self.launch(grid, Scratch::default(), begin, end, arrays, scalars, Tail::For)
    }

    /// Launches a `parallel_reduce` entry: every thread starts from `init`, and the partials
    /// (one per launched thread, in thread order) come back for the caller to join.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_reduce(
        &self,
        grid: Grid,
        begin: &[usize],
        end: &[usize],
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: Value,
    ) -> Result<(Outcome, Vec<Value>), CheckError> {
        self.reduce_with(grid, begin, end, arrays, scalars, init, None, ReduceWalk::Strided)
    }

    /// Launches a `parallel_reduce` entry (of a range, an MDRange or, with `range` =
    /// `([0], [league size])`, a league of teams) whose threads share the iteration space by
    /// `walk`, as a device backend launches a reducer whose join is not commutative with
    /// [`ReduceWalk::Blocked`]: every thread starts from `init`, and the partials (one per
    /// launched thread, in thread order) come back for the caller to join.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_reduce_walk(
        &self,
        grid: Grid,
        range: (&[usize], &[usize]),
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: Value,
        walk: ReduceWalk,
    ) -> Result<(Outcome, Vec<Value>), CheckError> {
        self.reduce_with(grid, range.0, range.1, arrays, scalars, init, None, walk)
    }

    /// Launches a `parallel_reduce` entry with a device join, as a device backend does for the
    /// library's `Sum`, `Max`, ... reducers: every thread starts from `init`, each block joins
    /// its threads' values in thread order, and the partials (one per block, in block order)
    /// come back for the caller to join. `range` is the iteration space's begins and ends.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters, or
    /// `join` does not apply to the kernel's value type.
    pub fn launch_reduce_joined(
        &self,
        grid: Grid,
        range: (&[usize], &[usize]),
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: Value,
        join: DeviceJoin,
    ) -> Result<(Outcome, Vec<Value>), CheckError> {
        self.reduce_with(
            grid,
            range.0,
            range.1,
            arrays,
            scalars,
            init,
            Some(join),
            ReduceWalk::Strided,
        )
    }

    /// The entry's `hl_order` for `arrays`: 1 (the first index on x) when the first writer of
    /// rank 2 or more (else the first such array) is column-major, as a device backend picks.
    fn index_order(&self, arrays: &[HostArray<'_>]) -> IndexOrder {
        // Handles and tokens take the arrays in parameter order.
        let handles: Vec<(bool, &HostArray<'_>)> = self
            .kernel
            .params
            .iter()
            .filter_map(|p| match p {
                DeviceParam::Handle { access, .. } => Some(Some(*access == HandleAccess::Write)),
                DeviceParam::TokenBits { .. } => Some(None),
                DeviceParam::Scalar { .. } => None,
            })
            .zip(arrays)
            .filter_map(|(write, a)| write.map(|w| (w, a)))
            .collect();
        let pick = |writers: bool| {
            handles
                .iter()
                .find(|(write, a)| a.extents.len() >= 2 && (!writers || *write))
                .map(|(_, a)| a.column_major)
        };
        match pick(true).or_else(|| pick(false)) {
            Some(true) => IndexOrder::FirstFastest,
            _ => IndexOrder::LastFastest,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_with(
        &self,
        grid: Grid,
        begin: &[usize],
        end: &[usize],
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: Value,
        join: Option<DeviceJoin>,
        walk: ReduceWalk,
    ) -> Result<(Outcome, Vec<Value>), CheckError> {
        let DevicePattern::Reduce(ty) = self.kernel.pattern else {
            return Err(self.arg_error("is not a parallel_reduce kernel".to_owned()));
        };
        if init.scalar_type() != ty {
            return Err(self.arg_error(format!("accumulates {ty}, not {}", init.scalar_type())));
        }
        if join.is_some_and(|j| !j.applies_to(ty)) {
            return Err(self.arg_error(format!("cannot join {ty} with {join:?} on the device")));
        }
        // One per block with a device join, else one per thread; 8-aligned, as the device's
        // values are.
        let count = match join {
            Some(_) => grid.blocks.iter().map(|&b| b as usize).product(),
            None => grid.thread_count(),
        };
        let mut partials = vec![0u64; count];
        let identity = init.to_device_bytes();
        let outcome = self.launch(
            grid,
            Scratch::default(),
            begin,
            end,
            arrays,
            scalars,
            Tail::Reduce {
                identity: &identity[..ty.size()],
                join,
                walk,
                partials: partials.as_mut_ptr().cast(),
            },
        )?;
        // The entry's partials are a `T*`: `size_of::<T>()` bytes apart, as on a device.
        let bytes: Vec<u8> = partials.iter().flat_map(|w| w.to_le_bytes()).collect();
        Ok((
            outcome,
            bytes
                .chunks_exact(ty.size())
                .take(count)
                .map(|value| Value::from_device_bytes(ty, value))
                .collect(),
        ))
    }

    /// Launches a team `parallel_for` entry over a league of `league_size` teams, one block a
    /// team: `grid.threads` is the team size (x only).
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_team_for(
        &self,
        grid: Grid,
        league_size: usize,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
    ) -> Result<Outcome, CheckError> {
        if self.kernel.iteration != DeviceIteration::Team || self.kernel.pattern != DevicePattern::For {
            return Err(self.arg_error("is not a team parallel_for kernel".to_owned()));
        }
        self.launch_team_for_scratch(grid, league_size, Scratch::default(), arrays, scalars)
    }

    /// Launches a team `parallel_for` entry as [`launch_team_for`](Self::launch_team_for)
    /// does, with the scratch requests `scratch` and [`Scratch::bytes`] of dynamic shared
    /// memory per block, as a device backend launches a policy's scratch.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_team_for_scratch(
        &self,
        grid: Grid,
        league_size: usize,
        scratch: Scratch,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
    ) -> Result<Outcome, CheckError> {
        if self.kernel.iteration != DeviceIteration::Team || self.kernel.pattern != DevicePattern::For {
            return Err(self.arg_error("is not a team parallel_for kernel".to_owned()));
        }
        self.launch(grid, scratch, &[0], &[league_size], arrays, scalars, Tail::For)
    }

    /// Launches a team `parallel_reduce` entry over a league of `league_size` teams; the
    /// partials come back as from [`launch_reduce`](Self::launch_reduce).
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_team_reduce(
        &self,
        grid: Grid,
        league_size: usize,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: Value,
    ) -> Result<(Outcome, Vec<Value>), CheckError> {
        if self.kernel.iteration != DeviceIteration::Team {
            return Err(self.arg_error("is not a team kernel".to_owned()));
        }
        self.launch_reduce(grid, &[0], &[league_size], arrays, scalars, init)
    }

    /// Launches a `parallel_reduce` entry over `ValLoc` values (`MinLoc`, `MaxLoc`): every
    /// thread starts from `(init, None)`; the partials (value, location) come back in thread
    /// order for the caller to join.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_reduce_loc(
        &self,
        grid: Grid,
        range: std::ops::Range<usize>,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: Value,
    ) -> Result<(Outcome, Vec<LocPartial>), CheckError> {
        let DevicePattern::ReduceValLoc(ty) = self.kernel.pattern else {
            return Err(self.arg_error("is not a parallel_reduce kernel over ValLoc".to_owned()));
        };
        if init.scalar_type() != ty {
            return Err(self.arg_error(format!(
                "accumulates ValLoc<{ty}>, not ValLoc<{}>",
                init.scalar_type()
            )));
        }
        let (outcome, partials) = self.launch_words(
            grid,
            range,
            arrays,
            scalars,
            &[init.to_device_bytes(), NO_LOCATION],
        )?;
        let values = partials
            .iter()
            .map(|p| (Value::from_device_bytes(ty, &p[0]), location(p[1])))
            .collect();
        Ok((outcome, values))
    }

    /// Launches a `parallel_reduce` entry over `MinMaxScalar` values (`MinMax`) on a range, or
    /// on a league of `range.end` teams for a team kernel: every thread starts from
    /// `{ min: init_min, max: init_max }`; the partials `(min, max)` come back in thread order
    /// for the caller to join.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_reduce_min_max(
        &self,
        grid: Grid,
        range: std::ops::Range<usize>,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: (Value, Value),
    ) -> Result<(Outcome, Vec<(Value, Value)>), CheckError> {
        let DevicePattern::ReduceMinMax(ty) = self.kernel.pattern else {
            return Err(self.arg_error("is not a parallel_reduce kernel over MinMaxScalar".to_owned()));
        };
        if init.0.scalar_type() != ty || init.1.scalar_type() != ty {
            return Err(self.arg_error(format!(
                "accumulates MinMaxScalar<{ty}>, not ({}, {})",
                init.0.scalar_type(),
                init.1.scalar_type()
            )));
        }
        let (outcome, partials) = self.launch_words(
            grid,
            range,
            arrays,
            scalars,
            &[init.0.to_device_bytes(), init.1.to_device_bytes()],
        )?;
        let values = partials
            .iter()
            .map(|p| {
                (
                    Value::from_device_bytes(ty, &p[0]),
                    Value::from_device_bytes(ty, &p[1]),
                )
            })
            .collect();
        Ok((outcome, values))
    }

    /// Launches a `parallel_reduce` entry over `MinMaxLocScalar` values (`MinMaxLoc`) on a
    /// range: every thread starts from `{ min: (init_min, None), max: (init_max, None) }`; the
    /// partials `((min, min_loc), (max, max_loc))` come back in thread order for the caller to
    /// join.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_reduce_min_max_loc(
        &self,
        grid: Grid,
        range: std::ops::Range<usize>,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: (Value, Value),
    ) -> Result<(Outcome, Vec<(LocPartial, LocPartial)>), CheckError> {
        let (DevicePattern::ReduceMinMaxLoc(ty) | DevicePattern::ReduceMinMaxFirstLastLoc(ty)) =
            self.kernel.pattern
        else {
            return Err(self.arg_error("is not a parallel_reduce kernel over MinMaxLocScalar".to_owned()));
        };
        if init.0.scalar_type() != ty || init.1.scalar_type() != ty {
            return Err(self.arg_error(format!(
                "accumulates MinMaxLocScalar<{ty}>, not ({}, {})",
                init.0.scalar_type(),
                init.1.scalar_type()
            )));
        }
        let start = [
            init.0.to_device_bytes(),
            NO_LOCATION,
            init.1.to_device_bytes(),
            NO_LOCATION,
        ];
        let (outcome, partials) = self.launch_words(grid, range, arrays, scalars, &start)?;
        let values = partials
            .iter()
            .map(|p| {
                (
                    (Value::from_device_bytes(ty, &p[0]), location(p[1])),
                    (Value::from_device_bytes(ty, &p[2]), location(p[3])),
                )
            })
            .collect();
        Ok((outcome, values))
    }

    /// Launches a reduction whose value is a struct of 8-byte words (`ValLoc`, `MinMaxScalar`,
    /// `MinMaxLocScalar`): every thread starts from `init`; each thread's partial comes back
    /// as its words, in thread order.
    fn launch_words(
        &self,
        grid: Grid,
        range: std::ops::Range<usize>,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        init: &[[u8; 8]],
    ) -> Result<(Outcome, Vec<Words>), CheckError> {
        let words = init.len();
        // The identity in the device layout: the struct's words, in order.
        let start: Vec<u8> = init.concat();
        // The device stores each thread's value at its own `words * 8` bytes.
        let mut partials = vec![0u64; grid.thread_count() * words];
        let outcome = self.launch(
            grid,
            Scratch::default(),
            &[range.start],
            &[range.end],
            arrays,
            scalars,
            Tail::Reduce {
                identity: &start,
                join: None,
                walk: ReduceWalk::Strided,
                partials: partials.as_mut_ptr().cast(),
            },
        )?;
        let values = partials
            .chunks(words)
            .map(|p| p.iter().map(|w| w.to_le_bytes()).collect())
            .collect();
        Ok((outcome, values))
    }

    /// Launches a `parallel_scan` entry twice, as a device backend does: the first pass
    /// gives each thread's chunk sum, the host turns them into exclusive prefix sums in
    /// thread order, the final pass runs the kernel from them. Returns the total.
    ///
    /// # Errors
    ///
    /// [`CheckError::Arguments`] when the arguments do not match the kernel's parameters.
    pub fn launch_scan(
        &self,
        grid: Grid,
        range: std::ops::Range<usize>,
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        zero: Value,
    ) -> Result<(Outcome, Value), CheckError> {
        let DevicePattern::Scan(ty) = self.kernel.pattern else {
            return Err(self.arg_error("is not a parallel_scan kernel".to_owned()));
        };
        if zero.scalar_type() != ty {
            return Err(self.arg_error(format!("sums {ty}, not {}", zero.scalar_type())));
        }
        let (begin, end) = ([range.start], [range.end]);
        let zero_bytes = zero.to_device_bytes();
        // 8-aligned, as the device's values are.
        let mut partials = vec![0u64; grid.thread_count()];
        let first = self.launch(
            grid,
            Scratch::default(),
            &begin,
            &end,
            arrays,
            scalars,
            Tail::Scan {
                zero: &zero_bytes[..ty.size()],
                values: partials.as_mut_ptr().cast(),
                final_pass: false,
            },
        )?;
        if first == Outcome::Trapped {
            return Ok((first, zero));
        }
        let mut running = zero;
        for slot in &mut partials {
            let sum = Value::from_device_bytes(ty, &slot.to_le_bytes());
            *slot = u64::from_le_bytes(running.to_device_bytes());
            running = plus(running, sum);
        }
        let outcome = self.launch(
            grid,
            Scratch::default(),
            &begin,
            &end,
            arrays,
            scalars,
            Tail::Scan {
                zero: &zero_bytes[..ty.size()],
                values: partials.as_mut_ptr().cast(),
                final_pass: true,
            },
        )?;
        Ok((outcome, running))
    }
}

/// One thread's partial of a reduction over a struct value: its 8-byte words.
type Words = Vec<[u8; 8]>;

/// A location word that is `None` (`~0` on the device).
const NO_LOCATION: [u8; 8] = hoplite_abi::index_to_device(None).to_le_bytes();

/// The location a device stored in `word`.
fn location(word: [u8; 8]) -> Option<usize> {
    hoplite_abi::index_from_device(u64::from_le_bytes(word))
}

/// `a + b` as a scan adds (integers wrap, as in release Rust); values of two types give `a`
/// back unchanged.
fn plus(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::I32(a), Value::I32(b)) => Value::I32(a.wrapping_add(b)),
        (Value::I64(a), Value::I64(b)) => Value::I64(a.wrapping_add(b)),
        (Value::U32(a), Value::U32(b)) => Value::U32(a.wrapping_add(b)),
        (Value::U64(a), Value::U64(b)) => Value::U64(a.wrapping_add(b)),
        (Value::Usize(a), Value::Usize(b)) => Value::Usize(a.wrapping_add(b)),
        (Value::Isize(a), Value::Isize(b)) => Value::Isize(a.wrapping_add(b)),
        (Value::F32(a), Value::F32(b)) => Value::F32(a + b),
        (Value::F64(a), Value::F64(b)) => Value::F64(a + b),
        (a, _) => a,
    }
}

/// What a launch passes after the kernel's own parameters.
enum Tail<'a> {
    /// Nothing: a `parallel_for`.
    For,
    /// A reduction's join, walk, identity (in the device layout of the kernel's value) and
    /// partials.
    Reduce {
        identity: &'a [u8],
        join: Option<DeviceJoin>,
        walk: ReduceWalk,
        partials: *mut c_void,
    },
    /// A scan pass's zero, per-thread values and final-pass flag.
    Scan {
        zero: &'a [u8],
        values: *mut c_void,
        final_pass: bool,
    },
}

impl HostModule {
    fn arg_error(&self, message: String) -> CheckError {
        CheckError::Arguments {
            kernel: self.kernel.name,
            message,
        }
    }

    /// The abi packer's error as this crate's.
    fn pack_error(&self, e: PackError) -> CheckError {
        self.arg_error(e.reason)
    }

    /// The kernel's arguments in parameter order, as a device backend hands them to the
    /// packer: the arrays go to the handle and token parameters in order, the scalars to the
    /// scalar parameters.
    fn kernel_args(&self, arrays: &[HostArray<'_>], scalars: &[Value]) -> Result<Vec<KernelArg>, CheckError> {
        let (mut next_array, mut next_scalar) = (0, 0);
        let mut args = Vec::with_capacity(self.kernel.params.len());
        for param in self.kernel.params {
            let arg = match *param {
                DeviceParam::Handle { name, access, .. } => {
                    let array = arrays
                        .get(next_array)
                        .ok_or_else(|| self.arg_error(format!("no array for handle `{name}`")))?;
                    next_array += 1;
                    if array.token_size.is_some() {
                        return Err(self.arg_error(format!("handle `{name}` got a unique token's words")));
                    }
                    debug_assert_eq!(array.len, array.extents.iter().product::<usize>());
                    KernelArg::Handle(HandleArg {
                        ptr: array.ptr as usize as u64,
                        // A host array is whatever handle the kernel takes.
                        access,
                        element: array.element,
                        extents: array.extents.iter().map(|&e| e as u64).collect(),
                        strides: array.strides(),
                    })
                }
                DeviceParam::Scalar { name, .. } => {
                    let value = scalars
                        .get(next_scalar)
                        .ok_or_else(|| self.arg_error(format!("no value for scalar `{name}`")))?;
                    next_scalar += 1;
                    KernelArg::Scalar(*value)
                }
                DeviceParam::TokenBits { name } => {
                    let array = arrays
                        .get(next_array)
                        .ok_or_else(|| self.arg_error(format!("no token words for `{name}`")))?;
                    next_array += 1;
                    let Some(size) = array.token_size else {
                        return Err(self.arg_error(format!(
                            "unique token `{name}` got a view's array; pass `HostArray::token`"
                        )));
                    };
                    KernelArg::TokenBits(TokenArg {
                        words: array.ptr as usize as u64,
                        size: size as u64,
                    })
                }
            };
            args.push(arg);
        }
        if next_array != arrays.len() || next_scalar != scalars.len() {
            return Err(self.arg_error("more arguments than parameters".to_owned()));
        }
        Ok(args)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        grid: Grid,
        scratch: Scratch,
        begin: &[usize],
        end: &[usize],
        arrays: &mut [HostArray<'_>],
        scalars: &[Value],
        tail: Tail<'_>,
    ) -> Result<Outcome, CheckError> {
        let rank = self.kernel.iteration.rank();
        if begin.len() != rank || end.len() != rank {
            return Err(self.arg_error(format!("iterates over {rank} dimension(s)")));
        }
        let iteration = match self.kernel.iteration {
            // A league of teams: its size (`begin` is 0) and the scratch requests.
            DeviceIteration::Team => IterationArgs::Team {
                league_size: end[0] as u64,
                scratch: scratch.into(),
                vector_length: 1,
            },
            DeviceIteration::MdRange(_) => IterationArgs::MdRange {
                begins: begin.iter().map(|&b| b as u64).collect(),
                ends: end.iter().map(|&e| e as u64).collect(),
                order: self.index_order(arrays),
            },
            DeviceIteration::Range => IterationArgs::Range {
                begin: begin[0] as u64,
                end: end[0] as u64,
            },
        };
        let args = self.kernel_args(arrays, scalars)?;
        // The packer a CUDA launch uses: the same checks, the same bytes at the same offsets.
        let mut params = match tail {
            Tail::For => hoplite_abi::pack_for(&self.kernel, &iteration, &args),
            Tail::Reduce {
                identity,
                join,
                walk,
                partials,
            } => hoplite_abi::pack_reduce(&self.kernel, &iteration, &args, identity, join, walk).map(
                |mut p| {
                    // The partials pointer is the last parameter.
                    p.set(p.offsets().len() - 1, &(partials as usize as u64).to_le_bytes());
                    p
                },
            ),
            Tail::Scan {
                zero,
                values,
                final_pass,
            } => hoplite_abi::pack_scan(&self.kernel, &iteration, &args, zero).map(|mut p| {
                // The values pointer, then the final-pass flag, are the last parameters.
                let n = p.offsets().len();
                p.set(n - 2, &(values as usize as u64).to_le_bytes());
                p.set(n - 1, &[u8::from(final_pass)]);
                p
            }),
        }
        .map_err(|e| self.pack_error(e))?;
        let shared = scratch.bytes(grid.threads.iter().map(|&t| t as usize).product());
        // SAFETY: `params` was packed by the abi packer against this module's kernel; the
        // arrays' pointers and extents describe live, exclusively borrowed memory (a token's
        // words hold at least `size` bits, which `HostArray::token` checked); the partials
        // hold one value per launched thread (or block, with a device join); and `shared` is
        // the dynamic shared memory the scratch requests packed into `params` need.
        Ok(unsafe { self.launch_packed(grid, shared, &mut params) })
    }

    /// Launches the entry on `grid` with `params` as they are, `shared_bytes` of dynamic
    /// shared memory per block: what a device backend does with the [`ParamBuffer`] it
    /// packed with [`hoplite_abi::pack_for`] (or `pack_reduce`, `pack_scan`, with the
    /// partials pointers set), for tests that pack a launch exactly as the GPU path does.
    ///
    /// # Safety
    ///
    /// `params` was packed for this module's kernel by the device ABI's packer (so it holds
    /// exactly the entry's parameters), and every address in it is host memory the kernel's
    /// [`DeviceKernel`] contract lets the entry touch: each handle's pointer covers its
    /// extents and strides, each token's words hold `size` bits, all zero, a reduction's or
    /// scan's partials hold one value per launched thread (or per block with a device
    /// join); `shared_bytes` is at least the team scratch the packed requests need.
    pub unsafe fn launch_packed(&self, grid: Grid, shared_bytes: usize, params: &mut ParamBuffer) -> Outcome {
        let mut pointers = params.pointers();
        // The runner keeps the grid and the block in per-thread state, so launches on several
        // threads run at once.
        let [gx, gy, gz] = grid.blocks;
        let [bx, by, bz] = grid.threads;
        // SAFETY: the launcher reads one parameter per pointer, in the order and with the
        // types of the entry's own parameters, which the packer laid `params` out for (each
        // parameter aligned to its size inside the 8-aligned buffer, which stays unchanged
        // until the call returns); the memory the parameters address is the caller's contract.
        let status =
            unsafe { (self.launcher)(gx, gy, gz, bx, by, bz, shared_bytes as u64, pointers.as_mut_ptr()) };
        if status == 0 {
            Outcome::Completed
        } else {
            Outcome::Trapped
        }
    }
}

/// The C++ of `hl_host_launch`: runs the grid with the host device's runner (blocks one after
/// another, a block's threads as fibers that meet at real barriers) and calls the entry with
/// its parameters unpacked from `void**` by the entry's own types, as the emulated CUDA driver
/// launches it.
fn launcher_source(entry: &str) -> String {
    format!(
        "static void hl_host_body(void* p) {{ hl_call(&{entry}, (void**)p); }}\n\
         extern \"C\" int hl_host_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned long long shared, void** p) {{\n\
         \x20   const unsigned grid[3] = {{gx, gy, gz}}, block[3] = {{bx, by, bz}};\n\
         \x20   return hl_run_grid(grid, block, shared, hl_host_body, (void*)p);\n}}\n"
    )
}
