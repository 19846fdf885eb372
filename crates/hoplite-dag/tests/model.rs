//! Layer 1, exactly: dependency sets, stream assignment and device selection, with no threads.

use hoplite_core::held::{Access, RecordedArgs};
use hoplite_core::{Slice, View};
use hoplite_dag::{
    ArgumentData, BandwidthMatrix, DeviceSelectionPolicy, DeviceSelector, Location, LocationSet,
};
use hoplite_dag::{Assignment, NewStreamPolicy, ParentStreamPolicy, StreamAssigner};
use hoplite_dag::{DependencyModel, DependencyPolicy, VertexId};

fn acc<A: RecordedArgs>(args: A) -> Vec<Access> {
    let mut out = Vec::new();
    A::record(&args.detach(), &mut out);
    out
}

fn parents(dag: &mut DependencyModel, accesses: Vec<Access>) -> (VertexId, Vec<VertexId>) {
    let (id, edges) = dag.add(accesses);
    (id, edges.into_iter().map(|e| e.parent).collect())
}

fn views() -> (View<f64, 1>, View<f64, 1>, View<f64, 1>) {
    (
        View::new("x", [16]).expect("x"),
        View::new("y", [16]).expect("y"),
        View::new("z", [16]).expect("z"),
    )
}

#[test]
fn raw_war_waw() {
    let (x, y, _) = views();
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (a, _) = parents(&mut dag, acc(x.write()));
    let (b, pb) = parents(&mut dag, acc((y.write(), x.read())));
    assert_eq!(pb, [a], "read after write");
    let (c, pc) = parents(&mut dag, acc(x.write()));
    assert_eq!(pc, [b], "write after read (the writer A is reached through B)");
    let (_, pd) = parents(&mut dag, acc(x.write()));
    assert_eq!(pd, [c], "write after write");
    let (_, pe) = parents(&mut dag, acc(y.read()));
    assert_eq!(pe, [b], "y's writer");
}

#[test]
fn read_read_under_both_policies() {
    let (x, _, _) = views();
    let mut with = DependencyModel::new(DependencyPolicy::WithConst);
    parents(&mut with, acc(x.read()));
    assert_eq!(parents(&mut with, acc(x.read())).1, Vec::<VertexId>::new());
    let mut no = DependencyModel::new(DependencyPolicy::NoConst);
    let (a, _) = parents(&mut no, acc(x.read()));
    assert_eq!(parents(&mut no, acc(x.read())).1, [a], "no-const orders readers");
}

#[test]
fn atomic_updates_commute_with_const() {
    let (x, _, _) = views();
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (w, _) = parents(&mut dag, acc(x.write()));
    let (a, pa) = parents(&mut dag, acc(x.atomic()));
    assert_eq!(pa, [w], "an atomic update after a write");
    let (b, pb) = parents(&mut dag, acc(x.atomic()));
    assert_eq!(
        pb,
        [w],
        "a second atomic update waits for the write, not for the first update"
    );
    let (r, pr) = parents(&mut dag, acc(x.read()));
    assert_eq!(pr, [a, b], "a reader waits for every atomic update");
    let (_, pc) = parents(&mut dag, acc(x.atomic()));
    assert_eq!(pc, [r], "an atomic update after the reader");
    let mut no = DependencyModel::new(DependencyPolicy::NoConst);
    let (a, _) = parents(&mut no, acc(x.atomic()));
    assert_eq!(
        parents(&mut no, acc(x.atomic())).1,
        [a],
        "no-const orders atomic updates"
    );
}

#[test]
fn grcuda_vector() {
    // A(x) -> B(x read), A -> C(x read), no B-C edge; then D(x write) has parents {B, C}.
    let (x, _, _) = views();
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (a, _) = parents(&mut dag, acc(x.write()));
    let (b, pb) = parents(&mut dag, acc(x.read()));
    let (c, pc) = parents(&mut dag, acc(x.read()));
    assert_eq!(pb, [a]);
    assert_eq!(pc, [a]);
    let (_, pd) = parents(&mut dag, acc(x.write()));
    assert_eq!(pd, [b, c]);
    // No-const: B orders C, and D depends on C alone (the others are covered).
    let mut no = DependencyModel::new(DependencyPolicy::NoConst);
    let (a, _) = parents(&mut no, acc(x.write()));
    let (b, pb) = parents(&mut no, acc(x.read()));
    let (c, pc) = parents(&mut no, acc(x.read()));
    assert_eq!((pb, pc), (vec![a], vec![b]));
    assert_eq!(parents(&mut no, acc(x.write())).1, [c]);
}

