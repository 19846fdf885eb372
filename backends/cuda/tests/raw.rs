//! Raw kernels (CUDA C plus a NIDL signature): the signature parser and its positioned errors,
//! argument checks before the driver, NVRTC compiling a raw kernel and the entry checked
//! against the signature (NVRTC from HOPLITE_NVRTC_LIB; skipped with the reason without it),
//! and with a device, a launch.

use hoplite_core::device_kernel::ScalarType;
use hoplite_core::{LayoutLeft, View};
use hoplite_cuda::geometry::LaunchGeometry;
use hoplite_cuda::nvrtc::Nvrtc;
use hoplite_cuda::raw::{
    PointerDirection, RawArg, RawKernel, RawParam, parse_signature, ptx_entry_param_sizes,
};
use hoplite_cuda::{Cuda, CudaError, CudaSpace, copy_to_device, copy_to_host};

const AXPY: &str = r#"
extern "C" __global__ void axpy(double* y, const double* x, double a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] += a * x[i];
    }
}
"#;
const AXPY_SIG: &str = "axpy(y: inout pointer double, x: in pointer double, a: double, n: sint64)";

fn position(e: &CudaError) -> usize {
    match e {
        CudaError::Signature { position, .. } => *position,
        other => panic!("expected a signature error, got {other:?}"),
    }
}

#[test]
fn signatures_parse_in_nidl_syntax() {
    let sig = parse_signature(
        "  k ( p : pointer float , q:const pointer sint32, r: out pointer uint64, f: bool, u: uint32 ) ",
    )
    .expect("parses");
    assert_eq!(sig.name, "k");
    assert_eq!(
        sig.params,
        [
            RawParam::Pointer {
                name: "p".into(),
                direction: PointerDirection::InOut,
                element: ScalarType::F32
            },
            RawParam::Pointer {
                name: "q".into(),
                direction: PointerDirection::In,
                element: ScalarType::I32
            },
            RawParam::Pointer {
                name: "r".into(),
                direction: PointerDirection::Out,
                element: ScalarType::U64
            },
            RawParam::Scalar {
                name: "f".into(),
                ty: ScalarType::Bool
            },
            RawParam::Scalar {
                name: "u".into(),
                ty: ScalarType::U32
            },
        ]
    );
    assert_eq!(parse_signature("empty()").expect("parses").params, []);
    let sizes: Vec<usize> = sig.params.iter().map(RawParam::size).collect();
    assert_eq!(sizes, [8, 8, 8, 1, 4]);
}

#[test]
fn signature_errors_name_the_position_and_the_fix() {
    let cases: [(&str, usize, &str); 11] = [
        ("", 0, "kernel's name"),
        ("axpy", 4, "`(`"),
        ("axpy(", 5, "parameter name"),
        ("axpy(y double)", 7, "`:`"),
        ("axpy(y: in double)", 11, "`pointer`"),
        ("axpy(y: out pointer, n: sint64)", 19, "element type"),
        ("axpy(y: pointer half)", 16, "unknown type `half`"),
        ("axpy(n: sint16)", 8, "not a device scalar"),
        ("axpy(n: sint64 m: sint64)", 15, "`,` or `)`"),
        ("axpy(n: sint64, n: double)", 16, "named twice"),
        ("axpy(n: sint64) extra", 16, "after `)`"),
    ];
    for (text, at, words) in cases {
        let e = parse_signature(text).expect_err(text);
        assert_eq!(position(&e), at, "{text}: {e}");
        assert!(e.to_string().contains(words), "{text}: {e}");
        assert!(e.to_string().contains(&format!("at byte {at}")), "{e}");
    }
    let e = parse_signature("ns::axpy(n: sint64)").expect_err("mangled");
    assert!(e.to_string().contains("extern \"C\""), "{e}");
    assert!(matches!(
        RawKernel::new(AXPY, "axpy(y pointer double)"),
        Err(CudaError::Signature { .. })
    ));
}

