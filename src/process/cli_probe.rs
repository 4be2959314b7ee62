//! Running a CLI briefly for what it says about itself (`--version`,
//! `--help`), under a hard timeout ([`crate::process::brief`]), and reading
//! its version. Shared by `vf doctor` and the dispatch runtime: both must
//! agree on how a version is read.

use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ground::version::Version;
use crate::process::brief;

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
    use std::time::Instant;

    #[cfg(unix)]
    use crate::process::binary::tests::script;

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
        let Some(setsid) = crate::sys::find_on_path("setsid", std::env::var_os("PATH").as_deref())
        else {
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
