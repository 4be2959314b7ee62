//! A plan unit's row: its [`RunState`] and the report fields `orchestrate.result`
//! prints, and the one owner of its state. The local executor
//! ([`super::Run`]), the Temporal workflow and its activity change a row's
//! state only through the methods here; each checks the move against the
//! table (a refused one is an internal error naming both states, exit 70,
//! and leaves the row as it was), then makes it with the fields it brings.
//!
//! | from \ to | waiting | running | done | failed | blocked | refused | notStarted |
//! |---|---|---|---|---|---|---|---|
//! | (new) | [`UnitReport::waiting`] | [`UnitReport::running`] (a worker's attempt) | | | | | |
//! | waiting | | `start` | `done_before` (its marker is done) | | `block` | `refuse` | `not_started` |
//! | running | `again` (Temporal: the attempt was lost) | | `settle`, `done_before` | `settle`, `fail` | `settle` (a merge conflict) | | |
//! | failed | `again` (a retry) | | | `fail` | | | |
//! | done | | | | `fail` (over Temporal's payload cap) | | | |
//! | blocked | | | | `fail` (over the cap) | | | |
//! | any | | | `take_attempt` | `take_attempt`, `broken` | `take_attempt` | | |
//!
//! `take_attempt`: the Temporal workflow takes the row a worker returned for
//! an attempt (refused unless it holds an attempt's end); `broken`: a move
//! refused where it cannot be returned (the workflow's retry, a worker's
//! over-cap outcome) fails the unit (reason `internal`), not the workflow. `refused` and `notStarted` are final in a run. Which attempt comes
//! after a failed one is the retry table's ([`super::retry_table`]).

use serde::{Deserialize, Serialize};

use super::JsonText;
use crate::dispatch::DispatchResult;
use crate::engine::EngineId;
use crate::ground::error::{Reason, Result, VfError};
use crate::unit::history;
use crate::unit::marker::{Marker, UnitState};

/// A unit's place in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunState {
    Waiting,
    Running,
    Done,
    Failed,
    Blocked,
    /// `--resume` would not touch it (a live or unprovable owner).
    Refused,
    /// Never started because vf was interrupted.
    NotStarted,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Waiting => "waiting",
            RunState::Running => "running",
            RunState::Done => "done",
            RunState::Failed => "failed",
            RunState::Blocked => "blocked",
            RunState::Refused => "refused",
            RunState::NotStarted => "notStarted",
        }
    }

    /// A dependency in this state will never let its dependents run.
    pub fn blocks_dependents(self) -> bool {
        matches!(
            self,
            RunState::Failed | RunState::Blocked | RunState::Refused | RunState::NotStarted
        )
    }
}

/// How a unit was started in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StartMode {
    Fresh,
    /// Exact native session resumed with its recorded id.
    ExactResume,
    /// Fresh session with a bounded replay of the unit's earlier responses.
    Replay,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitReport {
    pub unit: String,
    pub engine: EngineId,
    pub state: RunState,
    /// False for units skipped because they were already done.
    pub ran: bool,
    pub start: Option<StartMode>,
    pub replay: Option<history::Counts>,
    pub attempt: Option<u32>,
    pub session_id: Option<String>,
    /// The plan's `model` (absent when not set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Kept as its text (see [`JsonText`]).
    pub summary: Option<JsonText>,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    /// What its latest attempt consumed (see [`crate::engine::usage`]).
    pub usage: Option<crate::engine::usage::Usage>,
    /// `budget` for a unit the plan's budget kept from starting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// Under `on_rate_limit = "wait" | "fallback"`: every attempt, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<crate::unit::marker::Attempt>>,
    /// Its git worktree, for a `worktree = true` unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::Workspace>,
    /// Where its keys came from (`unit`, `defaults`, `config:PATH`), only
    /// when the user config set one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origins: Option<std::collections::BTreeMap<String, String>>,
    /// The Temporal worker's host id that ran its latest attempt (its
    /// marker and raw logs are in that worker's state dir).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub host: Option<String>,
    /// The rounds of its loops in this run, oldest first (its result's).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rounds: Vec<crate::unit::marker::rounds::Round>,
    /// The declared account its latest attempt ran on (absent: the default).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub account: Option<String>,
    /// While it waits on the quota governor: what holds its engine's account.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub held_by: Option<crate::ground::held::HeldBy>,
    /// The accounts it left at the wall for another of its engine, in order.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rotated_from: Vec<String>,
    /// The units its engine started through vf (its result's `children`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub children: Vec<String>,
    /// Its usage with every descendant's (absent without children): what
    /// the plan's budget counts for it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tree_usage: Option<crate::engine::usage::Usage>,
}

