// Over 800 lines: one test per `Context` behaviour on host devices, sharing one set of helpers.
//! Layer 3: launches through a context on host devices.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hoplite_core::{Error, RangePolicy, Slice, Sum, View};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{
    Context, ContextOptions, DagError, DeviceSelectionPolicy, Execution, Location, ParentStreamPolicy,
    Progress, VertexState,
};
use hoplite_rayon::RayonSpace;
use hoplite_serial::Serial;

type Ctx = Context<HostDevice<Serial>>;

fn context(devices: usize, options: ContextOptions) -> Ctx {
    let devices = (0..devices)
        .map(|d| HostDevice::new(&format!("device {d}"), vec![Serial::default(); 4]).expect("device"))
        .collect();
    Context::new(devices, options).expect("context")
}

fn range(n: usize) -> RangePolicy<Serial> {
    RangePolicy::new(Serial::default(), 0..n)
}

fn view(label: &str) -> View<i64, 1> {
    View::new(label, [64]).expect("view")
}

/// Waits (bounded) for `flag`; a test that would otherwise hang fails instead.
fn wait_until(flag: &AtomicBool) {
    let start = Instant::now();
    while !flag.load(Ordering::Acquire) {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A flag a kernel waits for: it keeps that vertex (and so its descendants) unfinished while
/// a test launches more, so that the inferred edges do not depend on timing.
/// The first half opens the gate (`store(true, ..)`, or when dropped, so that a failed
/// assertion cannot leave a kernel waiting).
fn gate() -> (OpenOnDrop, Arc<AtomicBool>) {
    let g = Arc::new(AtomicBool::new(false));
    (OpenOnDrop(g.clone()), g)
}

#[test]
fn launches_compute_what_eager_launches_do() {
    let ctx = context(1, ContextOptions::default());
    let (x, y) = (view("x"), view("y"));
    let (open, held) = gate();
    ctx.launch("iota", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, *i as i64)
    })
    .expect("iota");
    ctx.launch("double", (range(64), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, 2 * x.get(i))
    })
    .expect("double");
    let sum = ctx
        .reduce(
            "sum",
            (range(64), (y.read(),)),
            |(i, (y,)), acc: &mut i64| *acc += y.get(i),
            Sum::new(),
        )
        .expect("sum");
    let total = ctx
        .scan("prefix", range(10), |i, partial: &mut i64, _final| {
            *partial += *i as i64
        })
        .expect("scan");
    open.store(true, Ordering::Release);
    assert_eq!(sum.get().expect("sum"), 2 * (0..64).sum::<i64>());
    assert_eq!(total.get().expect("total"), 45);
    assert_eq!(ctx.read(&y).expect("y").get([10]), 20);
    assert_eq!(ctx.parents()[..3], [vec![], vec![0], vec![1]]);
    ctx.synchronize().expect("no failure");
}

#[test]
fn independent_launches_run_at_the_same_time_on_different_streams() {
    let ctx = context(1, ContextOptions::default());
    let (a, b) = (view("a"), view("b"));
    let (a_started, b_started) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let (sa, sb) = (a_started.clone(), b_started.clone());
    let b_seen = b_started.clone();
    // Each kernel waits until the other has started: they finish only if they overlap.
    let wa = ctx
        .launch("a", (range(1), (a.write(),)), move |(i, (a,))| {
            sa.store(true, Ordering::Release);
            wait_until(&b_seen);
            a.set(i, 1);
        })
        .expect("a");
    let wb = ctx
        .launch("b", (range(1), (b.write(),)), move |(i, (b,))| {
            sb.store(true, Ordering::Release);
            wait_until(&a_started);
            b.set(i, 2);
        })
        .expect("b");
    wa.wait().expect("a ran");
    wb.wait().expect("b ran");
    let placements = ctx.placements();
    assert_ne!(
        placements[0].1, placements[1].1,
        "independent vertices get their own streams"
    );
}

#[test]
fn children_take_parent_streams_and_freed_streams_are_reused() {
    let ctx = context(1, ContextOptions::default());
    let (x, y, z) = (view("x"), view("y"), view("z"));
    let (open, held) = gate();
    ctx.launch("x", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, 1)
    })
    .expect("x");
    ctx.launch("y from x", (range(64), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, x.get(i))
    })
    .expect("y");
    ctx.launch("z from x", (range(64), (z.write(), x.read())), |(i, (z, x))| {
        z.set(i, x.get(i))
    })
    .expect("z");
    let p = ctx.placements();
    assert_eq!(p[1].1, p[0].1, "the first child takes its parent's stream");
    assert_ne!(p[2].1, p[0].1, "its sibling gets another");
    assert_eq!(ctx.parents(), [vec![], vec![0], vec![0]]);
    open.store(true, Ordering::Release);
    ctx.synchronize().expect("done");
    let streams = ctx.stream_count();
    let w = view("w");
    ctx.launch("w", (range(64), (w.write(),)), |(i, (w,))| w.set(i, 3))
        .expect("w");
    assert_eq!(ctx.stream_count(), streams, "a free stream is reused");
    // Same-as-parent lines siblings up on one stream.
    let same = context(
        1,
        ContextOptions::default().parent_stream(ParentStreamPolicy::SameAsParent),
    );
    let (open, held) = gate();
    same.launch("x", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, 1)
    })
    .expect("x");
    same.launch("y", (range(64), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, x.get(i))
    })
    .expect("y");
    same.launch("z", (range(64), (z.write(), x.read())), |(i, (z, x))| {
        z.set(i, x.get(i))
    })
    .expect("z");
    let p = same.placements();
    assert!(p.iter().all(|&(_, s)| s == p[0].1));
    open.store(true, Ordering::Release);
    same.synchronize().expect("done");
}

