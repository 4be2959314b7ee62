//! One unit attempt on a worker: the same runtime as `vf dispatch` (process
//! group, projection, marker, raw logs in the worker's state dir), on a
//! thread of its own (the dispatch runtime is single-threaded), heartbeating
//! the session id and public responses as they come, and ending the
//! engine's group when the workflow cancels the attempt.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tokio::sync::{mpsc, oneshot, watch};

use super::wire::{Beat, Outcome, Start, UnitOrder};
use crate::dispatch::{self, DispatchResult, EventSink};
use crate::engine::EngineId;
use crate::error::{Result, VfError};
use crate::frames::ConversationEvent;
use crate::history::{self, Response};
use crate::marker::policy::{DEFAULT_RESUME_PROMPT, resolve_resume_id};
use crate::marker::{MarkerStore, UnitState};
use crate::plan::PlanUnit;
use crate::scheduler::{self, Job, RunState, StartMode, UnitReport};

/// Builds a plan unit's job as `vf orchestrate` does (its steps: worktree,
/// setup, verify, guards), given by the command that starts the worker.
pub type BuildJob = dyn Fn(PlanUnit, EngineId) -> Result<Job> + Send + Sync;

/// The worker's side of every unit attempt.
pub struct UnitActivities {
    pub host: String,
    pub state_dir: PathBuf,
    pub kill_grace: Duration,
    pub build: Arc<BuildJob>,
    /// At most `--jobs` engines at once, over both of the worker's queues.
    pub slots: Arc<tokio::sync::Semaphore>,
}

#[activities]
impl UnitActivities {
    #[activity]
    pub async fn run_unit(
        self: Arc<Self>,
        ctx: ActivityContext,
        order: UnitOrder,
    ) -> std::result::Result<Outcome, ActivityError> {
        let _slot = self.slot(&ctx).await;
        let dir = self.plan_dir(&order.workflow_id);
        if let Some(done) = self.already_done(&order, &dir) {
            return Ok(done);
        }
        let prepared = self.prepare(&order, &dir);
        let (spec, mut row) = match prepared {
            Ok(p) => p,
            Err(e) => return Ok(self.refused(&order, e)),
        };
        let r = run_beating(&ctx, spec, &self.host, order.attempt).await;
        row.settle(&r);
        row.host = Some(self.host.clone());
        row.duration_ms = r.as_ref().ok().map(|res| res.duration_ms);
        let exit = match &r {
            Ok(res) => res.vf_exit(),
            Err(e) => e.exit_code(),
        };
        Ok(fit(Outcome {
            row,
            exit,
            host: self.host.clone(),
            retry_at: r.as_ref().ok().and_then(|res| res.retry_at.clone()),
            answers: history::recent(&history::load(&dir, &order.unit)).to_vec(),
        }))
    }
}

/// An outcome Temporal can carry: one over the payload cap (a huge
/// summary) fails the unit, saying so, rather than failing its delivery;
/// the summary stays whole in the worker's marker. Never cut.
fn fit(mut out: Outcome) -> Outcome {
    let Some(n) = super::wire::over_cap(&out) else {
        return out;
    };
    out.row.state = RunState::Failed;
    out.row.reason = Some(crate::error::Reason::Internal);
    out.row.error = Some(format!(
        "its result is {n} bytes, over Temporal's payload cap of {} bytes; its summary is whole in the marker on worker {}",
        super::wire::PAYLOAD_CAP,
        out.host
    ));
    out.row.summary = None;
    out.answers.clear();
    out.exit = crate::error::exit::INTERNAL;
    out
}

