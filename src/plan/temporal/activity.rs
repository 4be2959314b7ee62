//! One unit attempt on a worker: the same runtime as `vf dispatch` (process
//! group, projection, marker, raw logs in the worker's state dir), on a
//! thread of its own (the dispatch runtime is single-threaded), heartbeating
//! the session id (at once) and public responses as they come, and ending
//! the engine's group when the workflow cancels the attempt. A retry of an
//! attempt this worker still runs attaches to its run ([`super::runs`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tokio::sync::oneshot;

use super::payload::{Beat, Outcome, Start, UnitOrder};
use super::runs::{BeatSink, Found, Key, Owned, Run, Runs, Work};
use crate::dispatch::{self, DispatchResult};
use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::ground::held::HeldBy;
use crate::plan::PlanUnit;
#[cfg(test)]
use crate::plan::scheduler::RunState;
use crate::plan::scheduler::{self, Job, StartMode, UnitReport};
use crate::quota;
use crate::unit::history;
use crate::unit::marker::resume_rule::{DEFAULT_RESUME_PROMPT, resolve_resume_id};
use crate::unit::marker::{MarkerStore, UnitState};

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
    /// The runs this worker holds (a retry of one attaches to it).
    pub runs: Arc<Runs>,
    /// For the heartbeats sent at once (the session id).
    pub client: temporalio_client::Client,
}

/// How often a running attempt heartbeats, at most (the worker's SDK
/// throttle is the same): a cancel reaches the engine within it.
pub const BEAT_EVERY: Duration = Duration::from_secs(2);

/// How long a heartbeat sent at once may take.
const BEAT_NOW_WAIT: Duration = Duration::from_secs(10);

/// How long a run whose attempt the server lost waits for the retry to
/// attach to it before its engine is ended.
pub const ADOPT_WAIT: Duration = Duration::from_secs(60);

/// One heartbeat of the attempt `token`, sent now; whether the server took it.
async fn beat_by_token(client: &temporalio_client::Client, token: Vec<u8>, beat: Beat) -> bool {
    use temporalio_client::{ActivityIdentifier, RpcOptions};
    let token = temporalio_common::protos::TaskToken::from(token);
    let handle = client.get_async_activity_handle(ActivityIdentifier::from_task_token(token));
    let sent = handle.heartbeat(Some(beat), RpcOptions::default());
    matches!(tokio::time::timeout(BEAT_NOW_WAIT, sent).await, Ok(Ok(_)))
}

/// The server lost the attempt `token` (or is out of reach) while its
/// plan's workflow still runs: a retry will follow.
async fn lost(
    client: &temporalio_client::Client,
    token: Vec<u8>,
    beat: Beat,
    workflow: Option<String>,
) -> bool {
    if beat_by_token(client, token, beat).await {
        return false;
    }
    let Some(id) = workflow else { return false };
    // Untyped: only its status is asked (and the workflow names this file).
    let h = client.get_workflow_handle::<temporalio_client::UntypedWorkflow>(id);
    let asked = h.describe(temporalio_client::WorkflowDescribeOptions::default());
    match tokio::time::timeout(BEAT_NOW_WAIT, asked).await {
        Ok(Ok(d)) => d.status() == temporalio_client::WorkflowExecutionStatus::Running,
        // Out of reach: the retry comes once it is back.
        _ => true,
    }
}

/// A third of the attempt's heartbeat timeout, at most [`BEAT_EVERY`].
fn beat_every(ctx: &ActivityContext) -> Duration {
    let every = ctx
        .info()
        .heartbeat_timeout
        .map_or(BEAT_EVERY, |t| (t / 3).min(BEAT_EVERY));
    every.max(Duration::from_millis(200))
}