#[test]
fn host_access_waits_only_for_the_vertices_that_touch_the_view() {
    let ctx = context(1, ContextOptions::default());
    let (slow, quick) = (view("slow"), view("quick"));
    let release = Arc::new(AtomicBool::new(false));
    // Opened however the test ends, so that a failed assertion cannot leave the kernel waiting.
    let _release_on_exit = OpenOnDrop(release.clone());
    let (started, finished) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let (r, st, f) = (release.clone(), started.clone(), finished.clone());
    let long = ctx
        .launch("long", (range(1), (slow.write(),)), move |(i, (s,))| {
            st.store(true, Ordering::Release);
            wait_until(&r);
            s.set(i, 7);
            f.store(true, Ordering::Release);
        })
        .expect("long");
    ctx.launch("short", (range(64), (quick.write(),)), |(i, (q,))| q.set(i, 5))
        .expect("short");
    wait_until(&started);
    // The read returns while the unrelated long kernel still runs.
    assert_eq!(ctx.read(&quick).expect("quick").get([3]), 5);
    assert!(
        !finished.load(Ordering::Acquire),
        "the long kernel is still running"
    );
    assert_eq!(long.state(), VertexState::Running);
    // Touching its view outside the context is a borrow conflict, not a race.
    assert!(
        matches!(slow.host_read(), Err(Error::BorrowConflict { .. })),
        "slow is borrowed by a pending vertex"
    );
    release.store(true, Ordering::Release);
    assert_eq!(ctx.read(&slow).expect("slow").get([0]), 7);
    assert!(slow.host_read().is_ok(), "released once the vertex finished");
}

/// Opens a gate when dropped.
struct OpenOnDrop(Arc<AtomicBool>);

impl std::ops::Deref for OpenOnDrop {
    type Target = AtomicBool;
    fn deref(&self) -> &AtomicBool {
        &self.0
    }
}

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[test]
fn a_view_held_outside_the_context_is_a_launch_error() {
    let ctx = context(1, ContextOptions::default());
    let x = view("x");
    let guard = x.host_read().expect("guard");
    let e = ctx
        .launch("w", (range(64), (x.write(),)), |(i, (x,))| x.set(i, 1))
        .expect_err("conflict");
    assert!(matches!(e, DagError::Core(Error::BorrowConflict { .. })), "{e}");
    drop(guard);
    // Nothing was recorded: the context is usable and x is free.
    ctx.launch("w", (range(64), (x.write(),)), |(i, (x,))| x.set(i, 1))
        .expect("w");
    assert_eq!(ctx.read(&x).expect("x").get([0]), 1);
    assert_eq!(ctx.parents().len(), 1);
}

#[test]
fn an_invalid_policy_is_the_launchs_error() {
    let ctx = context(1, ContextOptions::default());
    let x = view("x");
    #[allow(clippy::reversed_empty_ranges)]
    let bad = RangePolicy::new(Serial::default(), 10..5);
    let e = ctx
        .launch("bad", (bad, (x.write(),)), |(i, (x,))| x.set(i, 1))
        .expect_err("invalid range");
    assert!(matches!(e, DagError::Core(Error::InvalidRange { .. })), "{e}");
    assert!(x.host_read().is_ok(), "the handles were released");
}

