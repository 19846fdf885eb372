//! Every kernel compiles with NVRTC for compute_90 and assembles with ptxas for sm_90. Needs
//! the `nvrtc` feature and the wheels `cargo xtask test` installs (named by HOPLITE_NVRTC_LIB
//! and HOPLITE_PTXAS); without them the check prints that it is skipped and why.

#![cfg(feature = "nvrtc")]

mod kernels;

use std::path::PathBuf;

use hoplite::device_kernel::DeviceKernel;
use hoplite::device_kernel::DeviceKernelInfo;
use hoplite_kernel_check::nvrtc::{NVRTC_ENV, Nvrtc, PTXAS_ENV, PtxasReport, ptxas};
use kernels::*;

struct Toolchain {
    nvrtc: Nvrtc,
    ptxas: Option<PathBuf>,
    dir: PathBuf,
}

impl Toolchain {
    fn check<K: DeviceKernel>(&self, rows: &mut Vec<String>) {
        self.check_info(&DeviceKernelInfo::of::<K>(), rows);
    }

    fn check_info(&self, kernel: &DeviceKernelInfo, rows: &mut Vec<String>) {
        let ptx = match self.nvrtc.compile(kernel.name, kernel.cuda_source) {
            Ok(ptx) => ptx,
            Err(e) => panic!("{e}\n--- generated source ---\n{}", kernel.cuda_source),
        };
        assert!(
            ptx.contains(&format!(".entry {}(", kernel.entry)),
            "PTX of {} lacks its entry",
            kernel.name
        );
        let report = self
            .ptxas
            .as_ref()
            .map(|program| match ptxas(program, kernel.name, &ptx, &self.dir) {
                Ok(report) => report,
                Err(e) => panic!("{e}"),
            });
        let row = match report {
            Some(PtxasReport {
                registers,
                spill_stores,
                spill_loads,
                stack_frame,
            }) => format!(
                "| `{}` | `{}` | {} | {registers} | {spill_stores} / {spill_loads} | {stack_frame} |",
                kernel.name,
                kernel.entry,
                ptx.len()
            ),
            None => format!(
                "| `{}` | `{}` | {} | - | - | - |",
                kernel.name,
                kernel.entry,
                ptx.len()
            ),
        };
        rows.push(row);
    }
}

#[test]
fn every_kernel_compiles_for_compute_90_and_assembles_for_sm_90() {
    let Some(lib) = std::env::var_os(NVRTC_ENV) else {
        println!("skipped: {NVRTC_ENV} is not set (`cargo xtask test` installs NVRTC and sets it)");
        return;
    };
    let nvrtc = match Nvrtc::open(PathBuf::from(lib).as_path()) {
        Ok(nvrtc) => nvrtc,
        Err(e) => panic!("{NVRTC_ENV} names a library that does not load: {e}"),
    };
    let ptxas = std::env::var_os(PTXAS_ENV).map(PathBuf::from);
    if ptxas.is_none() {
        println!("ptxas skipped: {PTXAS_ENV} is not set");
    }
    let tools = Toolchain {
        nvrtc,
        ptxas,
        dir: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-ptx"),
    };
    let (major, minor) = tools.nvrtc.version();
    let mut rows = Vec::new();
    tools.check::<triad>(&mut rows);
    tools.check::<poly_lookup>(&mut rows);
    // The conformance suite's kernels too.
    for kernel in hoplite_conformance::device_kernels() {
        tools.check_info(&kernel, &mut rows);
    }
    tools.check::<gather_lookup>(&mut rows);
    tools.check::<dot>(&mut rows);
    tools.check::<laplace>(&mut rows);
    tools.check::<index_code>(&mut rows);
    tools.check::<index_code4>(&mut rows);
    tools.check::<collatz_steps>(&mut rows);
    tools.check::<int_ops>(&mut rows);
    tools.check::<wide_ops>(&mut rows);
    tools.check::<casts>(&mut rows);
    tools.check::<float_math>(&mut rows);
    tools.check::<max_of>(&mut rows);
    tools.check::<control>(&mut rows);
    tools.check::<divide>(&mut rows);
    tools.check::<histogram>(&mut rows);
    tools.check::<wrapping_sum>(&mut rows);
    tools.check::<transpose_sum>(&mut rows);
    tools.check::<exclusive_prefix>(&mut rows);
    tools.check::<inclusive_prefix>(&mut rows);
    tools.check::<argmin>(&mut rows);
    tools.check::<argmax_distance>(&mut rows);
    tools.check::<row_sums>(&mut rows);
    tools.check::<team_norm>(&mut rows);
    tools.check::<reverse_rows>(&mut rows);
    tools.check::<nested_rows>(&mut rows);
    tools.check::<nested_reductions>(&mut rows);
    tools.check::<extremes>(&mut rows);
    tools.check::<team_extremes>(&mut rows);
    tools.check::<team_max_min>(&mut rows);
    tools.check::<scratch_levels>(&mut rows);
    tools.check::<nested_scans>(&mut rows);
    tools.check::<row_offsets>(&mut rows);
    tools.check::<extremes_at>(&mut rows);
    tools.check::<row_joins>(&mut rows);
    tools.check::<slot_sums>(&mut rows);
    tools.check::<league_totals>(&mut rows);
    tools.check::<team_logic>(&mut rows);
    tools.check::<all_below>(&mut rows);
    tools.check::<any_multiple>(&mut rows);
    tools.check::<wrapping_product>(&mut rows);
    tools.check::<extremes_first_last>(&mut rows);
    tools.check::<token_histogram>(&mut rows);
    tools.check::<token_claims>(&mut rows);
    tools.check::<team_token_claims>(&mut rows);
    tools.check::<token_sum>(&mut rows);
    tools.check::<team_token_slots>(&mut rows);
    let table = format!(
        "NVRTC {major}.{minor}, compute_90 -> ptxas sm_90\n\n| kernel | entry | PTX bytes | registers | spill stores / loads (bytes) | stack frame (bytes) |\n|---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    println!("{table}");
    let report = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-ptxas.md");
    if let Err(e) = std::fs::write(&report, &table) {
        println!("could not write {}: {e}", report.display());
    }
}
