//! Range, MDRange and scan kernels: lookups, a triad, a dot product, stencils, ranks 3 and 4,
//! while loops, checked indices and two-pass scans.

use super::*;

#[test]
fn lookup_table_in_a_wider_launch() -> Result<()> {
    let Some(m) = module::<poly_lookup>() else {
        return Ok(());
    };
    let n = 37;
    let coef = [0.5, -1.25, 0.125];
    let y = View::<f64, 1>::new("y", [n])?;
    let table = view("coef", [3], &coef)?;
    parallel_for(
        "poly",
        (
            RangePolicy::new(RayonSpace::default(), 0..n),
            (y.write(), table.lookup()),
        ),
        poly_lookup::with(),
    )?;
    let mut host = vec![f64::NAN; n];
    let mut hc = coef.to_vec();
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [HostArray::new(&mut host, &[n]), HostArray::new(&mut hc, &[3])],
        &[],
    );
    assert_eq!(bits(&y.to_vec()?), bits(&host));
    Ok(())
}

#[test]
fn lookup_past_its_extent_panics_natively_and_traps_on_the_device() -> Result<()> {
    let Some(m) = module::<gather_lookup>() else {
        return Ok(());
    };
    let table = view("table", [3], &[1.0, 2.0, 3.0])?;
    let y = View::<f64, 1>::new("y", [5])?;
    let err = parallel_for(
        "gather",
        (
            RangePolicy::new(Serial::default(), 0..5),
            (y.write(), table.lookup()),
        ),
        gather_lookup::with(),
    )
    .expect_err("index 3 is past the table");
    assert!(err.to_string().contains("table"), "{err}");
    let (mut host, mut ht) = (vec![0.0; 5], vec![1.0, 2.0, 3.0]);
    let outcome = m
        .launch_for(
            GRID_1D,
            &[0],
            &[5],
            &mut [HostArray::new(&mut host, &[5]), HostArray::new(&mut ht, &[3])],
            &[],
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Trapped);
    Ok(())
}

#[test]
fn triad_range_for() -> Result<()> {
    let Some(m) = module::<triad>() else { return Ok(()) };
    let n = 101;
    let (b, c) = (f64s(n, |k| k as f64 * 0.25), f64s(n, |k| (k % 7) as f64 - 2.5));
    for space in ["serial", "rayon"] {
        let a = View::<f64, 1>::new("a", [n])?;
        let (bv, cv) = (view("b", [n], &b)?, view("c", [n], &c)?);
        let launch = (a.write(), bv.read(), cv.read());
        if space == "serial" {
            parallel_for(
                "triad",
                (RangePolicy::new(Serial::default(), 0..n), launch),
                triad::with(0.75),
            )?;
        } else {
            parallel_for(
                "triad",
                (RangePolicy::new(RayonSpace::default(), 0..n), launch),
                triad::with(0.75),
            )?;
        }
        let mut host = vec![f64::NAN; n];
        let (mut hb, mut hc) = (b.clone(), c.clone());
        run_for(
            &m,
            GRID_1D,
            &[0],
            &[n],
            &mut [
                HostArray::new(&mut host, &[n]),
                HostArray::new(&mut hb, &[n]),
                HostArray::new(&mut hc, &[n]),
            ],
            &[Value::F64(0.75)],
        );
        assert_eq!(bits(&a.to_vec()?), bits(&host), "{space}");
    }
    Ok(())
}