#[test]
fn a_failed_vertex_stops_exactly_its_descendants() {
    let ctx = context(1, ContextOptions::default());
    let (x, y, z, u) = (view("x"), view("y"), view("z"), view("u"));
    ctx.launch("x", (range(64), (x.write(),)), |(i, (x,))| x.set(i, 1))
        .expect("x");
    let bad = ctx
        .launch("bad", (range(64), (y.write(), x.read())), |(i, (_y, _x))| {
            if *i == 7 {
                panic!("kernel bug at 7");
            }
        })
        .expect("bad is accepted");
    let child = ctx
        .launch("child", (range(64), (z.write(), y.read())), |(i, (z, y))| {
            z.set(i, y.get(i))
        })
        .expect("child");
    let unrelated = ctx
        .launch("unrelated", (range(64), (u.write(), x.read())), |(i, (u, x))| {
            u.set(i, x.get(i) + 1)
        })
        .expect("unrelated");
    let e = child.wait().expect_err("child did not run");
    match &e {
        DagError::AncestorFailed {
            vertex,
            failed,
            cause,
        } => {
            assert_eq!((vertex.as_str(), failed.as_str()), ("child", "bad"));
            assert!(cause.to_string().contains("kernel bug at 7"), "{cause}");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(matches!(bad.wait(), Err(DagError::VertexFailed { .. })));
    unrelated.wait().expect("unrelated ran");
    assert_eq!(ctx.read(&u).expect("u").get([0]), 2);
    // Host access to the outputs reports the failure.
    assert_eq!(
        ctx.read(&y)
            .err()
            .and_then(|e| e.failed_vertex().map(str::to_owned))
            .as_deref(),
        Some("bad")
    );
    assert_eq!(
        ctx.read(&z)
            .err()
            .and_then(|e| e.failed_vertex().map(str::to_owned))
            .as_deref(),
        Some("bad")
    );
    // A later reader of the failed output inherits the failure too.
    let later = ctx
        .launch("later", (range(64), (x.write(), y.read())), |(i, (x, y))| {
            x.set(i, y.get(i))
        })
        .expect("later");
    assert_eq!(
        later
            .wait()
            .err()
            .and_then(|e| e.failed_vertex().map(str::to_owned))
            .as_deref(),
        Some("bad")
    );
    assert!(ctx.synchronize().is_err(), "synchronize reports the failure once");
    assert!(ctx.synchronize().is_ok());
    // Writing the views on the host clears them.
    assert!(ctx.read(&z).is_err());
    ctx.write(&y).expect("host write").fill(4);
    ctx.write(&z).expect("host write").fill(0);
    ctx.launch("again", (range(64), (z.write(), y.read())), |(i, (z, y))| {
        z.set(i, y.get(i))
    })
    .expect("again");
    assert_eq!(ctx.read(&z).expect("z").get([5]), 4);
}

#[test]
fn sync_mode_waits_for_every_launch_and_reports_its_failure() {
    let ctx = context(1, ContextOptions::default().execution(Execution::Sync));
    let x = view("x");
    let v = ctx
        .launch("x", (range(64), (x.write(),)), |(i, (x,))| x.set(i, 3))
        .expect("x");
    assert_eq!(v.state(), VertexState::Done);
    let e = ctx
        .launch("boom", (range(4), (x.write(),)), |_| panic!("boom"))
        .expect_err("the failure is the launch's");
    assert!(matches!(e, DagError::VertexFailed { .. }), "{e}");
}

#[test]
fn simulated_devices_follow_the_selection_policy() {
    // Three independent launches on two devices, round robin: devices 0, 1, 0.
    let ctx = context(2, ContextOptions::default());
    let views: Vec<_> = (0..3).map(|k| view(&format!("v{k}"))).collect();
    for (k, v) in views.iter().enumerate() {
        ctx.launch(&format!("fill {k}"), (range(64), (v.write(),)), |(i, (v,))| {
            v.set(i, 1)
        })
        .expect("fill");
    }
    let devices: Vec<usize> = ctx.placements().iter().map(|p| p.0).collect();
    assert_eq!(devices, [0, 1, 0]);
    // Min-transfer-size follows the data: a reader of v1 (now on device 1) goes to device 1.
    ctx.synchronize().expect("done");
    let locality = context(
        2,
        ContextOptions::default().device_selection(DeviceSelectionPolicy::MinTransferSize),
    );
    let (a, b, out) = (view("a"), view("b"), view("out"));
    locality
        .launch("a", (range(64), (a.write(),)), |(i, (a,))| a.set(i, 1))
        .expect("a");
    locality
        .launch("b", (range(64), (b.write(),)), |(i, (b,))| b.set(i, 2))
        .expect("b");
    locality.synchronize().expect("done");
    locality
        .launch("use b", (range(64), (out.write(), b.read())), |(i, (o, b))| {
            o.set(i, b.get(i))
        })
        .expect("use b");
    let devices: Vec<usize> = locality.placements().iter().map(|p| p.0).collect();
    assert_eq!(devices, [0, 1, 1]);
}

#[test]
fn dot_and_trace_describe_the_dag() {
    let ctx = context(1, ContextOptions::default());
    let (x, y) = (view("x"), view("y"));
    let (open, held) = gate();
    ctx.launch("fill", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, 1)
    })
    .expect("fill");
    ctx.launch("copy", (range(64), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, x.get(i))
    })
    .expect("copy");
    open.store(true, Ordering::Release);
    ctx.synchronize().expect("done");
    let dot = ctx.to_dot();
    assert!(dot.contains("v0 -> v1 [label=\"x\"]"), "{dot}");
    assert!(dot.contains("fill\\ndevice 0 stream 0 | done"), "{dot}");
    let timings = ctx.timings();
    assert_eq!(timings.len(), 2);
    assert!(timings[1].start >= timings[0].end, "copy starts after fill ends");
    assert_eq!(timings[1].parents, [(0, "x".to_string())]);
    let path = std::env::temp_dir().join(format!("hoplite-dag-trace-{}.json", std::process::id()));
    ctx.write_trace(&path).expect("trace");
    let text = std::fs::read_to_string(&path).expect("read trace");
    assert!(
        text.contains("\"name\":\"copy\"") && text.contains("\"ph\":\"X\""),
        "{text}"
    );
    assert!(
        text.contains("\"thread_name\"") && text.contains("\"args\":{\"name\":\"stream "),
        "each stream's row is named: {text}"
    );
    let _ = std::fs::remove_file(&path);
    let e = ctx
        .write_trace("/nonexistent/dir/trace.json")
        .expect_err("no such folder");
    let DagError::Io { path, source } = &e else {
        panic!("expected an I/O error, got {e:?}")
    };
    assert_eq!(path, std::path::Path::new("/nonexistent/dir/trace.json"));
    assert_eq!(source.io().kind(), std::io::ErrorKind::NotFound);
    assert!(
        std::error::Error::source(&e).is_some_and(|s| s.to_string() == source.io().to_string()),
        "the I/O error is the source: {e}"
    );
    assert!(
        e.to_string()
            .starts_with("cannot write /nonexistent/dir/trace.json: "),
        "{e}"
    );
}

