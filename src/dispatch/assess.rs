//! settle's judge: a pure function from the run's facts (exit status, the
//! tracker's or the ACP session's outcome, the summary and its schema,
//! usage, vf's own stop reasons) to its outcome (state, reason, error,
//! summary, usage, `retryAt`). No process, no file: settle gathers the
//! facts, judges, runs the steps after the engine, and applies the outcome
//! to the unit's life in one transition.

use std::time::Duration;

use super::supervise::Stop;
use crate::engine::Summary;
use crate::engine::SummarySchema;
use crate::engine::summary;
use crate::engine::{EngineId, Outcome};
use crate::engine::{Running, Usage};
use crate::ground::Reason;
use crate::unit::UnitState;
use crate::unit::{Finish, Spent};

/// Everything the judge reads of one run.
#[derive(Clone, Copy)]
pub(super) struct Facts<'a> {
    pub engine: EngineId,
    pub exit_code: Option<i32>,
    /// Why vf ended the engine itself, if it did.
    pub stop: Option<&'a Stop>,
    /// The id a resumed run reported in place of the one asked for.
    pub session_mismatch: Option<&'a str>,
    /// The session a resume asked for.
    pub resumed: Option<&'a str>,
    pub stall_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    /// The tracker's outcome, or an ACP session's.
    pub outcome: &'a Outcome,
    /// What the tracker read of a failure: a rate limit, a budget stop,
    /// and when the limit resets.
    pub rate_limited: bool,
    pub budget_stopped: bool,
    pub retry_at: Option<&'a str>,
    /// The last bytes of the engine's stderr.
    pub stderr_tail: &'a [u8],
    /// An ACP session's own facts (`None`: not an ACP engine).
    pub acp: Option<AcpFacts<'a>>,
    pub summary_schema: Option<&'a SummarySchema>,
    /// The usage the run reported, and how it counts.
    pub reported: Option<&'a Usage>,
    pub running: Running,
    /// The session's usage so far (a resume's, from its marker).
    pub previous: Option<&'a Usage>,
}

/// What an ACP session adds to the facts.
#[derive(Clone, Copy)]
pub(super) struct AcpFacts<'a> {
    /// Its stop reason's failure, or why it never got an answer.
    pub failure: Option<&'a (Reason, String)>,
    /// It never ended (the agent exited or closed its stdio first).
    pub unended: bool,
    pub agent_version: Option<&'a str>,
}

/// The run's outcome, before the steps after the engine (which may fail it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Judged {
    pub reason: Option<Reason>,
    pub error: Option<String>,
    pub summary: Option<serde_json::Value>,
    pub summary_error: Option<String>,
    pub spent: Spent,
}

impl Judged {
    /// The steps after the engine (guards, commit, verify) override the
    /// engine's outcome when they fail; `retryAt` stays the engine's.
    pub fn with_steps(mut self, failure: Option<(Reason, String)>) -> Judged {
        if let Some((r, msg)) = failure {
            (self.reason, self.error) = (Some(r), Some(msg));
        }
        self
    }

    pub fn state(&self) -> UnitState {
        match self.reason {
            Some(_) => UnitState::Failed,
            None => UnitState::Done,
        }
    }

    /// The final transition this outcome asks of the unit's life.
    pub fn finish(&self, exit_code: Option<i32>) -> Finish {
        Finish {
            state: self.state(),
            exit_code,
            reason: self.reason,
            error: self.error.clone(),
            summary: self.summary.clone(),
            summary_error: self.summary_error.clone(),
        }
    }
}

/// The judge: facts in, outcome out.
pub(super) fn judge(f: &Facts) -> Judged {
    let (mut reason, mut error) = failure(f);
    let (mut summary, mut summary_error) = match f.outcome.answer.as_deref().map(summary::extract) {
        Some(Summary::Valid { value }) => (Some(value), None),
        Some(Summary::Invalid { error }) => (None, Some(error)),
        _ => (None, None),
    };
    // Only a run that otherwise succeeded is judged by the schema.
    if let (Some(schema), None) = (f.summary_schema, reason) {
        match schema.check(f.outcome.answer.as_deref()) {
            Ok(value) => summary = Some(value),
            Err(msg) => {
                // Only a summary that passed is one; the answer keeps the text.
                summary = None;
                reason = Some(Reason::SummarySchema);
                error = Some(crate::ground::text::cut(&msg, 300).to_string());
                summary_error = Some(msg);
            }
        }
    }
    Judged {
        reason,
        error,
        summary,
        summary_error,
        spent: spent(f, reason),
    }
}

