//! Removing a unit's worktree the way git does it, from the repository
//! (never from inside the worktree): `git worktree remove`, `git worktree
//! prune`, and `git branch -D vf/<unit>` when asked.

use std::path::{Path, PathBuf};

use super::git::{self, GitError};
use super::{branch_of, open::branch_exists};

/// Removes the worktree at `path` (None: there was none) and, with
/// `branches`, the unit's branch (None: not deleted).
pub fn remove(
    path: &Path,
    unit: &str,
    force: bool,
    branches: bool,
) -> Result<(Option<PathBuf>, Option<String>), GitError> {
    let Some(repo) = repo_dir(path) else {
        return Ok((None, None));
    };
    let _admin = git::admin_lock(path.parent().unwrap_or(path))?;
    let p = path.to_string_lossy();
    let mut args = vec!["worktree", "remove"];
    if force {
        args.push("--force");
    }
    args.push(&p);
    git::run(&repo, &args)?;
    let _ = git::run(&repo, &["worktree", "prune"]);
    let branch = branch_of(unit);
    if branches && branch_exists(&repo, &branch) {
        git::run(&repo, &["branch", "-D", &branch])?;
        return Ok((Some(path.to_path_buf()), Some(branch)));
    }
    Ok((Some(path.to_path_buf()), None))
}

/// The repository's git dir, found from the worktree (None: no worktree there).
fn repo_dir(path: &Path) -> Option<PathBuf> {
    if !path.join(".git").exists() {
        return None;
    }
    git::run(
        path,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .ok()
    .map(PathBuf::from)
}
