//! The loom switch.
//!
//! The synchronization primitives of the core's hand-written protocol (the borrow table's
//! lock-free whole-allocation path): std's, or loom's under `cfg(loom)`, so that the model
//! checker explores every interleaving of the real code (`cargo xtask test` runs the models).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
