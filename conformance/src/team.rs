//! The `TeamPolicy` and `TeamMember` axioms: ranks, team limits, barrier, broadcast, team
//! reduce and scan, nested ranges and scratch memory.
//!
//! Every check runs with team size 1 and, when the space's `max_team_size` is above 1, with
//! team size 2. Collectives are called by every thread of a team in the same order, as the
//! concept requires.

use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Custom, Error, Max, NestedLevel, PerTeam, PerThread, Schedule, Sum, TeamMember, TeamPolicy, TeamSize,
    TeamThreadRange, TeamVectorRange, ThreadVectorRange, UniqueToken, VectorLength, View, parallel_for,
    parallel_reduce,
};

use hoplite_core::index::team_owner;

use crate::util::{Problems, same, team_sizes};
use crate::{FullSpace, Outcome, check};

/// The `#[kernel]`s of this module's portable checks (the NVRTC test compiles each).
pub(crate) const DEVICE_KERNELS: &[fn() -> hoplite_core::device_kernel::DeviceKernelInfo] = &[];

const LEAGUES: [usize; 3] = [1, 4, 9];

/// Runs a nested `parallel_for` of `level` over `3..n` in every team and checks how often
/// each (team, thread, index) was visited: once per team for the levels that split over the
/// team, once per thread for `ThreadVector`.
/// The ownership block of a member type (what `team_owner` splits by).
fn team_block<M: TeamMember>(_member: &M) -> usize {
    M::TEAM_BLOCK
}

