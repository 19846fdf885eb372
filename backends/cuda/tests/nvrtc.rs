//! The module cache compiles `#[kernel]` kernels with NVRTC for compute_90, without a GPU.
//! Needs NVRTC: the file HOPLITE_NVRTC_LIB names (`cargo xtask test` installs the PyPI wheel
//! and sets it), or libnvrtc on the library path; without it the test prints that it is
//! skipped and why.

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundWriter, kernel};
use hoplite_core::device_kernel::DeviceKernel;
use hoplite_core::device_kernel::{DeviceIteration, DeviceParam, DevicePattern};
use hoplite_cuda::CudaError;
use hoplite_cuda::nvrtc::{CacheHit, ModuleCache, Nvrtc};

/// A STREAM triad: a range kernel with two readers and a scalar.
#[kernel]
pub fn triad(
    i: Idx<'_>,
    a: BoundWriter<'_, f64, 1>,
    b: BoundReader<'_, f64, 1>,
    c: BoundReader<'_, f64, 1>,
    s: f64,
) {
    a.set(i, b.get(i) + s * c.get(i));
}

/// A rank-2 MDRange kernel.
#[kernel]
pub fn stencil(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    out.set(ij, u.get(ij) * 2.0);
}

struct Broken;
// SAFETY: never launched; only compiled (and rejected).
unsafe impl DeviceKernel for Broken {
    const NAME: &'static str = "broken";
    const ENTRY: &'static str = "broken_for";
    const ITERATION: DeviceIteration = DeviceIteration::Range;
    const PATTERN: DevicePattern = DevicePattern::For;
    fn params() -> &'static [DeviceParam] {
        &[]
    }
    fn cuda_source() -> &'static str {
        "extern \"C\" __global__ void broken_for(unsigned long long b, unsigned long long e) { undeclared = 1; }"
    }
}

#[test]
fn kernels_compile_and_are_cached_in_memory_and_on_disk() {
    let nvrtc = match Nvrtc::get() {
        Ok(n) => n,
        Err(e) => {
            println!("skipped: {e}");
            assert!(matches!(e, CudaError::NoNvrtc { .. }));
            return;
        }
    };
    println!("NVRTC {:?}", nvrtc.version());
    let dir = std::env::temp_dir().join(format!("hoplite-cuda-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = ModuleCache::new(Some(dir.clone()));

    let (ptx, hit) = cache.ptx::<triad>("compute_90").expect("triad compiles");
    assert_eq!(hit, CacheHit::Compiled);
    assert!(ptx.contains(&format!(".entry {}(", triad::ENTRY)), "{ptx}");
    assert!(ptx.contains(".target sm_90"), "{}", &ptx[..ptx.len().min(400)]);
    let (again, hit) = cache.ptx::<triad>("compute_90").expect("cached");
    assert_eq!(hit, CacheHit::Memory);
    assert_eq!(again, ptx);
    let file = cache
        .path_of(triad::source_hash(), "compute_90")
        .expect("a folder");
    assert!(file.is_file(), "{}", file.display());

    // Another architecture is another entry.
    let (ptx80, hit) = cache.ptx::<triad>("compute_80").expect("compiles for sm_80");
    assert_eq!(hit, CacheHit::Compiled);
    assert!(ptx80.contains(".target sm_80"));

    // A fresh cache on the same folder reads the file instead of compiling.
    let warm = ModuleCache::new(Some(dir.clone()));
    let (from_disk, hit) = warm.ptx::<triad>("compute_90").expect("from disk");
    assert_eq!(hit, CacheHit::Disk);
    assert_eq!(from_disk, ptx);

    // A torn or foreign file is ignored and compiled again.
    std::fs::write(&file, "not PTX").expect("writable temp folder");
    let fresh = ModuleCache::new(Some(dir.clone()));
    let (recompiled, hit) = fresh.ptx::<triad>("compute_90").expect("compiled again");
    assert_eq!(hit, CacheHit::Compiled);
    assert_eq!(recompiled, ptx);
    assert_eq!(std::fs::read_to_string(&file).expect("rewritten"), *ptx);

    let (md, _) = cache.ptx::<stencil>("compute_90").expect("stencil compiles");
    assert!(md.contains(stencil::ENTRY));
    assert_eq!(cache.len(), 3);

    // A compile error is typed and carries NVRTC's log.
    let err = cache.ptx::<Broken>("compute_90").expect_err("does not compile");
    match &err {
        CudaError::Compile {
            kernel, arch, log, ..
        } => {
            assert_eq!((*kernel, arch.as_str()), ("broken", "compute_90"));
            assert!(log.contains("undeclared"), "{log}");
        }
        other => panic!("expected a compile error, got {other}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A histogram with a private row per unique token id.
#[kernel]
pub fn token_rows(
    i: Idx<'_>,
    rows: hoplite::BoundAtomic<'_, u64, 1>,
    x: BoundReader<'_, u32, 1>,
    tokens: &impl UniqueToken,
    nbins: usize,
) {
    let id = tokens.guard();
    rows.fetch_add(*id * nbins + x.get(i) as usize % nbins, 1);
}

#[test]
fn token_kernels_compile_for_every_supported_architecture() {
    let nvrtc = match Nvrtc::get() {
        Ok(nvrtc) => nvrtc,
        Err(e) => {
            println!("skipped: {e}");
            assert!(matches!(e, CudaError::NoNvrtc { .. }));
            return;
        }
    };
    let supported = nvrtc.supported_architectures();
    assert!(
        supported.contains(&90),
        "NVRTC {:?} supports {supported:?}",
        nvrtc.version()
    );
    // The entry takes the lock words and the size where the kernel declares the token.
    assert_eq!(
        token_rows::params()[2..],
        [
            DeviceParam::TokenBits { name: "tokens" },
            DeviceParam::Scalar {
                name: "nbins",
                ty: hoplite_core::device_kernel::ScalarType::Usize,
            },
        ]
    );
    let cache = ModuleCache::new(None);
    for cc in [70, 75, 80, 90] {
        if !supported.contains(&cc) {
            println!(
                "compute_{cc} skipped: NVRTC {:?} no longer compiles for it",
                nvrtc.version()
            );
            continue;
        }
        let arch = format!("compute_{cc}");
        let arch = arch.as_str();
        let (ptx, _) = cache
            .ptx::<token_rows>(arch)
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(ptx.contains(&format!(".entry {}(", token_rows::ENTRY)), "{arch}");
        // Acquire sets a bit with an atomic OR; release clears it with an atomic AND.
        assert!(
            ptx.contains("atom.global.or.b32"),
            "{arch}: no atomic OR in the PTX"
        );
        assert!(
            ptx.contains("atom.global.and.b32"),
            "{arch}: no atomic AND in the PTX"
        );
        assert!(
            ptx.contains("nanosleep"),
            "{arch}: a waiting thread does not pause"
        );
    }
}
