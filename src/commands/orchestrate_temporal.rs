//! `vf orchestrate --temporal`: the plan resolved and checked exactly as a
//! local run's (every refusal before anything is submitted), sent as one
//! workflow; then followed with the same renderers, or its id printed; or a
//! submitted plan's status shown, or its cancellation.

use std::collections::HashSet;
use std::io::IsTerminal;

use super::output::note_of;
use super::stdio::eprint_line;
use crate::cli::{DEFAULT_TASK_QUEUE, OrchestrateArgs, OutputFormat};
use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};
use crate::plan::scheduler::{self, PlanResult, RunState};
use crate::plan::temporal::payload::{PlanInput, Progress, UnitInput};
use crate::plan::temporal::{self, Endpoint, client};
use crate::unit::marker::rounds::{Round, RoundOutcome};

/// How long an exact resume waits for its host before the replay elsewhere.
const AFFINITY_MS_ENV: &str = EnvVars::VF_TEMPORAL_AFFINITY_MS;
const AFFINITY_MS: u64 = 30_000;
/// Past this many history events the workflow continues as new (Temporal
/// caps a history at about 50,000).
const HISTORY_ENV: &str = EnvVars::VF_TEMPORAL_HISTORY_EVENTS;
const HISTORY_EVENTS: u32 = 10_000;

pub fn run(args: &OrchestrateArgs, cfg: &crate::plan::config::Config) -> Result<i32> {
    let t = &args.temporal;
    let endpoint = endpoint_of(&t.target)?;
    let format = args.output.format();
    if let Some(id) = &t.status {
        let progress = super::block_on(async {
            let c = temporal::connect(&endpoint).await?;
            client::status(&c, id).await
        })??;
        return render(format, &progress, false);
    }
    if let Some(id) = &t.cancel {
        let progress = super::block_on(async {
            let c = temporal::connect(&endpoint).await?;
            client::cancel(&c, id).await?;
            client::follow(&c, id, |_| {}).await
        })??;
        eprint_line(format_args!("vf: workflow {id} cancelled"));
        render(format, &progress, true)?;
        return Ok(0);
    }
    let input = plan_input(args, cfg, &endpoint)?;
    // Before any connection: an oversized plan is refused whether or not
    // Temporal is up.
    client::check_size(&input)?;
    let follow = t.follow || (!t.detach && std::io::stdout().is_terminal());
    super::block_on(submit_and_follow(endpoint, input, format, follow))?
}

fn endpoint_of(t: &crate::cli::TemporalTarget) -> Result<Endpoint> {
    let task_queue = t
        .task_queue
        .clone()
        .unwrap_or_else(|| DEFAULT_TASK_QUEUE.into());
    temporal::check_queue(&task_queue)?;
    Ok(Endpoint {
        address: t.temporal.clone().unwrap_or_default(),
        namespace: t.namespace.clone(),
        task_queue,
    })
}

async fn submit_and_follow(
    endpoint: Endpoint,
    input: PlanInput,
    format: OutputFormat,
    follow: bool,
) -> Result<i32> {
    let c = temporal::connect(&endpoint).await?;
    let waiting = Progress::waiting(&input);
    let (id, how) = client::submit(&c, input).await?;
    let attached = how != client::Submitted::Started;
    if !follow {
        match format {
            OutputFormat::Human => {
                use std::io::Write;
                writeln!(super::stdio::out(), "{id}")?;
            }
            _ => super::print_json(&serde_json::json!({
                "kind": "orchestrate.submitted", "workflowId": id, "attached": attached,
            }))?,
        }
        return Ok(0);
    }
    let first = match how {
        client::Submitted::Started => {
            eprint_line(format_args!("vf: submitted as workflow {id}"));
            waiting
        }
        client::Submitted::Attached => {
            eprint_line(format_args!("vf: attached to the running workflow {id}"));
            client::progress(&c, &id).await.unwrap_or(waiting)
        }
        client::Submitted::Completed => {
            eprint_line(format_args!(
                "vf: workflow {id} ran this plan to its end before; its result (nothing runs again)"
            ));
            client::status(&c, &id).await?
        }
    };
    let reporter = super::orchestrate::reporter_for(format, first.units.iter());
    // Every unit is reported from the start: some may be running already.
    let mut last = vec![Seen::default(); first.units.len()];
    report_changes(&reporter, &mut last, &first);
    // A completed plan's rows are its result already: nothing to follow.
    let mut latest = first.clone();
    let end = match how {
        client::Submitted::Completed => first,
        _ => {
            let seen = |p: &Progress| {
                report_changes(&reporter, &mut last, p);
                latest = p.clone();
            };
            match client::follow(&c, &id, seen).await {
                Ok(end) => end,
                // The server went away: the plan as last seen, then why.
                Err(e) => {
                    reporter.borrow_mut().plan_result(&plan_result(&latest));
                    return Err(e);
                }
            }
        }
    };
    report_changes(&reporter, &mut last, &end);
    if end.runs > 1 {
        eprint_line(format_args!(
            "vf: workflow {id} ran as {} runs (continue-as-new keeps each history short)",
            end.runs
        ));
    }
    let result = plan_result(&end);
    reporter.borrow_mut().plan_result(&result);
    Ok(result.exit_code())
}

