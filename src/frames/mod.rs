//! The frame projector: raw output lines of a CLI in, typed
//! [`ConversationEvent`]s out, each pointing back to its raw lines.
//!
//! What each CLI version family emits lives in data tables under
//! [`manifests`] (see [`manifest`] for the vocabulary); this module
//! interprets them generically. The unknown-frame contract: a valid frame
//! whose kind (or nested kind) is not in the manifest of the exact
//! `{cli, version family, transport}` becomes one `system.unknownFrame`,
//! which carries the kind and never any payload.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::engine::{EngineId, OutputTransport, Tracker};
use crate::text::cut;
use crate::version::Version;

pub mod manifest;
pub mod manifests;
pub mod reader;
pub mod render;

use manifest::{
    Cond, Entry, LifecycleSpec, Manifest, Nested, Path, Rule, Src, StatusSrc, ToolCallSpec,
    ToolResultSpec, lookup,
};

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

    fn status(level: Level, label: &str, detail: Option<String>, range: RawRange) -> Self {
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

/// Largest multi-line JSON document kept in memory; bigger ones are skipped.
const MAX_DOC_BYTES: usize = 8 << 20;
/// Largest joined agent message (deltas); longer runs are split.
const MAX_MESSAGE_BYTES: usize = 4 << 20;
/// Text kept for one non-JSON run's status row.
const MAX_RUN_TEXT: usize = 64 << 10;
/// Tool calls in one burst before it is flushed.
const MAX_BURST_CALLS: usize = 256;
const SUMMARY_CHARS: usize = 120;
const DETAIL_CHARS: usize = 2000;
const KIND_CHARS: usize = 64;

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
struct PendingText {
    text: String,
    range: RawRange,
    delta: bool,
}

struct Burst {
    calls: Vec<(String, ToolCall)>,
    range: RawRange,
}

/// Streaming projector for one CLI's stdout.
pub struct Projector {
    tracker: Box<dyn Tracker>,
    cli: EngineId,
    manifest: &'static Manifest,
    table: Option<&'static [Entry]>,
    cli_version: String,
    transport: OutputTransport,
    line: u64,
    unknown: u64,
    startup: Vec<ConversationEvent>,
    run: Option<TextRun>,
    doc: Option<Doc>,
    pending: Option<PendingText>,
    /// The last agent text emitted, so a turn's closing answer is not shown twice.
    last_agent: Option<String>,
    burst: Option<Burst>,
}

impl Projector {
    pub fn new(engine: EngineId, version: Option<&Version>, transport: OutputTransport) -> Self {
        let resolved = manifest::resolve(engine, version);
        let none = RawRange { start: 0, end: 0 };
        let mut startup = Vec::new();
        if let Some(w) = resolved.warning {
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
                    "{engine} {} has no {} manifest: every frame will be reported as unknown",
                    resolved.manifest.family(),
                    transport.as_str()
                )),
                none,
            ));
        }
        Projector {
            tracker: engine.engine().tracker(),
            cli: engine,
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
            self.tracker.observe_text(&String::from_utf8_lossy(raw));
            self.text_line(raw, n, &mut out);
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

    /// The engine's reading of the stream so far (session id, outcome).
    pub fn tracker(&self) -> &dyn Tracker {
        self.tracker.as_ref()
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
            Ok(s) => serde_json::from_str::<Value>(s),
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
            let label = if self.transport == OutputTransport::Text {
                "Text output"
            } else {
                "Non-JSON output"
            };
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
            out.push(ConversationEvent::status(
                Level::Info,
                &format!(
                    "{label} ({lines} line{})",
                    if lines == 1 { "" } else { "s" }
                ),
                detail,
                run.range,
            ));
        }
    }

    // ---- frames ----------------------------------------------------------

    fn frame(&mut self, v: Value, range: RawRange, out: &mut Vec<ConversationEvent>) {
        self.tracker.observe(&v);
        let kind = self.kind_of(&v);
        let rule = self.table.and_then(|t| lookup(t, &kind));
        match rule {
            Some(rule) => self.apply(rule, &v, &kind, range, out),
            None => self.unknown(&kind, range, out),
        }
    }

    fn kind_of<'v>(&self, v: &'v Value) -> Cow<'v, str> {
        match v {
            Value::Object(_) => match at(v, self.manifest.kind).and_then(Value::as_str) {
                Some(t) => match self.manifest.subkinds.iter().find(|(k, _)| *k == t) {
                    Some((_, sub)) => Cow::Owned(format!(
                        "{t}/{}",
                        at(v, sub).and_then(Value::as_str).unwrap_or("(none)")
                    )),
                    None => Cow::Borrowed(t),
                },
                None => Cow::Borrowed("(untyped)"),
            },
            Value::Array(_) => Cow::Borrowed("(array)"),
            _ => Cow::Borrowed("(scalar)"),
        }
    }

    fn unknown(&mut self, kind: &str, range: RawRange, out: &mut Vec<ConversationEvent>) {
        self.unknown += 1;
        let kind = sanitize_kind(kind);
        out.push(ConversationEvent::UnknownFrame {
            message: format!(
                "Unknown frame (kind {kind}, cli {} v{})",
                self.cli, self.cli_version
            ),
            frame_kind: kind,
            cli: self.cli.as_str().to_string(),
            cli_version: self.cli_version.clone(),
            transport: self.transport.as_str().to_string(),
            raw_range: range,
        });
    }

    fn apply(
        &mut self,
        rule: &'static Rule,
        root: &Value,
        kind: &str,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        match rule {
            Rule::Quiet => {}
            Rule::AgentText { text } => {
                // A whole message is shown at once: live output must not wait
                // for the next frame to learn whether this one was final.
                if let Some(t) = nonempty(at(root, text)) {
                    self.flush_burst(out);
                    self.flush_text(out, false);
                    self.last_agent = Some(t.to_string());
                    out.push(ConversationEvent::TaskAgent {
                        text: t.to_string(),
                        raw_range: range,
                        is_final: false,
                    });
                }
            }
            Rule::AgentDelta { text } => {
                if let Some(t) = nonempty(at(root, text)) {
                    self.delta(t, range, out);
                }
            }
            Rule::UserText { text } => {
                if let Some(t) = nonempty(at(root, text)) {
                    self.flush_burst(out);
                    self.flush_text(out, false);
                    out.push(ConversationEvent::User {
                        text: t.to_string(),
                        raw_range: range,
                    });
                }
            }
            Rule::ToolCall(spec) => self.tool_call(spec, root, range, out),
            Rule::ToolCallList { list, call } => {
                if let Some(items) = at(root, list).and_then(Value::as_array) {
                    for item in items {
                        self.tool_call(call, item, range, out);
                    }
                }
            }
            Rule::ToolResult(spec) => self.tool_result(spec, root, range, out),
            Rule::Status(s) => out.push(ConversationEvent::status(
                s.level,
                s.label,
                render(s.detail, root),
                range,
            )),
            Rule::Lifecycle(spec) => self.lifecycle(spec, root, range, out),
            Rule::Truncated { detail } => out.push(ConversationEvent::status(
                Level::Warning,
                "Output truncated",
                render(detail, root),
                range,
            )),
            Rule::Nested(n) => self.nested(n, root, kind, range, out),
            Rule::All(rules) => {
                for r in rules.iter() {
                    self.apply(r, root, kind, range, out);
                }
            }
        }
    }

    fn nested(
        &mut self,
        n: &'static Nested,
        root: &Value,
        kind: &str,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        let Some(inner) = at(root, n.root) else {
            self.unknown(&format!("{kind}/(missing)"), range, out);
            return;
        };
        if !n.many {
            let sub = at(inner, n.key)
                .and_then(Value::as_str)
                .unwrap_or("(untyped)");
            match lookup(n.entries, sub) {
                Some(r) => self.apply(r, inner, kind, range, out),
                None => self.unknown(&format!("{kind}/{sub}"), range, out),
            }
            return;
        }
        match inner {
            Value::Array(items) => {
                // Each block is checked; one report per novel block kind.
                let mut reported: Vec<&str> = Vec::new();
                for item in items {
                    let sub = at(item, n.key)
                        .and_then(Value::as_str)
                        .unwrap_or("(untyped)");
                    match lookup(n.entries, sub) {
                        Some(r) => self.apply(r, item, kind, range, out),
                        None if !reported.contains(&sub) => {
                            reported.push(sub);
                            self.unknown(&format!("{kind}/{sub}"), range, out);
                        }
                        None => {}
                    }
                }
            }
            Value::String(_) if n.string_rule.is_some() => {
                self.apply(n.string_rule.unwrap(), inner, kind, range, out);
            }
            _ => self.unknown(&format!("{kind}/(untyped)"), range, out),
        }
    }

    fn delta(&mut self, t: &str, range: RawRange, out: &mut Vec<ConversationEvent>) {
        self.flush_burst(out);
        if let Some(p) = &mut self.pending
            && p.delta
            && p.text.len() + t.len() <= MAX_MESSAGE_BYTES
        {
            p.text.push_str(t);
            p.range.end = range.end;
            return;
        }
        self.flush_text(out, false);
        self.pending = Some(PendingText {
            text: t.to_string(),
            range,
            delta: true,
        });
    }

    /// A tool call or result closes any agent text: what came before it is
    /// narration, never the turn's answer.
    fn end_narration(&mut self, out: &mut Vec<ConversationEvent>) {
        self.flush_text(out, false);
        self.last_agent = None;
    }

    fn tool_call(
        &mut self,
        spec: &ToolCallSpec,
        root: &Value,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        self.end_narration(out);
        let id = id_of(field(root, spec.id));
        let name = src(spec.name, root);
        let input = summarize_input(field(root, spec.input));
        let burst = self.open_burst(range, out);
        if !id.is_empty()
            && let Some((_, call)) = burst.calls.iter_mut().rev().find(|(i, _)| *i == id)
        {
            if call.input_summary.is_empty() {
                call.input_summary = input;
            }
            return;
        }
        burst.calls.push((
            id,
            ToolCall {
                name,
                input_summary: input,
                status: "started".into(),
                output_summary: None,
                exit_code: None,
            },
        ));
    }

    fn tool_result(
        &mut self,
        spec: &ToolResultSpec,
        root: &Value,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        self.end_narration(out);
        let id = id_of(field(root, spec.id));
        let status = status_of(&spec.status, root);
        let output = summarize_output(field(root, spec.output))
            .or_else(|| summarize_output(field(root, spec.error)));
        let exit = field(root, spec.exit).and_then(Value::as_i64);
        let burst = self.open_burst(range, out);
        let found = if id.is_empty() {
            None
        } else {
            burst.calls.iter_mut().rev().find(|(i, _)| *i == id)
        };
        match found {
            Some((_, call)) => {
                call.status = status;
                call.output_summary = output;
                call.exit_code = exit;
            }
            None => burst.calls.push((
                id,
                ToolCall {
                    name: src(spec.name, root),
                    input_summary: summarize_input(field(root, spec.input)),
                    status,
                    output_summary: output,
                    exit_code: exit,
                },
            )),
        }
    }

    fn open_burst(&mut self, range: RawRange, out: &mut Vec<ConversationEvent>) -> &mut Burst {
        if self
            .burst
            .as_ref()
            .is_some_and(|b| b.calls.len() >= MAX_BURST_CALLS)
        {
            self.flush_burst(out);
        }
        let burst = self.burst.get_or_insert_with(|| Burst {
            calls: Vec::new(),
            range,
        });
        burst.range.end = burst.range.end.max(range.end);
        burst
    }

    fn lifecycle(
        &mut self,
        spec: &LifecycleSpec,
        root: &Value,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        let failed = spec.always_failed || spec.failed_if.is_some_and(|c| cond(&c, root));
        let mut answer = None;
        if spec.ends_turn {
            self.flush_burst(out);
            if failed {
                self.flush_text(out, false);
            } else {
                match nonempty(field(root, spec.answer)) {
                    // The closing frame names an answer not yet shown: show it now.
                    Some(a)
                        if self.pending.as_ref().is_none_or(|p| p.text != a)
                            && (self.pending.is_some()
                                || self.last_agent.as_deref() != Some(a)) =>
                    {
                        self.flush_text(out, false);
                        out.push(ConversationEvent::TaskAgent {
                            text: a.to_string(),
                            raw_range: range,
                            is_final: true,
                        });
                        self.last_agent = Some(a.to_string());
                    }
                    // Merged deltas still pending are the final answer.
                    _ => self.flush_text(out, true),
                }
                answer = self.last_agent.clone();
            }
            self.last_agent = None;
        }
        out.push(ConversationEvent::Status {
            level: if failed { Level::Error } else { Level::Info },
            label: if failed {
                spec.failed_label
            } else {
                spec.label
            }
            .to_string(),
            detail: if failed {
                render(spec.failed_detail, root)
            } else {
                None
            },
            session_id: nonempty(field(root, spec.session)).map(str::to_string),
            usage: field(root, spec.usage).cloned(),
            answer,
            raw_range: range,
        });
    }

    fn flush_text(&mut self, out: &mut Vec<ConversationEvent>, is_final: bool) {
        if let Some(p) = self.pending.take() {
            self.last_agent = Some(p.text.clone());
            out.push(ConversationEvent::TaskAgent {
                text: p.text,
                raw_range: p.range,
                is_final,
            });
        }
    }

    fn flush_burst(&mut self, out: &mut Vec<ConversationEvent>) {
        if let Some(b) = self.burst.take() {
            out.push(ConversationEvent::ToolBurst {
                tools: b.calls.into_iter().map(|(_, c)| c).collect(),
                raw_range: b.range,
            });
        }
    }
}

