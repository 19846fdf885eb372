//! The error type of hoplite-mpi.

use std::ffi::{c_char, c_int};

use mpi::ffi;

/// The result type of hoplite-mpi.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when views travel between ranks.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A view error: a borrow conflict (the view is borrowed elsewhere), a bad extent.
    #[error(transparent)]
    View(#[from] hoplite_core::Error),
    /// A DAG error: a vertex's ancestor failed, a view borrowed outside the context.
    #[error(transparent)]
    Dag(#[from] hoplite_dag::DagError),
    /// MPI was initialized already in this process.
    #[error(
        "MPI is already initialized in this process; call `Mpi::init` once and pass its communicators around"
    )]
    AlreadyInitialized,
    /// The MPI library does not offer the thread level hoplite-mpi needs.
    #[error(
        "the MPI library provides thread level {provided}, but hoplite-mpi needs `Multiple` (DAG vertices communicate from worker threads); use an MPI built with thread support"
    )]
    ThreadingUnavailable {
        /// The level the library provides.
        provided: String,
    },
    /// A rank outside the communicator.
    #[error(
        "{op} on `{label}`: rank {rank} is out of range for a communicator of {size} ranks; use a rank in 0..{size}"
    )]
    RankOutOfRange {
        /// The operation.
        op: &'static str,
        /// The view's label.
        label: String,
        /// The rank asked for.
        rank: i32,
        /// The communicator's size.
        size: i32,
    },
    /// A tag MPI does not accept.
    #[error("{op} on `{label}`: tag {tag} is negative; use a tag of 0 or more")]
    InvalidTag {
        /// The operation.
        op: &'static str,
        /// The view's label.
        label: String,
        /// The tag.
        tag: i32,
    },
    /// A received message whose size is not the receiving view's.
    #[error(
        "receive into `{label}` from rank {from_rank} (tag {tag}): the message has {received} bytes but the view holds {expected} bytes ({len} elements of {element_bytes} bytes); send and receive views of the same extents and element type"
    )]
    SizeMismatch {
        /// The receiving view's label.
        label: String,
        /// The sending rank.
        from_rank: i32,
        /// The tag.
        tag: i32,
        /// The bytes sent (or, when the message overflowed the view, more than `expected`).
        received: usize,
        /// The bytes the view holds.
        expected: usize,
        /// The view's element count.
        len: usize,
        /// The size of one element.
        element_bytes: usize,
    },
    /// The ranks of a collective passed views that differ in element count or element type.
    #[error(
        "{op} on `{label}`: the ranks disagree on the {what} (this rank: {local}, range over the ranks: {min}..={max}); every rank must pass views of the same extents and element type"
    )]
    CollectiveMismatch {
        /// The operation.
        op: &'static str,
        /// The view's label.
        label: String,
        /// "element count" or "element type".
        what: &'static str,
        /// This rank's value (a count, or a fingerprint of the type's name).
        local: i64,
        /// The smallest value over the ranks.
        min: i64,
        /// The largest value over the ranks.
        max: i64,
    },
    /// A view whose extent does not fit the operation (a gather target, a halo view).
    #[error("{op} on `{label}`: {reason}")]
    BadExtent {
        /// The operation.
        op: &'static str,
        /// The view's label.
        label: String,
        /// What is wrong and what would be right.
        reason: String,
    },
    /// A process grid that does not match the communicator.
    #[error("{reason}")]
    BadDecomposition {
        /// What is wrong and what would be right.
        reason: String,
    },
    /// An MPI call failed.
    #[error("{op} on `{label}`: MPI error {code}: {message}")]
    Mpi {
        /// The operation.
        op: &'static str,
        /// The view's label.
        label: String,
        /// MPI's error code.
        code: i32,
        /// MPI's description of it.
        message: String,
    },
}

/// Turns an MPI return code into a result (the communicators hoplite-mpi uses return errors
/// instead of aborting).
pub(crate) fn check(code: c_int, op: &'static str, label: &str) -> Result<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    Err(Error::Mpi {
        op,
        label: label.to_owned(),
        code,
        message: error_string(code),
    })
}

/// MPI's description of an error code.
pub(crate) fn error_string(code: c_int) -> String {
    let mut buf = vec![0 as c_char; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds MPI_MAX_ERROR_STRING characters plus one, as MPI_Error_string
    // requires; `len` receives the length written.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) };
    if rc != ffi::MPI_SUCCESS as c_int {
        return "unknown error".to_owned();
    }
    let len = usize::try_from(len).unwrap_or(0).min(buf.len());
    buf[..len].iter().map(|&c| c as u8 as char).collect()
}

/// The error class of an MPI error code.
pub(crate) fn error_class(code: c_int) -> c_int {
    let mut class: c_int = 0;
    // SAFETY: `class` is a valid out-pointer.
    unsafe { ffi::MPI_Error_class(code, &mut class) };
    class
}
