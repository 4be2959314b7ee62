//! A unit's options, resolved once (as ripgrep's `HiArgs::from_low_args`):
//! the flags' values (plain data the command hands over, never clap types),
//! a plan unit's keys (its `[defaults]` and the user config already layered
//! under them by the plan), and a re-run's marker go in; one [`Resolved`]
//! comes out and builds the run's [`UnitSpec`], the only place that does.
//!
//! - [`Resolved`]: everything a run of the unit takes but its start (prompt
//!   and session); [`Resolved::spec`] makes the spec.
//! - [`options`]: `--model`, `--effort`, `--agent`, `--summary-schema` over
//!   a resumed marker's; [`asked`]: the policy, path guards, hooks and MCP
//!   file given over a re-run's kept ones; [`policy`]: the tool policy checked.
//! - [`flag_steps`], [`plan_steps`]: the worktree, setup, verify and path
//!   guards of `vf dispatch`'s flags or of a plan unit; [`seconds`].
//! - [`loops`]: the closed loops' flags over the kept keys, checked, and
//!   the run's `Loops` once the engine is known.
//!
//! Every check refuses (exit 2) before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{BudgetWatch, Steps, UnitSpec};
use crate::engine::McpServers;
use crate::engine::SummarySchema;
use crate::engine::ToolPolicy;
use crate::engine::sandbox_policy::SandboxMode;
use crate::engine::{Attachment, EngineCommand, EngineId, RunOptions};
use crate::ground::{Result, VfError};
use crate::unit::Asked;
use crate::unit::marker::Marker;
use crate::workspace::PathGuards;

pub mod loops;

/// One unit's run options, resolved and checked: all a run takes but how
/// it starts (the prompt it sends, the session it resumes).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub engine: EngineId,
    pub unit: String,
    pub cwd: PathBuf,
    pub state_dir: PathBuf,
    pub skip_permissions: bool,
    pub engine_bin: Option<PathBuf>,
    pub attachments: Vec<Attachment>,
    pub stall_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    pub kill_grace: Duration,
    /// Why this engine (e.g. the `--engine auto` rule that chose it).
    pub engine_reason: Option<String>,
    /// The engine's spending cap (`--max-cost`).
    pub budget_args: Vec<String>,
    /// The private-range blocks the prompt carries (redacted in the output).
    pub redact: Vec<String>,
    pub options: RunOptions,
    pub summary_schema: Option<Arc<SummarySchema>>,
    pub steps: Steps,
    pub policy: ToolPolicy,
    /// The sandbox (`dispatch::confine`), checked.
    pub sandbox: super::confine::Sandbox,
    /// Recorded in the marker for a later re-run or resume.
    pub asked: Asked,
    pub mcp: Option<McpServers>,
    /// The plan's hard budget (`orchestrate --hard-budget`).
    pub budget_stop: Option<BudgetWatch>,
    /// A cancelled Temporal activity ends the unit as a SIGTERM would.
    pub cancel: Option<tokio::sync::watch::Receiver<bool>>,
    /// Record the answer for a later replay (conversations keep their own).
    pub keep_answer: bool,
    /// A command engine's command (the bridge's, the ACP agent's).
    pub command: Option<EngineCommand>,
    /// The unit's closed loops (fix, review, resolve).
    pub loops: super::rounds::Loops,
    /// The quota governor's say: the account, `pause_at`, `stagger`.
    pub quota: crate::quota::Ask,
    /// vf's notices about the run known before it starts (a reviewer of
    /// the author's own engine): the spec's first warnings.
    pub warnings: Vec<String>,
    /// Who started the unit (`unit::lineage`; default: a top unit).
    pub lineage: crate::unit::lineage::Lineage,
}

