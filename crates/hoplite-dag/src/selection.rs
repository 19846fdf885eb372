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
/// use hoplite_dag::{Location, LocationSet};
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
    /// Always the first device (GrCUDA's single-GPU selection: a context that spreads nothing
    /// over devices; launches pinned to a device still go there).
    SingleDevice,
}

/// Link bandwidths between the devices and the host, `bandwidth(from, to)`, in any unit
/// (GrCUDA's files use GB/s): a `(devices + 1)²` matrix whose last row and column are the CPU.
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

/// One link of a bandwidth file: `from -> to` (`None` is the CPU, `-1` in the file).
struct CsvLink {
    from: Option<usize>,
    to: Option<usize>,
    bandwidth: f64,
}

/// Parses the lines of a bandwidth file, the header skipped.
fn csv_links(text: &str) -> Result<Vec<CsvLink>, DagError> {
    let endpoint = |field: &str, line: usize| -> Result<Option<usize>, DagError> {
        match field.trim().parse::<i64>() {
            Ok(-1) => Ok(None),
            Ok(i) if i >= 0 && (i as u64) < MAX_DEVICES as u64 => Ok(Some(i as usize)),
            _ => Err(DagError::InvalidBandwidth(format!(
                "line {line}: `{}` is not a device below {MAX_DEVICES} or -1 (the CPU)",
                field.trim()
            ))),
        }
    };
    let mut links = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = line.trim();
        if line.is_empty() || (n == 0 && line.to_ascii_lowercase().starts_with("from")) {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let [from, to, bandwidth] = fields[..] else {
            return Err(DagError::InvalidBandwidth(format!(
                "line {line_no}: expected `From,To,Bandwidth`, got `{line}`"
            )));
        };
        let (from, to) = (endpoint(from, line_no)?, endpoint(to, line_no)?);
        let bandwidth: f64 = bandwidth.trim().parse().map_err(|_| {
            DagError::InvalidBandwidth(format!("line {line_no}: `{}` is not a number", bandwidth.trim()))
        })?;
        if !bandwidth.is_finite() || bandwidth < 0.0 {
            return Err(DagError::InvalidBandwidth(format!(
                "line {line_no}: bandwidth {bandwidth} is not a finite value >= 0"
            )));
        }
        links.push(CsvLink { from, to, bandwidth });
    }
    Ok(links)
}

impl BandwidthMatrix {
    /// A matrix from rows, taken as they are: `rows[from][to]` for `devices` devices and then
    /// the CPU, so `devices + 1` rows of `devices + 1` values.
    ///
    /// ```
    /// use hoplite_dag::{BandwidthMatrix, Location};
    /// let m = BandwidthMatrix::from_rows(&[vec![30.0, 45.0, 10.0], vec![45.0, 60.0, 20.0], vec![10.0, 20.0, 0.0]])?;
    /// assert_eq!(m.bandwidth(Location::Cpu, Location::Device(1))?, 20.0);
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

