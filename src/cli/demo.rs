//! `vf demo`'s and the hidden `vf __play`'s definitions (clap only).

use clap::Args;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Print only the plan's result object (as `vf orchestrate --json`): no
    /// live table and no status table; the report's line goes to stderr.
    #[arg(long)]
    pub json: bool,
}

/// What the recorded engine runs: an embedded capture, replayed.
#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The capture's name (`engine::recorded::CAPTURES`).
    pub capture: String,
    /// The file the capture's tool call stands for, written in the cwd.
    #[arg(long, value_name = "NAME")]
    pub file: String,
}
