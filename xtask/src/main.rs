//! `cargo xtask <command>`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! * `test` — installs the system packages hoplite-numa links (hwloc, udev) and Graphviz (the
//!   DOT exports' check) when missing, then the formatter check, clippy with warnings denied,
//!   and every test of the workspace (unit, integration, doc), then the loom models of the
//!   lock-free parts, a bounded Miri subset (installing nightly with Miri when missing), then
//!   hoplite-mpi's steps (which install Open MPI first: `mpi_steps`). This is the one command
//!   CI runs (`.ci/run`).
//! * `bench` — the criterion benchmarks, then `target/hoplite-bench/summary.json` pairing every
//!   hoplite measurement with the baselines measured in the same run.
//! * `conformance` — the conformance suite, for every backend or one.
//! * `cuda-bandwidth` — the copy bandwidth of every host/device and device/device link on this
//!   machine's GPUs, written as GrCUDA's bandwidth file for hoplite-dag's transfer-aware
//!   policies (skipped, with the reason, without a GPU).
//! * `gpu-bundle` — builds, without a GPU, the release binaries a GPU run needs and a script
//!   that runs them on a GPU machine and writes one report (see `gpu_bundle`).
//! * `miri` — the core's and backends' unit tests, the rayon team machinery and part of the
//!   conformance suite under Miri (needs a nightly toolchain with miri).

mod bench;
mod cuda_tools;
mod gpu_bundle;

