//! The ledger file every vf process on this machine shares: `vf/quota.json`
//! in the user's data dir (`VF_QUOTA_FILE` names another), read and
//! replaced under a lock file beside it. A ledger vf cannot use (corrupt,
//! newer, a link, a FIFO, huge, unwritable, no data dir) is a warning, once
//! per process, and the governor then keeps its facts in this process only.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::entry::Entry;
use crate::ground::env::EnvVars;

/// Bumped when the shape or meaning changes; a newer ledger is not touched.
const FORMAT: u32 = 1;
/// A ledger is a few entries per engine and account.
pub const MAX_LEDGER_BYTES: u64 = 1 << 20;
/// How long a process waits for another one's lock before it governs alone.
const LOCK_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    entries: Vec<Entry>,
}

/// The facts kept when the file cannot be used.
static LOCAL: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// The ledger's warning was given (once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// Where the ledger is: `VF_QUOTA_FILE`, else `vf/quota.json` in the data
/// dir; `None` when the environment names no home to find it in.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(EnvVars::VF_QUOTA_FILE).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let set = |v: &str| std::env::var_os(v).is_some_and(|d| !d.is_empty());
    let homes = ["HOME", "XDG_DATA_HOME", "LOCALAPPDATA"];
    // vf's own unit tests never read nor write the user's ledger.
    if cfg!(test) || !homes.into_iter().any(set) {
        return None;
    }
    directories::ProjectDirs::from("", "", "vf").map(|p| p.data_dir().join("quota.json"))
}

/// What [`update`] returns beside `f`'s answer: a warning the first time
/// this process could not use the file.
pub type Warning = Option<String>;

/// Runs `f` on the ledger's entries under its lock and writes them back when
/// `f` changed them; on any trouble, on this process's own entries. While
/// there is no ledger and `f` has nothing to record, nothing is created (a
/// run that met no limit never writes in the user's data dir).
pub fn update<T>(mut f: impl FnMut(&mut Vec<Entry>) -> T) -> (T, Warning) {
    let at = path();
    if let Some(p) = at.as_deref()
        && std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        let mut none = Vec::new();
        let out = f(&mut none);
        none.retain(|e| !e.is_idle());
        if none.is_empty() {
            return (out, None);
        }
    }
    match at.as_deref() {
        Some(p) => match update_in(p, f) {
            Ok((out, None)) => (out, None),
            Ok((out, Some(why))) => (out, warn(p, &why)),
            Err((f, why)) => {
                let w = warn(p, &why);
                (local(f), w)
            }
        },
        None => {
            let w = warn(Path::new("(none)"), "no data dir in the environment (HOME)");
            (local(f), w)
        }
    }
}

type Failed<F> = (F, String);

/// [`update`] on the file at `path`: `Err` gives `f` back, unrun, with why
/// the file cannot be used; `Ok` may carry why `f`'s change was not written.
fn update_in<T, F: FnMut(&mut Vec<Entry>) -> T>(
    path: &Path,
    f: F,
) -> Result<(T, Option<String>), Failed<F>> {
    let s = match Shared::open(path) {
        Ok(s) => s,
        Err(why) => return Err((f, why)),
    };
    let mut f = f;
    let mut entries = match s.entries() {
        Ok(e) => e,
        Err(why) => return Err((f, why)),
    };
    let before = entries.clone();
    let out = f(&mut entries);
    entries.retain(|e| !e.is_idle());
    let unwritten = match entries != before {
        true => s.write(&entries).err(),
        false => None,
    };
    Ok((out, unwritten))
}

/// The entries as they stand, read under the lock (for `vf quota`).
pub fn read() -> (Vec<Entry>, Warning) {
    update(|e| e.clone())
}

fn local<T>(mut f: impl FnMut(&mut Vec<Entry>) -> T) -> T {
    let mut entries = LOCAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = f(&mut entries);
    entries.retain(|e| !e.is_idle());
    out
}

/// The ledger's trouble as first met in this process (a result carries it).
static TROUBLE: Mutex<Option<String>> = Mutex::new(None);

fn warn(path: &Path, why: &str) -> Warning {
    (!WARNED.swap(true, Ordering::Relaxed)).then(|| {
        let text = format!(
            "the quota ledger {} cannot be used ({why}): quotas are governed within this vf process only",
            path.display()
        );
        *TROUBLE.lock().unwrap_or_else(|p| p.into_inner()) = Some(text.clone());
        text
    })
}

/// The warning this process gave about the ledger, if it gave one: a run's
/// result names it whichever call met the trouble first.
pub fn trouble() -> Option<String> {
    TROUBLE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The shared file, locked for as long as this lives.
struct Shared {
    path: PathBuf,
    _lock: std::fs::File,
}

impl Shared {
    fn open(path: &Path) -> Result<Shared, String> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        refuse_odd(path)?;
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        refuse_odd(&lock_path)?;
        let lock = {
            use crate::sys::OpenExt;
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .no_follow_no_block()
                .owner_only()
                .open_checked(&lock_path)
                .map_err(|e| format!("cannot open its lock {}: {e}", lock_path.display()))?
        };
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match crate::sys::try_lock(&lock) {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(format!("cannot lock {}: {e}", lock_path.display())),
            }
        }
        Ok(Shared {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    fn entries(&self) -> Result<Vec<Entry>, String> {
        let bytes = match crate::ground::fsutil::read_regular_capped(&self.path, MAX_LEDGER_BYTES) {
            Ok(b) => b,
            Err(crate::ground::fsutil::CappedReadError::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(Vec::new());
            }
            Err(e) => return Err(capped_why(&e)),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Vec::new());
        }
        let file: File =
            serde_json::from_slice(&bytes).map_err(|e| format!("it does not parse: {e}"))?;
        if file.version != FORMAT {
            return Err(format!("its format {} is not {FORMAT}", file.version));
        }
        Ok(file.entries)
    }

    fn write(&self, entries: &[Entry]) -> Result<(), String> {
        refuse_odd(&self.path)?;
        let file = File {
            version: FORMAT,
            entries: entries.to_vec(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        crate::ground::fsutil::write_atomic(&self.path, &bytes)
            .map_err(|e| format!("cannot write it: {e}"))
    }
}

fn capped_why(e: &crate::ground::fsutil::CappedReadError) -> String {
    use crate::ground::fsutil::CappedReadError as E;
    match e {
        E::TooLarge => format!("it is over {MAX_LEDGER_BYTES} bytes"),
        E::NotRegular => "it is not a regular file".into(),
        E::Io(e) => e.to_string(),
    }
}

/// A link, a FIFO, a device or a directory where the ledger (or its lock)
/// should be is never read through nor replaced.
fn refuse_odd(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(format!("{} is a link", path.display())),
        Ok(m) if !m.file_type().is_file() => {
            Err(format!("{} is not a regular file", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
