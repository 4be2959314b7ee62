//! What a unit's closed loops ask (plan keys `fix_rounds`, `review`,
//! `on_conflict`, `resolver`; `--fix-rounds`, `--review-engine`,
//! `--review-rounds`): resolved once with the rest of the unit's options.

use crate::engine::EngineId;

/// The most fix rounds a unit may ask for.
pub const MAX_FIX_ROUNDS: u32 = 20;
/// The most review rounds a unit may ask for.
pub const MAX_REVIEW_ROUNDS: u32 = 10;

/// A unit's loops; the default asks for none (a unit runs once).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loops {
    /// Times a failed `verify` goes back to the author's session.
    pub fix_rounds: u32,
    pub review: Option<Review>,
    pub conflict: OnConflict,
    /// What the rounds together may spend (`--max-cost`, `--max-tokens`): once
    /// the unit's usage so far reaches it, no further round starts (`budget`).
    pub budget: RoundBudget,
}

/// A cap on the usage of all of a unit's rounds together.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoundBudget {
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
}

impl Loops {
    /// Whether any loop can run (the driver, else one plain attempt).
    pub fn any(&self) -> bool {
        self.fix_rounds > 0 || self.review.is_some() || self.conflict != OnConflict::Fail
    }
}

/// A reviewer from another engine that gates the unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub engine: EngineId,
    pub model: Option<String>,
    /// Reviews allowed (1 to [`MAX_REVIEW_ROUNDS`]); each `changes` before
    /// the last sends the comments back to the author.
    pub rounds: u32,
    /// Extra instructions for the reviewer.
    pub prompt: Option<String>,
}

/// What a dependency merge that conflicts does.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum OnConflict {
    /// The merge is aborted and the unit fails (`merge-conflict`).
    #[default]
    Fail,
    /// The merge stays in progress and `engine` resolves it before the task.
    Resolve { engine: EngineId },
}
