//! Phase 4, settle: end what is left of the group, release the process
//! record and the prompt file, judge the outcome, write the final marker.

use std::time::Instant;

use super::acp_session::{self, AcpVerdict};
use super::supervise::{Ended, Stop};
use super::{DispatchResult, EventSink, UnitSpec};
use crate::engine::{EngineId, Outcome};
use crate::error::{Reason, Result};
use crate::fsutil::now_rfc3339;
use crate::marker::UnitState;
use crate::summary::{self, Summary};

pub(super) async fn settle(
    spec: &UnitSpec,
    mut e: Ended,
    sink: &mut dyn EventSink,
    started: Instant,
) -> Result<DispatchResult> {
    release(&e, sink).await;
    for ev in e.projector.finish() {
        e.hold.emit(sink, &ev);
    }
    let exit_code = e.exit_status.and_then(|s| s.code());
    let (outcome, acp, mut reason, mut error) = verdict(spec, &e, exit_code);
    let (mut summary_value, mut summary_error) =
        match outcome.answer.as_deref().map(summary::extract) {
            Some(Summary::Valid { value }) => (Some(value), None),
            Some(Summary::Invalid { error }) => (None, Some(error)),
            _ => (None, None),
        };
    // Only a run that otherwise succeeded is judged by the schema.
    if let (Some(schema), None) = (&spec.summary_schema, reason) {
        match schema.check(outcome.answer.as_deref()) {
            Ok(value) => summary_value = Some(value),
            Err(msg) => {
                // Only a summary that passed is one; the answer keeps the text.
                summary_value = None;
                reason = Some(Reason::SummarySchema);
                error = Some(crate::text::cut(&msg, 300).to_string());
                summary_error = Some(msg);
            }
        }
    }
    let tracker = e.projector.tracker();
    let retry_at = (reason == Some(Reason::RateLimited))
        .then(|| tracker.retry_at().map(str::to_string))
        .flatten();
    let l = &mut e.launched;
    let marker = &mut l.prepared.marker;
    let (reported, running) = match &acp {
        Some(v) => (v.usage.as_ref(), crate::usage::Running::None),
        None => tracker.usage(),
    };
    // The session's running total is kept only where it is not `usage` itself.
    let previous = marker.thread_usage.as_ref().or(marker.usage.as_ref());
    let previous = spec.session.as_ref().and(previous);
    let (usage, thread_usage) = crate::usage::per_run(reported, running, previous);
    marker.thread_usage = thread_usage.filter(|t| Some(t) != usage.as_ref());
    marker.usage = usage.clone();
    marker.retry_at = retry_at.clone();
    if let Some(v) = acp.as_ref().and_then(|v| v.agent_version.clone()) {
        marker.engine_version = Some(v);
    }
    let session = outcome
        .session_id
        .clone()
        .or(marker.engine_session_id.clone());
    let after = steps_after(spec, &mut e, reason.is_none(), session.as_deref(), sink).await?;
    let l = &mut e.launched;
    let marker = &mut l.prepared.marker;
    if let Some((r, msg)) = after.failure {
        (reason, error) = (Some(r), Some(msg));
    }
    marker.state = if reason.is_some() {
        UnitState::Failed
    } else {
        UnitState::Done
    };
    marker.exit_code = exit_code;
    marker.summary = summary_value.clone();
    marker.summary_error = summary_error.clone();
    marker.error = error.clone();
    marker.reason = reason;
    marker.finished_at = Some(now_rfc3339());
    let answer_kept = keep_answer(spec, marker, outcome.answer.as_deref());
    // The final marker also makes a held session id durable. Its fsyncs wait
    // on the blocking pool, not on the thread every unit of a plan shares.
    let saved = super::launch::save_off_thread(&spec.state_dir, marker).await;
    e.hold.release(sink);
    let mut warnings = l.prepared.warnings.clone();
    warnings.extend(after.warnings);
    if let Some(Err(err)) = answer_kept.await {
        let msg = format!("cannot record its answer for a later replay: {err}");
        sink.warning(&msg);
        warnings.push(msg);
    }
    saved?;
    let marker = &l.prepared.marker;
    Ok(DispatchResult {
        exit_code,
        // What the engine reported (shown even when it cannot be resumed), except
        // that a resume never adopts another session's id.
        session_id: match e.session_mismatch {
            Some(_) => marker.engine_session_id.clone(),
            None => outcome.session_id.or(marker.engine_session_id.clone()),
        },
        summary: summary_value,
        summary_error,
        answer: outcome.answer,
        unknown_frames: match &l.acp {
            Some(run) => run.unknown,
            None => e.projector.unknown_frames(),
        },
        warnings,
        error,
        reason,
        usage,
        retry_at,
        stdout_log: Some(l.stdout_log.clone()),
        stderr_log: Some(l.stderr_log.clone()),
        path_violations: after.violations,
        ..DispatchResult::from_marker(spec, &l.prepared.store, marker, started)
    })
}

/// The steps after the engine (guards, commit, verify); they take time
/// (git, verify), so a held session id is made durable first.
async fn steps_after(
    spec: &UnitSpec,
    e: &mut Ended,
    ok: bool,
    session: Option<&str>,
    sink: &mut dyn EventSink,
) -> Result<super::steps::After> {
    let (l, steps) = (&mut e.launched, &spec.steps);
    let marker = &mut l.prepared.marker;
    let pending = marker.workspace.is_some() || steps.verify.is_some() || steps.guards.is_some();
    if e.hold.active() && pending {
        let saved = super::launch::save_off_thread(&spec.state_dir, marker).await;
        if let Err(err) = saved {
            sink.warning(&err.to_string());
        }
        e.hold.release(sink);
    }
    let at = (&l.prepared.store, l.prepared.guard.as_ref());
    super::steps::after_engine(spec, at, marker, ok, session, sink).await
}

