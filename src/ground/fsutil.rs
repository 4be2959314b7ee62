//! Durable file writes, and the clean-up of what a crash left of them;
//! reads of state files that never block; writes to a path a user named
//! ([`output`]).

pub mod user_file;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::ground::procinfo::{Liveness, ProcIdentity};

/// Temporaries older than this are stale whoever made them: a write takes
/// milliseconds, so only a crashed (or frozen) writer leaves one this long.
pub const STALE_TMP_AGE: Duration = Duration::from_secs(60);
const TMP_PREFIX: &str = ".tmp-";

/// Writes `bytes` to `path` atomically and durably: a temp file in the same
/// directory, fsync, rename over the target, fsync of the directory. A crash
/// at any instant leaves either the old or the new content, never a torn file,
/// and a reader that opened the old file keeps reading the old file whole.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replace(path, bytes, true)
}

/// Atomic but not durable: readers see the old or the new content, never a
/// torn file, as long as the machine stays up. For state that means nothing
/// after a reboot (process records are tied to the boot id, the prompt file
/// to one run), so the fsyncs would only slow every spawn down.
pub fn write_atomic_volatile(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replace(path, bytes, false)
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn write_replace(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = parent_dir(path);
    std::fs::create_dir_all(dir)?;
    clean_stale_tmps_once(dir);
    let (mut file, tmp) = tempfile::Builder::new()
        .prefix(tmp_prefix())
        .tempfile_in(dir)?
        .keep()
        .map_err(|e| e.error)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| if durable { file.sync_all() } else { Ok(()) });
    drop(file);
    written
        .and_then(|()| crate::sys::replace_file(&tmp, path, durable))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
    if durable {
        crate::sys::sync_dir(dir)?;
    }
    Ok(())
}

/// `.tmp-<pid>-<start time>-`: the name says which process writes it, so the
/// next writer can tell a crashed writer's leftover from a write in progress.
fn tmp_prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let me = ProcIdentity::current();
        format!(
            "{TMP_PREFIX}{}-{}-",
            me.pid,
            me.start_time.unwrap_or_default()
        )
    })
}

/// Removes stale temporaries from `dir` on this process's first write there
/// (one directory read per directory per process keeps the start path cheap).
fn clean_stale_tmps_once(dir: &Path) {
    if let Some(scan) = defer_stale_scan(dir) {
        scan.run();
    }
}

/// Takes `dir`'s once-per-process read for stale temporaries off the
/// calling path: writes there no longer make it, and the
/// returned job does (on a blocking thread, while an engine runs). For the
/// markers directory, which holds every unit's files: reading it is
/// O(units). `None` when the read was made or handed out already.
pub fn defer_stale_scan(dir: &Path) -> Option<StaleScan> {
    static DONE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let mut done = DONE.lock().unwrap_or_else(|p| p.into_inner());
    done.get_or_insert_with(HashSet::new)
        .insert(dir.to_path_buf())
        .then(|| StaleScan(dir.to_path_buf()))
}

/// A directory's read for stale temporaries ([`defer_stale_scan`]).
#[must_use]
pub struct StaleScan(PathBuf);

impl StaleScan {
    pub fn run(self) {
        let _ = clean_stale_tmps(&self.0);
    }
}

/// Removes every `.tmp-*` file in `dir` whose writer is provably dead or that
/// is older than [`STALE_TMP_AGE`]. Returns how many it removed.
pub fn clean_stale_tmps(dir: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TMP_PREFIX)) else {
            continue;
        };
        // Only plain files: never a directory, never through a link.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let writer_dead = writer_of(rest).is_some_and(|w| w.liveness() == Liveness::Dead);
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_TMP_AGE);
        if (writer_dead || old) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// The writer named by a temporary's `<pid>-<start time>-<random>` name.
fn writer_of(rest: &str) -> Option<ProcIdentity> {
    let mut parts = rest.splitn(3, '-');
    let pid: u32 = parts.next()?.parse().ok()?;
    let start: u64 = parts.next()?.parse().ok()?;
    parts.next()?;
    let me = ProcIdentity::current();
    Some(ProcIdentity {
        pid,
        start_time: Some(start),
        ..me
    })
}

/// Opens a file vf reads from a state dir: never through a symbolic link at
/// its last component (`ELOOP` then), never blocking on a FIFO, and only a
/// regular file: a FIFO or a device is refused ([`is_not_regular`]) before a
/// byte is read. State read from a cloned repository never reaches outside
/// and never stops vf.
pub fn open_state_file(path: &Path) -> std::io::Result<std::fs::File> {
    use crate::sys::OpenExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .no_follow_no_block()
        .open_checked(path)?;
    let kind = crate::sys::file_kind(&file.metadata()?.file_type());
    if kind != crate::sys::FileKind::Regular {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            NotRegular(kind),
        ));
    }
    Ok(file)
}

/// The whole of a file in a state dir, opened as [`open_state_file`] does.
pub fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_state_file(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The error [`open_state_file`] gives for what is not a regular file.
#[derive(Debug)]
struct NotRegular(crate::sys::FileKind);

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "it is {}, not a regular file", self.0.name())
    }
}

impl std::error::Error for NotRegular {}

