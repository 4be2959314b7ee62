//! The quota governor's flags (docs/CLI.md, "Quota"; the plan keys
//! `pause_at`, `stagger`, `account`): above a plan's and the user config's.

use clap::Args;

/// `--pause-at` and `--stagger`: how this process governs its starts.
#[derive(Debug, Args, Clone, Default)]
pub struct GovernLimitArgs {
    /// Start nothing new on an engine and account once its reported
    /// utilization reaches this percent (1 to 100), until its window resets.
    #[arg(long, value_name = "PERCENT")]
    pub pause_at: Option<f64>,
    /// Seconds between two starts on an engine and account after a hold
    /// (0 to 3600, default 5).
    #[arg(long, value_name = "SECS")]
    pub stagger: Option<f64>,
}

/// The governor's flags of a single-unit command: its limits and an account.
#[derive(Debug, Args, Clone, Default)]
pub struct GovernArgs {
    #[command(flatten)]
    pub limits: GovernLimitArgs,
    /// Run on this declared account of the engine (the user config's
    /// `[[accounts]]`) and no other: held, the command exits 75.
    #[arg(long, value_name = "NAME")]
    pub account: Option<String>,
}
