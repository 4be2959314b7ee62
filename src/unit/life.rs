//! A unit's life on disk: the one owner of its marker's state, its attempt
//! counter and every durable write of it. Each transition is one method: it
//! checks that the move is allowed from the current state (a refused one is
//! an internal error naming both states, never applied), changes the marker
//! and makes it durable. The phases of a dispatch ask this type for what
//! they need of the unit's life; none of them assigns the state or saves.
//!
//! | from \ to | pending | running | done | failed | blocked |
//! |---|---|---|---|---|---|
//! | (none) | claim (durable before `setup` with a workspace) | | | | plan block |
//! | pending | claim | start | | before spawn, end early | end early, plan block |
//! | running | claim (owner dead) | | finish | finish | plan block |
//! | done | claim (a resume) | | | | plan block |
//! | failed | claim | | | | plan block |
//! | blocked | claim | | | | plan block |
//!
//! "A session id is durable before any event shows it" lives here too: a new
//! id holds the events ([`UnitLife::emit`]) until a marker carrying it is
//! durable ([`UnitLife::make_session_durable`], or the final write).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant as TokioInstant;

use crate::engine::frames::{ConversationEvent, EventSink};
use crate::engine::{EngineCommand, EngineId};
use crate::ground::error::{Reason, Result, VfError};
use crate::ground::fsutil::now_rfc3339;
use crate::ground::procinfo::ProcIdentity;
use crate::unit::marker::{Attempt, Marker, MarkerStore, Owner, UnitState};
use crate::unit::{LockedUnit, MarkerWriter};

/// How long, and for how many events, a new session id may wait to be made
/// durable; its events wait with it. An engine that ends sooner gets its id
/// made durable by the final marker: one durable write instead of two. Short:
/// what a person or a pipeline watches waits this long, then for the write.
pub(crate) const HOLD_FOR: Duration = Duration::from_millis(1);
const HOLD_MAX: usize = 512;

/// Whether a unit's marker may go from `from` to `to` (the table above).
pub fn allowed(from: UnitState, to: UnitState) -> bool {
    use UnitState::*;
    match to {
        // A new attempt (a live owner is refused before, as usage), or a
        // plan's unit blocked by its dependency whatever it was before.
        Pending | Blocked => true,
        Running => from == Pending,
        Done => from == Running,
        Failed => matches!(from, Pending | Running),
    }
}

/// The refusal of a transition: vf's own bug, exit 70.
fn refused(unit: &str, from: UnitState, to: UnitState) -> VfError {
    VfError::Other(anyhow::anyhow!(
        "internal error: unit {unit:?}'s marker cannot go from {} to {}",
        from.as_str(),
        to.as_str()
    ))
}

/// Moves `m` to `to`, or refuses without touching it.
fn transition(m: &mut Marker, to: UnitState) -> Result<()> {
    if !allowed(m.state, to) {
        return Err(refused(&m.unit, m.state, to));
    }
    m.state = to;
    Ok(())
}

/// How a run that had an engine ends (see `settle`'s judge).
pub(crate) struct Finish {
    pub state: UnitState,
    pub exit_code: Option<i32>,
    pub reason: Option<Reason>,
    pub error: Option<String>,
    pub summary: Option<serde_json::Value>,
    pub summary_error: Option<String>,
}

/// What the engine's run consumed, as the marker keeps it (noted before the
/// steps after the engine, so a durable write meanwhile carries it too).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spent {
    pub usage: Option<crate::engine::usage::Usage>,
    /// The session's running total, where it is not `usage` itself.
    pub thread_usage: Option<crate::engine::usage::Usage>,
    pub retry_at: Option<String>,
    /// An ACP agent's own version, when it told it.
    pub engine_version: Option<String>,
}

/// One unit's marker through one attempt, under the unit's lock (released
/// with the life), and the events that wait for it.
pub struct UnitLife {
    unit: LockedUnit,
    marker: Marker,
    /// There was no marker before this attempt.
    is_new: bool,
    /// Since when a new session id waits to be durable, and its events.
    held_since: Option<TokioInstant>,
    held: Vec<ConversationEvent>,
}

