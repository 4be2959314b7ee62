//! Phase 4, settle: end what is left of the group, release the process
//! record and the prompt file, gather the run's facts for the judge
//! ([`super::assess`]), run the steps after the engine, and apply the outcome
//! to the unit's life: one transition, one durable write.

use std::time::Instant;

use super::acp_session::{self, AcpVerdict};
use super::assess::{self, AcpFacts, Facts, Judged};
use super::supervise::Ended;
use super::{DispatchResult, EventSink, UnitSpec};
use crate::engine::Outcome;
use crate::ground::Result;
use crate::unit::UnitLife;
use crate::unit::UnitState;

pub(super) async fn settle(
    spec: &UnitSpec,
    mut e: Ended,
    mut life: UnitLife,
    sink: &mut dyn EventSink,
    started: Instant,
) -> Result<DispatchResult> {
    release(&e, &life, sink).await;
    for ev in e.projector.finish() {
        life.emit(sink, &ev);
    }
    let exit_code = e.exit_status.and_then(|s| s.code());
    let (outcome, acp) = outcome(spec, &e, exit_code);
    let judged = assess::judge(&facts(spec, &e, &life, (&outcome, acp.as_ref()), exit_code));
    life.note_spent(judged.spent.clone());
    let session = outcome
        .session_id
        .clone()
        .or(life.marker().engine_session_id.clone());
    let ok = judged.reason.is_none();
    let after = steps_after(spec, &e, &mut life, ok, session.as_deref(), sink).await?;
    let judged = judged.with_steps(after.failure);
    let answer = outcome.answer.as_deref();
    let answer_kept = keep_answer(spec, &life, judged.state(), answer);
    // The final marker also makes a held session id durable. Its fsyncs wait
    // on the blocking pool, not on the thread every unit of a plan shares.
    let saved = life.finish(judged.finish(exit_code), sink).await;
    let mut warnings = e.launched.prepared.warnings.clone();
    warnings.extend(e.projector.warnings().iter().cloned());
    warnings.extend(after.warnings);
    if let Some(msg) = cut_warning(&outcome, &e.launched.stdout_log) {
        sink.warning(&msg);
        warnings.push(msg);
    }
    if let Some(Err(err)) = answer_kept.await {
        let msg = format!("cannot record its answer for a later replay: {err}");
        sink.warning(&msg);
        warnings.push(msg);
    }
    saved?;
    let l = &e.launched;
    let marker = life.marker();
    let Judged { spent, .. } = judged;
    let res = DispatchResult {
        exit_code,
        // What the engine reported (shown even when it cannot be resumed), except
        // that a resume never adopts another session's id.
        session_id: match e.session_mismatch {
            Some(_) => marker.engine_session_id.clone(),
            None => outcome.session_id.or(marker.engine_session_id.clone()),
        },
        answer: outcome.answer,
        unknown_frames: match &l.acp {
            Some(run) => run.unknown,
            None => e.projector.unknown_frames(),
        },
        warnings,
        usage: spent.usage,
        retry_at: spent.retry_at,
        stdout_log: Some(l.stdout_log.clone()),
        stderr_log: Some(l.stderr_log.clone()),
        path_violations: after.violations,
        ..DispatchResult::from_life(spec, &life, started)
    };
    Ok(with_tree(spec, res).await)
}

/// The units its engine started through vf, and the usage of the whole
/// tree below it, read from their markers (on the blocking pool: a scan of
/// every marker). A scan that did not finish adds nothing.
async fn with_tree(spec: &UnitSpec, mut res: DispatchResult) -> DispatchResult {
    let state = spec.state_dir.clone();
    let scan = crate::ground::offload::run(move || crate::unit::lineage::Tree::scan(&state));
    if let Ok(tree) = scan.await {
        res.children = tree.children(&spec.unit).to_vec();
        res.tree_usage = tree.tree_usage(&spec.unit, res.usage.as_ref());
    }
    res
}

/// The warning for an answer over [`crate::ground::text::ANSWER_MAX`]: the result
/// holds its end, the raw log all of it.
fn cut_warning(outcome: &Outcome, raw_log: &std::path::Path) -> Option<String> {
    (outcome.answer_cut > 0).then(|| {
        format!(
            "the answer was cut: vf keeps its last {} MiB, the {} bytes before them are only in the raw log {}",
            crate::ground::ANSWER_MAX >> 20,
            outcome.answer_cut,
            raw_log.display()
        )
    })
}