fn nested_for_counts<S: FullSpace>(space: &S, level: NestedLevel) -> Outcome {
    let n = 29;
    for ts in team_sizes(space) {
        for league in LEAGUES {
            let counts: View<u32, 3> = View::new("nested-visits", [league, ts, n])?;
            let hits = counts.atomic();
            let misplaced = AtomicUsize::new(0);
            parallel_for("nested-for", TeamPolicy::new(space.clone(), league, ts), |m| {
                let (lr, tr) = (m.league_rank(), m.team_rank());
                let body = |j: usize| {
                    hits.fetch_add([lr, tr, j], 1);
                    // Team-level loops give each index to its owner, whatever the range.
                    if level != NestedLevel::ThreadVector && team_owner(j, ts, team_block(m)) != tr {
                        misplaced.fetch_add(1, Ordering::Relaxed);
                    }
                };
                match level {
                    NestedLevel::TeamThread => TeamThreadRange::new(m, 3..n).parallel_for(|j| body(*j)),
                    NestedLevel::ThreadVector => ThreadVectorRange::new(m, 3..n).parallel_for(|j| body(*j)),
                    NestedLevel::TeamVector => TeamVectorRange::new(m, 3..n).parallel_for(|j| body(*j)),
                }
            })?;
            drop(hits);
            ensure_eq!(
                misplaced.load(Ordering::Relaxed),
                0,
                "{level:?} indices run on a thread other than their owner (team size {ts})"
            );
            let got = counts.to_vec()?;
            for lr in 0..league {
                for j in 0..n {
                    let per_thread: Vec<u32> = (0..ts).map(|tr| got[(lr * ts + tr) * n + j]).collect();
                    let total: u32 = per_thread.iter().sum();
                    let want_total = if j < 3 {
                        0
                    } else if level == NestedLevel::ThreadVector {
                        ts as u32
                    } else {
                        1
                    };
                    ensure_eq!(
                        total,
                        want_total,
                        "{level:?} visits of index {j} in team {lr} (team size {ts})"
                    );
                    if level == NestedLevel::ThreadVector && j >= 3 {
                        same(&per_thread, &vec![1; ts], || {
                            format!("ThreadVectorRange visits of index {j} per thread of team {lr}")
                        })?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Axiom 1: ranks are below sizes, sizes are the policy's, and each (league rank, team
/// rank) pair is handed to exactly one member, for leagues of 0, 1, 7 and 33 teams.
pub fn each_league_team_rank_pair_seen_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in [0, 1, 7, 33] {
                let counts: View<u32, 2> = View::new("team-ranks", [league, ts])?;
                let hits = counts.atomic();
                let problems = Problems::new();
                parallel_for("team-ranks", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank(), m.team_rank());
                    let sizes = (m.league_size(), m.team_size(), m.vector_length());
                    problems.check(sizes == (league, ts, 1), || {
                        format!(
                            "member sizes (league, team, vector) {sizes:?}, expected {:?}",
                            (league, ts, 1)
                        )
                    });
                    problems.check(lr < league && tr < ts, || {
                        format!("ranks ({lr}, {tr}) out of range")
                    });
                    if lr < league && tr < ts {
                        hits.fetch_add([lr, tr], 1);
                    }
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
                drop(hits);
                same(&counts.to_vec()?, &vec![1; league * ts], || {
                    format!("visits of each (league rank, team rank), league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// `TeamSize::Auto` is the space's `max_team_size`, and members report it.
pub fn auto_team_size_is_the_maximum<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let max = space.max_team_size();
        ensure!(max >= 1, "max_team_size is 0");
        let policy = TeamPolicy::new(space.clone(), 3, TeamSize::Auto);
        ensure_eq!(
            (policy.team_size(), policy.team_size_max()),
            (max, max),
            "the team size of an Auto policy"
        );
        let members = AtomicUsize::new(0);
        let problems = Problems::new();
        parallel_for("auto-team", policy, |m| {
            members.fetch_add(1, Ordering::Relaxed);
            problems.check(m.team_size() == max, || {
                format!("a member of an Auto team reports team size {}", m.team_size())
            });
        })?;
        problems.into_outcome("Auto team size")?;
        ensure_eq!(members.into_inner(), 3 * max, "members of 3 Auto teams");
        Ok(())
    })
}

/// ExecutionSpace axiom 6: a team size up to `max_team_size` launches; one above it is
/// `Error::TeamSizeTooLarge` naming the space, and the kernel does not run.
pub fn team_size_above_the_maximum_is_rejected<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let max = space.max_team_size();
        let runs = AtomicUsize::new(0);
        parallel_for("max-team", TeamPolicy::new(space.clone(), 2, max), |_| {
            runs.fetch_add(1, Ordering::Relaxed);
        })?;
        ensure_eq!(
            runs.swap(0, Ordering::Relaxed),
            2 * max,
            "members of 2 teams of the maximum size"
        );
        let result = parallel_for("too-big", TeamPolicy::new(space.clone(), 2, max + 1), |_| {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        match result {
            Err(Error::TeamSizeTooLarge {
                label,
                requested,
                max: m,
                space: name,
            }) => {
                ensure_eq!(
                    (label.as_str(), requested, m, name),
                    ("too-big", max + 1, max, space.name()),
                    "the TeamSizeTooLarge error"
                );
            }
            other => {
                return Err(crate::Failure::msg(format!(
                    "team size {} (max {max}) gave {other:?}",
                    max + 1
                )));
            }
        }
        ensure_eq!(runs.into_inner(), 0, "iterations of a rejected launch");
        Ok(())
    })
}

/// Axiom 2: scratch writes a thread makes before `team_barrier` are visible to every
/// thread of its team after it (rounds of write, barrier, read, barrier). Only meaningful
/// with more than one thread per team, and must hold for one.
pub fn barrier_orders_scratch_writes<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            let policy =
                TeamPolicy::new(space.clone(), 6, ts).with_scratch_size(0, PerTeam(8 * ts), PerThread(0));
            let problems = Problems::new();
            parallel_for("barrier", policy, |m| {
                let (lr, tr) = (m.league_rank() as i64, m.team_rank());
                let slots = match m.team_scratch(0).alloc::<i64>(ts) {
                    Ok(s) => s,
                    Err(e) => return problems.report(format!("team scratch of {ts} i64: {e}")),
                };
                for round in 0..4i64 {
                    slots.set(tr, lr * 1000 + round * 10 + tr as i64);
                    m.team_barrier();
                    for r in 0..ts {
                        let want = lr * 1000 + round * 10 + r as i64;
                        let got = slots.get(r);
                        problems.check(got == want, || {
                            format!(
                                "team {lr}, thread {tr}, round {round}: slot {r} holds {got}, expected {want}"
                            )
                        });
                    }
                    m.team_barrier();
                }
            })?;
            problems.into_outcome(&format!("team size {ts}"))?;
        }
        Ok(())
    })
}

/// Axiom 3: `team_broadcast(v, r)` returns on every thread the value of team rank `r`.
pub fn broadcast_returns_the_source_value<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let problems = Problems::new();
                parallel_for("broadcast", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank(), m.team_rank());
                    for source in 0..ts {
                        let got = m.team_broadcast(lr * 100 + tr, source);
                        problems.check(got == lr * 100 + source, || {
                            format!("team {lr}, thread {tr}: broadcast from {source} gave {got}")
                        });
                        let text = m.team_broadcast(format!("{lr}/{tr}"), source);
                        problems.check(text == format!("{lr}/{source}"), || {
                            format!(
                                "team {lr}, thread {tr}: broadcast of a String from {source} gave {text:?}"
                            )
                        });
                    }
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
            }
        }
        Ok(())
    })
}

