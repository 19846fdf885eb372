//! Team kernels: barriers, broadcast, team reductions, scratch (shared memory), nested loops
//! and scans, rows, slots and league-single stores.

use super::*;

#[test]
fn team_kernels_barriers_broadcast_and_team_reduce() -> Result<()> {
    let (Some(sums_m), Some(norm_m)) = (module::<row_sums>(), module::<team_norm>()) else {
        return Ok(());
    };
    let (rows, cols) = (9, 23);
    let a: Vec<i64> = (0..rows * cols).map(|k| (k as i64 * 13) % 29 - 14).collect();
    let af: Vec<f64> = a.iter().map(|&v| v as f64 * 0.5).collect();
    for team in [1, 2, 3] {
        let policy = TeamPolicy::new(RayonSpace::default(), rows, TeamSize::Fixed(team));
        if team > policy.team_size_max() {
            println!(
                "team size {team} skipped: the rayon pool allows {}",
                policy.team_size_max()
            );
            continue;
        }
        let (av, afv) = (view("a", [rows, cols], &a)?, view("af", [rows, cols], &af)?);
        let sums = View::<i64, 1>::new("sums", [rows])?;
        parallel_for(
            "row sums",
            (policy.clone(), (sums.atomic(), av.read())),
            row_sums::with::<RayonSpace>(cols),
        )?;
        let norm = parallel_reduce(
            "norm",
            (policy, (afv.read(),)),
            team_norm::with::<RayonSpace>(cols),
            Sum::<f64>::new(),
        )?;

        // Two blocks walk the nine teams; a block is a team of `team` threads.
        let grid = team_grid(2, team);
        let mut host = vec![0i64; rows];
        let mut ha = a.clone();
        let outcome = sums_m
            .launch_team_for(
                grid,
                rows,
                &mut [
                    HostArray::new(&mut host, &[rows]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols)],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        assert_eq!(sums.to_vec()?, host, "team size {team}");
        let mut haf = af.clone();
        let (outcome, partials) = norm_m
            .launch_team_reduce(
                grid,
                rows,
                &mut [HostArray::new(&mut haf, &[rows, cols])],
                &[Value::Usize(cols)],
                Value::F64(0.0),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        // Quarters of small integers: every grouping of the sums is exact.
        assert_eq!(join_f64(&partials, |x, y| x + y, 0.0), norm, "team size {team}");
    }
    // Teams larger than this machine's pool: the device side against the sums by hand.
    for team in [3usize, 4, 8] {
        let grid = team_grid(4, team);
        let mut host = vec![0i64; rows];
        let mut ha = a.clone();
        let outcome = sums_m
            .launch_team_for(
                grid,
                rows,
                &mut [
                    HostArray::new(&mut host, &[rows]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols)],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let want: Vec<i64> = (0..rows)
            .map(|r| {
                let row = &a[r * cols..(r + 1) * cols];
                let first: i64 = row.iter().step_by(team).sum();
                row.iter().sum::<i64>() * 1000 + first
            })
            .collect();
        assert_eq!(host, want, "team size {team}");
    }
    Ok(())
}

/// The bytes `reverse_rows` allocates: three `i32` (12 bytes), then `cols` `f64` from byte 16.
fn reverse_rows_bytes(cols: usize) -> usize {
    16 + 8 * cols
}

/// `reverse_rows` on the host side: a block's dynamic shared memory of `bytes`.
fn reverse_rows_device(
    m: &HostModule,
    team: usize,
    rows: usize,
    cols: usize,
    bytes: usize,
    a: &[f64],
) -> (Outcome, Vec<i64>) {
    let grid = team_grid(2, team);
    let mut out = vec![0i64; rows * cols];
    let mut ha = a.to_vec();
    let outcome = m
        .launch_team_for_scratch(
            grid,
            rows,
            Scratch {
                per_team: [bytes, 0],
                per_thread: [0, 0],
            },
            &mut [
                HostArray::new(&mut out, &[rows, cols]),
                HostArray::new(&mut ha, &[rows, cols]),
            ],
            &[Value::Usize(cols)],
        )
        .expect("arguments match");
    (outcome, out)
}

#[test]
fn team_scratch_is_shared_memory_between_barriers() -> Result<()> {
    let Some(m) = module::<reverse_rows>() else {
        return Ok(());
    };
    for (rows, cols) in [(0, 5), (5, 0), (1, 1), (7, 6), (9, 23)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 7) % 31) as f64 * 0.25 - 3.0)
            .collect();
        let want: Vec<i64> = (0..rows * cols)
            .map(|k| {
                let (r, c) = (k / cols, k % cols);
                (a[r * cols + cols - 1 - c] * 4.0) as i64 * 100 + r as i64 * 10 + 3
            })
            .collect();
        for team in [1usize, 2, 3, 4] {
            let bytes = reverse_rows_bytes(cols);
            let policy = TeamPolicy::new(RayonSpace::default(), rows, TeamSize::Fixed(team))
                .with_scratch_size(0, PerTeam(bytes), PerThread(0));
            if team <= policy.team_size_max() {
                let av = view("a", [rows, cols], &a)?;
                let out = View::<i64, 2>::new("out", [rows, cols])?;
                parallel_for(
                    "reverse rows",
                    (policy, (out.atomic(), av.read())),
                    reverse_rows::with::<RayonSpace>(cols),
                )?;
                assert_eq!(out.to_vec()?, want, "rayon, team size {team}, {rows}x{cols}");
            }
            let (outcome, host) = reverse_rows_device(&m, team, rows, cols, bytes, &a);
            assert_eq!(outcome, Outcome::Completed);
            assert_eq!(host, want, "team size {team}, {rows}x{cols}");
        }
        // Serial: one team at a time, the same scratch.
        let policy = TeamPolicy::new(Serial::default(), rows, TeamSize::Fixed(1)).with_scratch_size(
            0,
            PerTeam(reverse_rows_bytes(cols)),
            PerThread(0),
        );
        let av = view("a", [rows, cols], &a)?;
        let out = View::<i64, 2>::new("out", [rows, cols])?;
        parallel_for(
            "reverse rows",
            (policy, (out.atomic(), av.read())),
            reverse_rows::with::<Serial>(cols),
        )?;
        assert_eq!(out.to_vec()?, want, "serial, {rows}x{cols}");
    }
    Ok(())
}