/// The steps after the engine (guards, commit, verify); they take time
/// (git, verify), so a held session id is made durable first.
async fn steps_after(
    spec: &UnitSpec,
    e: &Ended,
    life: &mut UnitLife,
    ok: bool,
    session: Option<&str>,
    sink: &mut dyn EventSink,
) -> Result<super::around::After> {
    let steps = &spec.steps;
    let pending =
        life.marker().workspace.is_some() || steps.verify.is_some() || steps.guards.is_some();
    if pending {
        life.make_session_durable(sink).await;
    }
    let p = &e.launched.prepared;
    let guarded = (p.guard.as_ref(), p.sandbox.as_ref());
    let after = super::around::after_engine(spec, guarded, life, ok, session, sink).await;
    if p.sandbox.is_some() {
        // The run's private temp dir goes once nothing of the unit runs.
        life.unit().remove_tmp().await;
    }
    after
}

/// The run's outcome: the tracker's, or an ACP session's with its verdict.
fn outcome(spec: &UnitSpec, e: &Ended, exit_code: Option<i32>) -> (Outcome, Option<AcpVerdict>) {
    let resumed = spec.session.is_some();
    match e
        .launched
        .acp
        .as_ref()
        .map(|run| acp_session::outcome(run, resumed))
    {
        Some((outcome, verdict)) => (outcome, Some(verdict)),
        None => (e.projector.tracker().finish(exit_code), None),
    }
}

/// What the judge reads of the run (see [`judge::Facts`]).
fn facts<'a>(
    spec: &'a UnitSpec,
    e: &'a Ended,
    life: &'a UnitLife,
    (outcome, acp): (&'a Outcome, Option<&'a AcpVerdict>),
    exit_code: Option<i32>,
) -> Facts<'a> {
    let tracker = e.projector.tracker();
    let (reported, running) = match acp {
        Some(v) => (v.usage.as_ref(), v.running),
        None => tracker.usage(),
    };
    let marker = life.marker();
    let unended = |r: &super::acp_session::AcpRun| {
        matches!(r.done, None | Some(Err(crate::engine::AcpError::Closed(_))))
    };
    Facts {
        engine: spec.engine,
        exit_code,
        stop: e.stop.as_ref(),
        session_mismatch: e.session_mismatch.as_deref(),
        resumed: spec.session.as_deref(),
        stall_timeout: spec.stall_timeout,
        timeout: spec.timeout,
        outcome,
        rate_limited: tracker.rate_limited(exit_code, &e.stderr_tail),
        budget_stopped: tracker.budget_stopped(),
        retry_at: tracker.retry_at(),
        stderr_tail: &e.stderr_tail,
        acp: acp.map(|v| AcpFacts {
            failure: v.failure.as_ref(),
            unended: e.launched.acp.as_ref().is_some_and(unended),
            agent_version: v.agent_version.as_deref(),
        }),
        summary_schema: spec.summary_schema.as_deref(),
        reported,
        running,
        previous: marker.thread_usage.as_ref().or(marker.usage.as_ref()),
    }
}

/// Records the attempt's public answer for a later replay (never the
/// prompt, so never a private range), through the locked unit on the
/// blocking pool: its fsyncs overlap the final marker's. `None` when there
/// is nothing to record.
fn keep_answer(
    spec: &UnitSpec,
    life: &UnitLife,
    state: UnitState,
    answer: Option<&str>,
) -> impl std::future::Future<Output = Option<std::io::Result<()>>> + use<> {
    let attempt = life.marker().attempts;
    let job = answer
        .filter(|a| spec.keep_answer && !a.trim().is_empty())
        .map(|a| {
            life.unit()
                .record_answer(spec.engine, attempt, state, a.to_string())
        });
    async move { Some(job?.await) }
}

/// Nothing of the group survives the run; its record, prompt file and MCP
/// config go (on the blocking pool: file-system work stays off the shared
/// thread).
async fn release(e: &Ended, life: &UnitLife, sink: &mut dyn EventSink) {
    e.launched.group.kill();
    let record = e.launched.record_path.clone();
    let inv = &e.launched.prepared.inv;
    let config = inv.config_file.as_ref().map(|(path, _)| path.clone());
    let inputs: Vec<_> = inv.prompt_file.iter().cloned().chain(config).collect();
    if let Err((record, err)) = life.unit().release(record, inputs).await {
        let failed = format!("{}: {err}", record.display());
        sink.warning(&format!("cannot release process record {failed}"));
    }
}