impl UnitReport {
    /// A unit's row before it runs (a local plan's, the Temporal workflow's
    /// and a worker's).
    pub fn waiting(unit: &str, engine: EngineId, model: Option<String>) -> UnitReport {
        UnitReport {
            unit: unit.to_string(),
            engine,
            state: RunState::Waiting,
            ran: false,
            start: None,
            replay: None,
            attempt: None,
            session_id: None,
            model,
            summary: None,
            error: None,
            duration_ms: None,
            usage: None,
            reason: None,
            children: Vec::new(),
            tree_usage: None,
            attempts: None,
            workspace: None,
            origins: None,
            host: None,
            rounds: Vec::new(),
            account: None,
            held_by: None,
            rotated_from: Vec::new(),
        }
    }

    /// The row of an attempt a Temporal worker runs now.
    pub fn running(
        unit: &str,
        engine: EngineId,
        model: Option<String>,
        attempt: u32,
    ) -> UnitReport {
        UnitReport {
            state: RunState::Running,
            ran: true,
            attempt: Some(attempt),
            ..UnitReport::waiting(unit, engine, model)
        }
    }

    /// Moves the row to `to`, or refuses without touching it.
    fn go(&mut self, to: RunState) -> Result<()> {
        if !allowed(self.state, to) {
            return Err(refused(&self.unit, self.state, to));
        }
        self.state = to;
        Ok(())
    }

    /// It starts now, the way `mode` says.
    pub fn start(&mut self, mode: StartMode) -> Result<()> {
        self.go(RunState::Running)?;
        self.start = Some(mode);
        self.ran = true;
        Ok(())
    }

    /// What a run of the unit ended with (a local plan's and a Temporal
    /// worker's): its dispatch result, or the error that kept it from one.
    pub fn settle(&mut self, r: &Result<DispatchResult>) -> Result<()> {
        match r {
            Ok(res) => {
                self.go(match res.state {
                    UnitState::Done => RunState::Done,
                    // A merge conflict: the unit never ran.
                    UnitState::Blocked => RunState::Blocked,
                    _ => RunState::Failed,
                })?;
                self.reason = res.reason;
                self.workspace = res.workspace.clone();
                self.attempt = Some(res.attempt);
                self.session_id = res.session_id.clone();
                self.summary = res.summary.as_ref().map(JsonText::new);
                self.error = res.error.clone();
                self.usage = res.usage.clone();
                self.children = res.children.clone();
                self.tree_usage = res.tree_usage.clone();
                self.rounds = res.rounds.clone();
                self.account = res.account.clone();
            }
            Err(e) => {
                self.go(RunState::Failed)?;
                self.reason = Some(e.reason());
                self.error = Some(e.to_string());
            }
        }
        Ok(())
    }

    /// Its marker says it is done: it is not run again (its summary and
    /// usage are the marker's).
    pub fn done_before(&mut self, m: &Marker) -> Result<()> {
        self.go(RunState::Done)?;
        self.summary = m.summary.as_ref().map(JsonText::new);
        self.usage = m.usage.clone();
        Ok(())
    }

    /// `--resume` will not touch it (a live or unprovable owner).
    pub fn refuse(&mut self, why: String) -> Result<()> {
        self.go(RunState::Refused)?;
        self.error = Some(why);
        Ok(())
    }

