//! `vf report`'s core: the data model of the page (docs/REPORT.md), read
//! only from the state dir (markers, raw logs as vf stored them, the units'
//! worktrees, conversations), and the page itself (`html`). No terminal, no
//! printing: the command writes what this returns.
//!
//! The domain's map: this file the page's data model; `timeline` a bar per
//! attempt, `events` the latest raw log projected, `unit` a row per unit,
//! `conv` the conversations' transcripts, `quota` the quota ledger's
//! entries as shown (also by `vf quota` and `vf status`), `html` the page (`page.css`,
//! `page.js` inline); `judge` the optional judge of a unit's result
//! (docs/JUDGE.md), which reads the same state dir.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::usage::Usage;
use crate::ground::error::Result;
use crate::unit::marker::{Marker, MarkerStore};

mod conv;
mod events;
pub mod html;
pub mod judge;
pub mod quota;
mod timeline;
mod unit;

pub use timeline::Bar;
pub use unit::{EventRow, FileDiff, UnitRow, WorkspaceRow};

/// The data model's version (`format`): bumped when a key changes meaning.
pub const FORMAT: u32 = 1;

/// What one `vf report` reads, validated by the command.
#[derive(Debug, Clone)]
pub struct Request {
    pub state_dir: PathBuf,
    /// Each unit's dependencies, from `--plan` (none without it).
    pub depends_on: BTreeMap<String, Vec<String>>,
    /// The plan's path, shown on the page.
    pub plan: Option<PathBuf>,
    /// Only these units (`--units`).
    pub units: Option<BTreeSet<String>>,
    /// Epoch seconds: only units that finished at or after it (`--since`).
    pub since: Option<u64>,
    /// The page's directory: raw logs are linked relative to it.
    pub page_dir: Option<PathBuf>,
    /// Now, in epoch milliseconds (a running unit's bar ends here).
    pub now_ms: u64,
}

