//! `vf orchestrate PLAN.toml`: resolve the plan into one request, hand it to
//! the core executor (`vf::scheduler`), and render what it reports: a live
//! table on a terminal, readable lines, JSONL, or only the final object.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Instant;

use super::output::{StdoutSink, human_line, note_kind, note_line, rounds_summary};
use super::stdio::{eprint_line, live};
use crate::cli::{OrchestrateArgs, OutputFormat};
use crate::dispatch::attach;
use crate::dispatch::{DispatchResult, EventSink};
use crate::engine::choice::EngineChoice;
use crate::engine::frames::ConversationEvent;
use crate::engine::{EngineId, RoundNote};
use crate::ground::error::{Result, VfError};
use crate::ground::text::one_line;
use crate::plan;
use crate::plan::scheduler::{self, Job, PlanResult, Reporter, RunState, UnitReport};

/// Everything is checked before anything starts; `auto` units ask the doctor
/// which engines are ready (once for the whole plan).
/// `cfg` is the user config: below the plan's `[defaults]`, `--jobs` and
/// `--state-dir` (`vf demo` passes none).
pub(super) fn resolve(
    args: &OrchestrateArgs,
    cfg: &crate::plan::config::Config,
) -> Result<(scheduler::Request, Option<String>)> {
    if args.jobs == Some(0) {
        return Err(VfError::usage("--jobs must be at least 1"));
    }
    let path = args
        .plan
        .as_deref()
        .ok_or_else(|| VfError::usage("the plan file is missing"))?;
    let mut plan = plan::load_with(path, &cfg.user_defaults())?;
    crate::dispatch::notify::timeout_from_env()?;
    crate::engine::acp::handshake_timeout_from_env()?;
    // A plan an engine started (its shell, `vf mcp`): each unit is a child
    // of that engine's unit. A hostile value refuses the plan (exit 2).
    let lineage = crate::unit::lineage::Lineage::of_env()?;
    let flags = crate::engine::usage::Budget {
        cost_usd: args.max_cost,
        tokens: args.max_tokens,
        hard: args.hard_budget,
    };
    let flags = flags.checked().map_err(VfError::usage)?;
    let govern = govern_flags(&args.govern)?;
    let cwd = std::env::current_dir()?;
    let (state_dir, _) = super::config::state_dir_of(args.state.state_dir.as_deref(), &cwd, cfg)?;
    let ready = plan
        .units
        .iter()
        .any(|u| u.engine == EngineChoice::Auto)
        .then(|| {
            crate::readiness::doctor::cache::LazyReadiness::new(
                crate::readiness::doctor::Options::default(),
            )
        });
    let is_ready = |e| ready.as_ref().map(|r| r.get(e));
    let mut jobs = Vec::with_capacity(plan.units.len());
    // Each unit moves into its job: the plan is not held twice.
    for mut u in std::mem::take(&mut plan.units) {
        govern(&mut u.quota.limits);
        let p = attach::select(u.engine, &u.attachments, &state_dir, &u.cwd, &is_ready)
            .map_err(|e| VfError::usage(format!("unit {:?}: {e}", u.name)))?;
        // `model` / `effort` the engine cannot take: refused before anything starts.
        crate::engine::options::check(p.pick.engine.engine().spec(), &u.run_options())
            .map_err(|e| VfError::usage(format!("unit {:?}: {e}", u.name)))?;
        require_enforced(&u, p.pick.engine)?;
        jobs.push(Job {
            steps: crate::dispatch::resolve::plan_steps(u.step_keys())?,
            engine: p.pick.engine,
            attachments: p.attachments,
            origins: config_origins(plan.layers.get(&u.name), cfg),
            lineage: lineage.clone(),
            plan: u,
        });
    }
    let request = scheduler::Request {
        plan: plan.path,
        state_dir,
        jobs,
        parallel: args.jobs.or(cfg.jobs).unwrap_or(crate::cli::DEFAULT_JOBS),
        resume: args.resume,
        budget: plan
            .budget
            .or(flags)
            .checked_hard()
            .map_err(VfError::usage)?,
        kill_grace: crate::process::child::kill_grace_from_env()?,
    };
    Ok((request, plan.on_plan_finish))
}

