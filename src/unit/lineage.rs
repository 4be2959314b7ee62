//! Who started a unit (docs/MCP.md, "Depth"): its parent unit and its depth.
//!
//! vf tells every engine it runs which unit it is and how deep
//! (`VF_PARENT_UNIT`, `VF_DEPTH`); a vf started by that engine (`vf mcp`,
//! or `vf dispatch` from its shell) reads them back with [`Lineage::of_caller`]:
//! its units are that unit's children, one level deeper. A unit vf starts
//! directly is depth 1 and has no parent.

use std::path::Path;

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
    std::fs::create_dir_all(&units).map_err(|e| VfError::state(format!("{}: {e}", units.display())))?;
    for n in 1..100_000u32 {
        let name = format!("{parent}.{n}");
        crate::ground::names::check("child unit name", &name)?;
        match std::fs::create_dir(super::layout::unit_dir(state_dir, &name)) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(VfError::state(format!("{}: {e}", units.display()))),
        }
    }
    Err(VfError::usage(format!("unit {parent:?} has too many children")))
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
