//! `vf conv`'s definitions (clap only), apart from `cli.rs` for its size.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::*;

#[derive(Debug, Args)]
pub struct ConvArgs {
    #[command(subcommand)]
    pub command: ConvCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConvCommand {
    /// Create a conversation with its participants.
    New(ConvNewArgs),
    /// Append a user message and deliver one turn to each selected participant.
    Say(Box<ConvSayArgs>),
    /// Print the transcript, each participant's cursor, binding and last delivery mode.
    Show(ConvShowArgs),
    /// List conversations.
    Ls(ConvLsArgs),
    /// Remove a conversation.
    Rm(ConvNameArgs),
    /// Set the shared handoff document (VF-HANDOFF/1) every participant's next turn carries.
    Handoff(ConvHandoffArgs),
}

#[derive(Debug, Args)]
pub struct ConvNameArgs {
    /// The conversation's name (a safe file name).
    pub name: String,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct ConvNewArgs {
    /// The conversation's name (a safe file name).
    pub name: String,
    /// A participant: ENGINE, ENGINE:ALIAS, optionally @MODEL (repeatable; the
    /// same engine may appear twice under two aliases).
    #[arg(long = "with", value_name = "ENGINE[:ALIAS][@MODEL]", required = true)]
    pub with: Vec<String>,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct ConvSayArgs {
    /// The conversation's name.
    pub name: String,
    /// Deliver the turn to this participant (repeatable).
    #[arg(
        long = "to",
        value_name = "ALIAS",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub to: Vec<String>,
    /// Deliver the turn to every participant.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// Deliver lines START-END of a file with this turn only: never in the
    /// transcript, the envelope or a replay (repeatable).
    #[arg(long = "private-range", value_name = "FILE:START-END")]
    pub private_range: Vec<String>,
    /// Start a new native session (full-history with the replay block).
    #[arg(long)]
    pub fresh: bool,
    /// Let the participants edit: no read-only flags (default: read-only
    /// where the engine can enforce it, reported per turn).
    #[arg(long)]
    pub write: bool,
    /// Run a read-only turn even where the engine cannot hold it read-only
    /// (opencode, copilot, agy, a resumed codex turn): it may edit, and the
    /// turn says `unenforced` (default: such a turn is refused, exit 2).
    #[arg(long, conflicts_with = "write")]
    pub allow_unenforced: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub sandbox: super::SandboxArgs,
    /// MCP servers for every turn of this `say`: a `{"mcpServers": ...}` JSON
    /// file, given to each participant's engine as `vf dispatch --mcp` does.
    #[arg(long, value_name = "FILE")]
    pub mcp: Option<PathBuf>,
    /// Working directory for the engines (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// End an engine when it prints nothing for this many seconds.
    #[arg(long, value_name = "SECS")]
    pub stall_timeout: Option<f64>,
    /// End an engine after this many seconds in all.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub govern: super::GovernArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct ConvShowArgs {
    /// The conversation's name.
    pub name: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct ConvLsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub state: StateDirArg,
}

#[derive(Debug, Args)]
pub struct ConvHandoffArgs {
    /// The conversation's name.
    pub name: String,
    /// The document (UTF-8 text).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub state: StateDirArg,
}
