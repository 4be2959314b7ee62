//! The scheduler's own marker writes: a never-run unit's `blocked` marker and
//! a unit's `engineAttempts`. Each is durable (fsync of the file and of the
//! directory), so each is made on tokio's blocking pool: the thread that runs
//! every unit of the plan goes on showing their events meanwhile. The caller
//! reports what a write stands for only once it is done.

use std::path::PathBuf;

use crate::dispatch::DispatchResult;
use crate::engine::EngineId;
use crate::ground::error::Result;
use crate::unit::life;
use crate::unit::marker::Attempt;

/// Runs `f` on the blocking pool.
async fn off_thread(f: impl FnOnce() -> Result<()> + Send + 'static) -> Result<()> {
    crate::ground::offload::run_vf("a marker write", f).await
}

/// What a unit's `blocked` marker needs.
pub(super) struct Blocked {
    pub state_dir: PathBuf,
    pub unit: String,
    pub engine: EngineId,
    pub cwd: PathBuf,
    pub why: String,
}

impl Blocked {
    /// Marks the unit `blocked` (its marker, or a new one), `why` its error.
    pub async fn write(self) -> Result<()> {
        off_thread(move || {
            let (dir, unit) = (&self.state_dir, &self.unit);
            life::block(dir, unit, self.engine, &self.cwd, self.why)
        })
        .await
    }
}

/// A unit whose attempts are kept (`on_rate_limit` other than `fail`):
/// the attempts before the one that runs.
pub(super) struct Attempts {
    pub state_dir: PathBuf,
    pub unit: String,
    pub before: Vec<Attempt>,
}

/// One attempt, as the unit's report and marker list it.
pub(super) fn attempt_of(res: &DispatchResult) -> Attempt {
    Attempt {
        engine: res.engine,
        reason: res.reason,
        session_id: res.session_id.clone(),
    }
}

impl Attempts {
    /// Adds the attempt that just ended to the unit's marker
    /// (`engineAttempts`), when it has one; a warning when that fails.
    pub async fn keep(self, res: &DispatchResult) -> Option<String> {
        let mut all = self.before;
        all.push(attempt_of(res));
        let (dir, unit) = (self.state_dir, self.unit);
        let kept = off_thread(move || life::keep_attempts(&dir, &unit, all)).await;
        kept.err()
            .map(|e| format!("cannot record its attempts: {e}"))
    }
}