#[test]
fn diamond() {
    let (x, y, z) = views();
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (a, _) = parents(&mut dag, acc(x.write()));
    let (b, pb) = parents(&mut dag, acc((y.write(), x.read())));
    let (c, pc) = parents(&mut dag, acc((z.write(), x.read())));
    let (_, pd) = parents(&mut dag, acc((x.write(), y.read(), z.read())));
    assert_eq!((pb, pc), (vec![a], vec![a]));
    assert_eq!(pd, [b, c], "A is implied through B and C");
}

#[test]
fn disjoint_subviews_do_not_conflict() {
    let (x, _, _) = views();
    let low: View<f64, 1> = x.subview([Slice::Range(0..8)]).expect("low");
    let high: View<f64, 1> = x.subview([Slice::Range(8..16)]).expect("high");
    let mid: View<f64, 1> = x.subview([Slice::Range(4..12)]).expect("mid");
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (a, _) = parents(&mut dag, acc(low.write()));
    let (b, pb) = parents(&mut dag, acc(high.write()));
    assert!(pb.is_empty(), "disjoint halves");
    let (_, pc) = parents(&mut dag, acc(mid.read()));
    assert_eq!(pc, [a, b], "overlaps both");
    // A partial write does not cover the whole writer: a later reader of the rest still
    // depends on it.
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (w, _) = parents(&mut dag, acc(x.write()));
    let (l, pl) = parents(&mut dag, acc(low.write()));
    assert_eq!(pl, [w]);
    let (_, ph) = parents(&mut dag, acc(high.read()));
    assert_eq!(ph, [w]);
    assert!(!ph.contains(&l));
}

#[test]
fn a_plan_changes_nothing_until_it_is_committed() {
    let (x, _, _) = views();
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (a, _) = parents(&mut dag, acc(x.write()));
    // A writer that is planned but never committed (its launch failed) covers nothing.
    let plan = dag.plan(&acc(x.write()));
    assert_eq!(plan.edges().iter().map(|e| e.parent).collect::<Vec<_>>(), [a]);
    drop(plan);
    assert_eq!(
        parents(&mut dag, acc(x.read())).1,
        [a],
        "A is still on the frontier"
    );
}

#[test]
fn finished_vertices_leave_the_frontier() {
    let (x, _, _) = views();
    let mut dag = DependencyModel::new(DependencyPolicy::WithConst);
    let (a, _) = parents(&mut dag, acc(x.write()));
    dag.finish(a);
    assert!(!dag.is_live(a));
    assert!(parents(&mut dag, acc(x.read())).1.is_empty());
    // A vertex without views never enters the frontier.
    let (e, _) = parents(&mut dag, Vec::new());
    assert!(!dag.frontier().contains(&e));
}

#[test]
fn a_child_takes_its_parents_stream_and_siblings_get_their_own() {
    let mut s = StreamAssigner::new(NewStreamPolicy::Reuse, ParentStreamPolicy::Disjoint);
    let a0 = s.free_or_new(0, None);
    assert_eq!(a0, Assignment::New { device: 0, stream: 0 });
    let s0 = s.add_stream(0);
    s.place(0, &[], s0);
    // Two children of vertex 0: the first takes its stream, the second a new one.
    assert_eq!(s.parent_stream(&[0]), Some(0));
    s.place(1, &[0], 0);
    assert_eq!(s.parent_stream(&[0]), None, "already taken by a sibling");
    let a2 = s.free_or_new(0, None);
    assert_eq!(a2, Assignment::New { device: 0, stream: 1 });
    let s1 = s.add_stream(0);
    s.place(2, &[0], s1);
    // Same-as-parent lines siblings up.
    let mut same = StreamAssigner::new(NewStreamPolicy::Reuse, ParentStreamPolicy::SameAsParent);
    let s0 = same.add_stream(0);
    same.place(0, &[], s0);
    same.place(1, &[0], 0);
    assert_eq!(same.parent_stream(&[0]), Some(0));
}

