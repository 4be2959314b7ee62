//! `vf quota`'s definitions (clap only): what the quota governor's ledger
//! holds, and dropping a hold by hand (docs/QUOTA.md, "Seeing it").

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct QuotaArgs {
    #[command(subcommand)]
    pub command: Option<QuotaCommand>,
    /// Print JSON: the ledger's entries, each with its computed `state`.
    #[arg(long, global = true)]
    pub json: bool,
    /// Show the state as a process pausing at this percent (1 to 100) would
    /// see it (default: `pause_at` in the user config's `[defaults]`).
    #[arg(long, value_name = "PERCENT")]
    pub pause_at: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub enum QuotaCommand {
    /// Drop the holds of every engine and account, of ENGINE's accounts,
    /// or of ENGINE/ACCOUNT: their next start is let through at once.
    Clear(QuotaClearArgs),
}

#[derive(Debug, Args)]
pub struct QuotaClearArgs {
    /// `ENGINE` or `ENGINE/ACCOUNT` (default: every entry).
    #[arg(value_name = "ENGINE[/ACCOUNT]")]
    pub target: Option<String>,
}
