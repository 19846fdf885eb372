//! A panic in a kernel reaches the caller as `Error::KernelPanicked` with the launch's label
//! and the panic message, and the space stays usable: not `in_parallel`, fences, launches.
//!
//! The default panic hook stays in place, so the deliberate panics print their messages.

use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Error, MDRangePolicy, RangePolicy, Sum, TeamMember, TeamPolicy, TeamThreadRange, View, parallel_for,
    parallel_reduce, parallel_scan,
};

use crate::{Failure, FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

/// Fails unless `result` is `KernelPanicked` with exactly this label and message.
fn panicked<T: std::fmt::Debug>(result: hoplite_core::Result<T>, label: &str, message: &str) -> Outcome {
    match result {
        Err(Error::KernelPanicked { label: l, message: m }) => {
            ensure_eq!(
                (l.as_str(), m.as_str()),
                (label, message),
                "the label and message of a kernel panic"
            );
            Ok(())
        }
        other => Err(Failure::msg(format!(
            "`{label}` panicked with \"{message}\" but the launch returned {other:?}"
        ))),
    }
}

/// After a failed launch: not in a kernel, fences, and the next launches (all pattern kinds)
/// work.
fn usable<S: FullSpace>(space: &S) -> Outcome {
    ensure!(
        !space.in_parallel(),
        "in_parallel is true after a panicking launch returned"
    );
    space.fence()?;
    let sum = parallel_reduce(
        "after",
        RangePolicy::new(space.clone(), 0..100),
        |i, a: &mut usize| *a += *i,
        Sum::new(),
    )?;
    ensure_eq!(sum, 4950, "a reduction after a panicking launch");
    let total: u64 = parallel_scan(
        "after-scan",
        RangePolicy::new(space.clone(), 0..10),
        |_, p: &mut u64, _| *p += 1,
    )?;
    ensure_eq!(total, 10, "a scan after a panicking launch");
    let teams = AtomicUsize::new(0);
    parallel_for("after-team", TeamPolicy::new(space.clone(), 3, 1), |_| {
        teams.fetch_add(1, Ordering::Relaxed);
    })?;
    ensure_eq!(teams.into_inner(), 3, "team members after a panicking launch");
    space.fence()?;
    Ok(())
}

/// A panic in a `parallel_for` kernel is `KernelPanicked` with label and message, and the
/// handles the launch held are released.
pub fn panic_in_parallel_for_becomes_kernel_panicked<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let result = parallel_for("explode", RangePolicy::new(space.clone(), 0..1000), |i| {
            if *i == 613 {
                panic!("boom at {}", *i);
            }
        });
        panicked(result, "explode", "boom at 613")?;
        // The handles of a panicked launch are released: the host borrows the view
        // exclusively afterwards.
        let v: View<i32, 1> = View::new("released after a panic", [100])?;
        let result = parallel_for(
            "panics holding a writer",
            (RangePolicy::new(space.clone(), 0..100), (v.write(),)),
            |(i, (w,))| {
                if *i == 57 {
                    panic!("deliberate panic holding a writer");
                }
                w.set(i, 4);
            },
        );
        panicked(
            result,
            "panics holding a writer",
            "deliberate panic holding a writer",
        )?;
        let mut host = v.host_write()?;
        host.set(0, 5);
        drop(host);
        ensure_eq!(v.host_read()?.get(0), 5, "a host store after the panicked launch");
        usable(space)
    })
}

/// A panic in a `parallel_reduce` kernel is `KernelPanicked`.
pub fn panic_in_parallel_reduce_becomes_kernel_panicked<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let result = parallel_reduce(
            "reduce-explode",
            RangePolicy::new(space.clone(), 0..1000).with_chunk_size(16),
            |i, acc: &mut f64| {
                if *i == 57 {
                    panic!("bad element");
                }
                *acc += 1.0;
            },
            Sum::new(),
        );
        panicked(result, "reduce-explode", "bad element")?;
        usable(space)
    })
}

/// A panic in a `parallel_scan` kernel (in the final pass) is `KernelPanicked`.
pub fn panic_in_parallel_scan_becomes_kernel_panicked<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let result = parallel_scan(
            "scan-explode",
            RangePolicy::new(space.clone(), 0..500),
            |i, partial: &mut i64, is_final| {
                *partial += 1;
                if is_final && *i == 499 {
                    panic!("{}", format!("scan failed after {}", *partial));
                }
            },
        );
        panicked(result, "scan-explode", "scan failed after 500")?;
        usable(space)
    })
}