impl Resolved {
    /// `unit` of `engine` in `cwd`, state under `state_dir`, with nothing
    /// else asked: no limits, no steps, no policy, the default kill grace,
    /// its answer not recorded.
    pub fn new(engine: EngineId, unit: String, cwd: PathBuf, state_dir: PathBuf) -> Resolved {
        Resolved {
            engine,
            unit,
            cwd,
            state_dir,
            skip_permissions: false,
            engine_bin: None,
            attachments: Vec::new(),
            stall_timeout: None,
            timeout: None,
            kill_grace: crate::process::DEFAULT_KILL_GRACE,
            engine_reason: None,
            budget_args: Vec::new(),
            redact: Vec::new(),
            options: RunOptions::default(),
            summary_schema: None,
            steps: Steps::default(),
            policy: ToolPolicy::default(),
            sandbox: super::confine::Sandbox::default(),
            asked: Asked::default(),
            mcp: None,
            budget_stop: None,
            cancel: None,
            keep_answer: false,
            command: None,
            loops: super::rounds::Loops::default(),
            quota: crate::quota::Ask::default(),
            warnings: Vec::new(),
            lineage: crate::unit::lineage::Lineage::top(),
        }
    }

    /// The options `chosen` for the run (model, effort, agent, schema).
    pub fn with_chosen(mut self, chosen: Chosen) -> Resolved {
        (self.options, self.summary_schema) = (chosen.options, chosen.schema);
        self
    }

    /// The run's spec: it sends `prompt`, resuming `session` when given.
    pub fn spec(self, prompt: String, session: Option<String>) -> UnitSpec {
        UnitSpec {
            engine: self.engine,
            unit: self.unit,
            prompt,
            session,
            cwd: self.cwd,
            state_dir: self.state_dir,
            skip_permissions: self.skip_permissions,
            engine_bin: self.engine_bin,
            attachments: self.attachments,
            stall_timeout: self.stall_timeout,
            timeout: self.timeout,
            kill_grace: self.kill_grace,
            warnings: self.warnings,
            engine_reason: self.engine_reason,
            budget_args: self.budget_args,
            redact: self.redact,
            options: self.options,
            summary_schema: self.summary_schema,
            steps: self.steps,
            policy: self.policy,
            sandbox: self.sandbox,
            asked: self.asked,
            mcp: self.mcp,
            budget_stop: self.budget_stop,
            cancel: self.cancel,
            keep_answer: self.keep_answer,
            command: self.command,
            loops: self.loops,
            quota: self.quota,
            lineage: self.lineage,
        }
    }
}

/// `--model`, `--effort`, `--agent`, `--summary-schema` as given.
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    pub model: Option<String>,
    pub effort: Option<String>,
    pub summary_schema: Option<PathBuf>,
    pub agent: Option<String>,
}

/// The options for one run, checked against its engine.
#[derive(Debug, Clone, Default)]
pub struct Chosen {
    pub options: RunOptions,
    pub schema: Option<Arc<SummarySchema>>,
}

/// The flags over `kept` (`vf resume` keeps the model, effort and schema
/// its marker records), checked for `engine`. A relative schema path is
/// taken from the current directory, as `--prompt-file` is.
pub fn options(engine: EngineId, flags: &ModelFlags, kept: Option<&Marker>) -> Result<Chosen> {
    let schema_path = flags
        .summary_schema
        .as_deref()
        .or(kept.and_then(|m| m.summary_schema.as_deref()));
    let schema = match schema_path {
        Some(p) => Some(Arc::new(load_schema(p)?)),
        None => None,
    };
    let options = RunOptions::new(
        flags.model.clone().or(kept.and_then(|m| m.model.clone())),
        flags.effort.clone().or(kept.and_then(|m| m.effort.clone())),
        schema.as_deref(),
    )
    .with_agent(flags.agent.clone());
    crate::engine::options::check(engine.engine().spec(), &options)?;
    Ok(Chosen { options, schema })
}

/// A schema file, refused (exit 2) when unreadable, not JSON or not a schema.
pub fn load_schema(path: &Path) -> Result<SummarySchema> {
    let abs = crate::ground::state::absolute(path)?;
    SummarySchema::load(&abs).map_err(VfError::usage)
}

/// The parts of a kept request `--clear` drops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clear {
    pub read_only: bool,
    pub sandbox: bool,
    pub require_enforced: bool,
    pub tools: bool,
    pub paths: bool,
    pub hooks: bool,
    pub mcp: bool,
    pub loops: bool,
}