use std::env;
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  test [--no-lint] [-- <cargo test args>]
        install the system packages hoplite-numa links (libhwloc-dev, libudev-dev; with
        apt-get, once), check formatting, run clippy (-D warnings), every test of the
        workspace and the loom models of the borrow table, the barrier, the pool, the DAG's
        streams and context and the CUDA backend's queued work, hoplite-cuda's tests on the
        emulated CUDA driver with its sanitizer in both launch modes and both graph modes
        (two emulated GPUs), a bounded Miri subset (installs nightly with miri when
        missing), then hoplite-mpi's steps (installs Debian's Open MPI and libclang with
        apt-get when missing, clippy and its mpirun-driven tests); --no-lint skips the
        formatting and clippy steps
  bench [--quick] [-- <criterion filter>]
        run the criterion benchmarks and write target/hoplite-bench/summary.json;
        --quick uses short warm-up and measurement times (a few minutes on 2 cores)
  conformance [--backend NAME]
        run the conformance suite on every backend, or on NAME (serial, rayon, thread-scope, numa,
        cuda: its #[kernel] checks on a GPU, the rest reported skipped with the count;
        cuda-emulated: the same on the emulated CUDA driver, without a GPU)
  cuda-bandwidth [--out FILE] [--mib N] [--copies N]
        measure host->device, device->host and device->device copy bandwidth for every
        pair on this machine's GPUs and write GrCUDA's CSV (From,To,Bandwidth in GB/s, the
        CPU as -1; default target/cuda-bandwidth.csv), which hoplite-dag's
        BandwidthMatrix::load reads; without a GPU it prints that it is skipped and why
  gpu-bundle [--out DIR]
        build, without a GPU, everything a GPU run needs (release test binaries of
        hoplite-cuda, the CUDA benchmark, the tour with --features cuda) into DIR (default
        target/gpu-bundle) with run.sh, which runs it all on a GPU machine in under 10 minutes
        and writes report.md (tests, benchmark medians, GPU, driver, commit)
  miri  run the core's and the backends' unit tests, the rayon team machinery and the
        conformance checks of teams, panics, bad input, tokens and views on every backend
        under Miri (installs the nightly miri component with rustup when it is missing)
  mpi [--no-lint]
        only hoplite-mpi's steps of `test`: install Open MPI and libclang when missing, clippy,
        the mpirun-driven tests, the facade's `mpi` feature
  help  print this message";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(rest),
        Some("bench") => bench::run(rest),
        Some("conformance") => conformance(rest),
        Some("cuda-bandwidth") => cuda_bandwidth(rest),
        Some("gpu-bundle") => gpu_bundle::run(rest),
        Some("miri") => miri(rest),
        Some("mpi") => mpi(rest),
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask cuda-bandwidth`: runs hoplite-cuda's `bandwidth` example (release build), which
/// measures with CUDA events and writes the CSV, or says why it is skipped.
fn cuda_bandwidth(args: &[String]) -> Result<(), String> {
    let mut out = "target/cuda-bandwidth.csv".to_owned();
    let mut pass: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--out" | "--mib" | "--copies" => {
                let value = it
                    .next()
                    .ok_or_else(|| format!("`{flag}` needs a value\n\n{USAGE}"))?;
                if flag == "--out" {
                    out = value.clone();
                } else {
                    pass.extend([flag.clone(), value.clone()]);
                }
            }
            other => {
                return Err(format!(
                    "unknown option `{other}` for `cuda-bandwidth`\n\n{USAGE}"
                ));
            }
        }
    }
    Step::cargo(
        "CUDA bandwidth",
        &[
            "run",
            "--release",
            "-p",
            "hoplite-cuda",
            "--example",
            "bandwidth",
            "--",
            "--out",
            &out,
        ],
    )
    .args(&pass)
    .run()
}

/// One step of a task: a program invocation (cargo unless said otherwise) with a name.
pub(crate) struct Step {
    name: &'static str,
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Step {
    pub(crate) fn cargo(name: &'static str, args: &[&str]) -> Self {
        Step {
            name,
            program: env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            env: Vec::new(),
        }
    }

    fn program(name: &'static str, program: &str, args: &[&str]) -> Self {
        Step {
            name,
            program: program.to_owned(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            env: Vec::new(),
        }
    }

    pub(crate) fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    fn args(mut self, args: &[String]) -> Self {
        self.args.extend_from_slice(args);
        self
    }

    /// Sets an environment variable for the program.
    pub(crate) fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    pub(crate) fn run(&self) -> Result<(), String> {
        let env: String = self.env.iter().map(|(k, v)| format!("{k}=\"{v}\" ")).collect();
        println!(
            "xtask: == {} == {env}{} {}",
            self.name,
            self.program,
            self.args.join(" ")
        );
        let start = Instant::now();
        let status = Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .status()
            .map_err(|e| format!("could not start `{}`: {e}", self.program))?;
        println!("xtask: {} took {:.1} s", self.name, start.elapsed().as_secs_f64());
        if status.success() {
            Ok(())
        } else {
            Err(format!("step `{}` failed ({status})", self.name))
        }
    }
}

/// Splits `args` at `--` into this command's options and what is passed through.
pub(crate) fn split_passthrough(args: &[String]) -> (&[String], &[String]) {
    match args.iter().position(|a| a == "--") {
        Some(split) => (&args[..split], &args[split + 1..]),
        None => (args, &[]),
    }
}

fn test(args: &[String]) -> Result<(), String> {
    let (own, passthrough) = split_passthrough(args);
    let mut lint = true;
    for arg in own {
        match arg.as_str() {
            "--no-lint" => lint = false,
            other => return Err(format!("unknown option `{other}` for `test`\n\n{USAGE}")),
        }
    }
    // hoplite-numa links the system's hwloc: install it first, so that clippy of the whole
    // workspace and the NUMA tests below can build.
    install_system_packages("hoplite-numa", NUMA_SYSTEM_PACKAGES)?;
    // Graphviz's `dot` checks that the DAG's and graphs' DOT exports parse
    // (crates/hoplite-dag/tests/dot_graphviz.rs).
    install_system_packages("the DOT exports' check", &["graphviz"])?;
    // The emulated CUDA driver and hoplite-kernel-check compile kernels with the host C++
    // compiler.
    install_system_packages("the emulated CUDA driver's kernels", &["g++"])?;
    let mut steps = Vec::new();
    if lint {
        steps.push(Step::cargo("format", &["fmt", "--all", "--", "--check"]));
        steps.push(Step::cargo(
            "clippy",
            &[
                "clippy",
                "--workspace",
                "--exclude",
                "hoplite-mpi",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ));
        // The documentation builds without a warning (broken or private links fail it).
        steps.push(
            Step::cargo(
                "rustdoc (warnings denied)",
                &["doc", "--workspace", "--no-deps", "--exclude", "hoplite-mpi"],
            )
            .env("RUSTDOCFLAGS", "-D warnings"),
        );
        // The profiling hooks are compiled only with the core's `tracing` feature, the ndarray
        // interop only with its `ndarray` feature.
        steps.push(Step::cargo(
            "clippy (tracing and ndarray features)",
            &[
                "clippy",
                "-p",
                "hoplite-core",
                "--features",
                "tracing,ndarray",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ));
        // The report types' serde derives (core, graph, DAG) only with the `serde` feature.
        steps.push(Step::cargo(
            "clippy (serde feature)",
            &[
                "clippy",
                "-p",
                "hoplite-dag",
                "--features",
                "serde",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ));
        // The facade's NUMA section (the tour's) is compiled only with its `numa` feature.
        steps.push(Step::cargo(
            "clippy (numa feature)",
            &[
                "clippy",
                "-p",
                "hoplite",
                "--features",
                "numa",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ));
        // The facade's CUDA re-exports are compiled only with its `cuda` feature.
        steps.push(Step::cargo(
            "clippy (cuda feature)",
            &[
                "clippy",
                "-p",
                "hoplite",
                "--features",
                "cuda",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ));
        // hoplite-cuda's adapters to the front ends are cargo features, all on by default (and
        // so in the workspace runs above and below): lint the backend without them and with
        // each alone, so that every `cfg(feature = ..)` combination keeps compiling cleanly.
        for (name, features) in CUDA_FEATURE_SETS {
            let mut step = Step::cargo(name, &["clippy", "-p", "hoplite-cuda", "--no-default-features"]);
            if !features.is_empty() {
                step = step.arg("--features").arg(*features);
            }
            steps.push(step.arg("--all-targets").arg("--").arg("-D").arg("warnings"));
        }
        // The NVRTC checks are compiled only with the kernel checks' `nvrtc` feature.
        steps.push(Step::cargo(
            "clippy (nvrtc feature)",
            &[
                "clippy",
                "-p",
                "hoplite-kernel-check",
                "--features",
                "nvrtc",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ));
    }
    // hoplite-numa is left out of the plain workspace run (which needs no system library) and
    // tested on its own below, where the libraries are known to be installed; hoplite-mpi
    // needs an MPI library and has steps of its own (`mpi_steps`).
    let mut tests = Step::cargo(
        "tests",
        &[
            "test",
            "--workspace",
            "--exclude",
            "hoplite-numa",
            "--exclude",
            "hoplite-mpi",
        ],
    );
    for arg in passthrough {
        tests = tests.arg(arg.clone());
    }
    steps.push(tests);
    let mut numa_tests = Step::cargo("tests (hoplite-numa)", &["test", "-p", "hoplite-numa"]);
    for arg in passthrough {
        numa_tests = numa_tests.arg(arg.clone());
    }
    steps.push(numa_tests);
    steps.push(Step::cargo(
        "tests (numa feature of the facade)",
        &["test", "-p", "hoplite", "--features", "numa"],
    ));
    // The CUDA guide (docs/cuda.md) is a doctest of the facade with its `cuda` feature.
    steps.push(Step::cargo(
        "doc tests (cuda feature of the facade: the CUDA guide)",
        &["test", "-p", "hoplite", "--features", "cuda", "--doc"],
    ));
    steps.push(Step::cargo(
        "tests (ndarray feature: the interop's unit tests)",
        &[
            "test",
            "-p",
            "hoplite-core",
            "--features",
            "ndarray",
            "--lib",
            "ndarray",
        ],
    ));
    steps.push(Step::cargo(
        "tests (ndarray feature: the interop's doc tests)",
        &[
            "test",
            "-p",
            "hoplite-core",
            "--features",
            "ndarray",
            "--doc",
            "ndarray",
        ],
    ));
    steps.push(Step::cargo(
        "tests (tracing feature)",
        &[
            "test",
            "-p",
            "hoplite-core",
            "--features",
            "tracing",
            "--test",
            "tracing",
        ],
    ));
    steps.push(Step::cargo(
        "tests (serde feature: reports through JSON)",
        &[
            "test",
            "-p",
            "hoplite-dag",
            "--features",
            "serde",
            "--test",
            "serde",
        ],
    ));
    // Every #[kernel] through NVRTC (compute_90) and ptxas (sm_90), from pip wheels.
    let mut nvrtc = Step::cargo(
        "kernels through NVRTC and ptxas",
        &[
            "test",
            "-p",
            "hoplite-kernel-check",
            "--features",
            "nvrtc",
            "--test",
            "nvrtc",
            "--",
            "--nocapture",
        ],
    );
    // The CUDA backend's module cache, its reduce and scan entries, its own fill and copy
    // kernels and raw kernels (with their entries checked against their signatures) through
    // the same NVRTC and ptxas (no GPU needed; the library test fails on a spill and prints
    // its rows of the ptxas table); the plain workspace run above tests the rest of
    // hoplite-cuda without a driver.
    let mut cuda_nvrtc = Step::cargo(
        "hoplite-cuda kernels through NVRTC and ptxas",
        &[
            "test",
            "-p",
            "hoplite-cuda",
            "--test",
            "nvrtc",
            "--test",
            "reduce",
            "--test",
            "library",
            "--test",
            "raw",
            "--",
            "--nocapture",
        ],
    );
    match cuda_tools::install() {
        Ok(tools) => {
            nvrtc = nvrtc
                .env("HOPLITE_NVRTC_LIB", &tools.nvrtc.to_string_lossy())
                .env("HOPLITE_PTXAS", &tools.ptxas.to_string_lossy());
            cuda_nvrtc = cuda_nvrtc
                .env("HOPLITE_NVRTC_LIB", &tools.nvrtc.to_string_lossy())
                .env("HOPLITE_PTXAS", &tools.ptxas.to_string_lossy());
        }
        Err(why) => {
            println!("xtask: NVRTC and ptxas unavailable ({why}); their check reports itself skipped")
        }
    }
    steps.push(nvrtc);
    steps.push(cuda_nvrtc);
    // The whole CUDA backend on the emulated driver (kernels compiled by the host C++
    // compiler), with two emulated GPUs so that the peer and multi-GPU tests run, in both launch
    // modes and both graph modes, with its sanitizer on (races between streams, frees in use,
    // host reads of device memory; streams delayed by a seeded schedule): the conformance
    // suite's portable checks, the DAG, graphs, queued work, raw kernels, reductions. Each run
    // prints its conformance count and its schedule's seed.
    let emulated_build = cuda_tools::workspace_root().join("target").join("cuda-emulated");
    // The tour's CUDA section on the emulated driver, with launches that return once queued:
    // every line of it runs as on a GPU (reductions, a CUDA graph, tokens, two streams).
    steps.push(
        Step::cargo(
            "example: tour's CUDA section on the emulated driver",
            &[
                "run",
                "-p",
                "hoplite",
                "--example",
                "tour",
                "--features",
                "cuda",
                "--",
                "cuda",
            ],
        )
        .env("HOPLITE_CUDA_DRIVER", "emulated")
        .env("HOPLITE_CUDA_SANITIZER", "on")
        .env("HOPLITE_CUDA_LAUNCHES", "async")
        .env("HOPLITE_CUDA_EMULATED_BUILD", &emulated_build.to_string_lossy()),
    );
    for (name, launches, graphs) in EMULATED_MODES {
        steps.push(
            Step::cargo(name, &["test", "-p", "hoplite-cuda"])
                .env("HOPLITE_CUDA_DRIVER", "emulated")
                .env("HOPLITE_CUDA_EMULATED_DEVICES", "2")
                .env("HOPLITE_CUDA_SANITIZER", "on")
                .env("HOPLITE_CUDA_EMULATED_BUILD", &emulated_build.to_string_lossy())
                .env("HOPLITE_CUDA_LAUNCHES", launches)
                .env("HOPLITE_CUDA_GRAPHS", graphs),
        );
    }
    // The focused examples run (each checks its own results), the CUDA one without a GPU too.
    for (name, example, features) in EXAMPLES {
        let mut step = Step::cargo(name, &["run", "-p", "hoplite", "--example", example]);
        if !features.is_empty() {
            step = step.arg("--features").arg(*features);
        }
        steps.push(step);
    }
    // The hand-written protocols (the borrow table, the barrier, the pool's hand-offs, the
    // DAG's streams, statuses and context, the CUDA backend's queued work) under loom's model
    // checker: every interleaving
    // within a few preemptions. A target folder of its own, because `--cfg loom` changes
    // every crate's build.
    steps.push(
        Step::cargo(
            "loom models",
            &[
                "test",
                "--release",
                "--target-dir",
                "target/loom",
                "-p",
                "hoplite-core",
                "-p",
                "hoplite-rayon",
                "-p",
                "hoplite-dag",
                "-p",
                "hoplite-cuda",
                "--lib",
                "loom",
            ],
        )
        .env("RUSTFLAGS", "--cfg loom"),
    );

    let start = Instant::now();
    for step in &steps {
        step.run()?;
    }
    // A bounded Miri subset (about 4 minutes on 2 cores; the whole set is `cargo xtask miri`):
    // the core's and the host backends' unit tests, the DAG's waits and launches, and the
    // read of a `#[kernel]`'s captures a device backend makes.
    install_miri()?;
    run_miri(MIRI_SUBSET)?;
    // The facade and the CUDA backend documented as docs.rs builds them (their
    // `package.metadata.docs.rs`: nightly, `--cfg docsrs`, which marks feature-gated items),
    // with the nightly toolchain Miri brought.
    Step::program(
        "rustdoc as docs.rs builds it",
        "rustup",
        &[
            "run",
            "nightly",
            "cargo",
            "doc",
            "-p",
            "hoplite",
            "-p",
            "hoplite-cuda",
            "--no-deps",
            "--features",
            "hoplite/cuda",
            "--target-dir",
            "target/docsrs",
        ],
    )
    .env("RUSTDOCFLAGS", "--cfg docsrs -D warnings")
    .run()?;
    mpi_steps(lint)?;
    println!(
        "xtask: all steps passed in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The modes `cargo xtask test` runs hoplite-cuda's tests in on the emulated driver: step
/// name, `HOPLITE_CUDA_LAUNCHES`, `HOPLITE_CUDA_GRAPHS`.
const EMULATED_MODES: &[(&str, &str, &str)] = &[
    (
        "hoplite-cuda on the emulated driver (launches sync, graphs host)",
        "sync",
        "host",
    ),
    (
        "hoplite-cuda on the emulated driver (launches async, graphs host)",
        "async",
        "host",
    ),
    (
        "hoplite-cuda on the emulated driver (launches sync, graphs device)",
        "sync",
        "device",
    ),
    (
        "hoplite-cuda on the emulated driver (launches async, graphs device)",
        "async",
        "device",
    ),
];

/// The facade's focused examples `cargo xtask test` runs: step name, example, features.
const EXAMPLES: &[(&str, &str, &str)] = &[
    ("example: heat", "heat", ""),
    ("example: histogram", "histogram", ""),
    ("example: reductions", "reductions", ""),
    ("example: teams", "teams", ""),
    ("example: dag_pipeline", "dag_pipeline", ""),
    ("example: graph_pipeline", "graph_pipeline", ""),
    ("example: selection", "selection", ""),
    ("example: cuda_axpy", "cuda_axpy", "cuda"),
    ("example: numa_heat", "numa_heat", "numa"),
];

/// hoplite-cuda's feature sets that `cargo xtask test` lints besides its defaults (which are
/// all of its features): none, then each adapter alone.
const CUDA_FEATURE_SETS: &[(&str, &str)] = &[
    ("clippy (hoplite-cuda without its adapters)", ""),
    ("clippy (hoplite-cuda, dag adapter only)", "dag"),
    ("clippy (hoplite-cuda, graph adapter only)", "graph"),
    ("clippy (hoplite-cuda, select adapter only)", "select"),
];

/// The Debian packages hoplite-numa builds against: hwloc's headers and library (2.9 in
/// Debian 12), and udev's, which hwloc's static dependencies need at link time.
const NUMA_SYSTEM_PACKAGES: &[&str] = &["libhwloc-dev", "libudev-dev"];

/// Installs the Debian `packages` that are not installed yet, with `apt-get update` once and
/// `apt-get install -y` (through `sudo` when not root). Does nothing when `dpkg -s` shows them
/// all installed, so running it again is harmless.
fn install_system_packages(needed_by: &str, packages: &[&str]) -> Result<(), String> {
    let installed = |package: &str| {
        Command::new("dpkg")
            .args(["-s", package])
            .output()
            .is_ok_and(|o| {
                o.status.success()
                    && String::from_utf8_lossy(&o.stdout).contains("Status: install ok installed")
            })
    };
    let missing: Vec<&str> = packages.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        println!("xtask: system packages {} are installed", packages.join(", "));
        return Ok(());
    }
    if Command::new("apt-get").arg("--version").output().is_err() {
        return Err(format!(
            "{needed_by} needs the system packages {}, and this system has no apt-get: install them with its package manager",
            missing.join(", ")
        ));
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let apt = |name: &'static str, args: &[&str]| {
        if is_root {
            Step::program(name, "apt-get", args)
        } else {
            Step::program(name, "sudo", &[&["apt-get"], args].concat())
        }
    };
    println!(
        "xtask: installing the system packages {needed_by} needs: {}",
        missing.join(", ")
    );
    apt("apt-get update", &["update"]).run()?;
    apt(
        "apt-get install",
        &[&["install", "-y"], missing.as_slice()].concat(),
    )
    .env("DEBIAN_FRONTEND", "noninteractive")
    .run()
}

