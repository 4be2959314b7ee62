//! A unit on disk: `<state>/units/<unit>/` and the files keyed by its name.
//!
//! | item | what |
//! |---|---|
//! | [`UnitDir`] | where the unit's files are; reads only (status, report, replay take no lock) |
//! | [`LockedUnit`] | the one way to write them: made by locking the unit, released on drop |
//! | `writes` | the locked unit's writes: marker, input files, record and logs, answers |
//! | `worktree` | the locked unit's worktree: opened, guarded, sealed, pushed |
//! | `layout` | where a unit's files live; an older vf's layout adopted |
//! | `lock` | the unit's lock file (one writer per unit) |
//! | `marker` | the marker: format, load checks, store (`marker/resume_rule.rs` the owner-alive refusal and the resume rule, `marker/asked.rs` what a unit asked for) |
//! | `life` | the marker's states and transitions through an attempt; a closed loop's round record and its close |
//! | `loop_files` | a closed loop's files: its nested units' folder (`rounds/`), the kept task, a step log's tail; [`UnitHold`] keeps the lock across the loop |
//! | `marker/rounds.rs` | the loop's rounds as the marker keeps them |
//! | `lineage` | who started a unit: its parent and depth (`VF_PARENT_UNIT`, `VF_DEPTH`), a child's name |
//! | `prompt_file` | the 0600 prompt files |
//! | `history` | the recorded answers and the replay bounds |
//! | `clean` | which units' worktrees `vf clean` may remove |
//!
//! Locking returns a [`LockedUnit`] (the unit's `lock` file held, see
//! [`crate::unit::lock`]); only it has write methods, so a write without the
//! lock does not compile. Each write comes twice, as uv-fs offers
//! `write_atomic` and `write_atomic_sync`: `x_sync()` where the caller is on
//! a blocking thread already, and async `x()` that makes its own hop to
//! tokio's blocking pool ([`crate::ground::offload`]), so the run's phases read as
//! straight lines. The paths themselves are built by [`layout`], [`marker`] and
//! [`history`].

use std::path::{Path, PathBuf};

use crate::ground::error::{Result, VfError};

use crate::unit::lock::UnitLock;
use crate::unit::marker::{Marker, MarkerStore};

mod worktree;

pub use worktree::Worktree;
pub use writes::{DeferredScan, MarkerWriter, RecordFailure, write_private};

/// Where one unit's files are. Reading them needs no lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitDir {
    state_dir: PathBuf,
    name: String,
}

