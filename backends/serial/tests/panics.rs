//! Panicking kernels and nested launches on the serial backend: a panic comes back as
//! `Error::KernelPanicked` with the label and message, and the space stays usable.
//!
//! The default panic hook is left in place (these tests print the panic messages), so other
//! tests running in parallel in this binary are not affected.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionSpace, MDRangePolicy, RangePolicy, Sum, TeamMember, TeamPolicy, TeamThreadRange,
    parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_serial::Serial;

fn expect_panicked(err: Error, label: &str, message: &str) {
    match &err {
        Error::KernelPanicked { label: l, message: m } => {
            assert_eq!(l, label);
            assert_eq!(m, message);
        }
        other => panic!("expected KernelPanicked, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("`{label}`")) && text.contains(message),
        "{text}"
    );
}

/// After a failed launch: not in a kernel, and the next launch on the same space works.
fn assert_space_usable(space: Serial) {
    assert!(!space.in_parallel());
    assert!(!Serial::default().in_parallel());
    let sum = parallel_reduce(
        "after",
        RangePolicy::new(space.clone(), 0..10),
        |i, a| *a += *i,
        Sum::<usize>::new(),
    )
    .expect("the next launch works");
    assert_eq!(sum, 45);
    space.fence().expect("fence after a panic");
}

#[test]
fn panic_in_parallel_for() {
    let space = Serial::default();
    let ran = AtomicUsize::new(0);
    let err = parallel_for("explode", RangePolicy::new(space.clone(), 0..10), |i| {
        assert!(space.in_parallel());
        if *i == 3 {
            panic!("boom at {}", *i);
        }
        ran.fetch_add(1, Ordering::Relaxed);
    })
    .expect_err("the kernel panics");
    expect_panicked(err, "explode", "boom at 3");
    // The serial backend runs in order, so indices 0..3 ran and nothing after.
    assert_eq!(ran.into_inner(), 3);
    assert_space_usable(space);
}

#[test]
fn panic_in_parallel_reduce() {
    let space = Serial::new();
    let err = parallel_reduce(
        "reduce-explode",
        RangePolicy::new(space.clone(), 0..100),
        |i, acc: &mut f64| {
            if *i == 57 {
                panic!("bad element");
            }
            *acc += 1.0;
        },
        Sum::new(),
    )
    .expect_err("the kernel panics");
    expect_panicked(err, "reduce-explode", "bad element");
    assert_space_usable(space);
}

#[test]
fn panic_in_parallel_scan() {
    let space = Serial::default();
    let err = parallel_scan(
        "scan-explode",
        RangePolicy::new(space.clone(), 0..20),
        |i, partial: &mut i64, _| {
            *partial += 1;
            if *i == 19 {
                panic!("{}", format!("scan failed after {}", *partial));
            }
        },
    )
    .expect_err("the kernel panics");
    expect_panicked(err, "scan-explode", "scan failed after 20");
    assert_space_usable(space);
}

#[test]
fn panic_in_team_and_mdrange_kernels() {
    let space = Serial::default();
    let err = parallel_for("team-explode", TeamPolicy::new(space.clone(), 5, 1), |m| {
        assert!(Serial::default().in_parallel());
        if m.league_rank() == 4 {
            panic!("team {} failed", m.league_rank());
        }
    })
    .expect_err("the kernel panics");
    expect_panicked(err, "team-explode", "team 4 failed");
    assert_space_usable(space.clone());

    let err = parallel_reduce(
        "team-reduce-explode",
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
    )
    .expect_err("the nested kernel panics");
    expect_panicked(err, "team-reduce-explode", "index 3 is too large");
    assert_space_usable(space.clone());

    let err = parallel_for(
        "md-explode",
        MDRangePolicy::new(space.clone(), [0, 0], [3, 3]),
        |ij| {
            let [i, j] = *ij;
            if i == 2 && j == 1 {
                panic!("point {i},{j}");
            }
        },
    )
    .expect_err("the kernel panics");
    expect_panicked(err, "md-explode", "point 2,1");
    assert_space_usable(space);
}

#[test]
fn non_string_payload() {
    let err = parallel_for("payload", RangePolicy::new(Serial::default(), 0..1), |_| {
        std::panic::panic_any(42u32);
    })
    .expect_err("the kernel panics");
    expect_panicked(err, "payload", "non-string panic payload");
    assert_space_usable(Serial::default());
}

#[test]
fn in_parallel_is_true_exactly_inside_kernels() {
    let space = Serial::default();
    assert!(!space.in_parallel());
    let inside = AtomicBool::new(false);
    parallel_for("probe", RangePolicy::new(space.clone(), 0..1), |_| {
        inside.store(space.in_parallel(), Ordering::Relaxed);
    })
    .expect("probe launches");
    assert!(inside.into_inner());
    let in_reduce = parallel_reduce(
        "probe-reduce",
        RangePolicy::new(space.clone(), 0..4),
        |_, acc: &mut bool| *acc = *acc && Serial::new().in_parallel(),
        hoplite_core::LAnd::new(),
    )
    .expect("probe-reduce launches");
    assert!(in_reduce, "in_parallel is per thread, for every serial instance");
    let in_scan: u32 = parallel_scan(
        "probe-scan",
        RangePolicy::new(space.clone(), 0..4),
        |_, p: &mut u32, _| {
            *p += u32::from(space.in_parallel());
        },
    )
    .expect("probe-scan launches");
    assert_eq!(in_scan, 4);
    assert!(!space.in_parallel());

    // Another thread is not inside the kernel running on this one.
    let other_thread = AtomicBool::new(true);
    parallel_for("probe-thread", RangePolicy::new(space, 0..1), |_| {
        std::thread::scope(|s| {
            s.spawn(|| other_thread.store(Serial::default().in_parallel(), Ordering::Relaxed));
        });
    })
    .expect("probe-thread launches");
    assert!(!other_thread.into_inner());
}

#[test]
fn nested_launches_work() {
    let space = Serial::default();
    let cells: Vec<AtomicUsize> = (0..4 * 5).map(|_| AtomicUsize::new(0)).collect();
    let inner_flags = Mutex::new(Vec::new());
    parallel_for("outer", RangePolicy::new(space.clone(), 0..4), |i| {
        let i = *i;
        parallel_for("inner", RangePolicy::new(Serial::default(), 0..5), |j| {
            inner_flags
                .lock()
                .expect("not poisoned")
                .push(space.in_parallel());
            cells[i * 5 + *j].fetch_add(i * 10 + *j + 1, Ordering::Relaxed);
        })
        .expect("the inner launch works");
        // Still inside the outer kernel after the inner one returned.
        assert!(space.in_parallel());
    })
    .expect("the outer launch works");
    assert!(!space.in_parallel());
    for i in 0..4 {
        for j in 0..5 {
            assert_eq!(cells[i * 5 + j].load(Ordering::Relaxed), i * 10 + j + 1);
        }
    }
    let flags = inner_flags.into_inner().expect("not poisoned");
    assert_eq!(flags.len(), 20);
    assert!(flags.into_iter().all(|f| f));

    // A nested reduction inside a reduction.
    let total = parallel_reduce(
        "outer-reduce",
        RangePolicy::new(space.clone(), 1..5),
        |i, acc: &mut usize| {
            let n = *i;
            *acc += parallel_reduce(
                "inner-reduce",
                RangePolicy::new(space.clone(), 0..n),
                |j, a: &mut usize| *a += *j,
                Sum::new(),
            )
            .expect("the inner reduction works");
        },
        Sum::new(),
    )
    .expect("the outer reduction works");
    assert_eq!(total, 1 + 3 + 6); // 0..1, 0..2, 0..3, 0..4
}

#[test]
fn a_panicking_nested_launch_leaves_the_outer_kernel_running() {
    let space = Serial::default();
    let results = Mutex::new(Vec::new());
    parallel_for("outer-ok", RangePolicy::new(space.clone(), 0..3), |i| {
        let i = *i;
        let inner = parallel_for("inner-bad", RangePolicy::new(space.clone(), 0..2), |j| {
            if i == 1 && *j == 1 {
                panic!("inner {} {}", 1, 1);
            }
        });
        // The failed inner launch restored the depth to the outer kernel's.
        results
            .lock()
            .expect("not poisoned")
            .push((i, inner, space.in_parallel()));
    })
    .expect("the outer kernel does not panic");
    let results = results.into_inner().expect("not poisoned");
    assert_eq!(results.len(), 3);
    for (i, inner, in_parallel) in results {
        assert!(in_parallel, "still inside the outer kernel at {i}");
        if i == 1 {
            expect_panicked(
                inner.expect_err("the inner launch panicked"),
                "inner-bad",
                "inner 1 1",
            );
        } else {
            inner.expect("the inner launch works");
        }
    }
    assert_space_usable(space);
}
