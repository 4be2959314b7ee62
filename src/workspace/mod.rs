//! Git worktrees for units (`--worktree`, plan `worktree = true`): each unit
//! runs at `<state>/worktrees/<unit>` on branch `vf/<unit>`, created from a
//! base commit resolved once, with its worktree dependencies merged in.
//!
//! Everything goes through the real `git` with `-C <dir>`: the user's own
//! checkout (index, working tree, current branch) is never touched. Merges
//! happen inside the unit's worktree and a conflicted merge is aborted, so
//! nothing is ever left half-merged, unless the unit has a resolver: then
//! it stays in progress until vf commits or aborts it (`conflict`). See
//! docs/WORKSPACES.md.
//!
//! The domain's map: `git` the one way vf runs git, `open` create or reuse a
//! worktree and merge dependencies, `identity` the proof before each git write,
//! `conflict` a merge left for a resolver and settled, `seal` the unit's
//! commit, `remove`, `remote` (the plan key `push`), `guard` the path guards
//! (`guard/hidden.rs`: what the disk hides from git), `diff` the unit's
//! changes for its reviewer (read after the proof, capped).

pub mod conflict;
pub mod diff;
pub mod git;
pub mod guard;
mod identity;
mod open;
pub mod remote;
mod remove;
mod seal;

use std::collections::BTreeMap;

// The domain's surface for the run of a unit (`dispatch`).
pub use guard::{Baseline, PathGuards, require_repo};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ground::error::{Result, VfError};

pub use conflict::{Pending, Unsettled};
pub use identity::{Proven, prove};
pub use open::{OpenError, Opened, open};
pub use remove::{Gone, removable, remove};
pub use seal::{CommitInfo, SealError, Sealed, finish};

/// The directory under the state dir that holds the units' worktrees.
pub const WORKTREES_DIR: &str = "worktrees";

/// What a unit's workspace is, as the result, the marker and `vf status` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    /// The worktree's root.
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch was created from.
    pub base: String,
    /// The branch's commit when the unit last ended (None before that).
    pub head: Option<String>,
    /// Files changed between `base` and `head`.
    pub changed_files: Vec<String>,
    /// `false` for `--no-commit` / `commit = false` (kept for `vf resume`);
    /// shown only then.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub commit: bool,
    /// The remote the branch was pushed to once the unit was done (plan key
    /// `push`); shown only then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<String>,
}

impl Workspace {
    /// One line for `vf status`: the branch and, once the unit ended, how
    /// many files it changed since its base.
    pub fn short(&self) -> String {
        match &self.head {
            Some(_) => format!(
                "{} ({} file(s) changed)",
                self.branch,
                self.changed_files.len()
            ),
            None => self.branch.clone(),
        }
    }
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// How a unit wants its worktree (validated by the command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceSpec {
    /// A directory of the repository (its top level, or an existing worktree on resume).
    pub repo: PathBuf,
    /// A full commit id.
    pub base: String,
    /// The engine's working directory, relative to the worktree root.
    pub rel_cwd: PathBuf,
    /// Commit what the engine left uncommitted when the unit is done.
    pub commit: bool,
    /// Dependency units whose branches (`vf/<unit>`) are merged in first.
    pub merge: Vec<String>,
    /// Push the branch to this remote once the unit is done (plan key `push`).
    pub push: Option<String>,
    /// Per dependency unit, the remote its branch was pushed to: a dependency
    /// in `merge` named here is fetched from that remote and merged as the
    /// remote has it (it may have run on another machine).
    pub fetch_from: BTreeMap<String, String>,
    /// A conflicting dependency merge is left in progress for a resolver
    /// ([`OpenError::Unmerged`]) instead of aborted (plan key `on_conflict`).
    pub keep_conflicts: bool,
    /// The worktree's git dir as [`open`] proved it before the engine ran:
    /// what it must still be when vf commits.
    pub git_dir: Option<PathBuf>,
}

impl WorkspaceSpec {
    /// The engine's working directory inside the unit's worktree.
    pub fn cwd_in(&self, state_dir: &Path, unit: &str) -> PathBuf {
        let path = path_of(state_dir, unit);
        // `join("")` would add a trailing slash to the recorded cwd.
        match self.rel_cwd.as_os_str().is_empty() {
            true => path,
            false => path.join(&self.rel_cwd),
        }
    }

    /// A resumed unit reuses its worktree as it is. Its place is derived from
    /// the state dir, never taken from the marker (a cloned state dir is
    /// trusted only as far as its file names).
    pub fn reuse(ws: &Workspace, cwd: &Path, state_dir: &Path, unit: &str) -> WorkspaceSpec {
        WorkspaceSpec {
            repo: path_of(state_dir, unit),
            base: ws.base.clone(),
            rel_cwd: cwd
                .strip_prefix(&ws.path)
                .ok()
                .filter(|r| r.components().all(|c| matches!(c, Component::Normal(_))))
                .unwrap_or(Path::new(""))
                .into(),
            commit: ws.commit,
            merge: Vec::new(),
            push: None,
            fetch_from: BTreeMap::new(),
            keep_conflicts: false,
            git_dir: None,
        }
    }
}