/// What a new attempt asks of the unit's marker: the run's spec as the
/// marker records it (the dispatch builds it, `UnitSpec::claim`).
#[derive(Debug, Clone)]
pub struct Claim {
    pub unit: String,
    pub engine: EngineId,
    pub cwd: PathBuf,
    /// The session to resume, if any.
    pub session: Option<String>,
    pub command: Option<EngineCommand>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub summary_schema: Option<PathBuf>,
    pub asked: crate::unit::marker::Asked,
    /// The unit runs closed loops: its marker stays `loopOpen` until the
    /// loop's driver closes it ([`close_loop`]).
    pub loop_open: bool,
    /// The declared account the run is on (`None`: the engine's default).
    pub account: Option<String>,
    /// Who started the unit: recorded by its first run only (a unit is
    /// never re-parented).
    pub lineage: crate::unit::lineage::Lineage,
}

impl UnitLife {
    /// Loads (or creates) the unit's marker and claims it for a new attempt,
    /// in memory only: the first write is the `running` marker after the
    /// spawn, or, for a unit with a workspace, the `pending` one before its
    /// `setup` ([`UnitLife::record_workspace`]). A crash or a refusal before
    /// that leaves the marker as it was.
    pub(crate) fn claim_under(spec: &Claim, unit: LockedUnit) -> Result<UnitLife> {
        let store = MarkerStore::new(unit.state_dir());
        let is_new = !unit.dir().marker_path().exists();
        let mut marker = match unit.load_marker()? {
            Some(m) => reclaimed(&unit, spec, m)?,
            None => {
                let mut m = Marker::new(&spec.unit, spec.engine, &spec.cwd);
                (m.parent, m.depth) = (spec.lineage.parent.clone(), spec.lineage.depth);
                m
            }
        };
        marker.attempts += 1;
        store.check_attempt_paths(&spec.unit, marker.attempts)?;
        transition(&mut marker, UnitState::Pending)?;
        marker.finished_at = None;
        marker.summary = None;
        marker.summary_error = None;
        marker.command = spec.command.clone();
        marker.model = spec.model.clone();
        marker.effort = spec.effort.clone();
        marker.summary_schema = spec.summary_schema.clone();
        marker.policy = None;
        marker.asked = spec.asked.clone();
        // A new loop (or a run without one) starts with no rounds; the
        // attempts of an open loop keep its record.
        if !marker.loop_open {
            marker.rounds.clear();
        }
        marker.loop_open = spec.loop_open;
        // A session belongs to the account it was made on: another account
        // starts fresh (the caller chose replay), so the old id goes.
        if marker.account != spec.account && spec.session.is_none() {
            marker.engine_session_id = None;
        }
        marker.account = spec.account.clone();
        if let Some(id) = &spec.session {
            marker.engine_session_id = Some(id.clone());
        }
        Ok(UnitLife {
            unit,
            marker,
            is_new,
            held_since: None,
            held: Vec::new(),
        })
    }

    pub fn marker(&self) -> &Marker {
        &self.marker
    }

    /// The unit, held under its lock for the attempt.
    pub(crate) fn unit(&self) -> &LockedUnit {
        &self.unit
    }

    /// What the attempt found out before it started (not its state).
    pub(crate) fn note_version(&mut self, version: Option<String>) {
        self.marker.engine_version = version;
    }

    pub(crate) fn note_policy(&mut self, policy: crate::engine::tool_policy::PolicyStatus) {
        self.marker.policy = Some(policy);
    }

    pub(crate) fn note_spent(&mut self, spent: Spent) {
        let m = &mut self.marker;
        m.thread_usage = spent.thread_usage;
        m.usage = spent.usage;
        m.retry_at = spent.retry_at;
        if let Some(v) = spent.engine_version {
            m.engine_version = Some(v);
        }
    }

    pub(crate) fn note_workspace(&mut self, ws: Option<crate::workspace::Workspace>) {
        self.marker.workspace = ws;
    }

    /// pending → failed, before the engine could start. A unit that had no
    /// marker gets one that says why (for `vf status` and orchestrate); an
    /// existing marker is left byte-identical, so a refused run never loses
    /// its session id. Returns the error the run ends with.
    pub(crate) fn fail_before_spawn(&mut self, reason: Reason, err: VfError) -> VfError {
        let err = VfError::Refused {
            reason,
            error: Box::new(err),
        };
        if !self.is_new {
            return err;
        }
        if let Err(e) = transition(&mut self.marker, UnitState::Failed) {
            return e;
        }
        let m = &mut self.marker;
        m.reason = Some(reason);
        m.error = Some(err.to_string());
        m.finished_at = Some(now_rfc3339());
        m.owner = None;
        match self.unit.save_marker_sync(&mut self.marker) {
            Ok(()) => err,
            Err(e) => e,
        }
    }

