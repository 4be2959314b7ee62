//! What must hold for every event the projector emits, whatever the input
//! (issue 11): valid JSON, `rawRange` within the lines pushed so far, an
//! unknown frame never carrying payload, a tracker that only keeps validated
//! session ids. Shared by the bounded tests (`tests/it/fuzz_*.rs`) and the
//! cargo-fuzz targets (`fuzz/`), so it depends on `vf` and `serde_json` only.

use serde_json::Value;
use vf::engine::frames::reader::{Line, LineReader};
use vf::engine::frames::{ConversationEvent, Level, Projector};
use vf::engine::{EngineId, OutputTransport};
use vf::ground::version::Version;

/// Rows emitted before any line is read carry `rawRange` 0..0 (docs/PROJECTOR.md).
const STARTUP_LABELS: &[&str] = &["Unverified CLI version", "No manifest for this transport"];
/// An unknown frame's kind is cut to this many characters (plus `…`).
const KIND_CHARS: usize = 64;

/// A projector under test: every batch of events is checked the moment it is
/// emitted, against the number of lines pushed so far.
pub struct Checked<'s> {
    p: Projector,
    cli: EngineId,
    transport: OutputTransport,
    lines: u64,
    /// Words that must never reach any event (payload of unknown frames).
    secrets: &'s [String],
    pub events: Vec<ConversationEvent>,
}

impl<'s> Checked<'s> {
    pub fn new(
        cli: EngineId,
        version: Option<&Version>,
        transport: OutputTransport,
        secrets: &'s [String],
    ) -> Self {
        Checked {
            p: Projector::new(cli, version, transport),
            cli,
            transport,
            lines: 0,
            secrets,
            events: Vec::new(),
        }
    }

    pub fn line(&mut self, raw: &[u8]) -> Result<(), String> {
        self.lines += 1;
        let batch = self.p.push_line(raw);
        self.take(batch)
    }

    pub fn oversized(&mut self, len: u64) -> Result<(), String> {
        self.lines += 1;
        let batch = self.p.push_oversized(len);
        self.take(batch)
    }

    /// Ends the stream and checks the whole projection and the tracker.
    pub fn finish(mut self) -> Result<Vec<ConversationEvent>, String> {
        let batch = self.p.finish();
        self.take(batch)?;
        let unknown = self
            .events
            .iter()
            .filter(|e| matches!(e, ConversationEvent::UnknownFrame { .. }))
            .count() as u64;
        if unknown != self.p.unknown_frames() {
            return Err(format!(
                "{unknown} unknownFrame events but unknown_frames() = {}",
                self.p.unknown_frames()
            ));
        }
        check_tracker(&self.p, self.cli, self.secrets)?;
        Ok(self.events)
    }

    /// Ends the stream and returns what the tracker would report as the
    /// run's outcome, after the same checks as [`Checked::finish`].
    pub fn finish_with_outcome(mut self) -> Result<(Vec<ConversationEvent>, String), String> {
        let batch = self.p.finish();
        self.take(batch)?;
        check_tracker(&self.p, self.cli, self.secrets)?;
        let out = self.p.tracker().finish(Some(0));
        let text = serde_json::to_string(&out).map_err(|e| format!("outcome: {e}"))?;
        Ok((self.events, text))
    }

    fn take(&mut self, batch: Vec<ConversationEvent>) -> Result<(), String> {
        for ev in &batch {
            check_event(ev, self.lines, self.cli, self.transport, self.secrets)
                .map_err(|e| format!("after line {}: {e}: {ev:?}", self.lines))?;
        }
        self.events.extend(batch);
        Ok(())
    }
}

/// Projects a byte stream the way `vf replay` reads a log (a capped line
/// reader), checking every event.
pub fn project_stream(
    cli: EngineId,
    version: Option<&Version>,
    transport: OutputTransport,
    bytes: &[u8],
    cap: usize,
    secrets: &[String],
) -> Result<Vec<ConversationEvent>, String> {
    let mut c = Checked::new(cli, version, transport, secrets);
    let mut reader = LineReader::new(bytes, cap);
    while let Some(line) = reader.next_line().map_err(|e| e.to_string())? {
        match line {
            Line::Text(raw) => c.line(raw)?,
            Line::Oversized(n) => c.oversized(n)?,
        }
    }
    c.finish()
}

