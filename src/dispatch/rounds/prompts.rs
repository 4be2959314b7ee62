//! STUB (integrator): replaced by helper `verdict`'s module on merge.
use serde_json::Value;

use crate::unit::marker::rounds::{Comment, RoundKind};

pub const VERIFY_TAIL_BYTES: usize = 8192;
pub const DIFF_CAP: usize = 64 * 1024;

pub fn tail_8k(bytes: &[u8]) -> String {
    let from = bytes.len().saturating_sub(VERIFY_TAIL_BYTES);
    String::from_utf8_lossy(&bytes[from..]).into_owned()
}

pub fn fix_after_verify(
    command: &str,
    exit_code: Option<i32>,
    tail: &str,
    (n, of): (u32, u32),
) -> String {
    format!(
        "vf fix round {n}/{of}: the check `{command}` failed (exit status {exit_code:?}). Its output ends:\n```\n{tail}\n```\nFix the cause and end with your fenced json summary."
    )
}

pub fn review(
    task: &str,
    summary: Option<&Value>,
    diff: &str,
    note: Option<&str>,
    extra: Option<&str>,
) -> String {
    format!(
        "vf review. Task:\n{task}\nSummary: {summary:?}\nDiff:\n````\n{diff}\n````\n{}\n{}\nAnswer with a fenced json verdict {{\"verdict\": \"approve\"|\"changes\", \"comments\": [...]}}.",
        note.unwrap_or(""),
        extra.unwrap_or("")
    )
}

pub fn cap_diff(diff: &str) -> (String, Option<String>) {
    match diff.len() > DIFF_CAP {
        false => (diff.to_string(), None),
        true => (
            crate::ground::text::cut(diff, DIFF_CAP).to_string(),
            Some("the diff was cut".into()),
        ),
    }
}

pub fn revise_after_review(comments: &[Comment], (n, of): (u32, u32)) -> String {
    let list: Vec<String> = comments.iter().map(|c| format!("- {}", c.text)).collect();
    format!(
        "vf review round {n}/{of} asked for changes:\n{}\nAddress them and end with your fenced json summary.",
        list.join("\n")
    )
}

pub fn resolve(
    dependency: &str,
    unit: &str,
    paths: &[String],
    _dep: Option<&Value>,
    _own: Option<&Value>,
) -> String {
    format!(
        "A merge of vf/{dependency} into vf/{unit} conflicted in: {}. Resolve every conflict; do not commit.",
        paths.join(", ")
    )
}

pub fn continue_round(kind: RoundKind) -> String {
    format!(
        "vf was interrupted during the {} round; continue and finish it.",
        kind.as_str()
    )
}

pub fn invalid_verdict(why: &str) -> String {
    format!(
        "Your answer was not a valid verdict: {why}. Answer again with only the fenced json verdict."
    )
}
