//! The reducers on the device: NaN under min and max, location ties and empty ranges, joins
//! in a body, logical and product reducers, on ranges and teams.

use super::*;

#[test]
fn max_reduce_skips_nan() -> Result<()> {
    let Some(m) = module::<max_of>() else {
        return Ok(());
    };
    let x = vec![f64::NAN, 3.0, -1.0, f64::NAN, 7.5, 2.0, f64::NAN];
    let n = x.len();
    let xv = view("x", [n], &x)?;
    let native = parallel_reduce(
        "max",
        (RangePolicy::new(Serial::default(), 0..n), (xv.read(),)),
        max_of::with(),
        Max::<f64>::new(),
    )?;
    let mut hx = x.clone();
    let init = f64::NEG_INFINITY;
    let partials = device_partials(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [HostArray::new(&mut hx, &[n])],
        &[],
        Value::F64(init),
    );
    assert_eq!(join_f64(&partials, f64::max, init), native);
    assert_eq!(native, 7.5);
    Ok(())
}

/// Joins `(value, location)` partials in thread order with the launch's reducer.
fn join_loc<T: Copy, R: Reducer<Value = ValLoc<T>>>(
    reducer: &R,
    partials: &[(Value, Option<usize>)],
    unwrap: impl Fn(Value) -> T,
) -> ValLoc<T> {
    let mut total = reducer.init();
    for &(val, loc) in partials {
        reducer.join(
            &mut total,
            ValLoc {
                val: unwrap(val),
                loc,
            },
        );
    }
    total
}