    /// pending → failed | blocked: a unit that ended without an engine run
    /// (its worktree, `setup`, the guards' baseline).
    pub(crate) async fn end_early(
        &mut self,
        state: UnitState,
        reason: Reason,
        error: String,
    ) -> Result<()> {
        transition(&mut self.marker, state)?;
        let m = &mut self.marker;
        m.reason = Some(reason);
        m.error = Some(error);
        m.owner = None;
        m.exit_code = None;
        m.finished_at = Some(now_rfc3339());
        self.save_off_thread().await
    }

    /// A unit with a workspace is known on disk from then on: its `pending`
    /// marker, naming the worktree, is made durable before `setup` runs, so
    /// a vf killed during setup leaves a unit that `vf status` and `vf
    /// resume` know, not a worktree and branch nobody owns.
    pub(crate) async fn record_workspace(&mut self) -> Result<()> {
        if self.marker.workspace.is_none() {
            return Ok(());
        }
        self.save_off_thread().await
    }

    /// pending → running, once the engine `pid` (leader of group `pgid`) is
    /// spawned: the first durable write of the attempt.
    pub(crate) async fn start(&mut self, pid: u32, pgid: i32) -> Result<()> {
        transition(&mut self.marker, UnitState::Running)?;
        let m = &mut self.marker;
        m.started_at = Some(now_rfc3339());
        m.owner = Some(Owner {
            supervisor: ProcIdentity::current(),
            cli: Some(ProcIdentity::of(pid)),
            pgid: Some(pgid),
        });
        m.exit_code = None;
        m.error = None;
        m.reason = None;
        m.point_at_logs();
        self.save_off_thread().await
    }

    /// The session is known: its id goes into the marker at once, and the
    /// events wait until a marker that holds it is durable.
    pub(crate) fn session_known(&mut self, id: &str) {
        self.marker.engine_session_id = Some(id.to_string());
        self.held_since.get_or_insert_with(TokioInstant::now);
    }

    /// An id that a [`SessionRecorder`] made durable already.
    pub(crate) fn session_durable(&mut self, id: String) {
        self.marker.engine_session_id = Some(id);
    }

    /// What writes an ACP session's id, from the session's own task, before
    /// its events are sent on.
    pub(crate) fn recorder(&self) -> SessionRecorder {
        SessionRecorder {
            writer: self.unit.marker_writer(self.marker.clone()),
        }
    }

    /// Shows `ev` now, or keeps it in order behind the held ones.
    pub(crate) fn emit(&mut self, sink: &mut dyn EventSink, ev: &ConversationEvent) {
        match self.held_since {
            Some(_) => self.held.push(ev.clone()),
            None => sink.event(ev),
        }
    }

    pub(crate) fn holding(&self) -> bool {
        self.held_since.is_some()
    }

    /// When the held id must be made durable (`None`: nothing is held).
    pub(crate) fn hold_deadline(&self) -> Option<TokioInstant> {
        self.held_since.map(|t| t + HOLD_FOR)
    }

    /// Too many events, or for too long, wait on the held id.
    pub(crate) fn hold_overdue(&self) -> bool {
        self.held_since.is_some_and(|t| t.elapsed() >= HOLD_FOR) || self.held.len() >= HOLD_MAX
    }

    /// Makes a held session id durable, then shows the held events. A failed
    /// write is a warning: the run goes on, the final write reports it.
    pub(crate) async fn make_session_durable(&mut self, sink: &mut dyn EventSink) {
        if !self.holding() {
            return;
        }
        if let Err(e) = self.save_off_thread().await {
            sink.warning(&e.to_string());
        }
        self.release(sink);
    }

    /// The id is durable (or its write failed and was reported): out they go.
    fn release(&mut self, sink: &mut dyn EventSink) {
        self.held_since = None;
        for ev in self.held.drain(..) {
            sink.event(&ev);
        }
    }

    /// running → done | failed: the final marker, one durable write (it also
    /// makes a held session id durable), then the held events go out.
    pub(crate) async fn finish(&mut self, end: Finish, sink: &mut dyn EventSink) -> Result<()> {
        // Refused: the held events stay held (none shows an id not durable).
        transition(&mut self.marker, end.state)?;
        let m = &mut self.marker;
        m.exit_code = end.exit_code;
        m.summary = end.summary;
        m.summary_error = end.summary_error;
        m.error = end.error;
        m.reason = end.reason;
        m.finished_at = Some(now_rfc3339());
        let saved = self.save_off_thread().await;
        self.release(sink);
        saved
    }

