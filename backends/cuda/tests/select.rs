//! hoplite-select over CUDA streams: the policies' bookkeeping through `CudaBackend` without a
//! device (waits report the typed error, loads never leak), and with one, event-timed
//! submissions that finish.

use hoplite::prelude::*;
use hoplite::{BoundWriter, kernel};
use hoplite_core::{ExecutionSpace, LayoutRight, View};
use hoplite_cuda::select::CudaBackend;
use hoplite_cuda::{Cuda, CudaError, CudaSpace, copy_to_host};
use hoplite_select::{
    AutoTune, Backend, DynamicLoad, FromResources, RoundRobin, SelectError, get_submission_group, submit,
    wait,
};

/// `y[i] = i`.
#[kernel]
pub fn iota(i: Idx<'_>, y: BoundWriter<'_, f64, 1>) {
    y.set(i, i.get() as f64);
}

#[test]
fn without_a_device_waits_report_the_typed_error_and_loads_do_not_leak() {
    if let Ok(cuda) = Cuda::new() {
        println!(
            "a device is present ({}); the driverless checks are skipped",
            cuda.name()
        );
        return;
    }
    match CudaBackend::on_device(0, 2) {
        Err(CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }) => {}
        other => panic!("expected the absence of a device, got {other:?}"),
    }
    assert!(matches!(
        CudaBackend::all_devices(1),
        Err(CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. })
    ));
    assert!(hoplite_cuda::device_count().is_err());
    // An empty backend is fine to build; selecting from it is the policy's typed error.
    let empty: RoundRobin<Cuda, CudaBackend> =
        RoundRobin::with_backend(CudaBackend::on_device(0, 0).expect("no stream asked for"));
    assert!(matches!(
        submit(&empty, |_: &Cuda, ()| (), ()).err(),
        Some(SelectError::NoResources { .. })
    ));

    // Auto-tune asks for task time: the function still runs, its time falls back to the host
    // clock, and waiting reports the fence's typed error.
    let tune: AutoTune<Cuda, CudaBackend> = AutoTune::with_backend(CudaBackend::from_resources(vec![
        Cuda::default(),
        Cuda::default(),
    ]));
    for round in 0..4 {
        let s = submit(&tune, |cuda: &Cuda, n: u32| (cuda.is_available(), n), round).expect("selects");
        assert_eq!(*s.value(), (false, round));
        let err = wait(&s).expect_err("no device to fence");
        assert!(
            matches!(
                &err,
                SelectError::Resource(hoplite_core::Error::Device { space: "Cuda", .. })
            ),
            "{err}"
        );
    }

    // Dynamic load counts a submission until it is waited on or dropped, also when the wait
    // fails.
    let load: DynamicLoad<Cuda, CudaBackend> = DynamicLoad::with_backend(CudaBackend::by_default());
    assert_eq!(load.backend().expect("ready").resources().len(), 1);
    let s = submit(&load, |_: &Cuda, ()| (), ()).expect("selects");
    assert_eq!(load.loads().expect("ready"), [1]);
    assert!(s.wait().is_err());
    drop(s);
    assert_eq!(load.loads().expect("ready"), [0]);
    assert!(wait(&get_submission_group(&load).expect("ready")).is_err());
}

#[test]
fn event_timed_submissions_on_streams_finish_their_launches() {
    let backend = match CudaBackend::on_device(0, 2) {
        Ok(b) => b,
        Err(e) => {
            println!("skipped: needs a CUDA device ({e})");
            return;
        }
    };
    let tune: AutoTune<Cuda, CudaBackend> = AutoTune::with_backend(backend);
    let n = 1 << 16;
    for _ in 0..6 {
        let y = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("y", [n]).expect("allocates");
        let s = submit(
            &tune,
            move |cuda: &Cuda, y: View<f64, 1, LayoutRight, CudaSpace>| {
                let range = RangePolicy::new(cuda.clone(), 0..n);
                parallel_for("iota", (range, (y.write(),)), iota::with()).map(|()| y)
            },
            y,
        )
        .expect("selects");
        wait(&s).expect("the stream finishes");
        let y = s.unwrap().expect("launches");
        let mut host = vec![0.0f64; n];
        copy_to_host(&mut host, &y).expect("copies back");
        assert!(host.iter().enumerate().all(|(i, v)| *v == i as f64));
    }
    wait(&get_submission_group(&tune).expect("ready")).expect("every stream finishes");
}
