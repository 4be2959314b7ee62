//! `vf doctor`'s ACP check: start the agent command, send `initialize` only
//! (no session, no prompt: it costs no tokens), read who answered, end it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Lines};

use super::driver::initialize_request;
use super::outcome::AgentFacts;
use super::transport::{self, SessionSink, Tee};
use crate::frames::ConversationEvent;

/// Why the handshake did not name an agent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HandshakeError {
    #[error("no agent command given")]
    Empty,
    #[error("{0}: not found on PATH")]
    Missing(String),
    #[error("{0}: could not be started: {1}")]
    Spawn(String, String),
    #[error("{0}: no answer to initialize within {1:.1} s{2}")]
    Hung(String, f64, String),
    #[error("{0}: does not speak ACP: {1}")]
    Garbage(String, String),
    #[error("{0}: refused initialize: {1}")]
    Rejected(String, String),
}

/// A sink that keeps nothing (the handshake logs nowhere).
struct Discard;

impl SessionSink for Discard {
    fn raw_line(&mut self, _: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn session_id(&mut self, _: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn event(&mut self, _: ConversationEvent) {}
}

fn resolve(program: &str) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return Some(p.to_path_buf());
    }
    crate::binary::find_on_path(program, std::env::var_os("PATH").as_deref())
}

/// Runs `initialize` against `argv` (the agent command, already split by
/// the launch rules, with `env` added as a dispatch adds it) in `cwd`,
/// bounded by `timeout`; the agent's process group is ended afterwards,
/// whatever happened.
pub async fn handshake(
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
) -> Result<AgentFacts, HandshakeError> {
    let Some(name) = argv.first() else {
        return Err(HandshakeError::Empty);
    };
    let program = resolve(name).ok_or_else(|| HandshakeError::Missing(name.clone()))?;
    let (mut child, group) =
        crate::child::spawn(&program, &argv[1..], cwd, true, env).map_err(|e| {
            HandshakeError::Spawn(
                name.clone(),
                crate::child::explain_spawn_error(&program, &e),
            )
        })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        group.kill();
        return Err(HandshakeError::Spawn(name.clone(), "no pipes".to_string()));
    };
    let tee = Tee::new(Box::new(Discard));
    let lines = Lines::new(
        transport::outgoing(stdin, tee.clone()),
        transport::incoming(stdout, tee.clone()),
    );
    let run = Client
        .v1()
        .name("vf")
        .connect_with(lines, async |cx: ConnectionTo<Agent>| {
            cx.send_request(initialize_request()).block_task().await
        });
    let result = tokio::time::timeout(timeout, run).await;
    group.kill();
    let _ = child.start_kill();
    let outcome = transport::finish(&tee);
    let hint = outcome.garbage.clone();
    match (result, outcome.agent) {
        (_, Some(agent)) => Ok(agent),
        (_, None) if outcome.error.is_some() => Err(HandshakeError::Rejected(
            name.clone(),
            outcome.error.unwrap_or_default(),
        )),
        (Err(_), None) => {
            let h = hint
                .map(|g| format!(" (it wrote: {g})"))
                .unwrap_or_default();
            Err(HandshakeError::Hung(name.clone(), timeout.as_secs_f64(), h))
        }
        (Ok(_), None) => Err(HandshakeError::Garbage(
            name.clone(),
            hint.unwrap_or_else(|| "it ended without answering initialize".to_string()),
        )),
    }
}
