//! `--model`, `--effort`, `--summary-schema` (dispatch and resume): turned
//! into the engine's [`RunOptions`] and vf's own schema check, every check
//! made before anything is written (exit 2).

use std::path::Path;
use std::sync::Arc;

use crate::cli::ModelArgs;
use crate::engine::{EngineId, RunOptions};
use crate::error::{Result, VfError};
use crate::marker::Marker;
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
    );
    crate::engine::options::check(engine.engine().spec(), &options)?;
    Ok(Chosen { options, schema })
}

/// A schema file, refused (exit 2) when unreadable, not JSON or not a schema.
pub fn load_schema(path: &Path) -> Result<SummarySchema> {
    let abs = crate::state::absolute(path)?;
    SummarySchema::load(&abs).map_err(VfError::usage)
}

/// `--mcp FILE` read (capped, regular, UTF-8), checked and tried for
/// `engine`: a refusal (exit 2) comes before anything is written.
pub fn mcp(
    file: Option<&Path>,
    engine: EngineId,
    state_dir: &Path,
    unit: &str,
) -> Result<Option<crate::engine::mcp::McpServers>> {
    let Some(file) = file else { return Ok(None) };
    let servers = crate::engine::mcp::parse(&crate::workspace_files::read_text("--mcp", file)?)?;
    crate::engine::mcp::apply(engine, &servers, state_dir, unit)?;
    Ok(Some(servers))
}

/// `--read-only`, `--allow-tool`, `--deny-tool`, `--require-enforced`,
/// checked (exit 2) and, with `--require-enforced`, refused when `engine`
/// at its installed version (read as a dispatch reads it) would leave a part
/// unenforced: all before anything is written.
pub fn policy(
    read_only: bool,
    tools: &crate::cli::ToolArgs,
    skip_permissions: bool,
    engine: EngineId,
    engine_bin: Option<&Path>,
    resume: bool,
) -> Result<crate::engine::policy::ToolPolicy> {
    use crate::engine::policy;
    let p = policy::ToolPolicy {
        read_only,
        allow_tools: tools.allow_tool.clone(),
        deny_tools: tools.deny_tool.clone(),
        require_enforced: tools.require_enforced,
    };
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
