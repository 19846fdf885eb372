//! Team policies on the serial backend: ranks, collectives, nested ranges, scratch memory and
//! the conversions from range policies.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionSpace, MDRangePolicy, Max, MinLoc, PerTeam, PerThread, RangePolicy, ScratchElement, Sum,
    TeamMember, TeamPolicy, TeamSize, TeamThreadRange, TeamVectorRange, ThreadVectorRange, ValLoc,
    parallel_for, parallel_reduce,
};
use hoplite_serial::{MAX_SCRATCH_LEVEL0, Serial, SerialTeamMember};

fn teams(league: usize) -> TeamPolicy<Serial> {
    TeamPolicy::new(Serial::default(), league, TeamSize::Auto)
}

#[test]
fn each_league_and_team_rank_is_seen_once() {
    for league in [0, 1, 7] {
        let policy = teams(league);
        assert_eq!(policy.league_size(), league);
        assert_eq!(policy.team_size(), 1);
        assert_eq!(policy.team_size_max(), 1);
        let seen = Mutex::new(Vec::new());
        parallel_for("ranks", policy, |m| {
            seen.lock().expect("not poisoned").push((
                m.league_rank(),
                m.team_rank(),
                m.league_size(),
                m.team_size(),
                m.vector_length(),
            ));
        })
        .expect("team launch succeeds");
        let mut seen = seen.into_inner().expect("not poisoned");
        seen.sort_unstable();
        let expected: Vec<_> = (0..league).map(|r| (r, 0, league, 1, 1)).collect();
        assert_eq!(seen, expected, "league {league}");
    }
    // A fixed team size of 1 behaves the same.
    let count = AtomicUsize::new(0);
    parallel_for("fixed", TeamPolicy::new(Serial::default(), 5, 1), |m| {
        count.fetch_add(m.league_rank() + 1, Ordering::Relaxed);
    })
    .expect("team launch succeeds");
    assert_eq!(count.into_inner(), 15);
}

#[test]
fn team_collectives_on_a_one_thread_team() {
    let results = Mutex::new(Vec::new());
    parallel_for("collectives", teams(4), |m| {
        let r = m.league_rank();
        let v = r as f64 + 0.5;
        m.team_barrier();
        let reduced = m.team_reduce(&Sum::<f64>::new(), v);
        let max = m.team_reduce(&Max::<i32>::new(), -(r as i32));
        let minloc = m.team_reduce(&MinLoc::<f64>::new(), ValLoc { val: v, loc: Some(r) });
        let scan_i = m.team_scan(r as i64 * 3 + 1);
        let scan_f = m.team_scan(v);
        let bcast = m.team_broadcast(format!("team {r}"), 0);
        results
            .lock()
            .expect("not poisoned")
            .push((r, reduced, max, minloc, scan_i, scan_f, bcast));
    })
    .expect("collectives launch");
    let mut results = results.into_inner().expect("not poisoned");
    results.sort_by_key(|x| x.0);
    assert_eq!(results.len(), 4);
    for (r, reduced, max, minloc, scan_i, scan_f, bcast) in results {
        let v = r as f64 + 0.5;
        assert_eq!(reduced, v);
        assert_eq!(max, -(r as i32));
        assert_eq!(minloc, ValLoc { val: v, loc: Some(r) });
        assert_eq!(scan_i, (0, r as i64 * 3 + 1));
        assert_eq!(scan_f, (0.0, v));
        assert_eq!(bcast, format!("team {r}"));
    }
}

#[test]
fn broadcast_from_a_missing_rank_is_a_kernel_panic() {
    let err = parallel_for("bad-broadcast", teams(2), |m| {
        let _ = m.team_broadcast(1u8, 1);
    })
    .expect_err("rank 1 does not exist in a one-thread team");
    match &err {
        Error::KernelPanicked { label, message } => {
            assert_eq!(label, "bad-broadcast");
            assert!(
                message.contains("source rank 1") && message.contains("team size 1"),
                "{message}"
            );
        }
        other => panic!("expected KernelPanicked, got {other:?}"),
    }
}