/// The parameters a CUDA launch of `triad` and `dot` packs (`hoplite_cuda::params`, the
/// functions the GPU path calls, over `hoplite_abi`'s packer), with host addresses in place of
/// device ones, run the generated C on the host: what the host check proves is the parameter
/// block a GPU gets, not a packer of its own.
#[test]
fn the_parameters_a_cuda_launch_packs_run_the_generated_c() -> Result<()> {
    use hoplite_cuda::params::{HandleArg, IterationArgs, KernelArg, ScalarArg, pack_for, pack_reduce};
    use hoplite_cuda::reduce::ReduceWalk;
    use hoplite_kernel_check::Element;

    fn handle<T: Element>(data: &mut [T], access: hoplite::device_kernel::HandleAccess) -> KernelArg {
        KernelArg::Handle(HandleArg {
            ptr: data.as_mut_ptr() as usize as u64,
            access,
            element: T::TYPE,
            extents: vec![data.len() as u64],
            strides: vec![1],
        })
    }
    use hoplite::device_kernel::HandleAccess::{Read, Write};

    let n = 37;
    let range = IterationArgs::Range {
        begin: 0,
        end: n as u64,
    };
    if let Some(m) = module::<triad>() {
        let (mut b, mut c) = (f64s(n, |k| k as f64 * 0.25), f64s(n, |k| (k % 7) as f64 - 2.5));
        let mut a = vec![f64::NAN; n];
        let args = [
            handle(&mut a, Write),
            handle(&mut b, Read),
            handle(&mut c, Read),
            KernelArg::Scalar(ScalarArg::F64(0.75)),
        ];
        let mut params = pack_for::<triad>(&range, &args).expect("the arguments fit");
        // SAFETY: packed for `triad` by the GPU path's packer; the three handles cover the
        // live vectors above, which nothing else touches during the launch.
        let outcome = unsafe { m.launch_packed(GRID_1D, 0, &mut params) };
        assert_eq!(outcome, Outcome::Completed);
        let expected: Vec<f64> = (0..n).map(|k| b[k] + 0.75 * c[k]).collect();
        assert_eq!(bits(&a), bits(&expected));
    }
    if let Some(m) = module::<dot>() {
        // Small integers: every order of the sum gives the same bits.
        let (mut x, mut y) = (f64s(n, |k| k as f64), f64s(n, |k| (k % 3) as f64));
        let args = [handle(&mut x, Read), handle(&mut y, Read)];
        let mut params =
            pack_reduce::<dot, f64>(&range, &args, &0.0, Some(DeviceJoin::Sum), ReduceWalk::Strided)
                .expect("the arguments fit");
        // With the device join, one partial per block; the pointer is the last parameter.
        let mut partials = vec![f64::NAN; 3];
        let last = params.offsets().len() - 1;
        params.set(last, &(partials.as_mut_ptr() as usize as u64).to_le_bytes());
        // SAFETY: packed for `dot` by the GPU path's packer; the handles cover the live
        // vectors above, and the partials hold one value per block of `GRID_1D`.
        let outcome = unsafe { m.launch_packed(GRID_1D, 0, &mut params) };
        assert_eq!(outcome, Outcome::Completed);
        let expected: f64 = (0..n).map(|k| x[k] * y[k]).sum();
        assert_eq!(partials.iter().sum::<f64>(), expected);
    }
    Ok(())
}

#[test]
fn dot_reduce_and_empty_range() -> Result<()> {
    let Some(m) = module::<dot>() else { return Ok(()) };
    let n = 257;
    // Integer-valued data: every summation order gives the same exact total.
    let (x, y) = (f64s(n, |k| (k % 13) as f64), f64s(n, |k| (k % 5) as f64 - 2.0));
    let (xv, yv) = (view("x", [n], &x)?, view("y", [n], &y)?);
    for (lo, hi) in [(0, n), (10, 200), (5, 5)] {
        let native = parallel_reduce(
            "dot",
            (
                RangePolicy::new(RayonSpace::default(), lo..hi),
                (xv.read(), yv.read()),
            ),
            dot::with(),
            Sum::<f64>::new(),
        )?;
        let (mut hx, mut hy) = (x.clone(), y.clone());
        let partials = device_partials(
            &m,
            GRID_1D,
            &[lo],
            &[hi],
            &mut [HostArray::new(&mut hx, &[n]), HostArray::new(&mut hy, &[n])],
            &[],
            Value::F64(0.0),
        );
        assert_eq!(partials.len(), GRID_1D.thread_count());
        assert_eq!(join_f64(&partials, |a, b| a + b, 0.0), native, "range {lo}..{hi}");
        // With a device join each block folds its threads' values in thread order, and one
        // partial per block comes back: the same folds, bit for bit.
        let per_block = GRID_1D.threads[0] as usize;
        for (join, fold) in [
            (DeviceJoin::Sum, (|a, b| a + b) as fn(f64, f64) -> f64),
            (DeviceJoin::Max, f64::max),
            (DeviceJoin::Min, f64::min),
        ] {
            let (mut hx, mut hy) = (x.clone(), y.clone());
            let (outcome, blocks) = m
                .launch_reduce_joined(
                    GRID_1D,
                    (&[lo], &[hi]),
                    &mut [HostArray::new(&mut hx, &[n]), HostArray::new(&mut hy, &[n])],
                    &[],
                    Value::F64(0.0),
                    join,
                )
                .expect("arguments match");
            assert_eq!(outcome, Outcome::Completed);
            assert_eq!(blocks.len(), GRID_1D.blocks[0] as usize);
            for (b, block) in blocks.iter().enumerate() {
                let threads = &partials[b * per_block..(b + 1) * per_block];
                let want = match threads[0] {
                    Value::F64(first) => join_f64(&threads[1..], fold, first),
                    ref other => panic!("unexpected partial {other:?}"),
                };
                assert_eq!(block, &Value::F64(want), "{join:?}, block {b}, range {lo}..{hi}");
            }
        }
    }
    let e = m.launch_reduce_joined(
        GRID_1D,
        (&[0], &[n]),
        &mut [],
        &[],
        Value::F64(0.0),
        DeviceJoin::BitOr,
    );
    assert!(e.is_err(), "a bitwise join of doubles is refused");
    Ok(())
}

