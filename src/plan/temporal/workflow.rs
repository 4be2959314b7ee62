//! The plan as one Temporal workflow: the DAG run deterministically with the
//! scheduler's own rules ([`crate::plan::scheduler::dag`]), each unit attempt one
//! activity ([`super::activity`]). vf's retry table decides every retry here,
//! not Temporal's server-side retry: a retry must choose its queue (the host
//! that holds the session first), which a server retry cannot. Each activity
//! is therefore scheduled with one attempt.

use std::time::Duration;

use futures::future::{LocalBoxFuture, select_all};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityCancellationType, ActivityExecutionError, ActivityOptions, ApplicationFailure,
    ContinueAsNewOptions, WorkflowContext, WorkflowContextView, WorkflowResult,
    WorkflowTermination,
};

use super::activity::UnitActivities;
use super::next_attempt::{self, Decision};
use super::payload::{Outcome, PlanInput, Progress, Start, UnitOrder, UnitState};
use crate::ground::error::{Reason, Result, VfError};
use crate::plan::scheduler::dag::{Dag, Executor};
use crate::plan::scheduler::{RunState, UnitReport};

/// A unit's heartbeat timeout when it has no `stall_timeout`: how soon a dead
/// worker is noticed.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);

#[workflow]
#[derive(Default)]
pub struct PlanWorkflow {
    progress: Progress,
}

type Attempt<'a> = LocalBoxFuture<'a, (usize, Result<Outcome, ActivityExecutionError>)>;

#[workflow_methods]
impl PlanWorkflow {
    #[run]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: PlanInput,
    ) -> WorkflowResult<Progress> {
        let ctx: &WorkflowContext<Self> = ctx;
        let mut plan = Driver::new(&input, ctx.workflow_id().to_string());
        let mut running: Vec<Attempt<'_>> = Vec::new();
        loop {
            let full = ctx.history_length() >= input.history_limit;
            if !full && !ctx.cancellation_token().is_cancelled() {
                for i in plan.sweep(running.len()).map_err(broken)? {
                    running.push(plan.attempt(ctx, i, None).map_err(broken)?);
                }
            } else {
                plan.block_only().map_err(broken)?;
            }
            let now = plan.progress(false).map_err(broken)?;
            ctx.state_mut(|s| s.progress = now);
            if running.is_empty() {
                if full && plan.waiting() {
                    let next = plan.carry(input.clone());
                    ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
                }
                break;
            }
            let ((i, r), _, rest) = select_all(running).await;
            running = rest;
            let jitter = ctx.random::<f64>();
            let next = plan.settle(i, r, (ctx.workflow_time(), jitter));
            if let Some((delay, order)) = next.map_err(broken)? {
                running.push(plan.attempt_after(ctx, i, delay, order).map_err(broken)?);
            }
        }
        let progress = plan.progress(true).map_err(broken)?;
        ctx.state_mut(|s| s.progress = progress.clone());
        if ctx.cancellation_token().is_cancelled() {
            return Err(WorkflowTermination::cancelled());
        }
        Ok(progress)
    }

    /// The live table's rows, for `vf orchestrate --temporal --follow`.
    #[query]
    pub fn progress(&self, _ctx: &WorkflowContextView) -> Progress {
        self.progress.clone()
    }
}

/// A move a unit's row refused (vf's own bug, exit 70 in a local run): the
/// workflow fails, the error naming both states.
fn broken(e: VfError) -> WorkflowTermination {
    ApplicationFailure::non_retryable(e).into()
}

/// The workflow's own state (deterministic: no clock, no I/O).
struct Driver {
    input: PlanInput,
    workflow_id: String,
    /// Shared, so a sweep reads it while the workflow acts on its decisions.
    dag: std::rc::Rc<Dag>,
    units: Vec<UnitState>,
    /// An attempt of it is scheduled (or waits out a rate limit).
    busy: Vec<bool>,
}

