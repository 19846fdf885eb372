//! Layer 1: the device-selection policies, as pure code over a description of the devices
//! (busy streams) and of where each argument's data is up to date.
//!
//! The five policies are GrCUDA's. The three data-aware ones first ask whether any device
//! already holds at least `threshold` of the launch's bytes; if none does, locality is not
//! worth optimizing and they fall back to round robin (exploration before exploitation).

use std::fmt;
use std::path::Path;

use crate::DagError;

/// Where an up-to-date copy of some data is: the host, or a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// The host's memory (GrCUDA's CPU, index -1 in a bandwidth file).
    Cpu,
    /// Device `i`.
    Device(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Cpu => write!(f, "cpu"),
            Location::Device(i) => write!(f, "device {i}"),
        }
    }
}

/// The most devices a context tracks data on: [`LocationSet`] holds the CPU and devices
/// `0..MAX_DEVICES` in one word.
pub const MAX_DEVICES: usize = 127;

/// A set of [`Location`]s: the CPU and devices below [`MAX_DEVICES`], as bits of one word, so
/// that tracking where each view is up to date allocates nothing per launch.
///
/// ```
/// use hoplite_dag::selection::{Location, LocationSet};
/// let mut at = LocationSet::only(Location::Cpu);
/// at.insert(Location::Device(2));
/// assert!(at.contains(Location::Device(2)) && !at.contains(Location::Device(0)));
/// assert_eq!(at.iter().collect::<Vec<_>>(), [Location::Cpu, Location::Device(2)]);
/// assert_eq!(at, [Location::Device(2), Location::Cpu].into_iter().collect());
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LocationSet(u128);

impl LocationSet {
    /// The empty set.
    pub const fn new() -> Self {
        LocationSet(0)
    }

    /// The set of one location.
    ///
    /// # Panics
    ///
    /// For a device at or past [`MAX_DEVICES`].
    pub fn only(at: Location) -> Self {
        LocationSet(Self::bit(at))
    }

    fn bit(at: Location) -> u128 {
        match at {
            Location::Cpu => 1,
            Location::Device(d) => {
                assert!(
                    d < MAX_DEVICES,
                    "device {d} is past the {MAX_DEVICES} a location set holds"
                );
                1 << (d + 1)
            }
        }
    }

    /// Adds `at`.
    ///
    /// # Panics
    ///
    /// For a device at or past [`MAX_DEVICES`].
    pub fn insert(&mut self, at: Location) {
        self.0 |= Self::bit(at);
    }

    /// Whether `at` is in the set (never for a device past [`MAX_DEVICES`]).
    pub fn contains(self, at: Location) -> bool {
        match at {
            Location::Device(d) if d >= MAX_DEVICES => false,
            _ => self.0 & Self::bit(at) != 0,
        }
    }

    /// The number of locations.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The locations, the CPU first, then the devices in order.
    pub fn iter(self) -> impl Iterator<Item = Location> {
        (0..=MAX_DEVICES)
            .filter(move |&b| self.0 & (1 << b) != 0)
            .map(|b| {
                if b == 0 {
                    Location::Cpu
                } else {
                    Location::Device(b - 1)
                }
            })
    }
}

impl fmt::Debug for LocationSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<Location> for LocationSet {
    fn from_iter<I: IntoIterator<Item = Location>>(iter: I) -> Self {
        let mut set = LocationSet::new();
        for at in iter {
            set.insert(at);
        }
        set
    }
}

/// One argument of a launch, for selection: its size and where it is up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgumentData {
    /// Bytes.
    pub bytes: usize,
    /// The locations holding an up-to-date copy.
    pub up_to_date: LocationSet,
}

/// How a launch picks its device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceSelectionPolicy {
    /// Rotate over the devices.
    #[default]
    RoundRobin,
    /// The device with the fewest busy streams (lowest index on ties).
    StreamAware,
    /// The device that already holds the most of the launch's bytes (least to move).
    MinTransferSize,
    /// The device whose total transfer time is least, each argument fetched from its fastest
    /// source.
    MinMinTransferTime,
    /// The device whose total transfer time is least, each argument fetched from its slowest
    /// source (a pessimistic estimate).
    MinMaxTransferTime,
}

