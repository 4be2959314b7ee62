//! A run's outcome, read off the projection: session id, answer, failure.
//!
//! One generic reading serves every engine. The manifest says where frames
//! name the session, which rows close a turn, fail it or cut it short, and
//! which status rows explain a failure; the engine's `Spec` adds the policy
//! no frame carries (the shape of session ids, and whether a session exists
//! before the model answered). The rules, in order:
//!
//! - **session**: the first id of the engine's shape that any frame names; a
//!   closing row's id is final (claude repeats it on `result`).
//! - **failure**: a failing lifecycle row (its own message, else the latest
//!   explaining status row, else "<engine> reported <detail>"); else a killed
//!   process or a non-zero exit (the latest explaining status row, else the
//!   exit status); else no closing row at all ("the stream ended without …");
//!   else a last closing row that cuts the run short (opencode's step that
//!   ends in a refused tool call, with exit 0).
//! - **answer**: the answer of the latest closing row (text before a tool call
//!   is narration, never the answer). A failing row leaves none; a run that
//!   failed otherwise keeps its last agent message for the record. Text
//!   transport: every line, trailing line breaks dropped.

use serde_json::Value;

use super::manifest::{Accumulate, RateLimits};
use crate::engine::usage::{Running, Usage};
use crate::engine::{EngineId, Outcome, OutputTransport, Spec, exit_text};
use crate::ground::text::{ANSWER_MAX, Tail};
use crate::ground::version::Version;

/// What a failing lifecycle row said.
struct FailedRow {
    /// The engine's own message (the row's `error` paths).
    text: Option<String>,
    /// `<engine> reported <detail>` when nothing better explains it.
    fallback: String,
}

/// What one lifecycle row tells the tracker.
pub(super) struct Row {
    pub failed: bool,
    pub error: Option<String>,
    pub detail: Option<String>,
    pub closes_turn: bool,
    pub answer: Option<Tail>,
    pub cut_short: bool,
    /// `Some` when the row names usage (possibly `null`).
    pub usage: Option<Option<Value>>,
    /// The normalised figures the row carries, and how they add up.
    pub figures: Option<(Usage, Accumulate)>,
}

/// The run's reading, fed by the projector (see the module docs).
pub struct Tracker {
    spec: &'static Spec,
    transport: OutputTransport,
    /// What the stream lacks when no row closed a turn ("a result frame").
    closing: &'static str,
    session: Option<String>,
    answered: bool,
    last_message: Option<Tail>,
    note: Option<String>,
    tool_error: Option<String>,
    failed: Option<FailedRow>,
    closed: bool,
    answer: Option<Tail>,
    cut_short: bool,
    usage: Option<Value>,
    /// A text transport's output (its last [`ANSWER_MAX`] bytes).
    text: Option<Tail>,
    figures: Option<Usage>,
    running: Running,
    /// The CLI's version (whether a figure is a running total can depend on it).
    version: Option<Version>,
    limits: &'static RateLimits,
    rate_limited: bool,
    retry_at: Option<String>,
    /// The engine's latest word on its quota window, until taken.
    quota: Option<super::quota_signal::Signal>,
    /// The engine stopped on its own spending cap.
    budget_stop: bool,
}

impl Tracker {
    pub(super) fn new(
        engine: EngineId,
        version: Option<&Version>,
        transport: OutputTransport,
        closing: &'static str,
        limits: &'static RateLimits,
    ) -> Self {
        Tracker {
            spec: engine.engine().spec(),
            transport,
            closing,
            session: None,
            answered: false,
            last_message: None,
            note: None,
            tool_error: None,
            failed: None,
            closed: false,
            answer: None,
            cut_short: false,
            usage: None,
            text: None,
            figures: None,
            running: Running::None,
            version: version.cloned(),
            limits,
            rate_limited: false,
            retry_at: None,
            quota: None,
            budget_stop: false,
        }
    }

    /// Whether the engine ended the run on its own spending cap.
    pub fn budget_stopped(&self) -> bool {
        self.budget_stop
    }

    pub(super) fn saw_budget_stop(&mut self) {
        self.budget_stop = true;
    }

    /// The run's normalised usage so far (`None`: the engine reported none),
    /// and which of its figures are the session's running total rather than
    /// this run's.
    pub fn usage(&self) -> (Option<&Usage>, Running) {
        (self.figures.as_ref(), self.running)
    }

    /// Whether a run that failed did so because the provider rate-limited it:
    /// a rate-limit frame, or the manifest's exit status or stderr text.
    pub fn rate_limited(&self, exit_code: Option<i32>, stderr_tail: &[u8]) -> bool {
        if self.rate_limited {
            return true;
        }
        if exit_code.is_some() && exit_code == self.limits.exit {
            return true;
        }
        let tail = String::from_utf8_lossy(stderr_tail);
        self.limits.stderr.iter().any(|s| tail.contains(s))
    }

    /// When the provider said the limit resets (RFC 3339).
    pub fn retry_at(&self) -> Option<&str> {
        self.retry_at.as_deref()
    }