#[test]
fn nested_parallel_for_visits_each_index_once() {
    let (league, n) = (5, 13);
    let counts: Vec<AtomicUsize> = (0..3 * league * n).map(|_| AtomicUsize::new(0)).collect();
    let order = Mutex::new(Vec::new());
    parallel_for("nested-for", teams(league), |m| {
        let r = m.league_rank();
        TeamThreadRange::new(m, n).parallel_for(|j| {
            counts[r * n + *j].fetch_add(1, Ordering::Relaxed);
        });
        ThreadVectorRange::new(m, 0..n).parallel_for(|j| {
            counts[(league + r) * n + *j].fetch_add(1, Ordering::Relaxed);
        });
        TeamVectorRange::new(m, 2..n).parallel_for(|j| {
            counts[(2 * league + r) * n + *j].fetch_add(1, Ordering::Relaxed);
            order.lock().expect("not poisoned").push((r, *j));
        });
    })
    .expect("nested-for launches");
    for level in 0..3 {
        for r in 0..league {
            for j in 0..n {
                let want = usize::from(level < 2 || j >= 2);
                let got = counts[(level * league + r) * n + j].load(Ordering::Relaxed);
                assert_eq!(got, want, "level {level}, team {r}, index {j}");
            }
        }
    }
    // On the serial backend, nested indices come in increasing order within a team.
    let order = order.into_inner().expect("not poisoned");
    for r in 0..league {
        let js: Vec<usize> = order.iter().filter(|(t, _)| *t == r).map(|(_, j)| *j).collect();
        assert_eq!(js, (2..n).collect::<Vec<_>>());
    }
}

#[test]
fn nested_reduce_gives_per_team_row_sums() {
    let (league, n) = (6, 20);
    let row: Vec<AtomicU64> = (0..league).map(|_| AtomicU64::new(u64::MAX)).collect();
    let vector_row: Vec<AtomicU64> = (0..league).map(|_| AtomicU64::new(u64::MAX)).collect();
    let max_row: Vec<AtomicI64> = (0..league).map(|_| AtomicI64::new(i64::MIN)).collect();
    let total = parallel_reduce(
        "row-sums",
        teams(league),
        |m, acc: &mut u64| {
            let r = m.league_rank() as u64;
            let s = TeamThreadRange::new(m, n)
                .parallel_reduce(|j, s: &mut u64| *s += r * 100 + *j as u64, Sum::new());
            let v = ThreadVectorRange::new(m, 5..n)
                .parallel_reduce(|j, s: &mut u64| *s += r * 100 + *j as u64, Sum::new());
            let mx = TeamVectorRange::new(m, n).parallel_reduce(
                |j, s: &mut i64| *s = (*s).max(r as i64 * 100 - (*j as i64 - 7).abs()),
                Max::new(),
            );
            row[m.league_rank()].store(s, Ordering::Relaxed);
            vector_row[m.league_rank()].store(v, Ordering::Relaxed);
            max_row[m.league_rank()].store(mx, Ordering::Relaxed);
            if m.team_rank() == 0 {
                *acc += s;
            }
        },
        Sum::new(),
    )
    .expect("row-sums launches");
    let n64 = n as u64;
    for r in 0..league {
        let r64 = r as u64;
        let want: u64 = (0..n64).map(|j| r64 * 100 + j).sum();
        assert_eq!(row[r].load(Ordering::Relaxed), want, "row {r}");
        let want_v: u64 = (5..n64).map(|j| r64 * 100 + j).sum();
        assert_eq!(vector_row[r].load(Ordering::Relaxed), want_v, "vector row {r}");
        assert_eq!(max_row[r].load(Ordering::Relaxed), r as i64 * 100, "max row {r}");
    }
    let all: u64 = (0..league as u64)
        .flat_map(|r| (0..n64).map(move |j| r * 100 + j))
        .sum();
    assert_eq!(total, all);

    // An empty nested range reduces to the identity.
    let empty = parallel_reduce(
        "nested-empty",
        teams(3),
        |m, acc: &mut f64| {
            *acc += TeamThreadRange::new(m, 4..4).parallel_reduce(|_, s: &mut f64| *s += 1.0, Sum::new());
            *acc += TeamVectorRange::new(m, 0).parallel_reduce(|_, s: &mut f64| *s += 1.0, Sum::new());
        },
        Sum::new(),
    )
    .expect("nested-empty launches");
    assert_eq!(empty, 0.0);
}