/// Link bandwidths between the devices and the host, `bandwidth(from, to)`, in any unit
/// (GrCUDA's files use GB/s).
#[derive(Clone, Debug, PartialEq)]
pub struct BandwidthMatrix {
    devices: usize,
    /// Row-major `(devices + 1)²`; index `devices` is the CPU.
    values: Vec<f64>,
}

/// Refuses a matrix for more devices than a context tracks (the matrix would also be
/// `(devices + 1)²` values: an absurd count must not become an allocation).
fn check_device_count(devices: usize) -> Result<(), DagError> {
    if devices > MAX_DEVICES {
        return Err(DagError::InvalidBandwidth(format!(
            "a bandwidth matrix for {devices} devices; a context tracks at most {MAX_DEVICES}"
        )));
    }
    Ok(())
}

impl BandwidthMatrix {
    /// A matrix from rows: `rows[from][to]` for `devices` devices and then the CPU, so
    /// `devices + 1` rows of `devices + 1` values.
    ///
    /// ```
    /// use hoplite_dag::selection::{BandwidthMatrix, Location};
    /// let m = BandwidthMatrix::from_rows(&[vec![30.0, 45.0, 10.0], vec![45.0, 60.0, 20.0], vec![10.0, 20.0, 0.0]])?;
    /// assert_eq!(m.bandwidth(Location::Cpu, Location::Device(1)), 20.0);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] unless the matrix is square with at least two rows and
    /// every value finite and not negative.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self, DagError> {
        let n = rows.len();
        if n < 2 || rows.iter().any(|r| r.len() != n) {
            return Err(DagError::InvalidBandwidth(format!(
                "expected a square matrix of devices + 1 (the CPU) rows, got {n} rows of lengths {:?}",
                rows.iter().map(Vec::len).collect::<Vec<_>>()
            )));
        }
        check_device_count(n - 1)?;
        let values: Vec<f64> = rows.iter().flatten().copied().collect();
        if let Some(v) = values.iter().find(|v| !v.is_finite() || **v < 0.0) {
            return Err(DagError::InvalidBandwidth(format!(
                "bandwidth {v} is not a finite value >= 0"
            )));
        }
        Ok(BandwidthMatrix {
            devices: n - 1,
            values,
        })
    }

    /// Parses GrCUDA's CSV format: a header `From,To,Bandwidth`, then one line per link, the
    /// CPU written as `-1`. Links not listed have bandwidth 0 (unusable).
    ///
    /// ```
    /// use hoplite_dag::selection::{BandwidthMatrix, Location};
    /// let m = BandwidthMatrix::from_csv("From,To,Bandwidth\n0,1,45\n-1,0,10\n", 2)?;
    /// assert_eq!(m.bandwidth(Location::Device(0), Location::Device(1)), 45.0);
    /// assert_eq!(m.bandwidth(Location::Cpu, Location::Device(0)), 10.0);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] naming the line that is not `from,to,bandwidth` with
    /// devices below `devices` (or -1) and a finite bandwidth >= 0, or for more than
    /// [`MAX_DEVICES`] devices.
    pub fn from_csv(text: &str, devices: usize) -> Result<Self, DagError> {
        check_device_count(devices)?;
        let side = devices + 1;
        let mut values = vec![0.0; side * side];
        let index = |field: &str, line: usize| -> Result<usize, DagError> {
            match field.trim().parse::<i64>() {
                Ok(-1) => Ok(devices),
                Ok(i) if i >= 0 && (i as u64) < devices as u64 => Ok(i as usize),
                _ => Err(DagError::InvalidBandwidth(format!(
                    "line {line}: `{field}` is not a device below {devices} or -1 (the CPU)"
                ))),
            }
        };
        for (n, line) in text.lines().enumerate() {
            let line_no = n + 1;
            let line = line.trim();
            if line.is_empty() || (n == 0 && line.to_ascii_lowercase().starts_with("from")) {
                continue;
            }
            let fields: Vec<&str> = line.split(',').collect();
            let [from, to, bw] = fields[..] else {
                return Err(DagError::InvalidBandwidth(format!(
                    "line {line_no}: expected `From,To,Bandwidth`, got `{line}`"
                )));
            };
            let (from, to) = (index(from, line_no)?, index(to, line_no)?);
            let bw: f64 = bw.trim().parse().map_err(|_| {
                DagError::InvalidBandwidth(format!("line {line_no}: `{}` is not a number", bw.trim()))
            })?;
            if !bw.is_finite() || bw < 0.0 {
                return Err(DagError::InvalidBandwidth(format!(
                    "line {line_no}: bandwidth {bw} is not a finite value >= 0"
                )));
            }
            values[from * side + to] = bw;
        }
        Ok(BandwidthMatrix { devices, values })
    }

    /// Reads [`from_csv`](Self::from_csv) from a file.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] when the file cannot be read or parsed.
    pub fn load(path: &Path, devices: usize) -> Result<Self, DagError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DagError::InvalidBandwidth(format!("cannot read {}: {e}", path.display())))?;
        Self::from_csv(&text, devices)
    }

    /// The number of devices (the CPU not counted).
    pub fn devices(&self) -> usize {
        self.devices
    }

    fn slot(&self, at: Location) -> usize {
        match at {
            Location::Cpu => self.devices,
            Location::Device(i) => i.min(self.devices),
        }
    }

    /// The bandwidth of the link `from -> to`.
    pub fn bandwidth(&self, from: Location, to: Location) -> f64 {
        self.values[self.slot(from) * (self.devices + 1) + self.slot(to)]
    }

    /// The bandwidth to `to` from the best of `sources` (min-min: the fastest link) or from
    /// the worst (min-max: the slowest link).
    pub fn bandwidth_from(&self, sources: LocationSet, to: Location, fastest: bool) -> f64 {
        let links = sources.iter().map(|s| self.bandwidth(s, to));
        let best = if fastest {
            links.fold(f64::NEG_INFINITY, f64::max)
        } else {
            links.fold(f64::INFINITY, f64::min)
        };
        if best.is_finite() { best } else { 0.0 }
    }
}

