//! Command-line definitions only (clap). Resolution into config happens in
//! `commands/*`, so these structs stay a plain description of the flags.
//! This module imports only clap, std and the engine types: the defaults
//! below are the flags' own, and `commands/*` pass them down as values.
//!
//! The domain's map: this file the top-level commands; `conv`, `demo`,
//! `mcp`, `quota` and `temporal` the flags of `vf conv`, `vf demo`, `vf mcp`, `vf quota` and
//! the Temporal commands; `loops` the closed loops' flags of `vf dispatch` and
//! `vf resume`; `govern` the quota governor's flags.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::engine::choice::EngineChoice;
use crate::engine::{EngineId, OutputTransport};

mod conv;
mod demo;
mod govern;
mod loops;
mod mcp;
mod quota;
#[cfg(feature = "temporal")]
mod temporal;
pub use conv::*;
pub use demo::*;
pub use govern::{GovernArgs, GovernLimitArgs};
pub use loops::LoopArgs;
pub use mcp::*;
pub use quota::*;
#[cfg(feature = "temporal")]
pub use temporal::*;

/// `vf doctor --timeout`: seconds each `--version` / `--help` call may take.
pub const DOCTOR_TIMEOUT_SECS: u64 = 10;
/// `vf doctor --probe-timeout`: seconds each canary may take.
pub const PROBE_TIMEOUT_SECS: u64 = 120;
/// `vf orchestrate --jobs`: units run at once.
pub const DEFAULT_JOBS: usize = 4;

#[derive(Debug, Parser)]
#[command(
    name = "vf",
    version,
    about = "Dispatch work to coding-agent CLIs and make their output safe to build on",
    propagate_version = true
)]
pub struct Cli {
    /// Log vf's own diagnostics to stderr (repeat for more detail).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the engine contract: binaries, verified versions, transports, resume support.
    Engines(EnginesArgs),
    /// Run one unit of work on an engine (or print the exact invocation with --dry-run).
    Dispatch(Box<DispatchArgs>),
    /// Resume a unit's exact native session after a failure or crash.
    Resume(Box<ResumeArgs>),
    /// Show every unit's state, engine, session id, summary and last error.
    Status(StatusArgs),
    /// Run a plan of units (a DAG, TOML) with bounded parallelism; `--resume` after a crash.
    Orchestrate(OrchestrateArgs),
    /// Run plan units for `vf orchestrate --temporal`: polls the shared queue
    /// and this host's (docs/DISTRIBUTED.md).
    #[cfg(feature = "temporal")]
    Worker(WorkerArgs),
    /// Store files to hand to engines: add, list, rm (under the state dir).
    Attach(AttachArgs),
    /// Check which engines are installed and usable: binary, version, required flags.
    Doctor(DoctorArgs),
    /// Project a recorded CLI output log into typed conversation events.
    Replay(ReplayArgs),
    /// Write one self-contained HTML page of the state dir: a timeline of the
    /// attempts, a row per unit (events, diff), totals (docs/REPORT.md).
    Report(ReportArgs),
    /// Remove units' git worktrees (branches stay unless --branches).
    Clean(CleanArgs),
    /// Conversations of several engines: new, say, show, ls, rm, handoff (docs/CONVERSATIONS.md).
    Conv(ConvArgs),
    /// Print shell completions.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    Man,
    /// Ask the configured judge for a verdict on a unit's recorded answers
    /// (off unless VF_JUDGE_ENDPOINT, VF_JUDGE_MODEL, VF_JUDGE_API_KEY; docs/JUDGE.md).
    Judge(JudgeArgs),
    /// Write the vf skill: files that teach an agent to use vf (install).
    Skill(SkillArgs),
    /// Serve vf to agents over MCP (stdio): dispatch, resume, status, result,
    /// events, cancel, orchestrate, report; `install` wires it into an engine.
    Mcp(McpArgs),
    /// Write an engine's workspace files (init; agy: AGENTS.md and `.agents/`).
    Workspace(WorkspaceArgs),
    /// Answer one agent hook call: the payload JSON on stdin, logged; a denied
    /// tool is refused (exit 2). agy's hooks are unverified: no guardrail.
    Hook(HookArgs),
    /// Show the effective settings and where each comes from: flag, variable,
    /// the user config file, built-in (`path`: the file's path; docs/CONFIG.md).
    Config(ConfigArgs),
    /// Show the quota governor's ledger: each engine account's state (open,
    /// paused, held, staggered), utilization, reset and waiting units;
    /// `clear` drops a hold by hand (docs/QUOTA.md).
    Quota(QuotaArgs),
    /// See vf do its job in seconds, with no CLI logged in: a three-unit plan
    /// in worktrees of a temporary repository, on a recorded engine
    /// (genuine captures, never a model), then status and report (docs/DEMO.md).
    Demo(DemoArgs),
    /// The recorded engine's player (internal).
    #[command(name = "__play", hide = true)]
    Play(PlayArgs),
}

