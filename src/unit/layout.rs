//! Where a unit's files live: one directory per unit, `<state>/units/<unit>/`,
//! holding its marker (`marker.json`), its lock (`lock`), its raw and step
//! logs (`attempt-N.<stream>.log`), its recorded answers (`responses.jsonl`)
//! and the temporaries of their atomic writes (`.tmp-*`). Each unit owns one
//! entry of `units/`, so no two valid names touch each other's files.
//!
//! An older vf kept the marker and the lock next to that directory, as
//! `units/<unit>.json` and `units/<unit>.lock`: unit `x.json`'s directory
//! landed on unit `x`'s marker, `a.lock`'s on `a`'s lock. Its state dirs keep
//! working: a marker is still read there ([`legacy_marker`]) and moved into
//! the unit's directory ([`adopt`]) before the unit is written again.
//!
//! The other files keyed by a unit's name cannot meet another unit's either:
//! `procs/<unit>-<attempt>.json` (the attempt is the digits after the last
//! `-`), `dispatch/<unit>.md`, `worktrees/<unit>`.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::ground::error::{Result, VfError};
use crate::sys::OpenExt;

pub const UNITS_DIR: &str = "units";
pub const MARKER_FILE: &str = "marker.json";
const LOCK_FILE: &str = "lock";

pub fn units_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(UNITS_DIR)
}

pub fn unit_dir(state_dir: &Path, unit: &str) -> PathBuf {
    units_dir(state_dir).join(unit)
}

pub fn marker_path(state_dir: &Path, unit: &str) -> PathBuf {
    unit_dir(state_dir, unit).join(MARKER_FILE)
}

pub fn lock_path(state_dir: &Path, unit: &str) -> PathBuf {
    unit_dir(state_dir, unit).join(LOCK_FILE)
}

/// Where an older vf kept the unit's marker.
pub fn legacy_marker(state_dir: &Path, unit: &str) -> PathBuf {
    units_dir(state_dir).join(format!("{unit}.json"))
}

fn legacy_lock(state_dir: &Path, unit: &str) -> PathBuf {
    units_dir(state_dir).join(format!("{unit}.lock"))
}

/// What is at a path, the path itself (a link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Missing,
    Dir,
    File,
    Link,
    /// A FIFO, a device, or a path vf cannot look at.
    Other,
}

pub fn kind(path: &Path) -> Kind {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Kind::Link,
        Ok(m) if m.is_dir() => Kind::Dir,
        Ok(m) if m.is_file() => Kind::File,
        Err(e) if e.kind() == ErrorKind::NotFound => Kind::Missing,
        _ => Kind::Other,
    }
}

fn linked(path: &Path) -> VfError {
    VfError::state(format!(
        "{} is a symbolic link; vf writes nothing outside its state dir: move it aside",
        path.display()
    ))
}

/// Makes `units/<unit>/` (never through a link). A file an older vf's unit
/// left there (unit `x`'s marker where unit `x.json`'s directory goes) is
/// moved out of the way first.
pub fn make_unit_dir(state_dir: &Path, unit: &str) -> Result<PathBuf> {
    // Callers check it first; a path component is never anything else.
    crate::ground::names::check("unit name", unit)?;
    let units = units_dir(state_dir);
    let cannot = |p: &Path, e: &dyn std::fmt::Display| {
        VfError::state(format!("cannot create {}: {e}", p.display()))
    };
    // A cloned repository can bring a `units` link pointing anywhere.
    match kind(&units) {
        Kind::Link => return Err(linked(&units)),
        Kind::Dir => {}
        _ => std::fs::create_dir_all(&units).map_err(|e| cannot(&units, &e))?,
    }
    let dir = unit_dir(state_dir, unit);
    let mut adopted = false;
    loop {
        match kind(&dir) {
            Kind::Dir => return Ok(dir),
            Kind::Missing => match std::fs::create_dir(&dir) {
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                made => return made.map(|()| dir.clone()).map_err(|e| cannot(&dir, &e)),
            },
            Kind::Link => return Err(linked(&dir)),
            Kind::File if !adopted && let Some(owner) = legacy_owner(unit) => {
                adopt(state_dir, owner)?;
                adopted = true;
            }
            _ => {
                return Err(VfError::state(format!(
                    "{} is not a directory; vf keeps unit {unit}'s files there: move it aside",
                    dir.display()
                )));
            }
        }
    }
}

