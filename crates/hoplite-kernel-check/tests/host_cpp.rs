//! Each kernel runs twice on the same inputs: natively (serial and rayon backends) and as its
//! generated CUDA C compiled by the host C++ compiler under the host header. The results must
//! be equal, bit for bit. Skipped, with a printed reason, when there is no C++ compiler.

mod kernels;

use std::path::PathBuf;

use hoplite::device_kernel::DeviceJoin;
use hoplite::prelude::*;
use hoplite::{DeviceKernel, RayonSpace, Serial};
use hoplite_kernel_check::{Grid, HostArray, HostModule, Outcome, Scratch, Value, host_compiler};
use kernels::*;

/// Compiles `K` for the host, or says why the check is skipped.
fn module<K: DeviceKernel>() -> Option<HostModule> {
    let Some(cxx) = host_compiler() else {
        println!("skipped: no host C++ compiler (set CXX, or install g++) to run the generated CUDA C");
        return None;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-host");
    match HostModule::compile::<K>(&cxx, &dir) {
        Ok(m) => Some(m),
        Err(e) => panic!("{e}\n--- generated source ---\n{}", K::cuda_source()),
    }
}

const ONE_BLOCK: Grid = Grid {
    blocks: [1, 1, 1],
    threads: [1, 1, 1],
};
/// A grid that covers ranges with several blocks and grid-stride steps.
const GRID_1D: Grid = Grid {
    blocks: [3, 1, 1],
    threads: [4, 1, 1],
};
const GRID_2D: Grid = Grid {
    blocks: [2, 3, 1],
    threads: [3, 2, 1],
};
const GRID_3D: Grid = Grid {
    blocks: [2, 1, 2],
    threads: [2, 3, 1],
};

/// A host view holding `data`.
fn view<T: hoplite::ViewValue, const R: usize>(
    label: &str,
    extents: [usize; R],
    data: &[T],
) -> Result<View<T, R>> {
    View::from_slice(label, extents, data)
}

fn f64s(n: usize, f: impl Fn(usize) -> f64) -> Vec<f64> {
    (0..n).map(f).collect()
}

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
            pack_reduce::<dot, f64>(&range, &args, &0.0, Some(DeviceJoin::Sum)).expect("the arguments fit");
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

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Joins host partials in thread order, as a backend joins them.
/// Launches a `parallel_reduce` kernel on the host side, checks that it completed and
/// returns the partials in thread order.
fn device_partials(
    m: &HostModule,
    grid: Grid,
    begin: &[usize],
    end: &[usize],
    arrays: &mut [HostArray<'_>],
    scalars: &[Value],
    init: Value,
) -> Vec<Value> {
    let (outcome, partials) = m
        .launch_reduce(grid, begin, end, arrays, scalars, init)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
    partials
}

/// Launches a `parallel_for` kernel on the host side and checks that it completed.
fn run_for(
    m: &HostModule,
    grid: Grid,
    begin: &[usize],
    end: &[usize],
    arrays: &mut [HostArray<'_>],
    scalars: &[Value],
) {
    let outcome = m
        .launch_for(grid, begin, end, arrays, scalars)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
}

fn join_f64(partials: &[Value], join: impl Fn(f64, f64) -> f64, init: f64) -> f64 {
    partials.iter().fold(init, |a, p| match p {
        Value::F64(v) => join(a, *v),
        other => panic!("unexpected partial {other:?}"),
    })
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

/// A grid of `blocks` blocks, each one team of `team` threads.
fn team_grid(blocks: u32, team: usize) -> Grid {
    Grid {
        blocks: [blocks, 1, 1],
        threads: [team as u32, 1, 1],
    }
}

/// Runs a team `parallel_for` kernel over `rows` teams of `team` threads on the host side.
fn team_device(m: &HostModule, team: usize, rows: usize, arrays: &mut [HostArray<'_>], scalars: &[Value]) {
    let grid = team_grid(2, team);
    let outcome = m
        .launch_team_for(grid, rows, arrays, scalars)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
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

/// The lock words of a token of `size` ids, all free.
fn token_words(size: usize) -> Vec<u32> {
    vec![0; size.div_ceil(32)]
}

/// The host arrays of a token-claims kernel (`token_claims`, `team_token_claims`): each id's
/// owner, the clash count, each id's uses, and the token's words.
struct Claims {
    size: usize,
    owners: Vec<i64>,
    clashes: Vec<u64>,
    uses: Vec<u64>,
    words: Vec<u32>,
}

impl Claims {
    /// Nothing claimed, every id of a token of `size` free.
    fn new(size: usize) -> Self {
        Claims {
            size,
            owners: vec![0; size],
            clashes: vec![0],
            uses: vec![0; size],
            words: token_words(size),
        }
    }

    /// The kernel's array arguments, in its parameter order.
    fn args(&mut self) -> [HostArray<'_>; 4] {
        [
            HostArray::new(&mut self.owners, &[self.size]),
            HostArray::new(&mut self.clashes, &[1]),
            HostArray::new(&mut self.uses, &[self.size]),
            HostArray::token(&mut self.words, self.size),
        ]
    }
}

#[test]
fn token_histogram_rows_match_the_native_kernel() -> Result<()> {
    let Some(m) = module::<token_histogram>() else {
        return Ok(());
    };
    let (n, nbins, size) = (1000, 7, 5);
    let x: Vec<u32> = (0..n as u32).map(|k| k.wrapping_mul(2_654_435_761)).collect();
    let xv = view("x", [n], &x)?;
    let space = RayonSpace::default();
    let tokens = space.unique_token_with_size(size)?;
    let native = View::<u64, 1>::new("rows", [size * nbins])?;
    parallel_for(
        "token histogram",
        (RangePolicy::new(space, 0..n), (native.atomic(), xv.read())),
        token_histogram::with(&tokens, nbins),
    )?;
    let mut host = vec![0u64; size * nbins];
    let mut hx = x.clone();
    let mut words = token_words(size);
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [
            HostArray::new(&mut host, &[size * nbins]),
            HostArray::new(&mut hx, &[n]),
            HostArray::token(&mut words, size),
        ],
        &[Value::Usize(nbins)],
    );
    assert_eq!(words, token_words(size), "every id is free after the launch");
    // The host check runs its threads one by one: each finds the id of its own number free.
    let threads = GRID_1D.thread_count();
    let mut expected = vec![0u64; size * nbins];
    for (k, &v) in x.iter().enumerate() {
        expected[(k % threads) % size * nbins + v as usize % nbins] += 1;
    }
    assert_eq!(host, expected);
    // Which id an iteration gets depends on the schedule; every bin's total does not.
    let per_bin = |rows: &[u64]| -> Vec<u64> {
        (0..nbins)
            .map(|b| (0..size).map(|id| rows[id * nbins + b]).sum())
            .collect()
    };
    assert_eq!(per_bin(&native.to_vec()?), per_bin(&host));
    assert_eq!(host.iter().sum::<u64>(), n as u64);
    Ok(())
}

#[test]
fn acquired_ids_are_released_on_every_path() -> Result<()> {
    let Some(m) = module::<token_claims>() else {
        return Ok(());
    };
    let (n, size, skip) = (500, 3, 4);
    let space = RayonSpace::default();
    let tokens = space.unique_token_with_size(size)?;
    let (owners, clashes, uses) = (
        View::<i64, 1>::new("owners", [size])?,
        View::<u64, 1>::new("clashes", [1])?,
        View::<u64, 1>::new("uses", [size])?,
    );
    parallel_for(
        "claims",
        (
            RangePolicy::new(space, 0..n),
            (owners.atomic(), clashes.atomic(), uses.atomic()),
        ),
        token_claims::with(&tokens, skip),
    )?;
    assert_eq!(clashes.to_vec()?, [0]);
    assert_eq!(uses.to_vec()?.iter().sum::<u64>(), n as u64);
    assert_eq!(
        tokens.try_acquire().map(|id| tokens.release(id)),
        Some(()),
        "the host pool is whole"
    );

    let mut claims = Claims::new(size);
    run_for(&m, GRID_1D, &[0], &[n], &mut claims.args(), &[Value::Usize(skip)]);
    // The early `return` released its id, or the next thread of the same number would have
    // found every id held and waited forever.
    let Claims {
        owners: ho,
        clashes: hc,
        uses: hu,
        words,
        ..
    } = claims;
    assert_eq!(words, token_words(size));
    assert_eq!((ho, hc), (vec![0; size], vec![0]));
    let threads = GRID_1D.thread_count();
    let mut expected = vec![0u64; size];
    for k in 0..n {
        expected[(k % threads) % size] += 1;
    }
    assert_eq!(hu, expected);
    Ok(())
}

#[test]
fn concurrent_holders_never_share_an_id() -> Result<()> {
    let Some(m) = module::<team_token_claims>() else {
        return Ok(());
    };
    let (league, rounds) = (6, 40);
    // Few ids for many threads at once: most acquires find their first choice taken.
    for (team, size) in [(16usize, 3usize), (24, 7), (8, 40)] {
        let mut claims = Claims::new(size);
        let outcome = m
            .launch_team_for(
                team_grid(2, team),
                league,
                &mut claims.args(),
                &[Value::Usize(rounds)],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let Claims {
            owners: ho,
            clashes: hc,
            uses: hu,
            words,
            ..
        } = claims;
        assert_eq!(
            hc,
            [0],
            "two threads held one id at once (team {team}, {size} ids)"
        );
        assert_eq!(ho, vec![0; size]);
        assert_eq!(words, token_words(size), "every id is free after the launch");
        assert_eq!(hu.iter().sum::<u64>(), (league * team * rounds) as u64);
        assert!(hu.iter().all(|&u| u < (league * team * rounds) as u64));
        if team > size {
            assert!(hu.iter().all(|&u| u > 0), "every id was handed out: {hu:?}");
        }
    }
    // The native kernel on the rayon backend keeps the same promise.
    let space = RayonSpace::default();
    let size = 2;
    let tokens = space.unique_token_with_size(size)?;
    let policy = TeamPolicy::new(space, league, TeamSize::Auto);
    let team = policy.team_size();
    let (owners, clashes, uses) = (
        View::<i64, 1>::new("owners", [size])?,
        View::<u64, 1>::new("clashes", [1])?,
        View::<u64, 1>::new("uses", [size])?,
    );
    parallel_for(
        "team claims",
        (policy, (owners.atomic(), clashes.atomic(), uses.atomic())),
        team_token_claims::with::<RayonSpace>(&tokens, rounds),
    )?;
    assert_eq!(clashes.to_vec()?, [0]);
    assert_eq!(
        uses.to_vec()?.iter().sum::<u64>(),
        (league * team * rounds) as u64
    );
    Ok(())
}

#[test]
fn a_reduction_holds_ids_between_its_captures_and_its_accumulator() -> Result<()> {
    let Some(m) = module::<token_sum>() else {
        return Ok(());
    };
    let (n, size, bonus) = (300, 4, 1000);
    let x: Vec<i64> = (0..n as i64).map(|k| k * 7 - 500).collect();
    let xv = view("x", [n], &x)?;
    let space = Serial::default();
    let tokens = space.unique_token_with_size(size)?;
    let native = parallel_reduce(
        "token sum",
        (RangePolicy::new(space, 0..n), (xv.read(),)),
        token_sum::with(&tokens, bonus),
        Sum::<i64>::new(),
    )?;
    assert_eq!(native, x.iter().sum::<i64>() + bonus * n as i64);
    let mut hx = x.clone();
    let mut words = token_words(size);
    let (outcome, partials) = m
        .launch_reduce(
            GRID_1D,
            &[0],
            &[n],
            &mut [HostArray::new(&mut hx, &[n]), HostArray::token(&mut words, size)],
            &[Value::I64(bonus)],
            Value::I64(0),
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
    let device: i64 = partials
        .iter()
        .map(|p| match p {
            Value::I64(v) => *v,
            other => panic!("unexpected partial {other:?}"),
        })
        .sum();
    assert_eq!(device, native);
    assert_eq!(words, token_words(size));
    Ok(())
}

/// Every row of `slots` (one per team) holds one value, below `size`.
fn one_id_per_team(slots: &[u64], team: usize, size: usize) {
    for row in slots.chunks(team) {
        assert!(row.iter().all(|&id| id == row[0]), "a team saw two ids: {row:?}");
        assert!((row[0] as usize) < size, "id {} of a token of {size}", row[0]);
    }
}

#[test]
fn a_team_shares_one_id() -> Result<()> {
    let Some(m) = module::<team_token_slots>() else {
        return Ok(());
    };
    let (league, size) = (7, 3);
    for team in [1usize, 4, 9] {
        let (mut slots, mut uses) = (vec![u64::MAX; league * team], vec![0u64; size]);
        let mut words = token_words(size);
        let outcome = m
            .launch_team_for(
                team_grid(2, team),
                league,
                &mut [
                    HostArray::new(&mut slots, &[league, team]),
                    HostArray::new(&mut uses, &[size]),
                    HostArray::token(&mut words, size),
                ],
                &[],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        one_id_per_team(&slots, team, size);
        assert_eq!(
            uses.iter().sum::<u64>(),
            league as u64,
            "rank 0 of each team counted once"
        );
        assert_eq!(words, token_words(size), "rank 0 released every team's id");
    }
    let space = RayonSpace::default();
    let tokens = space.unique_token_with_size(size)?;
    let policy = TeamPolicy::new(space, league, TeamSize::Auto);
    let team = policy.team_size();
    let (slots, uses) = (
        View::<u64, 2>::new("ids", [league, team])?,
        View::<u64, 1>::new("uses", [size])?,
    );
    parallel_for(
        "team ids",
        (policy, (slots.team_slots(), uses.atomic())),
        team_token_slots::with::<RayonSpace>(&tokens),
    )?;
    one_id_per_team(&slots.to_vec()?, team, size);
    assert_eq!(uses.to_vec()?.iter().sum::<u64>(), league as u64);
    Ok(())
}
