//! Measures the copy bandwidth of every host/device and device/device link and writes
//! GrCUDA's bandwidth file (`From,To,Bandwidth`, GB/s, the CPU as -1), which hoplite-dag's
//! transfer-aware device selection loads. `cargo xtask cuda-bandwidth` runs it.
//!
//! ```text
//! cargo run --release -p hoplite-cuda --example bandwidth -- [--out FILE] [--mib N] [--copies N]
//! ```
//!
//! Without a CUDA driver or device it prints that it is skipped and why, and exits 0.

use std::path::PathBuf;
use std::process::ExitCode;

use hoplite_cuda::CudaError;
use hoplite_cuda::bandwidth::{bandwidth_csv, measure_bandwidth};

struct Options {
    out: PathBuf,
    mib: usize,
    copies: u32,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        out: PathBuf::from("target/cuda-bandwidth.csv"),
        mib: 256,
        copies: 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{flag}` needs a value"));
        match flag.as_str() {
            "--out" => o.out = PathBuf::from(value()?),
            "--mib" => o.mib = value()?.parse().map_err(|e| format!("--mib: {e}"))?,
            "--copies" => o.copies = value()?.parse().map_err(|e| format!("--copies: {e}"))?,
            other => {
                return Err(format!(
                    "unknown option `{other}`; use --out FILE, --mib N, --copies N"
                ));
            }
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bandwidth: {e}");
            return ExitCode::FAILURE;
        }
    };
    let links = match measure_bandwidth(o.mib << 20, o.copies) {
        Ok(links) => links,
        Err(e @ (CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. })) => {
            println!("bandwidth: skipped, no CUDA device to measure: {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("bandwidth: {e}");
            return ExitCode::FAILURE;
        }
    };
    let csv = bandwidth_csv(&links);
    print!("{csv}");
    if let Some(dir) = o.out.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("bandwidth: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    match std::fs::write(&o.out, csv) {
        Ok(()) => {
            println!("bandwidth: wrote {} ({} links)", o.out.display(), links.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bandwidth: cannot write {}: {e}", o.out.display());
            ExitCode::FAILURE
        }
    }
}
