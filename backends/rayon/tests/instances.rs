//! Instances: identity, partitions, fences, `in_parallel`, nested launches, panics and unique
//! tokens.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use hoplite_core::{
    Error, ExecutionSpace, MDRangePolicy, RangePolicy, Schedule, Sum, TeamMember, TeamPolicy,
    TeamThreadRange, UniqueToken, UniqueTokenSpace, parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_rayon::{RayonGlobalToken, RayonSpace, RayonTeamMember};

static_assertions::assert_impl_all!(RayonSpace: Send, Sync, Clone, Default, PartialEq, std::fmt::Debug, ExecutionSpace, UniqueTokenSpace);
static_assertions::assert_impl_all!(RayonGlobalToken: Send, Sync, Clone, UniqueToken);
static_assertions::assert_not_impl_any!(RayonTeamMember<'static>: Sync);

fn pools() -> &'static [RayonSpace; 3] {
    static POOLS: OnceLock<[RayonSpace; 3]> = OnceLock::new();
    POOLS.get_or_init(|| [1, 2, 3].map(|n| RayonSpace::with_threads(n).expect("a pool")))
}

/// Spins until `cond` holds; panics after 10 seconds (a test failure instead of a hang).
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn instances_are_values_with_identity() {
    let a = RayonSpace::with_threads(2).expect("pool");
    let b = a.clone();
    assert_eq!(a, b);
    assert_eq!(a.instance_id(), b.instance_id());
    assert_ne!(a, RayonSpace::with_threads(2).expect("pool"));
    assert_eq!(RayonSpace::default(), RayonSpace::default());
    assert!(RayonSpace::default().is_default_instance() && !a.is_default_instance());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(RayonSpace::default().concurrency(), cores);
    assert_eq!(RayonSpace::with_threads(0).expect("pool").concurrency(), cores);
    assert_eq!(a.name(), "Rayon");
    assert_eq!(
        (
            a.max_vector_length(),
            a.max_scratch_size(0),
            a.max_scratch_size(7)
        ),
        (1, 1 << 20, 0)
    );
    let mut out = Vec::new();
    a.print_configuration(&mut out, false).expect("print");
    assert!(String::from_utf8(out).expect("utf8").contains("2 threads"));
    // Short-lived instances start and stop their threads cleanly.
    for n in 1..=4 {
        let s = RayonSpace::with_threads(n).expect("pool");
        let total = parallel_reduce(
            "tmp",
            RangePolicy::new(s, 0..100),
            |i, a| *a += *i,
            Sum::<usize>::new(),
        );
        assert_eq!(total, Ok(4950));
    }
}

#[test]
fn every_thread_of_the_pool_takes_part() {
    for space in pools() {
        let threads = Mutex::new(HashSet::new());
        let want = space.concurrency();
        // Each iteration waits (bounded) until every thread of the pool has run one: on a
        // loaded machine a worker may start late, and the others would otherwise finish the
        // range before it takes a chunk. A pool that never hands its other threads any work
        // still fails, after the bound.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        parallel_for("who", RangePolicy::new(space.clone(), 0..want * 64), |_| {
            let seen = {
                let mut set = threads.lock().expect("not poisoned");
                set.insert(std::thread::current().id());
                set.len()
            };
            if seen < want {
                while threads.lock().expect("not poisoned").len() < want
                    && std::time::Instant::now() < deadline
                {
                    std::thread::yield_now();
                }
            }
        })
        .expect("launch");
        assert_eq!(
            threads.lock().expect("not poisoned").len(),
            space.concurrency(),
            "{space:?}"
        );
    }
}

