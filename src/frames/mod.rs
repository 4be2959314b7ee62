//! The frame projector: raw output lines of a CLI in, typed
//! [`ConversationEvent`]s out, each pointing back to its raw lines.
//!
//! NOTE: this is the interface the dispatch runtime and `vf replay` build on.
//! The manifest-driven implementation replaces the minimal body below.

use serde::Serialize;
use serde_json::Value;

use crate::engine::{EngineId, OutputTransport, Tracker};
use crate::version::Version;

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
    TaskAgent { text: String, raw_range: RawRange },
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

/// Streaming projector for one CLI's stdout.
pub struct Projector {
    tracker: Box<dyn Tracker>,
    line: u64,
}

impl Projector {
    pub fn new(engine: EngineId, _version: Option<&Version>, _transport: OutputTransport) -> Self {
        Projector {
            tracker: engine.engine().tracker(),
            line: 0,
        }
    }

    /// One raw line, without its trailing newline (may be invalid UTF-8).
    pub fn push_line(&mut self, raw: &[u8]) -> Vec<ConversationEvent> {
        self.line += 1;
        let range = RawRange {
            start: self.line,
            end: self.line,
        };
        match serde_json::from_slice::<Value>(raw) {
            Ok(v) => {
                self.tracker.observe(&v);
                vec![ConversationEvent::Status {
                    level: Level::Info,
                    label: "frame".into(),
                    detail: None,
                    session_id: self.tracker.session_id().map(str::to_string),
                    usage: None,
                    raw_range: range,
                }]
            }
            Err(_) => {
                self.tracker.observe_text(&String::from_utf8_lossy(raw));
                vec![ConversationEvent::Status {
                    level: Level::Info,
                    label: "text".into(),
                    detail: None,
                    session_id: None,
                    usage: None,
                    raw_range: range,
                }]
            }
        }
    }

    /// A line longer than the reader's cap: `len` bytes were skipped.
    pub fn push_oversized(&mut self, len: u64) -> Vec<ConversationEvent> {
        self.line += 1;
        vec![ConversationEvent::Status {
            level: Level::Warning,
            label: "Line too long".into(),
            detail: Some(format!("{len} bytes skipped")),
            session_id: None,
            usage: None,
            raw_range: RawRange {
                start: self.line,
                end: self.line,
            },
        }]
    }

    /// End of stream: flushes anything pending (text runs, open documents).
    pub fn finish(&mut self) -> Vec<ConversationEvent> {
        vec![]
    }

    /// The engine's reading of the stream so far (session id, outcome).
    pub fn tracker(&self) -> &dyn Tracker {
        self.tracker.as_ref()
    }

    /// Number of `system.unknownFrame` events emitted so far.
    pub fn unknown_frames(&self) -> u64 {
        0
    }
}
