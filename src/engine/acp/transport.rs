//! The agent's stdio as the SDK's line transport, with every line of both
//! directions teed, in wire order, to the raw log and the projector.
//!
//! Incoming bytes are split by the one capped splitter (`frames::reader`,
//! `MAX_LINE_BYTES`): a line over the cap is logged as skipped, invalid UTF-8
//! is replaced, and a line that is not JSON is logged and shown as a warning
//! but not handed to the SDK (an ACP agent's stdout is JSON-RPC only).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::project::Projector;
use super::wire::{self, Dir, Entry};
use crate::engine::frames::ConversationEvent;
use crate::engine::frames::reader::{Found, Line, LineSink, MAX_LINE_BYTES, Splitter};

/// Where a session's lines and events go (the dispatch runtime: the raw log,
/// the marker, the event sink; a test: memory).
pub trait SessionSink: Send {
    /// One raw-log line (no newline). An error ends the session.
    fn raw_line(&mut self, line: &str) -> std::io::Result<()>;
    /// Takes one raw-log line (`follows`: the agent's) and gives back the
    /// lines now safe to log, in order, with the unit's private text removed.
    /// A line whose text may end with the beginning of a secret waits for
    /// the next one (a secret split across frames). What is logged and
    /// projected is these lines, so no event, answer or record can carry what
    /// the log does not (the agent itself still gets every message whole).
    fn redact(&mut self, line: String, _follows: bool) -> Vec<String> {
        vec![line]
    }
    /// The session ended, or the agent answered a request (which ends its
    /// run of text): the lines still held.
    fn redact_end(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// A validated session id, before any event shows it: the runtime makes
    /// it durable here. An error ends the session.
    fn session_id(&mut self, id: &str) -> std::io::Result<()>;
    /// One projected event.
    fn event(&mut self, event: ConversationEvent);
    /// The agent wrote a line (an event or not: a permission request, a
    /// response): it is alive, as the stall timer counts it.
    fn heard(&mut self) {}
    /// The agent as `initialize` described it, once known: a run that fails
    /// later still names the agent's version.
    fn agent(&mut self, _facts: &super::AgentFacts) {}
}

/// The shared end of the tee: numbers lines, logs them, projects them.
pub struct Tee {
    sink: Box<dyn SessionSink>,
    projector: Projector,
    lines: u64,
    session_shown: Option<String>,
    /// The agent's stdout ended.
    eof: bool,
    /// Lines the agent wrote so far (the replay drain watches it).
    heard: u64,
    /// Told once the projector found a malformed response: the session
    /// ends at once instead of waiting for an answer that cannot come.
    fault: Arc<tokio::sync::Notify>,
    agent_told: bool,
    /// The raw log or the marker failed: the session ends.
    pub(crate) failed: Option<String>,
    /// Lines given to [`SessionSink::redact`] and not yet logged: their
    /// direction, entry and logged text.
    waiting: VecDeque<(Dir, Entry, String)>,
}

pub type SharedTee = Arc<Mutex<Tee>>;

impl Tee {
    pub fn new(sink: Box<dyn SessionSink>) -> SharedTee {
        Arc::new(Mutex::new(Tee {
            sink,
            projector: Projector::new(),
            lines: 0,
            session_shown: None,
            eof: false,
            heard: 0,
            fault: Arc::new(tokio::sync::Notify::new()),
            agent_told: false,
            failed: None,
            waiting: VecDeque::new(),
        }))
    }