#[test]
fn in_parallel_is_true_exactly_inside_kernels_of_the_instance() {
    let other = RayonSpace::with_threads(2).expect("pool");
    for space in pools() {
        assert!(!space.in_parallel());
        let inside = AtomicUsize::new(0);
        let n = 50;
        for schedule in [Schedule::Static, Schedule::Dynamic] {
            inside.store(0, Ordering::Relaxed);
            parallel_for(
                "inside",
                RangePolicy::new(space.clone(), 0..n).with_schedule(schedule),
                |_| {
                    if space.in_parallel() && !other.in_parallel() {
                        inside.fetch_add(1, Ordering::Relaxed);
                    }
                },
            )
            .expect("launch");
            assert_eq!(inside.load(Ordering::Relaxed), n);
        }
        parallel_for(
            "team",
            TeamPolicy::new(space.clone(), 3, space.concurrency()),
            |_| {
                assert!(space.in_parallel());
            },
        )
        .expect("team launch");
        assert!(!space.in_parallel());
    }
}

#[test]
fn nested_launches_run_inline_without_deadlock() {
    for space in pools() {
        let n = 40;
        let inner_total = AtomicUsize::new(0);
        parallel_for("outer", RangePolicy::new(space.clone(), 0..n), |i| {
            let s = parallel_reduce(
                "inner",
                RangePolicy::new(space.clone(), 0..*i + 1).with_deterministic_reduction(*i % 2 == 0),
                |j, acc| *acc += *j,
                Sum::<usize>::new(),
            )
            .expect("nested reduce");
            let hits = AtomicUsize::new(0);
            parallel_for(
                "inner for",
                RangePolicy::new(space.clone(), 0..10).with_schedule(Schedule::Dynamic),
                |_| {
                    hits.fetch_add(1, Ordering::Relaxed);
                },
            )
            .expect("nested for");
            let scanned: usize =
                parallel_scan("inner scan", RangePolicy::new(space.clone(), 0..5), |j, p, _| {
                    *p += *j;
                })
                .expect("nested scan");
            let md = parallel_reduce(
                "inner md",
                MDRangePolicy::new(space.clone(), [0, 0], [3, 4]),
                |_, a| *a += 1,
                Sum::<usize>::new(),
            )
            .expect("nested md");
            assert_eq!((hits.load(Ordering::Relaxed), scanned, md), (10, 10, 12));
            // A nested team launch with the instance's full team size gets helper threads,
            // so its barrier and collectives work.
            let team = space.concurrency();
            let team_sum = parallel_reduce(
                "inner team",
                TeamPolicy::new(space.clone(), 2, team),
                |m, acc: &mut usize| {
                    m.team_barrier();
                    let row: usize =
                        TeamThreadRange::new(m, 6).parallel_reduce(|k, s: &mut usize| *s += *k, Sum::new());
                    let count = m.team_reduce(&Sum::new(), 1);
                    if m.team_rank() == 0 {
                        *acc += row + count;
                    }
                },
                Sum::new(),
            )
            .expect("nested team");
            assert_eq!(team_sum, 2 * (15 + team));
            inner_total.fetch_add(s, Ordering::Relaxed);
        })
        .expect("outer launch");
        let expected: usize = (0..n).map(|i| i * (i + 1) / 2).sum();
        assert_eq!(inner_total.load(Ordering::Relaxed), expected, "{space:?}");
        // The fence inside a kernel returns at once; outside it sees everything done.
        parallel_for("fence inside", RangePolicy::new(space.clone(), 0..3), |_| {
            space.fence().expect("fence inside a kernel");
        })
        .expect("launch");
        space.fence().expect("fence");
    }
}

/// Threads started by a kernel, and rayon workers running a kernel's parallel iterator, launch
/// on and fence the instance the kernel runs on: they must not wait for the running launch,
/// which waits for them.
#[test]
fn threads_working_for_a_kernel_never_wait_for_its_launch() {
    use rayon::prelude::*;
    let gauss = |n: usize| n * n.saturating_sub(1) / 2;
    for space in pools() {
        let total = parallel_reduce(
            "outer",
            RangePolicy::new(space.clone(), 0..4),
            |i, acc: &mut usize| {
                let i = *i;
                let from_thread = std::thread::scope(|s| {
                    s.spawn(|| {
                        space.fence().expect("fence from a thread of the kernel");
                        parallel_reduce(
                            "from a thread of the kernel",
                            RangePolicy::new(space.clone(), 0..10 + i),
                            |j, a| *a += *j,
                            Sum::<usize>::new(),
                        )
                        .expect("launch from a thread of the kernel")
                    })
                    .join()
                    .expect("the kernel's thread")
                });
                let from_rayon: usize = space.install(|| {
                    (0..8usize)
                        .into_par_iter()
                        .map(|j| {
                            space.fence().expect("fence from a rayon worker");
                            parallel_reduce(
                                "from a rayon worker",
                                RangePolicy::new(space.clone(), 0..j),
                                |k, a| *a += *k,
                                Sum::<usize>::new(),
                            )
                            .expect("launch from a rayon worker")
                        })
                        .sum()
                });
                *acc += from_thread + from_rayon;
            },
            Sum::<usize>::new(),
        )
        .expect("outer launch");
        let per_rayon: usize = (0..8).map(gauss).sum();
        let expected: usize = (0..4).map(|i| gauss(10 + i) + per_rayon).sum();
        assert_eq!(total, expected, "{space:?}");
    }
}