#[test]
fn labels_with_control_characters_give_valid_dot_and_json() {
    let ctx = context(1, ContextOptions::default());
    let label = "tab\there \"quoted\"\nnext\u{1}\\";
    let x = View::<i64, 1>::new(label, [4]).expect("view");
    ctx.launch(label, (range(4), (x.write(),)), |(i, (x,))| x.set(i, 1))
        .expect("fill");
    ctx.launch("read", (range(4), (x.read(),)), |_| {}).expect("read");
    ctx.synchronize().expect("done");
    let dot = ctx.to_dot();
    let escaped = hoplite_core::dot::escape(label);
    assert!(dot.contains(&format!("v0 [label=\"{escaped}\\n")), "{dot}");
    assert!(dot.contains(&format!("v0 -> v1 [label=\"{escaped}\"]")), "{dot}");
    assert_eq!(dot.lines().count(), 6, "one line per statement: {dot}");
    let path = std::env::temp_dir().join(format!("hoplite-dag-trace-ctl-{}.json", std::process::id()));
    ctx.write_trace(&path).expect("trace");
    let text = std::fs::read_to_string(&path).expect("read trace");
    let _ = std::fs::remove_file(&path);
    let trace: serde_json::Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("events");
    let names = |ph: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e["ph"] == ph)
            .map(|e| e["name"].as_str().expect("a name"))
            .collect()
    };
    assert_eq!(names("X"), [label, "read"]);
    // The edge from the fill to the read is an arrow named after the view.
    assert_eq!((names("s"), names("f")), (vec![label], vec![label]));
}

#[test]
fn dropping_a_context_runs_what_it_queued() {
    let count = Arc::new(AtomicUsize::new(0));
    {
        let ctx = context(1, ContextOptions::default());
        let x = view("x");
        for k in 0..10 {
            let c = count.clone();
            ctx.launch(
                &format!("step {k}"),
                (range(1), (x.write(),)),
                move |(i, (x,))| {
                    x.set(i, k);
                    c.fetch_add(1, Ordering::AcqRel);
                },
            )
            .expect("step");
        }
    }
    assert_eq!(count.load(Ordering::Acquire), 10);
}

#[test]
fn rayon_partitions_as_streams() {
    let parts = RayonSpace::with_threads(2)
        .expect("pool")
        .partition_space(2)
        .expect("parts");
    let ctx = Context::new(
        vec![HostDevice::new("cpu", parts).expect("device")],
        ContextOptions::default(),
    )
    .expect("context");
    let range = RangePolicy::new(RayonSpace::default(), 0..10_000);
    let (x, y) = (
        View::<f64, 1>::new("x", [10_000]).expect("x"),
        View::<f64, 1>::new("y", [10_000]).expect("y"),
    );
    ctx.launch("x", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 1.0))
        .expect("x");
    ctx.launch("y", (range.clone(), (y.write(),)), |(i, (y,))| y.set(i, 2.0))
        .expect("y");
    let dot = ctx
        .reduce(
            "dot",
            (range, (x.read(), y.read())),
            |(i, (x, y)), acc: &mut f64| *acc += x.get(i) * y.get(i),
            Sum::new(),
        )
        .expect("dot");
    assert_eq!(dot.get().expect("dot"), 20_000.0);
}

#[test]
fn host_streams_keep_the_stream_axioms() {
    let serial = HostDevice::new("serial", vec![Serial::default()]).expect("device");
    assert_eq!(hoplite_dag::conformance::run_all(&serial), Vec::<String>::new());
    let rayon = HostDevice::new("rayon", vec![RayonSpace::default()]).expect("device");
    assert_eq!(hoplite_dag::conformance::run_all(&rayon), Vec::<String>::new());
}

#[test]
fn record_turns_inferred_edges_into_a_replayable_graph() {
    let ctx = context(1, ContextOptions::default());
    let (x, y, z, w) = (view("x"), view("y"), view("z"), view("w"));
    let total = hoplite_graph::ReduceResult::<i64>::new();
    let t = total.clone();
    let mut graph = ctx
        .record(&Serial::default(), |r| {
            r.launch("bump x", (range(64), (x.write(),)), |(i, (x,))| {
                x.set(i, x.get(i) + 1)
            });
            r.launch("y = x", (range(64), (y.write(), x.read())), |(i, (y, x))| {
                y.set(i, x.get(i))
            });
            r.launch("z = 2x", (range(64), (z.write(), x.read())), |(i, (z, x))| {
                z.set(i, 2 * x.get(i))
            });
            r.launch(
                "w = y + z",
                (range(64), (w.write(), y.read(), z.read())),
                |(i, (w, y, z))| w.set(i, y.get(i) + z.get(i)),
            );
            r.reduce(
                "sum w",
                (range(64), (w.read(),)),
                |(i, (w,)), acc: &mut i64| *acc += w.get(i),
                Sum::new(),
                t,
            );
        })
        .expect("record");
    for _ in 0..5 {
        graph.submit().expect("submit");
    }
    assert_eq!(w.to_vec().expect("w"), vec![15; 64], "5 bumps, y + z = 3x");
    assert_eq!(total.get(), Some(15 * 64));
    let dot = graph.to_dot();
    // The diamond: both readers hang from the bump, the sum joins them (through when_all).
    assert!(dot.contains("when_all"), "{dot}");
    assert_eq!(
        ctx.parents().len(),
        0,
        "recording launches nothing in the context"
    );
}

/// A device that can make `streams` streams and then refuses.
struct LimitedDevice {
    inner: HostDevice<Serial>,
    left: std::sync::Mutex<usize>,
}

impl hoplite_dag::device::Device for LimitedDevice {
    type Stream = hoplite_dag::device::HostStream<Serial>;
    fn name(&self) -> String {
        "limited".into()
    }
    fn new_stream(&self) -> Result<Self::Stream, DagError> {
        let mut left = self.left.lock().expect("lock");
        if *left == 0 {
            return Err(DagError::StreamUnavailable(
                "no more streams on this device".into(),
            ));
        }
        *left -= 1;
        self.inner.new_stream()
    }
}

