//! The end of a unit's run in its worktree: prove it is still the one vf
//! made, commit what the engine left uncommitted (`vf: <unit>`, with engine
//! and session trailers), then read the branch's head and the files changed
//! since the base.

use std::path::Path;

use super::Workspace;
use super::git::{self, GitError};

/// Who made the commit, for its trailers.
pub struct CommitInfo<'a> {
    pub unit: &'a str,
    pub engine: &'a str,
    pub session: Option<&'a str>,
}

/// How the end of a unit's run in its worktree went.
#[derive(Debug)]
pub struct Sealed {
    /// With its head and changed files (as it was when `error` is `Broken`).
    pub workspace: Workspace,
    /// What the commit left out that the user should know of.
    pub warnings: Vec<String>,
    pub error: Option<SealError>,
}

#[derive(Debug)]
pub enum SealError {
    /// Not the worktree vf made: no git ran in it, nothing was committed.
    Broken(String),
    /// The commit failed.
    Git(GitError),
}

/// Ends the unit's run in `ws`, whose git dir [`super::open`] proved to be
/// `git_dir`: proves it again (the engine ran in it since), commits with
/// `commit`, then describes it.
pub fn finish(ws: &Workspace, git_dir: Option<&Path>, info: &CommitInfo, commit: bool) -> Sealed {
    let mut out = Sealed {
        workspace: ws.clone(),
        warnings: Vec::new(),
        error: None,
    };
    if let Err(why) = super::prove(&ws.path, Some(&ws.branch), git_dir) {
        let message = super::identity::broken(&ws.path, &why, "nothing was committed");
        out.error = Some(SealError::Broken(message));
        return out;
    }
    if commit {
        out.error = seal(ws, info).err().map(SealError::Git);
        out.warnings = left_in_submodules(ws);
    }
    if let Ok(described) = describe(ws) {
        out.workspace = described;
    }
    out
}

/// Commits every change left in the worktree (tracked or not, minus what
/// `.gitignore` excludes). Returns whether a commit was made.
fn seal(ws: &Workspace, info: &CommitInfo) -> Result<bool, GitError> {
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
fn describe(ws: &Workspace) -> Result<Workspace, GitError> {
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

/// Files in a submodule that is not initialised in the worktree (a plain
/// directory where the index has a gitlink): `git add` passes over them
/// without a word, so they are named here.
fn left_in_submodules(ws: &Workspace) -> Vec<String> {
    let Ok(staged) = git::run(&ws.path, &["ls-files", "--stage", "-z"]) else {
        return Vec::new();
    };
    let gitlinks = staged.split('\0').filter_map(|e| {
        let (meta, path) = e.split_once('\t')?;
        meta.starts_with("160000 ").then_some(path)
    });
    let mut warnings = Vec::new();
    for sub in gitlinks {
        let dir = ws.path.join(sub);
        if std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            continue;
        }
        let mut found = Vec::new();
        files_under(&dir, sub, &mut found);
        if found.is_empty() {
            continue;
        }
        // Escaped: the engine chose these names.
        let shown: Vec<String> = found.iter().take(3).map(|f| format!("{f:?}")).collect();
        let more = found.len() - shown.len();
        warnings.push(format!(
            "{} file(s) written in {sub:?}, a submodule that is not initialised in the worktree, \
             are not committed (git does not look inside it): {}{}",
            found.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    warnings
}

/// The files below `dir` (links not followed), as `rel/...`, at most [`MAX_LISTED`].
fn files_under(dir: &Path, rel: &str, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if found.len() >= MAX_LISTED {
            return;
        }
        let rel = format!("{rel}/{}", e.file_name().to_string_lossy());
        match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&e.path(), &rel, found),
            Ok(_) => found.push(rel),
            Err(_) => {}
        }
    }
}

/// Enough to say files were left out without walking a whole tree.
const MAX_LISTED: usize = 1000;