#[test]
fn freed_streams_are_reused_unless_always_new() {
    let mut s = StreamAssigner::new(NewStreamPolicy::Reuse, ParentStreamPolicy::Disjoint);
    let s0 = s.add_stream(0);
    s.place(0, &[], s0);
    assert_eq!(s.free_or_new(0, None), Assignment::New { device: 0, stream: 1 });
    let s1 = s.add_stream(0);
    s.place(1, &[], s1);
    assert_eq!(s.streams().len(), 2);
    assert_eq!(s.busy_streams(1), [2]);
    s.finish(0);
    assert_eq!(
        s.free_or_new(0, None),
        Assignment::Existing(0),
        "stream 0 is free again"
    );
    assert_eq!(
        s.free_or_new(1, None),
        Assignment::New { device: 1, stream: 2 },
        "another device"
    );
    // A device limited to two streams queues a third launch behind the least busy one.
    s.place(2, &[], 0);
    s.place(3, &[], 0);
    assert_eq!(s.busy_streams(1), [2], "both device-0 streams busy");
    assert_eq!(
        s.free_or_new(0, Some(2)),
        Assignment::Existing(1),
        "stream 1 holds fewer launches"
    );
    let mut always = StreamAssigner::new(NewStreamPolicy::AlwaysNew, ParentStreamPolicy::Disjoint);
    let s0 = always.add_stream(0);
    always.place(0, &[], s0);
    always.finish(0);
    assert_eq!(
        always.free_or_new(0, None),
        Assignment::New { device: 0, stream: 1 }
    );
}

fn grcuda_matrix() -> BandwidthMatrix {
    BandwidthMatrix::from_rows(&[
        vec![30.0, 45.0, 10.0],
        vec![45.0, 60.0, 20.0],
        vec![10.0, 20.0, 0.0],
    ])
    .expect("matrix")
}

fn at(locations: &[Location]) -> LocationSet {
    locations.iter().copied().collect()
}

#[test]
fn grcuda_bandwidths_and_choices() {
    let m = grcuda_matrix();
    let sources = at(&[Location::Device(1), Location::Cpu]);
    assert_eq!(
        m.bandwidth_from(sources, Location::Device(0), false)
            .expect("in the matrix"),
        10.0,
        "min-max"
    );
    assert_eq!(
        m.bandwidth_from(sources, Location::Device(0), true)
            .expect("in the matrix"),
        45.0,
        "min-min"
    );
    let args = [
        ArgumentData {
            bytes: 100,
            up_to_date: sources,
        },
        ArgumentData {
            bytes: 200,
            up_to_date: at(&[Location::Device(0)]),
        },
    ];
    let pick = |policy| {
        DeviceSelector::new(policy, 2, 0.1, Some(grcuda_matrix()))
            .expect("selector")
            .select(&args, &[0, 0])
            .expect("a device")
    };
    assert_eq!(pick(DeviceSelectionPolicy::MinTransferSize), 0);
    assert_eq!(pick(DeviceSelectionPolicy::MinMinTransferTime), 0);
    assert_eq!(pick(DeviceSelectionPolicy::MinMaxTransferTime), 1);
    // Data only on the CPU: no device holds enough, so round robin decides.
    let cpu_only = [ArgumentData {
        bytes: 100,
        up_to_date: at(&[Location::Cpu]),
    }];
    for policy in [
        DeviceSelectionPolicy::RoundRobin,
        DeviceSelectionPolicy::MinTransferSize,
        DeviceSelectionPolicy::MinMinTransferTime,
        DeviceSelectionPolicy::MinMaxTransferTime,
    ] {
        let mut s = DeviceSelector::new(policy, 2, 0.1, Some(grcuda_matrix())).expect("selector");
        let seq: Vec<usize> = (0..3)
            .map(|_| s.select(&cpu_only, &[0, 0]).expect("a device"))
            .collect();
        assert_eq!(seq, [0, 1, 0], "{policy:?}");
    }
}

#[test]
fn stream_aware_picks_the_least_busy_device() {
    let mut s = DeviceSelector::new(DeviceSelectionPolicy::StreamAware, 3, 0.1, None).expect("selector");
    assert_eq!(s.select(&[], &[2, 1, 3]).expect("a device"), 1);
    assert_eq!(
        s.select(&[], &[0, 1, 0]).expect("a device"),
        0,
        "lowest index on ties"
    );
    assert_eq!(s.select(&[], &[4, 4, 2]).expect("a device"), 2);
}

