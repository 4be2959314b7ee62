//! A checked call turned into the argv of the `vf` subprocess that runs it:
//! the server's settings applied (a call may only tighten them), every value
//! that becomes an argument checked and passed as `--flag=value`, so none can
//! be read as an option.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::Settings;
use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};

/// `dispatch`'s arguments (already checked against its schema).
#[derive(Debug, Deserialize)]
pub struct DispatchReq {
    pub engine: String,
    pub prompt: String,
    pub unit: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub worktree: Option<bool>,
    pub read_only: Option<bool>,
    pub sandbox: Option<String>,
    #[serde(default)]
    pub allow_tools: Vec<String>,
    #[serde(default)]
    pub deny_tools: Vec<String>,
    #[serde(default)]
    pub skip_permissions: bool,
    pub summary_schema: Option<Value>,
    pub timeout: Option<f64>,
    pub max_cost: Option<f64>,
    pub wait: Option<bool>,
}

/// `resume`'s arguments.
#[derive(Debug, Deserialize)]
pub struct ResumeReq {
    pub unit: String,
    pub prompt: Option<String>,
    pub timeout: Option<f64>,
    pub max_cost: Option<f64>,
    pub wait: Option<bool>,
}

/// `orchestrate`'s arguments.
#[derive(Debug, Deserialize)]
pub struct OrchestrateReq {
    pub plan: Option<String>,
    pub plan_path: Option<String>,
    pub max_cost: Option<f64>,
    pub wait: Option<bool>,
}

/// A typed request from checked arguments (a mismatch here is the server's
/// own bug, reported as a tool error all the same).
pub fn typed<T: serde::de::DeserializeOwned>(args: &serde_json::Map<String, Value>) -> Result<T> {
    serde_json::from_value(Value::Object(args.clone()))
        .map_err(|e| VfError::usage(format!("invalid arguments: {e}")))
}

fn looser(what: &str, server_flag: &str) -> VfError {
    VfError::usage(format!(
        "{what} is looser than the server's {server_flag}: a call may only tighten the server's settings"
    ))
}

/// The sandbox modes from loosest to tightest.
fn sandbox_rank(m: &str) -> u8 {
    match m {
        "workspace" => 1,
        "read-only" => 2,
        _ => 0,
    }
}

/// A limit asked by a call under the server's: the call's when not higher,
/// the server's when the call gives none.
fn limit(asked: Option<f64>, server: Option<f64>, what: &str, flag: &str) -> Result<Option<f64>> {
    match (asked, server) {
        (Some(a), Some(s)) if a > s => Err(looser(&format!("{what} {a}"), &format!("{flag} {s}"))),
        (Some(a), _) => Ok(Some(a)),
        (None, s) => Ok(s),
    }
}

/// The engine a `dispatch` names, if the server allows it. `auto` is the
/// first allowed engine that is ready (support-matrix order).
pub fn engine_of(name: &str, s: &Settings) -> Result<EngineId> {
    if name == "auto" {
        return EngineId::ALL
            .into_iter()
            .find(|e| s.allows(*e))
            .ok_or_else(|| {
                VfError::not_ready("engine auto: no engine this server allows is ready")
            });
    }
    let id = EngineId::parse(name)
        .filter(|e| EngineId::ALL.contains(e))
        .ok_or_else(|| VfError::usage(format!("unknown engine {name:?}")))?;
    if !s.allows(id) {
        return Err(VfError::usage(format!(
            "engine {name} is not allowed by this server (--allow-engines: {})",
            s.allowed_names()
        )));
    }
    Ok(id)
}

/// The policy flags of a `dispatch` under the server's settings.
fn policy_args(r: &DispatchReq, s: &Settings, out: &mut Vec<String>) -> Result<()> {
    if r.skip_permissions && !s.allow_skip_permissions {
        return Err(VfError::usage(
            "skip_permissions is refused: the server was not started with --allow-skip-permissions",
        ));
    }
    if s.read_only && r.read_only == Some(false) {
        return Err(looser("read_only = false", "--read-only"));
    }
    if s.worktree && r.worktree == Some(false) {
        return Err(looser("worktree = false", "--worktree"));
    }
    let server_sb = s.sandbox.as_deref();
    if let (Some(a), Some(b)) = (r.sandbox.as_deref(), server_sb)
        && sandbox_rank(a) < sandbox_rank(b)
    {
        return Err(looser(&format!("sandbox {a}"), &format!("--sandbox {b}")));
    }
    if r.skip_permissions {
        out.push("--skip-permissions".into());
    }
    if s.read_only || r.read_only == Some(true) {
        out.push("--read-only".into());
    }
    if s.worktree || r.worktree == Some(true) {
        out.push("--worktree".into());
    }
    if let Some(sb) = r.sandbox.as_deref().or(server_sb) {
        out.push(format!("--sandbox={sb}"));
    }
    for t in &r.allow_tools {
        out.push(format!("--allow-tool={}", plain(t, "a tool name")?));
    }
    for t in &r.deny_tools {
        out.push(format!("--deny-tool={}", plain(t, "a tool name")?));
    }
    Ok(())
}

/// A value that goes into an argument: one line, no control characters.
fn plain<'a>(v: &'a str, what: &str) -> Result<&'a str> {
    if v.chars().any(char::is_control) {
        return Err(VfError::usage(format!(
            "{what} may not hold control characters"
        )));
    }
    Ok(v)
}