/// `team_single` runs its closure once per team and hands the result to every thread;
/// `team_broadcast_with` applies its functor on the source only; a team-level unique token
/// gives one id to the whole team, no two live teams share it, and every id is back in the
/// pool after the launch; `VectorLength::Auto` resolves to the space's maximum.
pub fn team_single_broadcast_functor_and_team_tokens<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let problems = Problems::new();
                let calls = AtomicUsize::new(0);
                let tokens = space.unique_token_with_size(2)?;
                let holders: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(usize::MAX)).collect();
                let policy =
                    TeamPolicy::new(space.clone(), league, ts).with_vector_length(VectorLength::Auto);
                parallel_for("single", policy, |m| {
                    let (lr, tr) = (m.league_rank(), m.team_rank());
                    let once = m.team_single(|| {
                        calls.fetch_add(1, Ordering::Relaxed);
                        lr * 7
                    });
                    problems.check(once == lr * 7, || {
                        format!("team {lr}, thread {tr}: single gave {once}")
                    });
                    let doubled = m.team_broadcast_with(|v: &mut usize| *v *= 2, tr + 1, ts - 1);
                    problems.check(doubled == 2 * ts, || {
                        format!("team {lr}, thread {tr}: functor broadcast gave {doubled}")
                    });
                    let id = tokens.team_guard(m);
                    problems.check(*id < 2, || format!("team {lr}: team id {} out of range", *id));
                    if tr == 0 {
                        let before = holders[*id].swap(lr, Ordering::AcqRel);
                        problems.check(before == usize::MAX, || {
                            format!("team {lr} got id {} that team {before} still held", *id)
                        });
                    }
                    let all = m.team_broadcast(*id, 0);
                    problems.check(all == *id, || format!("team {lr}, thread {tr}: team id differs"));
                    m.team_barrier();
                    if tr == 0 {
                        holders[*id].store(usize::MAX, Ordering::Release);
                    }
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
                ensure_eq!(
                    calls.into_inner(),
                    league,
                    "team_single calls for league {league}"
                );
                let ids: Vec<Option<usize>> = (0..2).map(|_| tokens.try_acquire()).collect();
                ensure!(
                    ids.iter().all(Option::is_some),
                    "team ids left held after the launch: {ids:?}"
                );
            }
        }
        ensure_eq!(
            TeamPolicy::new(space.clone(), 1, 1)
                .with_vector_length(VectorLength::Auto)
                .vector_length(),
            space.max_vector_length(),
            "VectorLength::Auto"
        );
        Ok(())
    })
}

/// Team slots: every thread stores at its own `[league rank, team rank]` of a rank-2 view,
/// each element exactly once; a slots handle conflicts with a writer of the same view.
pub fn team_slots_store_once_per_thread<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let slots: View<usize, 2> = View::new("slots", [league, ts])?;
                parallel_for(
                    "slots",
                    (TeamPolicy::new(space.clone(), league, ts), (slots.team_slots(),)),
                    |(m, (p,))| {
                        let slot = m.team_slot();
                        p.set(slot, p.get(slot) + 1000 * m.league_rank() + m.team_rank() + 1);
                    },
                )?;
                let want: Vec<usize> = (0..league)
                    .flat_map(|l| (0..ts).map(move |r| 1000 * l + r + 1))
                    .collect();
                same(&slots.to_vec()?, &want, || {
                    format!("league {league}, team size {ts}")
                })?;
            }
        }
        let v: View<f64, 2> = View::new("slot conflict", [2, 2])?;
        let result = parallel_for(
            "conflict",
            (TeamPolicy::new(space.clone(), 2, 1), (v.team_slots(), v.write())),
            |_| {},
        );
        ensure!(
            matches!(result, Err(Error::BorrowConflict { .. })),
            "team slots beside a writer of the same view gave {result:?}"
        );
        Ok(())
    })
}