/// Debian packages hoplite-mpi needs: an MPI library and its launcher, and libclang for the
/// bindings that rsmpi generates at build time.
const MPI_PACKAGES: &[&str] = &["libopenmpi-dev", "openmpi-bin", "libclang-dev"];

fn mpi(args: &[String]) -> Result<(), String> {
    match args {
        [] => mpi_steps(true),
        [flag] if flag == "--no-lint" => mpi_steps(false),
        _ => Err(format!("usage: cargo xtask mpi [--no-lint]\n\n{USAGE}")),
    }
}

/// The steps of hoplite-mpi: install Open MPI, then clippy and the tests of the crate (its
/// integration tests start `mpirun --oversubscribe -np 2` and `-np 4`), then the facade's
/// `mpi` feature.
fn mpi_steps(lint: bool) -> Result<(), String> {
    install_system_packages("hoplite-mpi", MPI_PACKAGES)?;
    if lint {
        Step::cargo(
            "clippy (hoplite-mpi)",
            &[
                "clippy",
                "-p",
                "hoplite-mpi",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        )
        .run()?;
    }
    Step::cargo("tests (hoplite-mpi)", &["test", "-p", "hoplite-mpi"]).run()?;
    // The facade's `mpi` feature only re-exports the crate: building it is the check.
    Step::cargo(
        "clippy (facade with the mpi feature)",
        &[
            "clippy",
            "-p",
            "hoplite",
            "--features",
            "mpi",
            "--",
            "-D",
            "warnings",
        ],
    )
    .run()
}

/// The backends that run the conformance suite: name, the package and the test target that
/// run it.
const CONFORMANCE_BACKENDS: &[(&str, &str, &str)] = &[
    ("serial", "hoplite-conformance", "serial"),
    ("rayon", "hoplite-conformance", "rayon"),
    ("thread-scope", "hoplite-conformance", "thread_scope_backend"),
    ("numa", "hoplite-numa", "conformance"),
    ("cuda", "hoplite-cuda", "conformance"),
    ("cuda-emulated", "hoplite-cuda", "conformance"),
];

fn conformance(args: &[String]) -> Result<(), String> {
    let backend = match args {
        [] => None,
        [flag, name] if flag == "--backend" => Some(name.as_str()),
        _ => {
            return Err(format!(
                "usage: cargo xtask conformance [--backend NAME]\n\n{USAGE}"
            ));
        }
    };
    let selected: Vec<_> = CONFORMANCE_BACKENDS
        .iter()
        .filter(|(name, _, _)| backend.is_none_or(|b| b == *name))
        .collect();
    if selected.is_empty() {
        let known: Vec<_> = CONFORMANCE_BACKENDS.iter().map(|(n, _, _)| *n).collect();
        return Err(format!(
            "unknown backend `{}`; known: {}",
            backend.unwrap_or_default(),
            known.join(", ")
        ));
    }
    for (name, package, target) in selected {
        if *name == "numa" {
            install_system_packages("hoplite-numa", NUMA_SYSTEM_PACKAGES)?;
        }
        println!("xtask: conformance suite on `{name}`");
        let mut step = Step::cargo("conformance", &["test", "-p", package, "--test", target]);
        if name.starts_with("cuda") {
            // The test prints how many checks it ran and skipped, and why.
            step = step.arg("--").arg("--nocapture");
        }
        if *name == "cuda-emulated" {
            step = step
                .env("HOPLITE_CUDA_DRIVER", "emulated")
                .env("HOPLITE_CUDA_SANITIZER", "on");
        }
        step.run()?;
    }
    Ok(())
}

fn miri(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!("`miri` takes no options\n\n{USAGE}"));
    }
    install_miri()?;
    run_miri(MIRI_RUNS)
}

