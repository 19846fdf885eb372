//! Random DAGs: any program of launches gives the results of running it in order on the serial
//! backend, whatever the policies; a panic in the middle of one fails exactly the launches
//! that depend on it, and nothing hangs.

use std::collections::BTreeSet;

use hoplite_core::{RangePolicy, View, parallel_for};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{
    Context, ContextOptions, DagError, DependencyPolicy, NewStreamPolicy, ParentStreamPolicy, Vertex,
};
use hoplite_serial::Serial;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

const N: usize = 48;
const VIEWS: usize = 6;

/// One launch: writes `out` from `inputs` (distinct from `out`), or only reads `inputs`.
#[derive(Clone, Debug)]
struct Step {
    out: Option<usize>,
    inputs: Vec<usize>,
    salt: i64,
}

fn step() -> impl Strategy<Value = Step> {
    (
        proptest::option::weighted(0.8, 0..VIEWS),
        proptest::collection::btree_set(0..VIEWS, 0..3),
        -5i64..5,
    )
        .prop_map(|(out, inputs, salt)| Step {
            inputs: inputs.into_iter().filter(|&i| Some(i) != out).collect(),
            out,
            salt,
        })
}

fn value(inputs: &[i64], salt: i64, i: usize) -> i64 {
    inputs
        .iter()
        .fold(salt + i as i64, |acc, v| acc.wrapping_mul(3).wrapping_add(*v))
}

fn make_views() -> Vec<View<i64, 1>> {
    (0..VIEWS)
        .map(|k| View::from_slice(&format!("v{k}"), [N], &vec![k as i64; N]).expect("view"))
        .collect()
}

/// Runs `steps` through `ctx`; each launch copies its inputs on the host side of the kernel
/// (at most two of them) — readers are real handles, so the inferred edges matter.
fn launch_all(
    ctx: &Context<HostDevice<Serial>>,
    views: &[View<i64, 1>],
    steps: &[Step],
    panic_at: Option<usize>,
) -> Vec<Vertex> {
    let range = RangePolicy::new(Serial::default(), 0..N);
    let mut vertices = Vec::new();
    for (k, s) in steps.iter().enumerate() {
        let salt = s.salt;
        let fail = panic_at == Some(k);
        let label = format!("step {k}");
        let ins: Vec<View<i64, 1>> = s.inputs.iter().map(|&i| views[i].clone()).collect();
        let a = ins
            .first()
            .cloned()
            .unwrap_or_else(|| views[s.out.map_or(0, |o| (o + 1) % VIEWS)].clone());
        let b = ins.get(1).cloned().unwrap_or_else(|| a.clone());
        let (na, nb) = (ins.len().min(1), ins.len().min(2).saturating_sub(1));
        let v = match s.out {
            Some(o) => ctx.launch(
                &label,
                (range.clone(), (views[o].write(), a.read(), b.read())),
                move |(i, (out, a, b))| {
                    if fail {
                        panic!("planted failure");
                    }
                    let mut inputs = Vec::new();
                    if na == 1 {
                        inputs.push(a.get(i));
                    }
                    if nb == 1 {
                        inputs.push(b.get(i));
                    }
                    out.set(i, value(&inputs, salt, *i));
                },
            ),
            None => ctx.launch(
                &label,
                (range.clone(), (a.read(), b.read())),
                move |(_i, (_a, _b))| {
                    if fail {
                        panic!("planted failure");
                    }
                },
            ),
        };
        vertices.push(v.expect("launch accepted"));
    }
    vertices
}

/// The same program, eagerly and in order, on the serial backend.
fn reference(steps: &[Step]) -> Vec<Vec<i64>> {
    let views = make_views();
    let range = RangePolicy::new(Serial::default(), 0..N);
    for s in steps {
        let Some(o) = s.out else { continue };
        let ins: Vec<Vec<i64>> = s
            .inputs
            .iter()
            .map(|&i| views[i].to_vec().expect("input"))
            .collect();
        let salt = s.salt;
        parallel_for("step", (range.clone(), (views[o].write(),)), |(i, (out,))| {
            let inputs: Vec<i64> = ins.iter().map(|v| v[*i]).collect();
            out.set(i, value(&inputs, salt, *i));
        })
        .expect("reference step");
    }
    views.iter().map(|v| v.to_vec().expect("result")).collect()
}

fn options(dependency: bool, parent: bool, reuse: bool) -> ContextOptions {
    ContextOptions::default()
        .dependency(if dependency {
            DependencyPolicy::WithConst
        } else {
            DependencyPolicy::NoConst
        })
        .parent_stream(if parent {
            ParentStreamPolicy::Disjoint
        } else {
            ParentStreamPolicy::SameAsParent
        })
        .new_stream(if reuse {
            NewStreamPolicy::Reuse
        } else {
            NewStreamPolicy::AlwaysNew
        })
}

