//! Spare inodes for atomic replaces. On ext4 (above all without a journal)
//! a freed inode makes every later file creation in its block group slower
//! for minutes, and on a file system mounted with `discard` every freed
//! block is a device request; so a run that rewrites a marker three times
//! per unit, over a thousand units, pays more per unit the longer it runs.
//! Instead of freeing the replaced inode, an atomic replace swaps the new
//! content in with `RENAME_EXCHANGE` and keeps the old inode as a hidden
//! temporary for the next write in that directory, which overwrites it in
//! place and cuts it to the new length (its data block is reused, not freed
//! and allocated again). Until then it keeps the old content, as an unlinked
//! inode would: a reader that opened the old file just before the swap still
//! reads it whole. Released process records become spares the same way.
//!
//! A spare in use is a `.tmp-<pid>-<start time>-…` file like any temporary.
//! When vf exits, its spares are zeroed and parked in the directory's slots,
//! `.spare-0` to `.spare-7` ([`MAX_PARKED`]; the rest are removed), for the
//! next vf to claim by renaming one to its own temporary name: found by name,
//! so no vf reads a directory that holds every unit's files to find them. A
//! crash leaves its spares to [`super::clean_stale_tmps`] (their writer is
//! then provably dead). A parked spare is used only if it is still a plain
//! file of vf's own user with one link: a planted link, hard link or FIFO is
//! removed, never written through. Spares can also be made ahead ([`stock`],
//! while an engine runs) and put in place of a new file ([`claim_as`]).

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// At most this many spares are kept per directory (a few per running unit).
const MAX_PER_DIR: usize = 64;
/// At most this many spares are left parked in a directory when vf exits.
pub(super) const MAX_PARKED: usize = 8;
/// The name of a parked spare: `.spare-<slot>`, slot 0 to [`MAX_PARKED`] - 1
/// (older vfs parked them as `.spare-<pid>-<start time>-<n>`; a directory
/// read finds those). Fixed names let a vf find parked spares without
/// reading a directory that may hold every unit's files.
pub(super) const PARKED_PREFIX: &str = ".spare-";
/// A spare larger than this is not reused (vf's own files are far smaller).
const MAX_SPARE_BYTES: u64 = 1 << 20;

/// One directory's spares: this process's own, and parked ones seen there.
#[derive(Default)]
struct Pool {
    own: Vec<PathBuf>,
    /// Parked spares seen there and not claimed by this process.
    parked: Vec<PathBuf>,
    /// Every parking slot was found empty once: not tried again.
    slots_empty: bool,
}

static SPARES: Mutex<Option<HashMap<PathBuf, Pool>>> = Mutex::new(None);
/// Set once the process parks its spares: no more are stocked after that.
static PARKING: AtomicBool = AtomicBool::new(false);

fn with_pool<R>(dir: &Path, f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut pool = SPARES.lock().unwrap_or_else(|p| p.into_inner());
    let map = pool.get_or_insert_with(|| {
        // SAFETY: registers a plain `extern "C"` function, once.
        unsafe { libc::atexit(park_all_at_exit) };
        HashMap::new()
    });
    f(map.entry(dir.to_path_buf()).or_default())
}

/// Parked spares found in `dir` (by the one directory read per process).
pub(super) fn found_parked(dir: &Path, names: Vec<PathBuf>) {
    with_pool(dir, |p| p.parked.extend(names));
}

/// A spare of `dir`, opened for writing at offset 0 (the caller cuts it to
/// the new length); `None` when there is none.
pub(super) fn take(dir: &Path, prefix: &str) -> Option<(PathBuf, File)> {
    enum Next {
        Own(PathBuf),
        Parked(PathBuf),
        Slots,
    }
    loop {
        let next = with_pool(dir, |p| {
            if let Some(own) = p.own.pop() {
                Some(Next::Own(own))
            } else if let Some(parked) = p.parked.pop() {
                Some(Next::Parked(parked))
            } else {
                (!p.slots_empty).then_some(Next::Slots)
            }
        })?;
        match next {
            // Gone (removed as stale by another vf) or replaced: the next one.
            Next::Own(own) => {
                if let Ok(f) = open_reusable(&own) {
                    return Some((own, f));
                }
            }
            Next::Parked(parked) => {
                if let Some(hit) = claim(&parked, dir, prefix) {
                    return Some(hit);
                }
            }
            Next::Slots => return claim_slot(dir, prefix),
        }
    }
}

