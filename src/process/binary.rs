//! Finding an engine's executable; running it briefly (`--version`,
//! `--help`) under a hard timeout is `process::cli_probe`'s.
//!
//! Shared by `vf doctor` and the dispatch runtime: both must agree on which
//! binary an engine means and on how its version is read.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::engine::EngineId;
use crate::ground::error::VfError;
pub use crate::process::cli_probe::{
    Captured, RunError, VersionError, parse_version_output, read_version, run_briefly,
};
use crate::sys;

/// Why an engine's binary could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// Nothing named `binary` on PATH (and no override given).
    NotFound {
        engine: EngineId,
        binary: &'static str,
    },
    /// An explicit path or `VF_<ENGINE>_BIN` names something unusable. No
    /// fallback to PATH: the user asked for that binary.
    BadOverride {
        /// Where the override came from (`VF_CODEX_BIN`, `the given path`).
        source: String,
        path: PathBuf,
        why: String,
    },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::NotFound { engine, binary } => write!(
                f,
                "{binary} not found on PATH (install: {}; or set {} to its path)",
                engine.engine().spec().install_hint,
                engine.bin_env_var()
            ),
            ResolveError::BadOverride { source, path, why } => {
                write!(f, "{source}={}: {why}", path.display())
            }
        }
    }
}

impl std::error::Error for ResolveError {}

impl From<ResolveError> for VfError {
    fn from(e: ResolveError) -> Self {
        VfError::not_ready(e)
    }
}

/// The executable for `engine`: `explicit` if given, else `VF_<ENGINE>_BIN`
/// (when set and non-empty), else `Spec::binary` looked up on PATH.
///
/// An override without a directory separator is itself looked up on PATH; one
/// with a separator is a path (relative ones are made absolute against the
/// current directory).
pub fn resolve_binary(engine: EngineId, explicit: Option<&Path>) -> Result<PathBuf, ResolveError> {
    let path_var = std::env::var_os("PATH");
    if let Some(p) = explicit {
        return check_override("the given path".into(), p, path_var.as_deref());
    }
    let var = engine.bin_env_var();
    if let Some(v) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        return check_override(var, Path::new(&v), path_var.as_deref());
    }
    let binary = engine.engine().spec().binary;
    find_on_path(binary, path_var.as_deref()).ok_or(ResolveError::NotFound { engine, binary })
}

fn check_override(
    source: String,
    p: &Path,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, ResolveError> {
    let bad = |why: &str| ResolveError::BadOverride {
        source: source.clone(),
        path: p.to_path_buf(),
        why: why.to_string(),
    };
    if !has_separator(p.as_os_str()) {
        let name = p.to_str().ok_or_else(|| bad("not a valid name"))?;
        return find_on_path(name, path_var).ok_or_else(|| bad("not found on PATH"));
    }
    let abs = std::path::absolute(p).map_err(|e| bad(&e.to_string()))?;
    match std::fs::metadata(&abs) {
        Err(_) => Err(bad("no such file")),
        Ok(m) if !m.is_file() => Err(bad("not a regular file")),
        Ok(_) if !is_executable(&abs) => Err(bad("not executable")),
        Ok(_) => Ok(abs),
    }
}

/// The first executable file named `name` on `path_var` (`sys::find_on_path`).
pub fn find_on_path(name: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
    sys::find_on_path(name, path_var)
}

fn has_separator(p: &OsStr) -> bool {
    sys::has_separator(p)
}

/// The program a command engine's launch names (`/bin/sh`, `cmd.exe`, the
/// command's first token): a path as it is, a name looked up on PATH as a
/// binary is (never in the working directory).
/// `Err` says why in words (`aider: not found on PATH`).
pub fn resolve_program(program: &str) -> Result<PathBuf, String> {
    let path_var = std::env::var_os("PATH");
    check_override(String::new(), Path::new(program), path_var.as_deref()).map_err(|e| match e {
        ResolveError::BadOverride { path, why, .. } => format!("{}: {why}", path.display()),
        other => other.to_string(),
    })
}

/// A regular file (after symlinks) that we may execute (`sys::is_executable`).
pub fn is_executable(p: &Path) -> bool {
    sys::is_executable(p)
}

#[cfg(test)]
pub(super) mod tests {
    #[cfg(unix)]
    use super::*;
    #[cfg(unix)]
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;

    /// An executable `/bin/sh` script `name` in `dir` (cli_probe's tests too).
    #[cfg(unix)]
    pub(in crate::process) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        writeln!(f, "#!/bin/sh\n{body}").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[cfg(unix)]
    #[test]
    fn path_search_skips_non_executables_and_relative_dirs() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = t.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // Not executable in `a`, executable in `b`: `b` wins.
        std::fs::write(a.join("tool"), "#!/bin/sh\n").unwrap();
        let good = script(&b, "tool", "exit 0");
        let path = std::env::join_paths([Path::new("rel"), &a, &b]).unwrap();
        assert_eq!(find_on_path("tool", Some(&path)), Some(good));
        assert_eq!(find_on_path("absent", Some(&path)), None);
        assert_eq!(find_on_path("tool", None), None);
        assert_eq!(find_on_path("a/tool", Some(&path)), None);
        // A directory with the right name is not a binary.
        std::fs::create_dir(a.join("dir")).unwrap();
        assert_eq!(find_on_path("dir", Some(&path)), None);
    }

    #[cfg(unix)]
    #[test]
    fn overrides_are_checked_not_silently_ignored() {
        let t = tempfile::tempdir().unwrap();
        let ok = script(t.path(), "fake", "exit 0");
        let path = std::env::join_paths([t.path()]).unwrap();
        assert_eq!(check_override("X".into(), &ok, None), Ok(ok.clone()));
        assert_eq!(
            check_override("X".into(), Path::new("fake"), Some(&path)),
            Ok(ok)
        );
        let plain = t.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        let e = check_override("VF_CODEX_BIN".into(), &plain, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("VF_CODEX_BIN={}: not executable", plain.display())
        );
        let e = check_override("X".into(), &t.path().join("nope"), None).unwrap_err();
        assert!(e.to_string().ends_with("no such file"), "{e}");
        let e = check_override("X".into(), Path::new("nope"), Some(&path)).unwrap_err();
        assert!(e.to_string().ends_with("not found on PATH"), "{e}");
    }
}
