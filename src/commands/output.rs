//! Rendering dispatch events and results: human, jsonl, json.

use std::io::{IsTerminal, Write};

use crate::cli::OutputFormat;
use crate::dispatch::{DispatchResult, EventSink};
use crate::engine::frames::ConversationEvent;

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