/// A parked spare from the slots of `dir`; when none is there, the slots are
/// not tried again by this process.
fn claim_slot(dir: &Path, prefix: &str) -> Option<(PathBuf, File)> {
    let hit = (0..MAX_PARKED).find_map(|slot| claim(&slot_path(dir, slot), dir, prefix));
    if hit.is_none() {
        with_pool(dir, |p| p.slots_empty = true);
    }
    hit
}

/// Claims the parked spare `parked` by renaming it to a name of ours (of two
/// vfs, one wins) and opens it. `None`: gone, taken by another, or not a
/// plain file of ours (a planted link, hard link or FIFO), which is removed,
/// never written through.
fn claim(parked: &Path, dir: &Path, prefix: &str) -> Option<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mine = dir.join(format!("{prefix}claim{n}"));
    renameat2(parked, &mine, libc::RENAME_NOREPLACE).ok()?;
    match open_reusable(&mine) {
        Ok(f) => Some((mine, f)),
        Err(_) => {
            let _ = std::fs::remove_file(&mine);
            None
        }
    }
}

/// Whether `name` is one of the parking slots (found by name, not listed).
pub(super) fn is_slot(name: &str) -> bool {
    name.strip_prefix(PARKED_PREFIX)
        .is_some_and(|n| (0..MAX_PARKED).any(|slot| n == slot.to_string()))
}

fn slot_path(dir: &Path, slot: usize) -> PathBuf {
    dir.join(format!("{PARKED_PREFIX}{slot}"))
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
    let dir = super::parent_dir(path);
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

/// Creates empty spares in `dir` until this process has `want` there (its
/// own and the parked ones it saw): the inodes a later write or
/// [`claim_as`] would otherwise create on the spot. Stops once the process
/// parks its spares.
pub(super) fn stock(dir: &Path, want: usize, prefix: &str) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Spares still parked in the slots (another vf's, or left unclaimed).
    let in_slots = (0..MAX_PARKED)
        .filter(|&k| std::fs::symlink_metadata(slot_path(dir, k)).is_ok_and(|m| m.is_file()))
        .count();
    while !PARKING.load(Ordering::Relaxed)
        && in_slots + with_pool(dir, |p| p.own.len() + p.parked.len()) < want
    {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{prefix}stock{n}"));
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path);
        if made.is_err() {
            return;
        }
        keep(dir, path.clone());
        if PARKING.load(Ordering::Relaxed) {
            // Parking began meanwhile and may have missed it.
            let _ = std::fs::remove_file(&path);
            return;
        }
    }
}

/// Puts a spare of `dir` at `path`, which must not exist (renamed there,
/// never over a file). It holds only zeros (parked spares are zeroed, stocked
/// ones empty) and keeps its data block: the caller overwrites it. `false`:
/// no spare, or `path` exists by now; the caller creates or opens it as usual.
pub(super) fn claim_as(dir: &Path, path: &Path, prefix: &str) -> bool {
    let Some((spare, file)) = take(dir, prefix) else {
        return false;
    };
    drop(file);
    if renameat2(&spare, path, libc::RENAME_NOREPLACE).is_ok() {
        return true;
    }
    keep(dir, spare);
    false
}

fn keep(dir: &Path, spare: PathBuf) {
    let kept = with_pool(dir, |p| {
        let room = p.own.len() < MAX_PER_DIR;
        if room {
            p.own.push(spare.clone());
        }
        room
    });
    if !kept {
        let _ = std::fs::remove_file(&spare);
    }
}

