//! The ACP client core: vf drives any agent that speaks the Agent Client
//! Protocol (JSON-RPC 2.0 over stdio; gemini `--acp`, `opencode acp`) with
//! the official SDK (`agent-client-protocol`), and makes its output what the
//! native engines' is: typed events with `rawRange`s into a raw log of every
//! line of both directions, a validated session id, an outcome, usage, the
//! fenced json summary. docs/ACP.md has the mapping tables and the facts of
//! the captures (`fixtures/acp/`).
//!
//! - `wire`: the raw-log format (`{"dir":"in"|"out","msg":…}`);
//! - `transport`: the SDK's line transport on the agent's stdio, teed;
//! - `project`: wire lines to events (pure: live, replay and captures);
//! - `outcome`: stop reason, answer, session-id rule, failure reasons;
//! - `usage`: the turn's usage from every place agents report it;
//! - `policy`: the answer to `session/request_permission` (pure);
//! - `driver`: one session (`run_session`);
//! - `handshake`: `initialize` only, for `vf doctor`;
//! - `mcp`: `--mcp` servers as `mcpServers`, and their secrets kept out of the raw log.

pub(crate) mod driver;
mod mcp;
pub(crate) mod outcome;
pub mod permissions;
mod project;
pub(crate) mod transport;
mod usage;
mod wire;

use std::time::Duration;

pub use driver::{PromptPart, SessionRequest, run_session};
pub use mcp::servers as mcp_servers;
pub use outcome::{AgentFacts, Outcome, stop_failure, valid_session_id};
pub use permissions::{Decision, Offered, Policy, allows, decide};
pub use project::Projector;
pub use transport::SessionSink;
pub use usage::usage_of;
pub use wire::{Dir, Entry, entry_of, log_line, parse_log_line};

use crate::engine::frames::ConversationEvent;
use crate::ground::env::EnvVars;
use crate::ground::error::Reason;

/// Why a session did not get as far as an answer to its prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AcpError {
    #[error("the agent did not finish within {}{}", secs(*.0), garbage(.1))]
    Timeout(Duration, Option<String>),
    #[error("the agent answered with an error: {0}")]
    Rejected(String),
    #[error("the agent closed its output before answering the prompt{}", garbage(.0))]
    Closed(Option<String>),
    #[error("the prompt has an {0} block, which {1} does not accept (promptCapabilities)")]
    Unsupported(&'static str, String),
    #[error("an attachment cannot be sent: {0}")]
    Attachment(String),
    #[error("MCP servers: {0}")]
    Mcp(String),
    #[error("{0} does not advertise loadSession: no exact resume")]
    NoLoad(String),
    #[error("the agent named a session id vf refuses: {0}")]
    BadSessionId(String),
    #[error("cancelled before the prompt was sent")]
    Cancelled,
    #[error("{0}")]
    Log(String),
    #[error("ACP protocol error: {0}")]
    Protocol(String),
    #[error("the agent sent a malformed response to {0}")]
    Malformed(String),
    #[error("the agent did not answer {step} within {} ({HANDSHAKE_TIMEOUT_VAR})", secs(*.1), step = .0)]
    Handshake(&'static str, Duration),
}

/// How long each handshake step (`initialize`, `session/new`,
/// `session/load`) may take by default.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);
/// Overrides [`DEFAULT_HANDSHAKE_TIMEOUT`], in milliseconds.
pub const HANDSHAKE_TIMEOUT_VAR: &str = EnvVars::VF_ACP_HANDSHAKE_TIMEOUT_MS;

/// `VF_ACP_HANDSHAKE_TIMEOUT_MS`, or the default; a value that is not a
/// positive number of milliseconds is a usage error (entry points check it
/// first).
pub fn handshake_timeout_from_env() -> crate::ground::error::Result<Duration> {
    match std::env::var(HANDSHAKE_TIMEOUT_VAR) {
        Err(_) => Ok(DEFAULT_HANDSHAKE_TIMEOUT),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(crate::ground::error::VfError::usage(format!(
                "{HANDSHAKE_TIMEOUT_VAR} must be a positive number of milliseconds, not {}",
                crate::ground::text::shown(&v, 40)
            ))),
        },
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn garbage(g: &Option<String>) -> String {
    g.as_ref()
        .map(|g| format!(" (it wrote a line that is not JSON-RPC: {g})"))
        .unwrap_or_default()
}

impl AcpError {
    /// The unit's failure reason for this error.
    pub fn reason(&self) -> Reason {
        match self {
            AcpError::Timeout(..) | AcpError::Handshake(..) => Reason::Timeout,
            AcpError::Unsupported(..)
            | AcpError::Attachment(_)
            | AcpError::Mcp(_)
            | AcpError::NoLoad(_) => Reason::Invalid,
            AcpError::Cancelled => Reason::Interrupted(None),
            AcpError::Log(_) => Reason::State,
            AcpError::Rejected(_)
            | AcpError::Closed(_)
            | AcpError::BadSessionId(_)
            | AcpError::Malformed(_)
            | AcpError::Protocol(_) => Reason::Engine,
        }
    }
}

/// Projects a whole raw log (or capture): its events and outcome. Lines that
/// are not raw-log lines are skipped.
pub fn project_log(text: &str) -> (Vec<ConversationEvent>, Outcome) {
    let mut p = Projector::new();
    let mut events = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some((dir, entry)) = parse_log_line(line) {
            events.extend(p.push(dir, &entry, n as u64 + 1));
        }
    }
    events.extend(p.finish());
    (events, p.outcome().clone())
}
