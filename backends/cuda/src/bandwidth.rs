//! The copy bandwidth of every link between the host and the devices and between devices,
//! written as GrCUDA's bandwidth file (`From,To,Bandwidth` in GB/s, the CPU as `-1`), which
//! hoplite-dag's transfer-aware device selection loads (`BandwidthMatrix::load`).
//!
//! [`measure_bandwidth`] times `copies` back-to-back copies of one buffer per link with two
//! timing events on a stream (after one warm-up copy): host to device and device to host from
//! page-locked memory, device to device on one device, and between two devices with peer
//! access enabled where the devices allow it. `cargo xtask cuda-bandwidth` runs it and writes
//! the file; [`bandwidth_csv`] and [`gb_per_s`] are the pure parts.

use std::sync::Arc;
use std::time::Duration;

use hoplite_dag::Location;

use crate::CudaError;
use crate::driver::{self, Device, DeviceBuffer, PinnedBuffer, Stream, TimingEvent};

/// One measured link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthLink {
    /// Where the copies read.
    pub from: Location,
    /// Where they write.
    pub to: Location,
    /// Bytes per second / 10^9.
    pub gb_per_s: f64,
}

/// GB/s of `copies` copies of `bytes` bytes that took `elapsed` (0 for no time).
///
/// ```
/// use std::time::Duration;
/// use hoplite_cuda::bandwidth::gb_per_s;
/// assert_eq!(gb_per_s(1_000_000_000, 2, Duration::from_secs(1)), 2.0);
/// assert_eq!(gb_per_s(1, 1, Duration::ZERO), 0.0);
/// ```
pub fn gb_per_s(bytes: u64, copies: u32, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        bytes as f64 * f64::from(copies) / secs / 1e9
    } else {
        0.0
    }
}

/// GrCUDA's bandwidth file: the header `From,To,Bandwidth`, then one line per link, devices by
/// ordinal and the CPU as `-1`.
///
/// ```
/// use hoplite_cuda::bandwidth::{bandwidth_csv, BandwidthLink};
/// use hoplite_dag::{BandwidthMatrix, Location};
/// let csv = bandwidth_csv(&[
///     BandwidthLink { from: Location::Cpu, to: Location::Device(0), gb_per_s: 24.5 },
///     BandwidthLink { from: Location::Device(0), to: Location::Device(0), gb_per_s: 1500.0 },
/// ]);
/// assert_eq!(csv, "From,To,Bandwidth\n-1,0,24.5\n0,0,1500\n");
/// // hoplite-dag builds GrCUDA's matrix from it: floored, the CPU's link used both ways.
/// let m = BandwidthMatrix::from_csv(&csv, 1)?;
/// assert_eq!(m.bandwidth(Location::Device(0), Location::Cpu)?, 24.0);
/// # Ok::<(), hoplite_dag::DagError>(())
/// ```
pub fn bandwidth_csv(links: &[BandwidthLink]) -> String {
    let index = |l: Location| match l {
        Location::Cpu => "-1".to_owned(),
        Location::Device(i) => i.to_string(),
    };
    let mut out = String::from("From,To,Bandwidth\n");
    for link in links {
        out.push_str(&format!(
            "{},{},{}\n",
            index(link.from),
            index(link.to),
            link.gb_per_s
        ));
    }
    out
}

/// The device time of `copies` calls of `copy` queued on `stream`, after one warm-up call.
fn time_copies(
    stream: &Stream,
    copies: u32,
    mut copy: impl FnMut() -> Result<(), CudaError>,
) -> Result<Duration, CudaError> {
    copy()?;
    let start = TimingEvent::record(stream)?;
    for _ in 0..copies {
        copy()?;
    }
    let end = TimingEvent::record(stream)?;
    end.synchronize()?;
    end.elapsed_since(&start)
}

