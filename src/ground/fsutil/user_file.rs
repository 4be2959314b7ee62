//! Writing a path a user named (`vf report -o`, `vf hook --log`, the files
//! `vf skill install` and `vf workspace init` generate): one rule for what
//! may be at the path (docs/PLATFORMS.md "Files vf writes").
//!
//! - Nothing, or a regular file: written whole, atomically ([`write_atomic`]).
//! - A FIFO or a character device (a terminal, `/dev/null`, `/dev/stdout`
//!   when it is a pipe or a terminal), where the caller takes streams: written
//!   in place, never created or truncated, never replaced. A FIFO that no one
//!   reads is refused at once rather than waited for.
//! - A symbolic link: never replaced and never followed into a rename. Where
//!   the caller takes streams, a link to a FIFO or a character device (as
//!   `/dev/stdout` is) is written through; any other link is refused.
//! - Anything else (a directory, a block device, a socket): refused.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::write_atomic;
use crate::sys::{FileKind, OpenExt, file_kind};

/// Whether the path may be a stream (a FIFO, a terminal, `/dev/null`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// A file the user named for this output (`-o`, `--log`).
    Allowed,
    /// A file vf generates or keeps (a page in the state dir, a skill file):
    /// only a regular file or a new one.
    Refused,
}

/// How the path is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// A new or regular file, replaced whole.
    Replace,
    /// A FIFO or a character device, written in place; `through_link` when
    /// the path is a link to it.
    Stream { through_link: bool },
}

#[derive(Debug)]
pub enum OutputError {
    /// What is at the path is not something vf writes: nothing was written.
    Refused(String),
    /// Reading what is there, or the write itself, failed (a full disk or
    /// `/dev/full`: `ENOSPC`).
    Io(std::io::Error),
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputError::Refused(why) => f.write_str(why),
            OutputError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OutputError {}

fn refused(why: impl Into<String>) -> OutputError {
    OutputError::Refused(why.into())
}

const LINK: &str = "it is a symbolic link: vf neither replaces one nor writes through it \
                    (name the file itself)";

/// How writing `path` would go, or why it is refused. Nothing is opened, so
/// a command checks every path before it writes any.
pub fn check(path: &Path, streams: Streams) -> Result<How, OutputError> {
    let kind = match std::fs::symlink_metadata(path) {
        Ok(m) => file_kind(&m.file_type()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(How::Replace),
        Err(e) => return Err(OutputError::Io(e)),
    };
    let allowed = streams == Streams::Allowed;
    match kind {
        FileKind::Regular => Ok(How::Replace),
        k if k.is_stream() && allowed => Ok(How::Stream {
            through_link: false,
        }),
        FileKind::Link if allowed => match std::fs::metadata(path) {
            Ok(m) if file_kind(&m.file_type()).is_stream() => {
                Ok(How::Stream { through_link: true })
            }
            _ => Err(refused(LINK)),
        },
        FileKind::Link => Err(refused(LINK)),
        k => Err(refused(format!(
            "it is {}, not a regular file: vf does not replace it",
            k.name()
        ))),
    }
}

/// Writes `bytes` to `path` by the rule of [`check`], made again here.
pub fn write(path: &Path, bytes: &[u8], streams: Streams) -> Result<How, OutputError> {
    let how = check(path, streams)?;
    match how {
        How::Replace => write_atomic(path, bytes).map_err(OutputError::Io)?,
        How::Stream { through_link } => {
            let mut o = OpenOptions::new();
            o.write(true);
            if through_link {
                o.no_block();
            } else {
                o.no_follow_no_block();
            }
            let file = open_stream(&o, path, false)?;
            write_all(file, bytes)?;
        }
    }
    Ok(how)
}

/// Appends `bytes` to `path`: a regular file (created when missing), a FIFO
/// or a character device; never through a link.
pub fn append(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    if let How::Stream { through_link: true } = check(path, Streams::Allowed)? {
        return Err(refused(LINK));
    }
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(OutputError::Io)?;
    }
    let mut o = OpenOptions::new();
    o.append(true).create(true).no_follow_no_block();
    let file = open_stream(&o, path, true)?;
    write_all(file, bytes)
}

/// Opens without waiting for a FIFO's reader, then checks what was opened
/// (the path may have changed since [`check`]): only a stream, or a regular
/// file when `appending` (written over in place, it would keep its tail).
fn open_stream(o: &OpenOptions, path: &Path, appending: bool) -> Result<File, OutputError> {
    let file = o.open_checked(path).map_err(|e| {
        if crate::sys::is_no_reader(&e) {
            refused("it is a FIFO that no process reads (start its reader first)")
        } else if crate::sys::is_link_refusal(&e) {
            refused(LINK)
        } else {
            OutputError::Io(e)
        }
    })?;
    let kind = file_kind(&file.metadata().map_err(OutputError::Io)?.file_type());
    let fits = kind.is_stream() || (appending && kind == FileKind::Regular);
    if !fits {
        return Err(refused(format!(
            "it is {}, not a regular file: vf does not write it",
            kind.name()
        )));
    }
    Ok(file)
}

/// Writes into the opened file, waiting for a slow reader as any writer does.
fn write_all(mut file: File, bytes: &[u8]) -> Result<(), OutputError> {
    crate::sys::set_blocking(&file)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.flush())
        .map_err(OutputError::Io)
}