/// `--pause-at` and `--stagger` (checked: exit 2), as what sets them over
/// each unit's own limits (its key, the plan's `[defaults]`, the user config).
fn govern_flags(
    g: &crate::cli::GovernLimitArgs,
) -> Result<impl Fn(&mut crate::quota::Limits) + use<>> {
    use crate::plan::accounts_keys as keys;
    let pause_at = g.pause_at.map(keys::check_pause_at).transpose();
    let pause_at = pause_at.map_err(|m| VfError::usage(format!("--pause-at: {m}")))?;
    let stagger = g.stagger.map(keys::check_stagger).transpose();
    let stagger = stagger.map_err(|m| VfError::usage(format!("--stagger: {m}")))?;
    let stagger_ms = stagger.map(|s| keys::limits(None, Some(s)).stagger_ms);
    Ok(move |l: &mut crate::quota::Limits| {
        l.pause_at = pause_at.or(l.pause_at);
        l.stagger_ms = stagger_ms.unwrap_or(l.stagger_ms);
    })
}

/// A plan run here (`--temporal` is [`super::orchestrate_temporal`]'s,
/// which renders with this file's reporters: the arrow runs one way).
pub fn run(args: &OrchestrateArgs) -> Result<i32> {
    run_with(args, &crate::plan::config::load()?)
}

/// [`run`] under the user config `cfg`.
pub fn run_with(args: &OrchestrateArgs, cfg: &crate::plan::config::Config) -> Result<i32> {
    let (req, on_plan_finish) = resolve(args, cfg)?;
    let (state_dir, grace) = (req.state_dir.clone(), req.kill_grace);
    let run = scheduler::open(req)?;
    for n in &run.notices {
        eprint_line(format_args!("vf: {n}"));
    }
    let reporter = reporter_for(args.output.format(), run.reports());
    let result = run.execute(reporter)?;
    if let Some(cmd) = on_plan_finish {
        plan_hook(&cmd, &result, &state_dir, grace)?;
    }
    Ok(result.exit_code())
}

/// The renderer of `format` for a plan of these units (a local run's and a
/// followed Temporal run's).
pub(super) fn reporter_for<'a>(
    format: OutputFormat,
    units: impl Iterator<Item = &'a UnitReport>,
) -> Rc<RefCell<dyn Reporter>> {
    match format {
        OutputFormat::Human => Rc::new(RefCell::new(Human::new(units))),
        OutputFormat::Json | OutputFormat::Jsonl => Rc::new(RefCell::new(Jsonl::new(
            units,
            format == OutputFormat::Jsonl,
        ))),
    }
}

/// Where a unit's keys came from, when the user config set one of them (as a
/// dispatch result says it): `unit`, `defaults` or `config:PATH` per key.
fn config_origins(
    layers: Option<&std::collections::BTreeMap<String, plan::Layer>>,
    cfg: &crate::plan::config::Config,
) -> Option<std::collections::BTreeMap<String, String>> {
    let layers = layers?;
    layers.values().any(|l| *l == plan::Layer::User).then(|| {
        let origin = |l: &plan::Layer| match l {
            plan::Layer::Unit => "unit".to_string(),
            plan::Layer::Defaults => "defaults".to_string(),
            plan::Layer::User => cfg.origin().to_string(),
        };
        layers.iter().map(|(k, l)| (k.clone(), origin(l))).collect()
    })
}

/// `on_plan_finish`, the plan's result on stdin (the text `--json` prints);
/// a failure is a warning on stderr, never another exit code.
fn plan_hook(
    cmd: &str,
    result: &PlanResult,
    state_dir: &std::path::Path,
    kill_grace: std::time::Duration,
) -> Result<()> {
    let mut json = serde_json::to_vec(result).map_err(anyhow::Error::from)?;
    json.push(b'\n');
    let cwd = result.plan.parent().unwrap_or(state_dir).to_path_buf();
    let ended = crate::dispatch::notify::Ended {
        state_dir,
        cwd: &cwd,
        unit: crate::dispatch::notify::PLAN_OWNER,
        engine: "",
        attempt: 0,
        failed: !result.ok,
        json: &json,
        kill_grace,
    };
    if let Some(w) = super::block_on(crate::dispatch::notify::after_plan(cmd, &ended))? {
        eprint_line(format_args!("vf: warning: on_plan_finish: {w}"));
    }
    Ok(())
}

