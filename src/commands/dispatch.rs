//! `vf dispatch`: run one unit of work on an engine.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::output::StdoutSink;
use super::run_options;
use super::stdio::eprint_line;
use crate::cli::{DispatchArgs, OutputFormat};
use crate::dispatch::UnitSpec;
use crate::dispatch::attach;
use crate::dispatch::notify::Hooks;
use crate::dispatch::private::{self, PrivateRanges, RangeSpec};
use crate::dispatch::resolve::{self, Resolved};
use crate::engine::choice::{EngineChoice, check_session_choice};
use crate::engine::launch_plan::Launches;
use crate::engine::{AttachmentKind, EngineCommand, EngineId, Invocation, Request};
use crate::ground::error::{Result, VfError};
use crate::ground::{names, state};
use crate::unit::LockedUnit;
use crate::workspace::WorkspaceSpec;

/// A `vf dispatch` resolved and checked: the unit's options, resolved once
/// ([`Resolved`]), and what only this command needs of its flags.
pub struct Dispatch {
    pub run: Resolved,
    pub prompt: String,
    pub session: Option<String>,
    /// `--attach`: the engine chosen for them and what was selected (the
    /// attachments themselves are the run's).
    pub attach_plan: attach::Selection,
    /// `--private-range`: appended to the prompt by `build_invocation`.
    pub private_ranges: PrivateRanges,
    /// `--stall-timeout` and `--timeout`, else the user config's (checked
    /// when the run's spec is made).
    pub timeouts: (Option<f64>, Option<f64>),
    /// Where each setting the user config can set came from.
    pub origins: super::config::Origins,
}

/// `--private-range` values, parsed here so that `cli.rs` stays clap-only. A
/// bad one is reported as clap reports any bad flag value, word for word.
pub fn parse_private_ranges(raw: &[String]) -> std::result::Result<Vec<RangeSpec>, clap::Error> {
    use clap::builder::TypedValueParser;
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    // The built definition gives the error its flag name, styles and help hint.
    let mut cli = crate::cli::full_command();
    cli.build();
    let cmd = cli.find_subcommand("dispatch").unwrap_or(&cli);
    let arg = cmd.get_arguments().find(|a| a.get_id() == "private_range");
    let parser = |s: &str| s.parse::<RangeSpec>();
    raw.iter()
        .map(|s| parser.parse_ref(cmd, arg, std::ffi::OsStr::new(s)))
        .collect()
}

/// `--cwd DIR` made absolute (default: the current directory); it must be a directory.
pub fn resolve_cwd(cwd: Option<&std::path::Path>) -> Result<PathBuf> {
    let cwd = match cwd {
        Some(d) => state::absolute(d)?,
        None => std::env::current_dir()?,
    };
    if !cwd.is_dir() {
        return Err(VfError::usage(format!(
            "--cwd {} is not a directory",
            cwd.display()
        )));
    }
    Ok(cwd)
}