#[activities]
impl UnitActivities {
    #[activity]
    pub async fn run_unit(
        self: Arc<Self>,
        ctx: ActivityContext,
        order: UnitOrder,
    ) -> std::result::Result<Outcome, ActivityError> {
        let dir = self.plan_dir(&order.workflow_id);
        let key = (dir.clone(), order.unit.clone());
        let ticket = self.runs.ticket();
        loop {
            let run = match self.runs.attach(&key, order.engine, ticket) {
                Found::Attached(run) => run,
                Found::Ending(run) => match self.wait_end(&ctx, &run).await {
                    true => continue,
                    false => return Ok(self.interrupted(&order, "cancelled while waiting")?),
                },
                Found::Nothing => match self.start(&ctx, &order, &dir, key.clone(), ticket).await {
                    Started::Run(run) => run,
                    Started::Answer(out) => return Ok((*out)?),
                    Started::Raced => continue,
                },
            };
            match self.own(&ctx, &run, ticket).await {
                Owned::Ended(r) => return Ok(self.outcome(&order, &dir, run.row.clone(), *r)?),
                Owned::TakenOver => {
                    return Ok(self.interrupted(&order, "a newer attempt took over its run")?);
                }
            }
        }
    }
}

/// What an attempt that found no run did.
enum Started {
    Run(Arc<Run>),
    /// Its answer without a run: the unit was done, or refused.
    Answer(Box<Result<Outcome>>),
    /// Another attempt of the unit started its run first.
    Raced,
}

/// An outcome Temporal can carry: one over the payload cap (a huge
/// summary) fails the unit, saying so, rather than failing its delivery;
/// the summary stays whole in the worker's marker. Never cut.
fn fit(mut out: Outcome) -> Outcome {
    let Some(n) = super::payload::over_cap(&out) else {
        return out;
    };
    let error = format!(
        "its result is {n} bytes, over Temporal's payload cap of {} bytes; its summary is whole in the marker on worker {}",
        super::payload::PAYLOAD_CAP,
        out.host
    );
    // An outcome's row holds an attempt's end, which may fail; were it not
    // one, the refusal itself fails the unit (reason internal all the same).
    if let Err(e) = out.row.fail(crate::ground::error::Reason::Internal, error) {
        out.row.broken(&e);
    }
    out.row.summary = None;
    out.answers.clear();
    out.exit = crate::ground::error::exit::INTERNAL;
    out
}

