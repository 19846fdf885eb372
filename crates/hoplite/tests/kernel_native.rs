//! `#[kernel]` functions as native kernels: the same launches as closures, on serial and
//! rayon, give the same results as the closures.

use hoplite::device_kernel::DeviceKernel;
use hoplite::device_kernel::{DeviceIteration, DeviceParam, DevicePattern, HandleAccess, ScalarType};
use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, RayonSpace, Serial, kernel};

#[kernel]
fn triad(
    i: Idx<'_>,
    a: BoundWriter<'_, f64, 1>,
    b: BoundReader<'_, f64, 1>,
    c: BoundReader<'_, f64, 1>,
    s: f64,
) {
    a.set(i, b.get(i) + s * c.get(i));
}

#[kernel]
fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

#[kernel]
fn laplace(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    let sum =
        u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    out.set(ij, sum - 4.0 * u.get(ij));
}

#[kernel]
fn index_sum(ijk: MdIdx<'_, 3>, out: BoundWriter<'_, i64, 3>, scale: i64) {
    let v = (ijk[0] * 100 + ijk[1] * 10 + ijk[2]) as i64;
    out.set(ijk, v * scale);
}

#[kernel]
#[allow(
    clippy::manual_is_multiple_of,
    reason = "the kernel subset has `%`, not `is_multiple_of`"
)]
fn collatz_steps(i: Idx<'_>, acc: &mut u64) {
    let mut n = *i as u64 + 1;
    let mut steps = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    *acc += steps;
}

fn check_on<S>() -> Result<()>
where
    S: ExecutionSpace
        + Default
        + hoplite::ParallelFor<RangePolicy<S>>
        + hoplite::ParallelReduce<RangePolicy<S>>
        + hoplite::ParallelFor<MDRangePolicy<S, 2>>
        + hoplite::ParallelFor<MDRangePolicy<S, 3>>,
{
    let n = 1000;
    let b = View::<f64, 1>::from_slice("b", [n], &(0..n).map(|k| k as f64).collect::<Vec<_>>())?;
    let c = View::<f64, 1>::from_slice("c", [n], &(0..n).map(|k| (k % 7) as f64).collect::<Vec<_>>())?;
    let a = View::<f64, 1>::new("a", [n])?;
    let a2 = View::<f64, 1>::new("a2", [n])?;
    let s = 0.5;
    parallel_for(
        "triad",
        (
            RangePolicy::new(S::default(), 0..n),
            (a.write(), b.read(), c.read()),
        ),
        triad::with(s),
    )?;
    parallel_for(
        "triad closure",
        (
            RangePolicy::new(S::default(), 0..n),
            (a2.write(), b.read(), c.read()),
        ),
        |(i, (a, b, c))| a.set(i, b.get(i) + s * c.get(i)),
    )?;
    assert_eq!(a.to_vec()?, a2.to_vec()?);

    let total = parallel_reduce(
        "dot",
        (RangePolicy::new(S::default(), 0..n), (b.read(), c.read())),
        dot::with(),
        Sum::<f64>::new(),
    )?;
    let expect: f64 = (0..n).map(|k| k as f64 * (k % 7) as f64).sum();
    assert_eq!(total, expect);

    let side = 17;
    let u = View::<f64, 2>::from_slice(
        "u",
        [side, side],
        &(0..side * side)
            .map(|k| ((k * 7) % 23) as f64)
            .collect::<Vec<_>>(),
    )?;
    let out = View::<f64, 2>::new("out", [side, side])?;
    let interior = MDRangePolicy::new(S::default(), [1, 1], [side - 1, side - 1]);
    parallel_for("laplace", (interior, (out.write(), u.read())), laplace::with())?;
    let (o, uu) = (out.host_read()?, u.host_read()?);
    for i in 1..side - 1 {
        for j in 1..side - 1 {
            let expect = uu.get([i - 1, j]) + uu.get([i + 1, j]) + uu.get([i, j - 1]) + uu.get([i, j + 1])
                - 4.0 * uu.get([i, j]);
            assert_eq!(o.get([i, j]), expect, "at [{i}, {j}]");
        }
    }
    drop((o, uu));

    let cube = View::<i64, 3>::new("cube", [3, 4, 5])?;
    parallel_for(
        "index sum",
        (
            MDRangePolicy::new(S::default(), [0, 0, 0], [3, 4, 5]),
            (cube.write(),),
        ),
        index_sum::with(-2),
    )?;
    let v = cube.host_read()?;
    assert_eq!(v.get([2, 3, 4]), -2 * 234);
    assert_eq!(v.get([1, 0, 2]), -2 * 102);
    drop(v);

    let steps = parallel_reduce(
        "collatz",
        RangePolicy::new(S::default(), 0..30),
        collatz_steps::with(),
        Sum::<u64>::new(),
    )?;
    let expect: u64 = (1..=30u64)
        .map(|mut n| {
            let mut s = 0;
            while n != 1 {
                n = if n.is_multiple_of(2) { n / 2 } else { 3 * n + 1 };
                s += 1;
            }
            s
        })
        .sum();
    assert_eq!(steps, expect);
    Ok(())
}