#[test]
fn a_device_that_refuses_a_stream_is_a_typed_error_and_changes_nothing() {
    let device = LimitedDevice {
        inner: HostDevice::new("limited", vec![Serial::default()]).expect("device"),
        left: std::sync::Mutex::new(1),
    };
    let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
    let (x, y) = (view("x"), view("y"));
    let (open, held) = gate();
    let a = ctx
        .launch("a", (range(64), (x.write(),)), move |(i, (x,))| {
            wait_until(&held);
            x.set(i, 1)
        })
        .expect("the first stream");
    // A sibling of `a`'s reader needs a second stream, which the device refuses.
    ctx.launch("read x", (range(64), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, x.get(i))
    })
    .expect("takes a's stream");
    let z = view("z");
    let e = ctx
        .launch("b", (range(64), (z.write(), x.read())), |(i, (z, x))| {
            z.set(i, x.get(i))
        })
        .expect_err("no stream for b");
    assert!(matches!(e, DagError::StreamUnavailable(_)), "{e}");
    assert!(z.host_read().is_ok(), "b's handles were released");
    assert_eq!(ctx.parents(), [vec![], vec![0]], "b left no trace");
    open.store(true, Ordering::Release);
    a.wait().expect("a ran");
    assert_eq!(ctx.read(&y).expect("y").get([3]), 1);
}

#[test]
fn a_failure_stays_with_its_allocation_not_its_address() {
    let ctx = context(1, ContextOptions::default());
    for round in 0..8 {
        // A view that a failed vertex wrote, dropped; the next one may get its memory.
        let doomed = view("doomed");
        let v = ctx
            .launch("fails", (range(64), (doomed.write(),)), |_| panic!("planned"))
            .expect("accepted");
        assert!(v.wait().is_err());
        drop(doomed);
        let fresh = view("fresh");
        ctx.launch("fresh", (range(64), (fresh.write(),)), |(i, (f,))| f.set(i, 9))
            .expect("accepted");
        let reader = view("reader");
        let r = ctx
            .launch(
                "reads fresh",
                (range(64), (reader.write(), fresh.read())),
                |(i, (r, f))| r.set(i, f.get(i)),
            )
            .expect("accepted");
        assert!(
            r.wait().is_ok(),
            "round {round}: a new allocation inherited an old failure"
        );
    }
    assert!(ctx.synchronize().is_err(), "the planned failures are reported");
}

#[test]
fn views_go_back_when_the_host_sees_their_vertex_finished() {
    let x = view("x");
    let ctx = context(1, ContextOptions::default());
    let v = ctx
        .launch("x", (range(64), (x.write(),)), |(i, (x,))| x.set(i, 1))
        .expect("x");
    v.wait().expect("ran");
    assert!(x.host_read().is_ok(), "waiting on the vertex ended its borrows");
    let kept = ctx
        .launch("x again", (range(64), (x.write(),)), |(i, (x,))| x.set(i, 2))
        .expect("x");
    drop(ctx);
    assert!(
        x.host_read().is_ok(),
        "dropping the context ended them, though the vertex is kept"
    );
    assert_eq!(kept.state(), VertexState::Done);
    assert_eq!(x.to_vec().expect("x")[0], 2);
}

#[test]
fn stream_aware_selection_sends_work_to_the_least_busy_device() {
    let ctx = context(
        2,
        ContextOptions::default().device_selection(DeviceSelectionPolicy::StreamAware),
    );
    let (a, b, c) = (view("a"), view("b"), view("c"));
    let (open, held) = gate();
    let held_b = held.clone();
    ctx.launch("a", (range(64), (a.write(),)), move |(i, (a,))| {
        wait_until(&held);
        a.set(i, 1)
    })
    .expect("a");
    // Device 0 has a busy stream now: b goes to device 1.
    ctx.launch("b", (range(64), (b.write(),)), move |(i, (b,))| {
        wait_until(&held_b);
        b.set(i, 2)
    })
    .expect("b");
    // One busy stream each: the tie goes to device 0.
    ctx.launch("c", (range(64), (c.write(),)), |(i, (c,))| c.set(i, 3))
        .expect("c");
    let devices: Vec<usize> = ctx.placements().iter().map(|p| p.0).collect();
    assert_eq!(devices, [0, 1, 0]);
    open.store(true, Ordering::Release);
    ctx.synchronize().expect("done");
}

#[test]
fn tasks_are_ordered_by_their_handles_and_fail_like_kernels() {
    let ctx = context(1, ContextOptions::default().execution(Execution::Async));
    let (x, y) = (view("x"), view("y"));
    let (open, held) = gate();
    // A kernel writes x; a task reading x must start after it, one on y need not.
    ctx.launch("fill", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, 2)
    })
    .expect("fill");
    let saw = Arc::new(AtomicBool::new(false));
    let saw_in_task = saw.clone();
    let reads_x = ctx
        .task("reads x", (x.read(),), move |(x,)| {
            saw_in_task.store(x.view().host_write().is_err(), Ordering::Release);
            Ok(())
        })
        .expect("task on x");
    let on_y = ctx.task("on y", (y.read(),), |_| Ok(())).expect("task on y");
    on_y.wait().expect("the task on y does not wait for the fill");
    assert!(
        matches!(reads_x.state(), VertexState::Queued),
        "{:?}",
        reads_x.state()
    );
    open.store(true, Ordering::Release);
    reads_x.wait().expect("task on x");
    assert!(
        saw.load(Ordering::Acquire),
        "the task's reader keeps host writers out while it runs"
    );

    // A failing task poisons the launches that depend on it; others still run.
    let failing = ctx
        .task("failing", (y.write(),), |(y,)| {
            Err(Error::from_panic(y.label(), Box::new("the transfer failed")))
        })
        .expect("failing task");
    let dependent = ctx
        .launch("dependent", (range(64), (x.write(), y.read())), |(i, (x, y))| {
            x.set(i, y.get(i))
        })
        .expect("dependent");
    assert!(failing.wait().is_err());
    assert!(
        dependent.wait().is_err(),
        "the dependent launch inherits the failure"
    );
    let z = view("z");
    ctx.launch("independent", (range(64), (z.write(),)), |(i, (z,))| z.set(i, 1))
        .expect("independent")
        .wait()
        .expect("the context stays usable");
}