/// The request as given on the command line (policy, path guards, hooks,
/// MCP file), each part empty when not given.
#[derive(Debug, Clone, Default)]
pub struct AskFlags {
    pub clear: Clear,
    pub read_only: bool,
    pub require_enforced: bool,
    pub allow_tools: Vec<String>,
    pub deny_tools: Vec<String>,
    pub deny_paths: Vec<String>,
    pub allow_paths: Vec<String>,
    pub on_finish: Option<String>,
    pub on_fail: Option<String>,
    pub mcp: Option<PathBuf>,
    pub sandbox: Option<SandboxMode>,
    pub deny_read: Vec<String>,
    pub writable: Vec<String>,
}

/// The request a run applies: a unit's recorded one (`kept`, from its
/// marker, on a resume or re-run; else the user config's) with each
/// cleared part dropped, then each part given in place of the kept one
/// (the read-only and require-enforced switches, each tool list, each path
/// list, each hook, the MCP servers' file).
pub fn asked(given: &AskFlags, kept: Option<&Asked>) -> Asked {
    let mut a = kept.cloned().unwrap_or_default();
    let c = given.clear;
    if c.read_only {
        a.read_only = false;
    }
    if c.require_enforced {
        a.require_enforced = false;
    }
    if c.tools {
        (a.allow_tools, a.deny_tools) = (Vec::new(), Vec::new());
    }
    if c.paths {
        (a.deny_paths, a.allow_paths) = (Vec::new(), Vec::new());
    }
    if c.hooks {
        (a.on_finish, a.on_fail) = (None, None);
    }
    if c.mcp {
        a.mcp = None;
    }
    if c.loops {
        a.loops = Default::default();
    }
    if c.sandbox {
        (a.sandbox, a.deny_read, a.writable) = (None, Vec::new(), Vec::new());
    }
    a.read_only |= given.read_only;
    a.require_enforced |= given.require_enforced;
    let replace = |kept: &mut Vec<String>, given: &[String]| {
        if !given.is_empty() {
            *kept = given.to_vec();
        }
    };
    replace(&mut a.allow_tools, &given.allow_tools);
    replace(&mut a.deny_tools, &given.deny_tools);
    replace(&mut a.deny_paths, &given.deny_paths);
    replace(&mut a.allow_paths, &given.allow_paths);
    replace(&mut a.deny_read, &given.deny_read);
    replace(&mut a.writable, &given.writable);
    a.sandbox = given.sandbox.or(a.sandbox);
    a.on_finish = given.on_finish.clone().or(a.on_finish);
    a.on_fail = given.on_fail.clone().or(a.on_fail);
    a.mcp = given.mcp.clone().or(a.mcp);
    a
}

/// The read-only and tool part of `asked`, checked (exit 2) and, with
/// `--require-enforced` (given or recorded), refused when `engine` at its
/// installed version (read as a dispatch reads it) would leave a part
/// unenforced; and its sandbox for a run in `cwd`, checked the same way
/// (`dispatch::confine`): all before anything is written.
pub fn policy(
    asked: &Asked,
    skip_permissions: bool,
    (engine, engine_bin): (EngineId, Option<&Path>),
    resume: bool,
    cwd: &Path,
) -> Result<(ToolPolicy, super::confine::Sandbox)> {
    use crate::engine::tool_policy;
    let mut p = asked.policy();
    tool_policy::check(&p, skip_permissions)?;
    let sandbox = super::confine::Sandbox::of(asked, cwd)?;
    sandbox.mark(&mut p);
    if p.require_enforced {
        let version = super::installed_version(engine, engine_bin);
        tool_policy::require(
            engine,
            &p,
            &tool_policy::apply(engine, version.as_ref(), resume, &p),
        )?;
    }
    Ok((p, sandbox))
}

/// A positive, finite number of seconds.
pub fn seconds(flag: &str, v: Option<f64>) -> Result<Option<Duration>> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(VfError::usage(format!(
            "{flag} must be a positive number of seconds, not {s}"
        ))),
    }
}

/// The path guards, refused (exit 2) for a bad glob or where they cannot be
/// checked: outside a git work tree.
pub fn path_guards(
    deny: &[String],
    allow: &[String],
    cwd: &Path,
    what: &str,
) -> Result<Option<PathGuards>> {
    let guards =
        PathGuards::new(deny, allow).map_err(|e| VfError::usage(format!("{what}: {e}")))?;
    if guards.is_some() {
        crate::workspace::require_repo(cwd, what)?;
    }
    Ok(guards)
}

