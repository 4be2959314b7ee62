//! Bounded replay of a unit's own history, for a fresh re-dispatch when its
//! native session cannot be resumed exactly.
//!
//! When an attempt ends, its public response (the engine's answer: never the
//! prompt, never private ranges) is appended to
//! `<state>/units/<unit>/responses.jsonl`, cut to [`MAX_RESPONSE_BYTES`] and
//! with the sha256 of the full text. A fresh re-dispatch gets the last
//! [`MAX_REPLAYED`] of them in a labelled block that says plainly that this
//! is a new session.

use std::path::{Path, PathBuf};

use crate::ground::text::sha256_hex;
use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::ground::fsutil::{now_rfc3339, write_atomic};
use crate::ground::text::cut;
use crate::unit::marker::{MarkerStore, UnitState};

pub const MAX_REPLAYED: usize = 8;
pub const MAX_RESPONSE_BYTES: usize = 2048;

/// One recorded public response of an earlier attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub unit: String,
    pub engine: EngineId,
    pub attempt: u32,
    pub state: UnitState,
    /// sha256 of the full response, hex.
    pub sha256: String,
    /// Length of the full response in bytes.
    pub bytes: usize,
    /// At most [`MAX_RESPONSE_BYTES`] of it, cut on a character boundary.
    pub text: String,
    pub truncated: bool,
    pub recorded_at: String,
}

/// How much history a replay carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Responses on record for the unit.
    pub source: usize,
    /// Responses put in the prompt (the most recent ones).
    pub replayed: usize,
    /// How many of the replayed ones were cut.
    pub truncated: usize,
}

/// The part of a history that a replay carries: the last [`MAX_REPLAYED`]
/// (the same bound for unit re-runs and conversation turns).
pub fn recent<T>(all: &[T]) -> &[T] {
    &all[all.len().saturating_sub(MAX_REPLAYED)..]
}

/// One response as a replay carries it: at most [`MAX_RESPONSE_BYTES`], cut
/// on a character boundary, and whether it was cut.
pub fn bounded(full: &str) -> (&str, bool) {
    let text = cut(full, MAX_RESPONSE_BYTES);
    (text, text.len() < full.len())
}

pub fn history_path(state_dir: &Path, unit: &str) -> PathBuf {
    MarkerStore::new(state_dir)
        .logs_dir(unit)
        .join("responses.jsonl")
}

/// Appends one attempt's response (rewriting the file atomically, so a crash
/// leaves the old or the new history, never a torn line).
pub fn record(
    state_dir: &Path,
    unit: &str,
    engine: EngineId,
    attempt: u32,
    state: UnitState,
    full: &str,
) -> std::io::Result<()> {
    let path = history_path(state_dir, unit);
    let mut bytes = match crate::ground::fsutil::read_no_follow(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    let sha256 = sha256_hex(full.as_bytes());
    let (text, truncated) = bounded(full);
    let r = Response {
        unit: unit.to_string(),
        engine,
        attempt,
        state,
        sha256,
        bytes: full.len(),
        text: text.to_string(),
        truncated,
        recorded_at: now_rfc3339(),
    };
    serde_json::to_writer(&mut bytes, &r).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(&path, &bytes)
}

/// The unit's recorded responses, oldest first (unreadable lines are skipped;
/// an unreadable file is none: [`load_checked`] says why).
pub fn load(state_dir: &Path, unit: &str) -> Vec<Response> {
    load_checked(state_dir, unit).unwrap_or_default()
}

/// As [`load`], but a file that cannot be read (a FIFO or a link planted in
/// a cloned state dir: never waited on, never followed) is an error.
pub fn load_checked(state_dir: &Path, unit: &str) -> std::io::Result<Vec<Response>> {
    let bytes = match crate::ground::fsutil::read_no_follow(&history_path(state_dir, unit)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<Response>(l).ok())
        .filter(|r| r.unit == unit)
        .collect())
}

