//! A plan unit's notification hooks (`on_finish`, `on_fail`), run by the
//! unit's own task once its marker is final: after each dispatch (a retried
//! rate-limited attempt included) with its result, and for a `blocked` unit
//! with its report row (see [`crate::dispatch::notify`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::engine::EngineId;

/// What a unit's task needs to run its hooks.
pub(super) struct UnitHooks {
    pub hooks: crate::dispatch::notify::Hooks,
    pub state_dir: PathBuf,
    pub cwd: PathBuf,
    pub unit: String,
    pub engine: EngineId,
    pub kill_grace: Duration,
}

impl UnitHooks {
    /// Runs them with `result`'s JSON on stdin; their warnings.
    pub async fn run(&self, result: &impl Serialize, attempt: u32, failed: bool) -> Vec<String> {
        if self.hooks == crate::dispatch::notify::Hooks::default() {
            return Vec::new();
        }
        let mut json = match serde_json::to_vec(result) {
            Ok(j) => j,
            Err(e) => return vec![format!("hooks not run: {e}")],
        };
        json.push(b'\n');
        let ended = crate::dispatch::notify::Ended {
            state_dir: &self.state_dir,
            cwd: &self.cwd,
            unit: &self.unit,
            engine: self.engine.as_str(),
            attempt,
            failed,
            json: &json,
            kill_grace: self.kill_grace,
        };
        crate::dispatch::notify::after_unit(&self.hooks, &ended).await
    }
}
