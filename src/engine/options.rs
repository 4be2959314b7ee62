//! The user's per-run choices that an engine maps to its own verified flags:
//! `--model`, `--effort`, and the native flag for the summary schema. An
//! engine whose verified help has no such flag refuses the choice (exit 2)
//! instead of dropping it: a run on another model than asked is not the run
//! the user wanted.

use std::path::PathBuf;

use serde::Serialize;

use super::{Spec, engine_list};
use crate::ground::error::{Result, VfError};
use crate::ground::text::shown;

/// The longest model name vf passes on (real ones are well under 100 bytes).
pub const MAX_MODEL_BYTES: usize = 200;
/// The largest schema passed inline in argv (Linux caps one argv string at
/// 128 KiB); a larger one is checked by vf alone, with a warning.
pub const MAX_INLINE_SCHEMA_BYTES: usize = 64 * 1024;

/// What the user chose for one run (nothing by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The summary schema, for engines with a native schema flag.
    pub schema: Option<SchemaArg>,
    /// `--agent NAME` (plan `agent`): agy only, a safe identifier whose
    /// `.agents/agents/NAME/agent.md` the run's directory must have.
    pub agent: Option<String>,
}

impl RunOptions {
    pub const NONE: RunOptions = RunOptions {
        model: None,
        effort: None,
        schema: None,
        agent: None,
    };

    pub fn new(
        model: Option<String>,
        effort: Option<String>,
        schema: Option<&crate::engine::summary::schema::SummarySchema>,
    ) -> RunOptions {
        RunOptions {
            model,
            effort,
            schema: schema.map(|s| SchemaArg {
                path: s.path().to_path_buf(),
                json: s.compact_json(),
            }),
            agent: None,
        }
    }

    /// With `--agent NAME` (checked by [`check`]).
    pub fn with_agent(self, agent: Option<String>) -> RunOptions {
        RunOptions { agent, ..self }
    }
}

/// A summary schema as the native flags take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaArg {
    /// The schema file, absolute (codex `--output-schema FILE`).
    pub path: PathBuf,
    /// The schema as compact JSON (claude `--json-schema <schema>`).
    pub json: String,
}

/// How an engine's native schema flag takes the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SchemaFlag {
    /// The schema's JSON text as the flag's value.
    Inline(&'static str),
    /// A path to the schema file as the flag's value.
    File(&'static str),
}

/// How an engine takes the effort level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EffortFlag {
    /// `<flag> <level>`.
    Flag(&'static str),
    /// A config override, `<flag> <key>=<level>` (codex `--config
    /// model_reasoning_effort=high`: a bare word is taken as a string).
    Config {
        flag: &'static str,
        key: &'static str,
    },
}

impl EffortFlag {
    /// The flag word the CLI's help lists.
    pub fn flag(self) -> &'static str {
        match self {
            EffortFlag::Flag(f) | EffortFlag::Config { flag: f, .. } => f,
        }
    }
}

/// An engine's verified flags for the options (`None`: it has none).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OptionFlags {
    pub model: Option<&'static str>,
    /// The model must be `provider/model` (the engine's help says so).
    pub model_needs_provider: bool,
    pub effort: Option<EffortFlag>,
    /// The levels the engine's help (codex: its config docs) lists.
    pub effort_levels: &'static [&'static str],
    pub schema: Option<SchemaFlag>,
}

impl OptionFlags {
    pub const NONE: OptionFlags = OptionFlags {
        model: None,
        model_needs_provider: false,
        effort: None,
        effort_levels: &[],
        schema: None,
    };
}

