//! Support for the Kokkos Tools tests: the recording connector (`recorder.c`, compiled with the
//! system C compiler at test time), and the child processes the scenarios run in.
//!
//! The connector's state is process-global, so every scenario runs in a child process: the
//! test binary runs itself with `--exact child` and `HOPLITE_TOOLS_CHILD` naming the scenario,
//! with `KOKKOS_TOOLS_LIBS` and the connector's log file set in the child's environment only.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The folder the connectors and logs go to.
fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kokkos-tools");
    std::fs::create_dir_all(&dir).expect("create the connectors' folder");
    dir
}

/// The system C compiler: `$CC`, else `cc`, `gcc` or `clang`, whichever runs.
fn c_compiler() -> Option<OsString> {
    let candidates = std::env::var_os("CC")
        .into_iter()
        .chain(["cc", "gcc", "clang"].map(OsString::from));
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Compiles the recording connector (with `-DRECORDER_KERNELS_ONLY` when `kernels_only`) into a
/// shared library, once per run; `None` (the caller skips) without a C compiler.
pub fn connector(kernels_only: bool) -> Option<PathBuf> {
    static FULL: OnceLock<Option<PathBuf>> = OnceLock::new();
    static KERNELS_ONLY: OnceLock<Option<PathBuf>> = OnceLock::new();
    let cell = if kernels_only { &KERNELS_ONLY } else { &FULL };
    cell.get_or_init(|| {
        let Some(cc) = c_compiler() else {
            eprintln!("skipped: no C compiler (set CC, or install cc/gcc/clang) to build the test connector");
            return None;
        };
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/connector/recorder.c");
        let name = if kernels_only {
            "libkp_recorder_kernels.so"
        } else {
            "libkp_recorder.so"
        };
        let out = work_dir().join(name);
        let mut command = Command::new(cc);
        command.args(["-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror"]);
        if kernels_only {
            command.arg("-DRECORDER_KERNELS_ONLY");
        }
        let built = command
            .arg("-o")
            .arg(&out)
            .arg(&source)
            .output()
            .expect("run the C compiler");
        assert!(
            built.status.success(),
            "the test connector did not compile:\n{}",
            String::from_utf8_lossy(&built.stderr)
        );
        Some(out)
    })
    .clone()
}

/// What a child process left: its output and the connector's log, one `Vec` of fields per line.
pub struct Run {
    pub output: Output,
    pub log: Vec<Vec<String>>,
}

impl Run {
    /// The child's standard error.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// The lines whose callback is `name`.
    pub fn lines(&self, name: &str) -> Vec<&Vec<String>> {
        self.log.iter().filter(|l| l[0] == name).collect()
    }
}

/// Runs `scenario` in a child process with `KOKKOS_TOOLS_LIBS` set to `libs` (unset for
/// `None`) and the other variables `env`, and reads the log the connector wrote.
pub fn run_child(scenario: &str, libs: Option<&str>, env: &[(&str, &str)]) -> Run {
    let log = work_dir().join(format!("{scenario}.log"));
    let _ = std::fs::remove_file(&log);
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(exe);
    command
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("HOPLITE_TOOLS_CHILD", scenario)
        .env("HOPLITE_TOOL_LOG", &log)
        .env_remove("KOKKOS_TOOLS_LIBS")
        .env_remove("KOKKOS_PROFILE_LIBRARY")
        .env_remove("KOKKOS_TOOLS_ARGS")
        .env_remove("HOPLITE_TOOL_FENCING");
    if let Some(libs) = libs {
        command.env("KOKKOS_TOOLS_LIBS", libs);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run the child process");
    let log = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    let run = Run { output, log };
    assert!(
        run.output.status.success(),
        "scenario `{scenario}` failed:\n{}\n{}",
        String::from_utf8_lossy(&run.output.stdout),
        run.stderr()
    );
    run
}
