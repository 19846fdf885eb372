//! Unique tokens on the device (Kokkos `Experimental::UniqueToken<Cuda>`): a pool of ids in
//! device memory that `#[kernel]` kernels acquire and release.
//!
//! A [`CudaUniqueToken`] owns one bit per id in device memory (`u32` words, bit `id % 32` of
//! word `id / 32`), zero when free. A kernel that takes `tokens: &impl UniqueToken` gets it in
//! its `with(..)`, exactly as a host pool on a host space, and the launch passes the words and
//! the size ([`DeviceParam::TokenBits`](hoplite_core::device_kernel::DeviceParam::TokenBits));
//! its generated code acquires an id by setting a clear bit with `atomicOr`, starting at the
//! thread's global number modulo the size, and releases it with `atomicAnd` after a
//! `__threadfence`. Every id is released before its thread exits, so the words are all zero
//! again when a launch ends and any later launch on the same device may use the token.
//! Generic code asks the space for its kind of token (`KernelTokenSpace::kernel_token`).
//!
//! ```
//! use hoplite::prelude::*;
//! use hoplite::BoundAtomic;
//! use hoplite::{BoundReader, kernel};
//! use hoplite_core::{KernelToken, LayoutRight, RangePolicy, View, parallel_for};
//! use hoplite_cuda::{Cuda, CudaSpace};
//!
//! /// A histogram with a private row of `bins` counters per id.
//! #[kernel]
//! fn private_rows(
//!     i: Idx<'_>,
//!     rows: BoundAtomic<'_, u64, 1>,
//!     x: BoundReader<'_, u32, 1>,
//!     tokens: &impl UniqueToken,
//!     bins: usize,
//! ) {
//!     let id = tokens.guard();
//!     rows.fetch_add(*id * bins + x.get(i) as usize % bins, 1);
//! }
//!
//! let run = || -> Result<(), Box<dyn std::error::Error>> {
//!     let cuda = Cuda::new()?;
//!     let tokens = cuda.unique_token()?;
//!     let (n, bins) = (1000, 8);
//!     let x = View::<u32, 1, LayoutRight, CudaSpace>::from_slice("x", [n], &(0..n as u32).collect::<Vec<_>>())?;
//!     let rows = View::<u64, 1, LayoutRight, CudaSpace>::new("rows", [tokens.id_count() * bins])?;
//!     parallel_for(
//!         "private rows",
//!         (RangePolicy::new(cuda.clone(), 0..n), (rows.atomic(), x.read())),
//!         private_rows::with(&tokens, bins),
//!     )?;
//!     assert_eq!(tokens.live()?, 0);
//!     assert_eq!(rows.to_vec()?.iter().sum::<u64>(), n as u64);
//!     Ok(())
//! };
//! if let Err(e) = run() {
//!     println!("{e}"); // no device here
//! }
//! ```

use hoplite_core::{DeviceUniqueToken, KernelTokenSpace};

use crate::geometry::DeviceLimits;
use crate::{Cuda, CudaError, CudaSpace};

/// The ids of a default device token: every thread that can be resident on the device at
/// once (`multiProcessorCount * maxThreadsPerMultiProcessor`), as Kokkos sizes
/// `UniqueToken<Cuda>`. One id per resident thread means a thread that acquires one id at a
/// time never waits.
///
/// ```
/// use hoplite_cuda::geometry::DeviceLimits;
/// use hoplite_cuda::device_token_size;
/// assert_eq!(device_token_size(&DeviceLimits::SM_90), 132 * 2048);
/// ```
pub fn device_token_size(limits: &DeviceLimits) -> usize {
    limits.sm_count as usize * limits.max_threads_per_sm as usize
}

/// The `u32` lock words of a token of `size` ids: one bit per id.
///
/// ```
/// use hoplite_cuda::lock_words;
/// assert_eq!((lock_words(1), lock_words(32), lock_words(33)), (1, 1, 2));
/// ```
pub fn lock_words(size: usize) -> usize {
    size.div_ceil(32)
}

/// A unique token of one GPU: `size` ids, each held by at most one thread at a time, for
/// `#[kernel]` kernels launched on that GPU — the core's [`DeviceUniqueToken`] with its lock
/// words in [`CudaSpace`]. Clones share the pool. Made by [`Cuda::unique_token`] or
/// [`Cuda::unique_token_with_size`] (or generically `KernelTokenSpace::kernel_token`); a launch
/// takes it in the kernel's `with(..)` like a host token, and refuses it on another GPU
/// ([`CudaError::WrongDevice`]).
///
/// ```
/// use hoplite_core::KernelToken;
/// use hoplite_cuda::Cuda;
/// match Cuda::new().and_then(|cuda| cuda.unique_token()) {
///     Ok(tokens) => assert!(tokens.id_count() > 0),
///     Err(e) => println!("{e}"), // no device here
/// }
/// ```
pub type CudaUniqueToken = DeviceUniqueToken<CudaSpace>;

