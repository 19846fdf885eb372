//! Team policies with real multi-threaded teams: ranks, barriers, scratch, collectives and
//! nested ranges, on pools of 1, 2 and 3 threads with team sizes 1 to 3.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionSpace, Max, PerTeam, PerThread, Schedule, Sum, TeamMember, TeamPolicy, TeamSize,
    TeamThreadRange, TeamVectorRange, ThreadVectorRange, View, parallel_for, parallel_reduce,
};
use hoplite_rayon::RayonSpace;

fn pools() -> &'static [RayonSpace; 3] {
    static POOLS: OnceLock<[RayonSpace; 3]> = OnceLock::new();
    POOLS.get_or_init(|| [1, 2, 3].map(|n| RayonSpace::with_threads(n).expect("a pool")))
}

/// Every (pool, team size, schedule, chunk) combination with team size <= pool size.
fn configs() -> Vec<(RayonSpace, usize, Schedule, Option<usize>)> {
    let mut out = Vec::new();
    for space in pools() {
        for team in 1..=space.concurrency() {
            for (schedule, chunk) in [
                (Schedule::Static, None),
                (Schedule::Static, Some(3)),
                (Schedule::Dynamic, None),
                (Schedule::Dynamic, Some(2)),
            ] {
                out.push((space.clone(), team, schedule, chunk));
            }
        }
    }
    out
}

fn team_policy(
    space: &RayonSpace,
    league: usize,
    team: usize,
    schedule: Schedule,
    chunk: Option<usize>,
) -> TeamPolicy<RayonSpace> {
    let p = TeamPolicy::new(space.clone(), league, team).with_schedule(schedule);
    match chunk {
        Some(c) => p.with_chunk_size(c),
        None => p,
    }
}

