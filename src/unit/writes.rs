//! The locked unit's writes: its marker, the engine's input files (prompt
//! file, MCP config), the owned-process record and raw logs of an attempt,
//! and its recorded answers. Each async one makes its own hop
//! to the blocking pool: creating a file or an fsync can wait on the file
//! system's journal, and the runtime's one thread carries every unit's
//! events in a plan.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::path::{Path, PathBuf};

use super::{LockedUnit, UnitDir};
use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::process::owned::ProcRecord;
use crate::sys::OpenExt;
use crate::unit::marker::{Marker, MarkerStore, UnitState};

/// The marker's one durable write.
pub(super) fn save(dir: &UnitDir, marker: &mut Marker) -> Result<()> {
    MarkerStore::new(dir.state_dir()).save(marker)
}

/// Writes the unit's marker from another task (an ACP session's, which
/// makes its id durable before its events go on); made by a
/// [`LockedUnit`] only, for the time that holder runs the unit.
pub struct MarkerWriter {
    dir: UnitDir,
    marker: Marker,
}

impl MarkerWriter {
    pub(super) fn new(dir: UnitDir, marker: Marker) -> MarkerWriter {
        MarkerWriter { dir, marker }
    }

    /// The session `id` into the marker, durably.
    pub fn record_session(&mut self, id: &str) -> Result<()> {
        self.marker.engine_session_id = Some(id.to_string());
        save(&self.dir, &mut self.marker)
    }
}

/// A unit directory's read for stale temporaries, not started yet.
#[must_use]
pub struct DeferredScan(Option<crate::ground::fsutil::StaleScan>);

impl DeferredScan {
    /// Starts it on the blocking pool, not awaited: whatever it does not
    /// reach is left to a later run's.
    pub fn start(self) {
        if let Some(scan) = self.0 {
            drop(crate::ground::offload::run(move || scan.run()));
        }
    }
}

/// A unit's temp dir removed, never followed: a link the engine planted in
/// its place goes, not what it points at.
fn remove_tmp(tmp: &Path) {
    match std::fs::symlink_metadata(tmp) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(tmp);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(tmp);
        }
        Err(_) => {}
    }
}

/// What failed, and whether the process record was written by then.
pub type RecordFailure = (VfError, bool);

/// Writes `contents` atomically, readable by the owner only (the temporary
/// is created 0600 and renamed, so no other mode is ever visible), never
/// through a symlink planted at its directory.
pub fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
        if std::fs::symlink_metadata(d)?.file_type().is_symlink() {
            return Err(std::io::Error::other(format!(
                "{} is a symlink",
                d.display()
            )));
        }
    }
    crate::ground::fsutil::write_atomic_volatile(path, contents.as_bytes())
}

fn state_err(what: &Path, e: &dyn std::fmt::Display) -> VfError {
    VfError::state(format!("cannot write {}: {e}", what.display()))
}

impl LockedUnit {
    /// Removes what a killed vf's run of the unit left: its prompt file
    /// (`prompt_file`, given by the caller) and its MCP configs. Under the
    /// lock nobody else can be using them.
    pub fn remove_leftover_inputs_sync(&self, prompt_file: &Path) {
        let _ = std::fs::remove_file(prompt_file);
        crate::engine::mcp::remove_files(&self.dir.path());
    }

    /// A sandboxed run's private temp dir, made empty (owner only): what an
    /// earlier run left there, even a link planted in its place, goes first
    /// (never followed). Its path.
    pub fn fresh_tmp_sync(&self) -> Result<PathBuf> {
        crate::unit::layout::make_unit_dir(self.dir.state_dir(), self.dir.name())?;
        let tmp = self.dir.tmp_path();
        self.remove_tmp_sync();
        crate::sys::create_private_dir(&tmp).map_err(|e| state_err(&tmp, &e))?;
        Ok(tmp)
    }

    /// Removes the private temp dir (and a link in its place, unfollowed).
    pub fn remove_tmp_sync(&self) {
        remove_tmp(&self.dir.tmp_path());
    }

    /// [`Self::remove_tmp_sync`] on the blocking pool.
    pub async fn remove_tmp(&self) {
        let tmp = self.dir.tmp_path();
        let _ = crate::ground::offload::run(move || remove_tmp(&tmp)).await;
    }

    /// macOS's Seatbelt profile for a sandboxed run, written 0600. Its path.
    pub fn write_sandbox_profile_sync(&self, text: &str) -> Result<PathBuf> {
        let path = self.dir.sandbox_profile_path();
        write_private(&path, text).map_err(|e| state_err(&path, &e))?;
        Ok(path)
    }