    /// A dependency did not finish: it will not run.
    pub fn block(&mut self, why: String) -> Result<()> {
        self.go(RunState::Blocked)?;
        self.error = Some(why);
        self.reason = Some(Reason::Dependency);
        Ok(())
    }

    /// It never started in this run (an interruption, the budget, the end
    /// of a Temporal plan); the caller says why where it does.
    pub fn not_started(&mut self) -> Result<()> {
        self.go(RunState::NotStarted)
    }

    /// It runs again (a retry, a rate limit's wait or fallback, a lost
    /// attempt); the caller says why in `error`.
    pub fn again(&mut self) -> Result<()> {
        self.go(RunState::Waiting)
    }

    /// It failed for a reason of vf's or of its worker's (not its dispatch's).
    pub fn fail(&mut self, reason: Reason, error: String) -> Result<()> {
        self.go(RunState::Failed)?;
        self.reason = Some(reason);
        self.error = Some(error);
        Ok(())
    }

    /// A move this row refused where the refusal cannot be returned (the
    /// Temporal workflow's retry, a worker's over-cap outcome): the unit
    /// fails, reason `internal`, the error naming both states, whatever its
    /// state (the workflow goes on with the other units).
    pub fn broken(&mut self, e: &VfError) {
        self.state = RunState::Failed;
        self.reason = Some(Reason::Internal);
        self.error = Some(e.to_string());
    }

    /// The row a Temporal worker returned for an attempt replaces this one
    /// (it is the attempt's record), when it holds an attempt's end.
    pub fn take_attempt(&mut self, theirs: UnitReport) -> Result<()> {
        use RunState::*;
        if !matches!(theirs.state, Done | Failed | Blocked) {
            return Err(refused(&self.unit, self.state, theirs.state));
        }
        *self = theirs;
        Ok(())
    }
}

/// Whether a row may go from `from` to `to` (the table above).
pub fn allowed(from: RunState, to: RunState) -> bool {
    use RunState::*;
    match to {
        Waiting => matches!(from, Running | Failed),
        Running => from == Waiting,
        Done => matches!(from, Waiting | Running),
        Failed => matches!(from, Running | Done | Failed | Blocked),
        Blocked => matches!(from, Waiting | Running),
        Refused | NotStarted => from == Waiting,
    }
}