#[test]
fn handed_over_handles_end_their_borrows_with_their_vertex() {
    let ctx = context(1, ContextOptions::default());
    let (x, y, z) = (view("x"), view("y"), view("z"));
    let (open, held) = gate();
    ctx.launch("first", (range(64), (x.write(), y.read())), move |(i, (x, y))| {
        wait_until(&held);
        x.set(i, y.get(i) + 1)
    })
    .expect("first");
    // While it is pending the user's writer of x is refused (the context holds x), the reader
    // of y shares y with the context's reader, and z is free: all three are handed over.
    let refused = x.write();
    assert!(
        matches!(refused.conflict(), Some(Error::BorrowConflict { label, .. }) if label == "x"),
        "{:?}",
        refused.conflict()
    );
    drop(refused);
    ctx.launch(
        "second",
        (range(64), (x.write(), y.read(), z.write())),
        |(i, (x, y, z))| {
            z.set(i, x.get(i) + y.get(i));
            x.set(i, 10)
        },
    )
    .expect("second");
    assert!(
        z.host_read().is_err(),
        "the context holds z while the launch is pending"
    );
    open.store(true, Ordering::Release);
    ctx.synchronize().expect("both ran");
    // Nothing leaked: every view can be written on the host again.
    for (v, want) in [(&x, 10), (&y, 0), (&z, 1)] {
        let mut w = v.host_write().expect("no borrow left");
        assert_eq!(w.get([3]), want, "{}", v.label());
        w.set([3], 0);
    }
    // A launch refused for an outside borrow keeps none of its other handles' borrows.
    let guard = y.host_write().expect("guard");
    let e = ctx
        .launch("refused", (range(64), (x.write(), y.read())), |(i, (x, y))| {
            x.set(i, y.get(i))
        })
        .expect_err("y is held on the host");
    assert!(matches!(e, DagError::Core(Error::BorrowConflict { .. })), "{e}");
    drop(guard);
    assert!(x.host_write().is_ok(), "the refused launch gave x back");
}

#[test]
fn a_launch_whose_own_handles_conflict_is_refused_and_keeps_nothing() {
    let ctx = context(1, ContextOptions::default());
    let (x, y) = (view("x"), view("y"));
    // Pending work on x: the user's handles of x are refused by the context's borrows and
    // granted again in its group, where they are not checked against each other.
    let (open, held) = gate();
    ctx.launch("pending", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, 1)
    })
    .expect("pending");
    for (what, result) in [
        (
            "writer and reader",
            ctx.launch("self-race", (range(64), (x.write(), x.read())), |(i, (w, r))| {
                w.set(i, r.get(i) + 1)
            }),
        ),
        (
            "reader and writer",
            ctx.launch(
                "self-race",
                (range(64), (y.read(), x.read(), x.write())),
                |(i, (_, r, w))| w.set(i, r.get(i) + 1),
            ),
        ),
    ] {
        let e = result.expect_err(what);
        assert!(
            matches!(&e, DagError::Core(Error::BorrowConflict { label, other_label, .. }) if label == "x" && other_label == "x"),
            "{what}: {e}"
        );
    }
    open.store(true, Ordering::Release);
    ctx.synchronize().expect("the pending launch ran");
    // The refused launches kept no borrow and left no vertex: x holds the pending launch's 1s.
    assert_eq!(x.host_read().expect("x is free").get([5]), 1);
    assert!(y.host_write().is_ok(), "y was given back");
    // Disjoint parts of one allocation do not conflict.
    let whole: View<f64, 1> = View::new("whole", [64]).expect("view");
    let low: View<f64, 1> = whole.subview([Slice::Range(0..32)]).expect("low");
    let high: View<f64, 1> = whole.subview([Slice::Range(32..64)]).expect("high");
    ctx.launch(
        "halves",
        (range(32), (low.write(), high.read())),
        |(i, (l, h))| l.set(i, h.get(i) + 2.0),
    )
    .expect("disjoint halves");
    ctx.synchronize().expect("ran");
    assert_eq!(whole.host_read().expect("free").get([7]), 2.0);
}

