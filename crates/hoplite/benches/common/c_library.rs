//! A C baseline compiled at benchmark time with the system's C compiler and loaded with
//! `dlopen`, for the benchmarks that measure beside OpenMP or plain C.

use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A shared library built from one C file of the benchmarks, loaded for the life of the process.
pub struct CLibrary {
    handle: *mut c_void,
    path: PathBuf,
}

impl CLibrary {
    /// Compiles `benches/<source>` with `cc <flags> -shared -fPIC` (or `$CC`) into the target's
    /// temporary folder as `<name>.so` and loads it, or says why not.
    pub fn build(source: &str, name: &str, flags: &[&str]) -> Result<Self, String> {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches").join(source);
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.so"));
        let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
        let out = Command::new(&compiler)
            .args(flags)
            .args(["-shared", "-fPIC", "-o"])
            .arg(&path)
            .arg(&source)
            .output()
            .map_err(|e| format!("no C compiler (`{compiler}`: {e})"))?;
        if !out.status.success() {
            return Err(format!(
                "`{compiler} {}` failed: {}",
                flags.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let c_path = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: `c_path` is a NUL-terminated file name; the library's initializers are the C
        // runtime's (and libgomp's where it links it).
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(format!("cannot load {}", path.display()));
        }
        Ok(CLibrary { handle, path })
    }

    /// The address of function `name`.
    pub fn symbol(&self, name: &str) -> Result<*mut c_void, String> {
        let c_name = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: `handle` is a library loaded by `build` and never closed; `c_name` is
        // NUL-terminated.
        let f = unsafe { libc::dlsym(self.handle, c_name.as_ptr()) };
        if f.is_null() {
            Err(format!("{name} missing from {}", self.path.display()))
        } else {
            Ok(f)
        }
    }
}
