//! The run option flags of `vf dispatch` and `vf resume`, handed down as
//! plain values to the one resolution of a unit's options
//! ([`crate::dispatch::resolve`]); and `--mcp`'s file, read and checked for
//! the engine (exit 2, before anything is written).

use std::path::Path;

use crate::cli::{AfterRunArgs, ClearPart, LoopArgs, ModelArgs, PolicyArgs, StepArgs};
use crate::dispatch::resolve::loops::LoopFlags;
use crate::dispatch::resolve::{AskFlags, Clear, ModelFlags, StepFlags};
use crate::engine::EngineId;
use crate::engine::sandbox_policy::SandboxMode;
use crate::ground::error::{Result, VfError};
use crate::unit::marker::Asked;

/// `--model`, `--effort`, `--summary-schema`, `--agent`.
pub fn model_flags(a: &ModelArgs) -> ModelFlags {
    ModelFlags {
        model: a.model.clone(),
        effort: a.effort.clone(),
        summary_schema: a.summary_schema.clone(),
        agent: a.agent.clone(),
    }
}

/// The policy, path guard, hook and MCP flags, and the parts `--clear` drops.
pub fn ask_flags(p: &PolicyArgs, after: &AfterRunArgs) -> AskFlags {
    let cleared = |part| p.clear.contains(&part) || p.clear.contains(&ClearPart::All);
    AskFlags {
        clear: Clear {
            read_only: cleared(ClearPart::ReadOnly),
            require_enforced: cleared(ClearPart::RequireEnforced),
            tools: cleared(ClearPart::Tools),
            paths: cleared(ClearPart::Paths),
            hooks: cleared(ClearPart::Hooks),
            mcp: cleared(ClearPart::Mcp),
            loops: cleared(ClearPart::Loops),
            sandbox: cleared(ClearPart::Sandbox),
        },
        read_only: p.read_only,
        require_enforced: p.tools.require_enforced,
        allow_tools: p.tools.allow_tool.clone(),
        deny_tools: p.tools.deny_tool.clone(),
        deny_paths: after.deny_path.clone(),
        allow_paths: after.allow_path.clone(),
        on_finish: after.on_finish.clone(),
        on_fail: after.on_fail.clone(),
        mcp: p.mcp.clone(),
        sandbox: sandbox_mode(&p.sandbox),
        deny_read: p.sandbox.deny_read.clone(),
        writable: p.sandbox.writable.clone(),
    }
}

/// `--sandbox MODE` (clap has checked the name).
pub fn sandbox_mode(a: &crate::cli::SandboxArgs) -> Option<SandboxMode> {
    a.sandbox
        .as_deref()
        .and_then(|m| SandboxMode::parse(m, "--sandbox").ok())
}

/// `--fix-rounds`, the `--review-*` flags, `--max-tokens` and `--max-cost`
/// (the rounds' budget as well as the engine's own cap).
pub fn loop_flags(a: &LoopArgs, max_cost: Option<f64>) -> LoopFlags {
    LoopFlags {
        fix_rounds: a.fix_rounds,
        review_engine: a.review_engine,
        review_rounds: a.review_rounds,
        review_model: a.review_model.clone(),
        review_prompt: a.review_prompt.clone(),
        max_cost,
        max_tokens: a.max_tokens,
    }
}

/// `--worktree`, `--base`, `--no-commit`, `--setup`, `--verify`.
pub fn step_flags(a: &StepArgs) -> StepFlags {
    StepFlags {
        worktree: a.worktree,
        base: a.base.clone(),
        no_commit: a.no_commit,
        setup: a.setup.clone(),
        verify: a.verify.clone(),
    }
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
    let text = crate::project::agy_files::read_text("--mcp", &file).map_err(kept)?;
    let servers = crate::engine::mcp::parse(&text).map_err(kept)?;
    let unit_dir = crate::unit::UnitDir::new(state_dir, unit).path();
    crate::engine::mcp::apply(engine, &servers, &unit_dir).map_err(kept)?;
    let canonical = std::fs::canonicalize(&file)
        .map_err(|e| kept(VfError::usage(format!("--mcp {}: {e}", file.display()))))?;
    asked.mcp = Some(canonical);
    Ok(Some(servers))
}

/// The governor's say for a single-unit command of `engine`: `--pause-at`,
/// `--stagger` and `--account` over the user config's `[defaults]` and its
/// `[[accounts]]` (docs/CONFIG.md); the account itself is chosen at the start
/// ([`choose_account`]). A bad flag is exit 2.
pub fn quota_ask(
    g: &crate::cli::GovernArgs,
    engine: EngineId,
    cfg: &crate::plan::config::Config,
    o: &mut super::config::Origins,
) -> Result<crate::quota::Ask> {
    use crate::plan::accounts_keys as keys;
    let bad = |flag: &str, m: String| VfError::usage(format!("{flag}: {m}"));
    if let Some(v) = g.limits.pause_at {
        keys::check_pause_at(v).map_err(|m| bad("--pause-at", m))?;
    }
    if let Some(v) = g.limits.stagger {
        keys::check_stagger(v).map_err(|m| bad("--stagger", m))?;
    }
    if let Some(a) = &g.account {
        keys::check_account(a, Some(engine), &cfg.accounts).map_err(|m| bad("--account", m))?;
        o.insert("account", crate::plan::config::Origin::Flag);
    }
    let pause_at = super::config::or_config(g.limits.pause_at, "pause_at", cfg, o);
    let stagger = super::config::or_config(g.limits.stagger, "stagger", cfg, o);
    let rotate = super::config::or_config(None::<bool>, "rotate", cfg, o);
    Ok(crate::quota::Ask {
        account: None,
        limits: keys::limits(pause_at, stagger),
        accounts: cfg.accounts.clone(),
        rule: crate::quota::Rule {
            pinned: g.account.clone(),
            no_rotate: rotate == Some(false),
        },
        admitted: Default::default(),
    })
}

/// The account a run of `engine` starts on, before anything is written: the
/// first open one (`prefer`, the account its session belongs to, first).
/// Every candidate held: [`VfError::Held`] (exit 75) naming the hold that
/// ends first.
pub fn choose_account(
    ask: &mut crate::quota::Ask,
    engine: EngineId,
    prefer: Option<&str>,
) -> Result<()> {
    let (chosen, warnings) = crate::quota::choose(ask, engine, prefer);
    for w in warnings {
        super::stdio::eprint_line(format_args!("vf: warning: {w}"));
    }
    ask.account = chosen.map_err(VfError::Held)?;
    Ok(())
}
