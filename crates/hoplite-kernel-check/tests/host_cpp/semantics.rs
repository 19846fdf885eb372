//! Rust's semantics in the generated C: integer wrapping, division and shifts, casts, float
//! functions, control flow, traps, atomics and wrapping reductions.

use super::*;

fn edge_i32() -> Vec<i32> {
    vec![
        0,
        1,
        -1,
        7,
        -7,
        13,
        i32::MAX,
        i32::MIN,
        i32::MAX - 1,
        i32::MIN + 1,
        31,
        32,
        33,
        -33,
        64,
        1 << 20,
        -(1 << 30),
    ]
}

#[test]
fn integer_semantics_wrap_divide_and_shift_like_rust() -> Result<()> {
    let Some(m) = module::<int_ops>() else {
        return Ok(());
    };
    let vals = edge_i32();
    let (a, b): (Vec<i32>, Vec<i32>) = vals
        .iter()
        .flat_map(|&x| vals.iter().map(move |&y| (x, y)))
        .unzip();
    let n = a.len();
    let (av, bv) = (view("a", [n], &a)?, view("b", [n], &b)?);
    let out = View::<i32, 1>::new("out", [n])?;
    parallel_for(
        "int ops",
        (
            RangePolicy::new(Serial::default(), 0..n),
            (out.write(), av.read(), bv.read()),
        ),
        int_ops::with(),
    )?;
    let mut host = vec![0i32; n];
    let (mut ha, mut hb) = (a.clone(), b.clone());
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [
            HostArray::new(&mut host, &[n]),
            HostArray::new(&mut ha, &[n]),
            HostArray::new(&mut hb, &[n]),
        ],
        &[],
    );
    assert_eq!(out.to_vec()?, host);
    Ok(())
}

#[test]
fn unsigned_and_wide_arithmetic() -> Result<()> {
    let Some(m) = module::<wide_ops>() else {
        return Ok(());
    };
    let a: Vec<u64> = vec![
        0,
        1,
        2,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
        0xdead_beef,
        12_345_678_901_234,
        7,
    ];
    let n = a.len();
    let av = view("a", [n], &a)?;
    let out = View::<u64, 1>::new("out", [n])?;
    parallel_for(
        "wide",
        (
            RangePolicy::new(Serial::default(), 0..n),
            (out.write(), av.read()),
        ),
        wide_ops::with(),
    )?;
    let mut host = vec![0u64; n];
    let mut ha = a.clone();
    run_for(
        &m,
        ONE_BLOCK,
        &[0],
        &[n],
        &mut [HostArray::new(&mut host, &[n]), HostArray::new(&mut ha, &[n])],
        &[],
    );
    assert_eq!(out.to_vec()?, host);
    Ok(())
}

#[test]
fn casts_saturate_and_map_nan_to_zero() -> Result<()> {
    let Some(m) = module::<casts>() else { return Ok(()) };
    let x = vec![
        0.0,
        -0.0,
        1.5,
        -1.5,
        2.5e9,
        -2.5e9,
        4.3e9,
        1e20,
        -1e20,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        2147483647.9,
        -2147483648.9,
        16777217.0,
        1.8e19,
    ];
    let n = x.len();
    let xv = view("x", [n], &x)?;
    let out = View::<i64, 1>::new("out", [n])?;
    parallel_for(
        "casts",
        (
            RangePolicy::new(Serial::default(), 0..n),
            (out.write(), xv.read()),
        ),
        casts::with(),
    )?;
    let mut host = vec![0i64; n];
    let mut hx = x.clone();
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [HostArray::new(&mut host, &[n]), HostArray::new(&mut hx, &[n])],
        &[],
    );
    assert_eq!(out.to_vec()?, host);
    Ok(())
}

#[test]
fn float_functions_nan_and_infinities() -> Result<()> {
    let Some(m) = module::<float_math>() else {
        return Ok(());
    };
    let x = vec![
        0.0,
        1.0,
        -2.5,
        0.1,
        3.75,
        1e-300,
        -1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        42.0,
    ];
    let y: Vec<f32> = x.iter().map(|&v| (v * 0.5) as f32).collect();
    let n = x.len();
    let (xv, yv) = (view("x", [n], &x)?, view("y", [n], &y)?);
    let out = View::<f64, 1>::new("out", [n])?;
    parallel_for(
        "float math",
        (
            RangePolicy::new(Serial::default(), 0..n),
            (out.write(), xv.read(), yv.read()),
        ),
        float_math::with(),
    )?;
    let mut host = vec![0.0; n];
    let (mut hx, mut hy) = (x.clone(), y.clone());
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [
            HostArray::new(&mut host, &[n]),
            HostArray::new(&mut hx, &[n]),
            HostArray::new(&mut hy, &[n]),
        ],
        &[],
    );
    assert_eq!(bits(&out.to_vec()?), bits(&host));
    Ok(())
}