/// What the renderer was told of a unit: its state, the outcomes of its
/// rounds, what holds it (the quota governor of the workflow).
#[derive(Clone, Default)]
struct Seen {
    state: Option<RunState>,
    rounds: Vec<RoundOutcome>,
    held: Option<crate::ground::held::HeldBy>,
}

/// Tells the renderer each unit whose state changed since the last poll,
/// and each of its rounds that started or ended (when its row carries them).
fn report_changes(
    reporter: &std::rc::Rc<std::cell::RefCell<dyn scheduler::Reporter>>,
    last: &mut Vec<Seen>,
    p: &Progress,
) {
    last.resize(p.units.len(), Seen::default());
    let mut r = reporter.borrow_mut();
    for (i, u) in p.units.iter().enumerate() {
        let seen = &mut last[i];
        let changed = seen.state.unwrap_or(RunState::Waiting) != u.state;
        if changed && u.state == RunState::Running {
            r.started(i, u);
        }
        seen.rounds.truncate(u.rounds.len());
        for (k, round) in u.rounds.iter().enumerate() {
            if seen.rounds.get(k) == Some(&round.outcome) {
                continue;
            }
            // A round first seen ended is told as started, then ended.
            if seen.rounds.len() <= k && round.outcome != RoundOutcome::Running {
                r.round(
                    i,
                    &note_of(&Round {
                        outcome: RoundOutcome::Running,
                        ..round.clone()
                    }),
                );
            }
            r.round(i, &note_of(round));
            match seen.rounds.get_mut(k) {
                Some(o) => *o = round.outcome,
                None => seen.rounds.push(round.outcome),
            }
        }
        seen.state = Some(u.state);
        if u.held_by.is_some() && seen.held != u.held_by {
            r.held(i, u);
        }
        seen.held = u.held_by.clone();
        if !changed {
            continue;
        }
        match u.state {
            RunState::Blocked => r.blocked(i, u),
            RunState::Done | RunState::Failed => r.finished(i, u, None),
            _ => {}
        }
    }
}

fn plan_result(p: &Progress) -> PlanResult {
    let usage = crate::engine::usage::total(p.units.iter().filter_map(|u| u.usage.as_ref()));
    let interrupted = p
        .units
        .iter()
        .any(|u| u.reason == Some(crate::ground::error::Reason::Interrupted(None)))
        .then_some(crate::ground::error::exit::SIGTERM);
    PlanResult {
        kind: "orchestrate.result",
        ok: p.units.iter().all(|u| u.state == RunState::Done),
        plan: p.plan.clone(),
        units: p.units.clone(),
        usage,
        interrupted,
    }
}

/// `--status`: the rows as the workflow has them, as `orchestrate.result`.
fn render(format: OutputFormat, p: &Progress, ended: bool) -> Result<i32> {
    let result = plan_result(p);
    let reporter = super::orchestrate::reporter_for(format, p.units.iter());
    reporter.borrow_mut().plan_result(&result);
    Ok(if p.ended || ended {
        result.exit_code()
    } else {
        0
    })
}