pub fn resolve(args: &DispatchArgs, ranges: &[RangeSpec]) -> Result<Dispatch> {
    use super::config as user;
    // Before anything is written: a hostile value is exit 2.
    let lineage = crate::unit::lineage::Lineage::of_env()?;
    let cwd = resolve_cwd(args.cwd.as_deref())?;
    let cfg = crate::plan::config::load()?;
    let mut origins = user::Origins::new();
    let (choice, origin) = user::engine_choice(args.engine, &cfg)?;
    origins.insert("engine", origin);
    check_session_choice(choice, args.session.as_deref())?;
    let (state_dir, origin) = user::state_dir_of(args.run.state.state_dir.as_deref(), &cwd, &cfg)?;
    origins.insert("state_dir", origin);
    // `auto` asks the doctor which engines are ready before a real run; a dry
    // run spawns nothing and falls back to the support-matrix order.
    let ready = (choice == EngineChoice::Auto && !args.dry_run).then(|| {
        crate::readiness::doctor::cache::LazyReadiness::new(
            crate::readiness::doctor::Options::default(),
        )
    });
    let is_ready = |e| ready.as_ref().map(|r| r.get(e));
    let mut attach_plan = attach::select(choice, &args.attach, &state_dir, &cwd, &is_ready)?;
    if args.engine.is_none() && choice != EngineChoice::Auto {
        attach_plan.pick.reason = format!("chosen by `engine` in {}", cfg.path.display());
    }
    let engine_id = attach_plan.pick.engine;
    // A child of an engine's unit is `<parent>.<n>`: the next free name
    // now, reserved once every check has passed (`reserve_child_name`).
    let unit = match (&args.unit, &lineage.parent) {
        (Some(u), _) => u.clone(),
        (None, Some(parent)) => crate::unit::lineage::peek_child_name(&state_dir, parent)?,
        (None, None) => default_unit_name(engine_id.as_str()),
    };
    names::check("unit name", &unit)?;
    let command = command_of(args, (choice, engine_id), &unit, &state_dir, &cfg)?;
    let prompt = super::prompt::read(&args.prompt)?;
    let model = user::model_args(&args.run.model, engine_id, &cfg, &mut origins);
    let chosen = resolve::options(engine_id, &run_options::model_flags(&model), None)?;
    if let Some(agent) = &chosen.options.agent {
        crate::engine::agy::require_agent(&cwd, agent)?;
    }
    // A re-run of an existing unit keeps what it asked for, unless given
    // again; a first run starts from the user config's.
    let kept = crate::unit::marker::MarkerStore::new(&state_dir).load(&unit)?;
    // A re-run prefers the account its session belongs to.
    let session_account = kept.as_ref().and_then(|m| m.account.clone());
    let kept = kept.as_ref().map(|m| &m.asked);
    user::asked_origins((&args.policy, &args.after), kept, &cfg, &mut origins);
    let from_config = user::asked_of(&cfg);
    let flags = run_options::ask_flags(&args.policy, &args.after);
    let mut asked = resolve::asked(&flags, kept.or(Some(&from_config)));
    user::loop_origins(&args.loops, kept, &cfg, &mut origins);
    let loop_flags = run_options::loop_flags(&args.loops, args.max_cost);
    resolve::loops::over(&loop_flags, &mut asked.loops)?;
    resolve::loops::checked(&asked.loops, asked.require_enforced)?;
    let (loops, warnings) = resolve::loops::resolve(&asked.loops, engine_id);
    let timeouts = (
        user::or_config(args.run.stall_timeout, "stall_timeout", &cfg, &mut origins),
        user::or_config(args.run.timeout, "timeout", &cfg, &mut origins),
    );
    let (policy, sandbox) = resolve::policy(
        &asked,
        args.skip_permissions,
        (engine_id, args.run.engine_bin.as_deref()),
        args.session.is_some(),
        &cwd,
    )?;
    let mut quota = run_options::quota_ask(&args.govern, engine_id, &cfg, &mut origins)?;
    // Before anything is written; a dry run starts nothing and asks no ledger.
    if !args.dry_run {
        run_options::choose_account(&mut quota, engine_id, session_account.as_deref())?;
    }
    let given = args.policy.mcp.is_some();
    let mcp = run_options::mcp(&mut asked, given, engine_id, &state_dir, &unit)?;
    let private_ranges = private::stage_private_ranges(ranges, &state_dir, &cwd)?;
    let run = Resolved {
        skip_permissions: args.skip_permissions,
        engine_bin: args.run.engine_bin.clone(),
        attachments: std::mem::take(&mut attach_plan.attachments),
        engine_reason: Some(attach_plan.pick.reason.clone()),
        // The exact block delivered, so that an engine's echo of it is redacted.
        redact: Some(private_ranges.wire())
            .filter(|w| !w.is_empty())
            .into_iter()
            .collect(),
        policy,
        sandbox,
        asked,
        mcp,
        keep_answer: true,
        command,
        lineage,
        loops,
        warnings,
        quota,
        ..Resolved::new(engine_id, unit, cwd, state_dir).with_chosen(chosen)
    };
    Ok(Dispatch {
        run,
        prompt,
        session: args.session.clone(),
        attach_plan,
        private_ranges,
        timeouts,
        origins,
    })
}