/// Installs the nightly toolchain with Miri unless it is there.
fn install_miri() -> Result<(), String> {
    // Through rustup: the `cargo` that runs xtask (`$CARGO`) is the stable toolchain's own
    // binary, which does not understand `+nightly`.
    let has_miri = Command::new("rustup")
        .args(["run", "nightly", "cargo", "miri", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_miri {
        Step::program(
            "install miri",
            "rustup",
            &[
                "toolchain",
                "install",
                "nightly",
                "--profile",
                "minimal",
                "--component",
                "miri,rust-src",
            ],
        )
        .run()?;
    }
    Ok(())
}

/// Runs each of `runs` under Miri.
fn run_miri(runs: &[(&'static str, &[&str])]) -> Result<(), String> {
    for (name, args) in runs {
        // A target folder of its own: Miri's artifacts cannot share the stable toolchain's.
        let mut step = Step::program(name, "rustup", &["run", "nightly", "cargo", "miri", "test"])
            .arg("--target-dir")
            .arg("target/miri")
            .env("MIRIFLAGS", MIRIFLAGS);
        for a in *args {
            step = step.arg(*a);
        }
        step.run()?;
    }
    Ok(())
}

/// What `cargo xtask test` runs under Miri, bounded in time (see `test`).
const MIRI_SUBSET: &[(&str, &[&str])] = &[
    ("miri subset: core", &["-p", "hoplite-core", "--lib"]),
    ("miri subset: serial", &["-p", "hoplite-serial", "--lib"]),
    ("miri subset: rayon", &["-p", "hoplite-rayon", "--lib"]),
    (
        "miri subset: DAG waits and launches",
        &["-p", "hoplite-dag", "--test", "waits_inside"],
    ),
    (
        "miri subset: DAG context",
        &[
            "-p",
            "hoplite-dag",
            "--test",
            "context",
            "--",
            "launches_compute_what_eager_launches_do",
            "tasks_are_ordered_by_their_handles_and_fail_like_kernels",
        ],
    ),
    (
        "miri subset: #[kernel] captures as a device backend reads them",
        &["-p", "hoplite", "--test", "kernel_native", "a_with_closure"],
    ),
];

/// Miri's flags: Tree Borrows (crossbeam-epoch, under rayon's pools, trips Stacked Borrows'
/// stricter rules), permissive provenance (crossbeam's tagged pointers are integer casts), and
/// no leak check (the default instance's threads live as long as the process, by design).
const MIRIFLAGS: &str = "-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks";

/// What `cargo xtask miri` runs: every unit test of the core and the backends, the rayon
/// backend's team machinery (barriers, collectives, poisoning, nested launches), and the
/// conformance checks of teams, panics, bad input, unique tokens and views on every backend.
/// Left out: tests whose sizes are far too large for an interpreter (256 MiB scratch, a
/// 2^40-id token pool).
const MIRI_RUNS: &[(&str, &[&str])] = &[
    ("miri: core", &["-p", "hoplite-core", "--lib"]),
    ("miri: serial", &["-p", "hoplite-serial", "--lib"]),
    // A device backend reads a `#[kernel]`'s scalar captures out of its `with` closure.
    (
        "miri: #[kernel] captures as a device backend reads them",
        &["-p", "hoplite", "--test", "kernel_native", "a_with_closure"],
    ),
    ("miri: rayon", &["-p", "hoplite-rayon", "--lib"]),
    (
        "miri: rayon teams",
        &[
            "-p",
            "hoplite-rayon",
            "--test",
            "teams",
            "--",
            "--skip",
            "large_scratch",
        ],
    ),
    (
        "miri: rayon collectives, poisoning and nested launches",
        &[
            "-p",
            "hoplite-rayon",
            "--test",
            "instances",
            "--",
            "collectives",
            "releases_its_team",
            "threads_working",
            "nested_launches",
            "panics_reach",
        ],
    ),
    ("miri: conformance on serial", &CONFORMANCE_UNDER_MIRI_SERIAL),
    (
        "miri: conformance on the thread-scope backend",
        &CONFORMANCE_UNDER_MIRI_SCOPED,
    ),
    ("miri: conformance on rayon", &CONFORMANCE_UNDER_MIRI_RAYON),
];

/// The conformance modules run under Miri (their data sizes are small enough).
macro_rules! conformance_under_miri {
    ($name:ident, $test:literal) => {
        const $name: [&str; 13] = [
            "-p",
            "hoplite-conformance",
            "--test",
            $test,
            "--",
            "team::",
            "panics::",
            "errors::",
            "unique_token::",
            "views::",
            "execution_space::",
            // A 2^40-id token pool: more memory than the interpreter models.
            "--skip",
            "huge_size",
        ];
    };
}
conformance_under_miri!(CONFORMANCE_UNDER_MIRI_SERIAL, "serial");
conformance_under_miri!(CONFORMANCE_UNDER_MIRI_SCOPED, "thread_scope_backend");
conformance_under_miri!(CONFORMANCE_UNDER_MIRI_RAYON, "rayon");