#[cfg(test)]
#[cfg(unix)] // FIFOs, devices and links as Unix has them
mod tests {
    use super::*;
    use std::io::Read;

    fn fifo(p: &Path) {
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }

    fn kind(p: &Path) -> FileKind {
        file_kind(&std::fs::symlink_metadata(p).unwrap().file_type())
    }

    fn is_refused(r: Result<How, OutputError>, says: &str) -> bool {
        matches!(r, Err(OutputError::Refused(why)) if why.contains(says))
    }

    #[test]
    fn a_new_or_regular_file_is_replaced_whole() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("page.html");
        for streams in [Streams::Allowed, Streams::Refused] {
            assert_eq!(
                write(&p, b"a longer first page", streams).unwrap(),
                How::Replace
            );
            assert_eq!(write(&p, b"second", streams).unwrap(), How::Replace);
            assert_eq!(std::fs::read(&p).unwrap(), b"second");
            std::fs::remove_file(&p).unwrap();
        }
    }

    #[test]
    fn a_link_is_never_replaced_nor_written_through_to_a_file() {
        let t = tempfile::tempdir().unwrap();
        let (target, link) = (t.path().join("target"), t.path().join("link"));
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = t.path().join("dangling");
        std::os::unix::fs::symlink(t.path().join("nowhere"), &dangling).unwrap();
        for streams in [Streams::Allowed, Streams::Refused] {
            for p in [&link, &dangling] {
                assert!(is_refused(write(p, b"x", streams), "symbolic link"));
                assert_eq!(kind(p), FileKind::Link);
            }
        }
        assert!(matches!(append(&link, b"x"), Err(OutputError::Refused(_))));
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(!t.path().join("nowhere").exists());
    }

    #[test]
    fn a_fifo_is_written_as_a_stream_or_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("fifo");
        fifo(&p);
        // No reader: refused without waiting for one.
        assert!(is_refused(
            write(&p, b"x", Streams::Allowed),
            "no process reads"
        ));
        assert!(matches!(append(&p, b"x"), Err(OutputError::Refused(_))));
        // Where streams are refused, even a read FIFO stays untouched.
        assert!(is_refused(write(&p, b"x", Streams::Refused), "a FIFO"));
        let mut reader = OpenOptions::new()
            .read(true)
            .no_block()
            .open_checked(&p)
            .unwrap();
        let how = write(&p, b"the page", Streams::Allowed).unwrap();
        assert_eq!(
            how,
            How::Stream {
                through_link: false
            }
        );
        let link = t.path().join("to-fifo");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let how = write(&link, b" and more", Streams::Allowed).unwrap();
        assert_eq!(how, How::Stream { through_link: true });
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert_eq!(got, "the page and more");
        assert_eq!((kind(&p), kind(&link)), (FileKind::Fifo, FileKind::Link));
    }

    /// `/dev/NAME` (major 1, `minor`): as root a copy in `dir` (were the
    /// rule broken, the system's own would be replaced), else the system's,
    /// which the test cannot replace. `None`: root without `mknod`.
    fn device(dir: &Path, name: &str, minor: u64) -> Option<std::path::PathBuf> {
        if !crate::sys::is_superuser() {
            return Some(Path::new("/dev").join(name));
        }
        device_copy(dir, name, minor)
    }

    #[cfg(target_os = "linux")]
    fn device_copy(dir: &Path, name: &str, minor: u64) -> Option<std::path::PathBuf> {
        use nix::sys::stat::{Mode, SFlag, makedev, mknod};
        let p = dir.join(name);
        let mode = Mode::from_bits_truncate(0o666);
        mknod(&p, SFlag::S_IFCHR, mode, makedev(1, minor)).ok()?;
        Some(p)
    }

    /// Elsewhere the device numbers differ (and `makedev` is Linux's): as
    /// root the system's devices are not risked.
    #[cfg(not(target_os = "linux"))]
    fn device_copy(_: &Path, _: &str, _: u64) -> Option<std::path::PathBuf> {
        None
    }

    #[test]
    fn devices_are_streamed_and_their_write_errors_said() {
        let t = tempfile::tempdir().unwrap();
        let (Some(null), Some(full)) = (device(t.path(), "null", 3), device(t.path(), "full", 7))
        else {
            return; // root without mknod: the system's devices are not risked
        };
        assert_eq!(
            write(&null, b"x", Streams::Allowed).unwrap(),
            How::Stream {
                through_link: false
            }
        );
        assert!(is_refused(
            write(&null, b"x", Streams::Refused),
            "character device"
        ));
        append(&null, b"x").unwrap();
        match write(&full, b"x", Streams::Allowed) {
            Err(OutputError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::StorageFull),
            other => panic!("{other:?}"),
        }
        assert_eq!(kind(&full), FileKind::CharDevice);
        assert_eq!(kind(&null), FileKind::CharDevice);
    }

    #[test]
    fn a_directory_is_refused_and_a_log_is_appended() {
        let t = tempfile::tempdir().unwrap();
        assert!(is_refused(
            write(t.path(), b"x", Streams::Allowed),
            "a directory"
        ));
        let log = t.path().join("sub/hook.log");
        append(&log, b"one\n").unwrap();
        append(&log, b"two\n").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"one\ntwo\n");
    }
}
