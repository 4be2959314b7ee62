//! Creating (or reusing) a unit's worktree and merging its dependencies in.

use std::path::{Path, PathBuf};

use super::conflict::{Pending, split_z};
use super::git::{self, GitError};
use super::{Workspace, WorkspaceSpec, branch_of, path_of};
use crate::ground::error::VfError;

/// A worktree ready for the engine.
#[derive(Debug)]
pub struct Opened {
    pub workspace: Workspace,
    /// The engine's working directory inside it.
    pub cwd: PathBuf,
    /// Its git dir, proven before the engine runs (see [`super::prove`]).
    pub git_dir: PathBuf,
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum OpenError {
    /// The worktree cannot be made (exit 2 before anything of the unit is written).
    Refused(VfError),
    /// A dependency's branch does not merge: the merge was aborted.
    Conflict {
        workspace: Box<Workspace>,
        message: String,
    },
    /// A dependency's branch does not merge and the spec keeps conflicts
    /// (`keep_conflicts`): the merge is left in progress for a resolver; the
    /// dependencies after it merge when [`open`] is called again once it is
    /// settled ([`super::conflict`]).
    Unmerged {
        workspace: Box<Workspace>,
        pending: Box<Pending>,
    },
    /// A dependency's branch could not be fetched from the remote it was
    /// pushed to: nothing of it is merged.
    Remote {
        workspace: Box<Workspace>,
        message: String,
    },
    /// The unit's worktree is no longer the one vf made (an earlier engine
    /// removed or replaced its `.git`, or switched branch): no git ran in it.
    Broken {
        workspace: Box<Workspace>,
        message: String,
    },
}

impl From<GitError> for OpenError {
    fn from(e: GitError) -> Self {
        OpenError::Refused(VfError::usage(e))
    }
}

/// vf writes nothing outside its state dir: not through a linked `worktrees/`.
fn check_worktrees_dir(state_dir: &Path) -> Result<(), VfError> {
    let dir = state_dir.join(super::WORKTREES_DIR);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(VfError::state(format!(
            "{} is a symbolic link; vf writes nothing outside its state dir: move it aside",
            dir.display()
        )));
    }
    Ok(())
}

/// The unit's worktree: reused when it exists (a resumed session sees its own
/// files), else created from the base; proven to be the one vf made; then
/// every dependency branch not yet in it is merged. `previous` is what the
/// unit's marker recorded.
pub fn open(
    state_dir: &Path,
    unit: &str,
    spec: &WorkspaceSpec,
    previous: Option<&Workspace>,
) -> Result<Opened, OpenError> {
    check_worktrees_dir(state_dir).map_err(OpenError::Refused)?;
    let path = path_of(state_dir, unit);
    let branch = branch_of(unit);
    let base = previous.map_or(spec.base.clone(), |p| p.base.clone());
    let has_git = std::fs::symlink_metadata(path.join(".git")).is_ok();
    // A new branch and worktree, undone if the engine's cwd is not in them.
    let fresh = !has_git && previous.is_none();
    // A worktree of this unit whose `.git` went is not made again over its
    // files: git run there would find the repository above it.
    let lost = !has_git && previous.is_some() && std::fs::symlink_metadata(&path).is_ok();
    if !has_git && !lost {
        create(&path, &branch, &base, spec, previous.is_some())?;
    }
    let workspace = Workspace {
        path: path.clone(),
        branch,
        base,
        head: None,
        changed_files: Vec::new(),
        commit: spec.commit,
        pushed: None,
    };
    let git_dir = match super::prove(&path, Some(&workspace.branch), None) {
        Ok(p) => p.git_dir,
        Err(why) => {
            if fresh {
                undo(&spec.repo, &path, &workspace.branch);
            }
            return Err(OpenError::Broken {
                message: super::identity::broken(&path, &why, "vf runs no git in it"),
                workspace: Box::new(workspace),
            });
        }
    };
    if !spec.merge.is_empty() {
        if spec.keep_conflicts {
            resumed_conflict(&workspace, spec, &git_dir)?;
        }
        redo_interrupted_merge(&workspace, &git_dir)?;
    }
    let mut warnings = Vec::new();
    for dep in &spec.merge {
        let remote = spec.fetch_from.get(dep).map(String::as_str);
        let keep = spec.keep_conflicts.then_some(git_dir.as_path());
        merge(&workspace, unit, (dep, remote), keep, &mut warnings)?;
    }
    let cwd = spec.cwd_in(state_dir, unit);
    if !cwd.is_dir() {
        if fresh {
            undo(&spec.repo, &path, &workspace.branch);
        }
        return Err(OpenError::Refused(VfError::usage(format!(
            "the working directory {} is not in the unit's worktree (is it committed at base {}?); \
             commit it, or run from a directory the base has",
            spec.rel_cwd.display(),
            crate::ground::text::cut(&workspace.base, 12)
        ))));
    }
    Ok(Opened {
        cwd,
        workspace,
        git_dir,
        warnings,
    })
}