impl Driver {
    fn new(input: &PlanInput, workflow_id: String) -> Driver {
        let dag = std::rc::Rc::new(Dag::new(
            input
                .units
                .iter()
                .map(|u| (u.name.as_str(), u.depends_on.as_slice())),
        ));
        let units = input
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| match input.carried.get(i) {
                Some(Some(s)) => s.clone(),
                _ => fresh(u),
            })
            .collect();
        Driver {
            busy: vec![false; input.units.len()],
            input: input.clone(),
            workflow_id,
            dag,
            units,
        }
    }

    fn states(&self) -> Vec<RunState> {
        let state = |(u, busy): (&UnitState, &bool)| match busy {
            true => RunState::Running,
            false => u.row.state,
        };
        self.units.iter().zip(&self.busy).map(state).collect()
    }

    /// The units to start now (each marked running); blocks what cannot run.
    fn sweep(&mut self, running: usize) -> Result<Vec<usize>> {
        let room = (self.input.parallel as usize).saturating_sub(running);
        let room = if self.over_budget() { 0 } else { room };
        self.drive(room)
    }

    /// Blocks what a failure upstream will never let run, starting nothing.
    fn block_only(&mut self) -> Result<()> {
        self.drive(0).map(drop)
    }

    /// The scheduler's rules on this workflow (the [`Executor`] below).
    fn drive(&mut self, room: usize) -> Result<Vec<usize>> {
        let mut states = self.states();
        let dag = self.dag.clone();
        let mut starts = Starts {
            driver: self,
            starts: Vec::new(),
        };
        dag.drive(&mut states, room, |_| true, &mut starts)?;
        Ok(starts.starts)
    }

    fn block(&mut self, i: usize, why: String) -> Result<()> {
        self.units[i].row.block(why)
    }

    fn over_budget(&self) -> bool {
        let budget = crate::engine::usage::Budget {
            cost_usd: self.input.cost_usd,
            tokens: self.input.tokens,
            hard: false,
        };
        if !budget.limits() {
            return false;
        }
        let total =
            crate::engine::usage::total(self.units.iter().filter_map(|u| u.row.usage.as_ref()));
        budget.reached(total.as_ref()).is_some()
    }

    /// A unit is still to run (a continue-as-new goes on with it).
    fn waiting(&self) -> bool {
        self.units.iter().any(|u| u.row.state == RunState::Waiting)
    }

    /// The next run's input: what this one settled, the settled units'
    /// answers dropped (only a retry needs them).
    fn carry(&self, mut input: PlanInput) -> PlanInput {
        input.carried = self
            .units
            .iter()
            .map(|u| {
                let mut u = u.clone();
                if u.row.state != RunState::Waiting {
                    u.answers.clear();
                }
                Some(u)
            })
            .collect();
        input.runs_before += 1;
        input
    }

    fn progress(&self, ended: bool) -> Result<Progress> {
        let mut units: Vec<UnitReport> = self.units.iter().map(|u| u.row.clone()).collect();
        if ended {
            for r in units.iter_mut().filter(|r| r.state == RunState::Waiting) {
                r.not_started()?;
                if self.over_budget() {
                    r.reason = Some(Reason::Budget);
                }
            }
        }
        Ok(Progress {
            plan: self.input.plan.clone(),
            units,
            ended,
            runs: self.input.runs_before + 1,
        })
    }

    /// Unit `i`'s first attempt (or the next, with `order`).
    fn attempt<'a>(
        &mut self,
        ctx: &'a WorkflowContext<PlanWorkflow>,
        i: usize,
        order: Option<UnitOrder>,
    ) -> Result<Attempt<'a>> {
        let order = order.unwrap_or_else(|| self.order(i, Start::Fresh));
        self.attempt_after(ctx, i, Duration::ZERO, order)
    }

    fn attempt_after<'a>(
        &mut self,
        ctx: &'a WorkflowContext<PlanWorkflow>,
        i: usize,
        delay: Duration,
        order: UnitOrder,
    ) -> Result<Attempt<'a>> {
        let u = &mut self.units[i];
        // How it is asked to start; the worker's outcome says how it did.
        u.row.start(match &order.start {
            Start::Fresh => crate::plan::scheduler::StartMode::Fresh,
            Start::Exact { .. } => crate::plan::scheduler::StartMode::ExactResume,
            Start::Replay { .. } => crate::plan::scheduler::StartMode::Replay,
        })?;
        u.row.engine = order.engine;
        u.tries += 1;
        self.busy[i] = true;
        let opts = self.options(i, &order.start);
        Ok(Box::pin(async move {
            if !delay.is_zero() {
                ctx.timer(delay).await;
            }
            let r = ctx
                .execute_activity(UnitActivities::run_unit, order, opts)
                .await;
            (i, r)
        }))
    }

    /// Its queue (the session's host first), timeouts, one attempt.
    fn options(&self, i: usize, start: &Start) -> ActivityOptions {
        let u = &self.input.units[i];
        let heartbeat = u.stall_ms.map_or(DEFAULT_HEARTBEAT, Duration::from_millis);
        // One attempt may run for days; its own `timeout` bounds the engine.
        let close = u
            .timeout_ms
            .map_or(Duration::from_secs(7 * 24 * 3600), |t| {
                Duration::from_millis(t) + heartbeat * 2
            });
        let mut opts = ActivityOptions::with_start_to_close_timeout(close)
            .heartbeat_timeout(heartbeat)
            .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
            .retry_policy(
                temporalio_common::RetryPolicy::builder()
                    .maximum_attempts(1)
                    .build(),
            )
            .summary(u.name.clone())
            .build();
        if let Start::Exact { host, .. } = start {
            opts.task_queue = Some(super::host_queue(&self.input.task_queue, host));
            opts.schedule_to_start_timeout = Some(Duration::from_millis(self.input.affinity_ms));
        }
        opts
    }

    fn order(&self, i: usize, start: Start) -> UnitOrder {
        let u = &self.input.units[i];
        UnitOrder {
            workflow_id: self.workflow_id.clone(),
            plan: self.input.plan.clone(),
            unit: u.name.clone(),
            toml: u.toml.clone(),
            engine: self.units[i].row.engine,
            merge: u.merge.clone(),
            fetch_from: u.fetch_from.clone(),
            start,
            attempt: self.units[i].tries + 1,
        }
    }

    /// An attempt of unit `i` ended: its row, and the next attempt if vf's
    /// retry table gives one (after a delay).
    fn settle(
        &mut self,
        i: usize,
        r: Result<Outcome, ActivityExecutionError>,
        (now, jitter): (Option<std::time::SystemTime>, f64),
    ) -> Result<Option<(Duration, UnitOrder)>> {
        self.busy[i] = false;
        let now_secs = now
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let clock = (now_secs, jitter);
        let decision = next_attempt::decide(&self.input.units[i], &mut self.units[i], r, clock);
        match decision {
            Decision::Final => Ok(None),
            Decision::Again { delay, start } => {
                let order = self.order(i, start);
                self.units[i].row.again()?;
                Ok(Some((delay, order)))
            }
        }
    }
}

/// The workflow as the scheduler's executor: a block is recorded in its
/// row; a start is collected, and the run loop schedules its activity.
struct Starts<'a> {
    driver: &'a mut Driver,
    starts: Vec<usize>,
}

impl Executor for Starts<'_> {
    fn block(&mut self, i: usize, why: String) -> Result<()> {
        self.driver.block(i, why)
    }

    fn start(&mut self, i: usize) -> Result<()> {
        self.starts.push(i);
        Ok(())
    }
}

/// A unit's row before it runs.
pub(super) fn fresh(u: &super::payload::UnitInput) -> UnitState {
    UnitState {
        row: UnitReport::waiting(&u.name, u.engine, u.model.clone()),
        tries: 0,
        retried: 0,
        waited_ms: 0,
        waits: 0,
        host: None,
        answers: Vec::new(),
    }
}