/// The command a command engine runs: its flag (`--bridge`), else its
/// variable (`VIBEFLOW_AI`), else (a re-run) the one the unit's marker
/// records; checked. Refused for any other engine.
fn command_of(
    args: &DispatchArgs,
    (choice, engine): (EngineChoice, EngineId),
    unit: &str,
    state_dir: &std::path::Path,
    cfg: &crate::plan::config::Config,
) -> Result<Option<EngineCommand>> {
    let given = match engine {
        EngineId::Bridge => args.bridge.clone(),
        EngineId::Acp => args.acp.clone(),
        _ => None,
    };
    // The config's command (its `bridge`, `acp`), below the variable.
    let configured = || cfg.get::<String>(engine.as_str());
    if engine != EngineId::Bridge && (args.bridge.is_some() || args.bridge_output.is_some()) {
        return Err(VfError::usage(format!(
            "--bridge and --bridge-output go with --engine bridge, not {engine}"
        )));
    }
    if engine != EngineId::Acp && args.acp.is_some() {
        return Err(VfError::usage(format!(
            "--acp goes with --engine acp, not {engine}"
        )));
    }
    let Some(src) = engine.engine().spec().command else {
        return Ok(None);
    };
    if args.run.engine_bin.is_some() {
        return Err(VfError::usage(format!(
            "--engine-bin does not apply to {engine}: it runs its command ({})",
            src.flag
        )));
    }
    let from_config = format!("`{}` in {}", src.plan_key, cfg.path.display());
    let (line, what) = match (given, choice.preset(), src.from_env(), configured()) {
        (Some(line), _, _, _) => (line, src.flag),
        (None, Some(preset), _, _) => return preset.command().map(Some),
        (None, None, Some(line), _) => (line, src.env),
        (None, None, None, Some(line)) => (line, from_config.as_str()),
        (None, None, None, None) => return recorded_command(engine, unit, state_dir).map(Some),
    };
    let output = args.bridge_output.or_else(|| cfg.get("bridge_output"));
    EngineCommand::new(line, output, what).map(Some)
}

/// A re-run of a unit of `engine` without its command given: the one its
/// marker records (read again under the unit's lock by the run itself).
fn recorded_command(
    engine: EngineId,
    unit: &str,
    state_dir: &std::path::Path,
) -> Result<EngineCommand> {
    let marker = crate::unit::marker::MarkerStore::new(state_dir).load(unit)?;
    match marker
        .filter(|m| m.engine == engine)
        .and_then(|m| m.command)
    {
        Some(c) => Ok(c),
        None => {
            let src = engine.engine().spec().command;
            let (flag, env) = src.map_or(("", ""), |s| (s.flag, s.env));
            Err(VfError::usage(format!(
                "{engine}: no command to run: give {flag} \"CMD\" or set {env}"
            )))
        }
    }
}

/// `<engine>-<unix seconds>-<pid>`: unique enough for ad-hoc runs.
fn default_unit_name(engine: &str) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{engine}-{secs}-{}", std::process::id())
}

/// The invocation, run in `worktree` (not yet made) instead of `r.cwd` when given.
pub fn build_invocation(
    d: &Dispatch,
    version: Option<&crate::ground::version::Version>,
    worktree: Option<&std::path::Path>,
) -> Result<Invocation> {
    let (r, prompt) = (
        &d.run,
        private::apply_private_ranges(&d.prompt, &d.private_ranges),
    );
    r.engine.engine().build(&Request {
        prompt: &prompt,
        session: d.session.as_deref(),
        skip_permissions: r.skip_permissions,
        cwd: worktree.unwrap_or(&r.cwd),
        in_git_repo: worktree.is_some() || state::in_git_work_tree(&r.cwd),
        attachments: &r.attachments,
        unit: &r.unit,
        state_dir: &r.state_dir,
        unit_dir: &crate::unit::UnitDir::new(&r.state_dir, &r.unit).path(),
        version,
        policy: &r.policy,
        mcp: r.mcp.as_ref(),
        options: &r.options,
        command: r.command.as_ref(),
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DryRun<'a> {
    engine: &'static str,
    engine_reason: &'a str,
    unit: &'a str,
    attachments: Vec<DryRunAttachment<'a>>,
    /// Ranges without their text (the invocation shows a placeholder).
    private_ranges: Vec<private::RangeSummary>,
    #[serde(flatten)]
    invocation: &'a Invocation,
    /// A command engine's launch on each platform.
    #[serde(skip_serializing_if = "Option::is_none")]
    launch: Option<Launches>,
    /// The post-hoc path guards (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    path_guards: Option<DryRunGuards<'a>>,
    /// The notification hooks (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    hooks: Option<DryRunHooks<'a>>,
    /// Where each setting the user config can set came from (docs/CONFIG.md).
    origins: &'a super::config::Origins,
}

#[derive(Serialize)]
struct DryRunGuards<'a> {
    deny: &'a [String],
    allow: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DryRunHooks<'a> {
    on_finish: Option<&'a str>,
    on_fail: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DryRunAttachment<'a> {
    name: &'a str,
    kind: AttachmentKind,
    /// As passed to the engine.
    path: &'a std::path::Path,
}

fn dry_run_attachments(d: &Dispatch) -> Vec<DryRunAttachment<'_>> {
    d.attach_plan
        .selected
        .iter()
        .zip(&d.run.attachments)
        .map(|(e, a)| DryRunAttachment {
            name: &e.name,
            kind: e.kind,
            path: &a.path,
        })
        .collect()
}