    /// The validated session id, as soon as it is known.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Whether that session now exists natively, so an exact resume can find
    /// it. Only then is the id stored as the unit's resume authority.
    pub fn resumable(&self) -> bool {
        self.session.is_some() && (self.answered || !self.spec.resumable_after_answer)
    }

    /// The outcome once the process has exited with `exit_code` (`None`: killed).
    pub fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let error = self.failure(exit_code);
        let kept = if self.transport == OutputTransport::Text {
            self.text.as_ref()
        } else if self.failed.is_some() {
            None
        } else if self.answer.is_some() || error.is_none() {
            self.answer.as_ref()
        } else {
            self.last_message.as_ref()
        };
        let mut answer = kept.map(|t| t.as_str().to_string());
        if self.transport == OutputTransport::Text {
            // The CLI pads its output with line breaks; they are not part of it.
            answer = answer.map(|t| t.trim_end_matches(['\n', '\r']).to_string());
        }
        Outcome {
            session_id: self.session.clone(),
            answer,
            answer_cut: kept.map_or(0, Tail::dropped),
            failed: error.is_some(),
            error,
            usage: self.usage.clone(),
        }
    }

    fn failure(&self, exit_code: Option<i32>) -> Option<String> {
        let engine = self.spec.id;
        if let Some(f) = &self.failed {
            return Some(
                f.text
                    .clone()
                    .or_else(|| self.note.clone())
                    .unwrap_or_else(|| f.fallback.clone()),
            );
        }
        match exit_code {
            None => return Some(exit_text(engine, None)),
            Some(0) => {}
            Some(c) => {
                return Some(
                    self.note
                        .clone()
                        .unwrap_or_else(|| exit_text(engine, Some(c))),
                );
            }
        }
        if self.transport == OutputTransport::Text {
            None
        } else if !self.closed {
            Some(format!("the stream ended without {}", self.closing))
        } else if self.cut_short {
            // The CLI always calls the model again after a tool: ending right
            // after one means the run was stopped (a refused permission, exit 0).
            Some(match &self.tool_error {
                Some(e) => format!("{engine} stopped after a failed tool call: {e}"),
                None => format!("{engine} stopped after a tool call without a final answer"),
            })
        } else {
            None
        }
    }

    // ---- fed by the projector ----------------------------------------------

    /// A frame named `id` as its session; `closing`: on a row that closes a turn.
    pub(super) fn saw_session(&mut self, id: &str, closing: bool) {
        if (self.session.is_none() || closing) && self.spec.session_ids.matches(id) {
            self.session = Some(id.to_string());
        }
    }

    /// The model produced something (text, a tool call): its session exists.
    pub(super) fn answered(&mut self) {
        self.answered = true;
    }

    /// An agent message was shown.
    pub(super) fn agent_message(&mut self, text: &Tail) {
        self.answered = true;
        self.last_message = Some(text.clone());
    }

    /// A status row that explains a failure decided elsewhere (an exit status,
    /// a failing row without its own message).
    pub(super) fn note(&mut self, text: Option<String>) {
        if text.is_some() {
            self.note = text;
        }
    }

    pub(super) fn tool_failed(&mut self, error: Option<String>) {
        if error.is_some() {
            self.tool_error = error;
        }
    }

    /// One line of a text-transport stream (all of it is the answer).
    pub(super) fn text_line(&mut self, line: &str) {
        match &mut self.text {
            Some(t) => {
                t.push("\n");
                t.push(line);
            }
            None => self.text = Some(Tail::of(line, ANSWER_MAX)),
        }
    }

    /// A frame said the provider rate-limited the run.
    pub(super) fn saw_quota(&mut self, signal: super::quota_signal::Signal) {
        self.quota = Some(signal);
    }

    /// The quota reading seen since the last call, if any (the runtime
    /// hands it to the governor while the unit runs).
    pub fn take_quota(&mut self) -> Option<super::quota_signal::Signal> {
        self.quota.take()
    }

    pub(super) fn saw_rate_limit(&mut self, retry_at: Option<String>) {
        self.rate_limited = true;
        if retry_at.is_some() {
            self.retry_at = retry_at;
        }
    }

    fn add_figures(&mut self, u: Usage, how: Accumulate) {
        self.running = how.running(self.version.as_ref());
        self.figures = match (&self.figures, how) {
            (Some(prev), Accumulate::Sum) => Some(prev.plus(&u)),
            _ => Some(u),
        };
    }

    pub(super) fn row(&mut self, row: Row) {
        if let Some((u, how)) = row.figures {
            self.add_figures(u, how);
        }
        if let Some(usage) = row.usage {
            self.usage = usage;
        }
        if row.failed {
            self.failed = Some(FailedRow {
                text: row.error,
                fallback: match row.detail {
                    Some(d) => format!("{} reported {d}", self.spec.id),
                    None => format!("{} reported an error", self.spec.id),
                },
            });
        } else if row.closes_turn {
            self.answered = true;
        }
        if row.closes_turn {
            self.closed = true;
            self.answer = row.answer;
            self.cut_short = row.cut_short;
        }
    }
}