/// The branch of a unit.
pub fn branch_of(unit: &str) -> String {
    format!("vf/{unit}")
}

/// `git diff BASE HEAD` in a unit's worktree, as git wrote it: no external
/// diff driver, no textconv, no colour (`vf report`).
pub fn diff(state_dir: &Path, unit: &str, base: &str, head: &str) -> Result<Vec<u8>, String> {
    let args = [
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        base,
        head,
        "--",
    ];
    git::run_bytes(&path_of(state_dir, unit), &args).map_err(|e| e.message)
}

/// The worktree path of a unit.
pub fn path_of(state_dir: &Path, unit: &str) -> PathBuf {
    state_dir.join(WORKTREES_DIR).join(unit)
}

/// Finds the repository around `cwd` and resolves `base` (default `HEAD`) to
/// a commit id, once: a base that moves later does not move the unit. A
/// unit name git refuses as a branch is refused here, before anything is made.
/// `flag` names the option in the errors (`--worktree`, `worktree = true`).
pub fn resolve(
    cwd: &Path,
    unit: &str,
    base: Option<&str>,
    rel_cwd: Option<&Path>,
    flag: &str,
) -> Result<WorkspaceSpec> {
    let top = git::run(cwd, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        VfError::usage(format!(
            "{flag} needs a git repository, and {} is not inside one",
            cwd.display()
        ))
    })?;
    let top = PathBuf::from(top);
    check_branch(&top, unit, flag)?;
    let want = base.unwrap_or("HEAD");
    if want.starts_with('-') {
        return Err(VfError::usage(format!("base {want:?} is not a git ref")));
    }
    let commit = git::run(
        &top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{want}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        VfError::usage(format!(
            "base {:?} is not a commit of the repository {}{}",
            crate::ground::text::cut(want, 100),
            top.display(),
            if base.is_none() {
                " (it has no commit yet)"
            } else {
                ""
            }
        ))
    })?;
    let rel_cwd = match rel_cwd {
        Some(r) => r.to_path_buf(),
        // The engine works in the same place of the worktree as the user is in the checkout.
        None => {
            let canon = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
            let top_canon = top.canonicalize().unwrap_or_else(|_| top.clone());
            canon
                .strip_prefix(&top_canon)
                .unwrap_or(Path::new(""))
                .into()
        }
    };
    Ok(WorkspaceSpec {
        repo: top,
        base: commit,
        rel_cwd,
        commit: true,
        merge: Vec::new(),
        push: None,
        fetch_from: BTreeMap::new(),
        keep_conflicts: false,
        git_dir: None,
    })
}

/// `vf/<unit>` must be a branch name git takes (`git check-ref-format`).
fn check_branch(top: &Path, unit: &str, flag: &str) -> Result<()> {
    let branch = branch_of(unit);
    if git::succeeds(top, &["check-ref-format", &format!("refs/heads/{branch}")]) {
        return Ok(());
    }
    // The one rule a valid unit name can still break (`names::check`).
    let why = match unit.ends_with(".lock") {
        true => "a branch name may not end in `.lock`".to_string(),
        false => "see `git check-ref-format`".to_string(),
    };
    Err(VfError::usage(format!(
        "{flag}: the unit name {unit:?} cannot be a git branch: git refuses {branch:?} ({why}); \
         pick another unit name"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_workspace_takes_its_place_from_the_state_dir_not_the_marker() {
        let recorded = Workspace {
            path: PathBuf::from("/elsewhere/wt"),
            branch: "vf/u".into(),
            base: "abc".into(),
            head: None,
            changed_files: Vec::new(),
            commit: false,
            pushed: Some("origin".into()),
        };
        let state = Path::new("/repo/.vibeflow");
        let spec = |cwd: &str| WorkspaceSpec::reuse(&recorded, Path::new(cwd), state, "u");
        let want = |rel: &str| WorkspaceSpec {
            repo: PathBuf::from("/repo/.vibeflow/worktrees/u"),
            base: "abc".into(),
            rel_cwd: PathBuf::from(rel),
            commit: false,
            merge: Vec::new(),
            push: None,
            fetch_from: BTreeMap::new(),
            keep_conflicts: false,
            git_dir: None,
        };
        assert_eq!(spec("/elsewhere/wt/sub/dir"), want("sub/dir"));
        assert_eq!(spec("/elsewhere/wt/../../etc"), want(""));
        assert_eq!(spec("/etc"), want(""));
    }
}
