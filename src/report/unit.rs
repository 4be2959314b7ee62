//! A row per unit: what its marker says, its workspace and diff, its events.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::engine::usage::Usage;
use crate::ground::error::Reason;
use crate::unit::marker::{Marker, MarkerStore};

pub use super::events::EventRow;
use super::{Request, events, millis};

/// The bytes of event details and of diff one unit may embed: the page of a
/// small plan shows everything, that of 1,000 units stays a few MB.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub events: usize,
    pub diff: usize,
}

impl Budget {
    pub fn for_units(n: usize) -> Budget {
        let share = |total: usize, floor: usize| (total / n.max(1)).clamp(floor, total);
        Budget {
            events: share(2 << 20, 2 << 10),
            diff: share(2 << 20, 1 << 10),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitRow {
    pub unit: String,
    pub state: &'static str,
    pub engine: String,
    pub engine_version: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub session_id: Option<String>,
    pub attempts: u32,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The latest attempt's duration.
    pub duration_ms: Option<u64>,
    pub usage: Option<Usage>,
    pub summary: Option<Value>,
    pub error: Option<String>,
    pub reason: Option<String>,
    pub depends_on: Vec<String>,
    pub workspace: Option<WorkspaceRow>,
    /// `passed`, `failed`, or absent (no `verify` ran).
    pub verify: Option<&'static str>,
    /// The latest attempt's raw stdout log, relative to the page.
    pub raw_log: Option<String>,
    /// The embedded events (capped); `eventsTotal` counts them all.
    pub events: Vec<EventRow>,
    pub events_total: usize,
    /// The raw lines the embedded events point to (`rawRange`), by number.
    pub raw_lines: BTreeMap<u64, String>,
    /// Unknown frames (drift) of the latest attempt, by frame kind.
    pub unknown_frames: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    /// The rounds of its loops, as its marker keeps them (oldest first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<crate::unit::marker::rounds::Round>,
    /// The unit whose engine started it, and its depth (absent for a unit
    /// vf started directly: `unit::lineage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// The units its engine started through vf (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    /// Its usage with every descendant's (absent without children); the
    /// totals count each unit's own usage once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_usage: Option<Usage>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRow {
    pub branch: String,
    pub base: String,
    pub head: Option<String>,
    pub changed_files: Vec<String>,
    /// `git diff base head`, one entry per file (capped).
    pub diff: Vec<FileDiff>,
    pub diff_truncated: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub file: String,
    pub patch: String,
}

/// Every marker's row, read on a few threads (the raw logs dominate).
pub fn rows(req: &Request, markers: &[Marker], budget: Budget) -> Vec<UnitRow> {
    let store = MarkerStore::new(&req.state_dir);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let chunk = markers.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = markers
            .chunks(chunk)
            .map(|part| {
                let store = &store;
                s.spawn(move || {
                    part.iter()
                        .map(|m| row(req, store, m, budget))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

fn row(req: &Request, store: &MarkerStore, m: &Marker, budget: Budget) -> UnitRow {
    let projected = events::project(store, m, budget.events);
    let mut warnings: Vec<String> = projected.warning.into_iter().collect();
    let workspace = m.workspace.as_ref().map(|w| {
        let (diff, truncated, problem) = diff(&req.state_dir, &m.unit, w, budget.diff);
        warnings.extend(problem);
        WorkspaceRow {
            branch: w.branch.clone(),
            base: w.base.clone(),
            head: w.head.clone(),
            changed_files: w.changed_files.clone(),
            diff,
            diff_truncated: truncated,
        }
    });
    let log = m
        .stdout_log
        .as_ref()
        .map(|_| store.log_path(&m.unit, m.attempts, "stdout"));
    let duration_ms = (m.started_at.as_deref().and_then(millis))
        .zip(m.finished_at.as_deref().and_then(millis))
        .map(|(a, b)| b.saturating_sub(a));
    UnitRow {
        unit: m.unit.clone(),
        state: m.state.as_str(),
        engine: m.engine.to_string(),
        engine_version: m.engine_version.clone(),
        model: m.model.clone(),
        effort: m.effort.clone(),
        session_id: m.engine_session_id.clone(),
        attempts: m.attempts,
        started_at: m.started_at.clone(),
        finished_at: m.finished_at.clone(),
        duration_ms,
        usage: m.usage.clone(),
        summary: m.summary.clone(),
        error: m.error.clone(),
        reason: m.reason.map(|r| r.as_str().to_string()),
        depends_on: req.depends_on.get(&m.unit).cloned().unwrap_or_default(),
        workspace,
        verify: verify(store, m),
        raw_log: log.and_then(|p| link(req, &p)),
        events: projected.events,
        events_total: projected.total,
        raw_lines: projected.raw,
        unknown_frames: projected.unknown,
        warnings,
        rounds: m.rounds.clone(),
        parent: m.parent.clone(),
        depth: Some(m.depth).filter(|d| *d > 1),
        children: Vec::new(),
        tree_usage: None,
    }
}

/// Each row's children and its tree's usage (`tree`: every marker's), and
/// the rows in tree order: a child right after its parent (depth first), a
/// unit whose parent is not shown at the top, in the rows' order.
pub fn as_tree(mut rows: Vec<UnitRow>, tree: &crate::unit::lineage::Tree) -> Vec<UnitRow> {
    for r in &mut rows {
        r.children = tree.children(&r.unit).to_vec();
        r.tree_usage = tree.tree_usage(&r.unit, r.usage.as_ref());
    }
    let index: BTreeMap<String, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.unit.clone(), i))
        .collect();
    let shown = |r: &UnitRow| r.parent.as_ref().is_some_and(|p| index.contains_key(p));
    let mut order = Vec::with_capacity(rows.len());
    let mut seen = vec![false; rows.len()];
    let tops = (0..rows.len()).filter(|i| !shown(&rows[*i]));
    // A cycle of parents is never reached from a top row: shown where it stands.
    let rest = (0..rows.len()).filter(|i| shown(&rows[*i]));
    for top in tops.chain(rest).collect::<Vec<_>>() {
        let mut stack = vec![top];
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            order.push(i);
            let below = rows[i].children.iter().rev().filter_map(|c| index.get(c));
            stack.extend(below);
        }
    }
    let mut slots: Vec<Option<UnitRow>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

fn link(req: &Request, log: &Path) -> Option<String> {
    let dir = req.page_dir.as_deref()?;
    super::relative_to(log, dir)
}

/// Whether the latest attempt's `verify` ran, and how it went.
fn verify(store: &MarkerStore, m: &Marker) -> Option<&'static str> {
    if m.reason == Some(Reason::Verify) {
        return Some("failed");
    }
    let ran = m.attempts > 0 && store.log_path(&m.unit, m.attempts, "verify").is_file();
    (ran && m.state == crate::unit::marker::UnitState::Done).then_some("passed")
}

/// The unit's diff against its base, split by file and capped; and a
/// warning when git cannot give it. Read from the unit's worktree, whose
/// place comes from the state dir (never from the marker).
fn diff(
    state_dir: &Path,
    unit: &str,
    w: &crate::workspace::Workspace,
    cap: usize,
) -> (Vec<FileDiff>, bool, Option<String>) {
    let Some(head) = w.head.as_deref() else {
        return (Vec::new(), false, None);
    };
    let dir = crate::workspace::path_of(state_dir, unit);
    if !dir.is_dir() {
        return (Vec::new(), false, None);
    }
    let text = match crate::workspace::diff(state_dir, unit, &w.base, head) {
        Ok(b) => b,
        Err(e) => return (Vec::new(), false, Some(format!("no diff: {e}"))),
    };
    let text = String::from_utf8_lossy(&text);
    let (files, truncated) = split_files(&text, cap);
    (files, truncated, None)
}

/// `git diff` output as one entry per file, within `cap` bytes in all.
fn split_files(text: &str, cap: usize) -> (Vec<FileDiff>, bool) {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut used = 0;
    let mut truncated = false;
    for part in text.split_inclusive('\n') {
        if let Some(rest) = part.strip_prefix("diff --git a/") {
            let name = rest
                .trim_end()
                .split(" b/")
                .next()
                .unwrap_or(rest)
                .to_string();
            files.push(FileDiff {
                file: name,
                patch: String::new(),
            });
        }
        let Some(f) = files.last_mut() else { continue };
        if used + part.len() > cap {
            truncated = true;
            continue;
        }
        used += part.len();
        f.patch.push_str(part);
    }
    (files, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_is_split_by_file_and_capped() {
        let text = "diff --git a/x b/x\n+1\ndiff --git a/y b/y\n+22222\n";
        let (files, cut) = split_files(text, 1000);
        let got: Vec<_> = files.iter().map(|f| (&*f.file, &*f.patch)).collect();
        assert_eq!(
            (got, cut),
            (
                vec![
                    ("x", "diff --git a/x b/x\n+1\n"),
                    ("y", "diff --git a/y b/y\n+22222\n")
                ],
                false
            )
        );
        let (files, cut) = split_files(text, 25);
        assert_eq!((files[1].patch.as_str(), cut), ("", true));
    }
}
