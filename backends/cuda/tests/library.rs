//! The library's device kernels (fill, strided copies): argument checks without a device, every
//! kernel through NVRTC (compute_90) and ptxas (sm_90, no spills) when HOPLITE_NVRTC_LIB and
//! HOPLITE_PTXAS name them (`cargo xtask test` does), and with a GPU the values.

use std::path::PathBuf;

use hoplite_core::device_kernel::DeviceKernel;
use hoplite_core::{LayoutLeft, LayoutRight, LayoutStride, View};
use hoplite_cuda::library::*;
use hoplite_cuda::nvrtc::{Nvrtc, PTXAS_ENV, PtxasReport, ptxas};
use hoplite_cuda::{Cuda, CudaError, CudaSpace, copy_to_device, copy_to_host};

fn is_absence(e: &CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
    )
}

#[test]
fn fill_and_copy_check_their_arguments_first() {
    let cuda = Cuda::default();
    let a: View<f64, 2, LayoutLeft, CudaSpace> = View::default();
    let b: View<f64, 2, LayoutRight, CudaSpace> = View::default();
    // Rank 4 is refused before the device.
    let r4: View<u32, 4, LayoutRight, CudaSpace> = View::default();
    let e = cuda.fill(&r4, 7).expect_err("rank 4");
    assert!(
        matches!(e, CudaError::InvalidLaunch { .. }) && e.to_string().contains("ranks 1 to 3"),
        "{e}"
    );
    let e = cuda.copy(&r4, &r4).expect_err("rank 4");
    assert!(e.to_string().contains("ranks 1 to 3"), "{e}");
    // Empty views of the same extents reach the device check (or run, with a device).
    for result in [cuda.fill(&a, 1.0), cuda.copy(&b, &a)] {
        match result {
            Ok(()) => assert!(cuda.is_available()),
            Err(e) => {
                assert!(is_absence(&e), "{e}");
                println!("skipped the device part: {e}");
            }
        }
    }
}

struct Assembler {
    program: Option<PathBuf>,
    dir: PathBuf,
}

impl Assembler {
    fn check<K: DeviceKernel>(&self, nvrtc: &Nvrtc, rows: &mut Vec<String>) {
        let ptx = nvrtc
            .compile(K::NAME, "compute_90", K::cuda_source())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.contains(&format!(".entry {}(", K::ENTRY)), "{}", K::NAME);
        let row = match &self.program {
            Some(program) => {
                let PtxasReport {
                    registers,
                    spill_stores,
                    spill_loads,
                    stack_frame,
                } = ptxas(program, K::NAME, &ptx, &self.dir).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!((spill_stores, spill_loads), (0, 0), "{} spills", K::NAME);
                format!(
                    "| `{}` | `{}` | {} | {registers} | {spill_stores} / {spill_loads} | {stack_frame} |",
                    K::NAME,
                    K::ENTRY,
                    ptx.len()
                )
            }
            None => format!("| `{}` | `{}` | {} | - | - | - |", K::NAME, K::ENTRY, ptx.len()),
        };
        rows.push(row);
    }
}

#[test]
fn library_kernels_compile_and_assemble_without_spills() {
    let nvrtc = match Nvrtc::get() {
        Ok(n) => n,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let program = std::env::var_os(PTXAS_ENV).map(PathBuf::from);
    if program.is_none() {
        println!("ptxas skipped: {PTXAS_ENV} is not set");
    }
    let asm = Assembler {
        program,
        dir: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("library-ptx"),
    };
    let mut rows = Vec::new();
    asm.check::<fill_b8_1>(nvrtc, &mut rows);
    asm.check::<fill_b8_2>(nvrtc, &mut rows);
    asm.check::<fill_b8_3>(nvrtc, &mut rows);
    asm.check::<fill_b32_1>(nvrtc, &mut rows);
    asm.check::<fill_b32_2>(nvrtc, &mut rows);
    asm.check::<fill_b32_3>(nvrtc, &mut rows);
    asm.check::<fill_b64_1>(nvrtc, &mut rows);
    asm.check::<fill_b64_2>(nvrtc, &mut rows);
    asm.check::<fill_b64_3>(nvrtc, &mut rows);
    asm.check::<copy_b8_1>(nvrtc, &mut rows);
    asm.check::<copy_b8_2>(nvrtc, &mut rows);
    asm.check::<copy_b8_3>(nvrtc, &mut rows);
    asm.check::<copy_b32_1>(nvrtc, &mut rows);
    asm.check::<copy_b32_2>(nvrtc, &mut rows);
    asm.check::<copy_b32_3>(nvrtc, &mut rows);
    asm.check::<copy_b64_1>(nvrtc, &mut rows);
    asm.check::<copy_b64_2>(nvrtc, &mut rows);
    asm.check::<copy_b64_3>(nvrtc, &mut rows);
    assert_eq!(rows.len(), 18);
    println!(
        "NVRTC {:?}; the rows of docs/PERFORMANCE.md's ptxas table:",
        nvrtc.version()
    );
    for row in rows {
        println!("{row}");
    }
}

#[test]
fn device_fill_and_strided_copy() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            assert!(is_absence(&e), "{e}");
            println!("skipped: no device ({e})");
            return;
        }
    };
    // Kernels compile with NVRTC, except on the emulated driver (the host C++ compiler).
    if !hoplite_cuda::driver_is_emulated()
        && let Err(e) = Nvrtc::get()
    {
        println!("skipped: {e}");
        return;
    }
    let (n0, n1) = (33, 65);
    let a =
        View::<f32, 2, LayoutLeft, CudaSpace>::without_initializing("a", [n0, n1]).expect("device memory");
    let b =
        View::<f32, 2, LayoutRight, CudaSpace>::without_initializing("b", [n0, n1]).expect("device memory");
    cuda.fill(&a, 2.5).expect("fill");
    let host: Vec<f32> = (0..n0 * n1).map(|k| k as f32).collect();
    copy_to_device(&b, &host).expect("copy in");
    // The transpose of layouts: b (row-major) into a (column-major).
    cuda.copy(&a, &b).expect("copy");
    hoplite_core::ExecutionSpace::fence(&cuda).expect("fence");
    let mut out = vec![0.0f32; n0 * n1];
    copy_to_host(&mut out, &a).expect("copy out");
    for i in 0..n0 {
        for j in 0..n1 {
            assert_eq!(out[i + j * n0], host[i * n1 + j], "({i}, {j})");
        }
    }
    // A copy onto itself overlaps: refused.
    let e = cuda.copy(&a, &a).expect_err("overlap");
    assert!(e.to_string().contains("overlaps"), "{e}");
    let s: View<u64, 1, LayoutStride, CudaSpace> = View::default();
    cuda.fill(&s, 9).expect("an empty strided view");
}