#[test]
fn a_task_pinned_to_a_device_runs_there_and_waits_for_parents_elsewhere() {
    let ctx = context(2, ContextOptions::default());
    let x = view("x");
    let (open, held) = gate();
    // Round robin puts the first launch on device 0.
    ctx.launch("iota", (range(64), (x.write(),)), move |(i, (x,))| {
        wait_until(&held);
        x.set(i, *i as i64)
    })
    .expect("iota");
    // Pinned to device 1: no stream of its parent's device, so it waits through an event
    // for `iota`, and sees all of x.
    let seen = Arc::new(AtomicUsize::new(0));
    let out = seen.clone();
    ctx.task_on_device("sum on 1", 1, (x.read(),), move |_: &Serial, (x,)| {
        let sum: i64 = x.view().to_vec()?.iter().sum();
        out.store(sum as usize, Ordering::Release);
        Ok(())
    })
    .expect("sum on 1");
    open.store(true, Ordering::Release);
    ctx.synchronize().expect("ran");
    assert_eq!(seen.load(Ordering::Acquire), (0..64).sum::<usize>(), "after iota");
    let placements = ctx.placements();
    assert_eq!(placements[0].0, 0, "round robin's first pick");
    assert_eq!(placements.last().map(|p| p.0), Some(1), "pinned");
    assert_eq!(
        ctx.parents().last().map(Vec::len),
        Some(1),
        "after iota, through an event"
    );
    // A device the context lacks is this call's error, and changes nothing.
    let e = ctx
        .task_on_device("nowhere", 2, (x.read(),), |_: &Serial, _| Ok(()))
        .expect_err("no device 2");
    assert!(
        matches!(
            e,
            DagError::NoSuchDevice {
                device: 2,
                devices: 2
            }
        ),
        "{e}"
    );
    assert_eq!(ctx.placements().len(), placements.len());
    assert_eq!(ctx.read(&x).expect("x").get([5]), 5);
}

#[test]
fn one_held_borrow_per_view_and_kind_keeps_the_host_out_until_the_host_sees_the_end() {
    let ctx = context(1, ContextOptions::default());
    let (x, y) = (view("x"), view("y"));
    let (open, held) = gate();
    ctx.launch("gate", (range(64), (y.write(),)), move |(i, (y,))| {
        wait_until(&held);
        y.set(i, 1)
    })
    .expect("gate");
    // Writers of x, then a reader, then a writer again: the context holds x for writing
    // outside its group, then moves that borrow into the group for the reader.
    for k in 0..3 {
        ctx.launch(
            "write x",
            (range(64), (x.write(), y.read())),
            move |(i, (x, y))| x.set(i, y.get(i) + k),
        )
        .expect("write x");
    }
    let last = ctx
        .launch("read x", (range(64), (y.write(), x.read())), |(i, (y, x))| {
            y.set(i, x.get(i))
        })
        .expect("read x");
    ctx.launch("write x again", (range(64), (x.write(),)), |(i, (x,))| {
        x.set(i, 7)
    })
    .expect("write x again");
    assert!(
        matches!(x.host_read(), Err(Error::BorrowConflict { .. })),
        "pending writers keep the host out"
    );
    assert!(
        matches!(y.host_write(), Err(Error::BorrowConflict { .. })),
        "pending readers and writers keep the host out"
    );
    drop(open);
    last.wait().expect("ran");
    assert_eq!(
        ctx.read(&y).expect("y").get([5]),
        3,
        "the reader saw the third writer"
    );
    assert_eq!(ctx.read(&x).expect("x").get([5]), 7);
    assert!(x.host_write().is_ok(), "the host saw every vertex of x end");
    // Seeing a vertex's end through `Vertex::state` ends its borrows too.
    let v = ctx
        .launch("write y", (range(64), (y.write(),)), |(i, (y,))| y.set(i, 2))
        .expect("write y");
    while v.state() != VertexState::Done {
        std::thread::yield_now();
    }
    assert!(y.host_write().is_ok(), "done, and seen done");
}

/// A host device makes one stream per instance unless told otherwise, and the context reports
/// each launch that asked for a new stream and queued behind a busy one instead; with
/// `streams_per_instance`, "always a new stream" makes new streams on one instance, up to the
/// new cap.
#[test]
fn streams_beyond_instances_are_allowed_or_reported() {
    let options = || ContextOptions::default().new_stream(hoplite_dag::NewStreamPolicy::AlwaysNew);
    let views: Vec<View<i64, 1>> = (0..4).map(|k| view(&format!("v{k}"))).collect();
    let launch_all = |ctx: &Ctx| {
        for (k, v) in views.iter().enumerate() {
            ctx.launch("fill", (range(64), (v.write(),)), move |(i, (v,))| {
                v.set(i, k as i64)
            })
            .expect("fill");
        }
        ctx.synchronize().expect("no failure");
        for (k, v) in views.iter().enumerate() {
            assert_eq!(ctx.read(v).expect("v").get([63]), k as i64);
        }
    };

    let capped = Context::new(
        vec![HostDevice::new("one", vec![Serial::default()]).expect("device")],
        options(),
    )
    .expect("context");
    launch_all(&capped);
    assert_eq!((capped.stream_count(), capped.capped_launches()), (1, 3));

    let device = HostDevice::new("one", vec![Serial::default()])
        .expect("device")
        .streams_per_instance(3)
        .expect("three streams");
    let ctx = Context::new(vec![device], options()).expect("context");
    launch_all(&ctx);
    assert_eq!((ctx.stream_count(), ctx.capped_launches()), (3, 1));
    let streams: Vec<usize> = ctx.placements().iter().map(|p| p.1).collect();
    assert_eq!(streams[..3], [0, 1, 2], "a new stream each, until the cap");

    assert!(
        HostDevice::new("one", vec![Serial::default()])
            .expect("device")
            .streams_per_instance(0)
            .is_err()
    );
}

