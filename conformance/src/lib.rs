//! # hoplite-conformance
//!
//! One suite that checks any backend against the concepts of `hoplite-core`. Every axiom that
//! `docs/concepts.md` states is a generic check function, named after the axiom, in the module
//! of its concept:
//!
//! | module | concept |
//! |---|---|
//! | [`execution_space`] | `ExecutionSpace`: instances, fence, launch order, `in_parallel`, concurrency |
//! | [`memory_space`] | `MemorySpace` of the space, `MemorySpaceAccess` of `HostSpace` |
//! | [`range_policy`] | `RangePolicy`: exactly once, chunks and schedules, conversions |
//! | [`mdrange_policy`] | `MDRangePolicy` of ranks 1 to 3, odd tiles, every iteration order |
//! | [`team`] | `TeamPolicy` and `TeamMember`: ranks, barrier, collectives, nested ranges, scratch |
//! | [`reducer`] | every built-in reducer and custom ones, through `parallel_reduce` |
//! | [`scan`] | `parallel_scan`: exclusive and inclusive prefix sums through views |
//! | [`unique_token`] | `UniqueToken` of both scopes |
//! | [`views`] | views and the access model, through launches on the space |
//! | [`errors`] | bad input: typed errors, and the kernel never runs |
//! | [`panics`] | a panicking kernel is `Error::KernelPanicked` and the space stays usable |
//! | [`properties`] | property tests: results equal those of the serial backend |
//! | [`graph`] | explicit graphs through the generic host implementation: order, results, errors |
//!
//! A check is a function `fn(&S) -> Result<(), Failure>` for any [`FullSpace`] `S`; a
//! [`Failure`] names the axiom and says what went wrong. The checks never panic on a broken
//! backend (kernel panics come back as errors, and [`run_check`] also catches panics of the
//! check itself), so a test can run the suite against a deliberately broken backend and assert
//! which axioms it breaks.
//!
//! A backend runs the whole suite with [`suite!`]:
//!
//! ```
//! // tests/conformance.rs of a backend crate
//! use hoplite_serial::Serial as MySpace;
//! hoplite_conformance::suite!(my_space, MySpace::default, MySpace);
//! # fn main() {}
//! ```
//!
//! which expands to a module `my_space` with one `#[test]` per check
//! (`my_space::reducer::min_loc_ties_go_to_lowest_index`, ...) and compile-time assertions
//! that the space implements the concept traits. The checks are also plain functions:
//!
//! ```
//! use hoplite_conformance::{reducer, run_all};
//! let space = hoplite_serial::Serial::default();
//! reducer::min_loc_ties_go_to_lowest_index(&space)?;
//! assert!(run_all(&space).is_empty());
//! # Ok::<(), hoplite_conformance::Failure>(())
//! ```
//!
//! Every check returns [`Outcome`]; its error is a [`Failure`] naming the check's axiom.
//! `docs/writing-a-backend.md` explains the traits to implement.

use std::collections::BTreeSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, PoisonError};

use hoplite_core::Error;

#[macro_use]
mod macros;
mod util;

pub mod errors;
pub mod execution_space;
pub mod graph;
pub mod kernels;
pub mod mdrange_policy;
pub mod memory_space;
pub mod panics;
pub mod properties;
pub mod range_policy;
pub mod reducer;
pub mod scan;
pub mod team;
pub mod unique_token;
pub mod views;

/// Everything the suite launches on a space, in one bound: the core's [`FullSpace`], which
/// every conforming backend is and backend-generic application code uses too.
pub use hoplite_core::{FullSpace, LaunchSpace};
/// What the graph checks need of a space: its own graph implementation (`create_graph`).
pub use hoplite_graph::GraphSpace;

/// A view in the memory of the space `S` (`S::MemorySpace`): where the portable checks keep
/// their data, made with `from_slice` or `new` and read back with `to_vec` on every backend.
pub type SpaceView<S, T, const R: usize> =
    hoplite_core::View<T, R, hoplite_core::LayoutRight, <S as hoplite_core::ExecutionSpace>::MemorySpace>;

/// A broken axiom: which one, and what the backend did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The check that failed, as `concept::axiom` (for example
    /// `"reducer::min_loc_ties_go_to_lowest_index"`).
    pub axiom: &'static str,
    /// What was observed, and what was expected.
    pub message: String,
}