/// Axiom 4: `team_reduce` returns on every thread the join of all threads' values in
/// team-rank order (a concatenation shows the order).
pub fn team_reduce_joins_in_rank_order<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let concat = Custom::new(Vec::new, |dst: &mut Vec<usize>, src: Vec<usize>| dst.extend(src));
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let problems = Problems::new();
                parallel_for("team-reduce", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank(), m.team_rank());
                    let sum = m.team_reduce(&Sum::<i64>::new(), ((tr + 1) * (lr + 1)) as i64);
                    let want_sum = (ts * (ts + 1) / 2 * (lr + 1)) as i64;
                    problems.check(sum == want_sum, || {
                        format!("team {lr}, thread {tr}: Sum gave {sum}, expected {want_sum}")
                    });
                    let max = m.team_reduce(&Max::<f64>::new(), tr as f64 - lr as f64);
                    let want_max = (ts - 1) as f64 - lr as f64;
                    problems.check(max == want_max, || {
                        format!("team {lr}, thread {tr}: Max gave {max}, expected {want_max}")
                    });
                    let order = m.team_reduce(&concat, vec![lr * 10 + tr]);
                    let want: Vec<usize> = (0..ts).map(|r| lr * 10 + r).collect();
                    problems.check(order == want, || {
                        format!("team {lr}, thread {tr}: concatenation gave {order:?}, expected {want:?}")
                    });
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
            }
        }
        Ok(())
    })
}

/// Axiom 5: `team_scan(v)` returns (the sum of the values of lower team ranks, the team's
/// total), for integers and floats.
pub fn team_scan_returns_exclusive_prefix_and_total<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let problems = Problems::new();
                parallel_for("team-scan", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank() as i64, m.team_rank() as i64);
                    let n = ts as i64;
                    let got = m.team_scan((tr + 1) * (lr + 1));
                    let want = (tr * (tr + 1) / 2 * (lr + 1), n * (n + 1) / 2 * (lr + 1));
                    problems.check(got == want, || {
                        format!("team {lr}, thread {tr}: team_scan gave {got:?}, expected {want:?}")
                    });
                    let got = m.team_scan(0.5 * (tr + 1) as f64);
                    let want = (0.25 * (tr * (tr + 1)) as f64, 0.25 * (n * (n + 1)) as f64);
                    problems.check(got == want, || {
                        format!("team {lr}, thread {tr}: f64 team_scan gave {got:?}, expected {want:?}")
                    });
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
            }
        }
        Ok(())
    })
}

/// Axiom 6: a `TeamThreadRange` visits every index of its range once across the team.
pub fn team_thread_range_visits_every_index_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || nested_for_counts(space, NestedLevel::TeamThread))
}

/// Axiom 6: a `ThreadVectorRange` visits every index of its range once on every thread
/// (its range is split over the lanes of the calling thread).
pub fn thread_vector_range_visits_every_index_once_per_thread<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || nested_for_counts(space, NestedLevel::ThreadVector))
}

/// Axiom 6: a `TeamVectorRange` visits every index of its range once across the team.
pub fn team_vector_range_visits_every_index_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || nested_for_counts(space, NestedLevel::TeamVector))
}

