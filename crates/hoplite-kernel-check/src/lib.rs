// Over 800 lines: `HostModule` is one pipeline, from the generated C++ to the run on the CPU.
//! Checks of `#[kernel]` translations that need no GPU.
//!
//! [`HostModule`] compiles a kernel's generated CUDA C with the host C++ compiler under a
//! header that defines the CUDA built-ins for the CPU (`host_header.h`: the grid and block
//! indices, `__trap` as an exception the launcher catches, `__syncthreads` as a barrier
//! between a block's threads, which run at once in team launches, a fresh buffer per block as
//! the dynamic shared memory of team scratch, atomics as `std::atomic_ref`), loads it, and
//! launches its entry with parameters packed the way a CUDA launch packs them (`void**`, one
//! pointer per parameter, in the order
//! [`DeviceKernel::params`] describes). Tests run the same inputs through the native kernel
//! and compare: that proves the translation and the parameter layout, not a GPU.
//!
//! ```no_run
//! use hoplite_kernel_check::{HostModule, host_compiler};
//! # fn demo<K: hoplite_core::DeviceKernel>() -> Result<(), hoplite_kernel_check::CheckError> {
//! if let Some(cxx) = host_compiler() {
//!     let module = HostModule::compile::<K>(&cxx, std::path::Path::new("target/tmp"))?;
//!     # let _ = module;
//! }
//! # Ok(()) }
//! ```

#[cfg(feature = "nvrtc")]
pub mod nvrtc;

use std::ffi::c_void;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::DeviceKernel;
use hoplite_core::device_kernel::{
    DeviceIteration, DeviceJoin, DeviceParam, DevicePattern, HandleAccess, ScalarType,
};

/// The header that defines the CUDA built-ins for the CPU.
pub const HOST_HEADER: &str = include_str!("host_header.h");

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
pub fn host_compiler() -> Option<String> {
    let candidates: Vec<String> = std::env::var("CXX")
        .into_iter()
        .chain(["g++".to_owned(), "c++".to_owned()])
        .collect();
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A scalar argument of a kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
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
    /// `usize`
    Usize(usize),
    /// `isize`
    Isize(isize),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
}

impl Value {
    fn ty(self) -> ScalarType {
        match self {
            Value::Bool(_) => ScalarType::Bool,
            Value::I32(_) => ScalarType::I32,
            Value::I64(_) => ScalarType::I64,
            Value::U32(_) => ScalarType::U32,
            Value::U64(_) => ScalarType::U64,
            Value::Usize(_) => ScalarType::Usize,
            Value::Isize(_) => ScalarType::Isize,
            Value::F32(_) => ScalarType::F32,
            Value::F64(_) => ScalarType::F64,
        }
    }

