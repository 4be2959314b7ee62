//! The engine runs a worker holds, by plan and unit, each owned by one
//! attempt at a time.
//!
//! Temporal may hand a worker a retry of an attempt that worker is still
//! running: the server lost track of the first (an outage, heartbeats that
//! did not get through) and timed it out. A second engine on the unit would
//! be refused by its lock, failing the unit for good; instead the retry
//! attaches to the run. The newest attempt owns it: it heartbeats it, its
//! cancel ends the engine, and it returns the run's outcome. An attempt
//! whose run was taken over stops at once (the server has closed it). A run
//! already being ended is waited for, then the retry starts as ordered.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, watch};

use super::payload::Beat;
use crate::dispatch::{DispatchResult, EventSink};
use crate::engine::EngineId;
use crate::engine::frames::ConversationEvent;
use crate::ground::error::{Result, VfError};
use crate::plan::scheduler::UnitReport;
use crate::unit::history::{self, Response};
use crate::unit::marker::UnitState;

/// A run's key: the plan's directory in the worker's state dir, and the unit.
pub type Key = (PathBuf, String);

/// The work of a run, on a thread of its own: given the cancel to watch and
/// the sink that keeps the run's heartbeat details.
pub type Work =
    Box<dyn FnOnce(watch::Receiver<bool>, &mut BeatSink) -> Result<DispatchResult> + Send>;

/// Every run this worker holds.
#[derive(Default)]
pub struct Runs {
    live: Mutex<HashMap<Key, Arc<Run>>>,
    tickets: AtomicU64,
}

/// One engine run.
pub struct Run {
    pub engine: EngineId,
    /// Its row as it started (how it started, the replay it carried).
    pub row: UnitReport,
    beat: watch::Receiver<Beat>,
    cancel: watch::Sender<bool>,
    /// The ticket of the attempt that owns it.
    owner: watch::Sender<u64>,
    ended: watch::Receiver<bool>,
    result: Mutex<Option<Result<DispatchResult>>>,
}

/// What an arriving attempt finds for its unit.
pub enum Found {
    /// A live run, now this attempt's.
    Attached(Arc<Run>),
    /// A run being ended (or of another engine): wait for it, then start.
    Ending(Arc<Run>),
    Nothing,
}