// ---- field access and summaries ---------------------------------------------

/// The value at `path` (the root itself for an empty path).
fn at(v: &Value, path: Path) -> Option<&Value> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object()?.get(*k)?;
    }
    Some(cur)
}

/// Like [`at`], but an empty path means "no such field".
fn field(v: &Value, path: Path) -> Option<&Value> {
    if path.is_empty() { None } else { at(v, path) }
}

fn nonempty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn id_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn src(s: Src, root: &Value) -> String {
    match s {
        Src::Const(c) => c.to_string(),
        Src::Path(p) => nonempty(field(root, p)).map_or_else(|| "?".into(), |n| cut(n, 80).into()),
    }
}

fn status_of(s: &StatusSrc, root: &Value) -> String {
    match s {
        StatusSrc::Path(p) => match nonempty(field(root, p)) {
            Some("success") => "completed".into(),
            Some(st) => cut(st, 40).to_string(),
            None => "completed".into(),
        },
        StatusSrc::ErrorFlag(p) => {
            if field(root, p).and_then(Value::as_bool) == Some(true) {
                "error".into()
            } else {
                "completed".into()
            }
        }
        StatusSrc::SuccessFlag { flag, code } => {
            if field(root, flag).and_then(Value::as_bool) == Some(false) {
                nonempty(field(root, code)).map_or_else(|| "error".into(), |c| cut(c, 40).into())
            } else {
                "completed".into()
            }
        }
    }
}