fn check_event(
    ev: &ConversationEvent,
    lines: u64,
    cli: EngineId,
    transport: OutputTransport,
    secrets: &[String],
) -> Result<(), String> {
    check_range(ev, lines)?;
    let text = serde_json::to_string(ev).map_err(|e| format!("does not serialize: {e}"))?;
    let back: Value = serde_json::from_str(&text).map_err(|e| format!("invalid JSON: {e}"))?;
    if back.get("kind").and_then(Value::as_str) != Some(ev.kind()) {
        return Err(format!("serialized kind differs: {text}"));
    }
    if text.contains('\n') {
        return Err("serialized event spans lines".into());
    }
    if let ConversationEvent::UnknownFrame { .. } = ev {
        check_unknown(ev, cli, transport)?;
    }
    match secrets.iter().find(|s| text.contains(s.as_str())) {
        Some(s) => Err(format!("payload word {s:?} reached an event")),
        None => Ok(()),
    }
}

/// 1-based, inclusive, within the lines pushed so far; 0..0 only for the
/// rows a projector emits before reading anything.
fn check_range(ev: &ConversationEvent, lines: u64) -> Result<(), String> {
    let r = ev.raw_range();
    if r.start == 0 && r.end == 0 {
        return match ev {
            ConversationEvent::Status {
                level: Level::Warning,
                label,
                ..
            } if STARTUP_LABELS.contains(&label.as_str()) => Ok(()),
            _ => Err("rawRange 0..0 on a row that is not a start-up warning".into()),
        };
    }
    if r.start == 0 || r.start > r.end || r.end > lines {
        return Err(format!(
            "rawRange {}..{} outside 1..={lines}",
            r.start, r.end
        ));
    }
    Ok(())
}

/// An unknown frame carries its kind (cut, printable) and nothing else of the frame.
fn check_unknown(
    ev: &ConversationEvent,
    cli: EngineId,
    transport: OutputTransport,
) -> Result<(), String> {
    let ConversationEvent::UnknownFrame {
        frame_kind,
        cli: c,
        cli_version,
        transport: t,
        message,
        ..
    } = ev
    else {
        return Ok(());
    };
    let body = frame_kind.strip_suffix('…').unwrap_or(frame_kind);
    let printable = body
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || "._-/:()=?".contains(ch));
    if !printable || body.chars().count() > KIND_CHARS {
        return Err(format!("frameKind {frame_kind:?} is not cut and printable"));
    }
    if c != cli.as_str() || t != transport.as_str() {
        return Err(format!("unknownFrame names cli {c:?} transport {t:?}"));
    }
    let expected = format!("Unknown frame (kind {frame_kind}, cli {c} v{cli_version})");
    if *message != expected {
        return Err(format!(
            "unknownFrame message {message:?} carries more than its kind"
        ));
    }
    Ok(())
}

/// The tracker keeps only a session id of the engine's own shape, and an
/// unknown frame's payload (the secret words) never reaches the outcome:
/// not its answer, error or usage.
fn check_tracker(p: &Projector, cli: EngineId, secrets: &[String]) -> Result<(), String> {
    let t = p.tracker();
    let valid = |id: &Option<String>| {
        id.as_deref()
            .is_none_or(|s| cli.engine().valid_session_id(s))
    };
    if !valid(&t.session_id().map(str::to_string)) {
        return Err(format!("tracker kept session id {:?}", t.session_id()));
    }
    for code in [Some(0), Some(1), None] {
        let out = t.finish(code);
        if !valid(&out.session_id) {
            return Err(format!("outcome session id {:?}", out.session_id));
        }
        let text = serde_json::to_string(&out).map_err(|e| format!("outcome: {e}"))?;
        if let Some(s) = secrets.iter().find(|s| text.contains(s.as_str())) {
            return Err(format!("payload word {s:?} reached the outcome: {text}"));
        }
    }
    Ok(())
}