/// How an owned run ended for its attempt.
pub enum Owned {
    Ended(Box<Result<DispatchResult>>),
    /// A newer attempt took it over.
    TakenOver,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding it leaves the map itself whole.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Runs {
    /// A number of its own for each arriving attempt.
    pub fn ticket(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The run of `key`, taken over by `ticket` when it is live and of `engine`.
    pub fn attach(&self, key: &Key, engine: EngineId, ticket: u64) -> Found {
        let live = locked(&self.live);
        let Some(run) = live.get(key) else {
            return Found::Nothing;
        };
        if run.engine != engine || *run.cancel.borrow() {
            return Found::Ending(run.clone());
        }
        run.owner.send_replace(ticket);
        Found::Attached(run.clone())
    }

    /// Starts `work` for `key`, owned by `ticket`, holding `slot` until it
    /// ends; `None` when another attempt started one first (attach to it).
    pub fn start(
        self: &Arc<Self>,
        key: Key,
        (engine, row, ticket): (EngineId, UnitReport, u64),
        sink: BeatSink,
        slot: Option<OwnedSemaphorePermit>,
        work: Work,
    ) -> Result<Option<Arc<Run>>> {
        let mut live = locked(&self.live);
        if live.contains_key(&key) {
            return Ok(None);
        }
        let (cancel, cancel_rx) = watch::channel(false);
        let (ended_tx, ended) = watch::channel(false);
        let run = Arc::new(Run {
            engine,
            row,
            beat: sink.beat.subscribe(),
            cancel,
            owner: watch::Sender::new(ticket),
            ended,
            result: Mutex::new(None),
        });
        let (runs, mine, k) = (self.clone(), run.clone(), key.clone());
        std::thread::Builder::new()
            .name(format!("vf-unit-{}", key.1))
            .spawn(move || {
                let mut sink = sink;
                let r = work(cancel_rx, &mut sink);
                drop(slot);
                runs.finish(&k, &mine, r);
                ended_tx.send_replace(true);
            })
            .map_err(|e| VfError::Other(anyhow::anyhow!("cannot start the unit's thread: {e}")))?;
        live.insert(key, run.clone());
        Ok(Some(run))
    }

    /// The run is over: gone from the map before its result is there, so
    /// no attempt attaches to an ended run and its owner is final.
    fn finish(&self, key: &Key, run: &Arc<Run>, r: Result<DispatchResult>) {
        let mut live = locked(&self.live);
        if live.get(key).is_some_and(|r| Arc::ptr_eq(r, run)) {
            live.remove(key);
        }
        *locked(&run.result) = Some(r);
    }

    /// Runs held now (for tests and the worker's own checks).
    pub fn len(&self) -> usize {
        locked(&self.live).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Run {
    pub fn owned_by(&self, ticket: u64) -> bool {
        *self.owner.borrow() == ticket
    }

    /// Ends the engine, if `ticket` owns the run: an attempt taken over has
    /// no say in it any more.
    pub fn cancel(&self, ticket: u64) {
        if self.owned_by(ticket) {
            self.cancel.send_replace(true);
        }
    }

    pub fn beats(&self) -> watch::Receiver<Beat> {
        self.beat.clone()
    }

    pub fn owners(&self) -> watch::Receiver<u64> {
        self.owner.subscribe()
    }

    pub fn ends(&self) -> watch::Receiver<bool> {
        self.ended.clone()
    }

    /// Its result, once it ended, for its owner; `TakenOver` for anyone
    /// else (and for a result already taken).
    pub fn outcome_for(&self, ticket: u64) -> Owned {
        let mine = self.owned_by(ticket) && *self.ended.borrow();
        match mine.then(|| locked(&self.result).take()).flatten() {
            Some(r) => Owned::Ended(Box::new(r)),
            None => Owned::TakenOver,
        }
    }
}

/// Keeps a run's heartbeat details as its events come: the session id as
/// soon as the engine names it, and the last public responses.
pub struct BeatSink {
    beat: watch::Sender<Beat>,
    unit: String,
    engine: EngineId,
    attempt: u32,
}

impl BeatSink {
    pub fn new(host: &str, unit: &str, engine: EngineId, attempt: u32) -> BeatSink {
        let beat = Beat {
            host: host.to_string(),
            ..Beat::default()
        };
        BeatSink {
            beat: watch::Sender::new(beat),
            unit: unit.to_string(),
            engine,
            attempt,
        }
    }
}

impl EventSink for BeatSink {
    fn event(&mut self, event: &ConversationEvent) {
        match event {
            ConversationEvent::Status {
                session_id: Some(id),
                ..
            } => {
                self.beat.send_if_modified(|b| {
                    let new = b.session_id.as_ref() != Some(id);
                    b.session_id = Some(id.clone());
                    new
                });
            }
            ConversationEvent::TaskAgent { text, .. } => {
                let r = live_response(&self.unit, self.engine, self.attempt, text);
                self.beat.send_modify(|b| {
                    b.answers.push(r);
                    let keep = history::recent(&b.answers).len();
                    b.answers.drain(..b.answers.len() - keep);
                });
            }
            _ => {}
        }
    }

    fn warning(&mut self, _message: &str) {}
}

/// A public response seen live (the attempt has not ended: state running).
fn live_response(unit: &str, engine: EngineId, attempt: u32, text: &str) -> Response {
    let (cut, truncated) = history::bounded(text);
    Response {
        unit: unit.to_string(),
        engine,
        attempt,
        state: UnitState::Running,
        sha256: crate::ground::text::sha256_hex(text.as_bytes()),
        bytes: text.len(),
        text: cut.to_string(),
        truncated,
        recorded_at: String::new(),
    }
}

#[cfg(test)]
mod tests;