/// What the run consumed: per run (a resume's figures less the session's
/// total so far), the session's total where it is not `usage` itself, and
/// the reset time of a rate limit.
fn spent(f: &Facts, reason: Option<Reason>) -> Spent {
    let previous = f.resumed.and(f.previous);
    let (usage, thread_usage) = crate::engine::per_run(f.reported, f.running, previous);
    Spent {
        thread_usage: thread_usage.filter(|t| Some(t) != usage.as_ref()),
        usage,
        retry_at: (reason == Some(Reason::RateLimited))
            .then(|| f.retry_at.map(str::to_string))
            .flatten(),
        engine_version: f.acp.and_then(|a| a.agent_version).map(str::to_string),
    }
}

/// Why the unit failed (`None`: done), and the one-line error. vf's own
/// stop comes first, then a resume that found another session, then the
/// engine's failure; an ACP session's own failure (its stop reason)
/// replaces the last two.
fn failure(f: &Facts) -> (Option<Reason>, Option<String>) {
    let (reason, error) = engine_failure(f);
    let Some(acp) = f.acp else {
        return (reason, error);
    };
    match (f.stop, acp.failure) {
        // A session that never ended because the agent exited with a
        // failure (not found, a crash) is told by that exit: its status
        // and stderr.
        (None, Some(_)) if acp.unended && f.exit_code.is_some_and(|c| c != 0) => {
            let exit = crate::engine::exit_text(f.engine, f.exit_code);
            let why = with_stderr_reason(exit, f.engine, f.exit_code, f.stderr_tail);
            (Some(Reason::Engine), Some(why))
        }
        (None, Some((r, msg))) => (Some(*r), Some(msg.clone())),
        _ => (reason, error),
    }
}

/// vf's stop, a session mismatch, or the engine's own failure.
fn engine_failure(f: &Facts) -> (Option<Reason>, Option<String>) {
    let secs = |d: Option<Duration>| d.unwrap_or_default().as_secs_f64();
    let (reason, error) = match (f.stop, f.session_mismatch) {
        (Some(Stop::Signal(sig)), _) => (
            Reason::Interrupted(Some(sig.number())),
            format!("interrupted by {}", sig.as_str()),
        ),
        (Some(Stop::Stalled), _) => (
            Reason::Stalled,
            format!("stalled: no output for {}s", secs(f.stall_timeout)),
        ),
        (Some(Stop::TimedOut), _) => (
            Reason::Timeout,
            format!("timed out after {}s", secs(f.timeout)),
        ),
        (Some(Stop::Budget(why)), _) => (Reason::Budget, format!("{why}; the engine was ended")),
        (Some(Stop::LogFailed(msg)), _) => (Reason::State, format!("{msg}; the engine was ended")),
        (None, Some(got)) => (
            Reason::SessionMismatch,
            format!(
                "resumed run reported session {got}, not the requested {}: the native session was not found",
                f.resumed.unwrap_or("?")
            ),
        ),
        (None, None) if f.outcome.failed => {
            let error = f
                .outcome
                .error
                .clone()
                .map(|err| with_stderr_reason(err, f.engine, f.exit_code, f.stderr_tail));
            let reason = if f.rate_limited {
                Reason::RateLimited
            } else if f.budget_stopped {
                Reason::Budget
            } else {
                Reason::Engine
            };
            return (Some(reason), error);
        }
        (None, None) => return (None, None),
    };
    (Some(reason), Some(error))
}

/// A bare "exited with status N" says nothing: add the CLI's own last stderr line
/// (e.g. claude refusing `--dangerously-skip-permissions` as root).
fn with_stderr_reason(error: String, engine: EngineId, code: Option<i32>, tail: &[u8]) -> String {
    if error != crate::engine::exit_text(engine, code) {
        return error;
    }
    let text = crate::ground::strip_ansi(&String::from_utf8_lossy(tail));
    match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(line) => match engine.engine().explain_stderr(line) {
            Some(hint) => format!("{error}: {hint}"),
            None => format!("{error}: {}", crate::ground::text::cut(line, 300)),
        },
        None => error,
    }
}

#[cfg(test)]
#[path = "assess_tests.rs"]
mod tests;
