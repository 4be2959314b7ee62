//! What an ACP session established: the agent, the session id, the turn's
//! stop reason, answer and usage, and the failure they mean (docs/ACP.md).

use serde::Serialize;
use serde_json::Value;

use crate::engine::summary::{self, Summary};
use crate::engine::usage::Usage;
use crate::ground::error::Reason;
use crate::ground::text::one_line;

/// The agent as its `initialize` response describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentFacts {
    /// `agentInfo.name` (`unknown` when absent).
    pub name: String,
    /// `agentInfo.version` (`unknown` when absent).
    pub version: String,
    pub protocol_version: Option<u64>,
    /// `agentCapabilities.loadSession`.
    pub load_session: bool,
    /// `agentCapabilities.promptCapabilities`: `image`, `audio`, `embeddedContext`.
    pub prompt: Vec<String>,
    /// `agentCapabilities` as sent (for doctor's report).
    pub capabilities: Value,
}

impl AgentFacts {
    pub fn from_initialize(result: &Value) -> AgentFacts {
        let info = result.get("agentInfo");
        let text = |key: &str| {
            info.and_then(|i| i.get(key))
                .and_then(Value::as_str)
                .map_or_else(|| "unknown".to_string(), |s| one_line(s, 64))
        };
        let caps = result
            .get("agentCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        let prompt = ["image", "audio", "embeddedContext"]
            .into_iter()
            .filter(|k| {
                caps.pointer(&format!("/promptCapabilities/{k}")) == Some(&Value::Bool(true))
            })
            .map(str::to_string)
            .collect();
        AgentFacts {
            name: text("name"),
            version: text("version"),
            protocol_version: result.get("protocolVersion").and_then(Value::as_u64),
            load_session: caps.get("loadSession") == Some(&Value::Bool(true)),
            prompt,
            capabilities: caps,
        }
    }

    /// `gemini-cli 0.61.0, protocol 1, loadSession, prompt: image, audio`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.name, self.version);
        match self.protocol_version {
            Some(v) => s.push_str(&format!(", protocol {v}")),
            None => s.push_str(", protocol unknown"),
        }
        if self.load_session {
            s.push_str(", loadSession");
        }
        if !self.prompt.is_empty() {
            s.push_str(&format!(", prompt: {}", self.prompt.join(", ")));
        }
        s
    }
}

/// What the session came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub agent: Option<AgentFacts>,
    /// The ACP `sessionId`, once validated.
    pub session_id: Option<String>,
    /// The agent named a session id of a shape vf refuses.
    pub bad_session: bool,
    /// What was wrong with it, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bad_session_detail: Option<String>,
    /// A response to one of vf's requests that is not JSON-RPC 2.0
    /// (`method: what was wrong`): the session ends at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// `stopReason` of the prompt's response.
    pub stop_reason: Option<String>,
    /// The turn's final answer: the agent's text after its last tool call
    /// (its last [`crate::ground::text::ANSWER_MAX`] bytes).
    pub answer: Option<String>,
    /// Bytes of the answer before those, kept only in the raw log.
    #[serde(skip)]
    pub answer_cut: u64,
    pub usage: Option<Usage>,
    /// The usage's cost is the session's running total (`usage_update`'s).
    #[serde(skip)]
    pub cost_is_running: bool,
    /// The first JSON-RPC error the agent answered vf with (`method: message`).
    pub error: Option<String>,
    /// The method of that error.
    pub failed_method: Option<String>,
    /// vf sent `session/cancel`.
    pub cancel_sent: bool,
    /// The first line the agent wrote that was not JSON (cut).
    pub garbage: Option<String>,
}

impl Outcome {
    pub(super) fn turn_ended(&mut self, stop: &str, usage: Option<Usage>, answer: Option<String>) {
        self.stop_reason = Some(one_line(stop, 64));
        self.usage = usage;
        self.answer = answer;
    }

    /// The fenced ```json summary of the answer.
    pub fn summary(&self) -> Summary {
        self.answer
            .as_deref()
            .map_or(Summary::Absent, summary::extract)
    }

    /// Why the run failed, if it did: the stop reason, an error response, or
    /// no answer to the prompt at all.
    pub fn failure(&self) -> Option<(Reason, String)> {
        if let Some(f) = &self.fault {
            return Some((Reason::Engine, format!("a malformed response: {f}")));
        }
        if let Some(stop) = &self.stop_reason {
            return stop_failure(stop);
        }
        let why = match &self.error {
            Some(e) => e.clone(),
            None => "the agent never answered the prompt".to_string(),
        };
        Some((Reason::Engine, why))
    }
}

/// The failure a `stopReason` means (`end_turn`: none).
pub fn stop_failure(stop: &str) -> Option<(Reason, String)> {
    let reason = match stop {
        "end_turn" => return None,
        "max_tokens" => Reason::MaxTokens,
        "max_turn_requests" => Reason::MaxTurnRequests,
        "refusal" => Reason::Refusal,
        "cancelled" => Reason::Cancelled,
        _ => Reason::Engine,
    };
    Some((reason, format!("the agent stopped: {}", one_line(stop, 64))))
}

/// The session-id rule for ACP agents. Each native engine checks its own
/// shape (`engine::SessionIds`: UUIDs, opencode's `ses_` + 26); an ACP agent's
/// ids are its own, so vf takes what is safe to store, show and hand back:
/// 1 to 128 ASCII letters, digits and `-_.:`, not starting with `-` (never a
/// flag). UUIDs and `ses_…` ids pass.
pub fn valid_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_of_a_safe_shape_only() {
        for ok in [
            "sess-1",
            "73f07582-12ff-4a11-a706-bf95ed7f6348",
            "ses_dcca1d353ffewD5Wg5e9rQ413d",
            "a:b.c_d",
        ] {
            assert!(valid_session_id(ok), "{ok}");
        }
        let long = "a".repeat(129);
        for bad in [
            "",
            "-rf",
            "a b",
            "../x",
            "a/b",
            "a\\b",
            "é",
            "a\n",
            long.as_str(),
        ] {
            assert!(!valid_session_id(bad), "{bad:?}");
        }
    }
}
