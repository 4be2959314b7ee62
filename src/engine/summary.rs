//! The fenced ```` ```json ```` summary at the end of an agent's answer.
//!
//! Rule: the summary is the LAST block opened by a line ```` ```json ````
//! (case-insensitive) and closed by a line of backticks. It parses as JSON or
//! it is reported invalid with the parse error; it is never guessed.

pub mod schema;

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum Summary {
    /// No ```json block in the answer.
    Absent,
    /// The last ```json block parsed.
    Valid { value: Value },
    /// The last ```json block is not valid JSON (or never closed).
    Invalid { error: String },
}

impl Summary {
    pub fn value(&self) -> Option<&Value> {
        match self {
            Summary::Valid { value } => Some(value),
            _ => None,
        }
    }
    pub fn error(&self) -> Option<&str> {
        match self {
            Summary::Invalid { error } => Some(error),
            _ => None,
        }
    }
}

/// An opening fence: up to three spaces, then three or more backticks, then an info string.
fn opening_fence(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ticks = rest.len() - rest.trim_start_matches('`').len();
    if ticks < 3 {
        return None;
    }
    let info = rest[ticks..].trim();
    // A backtick in the info string means this is inline code, not a fence.
    if info.contains('`') {
        return None;
    }
    Some((ticks, info))
}

/// A closing fence for a block opened with `ticks` backticks.
fn closes(line: &str, ticks: usize) -> bool {
    let t = line.trim();
    t.len() >= ticks && t.bytes().all(|b| b == b'`') && line.len() - line.trim_start().len() <= 3
}

/// Extracts the summary from the final answer text.
pub fn extract(text: &str) -> Summary {
    enum State<'a> {
        Outside,
        Other(usize),
        Json { ticks: usize, body: Vec<&'a str> },
    }
    let mut state = State::Outside;
    let mut last: Option<Vec<&str>> = None;
    let mut unterminated = false;
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        state = match state {
            State::Outside => match opening_fence(line) {
                Some((ticks, info)) if info.eq_ignore_ascii_case("json") => State::Json {
                    ticks,
                    body: Vec::new(),
                },
                Some((ticks, _)) => State::Other(ticks),
                None => State::Outside,
            },
            State::Other(ticks) => {
                if closes(line, ticks) {
                    State::Outside
                } else {
                    State::Other(ticks)
                }
            }
            State::Json { ticks, mut body } => {
                if closes(line, ticks) {
                    last = Some(body);
                    State::Outside
                } else {
                    body.push(line);
                    State::Json { ticks, body }
                }
            }
        };
    }
    if let State::Json { .. } = state {
        unterminated = true;
    }
    if unterminated {
        return Summary::Invalid {
            error: "the last ```json block is never closed".into(),
        };
    }
    match last {
        None => Summary::Absent,
        Some(body) => {
            let src = body.join("\n");
            match serde_json::from_str::<Value>(&src) {
                Ok(value) => Summary::Valid { value },
                Err(e) => Summary::Invalid {
                    error: format!("invalid JSON in the ```json block: {e}"),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_block_wins() {
        let t = "a\n```json\n{\"a\":1}\n```\nthen\n```JSON\n{\"b\":2}\n```\n";
        assert_eq!(extract(t).value(), Some(&json!({"b": 2})));
    }

    #[test]
    fn absent_and_other_fences() {
        assert_eq!(extract("no fences"), Summary::Absent);
        assert_eq!(extract("```python\nprint(1)\n```\n"), Summary::Absent);
        // ```json inside another fence is content, not an opening.
        assert_eq!(extract("````md\n```json\n{}\n```\n````\n"), Summary::Absent);
    }

    #[test]
    fn invalid_is_reported_not_guessed() {
        let s = extract("```json\n{\"a\":\n```\n");
        assert!(s.error().unwrap().contains("invalid JSON"), "{s:?}");
    }

    #[test]
    fn unterminated_is_invalid() {
        let s = extract("```json\n{\"a\":1}\n");
        assert!(s.error().unwrap().contains("never closed"));
    }

    #[test]
    fn crlf_and_indent() {
        let t = "x\r\n  ```json\r\n{\"k\":true}\r\n  ```\r\n";
        assert_eq!(extract(t).value(), Some(&json!({"k": true})));
    }

    #[test]
    fn inline_backticks_are_not_fences() {
        assert_eq!(extract("use ```json``` here"), Summary::Absent);
    }
}