/// Team tokens: a team stores into its row of a rank-2 writer through team loops of
/// different ranges (each element stored once, by its owner, with no barrier between the
/// loops), and one thread of the team stores the row sum at its league token.
pub fn team_rows_and_league_tokens_store_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let cols = 41;
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let a: View<u64, 2> = View::new("team-rows", [league, cols])?;
                let sums: View<u64, 1> = View::new("row-sums", [league])?;
                let policy = TeamPolicy::new(space.clone(), league, ts);
                parallel_for(
                    "team-rows",
                    (policy, (a.write(), sums.write())),
                    |(m, (a, sums))| {
                        let league_token = m.league_token();
                        let row = a.team_row(league_token);
                        let base = 1000 * m.league_rank() as u64;
                        // Two loops over overlapping ranges: ownership is by column, so the second
                        // loop updates what the same thread stored in the first.
                        TeamThreadRange::new(m, 0..cols).parallel_for(|j| row.set(j, base + *j as u64));
                        TeamVectorRange::new(m, 5..cols - 3).parallel_for(|j| row.update(j, |v| v + 1));
                        let mine = TeamThreadRange::new(m, cols)
                            .parallel_reduce(|j, acc: &mut u64| *acc += base + *j as u64, Sum::new());
                        if let Some(i) = league_token.single() {
                            sums.set(i, mine);
                        }
                    },
                )?;
                let got = a.to_vec()?;
                let want: Vec<u64> = (0..league)
                    .flat_map(|i| {
                        (0..cols)
                            .map(move |j| 1000 * i as u64 + j as u64 + u64::from((5..cols - 3).contains(&j)))
                    })
                    .collect();
                same(&got, &want, || {
                    format!("row elements, league {league}, team size {ts}")
                })?;
                let want_sums: Vec<u64> = (0..league)
                    .map(|i| (0..cols).map(|j| 1000 * i as u64 + j as u64).sum())
                    .collect();
                same(&sums.to_vec()?, &want_sums, || {
                    format!("sums stored at league tokens, league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Team planes of a rank-3 writer: each team owns its plane, each row goes to the thread
/// that owns it in a team loop, and that thread stores the whole row (here in a vector loop),
/// so every element is stored exactly once, also across two team loops of different ranges.
pub fn team_planes_store_every_element_once<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let (rows, cols) = (37, 9);
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let a: View<u64, 3> = View::new("team-planes", [league, rows, cols])?;
                let policy = TeamPolicy::new(space.clone(), league, ts);
                parallel_for("team-planes", (policy, (a.write(),)), |(m, (a,))| {
                    let plane = a.team_plane(m.league_token());
                    let base = 10_000 * plane.plane() as u64;
                    TeamThreadRange::new(m, plane.rows()).parallel_for(|j| {
                        let row = plane.row(j);
                        ThreadVectorRange::new(m, row.len())
                            .parallel_for(|k| row.set(*k, base + 100 * *j as u64 + *k as u64));
                    });
                    // A second loop over other rows: the same thread owns each row again.
                    TeamVectorRange::new(m, 3..rows - 4).parallel_for(|j| {
                        let row = plane.row(j);
                        for k in 0..row.len() {
                            row.update(k, |v| v + 1_000_000);
                        }
                    });
                })?;
                let want: Vec<u64> = (0..league)
                    .flat_map(|i| {
                        (0..rows).flat_map(move |j| {
                            (0..cols).map(move |k| {
                                10_000 * i as u64
                                    + 100 * j as u64
                                    + k as u64
                                    + if (3..rows - 4).contains(&j) { 1_000_000 } else { 0 }
                            })
                        })
                    })
                    .collect();
                same(&a.to_vec()?, &want, || {
                    format!("plane elements, league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Axiom 6: a nested reduce returns the full result on every participating thread, and
/// the identity for an empty range.
pub fn nested_reduce_returns_the_result_on_every_thread<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 23;
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let problems = Problems::new();
                parallel_for("nested-reduce", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank() as u64, m.team_rank());
                    let want: u64 = (2..n as u64).map(|j| lr * 100 + j).sum();
                    let body = |j: hoplite_core::Idx<'_>, s: &mut u64| *s += lr * 100 + *j as u64;
                    let a = TeamThreadRange::new(m, 2..n).parallel_reduce(body, Sum::new());
                    let b = ThreadVectorRange::new(m, 2..n).parallel_reduce(body, Sum::new());
                    let c = TeamVectorRange::new(m, 2..n).parallel_reduce(body, Sum::new());
                    problems.check((a, b, c) == (want, want, want), || {
                        format!(
                            "team {lr}, thread {tr}: nested sums {:?}, expected {want}",
                            (a, b, c)
                        )
                    });
                    let mx = TeamThreadRange::new(m, n).parallel_reduce(
                        |j, s: &mut i64| *s = (*s).max(-((*j as i64 - 7).abs())),
                        Max::new(),
                    );
                    problems.check(mx == 0, || {
                        format!("team {lr}, thread {tr}: nested Max gave {mx}")
                    });
                    let empty =
                        TeamVectorRange::new(m, 5..5).parallel_reduce(|_, s: &mut f64| *s += 1.0, Sum::new());
                    problems.check(empty == 0.0, || {
                        format!("team {lr}, thread {tr}: an empty nested Sum gave {empty}")
                    });
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
            }
        }
        Ok(())
    })
}

/// Axiom 6: a nested scan calls the final pass once per index with the exclusive prefix
/// of the team's range, and returns the total on every participating thread.
pub fn nested_scan_matches_sequential_prefix<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let n = 19;
        let value = |lr: usize, j: usize| (lr * 10 + j) as i64 - 20;
        for ts in team_sizes(space) {
            for league in LEAGUES {
                let out: View<i64, 2> = View::new("nested-scan", [league, n])?;
                let finals: View<u32, 2> = View::new("nested-scan-finals", [league, n])?;
                let stores = out.atomic();
                let calls = finals.atomic();
                let problems = Problems::new();
                parallel_for("nested-scan", TeamPolicy::new(space.clone(), league, ts), |m| {
                    let (lr, tr) = (m.league_rank(), m.team_rank());
                    let want_total: i64 = (0..n).map(|j| value(lr, j)).sum();
                    let total: i64 =
                        TeamThreadRange::new(m, n).parallel_scan(|j, partial: &mut i64, is_final| {
                            if is_final {
                                stores.store([lr, *j], *partial);
                                calls.fetch_add([lr, *j], 1);
                            }
                            *partial += value(lr, *j);
                        });
                    problems.check(total == want_total, || {
                        format!(
                            "team {lr}, thread {tr}: TeamThreadRange total {total}, expected {want_total}"
                        )
                    });
                    let inclusive_last = ThreadVectorRange::new(m, 4..n)
                        .parallel_scan(|j, partial: &mut i64, _| *partial += value(lr, *j));
                    let want_tail: i64 = (4..n).map(|j| value(lr, j)).sum();
                    problems.check(inclusive_last == want_tail, || {
                        format!(
                            "team {lr}, thread {tr}: ThreadVectorRange total {inclusive_last} != {want_tail}"
                        )
                    });
                    let tv: i64 = TeamVectorRange::new(m, n)
                        .parallel_scan(|j, partial: &mut i64, _| *partial += value(lr, *j));
                    problems.check(tv == want_total, || {
                        format!(
                            "team {lr}, thread {tr}: TeamVectorRange scan total {tv}, expected {want_total}"
                        )
                    });
                })?;
                problems.into_outcome(&format!("league {league}, team size {ts}"))?;
                drop((stores, calls));
                let want: Vec<i64> = (0..league)
                    .flat_map(|lr| {
                        crate::util::exclusive_prefix(&(0..n).map(|j| value(lr, j)).collect::<Vec<_>>(), 0).0
                    })
                    .collect();
                same(&out.to_vec()?, &want, || {
                    format!("exclusive nested scan, league {league}, team size {ts}")
                })?;
                same(&finals.to_vec()?, &vec![1; league * n], || {
                    format!("final-pass calls per index, league {league}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// A team-level scan hands each index to the thread that owns it, so its tokens store the
/// scan's output into the team's row of a writer: an exclusive prefix over several blocks
/// per thread, equal to the sequential one.
pub fn nested_scan_stores_into_the_team_row<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        let value = |lr: usize, j: usize| ((lr * 7 + j * 3) % 11) as i64 - 5;
        for n in [0, 1, 16, 17, 100] {
            for ts in team_sizes(space) {
                let league = 3;
                let out: View<i64, 2> = View::new("scan-row", [league, n])?;
                parallel_for(
                    "scan-row",
                    (TeamPolicy::new(space.clone(), league, ts), (out.write(),)),
                    |(m, (o,))| {
                        let lr = m.league_rank();
                        let row = o.team_row(m.league_token());
                        let total =
                            TeamVectorRange::new(m, n).parallel_scan(|j, partial: &mut i64, is_final| {
                                if is_final {
                                    row.set(j, *partial);
                                }
                                *partial += value(lr, *j);
                            });
                        assert_eq!(
                            total,
                            (0..n).map(|j| value(lr, j)).sum::<i64>(),
                            "team {lr} total"
                        );
                    },
                )?;
                let want: Vec<i64> = (0..league)
                    .flat_map(|lr| {
                        crate::util::exclusive_prefix(&(0..n).map(|j| value(lr, j)).collect::<Vec<_>>(), 0).0
                    })
                    .collect();
                same(&out.to_vec()?, &want, || {
                    format!("scan into rows, n {n}, team size {ts}")
                })?;
            }
        }
        Ok(())
    })
}

/// Axiom 7: team and thread scratch hold at least what the policy requested, at both
/// levels, and that much can be allocated.
pub fn team_scratch_has_the_requested_size<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            let policy = TeamPolicy::new(space.clone(), 5, ts)
                .with_scratch_size(0, PerTeam(200), PerThread(48))
                .with_scratch_size(1, PerTeam(4096), PerThread(16));
            let problems = Problems::new();
            parallel_for("scratch-size", policy, |m| {
                let lr = m.league_rank();
                for (level, team, thread) in [(0, 200, 48), (1, 4096, 16)] {
                    let (tc, hc) = (
                        m.team_scratch(level).capacity(),
                        m.thread_scratch(level).capacity(),
                    );
                    problems.check(tc >= team && hc >= thread, || {
                        format!("team {lr}: level-{level} capacities ({tc}, {hc}) below ({team}, {thread})")
                    });
                    let a = m.team_scratch(level).alloc::<u64>(team / 8).map(|s| s.len());
                    let b = m.thread_scratch(level).alloc::<u64>(thread / 8).map(|s| s.len());
                    problems.check(a == Ok(team / 8) && b == Ok(thread / 8), || {
                        format!(
                            "team {lr}: level-{level} allocations of the requested sizes gave {a:?} and {b:?}"
                        )
                    });
                }
            })?;
            problems.into_outcome(&format!("team size {ts}"))?;
        }
        Ok(())
    })
}