/// Whether `e` is [`open_state_file`]'s refusal of a FIFO, a device or a
/// directory.
pub fn is_not_regular(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-30T01:33:10.123Z`.
pub fn now_rfc3339() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d.as_secs(), d.subsec_millis())
}

/// Epoch seconds (+ milliseconds) as an RFC 3339 UTC timestamp.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
    )
}

/// Epoch seconds of a UTC RFC 3339 timestamp (`…Z` or `+00:00`, fraction
/// ignored); `None` for anything else.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    if !matches!(rest, "Z" | "z" | "+00:00") || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    if hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (the inverse of `rfc3339`).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Reads a file a user names (a plan's `mcp`, `--mcp`, an instructions
/// file): regular, at most `max` bytes, UTF-8; an error names `what` and the path.
pub fn read_user_text(what: &str, path: &Path, max: u64) -> crate::Result<String> {
    let bytes = read_regular_capped(path, max).map_err(|e| {
        let why = match e {
            CappedReadError::Io(e) => e.to_string(),
            CappedReadError::NotRegular => "not a regular file".into(),
            CappedReadError::TooLarge => format!("over {max} bytes"),
        };
        crate::VfError::usage(format!("{what} {}: {why}", path.display()))
    })?;
    String::from_utf8(bytes)
        .map_err(|_| crate::VfError::usage(format!("{what} {}: not UTF-8 text", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        for secs in [0, 951_782_400, 1_796_000_753, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&rfc3339(secs, 7)), Some(secs));
        }
        assert_eq!(rfc3339(1_796_000_753, 0), "2026-11-30T01:05:53.000Z");
        assert_eq!(
            parse_rfc3339("2026-11-30T01:05:53+00:00"),
            Some(1_796_000_753)
        );
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-11-30T01:05:53+02:00",
            "soon",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn atomic_write_replaces() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("sub/m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        // Nothing besides the file: the temporary became it.
        let names: Vec<_> = std::fs::read_dir(t.path().join("sub"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["m.json"]);
    }

    /// A reader that opened the file before a replace keeps reading the old
    /// content whole, and never what a later write put anywhere else.
    /// (Windows refuses to replace a file a reader holds: sys/windows.rs.)
    #[cfg(unix)]
    #[test]
    fn a_reader_keeps_the_file_it_opened() {
        use std::io::Read;
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a.json"), t.path().join("b.json"));
        write_atomic(&a, b"a-one").unwrap();
        let mut held = std::fs::File::open(&a).unwrap();
        write_atomic(&a, b"a-two").unwrap();
        write_atomic(&b, b"b-one-longer").unwrap();
        write_atomic_volatile(&b, b"b-two").unwrap();
        let mut seen = String::new();
        held.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, "a-one");
        assert_eq!(std::fs::read(&a).unwrap(), b"a-two");
    }

    #[test]
    fn stale_temporaries_go_live_ones_stay() {
        let t = tempfile::tempdir().unwrap();
        let me = ProcIdentity::current();
        let start = me.start_time.unwrap();
        let live = t.path().join(format!(".tmp-{}-{start}-aaaaaa", me.pid));
        let dead = t
            .path()
            .join(format!(".tmp-{}-{}-bbbbbb", me.pid, start + 1));
        let fresh_unknown = t.path().join(".tmp-cccccc");
        let keep = t.path().join("marker.json");
        for p in [&live, &dead, &fresh_unknown, &keep] {
            std::fs::write(p, b"x").unwrap();
        }
        std::fs::create_dir(t.path().join(".tmp-dir")).unwrap();
        assert_eq!(clean_stale_tmps(t.path()).unwrap(), 1);
        assert!(!dead.exists());
        assert!(live.exists() && fresh_unknown.exists() && keep.exists());
        let old = std::time::SystemTime::now() - STALE_TMP_AGE * 2;
        for p in [&live, &fresh_unknown] {
            let f = std::fs::File::options().write(true).open(p).unwrap();
            f.set_modified(old).unwrap();
        }
        assert_eq!(clean_stale_tmps(t.path()).unwrap(), 2);
        assert!(keep.exists() && t.path().join(".tmp-dir").exists());
    }

    /// A state file is read only when it is a regular file: a FIFO (with
    /// no writer, which a blocking open would wait for) and a link are
    /// refused at once, each recognisably.
    #[cfg(unix)]
    #[test]
    fn state_files_are_regular_never_waited_on_never_followed() {
        let t = tempfile::tempdir().unwrap();
        let (file, fifo, link) = (t.path().join("f"), t.path().join("p"), t.path().join("l"));
        std::fs::write(&file, b"state").unwrap();
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_no_follow(&file).unwrap(), b"state");
        let e = read_no_follow(&fifo).unwrap_err();
        assert!(is_not_regular(&e), "{e}");
        assert_eq!(e.to_string(), "it is a FIFO, not a regular file");
        let e = read_no_follow(t.path()).unwrap_err();
        assert!(is_not_regular(&e), "{e}");
        let e = read_no_follow(&link).unwrap_err();
        assert!(
            crate::sys::is_link_refusal(&e) && !is_not_regular(&e),
            "{e}"
        );
    }

    #[test]
    fn timestamp_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'));
    }
}

/// Why [`read_regular_capped`] read nothing.
#[derive(Debug)]
pub enum CappedReadError {
    Io(std::io::Error),
    /// A FIFO, a device, a directory: refused without being read.
    NotRegular,
    /// Over the cap (checked on what was read, so a growing file counts too).
    TooLarge,
}

/// Reads a regular file of at most `max` bytes. Opened non-blocking, so a
/// FIFO without a writer cannot block vf; a device (`/dev/zero`) is refused
/// before a byte is read. For files named by a user or a plan.
pub fn read_regular_capped(path: &Path, max: u64) -> Result<Vec<u8>, CappedReadError> {
    use crate::sys::OpenExt;
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .no_block()
        .open_checked(path)
        .map_err(CappedReadError::Io)?;
    if !file.metadata().map_err(CappedReadError::Io)?.is_file() {
        return Err(CappedReadError::NotRegular);
    }
    let mut bytes = Vec::new();
    // +1 to know it is over.
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(CappedReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(CappedReadError::TooLarge);
    }
    Ok(bytes)
}
