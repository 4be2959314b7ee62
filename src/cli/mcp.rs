//! `vf mcp` (docs/MCP.md): vf as an MCP server on stdio, and `vf mcp install`,
//! the entry that starts it in an engine's own MCP configuration.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::engine::EngineId;

/// `vf mcp --max-depth`: the deepest unit a call may start (1: a unit vf
/// started directly). Beside `unit::lineage::DEFAULT_MAX_DEPTH`, which must agree.
pub const MCP_MAX_DEPTH: u32 = 2;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    #[command(flatten)]
    pub serve: McpServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Print (or with --write add, idempotently) the entry that starts
    /// `vf mcp` in an engine's own MCP configuration.
    Install(McpInstallArgs),
}

/// The server's own settings: every call runs under them and may only
/// tighten them.
#[derive(Debug, Args, Clone)]
pub struct McpServeArgs {
    #[command(flatten)]
    pub state: super::StateDirArg,
    /// The engines a call may dispatch to (comma-separated; default: every
    /// engine `vf doctor` finds ready).
    #[arg(long, value_name = "ENGINES", value_delimiter = ',')]
    pub allow_engines: Vec<EngineId>,
    /// Let a call ask for `skip_permissions` (refused otherwise).
    #[arg(long)]
    pub allow_skip_permissions: bool,
    /// The deepest unit a call may start: 1 is a unit vf started directly,
    /// one more per level of agents below it.
    #[arg(long, value_name = "N", default_value_t = MCP_MAX_DEPTH,
          value_parser = clap::value_parser!(u32).range(1..64))]
    pub max_depth: u32,
    /// Every unit runs read-only.
    #[arg(long)]
    pub read_only: bool,
    /// Every unit runs in this sandbox at least (off, workspace, read-only).
    #[arg(long, value_name = "MODE", value_parser = ["off", "workspace", "read-only"])]
    pub sandbox: Option<String>,
    /// Every unit runs in its own git worktree.
    #[arg(long)]
    pub worktree: bool,
    /// The most a unit may spend (USD); a call may ask for less.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// The longest a unit may run (seconds); a call may ask for less.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// The workspace the units run in (default: the current directory); a
    /// plan path must lie inside it.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpInstallArgs {
    /// The engine whose MCP configuration gets the entry.
    #[arg(long, short = 'e', value_parser = ["claude", "codex", "gemini", "opencode", "copilot"])]
    pub engine: String,
    /// Add the entry to the engine's configuration (default: print it).
    #[arg(long)]
    pub write: bool,
    /// The project directory, for engines configured per project
    /// (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
    /// With --write: replace a `vf` entry that differs from this one.
    #[arg(long, requires = "write")]
    pub force: bool,
    /// The server's flags the entry starts it with (after `--`: `vf mcp install
    /// --engine claude -- --allow-engines codex --max-depth 2`).
    #[arg(last = true, value_name = "FLAGS")]
    pub server_args: Vec<String>,
}