/// The whole command tree: what completions and the man page describe.
pub fn full_command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Debug, Args)]
pub struct EnginesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Where the prompt comes from (at most one; stdin when neither is given).
#[derive(Debug, Args, Clone)]
pub struct PromptArgs {
    /// The prompt text.
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the prompt from a file (UTF-8).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DispatchArgs {
    /// The engine to run, or `auto` (chosen from the attachments and
    /// readiness; never the bridge). Default: `engine` in the user config.
    #[arg(long, short = 'e')]
    pub engine: Option<EngineChoice>,
    /// With `--engine bridge`: the agent's command (default: `VIBEFLOW_AI`).
    /// The prompt goes on its stdin; POSIX runs it with `/bin/sh -c`, Windows
    /// tokenized, without a shell (ENGINES.md, "The bridge").
    #[arg(long, value_name = "CMD")]
    pub bridge: Option<String>,
    /// With `--engine bridge`: read its output as this engine's JSON frames
    /// (its newest family) instead of plain text.
    #[arg(long, value_name = "ENGINE")]
    pub bridge_output: Option<EngineId>,
    /// With `--engine acp`: the ACP agent's command (default: the preset of
    /// `acp:NAME`, else `VF_ACP_CMD`). vf drives the protocol on its stdio.
    #[arg(long, value_name = "CMD")]
    pub acp: Option<String>,
    /// The work unit's name (a safe file name); generated when omitted.
    #[arg(long)]
    pub unit: Option<String>,
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// Resume exactly this native session of the engine.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Working directory for the engine (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Let the engine act without asking for permission.
    #[arg(long)]
    pub skip_permissions: bool,
    /// Hand this stored attachment to the engine (repeatable; see `vf attach`).
    #[arg(long = "attach", value_name = "NAME")]
    pub attach: Vec<String>,
    /// Deliver lines START-END (1-based, inclusive) of a text attachment or a
    /// file below the working dir with the prompt, persisted nowhere by vf (repeatable).
    // Parsed by `commands::dispatch`, so this file needs no core type.
    #[arg(long = "private-range", value_name = "FILE:START-END")]
    pub private_range: Vec<String>,
    /// Print the exact invocation without spawning anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Cap what the run may spend (USD): claude's `--max-budget-usd`; refused
    /// for engines without such a cap. With loops, also what all rounds
    /// together may cost before no further one starts.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    #[command(flatten)]
    pub loops: LoopArgs,
    #[command(flatten)]
    pub govern: GovernArgs,
    #[command(flatten)]
    pub steps: StepArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub after: AfterRunArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Read-only and tool policy, held by each engine's verified mechanism
/// (ENGINES.md, "Read-only and tool policy"); what it cannot hold is a warning.
#[derive(Debug, Args, Clone)]
pub struct PolicyArgs {
    /// Run read-only where the engine can enforce it (the result's `policy` says).
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// MCP servers for this run: a `{"mcpServers": ...}` JSON file, given
    /// to the engine by its verified mechanism (ENGINES.md, "MCP servers").
    #[arg(long, value_name = "FILE")]
    pub mcp: Option<PathBuf>,
    /// Drop this part of the unit's recorded request on a resume or re-run
    /// (repeatable; docs/CLI.md, "Resume keeps what a unit asked for"); flags given still apply.
    #[arg(long, value_name = "PART")]
    pub clear: Vec<ClearPart>,
}

/// `--sandbox`, `--deny-read`, `--writable` (docs/SANDBOX.md).
#[derive(Debug, Args, Clone, Default)]
pub struct SandboxArgs {
    /// Confine what the engine and everything it starts may write (and
    /// read): off, workspace (writes only in the working directory, the
    /// unit's folder, its temp dir and the engine's own state) or read-only
    /// (the working directory too); the result's `policy.sandbox` says how
    /// it was held.
    #[arg(long, value_name = "MODE", value_parser = ["off", "workspace", "read-only"])]
    pub sandbox: Option<String>,
    /// With the sandbox: no process of the unit may read this path
    /// (repeatable; absolute or `~/...`; default: the usual credential paths).
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<String>,
    /// With the sandbox: the engine may also write beneath this path
    /// (repeatable; absolute or `~/...`).
    #[arg(long = "writable", value_name = "PATH")]
    pub writable: Vec<String>,
}

/// A part of a unit's recorded request `--clear` drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClearPart {
    ReadOnly,
    Tools,
    RequireEnforced,
    Paths,
    Hooks,
    Mcp,
    /// The closed loops: fix rounds, review, on_conflict, the rounds' budget.
    Loops,
    /// The sandbox, its `deny_read` and `writable` paths.
    Sandbox,
    All,
}

/// `--allow-tool`, `--deny-tool`, `--require-enforced`.
#[derive(Debug, Args, Clone)]
pub struct ToolArgs {
    /// Allow this tool, in the engine's own naming (repeatable).
    #[arg(long = "allow-tool", value_name = "NAME")]
    pub allow_tool: Vec<String>,
    /// Deny this tool, in the engine's own naming (repeatable).
    #[arg(long = "deny-tool", value_name = "NAME")]
    pub deny_tool: Vec<String>,
    /// Refuse (exit 2, nothing written) when any part of the policy would be unenforced.
    #[arg(long)]
    pub require_enforced: bool,
}

/// Path guards and notification hooks, checked and run after the engine
/// (docs/CLI.md, "Path guards" and "Notifications").
#[derive(Debug, Args, Clone)]
pub struct AfterRunArgs {
    /// Fail the unit (reason `policy`, nothing committed) when the run changed
    /// a path matching this glob, relative to the repository root (repeatable).
    #[arg(long = "deny-path", value_name = "GLOB")]
    pub deny_path: Vec<String>,
    /// Only paths matching these globs may change; any other fails the unit
    /// (reason `policy`; repeatable).
    #[arg(long = "allow-path", value_name = "GLOB")]
    pub allow_path: Vec<String>,
    /// Run this shell command when the unit has ended, its result JSON on stdin
    /// (a failure or timeout is only a warning).
    #[arg(long, value_name = "CMD")]
    pub on_finish: Option<String>,
    /// Run this shell command when the unit failed or was interrupted, its
    /// result JSON on stdin.
    #[arg(long, value_name = "CMD")]
    pub on_fail: Option<String>,
}

/// The worktree, setup and verify steps around a dispatch (docs/WORKSPACES.md).
#[derive(Debug, Args, Clone)]
pub struct StepArgs {
    /// Run in a git worktree of its own, on branch vf/<unit> (under the state dir).
    #[arg(long)]
    pub worktree: bool,
    /// The commit the worktree's branch starts from (default: HEAD).
    #[arg(long, value_name = "REF", requires = "worktree")]
    pub base: Option<String>,
    /// Leave what the engine changed uncommitted on the unit's branch.
    #[arg(long, requires = "worktree")]
    pub no_commit: bool,
    /// Run this shell command (/bin/sh -c) in the unit's directory before the engine.
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Run this shell command after a successful engine run; its failure fails the unit.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
}

/// Options shared by everything that runs an engine.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Use this engine executable instead of searching PATH (also `VF_<ENGINE>_BIN`).
    #[arg(long, value_name = "PATH")]
    pub engine_bin: Option<PathBuf>,
    /// End the engine when it prints nothing for this many seconds.
    #[arg(long, value_name = "SECS")]
    pub stall_timeout: Option<f64>,
    /// End the engine after this many seconds in all.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub state: StateDirArg,
}