/// `require_enforced = true`: refused (exit 2) before anything of the plan
/// starts when its engine, or any engine of its `fallback`, would leave a
/// part of its policy unenforced.
fn require_enforced(u: &plan::PlanUnit, engine: EngineId) -> Result<()> {
    if !u.policy.require_enforced {
        return Ok(());
    }
    use crate::engine::tool_policy;
    for e in std::iter::once(engine).chain(u.rate_limit.fallback.iter().copied()) {
        let version = crate::dispatch::installed_version(e, None);
        tool_policy::require(
            e,
            &u.policy,
            &tool_policy::apply(e, version.as_ref(), false, &u.policy),
        )
        .map_err(|err| VfError::usage(format!("unit {:?}: {err}", u.name)))?;
    }
    Ok(())
}

/// vf's own notices about a unit go to stderr in every format.
fn warn(unit: &str, message: &str) {
    eprint_line(format_args!("vf: warning: {unit}: {message}"));
}

/// JSONL: the engines' events tagged with `"unit"`, vf's own
/// `orchestrate.unit` lines, each unit's tagged `dispatch.result`, then the
/// `orchestrate.result` object. JSON (`live == false`): only that last object.
struct Jsonl {
    names: Vec<String>,
    live: bool,
    out: StdoutSink,
}

impl Jsonl {
    fn new<'a>(units: impl Iterator<Item = &'a UnitReport>, live: bool) -> Jsonl {
        Jsonl {
            names: units.map(|u| u.unit.clone()).collect(),
            live,
            out: StdoutSink::new(OutputFormat::Jsonl),
        }
    }

    /// Tags the sink's lines with unit `index` (or with nothing).
    fn tag(&mut self, index: Option<usize>) -> &mut StdoutSink {
        self.out.tag = index.map(|i| ("unit".to_string(), self.names[i].clone()));
        &mut self.out
    }
}

impl Reporter for Jsonl {
    fn started(&mut self, _: usize, report: &UnitReport) {
        if self.live {
            let line = serde_json::json!({
                "kind": "orchestrate.unit",
                "unit": report.unit,
                "state": "started",
                "start": report.start,
                "replay": report.replay,
            });
            self.tag(None).json_line(&line);
        }
    }

    fn event(&mut self, index: usize, event: &ConversationEvent) {
        if self.live {
            self.tag(Some(index)).event(event);
        }
    }

    fn warning(&mut self, index: usize, message: &str) {
        warn(&self.names[index], message);
    }

    fn round(&mut self, index: usize, note: &RoundNote) {
        if self.live {
            let line = round_line(&self.names[index], note);
            self.tag(None).json_line(&line);
        }
    }

    fn finished(&mut self, index: usize, _: &UnitReport, result: Option<&DispatchResult>) {
        if let (true, Some(r)) = (self.live, result) {
            self.tag(Some(index)).result(r);
        }
    }

    fn waiting(&mut self, index: usize, report: &UnitReport, result: &DispatchResult) {
        if self.live {
            self.tag(Some(index)).result(result);
            let line = serde_json::json!({
                "kind": "orchestrate.unit", "unit": report.unit, "state": "waiting",
                "engine": report.engine, "error": report.error,
            });
            self.tag(None).json_line(&line);
        }
    }

    fn held(&mut self, _: usize, report: &UnitReport) {
        if self.live {
            let line = held_line(report);
            self.tag(None).json_line(&line);
        }
    }

    fn blocked(&mut self, _: usize, report: &UnitReport) {
        if self.live {
            let line = serde_json::json!({
                "kind": "orchestrate.unit", "unit": report.unit, "state": "blocked",
                "error": report.error,
            });
            self.tag(None).json_line(&line);
        }
    }

    fn plan_result(&mut self, result: &PlanResult) {
        // Its keys come out sorted as `json_line`'s would (see `PlanResult`).
        self.out.json_streamed(result);
    }
}

/// A held unit's `orchestrate.unit` line: `waiting`, with what holds it.
fn held_line(report: &UnitReport) -> serde_json::Value {
    serde_json::json!({
        "kind": "orchestrate.unit", "unit": report.unit, "state": "waiting",
        "engine": report.engine, "heldBy": report.held_by,
    })
}

