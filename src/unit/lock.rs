//! One writer per unit: an exclusive lock (`sys::try_lock`: `flock` on Unix,
//! `LockFileEx` on Windows) on `<state>/units/<unit>/lock` (see [`crate::unit::layout`]).
//!
//! Taken before the unit's marker is read and held until its run has ended.
//! The kernel drops it with the holder's last file descriptor, so a crashed
//! vf (even `kill -9`) leaves no stale lock. The holder writes its pid into
//! the file after locking, so a refused contender can name it. The file is
//! never deleted: unlinking a lock file races with a contender that already
//! opened it. (An older vf's `units/<unit>.lock` is, once tested free: no vf
//! of this layout opens it.)

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::ground::error::Result;
use crate::unit::layout;

/// Held for the whole run of one unit; released when dropped.
#[derive(Debug)]
pub struct UnitLock {
    /// Locked; the lock goes with the descriptor.
    _file: File,
}

/// `<state>/units/<unit>/lock`, next to the marker.
pub fn lock_path(state_dir: &Path, unit: &str) -> PathBuf {
    layout::lock_path(state_dir, unit)
}

impl UnitLock {
    /// Takes the unit's lock, or refuses (exit 2) while another vf holds it.
    pub fn acquire(state_dir: &Path, unit: &str) -> Result<UnitLock> {
        match layout::lock_unit(state_dir, unit)? {
            Ok(file) => Ok(UnitLock { _file: file }),
            Err(held) => Err(held.refusal()),
        }
    }

    /// The lock, or `None` while another process holds it. Once held, an
    /// older vf's marker and lock file of the unit are moved into its
    /// directory ([`layout::adopt`]).
    pub fn try_acquire(state_dir: &Path, unit: &str) -> Result<Option<UnitLock>> {
        let file = layout::lock_unit(state_dir, unit)?;
        Ok(file.ok().map(|file| UnitLock { _file: file }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_released_on_drop() {
        let t = tempfile::tempdir().unwrap();
        let first = UnitLock::acquire(t.path(), "u").unwrap();
        // flock is per open file: a second open in this process contends too.
        assert!(UnitLock::try_acquire(t.path(), "u").unwrap().is_none());
        let err = UnitLock::acquire(t.path(), "u").unwrap_err();
        assert_eq!(err.exit_code(), crate::ground::error::exit::USAGE);
        assert_eq!(
            err.to_string(),
            format!(
                "unit u is running under vf pid {}; not touching it",
                std::process::id()
            )
        );
        // Other units are independent.
        let _other = UnitLock::acquire(t.path(), "v").unwrap();
        drop(first);
        assert!(UnitLock::try_acquire(t.path(), "u").unwrap().is_some());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        std::fs::create_dir_all(t.path().join("state/units/u")).unwrap();
        std::os::unix::fs::symlink(&outside, lock_path(&t.path().join("state"), "u")).unwrap();
        let err = UnitLock::acquire(&t.path().join("state"), "u").unwrap_err();
        assert_eq!(err.exit_code(), crate::ground::error::exit::STATE, "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_units_dir_is_refused_before_anything_is_created() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::create_dir(t.path().join("state")).unwrap();
        std::os::unix::fs::symlink(&outside, t.path().join("state/units")).unwrap();
        let err = UnitLock::acquire(&t.path().join("state"), "u").unwrap_err();
        assert_eq!(err.exit_code(), crate::ground::error::exit::STATE, "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