/// Model choice and the summary contract (see ENGINES.md for each engine's flags).
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// The engine's model, in its own naming (opencode: provider/model).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Reasoning effort, where the engine has a verified flag (claude, codex, copilot).
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// A JSON Schema (draft 2020-12) the summary must satisfy; a missing or
    /// violating summary fails the unit (reason `summary-schema`).
    #[arg(long, value_name = "FILE")]
    pub summary_schema: Option<PathBuf>,
    /// agy only: its `--agent NAME` (unverified against a real agy); the
    /// directory must have `.agents/agents/NAME/agent.md` (`vf workspace init`).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

/// `--output` / `--json`, for every command that reports a run.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Output format (default: human on a terminal, jsonl otherwise; for
    /// `orchestrate`, human is a live table).
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    /// Shorthand for `--output json`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

impl OutputArgs {
    /// The format asked for, if any (`--json` is `--output json`).
    pub fn explicit(&self) -> Option<OutputFormat> {
        if self.json {
            Some(OutputFormat::Json)
        } else {
            self.output
        }
    }

    /// The format to use: the one asked for, else human on a terminal and
    /// jsonl otherwise.
    pub fn format(&self) -> OutputFormat {
        self.explicit().unwrap_or_else(|| {
            if std::io::stdout().is_terminal() {
                OutputFormat::Human
            } else {
                OutputFormat::Jsonl
            }
        })
    }
}