#[test]
fn the_threshold_decides_between_locality_and_round_robin() {
    // Device 1 holds 5% of the bytes: below a 10% threshold, above a 1% one.
    let args = [
        ArgumentData {
            bytes: 5,
            up_to_date: at(&[Location::Device(1)]),
        },
        ArgumentData {
            bytes: 95,
            up_to_date: at(&[Location::Cpu]),
        },
    ];
    let mut high =
        DeviceSelector::new(DeviceSelectionPolicy::MinTransferSize, 2, 0.1, None).expect("selector");
    assert_eq!(
        high.select(&args, &[0, 0]).expect("a device"),
        0,
        "round robin starts at 0"
    );
    let mut low =
        DeviceSelector::new(DeviceSelectionPolicy::MinTransferSize, 2, 0.01, None).expect("selector");
    assert_eq!(low.select(&args, &[0, 0]).expect("a device"), 1);
}

/// GrCUDA's matrix from its file: values floored, links between GPUs the mean of both
/// directions (an unlisted direction counting 0), the CPU's `-1,d` links used both ways (the
/// mean where `d,-1` is listed too), GPUs past the context's left out.
#[test]
fn a_bandwidth_file_becomes_grcudas_symmetric_floored_matrix() {
    let csv = "From,To,Bandwidth\n\
        0,1,45.9\n1,0,40.2\n\
        0,2,30.5\n\
        -1,0,10.7\n-1,1,11.2\n1,-1,14.9\n\
        0,0,900.4\n\
        3,0,7\n-1,3,7\n";
    let m = BandwidthMatrix::from_csv(csv, 3).expect("csv");
    let (d0, d1, d2, cpu) = (
        Location::Device(0),
        Location::Device(1),
        Location::Device(2),
        Location::Cpu,
    );
    let bw = |from, to| m.bandwidth(from, to).expect("in the matrix");
    assert_eq!(bw(d0, d1), 42.5, "(45 + 40) / 2");
    assert_eq!(bw(d1, d0), 42.5);
    assert_eq!(
        bw(d0, d2),
        15.0,
        "(30 + 0) / 2: the other direction is not listed"
    );
    assert_eq!(bw(d2, d0), 15.0);
    assert_eq!(bw(d0, d0), 900.0);
    assert_eq!((bw(cpu, d0), bw(d0, cpu)), (10.0, 10.0), "`-1,0` both ways");
    assert_eq!((bw(cpu, d1), bw(d1, cpu)), (12.5, 12.5), "(11 + 14) / 2");
    assert_eq!((bw(cpu, d2), bw(d2, cpu), bw(cpu, cpu)), (0.0, 0.0, 0.0));
    // Device 3 is past the context's three: its lines are left out, and asking for it is an
    // error rather than the CPU's slot.
    let e = m.bandwidth(Location::Device(3), d0).expect_err("outside");
    assert!(e.to_string().contains("device 3 is outside"), "{e}");
    assert!(
        m.bandwidth_from(LocationSet::only(cpu), Location::Device(3), true)
            .is_err()
    );
    assert!(
        m.bandwidth_from(LocationSet::only(Location::Device(3)), d0, true)
            .is_err()
    );
    // Data up to date nowhere cannot be moved; data already there moves at no cost.
    let e = m
        .bandwidth_from(LocationSet::new(), d0, true)
        .expect_err("nowhere");
    assert!(e.to_string().contains("up to date nowhere"), "{e}");
    assert_eq!(
        m.bandwidth_from(at(&[d0, cpu]), d0, false).expect("there"),
        f64::INFINITY
    );

    // A transfer-time selection refuses an argument up to date nowhere, and charges no time
    // for an argument already on the device (min-max would otherwise take its slowest link).
    let mut s = DeviceSelector::new(DeviceSelectionPolicy::MinMaxTransferTime, 3, 0.1, Some(m.clone()))
        .expect("selector");
    let nowhere = [
        ArgumentData {
            bytes: 8,
            up_to_date: at(&[d1]),
        },
        ArgumentData {
            bytes: 8,
            up_to_date: LocationSet::new(),
        },
    ];
    assert!(s.select(&nowhere, &[0, 0, 0]).is_err());
    let on_d1 = [ArgumentData {
        bytes: 100,
        up_to_date: at(&[d1, cpu]),
    }];
    assert_eq!(s.transfer_time(&on_d1, 1, false).expect("time"), 0.0);
    assert_eq!(s.transfer_time(&on_d1, 0, false).expect("time"), 100.0 / 10.0);
    assert_eq!(s.transfer_time(&on_d1, 2, false).expect("time"), f64::INFINITY);
    assert_eq!(s.select(&on_d1, &[0, 0, 0]).expect("a device"), 1);
}

