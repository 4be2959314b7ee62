//! The raw log of an ACP session: every JSON-RPC line of both directions, in
//! wire order, one a line, tagged with its direction (docs/ACP.md, "Raw log").
//!
//! `{"dir":"out","msg":<the line as sent>}` (vf to the agent),
//! `{"dir":"in","msg":<the line as received>}` (the agent to vf). A line from
//! the agent that is not JSON is kept as a string, `{"dir":"in","text":"…"}`;
//! a line over the reader's cap as `{"dir":"in","oversized":<bytes>}`. The
//! `msg` is the wire text itself, not re-serialised, so a raw log line holds
//! exactly what crossed the pipe (but for the `env` and `headers` values of an
//! `mcpServers` list, re-serialised with each value `***`: `acp::mcp`). The captures in `fixtures/acp/` use the same
//! format, so projecting a capture and replaying a raw log are one path.

use serde::Serialize;
use serde_json::Value;

/// Which way a line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// vf to the agent.
    Out,
    /// The agent to vf.
    In,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Out => "out",
            Dir::In => "in",
        }
    }
}

/// What one wire line was.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A JSON value (a JSON-RPC message, or not: the projector decides).
    Msg(Value),
    /// A line that is not JSON (invalid UTF-8 already replaced).
    Text(String),
    /// A line over the cap; this many bytes were skipped.
    Oversized(u64),
}

/// Parses one wire line (the text between newlines, UTF-8 already decoded).
pub fn entry_of(line: &str) -> Entry {
    match serde_json::from_str::<Value>(line) {
        Ok(v) => Entry::Msg(v),
        Err(_) => Entry::Text(line.to_string()),
    }
}

/// The raw-log line for `entry`, which came from `line` on the wire.
pub fn log_line(dir: Dir, line: &str, entry: &Entry) -> String {
    let d = dir.as_str();
    match entry {
        // The wire text itself: it parsed as one JSON value, so the result
        // is one JSON object too (surrounding blanks are insignificant).
        Entry::Msg(_) => format!(r#"{{"dir":"{d}","msg":{}}}"#, line.trim()),
        Entry::Text(t) => format!(r#"{{"dir":"{d}","text":{}}}"#, Value::from(t.as_str())),
        Entry::Oversized(n) => format!(r#"{{"dir":"{d}","oversized":{n}}}"#),
    }
}

/// Reads a raw-log (or capture) line back; `None` for a line that is not one.
pub fn parse_log_line(line: &str) -> Option<(Dir, Entry)> {
    let v: Value = serde_json::from_str(line).ok()?;
    let dir = match v.get("dir")?.as_str()? {
        "out" => Dir::Out,
        "in" => Dir::In,
        _ => return None,
    };
    if let Some(m) = v.get("msg") {
        return Some((dir, Entry::Msg(m.clone())));
    }
    if let Some(t) = v.get("text").and_then(Value::as_str) {
        return Some((dir, Entry::Text(t.to_string())));
    }
    let n = v.get("oversized")?.as_u64()?;
    Some((dir, Entry::Oversized(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_keep_the_wire_text() {
        let wire = r#"{"jsonrpc":"2.0","id":1,"result":{"b":1,"a":2}}"#;
        let e = entry_of(wire);
        let logged = log_line(Dir::In, wire, &e);
        assert_eq!(
            logged,
            r#"{"dir":"in","msg":{"jsonrpc":"2.0","id":1,"result":{"b":1,"a":2}}}"#
        );
        assert_eq!(parse_log_line(&logged), Some((Dir::In, e)));
        let text = entry_of("not json \"quoted\"");
        let logged = log_line(Dir::In, "", &text);
        assert_eq!(logged, r#"{"dir":"in","text":"not json \"quoted\""}"#);
        assert_eq!(parse_log_line(&logged), Some((Dir::In, text)));
        let big = log_line(Dir::In, "", &Entry::Oversized(9));
        assert_eq!(parse_log_line(&big), Some((Dir::In, Entry::Oversized(9))));
        assert_eq!(parse_log_line(r#"{"dir":"up","msg":1}"#), None);
    }
}