    /// Logs and projects one wire line (the line as sent or received, but
    /// for the secrets of `mcpServers`: [`super::mcp::scrubbed`]).
    pub fn wire(&mut self, dir: Dir, text: &str, entry: &Entry) -> std::io::Result<()> {
        if let Some(f) = &self.failed {
            return Err(std::io::Error::other(f.clone()));
        }
        // An `mcpServers` line is logged with its env and header values hidden.
        let hidden = match entry {
            Entry::Msg(v) => super::mcp::scrubbed(v).map(Entry::Msg),
            _ => None,
        };
        let hidden_text = match &hidden {
            Some(Entry::Msg(v)) => Some(v.to_string()),
            _ => None,
        };
        let (text, entry) = (
            hidden_text.as_deref().unwrap_or(text),
            hidden.as_ref().unwrap_or(entry),
        );
        let logged = wire::log_line(dir, text, entry);
        if dir == Dir::In {
            self.heard += 1;
            self.sink.heard();
        }
        self.waiting.push_back((dir, entry.clone(), logged.clone()));
        let mut ready = self.sink.redact(logged, dir == Dir::In);
        // A response ends the agent's run of text: nothing before it waits
        // for a secret's next piece, and it is never held itself, since the
        // session may be waiting on it (a malformed one ends the session).
        if dir == Dir::In && is_response(entry) {
            ready.extend(self.sink.redact_end());
        }
        self.log_ready(ready)
    }

    /// Logs and projects the lines redaction released, the oldest waiting
    /// first; a changed line is projected as it was logged.
    fn log_ready(&mut self, ready: Vec<String>) -> std::io::Result<()> {
        for r in ready {
            let Some((dir, entry, logged)) = self.waiting.pop_front() else {
                break;
            };
            let entry = match r == logged {
                true => entry,
                false => wire::parse_log_line(&r)
                    .map(|(_, e)| e)
                    .unwrap_or_else(|| Entry::Text(r.clone())),
            };
            if let Err(e) = self.sink.raw_line(&r) {
                self.failed = Some(format!("the raw log could not be written: {e}"));
                return Err(e);
            }
            self.lines += 1;
            let had_fault = self.projector.outcome.fault.is_some();
            let events = self.projector.push(dir, &entry, self.lines);
            if !had_fault && self.projector.outcome.fault.is_some() {
                self.fault.notify_one();
            }
            if !self.agent_told
                && let Some(a) = &self.projector.outcome.agent
            {
                self.agent_told = true;
                self.sink.agent(a);
            }
            self.emit(events)?;
        }
        Ok(())
    }

    fn emit(&mut self, events: Vec<ConversationEvent>) -> std::io::Result<()> {
        for ev in events {
            if let ConversationEvent::Status {
                session_id: Some(id),
                ..
            } = &ev
                && self.session_shown.as_deref() != Some(id)
            {
                if let Err(e) = self.sink.session_id(id) {
                    self.failed = Some(format!("the session id could not be saved: {e}"));
                    return Err(e);
                }
                self.session_shown = Some(id.clone());
            }
            self.sink.event(ev);
        }
        Ok(())
    }

    /// Flushes the projection at the end of the session.
    pub fn finish(&mut self) -> super::Outcome {
        let held = self.sink.redact_end();
        let _ = self.log_ready(held);
        let events = self.projector.finish();
        let _ = self.emit(events);
        self.projector.outcome().clone()
    }
}

fn lock(tee: &SharedTee) -> std::sync::MutexGuard<'_, Tee> {
    tee.lock().unwrap_or_else(|p| p.into_inner())
}

/// Collects what one chunk of stdout holds.
#[derive(Default)]
struct Collected {
    lines: VecDeque<Raw>,
}

enum Raw {
    Text(String),
    Oversized(u64),
}

impl LineSink for Collected {
    fn line(&mut self, line: Line<'_>) {
        self.lines.push_back(match line {
            Line::Text(b) => Raw::Text(String::from_utf8_lossy(b).into_owned()),
            Line::Oversized(n) => Raw::Oversized(n),
        });
    }
}

struct Incoming<R> {
    reader: R,
    buf: Vec<u8>,
    split: Splitter,
    found: Collected,
    tee: SharedTee,
    eof: bool,
}

/// The agent's stdout as the SDK's incoming line stream: only JSON lines go
/// on; every line is logged and projected first.
pub fn incoming<R: AsyncRead + Unpin + Send + 'static>(
    reader: R,
    tee: SharedTee,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let state = Incoming {
        reader,
        buf: vec![0u8; 64 << 10],
        split: Splitter::new(MAX_LINE_BYTES),
        found: Collected::default(),
        tee,
        eof: false,
    };
    futures::stream::unfold(state, |mut s| async move {
        let item = next_line(&mut s).await?;
        Some((item, s))
    })
}

