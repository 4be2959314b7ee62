//! The closed loops' flags of `vf dispatch` and `vf resume` (docs/CLI.md,
//! "Closed loops"; the plan keys `fix_rounds`, `review`).

use clap::Args;

use crate::engine::EngineId;

/// Fix rounds, a reviewer and the rounds' token budget.
#[derive(Debug, Args, Clone, Default)]
pub struct LoopArgs {
    /// When `--verify` fails, send the failure back to the unit's own
    /// session this many times, verifying again after each (0 to 20).
    #[arg(long, value_name = "N")]
    pub fix_rounds: Option<u32>,
    /// Have this engine review the work, read-only, before the unit is
    /// done; its `changes` go back to the author (a CLI vf knows).
    #[arg(long, value_name = "ENGINE")]
    pub review_engine: Option<EngineId>,
    /// Reviews allowed (1 to 10, default 1); the last `changes` fails the
    /// unit (reason `review`).
    #[arg(long, value_name = "N")]
    pub review_rounds: Option<u32>,
    /// The reviewer's model, in its engine's naming.
    #[arg(long, value_name = "NAME")]
    pub review_model: Option<String>,
    /// Extra instructions for the reviewer.
    #[arg(long, value_name = "TEXT")]
    pub review_prompt: Option<String>,
    /// Start no further round once the unit's attempts and rounds used this
    /// many tokens in all (reason `budget`).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
}