#[test]
fn launches_from_inside_kernels_of_another_instance() {
    let (a, b) = (
        RayonSpace::with_threads(2).expect("a"),
        RayonSpace::with_threads(3).expect("b"),
    );
    let total = parallel_reduce(
        "a",
        RangePolicy::new(a.clone(), 0..20),
        |i, acc| {
            *acc += parallel_reduce(
                "b",
                RangePolicy::new(b.clone(), 0..*i),
                |j, s| *s += *j,
                Sum::<usize>::new(),
            )
            .expect("launch on b inside a");
        },
        Sum::<usize>::new(),
    )
    .expect("launch on a");
    assert_eq!(
        total,
        (0..20).map(|i: usize| i * i.saturating_sub(1) / 2).sum::<usize>()
    );
}

/// Every kind of launch panics on one index (on a worker where there is one); the error names
/// the panic, and the next launch on the pool gives the right value.
#[test]
fn panics_reach_the_caller_and_the_pool_stays_usable() {
    for space in pools() {
        let n = 1000;
        let last = n - 1; // in the last thread's share: a worker thread where there is one
        let check_next = || {
            let sum = parallel_reduce(
                "next",
                RangePolicy::new(space.clone(), 0..n),
                |i, a| *a += *i,
                Sum::<usize>::new(),
            );
            assert_eq!(sum, Ok(n * (n - 1) / 2), "{space:?}");
        };
        let is_boom = |e: Error, label: &str| match e {
            Error::KernelPanicked { label: l, message } => {
                assert_eq!(l, label);
                assert!(message.contains("boom"), "{message}");
            }
            other => panic!("expected KernelPanicked, got {other}"),
        };
        for schedule in [Schedule::Static, Schedule::Dynamic] {
            let r = parallel_for(
                "for",
                RangePolicy::new(space.clone(), 0..n).with_schedule(schedule),
                |i| {
                    assert!(*i != last, "boom at {}", *i);
                },
            );
            is_boom(r.expect_err("for panics"), "for");
            check_next();
            let r = parallel_reduce(
                "reduce",
                RangePolicy::new(space.clone(), 0..n).with_schedule(schedule),
                |i, a| {
                    assert!(*i != last, "boom");
                    *a += 1;
                },
                Sum::<usize>::new(),
            );
            is_boom(r.expect_err("reduce panics"), "reduce");
            check_next();
        }
        let r = parallel_reduce(
            "det",
            RangePolicy::new(space.clone(), 0..20_000).with_deterministic_reduction(true),
            |i, a| {
                assert!(*i != 19_999, "boom");
                *a += 1.0;
            },
            Sum::<f64>::new(),
        );
        is_boom(r.expect_err("deterministic reduce panics"), "det");
        let r: Result<i64, Error> =
            parallel_scan("scan", RangePolicy::new(space.clone(), 0..n), |i, p, is_final| {
                assert!(!(is_final && *i == last), "boom");
                *p += 1;
            });
        is_boom(r.expect_err("scan panics"), "scan");
        check_next();
        let r = parallel_for("md", MDRangePolicy::new(space.clone(), [0, 0], [30, 30]), |p| {
            assert!(p[0] != 29, "boom");
        });
        is_boom(r.expect_err("md panics"), "md");
        check_next();
    }
}