/// The transfer-time policies choose among the devices that hold more than the threshold's
/// share of the data, as GrCUDA does, not among all devices.
#[test]
fn transfer_time_policies_choose_among_devices_with_enough_data() {
    // Device 0 holds 20% of the bytes behind a slow link; device 1 none of them, behind a
    // fast one. Over all devices device 1 would win; GrCUDA keeps to device 0.
    let m = BandwidthMatrix::from_rows(&[
        vec![100.0, 1.0, 1.0],
        vec![1.0, 100.0, 1000.0],
        vec![1.0, 1000.0, 0.0],
    ])
    .expect("matrix");
    let args = [
        ArgumentData {
            bytes: 20,
            up_to_date: at(&[Location::Device(0)]),
        },
        ArgumentData {
            bytes: 80,
            up_to_date: at(&[Location::Cpu]),
        },
    ];
    let mut s = DeviceSelector::new(DeviceSelectionPolicy::MinMinTransferTime, 2, 0.1, Some(m.clone()))
        .expect("selector");
    assert!(s.transfer_time(&args, 1, true).expect("time") < s.transfer_time(&args, 0, true).expect("time"));
    assert_eq!(s.select(&args, &[0, 0]).expect("a device"), 0);
    // At exactly the threshold's share a device does not hold enough (GrCUDA compares with
    // `>`): round robin decides.
    let mut at_share =
        DeviceSelector::new(DeviceSelectionPolicy::MinMinTransferTime, 2, 0.2, Some(m)).expect("selector");
    let picks: Vec<usize> = (0..2)
        .map(|_| at_share.select(&args, &[0, 0]).expect("a device"))
        .collect();
    assert_eq!(picks, [0, 1]);
}

#[test]
fn bandwidth_csv_and_bad_options_are_typed_errors() {
    let m = BandwidthMatrix::from_csv(
        "From,To,Bandwidth\n0,1,45\n1,0,45\n-1,0,10\n0,-1,10\n-1,1,20\n1,-1,20\n0,0,30\n1,1,60\n",
        2,
    )
    .expect("csv");
    assert_eq!(
        m,
        BandwidthMatrix::from_rows(&[
            vec![30.0, 45.0, 10.0],
            vec![45.0, 60.0, 20.0],
            vec![10.0, 20.0, 0.0]
        ])
        .expect("rows")
    );
    for bad in [
        "From,To,Bandwidth\n0,-2,1\n",
        "0,1\n",
        "0,1,fast\n",
        "0,1,-3\n",
        "x,1,3\n",
    ] {
        let e = BandwidthMatrix::from_csv(bad, 2).expect_err(bad);
        assert!(e.to_string().contains("line"), "{e}");
    }
    assert!(BandwidthMatrix::from_rows(&[vec![1.0, 2.0]]).is_err());
    assert!(BandwidthMatrix::from_rows(&[vec![1.0, f64::NAN], vec![1.0, 1.0]]).is_err());
    assert!(DeviceSelector::new(DeviceSelectionPolicy::RoundRobin, 0, 0.1, None).is_err());
    assert!(DeviceSelector::new(DeviceSelectionPolicy::RoundRobin, 2, 1.5, None).is_err());
    assert!(DeviceSelector::new(DeviceSelectionPolicy::MinMinTransferTime, 2, 0.1, None).is_err());
    let wrong_size = BandwidthMatrix::from_rows(&[vec![1.0, 1.0], vec![1.0, 1.0]]).expect("one device");
    assert!(
        DeviceSelector::new(
            DeviceSelectionPolicy::MinMaxTransferTime,
            2,
            0.1,
            Some(wrong_size)
        )
        .is_err()
    );
    let missing =
        BandwidthMatrix::load(std::path::Path::new("/nonexistent/bandwidth.csv"), 2).expect_err("missing");
    assert!(missing.to_string().contains("cannot read"));
}

/// The dependency model as first written: every new access against every active access of
/// every frontier vertex, in launch order. The model indexes active accesses by allocation
/// instead; it must give the same edges (parents and views) and the same frontier.
mod reference {
    use hoplite_core::AccessKind;
    use hoplite_core::held::Access;
    use hoplite_dag::{DependencyPolicy, Edge, VertexId};
    use std::collections::HashMap;

