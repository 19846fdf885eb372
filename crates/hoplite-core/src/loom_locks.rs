//! The locks of hoplite's hand-written protocols (the DAG runtime's streams and vertices, the
//! CUDA backend's queued work): parking_lot's `Mutex` and `Condvar`, or loom's under
//! `cfg(loom)` with parking_lot's interface (`lock` returns the guard, a condition variable
//! waits on a `&mut` guard), so that the code a loom model runs is the code that ships. A
//! crate's model switches to loom with `RUSTFLAGS="--cfg loom"`; `cargo xtask test` runs them.
//!
//! ```
//! use hoplite_core::loom_locks::{Condvar, Mutex};
//! let (ready, changed) = (Mutex::new(false), Condvar::new());
//! *ready.lock() = true;
//! changed.notify_all();
//! assert!(*ready.lock());
//! ```

#[cfg(not(loom))]
pub use parking_lot::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub use self::adapter::{Condvar, Mutex, MutexGuard};

/// Loom's mutex and condition variable with parking_lot's interface.
#[cfg(loom)]
mod adapter {
    use std::ops::{Deref, DerefMut};
    use std::sync::PoisonError;

    /// A loom mutex whose `lock` returns the guard (a panic under a lock fails the model
    /// anyway, so poisoning is passed over).
    #[derive(Debug, Default)]
    pub struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        /// A mutex holding `value`.
        pub fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        /// Locks it: the guard.
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)))
        }

        /// The value, through exclusive access.
        pub fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// The guard; `None` only inside [`Condvar::wait`].
    pub struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("a guard is held outside `Condvar::wait`")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("a guard is held outside `Condvar::wait`")
        }
    }

    /// A loom condition variable that waits on `&mut` guard.
    #[derive(Debug, Default)]
    pub struct Condvar(loom::sync::Condvar);

    impl Condvar {
        /// A condition variable.
        pub fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        /// Releases the guard's lock until notified, then takes it again.
        pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("a guard is held outside `Condvar::wait`");
            guard.0 = Some(self.0.wait(inner).unwrap_or_else(PoisonError::into_inner));
        }

        /// Wakes one waiter.
        pub fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter.
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
