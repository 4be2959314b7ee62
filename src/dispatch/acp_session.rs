//! The session path of an engine that speaks ACP (`Engine::speaks_acp`):
//! instead of a stdout pump, one `acp::run_session` on the child's stdio,
//! its stdin left open. Its sink writes the tagged JSON-RPC lines of both
//! directions to the stdout raw log (redacted as the pumps redact), makes a
//! session id durable in the marker before any event shows it, and hands
//! events to the supervisor. The supervisor's signals turn into
//! `session/cancel` ([`AcpRun::cancel`]); its stall and wall timeouts end the
//! group as for any engine.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::UnitSpec;
use super::pump::Msg;
use super::redact::Redactor;
use super::redact::stream::Stream;
use crate::engine::ConversationEvent;
use crate::engine::Outcome;
use crate::engine::acp;
use crate::engine::{AcpError, Policy, SessionRequest, SessionSink};
use crate::ground::Reason;
use crate::unit::SessionRecorder;

/// What the session tells the supervisor, in order.
pub(super) enum SessionMsg {
    Event(ConversationEvent),
    /// A validated id, already durable in the marker.
    Session(String),
    /// The agent wrote a line: it is not stalled.
    Heard,
    /// `agentInfo.version` from `initialize`, when it reads as a version.
    AgentVersion(String),
    Done(Box<Result<acp::Outcome, AcpError>>),
}

/// A running session, as the supervisor holds it.
pub(super) struct AcpRun {
    pub rx: mpsc::UnboundedReceiver<SessionMsg>,
    /// `true`: send `session/cancel`.
    pub cancel: watch::Sender<bool>,
    /// How it ended, once it did.
    pub done: Option<Result<acp::Outcome, AcpError>>,
    /// `system.unknownFrame` rows shown (the result's `unknownFrames`).
    pub unknown: u64,
    /// The agent's version, once `initialize` named one: kept for the
    /// result even when the session fails later.
    pub agent_version: Option<String>,
}

/// Where the session's lines, ids and events go.
struct Sink {
    log: File,
    redactor: Stream<()>,
    recorder: SessionRecorder,
    tx: mpsc::UnboundedSender<SessionMsg>,
}

impl SessionSink for Sink {
    /// The line is already redacted ([`SessionSink::redact`]).
    fn raw_line(&mut self, line: &str) -> std::io::Result<()> {
        self.log.write_all(line.as_bytes())?;
        self.log.write_all(b"\n")
    }

    fn redact(&mut self, line: String, follows: bool) -> Vec<String> {
        let out = self.redactor.push(line.into_bytes(), (), follows);
        out.into_iter().map(|(l, ())| text(l)).collect()
    }

    fn redact_end(&mut self) -> Vec<String> {
        let out = self.redactor.finish();
        out.into_iter().map(|(l, ())| text(l)).collect()
    }

    fn session_id(&mut self, id: &str) -> std::io::Result<()> {
        self.recorder.record(id).map_err(std::io::Error::other)?;
        let _ = self.tx.send(SessionMsg::Session(id.to_string()));
        Ok(())
    }

    fn event(&mut self, event: ConversationEvent) {
        let _ = self.tx.send(SessionMsg::Event(event));
    }

    fn heard(&mut self) {
        let _ = self.tx.send(SessionMsg::Heard);
    }

    fn agent(&mut self, facts: &acp::AgentFacts) {
        if let Some(v) = agent_version(facts) {
            let _ = self.tx.send(SessionMsg::AgentVersion(v));
        }
    }
}

/// `agentInfo.version`, when it reads as a version (the result's
/// `engineVersion`: an agent command has no `--version`).
fn agent_version(facts: &acp::AgentFacts) -> Option<String> {
    crate::ground::Version::parse(&facts.version).map(|v| v.to_string())
}