fn counters(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

#[test]
fn every_league_and_team_rank_runs_exactly_once() {
    for (space, team, schedule, chunk) in configs() {
        for league in [0, 1, 5, 37] {
            let hits = counters(league * team);
            parallel_for("ranks", team_policy(&space, league, team, schedule, chunk), |m| {
                assert_eq!(
                    (m.league_size(), m.team_size(), m.vector_length()),
                    (league, team, 1)
                );
                assert!(m.league_rank() < league && m.team_rank() < team);
                hits[m.league_rank() * team + m.team_rank()].fetch_add(1, Ordering::Relaxed);
            })
            .expect("launch");
            let bad = hits.iter().position(|h| h.load(Ordering::Relaxed) != 1);
            assert_eq!(
                bad, None,
                "{space:?} team {team} {schedule:?} {chunk:?} league {league}"
            );
        }
    }
}

#[test]
fn threads_of_a_team_run_at_the_same_time() {
    // With team size > 1, the threads of one team are distinct OS threads.
    for space in pools() {
        let team = space.concurrency();
        let distinct = AtomicUsize::new(0);
        parallel_for("distinct", TeamPolicy::new(space.clone(), 4, team), |m| {
            let mine = format!("{:?}", std::thread::current().id());
            let all: Vec<String> = (0..m.team_size())
                .map(|r| m.team_broadcast(mine.clone(), r))
                .collect();
            let mut sorted = all.clone();
            sorted.sort();
            sorted.dedup();
            if m.team_rank() == 0 && sorted.len() == m.team_size() {
                distinct.fetch_add(1, Ordering::Relaxed);
            }
        })
        .expect("launch");
        assert_eq!(distinct.load(Ordering::Relaxed), 4, "{space:?}");
    }
}

#[test]
fn barriers_make_scratch_writes_of_other_threads_visible() {
    for (space, team, schedule, chunk) in configs() {
        let league = 11;
        let ok = AtomicUsize::new(0);
        let policy = team_policy(&space, league, team, schedule, chunk).with_scratch_size(
            0,
            PerTeam(8 * 3),
            PerThread(8),
        );
        parallel_for("barrier", policy, |m| {
            let shared = m.team_scratch(0).alloc::<u64>(3).expect("team scratch");
            let private = m.thread_scratch(0).alloc::<u64>(1).expect("thread scratch");
            let (l, r, t) = (m.league_rank() as u64, m.team_rank() as u64, m.team_size());
            private.set(0, 1000 + r);
            for round in 0..3u64 {
                shared.set(r as usize, l * 100 + round * 10 + r);
                m.team_barrier();
                let seen = (0..t).all(|k| shared.get(k) == l * 100 + round * 10 + k as u64);
                // Nobody may overwrite before everybody has read this round.
                m.team_barrier();
                if seen && private.get(0) == 1000 + r {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .expect("launch");
        assert_eq!(
            ok.load(Ordering::Relaxed),
            3 * league * team,
            "{space:?} team {team} {schedule:?}"
        );
    }
}

#[test]
fn team_collectives_give_the_expected_values() {
    for (space, team, schedule, chunk) in configs() {
        let league = 9;
        let ok = AtomicUsize::new(0);
        parallel_for(
            "collectives",
            team_policy(&space, league, team, schedule, chunk),
            |m| {
                let (l, r, t) = (m.league_rank(), m.team_rank(), m.team_size());
                let from_last = m.team_broadcast(l * 10 + r, t - 1);
                let owned = m.team_broadcast(vec![r; r + 1], 0);
                let sum = m.team_reduce(&Sum::<usize>::new(), r + 1);
                let max = m.team_reduce(&Max::<i64>::new(), (l * 7 + r) as i64);
                let (prefix, total) = m.team_scan(r as u64 + 1);
                let (fprefix, ftotal) = m.team_scan(0.5f64 * (r + 1) as f64);
                let expected_prefix = (r * (r + 1) / 2) as u64;
                if from_last == l * 10 + t - 1
                    && owned == [0]
                    && sum == t * (t + 1) / 2
                    && max == (l * 7 + t - 1) as i64
                    && (prefix, total) == (expected_prefix, (t * (t + 1) / 2) as u64)
                    && (fprefix, ftotal) == (0.5 * expected_prefix as f64, 0.5 * (t * (t + 1) / 2) as f64)
                {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            },
        )
        .expect("launch");
        assert_eq!(
            ok.load(Ordering::Relaxed),
            league * team,
            "{space:?} team {team} {schedule:?} {chunk:?}"
        );
    }
}

#[test]
fn nested_ranges_split_across_the_team() {
    for (space, team, schedule, chunk) in configs() {
        let (league, n) = (6, 23);
        let team_thread = counters(league * n);
        let team_vector = counters(league * n);
        let thread_vector = counters(league * n);
        let ok = AtomicUsize::new(0);
        parallel_for(
            "nested",
            team_policy(&space, league, team, schedule, chunk),
            |m| {
                let l = m.league_rank();
                TeamThreadRange::new(m, n).parallel_for(|j| {
                    team_thread[l * n + *j].fetch_add(1, Ordering::Relaxed);
                });
                TeamVectorRange::new(m, 0..n).parallel_for(|j| {
                    team_vector[l * n + *j].fetch_add(1, Ordering::Relaxed);
                });
                ThreadVectorRange::new(m, n).parallel_for(|j| {
                    thread_vector[l * n + *j].fetch_add(1, Ordering::Relaxed);
                });
                let sum = TeamThreadRange::new(m, 5..5 + n)
                    .parallel_reduce(|j, s: &mut usize| *s += *j, Sum::new());
                let vsum =
                    ThreadVectorRange::new(m, n).parallel_reduce(|j, s: &mut usize| *s += *j, Sum::new());
                let total =
                    TeamThreadRange::new(m, n).parallel_scan(|j, partial: &mut usize, _| *partial += *j + 1);
                let expected_sum: usize = (5..5 + n).sum();
                if sum == expected_sum && vsum == n * (n - 1) / 2 && total == n * (n + 1) / 2 {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            },
        )
        .expect("launch");
        let what = format!("{space:?} team {team} {schedule:?} {chunk:?}");
        assert!(
            team_thread.iter().all(|h| h.load(Ordering::Relaxed) == 1),
            "{what}"
        );
        assert!(
            team_vector.iter().all(|h| h.load(Ordering::Relaxed) == 1),
            "{what}"
        );
        assert!(
            thread_vector
                .iter()
                .all(|h| h.load(Ordering::Relaxed) == team as u32),
            "{what}"
        );
        assert_eq!(ok.load(Ordering::Relaxed), league * team, "{what}");
    }
}

#[test]
fn nested_team_scan_writes_the_exclusive_prefix() {
    for (space, team, schedule, chunk) in configs() {
        let (league, n) = (4, 31);
        let out: Vec<AtomicUsize> = (0..league * n).map(|_| AtomicUsize::new(usize::MAX)).collect();
        let finals = counters(league * n);
        parallel_for(
            "nested scan",
            team_policy(&space, league, team, schedule, chunk),
            |m| {
                let l = m.league_rank();
                TeamThreadRange::new(m, n).parallel_scan(|j, partial: &mut usize, is_final| {
                    if is_final {
                        out[l * n + *j].store(*partial, Ordering::Relaxed);
                        finals[l * n + *j].fetch_add(1, Ordering::Relaxed);
                    }
                    *partial += 2 * *j + 1;
                });
            },
        )
        .expect("launch");
        for l in 0..league {
            for j in 0..n {
                assert_eq!(
                    out[l * n + j].load(Ordering::Relaxed),
                    j * j,
                    "{space:?} team {team} ({l}, {j})"
                );
                assert_eq!(finals[l * n + j].load(Ordering::Relaxed), 1);
            }
        }
    }
}

#[test]
fn team_reductions_join_every_thread_of_every_team() {
    for (space, team, schedule, chunk) in configs() {
        for league in [0, 1, 13] {
            let p = team_policy(&space, league, team, schedule, chunk);
            let sum = parallel_reduce(
                "team sum",
                p.clone(),
                |m, acc: &mut usize| *acc += m.league_rank() * 10 + m.team_rank(),
                Sum::new(),
            )
            .expect("reduce");
            let expected: usize = (0..league).flat_map(|l| (0..team).map(move |r| l * 10 + r)).sum();
            assert_eq!(
                sum, expected,
                "{space:?} team {team} {schedule:?} {chunk:?} league {league}"
            );
            // Team-size-1 leagues join in league order.
            if team == 1 {
                let concat =
                    hoplite_core::Custom::new(Vec::new, |d: &mut Vec<usize>, s: Vec<usize>| d.extend(s));
                let order = parallel_reduce(
                    "order",
                    p,
                    |m, acc: &mut Vec<usize>| acc.push(m.league_rank()),
                    concat,
                )
                .expect("concat");
                assert!(
                    order.iter().copied().eq(0..league),
                    "{space:?} {schedule:?} {chunk:?}"
                );
            }
        }
    }
}

#[test]
fn team_size_limits() {
    for space in pools() {
        let max = space.concurrency();
        assert_eq!(space.max_team_size(), max);
        let auto = TeamPolicy::new(space.clone(), 2, TeamSize::Auto);
        assert_eq!(auto.team_size(), max);
        let seen = AtomicUsize::new(0);
        parallel_for("auto", auto, |m| {
            seen.fetch_max(m.team_size(), Ordering::Relaxed);
        })
        .expect("auto team size launches");
        assert_eq!(seen.load(Ordering::Relaxed), max);

        let err = parallel_for("too big", TeamPolicy::new(space.clone(), 2, max + 1), |_| {})
            .expect_err("team size above the maximum");
        assert_eq!(
            err,
            Error::TeamSizeTooLarge {
                label: "too big".into(),
                requested: max + 1,
                max,
                space: "Rayon",
            }
        );
        assert!(
            err.to_string().contains(&format!("maximum team size {max}")),
            "{err}"
        );
        let err = parallel_for(
            "vector",
            TeamPolicy::new(space.clone(), 2, 1).with_vector_length(2),
            |_| {},
        )
        .expect_err("vector length 2");
        assert!(matches!(err, Error::InvalidVectorLength { max: 1, .. }), "{err}");
    }
}

#[test]
fn teams_store_their_rows_through_team_tokens() {
    // Row scaling and row sums of a league x 70 matrix: each team owns its row, each thread the
    // columns `team_owner` gives it; loops over different ranges need no barrier between them.
    let cols = 70;
    for (space, team, schedule, chunk) in configs() {
        for league in [0, 1, 5, 37] {
            let a: View<f64, 2> = View::new("a", [league, cols]).expect("alloc");
            let sums: View<f64, 1> = View::new("sums", [league]).expect("alloc");
            let policy = team_policy(&space, league, team, schedule, chunk);
            parallel_for("rows", (policy, (a.write(), sums.write())), |(m, (a, sums))| {
                let league = m.league_token();
                let row = a.team_row(league);
                let i = *league as f64;
                TeamThreadRange::new(m, cols).parallel_for(|j| row.set(j, i + *j as f64));
                TeamVectorRange::new(m, 10..50).parallel_for(|j| row.update(j, |v| 2.0 * v));
                let mut mine = 0.0;
                // Each thread reads back only the columns it owns: its own stores.
                TeamThreadRange::new(m, cols).parallel_for(|j| mine += row.get(j));
                let total = m.team_reduce(&Sum::new(), mine);
                if let Some(t) = league.single() {
                    sums.set(t, total);
                }
            })
            .expect("launch");
            let scaled = |i: usize, j: usize| (i + j) as f64 * if (10..50).contains(&j) { 2.0 } else { 1.0 };
            let want: Vec<f64> = (0..league)
                .flat_map(|i| (0..cols).map(move |j| scaled(i, j)))
                .collect();
            let context = format!("{space:?} team {team} {schedule:?} {chunk:?} league {league}");
            assert_eq!(a.to_vec().expect("read"), want, "{context}");
            let want_sums: Vec<f64> = (0..league)
                .map(|i| (0..cols).map(|j| scaled(i, j)).sum())
                .collect();
            assert_eq!(sums.to_vec().expect("read"), want_sums, "{context}");
        }
    }
}

/// The largest level-1 scratch on a wide instance: regions are made only for the teams that
/// run at once (no more than the league), zeroed lazily by the allocator, and a refusal is a
/// typed error — never an aborted process (64 regions of 256 MiB used to be zeroed up front).
#[test]
fn large_scratch_is_allocated_lazily_for_running_teams_only() {
    let space = RayonSpace::with_threads(64).expect("a wide pool");
    let max = space.max_scratch_size(1);
    for league in [1, 2, 64] {
        let policy =
            TeamPolicy::new(space.clone(), league, 1).with_scratch_size(1, PerTeam(max), PerThread(0));
        let result = parallel_reduce(
            "large scratch",
            policy,
            |m, acc: &mut usize| {
                let words = m.team_scratch(1).alloc::<u64>(max / 8).expect("the whole level");
                words.set(max / 8 - 1, m.league_rank() as u64 + 1);
                *acc += words.get(max / 8 - 1) as usize;
            },
            Sum::new(),
        );
        match result {
            Ok(total) => assert_eq!(total, league * (league + 1) / 2, "league {league}"),
            Err(Error::AllocationFailed { label, space, .. }) => {
                assert!(
                    label.contains("large scratch") && space == "Rayon",
                    "{label} {space}"
                )
            }
            Err(e) => panic!("league {league}: {e}"),
        }
    }
}

/// A partition into absurdly many instances is refused before anything is allocated.
#[test]
fn huge_partitions_are_typed_errors() {
    let space = RayonSpace::with_threads(2).expect("pool");
    for n in [usize::MAX, 1 << 40] {
        let err = space.partition_space(n).expect_err("too many parts");
        assert!(
            matches!(err, Error::ThreadsUnavailable { requested, .. } if requested == n),
            "{err}"
        );
    }
}