/// A round's `orchestrate.unit` line: its state is the round's
/// (`fixing`, `reviewing`, `resolving`), with `outcome` once it ended.
fn round_line(unit: &str, note: &RoundNote) -> serde_json::Value {
    let state = note_kind(note).map_or(note.kind, |k| k.doing());
    let mut line = serde_json::json!({
        "kind": "orchestrate.unit", "unit": unit, "state": state,
        "round": note.n, "rounds": note.of, "engine": note.engine,
    });
    if let (Some(end), Some(obj)) = (&note.ended, line.as_object_mut()) {
        obj.insert("outcome".into(), end.as_str().into());
    }
    line
}

/// The live table's state of a unit while a round runs (`fixing 2/3`,
/// `reviewing 1/2`, `resolving`); `None` once it ended (back to `running`).
fn table_state(note: &RoundNote) -> Option<String> {
    if note.ended.is_some() {
        return None;
    }
    let kind = note_kind(note)?;
    Some(match kind {
        crate::unit::marker::rounds::RoundKind::Resolve => kind.doing().to_string(),
        _ => format!("{} {}/{}", kind.doing(), note.n, note.of),
    })
}

/// The characters of a unit's last event the live table shows.
const LAST_EVENT_CHARS: usize = 60;

/// An event's rows as one short line for the table: its kind and the start
/// of what it says ("agent: I will run…"), without the raw-line reference.
fn glance(text: &str) -> String {
    let body = text
        .strip_prefix('[')
        .and_then(|t| t.split_once("] "))
        .map_or(text, |(_, rest)| rest);
    let words: Vec<&str> = body.split_whitespace().collect();
    words.join(" ").chars().take(LAST_EVENT_CHARS).collect()
}

/// One row of the human rendering.
struct Row {
    unit: String,
    engine: EngineId,
    state: RunState,
    started: Option<Instant>,
    duration_ms: Option<u64>,
    last_event: String,
    /// The round under way (`fixing 2/3`), shown as its state.
    doing: Option<String>,
    /// While the quota governor holds it: `quota: claude/work until 14:05:09`,
    /// shown in place of its last event.
    held: Option<String>,
}

impl Row {
    /// Its line of the live table.
    fn line(&self) -> String {
        let elapsed = match (self.duration_ms, self.started) {
            (Some(ms), _) => format!("{:.1}s", ms as f64 / 1000.0),
            (None, Some(t)) => format!("{:.1}s", t.elapsed().as_secs_f64()),
            _ => "-".into(),
        };
        format!(
            "\x1b[2K{:<20} {:<9} {:<10} {:>8}  {}\n",
            self.unit,
            self.engine.as_str(),
            self.doing.as_deref().unwrap_or(self.state.as_str()),
            elapsed,
            self.held.as_deref().unwrap_or(&self.last_event)
        )
    }
}

/// Human output: a live table redrawn in place on a terminal, else one
/// `[unit] …` line per event and outcome; then a per-unit summary.
struct Human {
    table: bool,
    rows: Vec<Row>,
    /// Lines of the table currently on screen.
    drawn: usize,
}

impl Human {
    fn new<'a>(units: impl Iterator<Item = &'a UnitReport>) -> Human {
        Human {
            table: std::io::stdout().is_terminal(),
            rows: units
                .map(|u| Row {
                    unit: u.unit.clone(),
                    engine: u.engine,
                    state: u.state,
                    started: None,
                    duration_ms: None,
                    last_event: String::new(),
                    doing: None,
                    held: None,
                })
                .collect(),
            drawn: 0,
        }
    }

    fn update(&mut self, index: usize, report: &UnitReport) {
        let row = &mut self.rows[index];
        // A round still shown as under way has ended with its unit's run.
        if report.state != RunState::Running {
            row.doing = None;
        }
        row.state = report.state;
        row.duration_ms = report.duration_ms;
    }

    fn draw(&mut self) {
        if !self.table {
            return;
        }
        let mut s = String::new();
        if self.drawn > 0 {
            s.push_str(&format!("\x1b[{}A", self.drawn));
        }
        s.push_str(&format!(
            "\x1b[2K{:<20} {:<9} {:<10} {:>8}  {}\n",
            "UNIT", "ENGINE", "STATE", "ELAPSED", "LAST EVENT"
        ));
        for r in &self.rows {
            s.push_str(&r.line());
        }
        self.drawn = self.rows.len() + 1;
        live(s.as_bytes());
    }
}