#[test]
fn control_flow_breaks_continues_and_returns_early() -> Result<()> {
    let Some(m) = module::<control>() else {
        return Ok(());
    };
    let n = 60;
    for limit in [0u32, 4, 5, 9] {
        let out = View::<i64, 1>::new("out", [n])?;
        parallel_for(
            "control",
            (RangePolicy::new(Serial::default(), 0..n), (out.write(),)),
            control::with(limit),
        )?;
        let mut host = vec![0i64; n];
        run_for(
            &m,
            GRID_1D,
            &[0],
            &[n],
            &mut [HostArray::new(&mut host, &[n])],
            &[Value::U32(limit)],
        );
        assert_eq!(out.to_vec()?, host, "limit {limit}");
    }
    Ok(())
}

#[test]
fn division_by_zero_panics_natively_and_traps_on_the_device() -> Result<()> {
    let Some(m) = module::<divide>() else {
        return Ok(());
    };
    let n = 8;
    let out = View::<i32, 1>::new("out", [n])?;
    let native = parallel_for(
        "divide",
        (RangePolicy::new(Serial::default(), 0..n), (out.write(),)),
        divide::with(0),
    );
    assert!(matches!(native, Err(Error::KernelPanicked { .. })), "{native:?}");
    let mut host = vec![0i32; n];
    let outcome = m
        .launch_for(
            ONE_BLOCK,
            &[0],
            &[n],
            &mut [HostArray::new(&mut host, &[n])],
            &[Value::I32(0)],
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Trapped);
    // And with a divisor, both agree.
    parallel_for(
        "divide",
        (RangePolicy::new(Serial::default(), 0..n), (out.write(),)),
        divide::with(-3),
    )?;
    run_for(
        &m,
        ONE_BLOCK,
        &[0],
        &[n],
        &mut [HostArray::new(&mut host, &[n])],
        &[Value::I32(-3)],
    );
    assert_eq!(out.to_vec()?, host);
    Ok(())
}

#[test]
fn atomic_histogram() -> Result<()> {
    let Some(m) = module::<histogram>() else {
        return Ok(());
    };
    let n = 1000;
    let x: Vec<u32> = (0..n as u32).map(|k| k.wrapping_mul(2_654_435_761)).collect();
    let xv = view("x", [n], &x)?;
    let bins = View::<u64, 1>::new("bins", [7])?;
    parallel_for(
        "hist",
        (
            RangePolicy::new(RayonSpace::default(), 0..n),
            (bins.atomic(), xv.read()),
        ),
        histogram::with(7),
    )?;
    let mut host = vec![0u64; 7];
    let mut hx = x.clone();
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [HostArray::new(&mut host, &[7]), HostArray::new(&mut hx, &[n])],
        &[Value::Usize(7)],
    );
    assert_eq!(bins.to_vec()?, host);
    assert_eq!(host.iter().sum::<u64>(), n as u64);
    Ok(())
}

#[test]
fn wrapping_reduction() -> Result<()> {
    let Some(m) = module::<wrapping_sum>() else {
        return Ok(());
    };
    let x: Vec<i32> = vec![i32::MAX, i32::MAX, 5, i32::MIN, -9, i32::MAX / 2];
    let n = x.len();
    let xv = view("x", [n], &x)?;
    let native = parallel_reduce(
        "wsum",
        (RangePolicy::new(Serial::default(), 0..n), (xv.read(),)),
        wrapping_sum::with(),
        Sum::<i32>::new(),
    );
    let mut hx = x.clone();
    let partials = device_partials(
        &m,
        ONE_BLOCK,
        &[0],
        &[n],
        &mut [HostArray::new(&mut hx, &[n])],
        &[],
        Value::I32(0),
    );
    assert_eq!(
        partials,
        [Value::I32(
            x.iter().fold(0i32, |a, v| a.wrapping_add(v.wrapping_mul(3)))
        )]
    );
    // The native launch wraps inside the kernel too; only the backend's join (`Sum`) may check.
    if let Ok(total) = native {
        assert_eq!(Value::I32(total), partials[0]);
    }
    Ok(())
}
