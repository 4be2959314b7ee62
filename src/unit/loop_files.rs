//! The files of a unit's closed loops (issue 41) in its folder: the folder
//! of its rounds' nested units, the author's task (kept for a reviewer
//! after a crash: the prompt itself is never kept, so private ranges are
//! redacted in this copy, written 0600), and a step log's tail.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use crate::ground::error::{Result, VfError};
use crate::ground::fsutil::open_state_file;

use super::{LockedUnit, UnitDir};

/// The largest task copy read back (the prompt cap).
const TASK_MAX: u64 = 16 << 20;

impl UnitDir {
    fn task_path(&self) -> PathBuf {
        self.rounds_dir().join("task.txt")
    }

    /// The task the loop's author was given, as kept ([`LockedUnit::keep_task_sync`]).
    pub fn load_task(&self) -> Option<String> {
        let mut out = Vec::new();
        let file = open_state_file(&self.task_path()).ok()?;
        file.take(TASK_MAX).read_to_end(&mut out).ok()?;
        Some(String::from_utf8_lossy(&out).into_owned())
    }

    /// The last `max` bytes of `attempt`'s `kind` step log (`verify`).
    pub fn step_log_tail(&self, attempt: u32, kind: &str, max: u64) -> Option<Vec<u8>> {
        let mut file = open_state_file(&self.log_path(attempt, kind)).ok()?;
        let len = file.metadata().ok()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(max))).ok()?;
        let mut out = Vec::new();
        file.take(max).read_to_end(&mut out).ok()?;
        Some(out)
    }
}

impl LockedUnit {
    /// Makes the folder of the unit's nested units (never through a link:
    /// a planted one is refused) and returns it.
    pub fn make_rounds_dir_sync(&self) -> Result<PathBuf> {
        let unit = self.make_dir_sync()?;
        let dir = self.dir().rounds_dir();
        let refused = |why: String| VfError::state(format!("cannot use {}: {why}", dir.display()));
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(dir),
            Ok(_) => Err(refused("it is not a directory".into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                debug_assert!(dir.starts_with(&unit));
                std::fs::create_dir(&dir).map_err(|e| refused(e.to_string()))?;
                Ok(dir)
            }
            Err(e) => Err(refused(e.to_string())),
        }
    }

    /// Keeps the loop's task (already redacted by the caller), 0600.
    pub fn keep_task_sync(&self, task: &str) -> Result<()> {
        self.make_rounds_dir_sync()?;
        let path = self.dir().task_path();
        super::write_private(&path, task)
            .map_err(|e| VfError::state(format!("cannot write {}: {e}", path.display())))
    }
}