impl Reporter for Human {
    fn started(&mut self, index: usize, report: &UnitReport) {
        self.update(index, report);
        // A unit that starts is no longer held, whatever its report kept.
        self.rows[index].held = None;
        self.rows[index].started = Some(Instant::now());
    }

    fn event(&mut self, index: usize, event: &ConversationEvent) {
        let text = human_line(event);
        if !self.table {
            // Every row of the event, each under its unit's name.
            let unit = &self.rows[index].unit;
            let mut s = String::new();
            for line in text.lines() {
                s.push_str(format!("[{unit}] {line}").trim_end());
                s.push('\n');
            }
            live(s.as_bytes());
        }
        // Only what the table shows is kept.
        self.rows[index].last_event = glance(&text);
    }

    fn warning(&mut self, index: usize, message: &str) {
        warn(&self.rows[index].unit, message);
    }

    fn round(&mut self, index: usize, note: &RoundNote) {
        let row = &mut self.rows[index];
        row.doing = table_state(note);
        if !self.table {
            let s = format!("[{}] {}\n", row.unit, note_line(note));
            live(s.as_bytes());
        }
    }

    fn finished(&mut self, index: usize, report: &UnitReport, _: Option<&DispatchResult>) {
        self.update(index, report);
        self.rows[index].held = None;
        if !self.table {
            let error = report
                .error
                .as_deref()
                .map(|e| format!(": {}", one_line(e, 2000)));
            let s = format!(
                "[{}] {}{}\n",
                report.unit,
                report.state.as_str(),
                error.unwrap_or_default()
            );
            live(s.as_bytes());
        }
    }

    fn blocked(&mut self, index: usize, report: &UnitReport) {
        self.update(index, report);
        self.rows[index].held = None;
    }

    fn held(&mut self, index: usize, report: &UnitReport) {
        self.update(index, report);
        let Some(h) = &report.held_by else { return };
        let text = one_line(&h.short(), 200);
        if !self.table {
            let s = format!("[{}] waiting ({text})\n", report.unit);
            live(s.as_bytes());
        }
        let row = &mut self.rows[index];
        (row.state, row.started, row.held) = (RunState::Waiting, None, Some(text));
    }

    fn waiting(&mut self, index: usize, report: &UnitReport, _: &DispatchResult) {
        self.update(index, report);
        self.rows[index].held = None;
        let why = one_line(report.error.as_deref().unwrap_or_default(), 2000);
        if !self.table {
            let s = format!("[{}] {why}\n", report.unit);
            live(s.as_bytes());
        }
        let last = why.chars().take(LAST_EVENT_CHARS).collect();
        let row = &mut self.rows[index];
        (row.engine, row.started, row.last_event) = (report.engine, None, last);
    }

    fn plan_result(&mut self, result: &PlanResult) {
        for (i, r) in result.units.iter().enumerate() {
            self.update(i, r);
        }
        self.draw();
        let mut s = String::from("\n");
        for r in &result.units {
            s.push_str(&format!(
                "{:<20} {:<9} {:<10}{}{}\n",
                r.unit,
                r.engine.as_str(),
                r.state.as_str(),
                r.session_id
                    .as_deref()
                    .map(|id| format!(" session {id}"))
                    .unwrap_or_default(),
                r.error
                    .as_deref()
                    .map(|e| format!(" · {e}"))
                    .unwrap_or_default(),
            ));
            if let Some(v) = &r.summary {
                s.push_str(&format!("  summary: {v}\n"));
            }
            if !r.rounds.is_empty() {
                s.push_str(&format!("  rounds: {}\n", rounds_summary(&r.rounds)));
            }
        }
        live(s.as_bytes());
    }

    fn tick(&mut self) {
        self.draw();
    }

