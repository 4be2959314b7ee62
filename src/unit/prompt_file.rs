//! Prompt files: a prompt too large for argv (copilot over 32 KiB) goes to
//! `<state>/dispatch/<unit>.md`. It may hold private file ranges, so it is
//! written 0600, removed as soon as the run has ended, and a file left by a
//! `kill -9` is removed by the next dispatch of that unit and by
//! [`remove_stale_prompt_files`] (`vf doctor --fix`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::unit::lock::UnitLock;

/// The directory under the state dir (the engines build their paths in it).
pub const DIR_NAME: &str = "dispatch";
const SUFFIX: &str = ".md";

/// A temp file older than this was left by a crashed writer.
const STALE_TEMP: Duration = Duration::from_secs(60);

pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join(DIR_NAME)
}

/// Writes the file atomically, readable by the owner only (the locked
/// unit's [`crate::unit::write_private`]).
pub fn write(path: &Path, contents: &str) -> std::io::Result<()> {
    crate::unit::write_private(path, contents)
}

pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Where the unit's prompt file goes when its engine takes one; the
/// locked unit removes one a killed vf left.
pub fn path_for_unit(state_dir: &Path, unit: &str) -> PathBuf {
    dir(state_dir).join(format!("{unit}{SUFFIX}"))
}

/// Removes every prompt file whose unit is not running (its lock is free),
/// and temp files a crashed writer left; returns what was removed.
pub fn remove_stale_prompt_files(state_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let d = dir(state_dir);
    match std::fs::symlink_metadata(&d) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Ok(Vec::new()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    }
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(&d)?.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let stale = if name.starts_with(".tmp-") {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().unwrap_or_default() > STALE_TEMP)
        } else {
            match name.strip_suffix(SUFFIX) {
                Some(unit) if crate::ground::names::check("unit name", unit).is_ok() => {
                    // Held briefly: a run that starts meanwhile waits for nothing,
                    // it is refused as "running" and can be retried.
                    matches!(UnitLock::try_acquire(state_dir, unit), Ok(Some(_)))
                }
                _ => false,
            }
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_private_and_only_stale_ones_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let live = dir(t.path()).join("live.md");
        let dead = dir(t.path()).join("dead.md");
        write(&live, "private").unwrap();
        write(&dead, "private").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&live).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let _running = UnitLock::acquire(t.path(), "live").unwrap();
        assert_eq!(
            remove_stale_prompt_files(t.path()).unwrap(),
            vec![dead.clone()]
        );
        assert!(live.exists() && !dead.exists());
        assert!(
            remove_stale_prompt_files(&t.path().join("nothing"))
                .unwrap()
                .is_empty()
        );
    }
}