impl UnitActivities {
    /// One of the worker's `--jobs` slots; heartbeats while it waits, so a
    /// unit waiting here is not taken for a lost worker.
    async fn slot(&self, ctx: &ActivityContext) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let acquire = self.slots.clone().acquire_owned();
        tokio::pin!(acquire);
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        let beat = Beat {
            host: self.host.clone(),
            ..Beat::default()
        };
        loop {
            tokio::select! {
                p = &mut acquire => return p.ok(),
                _ = ticker.tick() => { let _ = ctx.record_heartbeat(beat.clone()).await; }
            }
        }
    }

    /// A unit this worker already finished for this plan (an outcome lost
    /// with a connection or a stop, or the plan submitted again after a
    /// cancel): the marker's result, never a second run.
    fn already_done(&self, order: &UnitOrder, dir: &Path) -> Option<Outcome> {
        let m = MarkerStore::new(dir).load(&order.unit).ok()??;
        if m.state != UnitState::Done || m.engine != order.engine {
            return None;
        }
        let mut row = running_row(&order.unit, m.engine, m.model.clone(), m.attempts);
        row.state = RunState::Done;
        row.session_id = m.engine_session_id.clone();
        row.summary = m.summary.as_ref().map(crate::scheduler::JsonText::new);
        row.usage = m.usage.clone();
        row.workspace = m.workspace.clone();
        row.host = Some(self.host.clone());
        Some(fit(Outcome {
            row,
            exit: crate::error::exit::OK,
            host: self.host.clone(),
            retry_at: None,
            answers: history::recent(&history::load(dir, &order.unit)).to_vec(),
        }))
    }

    /// Each workflow's units live apart in the worker's state dir: two plans
    /// may name a unit alike.
    fn plan_dir(&self, workflow_id: &str) -> PathBuf {
        let digest = history::sha256_hex(workflow_id.as_bytes());
        self.state_dir.join("temporal").join(&digest[..24])
    }

    /// The unit's spec for this attempt, and its row saying how it starts.
    fn prepare(&self, order: &UnitOrder, dir: &Path) -> Result<(dispatch::UnitSpec, UnitReport)> {
        let base = order.plan.parent().unwrap_or(Path::new("/"));
        let mut units = crate::plan::parse(&order.toml, base)
            .map_err(|e| VfError::usage(format!("unit {:?}: {e}", order.unit)))?;
        let unit = units
            .pop()
            .filter(|u| u.name == order.unit)
            .ok_or_else(|| {
                VfError::usage(format!("the order for {:?} holds no such unit", order.unit))
            })?;
        let job = (self.build)(unit, order.engine)?;
        let (prompt, session, mode, replay) = self.start_of(order, &job, dir)?;
        let mut spec = scheduler::spec_of(&job, dir, self.kill_grace, prompt, session);
        if let Some(ws) = &mut spec.steps.workspace {
            ws.merge = order.merge.clone();
            ws.fetch_from = order.fetch_from.clone();
        }
        let mut row = running_row(
            &job.plan.name,
            job.engine,
            job.plan.model.clone(),
            order.attempt,
        );
        row.start = Some(mode);
        row.replay = replay;
        Ok((spec, row))
    }

    /// How the attempt starts. An exact resume only where this worker's
    /// marker holds that very session (never claimed otherwise); else the
    /// replay the workflow carried.
    fn start_of(
        &self,
        order: &UnitOrder,
        job: &Job,
        dir: &Path,
    ) -> Result<(String, Option<String>, StartMode, Option<history::Counts>)> {
        let prompt = job.plan.prompt.clone();
        let answers = match &order.start {
            Start::Fresh => return Ok((prompt, None, StartMode::Fresh, None)),
            Start::Replay { answers } => answers,
            Start::Exact {
                session_id,
                answers,
                ..
            } => {
                let marker = MarkerStore::new(dir).load(&order.unit)?;
                if let Some(m) = marker.filter(|m| m.engine == order.engine) {
                    let installed = dispatch::installed_version(m.engine, None);
                    if resolve_resume_id(&m, installed.as_ref()).ok().as_ref() == Some(session_id) {
                        let resume = DEFAULT_RESUME_PROMPT.to_string();
                        return Ok((
                            resume,
                            Some(session_id.clone()),
                            StartMode::ExactResume,
                            None,
                        ));
                    }
                }
                answers
            }
        };
        Ok(match history::prepend(&order.unit, answers, &prompt) {
            Some((p, counts)) => (p, None, StartMode::Replay, Some(counts)),
            None => (prompt, None, StartMode::Fresh, None),
        })
    }

    /// An order this worker cannot run (its plan directory, its schema): the
    /// unit fails with vf's exit code for it, nothing started.
    fn refused(&self, order: &UnitOrder, e: VfError) -> Outcome {
        let mut row = running_row(&order.unit, order.engine, None, order.attempt);
        row.state = RunState::Failed;
        row.reason = Some(e.reason());
        row.error = Some(e.to_string());
        row.host = Some(self.host.clone());
        Outcome {
            row,
            exit: e.exit_code(),
            host: self.host.clone(),
            retry_at: None,
            answers: Vec::new(),
        }
    }
}

/// A row for an attempt that runs now.
fn running_row(unit: &str, engine: EngineId, model: Option<String>, attempt: u32) -> UnitReport {
    UnitReport {
        state: RunState::Running,
        ran: true,
        attempt: Some(attempt),
        ..UnitReport::waiting(unit, engine, model)
    }
}