#[test]
fn laplace_mdrange2_neighbors() -> Result<()> {
    let Some(m) = module::<laplace>() else {
        return Ok(());
    };
    let (rows, cols) = (9, 13);
    let u = f64s(rows * cols, |k| ((k * 7) % 23) as f64 * 0.5);
    let uv = View::<f64, 2>::from_slice("u", [rows, cols], &u)?;
    let out = View::<f64, 2>::new("out", [rows, cols])?;
    parallel_for(
        "laplace",
        (
            MDRangePolicy::new(Serial::default(), [1, 1], [rows - 1, cols - 1]),
            (out.write(), uv.read()),
        ),
        laplace::with(),
    )?;
    let mut host = vec![0.0; rows * cols];
    let mut hu = u.clone();
    run_for(
        &m,
        GRID_2D,
        &[1, 1],
        &[rows - 1, cols - 1],
        &mut [
            HostArray::new(&mut host, &[rows, cols]),
            HostArray::new(&mut hu, &[rows, cols]),
        ],
        &[],
    );
    assert_eq!(bits(&out.to_vec()?), bits(&host));
    // Column-major arrays: the entry walks the first index on x, and every element lands at
    // its column-major place.
    let mut host_col = vec![0.0; rows * cols];
    let mut hu_col = to_column_major(&u, &[rows, cols]);
    run_for(
        &m,
        GRID_2D,
        &[1, 1],
        &[rows - 1, cols - 1],
        &mut [
            HostArray::column_major(&mut host_col, &[rows, cols]),
            HostArray::column_major(&mut hu_col, &[rows, cols]),
        ],
        &[],
    );
    assert_eq!(bits(&host_col), bits(&to_column_major(&host, &[rows, cols])));
    Ok(())
}

/// A row-major array of `extents` laid out column-major.
fn to_column_major<T: Copy + Default>(row_major: &[T], extents: &[usize]) -> Vec<T> {
    let mut out = vec![T::default(); row_major.len()];
    for (k, &v) in row_major.iter().enumerate() {
        // The index of element k, last dimension fastest.
        let mut rest = k;
        let mut index = vec![0; extents.len()];
        for d in (0..extents.len()).rev() {
            index[d] = rest % extents[d];
            rest /= extents[d];
        }
        let mut at = 0;
        for d in (0..extents.len()).rev() {
            at = at * extents[d] + index[d];
        }
        out[at] = v;
    }
    out
}

#[test]
fn mdrange3_and_flattened_rank4() -> Result<()> {
    if let Some(m) = module::<index_code>() {
        let ext = [3, 4, 5];
        let out = View::<i64, 3>::new("out", ext)?;
        parallel_for(
            "code3",
            (
                MDRangePolicy::new(RayonSpace::default(), [0, 1, 2], ext),
                (out.write(),),
            ),
            index_code::with(-3),
        )?;
        let mut host = vec![0i64; 60];
        run_for(
            &m,
            GRID_3D,
            &[0, 1, 2],
            &ext,
            &mut [HostArray::new(&mut host, &ext)],
            &[Value::I64(-3)],
        );
        assert_eq!(out.to_vec()?, host);
        let mut host_col = vec![0i64; 60];
        run_for(
            &m,
            GRID_3D,
            &[0, 1, 2],
            &ext,
            &mut [HostArray::column_major(&mut host_col, &ext)],
            &[Value::I64(-3)],
        );
        assert_eq!(host_col, to_column_major(&host, &ext), "first index on x");
    }
    if let Some(m) = module::<index_code4>() {
        let ext = [2, 3, 4, 5];
        let out = View::<u32, 4>::new("out", ext)?;
        parallel_for(
            "code4",
            (
                MDRangePolicy::new(Serial::default(), [1, 0, 1, 0], ext),
                (out.write(),),
            ),
            index_code4::with(),
        )?;
        let mut host = vec![0u32; 120];
        run_for(
            &m,
            GRID_1D,
            &[1, 0, 1, 0],
            &ext,
            &mut [HostArray::new(&mut host, &ext)],
            &[],
        );
        assert_eq!(out.to_vec()?, host);
        let mut host_col = vec![0u32; 120];
        run_for(
            &m,
            GRID_1D,
            &[1, 0, 1, 0],
            &ext,
            &mut [HostArray::column_major(&mut host_col, &ext)],
            &[],
        );
        assert_eq!(
            host_col,
            to_column_major(&host, &ext),
            "flattened, first index fastest"
        );
    }
    Ok(())
}