#[test]
fn a_panicking_team_thread_releases_its_team_from_barriers() {
    for space in pools() {
        for team in 1..=space.concurrency() {
            let bad_rank = team - 1; // a non-zero rank whenever the team has more than one thread
            for collective in 0..4 {
                let r = parallel_for("team", TeamPolicy::new(space.clone(), 6, team), |m| {
                    if m.league_rank() == 3 && m.team_rank() == bad_rank {
                        panic!("boom in team rank {bad_rank}");
                    }
                    // The other threads of the team wait for the panicking one here.
                    match collective {
                        0 => m.team_barrier(),
                        1 => {
                            let _ = m.team_broadcast(1u8, 0);
                        }
                        2 => {
                            let _ = m.team_reduce(&Sum::<u32>::new(), 1);
                        }
                        _ => {
                            let _ = TeamThreadRange::new(m, 10).parallel_scan(|j, p: &mut usize, _| *p += *j);
                        }
                    }
                });
                match r.expect_err("team panics") {
                    Error::KernelPanicked { message, .. } => {
                        assert!(message.contains("boom in team rank"), "{message}");
                    }
                    other => panic!("expected KernelPanicked, got {other}"),
                }
                // The pool runs the next team launch normally.
                let sum = parallel_reduce(
                    "after",
                    TeamPolicy::new(space.clone(), 6, team),
                    |m, acc: &mut usize| {
                        m.team_barrier();
                        *acc += m.team_reduce(&Sum::<usize>::new(), 1);
                    },
                    Sum::new(),
                );
                assert_eq!(sum, Ok(6 * team * team), "{space:?} team {team}");
            }
        }
    }
}

#[test]
fn mismatched_collectives_are_reported_not_undefined() {
    let space = RayonSpace::with_threads(2).expect("pool");
    let r = parallel_for("mismatch", TeamPolicy::new(space.clone(), 1, 2), |m| {
        if m.team_rank() == 0 {
            let _ = m.team_broadcast(1u64, 0);
        } else {
            let _ = m.team_reduce(&Sum::<u32>::new(), 1);
        }
    });
    match r.expect_err("mismatched collectives") {
        Error::KernelPanicked { message, .. } => {
            assert!(
                message.contains("same collectives in the same order"),
                "{message}"
            )
        }
        other => panic!("expected KernelPanicked, got {other}"),
    }
    let r = parallel_for(
        "barrier vs broadcast",
        TeamPolicy::new(space.clone(), 1, 2),
        |m| {
            if m.team_rank() == 0 {
                m.team_barrier();
                m.team_barrier();
            } else {
                // Reads rank 0's slot, which rank 0 never filled for this barrier.
                let _ = m.team_broadcast(1u64, 0);
            }
        },
    );
    match r.expect_err("broadcast against barriers") {
        Error::KernelPanicked { message, .. } => assert!(message.contains("did not join"), "{message}"),
        other => panic!("expected KernelPanicked, got {other}"),
    }
    // Rank 0 fails reading rank 1's slot and leaves; rank 1, the source of its own later
    // broadcast, must not wait for rank 0 forever at the end of that broadcast.
    let r = parallel_for("source waits alone", TeamPolicy::new(space.clone(), 1, 2), |m| {
        if m.team_rank() == 1 {
            m.team_barrier();
        }
        let _ = m.team_broadcast(7u64, 1);
    });
    match r.expect_err("broadcasts in different orders") {
        Error::KernelPanicked { message, .. } => assert!(message.contains("did not join"), "{message}"),
        other => panic!("expected KernelPanicked, got {other}"),
    }
    // Two closures of one function share a type name, size and alignment; rank 1 must not
    // read rank 0's closure (capturing a number) as its own (capturing a `Box`).
    let r = parallel_for("closures", TeamPolicy::new(space.clone(), 1, 2), |m| {
        if m.team_rank() == 0 {
            let number = 0x10usize;
            let f = m.team_broadcast(move || number, 0);
            assert_eq!(f(), 0x10);
        } else {
            let boxed = Box::new(5usize);
            let f = m.team_broadcast(move || *boxed, 0);
            assert_eq!(f(), 5);
        }
    });
    match r.expect_err("closures of different types") {
        Error::KernelPanicked { message, .. } => {
            assert!(
                message.contains("same collectives in the same order"),
                "{message}"
            )
        }
        other => panic!("expected KernelPanicked, got {other}"),
    }
    let ok = parallel_reduce(
        "after",
        TeamPolicy::new(space, 3, 2),
        |m, a: &mut usize| *a += m.team_reduce(&Sum::<usize>::new(), 1),
        Sum::new(),
    );
    assert_eq!(ok, Ok(12));
}