pub fn run(args: &DispatchArgs) -> Result<i32> {
    let ran = run_checked(args);
    if let Err(VfError::Held(h)) = &ran {
        held_json(args.run.output.format(), args.unit.as_deref(), h);
    }
    ran
}

/// A held start with `--output json`/`jsonl`: stdout says so as a JSON
/// line (reason `rate-limited`, `heldBy`); stderr and exit 75 as any error.
pub fn held_json(format: OutputFormat, unit: Option<&str>, h: &crate::quota::HeldBy) {
    if format == OutputFormat::Human {
        return;
    }
    let line = serde_json::json!({
        "unit": unit,
        "engine": h.engine,
        "account": h.account,
        "state": "held",
        "reason": crate::ground::error::Reason::RateLimited.as_str(),
        "error": h.to_string(),
        "heldBy": h,
    });
    StdoutSink::new(format).json_line(&line);
}

fn run_checked(args: &DispatchArgs) -> Result<i32> {
    let ranges = match parse_private_ranges(&args.private_range) {
        Ok(r) => r,
        Err(e) => {
            // Printed as clap prints its own usage errors (main does the same).
            let _ = e.print();
            return Ok(crate::ground::error::exit::USAGE);
        }
    };
    let mut d = resolve(args, &ranges)?;
    let budget_args = max_cost_args(d.run.engine.engine(), args.max_cost)?;
    let step_flags = run_options::step_flags(&args.steps);
    let steps = resolve::flag_steps(&step_flags, &d.run.asked, &d.run.cwd, &d.run.unit)?;
    let hooks = hooks_of(&d.run.asked)?;
    d.run.asked.verify = steps.verify.clone().filter(|_| d.run.loops.any());
    if args.dry_run {
        return dry_run(args, &d, steps.workspace.as_ref());
    }
    let format = args.run.output.format();
    if d.attach_plan.pick.ready == Some(false) {
        return Err(VfError::not_ready(format!(
            "{} is not ready ({}); run `vf doctor`",
            d.run.engine, d.attach_plan.pick.reason
        )));
    }
    let steps = reserve_child_name(args, &mut d, steps, &step_flags)?;
    // The private text rides with the prompt for this run only; vf persists neither.
    let prompt = private::apply_private_ranges(&d.prompt, &d.private_ranges);
    let (state_dir, unit) = (&d.run.state_dir, &d.run.unit);
    // Held from reading the marker to the end of the run: a re-run of the
    // unit is primed with its earlier answers.
    let locked = LockedUnit::lock_sync(state_dir, unit)?;
    let marker = locked.load_marker()?;
    let replay = crate::dispatch::rerun::for_dispatch(
        state_dir,
        marker.as_ref(),
        d.session.as_deref(),
        &prompt,
    )
    .map_err(|why| VfError::state(format!("cannot re-run unit {unit:?}: {why}")))?;
    let (prompt, replay) = match replay {
        Some((primed, counts)) => (primed, Some(counts)),
        None => (prompt, None),
    };
    let mut run = d.run;
    run.stall_timeout = resolve::seconds("--stall-timeout", d.timeouts.0)?;
    run.timeout = resolve::seconds("--timeout", d.timeouts.1)?;
    run.kill_grace = crate::process::child::kill_grace_from_env()?;
    (run.budget_args, run.steps) = (budget_args, steps);
    let spec = run.spec(prompt, d.session);
    // Named in the result when the user config gave any of them.
    let from_config = d
        .origins
        .values()
        .any(|o| matches!(o, crate::plan::config::Origin::Config(_)));
    let origins = from_config
        .then(|| serde_json::to_value(&d.origins).ok())
        .flatten();
    run_unit_with(spec, locked, (format, &hooks), replay, origins)
}

/// A child named by vf (no `--unit`, a parent known): its name reserved
/// now that every check has passed. Another vf may have taken the name
/// peeked at: the next free one is the unit's, its worktree named anew.
fn reserve_child_name(
    args: &DispatchArgs,
    d: &mut Dispatch,
    steps: crate::dispatch::Steps,
    step_flags: &resolve::StepFlags,
) -> Result<crate::dispatch::Steps> {
    let Some(parent) = d
        .run
        .lineage
        .parent
        .as_ref()
        .filter(|_| args.unit.is_none())
    else {
        return Ok(steps);
    };
    let name = crate::unit::lineage::next_child_name(&d.run.state_dir, parent)?;
    if name == d.run.unit {
        return Ok(steps);
    }
    d.run.unit = name;
    resolve::flag_steps(step_flags, &d.run.asked, &d.run.cwd, &d.run.unit)
}