    /// An unfinished vertex: its accesses, which of them are active, its parents.
    type Vertex = (Vec<Access>, Vec<bool>, Vec<VertexId>);

    pub struct Model {
        policy: DependencyPolicy,
        next: VertexId,
        live: HashMap<VertexId, Vertex>,
        pub frontier: Vec<VertexId>,
    }

    fn conflicts(policy: DependencyPolicy, earlier: &Access, later: &Access) -> bool {
        let commute = earlier.kind == later.kind && later.kind != AccessKind::Write;
        (policy == DependencyPolicy::NoConst || !commute)
            && earlier.allocation == later.allocation
            && earlier.footprint.overlaps(&later.footprint)
    }

    impl Model {
        pub fn new(policy: DependencyPolicy) -> Self {
            Model {
                policy,
                next: 0,
                live: HashMap::new(),
                frontier: Vec::new(),
            }
        }

        fn reaches(&self, from: VertexId, to: VertexId) -> bool {
            let mut stack = vec![to];
            while let Some(v) = stack.pop() {
                if v == from {
                    return true;
                }
                if v > from
                    && let Some((_, _, parents)) = self.live.get(&v)
                {
                    stack.extend(parents.iter().copied());
                }
            }
            false
        }

        pub fn add(&mut self, accesses: Vec<Access>) -> Vec<Edge> {
            let mut edges: Vec<Edge> = Vec::new();
            let mut covered = Vec::new();
            for &f in &self.frontier {
                let (earlier_all, active, _) = &self.live[&f];
                let mut view = None;
                for (i, earlier) in earlier_all.iter().enumerate() {
                    if !active[i] {
                        continue;
                    }
                    for later in &accesses {
                        if !conflicts(self.policy, earlier, later) {
                            continue;
                        }
                        view.get_or_insert_with(|| later.view.clone());
                        if later.footprint.covers(&earlier.footprint)
                            && (self.policy == DependencyPolicy::NoConst || later.kind == AccessKind::Write)
                        {
                            covered.push((f, i));
                            break;
                        }
                    }
                }
                if let Some(view) = view {
                    edges.push(Edge { parent: f, view });
                }
            }
            if self.policy == DependencyPolicy::WithConst && edges.len() > 1 {
                let ids: Vec<VertexId> = edges.iter().map(|e| e.parent).collect();
                edges.retain(|e| !ids.iter().any(|&o| o != e.parent && self.reaches(e.parent, o)));
            }
            for (f, i) in covered {
                if let Some(v) = self.live.get_mut(&f) {
                    v.1[i] = false;
                }
            }
            let live = &self.live;
            self.frontier
                .retain(|f| live.get(f).is_some_and(|v| v.1.iter().any(|&a| a)));
            let id = self.next;
            self.next += 1;
            if !accesses.is_empty() {
                self.frontier.push(id);
            }
            let n = accesses.len();
            self.live.insert(
                id,
                (accesses, vec![true; n], edges.iter().map(|e| e.parent).collect()),
            );
            edges
        }

        pub fn finish(&mut self, id: VertexId) {
            if self.live.remove(&id).is_some() {
                self.frontier.retain(|&f| f != id);
            }
        }
    }
}