/// `--worktree`, `--base`, `--no-commit`, `--setup`, `--verify` as given.
#[derive(Debug, Clone, Default)]
pub struct StepFlags {
    pub worktree: bool,
    pub base: Option<String>,
    pub no_commit: bool,
    pub setup: Option<String>,
    pub verify: Option<String>,
}

/// `vf dispatch`'s steps: the path guards of `asked` checked first, then
/// the base resolved to a commit, once (exit 2 outside a git repository).
pub fn flag_steps(a: &StepFlags, asked: &Asked, cwd: &Path, unit: &str) -> Result<Steps> {
    let (deny, allow) = (&asked.deny_paths, &asked.allow_paths);
    let guards = path_guards(deny, allow, cwd, "--deny-path / --allow-path")?;
    let workspace = match a.worktree {
        true => {
            let mut w =
                crate::workspace::resolve(cwd, unit, a.base.as_deref(), None, "--worktree")?;
            w.commit = !a.no_commit;
            Some(w)
        }
        false => None,
    };
    Ok(Steps {
        workspace,
        setup: a.setup.clone(),
        verify: a.verify.clone(),
        guards,
    })
}

/// A worktree unit's keys. Its `cwd` then names the repository (the plan
/// file's directory) and `rel_cwd` the engine's directory in the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanWorktree {
    pub base: Option<String>,
    pub commit: bool,
    pub rel_cwd: PathBuf,
    /// `push`: the git remote the unit's branch is pushed to once it is done.
    pub push: Option<String>,
    /// Per dependency of the unit that is a worktree unit with `push`: that
    /// remote, which the dependency's branch is fetched from before it is
    /// merged (filled once the whole plan is read).
    pub fetch_from: BTreeMap<String, String>,
}

/// A plan unit's step keys (the plan itself is read above this layer).
#[derive(Debug, Clone, Copy)]
pub struct PlanSteps<'a> {
    pub unit: &'a str,
    pub cwd: &'a Path,
    pub worktree: Option<&'a PlanWorktree>,
    pub setup: Option<&'a String>,
    pub verify: Option<&'a String>,
    pub deny_paths: &'a [String],
    pub allow_paths: &'a [String],
}

