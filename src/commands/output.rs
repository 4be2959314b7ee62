//! Rendering dispatch events and results: human, jsonl, json.

use std::io::{IsTerminal, Write};

use crate::cli::OutputFormat;
use crate::dispatch::{DispatchResult, EventSink};
use crate::engine::RoundNote;
use crate::engine::frames::ConversationEvent;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome, VerdictKind};

/// Writes events to stdout as they arrive (live output: a failed write
/// stops the printing, never the run; see [`super::stdio`]).
pub struct StdoutSink {
    format: OutputFormat,
    /// A spinner/elapsed line on stderr, only when stderr is a terminal.
    spinner: Option<usize>,
    /// Extra key/values for every JSONL line (orchestrate tags lines with the unit).
    pub tag: Option<(String, String)>,
    /// `origins` added to the result object (`vf dispatch`: docs/CONFIG.md).
    pub origins: Option<serde_json::Value>,
}

impl StdoutSink {
    pub fn new(format: OutputFormat) -> Self {
        let spinner =
            (format == OutputFormat::Human && std::io::stderr().is_terminal()).then_some(0);
        StdoutSink {
            format,
            spinner,
            tag: None,
            origins: None,
        }
    }

    fn clear_spinner(&mut self) {
        if self.spinner.is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        super::stdio::live(bytes);
    }

    /// One JSON line, untagged, written as it is serialized (see
    /// [`super::stdio::live_json`]): the same text as `json_line` of a
    /// value whose own serialization sorts its keys.
    pub fn json_streamed(&mut self, value: &impl serde::Serialize) {
        super::stdio::live_json(value);
    }

    /// One JSON line (with the tag, when set).
    pub fn json_line(&mut self, value: &impl serde::Serialize) {
        let mut v = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        if let (Some((k, val)), Some(obj)) = (&self.tag, v.as_object_mut()) {
            obj.insert(k.clone(), serde_json::Value::String(val.clone()));
        }
        let mut line = serde_json::to_vec(&v).unwrap_or_default();
        line.push(b'\n');
        self.write(&line);
    }

    /// The final result: the last JSONL line, the whole JSON output, or a human summary.
    /// The result as JSON, with `origins` when the command set them.
    fn with_origins(&self, r: &DispatchResult) -> serde_json::Value {
        let mut v = serde_json::to_value(r).unwrap_or_default();
        if let (Some(o), Some(obj)) = (&self.origins, v.as_object_mut()) {
            obj.insert("origins".into(), o.clone());
        }
        v
    }

    pub fn result(&mut self, r: &DispatchResult) {
        self.clear_spinner();
        match self.format {
            OutputFormat::Jsonl => {
                let mut v = self.with_origins(r);
                if let Some(obj) = v.as_object_mut() {
                    let mut tagged = serde_json::Map::new();
                    tagged.insert("kind".into(), "dispatch.result".into());
                    tagged.extend(std::mem::take(obj));
                    *obj = tagged;
                }
                self.json_line(&v);
            }
            OutputFormat::Json => {
                let v = self.with_origins(r);
                self.json_line(&v)
            }
            OutputFormat::Human => {
                let mut s = String::new();
                s.push_str(&format!(
                    "\n── {} · {} {} · {}",
                    r.unit,
                    r.engine,
                    r.engine_version.as_deref().unwrap_or("(version unknown)"),
                    r.state.as_str()
                ));
                if let Some(code) = r.exit_code {
                    s.push_str(&format!(" · exit {code}"));
                }
                s.push_str(&format!(" · {:.1}s\n", r.duration_ms as f64 / 1000.0));
                if let Some(id) = &r.session_id {
                    s.push_str(&format!("session: {id}\n"));
                }
                if let Some(c) = &r.replay {
                    s.push_str(&format!(
                        "start: a fresh session with a replay of {} of {} earlier answers\n",
                        c.replayed, c.source
                    ));
                }
                match (&r.summary, &r.summary_error) {
                    (Some(v), _) => s.push_str(&format!("summary: {v}\n")),
                    (None, Some(e)) => s.push_str(&format!("summary: invalid ({e})\n")),
                    _ => s.push_str("summary: none\n"),
                }
                if let Some(u) = &r.usage {
                    s.push_str(&format!("usage: {}\n", u.short()));
                }
                if r.unknown_frames > 0 {
                    s.push_str(&format!(
                        "protocol drift: {} unknown frame(s)\n",
                        r.unknown_frames
                    ));
                }
                if let Some(e) = &r.error {
                    s.push_str(&format!("error: {e}\n"));
                }
                if !r.rounds.is_empty() {
                    s.push_str(&format!("rounds: {}\n", rounds_summary(&r.rounds)));
                }
                if let Some(p) = &r.stdout_log {
                    s.push_str(&format!("raw log: {}\n", p.display()));
                }
                if let Some(w) = &r.workspace {
                    s.push_str(&format!(
                        "worktree: {} on {} ({} file(s) changed since {})\n",
                        w.path.display(),
                        w.branch,
                        w.changed_files.len(),
                        crate::ground::text::cut(&w.base, 12)
                    ));
                }
                // An error or version may carry the engine's own words.
                self.write(crate::ground::text::visible(&s).as_bytes());
            }
        }
    }
}