/// `--state-dir` / `VF_STATE_DIR`, for every command that reads or writes state.
#[derive(Debug, Args, Clone)]
pub struct StateDirArg {
    /// vf's state directory (default: the nearest `.vibeflow/`, else `./.vibeflow`).
    #[arg(long, env = crate::ground::env::EnvVars::VF_STATE_DIR, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Readable live rendering.
    Human,
    /// Only the final result object.
    Json,
    /// One event per line, then the result line.
    Jsonl,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The unit to resume (its marker must hold an exact session id).
    pub unit: String,
    /// The resumed turn's prompt (default: a short "continue" instruction; stdin is not read).
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// Let the engine act without asking for permission.
    #[arg(long)]
    pub skip_permissions: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub after: AfterRunArgs,
    /// Kept from the unit's marker unless given again (or `--clear loops`).
    #[command(flatten)]
    pub loops: LoopArgs,
    #[command(flatten)]
    pub govern: GovernArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct OrchestrateArgs {
    /// The plan: a TOML file of `[[unit]]` tables (see docs/ORCHESTRATE.md).
    #[cfg_attr(not(feature = "temporal"), arg(required = true))]
    #[cfg_attr(feature = "temporal", arg(required_unless_present_any = ["status", "cancel"]))]
    pub plan: Option<PathBuf>,
    /// Run at most this many units at once (default: `jobs` in the user
    /// config, else 4).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Pick up every unit from its marker after a crash: skip done units,
    /// resume exact sessions, re-dispatch the rest with a bounded replay.
    #[arg(long)]
    pub resume: bool,
    /// Start no new unit once the plan's units cost this much (USD, as the
    /// engines report it); overrides the plan's `[budget] cost_usd`.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Start no new unit once the plan's units used this many tokens in all;
    /// overrides the plan's `[budget] tokens`.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Once the budget is reached, also end the running units (SIGTERM to
    /// each engine's process group, SIGKILL after the grace): `failed`, reason
    /// `budget`. Same as the plan's `[budget] hard = true`.
    #[arg(long)]
    pub hard_budget: bool,
    #[command(flatten)]
    pub govern: GovernLimitArgs,
    #[cfg(feature = "temporal")]
    #[command(flatten)]
    pub temporal: OrchestrateTemporal,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only this unit.
    pub unit: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Only units that finished at or after this time: RFC 3339 (`2026-11-30T08:00:00Z`)
    /// or an age (`90m`, `12h`, `7d`).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Print only the units' summed usage (`{units, since, usage}` with `--json`).
    #[arg(long)]
    pub total: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// These units (default: with --done or --all, every unit with a worktree).
    pub units: Vec<String>,
    /// Every unit that is done.
    #[arg(long, conflicts_with_all = ["all", "units"])]
    pub done: bool,
    /// Every unit with a worktree (not-done ones still need --force).
    #[arg(long, conflicts_with = "units")]
    pub all: bool,
    /// Also delete the branches vf/<unit>.
    #[arg(long)]
    pub branches: bool,
    /// Also clean units that are not done, and worktrees with uncommitted changes.
    #[arg(long)]
    pub force: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    #[command(subcommand)]
    pub command: AttachCommand,
}

#[derive(Debug, Subcommand)]
pub enum AttachCommand {
    /// Copy FILE into the store (kind from the extension: text, image, document).
    Add(AttachAddArgs),
    /// List stored attachments.
    List(AttachListArgs),
    /// Remove a stored attachment.
    Rm(AttachRmArgs),
}

#[derive(Debug, Args)]
pub struct AttachAddArgs {
    /// The file to copy.
    pub file: PathBuf,
    /// Store it under this name (default: FILE's name); its extension sets the kind.
    #[arg(long)]
    pub name: Option<String>,
    /// Replace an attachment of the same name.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct AttachListArgs {
    /// Print JSON (objects with name, kind, bytes, path).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct AttachRmArgs {
    /// The attachment's name.
    pub name: String,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check only this engine (repeatable; default: all).
    #[arg(long, short = 'e', value_name = "ENGINE")]
    pub engine: Vec<EngineChoice>,
    /// Print a JSON array (one object per engine) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Seconds each `--version` / `--help` call of a CLI may take before it is cut off.
    #[arg(long, value_name = "SECS", default_value_t = DOCTOR_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub timeout: u64,
    /// Run every CLI again instead of using the answers remembered for unchanged binaries.
    #[arg(long)]
    pub refresh: bool,
    /// Also run a live canary on each ready engine (a tiny prompt through the normal runtime).
    #[arg(long)]
    pub probe: bool,
    /// Instead of the engine checks: end the process groups of CLIs whose vf
    /// died (proven by pid, start time and boot id), and report everything else.
    #[arg(long, conflicts_with = "probe")]
    pub fix: bool,
    // The state dir of `--fix` and of the orphan report.
    #[command(flatten)]
    pub state: StateDirArg,
    /// Seconds each canary may take.
    #[arg(long, value_name = "SECS", default_value_t = PROBE_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=3600), requires = "probe")]
    pub probe_timeout: u64,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The plan the units ran in: its dependencies become the timeline's arrows.
    #[arg(long, value_name = "PLAN.toml")]
    pub plan: Option<PathBuf>,
    /// Only these units (comma-separated).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub units: Vec<String>,
    /// Only units that finished at or after this time: RFC 3339 or an age (`12h`).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Where the page goes (default: `report.html` in the state dir).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the page in the default browser once it is written.
    #[arg(long, conflicts_with = "json")]
    pub open: bool,
    /// Print the page's data model (docs/REPORT.md) instead of writing the page.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recorded stdout log (`-` reads stdin).
    #[arg(value_name = "FILE|-")]
    pub file: String,
    /// The CLI that wrote the log.
    #[arg(long)]
    pub cli: EngineId,
    /// The CLI's version (picks the manifest family; default: the newest).
    #[arg(long, value_name = "V")]
    pub cli_version: Option<String>,
    /// How the log is framed (default: the engine's transport).
    #[arg(long, value_enum)]
    pub transport: Option<OutputTransport>,
    /// `human`: a readable transcript; `jsonl`: one event per line.
    #[arg(long, value_enum, default_value_t = ReplayOutput::Human)]
    pub output: ReplayOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayOutput {
    Human,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// `vf judge --timeout`: seconds the whole call to the judge may take.
pub const JUDGE_TIMEOUT_SECS: u64 = 60;

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// The unit whose recorded answers and summary are judged.
    pub unit: String,
    /// Seconds the whole call may take (connect, send, answer).
    #[arg(long, value_name = "SECS", default_value_t = JUDGE_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
    /// Print the verdict as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct SkillArgs {
    #[command(subcommand)]
    pub command: SkillCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// Write the skill for one engine (default: claude, agy and AGENTS.md);
    /// idempotent, never over a file you edited without --force.
    Install(SkillInstallArgs),
}

#[derive(Debug, Args)]
pub struct SkillInstallArgs {
    /// claude (.claude/skills/vf/SKILL.md), agy (.agents/skills/vf/SKILL.md),
    /// codex or opencode (vf's section of AGENTS.md).
    #[arg(long, short = 'e')]
    pub engine: Option<EngineId>,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Replace files (or vf's AGENTS.md section) edited since vf wrote them.
    #[arg(long)]
    pub force: bool,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WorkspaceArgs {
    #[command(subcommand)]
    pub command: WorkspaceCommand,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Write the workspace files (idempotent; never over a file you edited
    /// without --force; every check before anything is written).
    Init(WorkspaceInitArgs),
}

#[derive(Debug, Args)]
pub struct WorkspaceInitArgs {
    /// The engine whose files to write (only agy has workspace files).
    #[arg(long, short = 'e')]
    pub engine: EngineId,
    /// An agent: `.agents/agents/NAME/agent.md` (with --instructions).
    #[arg(long, value_name = "NAME", requires = "instructions")]
    pub agent: Option<String>,
    /// The agent's instructions (a UTF-8 file).
    #[arg(long, value_name = "FILE", requires = "agent")]
    pub instructions: Option<PathBuf>,
    /// Copy this skill directory (with a SKILL.md) to `.agents/skills/` (repeatable).
    #[arg(long = "skill", value_name = "DIR")]
    pub skills: Vec<PathBuf>,
    /// MCP servers (`{"mcpServers": ...}` JSON) for `.agents/mcp_config.json`.
    #[arg(long, value_name = "FILE")]
    pub mcp: Option<PathBuf>,
    /// Write `.agents/hooks.json`: PreToolUse/PostToolUse call `vf hook`.
    #[arg(long)]
    pub hooks: bool,
    /// With --hooks: the tool `vf hook` refuses (repeatable).
    #[arg(long = "deny-tool", value_name = "NAME", requires = "hooks")]
    pub deny_tools: Vec<String>,
    /// Replace files edited since vf wrote them.
    #[arg(long)]
    pub force: bool,
    /// The workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event this call is for.
    #[arg(value_enum)]
    pub event: HookEvent,
    /// Refuse this tool at pre-tool-use (repeatable).
    #[arg(long = "deny-tool", value_name = "NAME")]
    pub deny_tools: Vec<String>,
    /// Append one JSON line per call to this file.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: Option<ConfigCommand>,
    /// Also show, for each unit of this plan, where each of its settings comes
    /// from (unit, the plan's `[defaults]`, the config file, built-in).
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the config file's path (`VF_CONFIG`, else the platform's config
    /// dir), whether or not it exists.
    Path,
}
