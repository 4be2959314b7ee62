//! Closed loops around a unit's run (issue 41): a failed `verify` goes back
//! to the author's session (`fix`), a reviewer from another engine gates
//! the work (`review`), a dependency merge that conflicts is resolved
//! (`resolve`). The driver holds the unit's lock across every round and
//! records each in the marker ([`crate::unit::marker::rounds`]).
//!
//! The map:
//! - `spec`: what the unit asks (`Loops`), resolved with its other options.
//! - `resolver`: the resolve round of a dependency merge that conflicted.
//! - `nested`: a review or resolve round's nested unit (stub: integrator's).
//! - `prompts`: the rounds' prompts (stub: helper `verdict`'s).

pub mod nested;
pub mod prompts;
pub mod resolver;
pub mod spec;

pub use spec::{Loops, MAX_FIX_ROUNDS, MAX_REVIEW_ROUNDS, OnConflict, Review, RoundBudget};
