//! `cargo xtask gpu-bundle`: builds here, without a GPU, everything a GPU run needs, into one
//! folder with one script that runs all of it on a machine with a GPU and writes one report.
//!
//! The folder (default `target/gpu-bundle`):
//!
//! * `tests/` — the release test binaries of hoplite-cuda (its unit tests and every
//!   integration test) and hoplite's GrCUDA test (`test-grcuda`), among them the one-launch
//!   API (`one_launch`), the conformance suite's kernels on Cuda (`conformance`), graphs, the
//!   DAG, tokens, reductions, raw kernels (not the compile-fail cases, which need cargo and
//!   the sources);
//! * `benches/cuda` — the CUDA benchmark (launch overhead, graph replay, reductions);
//! * `benches/grcuda` — GrCUDA's six benchmarks, whose `cuda-*` rows run on the GPU;
//! * `examples/tour` — the tour built with `--features cuda`;
//! * `COMMIT` — the commit (and whether the tree had changes) and when the bundle was built;
//! * `run.sh` — runs what decides the defaults first (the tests with asynchronous launches
//!   and CUDA graphs, then compute-sanitizer's racecheck and synccheck of the queued-work
//!   and one-launch tests where the CUDA toolkit has it), then every test as the defaults
//!   are now (each binary under a time limit, one test thread: device tests share the GPU),
//!   the benchmarks with short measurement times and the tour, all within 10 minutes, and
//!   writes `report.md`: the GPU and driver (`nvidia-smi`), the commit, each test's result,
//!   the sanitizer's findings, each benchmark's median, the tour's CUDA section, and the
//!   logs under `logs/`.
//!
//! The binaries are stripped of debug information when `strip` is on the path, so the bundle
//! stays small enough to copy to the GPU machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One built executable: the name it gets in the bundle and where cargo put it.
struct Executable {
    name: String,
    path: PathBuf,
}

/// `cargo xtask gpu-bundle [--out DIR]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut out = PathBuf::from("target/gpu-bundle");
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--out" => {
                out = PathBuf::from(it.next().ok_or("`--out` needs a folder")?);
            }
            other => return Err(format!("unknown option `{other}` for `gpu-bundle`")),
        }
    }
    let mut tests = build(&[
        "test",
        "-p",
        "hoplite-cuda",
        "--release",
        "--lib",
        "--tests",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])?;
    // GrCUDA's six on CUDA streams and their replays as CUDA Graphs, checked against the
    // serial references.
    tests.extend(build(&[
        "test",
        "-p",
        "hoplite",
        "--features",
        "cuda",
        "--release",
        "--test",
        "grcuda",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])?);
    let mut benches = build(&[
        "bench",
        "-p",
        "hoplite-cuda",
        "--bench",
        "cuda",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])?;
    // GrCUDA's six benchmarks through the DAG on CUDA streams, synchronous and eager.
    benches.extend(build(&[
        "bench",
        "-p",
        "hoplite",
        "--features",
        "cuda",
        "--bench",
        "grcuda",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])?);
    let examples = build(&[
        "build",
        "--release",
        "-p",
        "hoplite",
        "--example",
        "tour",
        "--features",
        "cuda",
        "--message-format=json-render-diagnostics",
    ])?;
    if tests.is_empty() || benches.is_empty() || examples.is_empty() {
        return Err("cargo built no test, bench or example executable; nothing to bundle".to_owned());
    }
    if out.exists() {
        fs::remove_dir_all(&out).map_err(|e| format!("could not clear {}: {e}", out.display()))?;
    }
    for (folder, executables) in [("tests", &tests), ("benches", &benches), ("examples", &examples)] {
        let dir = out.join(folder);
        fs::create_dir_all(&dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        // trybuild's compile-fail cases need cargo and the sources: they run here, not there.
        for exe in executables.iter().filter(|e| e.name != "test-compile_fail") {
            let to = dir.join(&exe.name);
            fs::copy(&exe.path, &to)
                .map_err(|e| format!("could not copy {} to {}: {e}", exe.path.display(), to.display()))?;
            strip(&to);
        }
    }
    fs::write(out.join("COMMIT"), commit())
        .map_err(|e| format!("could not write {}: {e}", out.join("COMMIT").display()))?;
    let script = out.join("run.sh");
    fs::write(&script, RUN_SH).map_err(|e| format!("could not write {}: {e}", script.display()))?;
    make_executable(&script)?;
    let bytes: u64 = walk(&out)
        .iter()
        .filter_map(|p| fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "xtask: GPU bundle in {} ({} test binaries, the CUDA and GrCUDA benchmarks, the tour; {:.1} MiB)",
        out.display(),
        tests.len(),
        bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "xtask: on a machine with a GPU run `{}`; it writes report.md beside it",
        script.display()
    );
    Ok(())
}

/// Runs a cargo build and lists the executables it made (test, bench and example targets).
fn build(args: &[&str]) -> Result<Vec<Executable>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    println!("xtask: == GPU bundle == {cargo} {}", args.join(" "));
    let output = Command::new(&cargo)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start `{cargo}`: {e}"))?;
    if !output.status.success() {
        return Err(format!("`cargo {}` failed ({})", args.join(" "), output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout.lines().filter_map(executable_of).collect())
}

/// The executable a `compiler-artifact` message names, named by its target kind and name
/// (`test-one_launch`, `lib-hoplite_cuda`, `cuda`, `tour`).
fn executable_of(line: &str) -> Option<Executable> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message.get("reason")?.as_str()? != "compiler-artifact" {
        return None;
    }
    let path = PathBuf::from(message.get("executable")?.as_str()?);
    let target = message.get("target")?;
    let name = target.get("name")?.as_str()?;
    let kind = target.get("kind")?.as_array()?.first()?.as_str()?;
    let name = match kind {
        "bench" | "example" => name.to_owned(),
        other => format!("{other}-{name}"),
    };
    Some(Executable { name, path })
}

/// Drops debug information, if `strip` is there (the bundle works either way).
fn strip(path: &Path) {
    let stripped = Command::new("strip")
        .arg("--strip-debug")
        .arg(path)
        .stderr(Stdio::null())
        .status();
    if !matches!(stripped, Ok(s) if s.success()) {
        println!(
            "xtask: kept the debug information of {} (no `strip`)",
            path.display()
        );
    }
}

/// The commit, whether the tree had changes, and the date.
fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown (not a git checkout)".to_owned());
    let dirty = git(&["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    let date = git(&["log", "-1", "--format=%cI"]).unwrap_or_default();
    format!(
        "commit {head}{}\ncommitted {date}\n",
        if dirty { " (with uncommitted changes)" } else { "" }
    )
}

fn make_executable(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("could not make {} executable: {e}", path.display()))?;
    }
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// The script of the bundle (see the module docs).
const RUN_SH: &str = include_str!("gpu_bundle_run.sh");