/// The whole page, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub format: u32,
    pub generated_at: String,
    pub state_dir: String,
    pub plan: Option<String>,
    pub units: Vec<UnitRow>,
    /// Markers vf cannot use: shown as warning rows, never read further.
    pub unusable: Vec<UnusableRow>,
    /// The timeline: one bar per attempt, one per unit blocked before it ran,
    /// one per wait on a rate limit.
    pub bars: Vec<Bar>,
    /// Dependency arrows (`--plan`): `from` must finish before `to`.
    pub edges: Vec<Edge>,
    pub lanes: u32,
    pub totals: Totals,
    pub conversations: Vec<conv::ConvRow>,
    /// The quota ledger's entries when the report was made, each with its
    /// state (docs/QUOTA.md); `quotaWarning`: the ledger could not be used.
    pub quota: Vec<quota::View>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_warning: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnusableRow {
    pub unit: String,
    pub problem: String,
    pub error: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub units: usize,
    /// From the first bar's start to the last bar's end.
    pub wall_ms: u64,
    /// The attempts' durations added up.
    pub engine_ms: u64,
    pub per_engine: Vec<EngineTotal>,
    /// Unknown frames (drift) per engine and version, with their kinds.
    pub drift: Vec<Drift>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineTotal {
    pub engine: String,
    pub units: usize,
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    pub engine: String,
    pub version: Option<String>,
    pub count: u64,
    pub kinds: BTreeMap<String, u64>,
}

/// Reads the state dir into the report. Only a state dir that cannot be
/// listed fails it; a damaged marker or log becomes a warning row.
pub fn build(req: &Request) -> Result<Report> {
    let store = MarkerStore::new(&req.state_dir);
    let mut markers = Vec::new();
    let mut unusable = Vec::new();
    let mut others = Vec::new();
    for entry in store.list()? {
        match entry {
            Ok(m) if wanted(req, &m) => markers.push(m),
            Ok(m) => others.push(m),
            Err(u) if req.units.as_ref().is_none_or(|s| s.contains(&u.unit)) => {
                unusable.push(UnusableRow {
                    problem: u.label(),
                    unit: u.unit,
                    error: u.message,
                })
            }
            Err(_) => {}
        }
    }
    let budget = unit::Budget::for_units(markers.len());
    let units = unit::rows(req, &markers, budget);
    // The tree is every unit's, shown or not (a plan's unit's children).
    let tree = crate::unit::lineage::Tree::of(markers.iter().chain(&others));
    drop(others);
    let units = unit::as_tree(units, &tree);
    let (bars, lanes) = timeline::bars(&store, &markers, req.now_ms);
    let shown: BTreeSet<&str> = units.iter().map(|u| u.unit.as_str()).collect();
    let edges = req
        .depends_on
        .iter()
        .filter(|(to, _)| shown.contains(to.as_str()))
        .flat_map(|(to, deps)| {
            deps.iter()
                .filter(|d| shown.contains(d.as_str()))
                .map(move |d| Edge {
                    from: d.clone(),
                    to: to.clone(),
                })
        })
        .collect();
    let totals = totals(&units, &unusable, &bars);
    let (entries, quota_warning) = quota::entries();
    let quota = quota::views(&entries, &[], req.now_ms, &crate::quota::Limits::default());
    Ok(Report {
        format: FORMAT,
        generated_at: crate::ground::fsutil::now_rfc3339(),
        state_dir: req.state_dir.display().to_string(),
        plan: req.plan.as_ref().map(|p| p.display().to_string()),
        units,
        unusable,
        bars,
        edges,
        lanes,
        totals,
        conversations: conv::rows(&req.state_dir),
        quota,
        quota_warning,
    })
}

fn wanted(req: &Request, m: &Marker) -> bool {
    let named = req.units.as_ref().is_none_or(|s| s.contains(&m.unit));
    let recent = req.since.is_none_or(|since| {
        m.finished_at
            .as_deref()
            .and_then(crate::ground::fsutil::parse_rfc3339)
            .is_some_and(|t| t >= since)
    });
    named && recent
}

fn totals(units: &[UnitRow], unusable: &[UnusableRow], bars: &[Bar]) -> Totals {
    let attempts = bars.iter().filter(|b| b.is_attempt());
    let start = bars.iter().map(|b| b.start_ms).min().unwrap_or(0);
    let end = bars.iter().map(|b| b.end_ms).max().unwrap_or(0);
    let mut per: BTreeMap<String, (usize, Vec<&Usage>)> = BTreeMap::new();
    let mut drift: BTreeMap<(String, Option<String>), Drift> = BTreeMap::new();
    let mut warnings = Vec::new();
    for u in units {
        let e = per.entry(u.engine.clone()).or_default();
        e.0 += 1;
        e.1.extend(u.usage.iter());
        if !u.unknown_frames.is_empty() {
            let key = (u.engine.clone(), u.engine_version.clone());
            let d = drift.entry(key).or_insert_with(|| Drift {
                engine: u.engine.clone(),
                version: u.engine_version.clone(),
                count: 0,
                kinds: BTreeMap::new(),
            });
            for (k, n) in &u.unknown_frames {
                d.count += n;
                *d.kinds.entry(k.clone()).or_default() += n;
            }
        }
        warnings.extend(u.warnings.iter().map(|w| format!("{}: {w}", u.unit)));
    }
    for u in unusable {
        warnings.push(format!("{}: {} marker: {}", u.unit, u.problem, u.error));
    }
    Totals {
        units: units.len(),
        wall_ms: end.saturating_sub(start),
        engine_ms: attempts.map(|b| b.end_ms.saturating_sub(b.start_ms)).sum(),
        per_engine: per
            .into_iter()
            .map(|(engine, (n, usage))| EngineTotal {
                engine,
                units: n,
                usage: crate::engine::usage::total(usage),
            })
            .collect(),
        drift: drift.into_values().collect(),
        warnings,
    }
}

/// An RFC 3339 time in epoch milliseconds (vf writes milliseconds).
pub(crate) fn millis(s: &str) -> Option<u64> {
    let secs = crate::ground::fsutil::parse_rfc3339(s)?;
    let frac = s.get(19..).and_then(|t| t.strip_prefix('.')).unwrap_or("");
    let digits: String = frac
        .chars()
        .take_while(char::is_ascii_digit)
        .take(3)
        .collect();
    let ms = match digits.len() {
        0 => 0,
        n => digits.parse::<u64>().unwrap_or(0) * 10u64.pow(3 - n as u32),
    };
    Some(secs * 1000 + ms)
}

/// `to` relative to directory `from` (both absolute), for links in the page.
pub(crate) fn relative_to(to: &Path, from: &Path) -> Option<String> {
    use std::path::Component;
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return None;
    }
    let mut parts: Vec<String> = a[common..].iter().map(|_| "..".to_string()).collect();
    for c in &b[common..] {
        parts.push(c.as_os_str().to_str()?.to_string());
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_relative_links() {
        assert_eq!(millis("2026-01-01T00:00:01.250Z"), Some(1_767_225_601_250));
        assert_eq!(millis("2026-01-01T00:00:01Z"), Some(1_767_225_601_000));
        assert_eq!(millis("yesterday"), None);
        let rel = relative_to(Path::new("/a/s/units/u/x.log"), Path::new("/a/out"));
        assert_eq!(rel.as_deref(), Some("../s/units/u/x.log"));
        assert_eq!(
            relative_to(Path::new("/a/s/x.log"), Path::new("/a/s")).as_deref(),
            Some("x.log")
        );
    }
}
