//! The public API on a machine without a CUDA driver (or without a GPU): typed errors, no
//! panic. On a machine with a GPU the same calls succeed, and the test checks that instead.

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundTeamSlots, BoundWriter, kernel};
use hoplite_core::BoundAtomic;
use hoplite_core::{ExecutionSpace, LayoutRight, MemorySpace, View};
use hoplite_core::{PerTeam, PerThread, TeamPolicy, TeamSize};
use hoplite_cuda::{
    Cuda, CudaError, CudaHostPinnedSpace, CudaSpace, CudaUVMSpace, copy_to_device, copy_to_host,
};

mod support;

use support::{is_launch_absence, scale_on};

/// A sum over a range.
#[kernel]
pub fn total(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i);
}

/// Row sums by teams: each team reduces its row, rank 0 adds it through an atomic handle.
#[kernel]
pub fn row_sums(m: &impl TeamMember, sums: BoundAtomic<'_, i64, 1>, a: BoundReader<'_, i64, 2>, cols: usize) {
    let row = m.league_rank();
    let mut part = 0i64;
    let mut j = m.team_rank();
    while j < cols {
        part += a.get([row, j]);
        j += m.team_size();
    }
    let total = m.team_reduce(&Sum::new(), part);
    if m.team_rank() == 0 {
        sums.fetch_add(row, total);
    }
}

fn is_absence(e: &CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
    )
}

#[test]
fn the_api_without_a_driver_returns_typed_errors() {
    match Cuda::new() {
        Err(e) => {
            assert!(is_absence(&e), "{e}");
            let msg = e.to_string();
            println!("skipped the GPU part: {msg}");
            if let CudaError::NoDriver { looked_for } = &e {
                assert!(looked_for.contains("libcuda"), "{looked_for}");
                assert!(msg.contains("install the NVIDIA driver"), "{msg}");
            }
            // The default instance exists and reports the same error through the core traits.
            let cuda = Cuda::default();
            assert!(!cuda.is_available());
            assert_eq!(cuda, Cuda::default());
            assert_eq!(cuda.name(), "Cuda");
            assert!(!cuda.synchronous_launches());
            let err = cuda.fence().expect_err("no device to fence");
            assert!(
                matches!(err, hoplite_core::Error::Device { space: "Cuda", .. }),
                "{err}"
            );
            assert!(cuda.partition_space(2).is_err());
            assert!(cuda.limits().is_err());
            assert_eq!(cuda.concurrency(), 1);
            // Policies are validated against sm_70's limits, which every GPU allows: a launch
            // then reports the missing device rather than a team or scratch too large.
            assert_eq!(cuda.max_team_size(), 1024);
            assert_eq!(cuda.max_scratch_size(0), 96 * 1024);
            let mut out = Vec::new();
            cuda.print_configuration(&mut out, true).expect("writes to a Vec");
            let text = String::from_utf8(out).expect("UTF-8");
            assert!(text.contains("unavailable"), "{text}");
            // Allocation in every space is a typed allocation error.
            for err in [
                CudaSpace::default().allocate("d", 64).expect_err("no driver"),
                CudaUVMSpace::default().allocate("m", 64).expect_err("no driver"),
                CudaHostPinnedSpace.allocate("p", 64).expect_err("no driver"),
            ] {
                assert!(
                    matches!(err, hoplite_core::Error::AllocationFailed { bytes: 64, .. }),
                    "{err}"
                );
            }
            let v = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("v", [8]);
            assert!(v.is_err());
            // Zero bytes need no driver.
            let z = CudaSpace::default().allocate("z", 0).expect("zero bytes");
            assert_eq!(z.as_ptr() as usize % CudaSpace::ALIGNMENT, 0);
            // SAFETY: a zero-byte allocation from this space; not used again.
            unsafe { CudaSpace::default().deallocate(z, 0) };
            // A launch with matching arguments reaches the device check and stops there.
            let empty: View<f64, 1, LayoutRight, CudaSpace> = View::default();
            let err = scale_on(&cuda, 0, &empty, &empty, 2.0).expect_err("no device");
            assert!(is_launch_absence(&err), "{err}");
            // The later parts stop at the same typed error once their checks pass.
            let range = RangePolicy::new(cuda.clone(), 0..0);
            let err = parallel_reduce(
                "total",
                (range, (empty.read(),)),
                total::with(),
                Sum::<f64>::new(),
            )
            .expect_err("no device to reduce on");
            assert!(is_launch_absence(&err), "{err}");
            let err = cuda.fill(&empty, 1.0).expect_err("no device to fill on");
            assert!(is_absence(&err), "{err}");
            let err = cuda.copy(&empty, &empty).expect_err("no device to copy on");
            assert!(is_absence(&err), "{err}");
            #[cfg(feature = "dag")]
            {
                let err = hoplite_cuda::dag::CudaDevice::new(0, 1)
                    .err()
                    .expect("no device for streams");
                assert!(err.to_string().contains("CUDA driver"), "{err}");
            }
            #[cfg(feature = "graph")]
            {
                use hoplite_graph::GraphBackend;
                let mut graph = hoplite_cuda::graph::CudaGraph::new(&cuda);
                let err = graph
                    .instantiate(&hoplite_graph::GraphNodes::new())
                    .expect_err("no device to build a graph on");
                assert!(is_launch_absence(&err), "{err}");
            }
            // Devices, selection resources, the bandwidth matrix and host mirrors.
            assert!(is_absence(&hoplite_cuda::device_count().expect_err("no devices")));
            assert!(is_absence(&Cuda::on_device(1).expect_err("no device 1")));
            #[cfg(feature = "dag")]
            {
                assert!(hoplite_cuda::dag::CudaDevice::all_devices(2).is_err());
                let err =
                    hoplite_cuda::bandwidth::measure_bandwidth(1 << 20, 1).expect_err("nothing to measure");
                assert!(is_absence(&err), "{err}");
            }
            #[cfg(feature = "select")]
            {
                let err = hoplite_cuda::select::CudaBackend::all_devices(1).expect_err("no devices");
                assert!(is_absence(&err), "{err}");
            }
            let mirror = hoplite_cuda::create_mirror_view(&empty).expect("host memory");
            cuda.deep_copy_to_host(&mirror, &empty).expect("nothing to copy");
        }
        Ok(cuda) => gpu_round_trip(&cuda),
    }
}