/// `--max-cost USD` as the engine's own cap; refused (exit 2) for an engine
/// without one: vf does not enforce a budget from live usage itself.
fn max_cost_args(engine: &dyn crate::engine::Engine, usd: Option<f64>) -> Result<Vec<String>> {
    let Some(usd) = usd else {
        return Ok(Vec::new());
    };
    if !(usd.is_finite() && usd > 0.0) {
        return Err(VfError::usage(format!(
            "--max-cost must be a positive number of USD, not {usd}"
        )));
    }
    engine.max_cost_args(usd).ok_or_else(|| {
        VfError::usage(format!(
            "--max-cost: {} has no spending cap vf can pass (only claude's --max-budget-usd)",
            engine.spec().id
        ))
    })
}

/// `--dry-run`: the exact invocation, nothing spawned or written (with
/// `--worktree`: in the worktree the run would make).
fn dry_run(args: &DispatchArgs, d: &Dispatch, ws: Option<&WorkspaceSpec>) -> Result<i32> {
    let (r, reason) = (&d.run, &d.attach_plan.pick.reason);
    let worktree = ws.map(|w| w.cwd_in(&r.state_dir, &r.unit));
    // The argv can depend on the installed version (copilot): read it when the
    // engine is installed, without writing any state for a dry run.
    let version = crate::process::binary::resolve_binary(r.engine, args.run.engine_bin.as_deref())
        .ok()
        .and_then(|p| {
            crate::process::binary::read_version(&p, crate::dispatch::VERSION_TIMEOUT).ok()
        });
    let mut inv = build_invocation(d, version.as_ref(), worktree.as_deref())?;
    inv.args
        .extend(max_cost_args(r.engine.engine(), args.max_cost)?);
    // Built with the real text (so limits apply to it), shown without it.
    private::redact_invocation(&mut inv, &d.private_ranges);
    if r.sandbox.is_on() {
        let unit = crate::unit::UnitDir::new(&r.state_dir, &r.unit);
        let tmp = unit.tmp_path();
        let place = crate::dispatch::confine::Place {
            cwd: worktree.as_deref().unwrap_or(&r.cwd),
            tmp: &tmp,
            engine: r.engine,
            command: r.command.as_ref(),
            env: &inv.env,
            git: &[],
        };
        inv.policy.sandbox = Some(r.sandbox.preview(&place));
    }
    for w in &inv.warnings {
        eprint_line(format_args!("vf: warning: {w}"));
    }
    if args.run.output.explicit() == Some(OutputFormat::Json) {
        super::print_json(&DryRun {
            engine: r.engine.as_str(),
            engine_reason: reason,
            unit: &r.unit,
            attachments: dry_run_attachments(d),
            private_ranges: d.private_ranges.summaries(),
            invocation: &inv,
            launch: r.command.as_ref().map(EngineCommand::launches),
            path_guards: Some(DryRunGuards {
                deny: &r.asked.deny_paths,
                allow: &r.asked.allow_paths,
            })
            .filter(|g| !(g.deny.is_empty() && g.allow.is_empty())),
            hooks: Some(DryRunHooks {
                on_finish: r.asked.on_finish.as_deref(),
                on_fail: r.asked.on_fail.as_deref(),
            })
            .filter(|h| h.on_finish.is_some() || h.on_fail.is_some()),
            origins: &d.origins,
        })?;
    } else {
        print_dry_run(d, &inv, ws)?;
    }
    Ok(0)
}

