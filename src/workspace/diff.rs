//! The diff of a unit's changes for its reviewer (issue 41): the worktree's
//! branch against the unit's base, or a plain directory's working tree
//! against its `HEAD`. Read-only, but git still runs in a directory an
//! engine had its hands on: a worktree is proven first, and no external
//! diff driver or text conversion the repository configures ever runs.

use std::path::Path;

use super::{Workspace, git};

/// How much of a diff vf reads at most; the reviewer gets less (the caller caps it).
pub const READ_MAX: usize = 4 << 20;

/// Options that keep `git diff` to git's own, plain output.
const PLAIN: [&str; 4] = ["diff", "--no-color", "--no-ext-diff", "--no-textconv"];

/// A diff as read: its text (lossy UTF-8) and whether it went past [`READ_MAX`].
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub text: String,
    pub past_read_max: bool,
    /// How the diff was taken, for the reviewer's prompt.
    pub what: String,
}

/// The diff of the unit's branch from its base to its head (what the unit
/// committed), after the worktree's proof.
pub fn of_worktree(ws: &Workspace, git_dir: Option<&Path>) -> Result<Diff, String> {
    super::prove(&ws.path, Some(&ws.branch), git_dir)
        .map_err(|why| super::identity::broken(&ws.path, &why, "no diff was read"))?;
    let head = ws.head.as_deref().unwrap_or("HEAD");
    let range = format!("{}..{head}", ws.base);
    let args: Vec<&str> = PLAIN
        .iter()
        .copied()
        .chain([range.as_str(), "--"])
        .collect();
    let (bytes, past) = git::run_head(&ws.path, &args, READ_MAX).map_err(|e| e.message)?;
    Ok(Diff {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        past_read_max: past,
        what: format!("{} against the unit's base {}", ws.branch, short(&ws.base)),
    })
}

/// The working tree's changes in `dir` against its `HEAD` (a unit without a
/// worktree); `None` when `dir` is not in a git work tree.
pub fn of_directory(dir: &Path) -> Result<Option<Diff>, String> {
    if !git::succeeds(dir, &["rev-parse", "--is-inside-work-tree"]) {
        return Ok(None);
    }
    let args: Vec<&str> = PLAIN.iter().copied().chain(["HEAD", "--"]).collect();
    let (bytes, past) = git::run_head(dir, &args, READ_MAX).map_err(|e| e.message)?;
    let untracked = git::run(dir, &["ls-files", "--others", "--exclude-standard"])
        .map(|s| s.lines().count())
        .unwrap_or(0);
    let mut what = "the working tree's changes against HEAD".to_string();
    if untracked > 0 {
        what.push_str(&format!(
            " ({untracked} new untracked file(s) are not shown)"
        ));
    }
    Ok(Some(Diff {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        past_read_max: past,
        what,
    }))
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