impl Failure {
    /// A failure of `axiom` with `message`.
    pub fn new(axiom: &'static str, message: impl Into<String>) -> Self {
        Failure {
            axiom,
            message: message.into(),
        }
    }

    /// A failure whose axiom the enclosing check fills in.
    pub(crate) fn msg(message: impl Into<String>) -> Self {
        Failure::new("", message)
    }

    /// Names the axiom, keeping the message; `path` is a module path of this crate. A check
    /// of a concept split into family modules (`reducer::location::min_loc_..`) keeps the name
    /// of the path it is re-exported at (`reducer::min_loc_..`), the one the registry uses.
    pub(crate) fn in_axiom(mut self, path: &'static str) -> Self {
        let path = path.strip_prefix("hoplite_conformance::").unwrap_or(path);
        self.axiom = match (path.split_once("::"), path.rsplit_once("::")) {
            (Some((concept, _)), Some((module, axiom))) if module != concept => concept_axiom(concept, axiom),
            _ => path,
        };
        self
    }
}

/// `concept::axiom` as a `&'static str`, built once per name: only a failure of a check in a
/// family module needs it, so the few names leaked are bounded by the number of checks.
fn concept_axiom(concept: &str, axiom: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let name = format!("{concept}::{axiom}");
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = names.get(name.as_str()) {
        return known;
    }
    let name: &'static str = Box::leak(name.into_boxed_str());
    names.insert(name);
    name
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "axiom `{}` does not hold: {}", self.axiom, self.message)
    }
}

impl std::error::Error for Failure {}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::msg(format!("unexpected error: {e}"))
    }
}

/// The outcome of one check.
pub type Outcome = Result<(), Failure>;

/// Runs the body of the check `axiom` (a path from `axiom!()`) and names its failures after
/// it. Inside the body, `?` turns a `hoplite_core::Error` into a failure.
pub(crate) fn check(axiom: &'static str, body: impl FnOnce() -> Outcome) -> Outcome {
    body().map_err(|f| f.in_axiom(axiom))
}

/// One check of the suite: its axiom name and the function that runs it.
pub struct Check<S> {
    /// `concept::axiom`, the same as [`Failure::axiom`] of its failures.
    pub axiom: &'static str,
    /// Runs the check on a space.
    pub run: fn(&S) -> Outcome,
}

impl<S> Clone for Check<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Check<S> {}

impl<S> fmt::Debug for Check<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Check").field(&self.axiom).finish()
    }
}

/// Every check of the suite, in the order of the modules.
pub fn checks<S: FullSpace + GraphSpace>() -> Vec<Check<S>> {
    crate::__for_each_check!(__registry! { S })
}

/// The checks that run on every [`LaunchSpace`], a GPU's included: their kernels are
/// `#[kernel]`s and their data lives in the space's own memory (`S::MemorySpace`, made with
/// `View::from_slice` and read back with `to_vec`). The others test host-only features
/// (closures, host unique tokens, panics, nested launches) and need a [`FullSpace`].
///
/// ```
/// use hoplite_conformance::{ALL_CHECKS, portable_checks, run_check};
/// let space = hoplite_serial::Serial::default();
/// let portable = portable_checks::<hoplite_serial::Serial>();
/// assert!(portable.len() <= ALL_CHECKS.len());
/// assert!(portable.iter().all(|c| run_check(c, &space).is_ok()));
/// ```
pub fn portable_checks<S: LaunchSpace + GraphSpace>() -> Vec<Check<S>> {
    crate::__for_each_check!(__portable_registry! { S })
}

/// The `#[kernel]`s the portable checks launch: what a device backend compiles to run them
/// (the NVRTC test compiles each for the GPU without one).
///
/// ```
/// let kernels = hoplite_conformance::device_kernels();
/// assert!(kernels.iter().any(|k| k.name == "axpy"));
/// ```
pub fn device_kernels() -> Vec<hoplite_core::device_kernel::DeviceKernelInfo> {
    [
        execution_space::DEVICE_KERNELS,
        memory_space::DEVICE_KERNELS,
        range_policy::DEVICE_KERNELS,
        mdrange_policy::DEVICE_KERNELS,
        team::DEVICE_KERNELS,
        reducer::DEVICE_KERNELS,
        graph::DEVICE_KERNELS,
        scan::DEVICE_KERNELS,
        unique_token::DEVICE_KERNELS,
        kernels::DEVICE_KERNELS,
        views::DEVICE_KERNELS,
        errors::DEVICE_KERNELS,
        panics::DEVICE_KERNELS,
        properties::DEVICE_KERNELS,
    ]
    .iter()
    .flat_map(|list| list.iter().map(|info| info()))
    .collect()
}