    /// The engine's input files, written 0600 on the blocking pool: the
    /// prompt file, and the MCP config (in the unit's own directory, made
    /// first). Their contents are moved there, not copied (a prompt may be
    /// 16 MiB).
    pub async fn write_inputs(
        &self,
        prompt: Option<(PathBuf, String)>,
        config: Option<(PathBuf, String)>,
    ) -> Result<()> {
        if prompt.is_none() && config.is_none() {
            return Ok(());
        }
        let dir = self.dir.clone();
        crate::ground::offload::run_vf("writing the engine's input files", move || {
            if let Some((path, contents)) = &prompt {
                write_private(path, contents).map_err(|e| state_err(path, &e))?;
            }
            if let Some((path, contents)) = &config {
                crate::unit::layout::make_unit_dir(dir.state_dir(), dir.name())?;
                write_private(path, contents).map_err(|e| state_err(path, &e))?;
            }
            Ok(())
        })
        .await
    }

    /// The owned-process record, then the log directory (checked for links
    /// again) and the attempt's two raw logs `paths`, on the blocking pool.
    pub async fn record_and_logs(
        &self,
        mut record: ProcRecord,
        record_path: &Path,
        paths: &[PathBuf; 2],
    ) -> std::result::Result<[File; 2], RecordFailure> {
        let (dir, record_path, paths) =
            (self.dir.clone(), record_path.to_path_buf(), paths.clone());
        let made = crate::ground::offload::run(move || {
            record
                .save(&record_path)
                .map_err(|e| (state_err(&record_path, &e), false))?;
            let logs = dir.path();
            real_dir(dir.state_dir(), &logs).map_err(|e| (state_err(&logs, &e), true))?;
            let out = create_log(&paths[0]).map_err(|e| (state_err(&paths[0], &e), true))?;
            let err = create_log(&paths[1]).map_err(|e| (state_err(&paths[1], &e), true))?;
            Ok([out, err])
        })
        .await;
        made.unwrap_or_else(|e| {
            let why = format!("the record and raw logs were not made: {e}");
            // Whether the record was written is not known: release it anyway.
            Err((VfError::state(why), true))
        })
    }

    /// Takes the unit directory's once-per-process read for stale
    /// temporaries off the marker writes that follow: it runs when
    /// [`DeferredScan::start`] says.
    pub fn defer_stale_scan(&self) -> DeferredScan {
        DeferredScan(crate::ground::fsutil::defer_stale_scan(&self.dir.path()))
    }

    /// Records an attempt's public `answer` for a later replay, on the
    /// blocking pool; the future owns what it needs, so the final marker's
    /// write can overlap it.
    pub fn record_answer(
        &self,
        engine: EngineId,
        attempt: u32,
        state: UnitState,
        answer: String,
    ) -> impl Future<Output = std::io::Result<()>> + use<> {
        let dir = self.dir.clone();
        let job = crate::ground::offload::run(move || {
            crate::unit::history::record(
                dir.state_dir(),
                dir.name(),
                engine,
                attempt,
                state,
                &answer,
            )
        });
        async move { job.await.unwrap_or_else(|e| Err(std::io::Error::other(e))) }
    }

    /// Removes the attempt's process record and its input files, on the
    /// blocking pool. `Err`: the record that could not go, and why.
    pub async fn release(
        &self,
        record: PathBuf,
        inputs: Vec<PathBuf>,
    ) -> std::result::Result<(), (PathBuf, String)> {
        let fallback = record.clone();
        let released = crate::ground::offload::run(move || {
            let released = crate::process::owned::release(&record);
            for p in &inputs {
                let _ = std::fs::remove_file(p);
            }
            released.map_err(|err| (record, err.to_string()))
        })
        .await;
        released.unwrap_or_else(|err| Err((fallback, err)))
    }
}

/// A new raw log, readable by the owner only (it holds the engine's output,
/// whatever the engine echoed); never through a symlink planted in the state
/// dir, and never waiting on a FIFO planted there (a regular file ignores
/// O_NONBLOCK).
fn create_log(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .owner_only()
        .no_follow_no_block()
        .open_checked(path)
}

/// Creates `dir` and checks that no part of it below `root` is a symlink
/// (which could point the logs outside the state dir).
fn real_dir(root: &Path, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for d in dir.ancestors().take_while(|d| *d != root) {
        if std::fs::symlink_metadata(d)?.file_type().is_symlink() {
            return Err(std::io::Error::other(format!(
                "{} is a symlink; vf writes only inside its state dir",
                d.display()
            )));
        }
    }
    Ok(())
}
