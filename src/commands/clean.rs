//! `vf clean [UNIT…] [--done] [--all] [--branches] [--force]`: remove units'
//! worktrees (see `crate::unit::clean`).

use std::io::Write;

use crate::cli::CleanArgs;
use crate::ground::error::{Result, VfError, exit};
use crate::unit::clean::{CleanRequest, clean};

pub fn run(args: &CleanArgs) -> Result<i32> {
    if args.units.is_empty() && !args.done && !args.all {
        return Err(VfError::usage(
            "name the units to clean, or pass --done or --all",
        ));
    }
    let cwd = std::env::current_dir()?;
    let req = CleanRequest {
        state_dir: super::config::state_dir(args.state.state_dir.as_deref(), &cwd)?,
        units: args.units.clone(),
        done_only: args.done,
        branches: args.branches,
        force: args.force,
        cwd: cwd.clone(),
    };
    let cleaned = clean(&req)?;
    if args.json {
        super::print_json(&cleaned)?;
        return Ok(exit::OK);
    }
    let mut out = super::stdio::out();
    for c in &cleaned {
        let mut what = Vec::new();
        if let Some(p) = &c.worktree {
            what.push(format!("removed {}", p.display()));
        }
        if let Some(b) = &c.branch {
            what.push(format!("deleted branch {b}"));
        }
        if what.is_empty() {
            what.push("no worktree".to_string());
        }
        writeln!(out, "{}: {}", c.unit, what.join(", "))?;
    }
    Ok(exit::OK)
}