/// The unit whose older marker or lock may stand where `unit`'s directory
/// goes: `x` for `x.json` or `x.lock` (in any case: a file system that does
/// not tell cases apart finds `x.json` under `x.JSON`).
fn legacy_owner(unit: &str) -> Option<&str> {
    let cut = unit.len().checked_sub(5)?;
    let (owner, suffix) = (unit.get(..cut)?, unit.get(cut..)?);
    let legacy = suffix.eq_ignore_ascii_case(".json") || suffix.eq_ignore_ascii_case(".lock");
    (legacy && crate::ground::names::check("unit name", owner).is_ok()).then_some(owner)
}

/// Another process holds a unit's lock.
#[derive(Debug)]
pub struct Held {
    unit: String,
    path: PathBuf,
}

impl Held {
    /// The refusal (exit 2), naming the holder's pid.
    pub fn refusal(&self) -> VfError {
        VfError::usage(format!(
            "unit {} is running under vf pid {}; not touching it",
            self.unit,
            holder_pid(&self.path)
        ))
    }
}

/// Locks the unit's lock file (see [`crate::unit::lock`]): its directory
/// made first, the file opened (made when the unit is new), locked, the
/// holder's pid written in; then an older vf's marker and lock file of the
/// unit are moved into its directory ([`adopt`]). `Err(Held)` while another
/// process holds it.
pub fn lock_unit(state_dir: &Path, unit: &str) -> Result<std::result::Result<File, Held>> {
    // A cloned repository can bring a `units` link pointing anywhere:
    // the lock file would be the first write outside the state dir.
    let path = make_unit_dir(state_dir, unit)?.join(LOCK_FILE);
    let cannot = |e: &dyn std::fmt::Display| {
        VfError::state(format!("cannot lock unit {unit} ({}): {e}", path.display()))
    };
    let mut file = open_lock_file(&path).map_err(|e| cannot(&e))?;
    match crate::sys::try_lock(&file) {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let unit = unit.to_string();
            return Ok(Err(Held { unit, path }));
        }
        Err(TryLockError::Error(e)) => return Err(cannot(&e)),
    }
    // One fixed-width write over the old content, so a contender reads a
    // whole pid, never a mix of two.
    let pid = format!("{:<15}\n", std::process::id());
    file.rewind()
        .and_then(|()| file.write_all(pid.as_bytes()))
        .and_then(|()| file.set_len(pid.len() as u64))
        .map_err(|e| cannot(&e))?;
    adopt(state_dir, unit)?;
    Ok(Ok(file))
}

/// Opens the lock file, making it when the unit is new. No truncation before
/// the lock (it would wipe the holder's pid), and never through a symlink
/// planted in the state dir.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .owner_only()
        .no_follow()
        .open_checked(path)
}

/// Moves an older vf's files of `unit` into the new layout: its lock file
/// goes (refused while an older vf holds it: that vf runs the unit), its
/// marker moves into the unit's directory. Safe without the unit's lock: the
/// marker is linked to its new name, never renamed over a newer marker there.
pub fn adopt(state_dir: &Path, unit: &str) -> Result<()> {
    let old_lock = legacy_lock(state_dir, unit);
    if kind(&old_lock) == Kind::File {
        drop_legacy_lock(unit, &old_lock)?;
    }
    let old = legacy_marker(state_dir, unit);
    if kind(&old) != Kind::File {
        return Ok(());
    }
    let dir = make_unit_dir(state_dir, unit)?;
    let new = dir.join(MARKER_FILE);
    let cannot = |e: &dyn std::fmt::Display| {
        VfError::state(format!(
            "cannot move marker {} to {}: {e}",
            old.display(),
            new.display()
        ))
    };
    match std::fs::hard_link(&old, &new) {
        Ok(()) => {}
        // A marker written since (by a write that read the old one) is newer.
        Err(e) if e.kind() == ErrorKind::AlreadyExists && kind(&new) == Kind::File => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Err(cannot(&e)),
        // A file system without hard links: a rename, when nothing is there.
        Err(_) if kind(&new) == Kind::Missing => {
            std::fs::rename(&old, &new).map_err(|e| cannot(&e))?;
        }
        Err(e) => return Err(cannot(&e)),
    }
    match std::fs::remove_file(&old) {
        Err(e) if e.kind() != ErrorKind::NotFound => return Err(cannot(&e)),
        _ => {}
    }
    crate::sys::sync_dir(&dir)
        .and_then(|()| crate::sys::sync_dir(&units_dir(state_dir)))
        .map_err(|e| cannot(&e))
}

