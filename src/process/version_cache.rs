//! A CLI's version, remembered per executable identity, so a dispatch (or a
//! second one, or one after `vf doctor`) does not start the CLI just to read
//! `--version`. The runtime reads it here; `vf doctor` keeps its own facts
//! (help runs, verdicts) in the same cache dir through the store below.
//!
//! Lives in the user cache dir (`$XDG_CACHE_HOME/vf`, else `~/.cache/vf`; on
//! macOS `~/Library/Caches/vf`, on Windows `%LOCALAPPDATA%\vf\cache`), not
//! in a project's state: the answers are about this machine's binaries. Each
//! entry holds the identity of the file it describes (resolved and canonical
//! path, device, inode, size, mtime, ctime); any change to the binary makes the
//! entry stale. One file per engine (doctor facts) or per executable name
//! (versions), each replaced atomically, so concurrent writers never tear one
//! and the cache never grows with the number of binaries seen. A file that does
//! not parse, or is too big, is treated as absent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ground::version::Version;
use crate::process::cli_probe::{self, VersionError};

/// Bumped whenever the stored shape or its meaning changes.
const FORMAT: u32 = 2;

/// Executables remembered per file (per engine, or per executable name).
const KEPT: usize = 4;

/// Larger files are not read (help texts are a few KiB each).
const MAX_ENTRY: u64 = 8 << 20;

/// The `directories` crate's cache dir for vf (it honours `XDG_CACHE_HOME`).
/// Without `HOME`, `XDG_CACHE_HOME` or `LOCALAPPDATA` (what a Windows user
/// has in place of `HOME`) in the environment nothing is remembered: a
/// cleared environment (a sandbox, a test) gets no cache.
pub fn dir() -> Option<PathBuf> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|d| !d.is_empty());
    if !["HOME", "XDG_CACHE_HOME", "LOCALAPPDATA"]
        .into_iter()
        .any(set)
    {
        return None;
    }
    directories::ProjectDirs::from("", "", "vf").map(|p| p.cache_dir().to_path_buf())
}

/// Which file an answer is about: when any of this differs, the answer is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The path as resolved (what reports show).
    path: String,
    /// After symlinks: npm installs link the command to the package's script.
    real: String,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    /// vf's own version: parsing rules may change with it.
    vf: String,
}

impl Identity {
    /// The path as resolved, the entry's key among installs of one name.
    pub fn path(&self) -> &Path {
        Path::new(&self.path)
    }