#[test]
fn team_scratch_beyond_the_request_panics_natively_and_traps_on_the_device() -> Result<()> {
    let Some(m) = module::<reverse_rows>() else {
        return Ok(());
    };
    let (rows, cols) = (3, 4);
    let a = f64s(rows * cols, |k| k as f64);
    // A word short: the `f64` slice does not fit (a multiple of 8 bytes, which both sides
    // grant exactly).
    let bytes = reverse_rows_bytes(cols) - 8;
    let policy = TeamPolicy::new(Serial::default(), rows, TeamSize::Fixed(1)).with_scratch_size(
        0,
        PerTeam(bytes),
        PerThread(0),
    );
    let av = view("a", [rows, cols], &a)?;
    let out = View::<i64, 2>::new("out", [rows, cols])?;
    let native = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parallel_for(
            "reverse rows",
            (policy, (out.atomic(), av.read())),
            reverse_rows::with::<Serial>(cols),
        )
    }));
    // The panic of `unwrap` reaches the caller, or the backend reports it as an error.
    assert!(
        matches!(native, Err(_) | Ok(Err(_))),
        "the native allocation fails: {native:?}"
    );
    for team in [1, 3] {
        let (outcome, _) = reverse_rows_device(&m, team, rows, cols, bytes, &a);
        assert_eq!(outcome, Outcome::Trapped, "team size {team}");
    }
    Ok(())
}

