//! The one way vf runs `git`: `git -C <dir> ...`, no stdin, contained
//! (`process::brief`: it ends with vf), output captured, and none of the
//! caller's `GIT_DIR`-style overrides (vf may be started from a git hook,
//! where they point at the user's repository).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::process::brief;

/// Variables that would redirect `git -C` away from the directory given.
const REDIRECTS: [&str; 5] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
];

/// What a failed git call said.
#[derive(Debug)]
pub struct GitError {
    pub message: String,
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args).stdin(Stdio::null());
    for v in REDIRECTS {
        c.env_remove(v);
    }
    c
}

/// Runs git; its trimmed stdout, or its last stderr line as the error (not
/// one of the `hint:` lines git adds after the reason).
pub fn run(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = run_bytes(dir, args)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// [`run`], its stdout as git wrote it (`-z` lists: names may hold any byte).
pub fn run_bytes(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    output(command(dir, args), args, 1)
}

/// [`run_bytes`] keeping at most `max` bytes of stdout (git still runs to
/// its end); `true` when it wrote more.
pub fn run_head(dir: &Path, args: &[&str], max: usize) -> Result<(Vec<u8>, bool), GitError> {
    let mut out = output_kept(command(dir, args), args, 1, max.saturating_add(1))?;
    let past = out.len() > max;
    out.truncate(max);
    Ok((out, past))
}

/// [`run`] for a command that talks to a remote (`push`, `fetch`): git may
/// not ask for credentials (no one is there to answer, and a prompt would
/// hang the unit), and the error is the tail of git's stderr (a remote's
/// reason spans several lines), its last [`REMOTE_TAIL`] lines joined by ` | `.
pub fn run_remote(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let mut c = command(dir, args);
    c.env("GIT_TERMINAL_PROMPT", "0");
    let out = output(c, args, REMOTE_TAIL)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// How many of git's last stderr lines a remote command's error shows.
const REMOTE_TAIL: usize = 4;

/// How much of git's stderr is kept: its last lines are what an error
/// shows, and a hostile repository's hooks may print without end.
const STDERR_KEPT: usize = 64 << 10;

/// Runs `c` contained ([`brief::run`], no timeout: git ends on its own, and
/// with vf); its stdout, or the last `tail` lines of its stderr (not the
/// `hint:` lines git adds after the reason).
fn output(c: Command, args: &[&str], tail: usize) -> Result<Vec<u8>, GitError> {
    output_kept(c, args, tail, usize::MAX)
}

/// [`output`] keeping at most `kept` bytes of stdout.
fn output_kept(
    mut c: Command,
    args: &[&str],
    tail: usize,
    kept: usize,
) -> Result<Vec<u8>, GitError> {
    let limits = brief::Limits {
        timeout: None,
        stdout: brief::Keep::Head(kept),
        stderr: brief::Keep::Tail(STDERR_KEPT),
    };
    let out = brief::run(&mut c, limits).map_err(|e| GitError {
        message: match e {
            brief::Failed::Start(e) => format!("cannot run git: {}", e.io()),
            // No timeout was set.
            brief::Failed::TimedOut => "git timed out".to_string(),
        },
    })?;
    if out.status.is_some_and(|s| s.success()) {
        return Ok(out.stdout);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let mut lines: Vec<&str> = err
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .collect();
    let lines = lines.split_off(lines.len().saturating_sub(tail));
    let said = match lines.is_empty() {
        true => "git failed".to_string(),
        false => lines.join(" | "),
    };
    Err(GitError {
        message: format!(
            "git {}: {}",
            args.join(" "),
            crate::ground::text::cut(&said, 300 * tail)
        ),
    })
}

/// Whether git exits 0 (for questions such as `merge-base --is-ancestor`).
pub fn succeeds(dir: &Path, args: &[&str]) -> bool {
    let limits = brief::Limits {
        timeout: None,
        stdout: brief::Keep::Head(0),
        stderr: brief::Keep::Head(0),
    };
    brief::run(&mut command(dir, args), limits)
        .is_ok_and(|out| out.status.is_some_and(|s| s.success()))
}

/// `-c user.name=vf -c user.email=...` when the repository has no committer
/// identity: vf's own commits (merges, `vf: <unit>`) must not fail for it.
pub fn identity(dir: &Path) -> Vec<&'static str> {
    if succeeds(dir, &["var", "GIT_COMMITTER_IDENT"]) {
        Vec::new()
    } else {
        vec!["-c", "user.name=vf", "-c", "user.email=vf@localhost"]
    }
}

/// `identity` followed by `args`.
pub fn with_identity<'a>(dir: &Path, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = identity(dir);
    all.extend_from_slice(args);
    all
}

/// Serialises worktree bookkeeping (`worktree add`, `prune`, `remove`) among
/// the units of one state dir: git reads every entry of `.git/worktrees/`,
/// and an entry a parallel `worktree add` has only half made fails it.
pub fn admin_lock(worktrees: &Path) -> Result<std::fs::File, GitError> {
    use crate::sys::OpenExt;
    let fail = |e: &dyn std::fmt::Display| GitError {
        message: format!("cannot lock {}: {e}", worktrees.display()),
    };
    std::fs::create_dir_all(worktrees).map_err(|e| fail(&e))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .no_follow()
        .owner_only()
        .open_checked(&worktrees.join(".admin.lock"))
        .map_err(|e| fail(&e))?;
    // Held until the returned file is dropped.
    file.lock().map_err(|e| fail(&e))?;
    Ok(file)
}
