//! Command-line definitions only (clap). Resolution into config happens in
//! `commands/*`, so these structs stay a plain description of the flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::engine::{EngineId, OutputTransport};

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
    Dispatch(DispatchArgs),
    /// Project a recorded CLI output log into typed conversation events.
    Replay(ReplayArgs),
    /// Print shell completions.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    Man,
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
    /// The engine to run.
    #[arg(long, short = 'e')]
    pub engine: EngineId,
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
    /// Print the exact invocation without spawning anything.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: print JSON.
    #[arg(long)]
    pub json: bool,
    /// vf's state directory (default: the nearest `.vibeflow/`, else `./.vibeflow`).
    #[arg(long, env = "VF_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
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