/// Panics in MDRange and team kernels are `KernelPanicked` too.
pub fn panic_in_mdrange_and_team_kernels_becomes_kernel_panicked<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let result = parallel_for(
            "md-explode",
            MDRangePolicy::new(space.clone(), [0, 0], [9, 9]).with_tiles([2, 4]),
            |ij| {
                let [i, j] = *ij;
                if i == 7 && j == 1 {
                    panic!("point {i},{j}");
                }
            },
        );
        panicked(result, "md-explode", "point 7,1")?;
        usable(space)?;
        let result = parallel_reduce(
            "team-explode",
            TeamPolicy::new(space.clone(), 9, 1),
            |m, acc: &mut usize| {
                if m.league_rank() == 4 {
                    panic!("team {} failed", m.league_rank());
                }
                *acc += 1;
            },
            Sum::new(),
        );
        panicked(result, "team-explode", "team 4 failed")?;
        usable(space)
    })
}

/// A panic in a nested range, and a bad nested range (begin after end), are
/// `KernelPanicked` of the enclosing launch.
pub fn panic_in_nested_range_becomes_kernel_panicked<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let result = parallel_reduce(
            "nested-explode",
            TeamPolicy::new(space.clone(), 3, 1),
            |m, acc: &mut usize| {
                *acc += TeamThreadRange::new(m, 4).parallel_reduce(
                    |j, s: &mut usize| {
                        assert!(*j < 3, "index {} is too large", *j);
                        *s += *j;
                    },
                    Sum::new(),
                );
            },
            Sum::new(),
        );
        panicked(result, "nested-explode", "index 3 is too large")?;
        usable(space)?;
        let result = parallel_for("bad-nested", TeamPolicy::new(space.clone(), 2, 1), |m| {
            let (begin, end) = (5, 3 + m.team_rank());
            TeamThreadRange::new(m, begin..end).parallel_for(|_| {});
        });
        panicked(
            result,
            "bad-nested",
            "TeamThreadRange: begin 5 is greater than end 3; a nested range needs begin <= end",
        )?;
        usable(space)
    })
}

/// A panic whose payload is not a string reads "non-string panic payload".
pub fn non_string_payload_is_reported<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let result = parallel_for("payload", RangePolicy::new(space.clone(), 0..3), |i| {
            if *i == 2 {
                std::panic::panic_any(42u32);
            }
        });
        panicked(result, "payload", "non-string panic payload")?;
        usable(space)
    })
}

/// A panic payload whose own `Drop` panics is reported like any other: the second panic does
/// not escape the launch, and no thread of the space is lost (a team of the largest size
/// still meets in its barriers).
pub fn payload_that_panics_when_dropped_is_contained<S: FullSpace>(space: &S) -> Outcome {
    /// Panics again when the runtime drops it.
    struct PanicsWhenDropped;
    impl Drop for PanicsWhenDropped {
        fn drop(&mut self) {
            panic!("the payload's drop panicked");
        }
    }
    check(axiom!(), || {
        for n in [1, 7, 1000] {
            let result = parallel_for("nasty", RangePolicy::new(space.clone(), 0..n), |_| {
                std::panic::panic_any(PanicsWhenDropped);
            });
            panicked(result, "nasty", "non-string panic payload")?;
        }
        let team = space.max_team_size().clamp(1, 64);
        let result = parallel_for("nasty-team", TeamPolicy::new(space.clone(), 3, team), |m| {
            if m.league_rank() == 1 {
                std::panic::panic_any(PanicsWhenDropped);
            }
        });
        panicked(result, "nasty-team", "non-string panic payload")?;
        let members = parallel_reduce(
            "whole team",
            TeamPolicy::new(space.clone(), 2, team),
            |m, acc: &mut usize| *acc += m.team_reduce(&Sum::<usize>::new(), 1),
            Sum::new(),
        )?;
        ensure_eq!(
            members,
            2 * team * team,
            "team members meeting after the payload panicked"
        );
        usable(space)
    })
}

/// After many panicking launches in a row, the space still runs every pattern.
pub fn space_stays_usable_after_a_panic<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for round in 0..5 {
            let result = parallel_for("again", RangePolicy::new(space.clone(), 0..64), |i| {
                if *i % 16 == 3 {
                    panic!("round {round}");
                }
            });
            ensure!(
                matches!(result, Err(Error::KernelPanicked { .. })),
                "round {round}: a panicking launch returned {result:?}"
            );
        }
        usable(space)?;
        usable(&S::default())
    })
}
