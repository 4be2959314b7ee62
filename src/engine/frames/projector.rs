//! The projector's line handling: JSON lines, multi-line documents, non-JSON
//! runs, oversized and undecodable lines. What a frame means is `rules`.

use serde_json::Value;

use super::event::{ConversationEvent, Level, RawRange, ToolCall};
use super::keep::{self, Keep};
use super::manifest::{Entry, Manifest};
use super::manifests;
use super::tracker::Tracker;
use crate::engine::{EngineId, OutputTransport, SessionIds};
use crate::ground::text::{Tail, cut};
use crate::ground::version::Version;

/// Largest multi-line JSON document kept in memory; bigger ones are skipped.
const MAX_DOC_BYTES: usize = 8 << 20;
/// Largest joined agent message (deltas); longer runs are split.
pub(super) const MAX_MESSAGE_BYTES: usize = 4 << 20;
/// Text kept for one non-JSON run's status row.
const MAX_RUN_TEXT: usize = 64 << 10;
/// Tool calls in one burst before it is flushed.
pub(super) const MAX_BURST_CALLS: usize = 256;

/// A contiguous run of non-JSON lines.
struct TextRun {
    range: RawRange,
    text: String,
    clipped: bool,
}

/// A pretty-printed JSON document being collected across lines.
struct Doc {
    start: u64,
    buf: Vec<u8>,
    depth: u32,
    in_str: bool,
    esc: bool,
    /// Over [`MAX_DOC_BYTES`]: still scanned for its end, no longer kept.
    skipping: bool,
}

