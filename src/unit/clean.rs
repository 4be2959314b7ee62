//! `vf clean`: which units' worktrees may go (done ones; others with
//! `--force`; never one that is running), then their removal through
//! [`crate::workspace::remove`]. Every unit is checked first; one refusal
//! removes nothing.

use std::path::PathBuf;

use serde::Serialize;

use crate::ground::error::{Result, VfError};
use crate::unit::lock::UnitLock;
use crate::unit::marker::{MarkerStore, UnitState};
use crate::workspace::{Gone, WORKTREES_DIR, path_of, removable, remove};

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
    /// Where vf was run: its repository is the one of a worktree already gone.
    pub cwd: PathBuf,
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
    for unit in candidates(req, &store)? {
        let marker = store.load(&unit)?;
        let state = marker.as_ref().map(|m| m.state);
        let head = marker.and_then(|m| m.workspace).and_then(|w| w.head);
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
        // vf runs git only on a worktree that is still its own.
        let proven = removable(&path_of(&req.state_dir, &unit))
            .map_err(|e| VfError::usage(format!("unit {unit:?}: {e} (nothing was cleaned)")))?;
        chosen.push((unit, head, proven, lock));
    }
    let mut out = Vec::new();
    for (unit, head, proven, _lock) in &chosen {
        let path = path_of(&req.state_dir, unit);
        let gone = Gone {
            cwd: &req.cwd,
            head: head.as_deref(),
        };
        let proven = proven.as_ref();
        let (worktree, branch) = remove(&path, unit, proven, req.force, req.branches, gone)
            .map_err(|e| {
                VfError::usage(format!(
                    "cannot clean unit {unit:?}: {e}; --force removes a worktree with uncommitted changes"
                ))
            })?;
        out.push(Cleaned {
            unit: unit.clone(),
            worktree,
            branch,
        });
    }
    Ok(out)
}

/// The named units, or every unit that has a worktree directory (with
/// `--branches`, also every unit whose marker records a workspace).
fn candidates(req: &CleanRequest, store: &MarkerStore) -> Result<Vec<String>> {
    if !req.units.is_empty() {
        for u in &req.units {
            crate::ground::names::check("unit name", u)?;
        }
        return Ok(req.units.clone());
    }
    let dir = req.state_dir.join(WORKTREES_DIR);
    let mut names = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() && crate::ground::names::check("unit name", &name).is_ok() {
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
    if req.branches {
        let recorded = store.list()?.into_iter().flatten();
        names.extend(recorded.filter(|m| m.workspace.is_some()).map(|m| m.unit));
    }
    names.sort();
    names.dedup();
    Ok(names)
}
