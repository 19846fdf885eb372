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

/// `#[kernel]` launches as DAG vertices on CUDA streams: `ctx.launch` with the handles of device
/// views, as on every backend.
mod kernel_vertices {
    use hoplite::BoundAtomic;
    use hoplite::prelude::*;
    use hoplite::{BoundReader, BoundWriter, kernel};
    use hoplite_core::AccessKind;
    use hoplite_core::held::Access;
    use hoplite_core::{LayoutRight, View};
    use hoplite_cuda::dag::CudaDevice;
    use hoplite_cuda::{Cuda, CudaSpace};
    use hoplite_dag::device::HostDevice;
    use hoplite_dag::{Context, ContextOptions, DagError};

    type Device<T> = View<T, 1, LayoutRight, CudaSpace>;

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

    /// `y[i] = x[i]` for counts.
    #[kernel]
    pub fn copy_bins(i: Idx<'_>, y: BoundWriter<'_, u32, 1>, x: BoundReader<'_, u32, 1>) {
        y.set(i, x.get(i));
    }

    #[test]
    fn an_access_records_the_gpu_its_view_is_on() {
        // Views of no elements need no driver.
        let x = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(
            CudaSpace::on_device(1),
            "x",
            [0],
        )
        .expect("no memory");
        assert_eq!(Access::of_view(&x, AccessKind::Read).location, Some(1));
        let host: View<f64, 1> = View::new("host", [2]).expect("host memory");
        assert_eq!(Access::of_view(&host, AccessKind::Write).location, None);
    }

    #[test]
    fn a_launch_on_a_streams_instance_fails_its_vertex_with_the_launchs_error() {
        // A DAG context over the default `Cuda` instance as a host device: the vertex's
        // launch is refused (a range past the writer's extent of 0, or no device), and the
        // typed error fails the vertex.
        let device = HostDevice::new("cuda", vec![Cuda::default()]).expect("one instance");
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let x = Device::<f64>::without_initializing("x", [0]).expect("no memory");
        let y = Device::<f64>::without_initializing("y", [0]).expect("no memory");
        let vertex = ctx
            .launch("scale", (1, (y.write(), x.read())), scale::with(2.0))
            .expect("accepted");
        let err = vertex.wait().expect_err("the launch is refused");
        assert!(matches!(err, DagError::VertexFailed { .. }), "{err}");
        assert!(err.to_string().contains("scale"), "{err}");
        assert!(ctx.synchronize().is_err(), "the failure is reported once more");
    }

    #[test]
    fn launches_are_ordered_by_their_views() {
        let device = match CudaDevice::new(0, 2) {
            Ok(d) => d,
            Err(e) => {
                println!("skipped: no device for a DAG of kernel launches ({e})");
                return;
            }
        };
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let n = 100_000;
        let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let x = Device::<f64>::from_slice("x", [n], &host).expect("device memory");
        let make = |label| Device::<f64>::new(label, [n]).expect("device memory");
        let (y, z, w) = (make("y"), make("z"), make("w"));
        let first = ctx
            .launch("y = 2x", (n, (y.write(), x.read())), scale::with(2.0))
            .expect("y");
        ctx.launch("z = 3y", (n, (z.write(), y.read())), scale::with(3.0))
            .expect("z");
        ctx.launch("w = 5x", (n, (w.write(), x.read())), scale::with(5.0))
            .expect("w");
        ctx.synchronize().expect("runs");
        let parents = ctx.parents();
        assert!(
            parents[1].contains(&first.id()),
            "z = 3y reads what y = 2x wrote: {parents:?}"
        );
        assert!(parents[2].is_empty(), "w = 5x only reads x: {parents:?}");
        assert!(
            z.to_vec()
                .expect("z")
                .iter()
                .enumerate()
                .all(|(i, &v)| v == 6.0 * i as f64)
        );
        assert!(
            w.to_vec()
                .expect("w")
                .iter()
                .enumerate()
                .all(|(i, &v)| v == 5.0 * i as f64)
        );
    }

    #[test]
    fn atomic_launches_share_their_view_and_order_its_reader() {
        let device = match CudaDevice::new(0, 2) {
            Ok(d) => d,
            Err(e) => {
                println!("skipped: no device for atomic kernel launches ({e})");
                return;
            }
        };
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        let n = 4096;
        let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let x = Device::<f64>::from_slice("x", [n], &host).expect("device memory");
        let bins = Device::<u32>::new("bins", [4]).expect("device memory");
        let a = ctx
            .launch("count a", (n, (bins.atomic(), x.read())), histogram::with())
            .expect("a");
        let b = ctx
            .launch("count b", (n, (bins.atomic(), x.read())), histogram::with())
            .expect("b");
        let total = Device::<u32>::new("total", [4]).expect("device memory");
        ctx.launch("read bins", (4, (total.write(), bins.read())), copy_bins::with())
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
        assert_eq!(total.to_vec().expect("total"), [2 * n as u32 / 4; 4]);
    }

    #[test]
    fn a_launch_runs_on_the_gpu_of_its_views() {
        let devices = match CudaDevice::all_devices(1) {
            Ok(d) if d.len() > 1 => d,
            Ok(_) => {
                println!("skipped: one GPU, nothing to place between");
                return;
            }
            Err(e) => {
                println!("skipped: no device ({e})");
                return;
            }
        };
        let ctx = Context::new(devices, ContextOptions::default()).expect("context");
        let n = 1000;
        let on_1 = |label| {
            View::<f64, 1, LayoutRight, CudaSpace>::new_in(CudaSpace::on_device(1), label, [n])
                .expect("device 1 memory")
        };
        let (x, y) = (on_1("x"), on_1("y"));
        // Without placement by data the selection policy could pick GPU 0, whose instance
        // refuses GPU 1's views.
        for _ in 0..4 {
            ctx.launch("y = 2x on GPU 1", (n, (y.write(), x.read())), scale::with(2.0))
                .expect("accepted");
        }
        ctx.synchronize().expect("every launch ran on GPU 1");
    }
}
