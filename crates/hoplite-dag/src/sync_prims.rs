//! The loom switch.
//!
//! The synchronization primitives of the runtime's own protocols: a host stream's queue and
//! the marks its thread passes (`device`), a vertex's status and end word (`context::vertex`),
//! the context's state and held-borrow locks, a job's work (`context::job`) and a reduction's
//! result. They are parking_lot's locks and std's atomics, `Arc`, threads and thread-locals,
//! or loom's under `cfg(loom)`, so that the model checker explores every interleaving of the
//! real code (the models are in `context/loom_models.rs` and `device.rs`; `cargo xtask test`
//! runs them).
//!
//! The locks keep parking_lot's interface either way (`lock` returns the guard, a condition
//! variable waits on `&mut` guard): they are `hoplite_core::loom_locks`, which the CUDA
//! backend's protocol shares, so the code above is the same in both builds.
//!
//! What stays outside the switch: `Arc<dyn Job>` (a public signature, and loom's `Arc` has
//! no unsized coercion), the context's `Arc<Mutex<HeldSlots>>` (a `Vertex` holds it weakly,
//! and loom has no `Weak`), and labels (`Arc<str>`): none of them carries a protocol of its
//! own — what their threads hand over goes through the primitives here.

pub(crate) use hoplite_core::loom_locks::{Condvar, Mutex};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::thread;

/// `thread_local!` with a const initializer: std's, or loom's (one value per model thread)
/// under `cfg(loom)`, whose macro takes no `const` block and initializes lazily instead.
macro_rules! const_thread_local {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(loom))]
        std::thread_local! { $(#[$attr])* $vis static $name: $t = const { $init }; }
        #[cfg(loom)]
        loom::thread_local! { $(#[$attr])* $vis static $name: $t = $init; }
    };
}
pub(crate) use const_thread_local;

/// What the loom models share: the model runner, a checked cell and quiet deliberate panics.
#[cfg(all(test, loom))]
pub(crate) mod model_support {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use loom::cell::UnsafeCell;

    /// Runs `model` in every interleaving loom finds within `preemption_bound` preemptions
    /// (`None`: no bound), and prints how many executions that took (`--nocapture`).
    pub(crate) fn check(
        name: &str,
        preemption_bound: Option<usize>,
        model: impl Fn() + Sync + Send + 'static,
    ) {
        let executions = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = executions.clone();
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = preemption_bound;
        let start = std::time::Instant::now();
        builder.check(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            model();
        });
        println!(
            "loom model `{name}`: {} executions in {:.1} s",
            executions.load(Ordering::Relaxed),
            start.elapsed().as_secs_f64()
        );
    }

    /// A value written on one thread and read on another: loom reports the pair of accesses
    /// unless the write happens before the read.
    pub(crate) struct Cell(UnsafeCell<u64>);

    // SAFETY: loom checks every access: the models read a cell only after a wait that orders
    // the write before the read, and loom reports the access pair otherwise.
    unsafe impl Sync for Cell {}

    impl Cell {
        pub(crate) fn new() -> loom::sync::Arc<Cell> {
            loom::sync::Arc::new(Cell(UnsafeCell::new(0)))
        }
        pub(crate) fn set(&self, value: u64) {
            // SAFETY: see the `Sync` impl.
            self.0.with_mut(|p| unsafe { *p = value });
        }
        pub(crate) fn get(&self) -> u64 {
            // SAFETY: see the `Sync` impl.
            self.0.with(|p| unsafe { *p })
        }
    }

    /// The panic payload of the models' deliberate panics.
    pub(crate) struct Deliberate;

    /// Keeps deliberate panics out of the output (loom runs a model thousands of times).
    pub(crate) fn quiet_deliberate_panics() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Deliberate>() {
                previous(info);
            }
        }));
    }
}