/// What the dispatch thread tells the activity as the run goes.
enum Note {
    Session(String),
    Answer(String),
}

/// Runs the dispatch on its own thread; heartbeats what the workflow needs
/// to retry it (at least every few seconds, so a cancel reaches it), and
/// turns a cancel into the end of the engine's group.
async fn run_beating(
    ctx: &ActivityContext,
    mut spec: dispatch::UnitSpec,
    host: &str,
    attempt: u32,
) -> Result<DispatchResult> {
    let (cancel_tx, cancel_rx) = watch::channel(false);
    spec.cancel = Some(cancel_rx);
    let (note_tx, mut notes) = mpsc::unbounded_channel();
    let (done_tx, mut done) = oneshot::channel();
    let unit = spec.unit.clone();
    let engine = spec.engine;
    std::thread::Builder::new()
        .name(format!("vf-unit-{unit}"))
        .spawn(move || {
            let mut sink = NoteSink(note_tx);
            let _ = done_tx.send(crate::dispatch::run_blocking(spec, &mut sink));
        })
        .map_err(anyhow::Error::from)?;
    let mut beat = Beat {
        host: host.to_string(),
        ..Beat::default()
    };
    let every = ctx
        .info()
        .heartbeat_timeout
        .map_or(Duration::from_secs(5), |t| {
            (t / 3).min(Duration::from_secs(5))
        });
    let mut ticker = tokio::time::interval(every.max(Duration::from_millis(200)));
    let mut cancelled = false;
    loop {
        tokio::select! {
            r = &mut done => {
                return r.unwrap_or_else(|_| Err(VfError::Other(anyhow::anyhow!("the unit's thread ended without a result"))));
            }
            Some(n) = notes.recv() => {
                match n {
                    Note::Session(id) => beat.session_id = Some(id),
                    Note::Answer(text) => beat.answers.push(live_response(&unit, engine, attempt, text)),
                }
                let keep = history::recent(&beat.answers).len();
                beat.answers.drain(..beat.answers.len() - keep);
                let _ = ctx.record_heartbeat(beat.clone()).await;
            }
            _ = ticker.tick() => { let _ = ctx.record_heartbeat(beat.clone()).await; }
            _ = ctx.cancelled(), if !cancelled => {
                cancelled = true;
                let _ = cancel_tx.send(true);
            }
        }
    }
}

/// A public response seen live (the attempt has not ended: state running).
fn live_response(unit: &str, engine: EngineId, attempt: u32, text: String) -> Response {
    let (cut, truncated) = history::bounded(&text);
    Response {
        unit: unit.to_string(),
        engine,
        attempt,
        state: UnitState::Running,
        sha256: history::sha256_hex(text.as_bytes()),
        bytes: text.len(),
        text: cut.to_string(),
        truncated,
        recorded_at: String::new(),
    }
}

struct NoteSink(mpsc::UnboundedSender<Note>);

impl EventSink for NoteSink {
    fn event(&mut self, event: &ConversationEvent) {
        let note = match event {
            ConversationEvent::Status {
                session_id: Some(id),
                ..
            } => Note::Session(id.clone()),
            ConversationEvent::TaskAgent { text, .. } => Note::Answer(text.clone()),
            _ => return,
        };
        let _ = self.0.send(note);
    }

    fn warning(&mut self, _message: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_over_the_cap_fails_the_unit_and_says_where_its_summary_is() {
        let row = |text: &str| UnitReport {
            unit: "a".into(),
            state: RunState::Done,
            summary: Some(crate::scheduler::JsonText::new(
                &serde_json::json!({ "t": text }),
            )),
            ..running_row("a", EngineId::Codex, None, 1)
        };
        let out = |text: &str| Outcome {
            row: row(text),
            exit: 0,
            host: "h1".into(),
            retry_at: None,
            answers: Vec::new(),
        };
        let small = fit(out("ok"));
        assert_eq!((small.row.state, small.exit), (RunState::Done, 0));
        let over = out(&"x".repeat(super::super::wire::PAYLOAD_CAP));
        let size = serde_json::to_vec(&over).unwrap().len();
        let big = fit(over);
        assert_eq!(
            (big.row.state, big.exit, big.row.summary.is_none()),
            (RunState::Failed, 70, true)
        );
        let err = big.row.error.unwrap();
        let want = format!(
            "its result is {size} bytes, over Temporal's payload cap of 2097152 bytes; \
             its summary is whole in the marker on worker h1"
        );
        assert_eq!(err, want);
    }
}
