//! `vf workspace init --engine agy`: agy's workspace files
//! (`workspace_files`), every input read and checked before anything is written.

use crate::cli::{WorkspaceArgs, WorkspaceCommand, WorkspaceInitArgs};
use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::ground::names;
use crate::project::agy_files::{self as files, Request};
use crate::project::scaffold;

pub fn run(a: &WorkspaceArgs) -> Result<i32> {
    let WorkspaceCommand::Init(a) = &a.command;
    let req = resolve(a)?;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let written = scaffold::apply(&dir, &files::items(&req), a.force)?;
    super::skill::report(&written, a.json)?;
    Ok(0)
}

fn resolve(a: &WorkspaceInitArgs) -> Result<Request> {
    if a.engine != EngineId::Agy {
        return Err(VfError::usage(format!(
            "vf workspace init: {} has no workspace files vf writes (only agy)",
            a.engine.as_str()
        )));
    }
    let agent = match (&a.agent, &a.instructions) {
        (Some(name), Some(file)) => {
            names::check("agent name", name)?;
            Some((name.clone(), files::read_text("--instructions", file)?))
        }
        _ => None,
    };
    let mut skills = Vec::new();
    for dir in &a.skills {
        let skill = files::read_skill(dir)?;
        if skills.iter().any(|(n, _): &(String, _)| *n == skill.0) {
            return Err(VfError::usage(format!(
                "--skill: two skills named {:?}",
                skill.0
            )));
        }
        skills.push(skill);
    }
    let mcp = match &a.mcp {
        Some(f) => Some(files::parse_mcp(&files::read_text("--mcp", f)?)?),
        None => None,
    };
    for t in &a.deny_tools {
        names::check("tool name", t)?;
    }
    Ok(Request {
        agent,
        skills,
        mcp,
        hooks: a.hooks.then(|| a.deny_tools.clone()),
    })
}