/// The dry run as a shell line and `#` comments.
fn print_dry_run(d: &Dispatch, inv: &Invocation, ws: Option<&WorkspaceSpec>) -> Result<()> {
    let r = &d.run;
    let mut out = super::stdio::out();
    let mut line = shell_quote(&inv.program);
    for a in &inv.args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    let cwd = shell_quote(&inv.cwd.display().to_string());
    writeln!(out, "cd {cwd} && {line}")?;
    match &inv.stdin {
        Some(s) => writeln!(out, "# stdin: {} bytes, then closed", s.len())?,
        None => writeln!(out, "# stdin: /dev/null")?,
    }
    if let Some(p) = &inv.prompt_file {
        writeln!(out, "# prompt file: {}", p.display())?;
    }
    if let Some(s) = &inv.policy.sandbox {
        let by = s
            .mechanism
            .as_deref()
            .unwrap_or("no mechanism on this machine");
        writeln!(
            out,
            "# sandbox: {} ({}, {by})",
            s.mode.as_str(),
            s.state.as_str()
        )?;
        writeln!(out, "#   writable: {}", s.writable.join(", "))?;
        writeln!(out, "#   deny read: {}", s.deny_read.join(", "))?;
    }
    if let Some(l) = r.command.as_ref().map(EngineCommand::launches) {
        let quoted = |argv: &[String]| argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>();
        writeln!(out, "# launch on POSIX: {}", quoted(&l.posix).join(" "))?;
        match (&l.windows, &l.windows_error) {
            (Some(w), _) => writeln!(out, "# launch on Windows (argv): {}", quoted(w).join(" "))?,
            (None, e) => writeln!(
                out,
                "# launch on Windows: refused: {}",
                e.as_deref().unwrap_or("?")
            )?,
        }
    }
    writeln!(
        out,
        "# engine: {} ({})",
        r.engine, d.attach_plan.pick.reason
    )?;
    if let Some(w) = ws {
        writeln!(
            out,
            "# worktree: {} on {} from {}",
            crate::workspace::path_of(&r.state_dir, &r.unit).display(),
            crate::workspace::branch_of(&r.unit),
            crate::ground::text::cut(&w.base, 12)
        )?;
    }
    for s in d.private_ranges.summaries() {
        writeln!(
            out,
            "# private range: {}:{}-{} ({} bytes, withheld)",
            s.file, s.start, s.end, s.bytes
        )?;
    }
    Ok(())
}

/// Runs one unit (locked by the caller: `unit`) and prints it in
/// `format`; returns vf's exit code.
/// `replay`: the prompt was primed with a replay of these counts (the run
/// itself records the unit's answer for a later replay).
pub fn run_unit(
    spec: UnitSpec,
    unit: LockedUnit,
    (format, hooks): (OutputFormat, &Hooks),
    replay: Option<crate::unit::history::Counts>,
) -> Result<i32> {
    run_unit_with(spec, unit, (format, hooks), replay, None)
}

/// [`run_unit`], the JSON result with `origins` (docs/CONFIG.md).
fn run_unit_with(
    spec: UnitSpec,
    unit: LockedUnit,
    (format, hooks): (OutputFormat, &Hooks),
    replay: Option<crate::unit::history::Counts>,
    origins: Option<serde_json::Value>,
) -> Result<i32> {
    let mut sink = StdoutSink::new(format);
    sink.origins = origins;
    let (state_dir, cwd, grace) = (spec.state_dir.clone(), spec.cwd.clone(), spec.kill_grace);
    let mut result = super::block_on(crate::dispatch::run_locked(spec, unit, &mut sink))??;
    crate::dispatch::rerun::mark(&mut result, replay);
    sink.result(&result);
    if format == OutputFormat::Human
        && let Some(e) = &result.error
    {
        eprint_line(format_args!("vf: {}: {e}", result.unit));
    }
    // After the result is out and the marker final: a hook changes neither.
    let mut json = serde_json::to_vec(&result).map_err(anyhow::Error::from)?;
    json.push(b'\n');
    let ended = crate::dispatch::notify::Ended {
        state_dir: &state_dir,
        cwd: &cwd,
        unit: &result.unit,
        engine: result.engine.as_str(),
        attempt: result.attempt,
        failed: result.state != crate::unit::marker::UnitState::Done,
        json: &json,
        kill_grace: grace,
    };
    for w in super::block_on(crate::dispatch::notify::after_unit(hooks, &ended))? {
        eprint_line(format_args!("vf: warning: {}: {w}", result.unit));
    }
    Ok(result.vf_exit())
}

/// `--on-finish` / `--on-fail` (`VF_HOOK_TIMEOUT_MS` checked: exit 2).
pub fn hooks_of(a: &crate::unit::marker::Asked) -> Result<Hooks> {
    crate::dispatch::notify::timeout_from_env()?;
    crate::engine::acp::handshake_timeout_from_env()?;
    Ok(Hooks {
        on_finish: a.on_finish.clone(),
        on_fail: a.on_fail.clone(),
    })
}

/// Single-quotes `s` for a POSIX shell when it holds anything special.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
