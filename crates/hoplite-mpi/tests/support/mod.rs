//! Runs a test of this binary on several ranks under `mpirun`.
//!
//! A driver test calls [`run_ranks`] with the name of an `#[ignore]`d rank test; each rank
//! runs that one test with `HOPLITE_MPI_RANKS` set, and prints a marker line when it passed.
//! The driver fails when mpirun fails, when a rank did not print its marker (a typo in the
//! name would otherwise run no test and pass), or when the run takes longer than the limit
//! (it then kills mpirun: a test fails rather than hangs). Without mpirun the driver prints
//! that it is skipped and why.

#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The line every rank prints when its checks passed.
pub const PASSED: &str = "hoplite-mpi rank checks passed";

/// How long one mpirun may take.
const LIMIT: Duration = Duration::from_secs(120);

/// Whether this process is a rank started by [`run_ranks`]. When it is, a panic (a failed
/// assertion) aborts the whole MPI job after printing, so that the other ranks do not wait for
/// this one until the time limit.
pub fn is_rank() -> bool {
    let rank = std::env::var_os("HOPLITE_MPI_RANKS").is_some();
    if rank {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default(info);
            // SAFETY: MPI_Abort may be called at any time, initialized or not (it then ends
            // this process only); MPI_COMM_WORLD is a predefined handle.
            unsafe { mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 1) };
        }));
    }
    rank
}

fn find_mpirun() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("mpirun"))
        .find(|candidate| candidate.is_file())
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs the rank test `test` of this test binary on `ranks` ranks; returns the combined output,
/// or `None` when mpirun is missing.
pub fn run_ranks(test: &str, ranks: usize) -> Option<String> {
    let exe = std::env::current_exe().expect("the test binary's path");
    let args = ["--exact", test, "--ignored", "--nocapture", "--test-threads=1"];
    let all = run_mpi(&exe, &args, ranks)?;
    let passed = all.matches(PASSED).count();
    assert_eq!(
        passed, ranks,
        "`{test}`: {passed} of {ranks} ranks passed; output:\n{all}"
    );
    Some(all)
}

/// The example `name`, built by `cargo test` beside this test binary.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    profile_dir.join("examples").join(name)
}

/// Runs `program args` on `ranks` ranks under mpirun, within the time limit; panics when it
/// fails or takes too long, returns stdout and stderr, or `None` when mpirun is missing.
pub fn run_mpi(program: &std::path::Path, args: &[&str], ranks: usize) -> Option<String> {
    let Some(mpirun) = find_mpirun() else {
        println!(
            "skipped: `mpirun` is not on PATH (install Debian's openmpi-bin, or run `cargo xtask test`)"
        );
        return None;
    };
    let mut cmd = Command::new(mpirun);
    cmd.arg("--oversubscribe");
    if running_as_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["-np", &ranks.to_string()])
        .arg(program)
        .args(args)
        .env("HOPLITE_MPI_RANKS", ranks.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("mpirun starts");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("mpirun's status") {
            break Some(status);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = out_thread.join().unwrap_or_default();
    let err = err_thread.join().unwrap_or_default();
    let all = format!("{out}\n--- stderr ---\n{err}");
    let name = program.display();
    let Some(status) = status else {
        panic!("`{name} {args:?}` on {ranks} ranks did not finish within {LIMIT:?}; output:\n{all}");
    };
    assert!(
        status.success(),
        "`{name} {args:?}` on {ranks} ranks failed ({status}); output:\n{all}"
    );
    Some(all)
}