/// Removes an older vf's lock file of `unit`, unless that vf holds it.
fn drop_legacy_lock(unit: &str, path: &Path) -> Result<()> {
    let cannot = |e: &dyn std::fmt::Display| {
        VfError::state(format!("cannot lock unit {unit} ({}): {e}", path.display()))
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .no_follow_no_block()
        .open_checked(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(cannot(&e)),
    };
    match crate::sys::try_lock(&file) {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(VfError::usage(format!(
                "unit {unit} is running under vf pid {} (an older vf); not touching it",
                holder_pid(path)
            )));
        }
        Err(TryLockError::Error(e)) => return Err(cannot(&e)),
    }
    // Closed first: Windows keeps the name of an open file until it closes.
    drop(file);
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(cannot(&e)),
        _ => Ok(()),
    }
}

/// The pid a lock's holder wrote; it writes it just after locking, so a
/// contender arriving in between waits a moment for it.
pub fn holder_pid(path: &Path) -> String {
    for _ in 0..50 {
        let mut s = String::new();
        if let Ok(f) = crate::ground::fsutil::open_state_file(path) {
            let _ = f.take(32).read_to_string(&mut s);
        }
        if let Ok(pid) = s.trim().parse::<u32>() {
            return pid.to_string();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    "?".into()
}

/// Where the children index lives: `<state>/children/<parent>/<child>`, an
/// empty file per child, written with the child's marker.
pub(crate) const CHILDREN_DIR: &str = "children";
/// The most units `lineage::Tree::below` reads below one unit.
pub const MAX_INDEXED: usize = 10_000;

/// Notes `child` under `parent` in the children index, once (the marker
/// of a child calls it on each save; a noted child costs one `lstat`).
/// Never through a link: the index's directories must be directories, the
/// file is opened without following one. Names are checked first.
pub(crate) fn note_child(state_dir: &Path, parent: &str, child: &str) -> std::io::Result<()> {
    let bad = |e: VfError| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string());
    crate::ground::names::check("unit name", parent).map_err(bad)?;
    crate::ground::names::check("unit name", child).map_err(bad)?;
    let root = state_dir.join(CHILDREN_DIR);
    let dir = root.join(parent);
    let file = dir.join(child);
    if std::fs::symlink_metadata(&file).is_ok() {
        return Ok(());
    }
    for d in [&root, &dir] {
        match std::fs::create_dir(d) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        if !std::fs::symlink_metadata(d)?.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                d.display()
            )));
        }
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).no_follow_no_block();
    o.open_checked(&file).map(drop)
}