#[test]
fn collatz_while_loops_reduce_u64() -> Result<()> {
    let Some(m) = module::<collatz_steps>() else {
        return Ok(());
    };
    let n = 500;
    let native = parallel_reduce(
        "collatz",
        RangePolicy::new(Serial::default(), 0..n),
        collatz_steps::with(),
        Sum::<u64>::new(),
    )?;
    let (outcome, partials) = m
        .launch_reduce(GRID_1D, &[0], &[n], &mut [], &[], Value::U64(0))
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
    let total: u64 = partials
        .iter()
        .map(|p| match p {
            Value::U64(v) => *v,
            other => panic!("unexpected partial {other:?}"),
        })
        .sum();
    assert_eq!(total, native);
    Ok(())
}

#[test]
fn checked_plain_indices_and_f32() -> Result<()> {
    let Some(m) = module::<transpose_sum>() else {
        return Ok(());
    };
    let k = 6;
    let mat: Vec<f32> = (0..k * k).map(|v| v as f32 * 0.5 - 3.0).collect();
    let vec_: Vec<f32> = (0..k).map(|v| v as f32 * 1.25).collect();
    let (mv, vv) = (view("m", [k, k], &mat)?, view("v", [k], &vec_)?);
    let out = View::<f32, 2>::new("out", [k, k])?;
    parallel_for(
        "transpose",
        (
            MDRangePolicy::new(Serial::default(), [0, 0], [k, k]),
            (out.write(), mv.read(), vv.read()),
        ),
        transpose_sum::with(),
    )?;
    let mut host = vec![0f32; k * k];
    let (mut hm, mut hv) = (mat.clone(), vec_.clone());
    run_for(
        &m,
        GRID_2D,
        &[0, 0],
        &[k, k],
        &mut [
            HostArray::new(&mut host, &[k, k]),
            HostArray::new(&mut hm, &[k, k]),
            HostArray::new(&mut hv, &[k]),
        ],
        &[],
    );
    assert_eq!(out.to_vec()?, host);
    Ok(())
}

#[test]
fn scans_in_two_passes_match_native_scans() -> Result<()> {
    let (Some(ex), Some(inc)) = (module::<exclusive_prefix>(), module::<inclusive_prefix>()) else {
        return Ok(());
    };
    let n = 103;
    let x: Vec<i64> = (0..n as i64).map(|k| (k * 31) % 17 - 8).collect();
    let xf: Vec<f64> = x.iter().map(|&v| v as f64 * 0.5).collect();
    for range in [0..n, 7..90, 4..4, 0..1] {
        let (xv, xfv) = (view("x", [n], &x)?, view("xf", [n], &xf)?);
        let (out, outf) = (
            View::<i64, 1>::new("out", [n])?,
            View::<f64, 1>::new("outf", [n])?,
        );
        let total = parallel_scan(
            "exclusive",
            (
                RangePolicy::new(RayonSpace::default(), range.clone()),
                (out.write(), xv.read()),
            ),
            exclusive_prefix::with(),
        )?;
        let totalf = parallel_scan(
            "inclusive",
            (
                RangePolicy::new(Serial::default(), range.clone()),
                (outf.write(), xfv.read()),
            ),
            inclusive_prefix::with(),
        )?;
        let (mut host, mut hostf) = (vec![0i64; n], vec![0f64; n]);
        let (mut hx, mut hxf) = (x.clone(), xf.clone());
        let (outcome, host_total) = ex
            .launch_scan(
                GRID_1D,
                range.clone(),
                &mut [HostArray::new(&mut host, &[n]), HostArray::new(&mut hx, &[n])],
                &[],
                Value::I64(0),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        assert_eq!(host_total, Value::I64(total), "{range:?}");
        assert_eq!(out.to_vec()?, host, "{range:?}");
        let (outcome, host_totalf) = inc
            .launch_scan(
                GRID_2D,
                range.clone(),
                &mut [HostArray::new(&mut hostf, &[n]), HostArray::new(&mut hxf, &[n])],
                &[],
                Value::F64(0.0),
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        // Halves of small integers: every grouping of the sums is exact.
        assert_eq!(host_totalf, Value::F64(totalf), "{range:?}");
        assert_eq!(bits(&outf.to_vec()?), bits(&hostf), "{range:?}");
    }
    Ok(())
}