async fn next_line<R: AsyncRead + Unpin>(s: &mut Incoming<R>) -> Option<std::io::Result<String>> {
    loop {
        while let Some(l) = s.found.lines.pop_front() {
            let (text, entry) = match l {
                Raw::Text(t) if t.trim().is_empty() => continue,
                Raw::Text(t) => {
                    let e = wire::entry_of(&t);
                    (t, e)
                }
                Raw::Oversized(n) => (String::new(), Entry::Oversized(n)),
            };
            if let Err(e) = lock(&s.tee).wire(Dir::In, &text, &entry) {
                return Some(Err(e));
            }
            if matches!(entry, Entry::Msg(_)) {
                return Some(Ok(text));
            }
        }
        if s.eof {
            lock(&s.tee).eof = true;
            return None;
        }
        match s.reader.read(&mut s.buf).await {
            Ok(0) => {
                s.eof = true;
                match s.split.finish() {
                    Found::Buffered => {
                        let t = String::from_utf8_lossy(s.split.line()).into_owned();
                        s.found.lines.push_back(Raw::Text(t));
                    }
                    Found::Oversized(n) => s.found.lines.push_back(Raw::Oversized(n)),
                    _ => {}
                }
            }
            Ok(n) => s.split.feed(&s.buf[..n], &mut s.found),
            Err(e) => return Some(Err(e)),
        }
    }
}

/// The agent's stdin as the SDK's outgoing line sink: each line is logged
/// and projected, then written with its newline and flushed.
///
/// An agent that closed its stdin (a broken pipe) usually exits: what it
/// wrote before it went is still unread, and it is what explains the end.
/// So the pipe error waits up to [`CLOSED_STDIN_GRACE`] for its stdout to
/// end; if it does, the session ends on that, the agent's last words read.
/// An agent still running with its stdin closed can never be asked anything
/// again: then the pipe error ends the session.
pub fn outgoing<W: AsyncWrite + Unpin + Send + 'static>(
    writer: W,
    tee: SharedTee,
) -> impl Sink<String, Error = std::io::Error> + Send + 'static {
    let start = (Some(writer), tee);
    futures::sink::unfold(start, |(mut w, tee), line: String| async move {
        let entry = wire::entry_of(&line);
        lock(&tee).wire(Dir::Out, &line, &entry)?;
        if let Some(out) = w.as_mut() {
            match write_line(out, &line).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    if !stdout_ends(&tee).await {
                        return Err(e);
                    }
                    w = None;
                }
                Err(e) => return Err(e),
            }
        }
        Ok((w, tee))
    })
}

/// How long an agent that closed its stdin has to end its stdout.
pub const CLOSED_STDIN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the agent's stdout ends within [`CLOSED_STDIN_GRACE`].
async fn stdout_ends(tee: &SharedTee) -> bool {
    let step = std::time::Duration::from_millis(20);
    let mut waited = std::time::Duration::ZERO;
    while waited < CLOSED_STDIN_GRACE {
        if lock(tee).eof {
            return true;
        }
        tokio::time::sleep(step).await;
        waited += step;
    }
    lock(tee).eof
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &str) -> std::io::Result<()> {
    w.write_all(line.as_bytes()).await?;
    w.write_all(b"\n").await?;
    w.flush().await
}

pub(crate) fn finish(tee: &SharedTee) -> super::Outcome {
    lock(tee).finish()
}

pub(crate) fn failure(tee: &SharedTee) -> Option<String> {
    lock(tee).failed.clone()
}

pub(crate) fn ended(tee: &SharedTee) -> bool {
    lock(tee).eof
}

/// How many lines the agent wrote so far.
pub(crate) fn heard(tee: &SharedTee) -> u64 {
    lock(tee).heard
}

/// Resolves once a response to one of vf's requests was malformed.
pub(crate) fn fault(tee: &SharedTee) -> Arc<tokio::sync::Notify> {
    lock(tee).fault.clone()
}

/// A JSON-RPC response (an id and no method).
fn is_response(entry: &Entry) -> bool {
    matches!(entry, Entry::Msg(v) if v.get("method").is_none() && v.get("id").is_some())
}
