//! Finding an engine's executable, and running it briefly (`--version`,
//! `--help`) under a hard timeout.
//!
//! Shared by `vf doctor` and the dispatch runtime: both must agree on which
//! binary an engine means and on how its version is read.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::error::VfError;
use crate::process::brief;
use crate::sys;
use crate::version::Version;

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

/// Output kept per stream; help texts are a few KiB, the rest is drained and dropped.
const OUTPUT_CAP: usize = 1 << 20;

/// What a short command printed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    pub stdout: String,
    pub stderr: String,
    /// The exit code; `None` when killed by a signal.
    pub code: Option<i32>,
}

/// Why a short command produced no usable result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunError {
    /// The process could not be started (message from the OS).
    Spawn(String),
    /// Still running after the timeout; its whole process group was killed.
    TimedOut(Duration),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "could not be run: {e}"),
            RunError::TimedOut(d) => write!(f, "timed out after {}", fmt_duration(*d)),
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// Runs `program args` with stdin `/dev/null`, contained, and returns what
/// it printed ([`brief::run`]): after `timeout` the whole group is killed
/// and [`RunError::TimedOut`] returned; a hung child is never waited on.
/// Leftover processes of the group are killed once the leader exits, too.
pub fn run_briefly(program: &Path, args: &[&str], timeout: Duration) -> Result<Captured, RunError> {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).env("NO_COLOR", "1");
    let limits = brief::Limits {
        timeout: Some(timeout),
        stdout: brief::Keep::Head(OUTPUT_CAP),
        stderr: brief::Keep::Head(OUTPUT_CAP),
    };
    let ran = brief::run(&mut cmd, limits);
    let status = ran.as_ref().ok().map(|o| o.status);
    tracing::debug!(program = %program.display(), ?args, ?status, "ran briefly");
    match ran {
        Ok(out) => Ok(Captured {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.and_then(|s| s.code()),
        }),
        Err(brief::Failed::TimedOut) => Err(RunError::TimedOut(timeout)),
        Err(brief::Failed::Start(e)) => Err(RunError::Spawn(e.io().to_string())),
    }
}

/// Why `--version` gave no version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum VersionError {
    Run(RunError),
    /// It ran but printed no `X.Y.Z` (an excerpt of what it printed, and its exit code).
    NoVersion {
        excerpt: String,
        code: Option<i32>,
    },
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionError::Run(e) => e.fmt(f),
            VersionError::NoVersion { excerpt, code } => {
                if excerpt.is_empty() {
                    f.write_str("printed nothing")?;
                } else {
                    write!(f, "printed no version number ({excerpt:?})")?;
                }
                match code {
                    Some(0) => Ok(()),
                    Some(c) => write!(f, ", exit status {c}"),
                    None => f.write_str(", killed by a signal"),
                }
            }
        }
    }
}

/// Runs `program --version` and finds the version in what it printed
/// (stdout first, then stderr).
pub fn read_version(program: &Path, timeout: Duration) -> Result<Version, VersionError> {
    let c = run_briefly(program, &["--version"], timeout).map_err(VersionError::Run)?;
    parse_version_output(&c)
}

/// The version in captured `--version` output.
pub fn parse_version_output(c: &Captured) -> Result<Version, VersionError> {
    Version::find_in(&c.stdout)
        .or_else(|| Version::find_in(&c.stderr))
        .ok_or_else(|| VersionError::NoVersion {
            excerpt: excerpt(if c.stdout.trim().is_empty() {
                &c.stderr
            } else {
                &c.stdout
            }),
            code: c.code,
        })
}

/// The first line of `s`, trimmed and cut to a readable length.
fn excerpt(s: &str) -> String {
    let line = s.trim().lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(60).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use nix::sys::signal::Signal;
    #[cfg(unix)]
    use nix::unistd::Pid;
    #[cfg(unix)]
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;
    #[cfg(unix)]
    use std::time::Instant;

    #[cfg(unix)]
    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
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

    #[cfg(unix)]
    #[test]
    fn captures_both_streams_and_exit_code() {
        let t = tempfile::tempdir().unwrap();
        let p = script(t.path(), "s", "echo out; echo err >&2; exit 3");
        let c = run_briefly(&p, &[], Duration::from_secs(20)).unwrap();
        assert_eq!(c.stdout, "out\n");
        assert_eq!(c.stderr, "err\n");
        assert_eq!(c.code, Some(3));
    }

    #[cfg(unix)]
    #[test]
    fn hung_process_group_is_killed() {
        let t = tempfile::tempdir().unwrap();
        let marker = t.path().join("child.pid");
        // A background grandchild holding the pipes, and a hung leader.
        let p = script(
            t.path(),
            "hang",
            &format!(
                "sleep 300 & echo $! > {}; echo partial; exec sleep 300",
                marker.display()
            ),
        );
        let r = run_briefly(&p, &[], Duration::from_secs(2));
        assert_eq!(r, Err(RunError::TimedOut(Duration::from_secs(2))));
        let grandchild: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild was in the group: it is gone (or a zombie awaiting init).
        // SIGKILL takes effect asynchronously, so allow it a moment to land.
        let alive = || matches!(crate::sys::process(grandchild as u32), Ok(Some(s)) if !s.zombie);
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(), "grandchild {grandchild} survived the timeout");
    }

    #[cfg(unix)]
    #[test]
    fn escaped_grandchild_holding_the_pipe_does_not_block() {
        let Some(setsid) = find_on_path("setsid", std::env::var_os("PATH").as_deref()) else {
            eprintln!("setsid(1) not installed: skipped");
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let marker = t.path().join("escaped.pid");
        // The new session escapes the group kill and keeps stdout open.
        let p = script(
            t.path(),
            "escape",
            &format!(
                "{} sh -c 'echo $$ > {}; exec sleep 300' & echo hi; while [ ! -s {} ]; do :; done",
                setsid.display(),
                marker.display(),
                marker.display()
            ),
        );
        let r = run_briefly(&p, &[], Duration::from_secs(20));
        let escaped: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let _ = nix::sys::signal::kill(Pid::from_raw(escaped), Signal::SIGKILL);
        let c = r.unwrap();
        assert_eq!((c.stdout.as_str(), c.code), ("hi\n", Some(0)));
    }

    #[test]
    fn spawn_failure_is_reported() {
        let r = run_briefly(
            Path::new("/nonexistent/vf-test"),
            &[],
            Duration::from_secs(1),
        );
        assert!(matches!(r, Err(RunError::Spawn(_))), "{r:?}");
    }

    #[test]
    fn version_output_parsing() {
        let c = |o: &str, e: &str, code| Captured {
            stdout: o.into(),
            stderr: e.into(),
            code,
        };
        assert_eq!(
            parse_version_output(&c("codex-cli 0.171.0\n", "WARNING: x\n", Some(0))),
            Ok(Version::new(0, 171, 0))
        );
        assert_eq!(
            parse_version_output(&c("", "v1.2.3\n", Some(0))),
            Ok(Version::new(1, 2, 3))
        );
        let e = parse_version_output(&c("garbage\nmore", "", Some(0))).unwrap_err();
        assert_eq!(e.to_string(), "printed no version number (\"garbage\")");
        let e = parse_version_output(&c("", "", Some(1))).unwrap_err();
        assert_eq!(e.to_string(), "printed nothing, exit status 1");
    }
}