impl Cuda {
    /// A unique token for kernels on this instance's GPU, sized to the threads the GPU can
    /// hold at once ([`device_token_size`]), with every id free.
    ///
    /// ```
    /// use hoplite_cuda::{Cuda, CudaError};
    /// // Without a device the instance's own error comes back.
    /// if let Err(e) = Cuda::default().unique_token() {
    ///     assert!(matches!(e, CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }));
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// Why this instance has no device; [`CudaError::InvalidToken`] when the pool cannot be
    /// allocated or cleared.
    pub fn unique_token(&self) -> Result<CudaUniqueToken, CudaError> {
        let size = device_token_size(&self.limits()?);
        self.unique_token_with_size(size)
    }

    /// A unique token of `size` ids for kernels on this instance's GPU, every id free. A
    /// kernel thread that asks for an id while all `size` are held waits until one is
    /// released, as on the host.
    ///
    /// ```
    /// use hoplite_cuda::{Cuda, CudaError};
    /// let e = Cuda::default().unique_token_with_size(0);
    /// assert!(matches!(e, Err(CudaError::InvalidToken { size: 0, .. })));
    /// ```
    ///
    /// # Errors
    ///
    /// [`CudaError::InvalidToken`] for a size of 0 (checked first) or a pool that cannot be
    /// allocated or cleared; why this instance has no device.
    pub fn unique_token_with_size(&self, size: usize) -> Result<CudaUniqueToken, CudaError> {
        if size == 0 {
            return Err(CudaError::InvalidToken {
                size,
                reason: "a unique token needs at least one id".to_owned(),
            });
        }
        let space = self.memory_space()?;
        // Every id starts free: the words are zeroed by a synchronous copy, so they are clear
        // before any launch can take the token.
        DeviceUniqueToken::new_in(space, "Cuda", size).map_err(|e| CudaError::InvalidToken {
            size,
            reason: e.to_string(),
        })
    }
}

impl KernelTokenSpace for Cuda {
    type KernelToken = CudaUniqueToken;

    fn kernel_token(&self) -> hoplite_core::Result<CudaUniqueToken> {
        Ok(self.unique_token()?)
    }