/// The names (`concept::axiom`) of every check of the suite, in the order of [`checks`].
pub const ALL_CHECKS: &[&str] = crate::__for_each_check!(__names! {});

/// Runs one check and turns a panic of the check itself (not of a kernel: those are errors
/// already) into a [`Failure`] of its axiom.
pub fn run_check<S>(check: &Check<S>, space: &S) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| (check.run)(space))) {
        // The registry's name is the authoritative one.
        Ok(outcome) => outcome.map_err(|f| Failure::new(check.axiom, f.message)),
        Err(payload) => {
            let message = match Error::from_panic(check.axiom, payload) {
                Error::KernelPanicked { message, .. } => message,
                other => other.to_string(),
            };
            Err(Failure::new(
                check.axiom,
                format!("the check panicked: {message}"),
            ))
        }
    }
}

/// Runs every check on `space` and returns the failures (empty when the space conforms).
pub fn run_all<S: FullSpace + GraphSpace>(space: &S) -> Vec<Failure> {
    checks::<S>()
        .iter()
        .filter_map(|check| run_check(check, space).err())
        .collect()
}

/// Panics with the failure's message: what the tests of [`suite!`] call.
#[track_caller]
pub fn assert_passes(outcome: Outcome) {
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

// Backend-independent facts the access model relies on: tokens and bound writers never cross
// threads.
static_assertions::assert_not_impl_any!(hoplite_core::Idx<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(hoplite_core::MdIdx<'static, 3>: Send, Sync);
static_assertions::assert_not_impl_any!(
    hoplite_core::BoundWriter<'static, f64, 1, hoplite_core::LayoutRight>: Send, Sync
);
static_assertions::assert_not_impl_any!(
    hoplite_core::TeamPlane<'static, f64, hoplite_core::LayoutRight>: Send, Sync
);
static_assertions::assert_not_impl_any!(
    hoplite_core::PlaneRow<'static, f64, hoplite_core::LayoutLeft>: Send, Sync
);
static_assertions::assert_impl_all!(Failure: Send, Sync, Clone, std::error::Error);

#[doc(hidden)]
pub mod __private {
    pub use hoplite_core;
    pub use static_assertions;

    use super::FullSpace;
    use hoplite_core::{UniqueToken, UniqueTokenSpace};
    use std::fmt::Debug;

    /// Compiles only when `make` returns a space with every concept trait.
    pub fn assert_concepts<S, F>(make: F) -> F
    where
        S: FullSpace + Send + Sync + Clone + Default + PartialEq + Debug + 'static,
        <S as UniqueTokenSpace>::InstanceToken: UniqueToken + Clone + Send + Sync,
        <S as UniqueTokenSpace>::GlobalToken: UniqueToken + Clone + Send + Sync,
        F: Fn() -> S,
    {
        make
    }
}

/// Expands to a module `$name` with one `#[test]` per check of the suite, run on the space
/// that `$make` (a function or closure without arguments) returns.
///
/// ```
/// hoplite_conformance::suite!(serial, hoplite_serial::Serial::default);
/// // or, naming the type too, which adds `static_assertions` checks of it:
/// hoplite_conformance::suite!(serial_typed, hoplite_serial::Serial::default, hoplite_serial::Serial);
/// # fn main() {}
/// ```
///
/// The tests are `$name::<concept>::<axiom>`, so `cargo test reducer::` runs one concept. The
/// space must implement [`FullSpace`] and `Send + Sync + Clone + Default + PartialEq +
/// Debug` (checked at compile time). `$make` is resolved in the module that invokes the macro.
#[macro_export]
macro_rules! suite {
    ($name:ident, $make:expr $(,)?) => {
        $crate::suite!(@module $name, $make, {});
    };
    ($name:ident, $make:expr, $space:ty $(,)?) => {
        $crate::suite!(@module $name, $make, {
            $crate::__private::static_assertions::assert_impl_all!(
                $space: $crate::FullSpace,
                $crate::__private::hoplite_core::ExecutionSpace,
                $crate::__private::hoplite_core::UniqueTokenSpace,
                ::core::marker::Send,
                ::core::marker::Sync,
                ::core::clone::Clone,
                ::core::default::Default,
                ::core::cmp::PartialEq,
                ::core::fmt::Debug
            );
            $crate::__private::static_assertions::assert_impl_all!(
                <$space as $crate::__private::hoplite_core::UniqueTokenSpace>::InstanceToken:
                    $crate::__private::hoplite_core::UniqueToken,
                ::core::marker::Send,
                ::core::marker::Sync,
                ::core::clone::Clone
            );
            $crate::__private::static_assertions::assert_impl_all!(
                <$space as $crate::__private::hoplite_core::UniqueTokenSpace>::GlobalToken:
                    $crate::__private::hoplite_core::UniqueToken,
                ::core::marker::Send,
                ::core::marker::Sync,
                ::core::clone::Clone
            );
            // Team tokens rest on a member staying on its thread (the `TeamMember` contract).
            $crate::__private::static_assertions::assert_not_impl_any!(
                <$space as $crate::__private::hoplite_core::ExecutionSpace>::TeamMember<'static>:
                    ::core::marker::Sync
            );
            #[allow(dead_code)]
            fn __make_returns_the_named_space() -> $space {
                ($make)()
            }
        });
    };
    (@module $name:ident, $make:expr, { $($typed:tt)* }) => {
        #[allow(unused_imports, non_snake_case)]
        mod $name {
            use super::*;

            $($typed)*

            #[allow(dead_code)]
            fn __make_returns_a_conformant_space() {
                let _ = $crate::__private::assert_concepts($make);
            }

            $crate::__for_each_check!(__suite_tests! { $make });
        }
    };
}

/// The list of every check, handed to `$callback` (a macro of this crate) after `$extra`.
#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_check {
    ($callback:ident! { $($extra:tt)* }) => {
        $crate::$callback! {
            { $($extra)* }
            execution_space {
                portable {
                    clones_are_the_same_instance,
                    default_instances_are_equal,
                    fence_waits_for_prior_launches,
                    launches_run_in_submission_order,
                    concurrency_is_at_least_one,
                    concurrency_bounds_simultaneous_iterations,
                    print_configuration_is_not_empty,
                    partitions_are_instances_that_run_launches,
                }
                host {
                    in_parallel_is_true_exactly_inside_kernels,
                    nested_launches_complete,
                }
            }
            memory_space {
                portable {
                    allocation_is_aligned,
                    zero_byte_allocation_succeeds,
                    allocation_failure_is_typed,
                    view_allocations_are_recorded,
                    deep_copy_between_views_copies_every_element,
                }
                host {
                    host_space_access_flags_are_ordered,
                }
            }
            range_policy {
                portable {
                    visits_every_index_exactly_once,
                    chunked_schedules_visit_every_index_exactly_once,
                    conversions_visit_the_same_points,
                    schedule_does_not_change_results,
                    desired_occupancy_does_not_change_results,
                }
                host {
                }
            }
            mdrange_policy {
                portable {
                    empty_box_runs_no_iteration,
                    reduce_covers_every_point_once,
                    signed_bounds_with_an_origin,
                    rank_1_visits_every_point_exactly_once,
                    rank_2_visits_every_point_exactly_once,
                    rank_3_visits_every_point_exactly_once,
                }
                host {
                }
            }
            team {
                portable {
                    each_league_team_rank_pair_seen_once,
                    team_size_above_the_maximum_is_rejected,
                    barrier_orders_scratch_writes,
                    broadcast_returns_the_source_value,
                    team_slots_store_once_per_thread,
                    team_scan_returns_exclusive_prefix_and_total,
                    team_thread_range_visits_every_index_once,
                    thread_vector_range_visits_every_index_once_per_thread,
                    team_vector_range_visits_every_index_once,
                    team_rows_and_league_tokens_store_once,
                    nested_reduce_returns_the_result_on_every_thread,
                    nested_scan_matches_sequential_prefix,
                    nested_scan_stores_into_the_team_row,
                    team_scratch_has_the_requested_size,
                    thread_scratch_is_private,
                    team_policy_reduce_sums_over_teams,
                    auto_team_size_is_the_size_launched,
                    team_single_broadcast_functor_and_vector_length,
                }
                host {
                    team_collectives_of_host_values_keep_rank_order,
                    team_planes_store_every_element_once,
                }
            }
            reducer {
                portable {
                    sum_matches_sequential_fold,
                    prod_matches_sequential_fold,
                    min_and_max_match_sequential_fold,
                    min_and_max_ignore_nan,
                    minmax_matches_sequential_fold,
                    min_loc_ties_go_to_lowest_index,
                    max_loc_ties_go_to_lowest_index,
                    minmax_loc_ties_go_to_lowest_index,
                    minmax_first_last_loc_max_ties_go_to_highest_index,
                    loc_reducers_report_an_index_for_identity_values,
                    logical_and_or_match_sequential_fold,
                    bitwise_and_or_match_sequential_fold,
                    finalize_runs_once_on_the_total,
                    custom_join_keeps_index_order,
                    empty_range_gives_the_identity,
                    reducer_values_reduce_into_views,
                    first_loc_and_last_loc_find_the_extremes,
                }
                host {
                    tuple_of_reducers_matches_separate_reductions,
                    reduce_into_views_and_variables,
                    complex_array_reductions_and_locked_atomics,
                    mdrange_loc_reducers_report_multi_indices,
                }
            }
            graph {
                portable {
                    random_dags_run_every_node_once_after_its_predecessors,
                    reduce_and_scan_nodes_match_eager_launches,
                    unordered_conflicting_nodes_are_refused_at_instantiation,
                    a_borrow_held_by_the_host_fails_the_submit_then_it_runs,
                    a_panicking_node_fails_its_submit_and_the_graph_runs_again,
                }
                host {
                }
            }
            scan {
                portable {
                    exclusive_scan_matches_sequential_prefix,
                    inclusive_scan_matches_sequential_prefix,
                    scan_over_an_offset_range_matches_sequential_prefix,
                    final_pass_runs_once_per_index,
                }
                host {
                }
            }
            unique_token {
                portable {
                    kernel_ids_are_in_range,
                    live_ids_are_distinct,
                    team_ids_are_shared_by_the_team_and_distinct,
                    instance_token_is_sized_to_the_concurrency,
                    zero_size_is_rejected,
                    huge_size_is_an_error_not_an_abort,
                }
                host {
                    ids_are_in_range,
                    live_ids_are_distinct_in_closures,
                    try_acquire_fails_only_when_every_id_is_live,
                    clones_share_ids,
                    guard_releases_on_drop,
                    huge_host_pool_is_made_lazily_or_refused,
                    global_live_ids_are_distinct,
                }
            }
            kernels {
                portable {
                    kernel_range_for_matches_host_loop,
                    kernel_mdrange_for_matches_host_loop,
                    kernel_reduce_matches_host_loop,
                    kernel_team_reduce_matches_host_loop,
                }
                host {
                }
            }
            views {
                portable {
                    writer_stores_at_every_token,
                    md_writer_stores_at_every_token,
                    reader_neighbor_reads_stencil_points,
                    writer_conflicts_with_reader_of_clone,
                    two_writers_of_one_view_conflict,
                    disjoint_subview_writers_do_not_conflict,
                    launch_past_the_extent_is_rejected,
                    lookup_reads_in_a_wider_launch,
                    atomic_handle_scatter_adds_exactly,
                    atomic_handle_conflicts_with_writer,
                    handles_are_released_after_the_launch,
                }
                host {
                    instance_copies_lookups_and_scalar_writes,
                }
            }
            errors {
                portable {
                    reversed_range_is_rejected,
                    zero_chunk_is_rejected,
                    occupancy_outside_1_to_100_is_rejected,
                    zero_tile_is_rejected,
                    zero_team_size_is_rejected,
                    bad_vector_length_is_rejected,
                    scratch_above_the_maximum_is_rejected,
                    range_not_starting_at_zero_does_not_convert_to_teams,
                    overflowing_mdrange_is_rejected,
                }
                host {
                }
            }
            panics {
                portable {
                }
                host {
                    panic_in_parallel_for_becomes_kernel_panicked,
                    panic_in_parallel_reduce_becomes_kernel_panicked,
                    panic_in_parallel_scan_becomes_kernel_panicked,
                    panic_in_mdrange_and_team_kernels_becomes_kernel_panicked,
                    panic_in_nested_range_becomes_kernel_panicked,
                    non_string_payload_is_reported,
                    payload_that_panics_when_dropped_is_contained,
                    space_stays_usable_after_a_panic,
                }
            }
            properties {
                portable {
                    sum_i64_matches_serial,
                    min_max_loc_match_serial,
                    scan_matches_serial,
                    mdrange_matches_serial,
                }
                host {
                }
            }
        }
    };
}

/// Builds the `Vec<Check<S>>` of [`checks`].
#[doc(hidden)]
#[macro_export]
macro_rules! __registry {
    ({ $space:ident } $($module:ident {
        portable { $($portable:ident),* $(,)? }
        host { $($host:ident),* $(,)? }
    })*) => {
        vec![$(
            $($crate::Check::<$space> {
                axiom: concat!(stringify!($module), "::", stringify!($portable)),
                run: $crate::$module::$portable::<$space>,
            },)*
            $($crate::Check::<$space> {
                axiom: concat!(stringify!($module), "::", stringify!($host)),
                run: $crate::$module::$host::<$space>,
            },)*
        )*]
    };
}

/// Builds the `Vec<Check<S>>` of [`portable_checks`].
#[doc(hidden)]
#[macro_export]
macro_rules! __portable_registry {
    ({ $space:ident } $($module:ident {
        portable { $($portable:ident),* $(,)? }
        host { $($host:ident),* $(,)? }
    })*) => {
        vec![$($(
            $crate::Check::<$space> {
                axiom: concat!(stringify!($module), "::", stringify!($portable)),
                run: $crate::$module::$portable::<$space>,
            },
        )*)*]
    };
}

/// The names of every check, portable first within each module, as [`checks`] orders them.
#[doc(hidden)]
#[macro_export]
macro_rules! __names {
    ({} $($module:ident {
        portable { $($portable:ident),* $(,)? }
        host { $($host:ident),* $(,)? }
    })*) => {
        &[$(
            $(concat!(stringify!($module), "::", stringify!($portable)),)*
            $(concat!(stringify!($module), "::", stringify!($host)),)*
        )*]
    };
}

/// The `#[test]` functions of [`suite!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_tests {
    ({ $make:expr } $($module:ident {
        portable { $($portable:ident),* $(,)? }
        host { $($host:ident),* $(,)? }
    })*) => {$(
        mod $module {
            use super::*;
            $(
                #[test]
                fn $portable() {
                    let space = ($make)();
                    $crate::assert_passes($crate::$module::$portable(&space));
                }
            )*
            $(
                #[test]
                fn $host() {
                    let space = ($make)();
                    $crate::assert_passes($crate::$module::$host(&space));
                }
            )*
        }
    )*};
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe<T>() -> Outcome {
        check(axiom!(), || Err(Failure::msg(std::any::type_name::<T>())))
    }

    #[test]
    fn failures_name_the_enclosing_check() {
        let failure = probe::<u8>().expect_err("the probe fails");
        assert_eq!((failure.axiom, failure.message.as_str()), ("tests::probe", "u8"));
        assert_eq!(failure.to_string(), "axiom `tests::probe` does not hold: u8");
    }

    #[test]
    fn checks_in_family_modules_keep_the_concept_name() {
        let path = "hoplite_conformance::reducer::location::min_loc_ties_go_to_lowest_index";
        let failure = Failure::msg("m").in_axiom(path);
        assert_eq!(failure.axiom, "reducer::min_loc_ties_go_to_lowest_index");
        // Interned: the same name twice is one allocation.
        assert!(std::ptr::eq(
            failure.axiom,
            Failure::msg("m").in_axiom(path).axiom
        ));
    }

    #[test]
    fn every_check_is_registered_once() {
        let checks = checks::<hoplite_serial::Serial>();
        let mut names: Vec<&str> = checks.iter().map(|c| c.axiom).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), checks.len());
        assert!(names.contains(&"reducer::min_loc_ties_go_to_lowest_index"));
    }
}