fn context(devices: usize, options: ContextOptions) -> Context<HostDevice<Serial>> {
    let devices = (0..devices)
        .map(|d| HostDevice::new(&format!("device {d}"), vec![Serial::default(); 3]).expect("device"))
        .collect();
    Context::new(devices, options).expect("context")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_dags_match_in_order_serial_runs(
        steps in proptest::collection::vec(step(), 1..40),
        devices in 1usize..3,
        dependency in any::<bool>(),
        parent in any::<bool>(),
        reuse in any::<bool>(),
    ) {
        let ctx = context(devices, options(dependency, parent, reuse));
        let views = make_views();
        launch_all(&ctx, &views, &steps, None);
        let expected = reference(&steps);
        for (k, v) in views.iter().enumerate() {
            let got = ctx.read(v).expect("read");
            let got: Vec<i64> = (0..N).map(|i| got.get([i])).collect();
            prop_assert_eq!(&got, &expected[k], "view v{}", k);
        }
        prop_assert!(ctx.synchronize().is_ok());
    }
}

/// Which steps must fail when `failed` panics: those that conflict (with const: not two
/// reads) with a failed step's view, transitively — the descendants.
fn expected_failures(steps: &[Step], failed: usize) -> BTreeSet<usize> {
    let touches = |s: &Step| -> Vec<(usize, bool)> {
        let mut t: Vec<(usize, bool)> = s.inputs.iter().map(|&i| (i, false)).collect();
        if s.inputs.is_empty() {
            // The stand-in reader `launch_all` hands a step without inputs.
            t.push((s.out.map_or(0, |o| (o + 1) % VIEWS), false));
        }
        if let Some(o) = s.out {
            t.push((o, true));
        }
        t
    };
    let mut out = BTreeSet::from([failed]);
    for k in failed + 1..steps.len() {
        let mine = touches(&steps[k]);
        let hit = out.iter().any(|&f| {
            touches(&steps[f])
                .iter()
                .any(|&(v, w)| mine.iter().any(|&(u, x)| u == v && (w || x)))
        });
        if hit {
            out.insert(k);
        }
    }
    out
}

#[test]
fn a_panic_in_a_random_100_vertex_dag_fails_exactly_its_descendants() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for round in 0..4 {
        let steps: Vec<Step> = (0..100)
            .map(|_| step().new_tree(&mut runner).expect("step").current())
            .collect();
        let failed = 50;
        let ctx = context(2, ContextOptions::default());
        let views = make_views();
        let vertices = launch_all(&ctx, &views, &steps, Some(failed));
        let expected = expected_failures(&steps, failed);
        for (k, v) in vertices.iter().enumerate() {
            match v.wait() {
                Ok(()) => assert!(
                    !expected.contains(&k),
                    "round {round}: step {k} ran but depends on step {failed}"
                ),
                Err(e) => {
                    assert!(expected.contains(&k), "round {round}: step {k} failed: {e}");
                    assert_eq!(e.failed_vertex(), Some("step 50"), "{e}");
                    if k != failed {
                        assert!(matches!(e, DagError::AncestorFailed { .. }));
                    }
                }
            }
        }
        // The context stays usable.
        let fresh: View<i64, 1> = View::new("fresh", [N]).expect("fresh");
        ctx.launch(
            "after",
            (RangePolicy::new(Serial::default(), 0..N), (fresh.write(),)),
            |(i, (f,))| f.set(i, 1),
        )
        .expect("after");
        assert_eq!(ctx.read(&fresh).expect("fresh").get([0]), 1);
    }
}

#[test]
fn a_panic_on_a_vertex_other_streams_wait_on_does_not_hang_them() {
    let ctx = context(1, ContextOptions::default());
    let range = RangePolicy::new(Serial::default(), 0..N);
    let views = make_views();
    let root = ctx
        .launch("root", (range.clone(), (views[0].write(),)), |(i, (_v,))| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            if *i == 0 {
                panic!("root fails");
            }
        })
        .expect("root");
    // Readers on several streams wait for the root's event.
    let readers: Vec<Vertex> = (1..VIEWS)
        .map(|k| {
            ctx.launch(
                &format!("reader {k}"),
                (range.clone(), (views[k].write(), views[0].read())),
                |(i, (o, r))| o.set(i, r.get(i)),
            )
            .expect("reader")
        })
        .collect();
    assert!(ctx.stream_count() > 1);
    assert!(root.wait().is_err());
    for r in &readers {
        assert_eq!(
            r.wait()
                .err()
                .and_then(|e| e.failed_vertex().map(str::to_owned))
                .as_deref(),
            Some("root")
        );
    }
}