#[test]
fn partitions_have_the_right_sizes_and_run_concurrently() {
    let parent = RayonSpace::with_threads(3).expect("pool");
    let parts = parent.partition_space(2).expect("partition");
    assert_eq!(
        parts.iter().map(ExecutionSpace::concurrency).collect::<Vec<_>>(),
        [2, 1]
    );
    assert!(parts.iter().all(|p| *p != parent) && parts[0] != parts[1]);
    let weighted = parent.partition_space_weighted(&[1.0, 2.0]).expect("weighted");
    assert_eq!(
        weighted
            .iter()
            .map(ExecutionSpace::concurrency)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(parent.partition_space(0).expect("empty").is_empty());
    assert_eq!(parent.partition_space(5).expect("oversubscribed").len(), 5);

    // Each partition's kernel waits until the other partition's kernel is running: this only
    // finishes if the two launches really run at the same time.
    let running = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for part in &parts {
            let running = &running;
            s.spawn(move || {
                parallel_for("rendezvous", RangePolicy::new(part.clone(), 0..1), |_| {
                    running.fetch_add(1, Ordering::SeqCst);
                    wait_for("the other partition", || running.load(Ordering::SeqCst) >= 2);
                })
                .expect("partition launch");
                let sum = parallel_reduce(
                    "sum",
                    RangePolicy::new(part.clone(), 0..1000),
                    |i, a| *a += *i,
                    Sum::<usize>::new(),
                );
                assert_eq!(sum, Ok(499_500));
            });
        }
    });
}

#[test]
fn concurrent_launches_on_one_instance_are_serialized_and_fenced() {
    let space = RayonSpace::with_threads(2).expect("pool");
    let started = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            parallel_for("slow", RangePolicy::new(space.clone(), 0..2), |i| {
                if *i == 0 {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                    finished.store(true, Ordering::SeqCst);
                }
            })
            .expect("slow launch");
        });
        wait_for("the slow kernel", || started.load(Ordering::SeqCst));
        space.fence().expect("fence");
        assert!(
            finished.load(Ordering::SeqCst),
            "fence returned before the launch in flight finished"
        );
    });
    // Many threads launching on one instance at once all get right results.
    std::thread::scope(|s| {
        for t in 0..4usize {
            let space = &space;
            s.spawn(move || {
                for k in 0..50 {
                    let n = 100 + t * 10 + k;
                    let sum = parallel_reduce(
                        "many",
                        RangePolicy::new(space.clone(), 0..n),
                        |i, a| *a += *i,
                        Sum::<usize>::new(),
                    );
                    assert_eq!(sum, Ok(n * (n - 1) / 2));
                }
            });
        }
    });
}

/// Holders of one token never share an id: each id has an occupancy counter that must go
/// from 0 to 1 on acquire.
fn check_token_use<T: UniqueToken>(token: &T, held: &[AtomicU32]) {
    let g = token.guard();
    assert!(*g < token.size(), "id {} out of range {}", *g, token.size());
    assert_eq!(held[*g].fetch_add(1, Ordering::SeqCst), 0, "id {} shared", *g);
    std::hint::spin_loop();
    held[*g].fetch_sub(1, Ordering::SeqCst);
}