/// Refuses an option the engine cannot honour, or a value it would misread.
pub fn check(spec: &Spec, opts: &RunOptions) -> Result<()> {
    let flags = &spec.options;
    if let Some(model) = &opts.model {
        if flags.model.is_none() {
            return Err(unsupported(spec, "--model", |f| f.model.is_some()));
        }
        check_model(spec, model)?;
    }
    if let Some(level) = &opts.effort {
        if flags.effort.is_none() {
            return Err(unsupported(spec, "--effort", |f| f.effort.is_some()));
        }
        if !flags.effort_levels.contains(&level.as_str()) {
            return Err(VfError::usage(format!(
                "{}: --effort {} is not one of the levels it takes: {}",
                spec.id,
                shown(level, 40),
                flags.effort_levels.join(", ")
            )));
        }
    }
    if let Some(agent) = &opts.agent {
        if spec.id != super::EngineId::Agy {
            return Err(VfError::usage(format!(
                "{}: --agent is agy's only (it passes agy's `--agent NAME`)",
                spec.id
            )));
        }
        crate::ground::names::check("agent name", agent)?;
    }
    Ok(())
}

/// `NAME: no verified FLAG flag (engines that take it: ...)`.
fn unsupported(spec: &Spec, what: &str, has: impl Fn(&OptionFlags) -> bool) -> VfError {
    let taking: Vec<_> = super::EngineId::ALL
        .into_iter()
        .filter(|e| has(&e.engine().spec().options))
        .collect();
    VfError::usage(format!(
        "{}: its verified help has no {what} flag (engines that take it: {})",
        spec.id,
        engine_list(&taking)
    ))
}

/// A model name is one argv word the engine reads as a value, never a flag.
fn check_model(spec: &Spec, model: &str) -> Result<()> {
    let bad = model.is_empty()
        || model.len() > MAX_MODEL_BYTES
        || model.starts_with('-')
        || model.chars().any(|c| c.is_whitespace() || c.is_control());
    if bad {
        return Err(VfError::usage(format!(
            "{}: --model {} is not a model name (1-{MAX_MODEL_BYTES} bytes, no spaces, not starting with '-')",
            spec.id,
            shown(model, 80)
        )));
    }
    let parts: Vec<&str> = model.splitn(2, '/').collect();
    if spec.options.model_needs_provider && (parts.len() != 2 || parts.iter().any(|p| p.is_empty()))
    {
        return Err(VfError::usage(format!(
            "{}: --model takes provider/model (e.g. anthropic/claude-sonnet-4-5), not {}",
            spec.id,
            shown(model, 80)
        )));
    }
    Ok(())
}

/// What the user should know about the options' argv (a schema too large
/// for the native inline flag).
pub fn warnings(spec: &Spec, opts: &RunOptions) -> Vec<String> {
    match (spec.options.schema, &opts.schema) {
        (Some(SchemaFlag::Inline(flag)), Some(s)) if s.json.len() > MAX_INLINE_SCHEMA_BYTES => {
            vec![format!(
                "{}: the summary schema is {} bytes, over the {MAX_INLINE_SCHEMA_BYTES} vf passes inline: {flag} was left out (vf still checks the summary)",
                spec.id,
                s.json.len()
            )]
        }
        _ => Vec::new(),
    }
}

/// `[--model M] [--effort L] [schema flag V]`, in that order, for an already
/// checked request: each engine puts them where its CLI reads options.
pub fn args(spec: &Spec, opts: &RunOptions) -> Vec<String> {
    let flags = &spec.options;
    let mut args = Vec::new();
    if let (Some(flag), Some(model)) = (flags.model, &opts.model) {
        args.extend([flag.to_string(), model.clone()]);
    }
    match (flags.effort, &opts.effort) {
        (Some(EffortFlag::Flag(flag)), Some(level)) => args.extend([flag.into(), level.clone()]),
        (Some(EffortFlag::Config { flag, key }), Some(level)) => {
            args.extend([flag.into(), format!("{key}={level}")])
        }
        _ => {}
    }
    match (flags.schema, &opts.schema) {
        (Some(SchemaFlag::Inline(_)), Some(s)) if s.json.len() > MAX_INLINE_SCHEMA_BYTES => {}
        (Some(SchemaFlag::Inline(flag)), Some(s)) => args.extend([flag.into(), s.json.clone()]),
        (Some(SchemaFlag::File(flag)), Some(s)) => {
            args.extend([flag.into(), s.path.display().to_string()])
        }
        _ => {}
    }
    args
}