/// With a GPU: a view round trip and one launch.
fn gpu_round_trip(cuda: &Cuda) {
    let n = 1000;
    let x = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("x", [n]).expect("device memory");
    let y = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing("y", [n]).expect("device memory");
    let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
    copy_to_device(&x, &host).expect("copy in");
    match scale_on(cuda, n, &y, &x, 2.0) {
        Ok(()) => {}
        Err(e) if e.to_string().contains("NVRTC") => {
            println!("skipped the launch: {e}");
            return;
        }
        Err(e) => panic!("launch: {e}"),
    }
    cuda.fence().expect("fence");
    let mut out = vec![0.0; n];
    copy_to_host(&mut out, &y).expect("copy out");
    assert!(out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f64));
}

/// Each team stores its row through `team_row`.
#[kernel]
pub fn team_rows(m: &impl TeamMember, out: BoundWriter<'_, f64, 2>) {
    let row = out.team_row(m.league_token());
    TeamThreadRange::new(m, row.len()).parallel_for(|j| {
        row.set(j, (row.row() * 10 + *j) as f64);
    });
}

/// Team rank 0 stores the league rank at it.
#[kernel]
pub fn league_firsts(m: &impl TeamMember, firsts: BoundWriter<'_, i64, 1>) {
    if let Some(l) = m.league_token().single() {
        firsts.set(l, l.get() as i64);
    }
}

/// Each thread stores its rank at its own slot.
#[kernel]
pub fn slot_sums(m: &impl TeamMember, slots: BoundTeamSlots<'_, f64>) {
    slots.set(m.team_slot(), m.team_rank() as f64);
}

#[test]
fn team_launches_check_their_arguments() {
    let empty1: View<i64, 1, LayoutRight, CudaSpace> = View::default();
    let empty2: View<i64, 2, LayoutRight, CudaSpace> = View::default();
    let short: View<f64, 2, LayoutRight, CudaSpace> = View::default();
    let cuda = Cuda::default();
    let teams = |league: usize| TeamPolicy::new(cuda.clone(), league, TeamSize::Fixed(32));
    // Without a device the policy is validated against sm_70's limits (which every GPU
    // allows), and the arguments are checked before the driver is asked: these checks hold
    // with or without a GPU.
    // A team's row of a writer: the writer needs a row per team.
    let err = parallel_for("rows", (teams(4), (short.write(),)), team_rows::with::<Cuda>())
        .expect_err("no row for the teams");
    assert!(
        err.to_string().contains("writer") && !is_launch_absence(&err),
        "{err}"
    );
    // A rank-1 writer (`league_token().single()`) needs an entry per team too.
    let err = parallel_for(
        "firsts",
        (teams(4), (empty1.write(),)),
        league_firsts::with::<Cuda>(),
    )
    .expect_err("no entry for the teams");
    assert!(
        err.to_string().contains("writer") && !is_launch_absence(&err),
        "{err}"
    );
    // Scratch exists at levels 0 and 1 only.
    let deep = teams(4).with_scratch_size(2, PerTeam(64), PerThread(0));
    let err = parallel_for(
        "sums",
        (deep, (empty1.atomic(), empty2.read())),
        row_sums::with::<Cuda>(3),
    )
    .expect_err("scratch level 2");
    assert!(err.to_string().contains("scratch level 2"), "{err}");
    // Matching arguments over an empty league: nothing to run, or the missing device.
    let launches = [
        parallel_for(
            "firsts",
            (teams(0), (empty1.write(),)),
            league_firsts::with::<Cuda>(),
        ),
        // Team slots: checked per access by the kernel, so any rank-2 view packs.
        parallel_for(
            "slots",
            (teams(0), (short.team_slots(),)),
            slot_sums::with::<Cuda>(),
        ),
        parallel_for(
            "sums",
            (teams(0), (empty1.atomic(), empty2.read())),
            row_sums::with::<Cuda>(0),
        ),
    ];
    for launch in launches {
        match launch {
            Ok(()) => assert!(cuda.is_available()),
            Err(e) => assert!(is_launch_absence(&e), "{e}"),
        }
    }
}