fn text(line: Vec<u8>) -> String {
    String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The unit's answer to permission requests.
fn policy(spec: &UnitSpec) -> Policy {
    if spec.policy.read_only {
        Policy::ReadOnly
    } else if spec.skip_permissions {
        Policy::SkipPermissions
    } else {
        Policy::Default
    }
}

/// Starts the session on the child's stdio. The returned task stands in for
/// the stdout pump: it sends `StdoutEof` on `pump_tx` when the session ends.
pub(super) fn start(
    spec: &UnitSpec,
    child: &mut tokio::process::Child,
    log: File,
    redactor: Arc<Redactor>,
    recorder: SessionRecorder,
    prompt: String,
    pump_tx: mpsc::Sender<Msg>,
) -> (AcpRun, JoinHandle<()>) {
    let stdout = child.stdout.take().expect("stdout is piped");
    let stdin = child.stdin.take().expect("stdin is piped");
    let (tx, rx) = mpsc::unbounded_channel();
    let (cancel, cancel_rx) = watch::channel(false);
    let sink = Sink {
        log,
        redactor: Stream::new(redactor),
        recorder,
        tx: tx.clone(),
    };
    let (cwd, attachments) = (spec.cwd.clone(), spec.attachments.clone());
    let req = SessionRequest {
        cwd: spec.cwd.clone(),
        prompt: Vec::new(),
        resume: spec.session.clone(),
        policy: policy(spec),
        mcp: spec
            .mcp
            .as_ref()
            .map(|m| acp::mcp_servers(&m.to_value()["mcpServers"]))
            .unwrap_or_default(),
        deadline: None,
        handshake: acp::handshake_timeout_from_env().unwrap_or(acp::DEFAULT_HANDSHAKE_TIMEOUT),
    };
    let task = tokio::spawn(async move {
        // The attachments are read on the blocking pool, not the runtime's thread.
        let parts = crate::dispatch::attach::acp_prompt(cwd, attachments, prompt).await;
        let ended = match parts {
            Ok(prompt) => {
                let req = SessionRequest { prompt, ..req };
                acp::run_session(stdout, stdin, req, Box::new(sink), cancel_rx).await
            }
            Err(e) => Err(e),
        };
        let _ = tx.send(SessionMsg::Done(Box::new(ended)));
        let _ = pump_tx.send(Msg::StdoutEof).await;
    });
    let run = AcpRun {
        rx,
        cancel,
        done: None,
        unknown: 0,
        agent_version: None,
    };
    (run, task)
}

/// The run's outcome as settle reads it, and the failure the session means
/// (its stop reason, the agent's error, or why it never got an answer). A
/// resume the agent cannot load (no `loadSession`, or `session/load`
/// answered with an error) is a session mismatch: [`super::run_locked`]
/// then starts a fresh session primed with the bounded replay.
pub(super) fn outcome(run: &AcpRun, resumed: bool) -> (Outcome, AcpVerdict) {
    let done = &run.done;
    let (o, failure) = match done {
        Some(Ok(o)) => (o.clone(), o.failure()),
        Some(Err(e @ (AcpError::NoLoad(_) | AcpError::Rejected(_)))) if resumed => (
            acp::Outcome::default(),
            Some((
                Reason::SessionMismatch,
                format!("cannot load the session: {e}"),
            )),
        ),
        Some(Err(e)) => (acp::Outcome::default(), Some((e.reason(), e.to_string()))),
        None => (
            acp::Outcome::default(),
            Some((Reason::Engine, "the session did not end".to_string())),
        ),
    };
    let outcome = Outcome {
        session_id: o.session_id.clone(),
        answer: o.answer.clone(),
        answer_cut: o.answer_cut,
        failed: failure.is_some(),
        error: failure.as_ref().map(|(_, m)| m.clone()),
        usage: None,
    };
    let verdict = AcpVerdict {
        failure,
        usage: o.usage,
        running: if o.cost_is_running {
            crate::engine::Running::Cost
        } else {
            crate::engine::Running::None
        },
        agent_version: o
            .agent
            .as_ref()
            .and_then(agent_version)
            .or_else(|| run.agent_version.clone()),
    };
    (outcome, verdict)
}

/// What settle takes from an ACP session besides the [`Outcome`].
pub(super) struct AcpVerdict {
    pub failure: Option<(Reason, String)>,
    pub usage: Option<crate::engine::Usage>,
    /// `usage_update`'s cost is the session's so far: a resumed run's is
    /// that less the last run's total.
    pub running: crate::engine::Running,
    /// `agentInfo.version` from `initialize`, when it reads as a version:
    /// the result's `engineVersion` (an agent command has no `--version`).
    pub agent_version: Option<String>,
}