#[test]
fn unique_tokens_stay_in_range_and_are_never_shared() {
    // Instance scope: a lock-free pool of `concurrency` ids.
    for space in pools() {
        let token = space.unique_token();
        assert_eq!(token.size(), space.concurrency());
        let held: Vec<AtomicU32> = (0..token.size()).map(|_| AtomicU32::new(0)).collect();
        for schedule in [Schedule::Static, Schedule::Dynamic] {
            parallel_for(
                "instance tokens",
                RangePolicy::new(space.clone(), 0..5000).with_schedule(schedule),
                |_| {
                    check_token_use(&token, &held);
                },
            )
            .expect("launch");
        }
        assert_eq!(token.live(), 0);
        assert!(matches!(
            space.unique_token_with_size(0),
            Err(Error::InvalidTokenSize { requested: 0, .. })
        ));
        assert_eq!(space.unique_token_with_size(7).map(|t| t.size()), Ok(7));
    }

    // Global scope: `2 * g` ids, `g` = the default instance's threads.
    let global = RayonSpace::global_unique_token();
    let default = RayonSpace::default();
    let g = default.concurrency();
    assert_eq!(global.size(), 2 * g);
    // On the default instance a pool thread gets its own index: the launching thread is
    // thread 0 (index 0 is in its share), the last worker is thread g - 1.
    let n = 100 * g;
    let ids: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(usize::MAX)).collect();
    parallel_for("pool index", RangePolicy::new(default.clone(), 0..n), |i| {
        let id = global.acquire();
        ids[*i].store(id, Ordering::Relaxed);
        global.release(id);
    })
    .expect("launch");
    assert_eq!(ids[0].load(Ordering::Relaxed), 0);
    assert_eq!(ids[n - 1].load(Ordering::Relaxed), g - 1);
    // A second id on the same thread is a different one.
    parallel_for("two ids", RangePolicy::new(default.clone(), 0..g), |_| {
        let a = global.guard();
        let b = global.guard();
        assert_ne!(*a, *b);
    })
    .expect("launch");

    // Concurrent holders everywhere: the default pool (static and dynamic), other instances,
    // and plain application threads, all at once.
    let held: Vec<AtomicU32> = (0..global.size()).map(|_| AtomicU32::new(0)).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            for schedule in [Schedule::Static, Schedule::Dynamic] {
                parallel_for(
                    "default",
                    RangePolicy::new(default.clone(), 0..3000).with_schedule(schedule),
                    |_| {
                        check_token_use(&global, &held);
                    },
                )
                .expect("default launch");
            }
        });
        s.spawn(|| {
            parallel_for("other", RangePolicy::new(pools()[1].clone(), 0..3000), |_| {
                check_token_use(&global, &held);
            })
            .expect("other launch");
        });
        s.spawn(|| {
            for _ in 0..3000 {
                check_token_use(&global, &held);
            }
        });
    });
    let released = global.try_acquire().expect("ids are free again");
    global.release(released);
    assert!(
        std::panic::catch_unwind(|| global.release(released)).is_err(),
        "double release is caught"
    );
    assert!(std::panic::catch_unwind(|| global.release(global.size())).is_err());
}

/// Asking for more threads than an instance may have is a typed error that starts nothing;
/// the limit itself is still a working instance size.
#[test]
fn too_many_threads_is_a_typed_error() {
    let limit = hoplite_rayon::max_threads();
    for requested in [limit + 1, usize::MAX] {
        match RayonSpace::with_threads(requested) {
            Err(
                err @ Error::ThreadsUnavailable {
                    space,
                    requested: r,
                    started,
                    ..
                },
            ) => {
                assert_eq!((space, r, started), ("Rayon", requested, 0));
                let msg = err.to_string();
                assert!(
                    msg.contains(&requested.to_string()) && msg.contains("ask for fewer threads"),
                    "{msg}"
                );
            }
            other => panic!("{requested} threads gave {other:?}"),
        }
    }
    // The space stays usable: a small instance after the refusals works.
    let two = RayonSpace::with_threads(2).expect("two threads");
    let sum = parallel_reduce(
        "after",
        RangePolicy::new(two, 0..100),
        |i, a: &mut usize| *a += *i,
        Sum::new(),
    )
    .expect("launch");
    assert_eq!(sum, 4950);
}