#[test]
fn nested_scan_gives_per_team_prefix_sums() {
    let (league, n) = (4, 11);
    let exclusive: Vec<AtomicI64> = (0..league * n).map(|_| AtomicI64::new(i64::MIN)).collect();
    let inclusive: Vec<AtomicI64> = (0..league * n).map(|_| AtomicI64::new(i64::MIN)).collect();
    let totals: Vec<AtomicI64> = (0..3 * league).map(|_| AtomicI64::new(i64::MIN)).collect();
    let value = |r: usize, j: usize| (r * 10 + j) as i64 - 20;
    parallel_for("nested-scan", teams(league), |m| {
        let r = m.league_rank();
        let t1: i64 = TeamThreadRange::new(m, n).parallel_scan(|j, partial: &mut i64, is_final| {
            if is_final {
                exclusive[r * n + *j].store(*partial, Ordering::Relaxed);
            }
            *partial += value(r, *j);
        });
        let t2: i64 = ThreadVectorRange::new(m, n).parallel_scan(|j, partial: &mut i64, is_final| {
            *partial += value(r, *j);
            if is_final {
                inclusive[r * n + *j].store(*partial, Ordering::Relaxed);
            }
        });
        let t3: i64 = TeamVectorRange::new(m, 3..n).parallel_scan(|j, partial: &mut i64, _| {
            *partial += value(r, *j);
        });
        totals[3 * r].store(t1, Ordering::Relaxed);
        totals[3 * r + 1].store(t2, Ordering::Relaxed);
        totals[3 * r + 2].store(t3, Ordering::Relaxed);
    })
    .expect("nested-scan launches");
    for r in 0..league {
        let mut acc = 0i64;
        for j in 0..n {
            assert_eq!(
                exclusive[r * n + j].load(Ordering::Relaxed),
                acc,
                "exclusive team {r}, {j}"
            );
            acc += value(r, j);
            assert_eq!(
                inclusive[r * n + j].load(Ordering::Relaxed),
                acc,
                "inclusive team {r}, {j}"
            );
        }
        assert_eq!(totals[3 * r].load(Ordering::Relaxed), acc);
        assert_eq!(totals[3 * r + 1].load(Ordering::Relaxed), acc);
        let partial: i64 = (3..n).map(|j| value(r, j)).sum();
        assert_eq!(totals[3 * r + 2].load(Ordering::Relaxed), partial);
    }
}

#[test]
#[expect(
    clippy::reversed_empty_ranges,
    reason = "a reversed range is the bad input under test"
)]
fn nested_range_with_begin_after_end_is_a_kernel_panic() {
    let err = parallel_for("bad-nested", teams(2), |m| {
        TeamThreadRange::new(m, 5..3).parallel_for(|_| {});
    })
    .expect_err("5..3 is not a range");
    match &err {
        Error::KernelPanicked { label, message } => {
            assert_eq!(label, "bad-nested");
            assert!(
                message.contains("TeamThreadRange") && message.contains("begin 5"),
                "{message}"
            );
            assert!(message.contains("end 3"), "{message}");
        }
        other => panic!("expected KernelPanicked, got {other:?}"),
    }
    assert!(!Serial::default().in_parallel());
}

/// What a team saw in its scratch: the values read back and the errors of the oversized requests.
#[derive(Debug, Default)]
struct ScratchReport {
    team_values: Vec<f64>,
    thread_values: Vec<i32>,
    level1_values: Vec<u64>,
    errors: Vec<Error>,
}