/// The state the policies choose from, and the rotation of round robin.
#[derive(Clone, Debug)]
pub struct DeviceSelector {
    policy: DeviceSelectionPolicy,
    devices: usize,
    threshold: f64,
    bandwidth: Option<BandwidthMatrix>,
    next_round_robin: usize,
}

impl DeviceSelector {
    /// A selector over `devices` devices (at least one). `threshold` is the share of a
    /// launch's bytes that a device must already hold for the data-aware policies to prefer
    /// it (GrCUDA's default is 0.1). The transfer-time policies need `bandwidth`.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`] for zero devices, a threshold outside `0..=1`, or a
    /// transfer-time policy without a bandwidth matrix of `devices` devices.
    pub fn new(
        policy: DeviceSelectionPolicy,
        devices: usize,
        threshold: f64,
        bandwidth: Option<BandwidthMatrix>,
    ) -> Result<Self, DagError> {
        if devices == 0 {
            return Err(DagError::InvalidOptions(
                "a context needs at least one device".into(),
            ));
        }
        if devices > MAX_DEVICES {
            return Err(DagError::InvalidOptions(format!(
                "a context tracks data on at most {MAX_DEVICES} devices, not {devices}"
            )));
        }
        if !(0.0..=1.0).contains(&threshold) {
            return Err(DagError::InvalidOptions(format!(
                "the data threshold {threshold} is not a share between 0 and 1"
            )));
        }
        let timed = matches!(
            policy,
            DeviceSelectionPolicy::MinMinTransferTime | DeviceSelectionPolicy::MinMaxTransferTime
        );
        match &bandwidth {
            None if timed => {
                return Err(DagError::InvalidOptions(format!(
                    "{policy:?} needs a bandwidth matrix (`ContextOptions::bandwidth`)"
                )));
            }
            Some(m) if m.devices() != devices => {
                return Err(DagError::InvalidOptions(format!(
                    "the bandwidth matrix describes {} devices, the context has {devices}",
                    m.devices()
                )));
            }
            _ => {}
        }
        Ok(DeviceSelector {
            policy,
            devices,
            threshold,
            bandwidth,
            next_round_robin: 0,
        })
    }