#[test]
fn arguments_that_do_not_match_the_signature_are_refused_before_the_driver() {
    let axpy = RawKernel::new(AXPY, AXPY_SIG).expect("parses");
    let y: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    let x: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    let xf: View<f32, 1, LayoutLeft, CudaSpace> = View::default();
    let cuda = Cuda::default();
    let refused = |args: &[RawArg], words: &str| {
        let packed = axpy.pack(args).expect_err(words);
        assert!(
            matches!(packed, CudaError::InvalidLaunch { kernel: "axpy", .. }),
            "{packed}"
        );
        assert!(packed.to_string().contains(words), "{packed}");
        // SAFETY: refused before any launch; nothing reaches the device.
        let launched = unsafe { cuda.launch_raw_elements(&axpy, 16, args) }.expect_err(words);
        assert_eq!(launched, packed);
    };
    refused(&[RawArg::write(&y)], "takes 4 arguments, 1 were given");
    refused(
        &[
            RawArg::read(&y),
            RawArg::read(&x),
            RawArg::scalar(2.0),
            RawArg::scalar(4i64),
        ],
        "RawArg::write",
    );
    refused(
        &[
            RawArg::write(&y),
            RawArg::write(&x),
            RawArg::scalar(2.0),
            RawArg::scalar(4i64),
        ],
        "RawArg::read",
    );
    refused(
        &[
            RawArg::write(&y),
            RawArg::read(&xf),
            RawArg::scalar(2.0),
            RawArg::scalar(4i64),
        ],
        "a view of F32 for a pointer to F64",
    );
    refused(
        &[
            RawArg::write(&y),
            RawArg::read(&x),
            RawArg::scalar(2.0f32),
            RawArg::scalar(4i64),
        ],
        "a F32 for a parameter of F64",
    );
    refused(
        &[
            RawArg::write(&y),
            RawArg::scalar(1.0),
            RawArg::scalar(2.0),
            RawArg::scalar(4i64),
        ],
        "a scalar for a pointer",
    );
    refused(
        &[
            RawArg::write(&y),
            RawArg::read(&x),
            RawArg::read(&x),
            RawArg::scalar(4i64),
        ],
        "a view for a scalar",
    );
    // `isize` is accepted for `sint64`, and the block is 8 + 8 + 8 + 8 bytes.
    let ok = [
        RawArg::write(&y),
        RawArg::read(&x),
        RawArg::scalar(2.0),
        RawArg::scalar(4isize),
    ];
    assert_eq!(axpy.pack(&ok).expect("matches").offsets(), [0, 8, 16, 24]);
    // Geometry is checked before the device too.
    for g in [
        LaunchGeometry {
            grid: [0, 1, 1],
            block: [32, 1, 1],
            shared_bytes: 0,
        },
        LaunchGeometry {
            grid: [1, 1, 1],
            block: [64, 32, 1],
            shared_bytes: 0,
        },
    ] {
        // SAFETY: refused before any launch.
        let e = unsafe { cuda.launch_raw(&axpy, g, &ok) }.expect_err("bad geometry");
        assert!(matches!(e, CudaError::InvalidLaunch { .. }), "{e}");
    }
    // Matching arguments reach the device check: the typed absence here. The views are
    // empty, so `n` is 0 (with `ok`'s 4 the kernel would write through a null address).
    let empty = [
        RawArg::write(&y),
        RawArg::read(&x),
        RawArg::scalar(2.0),
        RawArg::scalar(0isize),
    ];
    // SAFETY: the kernel writes y[i] and reads x[i] for i < n = 0 only.
    match unsafe {
        cuda.launch_raw(
            &axpy,
            LaunchGeometry {
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_bytes: 0,
            },
            &empty,
        )
    } {
        Ok(()) => println!("a device is present: the empty launch ran"),
        Err(e) => assert!(
            matches!(
                e,
                CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
            ),
            "{e}"
        ),
    }
}

#[test]
fn nvrtc_compiles_a_raw_kernel_and_the_entry_is_checked_against_the_signature() {
    if let Err(e) = Nvrtc::get() {
        println!("skipped: {e}");
        return;
    }
    let axpy = RawKernel::new(AXPY, AXPY_SIG).expect("parses");
    let ptx = axpy.ptx("compute_90").expect("compiles");
    assert_eq!(ptx_entry_param_sizes(&ptx, "axpy"), Some(vec![8, 8, 8, 8]));
    // A bool and an int pack as one and four bytes; NVRTC agrees.
    let mixed = RawKernel::new(
        "extern \"C\" __global__ void mixed(int* out, bool flag, unsigned int k) { if (flag) out[0] = k; }",
        "mixed(out: out pointer sint32, flag: bool, k: uint32)",
    )
    .expect("parses");
    let ptx = mixed.ptx("compute_90").expect("compiles and matches");
    assert_eq!(ptx_entry_param_sizes(&ptx, "mixed"), Some(vec![8, 1, 4]));
    // A signature that disagrees with the source is refused after the compile.
    let wrong = RawKernel::new(
        AXPY,
        "axpy(y: inout pointer double, x: in pointer double, a: float, n: sint64)",
    )
    .expect("parses");
    let e = wrong.ptx("compute_90").expect_err("sizes differ");
    assert!(
        e.to_string().contains("make the signature match the source"),
        "{e}"
    );
    // A C++ (mangled) entry is not found under its plain name.
    let mangled = RawKernel::new("__global__ void plain(int n) {}", "plain(n: sint32)").expect("parses");
    let e = mangled.ptx("compute_90").expect_err("mangled");
    assert!(e.to_string().contains("extern \"C\""), "{e}");
    // A source NVRTC rejects is its typed error with the log.
    let broken =
        RawKernel::new("extern \"C\" __global__ void broken() { nope = 1; }", "broken()").expect("parses");
    assert!(matches!(
        broken.ptx("compute_90"),
        Err(CudaError::Compile { kernel: "broken", .. })
    ));
}

#[test]
fn a_raw_axpy_runs_on_the_device() {
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(e) => {
            println!("skipped: needs a CUDA device ({e})");
            return;
        }
    };
    let n = 10_000usize;
    let y = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [n]).expect("allocates");
    let x = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("x", [n]).expect("allocates");
    let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
    copy_to_device(&x, &xs).expect("copies");
    copy_to_device(&y, &vec![1.0; n]).expect("copies");
    let axpy = RawKernel::new(AXPY, AXPY_SIG).expect("parses");
    let args = [
        RawArg::write(&y),
        RawArg::read(&x),
        RawArg::scalar(2.0),
        RawArg::scalar(n as i64),
    ];
    // SAFETY: thread i touches y[i] and x[i] for i < n, and both views hold n elements.
    unsafe { cuda.launch_raw_elements(&axpy, n, &args) }.expect("launches");
    cuda.synchronize().expect("runs");
    let mut host = vec![0.0; n];
    copy_to_host(&mut host, &y).expect("copies back");
    assert!(host.iter().enumerate().all(|(i, v)| *v == 1.0 + 2.0 * i as f64));
}