fn read_back<T: ScratchElement>(s: &hoplite_core::ScratchSlice<'_, T>) -> Vec<T> {
    (0..s.len()).map(|i| s.get(i)).collect()
}

fn scratch_kernel(m: &SerialTeamMember<'_>) -> Result<ScratchReport, Error> {
    let r = m.league_rank();
    let mut report = ScratchReport::default();
    assert_eq!(m.team_scratch(0).capacity(), 128);
    assert_eq!(m.thread_scratch(0).capacity(), 32);

    let a = m.team_scratch(0).alloc::<f64>(10)?;
    let b = m.team_scratch(0).alloc::<f64>(6)?;
    for k in 0..a.len() {
        a.set(k, r as f64 * 100.0 + k as f64 * 0.5);
    }
    b.fill(-(r as f64));
    m.team_barrier();
    report.team_values = read_back(&a);
    report.team_values.extend(read_back(&b));
    // The team scratch is full now.
    report.errors.extend(m.team_scratch(0).alloc::<f64>(1).err());

    let t = m.thread_scratch(0).alloc::<i32>(8)?;
    for k in 0..t.len() {
        t.set(k, (r * 8 + k) as i32);
    }
    report.thread_values = read_back(&t);
    report.errors.extend(m.thread_scratch(0).alloc::<i32>(1).err());

    let big = m.team_scratch(1).alloc::<u64>(512)?;
    big.set(511, r as u64 + 7);
    big.set(0, r as u64 + 1);
    report.level1_values = vec![big.get(0), big.get(511)];
    report.errors.extend(m.team_scratch(1).alloc::<u64>(1).err());
    Ok(report)
}

#[test]
fn team_scratch_is_writable_and_bounded() {
    let league = 3;
    let policy = teams(league)
        .with_scratch_size(0, PerTeam(128), PerThread(32))
        .with_scratch_size(1, PerTeam(4096), PerThread(0));
    assert_eq!(policy.scratch_size(0), (128, 32));
    assert_eq!(policy.scratch_size(1), (4096, 0));
    let reports = Mutex::new(Vec::new());
    parallel_for("scratch", policy, |m| {
        let report = scratch_kernel(m);
        reports
            .lock()
            .expect("not poisoned")
            .push((m.league_rank(), report));
    })
    .expect("scratch launch");
    let mut reports = reports.into_inner().expect("not poisoned");
    reports.sort_by_key(|x| x.0);
    assert_eq!(reports.len(), league);
    for (r, report) in reports {
        let report = report.expect("the requested scratch is available");
        let rf = r as f64;
        let mut want: Vec<f64> = (0..10).map(|k| rf * 100.0 + k as f64 * 0.5).collect();
        want.extend([-rf; 6]);
        assert_eq!(report.team_values, want, "team {r}");
        assert_eq!(
            report.thread_values,
            (0..8).map(|k| (r * 8 + k) as i32).collect::<Vec<_>>()
        );
        assert_eq!(report.level1_values, [r as u64 + 1, r as u64 + 7]);
        assert_eq!(report.errors.len(), 3, "{:?}", report.errors);
        for (e, level, requested) in [
            (&report.errors[0], 0, 8),
            (&report.errors[1], 0, 4),
            (&report.errors[2], 1, 8),
        ] {
            assert!(
                matches!(e, Error::ScratchTooLarge { level: l, requested: q, max: 0, .. } if *l == level && *q == requested),
                "{e:?}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("{requested} bytes")) && msg.contains("limit of 0"),
                "{msg}"
            );
            assert!(msg.contains(&format!("level-{level}")), "{msg}");
        }
    }
}

#[test]
fn no_scratch_requested_means_none_available() {
    let got = Mutex::new(Vec::new());
    parallel_for("no-scratch", teams(2), |m| {
        let e = m.team_scratch(0).alloc::<f32>(1).err();
        let empty = m.thread_scratch(1).alloc::<u32>(0).map(|s| s.len()).ok();
        got.lock().expect("not poisoned").push((e, empty));
    })
    .expect("no-scratch launches");
    for (e, empty) in got.into_inner().expect("not poisoned") {
        assert!(
            matches!(
                e,
                Some(Error::ScratchTooLarge {
                    requested: 4,
                    max: 0,
                    ..
                })
            ),
            "{e:?}"
        );
        assert_eq!(empty, Some(0));
    }
}