/// Axiom 7: thread scratch is private: what a thread stores there is what it reads back
/// after a team barrier, whatever the other threads stored in theirs.
pub fn thread_scratch_is_private<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            let policy =
                TeamPolicy::new(space.clone(), 7, ts).with_scratch_size(0, PerTeam(0), PerThread(64));
            let problems = Problems::new();
            parallel_for("thread-scratch", policy, |m| {
                let (lr, tr) = (m.league_rank() as i64, m.team_rank() as i64);
                let mine = match m.thread_scratch(0).alloc::<i64>(8) {
                    Ok(s) => s,
                    Err(e) => return problems.report(format!("thread scratch of 8 i64: {e}")),
                };
                for k in 0..8 {
                    mine.set(k, lr * 1000 + tr * 10 + k as i64);
                }
                m.team_barrier();
                for k in 0..8 {
                    let got = mine.get(k);
                    problems.check(got == lr * 1000 + tr * 10 + k as i64, || {
                        format!("team {lr}, thread {tr}: thread scratch slot {k} holds {got}")
                    });
                }
            })?;
            problems.into_outcome(&format!("team size {ts}"))?;
        }
        Ok(())
    })
}

/// `parallel_reduce` over a team policy adds each team's contribution once, for static
/// and dynamic schedules and chunk sizes.
pub fn team_policy_reduce_sums_over_teams<S: FullSpace>(space: &S) -> Outcome {
    check(axiom!(), || {
        for ts in team_sizes(space) {
            for (schedule, chunk) in [
                (Schedule::Static, None),
                (Schedule::Static, Some(3)),
                (Schedule::Dynamic, Some(2)),
            ] {
                let league = 41;
                let mut policy = TeamPolicy::new(space.clone(), league, ts).with_schedule(schedule);
                if let Some(c) = chunk {
                    policy = policy.with_chunk_size(c);
                }
                let total = parallel_reduce(
                    "team-sum",
                    policy,
                    |m, acc: &mut usize| {
                        if m.team_rank() == 0 {
                            *acc += m.league_rank() + 1;
                        }
                    },
                    Sum::new(),
                )?;
                ensure_eq!(
                    total,
                    league * (league + 1) / 2,
                    "team reduction, team size {ts}, {schedule:?}, chunk {chunk:?}"
                );
            }
        }
        Ok(())
    })
}
