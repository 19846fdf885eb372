//! hoplite-dag's stream conformance checks on CUDA streams and events. Without a device the
//! device cannot be made, and the test says so and what the error is.

use hoplite_cuda::dag::CudaDevice;
use hoplite_dag::DagError;
use hoplite_dag::conformance;

#[test]
fn a_pool_of_no_streams_is_refused() {
    let e = CudaDevice::new(0, 0).err().expect("zero streams");
    assert!(matches!(e, DagError::InvalidOptions(_)), "{e}");
}

#[test]
fn cuda_streams_keep_the_stream_axioms() {
    let device = match CudaDevice::new(0, 2) {
        Ok(d) => d,
        Err(e) => {
            assert!(
                matches!(
                    &e,
                    DagError::Core(hoplite_core::Error::Device { space: "Cuda", .. })
                ),
                "{e}"
            );
            println!(
                "skipped {} stream conformance checks: {e}",
                conformance::checks::<CudaDevice>().len()
            );
            return;
        }
    };
    assert_eq!(hoplite_dag::device::Device::max_streams(&device), Some(2));
    assert_eq!(conformance::run_all(&device), Vec::<String>::new());
}

mod device_tasks {
    use hoplite::prelude::*;
    use hoplite::view::access::BoundAtomic;
    use hoplite::{BoundReader, BoundWriter, kernel};
    use hoplite_core::view::AccessKind;
    use hoplite_core::{LayoutLeft, View};
    use hoplite_cuda::dag::{CudaDevice, DeviceViews, device_task};
    use hoplite_cuda::{Cuda, CudaSpace, DeviceArg, copy_to_device, copy_to_host};
    use hoplite_dag::device::HostDevice;
    use hoplite_dag::{Context, ContextOptions, DagError};
    use hoplite_graph::GraphArgs;

    /// `bins[x[i] % 4] += 1`.
    #[kernel]
    pub fn histogram(i: Idx<'_>, bins: BoundAtomic<'_, u32, 1>, x: BoundReader<'_, f64, 1>) {
        let bin = (x.get(i) as usize) % 4;
        bins.fetch_add(bin, 1);
    }

    /// `y = a x`.
    #[kernel]
    pub fn scale(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
        y.set(i, a * x.get(i));
    }

    #[test]
    fn device_views_record_their_accesses_in_order() {
        let x: View<f64, 1, LayoutLeft, CudaSpace> = View::without_initializing("x", [0]).expect("no memory");
        let y: View<f64, 2, LayoutLeft, CudaSpace> =
            View::without_initializing("y", [0, 0]).expect("no memory");
        let views = DeviceViews::new().write(&y).read(&x);
        let mut accesses = Vec::new();
        views.record_handles(&mut accesses);
        let seen: Vec<(AccessKind, &str)> = accesses.iter().map(|a| (a.kind, &*a.view)).collect();
        assert_eq!(seen, [(AccessKind::Write, "y"), (AccessKind::Read, "x")]);
        assert!(accesses.iter().all(|a| a.bytes == 0));
        // A graph keeps the views without borrows and makes fresh handles of the same kinds.
        let detached = views.detach();
        let mut again = Vec::new();
        <DeviceViews as GraphArgs>::record(&detached, &mut again);
        assert_eq!(again, accesses);
        let fresh = <DeviceViews as GraphArgs>::attach(&detached);
        assert_eq!(fresh.len(), 2);
        assert!(fresh.conflict().is_none());
        assert_eq!(fresh.args().len(), 2);
    }

    #[test]
    fn atomic_and_team_slots_entries_record_their_kinds_and_borrows() {
        let bins: View<u32, 1, LayoutLeft, CudaSpace> =
            View::without_initializing("bins", [0]).expect("no memory");
        let slots: View<f64, 2, LayoutLeft, CudaSpace> =
            View::without_initializing("slots", [0, 0]).expect("no memory");
        let x: View<f64, 1, LayoutLeft, CudaSpace> = View::without_initializing("x", [0]).expect("no memory");
        let views = DeviceViews::new().atomic(&bins).team_slots(&slots).read(&x);
        let mut accesses = Vec::new();
        views.record_handles(&mut accesses);
        let seen: Vec<(AccessKind, &str)> = accesses.iter().map(|a| (a.kind, &*a.view)).collect();
        assert_eq!(
            seen,
            [
                (AccessKind::Atomic, "bins"),
                (AccessKind::Write, "slots"),
                (AccessKind::Read, "x")
            ]
        );
        assert!(views.conflict().is_none());
        assert_eq!(views.device(), Some(0), "every view on GPU 0");
        // (Without a device the views hold no element, so no borrow can conflict: the GPU
        // test below orders atomic vertices by their views.)
        // Detached and attached again, of the same kinds.
        let detached = views.detach();
        let mut again = Vec::new();
        <DeviceViews as GraphArgs>::record(&detached, &mut again);
        assert_eq!(again, accesses);
        // The launch arguments are the kernel's atomic and team-slots handles.
        let args = format!("{:?}", <DeviceViews as GraphArgs>::attach(&detached).args());
        assert!(
            args.contains("access: Atomic") && args.contains("access: TeamSlots"),
            "{args}"
        );
    }