/// A snapshot while a vertex is held running: its stream is busy and lists it and its child,
/// the frontier holds both, parents and children name each other; after the gate opens and the
/// context synchronizes, every stream is free, the frontier is empty and each view's
/// locations are where GrCUDA would have them.
#[test]
fn a_snapshot_shows_the_frontier_streams_parents_children_and_locations() {
    let ctx = context(2, ContextOptions::default());
    let (x, y, z) = (view("x"), view("y"), view("z"));
    let (open, held) = gate();
    let started = Arc::new(AtomicBool::new(false));
    let running = started.clone();
    ctx.launch("produce", (range(64), (x.write(),)), move |(i, (x,))| {
        running.store(true, Ordering::Release);
        wait_until(&held);
        x.set(i, *i as i64)
    })
    .expect("produce");
    ctx.launch("consume", (range(64), (y.write(), x.read())), |(i, (y, x))| {
        y.set(i, x.get(i) + 1)
    })
    .expect("consume");
    ctx.launch("other", (range(64), (z.write(),)), |(i, (z,))| z.set(i, 7))
        .expect("other");
    wait_until(&started);

    let snapshot = ctx.snapshot();
    let (produce, consume) = (
        snapshot.vertex(0).expect("produce"),
        snapshot.vertex(1).expect("consume"),
    );
    assert_eq!(produce.progress, Progress::Running);
    assert_eq!(consume.progress, Progress::Queued);
    assert_eq!(consume.parents, [(0, "x".to_string())]);
    assert_eq!(produce.children, [1]);
    assert_eq!(
        consume.stream, produce.stream,
        "the child takes its parent's stream"
    );
    let busy = &snapshot.streams[produce.stream];
    assert_eq!(busy.active, [0, 1]);
    assert!(!busy.is_free() && snapshot.busy_streams().contains(&produce.stream));
    assert!(snapshot.frontier.contains(&0) && snapshot.frontier.contains(&1));
    // "other" may finish between the two looks; the held pair is in both.
    let frontier = ctx.frontier();
    assert!(frontier.contains(&0) && frontier.contains(&1), "{frontier:?}");
    assert!(frontier.iter().all(|v| snapshot.frontier.contains(v)));
    // `x` is written on device 0's stream and read there: up to date on that device only.
    let device = produce.device;
    assert_eq!(
        ctx.locations(&x).iter().collect::<Vec<_>>(),
        [Location::Device(device)]
    );

    open.store(true, Ordering::Release);
    ctx.synchronize().expect("no failure");
    let done = ctx.snapshot();
    assert!(
        done.vertices.iter().all(|v| v.progress == Progress::Done),
        "{done:?}"
    );
    assert!(done.frontier.is_empty() && done.busy_streams().is_empty());
    assert_eq!(done.free_streams().len(), done.streams.len());
    // A host read adds the CPU; a host write leaves the data on the CPU alone.
    assert_eq!(ctx.read(&y).expect("y").get([5]), 6);
    let y_at: Vec<Location> = ctx.locations(&y).iter().collect();
    assert!(y_at.contains(&Location::Cpu) && y_at.len() == 2, "{y_at:?}");
    ctx.write(&z).expect("z").set([0], 1);
    assert_eq!(ctx.locations(&z).iter().collect::<Vec<_>>(), [Location::Cpu]);
}

/// GrCUDA's multi-GPU parent-stream policies: `MultiGpuDisjoint` chooses among the devices of
/// the parents whose streams are free (here by where most of the data is) and takes that
/// parent's stream; `MultiGpuEarlyDisjoint` chooses the device first and takes a parent's
/// stream there; `SingleDevice` keeps everything on the first device.
#[test]
fn multi_gpu_parent_policies_choose_the_device_then_the_parent_stream() {
    for policy in [
        ParentStreamPolicy::MultiGpuDisjoint,
        ParentStreamPolicy::MultiGpuEarlyDisjoint,
    ] {
        let ctx = context(
            2,
            ContextOptions::default()
                .parent_stream(policy)
                .device_selection(DeviceSelectionPolicy::MinTransferSize),
        );
        let big: View<i64, 1> = View::new("big", [4096]).expect("big");
        let small: View<i64, 1> = View::new("small", [8]).expect("small");
        let (open, held) = gate();
        let (h1, h2) = (held.clone(), held);
        // No data on a device yet: round robin puts the two producers on devices 0 and 1.
        ctx.launch("big", (range(4096), (big.write(),)), move |(i, (b,))| {
            wait_until(&h1);
            b.set(i, 1)
        })
        .expect("big");
        ctx.launch("small", (range(8), (small.write(),)), move |(i, (s,))| {
            wait_until(&h2);
            s.set(i, 2)
        })
        .expect("small");
        // Reads both: the device holding `big` holds most of the bytes.
        let out = view("out");
        ctx.launch(
            "both",
            (range(8), (out.write(), big.read(), small.read())),
            |(i, (o, b, s))| o.set(i, b.get(i) + s.get(i)),
        )
        .expect("both");
        let snapshot = ctx.snapshot();
        let (big_v, small_v, both) = (
            &snapshot.vertices[0],
            &snapshot.vertices[1],
            &snapshot.vertices[2],
        );
        assert_ne!(
            big_v.device, small_v.device,
            "{policy:?}: round robin spread the producers"
        );
        assert_eq!(
            both.device, big_v.device,
            "{policy:?}: the device with most of the data"
        );
        assert_eq!(both.stream, big_v.stream, "{policy:?}: the parent's stream there");
        open.store(true, Ordering::Release);
        ctx.synchronize().expect("no failure");
        assert_eq!(ctx.read(&out).expect("out").get([3]), 3);
    }

    let single = context(
        3,
        ContextOptions::default().device_selection(DeviceSelectionPolicy::SingleDevice),
    );
    let views: Vec<View<i64, 1>> = (0..4).map(|k| view(&format!("v{k}"))).collect();
    for v in &views {
        single
            .launch("fill", (range(64), (v.write(),)), |(i, (v,))| v.set(i, 1))
            .expect("fill");
    }
    single.synchronize().expect("no failure");
    assert!(single.placements().iter().all(|&(device, _)| device == 0));
}
