//! Unique tokens as `#[kernel]` arguments on every backend: the host pools of
//! [`UniqueToken`] and the lock words in device memory a device backend passes to its kernels.
//!
//! A `#[kernel]` declares a token parameter as `tokens: &impl UniqueToken` and receives it
//! through `with(..)`, which accepts any [`KernelToken`]: a host pool (every [`UniqueToken`])
//! for launches on host spaces, a [`DeviceUniqueToken`] for launches on a device. Kernels
//! acquire and release ids the same way on both; only the host offers `try_acquire` and ids
//! held outside a launch, so a device token has no host side ([`NoHostToken`]).
//!
//! Generic code gets the right kind from the space with [`KernelTokenSpace`]:
//!
//! ```
//! use hoplite_core::BoundAtomic;
//! use hoplite_core::{parallel_for, Idx, KernelToken, KernelTokenSpace, RangePolicy, UniqueToken, View};
//! use hoplite_macros::kernel;
//! use hoplite_serial::Serial;
//!
//! /// Counts, per id, the iterations that held it.
//! #[kernel(crate = hoplite_core)]
//! fn count_ids(_i: Idx<'_>, counts: BoundAtomic<'_, u64, 1>, tokens: &impl UniqueToken) {
//!     let id = tokens.guard();
//!     counts.fetch_add(*id, 1);
//! }
//!
//! let space = Serial::default();
//! let tokens = space.kernel_token_with_size(4)?;
//! let counts: View<u64, 1> = View::new("counts", [tokens.id_count()])?;
//! parallel_for("ids", (RangePolicy::new(space, 0..100), (counts.atomic(),)), count_ids::with(&tokens))?;
//! assert_eq!(counts.to_vec()?.iter().sum::<u64>(), 100);
//! # Ok::<(), hoplite_core::Error>(())
//! ```

use std::fmt;

use crate::device_kernel::DeviceToken;
use crate::error::{Error, Result};
use crate::space::{ExecutionSpace, LayoutLeft, MemorySpace};
use crate::unique_token::{UniqueToken, UniqueTokenSpace};
use crate::view::View;

/// A unique token a `#[kernel]` takes (a `tokens: &impl UniqueToken` parameter, passed to the
/// kernel's `with`): either a host pool, acquired from by kernels running on host threads, or
/// lock words in device memory, which a device backend passes to its kernels.
///
/// Every [`UniqueToken`] is one, with its host side itself and no device side.
///
/// # Safety
///
/// Device backends trust [`device_token`](Self::device_token): when it is `Some`, `words` is
/// the address of `size.div_ceil(32)` `u32` lock words (bit `id % 32` of word `id / 32` set
/// while `id` is held) in memory of `memory_space`, valid while `self` lives, every bit of
/// which is clear whenever no launch that was given them runs.
pub unsafe trait KernelToken: Sync {
    /// What kernels running on host threads acquire from: the token itself for host pools,
    /// [`NoHostToken`] (which has no values) for device tokens.
    type Host: UniqueToken;

    /// The number of distinct ids: kernels get ids in `[0, id_count())`.
    fn id_count(&self) -> usize;

    /// The host pool, if kernels on host threads can acquire from this token.
    fn host_token(&self) -> Option<&Self::Host>;

    /// The lock words a device launch passes, if this token lives on a device.
    fn device_token(&self) -> Option<DeviceToken>;
}

// SAFETY: a host pool has no device side.
unsafe impl<T: UniqueToken> KernelToken for T {
    type Host = T;

    #[inline]
    fn id_count(&self) -> usize {
        self.size()
    }

    #[inline(always)]
    fn host_token(&self) -> Option<&T> {
        Some(self)
    }

    fn device_token(&self) -> Option<DeviceToken> {
        None
    }
}

/// The host side of a device token: a type with no values, so the host compilation of a
/// `#[kernel]` given a device token type-checks and can never acquire on the host.
#[derive(Clone, Copy, Debug)]
pub enum NoHostToken {}

impl UniqueToken for NoHostToken {
    fn size(&self) -> usize {
        match *self {}
    }

    fn try_acquire(&self) -> Option<usize> {
        match *self {}
    }

    fn release(&self, _id: usize) {
        match *self {}
    }
}

/// What the host compilation of a `#[kernel]` runs when a device token reaches a launch on
/// host threads: such a launch has no ids to hand out, so the kernel panics with a message
/// that names the fix, and the launch returns [`Error::KernelPanicked`].
///
/// Called by the code `#[kernel]` generates; not for use elsewhere.
#[doc(hidden)]
#[cold]
#[track_caller]
pub fn device_token_on_host(kernel: &str, parameter: &str) -> ! {
    panic!(
        "kernel `{kernel}`: the unique token `{parameter}` lives in device memory, and this launch runs on host threads; pass a token of the launch's space (`KernelTokenSpace::kernel_token`)"
    )
}