/// A plan unit's `worktree`, `base`, `commit`, `push`, `setup`, `verify`
/// (the base resolved once, `push`'s remote found in the repository, before
/// anything of the plan starts), then its path guards.
pub fn plan_steps(u: PlanSteps<'_>) -> Result<Steps> {
    let workspace = match u.worktree {
        Some(w) => {
            let flag = format!("unit {:?}: worktree = true", u.unit);
            let mut ws = crate::workspace::resolve(
                u.cwd,
                u.unit,
                w.base.as_deref(),
                Some(&w.rel_cwd),
                &flag,
            )?;
            ws.commit = w.commit;
            if let Some(remote) = &w.push {
                crate::workspace::remote::require(&ws.repo, remote)
                    .map_err(|e| VfError::usage(format!("unit {:?}: push: {e}", u.unit)))?;
            }
            ws.push = w.push.clone();
            ws.fetch_from = w.fetch_from.clone();
            Some(ws)
        }
        None => None,
    };
    let what = format!("unit {:?}: deny_paths / allow_paths", u.unit);
    let guards = path_guards(u.deny_paths, u.allow_paths, u.cwd, &what)?;
    Ok(Steps {
        workspace,
        setup: u.setup.cloned(),
        verify: u.verify.cloned(),
        guards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// What a unit asked for before: its marker's (or the user config's).
    fn kept() -> Asked {
        Asked {
            read_only: true,
            allow_tools: strings(&["Read"]),
            deny_tools: strings(&["Bash"]),
            deny_paths: strings(&["secrets/**"]),
            on_finish: Some("notify-done".into()),
            on_fail: Some("notify-fail".into()),
            mcp: Some(PathBuf::from("/kept/mcp.json")),
            loops: crate::unit::marker::asked::LoopKeys {
                fix_rounds: 2,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_re_run_keeps_what_it_asked_for_unless_given_again_or_cleared() {
        // Nothing given: the kept request, whole.
        assert_eq!(asked(&AskFlags::default(), Some(&kept())), kept());
        // Each part given replaces the kept one; a cleared part is dropped
        // first; what is neither stays as it was kept.
        let given = AskFlags {
            clear: Clear {
                read_only: true,
                hooks: true,
                ..Default::default()
            },
            require_enforced: true,
            allow_tools: strings(&["Edit"]),
            on_fail: Some("page-me".into()),
            ..Default::default()
        };
        let want = Asked {
            read_only: false,
            require_enforced: true,
            allow_tools: strings(&["Edit"]),
            deny_tools: strings(&["Bash"]),
            deny_paths: strings(&["secrets/**"]),
            on_finish: None,
            on_fail: Some("page-me".into()),
            mcp: Some(PathBuf::from("/kept/mcp.json")),
            loops: kept().loops,
            ..Default::default()
        };
        assert_eq!(asked(&given, Some(&kept())), want);
        // `--clear loops` drops the kept loops, and only them.
        let given = AskFlags {
            clear: Clear {
                loops: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let want = Asked {
            loops: Default::default(),
            ..kept()
        };
        assert_eq!(asked(&given, Some(&kept())), want);
        // A first run without a user config starts from nothing asked.
        assert_eq!(asked(&AskFlags::default(), None), Asked::default());
    }

    #[test]
    fn a_flag_wins_over_what_a_resumed_unit_ran_with() {
        let mut m = Marker::new("u", EngineId::Codex, Path::new("/w"));
        (m.model, m.effort) = (Some("kept-model".into()), Some("high".into()));
        let flags = ModelFlags {
            model: Some("given-model".into()),
            ..Default::default()
        };
        let chosen = options(EngineId::Codex, &flags, Some(&m)).unwrap();
        let want = RunOptions::new(Some("given-model".into()), Some("high".into()), None);
        assert_eq!(chosen.options, want);
        assert!(chosen.schema.is_none());
        // Nothing given, nothing kept: the engine's own defaults.
        let none = options(EngineId::Codex, &ModelFlags::default(), None).unwrap();
        assert_eq!(none.options, RunOptions::default());
    }

    /// A plan unit's value over its plan's `[defaults]` over the user
    /// config's, into the whole spec a plan run starts.
    #[test]
    fn a_plan_unit_over_its_defaults_over_the_user_config() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.toml");
        std::fs::write(
            &plan,
            "[defaults]\ntimeout = 60\nstall_timeout = 20\n\n\
             [[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"go\"\ntimeout = 90\n",
        )
        .unwrap();
        let user_model = (Some("user-model".into()), Some("low".into()));
        let user = crate::plan::UserDefaults {
            defaults: "stall_timeout = 5\nskip_permissions = true\n"
                .parse()
                .unwrap(),
            engines: BTreeMap::from([(EngineId::Codex, user_model)]),
            accounts: Vec::new(),
        };
        let mut units = crate::plan::load_with(&plan, &user).unwrap().units;
        let u = units.pop().unwrap();
        let job = crate::plan::scheduler::Job {
            plan: u,
            engine: EngineId::Codex,
            attachments: Vec::new(),
            steps: Steps::default(),
            origins: None,
            lineage: Default::default(),
        };
        let state = dir.path().join("state");
        let got = crate::plan::scheduler::spec_of(&job, &state, 3 * SECOND, "go".into(), None);
        let nothing = ToolPolicy::default();
        let want = Resolved {
            skip_permissions: true,
            stall_timeout: Some(20 * SECOND),
            timeout: Some(90 * SECOND),
            kill_grace: 3 * SECOND,
            options: RunOptions::new(Some("user-model".into()), Some("low".into()), None),
            asked: Asked::new(&nothing, (&[], &[]), (None, None)),
            keep_answer: true,
            ..Resolved::new(EngineId::Codex, "a".into(), dir.path().into(), state)
        };
        let want = want.spec("go".into(), None);
        assert_eq!(format!("{got:#?}"), format!("{want:#?}"));
    }

    /// The loop keys: a unit's `review` over its plan's (whole), the plan's
    /// `fix_rounds` over the user config's, the user config's `on_conflict`
    /// and `resolver`; recorded in the marker's `asked`; a reviewer of the
    /// author's engine warned of.
    #[test]
    fn a_plan_units_loops_over_its_defaults_over_the_user_config() {
        use crate::dispatch::rounds::{Loops, OnConflict, Review};
        use crate::unit::marker::asked::{ConflictKey, LoopKeys, ReviewKeys};
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.toml");
        std::fs::write(
            &plan,
            "[defaults]\nfix_rounds = 3\n\
             review = { engine = \"claude\", model = \"opus\", rounds = 4 }\n\n\
             [[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"go\"\n\
             review = { engine = \"codex\", prompt = \"be strict\" }\n",
        )
        .unwrap();
        let user = crate::plan::UserDefaults {
            defaults: "fix_rounds = 9\non_conflict = \"resolve\"\nresolver = \"gemini\"\n"
                .parse()
                .unwrap(),
            engines: BTreeMap::new(),
            accounts: Vec::new(),
        };
        let u = crate::plan::load_with(&plan, &user)
            .unwrap()
            .units
            .remove(0);
        let job = crate::plan::scheduler::Job {
            plan: u,
            engine: EngineId::Codex,
            attachments: Vec::new(),
            steps: Steps::default(),
            origins: None,
            lineage: Default::default(),
        };
        let state = dir.path().join("state");
        let got = crate::plan::scheduler::spec_of(&job, &state, SECOND, "go".into(), None);
        let review = ReviewKeys {
            engine: EngineId::Codex,
            model: None,
            rounds: 1,
            prompt: Some("be strict".into()),
        };
        let keys = LoopKeys {
            fix_rounds: 3,
            review: Some(review),
            on_conflict: ConflictKey::Resolve,
            resolver: Some(EngineId::Gemini),
            ..Default::default()
        };
        let want = Resolved {
            kill_grace: SECOND,
            asked: Asked {
                loops: keys,
                ..Default::default()
            },
            keep_answer: true,
            loops: Loops {
                fix_rounds: 3,
                review: Some(Review {
                    engine: EngineId::Codex,
                    model: None,
                    rounds: 1,
                    prompt: Some("be strict".into()),
                }),
                conflict: OnConflict::Resolve {
                    engine: EngineId::Gemini,
                },
                budget: Default::default(),
            },
            warnings: vec!["codex is reviewing its own work".into()],
            ..Resolved::new(EngineId::Codex, "a".into(), dir.path().into(), state)
        };
        let want = want.spec("go".into(), None);
        assert_eq!(format!("{got:#?}"), format!("{want:#?}"));
    }

    #[test]
    fn the_spec_is_the_resolved_options_and_the_start() {
        let r = Resolved {
            timeout: Some(SECOND),
            keep_answer: true,
            ..Resolved::new(EngineId::Claude, "u".into(), "/w".into(), "/s".into())
        };
        let spec = r.clone().spec("hi".into(), Some("sess".into()));
        let want = UnitSpec {
            engine: EngineId::Claude,
            unit: "u".into(),
            prompt: "hi".into(),
            session: Some("sess".into()),
            cwd: "/w".into(),
            state_dir: "/s".into(),
            skip_permissions: false,
            engine_bin: None,
            attachments: Vec::new(),
            stall_timeout: None,
            timeout: Some(SECOND),
            kill_grace: crate::process::DEFAULT_KILL_GRACE,
            warnings: Vec::new(),
            engine_reason: None,
            budget_args: Vec::new(),
            redact: Vec::new(),
            options: RunOptions::default(),
            summary_schema: None,
            steps: Steps::default(),
            policy: ToolPolicy::default(),
            sandbox: Default::default(),
            asked: Asked::default(),
            mcp: None,
            budget_stop: None,
            cancel: None,
            keep_answer: true,
            command: None,
            loops: Default::default(),
            quota: Default::default(),
            lineage: Default::default(),
        };
        assert_eq!(format!("{spec:#?}"), format!("{want:#?}"));
    }

    #[test]
    fn a_bad_number_of_seconds_is_refused_naming_its_flag() {
        assert_eq!(seconds("--timeout", None).unwrap(), None);
        assert_eq!(
            seconds("--timeout", Some(1.5)).unwrap(),
            Some(SECOND * 3 / 2)
        );
        let err = seconds("--stall-timeout", Some(-1.0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--stall-timeout must be a positive number of seconds, not -1"
        );
    }
}