/// The plan resolved as a local run resolves it, then what Temporal cannot
/// carry refused, each unit sent as its own one-unit plan.
fn plan_input(
    args: &OrchestrateArgs,
    cfg: &crate::plan::config::Config,
    endpoint: &Endpoint,
) -> Result<PlanInput> {
    if args.resume {
        return Err(VfError::usage(
            "--resume does not apply to --temporal: the workflow is durable; submit the plan again to attach to it",
        ));
    }
    let (req, on_plan_finish) = super::orchestrate::resolve(args, cfg)?;
    if req.budget.hard {
        return Err(VfError::usage(
            "--hard-budget is not supported with --temporal yet: the plan's budget stops new units only",
        ));
    }
    if on_plan_finish.is_some() {
        return Err(VfError::usage(
            "on_plan_finish is not supported with --temporal: it would run on whichever worker ends the plan",
        ));
    }
    let text = std::fs::read_to_string(&req.plan)
        .map_err(|e| VfError::usage(format!("cannot read plan {}: {e}", req.plan.display())))?;
    let tables = crate::plan::unit_tables(&text, &cfg.user_defaults()).map_err(VfError::usage)?;
    let worktrees: HashSet<&str> = req
        .jobs
        .iter()
        .filter(|j| j.steps.workspace.is_some())
        .map(|j| j.plan.name.as_str())
        .collect();
    let mut units = Vec::with_capacity(req.jobs.len());
    for job in &req.jobs {
        units.push(unit_input(job, &tables, &worktrees)?);
    }
    Ok(PlanInput {
        plan: req.plan.clone(),
        units,
        parallel: req.parallel as u32,
        task_queue: endpoint.task_queue.clone(),
        cost_usd: req.budget.cost_usd,
        tokens: req.budget.tokens,
        affinity_ms: env_number(AFFINITY_MS_ENV).unwrap_or(AFFINITY_MS),
        history_limit: env_number(HISTORY_ENV).map_or(HISTORY_EVENTS, |n| n as u32),
        carried: Vec::new(),
        runs_before: 0,
        quota: Default::default(),
    })
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
}