#[test]
fn nested_team_loops_hand_indices_to_the_owning_thread() -> Result<()> {
    let (Some(rows_m), Some(red_m)) = (module::<nested_rows>(), module::<nested_reductions>()) else {
        return Ok(());
    };
    // Ranges across several blocks of 16 columns, one shorter than a block, one empty.
    for (rows, cols, skip) in [(3, 40, 0), (4, 37, 5), (2, 7, 0), (3, 9, 9), (0, 4, 0)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 11) % 23) as f64 * 0.3 - 2.0)
            .collect();
        for team in [1usize, 2, 3, 4] {
            // What both sides must compute, written out: column j on rank (j / 16) % team,
            // reductions over contiguous shares joined in rank order.
            let (want_rows, want_sums) = nested_by_hand(&a, rows, cols, skip, team);
            let (mut host, mut ha) = (vec![0.0; rows * cols], a.clone());
            team_device(
                &rows_m,
                team,
                rows,
                &mut [
                    HostArray::new(&mut host, &[rows, cols]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols), Value::Usize(skip)],
            );
            assert_eq!(
                bits(&host),
                bits(&want_rows),
                "team size {team}, {rows}x{cols} from {skip}"
            );
            let (mut host_sums, mut ha) = (vec![0.0; rows * 3], a.clone());
            team_device(
                &red_m,
                team,
                rows,
                &mut [
                    HostArray::new(&mut host_sums, &[rows, 3]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols)],
            );
            assert_eq!(
                bits(&host_sums),
                bits(&want_sums),
                "team size {team}, {rows}x{cols}"
            );

            let policy = TeamPolicy::new(RayonSpace::default(), rows, TeamSize::Fixed(team));
            if team > policy.team_size_max() {
                println!(
                    "team size {team} skipped natively: the rayon pool allows {}",
                    policy.team_size_max()
                );
                continue;
            }
            let av = view("a", [rows, cols], &a)?;
            let out = View::<f64, 2>::new("out", [rows, cols])?;
            parallel_for(
                "nested rows",
                (policy.clone(), (out.atomic(), av.read())),
                nested_rows::with::<RayonSpace>(cols, skip),
            )?;
            assert_eq!(bits(&out.to_vec()?), bits(&host), "rayon, team size {team}");
            let sums = View::<f64, 2>::new("sums", [rows, 3])?;
            parallel_for(
                "nested reductions",
                (policy, (sums.atomic(), av.read())),
                nested_reductions::with::<RayonSpace>(cols),
            )?;
            assert_eq!(bits(&sums.to_vec()?), bits(&host_sums), "rayon, team size {team}");
        }
    }
    Ok(())
}

/// `nested_rows` and `nested_reductions` computed by hand for teams of `team` threads.
fn nested_by_hand(a: &[f64], rows: usize, cols: usize, skip: usize, team: usize) -> (Vec<f64>, Vec<f64>) {
    let mut out = vec![0.0; rows * cols];
    let mut sums = vec![0.0; rows * 3];
    // The host backends' contiguous share of `n` indices for rank `r`.
    let share = |n: usize, r: usize| {
        let (base, extra) = (n / team, n % team);
        let lo = base * r + r.min(extra);
        lo..lo + base + usize::from(r < extra)
    };
    for row in 0..rows {
        let x = |j: usize| a[row * cols + j];
        for j in skip..cols {
            let mut near = 0.0;
            for d in 0..3 {
                near += x((j + d) % cols);
            }
            out[row * cols + j] = 0.0 + (near * 0.5 + (((j / 16) % team) * 1000) as f64);
        }
        let mut sum = 0.0;
        let mut top = f64::NEG_INFINITY;
        for r in 0..team {
            let mut part = 0.0;
            let mut best = f64::NEG_INFINITY;
            for j in share(cols, r) {
                part += x(j) * 0.1;
            }
            for j in share(cols - 1.min(cols), r) {
                best = best.max(x(j + 1));
            }
            sum = if r == 0 { part } else { sum + part };
            top = top.max(best);
        }
        let lows: Vec<i64> = (0..team)
            .map(|r| {
                (0..cols)
                    .map(|j| (x(j) * 8.0) as i64 - r as i64)
                    .fold(i64::MAX, Ord::min)
            })
            .collect();
        let (most, fewest) = (
            lows.iter().copied().max().unwrap_or(0),
            lows.iter().copied().min().unwrap_or(0),
        );
        sums[row * 3] = 0.0 + sum;
        sums[row * 3 + 1] = 0.0 + top;
        sums[row * 3 + 2] = 0.0 + (most * 3 - fewest) as f64;
    }
    (out, sums)
}

/// The scratch `scratch_levels` asks for with teams of `team` threads over `cols` columns:
/// level 0 a sum per thread, level 1 the row; per thread `cols` `u32` and two `f64`.
fn scratch_levels_request(team: usize, cols: usize) -> Scratch {
    Scratch {
        per_team: [8 * team, 8 * cols],
        per_thread: [4 * cols, 16],
    }
}

