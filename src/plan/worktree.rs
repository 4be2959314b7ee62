//! A plan unit's worktree keys (`worktree`, `base`, `commit`, `push`) and
//! `retries`: checked when the unit is read, so that a bad value is refused
//! naming the unit and its line.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, de::Error as _};

use super::{PlanUnit, RawUnit, show_path};

/// The most `retries` a unit may ask for.
pub const MAX_RETRIES: u32 = 10;

/// A worktree unit's keys. Its `cwd` then names the repository (the plan
/// file's directory) and `rel_cwd` the engine's directory in the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanWorktree {
    pub base: Option<String>,
    pub commit: bool,
    pub rel_cwd: PathBuf,
    /// `push`: the git remote the unit's branch is pushed to once it is done.
    pub push: Option<String>,
    /// Per dependency of the unit that is a worktree unit with `push`: that
    /// remote, which the dependency's branch is fetched from before it is
    /// merged (filled once the whole plan is read).
    pub fetch_from: BTreeMap<String, String>,
}

/// `retries`: a whole number from 0 to [`MAX_RETRIES`].
pub(super) fn retries<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n = i64::deserialize(d)?;
    match u32::try_from(n) {
        Ok(n) if n <= MAX_RETRIES => Ok(Some(n)),
        _ => Err(D::Error::custom(format!(
            "`retries` must be a whole number from 0 to {MAX_RETRIES}, not {n}"
        ))),
    }
}

/// `push`: a plain git remote name (`crate::workspace::remote::check_name`).
pub(super) fn remote<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    crate::workspace::remote::check_name(&name)
        .map_err(|e| D::Error::custom(format!("`push`: {e}")))?;
    Ok(Some(name))
}

/// `worktree`, `base`, `commit`, `push`: the others only with the first; a
/// worktree `cwd` is relative to the worktree's root and stays inside it.
pub(super) fn worktree_of(u: &RawUnit) -> Result<Option<PlanWorktree>, String> {
    if !u.worktree {
        if u.base.is_some() || u.commit.is_some() {
            return Err("`base` and `commit` need `worktree = true`".into());
        }
        if u.push.is_some() {
            return Err("`push` needs `worktree = true`".into());
        }
        return Ok(None);
    }
    let rel_cwd = u.cwd.clone().unwrap_or_default();
    let inside = rel_cwd.components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    if !inside {
        return Err(format!(
            "cwd {} must be relative to the worktree's root, without `..`",
            show_path(&rel_cwd)
        ));
    }
    Ok(Some(PlanWorktree {
        base: u.base.clone(),
        commit: u.commit.unwrap_or(true),
        rel_cwd,
        push: u.push.clone(),
        fetch_from: BTreeMap::new(),
    }))
}

/// Fills each worktree unit's `fetch_from`: the remote of each dependency
/// that is a worktree unit with `push`.
pub(super) fn link_pushes(units: &mut [PlanUnit]) {
    let pushed: HashMap<String, String> = units
        .iter()
        .filter_map(|u| {
            let remote = u.worktree.as_ref()?.push.clone()?;
            Some((u.name.clone(), remote))
        })
        .collect();
    if pushed.is_empty() {
        return;
    }
    for u in units {
        let Some(w) = u.worktree.as_mut() else {
            continue;
        };
        w.fetch_from = u
            .depends_on
            .iter()
            .filter_map(|d| Some((d.clone(), pushed.get(d)?.clone())))
            .collect();
    }
}