/// Enables peer access from `from`'s context to `to`'s memory where the devices allow it;
/// without it, peer copies are staged through the host by the driver.
fn enable_peer_access(from: &Device, to: &Device) -> Result<(), CudaError> {
    match driver::enable_peer_access(from, to) {
        Ok(()) | Err(CudaError::PeerAccessUnsupported { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Measures every link: for each device, host to device, device to host and device to device;
/// for each pair of devices, device to device in both directions. `bytes` per copy (GrCUDA
/// uses hundreds of megabytes; at least a few megabytes hide the launch latency), `copies`
/// timed copies per link.
///
/// ```
/// match hoplite_cuda::bandwidth::measure_bandwidth(64 << 20, 10) {
///     Ok(links) => print!("{}", hoplite_cuda::bandwidth::bandwidth_csv(&links)),
///     Err(e) => println!("skipped: {e}"), // no driver or no device
/// }
/// ```
///
/// # Errors
///
/// [`CudaError::Transfer`] for `bytes` or `copies` of 0 (before the driver is asked); why
/// there is no device; the driver's error.
pub fn measure_bandwidth(bytes: usize, copies: u32) -> Result<Vec<BandwidthLink>, CudaError> {
    if bytes == 0 || copies == 0 {
        return Err(CudaError::Transfer {
            label: "bandwidth".into(),
            reason: format!(
                "{copies} copies of {bytes} bytes; measure at least one copy of at least one byte"
            ),
        });
    }
    let count = driver::driver()?.device_count;
    let devices: Vec<Arc<Device>> = (0..count).map(Device::get).collect::<Result<_, _>>()?;
    let streams: Vec<Stream> = devices
        .iter()
        .map(|d| Stream::new(d.clone()))
        .collect::<Result<_, _>>()?;
    let buffers: Vec<(DeviceBuffer, DeviceBuffer)> = devices
        .iter()
        .map(|d| {
            Ok((
                DeviceBuffer::new(d.clone(), bytes)?,
                DeviceBuffer::new(d.clone(), bytes)?,
            ))
        })
        .collect::<Result<_, CudaError>>()?;
    let host = PinnedBuffer::portable(devices[0].clone(), bytes)?;
    let total = bytes as u64;
    let mut links = Vec::new();
    for (i, stream) in streams.iter().enumerate() {
        let (a, b) = &buffers[i];
        // In the three closures `a` and `b` are live allocations of `bytes` bytes in this
        // stream's context and `host` is `bytes` bytes of portable page-locked memory; all
        // outlive the copies, which `time_copies` synchronizes before returning; the buffers
        // are disjoint.
        let h2d = time_copies(stream, copies, || {
            // SAFETY: as argued above the closures.
            unsafe { driver::copy_to_device_async(stream, a.address(), host.as_ptr(), bytes) }
        })?;
        let d2h = time_copies(stream, copies, || {
            // SAFETY: as argued above the closures.
            unsafe { driver::copy_to_host_async(stream, host.as_ptr(), a.address(), bytes) }
        })?;
        let d2d = time_copies(stream, copies, || {
            // SAFETY: as argued above the closures.
            unsafe { driver::copy_device_async(stream, b.address(), a.address(), bytes) }
        })?;
        let dev = Location::Device(i);
        links.push(BandwidthLink {
            from: Location::Cpu,
            to: dev,
            gb_per_s: gb_per_s(total, copies, h2d),
        });
        links.push(BandwidthLink {
            from: dev,
            to: Location::Cpu,
            gb_per_s: gb_per_s(total, copies, d2h),
        });
        links.push(BandwidthLink {
            from: dev,
            to: dev,
            gb_per_s: gb_per_s(total, copies, d2d),
        });
    }
    for (i, from) in devices.iter().enumerate() {
        for (j, to) in devices.iter().enumerate() {
            if i == j {
                continue;
            }
            enable_peer_access(from, to)?;
            enable_peer_access(to, from)?;
            let (src, dst) = (&buffers[i].0, &buffers[j].1);
            let stream = &streams[i];
            let elapsed = time_copies(stream, copies, || {
                // SAFETY: `src` and `dst` are live allocations of `bytes` bytes of the devices
                // passed with them; both outlive the copies, which `time_copies` synchronizes.
                unsafe { driver::copy_peer_async(stream, dst.address(), to, src.address(), from, bytes) }
            })?;
            links.push(BandwidthLink {
                from: Location::Device(i),
                to: Location::Device(j),
                gb_per_s: gb_per_s(total, copies, elapsed),
            });
        }
    }
    Ok(links)
}
