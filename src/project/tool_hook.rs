//! `vf hook`: one call of an agent's tool hook (`PreToolUse`/`PostToolUse`,
//! the payload JSON on stdin), judged against a deny list and logged.
//!
//! Written for agy's `.agents/hooks.json` (`vf workspace init --hooks`).
//! agy's hooks are unverified: a denial here is best effort and no
//! guardrail; agy stays post-hoc only (ENGINES.md).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// Largest payload read from stdin.
pub const MAX_PAYLOAD_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    PreToolUse,
    PostToolUse,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub at: String,
    pub event: Event,
    pub tool: Option<String>,
    pub allow: bool,
    pub reason: Option<String>,
}

/// The tool a payload names: `tool_name`, `toolName`, `tool.name` or `tool`.
pub fn tool_name(payload: &Value) -> Option<&str> {
    ["tool_name", "toolName"]
        .iter()
        .find_map(|k| payload.get(*k).and_then(Value::as_str))
        .or_else(|| {
            payload
                .get("tool")
                .and_then(|t| t.get("name"))
                .and_then(Value::as_str)
        })
        .or_else(|| payload.get("tool").and_then(Value::as_str))
}

/// The decision for one call. `payload` is `None` when stdin was not a JSON
/// object: with a deny list, a pre-tool-use call is then refused (it cannot
/// be told apart from a denied tool).
pub fn decide(event: Event, payload: Option<&Value>, deny: &[String]) -> Decision {
    let tool = payload.and_then(tool_name).map(str::to_string);
    let refused = match (event, payload, &tool) {
        (Event::PostToolUse, ..) => None,
        (Event::PreToolUse, _, _) if deny.is_empty() => None,
        (Event::PreToolUse, None, _) => Some("the hook payload is not a JSON object".to_string()),
        (Event::PreToolUse, Some(_), None) => Some("the hook payload names no tool".to_string()),
        (Event::PreToolUse, Some(_), Some(t)) => deny
            .iter()
            .any(|d| d == t)
            .then(|| format!("vf: the tool {t:?} is denied")),
    };
    Decision {
        at: crate::ground::fsutil::now_rfc3339(),
        event,
        tool,
        allow: refused.is_none(),
        reason: refused,
    }
}

/// Appends `d` as one JSON line to `path` (a regular file, a FIFO that is
/// read, a terminal), never through a link: fsutil::output's rule.
pub fn log(path: &Path, d: &Decision) -> Result<(), crate::ground::fsutil::user_file::OutputError> {
    use crate::ground::fsutil::user_file::{OutputError, append};
    let mut line = serde_json::to_vec(d).map_err(|e| OutputError::Io(std::io::Error::other(e)))?;
    line.push(b'\n');
    append(path, &line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deny() -> Vec<String> {
        vec!["run_command".into()]
    }

    #[test]
    fn a_denied_tool_is_refused_only_before_it_runs() {
        let p = json!({"tool_name": "run_command", "tool_input": {}});
        let d = decide(Event::PreToolUse, Some(&p), &deny());
        assert_eq!((d.allow, d.tool.as_deref()), (false, Some("run_command")));
        assert_eq!(
            d.reason.as_deref(),
            Some("vf: the tool \"run_command\" is denied")
        );
        assert!(decide(Event::PostToolUse, Some(&p), &deny()).allow);
        let other = json!({"tool": {"name": "view_file"}});
        assert!(decide(Event::PreToolUse, Some(&other), &deny()).allow);
    }

    #[test]
    fn an_unreadable_payload_is_refused_only_with_a_deny_list() {
        assert!(!decide(Event::PreToolUse, None, &deny()).allow);
        assert!(!decide(Event::PreToolUse, Some(&json!({})), &deny()).allow);
        assert!(decide(Event::PreToolUse, None, &[]).allow);
    }
}