fn cond(c: &Cond, root: &Value) -> bool {
    match c {
        Cond::True(p) => field(root, p).and_then(Value::as_bool) == Some(true),
        Cond::StrNe(p, s) => field(root, p).and_then(Value::as_str) != Some(*s),
        Cond::NonZero(p) => field(root, p)
            .and_then(Value::as_i64)
            .is_some_and(|n| n != 0),
        Cond::Exists(p) => field(root, p).is_some_and(|v| !v.is_null()),
    }
}

fn one_line(s: &str, max: usize) -> String {
    let s = s.trim();
    let mut lines = s.lines();
    let first = lines.next().unwrap_or("");
    let more = lines.count();
    let mut out = cut(first, max).to_string();
    if out.len() < first.len() {
        out.push('…');
    }
    if more > 0 {
        out.push_str(&format!(" (+{more} lines)"));
    }
    out
}

/// Frame kinds come from the payload: keep them short and printable.
fn sanitize_kind(k: &str) -> String {
    let mut s: String = k
        .chars()
        .take(KIND_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-/:()=".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect();
    if k.chars().count() > KIND_CHARS {
        s.push('…');
    }
    s
}

const INPUT_KEYS: &[&str] = &[
    "command",
    "cmd",
    "file_path",
    "filePath",
    "path",
    "pattern",
    "query",
    "url",
    "prompt",
    "description",
];

fn summarize_input(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => {
            // Some CLIs pass arguments as a JSON string.
            if s.starts_with('{')
                && let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s)
            {
                return summarize_input(Some(&inner));
            }
            one_line(s, SUMMARY_CHARS)
        }
        Some(Value::Object(m)) => INPUT_KEYS
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
            .map(|s| one_line(s, SUMMARY_CHARS))
            .unwrap_or_else(|| one_line(&Value::Object(m.clone()).to_string(), SUMMARY_CHARS)),
        Some(Value::Array(items)) => {
            let paths: Vec<&str> = items
                .iter()
                .filter_map(|i| i.get("path").and_then(Value::as_str))
                .collect();
            if paths.is_empty() {
                format!("{} items", items.len())
            } else {
                one_line(&paths.join(", "), SUMMARY_CHARS)
            }
        }
        Some(other) => one_line(&other.to_string(), SUMMARY_CHARS),
    }
}

