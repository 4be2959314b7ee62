//! Removing a unit's worktree the way git does it, from the repository
//! (never from inside the worktree): `git worktree remove`, `git worktree
//! prune`, and `git branch -D vf/<unit>` when asked.

use std::path::{Path, PathBuf};

use super::git::{self, GitError};
use super::{Proven, branch_of, open::branch_exists};

/// Where a worktree that is gone came from: a directory of the user's
/// repository and the head vf recorded for the unit's branch.
pub struct Gone<'a> {
    pub cwd: &'a Path,
    pub head: Option<&'a str>,
}

/// Whether the worktree at `path` may be removed through git: `None` when it
/// has no `.git` (it is gone, for [`remove`]), else the repository it proves
/// to be a worktree of (see [`super::prove`]); the error names what is wrong.
pub fn removable(path: &Path) -> Result<Option<Proven>, String> {
    if std::fs::symlink_metadata(path.join(".git")).is_err() {
        return Ok(None);
    }
    // On any branch: the user may have switched it.
    super::prove(path, None, None)
        .map(Some)
        .map_err(|why| super::identity::broken(path, &why, "vf leaves it alone: remove it by hand"))
}

/// Removes the worktree at `path` (`proven` by [`removable`]; None: there was none) and, with
/// `branches`, the unit's branch (None: not deleted). A worktree already
/// gone (an earlier `vf clean`, or deleted by hand) is pruned from `gone`'s
/// repository, and its branch deleted there, when that branch is still at
/// the recorded head: never a same-named branch of another repository.
pub fn remove(
    path: &Path,
    unit: &str,
    proven: Option<&Proven>,
    force: bool,
    branches: bool,
    gone: Gone<'_>,
) -> Result<(Option<PathBuf>, Option<String>), GitError> {
    let Some(repo) = proven.map(|p| p.common_dir.clone()) else {
        return remove_gone(unit, branches, gone);
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

fn remove_gone(
    unit: &str,
    branches: bool,
    gone: Gone<'_>,
) -> Result<(Option<PathBuf>, Option<String>), GitError> {
    let branch = branch_of(unit);
    let common = ["rev-parse", "--path-format=absolute", "--git-common-dir"];
    let (Some(head), Ok(repo)) = (gone.head, git::run(gone.cwd, &common)) else {
        return Ok((None, None));
    };
    let repo = PathBuf::from(repo);
    let at = git::run(&repo, &["rev-parse", "--verify", "--quiet", &branch]);
    if at.ok().as_deref() != Some(head) {
        return Ok((None, None));
    }
    // Forgets a worktree whose directory was deleted, so its branch can go.
    git::run(&repo, &["worktree", "prune"])?;
    if !branches {
        return Ok((None, None));
    }
    git::run(&repo, &["branch", "-D", &branch])?;
    Ok((None, Some(branch)))
}