impl Doc {
    fn scan(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_str {
                if self.esc {
                    self.esc = false;
                } else if b == b'\\' {
                    self.esc = true;
                } else if b == b'"' {
                    self.in_str = false;
                }
            } else {
                match b {
                    b'"' => self.in_str = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
    }
}

/// Streamed assistant deltas, merged until the next non-delta frame.
pub(super) struct PendingText {
    pub(super) text: String,
    pub(super) range: RawRange,
    pub(super) delta: bool,
    /// This piece goes on with the message of the row before it (deltas
    /// over [`MAX_MESSAGE_BYTES`] are shown as several rows).
    pub(super) continues: bool,
}

pub(super) struct Burst {
    pub(super) calls: Vec<(String, ToolCall)>,
    pub(super) range: RawRange,
}

/// Streaming projector for one CLI's stdout.
pub struct Projector {
    pub(super) tracker: Tracker,
    /// The session id the current frame names (at the manifest's `session`).
    pub(super) frame_session: Option<String>,
    /// Events show session ids only for a unit whose engine has sessions.
    pub(super) shows_sessions: bool,
    pub(super) cli: EngineId,
    pub(super) manifest: &'static Manifest,
    pub(super) table: Option<&'static [Entry]>,
    pub(super) cli_version: String,
    pub(super) transport: OutputTransport,
    line: u64,
    pub(super) unknown: u64,
    startup: Vec<ConversationEvent>,
    run: Option<TextRun>,
    doc: Option<Doc>,
    pub(super) pending: Option<PendingText>,
    /// The last agent message emitted (its last [`crate::ground::text::ANSWER_MAX`] bytes), so a
    /// turn's closing answer is not shown twice; it is the turn's answer.
    pub(super) last_agent: Option<Tail>,
    pub(super) burst: Option<Burst>,
    /// What the manifest reads of a frame: the rest is never built.
    pub(super) keep: Keep,
    /// What the run's result says besides the rows: an unverified version,
    /// a truncated output ([`Projector::warnings`]).
    pub(super) warnings: Vec<String>,
}

impl Projector {
    pub fn new(engine: EngineId, version: Option<&Version>, transport: OutputTransport) -> Self {
        Projector::for_unit(engine, engine, version, transport)
    }

    /// A projector reading `family`'s frames for a unit of `engine` (the
    /// bridge with `--bridge-output codex`): the manifest is the family's;
    /// what a session id looks like, and whether it is one, is `engine`'s.
    pub fn for_unit(
        engine: EngineId,
        family: EngineId,
        version: Option<&Version>,
        transport: OutputTransport,
    ) -> Self {
        let resolved = manifests::resolve(family, version);
        let none = RawRange { start: 0, end: 0 };
        let mut startup = Vec::new();
        let mut warnings = Vec::new();
        if let Some(w) = resolved.warning {
            warnings.push(w.clone());
            startup.push(ConversationEvent::status(
                Level::Warning,
                "Unverified CLI version",
                Some(w),
                none,
            ));
        }
        let table = resolved.manifest.table(transport);
        if table.is_none() && transport != OutputTransport::Text {
            startup.push(ConversationEvent::status(
                Level::Warning,
                "No manifest for this transport",
                Some(format!(
                    "{family} {} has no {} manifest: every frame will be reported as unknown",
                    resolved.manifest.family(),
                    transport.as_str()
                )),
                none,
            ));
        }
        Projector {
            tracker: Tracker::new(
                engine,
                version,
                transport,
                resolved.manifest.closing,
                &resolved.manifest.rate_limits,
            ),
            frame_session: None,
            shows_sessions: engine.engine().spec().session_ids != SessionIds::None,
            cli: family,
            manifest: resolved.manifest,
            table,
            cli_version: resolved.cli_version,
            transport,
            line: 0,
            unknown: 0,
            startup,
            run: None,
            doc: None,
            pending: None,
            last_agent: None,
            burst: None,
            keep: Keep::for_manifest(resolved.manifest, table),
            warnings,
        }
    }

    /// The manifest family in use (`"0.171"`).
    pub fn family(&self) -> String {
        self.manifest.family()
    }

    /// One raw line, without its trailing newline (may be invalid UTF-8).
    pub fn push_line(&mut self, raw: &[u8]) -> Vec<ConversationEvent> {
        self.line += 1;
        let n = self.line;
        let mut out = std::mem::take(&mut self.startup);
        if self.transport == OutputTransport::Text {
            self.tracker.text_line(&String::from_utf8_lossy(raw));
            // One row per line, at once: a text engine (agy, the bridge) may
            // run for minutes, and its lines are what a live view shows.
            // Blank lines stay in the answer and the raw log, not as rows.
            if !raw.trim_ascii().is_empty() {
                self.text_line(raw, n, &mut out);
                self.close_run(&mut out);
            }
            return out;
        }
        if self.doc.is_some() {
            self.doc_line(raw, n, &mut out);
            return out;
        }
        let trimmed = raw.trim_ascii();
        match trimmed.first() {
            None => {
                if let Some(run) = &mut self.run {
                    run.range.end = n;
                    run.text.push('\n');
                }
            }
            Some(b'{') | Some(b'[') => {
                self.close_run(&mut out);
                if trimmed.len() == 1 {
                    // Pretty-printed documents open with a lone brace.
                    let mut doc = Doc {
                        start: n,
                        buf: Vec::with_capacity(4096),
                        depth: 0,
                        in_str: false,
                        esc: false,
                        skipping: false,
                    };
                    doc.scan(raw);
                    doc.buf.extend_from_slice(raw);
                    self.doc = Some(doc);
                } else {
                    self.json_line(raw, RawRange { start: n, end: n }, &mut out);
                }
            }
            Some(_) => self.text_line(raw, n, &mut out),
        }
        out
    }

    /// A line longer than the reader's cap: `len` bytes were skipped.
    pub fn push_oversized(&mut self, len: u64) -> Vec<ConversationEvent> {
        self.line += 1;
        let n = self.line;
        let mut out = std::mem::take(&mut self.startup);
        self.close_run(&mut out);
        self.abandon_doc(&mut out, "a line inside it was too long");
        out.push(ConversationEvent::status(
            Level::Warning,
            "Line too long",
            Some(format!("{len} bytes skipped")),
            RawRange { start: n, end: n },
        ));
        out
    }

    /// An open multi-line document that can no longer complete: one warning
    /// spanning its lines so far.
    fn abandon_doc(&mut self, out: &mut Vec<ConversationEvent>, why: &str) {
        if let Some(doc) = self.doc.take() {
            out.push(ConversationEvent::status(
                Level::Warning,
                "Truncated JSON document",
                Some(why.into()),
                RawRange {
                    start: doc.start,
                    end: self.line,
                },
            ));
        }
    }

    /// End of stream: flushes anything pending (text runs, open documents).
    pub fn finish(&mut self) -> Vec<ConversationEvent> {
        let mut out = std::mem::take(&mut self.startup);
        self.close_run(&mut out);
        self.abandon_doc(&mut out, "the stream ended inside it");
        self.flush_burst(&mut out);
        self.flush_text(&mut out, false);
        out
    }

    /// The warnings the run's result carries from its stream: the version's
    /// (a patch or family never verified) and each truncated output.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The engine's reading of the stream so far (session id, outcome).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// The quota reading seen since the last call (see [`Tracker::take_quota`]).
    pub fn take_quota(&mut self) -> Option<crate::engine::frames::QuotaSignal> {
        self.tracker.take_quota()
    }

    /// Number of `system.unknownFrame` events emitted so far.
    pub fn unknown_frames(&self) -> u64 {
        self.unknown
    }

    // ---- raw lines -------------------------------------------------------

    fn json_line(&mut self, raw: &[u8], range: RawRange, out: &mut Vec<ConversationEvent>) {
        // One UTF-8 check of the whole line is cheaper than serde_json's check
        // of every string in it.
        let parsed = match std::str::from_utf8(raw) {
            Ok(s) => keep::parse(s, &self.keep),
            Err(_) => serde_json::from_slice::<Value>(raw),
        };
        match parsed {
            Ok(v) => self.frame(v, range, out),
            Err(e) => self.bad_json(raw, &e, range, out),
        }
    }

    fn bad_json(
        &mut self,
        raw: &[u8],
        e: &serde_json::Error,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        if std::str::from_utf8(raw).is_err() {
            // Keep the frame: replace the bad bytes and say so.
            let lossy = String::from_utf8_lossy(raw);
            if let Ok(v) = serde_json::from_str::<Value>(&lossy) {
                out.push(ConversationEvent::status(
                    Level::Warning,
                    "Invalid UTF-8",
                    Some("undecodable bytes were replaced with U+FFFD".into()),
                    range,
                ));
                self.frame(v, range, out);
                return;
            }
        }
        let (label, detail) = if raw.contains(&0) {
            ("Malformed JSON frame", "NUL bytes in the line".to_string())
        } else if e.is_eof() {
            (
                "Truncated JSON frame",
                "the frame ends before its closing brace".to_string(),
            )
        } else if std::str::from_utf8(raw).is_err() {
            ("Malformed JSON frame", "invalid UTF-8".to_string())
        } else {
            (
                "Malformed JSON frame",
                format!("syntax error at column {}", e.column()),
            )
        };
        out.push(ConversationEvent::status(
            Level::Warning,
            label,
            Some(detail),
            range,
        ));
    }

    fn doc_line(&mut self, raw: &[u8], n: u64, out: &mut Vec<ConversationEvent>) {
        let doc = self.doc.as_mut().expect("doc_line with an open document");
        doc.scan(raw);
        if !doc.skipping {
            if doc.buf.len() + raw.len() + 1 > MAX_DOC_BYTES {
                doc.skipping = true;
                doc.buf = Vec::new();
            } else {
                doc.buf.push(b'\n');
                doc.buf.extend_from_slice(raw);
            }
        }
        if doc.depth > 0 || doc.in_str {
            return;
        }
        let doc = self.doc.take().expect("open document");
        let range = RawRange {
            start: doc.start,
            end: n,
        };
        if doc.skipping {
            out.push(ConversationEvent::status(
                Level::Warning,
                "JSON document too large",
                Some(format!("over {MAX_DOC_BYTES} bytes, skipped")),
                range,
            ));
        } else {
            self.json_line(&doc.buf, range, out);
        }
    }

    fn text_line(&mut self, raw: &[u8], n: u64, out: &mut Vec<ConversationEvent>) {
        let bad = if raw.contains(&0) {
            Some("NUL bytes in the line")
        } else if std::str::from_utf8(raw).is_err() {
            Some("invalid UTF-8")
        } else {
            None
        };
        if let Some(why) = bad {
            self.close_run(out);
            out.push(ConversationEvent::status(
                Level::Warning,
                "Undecodable output line",
                Some(why.into()),
                RawRange { start: n, end: n },
            ));
            return;
        }
        let s = std::str::from_utf8(raw).unwrap_or_default();
        let run = self.run.get_or_insert_with(|| TextRun {
            range: RawRange { start: n, end: n },
            text: String::new(),
            clipped: false,
        });
        if run.range.end < n {
            run.text.push('\n');
        }
        run.range.end = n;
        if !run.clipped {
            if run.text.len() + s.len() > MAX_RUN_TEXT {
                run.text
                    .push_str(cut(s, MAX_RUN_TEXT.saturating_sub(run.text.len())));
                run.clipped = true;
            } else {
                run.text.push_str(s);
            }
        }
    }

    fn close_run(&mut self, out: &mut Vec<ConversationEvent>) {
        if let Some(mut run) = self.run.take() {
            let lines = run.range.end - run.range.start + 1;
            let text = self.transport == OutputTransport::Text;
            let trimmed = run.text.trim_end_matches('\n').len();
            run.text.truncate(trimmed);
            if run.clipped {
                run.text.push_str("\n…(clipped)");
            }
            let detail = if run.text.is_empty() {
                None
            } else {
                Some(run.text)
            };
            let label = match (text, lines) {
                (true, _) => "Text output".to_string(),
                (false, 1) => "Non-JSON output (1 line)".to_string(),
                (false, _) => format!("Non-JSON output ({lines} lines)"),
            };
            out.push(ConversationEvent::status(
                Level::Info,
                &label,
                detail,
                run.range,
            ));
        }
    }
}