#[test]
fn min_loc_and_max_loc_ties_nan_and_empty_ranges() -> Result<()> {
    let (Some(min), Some(max)) = (module::<argmin>(), module::<argmax_distance>()) else {
        return Ok(());
    };
    let n = 40;
    // Ties: the minimum -3.0 at 7, 19 and 33; NaN at several places.
    let x: Vec<f64> = (0..n)
        .map(|k| {
            if k % 12 == 7 {
                -3.0
            } else if k % 9 == 4 {
                f64::NAN
            } else {
                (k % 5) as f64
            }
        })
        .collect();
    let xi: Vec<i32> = (0..n as i32).map(|k| (k * 7) % 11 - 5).collect();
    let as_f64 = |v: Value| match v {
        Value::F64(v) => v,
        other => panic!("unexpected {other:?}"),
    };
    let as_i32 = |v: Value| match v {
        Value::I32(v) => v,
        other => panic!("unexpected {other:?}"),
    };
    for range in [0..n, 8..n, 20..34, 5..5] {
        let (xv, xiv) = (view("x", [n], &x)?, view("xi", [n], &xi)?);
        let native = parallel_reduce(
            "argmin",
            (
                RangePolicy::new(RayonSpace::default(), range.clone()),
                (xv.read(),),
            ),
            argmin::with(),
            MinLoc::<f64>::new(),
        )?;
        let mut hx = x.clone();
        let (outcome, partials) = min
            .launch_reduce_loc(
                GRID_1D,
                range.clone(),
                &mut [HostArray::new(&mut hx, &[n])],
                &[],
                Value::F64(f64::MAX),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let host = join_loc(&MinLoc::<f64>::new(), &partials, as_f64);
        assert_eq!(
            (host.val.to_bits(), host.loc),
            (native.val.to_bits(), native.loc),
            "{range:?}"
        );

        let native = parallel_reduce(
            "argmax",
            (RangePolicy::new(Serial::default(), range.clone()), (xiv.read(),)),
            argmax_distance::with(2),
            MaxLoc::<i32>::new(),
        )?;
        let mut hxi = xi.clone();
        let (outcome, partials) = max
            .launch_reduce_loc(
                GRID_2D,
                range.clone(),
                &mut [HostArray::new(&mut hxi, &[n])],
                &[Value::I32(2)],
                Value::I32(i32::MIN),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        assert_eq!(
            join_loc(&MaxLoc::<i32>::new(), &partials, as_i32),
            native,
            "{range:?}"
        );
    }
    Ok(())
}

/// Joins `(min, max)` partials in thread order with `MinMax`'s join.
fn join_min_max<T: Copy>(
    partials: &[(Value, Value)],
    r: &MinMax<T>,
    get: impl Fn(&Value) -> T,
) -> MinMaxScalar<T>
where
    MinMax<T>: Reducer<Value = MinMaxScalar<T>>,
{
    let mut total = r.init();
    for (min, max) in partials {
        r.join(
            &mut total,
            MinMaxScalar {
                min: get(min),
                max: get(max),
            },
        );
    }
    total
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::F64(x) => *x,
        other => panic!("unexpected partial {other:?}"),
    }
}

#[test]
fn min_max_accumulators_skip_nan_on_ranges_and_teams() -> Result<()> {
    let (Some(range_m), Some(team_m)) = (module::<extremes>(), module::<team_extremes>()) else {
        return Ok(());
    };
    let n = 50;
    let mut x = f64s(n, |k| ((k * 17) % 23) as f64 - 11.5);
    x[0] = f64::NAN;
    x[7] = f64::NAN;
    x[31] = 11.0; // equal values on both sides
    for (range, scale) in [(0..n, 1.0), (0..n, -2.0), (3..4, 1.0), (0..1, 1.0), (5..5, 1.0)] {
        let xv = view("x", [n], &x)?;
        let reducer = MinMax::<f64>::new();
        let native = parallel_reduce(
            "extremes",
            (
                RangePolicy::new(RayonSpace::default(), range.clone()),
                (xv.read(),),
            ),
            extremes::with(scale),
            MinMax::<f64>::new(),
        )?;
        let serial = parallel_reduce(
            "extremes",
            (RangePolicy::new(Serial::default(), range.clone()), (xv.read(),)),
            extremes::with(scale),
            MinMax::<f64>::new(),
        )?;
        let mut hx = x.clone();
        let (outcome, partials) = range_m
            .launch_reduce_min_max(
                GRID_1D,
                range.clone(),
                &mut [HostArray::new(&mut hx, &[n])],
                &[Value::F64(scale)],
                (Value::F64(f64::INFINITY), Value::F64(f64::NEG_INFINITY)),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let device = join_min_max(&partials, &reducer, as_f64);
        for other in [native, serial] {
            assert_eq!(
                (device.min.to_bits(), device.max.to_bits()),
                (other.min.to_bits(), other.max.to_bits()),
                "{range:?} x {scale}: {device:?} and {other:?}"
            );
        }
    }

    let (rows, cols) = (5, 21);
    let a: Vec<i32> = (0..rows * cols).map(|k| ((k * 29) % 41) as i32 - 20).collect();
    for team in [1usize, 2, 3, 4] {
        let grid = team_grid(2, team);
        let mut ha = a.clone();
        let (outcome, partials) = team_m
            .launch_reduce_min_max(
                grid,
                0..rows,
                &mut [HostArray::new(&mut ha, &[rows, cols])],
                &[Value::Usize(cols)],
                (Value::I32(i32::MAX), Value::I32(i32::MIN)),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let device = join_min_max(&partials, &MinMax::<i32>::new(), |v| match v {
            Value::I32(x) => *x,
            other => panic!("unexpected partial {other:?}"),
        });
        // By hand: column j runs on rank (j / 16) % team.
        let want = (0..rows * cols).fold(
            MinMaxScalar {
                min: i32::MAX,
                max: i32::MIN,
            },
            |mut acc, k| {
                acc.update(a[k] - ((k % cols / 16) % team) as i32);
                acc
            },
        );
        assert_eq!(device, want, "team size {team}");
        let policy = TeamPolicy::new(RayonSpace::default(), rows, TeamSize::Fixed(team));
        if team <= policy.team_size_max() {
            let av = view("a", [rows, cols], &a)?;
            let native = parallel_reduce(
                "team extremes",
                (policy, (av.read(),)),
                team_extremes::with::<RayonSpace>(cols),
                MinMax::<i32>::new(),
            )?;
            assert_eq!(native, want, "rayon, team size {team}");
        }
    }
    Ok(())
}

#[test]
fn team_reduce_max_and_min_skip_nan() -> Result<()> {
    let Some(m) = module::<team_max_min>() else {
        return Ok(());
    };
    let nan = f64::NAN;
    #[rustfmt::skip]
    let a = [
        nan, 1.0, 2.0, 3.0,
        3.0, nan, -1.0, nan,
        nan, nan, nan, nan,
        2.0, 2.0, 5.0, 5.0,
    ];
    let rows = 4;
    for team in [1usize, 2, 3, 4] {
        // By hand: the values of ranks 0..team joined in rank order, as `Max` and `Min` join.
        let mut want = vec![0.0; rows * 2];
        for r in 0..rows {
            let vals = &a[r * 4..r * 4 + team];
            let (mut big, mut small) = (vals[0], vals[0]);
            for &v in &vals[1..] {
                let mut both = MinMaxScalar { min: small, max: big };
                both.update(v);
                (big, small) = (both.max, both.min);
            }
            want[r * 2] = 0.0 + big;
            want[r * 2 + 1] = 0.0 + small;
        }
        let (mut host, mut ha) = (vec![0.0; rows * 2], a.to_vec());
        team_device(
            &m,
            team,
            rows,
            &mut [
                HostArray::new(&mut host, &[rows, 2]),
                HostArray::new(&mut ha, &[rows, 4]),
            ],
            &[],
        );
        assert_eq!(bits(&host), bits(&want), "team size {team}");
        let policy = TeamPolicy::new(RayonSpace::default(), rows, TeamSize::Fixed(team));
        if team <= policy.team_size_max() {
            let av = view("a", [rows, 4], &a)?;
            let out = View::<f64, 2>::new("out", [rows, 2])?;
            parallel_for(
                "team max min",
                (policy, (out.atomic(), av.read())),
                team_max_min::with::<RayonSpace>(),
            )?;
            assert_eq!(bits(&out.to_vec()?), bits(&want), "rayon, team size {team}");
        }
    }
    Ok(())
}

/// A `MinMaxLocScalar`'s value bits and locations, to compare NaN too.
fn min_max_loc_bits(v: &MinMaxLocScalar<f64>) -> (u64, Option<usize>, u64, Option<usize>) {
    (v.min_val.to_bits(), v.min_loc, v.max_val.to_bits(), v.max_loc)
}

#[test]
fn min_max_loc_ties_nan_and_empty_ranges() -> Result<()> {
    let Some(m) = module::<extremes_at>() else {
        return Ok(());
    };
    let n = 50;
    // Ties of the minimum (-3 at 7, 19, 31, 43) and of the maximum (4 at 4, 9, 14, ...), NaN
    // at several places.
    let x: Vec<f64> = (0..n)
        .map(|k| {
            if k % 12 == 7 {
                -3.0
            } else if k % 11 == 5 {
                f64::NAN
            } else {
                (k % 5) as f64
            }
        })
        .collect();
    let reducer = MinMaxLoc::<f64>::new();
    for (range, scale) in [(0..n, 1.0), (8..n, -0.5), (20..34, 2.0), (5..5, 1.0), (5..6, 1.0)] {
        let xv = view("x", [n], &x)?;
        let native = parallel_reduce(
            "extremes at",
            (
                RangePolicy::new(RayonSpace::default(), range.clone()),
                (xv.read(),),
            ),
            extremes_at::with(scale),
            MinMaxLoc::<f64>::new(),
        )?;
        let mut hx = x.clone();
        let (outcome, partials) = m
            .launch_reduce_min_max_loc(
                GRID_1D,
                range.clone(),
                &mut [HostArray::new(&mut hx, &[n])],
                &[Value::F64(scale)],
                (Value::F64(f64::INFINITY), Value::F64(f64::NEG_INFINITY)),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let mut device = reducer.init();
        for ((min, min_loc), (max, max_loc)) in &partials {
            reducer.join(
                &mut device,
                MinMaxLocScalar {
                    min_val: as_f64(min),
                    min_loc: *min_loc,
                    max_val: as_f64(max),
                    max_loc: *max_loc,
                },
            );
        }
        assert_eq!(
            min_max_loc_bits(&device),
            min_max_loc_bits(&native),
            "{range:?} scaled by {scale}"
        );
    }
    Ok(())
}

#[test]
fn reducer_joins_in_a_body_match_the_host_reducers() -> Result<()> {
    let Some(m) = module::<row_joins>() else {
        return Ok(());
    };
    let (rows, cols) = (23, 9);
    // Quarters, so every grouping of the sums is exact; NaN in a few places, which `Max`
    // skips and the `as i64` cast turns into 0.
    let x: Vec<f64> = (0..rows * cols)
        .map(|k| {
            if k % 17 == 3 {
                f64::NAN
            } else {
                ((k * 7) % 19) as f64 * 0.25 - 2.0
            }
        })
        .collect();
    let xv = view("x", [rows, cols], &x)?;
    for (lo, hi) in [(0, rows), (4, 17), (6, 6)] {
        let native = parallel_reduce(
            "row joins",
            (RangePolicy::new(RayonSpace::default(), lo..hi), (xv.read(),)),
            row_joins::with(cols),
            Sum::<f64>::new(),
        )?;
        let mut hx = x.clone();
        let partials = device_partials(
            &m,
            GRID_1D,
            &[lo],
            &[hi],
            &mut [HostArray::new(&mut hx, &[rows, cols])],
            &[Value::Usize(cols)],
            Value::F64(0.0),
        );
        assert_eq!(join_f64(&partials, |a, b| a + b, 0.0), native, "rows {lo}..{hi}");
    }
    Ok(())
}

/// `team_logic`'s integers and float bits.
type LogicOut = (Vec<u64>, Vec<u64>);
/// A native `team_logic` launch into its two outputs.
type LogicLaunch<'a> = dyn FnMut(&View<u64, 2>, &View<f64, 2>) -> Result<()> + 'a;

/// `team_logic` on the host side and natively (serial for a team of one, rayon for every
/// team size it offers): `(out, fout)`, bit for bit comparable.
fn team_logic_runs(
    m: &HostModule,
    team: usize,
    rows: usize,
    cols: usize,
    a: &[i64],
    x: &[f64],
) -> Result<(Vec<LogicOut>, LogicOut)> {
    let (mut out, mut fout, mut ha, mut hx) =
        (vec![0u64; rows * 8], vec![0.0; rows * 3], a.to_vec(), x.to_vec());
    team_device(
        m,
        team,
        rows,
        &mut [
            HostArray::new(&mut out, &[rows, 8]),
            HostArray::new(&mut fout, &[rows, 3]),
            HostArray::new(&mut ha, &[rows, cols]),
            HostArray::new(&mut hx, &[rows, cols]),
        ],
        &[Value::Usize(cols)],
    );
    let device = (out, bits(&fout));
    let (av, xv) = (view("a", [rows, cols], a)?, view("x", [rows, cols], x)?);
    let mut native = Vec::new();
    let mut run = |policy_out: &mut LogicLaunch<'_>| -> Result<()> {
        let (o, f) = (
            View::<u64, 2>::new("out", [rows, 8])?,
            View::<f64, 2>::new("fout", [rows, 3])?,
        );
        policy_out(&o, &f)?;
        native.push((o.to_vec()?, bits(&f.to_vec()?)));
        Ok(())
    };
    if team == 1 {
        run(&mut |o, f| {
            parallel_for(
                "team logic",
                (
                    TeamPolicy::new(Serial::default(), rows, TeamSize::Fixed(1)),
                    (o.atomic(), f.atomic(), av.read(), xv.read()),
                ),
                team_logic::with::<Serial>(cols),
            )
        })?;
    }
    let policy = TeamPolicy::new(RayonSpace::default(), rows, TeamSize::Fixed(team));
    if team <= policy.team_size_max() {
        run(&mut |o, f| {
            parallel_for(
                "team logic",
                (policy.clone(), (o.atomic(), f.atomic(), av.read(), xv.read())),
                team_logic::with::<RayonSpace>(cols),
            )
        })?;
    }
    Ok((native, device))
}

#[test]
fn team_prod_and_logical_reducers_match_the_native_joins() -> Result<()> {
    let Some(m) = module::<team_logic>() else {
        return Ok(());
    };
    // Ranges shorter than a team, across several shares, of one column, and no teams at all.
    for (rows, cols) in [(3usize, 5usize), (2, 17), (4, 1), (0, 3)] {
        let a: Vec<i64> = (0..rows * cols).map(|k| ((k * 7) % 11) as i64 - 5).collect();
        let x: Vec<f64> = (0..rows * cols)
            .map(|k| match k % 7 {
                3 => f64::NAN,
                5 => -0.7,
                _ => 1.1 + k as f64 * 0.013,
            })
            .collect();
        for team in [1usize, 2, 3, 4] {
            let (native, (out, fout)) = team_logic_runs(&m, team, rows, cols, &a, &x)?;
            assert!(team > 1 || !native.is_empty(), "a team of one runs natively");
            for (n_out, n_fout) in &native {
                assert_eq!(&out, n_out, "integers, {rows}x{cols}, team size {team}");
                assert_eq!(&fout, n_fout, "floats, {rows}x{cols}, team size {team}");
            }
            for row in 0..rows {
                // Every rank adds the empty product, 1.0.
                assert_eq!(f64::from_bits(fout[row * 3 + 2]), team as f64);
                if team == 1 {
                    let bools = out[row * 8 + 2];
                    // An empty `LAnd` is true, an empty `LOr` false.
                    assert_eq!((bools >> 6) & 3, 1, "row {row}");
                    // An empty `BAnd<u32>` has every bit set.
                    assert_eq!(out[row * 8 + 6] >> 32, u64::from(u32::MAX), "row {row}");
                }
            }
        }
    }
    Ok(())
}

#[test]
fn logical_and_product_launch_reducers() -> Result<()> {
    let (Some(all_m), Some(any_m), Some(prod_m)) = (
        module::<all_below>(),
        module::<any_multiple>(),
        module::<wrapping_product>(),
    ) else {
        return Ok(());
    };
    let n = 61;
    let x = f64s(n, |k| if k == 40 { f64::NAN } else { k as f64 * 0.5 });
    let xv = view("x", [n], &x)?;
    let u: Vec<u32> = (0..n as u32).map(|k| k * 2 + 1).collect();
    let uv = view("u", [n], &u)?;
    // Small factors: the joins of the native `Prod` check overflow in debug builds.
    let p: Vec<i64> = (0..n as i64)
        .map(|k| if k % 9 == 4 { 0 } else { -(k % 2) })
        .collect();
    let pv = view("p", [n], &p)?;
    let join_bool = |partials: &[Value], and: bool| {
        partials.iter().fold(and, |acc, v| match v {
            Value::Bool(b) if and => acc && *b,
            Value::Bool(b) => acc || *b,
            other => panic!("unexpected partial {other:?}"),
        })
    };
    for (lo, hi, limit, k) in [
        (0, n, 100.0, 7),
        (0, 30, 10.0, 2),
        (41, n, 40.0, 200),
        (5, 5, 0.0, 3),
        (0, n, 20.0, 1000),
    ] {
        let range = || RangePolicy::new(RayonSpace::default(), lo..hi);
        let native_all = parallel_reduce(
            "all",
            (range(), (xv.read(),)),
            all_below::with(limit),
            LAnd::new(),
        )?;
        let (mut hx, mut hu, mut hp) = (x.clone(), u.clone(), p.clone());
        let partials = device_partials(
            &all_m,
            GRID_1D,
            &[lo],
            &[hi],
            &mut [HostArray::new(&mut hx, &[n])],
            &[Value::F64(limit)],
            Value::Bool(true),
        );
        assert_eq!(
            join_bool(&partials, true),
            native_all,
            "all below {limit} in {lo}..{hi}: {partials:?}"
        );
        let want_all = x[lo..hi].iter().all(|&v| v < limit);
        assert_eq!(native_all, want_all);
        let native_any = parallel_reduce("any", (range(), (uv.read(),)), any_multiple::with(k), LOr::new())?;
        let partials = device_partials(
            &any_m,
            GRID_1D,
            &[lo],
            &[hi],
            &mut [HostArray::new(&mut hu, &[n])],
            &[Value::U32(k)],
            Value::Bool(false),
        );
        assert_eq!(
            join_bool(&partials, false),
            native_any,
            "a multiple of {k} in {lo}..{hi}"
        );
        assert_eq!(native_any, u[lo..hi].iter().any(|v| v % k == 0));
        let native_prod = parallel_reduce(
            "prod",
            (range(), (pv.read(),)),
            wrapping_product::with(),
            Prod::<i64>::new(),
        )?;
        let partials = device_partials(
            &prod_m,
            GRID_1D,
            &[lo],
            &[hi],
            &mut [HostArray::new(&mut hp, &[n])],
            &[],
            Value::I64(1),
        );
        let device_prod = partials.iter().fold(1i64, |acc, v| match v {
            Value::I64(v) => acc.wrapping_mul(*v),
            other => panic!("unexpected partial {other:?}"),
        });
        assert_eq!(device_prod, native_prod, "product over {lo}..{hi}");
        assert_eq!(native_prod, p[lo..hi].iter().map(|v| v * 3 + 1).product::<i64>());
    }
    Ok(())
}

#[test]
fn min_max_first_last_loc_ties_go_to_the_last_maximum() -> Result<()> {
    let Some(m) = module::<extremes_first_last>() else {
        return Ok(());
    };
    assert_eq!(
        <extremes_first_last as DeviceKernel>::PATTERN,
        hoplite_core::device_kernel::DevicePattern::ReduceMinMaxFirstLastLoc(
            hoplite_core::device_kernel::ScalarType::F64
        )
    );
    let n = 50;
    // Ties of the minimum (-3 at 7, 19, 31, 43) and of the maximum (4 at 4, 9, 14, ...), NaN
    // at several places.
    let x: Vec<f64> = (0..n)
        .map(|k| {
            if k % 12 == 7 {
                -3.0
            } else if k % 11 == 5 {
                f64::NAN
            } else {
                (k % 5) as f64
            }
        })
        .collect();
    let reducer = MinMaxFirstLastLoc::<f64>::new();
    let xv = view("x", [n], &x)?;
    let cases = [
        (0..n, 1.0),
        (8..n, -0.5),
        (20..34, 2.0),
        (5..5, 1.0),
        (5..6, 1.0),
        (16..17, 1.0),
    ];
    for (range, scale) in cases {
        let mut natives = Vec::new();
        natives.push(parallel_reduce(
            "first last",
            (RangePolicy::new(Serial::default(), range.clone()), (xv.read(),)),
            extremes_first_last::with(scale),
            reducer,
        )?);
        natives.push(parallel_reduce(
            "first last",
            (
                RangePolicy::new(RayonSpace::default(), range.clone()),
                (xv.read(),),
            ),
            extremes_first_last::with(scale),
            reducer,
        )?);
        for grid in [ONE_BLOCK, GRID_1D] {
            let mut hx = x.clone();
            let (outcome, partials) = m
                .launch_reduce_min_max_loc(
                    grid,
                    range.clone(),
                    &mut [HostArray::new(&mut hx, &[n])],
                    &[Value::F64(scale)],
                    (Value::F64(f64::INFINITY), Value::F64(f64::NEG_INFINITY)),
                )
                .expect("arguments match");
            assert_eq!(outcome, Outcome::Completed);
            let mut device = reducer.init();
            for ((min, min_loc), (max, max_loc)) in &partials {
                reducer.join(
                    &mut device,
                    MinMaxLocScalar {
                        min_val: as_f64(min),
                        min_loc: *min_loc,
                        max_val: as_f64(max),
                        max_loc: *max_loc,
                    },
                );
            }
            for native in &natives {
                assert_eq!(
                    min_max_loc_bits(&device),
                    min_max_loc_bits(native),
                    "{range:?} scaled by {scale}"
                );
            }
        }
    }
    // By hand over the whole range: the first -3 and the last 4 (not NaN at 49 % 11 == 5).
    let all = &x;
    let last_four = (0..n).rev().find(|&k| all[k] == 4.0);
    let whole = parallel_reduce(
        "first last",
        (RangePolicy::new(Serial::default(), 0..n), (xv.read(),)),
        extremes_first_last::with(1.0),
        reducer,
    )?;
    assert_eq!((whole.min_val, whole.min_loc), (-3.0, Some(7)));
    assert_eq!((whole.max_val, whole.max_loc), (4.0, last_four));
    Ok(())
}
