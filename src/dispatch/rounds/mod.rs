//! Closed loops around a unit's run (issue 41): a failed `verify` goes back
//! to the author's session (`fix`), a reviewer from another engine gates
//! the work (`review`), a dependency merge that conflicts is resolved
//! (`resolve`). The driver holds the unit's lock across every round and
//! records each in the marker ([`crate::unit::marker::rounds`]).
//!
//! The map:
//! - `spec`: what the unit asks (`Loops`), resolved with its other options;
//! - `next`: the loop's next step, read off the marker alone (pure);
//! - `drive`: the loop under one hold of the unit's lock; `author` the
//!   author's resumed session; `review` a review round; `resolver` the resolve
//!   round of a dependency merge that conflicted; `nested` a round's own
//!   engine run as a nested unit in the unit's folder;
//! - `review_verdict`: the reviewer's answer, checked against the built-in schema;
//! - `prompts`: every prompt the loops send (fix, review, revision, resolve, continue).

mod author;
mod drive;
pub mod nested;
pub mod next;
pub mod prompts;
pub mod resolver;
mod review;
pub mod review_verdict;
pub mod spec;

pub(crate) use drive::drive;

pub use spec::{Loops, MAX_FIX_ROUNDS, MAX_REVIEW_ROUNDS, OnConflict, Review, RoundBudget};