impl EventSink for StdoutSink {
    fn event(&mut self, event: &ConversationEvent) {
        match self.format {
            OutputFormat::Jsonl => self.json_line(event),
            OutputFormat::Json => {}
            OutputFormat::Human => {
                self.clear_spinner();
                let mut s = human_line(event);
                s.push('\n');
                self.write(s.as_bytes());
            }
        }
    }

    fn wants_ticks(&self) -> bool {
        self.spinner.is_some()
    }

    fn tick(&mut self, elapsed: std::time::Duration) {
        const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
        if let Some(i) = self.spinner.as_mut() {
            *i = (*i + 1) % FRAMES.len();
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[2K{} {:.1}s",
                FRAMES[*i],
                elapsed.as_secs_f64()
            );
        }
    }

    fn round(&mut self, note: &RoundNote) {
        match self.format {
            OutputFormat::Jsonl => self.json_line(&round_json(note)),
            OutputFormat::Json => {}
            OutputFormat::Human => {
                self.clear_spinner();
                let s = format!("{}\n", note_line(note));
                self.write(s.as_bytes());
            }
        }
    }

    fn warning(&mut self, message: &str) {
        self.clear_spinner();
        // Warnings go to stderr in every format; they are in the result object too.
        super::stdio::eprint_line(format_args!("vf: warning: {message}"));
    }
}

/// One event as readable transcript rows (the same rendering as `vf replay`).
pub fn human_line(ev: &ConversationEvent) -> String {
    let mut buf = Vec::new();
    let _ = crate::engine::frames::render::write_human(&mut buf, ev);
    String::from_utf8_lossy(&buf).trim_end().to_string()
}

/// The kind a live note names (`"fix"`, `"review"`, `"resolve"`).
pub fn note_kind(note: &RoundNote) -> Option<RoundKind> {
    [RoundKind::Fix, RoundKind::Review, RoundKind::Resolve]
        .into_iter()
        .find(|k| k.as_str() == note.kind)
}

/// A round as the human lines name it: `fix 1/3`, `review 2/2`, `resolve`
/// (a unit's one resolve round has no count).
pub fn round_name(kind: &str, n: u32, of: u32) -> String {
    if kind == RoundKind::Resolve.as_str() {
        kind.to_string()
    } else {
        format!("{kind} {n}/{of}")
    }
}

/// A live note as one human line: `round fix 1/3 (claude) ...` as it starts,
/// `round review 1/2 by codex: changes` as it ends.
pub fn note_line(note: &RoundNote) -> String {
    let name = round_name(note.kind, note.n, note.of);
    match &note.ended {
        None => format!("round {name} ({}) ...", note.engine.as_str()),
        Some(end) => format!(
            "round {name} by {}: {}",
            note.engine.as_str(),
            crate::ground::text::one_line(end, 200)
        ),
    }
}