#[test]
fn kernels_match_closures_on_serial() -> Result<()> {
    check_on::<Serial>()
}

#[test]
fn kernels_match_closures_on_rayon() -> Result<()> {
    check_on::<RayonSpace>()
}

#[test]
fn device_description_follows_the_signature() {
    assert_eq!(<triad as DeviceKernel>::NAME, "triad");
    assert_eq!(<triad as DeviceKernel>::ENTRY, "triad_for_range");
    assert_eq!(<triad as DeviceKernel>::ITERATION, DeviceIteration::Range);
    assert_eq!(<triad as DeviceKernel>::PATTERN, DevicePattern::For);
    assert_eq!(
        <triad as DeviceKernel>::params()[0],
        DeviceParam::Handle {
            name: "a",
            access: HandleAccess::Write,
            element: ScalarType::F64,
            rank: 1
        }
    );
    assert_eq!(
        <triad as DeviceKernel>::params()[3],
        DeviceParam::Scalar {
            name: "s",
            ty: ScalarType::F64
        }
    );
    assert_eq!(
        <dot as DeviceKernel>::PATTERN,
        DevicePattern::Reduce(ScalarType::F64)
    );
    assert_eq!(<laplace as DeviceKernel>::ITERATION, DeviceIteration::MdRange(2));
    assert_eq!(
        <collatz_steps as DeviceKernel>::ENTRY,
        "collatz_steps_reduce_range"
    );
    assert!(laplace::cuda_source().contains("__global__ void laplace_for_mdrange2("));
    assert_ne!(
        <triad as DeviceKernel>::source_hash(),
        <dot as DeviceKernel>::source_hash()
    );
    // `#[kernel]` hashes its source when it expands; the value is the trait's documented hash.
    fn hash_of<K: DeviceKernel>() -> u64 {
        hoplite::device_kernel::stable_hash(&[K::ENTRY.as_bytes(), K::cuda_source().as_bytes()])
    }
    assert_eq!(<triad as DeviceKernel>::source_hash(), hash_of::<triad>());
    assert_eq!(<dot as DeviceKernel>::source_hash(), hash_of::<dot>());
    assert_eq!(<laplace as DeviceKernel>::source_hash(), hash_of::<laplace>());
    assert_eq!(
        <collatz_steps as DeviceKernel>::source_hash(),
        hash_of::<collatz_steps>()
    );
    println!("{}", collatz_steps::cuda_source());
}