    #[test]
    fn a_task_on_a_streams_instance_gets_that_instance_and_fails_with_the_launchs_error() {
        // A DAG context over the default `Cuda` instance as a host device: the task gets that
        // instance, and the launch's typed error fails the vertex.
        let device = HostDevice::new("cuda", vec![Cuda::default()]).expect("one instance");
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let x: View<f64, 1, LayoutLeft, CudaSpace> = View::without_initializing("x", [0]).expect("no memory");
        let y: View<f64, 1, LayoutLeft, CudaSpace> = View::without_initializing("y", [0]).expect("no memory");
        let vertex = ctx
            .task_on(
                "scale",
                DeviceViews::new().write(&y).read(&x),
                |cuda: &Cuda, views| {
                    assert_eq!(*cuda, Cuda::default(), "the stream's instance");
                    let mut args = views.args();
                    args.push(DeviceArg::scalar(2.0));
                    // Index 0 is outside the writer of extent 0: refused before the device.
                    cuda.launch_range::<scale>(0..1, &args)?;
                    Ok(())
                },
            )
            .expect("accepted");
        let err = vertex.wait().expect_err("the launch is refused");
        assert!(matches!(err, DagError::VertexFailed { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("scale"), "{text}");
        assert!(ctx.synchronize().is_err(), "the failure is reported once more");
    }

    #[test]
    fn device_tasks_are_ordered_by_their_views() {
        let device = match CudaDevice::new(0, 2) {
            Ok(d) => d,
            Err(e) => {
                println!("skipped: no device for a DAG of device tasks ({e})");
                return;
            }
        };
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let n = 100_000;
        let make = |label| {
            View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing(label, [n]).expect("device memory")
        };
        let (x, y, z, w) = (make("x"), make("y"), make("z"), make("w"));
        let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
        copy_to_device(&x, &host).expect("copy in");
        let launch = |a: f64| {
            move |cuda: &Cuda, mut args: Vec<DeviceArg>| {
                args.push(DeviceArg::scalar(a));
                cuda.launch_range::<scale>(0..n, &args)
            }
        };
        let first =
            device_task(&ctx, "y = 2x", DeviceViews::new().write(&y).read(&x), launch(2.0)).expect("y");
        let second =
            device_task(&ctx, "z = 3y", DeviceViews::new().write(&z).read(&y), launch(3.0)).expect("z");
        let apart =
            device_task(&ctx, "w = 5x", DeviceViews::new().write(&w).read(&x), launch(5.0)).expect("w");
        ctx.synchronize().expect("runs");
        let parents = ctx.parents();
        assert!(
            parents[1].contains(&first.id()),
            "z = 3y reads what y = 2x wrote: {parents:?}"
        );
        assert!(parents[2].is_empty(), "w = 5x only reads x: {parents:?}");
        let _ = (second, apart);
        let mut out = vec![0.0; n];
        copy_to_host(&mut out, &z).expect("copy z");
        assert!(out.iter().enumerate().all(|(i, &v)| v == 6.0 * i as f64));
        copy_to_host(&mut out, &w).expect("copy w");
        assert!(out.iter().enumerate().all(|(i, &v)| v == 5.0 * i as f64));
    }

    #[test]
    fn atomic_device_tasks_share_their_view_and_order_its_reader() {
        let device = match CudaDevice::new(0, 2) {
            Ok(d) => d,
            Err(e) => {
                println!("skipped: no device for atomic device tasks ({e})");
                return;
            }
        };
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let n = 4096;
        let x = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("x", [n]).expect("device memory");
        let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
        copy_to_device(&x, &host).expect("copy in");
        let bins =
            View::<u32, 1, LayoutLeft, CudaSpace>::without_initializing("bins", [4]).expect("device memory");
        copy_to_device(&bins, &[0u32; 4]).expect("zero");
        let count = move |cuda: &Cuda, args: Vec<DeviceArg>| cuda.launch_range::<histogram>(0..n, &args);
        let a = device_task(&ctx, "count a", DeviceViews::new().atomic(&bins).read(&x), count).expect("a");
        let b = device_task(&ctx, "count b", DeviceViews::new().atomic(&bins).read(&x), count).expect("b");
        let total =
            View::<u32, 1, LayoutLeft, CudaSpace>::without_initializing("total", [4]).expect("device memory");
        let copy = |cuda: &Cuda, args: Vec<DeviceArg>| cuda.launch_range::<copy_bins>(0..4, &args);
        device_task(
            &ctx,
            "read bins",
            DeviceViews::new().write(&total).read(&bins),
            copy,
        )
        .expect("read");
        ctx.synchronize().expect("runs");
        let parents = ctx.parents();
        assert!(
            !parents[b.id()].contains(&a.id()),
            "atomic updates are not ordered: {parents:?}"
        );
        let last = parents.last().expect("three vertices");
        assert!(
            last.contains(&a.id()) || last.contains(&b.id()),
            "the reader waits for the atomic updates: {parents:?}"
        );
        let mut out = [0u32; 4];
        copy_to_host(&mut out, &total).expect("copy out");
        assert_eq!(out, [2 * n as u32 / 4; 4]);
    }

    /// `y[i] = x[i]` for counts.
    #[kernel]
    pub fn copy_bins(i: Idx<'_>, y: BoundWriter<'_, u32, 1>, x: BoundReader<'_, u32, 1>) {
        y.set(i, x.get(i));
    }
}
