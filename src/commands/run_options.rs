//! `--model`, `--effort`, `--summary-schema` (dispatch and resume): turned
//! into the engine's [`RunOptions`] and vf's own schema check, every check
//! made before anything is written (exit 2).

use std::path::Path;
use std::sync::Arc;

use crate::cli::ModelArgs;
use crate::engine::{EngineId, RunOptions};
use crate::error::{Result, VfError};
use crate::marker::{Asked, Marker};
use crate::summary::schema::SummarySchema;

/// The options for one run, checked against its engine.
#[derive(Debug, Clone, Default)]
pub struct Chosen {
    pub options: RunOptions,
    pub schema: Option<Arc<SummarySchema>>,
}

/// Reads the flags; `kept` fills what is not given (`vf resume` keeps the
/// model, effort and schema its marker records). A relative schema path is
/// taken from the current directory, as `--prompt-file` is.
pub fn resolve(engine: EngineId, args: &ModelArgs, kept: Option<&Marker>) -> Result<Chosen> {
    let schema_path = args
        .summary_schema
        .as_deref()
        .or(kept.and_then(|m| m.summary_schema.as_deref()));
    let schema = match schema_path {
        Some(p) => Some(Arc::new(load_schema(p)?)),
        None => None,
    };
    let options = RunOptions::new(
        args.model.clone().or(kept.and_then(|m| m.model.clone())),
        args.effort.clone().or(kept.and_then(|m| m.effort.clone())),
        schema.as_deref(),
    )
    .with_agent(args.agent.clone());
    crate::engine::options::check(engine.engine().spec(), &options)?;
    Ok(Chosen { options, schema })
}

/// A schema file, refused (exit 2) when unreadable, not JSON or not a schema.
pub fn load_schema(path: &Path) -> Result<SummarySchema> {
    let abs = crate::state::absolute(path)?;
    SummarySchema::load(&abs).map_err(VfError::usage)
}

/// The MCP servers' file the run applies (`asked.mcp`: given with `--mcp`,
/// or kept from the unit's marker) read (capped, regular, UTF-8), checked
/// and tried for `engine`; the request then records its canonical path. A
/// refusal (exit 2) comes before anything is written; a kept file that is
/// gone or no longer valid names `--clear mcp`.
pub fn mcp(
    asked: &mut Asked,
    given: bool,
    engine: EngineId,
    state_dir: &Path,
    unit: &str,
) -> Result<Option<crate::engine::mcp::McpServers>> {
    let Some(file) = asked.mcp.clone() else {
        return Ok(None);
    };
    let kept = |e: VfError| match given {
        true => e,
        false => VfError::usage(format!(
            "{e} (the MCP servers' file this unit ran with, kept from its marker: give --mcp FILE again, or --clear mcp)"
        )),
    };
    let text = crate::workspace_files::read_text("--mcp", &file).map_err(kept)?;
    let servers = crate::engine::mcp::parse(&text).map_err(kept)?;
    let unit_dir = crate::unit::UnitDir::new(state_dir, unit).path();
    crate::engine::mcp::apply(engine, &servers, &unit_dir).map_err(kept)?;
    let canonical = std::fs::canonicalize(&file)
        .map_err(|e| kept(VfError::usage(format!("--mcp {}: {e}", file.display()))))?;
    asked.mcp = Some(canonical);
    Ok(Some(servers))
}

/// The request a run applies: a unit's recorded one (`kept`, from its
/// marker, on a resume or re-run) with each `--clear PART` dropped, then
/// each part given on the command line in place of the kept one (the read-
/// only and require-enforced switches, each tool list, each path list, each
/// hook, the MCP servers' file).
pub fn request(
    p: &crate::cli::PolicyArgs,
    after: &crate::cli::AfterRunArgs,
    kept: Option<&Asked>,
) -> Asked {
    use crate::cli::ClearPart as C;
    let mut a = kept.cloned().unwrap_or_default();
    let cleared = |part| p.clear.contains(&part) || p.clear.contains(&C::All);
    if cleared(C::ReadOnly) {
        a.read_only = false;
    }
    if cleared(C::RequireEnforced) {
        a.require_enforced = false;
    }
    if cleared(C::Tools) {
        (a.allow_tools, a.deny_tools) = (Vec::new(), Vec::new());
    }
    if cleared(C::Paths) {
        (a.deny_paths, a.allow_paths) = (Vec::new(), Vec::new());
    }
    if cleared(C::Hooks) {
        (a.on_finish, a.on_fail) = (None, None);
    }
    if cleared(C::Mcp) {
        a.mcp = None;
    }
    a.read_only |= p.read_only;
    a.require_enforced |= p.tools.require_enforced;
    let replace = |kept: &mut Vec<String>, given: &[String]| {
        if !given.is_empty() {
            *kept = given.to_vec();
        }
    };
    replace(&mut a.allow_tools, &p.tools.allow_tool);
    replace(&mut a.deny_tools, &p.tools.deny_tool);
    replace(&mut a.deny_paths, &after.deny_path);
    replace(&mut a.allow_paths, &after.allow_path);
    a.on_finish = after.on_finish.clone().or(a.on_finish);
    a.on_fail = after.on_fail.clone().or(a.on_fail);
    a.mcp = p.mcp.clone().or(a.mcp);
    a
}

/// The read-only and tool part of `asked`, checked (exit 2) and, with
/// `--require-enforced` (given or recorded), refused when `engine` at its
/// installed version (read as a dispatch reads it) would leave a part
/// unenforced: all before anything is written.
pub fn policy(
    asked: &Asked,
    skip_permissions: bool,
    engine: EngineId,
    engine_bin: Option<&Path>,
    resume: bool,
) -> Result<crate::engine::policy::ToolPolicy> {
    use crate::engine::policy;
    let p = asked.policy();
    policy::check(&p, skip_permissions)?;
    if p.require_enforced {
        let version = crate::dispatch::installed_version(engine, engine_bin);
        policy::require(
            engine,
            &p,
            &policy::apply(engine, version.as_ref(), resume, &p),
        )?;
    }
    Ok(p)
}
