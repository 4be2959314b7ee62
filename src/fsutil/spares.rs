//! Spare inodes for atomic replaces. On ext4 (above all without a journal)
//! a freed inode makes every later file creation in its block group slower
//! for minutes, so a run that rewrites a marker three times per unit, over a
//! thousand units, pays more per unit the longer it runs. Instead of freeing
//! the replaced inode, an atomic replace swaps the new content in with
//! `RENAME_EXCHANGE` and keeps the old inode as a hidden temporary for the
//! next write in that directory, which empties it first. Until then it keeps
//! the old content, as an unlinked inode would: a reader that opened the old
//! file just before the swap still reads it whole. Released process records
//! become spares the same way.
//!
//! A spare is a `.tmp-<pid>-<start time>-…` file like any temporary: this
//! process removes its spares when it exits, and a crash leaves them to
//! [`super::clean_stale_tmps`] (their writer is then provably dead).

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// At most this many spares are kept per directory (a few per running unit).
const MAX_PER_DIR: usize = 64;

static SPARES: Mutex<Option<HashMap<PathBuf, Vec<PathBuf>>>> = Mutex::new(None);

/// A spare of `dir`, opened for writing and empty; `None` when there is none.
pub(super) fn take(dir: &Path) -> Option<(PathBuf, File)> {
    loop {
        let path = {
            let mut pool = SPARES.lock().unwrap_or_else(|p| p.into_inner());
            pool.as_mut()?.get_mut(dir)?.pop()?
        };
        // Gone (removed as stale by another vf) or replaced: try the next one.
        if let Ok(f) = open_empty(&path) {
            return Some((path, f));
        }
    }
}

/// Swaps `tmp` (the new content) with `target`. `Ok(true)`: done, and the
/// old content's inode, now at `tmp`, is kept as a spare.
/// `Ok(false)`: nothing was swapped (no target, no regular file there, or a
/// file system without the exchange); the caller renames as usual.
pub(super) fn exchange(dir: &Path, tmp: &Path, target: &Path) -> std::io::Result<bool> {
    match renameat2(tmp, target, libc::RENAME_EXCHANGE) {
        Ok(()) => {}
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EINVAL)) => {
            return Ok(false);
        }
        Err(e) => return Err(e),
    }
    let old_is_file = std::fs::symlink_metadata(tmp).is_ok_and(|m| m.file_type().is_file());
    if !old_is_file {
        // Never move a directory or a link aside: swap back, rename as before.
        renameat2(tmp, target, libc::RENAME_EXCHANGE)?;
        return Ok(false);
    }
    keep(dir, tmp.to_path_buf());
    Ok(true)
}