    fn wants_ticks(&self) -> bool {
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(kind: &'static str, (n, of): (u32, u32), ended: Option<&str>) -> RoundNote {
        RoundNote {
            kind,
            n,
            of,
            engine: EngineId::Codex,
            ended: ended.map(String::from),
        }
    }

    fn state_shown(h: &Human) -> String {
        let line = h.rows[0].line();
        line.split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .to_string()
    }

    /// The table shows the round under way as the unit's state, then
    /// `running` again once it ended.
    #[test]
    fn the_live_table_shows_a_round_while_it_runs() {
        let mut report = UnitReport::waiting("api", EngineId::Claude, None);
        let mut h = Human::new(std::iter::once(&report));
        h.table = true;
        report.state = RunState::Running;
        h.started(0, &report);
        assert_eq!(state_shown(&h), "running");
        h.round(0, &note("fix", (2, 3), None));
        assert!(
            h.rows[0].line().contains("fixing 2/3"),
            "{}",
            h.rows[0].line()
        );
        h.round(0, &note("fix", (2, 3), Some("done")));
        assert_eq!(state_shown(&h), "running");
        h.round(0, &note("review", (1, 2), None));
        assert!(h.rows[0].line().contains("reviewing 1/2"));
        h.round(0, &note("review", (1, 2), Some("changes")));
        h.round(0, &note("resolve", (1, 1), None));
        assert_eq!(state_shown(&h), "resolving");
        // The unit's run ended while a round was shown: its outcome wins.
        report.state = RunState::Failed;
        h.finished(0, &report, None);
        assert_eq!(state_shown(&h), "failed");
    }

    #[test]
    fn a_round_is_an_orchestrate_unit_line_with_its_state_and_counts() {
        let start = round_line("api", &note("review", (1, 2), None));
        assert_eq!(
            start,
            serde_json::json!({"kind": "orchestrate.unit", "unit": "api", "state": "reviewing",
                "round": 1, "rounds": 2, "engine": "codex"})
        );
        let end = round_line("api", &note("fix", (3, 3), Some("failed")));
        assert_eq!(end["state"], "fixing");
        assert_eq!(end["outcome"], "failed");
        assert_eq!(
            round_line("api", &note("resolve", (1, 1), None))["state"],
            "resolving"
        );
    }

    fn held_by() -> crate::ground::held::HeldBy {
        crate::ground::held::HeldBy {
            engine: "claude".into(),
            account: "work".into(),
            until: "2026-12-05T14:05:09.250Z".into(),
            kind: crate::ground::held::HoldKind::RateLimited,
            unit: Some("api".into()),
            source: Some("rate_limit_event (claude)".into()),
            utilization: None,
            window: None,
        }
    }

    /// A held unit's row is `waiting` with what holds it; once it starts or
    /// ends, the hold is gone from its row.
    #[test]
    fn the_live_table_shows_a_held_unit_until_it_starts() {
        let mut report = UnitReport::waiting("web", EngineId::Claude, None);
        let mut h = Human::new(std::iter::once(&report));
        h.table = true;
        h.rows[0].last_event = "agent: earlier".into();
        report.held_by = Some(held_by());
        h.held(0, &report);
        let line = h.rows[0].line();
        assert_eq!(state_shown(&h), "waiting");
        assert!(line.contains("quota: claude/work until 14:05:09"), "{line}");
        // The scheduler clears it when it starts the unit; the row does not
        // depend on that.
        report.state = RunState::Running;
        h.started(0, &report);
        let line = h.rows[0].line();
        assert_eq!(state_shown(&h), "running");
        assert!(!line.contains("quota:"), "{line}");
        report.state = RunState::Waiting;
        h.held(0, &report);
        assert!(h.rows[0].line().contains("quota: claude/work"));
        report.state = RunState::Done;
        h.finished(0, &report, None);
        let line = h.rows[0].line();
        assert_eq!(state_shown(&h), "done");
        assert!(!line.contains("quota:"), "{line}");
    }

    #[test]
    fn a_held_unit_is_a_waiting_orchestrate_unit_line_with_held_by() {
        let mut report = UnitReport::waiting("web", EngineId::Claude, None);
        report.held_by = Some(held_by());
        assert_eq!(
            held_line(&report),
            serde_json::json!({"kind": "orchestrate.unit", "unit": "web", "state": "waiting",
                "engine": "claude", "heldBy": {"engine": "claude", "account": "work",
                "until": "2026-12-05T14:05:09.250Z", "kind": "rate-limited", "unit": "api",
                "source": "rate_limit_event (claude)"}})
        );
    }
}