/// The names listed under `parent` in the children index (valid unit
/// names only, at most [`MAX_INDEXED`]); none when it has no entry.
pub(crate) fn indexed_children(state_dir: &Path, parent: &str) -> Vec<String> {
    if crate::ground::names::check("unit name", parent).is_err() {
        return Vec::new();
    }
    let dir = state_dir.join(CHILDREN_DIR).join(parent);
    if std::fs::symlink_metadata(&dir).map_or(true, |m| !m.is_dir()) {
        return Vec::new();
    }
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| crate::ground::names::check("unit name", n).is_ok())
        .take(MAX_INDEXED)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An older vf's state dir: `x`'s marker and `a`'s lock next to their
    /// directories.
    fn legacy_state() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let units = units_dir(t.path());
        std::fs::create_dir_all(units.join("x")).unwrap();
        std::fs::write(units.join("x.json"), b"x's marker").unwrap();
        std::fs::write(units.join("x/attempt-1.stdout.log"), b"x's log").unwrap();
        std::fs::write(units.join("a.lock"), b"123\n").unwrap();
        t
    }

    #[test]
    fn the_owner_of_a_legacy_file_is_the_name_without_its_suffix() {
        for (unit, owner) in [
            ("x.json", Some("x")),
            ("a.lock", Some("a")),
            ("X.JSON", Some("X")),
            ("a.b.lock", Some("a.b")),
            ("x.jsonl", None),
            ("json", None),
            ("a.txt", None),
            // No unit could have had these files.
            ("_.json", Some("_")),
            ("-.json", None),
        ] {
            assert_eq!(legacy_owner(unit), owner, "{unit}");
        }
    }

    #[test]
    fn an_older_units_files_move_out_of_a_new_units_way() {
        let t = legacy_state();
        let units = units_dir(t.path());
        assert_eq!(
            make_unit_dir(t.path(), "x.json").unwrap(),
            units.join("x.json")
        );
        assert_eq!(kind(&units.join("x.json")), Kind::Dir);
        // x keeps its marker (moved) and its logs (where they were).
        assert_eq!(
            std::fs::read(marker_path(t.path(), "x")).unwrap(),
            b"x's marker"
        );
        assert_eq!(
            std::fs::read(units.join("x/attempt-1.stdout.log")).unwrap(),
            b"x's log"
        );
        assert_eq!(
            make_unit_dir(t.path(), "a.lock").unwrap(),
            units.join("a.lock")
        );
        assert_eq!(kind(&units.join("a.lock")), Kind::Dir);
        // Made once: a second call finds the directory.
        assert!(make_unit_dir(t.path(), "a.lock").is_ok());
        let mut left: Vec<String> = std::fs::read_dir(&units)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["a.lock", "x", "x.json"]);
    }

    #[test]
    fn a_lock_an_older_vf_holds_is_left_alone() {
        let t = legacy_state();
        let old_lock = units_dir(t.path()).join("a.lock");
        let held = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&old_lock)
            .unwrap();
        crate::sys::try_lock(&held).unwrap();
        let err = adopt(t.path(), "a").unwrap_err();
        assert_eq!(err.exit_code(), crate::ground::error::exit::USAGE, "{err}");
        assert!(err.to_string().contains("vf pid 123"), "{err}");
        assert_eq!(kind(&old_lock), Kind::File);
        drop(held);
        adopt(t.path(), "a").unwrap();
        assert_eq!(kind(&old_lock), Kind::Missing);
    }

    #[test]
    fn a_newer_marker_is_kept_over_the_older_one() {
        let t = legacy_state();
        std::fs::write(marker_path(t.path(), "x"), b"newer").unwrap();
        adopt(t.path(), "x").unwrap();
        assert_eq!(std::fs::read(marker_path(t.path(), "x")).unwrap(), b"newer");
        assert_eq!(kind(&legacy_marker(t.path(), "x")), Kind::Missing);
        // Nothing to adopt: nothing happens.
        adopt(t.path(), "x").unwrap();
        adopt(t.path(), "never").unwrap();
        assert_eq!(kind(&unit_dir(t.path(), "never")), Kind::Missing);
    }

    #[test]
    fn what_is_no_unit_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        assert!(make_unit_dir(t.path(), "../x").is_err());
        std::fs::create_dir_all(units_dir(t.path())).unwrap();
        // A file no older vf would have made there.
        std::fs::write(unit_dir(t.path(), "y.txt"), b"").unwrap();
        let err = make_unit_dir(t.path(), "y.txt").unwrap_err();
        assert_eq!(err.exit_code(), crate::ground::error::exit::STATE, "{err}");
        assert!(err.to_string().contains("not a directory"), "{err}");
    }
}
