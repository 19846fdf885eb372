//! The error type of dynamic selection.

/// What went wrong while selecting a resource, submitting to it or waiting for it.
///
/// Every message names the policy and says what to change. The enum is `#[non_exhaustive]`.
///
/// ```
/// use hoplite_select::SelectError;
/// let e = SelectError::NotInitialized { policy: "round-robin" };
/// assert!(e.to_string().contains("initialize"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    /// A deferred policy was used before [`Policy::initialize`](crate::Policy::initialize).
    #[error(
        "the {policy} policy was used before it was initialized; call `initialize(resources)` (or `initialize_with_backend`) on a deferred policy before selecting or submitting"
    )]
    NotInitialized {
        /// The policy's name.
        policy: &'static str,
    },
    /// `initialize` was called on a policy that already has its resources.
    #[error(
        "the {policy} policy is already initialized; `initialize` may be called once, on a policy made with `deferred()`"
    )]
    AlreadyInitialized {
        /// The policy's name.
        policy: &'static str,
    },
    /// The policy has no resources to select from.
    #[error(
        "the {policy} policy has no resources; construct it with at least one resource (a policy made by default over `DefaultBackend` has none)"
    )]
    NoResources {
        /// The policy's name.
        policy: &'static str,
    },
    /// Every resource stayed busy (a dynamic-load policy with a limit of unfinished
    /// submissions) for the policy's wait limit.
    #[error(
        "the {policy} policy found no available resource in {waited:?}: {}; wait on a submission first, raise the wait limit, or use `try_submit`",
        busy_reason(*resources, *limit)
    )]
    NoResourceAvailable {
        /// The policy's name.
        policy: &'static str,
        /// How many resources the policy has.
        resources: usize,
        /// The limit of unfinished submissions per resource, if the policy has one.
        limit: Option<usize>,
        /// How long the selection waited before giving up.
        waited: std::time::Duration,
    },
    /// A fixed-resource policy whose offset is past its resources.
    #[error(
        "the fixed-resource policy selects resource {offset} but has only {resources} resources; use an offset below {resources}"
    )]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: usize,
        /// How many resources the policy has.
        resources: usize,
    },
    /// Waiting on an execution space (a fence) failed.
    #[error("waiting on a resource failed: {0}")]
    Resource(#[from] hoplite_core::Error),
    /// Waiting on a user resource failed; the message comes from its [`Wait`](crate::Wait) impl.
    #[error("waiting failed: {0}")]
    Wait(String),
    /// An asynchronous submission could not be queued on its resource.
    #[error(
        "cannot queue on resource {index}: {reason}; submit with `submit` (on the calling thread) instead"
    )]
    QueueUnavailable {
        /// The resource's index.
        index: usize,
        /// Why (the thread could not start, or has ended).
        reason: String,
    },
}

/// A selection error as the core's [`hoplite_core::Error`], so that `?` takes it into a
/// `hoplite::Result`: a resource's core error as itself, any other as [`Error::Runtime`]
/// (`runtime: "selection"`) with the selection error as its source.
///
/// [`Error::Runtime`]: hoplite_core::Error::Runtime
///
/// ```
/// use hoplite_select::SelectError;
/// let e: hoplite_core::Error = SelectError::NoResources { policy: "round-robin" }.into();
/// assert!(e.to_string().starts_with("selection: "));
/// ```
impl From<SelectError> for hoplite_core::Error {
    fn from(e: SelectError) -> Self {
        match e {
            SelectError::Resource(core) => core,
            other => hoplite_core::Error::Runtime {
                runtime: "selection",
                source: hoplite_core::RuntimeError::new(other),
            },
        }
    }
}

/// Why every resource was unavailable, for [`SelectError::NoResourceAvailable`].
fn busy_reason(resources: usize, limit: Option<usize>) -> String {
    match limit {
        Some(limit) => {
            format!("each of its {resources} resources has {limit} unfinished submissions (its limit)")
        }
        None => format!("the policy declined each of its {resources} resources"),
    }
}
