//! The loom switch.
//!
//! The synchronization primitives of this crate's hand-written protocols (the hot team's
//! launch hand-off in `pool`, the team barrier in `barrier`): std's, or loom's under `cfg(loom)`,
//! so that the model checker explores every interleaving of the real code (`cargo xtask test`
//! runs the models).
//!
//! Each place where a waiter announces itself and then checks the condition, while the waker
//! sets the condition and then checks for waiters (store, then load, on both sides), puts a
//! `fence(SeqCst)` between the two: that makes one of them see the other in the C++ memory
//! model, and loom checks fences (it treats `SeqCst` loads and stores as acquire/release only).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;