/// A unique token in the memory of a device: `size` ids as one lock bit each, which device
/// kernels set and clear atomically. Clones share the ids. Device backends make them
/// (`hoplite_cuda::Cuda::unique_token`, or [`KernelTokenSpace::kernel_token`] generically);
/// the host neither acquires nor releases them, it only reads how many are held
/// ([`live`](Self::live)).
///
/// ```
/// use hoplite_core::{DeviceUniqueToken, HostSpace, KernelToken};
/// let tokens = DeviceUniqueToken::new_in(HostSpace, "Example", 100)?;
/// assert_eq!((tokens.id_count(), tokens.live()?), (100, 0));
/// assert!(tokens.host_token().is_none() && tokens.device_token().is_some());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub struct DeviceUniqueToken<M: MemorySpace> {
    size: usize,
    words: View<u32, 1, LayoutLeft, M>,
}

impl<M: MemorySpace> Clone for DeviceUniqueToken<M> {
    fn clone(&self) -> Self {
        DeviceUniqueToken {
            size: self.size,
            words: self.words.clone(),
        }
    }
}

impl<M: MemorySpace> fmt::Debug for DeviceUniqueToken<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceUniqueToken")
            .field("size", &self.size)
            .field("memory_space", &self.words.space().name())
            .finish()
    }
}

impl<M: MemorySpace> DeviceUniqueToken<M> {
    /// A token of `size` ids in `memory`, every id free (the words are zeroed before this
    /// returns).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTokenSize`] naming `space` (the execution space the token is for) for a
    /// size of 0 or lock words that cannot be allocated or cleared.
    pub fn new_in(memory: M, space: &'static str, size: usize) -> Result<Self> {
        let refuse = |reason: String| Error::InvalidTokenSize {
            requested: size,
            space,
            reason,
        };
        if size == 0 {
            return Err(refuse("a unique token needs at least one id".to_owned()));
        }
        let words = View::new_in(memory, "unique_token", [size.div_ceil(32)])
            .map_err(|e| refuse(format!("its {} lock words: {e}", size.div_ceil(32))))?;
        Ok(DeviceUniqueToken { size, words })
    }

    /// The number of ids: kernels get ids in `[0, size)`.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The memory space holding the lock words (for a device backend: the device).
    pub fn memory_space(&self) -> &M {
        self.words.space()
    }

    /// The number of ids held now, read back from the lock words with
    /// [`MemorySpace::copy_to_host`]. Between launches it is 0: kernels release every id they
    /// acquire before they end.
    ///
    /// # Errors
    ///
    /// The copy's error.
    pub fn live(&self) -> Result<usize> {
        Ok(self.words.to_vec()?.iter().map(|w| w.count_ones() as usize).sum())
    }

    /// The lock words' view: for a backend that keeps them alive while its kernels run.
    pub fn lock_words(&self) -> &View<u32, 1, LayoutLeft, M> {
        &self.words
    }
}

// SAFETY: `words` holds `size.div_ceil(32)` zeroed `u32`s from `new_in` on, in memory of
// `M`, kept alive by the view while `self` lives; only kernels given the token write them,
// and they clear every bit they set before they end.
unsafe impl<M: MemorySpace> KernelToken for DeviceUniqueToken<M> {
    type Host = NoHostToken;

    fn id_count(&self) -> usize {
        self.size
    }

    fn host_token(&self) -> Option<&NoHostToken> {
        None
    }

    fn device_token(&self) -> Option<DeviceToken> {
        Some(DeviceToken {
            words: self.words.data() as usize,
            size: self.size,
            memory_space: Box::new(self.words.space().clone()),
        })
    }
}

/// An execution space whose kernels take unique tokens: host pools on host spaces (every
/// [`UniqueTokenSpace`]), device tokens on device spaces. What the conformance suite's
/// portable token checks use.
///
/// ```
/// use hoplite_core::{KernelToken, KernelTokenSpace};
/// use hoplite_serial::Serial;
/// let space = Serial::default();
/// assert_eq!(space.kernel_token()?.id_count(), 1);
/// assert!(space.kernel_token_with_size(0).is_err());
/// # Ok::<(), hoplite_core::Error>(())
/// ```
pub trait KernelTokenSpace: ExecutionSpace {
    /// The token this space's kernels take.
    type KernelToken: KernelToken + Clone + Send + 'static;

    /// A token sized to the instance's concurrency (`concurrency()` ids), every id free.
    ///
    /// # Errors
    ///
    /// Why the token cannot be made (a device that cannot be reached, memory).
    fn kernel_token(&self) -> Result<Self::KernelToken>;

    /// A token of `size` ids, every id free.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTokenSize`] for a size of 0 or one that cannot be allocated.
    fn kernel_token_with_size(&self, size: usize) -> Result<Self::KernelToken>;
}

impl<S: UniqueTokenSpace> KernelTokenSpace for S
where
    S::InstanceToken: 'static,
{
    type KernelToken = S::InstanceToken;

    fn kernel_token(&self) -> Result<S::InstanceToken> {
        Ok(self.unique_token())
    }

    fn kernel_token_with_size(&self, size: usize) -> Result<S::InstanceToken> {
        self.unique_token_with_size(size)
    }
}
