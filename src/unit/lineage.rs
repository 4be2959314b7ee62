//! Who started a unit (docs/MCP.md, "Depth"): its parent unit and its depth.
//!
//! vf tells every engine it runs which unit it is and how deep
//! (`VF_PARENT_UNIT`, `VF_DEPTH`); a vf started by that engine (`vf mcp`,
//! or `vf dispatch` from its shell) reads them back with [`Lineage::of_caller`]:
//! its units are that unit's children, one level deeper. A unit vf starts
//! directly is depth 1 and has no parent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::engine::usage::Usage;

use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};

/// The depth `vf mcp` allows by default (`--max-depth`).
pub const DEFAULT_MAX_DEPTH: u32 = 2;
/// No depth above this is ever accepted, whatever `--max-depth` says.
pub const DEPTH_CEILING: u32 = 64;

/// A unit's place in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The unit whose engine started this one (`None`: started directly).
    pub parent: Option<String>,
    /// 1 for a unit vf started directly, one more per level below.
    pub depth: u32,
}

impl Default for Lineage {
    fn default() -> Lineage {
        Lineage::top()
    }
}

impl Lineage {
    /// A unit vf starts directly.
    pub fn top() -> Lineage {
        Lineage {
            parent: None,
            depth: 1,
        }
    }

    /// What the engine of `unit` (at this depth) is told, so a vf it starts
    /// knows its parent.
    pub fn engine_env(&self, unit: &str) -> [(String, String); 2] {
        [
            (EnvVars::VF_PARENT_UNIT.to_string(), unit.to_string()),
            (EnvVars::VF_DEPTH.to_string(), self.depth.to_string()),
        ]
    }

    /// The lineage of a unit started by a process whose environment holds
    /// `parent` (`VF_PARENT_UNIT`) and `depth` (`VF_DEPTH`): a child of that
    /// unit, one level deeper. Neither set: [`Lineage::top`]. One set without
    /// the other, a depth that is no number from 1 to [`DEPTH_CEILING`], or a
    /// parent that is no valid unit name is an error (exit 2): a caller that
    /// could hide its depth could recurse without bound.
    pub fn of_caller(parent: Option<&str>, depth: Option<&str>) -> Result<Lineage> {
        let (parent, depth) = match (parent, depth) {
            (None, None) => return Ok(Lineage::top()),
            (Some(p), Some(d)) => (p, d),
            _ => {
                return Err(VfError::usage(format!(
                    "{} and {} must be set together (vf sets both for the engines it runs)",
                    EnvVars::VF_PARENT_UNIT,
                    EnvVars::VF_DEPTH
                )));
            }
        };
        crate::ground::names::check(EnvVars::VF_PARENT_UNIT, parent)?;
        let d: u32 = depth
            .parse()
            .ok()
            .filter(|d| (1..DEPTH_CEILING).contains(d))
            .ok_or_else(|| {
                VfError::usage(format!(
                    "{} must be a whole number from 1 to {}, not {:?}",
                    EnvVars::VF_DEPTH,
                    DEPTH_CEILING - 1,
                    crate::ground::text::cut(depth, 40)
                ))
            })?;
        Ok(Lineage {
            parent: Some(parent.to_string()),
            depth: d + 1,
        })
    }

    /// The unit's place in the tree, as its marker's first run recorded it.
    pub fn of_marker(m: &super::marker::Marker) -> Lineage {
        Lineage {
            parent: m.parent.clone(),
            depth: m.depth,
        }
    }

    /// [`Lineage::of_caller`] of this process's own environment.
    pub fn of_env() -> Result<Lineage> {
        let get = |k: &str| std::env::var(k).ok();
        let (p, d) = (get(EnvVars::VF_PARENT_UNIT), get(EnvVars::VF_DEPTH));
        Lineage::of_caller(p.as_deref(), d.as_deref())
    }
}

/// The next free child name of `parent` in `state_dir`, `<parent>.<n>`
/// (n from 1), reserved by creating its unit folder (so two callers never
/// get the same name). A parent whose children's names would be too long is
/// an error.
pub fn next_child_name(state_dir: &Path, parent: &str) -> Result<String> {
    let units = super::layout::units_dir(state_dir);
    let err = |e: std::io::Error| VfError::state(format!("{}: {e}", units.display()));
    std::fs::create_dir_all(&units).map_err(err)?;
    first_child_name(parent, |name| {
        match std::fs::create_dir(super::layout::unit_dir(state_dir, name)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(err(e)),
        }
    })
}