/// Parks this process's spares for the next vf (or removes them, past
/// [`MAX_PARKED`] in a directory). Runs at exit, or earlier from
/// [`super::park_spares`]; a killed vf leaves them to the next writer's
/// clean-up of a dead writer's temporaries.
pub(super) fn park_all() {
    PARKING.store(true, Ordering::Relaxed);
    // A stocking thread holds the lock for a moment at a time; an exit
    // handler run while this thread holds it must not wait forever.
    let mut pool = None;
    for _ in 0..100 {
        if let Ok(p) = SPARES.try_lock() {
            pool = Some(p);
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    let Some(mut pool) = pool else {
        return;
    };
    let all = pool.as_mut().map(std::mem::take).unwrap_or_default();
    drop(pool);
    for (dir, pool) in all {
        park_pool(&dir, pool);
    }
}

fn park_pool(dir: &Path, pool: Pool) {
    let mut slot = 0;
    for path in pool.own {
        if !park(&path, dir, &mut slot) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Zeroes `path` in place (what it held does not outlive this process) and
/// renames it to the first free slot from `slot` on. `false`: not parked
/// (every slot taken, or `path` is not a usable spare).
fn park(path: &Path, dir: &Path, slot: &mut usize) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = open_reusable(path) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len()) as usize;
    if f.write_all_at(&vec![0u8; len], 0).is_err() {
        return false;
    }
    while *slot < MAX_PARKED {
        let to = slot_path(dir, *slot);
        *slot += 1;
        match renameat2(path, &to, libc::RENAME_NOREPLACE) {
            Ok(()) => return true,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(_) => return false,
        }
    }
    false
}

extern "C" fn park_all_at_exit() {
    park_all();
}

/// Opens an existing file for writing at offset 0, without truncating it, if
/// it is a plain file of this user with one link and of a sane size; never
/// through a symbolic link, never blocking (a FIFO is refused).
fn open_reusable(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_file() || m.nlink() != 1 || m.uid() != me || m.len() > MAX_SPARE_BYTES {
        return Err(std::io::Error::other("not a usable spare"));
    }
    Ok(f)
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
        .map_or(0, |v| v.own.len())
}

#[cfg(test)]
mod tests {
    use super::super::{
        TMP_PREFIX, retire, scan_tmps, tmp_prefix, write_atomic, write_atomic_volatile,
        write_record,
    };
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Every parked spare in `dir`: the slots and older vfs' names.
    fn parked_in(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(PARKED_PREFIX))
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    }

    /// [`park_all`] for one directory (tests run side by side in one process).
    fn park_dir(dir: &Path) {
        let pool = with_pool(dir, std::mem::take);
        park_pool(dir, pool);
    }

    /// What a later vf sees: the parked spares of `dir`, read off the disk.
    fn as_a_new_process(dir: &Path) {
        let names = scan_tmps(dir).unwrap().1;
        with_pool(dir, |p| *p = Pool::default());
        found_parked(dir, names);
    }

    #[test]
    fn spares_are_parked_zeroed_at_exit_and_claimed_by_the_next_vf() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("m.json");
        write_atomic(&p, b"first, to be replaced").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(count(t.path()), 1);
        park_dir(t.path());
        let parked = parked_in(t.path());
        assert_eq!(parked.len(), 1, "{:?}", files(t.path()));
        // What it held does not outlive the process that replaced it.
        assert_eq!(std::fs::read(&parked[0]).unwrap(), vec![0u8; 21]);
        assert!(
            files(t.path())
                .iter()
                .all(|(n, _)| !n.starts_with(TMP_PREFIX))
        );
        let ino = std::fs::metadata(&parked[0]).unwrap().ino();

        as_a_new_process(t.path());
        let n = t.path().join("n.json");
        write_atomic(&n, b"new").unwrap();
        // The parked inode came back, cut to the new content's length.
        assert_eq!(std::fs::metadata(&n).unwrap().ino(), ino);
        assert_eq!(
            files(t.path()),
            [
                ("m.json".to_string(), b"second".to_vec()),
                ("n.json".to_string(), b"new".to_vec())
            ]
        );
    }

    #[test]
    fn stocked_spares_are_made_ahead_and_used_by_the_next_new_files() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        super::super::stock_spares(dir, 2);
        assert_eq!(count(dir), 2);
        let stocked: Vec<u64> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.metadata().unwrap().ino())
            .collect();
        assert_eq!(stocked.len(), 2, "{:?}", files(dir));
        // A second call with enough in stock makes none.
        super::super::stock_spares(dir, 2);
        assert_eq!(count(dir), 2);
        // An atomic write and a new file each take one: no inode is made.
        let m = dir.join("u.json");
        write_atomic(&m, b"marker").unwrap();
        let lock = dir.join("u.lock");
        assert!(super::super::create_from_spare(&lock));
        let used = [&m, &lock].map(|p| std::fs::metadata(p).unwrap().ino());
        assert!(
            used.iter().all(|i| stocked.contains(i)),
            "{used:?} {stocked:?}"
        );
        assert_ne!(used[0], used[1]);
        assert_eq!(std::fs::read(&lock).unwrap(), b"");
        assert_eq!(count(dir), 0);
        // None left: the caller creates the file itself.
        assert!(!super::super::create_from_spare(&dir.join("v.lock")));
        assert_eq!(
            files(dir),
            [
                ("u.json".to_string(), b"marker".to_vec()),
                ("u.lock".to_string(), Vec::new())
            ]
        );
    }

    #[test]
    fn a_spare_never_lands_on_an_existing_file() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let taken = dir.join("u.lock");
        std::fs::write(&taken, b"123").unwrap();
        super::super::stock_spares(dir, 1);
        assert!(!super::super::create_from_spare(&taken));
        assert_eq!(std::fs::read(&taken).unwrap(), b"123");
        // The spare went back to the pool for the next write.
        assert_eq!(count(dir), 1);
    }

    #[test]
    fn parked_spares_are_found_by_their_slot_names_without_a_directory_read() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let p = dir.join("m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        let r = dir.join("r.json");
        write_atomic_volatile(&r, b"{}").unwrap();
        retire(&r).unwrap();
        assert_eq!(count(dir), 2);
        park_dir(dir);
        let slots: Vec<String> = parked_in(dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(slots, [".spare-0", ".spare-1"]);
        let inos: Vec<u64> = parked_in(dir)
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().ino())
            .collect();
        // A new process that has read nothing: the slots are tried by name.
        with_pool(dir, |p| *p = Pool::default());
        let lock = dir.join("u.lock");
        assert!(super::super::create_from_spare(&lock));
        let n = dir.join("n.json");
        write_atomic(&n, b"new").unwrap();
        let used = [&lock, &n].map(|p| std::fs::metadata(p).unwrap().ino());
        assert!(used.iter().all(|i| inos.contains(i)), "{used:?} {inos:?}");
        assert!(parked_in(dir).is_empty());
        // Both slots used: a third new file is created as usual.
        assert!(!super::super::create_from_spare(&dir.join("v.lock")));
    }

    /// `<root>/units` holding, under `names`, a hard link and a symbolic link
    /// to `<root>/outside.txt` ("keep me") and a FIFO; returns both paths.
    fn plant(root: &Path, names: [&str; 3]) -> (PathBuf, PathBuf) {
        let dir = root.join("units");
        std::fs::create_dir(&dir).unwrap();
        let outside = root.join("outside.txt");
        std::fs::write(&outside, b"keep me").unwrap();
        std::fs::hard_link(&outside, dir.join(names[0])).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(names[1])).unwrap();
        let fifo = std::ffi::CString::new(dir.join(names[2]).as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        (dir, outside)
    }

    #[test]
    fn a_planted_slot_is_never_written_through() {
        let t = tempfile::tempdir().unwrap();
        let (dir, outside) = plant(t.path(), [".spare-0", ".spare-1", ".spare-2"]);
        with_pool(&dir, |p| *p = Pool::default());
        let lock = dir.join("u.lock");
        assert!(!super::super::create_from_spare(&lock));
        write_atomic(&dir.join("u.json"), b"marker").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
        assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
        assert!(!lock.exists());
        assert_eq!(std::fs::read(dir.join("u.json")).unwrap(), b"marker");
        assert!(parked_in(&dir).is_empty(), "{:?}", files(&dir));
    }

    #[test]
    fn no_more_than_max_parked_are_left_in_a_directory() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..(MAX_PARKED + 3) {
            let r = t.path().join(format!("u-{i}.json"));
            write_record(&r, b"{}").unwrap();
        }
        for i in 0..(MAX_PARKED + 3) {
            retire(&t.path().join(format!("u-{i}.json"))).unwrap();
        }
        // Retiring takes no spare: each record became one.
        assert_eq!(count(t.path()), MAX_PARKED + 3);
        park_dir(t.path());
        assert_eq!(parked_in(t.path()).len(), MAX_PARKED);
        assert_eq!(files(t.path()).len(), MAX_PARKED);
    }

    #[test]
    fn a_planted_parked_spare_is_never_written_through() {
        let t = tempfile::tempdir().unwrap();
        let names = [".spare-1-1-0", ".spare-1-1-1", ".spare-1-1-2"];
        let (dir, outside) = plant(t.path(), names);
        let planted = vec![
            dir.join(".spare-1-1-0"),
            dir.join(".spare-1-1-1"),
            dir.join(".spare-1-1-2"),
        ];
        // Handed over as if a scan had listed all three: none may be used.
        let target = dir.join("u.json");
        write_atomic(&target, b"x").unwrap();
        with_pool(&dir, |p| *p = Pool::default());
        found_parked(&dir, planted);
        write_atomic(&target, b"marker").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
        assert_eq!(std::fs::read(&target).unwrap(), b"marker");
        assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
        // Only plain files are ever listed as parked.
        std::fs::write(dir.join(".spare-1-1-3"), b"").unwrap();
        let listed = parked_in(&dir);
        assert!(
            listed
                .iter()
                .all(|p| p.symlink_metadata().unwrap().file_type().is_file()),
            "{listed:?}"
        );
    }

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