/// `scratch_levels` by hand: exact, since the values are small multiples of a quarter.
fn scratch_levels_by_hand(a: &[f64], rows: usize, cols: usize, team: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for row in 0..rows {
        let line: Vec<f64> = (0..cols).map(|j| a[row * cols + j] * 0.5).collect();
        let parts: Vec<f64> = (0..team)
            .map(|r| {
                (r..cols)
                    .step_by(team)
                    .fold(0.0, |s, j| s + line[j] * (r + 1) as f64)
            })
            .collect();
        for k in 0..cols {
            let lower = parts[..k % team].iter().fold(0.0, |s, p| s + p);
            out[row * cols + k] = 0.0 + (line[cols - 1 - k] + lower);
        }
    }
    out
}

/// `scratch_levels` natively on `space` with teams of `team`, its output (`None` when the
/// space cannot make such teams); `short` takes 8 bytes off the per-thread level-0 request.
fn scratch_levels_native<S>(
    space: S,
    a: &[f64],
    rows: usize,
    cols: usize,
    team: usize,
    short: bool,
) -> Result<Option<Vec<f64>>>
where
    S: ExecutionSpace + hoplite::ParallelFor<TeamPolicy<S>>,
{
    let request = scratch_levels_request(team, cols);
    let thread0 = request.per_thread[0] - if short { 8 } else { 0 };
    let policy = TeamPolicy::new(space, rows, TeamSize::Fixed(team))
        .with_scratch_size(0, PerTeam(request.per_team[0]), PerThread(thread0))
        .with_scratch_size(1, PerTeam(request.per_team[1]), PerThread(request.per_thread[1]));
    if team > policy.team_size_max() {
        return Ok(None);
    }
    let av = view("a", [rows, cols], a)?;
    let out = View::<f64, 2>::new("out", [rows, cols])?;
    parallel_for(
        "scratch levels",
        (policy, (out.atomic(), av.read())),
        scratch_levels::with::<S>(cols),
    )?;
    Ok(Some(out.to_vec()?))
}

#[test]
fn thread_scratch_and_level_one_follow_the_team_part() -> Result<()> {
    let Some(m) = module::<scratch_levels>() else {
        return Ok(());
    };
    for (rows, cols) in [(0, 3), (3, 0), (1, 1), (4, 7), (5, 18)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 5) % 17) as f64 * 0.25 - 2.0)
            .collect();
        for team in [1usize, 2, 3, 4] {
            let want = scratch_levels_by_hand(&a, rows, cols, team);
            let grid = team_grid(2, team);
            let (mut host, mut ha) = (vec![0.0; rows * cols], a.clone());
            let outcome = m
                .launch_team_for_scratch(
                    grid,
                    rows,
                    scratch_levels_request(team, cols),
                    &mut [
                        HostArray::new(&mut host, &[rows, cols]),
                        HostArray::new(&mut ha, &[rows, cols]),
                    ],
                    &[Value::Usize(cols)],
                )
                .expect("arguments match");
            assert_eq!(outcome, Outcome::Completed);
            assert_eq!(
                bits(&host),
                bits(&want),
                "device, team size {team}, {rows}x{cols}"
            );
            if let Some(native) = scratch_levels_native(RayonSpace::default(), &a, rows, cols, team, false)? {
                assert_eq!(
                    bits(&native),
                    bits(&want),
                    "rayon, team size {team}, {rows}x{cols}"
                );
            }
        }
        let serial = scratch_levels_native(Serial::default(), &a, rows, cols, 1, false)?;
        assert_eq!(
            serial.map(|v| bits(&v)),
            Some(bits(&scratch_levels_by_hand(&a, rows, cols, 1))),
            "serial, {rows}x{cols}"
        );
    }
    // A thread's level-0 request 8 bytes short of its columns: the native allocation fails,
    // the device traps.
    let (rows, cols) = (2, 6);
    let a = f64s(rows * cols, |k| k as f64);
    let native = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scratch_levels_native(Serial::default(), &a, rows, cols, 1, true)
    }));
    assert!(
        matches!(native, Err(_) | Ok(Err(_))),
        "the native allocation fails: {native:?}"
    );
    for team in [1usize, 3] {
        let mut request = scratch_levels_request(team, cols);
        request.per_thread[0] -= 8;
        let (mut host, mut ha) = (vec![0.0; rows * cols], a.clone());
        let outcome = m
            .launch_team_for_scratch(
                team_grid(2, team),
                rows,
                request,
                &mut [
                    HostArray::new(&mut host, &[rows, cols]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols)],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Trapped, "team size {team}");
    }
    Ok(())
}

