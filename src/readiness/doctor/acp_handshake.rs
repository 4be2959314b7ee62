//! `vf doctor`'s ACP check: start the agent command, send `initialize` only
//! (no session, no prompt: it costs no tokens), read who answered, end it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, Lines};

use tokio::io::AsyncReadExt;

use crate::engine::acp::driver::initialize_request;
use crate::engine::acp::outcome::AgentFacts;
use crate::engine::acp::transport::{self, SessionSink, Tee};
use crate::engine::frames::ConversationEvent;
use crate::ground::text::one_line;

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
    crate::process::binary::find_on_path(program, std::env::var_os("PATH").as_deref())
}

/// What is kept of the agent's stderr for a message: its last bytes.
const STDERR_TAIL: usize = 4096;

/// How long the stderr reader may take to see the end once the group is
/// ended (a process outside it may hold the pipe).
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// Reads the agent's stderr to its end, keeping the last [`STDERR_TAIL`]
/// bytes: an agent that writes more than a pipe holds before it answers
/// would otherwise block, and be judged hung.
fn drain(stderr: Option<tokio::process::ChildStderr>) -> tokio::task::JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut tail = Vec::new();
        let Some(mut err) = stderr else {
            return tail;
        };
        let mut buf = vec![0u8; 16 << 10];
        while let Ok(n @ 1..) = err.read(&mut buf).await {
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        tail
    })
}

/// ` (its stderr ends: …)` for a message, or nothing.
async fn stderr_note(reader: tokio::task::JoinHandle<Vec<u8>>) -> String {
    let tail = match tokio::time::timeout(STDERR_GRACE, reader).await {
        Ok(Ok(tail)) => tail,
        _ => return String::new(),
    };
    let text = String::from_utf8_lossy(&tail);
    let text = text.trim();
    let last = text.lines().rev().find(|l| !l.trim().is_empty());
    last.map(|l| format!(" (its stderr ends: {})", one_line(l.trim(), 200)))
        .unwrap_or_default()
}

/// Runs `initialize` against `argv` (the agent command, already split by
/// the launch rules, with `env` added as a dispatch adds it) in `cwd`,
/// bounded by `timeout`; the agent's process group is ended afterwards,
/// whatever happened. Messages call the agent `name` (its program, not the
/// shell that runs its command line); its stderr is read all along.
pub async fn handshake(
    name: &str,
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
) -> Result<AgentFacts, HandshakeError> {
    let Some(first) = argv.first() else {
        return Err(HandshakeError::Empty);
    };
    let name = if name.is_empty() { first } else { name }.to_string();
    let program = resolve(first).ok_or_else(|| HandshakeError::Missing(name.clone()))?;
    let (mut child, group) =
        crate::process::child::spawn(&program, &argv[1..], cwd, true, env, None).map_err(|e| {
            HandshakeError::Spawn(
                name.clone(),
                crate::process::child::explain_spawn_error(&program, &e),
            )
        })?;
    let stderr = drain(child.stderr.take());
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
    if let Some(agent) = outcome.agent {
        stderr.abort();
        return Ok(agent);
    }
    let note = stderr_note(stderr).await;
    match result {
        _ if outcome.error.is_some() => Err(HandshakeError::Rejected(
            name,
            outcome.error.unwrap_or_default(),
        )),
        Err(_) => {
            let h = hint
                .map(|g| format!(" (it wrote: {g})"))
                .unwrap_or_default();
            Err(HandshakeError::Hung(name, timeout.as_secs_f64(), h + &note))
        }
        Ok(_) => Err(HandshakeError::Garbage(
            name,
            hint.unwrap_or_else(|| "it ended without answering initialize".to_string()) + &note,
        )),
    }
}