// What the types promise, checked at compile time: instances cross threads, device memory is
// not host accessible, pinned memory is.
static_assertions::assert_impl_all!(Cuda: Send, Sync, ExecutionSpace);
static_assertions::assert_not_impl_any!(CudaSpace: hoplite_core::HostAccessibleSpace);
static_assertions::assert_not_impl_any!(CudaUVMSpace: hoplite_core::HostAccessibleSpace);
static_assertions::assert_impl_all!(CudaHostPinnedSpace: hoplite_core::HostAccessibleSpace);
static_assertions::assert_impl_all!(CudaSpace: hoplite_cuda::DeviceAccessibleSpace);
static_assertions::assert_not_impl_any!(CudaHostPinnedSpace: hoplite_cuda::DeviceAccessibleSpace);

#[test]
fn writers_must_contain_the_range() {
    // Checked before the device is needed, so this holds with or without a GPU (the views
    // are empty and need no allocation).
    let empty: View<f64, 1, LayoutRight, CudaSpace> = View::default();
    let err = scale_on(&Cuda::default(), 10, &empty, &empty, 2.0).expect_err("the writer has extent 0");
    assert!(err.to_string().contains("past the extent 0 of view"), "{err}");
}

#[test]
fn views_on_a_chosen_gpu() {
    // The space names its device; nothing is asked of the driver until memory is allocated.
    assert_eq!(CudaSpace::on_device(1).device(), 1);
    assert_eq!(CudaUVMSpace::on_device(3).device(), 3);
    assert_eq!(CudaSpace::default(), CudaSpace::on_device(0));
    let empty_on_1: View<f64, 1, LayoutRight, CudaSpace> =
        View::without_initializing_in(CudaSpace::on_device(1), "e1", [0]).expect("zero bytes need no driver");
    assert_eq!(empty_on_1.space().device(), 1);
    let cuda = Cuda::default();
    let two_gpus = matches!(hoplite_cuda::device_count(), Ok(n) if n >= 2);
    if !two_gpus {
        // Device 1's memory cannot be allocated: a typed allocation error.
        for err in [
            CudaSpace::on_device(1)
                .allocate("d1", 64)
                .expect_err("no device 1"),
            CudaUVMSpace::on_device(1)
                .allocate("m1", 64)
                .expect_err("no device 1"),
        ] {
            assert!(
                matches!(err, hoplite_core::Error::AllocationFailed { bytes: 64, .. }),
                "{err}"
            );
        }
    }
    match Cuda::new() {
        Err(e) => {
            println!("skipped the GPU part: {e}");
            assert!(is_absence(&cuda.device().expect_err("no device")));
            assert!(is_absence(&cuda.memory_space().expect_err("no device")));
            // The launch with a view of device 1 reaches the device check and stops at the
            // absence of a device.
            let err = scale_on(&cuda, 0, &empty_on_1, &empty_on_1, 2.0).expect_err("no device");
            assert!(is_launch_absence(&err), "{err}");
        }
        Ok(cuda0) if two_gpus => {
            let n = 1000;
            let x1 = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(
                CudaSpace::on_device(1),
                "x1",
                [n],
            )
            .expect("device 1 memory");
            let y1 = View::<f64, 1, LayoutRight, CudaSpace>::without_initializing_in(
                CudaSpace::on_device(1),
                "y1",
                [n],
            )
            .expect("device 1 memory");
            let host: Vec<f64> = (0..n).map(|i| i as f64).collect();
            copy_to_device(&x1, &host).expect("copy into device 1");
            let err = scale_on(&cuda0, n, &y1, &x1, 3.0).expect_err("device 1's views on device 0");
            assert!(
                err.to_string()
                    .contains("is a view of CUDA device 1, but the instance is a stream of device 0"),
                "{err}"
            );
            let mirror = hoplite_cuda::create_mirror_view(&y1).expect("host memory");
            let err = cuda0
                .deep_copy_to_host(&mirror, &y1)
                .expect_err("device 1's view on device 0");
            assert!(matches!(err, CudaError::WrongDevice { .. }), "{err}");
            let cuda1 = Cuda::on_device(1).expect("device 1");
            assert_eq!(cuda1.memory_space().expect("device 1"), CudaSpace::on_device(1));
            scale_on(&cuda1, n, &y1, &x1, 3.0).expect("launch on device 1");
            cuda1.fence().expect("fence");
            let mut out = vec![0.0; n];
            copy_to_host(&mut out, &y1).expect("copy out of device 1");
            for (i, v) in out.iter().enumerate() {
                assert_eq!(*v, 3.0 * i as f64, "index {i}");
            }
        }
        Ok(_) => println!("skipped the two-GPU part: one GPU here"),
    }
}