#[test]
fn policy_conversions_cover_the_same_points() {
    let space = Serial::default();
    let range = RangePolicy::new(space.clone(), 0..9).with_chunk_size(2);
    let team = TeamPolicy::try_from(range.clone()).expect("a range from 0 converts");
    assert_eq!(team.league_size(), 9);
    assert_eq!(team.team_size(), 1);
    assert_eq!(team.chunk_size(), Some(2));
    let md = MDRangePolicy::<_, 1>::from(range.clone());

    let from_range = Mutex::new(Vec::new());
    parallel_for("range", range, |i| {
        from_range.lock().expect("not poisoned").push(*i)
    })
    .expect("range");
    let from_md = Mutex::new(Vec::new());
    parallel_for("md", md.clone(), |i| {
        from_md.lock().expect("not poisoned").push(i[0])
    })
    .expect("md");
    let from_team = Mutex::new(Vec::new());
    parallel_for("team", team, |m| {
        from_team.lock().expect("not poisoned").push(m.league_rank());
    })
    .expect("team");
    let from_md_team = Mutex::new(Vec::new());
    let md_team = TeamPolicy::try_from(md).expect("a box from 0 converts");
    parallel_for("md-team", md_team, |m| {
        from_md_team.lock().expect("not poisoned").push(m.league_rank());
    })
    .expect("md-team");

    let want: Vec<usize> = (0..9).collect();
    let mut sorted_team = from_team.into_inner().expect("not poisoned");
    sorted_team.sort_unstable();
    let mut sorted_md_team = from_md_team.into_inner().expect("not poisoned");
    sorted_md_team.sort_unstable();
    assert_eq!(from_range.into_inner().expect("not poisoned"), want);
    assert_eq!(from_md.into_inner().expect("not poisoned"), want);
    assert_eq!(sorted_team, want);
    assert_eq!(sorted_md_team, want);

    // The empty range converts to an empty league.
    let empty = TeamPolicy::try_from(RangePolicy::new(space, 0..0)).expect("0..0 converts");
    assert_eq!(empty.league_size(), 0);
}

#[test]
fn a_range_not_starting_at_zero_does_not_convert_to_teams() {
    let err = TeamPolicy::try_from(RangePolicy::new(Serial::default(), 3..10)).expect_err("starts at 3");
    assert!(
        matches!(
            err,
            Error::PolicyConversion {
                from: "MDRangePolicy<1>",
                to: "TeamPolicy",
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("starts at 3") && msg.contains("TeamPolicy"), "{msg}");

    let err = TeamPolicy::try_from(MDRangePolicy::new(Serial::default(), [1], [2])).expect_err("starts at 1");
    assert!(
        matches!(&err, Error::PolicyConversion { reason, .. } if reason.contains("starts at 1")),
        "{err:?}"
    );
}

#[test]
fn team_scratch_limit_is_the_space_maximum() {
    // Exactly the level-0 maximum is fine; the whole of it can be allocated.
    let ok = parallel_reduce(
        "max-scratch",
        teams(1).with_scratch_size(0, PerTeam(MAX_SCRATCH_LEVEL0), PerThread(0)),
        |m, acc: &mut usize| {
            if let Ok(s) = m.team_scratch(0).alloc::<u64>(MAX_SCRATCH_LEVEL0 / 8) {
                s.set(s.len() - 1, 3);
                *acc += s.len() + s.get(s.len() - 1) as usize;
            }
        },
        Sum::new(),
    )
    .expect("the maximum is allowed");
    assert_eq!(ok, MAX_SCRATCH_LEVEL0 / 8 + 3);
    assert_eq!(Serial::default().max_scratch_size(0), MAX_SCRATCH_LEVEL0);
}