/// The refusal of a transition: vf's own bug, exit 70.
fn refused(unit: &str, from: RunState, to: RunState) -> VfError {
    VfError::Other(anyhow::anyhow!(
        "internal error: plan unit {unit:?}'s row cannot go from {} to {}",
        from.as_str(),
        to.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use RunState::*;

    const ALL: [RunState; 7] = [Waiting, Running, Done, Failed, Blocked, Refused, NotStarted];

    fn row(state: RunState) -> UnitReport {
        let mut r = UnitReport::waiting("a", EngineId::Codex, None);
        r.state = state;
        r
    }

    /// Every move the executors make today is allowed, and nothing else.
    #[test]
    fn the_table_allows_the_moves_the_executors_make_and_no_other() {
        let moves = [
            (Waiting, Running),
            (Waiting, Done),
            (Waiting, Blocked),
            (Waiting, Refused),
            (Waiting, NotStarted),
            (Running, Waiting),
            (Running, Done),
            (Running, Failed),
            (Running, Blocked),
            (Failed, Waiting),
            (Failed, Failed),
            (Done, Failed),
            (Blocked, Failed),
        ];
        for from in ALL {
            for to in ALL {
                assert_eq!(
                    allowed(from, to),
                    moves.contains(&(from, to)),
                    "{from:?} -> {to:?}"
                );
            }
        }
    }

    /// A refused move names both states, is vf's bug (exit 70), and leaves
    /// the row as it was.
    #[test]
    fn a_refused_move_names_both_states_and_changes_nothing() {
        type Step = fn(&mut UnitReport) -> Result<()>;
        let cases: [(RunState, Step, &str); 7] = [
            (
                Blocked,
                |r| r.start(StartMode::Fresh),
                "from blocked to running",
            ),
            (Done, |r| r.again(), "from done to waiting"),
            (Refused, |r| r.block("x".into()), "from refused to blocked"),
            (
                Waiting,
                |r| r.settle(&Err(VfError::usage("x"))),
                "from waiting to failed",
            ),
            (
                NotStarted,
                |r| r.refuse("x".into()),
                "from notStarted to refused",
            ),
            (Running, |r| r.not_started(), "from running to notStarted"),
            (
                Failed,
                |r| r.take_attempt(row(Running)),
                "from failed to running",
            ),
        ];
        for (from, step, named) in cases {
            let mut r = row(from);
            r.error = Some("before".into());
            let e = step(&mut r).expect_err(named);
            assert_eq!(e.exit_code(), crate::ground::error::exit::INTERNAL);
            assert_eq!(
                e.to_string(),
                format!("internal error: plan unit \"a\"'s row cannot go {named}")
            );
            assert_eq!((r.state, r.error.as_deref()), (from, Some("before")));
        }
    }

    /// A unit's way through a local run with a retry, and on Temporal with
    /// a lost attempt, each move made by its method.
    #[test]
    fn a_row_goes_its_way_through_its_methods() {
        let mut r = UnitReport::waiting("a", EngineId::Codex, None);
        r.start(StartMode::Fresh).unwrap();
        assert_eq!(
            (r.state, r.ran, r.start),
            (Running, true, Some(StartMode::Fresh))
        );
        r.settle(&Err(VfError::usage("no"))).unwrap();
        assert_eq!((r.state, r.reason), (Failed, Some(Reason::Invalid)));
        r.again().unwrap();
        r.start(StartMode::Replay).unwrap();
        r.fail(Reason::Internal, "lost".into()).unwrap();
        assert_eq!((r.state, r.error.as_deref()), (Failed, Some("lost")));
        let mut w = UnitReport::running("a", EngineId::Codex, None, 1);
        w.again().unwrap();
        w.block("dependency \"b\" is failed".into()).unwrap();
        assert_eq!((w.state, w.reason), (Blocked, Some(Reason::Dependency)));
        let mut t = UnitReport::running("a", EngineId::Codex, None, 2);
        t.take_attempt(row(Done)).unwrap();
        assert_eq!(t.state, Done);
        t.broken(&refused("a", Done, Running));
        assert_eq!((t.state, t.reason), (Failed, Some(Reason::Internal)));
    }

    /// A plan row carries its run's rounds (`orchestrate.result`).
    #[test]
    fn a_settled_row_carries_the_rounds_of_its_result() {
        use crate::unit::marker::rounds::{Round, RoundKind};
        let round = Round::start(RoundKind::Review, (1, 2), EngineId::Claude);
        let res = DispatchResult {
            unit: "a".into(),
            engine: EngineId::Codex,
            engine_version: None,
            model: None,
            effort: None,
            state: UnitState::Done,
            exit_code: Some(0),
            session_id: None,
            summary: None,
            summary_error: None,
            answer: None,
            unknown_frames: 0,
            warnings: Vec::new(),
            engine_reason: None,
            error: None,
            reason: None,
            usage: None,
            retry_at: None,
            duration_ms: 1,
            attempt: 1,
            marker: "m.json".into(),
            stdout_log: None,
            stderr_log: None,
            workspace: None,
            policy: None,
            start: None,
            replay: None,
            path_violations: Vec::new(),
            mcp: Vec::new(),
            rounds: vec![round.clone()],
            account: None,
            parent: None,
            depth: None,
            children: Vec::new(),
            tree_usage: None,
        };
        let mut r = UnitReport::running("a", EngineId::Codex, None, 1);
        r.settle(&Ok(res)).unwrap();
        assert_eq!(r.rounds, vec![round]);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["rounds"][0]["kind"], "review");
        let plain = serde_json::to_value(UnitReport::waiting("b", EngineId::Codex, None)).unwrap();
        assert!(plain.get("rounds").is_none(), "{plain}");
    }
}
