//! The dispatch marker: one JSON file per unit, the durable crash-resume state.
//!
//! Every write goes through [`crate::fsutil::write_atomic`]; a corrupt marker
//! is reported and never overwritten silently.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::EngineId;
use crate::error::{Result, VfError};
use crate::fsutil::{now_rfc3339, write_atomic};
use crate::procinfo::{Liveness, ProcIdentity};

pub const MARKER_FORMAT: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitState {
    Pending,
    Running,
    Done,
    Failed,
    Blocked,
}

impl UnitState {
    pub fn as_str(self) -> &'static str {
        match self {
            UnitState::Pending => "pending",
            UnitState::Running => "running",
            UnitState::Done => "done",
            UnitState::Failed => "failed",
            UnitState::Blocked => "blocked",
        }
    }
}

/// Who owns a running unit: the supervising vf and the CLI it spawned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub supervisor: ProcIdentity,
    pub cli: Option<ProcIdentity>,
    /// The CLI's process group (it is the group leader).
    pub pgid: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    pub format: u32,
    pub unit: String,
    pub engine: EngineId,
    pub engine_version: Option<String>,
    pub state: UnitState,
    /// Validated native session id, stored as soon as the first frame carrying it arrives.
    pub engine_session_id: Option<String>,
    pub attempts: u32,
    pub cwd: PathBuf,
    pub owner: Option<Owner>,
    pub created_at: String,
    pub updated_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub exit_code: Option<i32>,
    pub summary: Option<Value>,
    pub summary_error: Option<String>,
    /// Why the unit is failed/blocked, in one line.
    pub error: Option<String>,
    /// Machine-readable failure class (see [`crate::error::Reason`]).
    pub reason: Option<crate::error::Reason>,
    /// Raw logs of the latest attempt (events' rawRange points into stdout).
    pub stdout_log: Option<PathBuf>,
    pub stderr_log: Option<PathBuf>,
}

impl Marker {
    pub fn new(unit: &str, engine: EngineId, cwd: &Path) -> Marker {
        let now = now_rfc3339();
        Marker {
            format: MARKER_FORMAT,
            unit: unit.to_string(),
            engine,
            engine_version: None,
            state: UnitState::Pending,
            engine_session_id: None,
            attempts: 0,
            cwd: cwd.to_path_buf(),
            owner: None,
            created_at: now.clone(),
            updated_at: now,
            started_at: None,
            finished_at: None,
            exit_code: None,
            summary: None,
            summary_error: None,
            error: None,
            reason: None,
            stdout_log: None,
            stderr_log: None,
        }
    }

    /// True when a `running` marker's supervisor is provably still alive.
    pub fn owner_alive(&self) -> Liveness {
        match &self.owner {
            Some(o) => o.supervisor.liveness(),
            None => Liveness::Dead,
        }
    }
}

/// Marker files live in `<state>/units/<unit>.json`.
pub struct MarkerStore {
    dir: PathBuf,
}

impl MarkerStore {
    pub fn new(state_dir: &Path) -> MarkerStore {
        MarkerStore {
            dir: state_dir.join("units"),
        }
    }

    pub fn path(&self, unit: &str) -> PathBuf {
        self.dir.join(format!("{unit}.json"))
    }

    pub fn logs_dir(&self, unit: &str) -> PathBuf {
        self.dir.join(unit)
    }

    /// `Ok(None)` when there is no marker; an error when it exists but is unreadable.
    pub fn load(&self, unit: &str) -> Result<Option<Marker>> {
        let path = self.path(unit);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(VfError::state(format!(
                    "cannot read marker {}: {e}",
                    path.display()
                )));
            }
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            VfError::state(format!(
                "marker {} is corrupt ({e}); vf will not overwrite it: inspect it, then move it aside",
                path.display()
            ))
        })
    }

    pub fn save(&self, marker: &mut Marker) -> Result<()> {
        marker.updated_at = now_rfc3339();
        let mut bytes = serde_json::to_vec_pretty(marker).map_err(anyhow::Error::from)?;
        bytes.push(b'\n');
        let path = self.path(&marker.unit);
        write_atomic(&path, &bytes)
            .map_err(|e| VfError::state(format!("cannot write marker {}: {e}", path.display())))
    }

    /// All markers, sorted by unit name. Corrupt ones are returned as errors in place.
    pub fn list(&self) -> Result<Vec<std::result::Result<Marker, VfError>>> {
        let mut names = Vec::new();
        match std::fs::read_dir(&self.dir) {
            Ok(rd) => {
                for entry in rd.flatten() {
                    let name = entry.file_name();
                    let Some(name) = name.to_str() else { continue };
                    if let Some(unit) = name.strip_suffix(".json")
                        && !unit.starts_with('.')
                    {
                        names.push(unit.to_string());
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(VfError::state(format!(
                    "cannot list {}: {e}",
                    self.dir.display()
                )));
            }
        }
        names.sort();
        Ok(names
            .into_iter()
            .filter_map(|u| match self.load(&u) {
                Ok(Some(m)) => Some(Ok(m)),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let t = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        assert!(store.load("u1").unwrap().is_none());
        let mut m = Marker::new("u1", EngineId::Codex, t.path());
        m.engine_session_id = Some("01a229e6-b739-7472-9ac7-c8fe37200f9b".into());
        store.save(&mut m).unwrap();
        assert_eq!(store.load("u1").unwrap().unwrap(), m);
        std::fs::write(store.path("u2"), b"{\"format\":1,\"unit\":").unwrap();
        let err = store.load("u2").unwrap_err().to_string();
        assert!(err.contains("corrupt"), "{err}");
        let all = store.list().unwrap();
        assert_eq!(all.len(), 2);
        assert!(all[0].is_ok() && all[1].is_err());
    }
}