    /// The value's bytes as the device sees them (8 bytes, the value in the low ones).
    fn slot(self) -> [u8; 8] {
        let mut out = [0u8; 8];
        let bytes: Vec<u8> = match self {
            Value::Bool(b) => vec![u8::from(b)],
            Value::I32(v) => v.to_ne_bytes().to_vec(),
            Value::I64(v) => v.to_ne_bytes().to_vec(),
            Value::U32(v) => v.to_ne_bytes().to_vec(),
            Value::U64(v) => v.to_ne_bytes().to_vec(),
            Value::Usize(v) => (v as u64).to_ne_bytes().to_vec(),
            Value::Isize(v) => (v as i64).to_ne_bytes().to_vec(),
            Value::F32(v) => v.to_ne_bytes().to_vec(),
            Value::F64(v) => v.to_ne_bytes().to_vec(),
        };
        out[..bytes.len()].copy_from_slice(&bytes);
        out
    }
}

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
        let round = |b: usize| b.next_multiple_of(8);
        let team = round(self.per_team[0]) + round(self.per_team[1]);
        team + threads * (round(self.per_thread[0]) + round(self.per_thread[1]))
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
    name: &'static str,
    params: &'static [DeviceParam],
    iteration: DeviceIteration,
    pattern: DevicePattern,
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
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| CheckError::Io {
                kernel: K::NAME,
                what,
                source,
            }
        };
        std::fs::create_dir_all(dir).map_err(io("creating the build folder"))?;
        let text = format!(
            "{HOST_HEADER}\n{}\n{}",
            K::cuda_source(),
            launcher_source(K::ENTRY, K::ITERATION, K::PATTERN, K::params())
        );
        // Named by a hash of everything compiled (and the compiler), so an unchanged kernel is
        // not compiled again on the next run.
        let hash = hoplite_core::device_kernel::stable_hash(&[text.as_bytes(), compiler.as_bytes()]);
        let stem = format!("{}_{hash:016x}", K::NAME);
        let source: PathBuf = dir.join(format!("{stem}.cpp"));
        let library: PathBuf = dir.join(format!("lib{stem}.so"));
        if !library.is_file() {
            std::fs::write(&source, text).map_err(io("writing the source"))?;
            // Compiled under a name of its own and renamed when complete, so that an
            // interrupted compile never leaves a library that looks finished.
            // Tests compile the same kernel on several threads at once: each compile gets a
            // file of its own.
            static COMPILES: AtomicUsize = AtomicUsize::new(0);
            let partial: PathBuf = dir.join(format!(
                "lib{stem}.{}.{}.tmp",
                std::process::id(),
                COMPILES.fetch_add(1, Ordering::Relaxed)
            ));
            let output = Command::new(compiler)
                .args([
                    "-std=c++20",
                    "-O1",
                    "-ffp-contract=off",
                    "-fno-strict-aliasing",
                    "-shared",
                    "-fPIC",
                    "-w",
                    "-o",
                ])
                .arg(&partial)
                .arg(&source)
                .output()
                .map_err(io("running the compiler"))?;
            if !output.status.success() {
                return Err(CheckError::Compile {
                    kernel: K::NAME,
                    compiler: compiler.to_owned(),
                    log: String::from_utf8_lossy(&output.stderr).into_owned(),
                });
            }
            std::fs::rename(&partial, &library).map_err(io("renaming the compiled library"))?;
        }
        // SAFETY: the library was compiled from exactly this generated source and the host
        // header (its name is their hash); its initializers only set up the header's globals.
        let lib = unsafe { libloading::Library::new(&library) }.map_err(|source| CheckError::Load {
            kernel: K::NAME,
            source,
        })?;
        // SAFETY: `hl_host_launch` is defined by `launcher_source` with exactly the signature
        // of `Launcher`.
        let launcher = unsafe { lib.get::<Launcher>(b"hl_host_launch\0") }
            .map(|symbol| *symbol)
            .map_err(|source| CheckError::Load {
                kernel: K::NAME,
                source,
            })?;
        Ok(HostModule {
            name: K::NAME,
            params: K::params(),
            iteration: K::ITERATION,
            pattern: K::PATTERN,
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
        if self.pattern != DevicePattern::For {
            return Err(self.arg_error("is not a parallel_for kernel".to_owned()));
        }
        self.launch(grid, Scratch::default(), begin, end, arrays, scalars, None)
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
        self.reduce_with(grid, begin, end, arrays, scalars, init, None)
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
        self.reduce_with(grid, range.0, range.1, arrays, scalars, init, Some(join))
    }

    /// The entry's `hl_order` for `arrays`: 1 (the first index on x) when the first writer of
    /// rank 2 or more (else the first such array) is column-major, as a device backend picks.
    fn index_order(&self, arrays: &[HostArray<'_>]) -> i32 {
        // Handles and tokens take the arrays in parameter order.
        let handles: Vec<(bool, &HostArray<'_>)> = self
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
                .map(|(_, a)| i32::from(a.column_major))
        };
        pick(true).or_else(|| pick(false)).unwrap_or(0)
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
    ) -> Result<(Outcome, Vec<Value>), CheckError> {
        let DevicePattern::Reduce(ty) = self.pattern else {
            return Err(self.arg_error("is not a parallel_reduce kernel".to_owned()));
        };
        if init.ty() != ty {
            return Err(self.arg_error(format!("accumulates {ty}, not {}", init.ty())));
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
        let code = join.map_or(-1, DeviceJoin::code);
        let outcome = self.launch(
            grid,
            Scratch::default(),
            begin,
            end,
            arrays,
            scalars,
            Some((init.wide(), partials.as_mut_ptr().cast(), None, code)),
        )?;
        // The entry's partials are a `T*`: `size_of::<T>()` bytes apart, as on a device.
        let bytes: Vec<u8> = partials.iter().flat_map(|w| w.to_ne_bytes()).collect();
        Ok((
            outcome,
            bytes
                .chunks_exact(ty.size())
                .take(count)
                .map(|value| {
                    let mut slot = [0u8; 8];
                    slot[..value.len()].copy_from_slice(value);
                    Value::from_slot(ty, &slot)
                })
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
        if self.iteration != DeviceIteration::Team || self.pattern != DevicePattern::For {
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
        if self.iteration != DeviceIteration::Team || self.pattern != DevicePattern::For {
            return Err(self.arg_error("is not a team parallel_for kernel".to_owned()));
        }
        self.launch(grid, scratch, &[0], &[league_size], arrays, scalars, None)
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
        if self.iteration != DeviceIteration::Team {
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
        let DevicePattern::ReduceValLoc(ty) = self.pattern else {
            return Err(self.arg_error("is not a parallel_reduce kernel over ValLoc".to_owned()));
        };
        if init.ty() != ty {
            return Err(self.arg_error(format!("accumulates ValLoc<{ty}>, not ValLoc<{}>", init.ty())));
        }
        let (outcome, partials) =
            self.launch_words(grid, range, arrays, scalars, &[init.slot(), NO_LOCATION])?;
        let values = partials
            .iter()
            .map(|p| (Value::from_slot(ty, &p[0]), location(p[1])))
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
        let DevicePattern::ReduceMinMax(ty) = self.pattern else {
            return Err(self.arg_error("is not a parallel_reduce kernel over MinMaxScalar".to_owned()));
        };
        if init.0.ty() != ty || init.1.ty() != ty {
            return Err(self.arg_error(format!(
                "accumulates MinMaxScalar<{ty}>, not ({}, {})",
                init.0.ty(),
                init.1.ty()
            )));
        }
        let (outcome, partials) =
            self.launch_words(grid, range, arrays, scalars, &[init.0.slot(), init.1.slot()])?;
        let values = partials
            .iter()
            .map(|p| (Value::from_slot(ty, &p[0]), Value::from_slot(ty, &p[1])))
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
        let (DevicePattern::ReduceMinMaxLoc(ty) | DevicePattern::ReduceMinMaxFirstLastLoc(ty)) = self.pattern
        else {
            return Err(self.arg_error("is not a parallel_reduce kernel over MinMaxLocScalar".to_owned()));
        };
        if init.0.ty() != ty || init.1.ty() != ty {
            return Err(self.arg_error(format!(
                "accumulates MinMaxLocScalar<{ty}>, not ({}, {})",
                init.0.ty(),
                init.1.ty()
            )));
        }
        let start = [init.0.slot(), NO_LOCATION, init.1.slot(), NO_LOCATION];
        let (outcome, partials) = self.launch_words(grid, range, arrays, scalars, &start)?;
        let values = partials
            .iter()
            .map(|p| {
                (
                    (Value::from_slot(ty, &p[0]), location(p[1])),
                    (Value::from_slot(ty, &p[2]), location(p[3])),
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
        let mut start = [0u8; SLOT_BYTES];
        for (k, word) in init.iter().enumerate() {
            start[8 * k..8 * k + 8].copy_from_slice(word);
        }
        // The device stores each thread's value at its own `words * 8` bytes.
        let mut partials = vec![0u64; grid.thread_count() * words];
        let outcome = self.launch(
            grid,
            Scratch::default(),
            &[range.start],
            &[range.end],
            arrays,
            scalars,
            Some((start, partials.as_mut_ptr().cast(), None, -1)),
        )?;
        let values = partials
            .chunks(words)
            .map(|p| p.iter().map(|w| w.to_ne_bytes()).collect())
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
        let DevicePattern::Scan(ty) = self.pattern else {
            return Err(self.arg_error("is not a parallel_scan kernel".to_owned()));
        };
        if zero.ty() != ty {
            return Err(self.arg_error(format!("sums {ty}, not {}", zero.ty())));
        }
        let (begin, end) = ([range.start], [range.end]);
        // 8-aligned, as the device's values are.
        let mut partials = vec![0u64; grid.thread_count()];
        let first = self.launch(
            grid,
            Scratch::default(),
            &begin,
            &end,
            arrays,
            scalars,
            Some((zero.wide(), partials.as_mut_ptr().cast(), Some(false), -1)),
        )?;
        if first == Outcome::Trapped {
            return Ok((first, zero));
        }
        let mut running = zero;
        for slot in &mut partials {
            let sum = Value::from_slot(ty, &slot.to_ne_bytes());
            *slot = u64::from_ne_bytes(running.slot());
            running = running.plus(sum);
        }
        let outcome = self.launch(
            grid,
            Scratch::default(),
            &begin,
            &end,
            arrays,
            scalars,
            Some((zero.wide(), partials.as_mut_ptr().cast(), Some(true), -1)),
        )?;
        Ok((outcome, running))
    }
}

/// One thread's partial of a reduction over a struct value: its 8-byte words.
type Words = Vec<[u8; 8]>;

/// The bytes of the largest parameter: a `MinMaxLocScalar` initial value.
const SLOT_BYTES: usize = 32;

/// A location word that is `None` (`~0` on the device).
const NO_LOCATION: [u8; 8] = u64::MAX.to_ne_bytes();

/// The location a device stored in `word`.
fn location(word: [u8; 8]) -> Option<usize> {
    let loc = u64::from_ne_bytes(word);
    (loc != u64::MAX).then_some(loc as usize)
}

/// One parameter as a launch passes it: 32 bytes, 8-aligned, the value in the low bytes.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Slot([u8; SLOT_BYTES]);

impl Slot {
    fn of(bytes: &[u8]) -> Slot {
        let mut slot = Slot([0; SLOT_BYTES]);
        slot.0[..bytes.len()].copy_from_slice(bytes);
        slot
    }
}

impl Value {
    /// The value in a parameter's bytes, low bytes first.
    fn wide(self) -> [u8; SLOT_BYTES] {
        let mut out = [0u8; SLOT_BYTES];
        out[..8].copy_from_slice(&self.slot());
        out
    }

    /// A value of type `ty` read back from its slot.
    fn from_slot(ty: ScalarType, slot: &[u8; 8]) -> Value {
        let size = ty.size();
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(&slot[..size]);
        match ty {
            ScalarType::Bool => Value::Bool(b[0] != 0),
            ScalarType::I32 => Value::I32(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            ScalarType::U32 => Value::U32(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            ScalarType::F32 => Value::F32(f32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            ScalarType::I64 => Value::I64(i64::from_ne_bytes(b)),
            ScalarType::U64 => Value::U64(u64::from_ne_bytes(b)),
            ScalarType::Usize => Value::Usize(u64::from_ne_bytes(b) as usize),
            ScalarType::Isize => Value::Isize(i64::from_ne_bytes(b) as isize),
            ScalarType::F64 => Value::F64(f64::from_ne_bytes(b)),
        }
    }

    /// `self + other` as a scan adds (integers wrap, as in release Rust); values of two types
    /// give `self` back unchanged.
    fn plus(self, other: Value) -> Value {
        match (self, other) {
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
}

impl HostModule {
    fn arg_error(&self, message: String) -> CheckError {
        CheckError::Arguments {
            kernel: self.name,
            message,
        }
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
        reduce: Option<([u8; SLOT_BYTES], *mut c_void, Option<bool>, i32)>,
    ) -> Result<Outcome, CheckError> {
        let rank = self.iteration.rank();
        if begin.len() != rank || end.len() != rank {
            return Err(self.arg_error(format!("iterates over {rank} dimension(s)")));
        }
        // Every parameter lives in a 32-byte slot, the value in its low bytes (where a
        // little-endian load of a smaller scalar finds it).
        let mut slots: Vec<Slot> = Vec::new();
        if self.iteration == DeviceIteration::Team {
            // A league of teams: its size (`begin` is 0), then the scratch requests.
            slots.push(Slot::of(&(end[0] as u64).to_ne_bytes()));
            for bytes in scratch.per_team.into_iter().chain(scratch.per_thread) {
                slots.push(Slot::of(&(bytes as u64).to_ne_bytes()));
            }
        } else {
            for &b in begin.iter().chain(end) {
                slots.push(Slot::of(&(b as u64).to_ne_bytes()));
            }
            if matches!(self.iteration, DeviceIteration::MdRange(_)) {
                slots.push(Slot::of(&self.index_order(arrays).to_ne_bytes()));
            }
        }
        let (mut next_array, mut next_scalar) = (0, 0);
        for param in self.params {
            match *param {
                DeviceParam::Handle {
                    name, element, rank, ..
                } => {
                    let array = arrays
                        .get(next_array)
                        .ok_or_else(|| self.arg_error(format!("no array for handle `{name}`")))?;
                    next_array += 1;
                    if array.token_size.is_some() {
                        return Err(self.arg_error(format!("handle `{name}` got a unique token's words")));
                    }
                    if array.element != element || array.extents.len() != rank {
                        return Err(self.arg_error(format!(
                            "handle `{name}` holds {element} of rank {rank}, the array {} of rank {}",
                            array.element,
                            array.extents.len()
                        )));
                    }
                    slots.push(Slot::of(&(array.ptr as usize as u64).to_ne_bytes()));
                    for &e in &array.extents {
                        slots.push(Slot::of(&(e as u64).to_ne_bytes()));
                    }
                    for s in array.strides() {
                        slots.push(Slot::of(&s.to_ne_bytes()));
                    }
                    let _ = array.len;
                }
                DeviceParam::Scalar { name, ty } => {
                    let value = scalars
                        .get(next_scalar)
                        .ok_or_else(|| self.arg_error(format!("no value for scalar `{name}`")))?;
                    next_scalar += 1;
                    if value.ty() != ty {
                        return Err(
                            self.arg_error(format!("scalar `{name}` is {ty}, the value {}", value.ty()))
                        );
                    }
                    slots.push(Slot::of(&value.slot()));
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
                    slots.push(Slot::of(&(array.ptr as usize as u64).to_ne_bytes()));
                    slots.push(Slot::of(&(size as u64).to_ne_bytes()));
                }
            }
        }
        if next_array != arrays.len() || next_scalar != scalars.len() {
            return Err(self.arg_error("more arguments than parameters".to_owned()));
        }
        if let Some((init, partials, final_pass, join)) = reduce {
            if final_pass.is_none() {
                // A reduce entry's device join (`DeviceJoin::code`, -1 for none).
                slots.push(Slot::of(&join.to_ne_bytes()));
            }
            slots.push(Slot::of(&init));
            slots.push(Slot::of(&(partials as usize as u64).to_ne_bytes()));
            if let Some(final_pass) = final_pass {
                slots.push(Slot::of(&Value::Bool(final_pass).slot()));
            }
        }
        let mut pointers: Vec<*mut c_void> = slots.iter_mut().map(|s| s.0.as_mut_ptr().cast()).collect();
        // The launcher keeps the grid and the block's barrier in the library's globals, and two
        // modules of one kernel load the same library: one launch at a time in the process.
        static LAUNCHES: Mutex<()> = Mutex::new(());
        let _one_at_a_time = LAUNCHES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let [gx, gy, gz] = grid.blocks;
        let [bx, by, bz] = grid.threads;
        // SAFETY: the launcher reads one slot per parameter of the entry, in the order and
        // with the types `launcher_source` generated from the same parameter list the slots
        // were packed from; the arrays' pointers and extents describe live, exclusively
        // borrowed memory (a token's words hold at least `size` bits, which `HostArray::token`
        // checked), and the partials hold one slot per launched thread.
        let status = unsafe {
            (self.launcher)(
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                scratch.bytes(grid.threads.iter().map(|&t| t as usize).product()) as u64,
                pointers.as_mut_ptr(),
            )
        };
        Ok(if status == 0 {
            Outcome::Completed
        } else {
            Outcome::Trapped
        })
    }
}

/// The C++ of `hl_host_launch`: runs every block and thread of the grid one after another and
/// calls the entry with the parameters unpacked from `void**`.
fn launcher_source(
    entry: &str,
    iteration: DeviceIteration,
    pattern: DevicePattern,
    params: &[DeviceParam],
) -> String {
    let mut types: Vec<String> = Vec::new();
    let bounds = if iteration == DeviceIteration::Team {
        // The league size and the four scratch requests.
        5
    } else {
        2 * iteration.rank()
    };
    for _ in 0..bounds {
        types.push("unsigned long long".to_owned());
    }
    if matches!(iteration, DeviceIteration::MdRange(_)) {
        // The index order.
        types.push("int".to_owned());
    }
    for p in params {
        match *p {
            DeviceParam::Handle { element, rank, .. } => {
                types.push(format!("{}*", element.cuda_name()));
                for _ in 0..2 * rank {
                    types.push("unsigned long long".to_owned());
                }
            }
            DeviceParam::Scalar { ty, .. } => types.push(ty.cuda_name().to_owned()),
            DeviceParam::TokenBits { .. } => {
                types.push("unsigned int*".to_owned());
                types.push("unsigned long long".to_owned());
            }
        }
    }
    if !matches!(pattern, DevicePattern::For | DevicePattern::Scan(_)) {
        // A reduce entry's device join.
        types.push("int".to_owned());
    }
    if let DevicePattern::Reduce(ty) | DevicePattern::Scan(ty) = pattern {
        types.push(ty.cuda_name().to_owned());
        types.push(format!("{}*", ty.cuda_name()));
    }
    if let DevicePattern::ReduceValLoc(ty) = pattern {
        types.push(format!("hl_valloc<{}>", ty.cuda_name()));
        types.push(format!("hl_valloc<{}>*", ty.cuda_name()));
    }
    if let DevicePattern::ReduceMinMaxLoc(ty) | DevicePattern::ReduceMinMaxFirstLastLoc(ty) = pattern {
        types.push(format!("hl_minmaxloc<{}>", ty.cuda_name()));
        types.push(format!("hl_minmaxloc<{}>*", ty.cuda_name()));
    }
    if let DevicePattern::ReduceMinMax(ty) = pattern {
        types.push(format!("hl_minmax<{}>", ty.cuda_name()));
        types.push(format!("hl_minmax<{}>*", ty.cuda_name()));
    }
    if let DevicePattern::Scan(_) = pattern {
        types.push("bool".to_owned());
    }
    let args: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(k, t)| format!("*({t}*)p[{k}]"))
        .collect();
    let call = format!("{entry}({});", args.join(", "));
    let mut src = String::new();
    let _ = writeln!(
        src,
        "extern \"C\" int hl_host_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned long long shared, void** p) {{"
    );
    src.push_str("    gridDim = dim3{gx, gy, gz};\n    blockDim = dim3{bx, by, bz};\n    std::atomic<int> trapped{0};\n");
    src.push_str("    for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {\n");
    if iteration == DeviceIteration::Team || matches!(pattern, DevicePattern::Reduce(_)) {
        // Team kernels, and reductions that join a block's values, meet at barriers: the
        // threads of a block run at once.
        src.push_str("        std::barrier<> block(bx * by * bz);\n        hl_block_barrier = &block;\n");
        // Each block's own dynamic shared memory, filled with a pattern rather than zeros (a
        // device does not clear it either).
        src.push_str(
            "        std::vector<unsigned long long> smem(shared / 8 + 1, 0x5a5a5a5a5a5a5a5aull);\n",
        );
        src.push_str("        hl_dynamic_smem = (unsigned char*)smem.data();\n        hl_dynamic_smem_bytes = shared;\n");
        src.push_str("        std::vector<std::thread> threads;\n");
        src.push_str("        for (unsigned tz = 0; tz < bz; ++tz) for (unsigned ty = 0; ty < by; ++ty) for (unsigned tx = 0; tx < bx; ++tx)\n");
        src.push_str("            threads.emplace_back([&, x, y, z, tx, ty, tz] {\n");
        src.push_str(
            "                blockIdx = dim3{x, y, z};\n                threadIdx = dim3{tx, ty, tz};\n",
        );
        let _ = writeln!(
            src,
            "                try {{ {call} }} catch (hl_trap_signal&) {{ trapped = 1; block.arrive_and_drop(); }}"
        );
        src.push_str("            });\n        for (auto& t : threads) t.join();\n        hl_block_barrier = nullptr;\n");
    } else {
        src.push_str("        for (unsigned tz = 0; tz < bz; ++tz) for (unsigned ty = 0; ty < by; ++ty) for (unsigned tx = 0; tx < bx; ++tx) {\n");
        src.push_str("            blockIdx = dim3{x, y, z};\n            threadIdx = dim3{tx, ty, tz};\n");
        let _ = writeln!(
            src,
            "            try {{ {call} }} catch (hl_trap_signal&) {{ return 1; }}"
        );
        src.push_str("        }\n");
    }
    src.push_str("    }\n    return trapped.load();\n}\n");
    src
}