/// Removes `path` from view: it becomes a spare of its directory, or is
/// deleted when that is not possible. A missing file is fine.
pub(super) fn retire(path: &Path, prefix: &str) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let spare = dir.join(format!("{prefix}spare{n}"));
    let is_file = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type().is_file(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if is_file && renameat2(path, &spare, libc::RENAME_NOREPLACE).is_ok() {
        keep(dir, spare);
        return Ok(());
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn keep(dir: &Path, spare: PathBuf) {
    let mut pool = SPARES.lock().unwrap_or_else(|p| p.into_inner());
    let list = pool
        .get_or_insert_with(|| {
            // SAFETY: registers a plain `extern "C"` function, once.
            unsafe { libc::atexit(remove_all_at_exit) };
            HashMap::new()
        })
        .entry(dir.to_path_buf())
        .or_default();
    if list.len() < MAX_PER_DIR {
        list.push(spare);
    } else {
        let _ = std::fs::remove_file(&spare);
    }
}

/// At exit, this process's spares go (a killed vf leaves them to the next
/// writer's clean-up of a dead writer's temporaries).
extern "C" fn remove_all_at_exit() {
    let Ok(mut pool) = SPARES.try_lock() else {
        return;
    };
    let all = pool.as_mut().map(std::mem::take).unwrap_or_default();
    for path in all.into_values().flatten() {
        let _ = std::fs::remove_file(path);
    }
}

/// Opens an existing regular file for writing, truncated; never through a link.
fn open_empty(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::Error::other("NUL in path"))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// How many spares this process holds for `dir` (tests).
#[cfg(test)]
pub(super) fn count(dir: &Path) -> usize {
    let pool = SPARES.lock().unwrap_or_else(|p| p.into_inner());
    pool.as_ref()
        .and_then(|m| m.get(dir))
        .map_or(0, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::super::{retire, tmp_prefix, write_atomic, write_atomic_volatile, write_record};
    use super::*;

    /// Every file of `dir` with its contents, sorted.
    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), bytes)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaced_content_never_lingers_and_its_inode_is_reused() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("m.json");
        write_atomic(&p, b"first, private").unwrap();
        assert_eq!(count(t.path()), 0);
        write_atomic(&p, b"second").unwrap();
        assert_eq!(count(t.path()), 1);
        write_atomic(&p, b"third").unwrap();
        // The spare went in and the replaced inode came back: still one.
        assert_eq!(count(t.path()), 1);
        let all = files(t.path());
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(all[1], ("m.json".to_string(), b"third".to_vec()));
        // The spare holds the replaced content until its next use empties it.
        assert!(all[0].0.starts_with(tmp_prefix()), "{all:?}");
        assert_eq!(all[0].1, b"second");
        // A new file takes the spare instead of a new inode.
        write_atomic(&t.path().join("n.json"), b"n").unwrap();
        assert_eq!(count(t.path()), 0);
        assert_eq!(files(t.path()).len(), 2);
    }

    #[test]
    fn a_reader_of_the_replaced_file_still_reads_it_whole() {
        use std::io::Read;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("m.json");
        write_atomic(&p, b"old content").unwrap();
        let mut reader = File::open(&p).unwrap();
        write_atomic(&p, b"new").unwrap();
        let mut seen = String::new();
        reader.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, "old content");
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn a_retired_record_is_gone_and_its_inode_serves_the_next_one() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("u-1.json");
        write_record(&a, b"{\"pid\":1}").unwrap();
        retire(&a).unwrap();
        assert!(!a.exists());
        assert_eq!(count(t.path()), 1);
        let all = files(t.path());
        assert!(
            all.len() == 1 && all[0].0.starts_with(tmp_prefix()),
            "{all:?}"
        );
        let b = t.path().join("u-2.json");
        write_record(&b, b"{\"pid\":2}").unwrap();
        assert_eq!(count(t.path()), 0);
        assert_eq!(
            files(t.path()),
            [("u-2.json".to_string(), b"{\"pid\":2}".to_vec())]
        );
        // Missing: fine. A directory is never retired.
        retire(&a).unwrap();
        std::fs::create_dir(&a).unwrap();
        assert!(retire(&a).is_err() && a.is_dir());
    }

    #[test]
    fn no_directory_or_link_is_moved_aside() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d.json");
        std::fs::create_dir(&d).unwrap();
        assert!(write_atomic(&d, b"x").is_err());
        assert!(d.is_dir());
        let target = t.path().join("elsewhere");
        std::fs::write(&target, b"keep").unwrap();
        let l = t.path().join("l.json");
        std::os::unix::fs::symlink(&target, &l).unwrap();
        write_atomic(&l, b"new").unwrap();
        // The link itself was replaced, as a rename does; its target untouched.
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(!l.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&l).unwrap(), b"new");
    }

    #[test]
    fn a_volatile_write_never_takes_or_leaves_a_spare() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("prompt.md");
        write_atomic_volatile(&p, b"secret one").unwrap();
        write_atomic_volatile(&p, b"secret two").unwrap();
        assert_eq!(count(t.path()), 0);
        assert_eq!(
            files(t.path()),
            [("prompt.md".to_string(), b"secret two".to_vec())]
        );
    }
}
