//! The build of kernels for the host device ([`HOST_DEVICE_HEADER`](crate::HOST_DEVICE_HEADER)):
//! which C++ compiler, and the compile of a module into a shared library, once per source.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The host C++ compiler: `$CXX`, else `g++` or `c++` if one runs; `None` when there is none.
///
/// ```
/// if let Some(cxx) = hoplite_abi::host_compiler() {
///     println!("kernels for the host device compile with {cxx}");
/// }
/// ```
pub fn host_compiler() -> Option<String> {
    std::env::var("CXX")
        .into_iter()
        .chain(["g++".to_owned(), "c++".to_owned()])
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Why a module for the host device did not build.
#[derive(Debug)]
pub enum HostBuildError {
    /// Writing the source, running the compiler or renaming its output failed.
    Io {
        /// What was being done.
        what: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The compiler rejected the source.
    Rejected {
        /// The compiler.
        compiler: String,
        /// Its diagnostics.
        log: String,
    },
}

impl std::fmt::Display for HostBuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostBuildError::Io { what, source } => write!(f, "{what}: {source}"),
            HostBuildError::Rejected { compiler, log } => write!(f, "`{compiler}` rejected it:\n{log}"),
        }
    }
}

impl std::error::Error for HostBuildError {}

/// The shared library of the C++ `text` (a kernel under the host device header, with its
/// launcher) built by `compiler` in `dir`: `lib<stem>_<hash>.so`, named by a hash of the text
/// and the compiler, so that an unchanged module is not compiled again (by this process or a
/// later one). The compile writes under a name of its own and renames its output when
/// complete: an interrupted compile never leaves a library that looks finished, and threads
/// or processes that build the same module at once do not meet.
///
/// ```no_run
/// # fn demo() -> Result<(), hoplite_abi::HostBuildError> {
/// let text = format!("{}\nextern \"C\" int answer() {{ return 42; }}\n", hoplite_abi::HOST_DEVICE_HEADER);
/// let library = hoplite_abi::build_host_library("g++", std::path::Path::new("target/tmp"), "answer", &text)?;
/// assert!(library.is_file());
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`HostBuildError::Rejected`] with the compiler's log, or the I/O error of a step.
pub fn build_host_library(
    compiler: &str,
    dir: &Path,
    stem: &str,
    text: &str,
) -> Result<PathBuf, HostBuildError> {
    let io = |what: &'static str| move |source| HostBuildError::Io { what, source };
    let hash = crate::stable_hash(&[text.as_bytes(), compiler.as_bytes()]);
    let library = dir.join(format!("lib{stem}_{hash:016x}.so"));
    if library.is_file() {
        return Ok(library);
    }
    std::fs::create_dir_all(dir).map_err(io("creating the build folder"))?;
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let own = format!(
        "{stem}_{hash:016x}.{}.{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    );
    let source = dir.join(format!("{own}.cpp"));
    let partial = dir.join(format!("lib{own}.tmp"));
    std::fs::write(&source, text).map_err(io("writing the source"))?;
    let output = Command::new(compiler)
        .args([
            "-std=c++20",
            "-O1",
            "-ffp-contract=off",
            "-fno-strict-aliasing",
            "-shared",
            "-fPIC",
            "-w",
            "-o",
        ])
        .arg(&partial)
        .arg(&source)
        .output();
    let _ = std::fs::remove_file(&source);
    let output = output.map_err(io("running the host C++ compiler"))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(HostBuildError::Rejected {
            compiler: compiler.to_owned(),
            log: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    std::fs::rename(&partial, &library).map_err(io("renaming the compiled library"))?;
    Ok(library)
}