/// The name [`next_child_name`] would reserve now, reserving nothing (a
/// dry run shows it; the run reserves the next free one when it starts).
pub fn peek_child_name(state_dir: &Path, parent: &str) -> Result<String> {
    first_child_name(parent, |name| {
        let dir = super::layout::unit_dir(state_dir, name);
        Ok(std::fs::symlink_metadata(dir).is_err())
    })
}

/// The first `<parent>.<n>` (n from 1) that `take` accepts, each checked
/// as a unit name first; too many children is an error.
fn first_child_name(parent: &str, mut take: impl FnMut(&str) -> Result<bool>) -> Result<String> {
    for n in 1..100_000u32 {
        let name = format!("{parent}.{n}");
        crate::ground::names::check("child unit name", &name)?;
        if take(&name)? {
            return Ok(name);
        }
    }
    Err(VfError::usage(format!(
        "unit {parent:?} has too many children"
    )))
}

/// The state dir's units as a tree, read once from every usable marker
/// (read-only, no lock: a marker being written is read whole or not at all).
/// A corrupt, foreign or linked marker is left out, as `vf status` leaves
/// it out of its rows; parents that form a cycle end the walk, never hang it.
#[derive(Debug, Default)]
pub struct Tree {
    /// Each parent's children, sorted.
    children: BTreeMap<String, Vec<String>>,
    /// Each unit's latest usage.
    usage: BTreeMap<String, Usage>,
    /// Each unit's own cap (`--max-cost`), when it has one.
    cap: BTreeMap<String, f64>,
}

