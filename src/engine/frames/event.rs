//! The typed events the projector emits, each pointing back to its raw lines.

use serde::Serialize;
use serde_json::Value;

fn is_false(b: &bool) -> bool {
    !*b
}

/// 1-based inclusive line numbers of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RawRange {
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub name: String,
    pub input_summary: String,
    pub status: String,
    pub output_summary: Option<String>,
    pub exit_code: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind")]
pub enum ConversationEvent {
    #[serde(rename = "message.taskAgent", rename_all = "camelCase")]
    TaskAgent {
        text: String,
        raw_range: RawRange,
        /// The last agent message of a completed turn: the final answer.
        #[serde(rename = "final", default, skip_serializing_if = "is_false")]
        is_final: bool,
    },
    #[serde(rename = "message.user", rename_all = "camelCase")]
    User { text: String, raw_range: RawRange },
    #[serde(rename = "toolBurst", rename_all = "camelCase")]
    ToolBurst {
        tools: Vec<ToolCall>,
        raw_range: RawRange,
    },
    #[serde(rename = "system.status", rename_all = "camelCase")]
    Status {
        level: Level,
        label: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
        /// On the row that completes a turn: the turn's final answer (already
        /// shown live as a `message.taskAgent`, repeated here so a consumer
        /// never has to guess which message was the last).
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        raw_range: RawRange,
    },
    #[serde(rename = "system.unknownFrame", rename_all = "camelCase")]
    UnknownFrame {
        frame_kind: String,
        cli: String,
        cli_version: String,
        transport: String,
        message: String,
        raw_range: RawRange,
    },
}

impl ConversationEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            ConversationEvent::TaskAgent { .. } => "message.taskAgent",
            ConversationEvent::User { .. } => "message.user",
            ConversationEvent::ToolBurst { .. } => "toolBurst",
            ConversationEvent::Status { .. } => "system.status",
            ConversationEvent::UnknownFrame { .. } => "system.unknownFrame",
        }
    }
}

impl ConversationEvent {
    pub fn raw_range(&self) -> RawRange {
        match self {
            ConversationEvent::TaskAgent { raw_range, .. }
            | ConversationEvent::User { raw_range, .. }
            | ConversationEvent::ToolBurst { raw_range, .. }
            | ConversationEvent::Status { raw_range, .. }
            | ConversationEvent::UnknownFrame { raw_range, .. } => *raw_range,
        }
    }

    pub(crate) fn status(
        level: Level,
        label: &str,
        detail: Option<String>,
        range: RawRange,
    ) -> Self {
        ConversationEvent::Status {
            level,
            label: label.to_string(),
            detail,
            session_id: None,
            usage: None,
            answer: None,
            raw_range: range,
        }
    }
}
/// Receives a run's events live, as each line is projected (the dispatch
/// hands it on; a unit's life holds events until a session id is durable).
pub trait EventSink {
    fn event(&mut self, event: &ConversationEvent);
    /// vf's own notices (not engine output).
    fn warning(&mut self, message: &str);
    /// Called a few times a second while the engine runs, when `wants_ticks`.
    fn tick(&mut self, _elapsed: std::time::Duration) {}
    fn wants_ticks(&self) -> bool {
        false
    }
    /// A round of the unit's closed loops starts or ends (issue 41); the
    /// events between belong to that round's engine.
    fn round(&mut self, _note: &RoundNote) {}
}

/// A round of a unit's loops, as its live output shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundNote {
    /// `fix`, `review` or `resolve`.
    pub kind: &'static str,
    /// 1-based within its kind, of `of` allowed.
    pub n: u32,
    pub of: u32,
    pub engine: crate::engine::EngineId,
    /// `None` as it starts; its outcome (`done`, `failed`, `approve`,
    /// `changes`, ...) as it ends.
    pub ended: Option<String>,
}