#[test]
fn nested_scans_team_vector_loops_and_team_scan_match_the_host() -> Result<()> {
    let Some(m) = module::<nested_scans>() else {
        return Ok(());
    };
    // Four threads, so teams of up to four run natively (oversubscribed on a smaller machine).
    let space = RayonSpace::with_threads(4)?;
    // Ranges across several blocks of 16 columns, short ones, one starting past its blocks'
    // start, an empty one; values with many bits, so a different grouping would show.
    for (rows, cols, skip) in [(3, 70, 0), (2, 37, 5), (2, 7, 0), (3, 20, 20), (1, 1, 0)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 37) % 101) as f64 * 0.013 - 0.4)
            .collect();
        for team in [1usize, 2, 3, 4] {
            let (mut out, mut totals, mut ha) = (vec![0.0; rows * cols], vec![0.0; rows * 9], a.clone());
            team_device(
                &m,
                team,
                rows,
                &mut [
                    HostArray::new(&mut out, &[rows, cols]),
                    HostArray::new(&mut totals, &[rows, 9]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols), Value::Usize(skip)],
            );

            let policy = TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team));
            let av = view("a", [rows, cols], &a)?;
            let native_out = View::<f64, 2>::new("out", [rows, cols])?;
            let native_totals = View::<f64, 2>::new("totals", [rows, 9])?;
            parallel_for(
                "nested scans",
                (policy, (native_out.atomic(), native_totals.atomic(), av.read())),
                nested_scans::with::<RayonSpace>(cols, skip),
            )?;
            let what = format!("team size {team}, {rows}x{cols} from {skip}");
            assert_eq!(bits(&out), bits(&native_out.to_vec()?), "{what}");
            assert_eq!(bits(&totals), bits(&native_totals.to_vec()?), "{what}");
            // The owner of each scanned column is recorded: `team_owner(j, team, 16)`.
            for row in 0..rows {
                for j in skip..cols {
                    let owner = ((j / 16) % team) as f64 * 1000.0;
                    let prefix = out[row * cols + j] - 0.25 - owner;
                    assert!((0.0..1000.0).contains(&(prefix + 500.0)), "{what}: column {j}");
                }
            }
        }
    }
    Ok(())
}

#[test]
fn team_rows_of_writers_store_on_the_owning_thread() -> Result<()> {
    let Some(m) = module::<row_offsets>() else {
        return Ok(());
    };
    let space = RayonSpace::with_threads(4)?;
    for (rows, cols) in [(3, 70), (2, 17), (4, 5), (2, 0), (0, 3)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 29) % 97) as f64 * 0.017 - 0.6)
            .collect();
        for team in [1usize, 2, 3, 4] {
            let (mut out, mut ha) = (vec![0.0; rows * cols], a.clone());
            team_device(
                &m,
                team,
                rows,
                &mut [
                    HostArray::new(&mut out, &[rows, cols]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[],
            );
            let av = view("a", [rows, cols], &a)?;
            let native = View::<f64, 2>::new("out", [rows, cols])?;
            parallel_for(
                "row offsets",
                (
                    TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team)),
                    (native.write(), av.read()),
                ),
                row_offsets::with::<RayonSpace>(),
            )?;
            assert_eq!(
                bits(&out),
                bits(&native.to_vec()?),
                "team size {team}, {rows}x{cols}"
            );
        }
    }
    // A writer with fewer rows than the league: `team_row` panics natively, traps on the device.
    let (rows, cols) = (2, 4);
    let a = f64s(3 * cols, |k| k as f64);
    let av = view("a", [3, cols], &a)?;
    let native = View::<f64, 2>::new("out", [rows, cols])?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parallel_for(
            "row offsets",
            (
                TeamPolicy::new(Serial::default(), 3, TeamSize::Fixed(1)),
                (native.write(), av.read()),
            ),
            row_offsets::with::<Serial>(),
        )
    }));
    assert!(
        matches!(result, Err(_) | Ok(Err(_))),
        "the native row is refused: {result:?}"
    );
    let (mut out, mut ha) = (vec![0.0; rows * cols], a.clone());
    let outcome = m
        .launch_team_for(
            Grid {
                blocks: [1, 1, 1],
                threads: [2, 1, 1],
            },
            3,
            &mut [
                HostArray::new(&mut out, &[rows, cols]),
                HostArray::new(&mut ha, &[3, cols]),
            ],
            &[],
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Trapped);
    Ok(())
}