/// `vf dispatch`'s argv (after the binary) for `r` as unit `unit`; the prompt
/// goes on stdin. `schema_file` is the summary schema's private copy.
pub fn dispatch_argv(
    r: &DispatchReq,
    engine: EngineId,
    unit: Option<&str>,
    schema_file: Option<&Path>,
    s: &Settings,
) -> Result<Vec<String>> {
    let mut a = vec![
        "dispatch".to_string(),
        format!("--engine={}", engine.as_str()),
    ];
    if let Some(u) = unit {
        a.push(format!("--unit={u}"));
    }
    a.push(format!("--cwd={}", s.cwd.display()));
    policy_args(r, s, &mut a)?;
    if let Some(m) = &r.model {
        a.push(format!("--model={}", plain(m, "model")?));
    }
    if let Some(e) = &r.effort {
        a.push(format!("--effort={}", plain(e, "effort")?));
    }
    if let Some(f) = schema_file {
        a.push(format!("--summary-schema={}", f.display()));
    }
    push_limits(&mut a, r.timeout, r.max_cost, s)?;
    Ok(a)
}

fn push_limits(
    a: &mut Vec<String>,
    timeout: Option<f64>,
    cost: Option<f64>,
    s: &Settings,
) -> Result<()> {
    let server_t = s.timeout.map(|t| t as f64);
    if let Some(t) = limit(timeout, server_t, "timeout", "--timeout")? {
        a.push(format!("--timeout={t}"));
    }
    if let Some(c) = limit(cost, s.max_cost, "max_cost", "--max-cost")? {
        a.push(format!("--max-cost={c}"));
    }
    Ok(())
}

/// `vf resume`'s argv; the prompt (if any) is a private file.
pub fn resume_argv(r: &ResumeReq, prompt_file: Option<&Path>, s: &Settings) -> Result<Vec<String>> {
    let mut a = vec!["resume".to_string()];
    if let Some(p) = prompt_file {
        a.push(format!("--prompt-file={}", p.display()));
    }
    if s.read_only {
        a.push("--read-only".into());
    }
    if let Some(sb) = &s.sandbox {
        a.push(format!("--sandbox={sb}"));
    }
    push_limits(&mut a, r.timeout, r.max_cost, s)?;
    // The unit last, after `--`: a name is never an option.
    a.push("--".into());
    a.push(r.unit.clone());
    Ok(a)
}

/// The plan file an `orchestrate` call names: inside the server's `--cwd`
/// (after resolving links), a regular file.
pub fn plan_inside(path: &str, s: &Settings) -> Result<PathBuf> {
    let p = Path::new(path);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        s.cwd.join(p)
    };
    let real = p
        .canonicalize()
        .map_err(|e| VfError::usage(format!("plan_path {path:?}: {e}")))?;
    if !real.starts_with(&s.cwd) || !real.is_file() {
        return Err(VfError::usage(format!(
            "plan_path {path:?} is not a file inside the server's workspace {}",
            s.cwd.display()
        )));
    }
    Ok(real)
}

/// A plan's engines checked against the server's allow-list, and the
/// settings a plan cannot yet be held to refused (docs/MCP.md, "orchestrate").
pub fn check_plan(text: &str, s: &Settings) -> Result<()> {
    if s.read_only || s.worktree || s.sandbox.is_some() {
        return Err(VfError::usage(
            "orchestrate is refused: this server's --read-only, --worktree or --sandbox cannot be applied to a plan",
        ));
    }
    let plan: toml::Table = toml::from_str(text).map_err(|e| {
        VfError::usage(format!(
            "plan: {}",
            crate::ground::text::cut(&e.to_string(), 300)
        ))
    })?;
    let units = plan
        .get("unit")
        .and_then(|u| u.as_array())
        .cloned()
        .unwrap_or_default();
    let defaults = plan.get("defaults").cloned().into_iter();
    for u in units.iter().chain(defaults.collect::<Vec<_>>().iter()) {
        if u.get("skip_permissions").and_then(|v| v.as_bool()) == Some(true)
            && !s.allow_skip_permissions
        {
            return Err(VfError::usage(
                "skip_permissions is refused: the server was not started with --allow-skip-permissions",
            ));
        }
        let mut named: Vec<&str> = Vec::new();
        for k in ["engine", "resolver"] {
            named.extend(u.get(k).and_then(|v| v.as_str()));
        }
        named.extend(
            u.get("review")
                .and_then(|r| r.get("engine"))
                .and_then(|v| v.as_str()),
        );
        if let Some(f) = u.get("fallback").and_then(|v| v.as_array()) {
            named.extend(f.iter().filter_map(|v| v.as_str()));
        }
        for n in named {
            engine_of(n, s)?;
        }
    }
    Ok(())
}

/// `vf orchestrate`'s argv for the plan file.
pub fn orchestrate_argv(plan: &Path, r: &OrchestrateReq, s: &Settings) -> Result<Vec<String>> {
    let mut a = vec!["orchestrate".to_string(), "--output=jsonl".to_string()];
    if let Some(c) = limit(r.max_cost, s.max_cost, "max_cost", "--max-cost")? {
        a.push(format!("--max-cost={c}"));
    }
    a.push("--".into());
    a.push(plan.display().to_string());
    Ok(a)
}