/// A live note as a JSONL line of `vf dispatch` (typed by `kind` as the
/// events are).
pub fn round_json(note: &RoundNote) -> serde_json::Value {
    let mut v = serde_json::json!({
        "kind": "round",
        "round": note.kind,
        "n": note.n,
        "of": note.of,
        "engine": note.engine,
    });
    if let (Some(end), Some(obj)) = (&note.ended, v.as_object_mut()) {
        obj.insert("outcome".into(), end.as_str().into());
    }
    v
}

/// How a recorded round ended, in a word: a finished review's verdict
/// (`approve`, `changes`), else `running`, `done`, `failed`.
pub fn round_word(r: &Round) -> &'static str {
    match (&r.verdict, r.outcome) {
        (Some(v), RoundOutcome::Done) => match v.verdict {
            VerdictKind::Approve => "approve",
            VerdictKind::Changes => "changes",
        },
        (_, RoundOutcome::Running) => "running",
        (_, RoundOutcome::Done) => "done",
        (_, RoundOutcome::Failed) => "failed",
    }
}

/// [`round_word`] with a verdict's count of comments: `changes (2 comments)`.
pub fn round_end(r: &Round) -> String {
    let word = round_word(r);
    match r.verdict.as_ref().map_or(0, |v| v.comments.len()) {
        0 => word.to_string(),
        1 => format!("{word} (1 comment)"),
        n => format!("{word} ({n} comments)"),
    }
}

/// A recorded round as a live note (a followed Temporal run's rows carry
/// rounds, not notes): `ended` is `None` while it runs.
pub fn note_of(r: &Round) -> RoundNote {
    RoundNote {
        kind: r.kind.as_str(),
        n: r.n,
        of: r.of,
        engine: r.engine,
        ended: (r.outcome != RoundOutcome::Running).then(|| round_word(r).to_string()),
    }
}

/// Recorded rounds in one line: `fix 1/2 done, review 1/1 approve`.
pub fn rounds_summary(rounds: &[Round]) -> String {
    let each = rounds.iter().map(|r| {
        format!(
            "{} {}",
            round_name(r.kind.as_str(), r.n, r.of),
            round_end(r)
        )
    });
    each.collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::unit::marker::rounds::{Comment, Verdict};

    fn note(kind: &'static str, ended: Option<&str>) -> RoundNote {
        RoundNote {
            kind,
            n: 1,
            of: 2,
            engine: EngineId::Codex,
            ended: ended.map(String::from),
        }
    }

    #[test]
    fn a_round_note_reads_as_a_line_and_a_typed_json_line() {
        assert_eq!(note_line(&note("fix", None)), "round fix 1/2 (codex) ...");
        assert_eq!(
            note_line(&note("review", Some("changes"))),
            "round review 1/2 by codex: changes"
        );
        assert_eq!(
            note_line(&note("resolve", None)),
            "round resolve (codex) ..."
        );
        let v = round_json(&note("review", Some("approve")));
        assert_eq!(
            v,
            serde_json::json!({"kind": "round", "round": "review", "n": 1, "of": 2,
                "engine": "codex", "outcome": "approve"})
        );
        assert!(round_json(&note("fix", None)).get("outcome").is_none());
    }

    #[test]
    fn recorded_rounds_read_as_one_line_with_their_verdicts() {
        let mut fix = Round::start(RoundKind::Fix, (1, 2), EngineId::Claude);
        fix.outcome = RoundOutcome::Done;
        let mut review = Round::start(RoundKind::Review, (1, 1), EngineId::Codex);
        review.outcome = RoundOutcome::Done;
        review.verdict = Some(Verdict {
            verdict: VerdictKind::Changes,
            comments: vec![
                Comment {
                    path: None,
                    line: None,
                    text: "a".into(),
                },
                Comment {
                    path: None,
                    line: None,
                    text: "b".into(),
                },
            ],
        });
        let resolve = Round::start(RoundKind::Resolve, (1, 1), EngineId::Codex);
        assert_eq!(
            rounds_summary(&[fix, review, resolve]),
            "fix 1/2 done, review 1/1 changes (2 comments), resolve running"
        );
    }
}
