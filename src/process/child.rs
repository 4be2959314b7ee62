//! The engine's container: spawning it (off the runtime's thread), and
//! `VF_KILL_GRACE_MS`, the grace every group ending waits. The signal rules
//! (which signal goes where, when vf forwards, when it ends the group, the
//! grace, Windows' Ctrl-C/Ctrl-Break, the lifeline) are written once, at the
//! top of [`crate::process`], beside the code that ends groups
//! ([`crate::process::grace`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::engine::Invocation;
use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};
pub use crate::sys::{Container as Group, Signals};

pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(5);
/// The longest grace accepted (one hour), so a typo cannot mean "never".
pub const MAX_KILL_GRACE_MS: u64 = 3_600_000;

/// `VF_KILL_GRACE_MS`, or the default when unset; anything else is a usage error.
pub fn kill_grace_from_env() -> Result<Duration> {
    match std::env::var(EnvVars::VF_KILL_GRACE_MS) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_KILL_GRACE),
        Ok(v) => parse_kill_grace(&v),
        Err(std::env::VarError::NotUnicode(_)) => parse_kill_grace("\u{fffd}"),
    }
}

pub fn parse_kill_grace(v: &str) -> Result<Duration> {
    match v.trim().parse::<u64>() {
        Ok(ms) if ms <= MAX_KILL_GRACE_MS => Ok(Duration::from_millis(ms)),
        _ => Err(VfError::usage(format!(
            "{} must be a whole number of milliseconds from 0 to {MAX_KILL_GRACE_MS}, not {}",
            EnvVars::VF_KILL_GRACE_MS,
            crate::ground::text::shown(v, 40)
        ))),
    }
}

/// Spawns the engine contained (`sys::contain`) on tokio's blocking pool:
/// `posix_spawn` holds the calling thread until the child has exec'd (a
/// vfork), milliseconds under load, which on the runtime's thread would hold
/// up every running unit's events in a plan. Only what the spawn uses goes
/// over (the caller writes the stdin text). Should the caller stop waiting,
/// a child started after all is ended at once: nobody supervises it.
pub async fn spawn_off_thread(
    program: &Path,
    inv: &Invocation,
    confine: Option<Confine>,
) -> std::io::Result<(tokio::process::Child, Group)> {
    let program = program.to_path_buf();
    let (args, cwd, piped) = (inv.args.clone(), inv.cwd.clone(), inv.stdin.is_some());
    let env = inv.env.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let spawned = spawn(&program, &args, &cwd, piped, &env, confine);
        if let Err(Ok((mut child, group))) = tx.send(spawned) {
            group.kill();
            let _ = child.start_kill();
        }
    });
    rx.await.map_err(std::io::Error::other)?
}

/// A sandbox made ready for one process (`sys::sandbox`), and the file
/// macOS's profile was written to (`sandbox-exec -f`).
#[derive(Debug)]
pub struct Confine {
    pub prepared: crate::sys::sandbox::Prepared,
    pub profile_file: PathBuf,
}

/// `program args`, confined when `confine` applies anything (on macOS run
/// through `sandbox-exec`); [`confine_after_contain`] finishes the job.
pub fn confined_command(
    program: &Path,
    args: &[String],
    confine: Option<&Confine>,
) -> std::process::Command {
    match confine.filter(|c| c.prepared.mechanism().is_some()) {
        None => crate::sys::command(program, args),
        Some(c) => {
            let (p, a) = crate::sys::sandbox::wrap(program, args, &c.prepared, &c.profile_file);
            crate::sys::command(&p, &a)
        }
    }
}

/// After `sys::contain` (so the group and its lifeline come first): the
/// child restricts itself before it execs (Linux), inherited by all it starts.
pub fn confine_after_contain(cmd: &mut std::process::Command, confine: Option<Confine>) {
    if let Some(c) = confine {
        crate::sys::sandbox::apply(cmd, c.prepared);
    }
}

/// The engine, contained: the leader of its own process group, or inside
/// its own kill-on-close job; stdin piped or `/dev/null`; confined by the
/// unit's sandbox when it has one. (Also the ACP handshake's spawn,
/// `doctor::acp_handshake`.)
pub fn spawn(
    program: &Path,
    args: &[String],
    cwd: &Path,
    piped_stdin: bool,
    env: &[(String, String)],
    confine: Option<Confine>,
) -> std::io::Result<(tokio::process::Child, Group)> {
    let mut std_cmd = confined_command(program, args, confine.as_ref());
    std_cmd.current_dir(cwd);
    std_cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let made = crate::sys::contain(&mut std_cmd)?;
    confine_after_contain(&mut std_cmd, confine);
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.stdin(if piped_stdin {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(false);
    let mut child = cmd.spawn()?;
    match Group::adopt(&child, made) {
        Ok(group) => Ok((child, group)),
        Err(e) => {
            // Not contained: it must not run on unsupervised.
            let _ = child.start_kill();
            Err(e)
        }
    }
}

/// Why `program` did not start, in words: a missing `#!` interpreter is
/// reported as ENOENT for the script itself, which misleads.
pub fn explain_spawn_error(program: &Path, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound
        && program.is_file()
        && let Some(interp) = shebang_interpreter(program)
        && !Path::new(&interp).exists()
    {
        return format!(
            "its interpreter {interp} (from the #! line) does not exist: install it or fix the #! line"
        );
    }
    e.to_string()
}

/// The interpreter named on a script's `#!` line.
fn shebang_interpreter(program: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
    let text = String::from_utf8_lossy(line);
    text.split_whitespace().next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_is_validated() {
        assert_eq!(parse_kill_grace("250").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_kill_grace("0").unwrap(), Duration::ZERO);
        for bad in ["abc", "", "-1", "1.5", "99999999999999999999", "3600001"] {
            let e = parse_kill_grace(bad).unwrap_err();
            assert_eq!(e.exit_code(), crate::ground::error::exit::USAGE, "{bad}");
        }
    }

    #[test]
    fn a_missing_interpreter_is_named() {
        let t = tempfile::tempdir().unwrap();
        let script = t.path().join("engine");
        std::fs::write(&script, "#!/nonexistent/bin/node --flag\necho hi\n").unwrap();
        let e = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(
            explain_spawn_error(&script, &e),
            "its interpreter /nonexistent/bin/node (from the #! line) does not exist: install it or fix the #! line"
        );
        // Other failures keep the system's words.
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(explain_spawn_error(&script, &denied), denied.to_string());
    }
}