    /// A durable marker write on tokio's blocking pool (the locked unit's
    /// hop), awaited: its fsyncs wait there instead of on the one thread
    /// that runs every unit of a plan (`vf orchestrate`), so the units'
    /// writes overlap.
    async fn save_off_thread(&mut self) -> Result<()> {
        let (copy, saved) = self.unit.save_marker(self.marker.clone()).await;
        self.marker = copy;
        saved
    }
}

/// An existing marker taken up for a new attempt: never a done unit's
/// without a session to resume (unless its loop is open: the author's
/// revision in a fresh session), never one a live vf owns.
fn reclaimed(unit: &LockedUnit, spec: &Claim, mut m: Marker) -> Result<Marker> {
    if m.state == UnitState::Done && spec.session.is_none() && !m.loop_open {
        return Err(VfError::usage(format!(
            "unit {:?} is already done; pick another --unit name (its marker: {})",
            spec.unit,
            unit.dir().marker_path().display()
        )));
    }
    crate::unit::marker::resume_rule::refuse_if_owned(&spec.unit, &m)?;
    if m.engine != spec.engine {
        // Another engine's session id means nothing here.
        m.engine_session_id = None;
        m.engine = spec.engine;
    }
    m.cwd = spec.cwd.clone();
    Ok(m)
}

/// Makes an ACP session's id durable from the session's task (see
/// [`UnitLife::recorder`]); the supervisor learns it afterwards.
pub(crate) struct SessionRecorder {
    writer: MarkerWriter,
}

impl SessionRecorder {
    pub fn record(&mut self, id: &str) -> Result<()> {
        self.writer.record_session(id)
    }
}

/// A plan's unit that never ran: `blocked` by its dependency (its marker,
/// or a new one), `why` its error. Synchronous: the scheduler calls it on
/// the blocking pool.
pub fn block(
    state_dir: &Path,
    unit: &str,
    engine: EngineId,
    cwd: &Path,
    why: String,
) -> Result<()> {
    let store = MarkerStore::new(state_dir);
    let mut m = match store.load(unit)? {
        Some(m) => m,
        None => Marker::new(unit, engine, cwd),
    };
    transition(&mut m, UnitState::Blocked)?;
    m.error = Some(why);
    m.reason = Some(Reason::Dependency);
    m.owner = None;
    m.finished_at = Some(now_rfc3339());
    store.save(&mut m)
}

/// The unit's attempts of its latest plan run (`engineAttempts`), kept in
/// its marker when it has one; the state is not touched. Synchronous, as
/// [`block`].
pub fn keep_attempts(state_dir: &Path, unit: &str, attempts: Vec<Attempt>) -> Result<()> {
    let store = MarkerStore::new(state_dir);
    if let Some(mut m) = store.load(unit)? {
        m.engine_attempts = attempts;
        store.save(&mut m)?;
    }
    Ok(())
}

/// Writes the unit's loop record (`rounds`) as `rounds` has it, under the
/// loop driver's lock, between attempts (a round's start is durable before
/// it runs, its end before the next).
pub fn save_rounds(unit: &LockedUnit, rounds: &[crate::unit::marker::Round]) -> Result<Marker> {
    let mut m = unit
        .load_marker()?
        .ok_or_else(|| VfError::state(format!("unit {:?} has no marker", unit.name())))?;
    m.rounds = rounds.to_vec();
    unit.save_marker_sync(&mut m)?;
    Ok(m)
}

/// The loop's end: the unit's final state is decided. `end` fails it (a
/// `done` author rejected by its reviewer, `review`; rounds stopped by the
/// budget, `budget`): the one move from `done` to `failed`, the loop's
/// verdict on an attempt that ended well. A unit still `running` or
/// `pending` is refused (exit 70): the driver closes only a settled attempt
/// (done, failed, or blocked by a merge that could not be resolved).
pub fn close_loop(
    unit: &LockedUnit,
    end: Option<(Reason, String)>,
    pushed: Option<crate::workspace::Workspace>,
) -> Result<Marker> {
    let mut m = unit
        .load_marker()?
        .ok_or_else(|| VfError::state(format!("unit {:?} has no marker", unit.name())))?;
    if matches!(m.state, UnitState::Pending | UnitState::Running) {
        return Err(refused(&m.unit, m.state, UnitState::Failed));
    }
    m.loop_open = false;
    if let Some(ws) = pushed {
        m.workspace = Some(ws);
    }
    if let Some((reason, error)) = end {
        m.state = UnitState::Failed;
        m.reason = Some(reason);
        m.error = Some(error);
    }
    unit.save_marker_sync(&mut m)?;
    Ok(m)
}

#[cfg(test)]
#[path = "life_tests.rs"]
mod tests;
