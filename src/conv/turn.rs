//! One participant's turn, run as an ordinary dispatch of the unit
//! `conv-<name>-<alias>-t<N>`: locks, process groups, signals, logs, the
//! durable session id and redaction all come from [`crate::dispatch`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::envelope::{self, DeliveryMode, Turn, TurnInputs};
use super::model::{Binding, Conversation, PendingTurn, turn_unit};
use super::store::ConvStore;
use crate::dispatch::private::{self, PrivateRanges};
use crate::dispatch::resolve::Resolved;
use crate::dispatch::{DispatchResult, EventSink, UnitSpec};
use crate::engine::EngineId;
use crate::engine::tool_policy::{Enforcement, ToolPolicy};
use crate::ground::error::Result;
use crate::unit::history::Counts;
use crate::unit::marker::{MarkerStore, UnitState};

/// What every turn of one `say` shares.
pub struct SayContext {
    pub state_dir: PathBuf,
    pub cwd: PathBuf,
    pub fresh: bool,
    /// `--write`: no read-only flags.
    pub write: bool,
    /// `--allow-tool`, `--deny-tool`, `--require-enforced` (its `read_only`
    /// is ignored: `write` decides).
    pub tools: ToolPolicy,
    /// `--sandbox`, `--deny-read`, `--writable`, resolved (each turn's unit runs in it).
    pub sandbox: crate::dispatch::confine::Sandbox,
    pub stall_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    pub kill_grace: Duration,
    /// Staged apart from the envelope: delivered with this `say` only.
    pub private_ranges: PrivateRanges,
    /// `--mcp FILE`, checked for every participant's engine: each turn's.
    pub mcp: Option<crate::engine::mcp::McpServers>,
    /// Per participant: the governor's say, its account chosen (absent: the
    /// engine's default account, the built-in limits).
    pub quota: std::collections::BTreeMap<String, crate::quota::Ask>,
}

/// One turn's report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnReport {
    pub participant: String,
    pub turn: u32,
    pub delivery_mode: DeliveryMode,
    pub cursor: CursorRange,
    pub replay: Option<Counts>,
    pub read_only: Enforcement,
    /// Whether the answer entered the transcript (a failed or interrupted
    /// turn's partial answer never does).
    pub recorded: bool,
    pub result: DispatchResult,
}

/// A turn's policy: read-only unless `--write`, with the say's tool lists.
pub fn turn_policy(ctx: &SayContext) -> ToolPolicy {
    ToolPolicy {
        read_only: !ctx.write,
        ..ctx.tools.clone()
    }
}

/// Whether `engine` holds a turn read-only (`engine::policy`; its warning
/// comes with the run's other policy warnings).
pub fn read_only(engine: EngineId, write: bool, resume: bool) -> Enforcement {
    let p = ToolPolicy {
        read_only: !write,
        ..ToolPolicy::default()
    };
    crate::engine::tool_policy::apply(engine, None, resume, &p)
        .status
        .read_only
}