/// The same kernels as graph nodes and implicit-DAG vertices: those launches take the eager
/// shapes, so `with(..)` serves them unchanged.
#[test]
fn kernels_are_graph_nodes_and_dag_vertices() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use hoplite::dag::device::HostDevice;
    use hoplite::dag::{Context, ContextOptions};
    use hoplite::graph::{ReduceResult, create_graph};

    let n = 1000;
    let space = RayonSpace::default();
    let b = View::<f64, 1>::from_slice("b", [n], &(0..n).map(|k| k as f64).collect::<Vec<_>>())?;
    let c = View::<f64, 1>::from_slice("c", [n], &vec![2.0; n])?;
    let a = View::<f64, 1>::new("a", [n])?;
    let norm = ReduceResult::<f64>::new();
    let range = RangePolicy::new(space.clone(), 0..n);
    let mut graph = create_graph(&space, |g| {
        g.parallel_for(
            "triad",
            (range.clone(), (a.write(), b.read(), c.read())),
            triad::with(0.5),
        )
        .then_parallel_reduce(
            "dot",
            (range.clone(), (a.read(), c.read())),
            dot::with(),
            Sum::<f64>::new(),
            norm.clone(),
        );
    })?;
    graph.submit()?;
    space.fence()?;
    let want: f64 = (0..n).map(|k| (k as f64 + 1.0) * 2.0).sum();
    assert_eq!(norm.get(), Some(want));

    let ctx = Context::new(
        vec![HostDevice::partitioned("cpu", &space, 2)?],
        ContextOptions::default(),
    )?;
    ctx.launch("triad", (n, (a.write(), b.read(), c.read())), triad::with(1.5))?;
    let total = ctx.reduce("dot", (n, (a.read(), c.read())), dot::with(), Sum::<f64>::new())?;
    let want: f64 = (0..n).map(|k| (k as f64 + 3.0) * 2.0).sum();
    assert_eq!(total.get()?, want);
    Ok(())
}

#[kernel]
fn mixed_scalars(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, flag: bool, shift: i32, scale: f64, stride: usize) {
    let base = if flag { scale } else { 0.0 };
    y.set(i, base + shift as f64 + (*i * stride) as f64);
}

#[test]
fn a_with_closure_shows_a_device_backend_its_kernel_and_scalars_in_declaration_order() {
    use hoplite::device_kernel::{ScalarValue, with_closure_scalars};
    let k = mixed_scalars::with(true, -3, 2.5, 7);
    let (info, scalars) = with_closure_scalars(&k).expect("a #[kernel]'s with closure");
    assert_eq!(info.name, "mixed_scalars");
    assert_eq!(info.entry, <mixed_scalars as DeviceKernel>::ENTRY);
    assert_eq!(
        scalars,
        [
            ScalarValue::Bool(true),
            ScalarValue::I32(-3),
            ScalarValue::F64(2.5),
            ScalarValue::Usize(7)
        ]
    );
    // Another value of the same closure type carries its own captures.
    let (_, other) = with_closure_scalars(&mixed_scalars::with(false, 4, -1.0, 0)).expect("registered");
    assert_eq!(other[0], ScalarValue::Bool(false));
    assert_eq!(other[3], ScalarValue::Usize(0));
    // A closure that wraps it is not the kernel: a device would not run what it adds.
    fn kernel_of<F: for<'it> Fn((Idx<'it>, (BoundWriter<'it, f64, 1, hoplite::LayoutRight>,)))>(
        kernel: F,
    ) -> F {
        kernel
    }
    let wrapped = kernel_of(move |item| {
        k(item);
    });
    assert!(with_closure_scalars(&wrapped).is_none());
    // The native kernel still runs as before.
    let y = View::<f64, 1>::new("y", [4]).expect("allocates");
    parallel_for(
        "mixed",
        (RangePolicy::new(Serial::default(), 0..4), (y.write(),)),
        k,
    )
    .expect("runs");
    assert_eq!(y.to_vec().expect("reads"), [-0.5, 6.5, 13.5, 20.5]);
}