/// The replay block for `unit` followed by `prompt`, or `None` when there is
/// no history to replay.
pub fn prepend(unit: &str, history: &[Response], prompt: &str) -> Option<(String, Counts)> {
    if history.is_empty() {
        return None;
    }
    let recent = recent(history);
    let mut truncated = 0;
    let mut s = String::new();
    s.push_str(&format!(
        "<<< vf replay: unit {unit:?}; this is NOT a continued session\n\
         vf could not resume this unit's earlier session exactly, so this is a fresh session.\n\
         Below are the public responses of earlier attempts at this same unit, for reference only.\n\
         They may be incomplete, and their changes may or may not be in the working tree: verify before relying on them.\n\
         source responses: {} · replayed: {} (the most recent, at most {MAX_REPLAYED}) · each cut to at most {MAX_RESPONSE_BYTES} bytes\n",
        history.len(),
        recent.len()
    ));
    for (i, r) in recent.iter().enumerate() {
        let (text, cut_again) = bounded(&r.text);
        let cut_now = r.truncated || cut_again;
        if cut_now {
            truncated += 1;
        }
        s.push_str(&format!(
            "--- response {} of {} · unit {} · engine {} · attempt {} · state {} · sha256 {} · {} bytes{} ---\n",
            i + 1,
            recent.len(),
            r.unit,
            r.engine,
            r.attempt,
            r.state.as_str(),
            r.sha256,
            r.bytes,
            if cut_now {
                format!(", truncated to {}", text.len())
            } else {
                String::new()
            }
        ));
        s.push_str(text);
        if !text.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!("--- end of response {} ---\n", i + 1));
    }
    s.push_str(&format!(
        "truncated: {truncated} of {}\nvf replay >>>\n\nThe task:\n",
        recent.len()
    ));
    s.push_str(prompt);
    Some((
        s,
        Counts {
            source: history.len(),
            replayed: recent.len(),
            truncated,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_char_boundaries() {
        let s = "é".repeat(2000); // 4000 bytes
        let c = cut(&s, MAX_RESPONSE_BYTES);
        assert_eq!(c.len(), 2048);
        let s = format!("a{}", "é".repeat(2000));
        let c = cut(&s, MAX_RESPONSE_BYTES);
        assert_eq!(c.len(), 2047);
        assert!(std::str::from_utf8(c.as_bytes()).is_ok());
        assert_eq!(cut("short", 10), "short");
    }

    proptest::proptest! {
        #[test]
        fn cut_is_the_longest_valid_prefix(s in "\\PC{0,300}", max in 0usize..400) {
            let c = cut(&s, max);
            proptest::prop_assert!(s.starts_with(c));
            proptest::prop_assert!(c.len() <= max || c.len() == s.len() && s.len() <= max);
            if s.len() > max {
                // The next character would not have fitted.
                let next = s[c.len()..].chars().next().unwrap();
                proptest::prop_assert!(c.len() + next.len_utf8() > max);
            } else {
                proptest::prop_assert_eq!(c, s.as_str());
            }
        }
    }

    #[test]
    fn keeps_last_eight_with_digests_and_counts() {
        let t = tempfile::tempdir().unwrap();
        assert!(prepend("u", &load(t.path(), "u"), "task").is_none());
        for i in 1..=10u32 {
            let text = if i == 9 {
                "€".repeat(1000)
            } else {
                format!("answer {i}")
            };
            record(
                t.path(),
                "u",
                EngineId::Copilot,
                i,
                UnitState::Failed,
                &text,
            )
            .unwrap();
        }
        let h = load(t.path(), "u");
        assert_eq!(h.len(), 10);
        assert!(h[8].truncated && h[8].bytes == 3000 && h[8].text.len() == 2046);
        assert_eq!(h[8].sha256, sha256_hex("€".repeat(1000).as_bytes()));
        let (p, c) = prepend("u", &h, "the real task").unwrap();
        assert_eq!(
            c,
            Counts {
                source: 10,
                replayed: 8,
                truncated: 1
            }
        );
        assert!(p.contains("NOT a continued session"));
        assert!(!p.contains("answer 2\n") && p.contains("answer 3\n") && p.contains("answer 10\n"));
        assert!(p.contains(&sha256_hex(b"answer 10")));
        assert!(p.contains("attempt 10"));
        assert!(p.ends_with("The task:\nthe real task"));
    }
}
