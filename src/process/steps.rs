//! Running a unit's `setup` / `verify` command: the system shell
//! (`sys::shell`: `/bin/sh -c CMD`) in the unit's working directory,
//! contained like the engine (see [`crate::process`]), output to its log file. `--timeout`
//! and vf's signals end the group (SIGTERM, one grace, SIGKILL); when the
//! command exits, what is left of its group is killed: nothing outlives it.
//! Like the engine it has an owned-process record from its spawn until its
//! group is gone, so what a `kill -9` of vf leaves running is ended by
//! `vf doctor --fix` or the unit's next run ([`crate::process::orphans`]).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::process::brief::{self, Ended, StartError};
use crate::process::child::{Confine, confined_command};
use crate::process::owned::{self, ProcRecord, StepKind};
use crate::sys::{self, Container, OpenExt, Sig};

/// How many of a failed step's last output lines its error carries.
pub const TAIL_LINES: usize = 10;

/// One step to run.
pub struct Step<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    /// Created (truncated) for this attempt; never followed if a symlink.
    pub log: &'a Path,
    pub env: Vec<(&'static str, String)>,
    /// Written to its stdin (then closed); `None`: no stdin.
    pub stdin: Option<&'a [u8]>,
    pub timeout: Option<Duration>,
    pub kill_grace: Duration,
    pub owner: StepOwner<'a>,
}

/// Whose step it is: what its owned-process record says.
pub struct StepOwner<'a> {
    pub state_dir: &'a Path,
    pub unit: &'a str,
    pub attempt: u32,
    pub engine: &'a str,
    pub kind: StepKind,
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEnd {
    Ok,
    /// Exited non-zero (None: killed by a signal); the last lines of its output.
    Failed {
        code: Option<i32>,
        tail: String,
    },
    TimedOut,
    Interrupted(Sig),
    /// It could not be started (or its log not written).
    NotStarted(String),
}

/// `confine`: the unit's sandbox, when the step runs inside it.
pub async fn run(step: &Step<'_>, confine: Option<Confine>) -> StepEnd {
    // The step's output may echo what the engine wrote: owner only.
    let log = match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .owner_only()
        .no_follow()
        .open_checked(step.log)
    {
        Ok(f) => f,
        Err(e) => return StepEnd::NotStarted(format!("cannot write {}: {e}", step.log.display())),
    };
    let err = match log.try_clone() {
        Ok(f) => f,
        Err(e) => return StepEnd::NotStarted(e.to_string()),
    };
    let mut std_cmd = match confine
        .as_ref()
        .filter(|c| c.prepared.mechanism().is_some())
    {
        None => sys::shell(step.command),
        // Only where a sandbox exists (POSIX): the same shell, confined.
        Some(c) => {
            let args = ["-c".to_string(), step.command.to_string()];
            confined_command(Path::new(sys::POSIX_SHELL), &args, Some(c))
        }
    };
    std_cmd
        .current_dir(step.cwd)
        .envs(step.env.iter().map(|(k, v)| (k, v)))
        .stdin(match step.stdin {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        })
        .stdout(log)
        .stderr(err);
    let shell = std_cmd.get_program().to_string_lossy().into_owned();
    let (mut child, group) = match brief::start(std_cmd, confine) {
        Ok(started) => started,
        Err(StartError::Contain(e)) => {
            return StepEnd::NotStarted(format!("cannot contain the command: {e}"));
        }
        Err(StartError::Spawn(e)) => {
            return StepEnd::NotStarted(format!("cannot run {shell}: {e}"));
        }
        Err(StartError::Adopt(e)) => {
            return StepEnd::NotStarted(format!("cannot contain {shell}: {e}"));
        }
    };
    feed_stdin(&mut child, step.stdin);
    let o = &step.owner;
    let record = owned::step_record_path(o.state_dir, o.unit, o.attempt, o.kind);
    let pid = child.id().unwrap_or(0);
    let mut rec = ProcRecord::for_step(o.unit, o.attempt, o.engine, o.kind, pid);
    if let Err(e) = rec.save(&record) {
        // Unrecorded, a kill -9 of vf could orphan it for good: it does not run.
        group.kill();
        let _ = child.wait().await;
        return StepEnd::NotStarted(format!("cannot write {}: {e}", record.display()));
    }
    let end = supervise(&mut child, &group, step).await;
    // Whatever the command left in its group goes with it, then its record.
    group.kill();
    // A record left behind is stale once its processes are gone: the next
    // take-over or `vf doctor --fix` releases it.
    let _ = owned::release(&record);
    match end {
        Some(end) => end,
        None => StepEnd::NotStarted("the step's process could not be waited for".into()),
    }
}

/// Writes `input` to the child's stdin on a task of its own, then closes it:
/// a command that never reads it does not hold vf up (its end breaks the pipe).
fn feed_stdin(child: &mut tokio::process::Child, input: Option<&[u8]>) {
    use tokio::io::AsyncWriteExt;
    if let (Some(mut pipe), Some(input)) = (child.stdin.take(), input) {
        let input = input.to_vec();
        tokio::spawn(async move {
            let _ = pipe.write_all(&input).await;
        });
    }
}

/// Waits for the command, or ends its group on timeout or a signal to vf
/// ([`brief::wait`]).
async fn supervise(
    child: &mut tokio::process::Child,
    group: &Container,
    step: &Step<'_>,
) -> Option<StepEnd> {
    Some(
        match brief::wait(child, group, step.timeout, step.kill_grace).await? {
            Ended::Exited(status) if status.success() => StepEnd::Ok,
            Ended::Exited(status) => StepEnd::Failed {
                code: status.code(),
                tail: tail(step.log),
            },
            Ended::TimedOut => StepEnd::TimedOut,
            Ended::Interrupted(sig) => StepEnd::Interrupted(sig),
        },
    )
}

/// The last [`TAIL_LINES`] lines of the log (its last 8 KiB at most), one
/// line each, escaped for a one-line error.
pub fn tail(log: &Path) -> String {
    let mut buf = Vec::new();
    // Never blocking on a FIFO put where the log goes.
    if let Ok(mut f) = crate::ground::fsutil::open_state_file(log) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(8192)));
        let _ = f.read_to_end(&mut buf);
    }
    let text = crate::ground::text::strip_ansi(&String::from_utf8_lossy(&buf));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..]
        .iter()
        .map(|l| crate::ground::text::cut(l.trim_end(), 300))
        .collect::<Vec<_>>()
        .join(" | ")
}
