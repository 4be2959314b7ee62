//! The end of a unit's run in its worktree: commit what the engine left
//! uncommitted (`vf: <unit>`, with engine and session trailers), then read
//! the branch's head and the files changed since the base.

use super::Workspace;
use super::git::{self, GitError};

/// Who made the commit, for its trailers.
pub struct CommitInfo<'a> {
    pub unit: &'a str,
    pub engine: &'a str,
    pub session: Option<&'a str>,
}

/// Commits every change left in the worktree (tracked or not, minus what
/// `.gitignore` excludes). Returns whether a commit was made.
pub fn seal(ws: &Workspace, info: &CommitInfo) -> Result<bool, GitError> {
    let dir = &ws.path;
    git::run(dir, &["add", "--all"])?;
    if git::succeeds(dir, &["diff", "--cached", "--quiet"]) {
        return Ok(false);
    }
    let subject = format!("vf: {}", info.unit);
    let trailers = format!(
        "vf-engine: {}\nvf-session: {}",
        info.engine,
        info.session.unwrap_or("unknown")
    );
    let args = git::with_identity(
        dir,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            &subject,
            "-m",
            &trailers,
        ],
    );
    git::run(dir, &args)?;
    Ok(true)
}

/// `ws` with its current head and the files changed between base and head.
pub fn describe(ws: &Workspace) -> Result<Workspace, GitError> {
    let dir = &ws.path;
    let head = git::run(dir, &["rev-parse", "HEAD"])?;
    let names = git::run(dir, &["diff", "--name-only", "-z", &ws.base, &head])?;
    let mut out = ws.clone();
    out.changed_files = names
        .split('\0')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    out.head = Some(head);
    Ok(out)
}