fn create(
    path: &Path,
    branch: &str,
    base: &str,
    spec: &WorkspaceSpec,
    known: bool,
) -> Result<(), OpenError> {
    if !spec.repo.is_dir() {
        return Err(OpenError::Refused(VfError::usage(format!(
            "the worktree {} is gone (removed by `vf clean`?); run the unit again under another name",
            path.display()
        ))));
    }
    let _admin = git::admin_lock(path.parent().unwrap_or(path))?;
    // A worktree whose directory was deleted by hand still holds its branch.
    git::run(&spec.repo, &["worktree", "prune"])?;
    let p = path.to_string_lossy();
    if branch_exists(&spec.repo, branch) {
        if !known {
            return Err(OpenError::Refused(VfError::usage(format!(
                "branch {branch} already exists (an earlier run of this unit name?); \
                 delete it (`vf clean --branches` or `git branch -D {branch}`) or pick another unit name"
            ))));
        }
        git::run(&spec.repo, &["worktree", "add", "--quiet", &p, branch])?;
    } else {
        git::run(
            &spec.repo,
            &["worktree", "add", "--quiet", "-b", branch, &p, base],
        )?;
    }
    Ok(())
}

/// Removes a worktree and branch vf has just made (best effort: the
/// refusal that follows is what the user needs to see).
fn undo(repo: &Path, path: &Path, branch: &str) {
    let p = path.to_string_lossy();
    let _ = git::run(repo, &["worktree", "remove", "--force", &p]);
    let _ = git::run(repo, &["branch", "-D", branch]);
}

pub(super) fn branch_exists(dir: &Path, branch: &str) -> bool {
    git::succeeds(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
}

/// A dependency merge vf itself left unfinished (vf killed while its `git
/// merge` ran: `MERGE_HEAD` stays, committed or not): its message is vf's
/// own for this branch and no path is in conflict. It is aborted, which puts
/// the worktree back at its branch's commit, and the merges that follow redo
/// it (or find it done, when the killed merge had committed). Any other
/// unfinished merge is left as it is: the merge below then reports it.
fn redo_interrupted_merge(ws: &Workspace, git_dir: &Path) -> Result<(), OpenError> {
    let dir = &ws.path;
    if !git::succeeds(dir, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]) {
        return Ok(());
    }
    let ours = read_small(&git_dir.join("MERGE_MSG")).is_some_and(|m| {
        m.lines().next().is_some_and(|first| {
            first.starts_with("vf: merge ") && first.ends_with(&format!(" into {}", ws.branch))
        })
    });
    let conflicted = git::run(dir, &["diff", "--name-only", "--diff-filter=U"])
        .map_or(true, |paths| !paths.is_empty());
    if !ours || conflicted {
        return Ok(());
    }
    git::run(dir, &["merge", "--abort"]).map_err(|e| OpenError::Conflict {
        workspace: Box::new(ws.clone()),
        message: format!(
            "an interrupted merge into {} could not be undone: {e}",
            ws.branch
        ),
    })?;
    Ok(())
}

/// In keep mode, a merge of a dependency that vf left in progress with
/// conflicted paths (vf killed while the resolver ran) is reported as the
/// conflict still to resolve, not redone: the resolve round continues.
fn resumed_conflict(ws: &Workspace, spec: &WorkspaceSpec, git_dir: &Path) -> Result<(), OpenError> {
    let dir = &ws.path;
    let at = |r: &str| git::run(dir, &["rev-parse", "-q", "--verify", r]).ok();
    let Some(merge_head) = at("MERGE_HEAD") else {
        return Ok(());
    };
    let Some(first) =
        read_small(&git_dir.join("MERGE_MSG")).and_then(|m| m.lines().next().map(str::to_string))
    else {
        return Ok(());
    };
    let Some(named) = first
        .strip_prefix("vf: merge ")
        .and_then(|r| r.strip_suffix(&format!(" into {}", ws.branch)))
    else {
        return Ok(());
    };
    let dep = spec.merge.iter().find(|d| {
        let b = branch_of(d);
        named == b || named.strip_suffix(&b).is_some_and(|r| r.ends_with('/'))
    });
    let paths = git::run_bytes(dir, &["diff", "--name-only", "-z", "--diff-filter=U"])
        .map(|o| split_z(&o))
        .unwrap_or_default();
    let (Some(dep), Some(head), false) = (dep, at("HEAD"), paths.is_empty()) else {
        return Ok(());
    };
    Err(OpenError::Unmerged {
        workspace: Box::new(ws.clone()),
        pending: Box::new(Pending {
            dependency: dep.clone(),
            theirs: named.to_string(),
            paths,
            head,
            merge_head,
            git_dir: git_dir.to_path_buf(),
        }),
    })
}

