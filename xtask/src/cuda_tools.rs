//! NVRTC and ptxas for the kernel checks, from the PyPI wheels `nvidia-cuda-nvrtc-cu12` and
//! `nvidia-cuda-nvcc-cu12`, installed with pip into `target/cuda-wheels` once (later runs find
//! them there). No GPU is needed: NVRTC compiles the kernels' CUDA C to PTX and ptxas
//! assembles it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The wheels, pinned so that every run compiles with the same NVRTC.
const WHEELS: [&str; 2] = [
    "nvidia-cuda-nvrtc-cu12==12.9.86",
    "nvidia-cuda-nvcc-cu12==12.9.86",
];

/// Where the tools are once installed.
pub(crate) struct CudaTools {
    pub(crate) nvrtc: PathBuf,
    pub(crate) ptxas: PathBuf,
}

pub(crate) fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// Installs the wheels unless they are there; `Err` says why they could not be installed.
pub(crate) fn install() -> Result<CudaTools, String> {
    let dir = workspace_root().join("target").join("cuda-wheels");
    let tools = CudaTools {
        nvrtc: dir.join("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"),
        ptxas: dir.join("nvidia/cuda_nvcc/bin/ptxas"),
    };
    if tools.nvrtc.is_file() && tools.ptxas.is_file() {
        println!("xtask: NVRTC and ptxas already installed in {}", dir.display());
        return Ok(tools);
    }
    println!(
        "xtask: installing {} into {} with pip",
        WHEELS.join(" and "),
        dir.display()
    );
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or("no python3 to run pip")?;
    let status = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-deps",
            "--upgrade",
            "--target",
        ])
        .arg(&dir)
        .args(WHEELS)
        .status()
        .map_err(|e| format!("could not run pip: {e}"))?;
    if !status.success() {
        return Err(format!("pip failed ({status})"));
    }
    if tools.nvrtc.is_file() && tools.ptxas.is_file() {
        Ok(tools)
    } else {
        Err(format!(
            "the wheels lack {} or {}",
            tools.nvrtc.display(),
            tools.ptxas.display()
        ))
    }
}