/// One step of a random model run: a launch's accesses as `(view, part, kind)`, or the end of
/// the `k`-th unfinished vertex.
#[derive(Clone, Debug)]
enum Step {
    Launch(Vec<(usize, usize, usize)>),
    Finish(usize),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        3 => proptest::collection::vec((0..2usize, 0..4usize, 0..3usize), 0..4).prop_map(Step::Launch),
        1 => (0..8usize).prop_map(Step::Finish),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    #[test]
    fn the_indexed_model_infers_what_the_frontier_scan_does(
        steps in proptest::collection::vec(step(), 1..60),
        no_const in proptest::prelude::any::<bool>(),
    ) {
        use hoplite_core::AccessKind;
        let policy = if no_const { DependencyPolicy::NoConst } else { DependencyPolicy::WithConst };
        let (x, y, _) = views();
        let parts: Vec<[View<f64, 1>; 4]> = [&x, &y]
            .iter()
            .map(|v| {
                let part = |lo: usize, hi: usize| -> View<f64, 1> { v.subview([Slice::Range(lo..hi)]).expect("part") };
                [(*v).clone(), part(0, 8), part(8, 16), part(4, 12)]
            })
            .collect();
        let kinds = [AccessKind::Read, AccessKind::Write, AccessKind::Atomic];
        let mut model = DependencyModel::new(policy);
        let mut expected = reference::Model::new(policy);
        let mut live: Vec<VertexId> = Vec::new();
        for s in steps {
            match s {
                Step::Launch(args) => {
                    let accesses: Vec<Access> = args
                        .iter()
                        .map(|&(v, p, k)| Access::of_view(&parts[v][p], kinds[k]))
                        .collect();
                    let (id, edges) = model.add(accesses.clone());
                    let want = expected.add(accesses);
                    proptest::prop_assert_eq!(edges, want);
                    live.push(id);
                }
                Step::Finish(k) if !live.is_empty() => {
                    let id = live.remove(k % live.len());
                    model.finish(id);
                    expected.finish(id);
                }
                Step::Finish(_) => {}
            }
            proptest::prop_assert_eq!(model.frontier(), expected.frontier.clone());
        }
    }
}

/// Selection among candidate devices, as GrCUDA's `retrieve(vertex, devices)`: each policy
/// keeps to the candidates, round robin rotates over them sorted, the data-aware ones weigh
/// only their data and fall back to round robin among them.
#[test]
fn selection_among_candidates_keeps_to_them() {
    let mut rr = DeviceSelector::new(DeviceSelectionPolicy::RoundRobin, 4, 0.1, None).expect("selector");
    let picks: Vec<usize> = (0..5)
        .map(|_| rr.select_among(&[], &[], &[2, 0, 2]).expect("a device"))
        .collect();
    assert_eq!(picks, [0, 2, 0, 2, 0]);
    // GrCUDA's rotation advances on every pick, one candidate or many: after a pick among
    // {3} the next pick over all four devices is the one after.
    let mut rr = DeviceSelector::new(DeviceSelectionPolicy::RoundRobin, 4, 0.1, None).expect("selector");
    assert_eq!(rr.select(&[], &[]).expect("a device"), 0);
    assert_eq!(rr.select_among(&[], &[], &[3]).expect("a device"), 3);
    assert_eq!(rr.select(&[], &[]).expect("a device"), 2);
    let mut aware = DeviceSelector::new(DeviceSelectionPolicy::StreamAware, 4, 0.1, None).expect("selector");
    assert_eq!(
        aware
            .select_among(&[], &[0, 5, 2, 2], &[1, 2, 3])
            .expect("a device"),
        2
    );
    // Device 0 holds everything, but is no candidate: the most data among 1 and 3 is on 3.
    let args = [
        ArgumentData {
            bytes: 100,
            up_to_date: at(&[Location::Device(0), Location::Device(3)]),
        },
        ArgumentData {
            bytes: 50,
            up_to_date: at(&[Location::Device(0), Location::Device(1)]),
        },
    ];
    let mut size =
        DeviceSelector::new(DeviceSelectionPolicy::MinTransferSize, 4, 0.1, None).expect("selector");
    assert_eq!(size.select_among(&args, &[], &[1, 3]).expect("a device"), 3);
    assert_eq!(size.select(&args, &[]).expect("a device"), 0);
    // Neither candidate holds more than the threshold: round robin among them.
    let cpu_only = [ArgumentData {
        bytes: 100,
        up_to_date: at(&[Location::Cpu]),
    }];
    let picks: Vec<usize> = (0..3)
        .map(|_| size.select_among(&cpu_only, &[], &[3, 1]).expect("a device"))
        .collect();
    assert_eq!(picks, [1, 3, 1]);
    let mut single =
        DeviceSelector::new(DeviceSelectionPolicy::SingleDevice, 4, 0.1, None).expect("selector");
    assert_eq!(single.select(&args, &[]).expect("a device"), 0);
    assert_eq!(single.select_among(&args, &[], &[3, 2]).expect("a device"), 2);
    assert!(!single.needs_data());
    // No candidate, or one past the devices, is a typed error.
    assert!(matches!(
        rr.select_among(&[], &[], &[]),
        Err(hoplite_dag::DagError::InvalidOptions(_))
    ));
    assert!(matches!(
        rr.select_among(&[], &[], &[1, 4]),
        Err(hoplite_dag::DagError::InvalidOptions(_))
    ));
}
