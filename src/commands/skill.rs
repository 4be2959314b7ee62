//! `vf skill install`: the vf skill for one engine, or every supported
//! format, generated from the clap tree (`skill::render`).

use std::io::Write;

use crate::cli::{SkillArgs, SkillCommand};
use crate::ground::error::Result;
use crate::project::scaffold::{self, Action, Written};
use crate::project::skill::{self, Target};

pub fn run(a: &SkillArgs) -> Result<i32> {
    let SkillCommand::Install(a) = &a.command;
    let targets = match a.engine {
        Some(e) => vec![Target::of(e)?],
        None => Target::ALL.to_vec(),
    };
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let body = skill::render(&crate::cli::full_command())?;
    let items: Vec<_> = targets.iter().map(|t| skill::item(*t, &body)).collect();
    let written = scaffold::apply(&dir, &items, a.force)?;
    report(&written, a.json)?;
    Ok(0)
}

/// What was written, as JSON or one line per file (and one when nothing changed).
pub fn report(written: &[Written], json: bool) -> Result<()> {
    if json {
        return super::print_json(&serde_json::json!({ "files": written }));
    }
    let mut out = super::stdio::out();
    if written.iter().all(|w| w.action == Action::Unchanged) {
        writeln!(out, "nothing to do: every file is as vf wrote it")?;
        return Ok(());
    }
    for w in written {
        let what = match w.action {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Forced => "replaced (--force)",
        };
        writeln!(out, "{what:<18} {}", w.path)?;
    }
    Ok(())
}