    pub fn of(p: &Path) -> Option<Identity> {
        let real = std::fs::canonicalize(p).ok()?;
        let m = std::fs::metadata(&real).ok()?;
        let (dev, ino, ctime_ns) = crate::sys::file_stamp(&m);
        let mtime = m.modified().ok()?;
        let mtime_ns = match mtime.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        Some(Identity {
            path: p.to_str()?.to_string(),
            real: real.to_str()?.to_string(),
            dev,
            ino,
            size: m.len(),
            mtime_ns,
            ctime_ns,
            vf: env!("CARGO_PKG_VERSION").to_string(),
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Entry<T> {
    format: u32,
    exe: Identity,
    value: T,
}

/// The value stored in `file` for exactly `exe`, if any.
pub fn load<T: DeserializeOwned>(file: &Path, exe: &Identity) -> Option<T> {
    let entries: Vec<Entry<T>> = read_entries(file)?;
    let e = entries.into_iter().find(|e| e.exe == *exe)?;
    (e.format == FORMAT).then_some(e.value)
}

/// Anything but a regular file of at most `MAX_ENTRY` bytes is no cache (a
/// FIFO planted there is never waited on).
fn read_entries<T: DeserializeOwned>(file: &Path) -> Option<Vec<Entry<T>>> {
    let bytes = crate::ground::fsutil::read_regular_capped(file, MAX_ENTRY).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Stores `value` for `exe`, unless the file changed while it was being run
/// (then the answer may describe neither version).
pub fn store<T: Serialize>(file: &Path, exe: Identity, value: T) {
    if Identity::of(Path::new(&exe.path)).as_ref() != Some(&exe) {
        return;
    }
    // Other installs of the same name (a baseline and a current codex) keep
    // their entries: newest first, the oldest dropped past `KEPT`.
    let mut others: Vec<Entry<serde_json::Value>> = read_entries(file).unwrap_or_default();
    others.retain(|e| e.exe.path != exe.path && e.format == FORMAT);
    others.truncate(KEPT - 1);
    let entry = Entry {
        format: FORMAT,
        exe,
        value,
    };
    let Ok(first) = serde_json::to_value(&entry) else {
        return;
    };
    let mut all = vec![first];
    all.extend(
        others
            .into_iter()
            .filter_map(|e| serde_json::to_value(e).ok()),
    );
    if let Ok(bytes) = serde_json::to_vec(&all) {
        // A cache that cannot be written only costs a re-run next time.
        if let Err(e) = crate::ground::fsutil::write_atomic_volatile(file, &bytes) {
            tracing::debug!(file = %file.display(), %e, "cache not written");
        }
    }
}

/// `<cache>/<kind>/<name>.json`, with `name` reduced to a safe file name.
pub fn entry_file(kind: &str, name: &str) -> Option<PathBuf> {
    Some(entry_in(&dir()?, kind, name))
}

fn entry_in(base: &Path, kind: &str, name: &str) -> PathBuf {
    let safe: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    base.join(kind)
        .join(format!("{}.json", safe.trim_start_matches('.')))
}

/// Versions are kept per executable name (`codex`, `bun`), one identity each.
pub fn version_file(base: &Path, program: &Path) -> Option<PathBuf> {
    Some(entry_in(base, "versions", program.file_name()?.to_str()?))
}

/// `program --version`, remembered per executable: a dispatch after a doctor
/// (or a second dispatch) does not start the CLI just to read it.
pub fn read_version(
    program: &Path,
    timeout: Duration,
    refresh: bool,
) -> Result<Version, VersionError> {
    version_in(dir().as_deref(), program, timeout, refresh)
}

/// The cached version of `program` while the binary is unchanged; never
/// runs it (cheap enough for the runtime's thread: a stat and a small read).
pub fn cached_version(program: &Path) -> Option<Version> {
    let exe = Identity::of(program)?;
    let file = version_file(dir().as_deref()?, program)?;
    stored_version(&file, &exe)
}

/// The version stored in `file` for exactly `exe`.
fn stored_version(file: &Path, exe: &Identity) -> Option<Version> {
    load::<String>(file, exe).and_then(|s| Version::parse(&s))
}

fn version_in(
    base: Option<&Path>,
    program: &Path,
    timeout: Duration,
    refresh: bool,
) -> Result<Version, VersionError> {
    let exe = Identity::of(program);
    let file = base.and_then(|b| version_file(b, program));
    if !refresh
        && let (Some(exe), Some(file)) = (&exe, &file)
        && let Some(v) = stored_version(file, exe)
    {
        return Ok(v);
    }
    let v = cli_probe::read_version(program, timeout)?;
    if let (Some(exe), Some(file)) = (exe, file) {
        store(&file, exe, v.to_string());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;

    #[cfg(unix)]
    fn script(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("tool");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[cfg(unix)]
    #[test]
    fn version_is_remembered_until_the_file_changes() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("cache");
        let calls = t.path().join("calls");
        let d = Duration::from_secs(10);
        let body = format!("echo x >> {}; echo tool 1.2.3", calls.display());
        let bin = script(t.path(), &body);
        let read = |refresh| version_in(Some(&base), &bin, d, refresh).unwrap();
        let count = || std::fs::read_to_string(&calls).unwrap().lines().count();
        assert_eq!(read(false), Version::new(1, 2, 3));
        assert_eq!((read(false), count()), (Version::new(1, 2, 3), 1));
        // `--refresh` asks again.
        assert_eq!((read(true), count()), (Version::new(1, 2, 3), 2));
        // Replaced by an upgrade: read again.
        std::fs::remove_file(&bin).unwrap();
        script(
            t.path(),
            &format!("echo x >> {}; echo 'tool 1.2.40'", calls.display()),
        );
        assert_eq!((read(false), count()), (Version::new(1, 2, 40), 3));
        // Another install of the same name keeps its own entry.
        let other = t.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let second = script(
            &other,
            &format!("echo x >> {}; echo 'tool 7.0.0'", calls.display()),
        );
        let read2 = || version_in(Some(&base), &second, d, false).unwrap();
        assert_eq!((read2(), count()), (Version::new(7, 0, 0), 4));
        assert_eq!(
            (read(false), read2(), count()),
            (Version::new(1, 2, 40), Version::new(7, 0, 0), 4)
        );
        // A corrupt file is no entry.
        std::fs::write(base.join("versions/tool.json"), b"[{\"format\":2,").unwrap();
        assert_eq!((read(false), count()), (Version::new(1, 2, 40), 5));
        assert_eq!((read(false), count()), (Version::new(1, 2, 40), 5));
        // A FIFO in its place is no entry either, and is never waited on.
        let entry = base.join("versions/tool.json");
        std::fs::remove_file(&entry).unwrap();
        let c = std::ffi::CString::new(entry.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!((read(false), count()), (Version::new(1, 2, 40), 6));
        assert!(entry.is_file(), "the answer replaced the FIFO");
    }

    #[test]
    fn entry_names_stay_inside_the_cache() {
        let base = Path::new("/c");
        assert_eq!(
            entry_in(base, "versions", "../x y"),
            base.join("versions/_x_y.json")
        );
        assert_eq!(
            entry_in(base, "doctor", "codex"),
            base.join("doctor/codex.json")
        );
    }
}
