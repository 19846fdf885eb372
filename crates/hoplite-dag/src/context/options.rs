//! The options of a context: execution mode, dependency, stream and device-selection policies.

use crate::model::DependencyPolicy;
use crate::selection::{BandwidthMatrix, DeviceSelectionPolicy};
use crate::streams::{NewStreamPolicy, ParentStreamPolicy};

/// Whether launches return at once or wait for their kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Execution {
    /// Launches return at once; the host waits only where it touches data.
    #[default]
    Async,
    /// Every launch waits for its kernel (for debugging, and as a baseline).
    Sync,
}

/// The options of a [`Context`](crate::Context) (GrCUDA's context startup options).
///
/// ```
/// use hoplite_dag::{ContextOptions, DependencyPolicy, DeviceSelectionPolicy, Execution};
/// let options = ContextOptions::default()
///     .execution(Execution::Sync)
///     .dependency(DependencyPolicy::NoConst)
///     .device_selection(DeviceSelectionPolicy::StreamAware);
/// assert_eq!(options.execution_mode(), Execution::Sync);
/// ```
#[derive(Clone, Debug)]
pub struct ContextOptions {
    pub(super) execution: Execution,
    pub(super) dependency: DependencyPolicy,
    pub(super) new_stream: NewStreamPolicy,
    pub(super) parent_stream: ParentStreamPolicy,
    pub(super) device_selection: DeviceSelectionPolicy,
    pub(super) data_threshold: f64,
    pub(super) bandwidth: Option<BandwidthMatrix>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            execution: Execution::Async,
            dependency: DependencyPolicy::WithConst,
            new_stream: NewStreamPolicy::Reuse,
            parent_stream: ParentStreamPolicy::Disjoint,
            device_selection: DeviceSelectionPolicy::RoundRobin,
            data_threshold: 0.1,
            bandwidth: None,
        }
    }
}

impl ContextOptions {
    /// Async (default) or sync execution.
    pub fn execution(mut self, execution: Execution) -> Self {
        self.execution = execution;
        self
    }
    /// The execution mode.
    pub fn execution_mode(&self) -> Execution {
        self.execution
    }
    /// The dependency policy (default with-const).
    pub fn dependency(mut self, policy: DependencyPolicy) -> Self {
        self.dependency = policy;
        self
    }
    /// The new-stream policy (default reuse).
    pub fn new_stream(mut self, policy: NewStreamPolicy) -> Self {
        self.new_stream = policy;
        self
    }
    /// The parent-stream policy (default disjoint).
    pub fn parent_stream(mut self, policy: ParentStreamPolicy) -> Self {
        self.parent_stream = policy;
        self
    }
    /// The device-selection policy (default round robin).
    pub fn device_selection(mut self, policy: DeviceSelectionPolicy) -> Self {
        self.device_selection = policy;
        self
    }
    /// The share of a launch's bytes a device must hold for the data-aware policies to
    /// prefer it (default 0.1).
    pub fn data_threshold(mut self, threshold: f64) -> Self {
        self.data_threshold = threshold;
        self
    }
    /// The link bandwidths the transfer-time policies use.
    pub fn bandwidth(mut self, matrix: BandwidthMatrix) -> Self {
        self.bandwidth = Some(matrix);
        self
    }
}