/// The run's outcome (the tracker's, or an ACP session's) and its failure.
fn verdict(
    spec: &UnitSpec,
    e: &Ended,
    exit_code: Option<i32>,
) -> (Outcome, Option<AcpVerdict>, Option<Reason>, Option<String>) {
    let resumed = spec.session.is_some();
    let acp = e.launched.acp.as_ref();
    let (outcome, acp) = match acp.map(|run| acp_session::outcome(&run.done, resumed)) {
        Some((outcome, verdict)) => (outcome, Some(verdict)),
        None => (e.projector.tracker().finish(exit_code), None),
    };
    let (mut reason, mut error) = judge(spec, e, &outcome, exit_code);
    // An ACP session's own failure has its own reason (its stop reason).
    // A session that never ended because the agent exited with a failure
    // (not found, a crash) is told by that exit: its status and stderr.
    let unended = e
        .launched
        .acp
        .as_ref()
        .is_some_and(|r| matches!(r.done, None | Some(Err(crate::acp::AcpError::Closed(_)))));
    if let (None, Some(Some((r, msg)))) = (&e.stop, acp.as_ref().map(|v| v.failure.clone())) {
        (reason, error) = if unended && exit_code.is_some_and(|c| c != 0) {
            let exit = crate::engine::exit_text(spec.engine, exit_code);
            let tail = &e.stderr_tail;
            let why = with_stderr_reason(exit, spec.engine, exit_code, tail);
            (Some(Reason::Engine), Some(why))
        } else {
            (Some(r), Some(msg))
        };
    }
    (outcome, acp, reason, error)
}

/// Records the attempt's public answer for a later replay (never the
/// prompt, so never a private range), on the blocking pool: its fsyncs
/// overlap the final marker's. `None` when there is nothing to record.
fn keep_answer(
    spec: &UnitSpec,
    marker: &crate::marker::Marker,
    answer: Option<&str>,
) -> impl std::future::Future<Output = Option<std::io::Result<()>>> + use<> {
    let answer = answer
        .filter(|a| spec.keep_answer && !a.trim().is_empty())
        .map(str::to_string);
    let (dir, unit, engine) = (spec.state_dir.clone(), spec.unit.clone(), spec.engine);
    let (attempt, state) = (marker.attempts, marker.state);
    let job = answer.map(|answer| {
        tokio::task::spawn_blocking(move || {
            crate::history::record(&dir, &unit, engine, attempt, state, &answer)
        })
    });
    async move {
        let job = job?;
        Some(job.await.unwrap_or_else(|e| Err(std::io::Error::other(e))))
    }
}

/// Nothing of the group survives the run; its record and prompt file go
/// (on the blocking pool: file-system work stays off the shared thread).
async fn release(e: &Ended, sink: &mut dyn EventSink) {
    e.launched.group.kill();
    let record = e.launched.record_path.clone();
    let prompt = e.launched.prepared.inv.prompt_file.clone();
    let released = tokio::task::spawn_blocking(move || {
        let released = crate::owned::release(&record);
        if let Some(p) = &prompt {
            super::prompt_file::remove(p);
        }
        released.map_err(|err| (record, err))
    })
    .await;
    let failed = match released {
        Ok(Ok(())) => return,
        Ok(Err((record, err))) => format!("{}: {err}", record.display()),
        Err(err) => format!("{}: {err}", e.launched.record_path.display()),
    };
    sink.warning(&format!("cannot release process record {failed}"));
}

/// Why the unit failed (`None`: done), and the one-line error.
fn judge(
    spec: &UnitSpec,
    e: &Ended,
    outcome: &Outcome,
    exit_code: Option<i32>,
) -> (Option<Reason>, Option<String>) {
    let secs = |d: Option<std::time::Duration>| d.unwrap_or_default().as_secs_f64();
    let (reason, error) = match (&e.stop, &e.session_mismatch) {
        (Some(Stop::Signal(sig)), _) => (
            Reason::Interrupted(Some(sig.number())),
            format!("interrupted by {}", sig.as_str()),
        ),
        (Some(Stop::Stalled), _) => (
            Reason::Stalled,
            format!("stalled: no output for {}s", secs(spec.stall_timeout)),
        ),
        (Some(Stop::TimedOut), _) => (
            Reason::Timeout,
            format!("timed out after {}s", secs(spec.timeout)),
        ),
        (Some(Stop::Budget(why)), _) => (Reason::Budget, format!("{why}; the engine was ended")),
        (Some(Stop::LogFailed(msg)), _) => (Reason::State, format!("{msg}; the engine was ended")),
        (None, Some(got)) => (
            Reason::SessionMismatch,
            format!(
                "resumed run reported session {got}, not the requested {}: the native session was not found",
                spec.session.as_deref().unwrap_or("?")
            ),
        ),
        (None, None) if outcome.failed => {
            let error = outcome
                .error
                .clone()
                .map(|err| with_stderr_reason(err, spec.engine, exit_code, &e.stderr_tail));
            let tracker = e.projector.tracker();
            let reason = if tracker.rate_limited(exit_code, &e.stderr_tail) {
                Reason::RateLimited
            } else if tracker.budget_stopped() {
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
    let text = crate::text::strip_ansi(&String::from_utf8_lossy(tail));
    match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(line) => match engine.engine().explain_stderr(line) {
            Some(hint) => format!("{error}: {hint}"),
            None => format!("{error}: {}", crate::text::cut(line, 300)),
        },
        None => error,
    }
}