fn summarize_output(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        // Content blocks: the text of each.
        Value::Array(items) => Cow::Owned(
            items
                .iter()
                .filter_map(|i| i.get("text").and_then(Value::as_str).or_else(|| i.as_str()))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Value::Null => return None,
        other => Cow::Owned(other.to_string()),
    };
    let s = s.trim();
    (!s.is_empty()).then(|| one_line(s, SUMMARY_CHARS))
}

/// Fills a detail template; `None` when nothing but literal text remains.
fn render(tpl: &str, root: &Value) -> Option<String> {
    if tpl.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut filled = false;
    let mut rest = tpl;
    let has_fields = tpl.contains('{');
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let path = &rest[open + 1..open + close];
        let mut cur = Some(root);
        for k in path.split('.') {
            cur = cur.and_then(|c| c.as_object()).and_then(|o| o.get(k));
        }
        match cur {
            Some(Value::String(s)) if !s.is_empty() => {
                out.push_str(s);
                filled = true;
            }
            Some(Value::Number(n)) => {
                out.push_str(&n.to_string());
                filled = true;
            }
            Some(Value::Bool(b)) => {
                out.push_str(if *b { "true" } else { "false" });
                filled = true;
            }
            Some(Value::Array(a)) => {
                out.push_str(&format!("{} items", a.len()));
                filled = true;
            }
            _ => out.push('?'),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    if has_fields && !filled {
        return None;
    }
    let out = out.trim();
    let capped = cut(out, DETAIL_CHARS);
    let mut s = capped.to_string();
    if capped.len() < out.len() {
        s.push('…');
    }
    Some(s)
}