#[test]
fn team_slots_store_at_each_threads_own_slot() -> Result<()> {
    let Some(m) = module::<slot_sums>() else {
        return Ok(());
    };
    let space = RayonSpace::with_threads(4)?;
    for (rows, cols) in [(3, 11), (5, 2), (1, 0), (0, 4)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 13) % 23) as f64 * 0.031 - 0.2)
            .collect();
        for team in [1usize, 2, 3, 4] {
            let (mut out, mut ha) = (vec![0.0; rows * team], a.clone());
            team_device(
                &m,
                team,
                rows,
                &mut [
                    HostArray::new(&mut out, &[rows, team]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols)],
            );
            let av = view("a", [rows, cols], &a)?;
            let native = View::<f64, 2>::new("partial", [rows, team])?;
            parallel_for(
                "slot sums",
                (
                    TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team)),
                    (native.team_slots(), av.read()),
                ),
                slot_sums::with::<RayonSpace>(cols),
            )?;
            assert_eq!(
                bits(&out),
                bits(&native.to_vec()?),
                "team size {team}, {rows}x{cols}"
            );
        }
    }
    // A view with a slot too few per team: the native access panics, the device traps.
    let (rows, cols, team) = (2, 3, 2);
    let a = f64s(rows * cols, |k| k as f64);
    let av = view("a", [rows, cols], &a)?;
    let narrow = View::<f64, 2>::new("partial", [rows, team - 1])?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parallel_for(
            "slot sums",
            (
                TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team)),
                (narrow.team_slots(), av.read()),
            ),
            slot_sums::with::<RayonSpace>(cols),
        )
    }));
    assert!(
        matches!(result, Err(_) | Ok(Err(_))),
        "the native slot is refused: {result:?}"
    );
    let (mut out, mut ha) = (vec![0.0; rows * (team - 1)], a.clone());
    let outcome = m
        .launch_team_for(
            team_grid(2, team),
            rows,
            &mut [
                HostArray::new(&mut out, &[rows, team - 1]),
                HostArray::new(&mut ha, &[rows, cols]),
            ],
            &[Value::Usize(cols)],
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Trapped);
    Ok(())
}

#[test]
fn league_single_stores_once_per_team_at_the_league_rank() -> Result<()> {
    let Some(m) = module::<league_totals>() else {
        return Ok(());
    };
    let space = RayonSpace::with_threads(4)?;
    for (rows, cols) in [(5, 37), (3, 4), (2, 0), (0, 3)] {
        let a: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 17) % 29) as f64 * 0.043 - 0.5)
            .collect();
        for team in [1usize, 2, 3, 4] {
            let (mut out, mut ha) = (vec![0.0; rows], a.clone());
            team_device(
                &m,
                team,
                rows,
                &mut [
                    HostArray::new(&mut out, &[rows]),
                    HostArray::new(&mut ha, &[rows, cols]),
                ],
                &[Value::Usize(cols)],
            );
            let av = view("a", [rows, cols], &a)?;
            let native = View::<f64, 1>::new("totals", [rows])?;
            parallel_for(
                "league totals",
                (
                    TeamPolicy::new(space.clone(), rows, TeamSize::Fixed(team)),
                    (native.write(), av.read()),
                ),
                league_totals::with::<RayonSpace>(cols),
            )?;
            assert_eq!(
                bits(&out),
                bits(&native.to_vec()?),
                "team size {team}, {rows}x{cols}"
            );
        }
    }
    // A writer shorter than the league: the native store panics, the device traps.
    let (rows, cols) = (3, 2);
    let a = f64s(rows * cols, |k| k as f64);
    let av = view("a", [rows, cols], &a)?;
    let short = View::<f64, 1>::new("totals", [rows - 1])?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parallel_for(
            "league totals",
            (
                TeamPolicy::new(Serial::default(), rows, TeamSize::Fixed(1)),
                (short.write(), av.read()),
            ),
            league_totals::with::<Serial>(cols),
        )
    }));
    assert!(
        matches!(result, Err(_) | Ok(Err(_))),
        "the native store is refused: {result:?}"
    );
    let (mut out, mut ha) = (vec![0.0; rows - 1], a.clone());
    let outcome = m
        .launch_team_for(
            team_grid(2, 2),
            rows,
            &mut [
                HostArray::new(&mut out, &[rows - 1]),
                HostArray::new(&mut ha, &[rows, cols]),
            ],
            &[Value::Usize(cols)],
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Trapped);
    Ok(())
}
