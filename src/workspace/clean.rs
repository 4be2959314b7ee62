//! `vf clean`: removing units' worktrees (and, when asked, their branches).
//! Every unit is checked first; one refusal removes nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{WORKTREES_DIR, branch_of, git, path_of};
use crate::error::{Result, VfError};
use crate::marker::{MarkerStore, UnitState};
use crate::unit_lock::UnitLock;

#[derive(Debug, Clone)]
pub struct CleanRequest {
    pub state_dir: PathBuf,
    /// Named units (empty: every unit with a worktree, filtered by `done`).
    pub units: Vec<String>,
    /// Only the units that are done.
    pub done_only: bool,
    /// Also delete the branches `vf/<unit>`.
    pub branches: bool,
    /// Also units that are not done, and worktrees with uncommitted changes.
    pub force: bool,
}

/// What was removed, per unit.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cleaned {
    pub unit: String,
    pub worktree: Option<PathBuf>,
    pub branch: Option<String>,
}

pub fn clean(req: &CleanRequest) -> Result<Vec<Cleaned>> {
    let store = MarkerStore::new(&req.state_dir);
    let mut chosen = Vec::new();
    for unit in candidates(req)? {
        let state = store.load(&unit)?.map(|m| m.state);
        if req.done_only && req.units.is_empty() && state != Some(UnitState::Done) {
            continue;
        }
        // Held until the unit is cleaned: no run can start in it meanwhile.
        let Some(lock) = UnitLock::try_acquire(&req.state_dir, &unit)? else {
            return Err(VfError::usage(format!(
                "unit {unit:?} is running; nothing was cleaned"
            )));
        };
        if !req.force && state != Some(UnitState::Done) {
            let s = state.map_or("without a marker", UnitState::as_str);
            return Err(VfError::usage(format!(
                "unit {unit:?} is {s}, not done; --force cleans it anyway (nothing was cleaned)"
            )));
        }
        chosen.push((unit, lock));
    }
    let mut out = Vec::new();
    for (unit, _lock) in &chosen {
        out.push(remove(req, unit)?);
    }
    Ok(out)
}

/// The named units, or every unit that has a worktree directory.
fn candidates(req: &CleanRequest) -> Result<Vec<String>> {
    if !req.units.is_empty() {
        for u in &req.units {
            crate::names::check("unit name", u)?;
        }
        return Ok(req.units.clone());
    }
    let dir = req.state_dir.join(WORKTREES_DIR);
    let mut names = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() && crate::names::check("unit name", &name).is_ok() {
                    names.push(name);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(VfError::state(format!(
                "cannot read {}: {e}",
                dir.display()
            )));
        }
    }
    names.sort();
    Ok(names)
}

/// `git worktree remove` (from the repository, never from inside the worktree),
/// `git worktree prune`, and `git branch -D` with `--branches`.
fn remove(req: &CleanRequest, unit: &str) -> Result<Cleaned> {
    let path = path_of(&req.state_dir, unit);
    let mut cleaned = Cleaned {
        unit: unit.to_string(),
        worktree: None,
        branch: None,
    };
    let common = repo_dir(&path);
    if let Some(repo) = &common {
        let p = path.to_string_lossy();
        let mut args = vec!["worktree", "remove"];
        if req.force {
            args.push("--force");
        }
        args.push(&p);
        git::run(repo, &args).map_err(|e| {
            VfError::usage(format!(
                "cannot remove the worktree of {unit:?} ({e}); --force removes it with its uncommitted changes"
            ))
        })?;
        let _ = git::run(repo, &["worktree", "prune"]);
        cleaned.worktree = Some(path);
        if req.branches {
            let branch = branch_of(unit);
            if super::open::branch_exists(repo, &branch) {
                git::run(repo, &["branch", "-D", &branch]).map_err(VfError::usage)?;
                cleaned.branch = Some(branch);
            }
        }
    }
    Ok(cleaned)
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
