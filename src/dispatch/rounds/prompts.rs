//! STUB (helper `verdict` writes the real one; the integrator replaces this
//! file): the prompts of the rounds, only what the resolve round calls.

use crate::unit::marker::rounds::RoundKind;

/// The resolver's prompt: the conflicted paths and both sides' summaries.
pub fn resolve(
    dependency: &str,
    unit: &str,
    paths: &[String],
    dep_summary: Option<&str>,
    own_summary: Option<&str>,
) -> String {
    format!(
        "Merging the work of unit {dependency} into unit {unit} conflicts in: {}.\n\
         Resolve the conflicts in these files (remove every conflict marker), \
         keeping the intent of both sides. Do not commit.\n\
         {dependency}'s summary: {}\n{unit}'s task: {}\n",
        paths.join(", "),
        dep_summary.unwrap_or("(none)"),
        own_summary.unwrap_or("(none)")
    )
}

/// The prompt that continues a round a crash interrupted.
pub fn continue_round(kind: RoundKind) -> String {
    format!(
        "vf was interrupted during this {} round: continue where you left off.",
        kind.as_str()
    )
}