/// A read-only turn `engine` cannot hold read-only is refused (exit 2)
/// unless the user opted in (`--allow-unenforced`) or lets it edit
/// (`--write`): a turn is never called read-only when it is not.
pub fn require_read_only(alias: &str, engine: EngineId, resume: bool) -> Result<()> {
    if read_only(engine, false, resume) != Enforcement::Unenforced {
        return Ok(());
    }
    Err(crate::ground::error::VfError::usage(format!(
        "participant {alias} ({engine}) cannot be held read-only{}: give --write to let it \
         edit, or --allow-unenforced to run the turn read-only in name only",
        if resume { " on a resumed turn" } else { "" }
    )))
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CursorRange {
    pub from: u64,
    pub to: u64,
}

/// Whether `engine` can resume a session exactly at its installed version.
pub fn exact_authority(engine: EngineId) -> bool {
    if crate::process::binary::resolve_binary(engine, None).is_err() {
        return false;
    }
    let version = crate::dispatch::installed_version(engine, None);
    engine.engine().exact_resume(version.as_ref())
}

/// Plans `alias`'s turn over the transcript as it stands now.
pub fn plan(store: &ConvStore, conv: &Conversation, alias: &str, fresh: bool) -> Result<Turn> {
    let p = conv.participant(alias)?;
    let handoff_text = match &conv.handoff {
        Some(h) => Some(store.handoff_text(&conv.name, h)?),
        None => None,
    };
    envelope::plan(
        conv,
        alias,
        &TurnInputs {
            exact_authority: exact_authority(p.engine),
            fresh,
            handoff_text: handoff_text.as_deref(),
        },
    )
}

/// A turn that a killed vf left pending: the session id its unit's marker
/// made durable becomes the binding, at the cursor the participant had
/// before that turn (so nothing after it is skipped); its partial answer is
/// not entered. Returns the aliases whose turn was pending.
pub fn recover(state_dir: &Path, conv: &mut Conversation) -> Vec<String> {
    let markers = MarkerStore::new(state_dir);
    let mut was_pending = Vec::new();
    for p in conv.participants.iter_mut() {
        let Some(pending) = p.pending.take() else {
            continue;
        };
        was_pending.push(p.alias.clone());
        let Ok(Some(m)) = markers.load(&pending.unit) else {
            continue;
        };
        if let Some(id) = m.engine_session_id
            && p.engine.engine().valid_session_id(&id)
        {
            p.binding = Some(Binding {
                session_id: id,
                cursor: p.cursor,
            });
        }
    }
    was_pending
}

/// Runs the planned turns at once (each with its own sink from `sink_for`),
/// then records them in plan order, saving after each. The first error
/// (a turn that could not start) is returned after every turn has ended.
pub async fn run_all<S, F>(
    ctx: &SayContext,
    store: &ConvStore,
    conv: &mut Conversation,
    plans: &[Turn],
    mut sink_for: F,
) -> Result<Vec<(TurnReport, S)>>
where
    S: EventSink + 'static,
    F: FnMut(&str) -> S,
{
    let mut started = Vec::new();
    for turn in plans {
        let (spec, read_only) = start(ctx, store, conv, turn)?;
        let mut sink = sink_for(&turn.participant);
        // Local tasks: the turns run concurrently on vf's one thread.
        let task = tokio::task::spawn_local(async move {
            let ran = crate::dispatch::run(spec, &mut sink).await;
            (ran, sink)
        });
        started.push((turn, read_only, task));
    }
    let mut reports = Vec::new();
    let mut first_err = None;
    for (turn, read_only, task) in started {
        let (ran, sink) = task.await.map_err(anyhow::Error::from)?;
        conv.participant_mut(&turn.participant)?.pending = None;
        let finished = ran.and_then(|result| finish(conv, turn, read_only, result));
        store.save(conv)?;
        match finished {
            Ok(report) => reports.push((report, sink)),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(reports),
    }
}

/// Marks the turn pending (saved) and builds its unit.
fn start(
    ctx: &SayContext,
    store: &ConvStore,
    conv: &mut Conversation,
    turn: &Turn,
) -> Result<(UnitSpec, Enforcement)> {
    let p = conv.participant(&turn.participant)?;
    let (engine, model) = (p.engine, p.model.clone());
    let unit = turn_unit(&conv.name, &turn.participant, turn.turn);
    conv.participant_mut(&turn.participant)?.pending = Some(PendingTurn { unit: unit.clone() });
    store.save(conv)?;
    let read_only = match ctx.tools.sandbox_holds_read_only {
        true => Enforcement::Enforced,
        false => read_only(engine, ctx.write, turn.session.is_some()),
    };
    let run = Resolved {
        sandbox: ctx.sandbox.clone(),
        stall_timeout: ctx.stall_timeout,
        timeout: ctx.timeout,
        kill_grace: ctx.kill_grace,
        policy: turn_policy(ctx),
        asked: crate::unit::marker::Asked::new(&turn_policy(ctx), (&[], &[]), (None, None)),
        engine_reason: Some(format!(
            "conversation {} participant {}",
            conv.name, turn.participant
        )),
        redact: Some(ctx.private_ranges.wire())
            .filter(|w| !w.is_empty())
            .into_iter()
            .collect(),
        // The participant's model on every turn (checked at `conv new`).
        options: crate::engine::RunOptions::new(model, None, None),
        mcp: ctx.mcp.clone(),
        quota: ctx
            .quota
            .get(&turn.participant)
            .cloned()
            .unwrap_or_default(),
        ..Resolved::new(engine, unit, ctx.cwd.clone(), ctx.state_dir.clone())
    };
    let prompt = private::apply_private_ranges(&turn.text, &ctx.private_ranges);
    let spec = run.spec(prompt, turn.session.clone());
    Ok((spec, read_only))
}

fn finish(
    conv: &mut Conversation,
    turn: &Turn,
    read_only: Enforcement,
    result: DispatchResult,
) -> Result<TurnReport> {
    let recorded = settle(conv, turn, &result)?;
    Ok(TurnReport {
        participant: turn.participant.clone(),
        turn: turn.turn,
        delivery_mode: turn.mode,
        cursor: CursorRange {
            from: turn.cursor_from,
            to: turn.cursor_to,
        },
        replay: turn.replay_counts,
        read_only,
        recorded,
        result,
    })
}

/// Enters a finished turn's answer and moves the cursor and binding; a
/// failed turn changes neither.
fn settle(conv: &mut Conversation, turn: &Turn, result: &DispatchResult) -> Result<bool> {
    let answer = match (&result.state, &result.answer) {
        (UnitState::Done, Some(a)) => a.clone(),
        _ => return Ok(false),
    };
    let engine = conv.participant(&turn.participant)?.engine;
    let session = result
        .session_id
        .clone()
        .filter(|id| engine.engine().valid_session_id(id));
    conv.add_response(&turn.participant, turn.turn, &answer, session.clone())?;
    if let Some(entry) = conv.transcript.last_mut() {
        entry.delivery = Some(turn.mode);
    }
    let p = conv.participant_mut(&turn.participant)?;
    p.cursor = turn.cursor_to;
    p.turns = turn.turn;
    p.last_delivery = Some(turn.mode);
    if turn.handoff.is_some() {
        p.handoff_seen = turn.handoff.clone();
    }
    p.binding = session.map(|session_id| Binding {
        session_id,
        cursor: turn.cursor_to,
    });
    Ok(true)
}