    /// Builds the matrix GrCUDA builds from its bandwidth file: a header `From,To,Bandwidth`,
    /// then one line per link, the CPU written as `-1`.
    ///
    /// * Each value is floored (GrCUDA smooths the measurement's noise so).
    /// * Links between devices are made symmetric: both directions become the mean of the two
    ///   (a direction the file does not list counts as 0, as in GrCUDA).
    /// * Links with the CPU are symmetric too: GrCUDA reads `-1,d` lines and uses them both
    ///   ways; a file that also lists `d,-1` (as `cargo xtask cuda-bandwidth` writes, from its
    ///   two measured directions) gets the mean of the directions it lists.
    /// * Links of devices at or past `devices` are left out, so a file measured on a machine
    ///   with more GPUs serves a context that uses fewer. CPU to CPU is 0.
    ///
    /// ```
    /// use hoplite_dag::{BandwidthMatrix, Location};
    /// let m = BandwidthMatrix::from_csv("From,To,Bandwidth\n0,1,45.7\n1,0,40.2\n-1,0,10.9\n-1,1,12\n1,-1,14\n0,2,99\n", 2)?;
    /// assert_eq!(m.bandwidth(Location::Device(0), Location::Device(1))?, 42.5);
    /// assert_eq!(m.bandwidth(Location::Device(1), Location::Device(0))?, 42.5);
    /// assert_eq!(m.bandwidth(Location::Device(0), Location::Cpu)?, 10.0);
    /// assert_eq!(m.bandwidth(Location::Cpu, Location::Device(1))?, 13.0);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] naming the line that is not `from,to,bandwidth` with
    /// devices below [`MAX_DEVICES`] (or -1) and a finite bandwidth >= 0, or for more than
    /// [`MAX_DEVICES`] devices.
    pub fn from_csv(text: &str, devices: usize) -> Result<Self, DagError> {
        check_device_count(devices)?;
        let side = devices + 1;
        let cpu = devices;
        // Per directed link: the floored value of its last line, if any.
        let mut listed = vec![None::<f64>; side * side];
        for link in csv_links(text)? {
            if link.from.is_some_and(|d| d >= devices) || link.to.is_some_and(|d| d >= devices) {
                continue;
            }
            let (from, to) = (link.from.unwrap_or(cpu), link.to.unwrap_or(cpu));
            listed[from * side + to] = Some(link.bandwidth.floor());
        }
        let mut values = vec![0.0; side * side];
        for i in 0..side {
            for j in i..side {
                let (ij, ji) = (listed[i * side + j], listed[j * side + i]);
                let mean = if i == cpu || j == cpu {
                    // The directions the file lists (GrCUDA's `-1,d` used both ways).
                    match (ij, ji) {
                        (Some(a), Some(b)) => (a + b) / 2.0,
                        (Some(a), None) | (None, Some(a)) => a,
                        (None, None) => 0.0,
                    }
                } else {
                    (ij.unwrap_or(0.0) + ji.unwrap_or(0.0)) / 2.0
                };
                values[i * side + j] = mean;
                values[j * side + i] = mean;
            }
        }
        values[cpu * side + cpu] = 0.0;
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

    fn slot(&self, at: Location) -> Result<usize, DagError> {
        match at {
            Location::Cpu => Ok(self.devices),
            Location::Device(i) if i < self.devices => Ok(i),
            Location::Device(i) => Err(DagError::InvalidBandwidth(format!(
                "device {i} is outside the bandwidth matrix of {} devices",
                self.devices
            ))),
        }
    }

    /// The bandwidth of the link `from -> to`.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] for a device outside the matrix.
    pub fn bandwidth(&self, from: Location, to: Location) -> Result<f64, DagError> {
        Ok(self.values[self.slot(from)? * (self.devices + 1) + self.slot(to)?])
    }

    /// The bandwidth at which data up to date at `sources` reaches `to`, as GrCUDA's
    /// transfer-time policies estimate it: infinite when `to` already holds it (nothing moves),
    /// else the fastest link from a source (`fastest`, min-min) or the slowest (min-max).
    ///
    /// ```
    /// use hoplite_dag::{BandwidthMatrix, Location, LocationSet};
    /// let m = BandwidthMatrix::from_rows(&[vec![30.0, 45.0, 10.0], vec![45.0, 60.0, 20.0], vec![10.0, 20.0, 0.0]])?;
    /// let at: LocationSet = [Location::Device(1), Location::Cpu].into_iter().collect();
    /// assert_eq!(m.bandwidth_from(at, Location::Device(0), true)?, 45.0);
    /// assert_eq!(m.bandwidth_from(at, Location::Device(0), false)?, 10.0);
    /// assert_eq!(m.bandwidth_from(at, Location::Device(1), false)?, f64::INFINITY);
    /// assert!(m.bandwidth_from(LocationSet::new(), Location::Device(0), true).is_err());
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] when `sources` is empty (the data is up to date nowhere)
    /// or a location is outside the matrix.
    pub fn bandwidth_from(&self, sources: LocationSet, to: Location, fastest: bool) -> Result<f64, DagError> {
        let target = self.slot(to)?;
        if sources.is_empty() {
            return Err(DagError::InvalidBandwidth(format!(
                "data up to date nowhere cannot be moved to {to}"
            )));
        }
        if sources.contains(to) {
            return Ok(f64::INFINITY);
        }
        let side = self.devices + 1;
        let mut best = if fastest { 0.0 } else { f64::INFINITY };
        for source in sources.iter() {
            let link = self.values[self.slot(source)? * side + target];
            best = if fastest { best.max(link) } else { best.min(link) };
        }
        Ok(best)
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
    /// Every device, `0..devices`: the candidates of [`select`](Self::select).
    all: Box<[usize]>,
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
            all: (0..devices).collect(),
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
    /// use hoplite_dag::{DeviceSelectionPolicy, DeviceSelector};
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
                DeviceSelectionPolicy::RoundRobin
                    | DeviceSelectionPolicy::StreamAware
                    | DeviceSelectionPolicy::SingleDevice
            )
    }

    /// Round robin over `candidates` (sorted, at least one), as GrCUDA rotates over a list of
    /// devices: the rotation's state indexes the sorted list and moves on by one.
    fn round_robin_among(&mut self, sorted: &[usize]) -> usize {
        let d = sorted[self.next_round_robin % sorted.len()];
        self.next_round_robin = (self.next_round_robin + 1) % self.devices;
        d
    }

    /// [`select`](Self::select) restricted to `candidates` (devices below the selector's
    /// count; GrCUDA's `retrieve(vertex, devices)`, which its multi-GPU parent-stream policy
    /// uses to choose among the devices of a launch's parents): round robin rotates over the
    /// sorted candidates, stream aware takes the candidate with the fewest busy streams, and
    /// the data-aware policies weigh only the candidates' data, falling back to round robin
    /// among them. `SingleDevice` gives the first candidate.
    ///
    /// ```
    /// use hoplite_dag::{DeviceSelectionPolicy, DeviceSelector};
    /// let mut rr = DeviceSelector::new(DeviceSelectionPolicy::RoundRobin, 4, 0.1, None)?;
    /// let picks: Vec<usize> = (0..4).map(|_| rr.select_among(&[], &[], &[3, 1])).collect::<Result<_, _>>()?;
    /// assert_eq!(picks, [1, 3, 1, 3]);
    /// // A pick among one candidate advances the rotation too, as GrCUDA's does.
    /// assert_eq!(rr.select_among(&[], &[], &[2])?, 2);
    /// assert_eq!(rr.select(&[], &[])?, 1);
    /// let mut aware = DeviceSelector::new(DeviceSelectionPolicy::StreamAware, 4, 0.1, None)?;
    /// assert_eq!(aware.select_among(&[], &[0, 3, 1, 2], &[1, 3])?, 3);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidOptions`] for no candidate or one past the selector's devices; the
    /// transfer-time policies' errors, as for [`select`](Self::select).
    pub fn select_among(
        &mut self,
        args: &[ArgumentData],
        busy_streams: &[usize],
        candidates: &[usize],
    ) -> Result<usize, DagError> {
        let mut sorted: Vec<usize> = candidates.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        match (sorted.first(), sorted.last()) {
            (None, _) => {
                return Err(DagError::InvalidOptions(
                    "a device selection among no candidate device".into(),
                ));
            }
            (_, Some(&last)) if last >= self.devices => {
                return Err(DagError::InvalidOptions(format!(
                    "candidate device {last} is past the context's {} devices",
                    self.devices
                )));
            }
            _ => {}
        }
        self.choose(args, busy_streams, &sorted)
    }

    /// The policy's choice among `sorted` (candidates in increasing order, at least one, all
    /// below the devices' count).
    fn choose(
        &mut self,
        args: &[ArgumentData],
        busy_streams: &[usize],
        sorted: &[usize],
    ) -> Result<usize, DagError> {
        if sorted.len() == 1 {
            // As GrCUDA's round robin, whose rotation advances on every pick, also among one
            // candidate: later picks stay where GrCUDA's are.
            if self.policy == DeviceSelectionPolicy::RoundRobin {
                return Ok(self.round_robin_among(sorted));
            }
            return Ok(sorted[0]);
        }
        Ok(match self.policy {
            DeviceSelectionPolicy::SingleDevice => sorted[0],
            DeviceSelectionPolicy::RoundRobin => self.round_robin_among(sorted),
            DeviceSelectionPolicy::StreamAware => *sorted
                .iter()
                .min_by_key(|&&d| busy_streams.get(d).copied().unwrap_or(0))
                .unwrap_or(&sorted[0]),
            DeviceSelectionPolicy::MinTransferSize => {
                let present = self.present_bytes(args);
                if !sorted.iter().any(|&d| self.holds_enough(args, present[d])) {
                    return Ok(self.round_robin_among(sorted));
                }
                // The most bytes already there; the lowest index on ties.
                let mut best = sorted[0];
                for &d in &sorted[1..] {
                    if present[d] > present[best] {
                        best = d;
                    }
                }
                best
            }
            DeviceSelectionPolicy::MinMinTransferTime | DeviceSelectionPolicy::MinMaxTransferTime => {
                let fastest = self.policy == DeviceSelectionPolicy::MinMinTransferTime;
                let present = self.present_bytes(args);
                // GrCUDA's order: the least transfer time among the devices that hold enough
                // of the data (lowest index on ties), else round robin.
                let mut best: Option<(usize, f64)> = None;
                for &d in sorted.iter().filter(|&&d| self.holds_enough(args, present[d])) {
                    let time = self.transfer_time(args, d, fastest)?;
                    if best.is_none_or(|(_, t)| time < t) {
                        best = Some((d, time));
                    }
                }
                match best {
                    Some((d, _)) => d,
                    None => self.round_robin_among(sorted),
                }
            }
        })
    }

    /// Picks the device of a launch whose arguments are `args`, given each device's number of
    /// busy streams.
    ///
    /// # Errors
    ///
    /// For the transfer-time policies, [`DagError::InvalidBandwidth`] for an argument up to
    /// date nowhere or at a device outside the matrix.
    pub fn select(&mut self, args: &[ArgumentData], busy_streams: &[usize]) -> Result<usize, DagError> {
        // Every device is a candidate; the list is the selector's own, lent for the call.
        let all = std::mem::take(&mut self.all);
        let chosen = self.choose(args, busy_streams, &all);
        self.all = all;
        chosen
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

    /// Whether a device holding `present` of the launch's bytes holds more than the
    /// threshold's share of them (GrCUDA's strict comparison; never for a launch of no bytes).
    fn holds_enough(&self, args: &[ArgumentData], present: usize) -> bool {
        let total: usize = args.iter().map(|a| a.bytes).sum();
        total > 0 && present as f64 / total as f64 > self.threshold
    }

    /// The estimated time to bring every argument to `device`: each argument's bytes over
    /// the bandwidth [`BandwidthMatrix::bandwidth_from`] gives (no time for one already there,
    /// an infinite one over a link of bandwidth 0). 0 without a matrix.
    ///
    /// # Errors
    ///
    /// [`DagError::InvalidBandwidth`] for an argument up to date nowhere or at a location
    /// outside the matrix, or a `device` outside it.
    pub fn transfer_time(
        &self,
        args: &[ArgumentData],
        device: usize,
        fastest: bool,
    ) -> Result<f64, DagError> {
        let Some(matrix) = &self.bandwidth else {
            return Ok(0.0);
        };
        let to = Location::Device(device);
        let mut time = 0.0;
        for a in args {
            let bandwidth = matrix.bandwidth_from(a.up_to_date, to, fastest)?;
            if bandwidth.is_infinite() || a.bytes == 0 {
                continue;
            }
            time += if bandwidth > 0.0 {
                a.bytes as f64 / bandwidth
            } else {
                f64::INFINITY
            };
        }
        Ok(time)
    }
}