fn unit_input(
    job: &scheduler::Job,
    tables: &[toml::Table],
    worktrees: &HashSet<&str>,
) -> Result<UnitInput> {
    let u = &job.plan;
    let refuse = |why: &str| Err(VfError::usage(format!("unit {:?}: {why}", u.name)));
    if !job.attachments.is_empty() || !u.attachments.is_empty() {
        return refuse(
            "attachments live in this machine's state dir; a Temporal worker cannot read them",
        );
    }
    let fetch_from = match &job.steps.workspace {
        Some(ws) if ws.push.is_none() => {
            return refuse(
                "a worktree unit on Temporal needs `push = \"REMOTE\"`: its branch must reach the workers that run its dependents",
            );
        }
        Some(ws) => ws.fetch_from.clone(),
        None => Default::default(),
    };
    let name = |t: &toml::Table| t.get("name").and_then(|v| v.as_str()) == Some(u.name.as_str());
    let Some(table) = tables.iter().find(|t| name(t)) else {
        return refuse("not found in the plan's text");
    };
    let mut table = table.clone();
    table.remove("depends_on");
    table.remove("prompt_file");
    table.insert("prompt".into(), toml::Value::String(u.prompt.clone()));
    table.insert("engine".into(), toml::Value::String(job.engine.to_string()));
    let mut doc = toml::Table::new();
    doc.insert(
        "unit".into(),
        toml::Value::Array(vec![toml::Value::Table(table)]),
    );
    let toml = toml::to_string(&doc).map_err(anyhow::Error::from)?;
    Ok(UnitInput {
        name: u.name.clone(),
        depends_on: u.depends_on.clone(),
        engine: job.engine,
        toml,
        retries: u.retries,
        stall_ms: u.stall_timeout.map(|d| d.as_millis() as u64),
        timeout_ms: u.timeout.map(|d| d.as_millis() as u64),
        rate_limit: u.rate_limit.clone(),
        merge: u
            .depends_on
            .iter()
            .filter(|d| worktrees.contains(d.as_str()))
            .cloned()
            .collect(),
        fetch_from,
        model: u.model.clone(),
        stagger_ms: Some(u.quota.limits.stagger_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::DispatchResult;
    use crate::engine::frames::ConversationEvent;
    use crate::engine::{EngineId, RoundNote};
    use crate::plan::scheduler::UnitReport;
    use crate::unit::marker::rounds::RoundKind;

    /// Records what it is told, in order.
    #[derive(Default)]
    struct Told(Vec<String>);

    impl scheduler::Reporter for Told {
        fn started(&mut self, _: usize, u: &UnitReport) {
            self.0.push(format!("started {}", u.unit));
        }
        fn event(&mut self, _: usize, _: &ConversationEvent) {}
        fn warning(&mut self, _: usize, _: &str) {}
        fn finished(&mut self, _: usize, u: &UnitReport, _: Option<&DispatchResult>) {
            self.0
                .push(format!("finished {} {}", u.unit, u.rounds.len()));
        }
        fn blocked(&mut self, _: usize, _: &UnitReport) {}
        fn waiting(&mut self, _: usize, _: &UnitReport, _: &DispatchResult) {}
        fn plan_result(&mut self, _: &PlanResult) {}
        fn round(&mut self, _: usize, n: &RoundNote) {
            self.0
                .push(format!("{} {}/{} {:?}", n.kind, n.n, n.of, n.ended));
        }
        fn held(&mut self, _: usize, u: &UnitReport) {
            let h = u.held_by.as_ref().map(|h| h.short());
            self.0
                .push(format!("held {} {}", u.unit, h.unwrap_or_default()));
        }
    }

    fn progress(state: RunState, rounds: Vec<Round>) -> Progress {
        let mut row = UnitReport::waiting("api", EngineId::Claude, None);
        (row.state, row.rounds) = (state, rounds);
        Progress {
            plan: "plan.toml".into(),
            units: vec![row],
            ended: false,
            runs: 1,
        }
    }

    /// A followed Temporal run's rows carry rounds: each start and end is
    /// told once, a round first seen ended as started then ended.
    #[test]
    fn a_followed_runs_rounds_are_told_as_they_start_and_end() {
        let told = std::rc::Rc::new(std::cell::RefCell::new(Told::default()));
        let reporter: std::rc::Rc<std::cell::RefCell<dyn scheduler::Reporter>> = told.clone();
        let mut last = Vec::new();
        let fix = Round::start(RoundKind::Fix, (1, 2), EngineId::Claude);
        let done = |mut r: Round| {
            r.outcome = RoundOutcome::Done;
            r
        };
        let review = Round::start(RoundKind::Review, (1, 1), EngineId::Codex);
        let steps = [
            progress(RunState::Running, vec![fix.clone()]),
            progress(RunState::Running, vec![fix.clone()]),
            progress(
                RunState::Done,
                vec![done(fix.clone()), done(review.clone())],
            ),
        ];
        for p in &steps {
            report_changes(&reporter, &mut last, p);
        }
        assert_eq!(
            told.borrow().0,
            [
                "started api",
                "fix 1/2 None",
                "fix 1/2 Some(\"done\")",
                "review 1/1 None",
                "review 1/1 Some(\"done\")",
                "finished api 2",
            ]
        );
    }

    /// A unit the workflow's quota governor holds is told held (the live
    /// table and JSONL draw it), again only when the hold changes.
    #[test]
    fn a_unit_held_by_the_workflow_is_told_held_when_its_hold_changes() {
        let told = std::rc::Rc::new(std::cell::RefCell::new(Told::default()));
        let reporter: std::rc::Rc<std::cell::RefCell<dyn scheduler::Reporter>> = told.clone();
        let mut last = Vec::new();
        let hold = |until: &str| crate::ground::held::HeldBy {
            engine: "claude".into(),
            account: "work".into(),
            until: until.into(),
            kind: crate::ground::held::HoldKind::RateLimited,
            unit: None,
            source: None,
            utilization: None,
            window: None,
        };
        let held = |until: Option<&str>| {
            let mut p = progress(RunState::Waiting, Vec::new());
            p.units[0].held_by = until.map(hold);
            p
        };
        let steps = [
            held(None),
            held(Some("2026-12-05T14:05:09.000Z")),
            held(Some("2026-12-05T14:05:09.000Z")),
            held(Some("2026-12-05T14:07:00.000Z")),
            progress(RunState::Running, Vec::new()),
        ];
        for p in &steps {
            report_changes(&reporter, &mut last, p);
        }
        assert_eq!(
            told.borrow().0,
            [
                "held api quota: claude/work until 14:05:09",
                "held api quota: claude/work until 14:07:00",
                "started api",
            ]
        );
    }
}