impl UnitDir {
    pub fn new(state_dir: &Path, name: &str) -> UnitDir {
        UnitDir {
            state_dir: state_dir.to_path_buf(),
            name: name.to_string(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// `<state>/units/<unit>/`.
    pub fn path(&self) -> PathBuf {
        layout::unit_dir(&self.state_dir, &self.name)
    }

    /// The state dir of its rounds' nested units (a reviewer's, a
    /// resolver's): `<state>/units/<unit>/rounds`, so a nested unit's files
    /// are the unit's own and never share a name with another unit.
    pub fn rounds_dir(&self) -> PathBuf {
        self.path().join("rounds")
    }

    /// The private temp dir of a sandboxed run (`TMPDIR`): made fresh for
    /// each run, removed after it.
    pub fn tmp_path(&self) -> PathBuf {
        self.path().join("tmp")
    }

    /// macOS's Seatbelt profile of a sandboxed run (`sandbox-exec -f`).
    pub fn sandbox_profile_path(&self) -> PathBuf {
        self.path().join("sandbox.sb")
    }

    /// Its lock file (present once a run of the unit has started).
    pub fn lock_path(&self) -> PathBuf {
        layout::lock_path(&self.state_dir, &self.name)
    }

    pub fn marker_path(&self) -> PathBuf {
        self.store().path(&self.name)
    }

    /// Where the raw `stream` log of `attempt` goes.
    pub fn log_path(&self, attempt: u32, stream: &str) -> PathBuf {
        self.store().log_path(&self.name, attempt, stream)
    }

    /// The unit has a marker (here or where an older vf put it).
    pub fn has_marker(&self) -> bool {
        self.store().exists(&self.name)
    }

    /// The unit's marker as it is on disk (`None`: it has none).
    pub fn load_marker(&self) -> Result<Option<Marker>> {
        self.store().load(&self.name)
    }

    fn store(&self) -> MarkerStore {
        MarkerStore::new(&self.state_dir)
    }
}

/// A unit held under its lock: the only writer of its files until dropped.
#[derive(Debug)]
pub struct LockedUnit {
    dir: UnitDir,
    /// Released with the value and every [`UnitHold`] made of it.
    _lock: std::sync::Arc<UnitLock>,
}

/// The unit's lock kept across the attempts and rounds of one run (a
/// closed loop, issue 41): it writes nothing itself; [`UnitHold::unit`]
/// gives the writer of the next attempt, one at a time.
#[derive(Debug)]
pub struct UnitHold {
    dir: UnitDir,
    lock: std::sync::Arc<UnitLock>,
}

impl UnitHold {
    /// The unit, locked, for its next attempt: the lock stays held after
    /// that attempt drops it, until this hold goes.
    pub fn unit(&self) -> LockedUnit {
        LockedUnit {
            dir: self.dir.clone(),
            _lock: self.lock.clone(),
        }
    }

    pub fn dir(&self) -> &UnitDir {
        &self.dir
    }
}

impl LockedUnit {
    /// Takes the unit's lock, or refuses (exit 2) naming the vf that holds
    /// it. An older vf's marker and lock file of the unit are adopted.
    pub fn lock_sync(state_dir: &Path, name: &str) -> Result<LockedUnit> {
        let lock = UnitLock::acquire(state_dir, name)?;
        Ok(LockedUnit::held(state_dir, name, lock))
    }

    /// [`LockedUnit::lock_sync`] on the blocking pool.
    pub async fn lock(state_dir: &Path, name: &str) -> Result<LockedUnit> {
        let (state_dir, name) = (state_dir.to_path_buf(), name.to_string());
        crate::ground::offload::run_vf("locking the unit", move || {
            LockedUnit::lock_sync(&state_dir, &name)
        })
        .await
    }

    /// The locked unit, or `None` while another process holds it.
    pub fn try_lock_sync(state_dir: &Path, name: &str) -> Result<Option<LockedUnit>> {
        let lock = UnitLock::try_acquire(state_dir, name)?;
        Ok(lock.map(|lock| LockedUnit::held(state_dir, name, lock)))
    }

    fn held(state_dir: &Path, name: &str, lock: UnitLock) -> LockedUnit {
        LockedUnit {
            dir: UnitDir::new(state_dir, name),
            _lock: std::sync::Arc::new(lock),
        }
    }

    /// Keeps the lock past this value (see [`UnitHold`]).
    pub fn hold(&self) -> UnitHold {
        UnitHold {
            dir: self.dir.clone(),
            lock: self._lock.clone(),
        }
    }

    /// Its paths, and what reads them.
    pub fn dir(&self) -> &UnitDir {
        &self.dir
    }

    pub fn name(&self) -> &str {
        &self.dir.name
    }

    pub fn state_dir(&self) -> &Path {
        &self.dir.state_dir
    }

    /// The marker, read under the lock: what this holder read stays true
    /// until it writes.
    pub fn load_marker(&self) -> Result<Option<Marker>> {
        self.dir.load_marker()
    }

    /// Makes `<state>/units/<unit>/` (never through a link).
    pub fn make_dir_sync(&self) -> Result<PathBuf> {
        layout::make_unit_dir(self.state_dir(), self.name())
    }

    /// Writes `marker` durably (atomically: a reader sees the old file or
    /// the new one, never a part). The marker must be this unit's.
    pub fn save_marker_sync(&self, marker: &mut Marker) -> Result<()> {
        if marker.unit != self.dir.name {
            return Err(VfError::Other(anyhow::anyhow!(
                "internal error: unit {:?}'s lock cannot write unit {:?}'s marker",
                self.dir.name,
                marker.unit
            )));
        }
        writes::save(&self.dir, marker)
    }

    /// [`LockedUnit::save_marker_sync`] on the blocking pool: the marker
    /// goes there and comes back with its `updatedAt`, whatever the write did.
    pub async fn save_marker(&self, marker: Marker) -> (Marker, Result<()>) {
        let dir = self.dir.clone();
        let fallback = marker.clone();
        let done = crate::ground::offload::run(move || {
            let mut marker = marker;
            let saved = writes::save(&dir, &mut marker);
            (marker, saved)
        })
        .await;
        match done {
            Ok(done) => done,
            Err(e) => {
                let why = format!("the marker write did not finish: {e}");
                (fallback, Err(VfError::state(why)))
            }
        }
    }

    /// What writes the unit's marker from another task while this holder
    /// runs the unit (an ACP session's id); only a holder can make one.
    pub fn marker_writer(&self, marker: Marker) -> MarkerWriter {
        MarkerWriter::new(self.dir.clone(), marker)
    }
}

pub mod clean;
pub mod history;
pub mod layout;
pub mod life;
pub mod lineage;
pub mod lock;
mod loop_files;
pub mod marker;
pub mod prompt_file;
#[cfg(test)]
#[path = "tests.rs"]
mod tests;
pub mod writes;

// The domain's surface for the run of a unit (`dispatch`).
pub use history::Counts;
pub use life::{Claim, UnitLife};
pub(crate) use life::{Finish, SessionRecorder, Spent};
pub use marker::logs::STREAMS;
pub use marker::resume_rule::{has_exact_authority, state_refusal};
pub use marker::{Asked, UnitState};
pub use prompt_file::remove_stale_prompt_files;
