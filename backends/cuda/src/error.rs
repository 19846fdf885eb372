//! [`CudaError`]: every way the CUDA backend can fail, as a value.

/// What went wrong in the CUDA backend: a missing driver or device, a failed driver call, a
/// kernel NVRTC rejected, a launch that does not fit the device. Every message names the
/// value and says what to do.
///
/// Converts into [`hoplite_core::Error::Device`] for the core traits' methods.
///
/// ```
/// use hoplite_cuda::CudaError;
/// let e = CudaError::NoDevice;
/// assert!(e.to_string().contains("no CUDA device"));
/// let core: hoplite_core::Error = e.into();
/// assert!(matches!(core, hoplite_core::Error::Device { space: "Cuda", .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The CUDA driver library could not be opened.
    #[error(
        "the CUDA driver library was not found (looked for {looked_for}); install the NVIDIA driver, or run on a machine with an NVIDIA GPU"
    )]
    NoDriver {
        /// The library names that were tried.
        looked_for: String,
    },
    /// [`use_emulated_driver`](crate::use_emulated_driver) called after the process's driver
    /// was chosen (by an earlier call into the backend).
    #[error(
        "the CUDA driver of this process is already chosen ({driver}); call `hoplite_cuda::use_emulated_driver()` before any other hoplite-cuda call, or set HOPLITE_CUDA_DRIVER=emulated"
    )]
    DriverChosen {
        /// The driver in use.
        driver: String,
    },
    /// The driver is older than the API the backend calls.
    #[error(
        "the CUDA driver supports CUDA {found_major}.{found_minor}, but hoplite-cuda needs 12.0 or newer; update the NVIDIA driver"
    )]
    DriverTooOld {
        /// The driver's CUDA major version.
        found_major: i32,
        /// The driver's CUDA minor version.
        found_minor: i32,
    },
    /// The driver is there but sees no device.
    #[error(
        "no CUDA device: the driver is installed but reports no GPU (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)"
    )]
    NoDevice,
    /// A device ordinal past the last device.
    #[error("CUDA device {ordinal} does not exist: the driver reports {count} device(s), numbered from 0")]
    InvalidDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },
    /// A driver call failed.
    #[error("{call} failed with {name} ({code}): {description}")]
    Driver {
        /// The driver function.
        call: &'static str,
        /// The `CUresult` code.
        code: u32,
        /// Its name, such as `CUDA_ERROR_OUT_OF_MEMORY`.
        name: String,
        /// The driver's description of it.
        description: String,
    },
    /// NVRTC could not be opened.
    #[error(
        "NVRTC was not found (looked for {looked_for}); install the CUDA toolkit or `pip install nvidia-cuda-nvrtc-cu12`, and name libnvrtc.so.12 in HOPLITE_NVRTC_LIB"
    )]
    NoNvrtc {
        /// The paths and names that were tried.
        looked_for: String,
    },
    /// NVRTC rejected a kernel.
    #[error("kernel `{kernel}` did not compile for {arch}: {status}\n{log}")]
    Compile {
        /// The kernel's name.
        kernel: &'static str,
        /// The virtual architecture, such as `compute_90`.
        arch: String,
        /// NVRTC's status.
        status: String,
        /// NVRTC's log.
        log: String,
    },
    /// A CUDA graph whose structure cannot be built: a node that waits for a later or
    /// missing node, or a node kind a CUDA graph cannot hold.
    #[error("CUDA graph: {reason}")]
    InvalidGraph {
        /// What is wrong and what to do.
        reason: String,
    },
    /// A launch that cannot be made: arguments that do not match the kernel, or a geometry
    /// the device cannot run.
    #[error("kernel `{kernel}`: {reason}")]
    InvalidLaunch {
        /// The kernel's name.
        kernel: &'static str,
        /// What does not fit, with the numbers and the fix.
        reason: String,
    },
    /// A raw kernel's signature that does not parse (GrCUDA's NIDL syntax:
    /// `name(x: in pointer double, n: sint64)`).
    #[error("kernel signature `{signature}`, at byte {position}: {reason}")]
    Signature {
        /// The signature as given.
        signature: String,
        /// The byte offset where parsing stopped.
        position: usize,
        /// What was expected there.
        reason: String,
    },
    /// A view of one GPU given to a launch or a copy on a stream of another. A launch takes
    /// another GPU's view only after `Cuda::enable_peer_access` enabled access from the
    /// instance's device to the view's; host copies never use peer access.
    #[error(
        "{what} is a view of CUDA device {view_device}, but the instance is a stream of device {instance_device}; use an instance of device {view_device} (`Cuda::on_device({view_device})`), copy the data to device {instance_device} first, or, for a kernel launch, enable peer access with `cuda.enable_peer_access({view_device})` on the device-{instance_device} instance where `hoplite_cuda::can_access_peer({instance_device}, {view_device})` is true (host copies do not use peer access)"
    )]
    WrongDevice {
        /// The argument or view, named for the message.
        what: String,
        /// The device the view's memory belongs to.
        view_device: usize,
        /// The device of the instance's stream.
        instance_device: usize,
    },
    /// A device unique token that cannot be made: a size of 0, or a pool the device could
    /// not allocate or clear.
    #[error("unique token of {size} ids: {reason}")]
    InvalidToken {
        /// The number of ids asked for.
        size: usize,
        /// What went wrong and what to do.
        reason: String,
    },
    /// Two GPUs between which the hardware has no peer path (`cuDeviceCanAccessPeer` says no,
    /// or the driver refused to enable access).
    #[error(
        "CUDA device {device} cannot access device {peer}'s memory (no peer path between them: `hoplite_cuda::can_access_peer({device}, {peer})` is false); launch on `Cuda::on_device({peer})`, or copy the data to device {device} first"
    )]
    PeerAccessUnsupported {
        /// The device whose kernels would read the peer's memory.
        device: usize,
        /// The device that owns the memory.
        peer: usize,
    },
    /// A reduction over an MDRange whose reducer is not commutative and whose tiles are not
    /// visited as nested loops: the core joins its partial results in the policy's visit
    /// order, tile by tile, and Cuda joins in the order of nested loops over the box.
    #[error(
        "kernel `{kernel}`: the reducer `{reducer}` is not commutative, so its partial results must join in the MDRange's visit order, which with tiles {tiles} is tile by tile; Cuda joins them in the order of nested loops over the box ({order}); drop `with_tiles` (or use tiles that span every dimension faster than one and are one index deep in the slower ones), or reduce with a reducer whose join is commutative (`Reducer::is_commutative`)"
    )]
    UnorderedReduction {
        /// The kernel.
        kernel: &'static str,
        /// The reducer's type.
        reducer: &'static str,
        /// The policy's tiles.
        tiles: String,
        /// The nested loops' order (the policy's inner order).
        order: String,
    },
    /// Work queued on an instance that failed on the device after the call that queued it had
    /// returned (a fault such as an illegal address, which CUDA reports at the next wait),
    /// found when the instance was waited for: names the instance and the last work queued
    /// on it, which is where to look first.
    #[error(
        "the work queued on Cuda instance {instance} failed on the device (the last queued: `{last}`; run it under `compute-sanitizer` to find the faulting kernel): {error}"
    )]
    QueuedWork {
        /// The instance's number in the process (from 0).
        instance: u64,
        /// The kernel (or `fill`, `copy`, `deep_copy_to_device`, ...) queued last.
        last: &'static str,
        /// The driver's error.
        error: Box<CudaError>,
    },
    /// What the emulated driver's sanitizer (`HOPLITE_CUDA_SANITIZER=on`) found, as
    /// `compute-sanitizer` reports it on a GPU: two streams touching the same device memory
    /// without an ordering between them, device memory freed while queued work may still use
    /// it, or a host read of device memory. Returned by the driver call that would have
    /// queued (or done) the offending work, which is not queued.
    #[error(
        "the emulated CUDA driver's sanitizer found {finding} (schedule seed {seed}: rerun with HOPLITE_CUDA_SCHEDULE_SEED={seed})"
    )]
    Sanitizer {
        /// The finding: what touched which memory, and what was missing.
        finding: String,
        /// The seed of the schedule that delayed the streams.
        seed: u64,
    },
    /// A host transfer whose sizes do not match.
    #[error("copy of `{label}`: {reason}")]
    Transfer {
        /// The view's label.
        label: String,
        /// What does not match.
        reason: String,
    },
}

impl From<CudaError> for hoplite_core::Error {
    fn from(e: CudaError) -> Self {
        hoplite_core::Error::Device {
            space: "Cuda",
            reason: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CudaError;

    #[test]
    fn a_failure_found_at_a_wait_names_the_instance_and_the_last_queued_work() {
        let fault = CudaError::Driver {
            call: "cuStreamSynchronize",
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            description: "an illegal memory access was encountered".into(),
        };
        let e = CudaError::QueuedWork {
            instance: 3,
            last: "axpy",
            error: Box::new(fault),
        };
        let message = e.to_string();
        for part in [
            "instance 3",
            "`axpy`",
            "compute-sanitizer",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
        ] {
            assert!(message.contains(part), "{message}");
        }
        let core: hoplite_core::Error = e.into();
        assert!(core.to_string().contains("`axpy`"), "{core}");
    }
}