    fn kernel_token_with_size(&self, size: usize) -> hoplite_core::Result<CudaUniqueToken> {
        match self.unique_token_with_size(size) {
            Err(CudaError::InvalidToken { size, reason }) => Err(hoplite_core::Error::InvalidTokenSize {
                requested: size,
                space: "Cuda",
                reason,
            }),
            other => Ok(other?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::DeviceArg;

    #[test]
    fn default_size_is_every_resident_thread() {
        // V100: 80 SMs, A100: 108 SMs, H100 SXM: 132 SMs; 2048 resident threads on each SM.
        assert_eq!(device_token_size(&DeviceLimits::SM_70), 80 * 2048);
        assert_eq!(device_token_size(&DeviceLimits::SM_80), 108 * 2048);
        assert_eq!(device_token_size(&DeviceLimits::SM_90), 132 * 2048);
        // A part with fewer resident threads per SM (sm_86: 1536) follows its limits.
        let sm_86 = DeviceLimits {
            compute_capability: (8, 6),
            sm_count: 84,
            max_threads_per_sm: 1536,
            ..DeviceLimits::SM_80
        };
        assert_eq!(device_token_size(&sm_86), 84 * 1536);
    }

    #[test]
    fn one_bit_per_id() {
        assert_eq!(lock_words(1), 1);
        assert_eq!(lock_words(31), 1);
        assert_eq!(lock_words(32), 1);
        assert_eq!(lock_words(33), 2);
        assert_eq!(
            lock_words(device_token_size(&DeviceLimits::SM_90)),
            132 * 2048 / 32
        );
    }

    use hoplite_core::device_kernel::{
        DeviceIteration, DeviceKernel, DeviceParam, DevicePattern, ScalarType,
    };

    use hoplite_core::device_kernel::DeviceToken;
    use hoplite_core::device_kernel::DeviceTokenArg;

    use crate::dispatch::token_arg;
    use crate::launch::check_arg_devices;
    use crate::params::{IterationArgs, KernelArg, TokenArg, pack_for};

    /// A kernel taking a count, a token and a scalar: the entry's parameters only matter here.
    struct Binned;
    // SAFETY: never launched; only its parameters are packed.
    unsafe impl DeviceKernel for Binned {
        const NAME: &'static str = "binned";
        const ENTRY: &'static str = "binned_for_range";
        const ITERATION: DeviceIteration = DeviceIteration::Range;
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            &[
                DeviceParam::Scalar {
                    name: "flag",
                    ty: ScalarType::Bool,
                },
                DeviceParam::TokenBits { name: "tokens" },
                DeviceParam::Scalar {
                    name: "bins",
                    ty: ScalarType::Usize,
                },
            ]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    /// A launch's token of `size` ids whose words are at `0x1000` on GPU `device`: what a launch
    /// passes for a `CudaUniqueToken` there, made without a driver.
    fn token_on(device: usize, size: usize) -> DeviceArg {
        let token = DeviceTokenArg {
            type_name: "CudaUniqueToken",
            token: Some(DeviceToken {
                words: 0x1000,
                size,
                memory_space: Box::new(CudaSpace::on_device(device)),
            }),
        };
        token_arg("binned", "tokens", &token).expect("a token in Cuda memory")
    }

    #[test]
    fn a_token_packs_as_its_words_then_its_size() {
        let arg = token_on(0, 96);
        let KernelArg::TokenBits(TokenArg { words, size }) = arg.arg else {
            panic!("a token argument, got {:?}", arg.arg);
        };
        assert_eq!((words, size), (0x1000, 96));
        let args = [
            KernelArg::Scalar(true.into()),
            KernelArg::TokenBits(TokenArg {
                words: 0x1000,
                size: 96,
            }),
            KernelArg::Scalar(8usize.into()),
        ];
        let p = pack_for::<Binned>(&IterationArgs::Range { begin: 0, end: 4 }, &args).expect("packs");
        // begin, end, the bool, the 8-aligned words pointer, the size, the usize.
        assert_eq!(p.offsets(), [0, 8, 16, 24, 32, 40]);
        let bytes = p.bytes();
        assert_eq!(bytes[24..32], 0x1000u64.to_le_bytes());
        assert_eq!(bytes[32..40], 96u64.to_le_bytes());
        assert_eq!(bytes[40..48], 8u64.to_le_bytes());
    }

    #[test]
    fn a_token_in_the_wrong_place_or_of_no_ids_is_refused() {
        let range = IterationArgs::Range { begin: 0, end: 4 };
        let swapped = [
            KernelArg::Scalar(true.into()),
            KernelArg::Scalar(8usize.into()),
            KernelArg::TokenBits(TokenArg {
                words: 0x1000,
                size: 96,
            }),
        ];
        let e = pack_for::<Binned>(&range, &swapped).expect_err("a scalar where the token goes");
        assert!(
            e.to_string().contains("`tokens` is a unique token (pass one"),
            "{e}"
        );
        let empty = [
            KernelArg::Scalar(true.into()),
            KernelArg::TokenBits(TokenArg {
                words: 0x1000,
                size: 0,
            }),
            KernelArg::Scalar(8usize.into()),
        ];
        let e = pack_for::<Binned>(&range, &empty).expect_err("no ids");
        assert!(e.to_string().contains("no ids"), "{e}");
    }

    #[test]
    fn a_token_of_another_gpu_is_refused() {
        let args = [
            DeviceArg::scalar(true),
            token_on(1, 32),
            DeviceArg::scalar(8usize),
        ];
        assert!(check_arg_devices("binned", 1, &args).is_ok());
        let e = check_arg_devices("binned", 0, &args).expect_err("device 1's token on 0");
        assert!(
            matches!(&e, CudaError::WrongDevice { what, view_device: 1, instance_device: 0 } if what.contains("argument 1")),
            "{e}"
        );
    }

    #[test]
    fn a_host_pool_or_a_token_outside_cuda_memory_is_refused() {
        let host = DeviceTokenArg {
            type_name: "hoplite_core::TokenPool",
            token: None,
        };
        let e = token_arg("binned", "tokens", &host).expect_err("a host pool");
        assert!(
            matches!(&e, CudaError::InvalidLaunch { reason, .. }
                if reason.contains("host unique token (`hoplite_core::TokenPool`)") && reason.contains("unique_token()")),
            "{e}"
        );
        let elsewhere = DeviceTokenArg {
            type_name: "DeviceUniqueToken<HostSpace>",
            token: Some(DeviceToken {
                words: 0x1000,
                size: 4,
                memory_space: Box::new(hoplite_core::HostSpace),
            }),
        };
        let e = token_arg("binned", "tokens", &elsewhere).expect_err("host memory");
        assert!(e.to_string().contains("memory Cuda launches do not know"), "{e}");
    }

    #[test]
    fn size_zero_is_refused_before_the_device() {
        let e = Cuda::default().unique_token_with_size(0);
        let Err(CudaError::InvalidToken { size: 0, reason }) = e else {
            panic!("expected the size error, got {e:?}");
        };
        assert!(reason.contains("at least one id"), "{reason}");
    }

    #[test]
    fn without_a_device_the_instance_error_comes_back() {
        let cuda = Cuda::default();
        if cuda.is_available() {
            let tokens = cuda.unique_token().expect("a device token");
            assert_eq!(tokens.size(), device_token_size(&cuda.limits().expect("limits")));
            return;
        }
        let expected = cuda.limits().expect_err("no device");
        assert_eq!(cuda.unique_token().expect_err("no device"), expected);
        assert_eq!(cuda.unique_token_with_size(16).expect_err("no device"), expected);
    }
}