impl Tree {
    /// The tree below `root` alone, read through the children index
    /// ([`super::layout::note_child`]): each level's names listed in `<state>/children/<unit>/`,
    /// each one's marker loaded and kept only when it names that unit as its
    /// parent (an entry a marker does not back is ignored). So a unit's end
    /// reads its own descendants, never every marker of the state dir. At
    /// most [`DEPTH_CEILING`] levels and [`super::layout::MAX_INDEXED`] units; an unreadable
    /// index is an empty tree (the tree is a view, never a reason to fail).
    pub fn below(state_dir: &Path, root: &str) -> Tree {
        let store = super::marker::MarkerStore::new(state_dir);
        let mut t = Tree::default();
        if let Ok(Some(m)) = store.load(root) {
            t.add(&m);
        }
        let mut seen = BTreeSet::from([root.to_string()]);
        let mut level = vec![root.to_string()];
        for _ in 0..DEPTH_CEILING {
            let mut next = Vec::new();
            for parent in &level {
                for child in super::layout::indexed_children(state_dir, parent) {
                    if seen.len() >= super::layout::MAX_INDEXED || seen.contains(&child) {
                        continue;
                    }
                    let Ok(Some(m)) = store.load(&child) else {
                        continue;
                    };
                    if m.parent.as_deref() == Some(parent) {
                        seen.insert(child.clone());
                        t.add(&m);
                        next.push(child);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        t.children.values_mut().for_each(|c| c.sort());
        t
    }

    fn add(&mut self, m: &super::marker::Marker) {
        if let Some(p) = &m.parent {
            self.children
                .entry(p.clone())
                .or_default()
                .push(m.unit.clone());
        }
        if let Some(u) = &m.usage {
            self.usage.insert(m.unit.clone(), u.clone());
        }
        if let Some(c) = m.asked.loops.max_cost_usd {
            self.cap.insert(m.unit.clone(), c);
        }
    }

    /// The tree of these markers.
    pub fn of<'a>(markers: impl IntoIterator<Item = &'a super::marker::Marker>) -> Tree {
        let mut t = Tree::default();
        markers.into_iter().for_each(|m| t.add(m));
        t.children.values_mut().for_each(|c| c.sort());
        t
    }

    /// `unit`'s children, sorted (empty when none).
    pub fn children(&self, unit: &str) -> &[String] {
        self.children.get(unit).map_or(&[], Vec::as_slice)
    }

    /// Every unit below `unit`, each once, `unit` itself never (a cycle of
    /// parents ends where it comes back); at most [`DEPTH_CEILING`] levels.
    pub fn descendants(&self, unit: &str) -> Vec<String> {
        let mut seen = BTreeSet::from([unit.to_string()]);
        let (mut level, mut out) = (vec![unit.to_string()], Vec::new());
        for _ in 0..DEPTH_CEILING {
            let next: Vec<String> = level
                .iter()
                .flat_map(|u| self.children(u))
                .filter(|c| seen.insert((*c).clone()))
                .cloned()
                .collect();
            if next.is_empty() {
                break;
            }
            out.extend(next.iter().cloned());
            level = next;
        }
        out
    }

    /// What every unit below `unit` spent (latest usage of each); `None`
    /// when none of them reported any.
    pub fn spent_below(&self, unit: &str) -> Option<Usage> {
        let below = self.descendants(unit);
        crate::engine::usage::total(below.iter().filter_map(|d| self.usage.get(d)))
    }

    /// `own` (the unit's usage) plus every descendant's: `None` when the
    /// unit has no children (its usage is the whole of it).
    pub fn tree_usage(&self, unit: &str, own: Option<&Usage>) -> Option<Usage> {
        if self.children(unit).is_empty() {
            return None;
        }
        let below = self.spent_below(unit);
        crate::engine::usage::total(own.into_iter().chain(below.as_ref()))
    }
}

/// The units whose marker names `parent` as theirs, sorted.
pub fn children_of(state_dir: &Path, parent: &str) -> Vec<String> {
    Tree::below(state_dir, parent).children(parent).to_vec()
}

/// `unit`'s usage (`own`) plus every descendant's; `None` when it has no
/// children (see [`Tree::tree_usage`]).
pub fn tree_usage(state_dir: &Path, unit: &str, own: Option<&Usage>) -> Option<Usage> {
    Tree::below(state_dir, unit).tree_usage(unit, own)
}

/// What the units below `parent` spent, for a per-parent budget (`vf mcp`).
pub fn spent_by_children(state_dir: &Path, parent: &str) -> Option<Usage> {
    Tree::below(state_dir, parent).spent_below(parent)
}

/// What is left of `parent`'s own cap (`--max-cost`, USD) once the units
/// below it are paid for (0 at the least); `None` when it has no cap. A
/// child is refused at 0 and capped at the rest.
pub fn budget_left(state_dir: &Path, parent: &str) -> Option<f64> {
    let tree = Tree::below(state_dir, parent);
    let cap = *tree.cap.get(parent)?;
    let spent = tree
        .spent_below(parent)
        .and_then(|u| u.cost_usd)
        .unwrap_or(0.0);
    Some((cap - spent).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neither_variable_is_a_top_unit_and_both_make_a_child_one_deeper() {
        assert_eq!(Lineage::of_caller(None, None).unwrap(), Lineage::top());
        assert_eq!(
            Lineage::of_caller(Some("review"), Some("1")).unwrap(),
            Lineage {
                parent: Some("review".into()),
                depth: 2
            }
        );
    }

    #[test]
    fn a_hidden_or_hostile_depth_or_parent_is_refused() {
        for (p, d) in [
            (Some("a"), None),
            (None, Some("1")),
            (Some("a"), Some("0")),
            (Some("a"), Some("-1")),
            (Some("a"), Some("x")),
            (Some("a"), Some("64")),
            (Some("a"), Some("99999999999999999999")),
            (Some("../etc"), Some("1")),
            (Some(""), Some("1")),
        ] {
            assert!(Lineage::of_caller(p, d).is_err(), "{p:?} {d:?}");
        }
    }

    #[test]
    fn child_names_count_up_and_are_reserved() {
        let dir = tempfile::tempdir().unwrap();
        let a = next_child_name(dir.path(), "lead").unwrap();
        let b = next_child_name(dir.path(), "lead").unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("lead.1", "lead.2"));
        let long = "x".repeat(crate::ground::names::MAX_NAME_LEN);
        assert!(next_child_name(dir.path(), &long).is_err());
    }

    /// A marker of `unit` under `dir`, child of `parent`, that spent `cost`.
    fn marker(dir: &Path, unit: &str, parent: Option<&str>, cost: Option<f64>) {
        let store = crate::unit::marker::MarkerStore::new(dir);
        let mut m = crate::unit::marker::Marker::new(unit, crate::engine::EngineId::Codex, dir);
        (m.parent, m.depth) = (parent.map(String::from), 1 + u32::from(parent.is_some()));
        m.usage = cost.map(|c| Usage {
            cost_usd: Some(c),
            ..Usage::default()
        });
        store.save(&mut m).unwrap();
    }

    #[test]
    fn the_tree_sums_every_descendant_once_and_a_cycle_ends_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        marker(d, "a", None, Some(1.0));
        marker(d, "a.1", Some("a"), Some(0.5));
        marker(d, "a.2", Some("a"), None);
        marker(d, "a.1.1", Some("a.1"), Some(0.25));
        // A cycle (x is y's parent, y is x's) and one onto the root.
        marker(d, "x", Some("y"), Some(2.0));
        marker(d, "y", Some("x"), Some(4.0));
        let t = Tree::below(d, "a");
        assert_eq!(t.children("a"), ["a.1", "a.2"]);
        assert_eq!(t.descendants("a"), ["a.1", "a.2", "a.1.1"]);
        let own = Usage {
            cost_usd: Some(1.0),
            ..Usage::default()
        };
        assert_eq!(t.tree_usage("a", Some(&own)).unwrap().cost_usd, Some(1.75));
        assert_eq!(
            t.tree_usage("a.2", None),
            None,
            "no children: no tree usage"
        );
        let t = Tree::below(d, "x");
        assert_eq!(t.descendants("x"), ["y"]);
        assert_eq!(t.tree_usage("x", None).unwrap().cost_usd, Some(4.0));
        assert_eq!(spent_by_children(d, "a").unwrap().cost_usd, Some(0.75));
        assert_eq!(children_of(d, "a.1"), ["a.1.1"]);
    }

    #[test]
    fn a_corrupt_or_linked_marker_is_left_out_of_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        marker(d, "a", None, None);
        marker(d, "a.1", Some("a"), Some(0.5));
        let corrupt = super::super::layout::marker_path(d, "a.2");
        std::fs::create_dir_all(corrupt.parent().unwrap()).unwrap();
        std::fs::write(&corrupt, b"{\"parent\": \"a\", not json").unwrap();
        // Index entries a marker does not back: the corrupt one, and one
        // whose marker names no parent.
        marker(d, "stranger", None, Some(7.0));
        for c in ["a.2", "a.3", "stranger"] {
            super::super::layout::note_child(d, "a", c).unwrap();
        }
        #[cfg(unix)]
        {
            // A link to a marker elsewhere that names `a` its parent.
            let other = tempfile::tempdir().unwrap();
            marker(other.path(), "a.3", Some("a"), Some(9.0));
            let link = super::super::layout::marker_path(d, "a.3");
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            let target = super::super::layout::marker_path(other.path(), "a.3");
            std::os::unix::fs::symlink(target, &link).unwrap();
            assert_eq!(children_of(d, "a"), ["a.1"]);
        }
        assert_eq!(children_of(d, "a"), ["a.1"]);
        assert_eq!(spent_by_children(d, "a").unwrap().cost_usd, Some(0.5));
    }

    #[test]
    fn a_child_is_indexed_once_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        marker(d, "p", None, None);
        marker(d, "p.1", Some("p"), None);
        marker(d, "p.1", Some("p"), None);
        let listed: Vec<_> =
            std::fs::read_dir(d.join(super::super::layout::CHILDREN_DIR).join("p"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
        assert_eq!(listed, ["p.1"]);
        assert!(super::super::layout::note_child(d, "../p", "p.1").is_err());
        #[cfg(unix)]
        {
            let elsewhere = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(
                elsewhere.path(),
                d.join(super::super::layout::CHILDREN_DIR).join("q"),
            )
            .unwrap();
            assert!(super::super::layout::note_child(d, "q", "q.1").is_err());
            assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
            assert!(super::super::layout::indexed_children(d, "q").is_empty());
        }
    }

    #[test]
    fn what_is_left_of_a_parents_cap_is_its_cap_less_its_childrens_spend() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        marker(d, "free", None, None);
        assert_eq!(budget_left(d, "free"), None, "no cap");
        let store = crate::unit::marker::MarkerStore::new(d);
        let mut m = crate::unit::marker::Marker::new("capped", crate::engine::EngineId::Codex, d);
        m.asked.loops.max_cost_usd = Some(1.0);
        store.save(&mut m).unwrap();
        assert_eq!(budget_left(d, "capped"), Some(1.0));
        marker(d, "capped.1", Some("capped"), Some(0.75));
        assert_eq!(budget_left(d, "capped"), Some(0.25));
        marker(d, "capped.2", Some("capped"), Some(0.75));
        assert_eq!(
            budget_left(d, "capped"),
            Some(0.0),
            "spent past it: nothing left"
        );
    }

    #[test]
    fn a_peeked_child_name_reserves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(peek_child_name(dir.path(), "p").unwrap(), "p.1");
        assert_eq!(peek_child_name(dir.path(), "p").unwrap(), "p.1");
        assert_eq!(next_child_name(dir.path(), "p").unwrap(), "p.1");
        assert_eq!(peek_child_name(dir.path(), "p").unwrap(), "p.2");
    }

    #[test]
    fn the_engine_is_told_its_unit_and_depth() {
        let l = Lineage {
            parent: Some("p".into()),
            depth: 2,
        };
        let env = l.engine_env("p.1");
        assert_eq!(env[0], ("VF_PARENT_UNIT".into(), "p.1".into()));
        assert_eq!(env[1], ("VF_DEPTH".into(), "2".into()));
    }
}