impl UnitActivities {
    /// One of the worker's `--jobs` slots; heartbeats while it waits, so a
    /// unit waiting here is not taken for a lost worker. `None` once the
    /// attempt is cancelled.
    async fn slot(&self, ctx: &ActivityContext) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let acquire = self.slots.clone().acquire_owned();
        tokio::pin!(acquire);
        let mut ticker = tokio::time::interval(beat_every(ctx));
        let beat = self.idle_beat();
        loop {
            tokio::select! {
                p = &mut acquire => return p.ok(),
                _ = ticker.tick() => { let _ = ctx.record_heartbeat(beat.clone()).await; }
                _ = ctx.cancelled() => return None,
            }
        }
    }

    fn idle_beat(&self) -> Beat {
        Beat {
            host: self.host.clone(),
            ..Beat::default()
        }
    }

    /// No run of the unit here: its marker's result if it is done, else a
    /// run started for this attempt (a slot first).
    async fn start(
        &self,
        ctx: &ActivityContext,
        order: &UnitOrder,
        dir: &Path,
        key: Key,
        ticket: u64,
    ) -> Started {
        if let Some(done) = self.already_done(order, dir).transpose() {
            return Started::Answer(Box::new(done));
        }
        let Some(slot) = self.slot(ctx).await else {
            return Started::Answer(Box::new(
                self.interrupted(order, "cancelled while waiting for a slot"),
            ));
        };
        let (mut spec, row) = match self.prepare(order, dir) {
            Ok(p) => p,
            Err(e) => return Started::Answer(Box::new(self.refused(order, e))),
        };
        let sink = BeatSink::new(&self.host, &order.unit, order.engine, order.attempt);
        let work: Work = Box::new(move |cancel, sink| {
            spec.cancel = Some(cancel);
            dispatch::run_blocking(spec, sink)
        });
        let how = (order.engine, row, ticket);
        match self.runs.start(key, how, sink, Some(slot), work) {
            Ok(Some(run)) => Started::Run(run),
            Ok(None) => Started::Raced,
            Err(e) => Started::Answer(Box::new(self.refused(order, e))),
        }
    }

    /// Owns `run` until it ends or a newer attempt takes it over:
    /// heartbeats what the workflow needs to retry it (the session id at
    /// once, bypassing the SDK's throttle), and turns a cancel into the end
    /// of the engine's group ([`Self::stop_when`]).
    async fn own(&self, ctx: &ActivityContext, run: &Run, ticket: u64) -> Owned {
        let (mut beats, mut owners, mut ends) = (run.beats(), run.owners(), run.ends());
        let mut ticker = tokio::time::interval(beat_every(ctx));
        let (mut sent_id, mut cancelled, mut beating) = (false, false, true);
        let mut stop: Option<oneshot::Receiver<()>> = None;
        loop {
            if *ends.borrow() {
                return run.outcome_for(ticket);
            }
            if !run.owned_by(ticket) {
                return Owned::TakenOver;
            }
            let beat = beats.borrow_and_update().clone();
            if !sent_id && beat.session_id.is_some() {
                sent_id = true;
                self.beat_now(ctx, beat.clone());
            }
            tokio::select! {
                _ = ends.changed() => {}
                _ = owners.changed() => {}
                r = beats.changed(), if beating => match r {
                    Ok(()) => {
                        let now = beats.borrow().clone();
                        let _ = ctx.record_heartbeat(now).await;
                    }
                    Err(_) => beating = false,
                },
                _ = ticker.tick() => { let _ = ctx.record_heartbeat(beat.clone()).await; }
                _ = ctx.cancelled(), if !cancelled => {
                    cancelled = true;
                    stop = Some(self.stop_when(ctx, beat));
                }
                _ = async { stop.as_mut().expect("guarded").await }, if stop.is_some() => {
                    stop = None;
                    run.cancel(ticket);
                }
            }
        }
    }

    /// When a cancelled attempt's engine must end: at once when the server
    /// asked it (a cancel, a pause, a reset) or this worker is stopping; not
    /// yet when the server lost the attempt (it timed it out, or is out of
    /// reach): the retry that follows, sent to this host when the session
    /// id is known, attaches to the run. Ended after [`ADOPT_WAIT`] if none
    /// did, or at once when the plan's workflow is over.
    fn stop_when(&self, ctx: &ActivityContext, beat: Beat) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let client = self.client.clone();
        let token = ctx.info().task_token.clone();
        let workflow = ctx.info().workflow_id.clone();
        tokio::spawn(async move {
            if lost(&client, token, beat, workflow).await {
                tokio::time::sleep(ADOPT_WAIT).await;
            }
            let _ = tx.send(());
        });
        rx
    }

    /// Waits, heartbeating, for a run that is being ended; false when this
    /// attempt is cancelled meanwhile.
    async fn wait_end(&self, ctx: &ActivityContext, run: &Run) -> bool {
        let mut ends = run.ends();
        let mut ticker = tokio::time::interval(beat_every(ctx));
        let beat = self.idle_beat();
        loop {
            if *ends.borrow_and_update() {
                return true;
            }
            tokio::select! {
                _ = ends.changed() => {}
                _ = ticker.tick() => { let _ = ctx.record_heartbeat(beat.clone()).await; }
                _ = ctx.cancelled() => return false,
            }
        }
    }

    /// Sends `beat` now, not on the SDK's throttled schedule: a worker lost
    /// the next moment must not cost the unit its exact resume.
    fn beat_now(&self, ctx: &ActivityContext, beat: Beat) {
        let (client, token) = (self.client.clone(), ctx.info().task_token.clone());
        // The throttled heartbeats carry it too, should this one fail.
        tokio::spawn(async move { beat_by_token(&client, token, beat).await });
    }

    /// The attempt's outcome from its run's result.
    fn outcome(
        &self,
        order: &UnitOrder,
        dir: &Path,
        mut row: UnitReport,
        r: Result<DispatchResult>,
    ) -> Result<Outcome> {
        if let Err(VfError::Held(h)) = &r {
            return Ok(self.held(order, h));
        }
        row.attempt = Some(order.attempt);
        row.settle(&r)?;
        row.host = Some(self.host.clone());
        row.duration_ms = r.as_ref().ok().map(|res| res.duration_ms);
        row.account = r.as_ref().ok().and_then(|res| res.account.clone());
        let exit = match &r {
            Ok(res) => res.vf_exit(),
            Err(e) => e.exit_code(),
        };
        Ok(fit(Outcome {
            row,
            exit,
            host: self.host.clone(),
            retry_at: r.as_ref().ok().and_then(|res| res.retry_at.clone()),
            answers: history::recent(&history::load(dir, &order.unit)).to_vec(),
            held: None,
        }))
    }

    /// An attempt that ended without an outcome of its own: handed back
    /// (the retry table runs it again), as a stopped worker's would be.
    fn interrupted(&self, order: &UnitOrder, why: &str) -> Result<Outcome> {
        let mut row = running_row(&order.unit, order.engine, None, order.attempt);
        let error = format!("this attempt was {why} on worker {}", self.host);
        row.fail(crate::ground::error::Reason::Interrupted(None), error)?;
        row.host = Some(self.host.clone());
        Ok(Outcome {
            row,
            exit: crate::ground::error::exit::SIGTERM,
            host: self.host.clone(),
            retry_at: None,
            answers: Vec::new(),
            held: None,
        })
    }

    /// A unit this worker already finished for this plan (an outcome lost
    /// with a connection or a stop, or the plan submitted again after a
    /// cancel): the marker's result, never a second run.
    fn already_done(&self, order: &UnitOrder, dir: &Path) -> Result<Option<Outcome>> {
        let Some(m) = MarkerStore::new(dir).load(&order.unit).ok().flatten() else {
            return Ok(None);
        };
        if m.state != UnitState::Done || m.engine != order.engine {
            return Ok(None);
        }
        let mut row = running_row(&order.unit, m.engine, m.model.clone(), m.attempts);
        row.done_before(&m)?;
        row.session_id = m.engine_session_id.clone();
        row.workspace = m.workspace.clone();
        row.host = Some(self.host.clone());
        Ok(Some(fit(Outcome {
            row,
            exit: crate::ground::error::exit::OK,
            host: self.host.clone(),
            retry_at: None,
            answers: history::recent(&history::load(dir, &order.unit)).to_vec(),
            held: None,
        })))
    }

    /// Each workflow's units live apart in the worker's state dir: two plans
    /// may name a unit alike.
    fn plan_dir(&self, workflow_id: &str) -> PathBuf {
        let digest = crate::ground::text::sha256_hex(workflow_id.as_bytes());
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
        let marker = MarkerStore::new(dir).load(&order.unit)?;
        let prefer = marker.as_ref().and_then(|m| m.account.as_deref());
        // The job carries this worker's own accounts (its user config).
        let job = (self.build)(unit, order.engine)?;
        let ask = ask_of(order, &job.plan.quota, prefer)?;
        let account = ask.account.as_ref().map(|a| a.name.as_str());
        let (prompt, session, mode, replay) = self.start_of(order, &job, marker, account)?;
        let mut spec = scheduler::spec_of(&job, dir, self.kill_grace, prompt, session);
        spec.quota = ask;
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
        marker: Option<crate::unit::marker::Marker>,
        account: Option<&str>,
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
                // A session resumes exactly only on the account that owns it.
                let owns = |m: &crate::unit::marker::Marker| {
                    m.engine == order.engine && m.account.as_deref() == account
                };
                if let Some(m) = marker.filter(owns) {
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
    fn refused(&self, order: &UnitOrder, e: VfError) -> Result<Outcome> {
        if let VfError::Held(h) = &e {
            return Ok(self.held(order, h));
        }
        let mut row = running_row(&order.unit, order.engine, None, order.attempt);
        row.fail(e.reason(), e.to_string())?;
        row.host = Some(self.host.clone());
        Ok(Outcome {
            row,
            exit: e.exit_code(),
            host: self.host.clone(),
            retry_at: None,
            answers: Vec::new(),
            held: None,
        })
    }
}

impl UnitActivities {
    /// A start the quota governor refused (this worker's ledger, or no
    /// account of the engine open): no attempt ran; the workflow holds the
    /// account until `h.until` for every worker.
    fn held(&self, order: &UnitOrder, h: &HeldBy) -> Outcome {
        let mut row = running_row(&order.unit, order.engine, None, order.attempt);
        if let Err(e) = row.fail(crate::ground::error::Reason::RateLimited, h.to_string()) {
            row.broken(&e);
        }
        row.host = Some(self.host.clone());
        Outcome {
            row,
            exit: crate::ground::error::exit::RATE_LIMITED,
            host: self.host.clone(),
            retry_at: None,
            answers: Vec::new(),
            held: Some(h.clone()),
        }
    }
}

/// The unit's quota keys for this attempt, its account chosen among those
/// of its engine the workflow does not hold (`prefer`: the one its session
/// belongs to). Every declared one held, or this worker's ledger holding
/// the one left: `VfError::Held`, nothing started.
fn ask_of(order: &UnitOrder, unit: &quota::Ask, prefer: Option<&str>) -> Result<quota::Ask> {
    let mut ask = unit.clone();
    let held = |name: &str| order.held.iter().find(|h| h.account == name);
    let mine = |ask: &quota::Ask| {
        quota::accounts::candidates(&ask.accounts, order.engine, &ask.rule, None).len()
    };
    let declared = mine(&ask);
    ask.accounts
        .retain(|a| a.engine != order.engine || held(&a.name).is_none());
    let blocked = match declared {
        0 => held(quota::DEFAULT_ACCOUNT),
        _ if mine(&ask) == 0 => order.held.iter().min_by(|a, b| a.until.cmp(&b.until)),
        _ => None,
    };
    if let Some(h) = blocked {
        return Err(VfError::Held(Box::new(h.clone())));
    }
    let (chosen, _warnings) = quota::choose(&ask, order.engine, prefer);
    ask.account = chosen.map_err(VfError::Held)?;
    Ok(ask)
}

/// A row for an attempt that runs now.
fn running_row(unit: &str, engine: EngineId, model: Option<String>, attempt: u32) -> UnitReport {
    UnitReport::running(unit, engine, model, attempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_over_the_cap_fails_the_unit_and_says_where_its_summary_is() {
        let row = |text: &str| UnitReport {
            unit: "a".into(),
            state: RunState::Done,
            summary: Some(crate::plan::scheduler::JsonText::new(
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
            held: None,
        };
        let small = fit(out("ok"));
        assert_eq!((small.row.state, small.exit), (RunState::Done, 0));
        let over = out(&"x".repeat(super::super::payload::PAYLOAD_CAP));
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

    /// The accounts the workflow holds are not chosen: with every declared
    /// one of the engine held (or the default one, none declared), the
    /// start is refused with the hold that ends first, before any ledger
    /// is asked.
    #[test]
    fn an_order_whose_accounts_the_workflow_holds_all_is_refused() {
        let hold = |account: &str, until: &str| HeldBy {
            engine: "claude".into(),
            account: account.into(),
            until: until.into(),
            kind: crate::ground::held::HoldKind::RateLimited,
            unit: None,
            source: None,
            utilization: None,
            window: None,
        };
        let acct = |name: &str, engine| quota::Account {
            name: name.into(),
            engine,
            env: Vec::new(),
        };
        let order = |held: Vec<HeldBy>| UnitOrder {
            workflow_id: "wf".into(),
            plan: "/p/plan.toml".into(),
            unit: "u".into(),
            toml: String::new(),
            engine: EngineId::Claude,
            merge: Vec::new(),
            fetch_from: Default::default(),
            start: Start::Fresh,
            attempt: 1,
            held,
        };
        let late = hold("work", "2026-12-05T14:07:00.000Z");
        let early = hold("spare", "2026-12-05T14:05:00.000Z");
        let declared = quota::Ask {
            accounts: vec![
                acct("work", EngineId::Claude),
                acct("spare", EngineId::Claude),
                acct("x", EngineId::Codex),
            ],
            ..quota::Ask::default()
        };
        let refused = |o: &UnitOrder, ask: &quota::Ask| match ask_of(o, ask, Some("work")) {
            Err(VfError::Held(h)) => h.account.clone(),
            other => panic!("not refused: {:?}", other.map(|a| a.account)),
        };
        let both = order(vec![late.clone(), early.clone()]);
        assert_eq!(refused(&both, &declared), "spare");
        let none = quota::Ask::default();
        assert_eq!(
            refused(&order(vec![hold("default", "x")]), &none),
            "default"
        );
        // A pinned account held: refused though another is open.
        let pinned = quota::Ask {
            rule: quota::Rule {
                pinned: Some("work".into()),
                no_rotate: false,
            },
            ..declared.clone()
        };
        assert_eq!(refused(&order(vec![late]), &pinned), "work");
    }
}
