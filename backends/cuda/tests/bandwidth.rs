//! The bandwidth file: GrCUDA's CSV that hoplite-dag loads, the GB/s arithmetic, the refusals
//! before the driver, and with a device, a measurement of every link.

use std::time::Duration;

use hoplite_cuda::CudaError;
use hoplite_cuda::bandwidth::{BandwidthLink, bandwidth_csv, gb_per_s, measure_bandwidth};
use hoplite_dag::{BandwidthMatrix, Location};

#[test]
fn the_csv_is_what_hoplite_dag_loads() {
    let (cpu, d0, d1) = (Location::Cpu, Location::Device(0), Location::Device(1));
    let link = |from, to, gb_per_s| BandwidthLink { from, to, gb_per_s };
    let links = [
        link(cpu, d0, 25.0),
        link(d0, cpu, 26.5),
        link(d0, d0, 1800.0),
        link(cpu, d1, 12.0),
        link(d1, cpu, 13.0),
        link(d1, d1, 1700.0),
        link(d0, d1, 90.25),
        link(d1, d0, 91.0),
    ];
    let csv = bandwidth_csv(&links);
    assert!(
        csv.starts_with("From,To,Bandwidth\n-1,0,25\n0,-1,26.5\n"),
        "{csv}"
    );
    let m = BandwidthMatrix::from_csv(&csv, 2).expect("hoplite-dag reads it");
    // GrCUDA's matrix: each value floored, then each link the mean of its two directions.
    for l in links {
        let back = links
            .iter()
            .find(|b| b.from == l.to && b.to == l.from)
            .expect("both directions are measured");
        assert_eq!(
            m.bandwidth(l.from, l.to).expect("in the matrix"),
            (l.gb_per_s.floor() + back.gb_per_s.floor()) / 2.0,
            "{:?} -> {:?}",
            l.from,
            l.to
        );
    }
    assert_eq!(
        m.bandwidth(cpu, d0).expect("in the matrix"),
        25.5,
        "(25 + 26) / 2"
    );
    assert_eq!(m.bandwidth(d0, d1).expect("in the matrix"), 90.5, "(90 + 91) / 2");
    assert_eq!(
        m.bandwidth(cpu, cpu).expect("in the matrix"),
        0.0,
        "host to host is not measured"
    );
}

#[test]
fn gigabytes_per_second_count_every_copy() {
    assert!((gb_per_s(256 << 20, 10, Duration::from_millis(100)) - 26.843_545_6).abs() < 1e-9);
    assert_eq!(gb_per_s(1 << 20, 3, Duration::ZERO), 0.0);
}

#[test]
fn measuring_checks_its_arguments_then_needs_a_device() {
    for (bytes, copies) in [(0, 10), (1 << 20, 0)] {
        let e = measure_bandwidth(bytes, copies).expect_err("nothing to measure");
        assert!(matches!(e, CudaError::Transfer { .. }), "{e}");
    }
    match measure_bandwidth(8 << 20, 3) {
        Ok(links) => {
            let devices = hoplite_cuda::device_count().expect("a device measured");
            assert_eq!(links.len(), 3 * devices + devices * (devices - 1));
            assert!(links.iter().all(|l| l.gb_per_s > 0.0), "{links:?}");
            BandwidthMatrix::from_csv(&bandwidth_csv(&links), devices).expect("loads");
        }
        Err(e) => {
            println!("skipped the measurement: {e}");
            assert!(
                matches!(
                    e,
                    CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
                ),
                "{e}"
            );
        }
    }
}