    /// The policy.
    pub fn policy(&self) -> DeviceSelectionPolicy {
        self.policy
    }

    /// Whether [`select`](Self::select) looks at the arguments' data: a caller may pass no
    /// arguments when it does not (round robin, stream aware, or a single device).
    ///
    /// ```
    /// use hoplite_dag::selection::{DeviceSelectionPolicy, DeviceSelector};
    /// let round_robin = DeviceSelector::new(DeviceSelectionPolicy::RoundRobin, 2, 0.1, None)?;
    /// assert!(!round_robin.needs_data());
    /// let by_size = DeviceSelector::new(DeviceSelectionPolicy::MinTransferSize, 2, 0.1, None)?;
    /// assert!(by_size.needs_data());
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn needs_data(&self) -> bool {
        self.devices > 1
            && !matches!(
                self.policy,
                DeviceSelectionPolicy::RoundRobin | DeviceSelectionPolicy::StreamAware
            )
    }

    fn round_robin(&mut self) -> usize {
        let d = self.next_round_robin;
        self.next_round_robin = (d + 1) % self.devices;
        d
    }

    /// Picks the device of a launch whose arguments are `args`, given each device's number of
    /// busy streams.
    pub fn select(&mut self, args: &[ArgumentData], busy_streams: &[usize]) -> usize {
        if self.devices == 1 {
            return 0;
        }
        match self.policy {
            DeviceSelectionPolicy::RoundRobin => self.round_robin(),
            DeviceSelectionPolicy::StreamAware => (0..self.devices)
                .min_by_key(|&d| busy_streams.get(d).copied().unwrap_or(0))
                .unwrap_or(0),
            DeviceSelectionPolicy::MinTransferSize => {
                let present = self.present_bytes(args);
                if !self.enough_data(args, &present) {
                    return self.round_robin();
                }
                // The most bytes already there; the lowest index on ties.
                let mut best = 0;
                for d in 1..self.devices {
                    if present[d] > present[best] {
                        best = d;
                    }
                }
                best
            }
            DeviceSelectionPolicy::MinMinTransferTime | DeviceSelectionPolicy::MinMaxTransferTime => {
                let present = self.present_bytes(args);
                if !self.enough_data(args, &present) {
                    return self.round_robin();
                }
                let fastest = self.policy == DeviceSelectionPolicy::MinMinTransferTime;
                let times: Vec<f64> = (0..self.devices)
                    .map(|d| self.transfer_time(args, d, fastest))
                    .collect();
                let mut best = 0;
                for d in 1..self.devices {
                    if times[d] < times[best] {
                        best = d;
                    }
                }
                best
            }
        }
    }

    /// Bytes of `args` already up to date on each device.
    fn present_bytes(&self, args: &[ArgumentData]) -> Vec<usize> {
        (0..self.devices)
            .map(|d| {
                args.iter()
                    .filter(|a| a.up_to_date.contains(Location::Device(d)))
                    .map(|a| a.bytes)
                    .sum()
            })
            .collect()
    }

    fn enough_data(&self, args: &[ArgumentData], present: &[usize]) -> bool {
        let total: usize = args.iter().map(|a| a.bytes).sum();
        total > 0
            && present
                .iter()
                .any(|&p| p > 0 && p as f64 >= self.threshold * total as f64)
    }

    /// The estimated time to bring every argument not on `device` there.
    pub fn transfer_time(&self, args: &[ArgumentData], device: usize, fastest: bool) -> f64 {
        let Some(matrix) = &self.bandwidth else { return 0.0 };
        let to = Location::Device(device);
        args.iter()
            .filter(|a| !a.up_to_date.contains(to) && a.bytes > 0)
            .map(|a| {
                let bw = matrix.bandwidth_from(a.up_to_date, to, fastest);
                if bw > 0.0 {
                    a.bytes as f64 / bw
                } else {
                    f64::INFINITY
                }
            })
            .sum()
    }
}