/// A conflicted merge left in progress: reported as [`OpenError::Unmerged`]
/// when git names its conflicted paths and the commits of both sides, else
/// `Ok` (the caller aborts it as in fail mode).
fn keep_in_progress(
    ws: &Workspace,
    (dep, named, theirs): (&str, &str, &str),
    head: Option<String>,
    git_dir: &Path,
) -> Result<(), OpenError> {
    let dir = &ws.path;
    let paths = git::run_bytes(dir, &["diff", "--name-only", "-z", "--diff-filter=U"])
        .map(|o| split_z(&o))
        .unwrap_or_default();
    let at = |r: &str| git::run(dir, &["rev-parse", "-q", "--verify", r]).ok();
    // Only a merge of this dependency's commit: a merge someone else left in
    // progress (the engine's own) is never handed to a resolver as vf's.
    let merge_head =
        at("MERGE_HEAD").filter(|m| at(&format!("{theirs}^{{commit}}")).as_ref() == Some(m));
    let (Some(head), Some(merge_head), false) = (head, merge_head, paths.is_empty()) else {
        return Ok(());
    };
    Err(OpenError::Unmerged {
        workspace: Box::new(ws.clone()),
        pending: Box::new(Pending {
            dependency: dep.to_string(),
            theirs: named.to_string(),
            paths,
            head,
            merge_head,
            git_dir: git_dir.to_path_buf(),
        }),
    })
}

/// A regular file's first 4 KiB as text; never through a link, never
/// waiting on a FIFO.
fn read_small(path: &Path) -> Option<String> {
    use crate::sys::OpenExt;
    use std::io::Read;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .no_follow_no_block()
        .open_checked(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Merges `vf/<dep>` into the worktree's branch unless it is already there;
/// a dependency whose branch was pushed to `remote` is fetched from it first
/// and merged as the remote has it. On a conflict the merge is aborted and
/// the conflicting paths are named, or, with `keep` (the git dir proven),
/// left in progress and reported as [`OpenError::Unmerged`].
fn merge(
    ws: &Workspace,
    unit: &str,
    (dep, remote): (&str, Option<&str>),
    keep: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<(), OpenError> {
    let dir = &ws.path;
    let theirs = match remote {
        Some(remote) => {
            super::remote::fetch(dir, remote, dep).map_err(|message| OpenError::Remote {
                workspace: Box::new(ws.clone()),
                message,
            })?
        }
        None => branch_of(dep),
    };
    if remote.is_none() && !branch_exists(dir, &theirs) {
        warnings.push(format!(
            "dependency {dep:?} has no branch {theirs}: nothing of it is merged"
        ));
        return Ok(());
    }
    if git::succeeds(dir, &["merge-base", "--is-ancestor", &theirs, "HEAD"]) {
        return Ok(());
    }
    // `origin/vf/<dep>` for a fetched branch.
    let named = theirs.strip_prefix("refs/remotes/").unwrap_or(&theirs);
    let msg = format!("vf: merge {named} into {}", branch_of(unit));
    let head = git::run(dir, &["rev-parse", "HEAD"]).ok();
    let args = git::with_identity(dir, &["merge", "--no-ff", "--no-edit", "-m", &msg, &theirs]);
    if git::run(dir, &args).is_ok() {
        return Ok(());
    }
    if let Some(git_dir) = keep {
        keep_in_progress(ws, (dep, named, &theirs), head, git_dir)?;
    }
    let paths = git::run(dir, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default();
    // Nothing is left half-merged: the worktree is back at its branch's commit.
    let aborted = git::run(dir, &["merge", "--abort"]);
    let paths: Vec<&str> = paths.lines().filter(|l| !l.is_empty()).collect();
    let mut message = format!(
        "merge conflict: {named} does not merge into {}: {}",
        branch_of(unit),
        if paths.is_empty() {
            "(no conflicting path reported)".to_string()
        } else {
            paths.join(", ")
        }
    );
    if let Err(e) = aborted {
        message.push_str(&format!("; the merge could not be aborted: {e}"));
    }
    Err(OpenError::Conflict {
        workspace: Box::new(ws.clone()),
        message,
    })
}
