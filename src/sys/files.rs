//! What kind of file a path holds, and the pieces of writing into a stream
//! (a FIFO, a terminal, `/dev/null`) that differ by platform.

use std::fs::{File, FileType};

/// The kinds vf tells apart before it writes or reads a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Dir,
    /// A symbolic link (or a Windows junction), not followed.
    Link,
    Fifo,
    /// A terminal, `/dev/null`, `/dev/full`...
    CharDevice,
    /// A block device, a socket, anything else.
    Other,
}

impl FileKind {
    /// What it is called in a message.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Dir => "a directory",
            FileKind::Link => "a symbolic link",
            FileKind::Fifo => "a FIFO",
            FileKind::CharDevice => "a character device",
            FileKind::Other => "a device or socket",
        }
    }

    /// A FIFO or a character device: written in place, as a stream.
    pub fn is_stream(self) -> bool {
        matches!(self, FileKind::Fifo | FileKind::CharDevice)
    }
}

#[cfg(unix)]
pub fn file_kind(t: &FileType) -> FileKind {
    use std::os::unix::fs::FileTypeExt;
    if t.is_symlink() {
        FileKind::Link
    } else if t.is_file() {
        FileKind::Regular
    } else if t.is_dir() {
        FileKind::Dir
    } else if t.is_fifo() {
        FileKind::Fifo
    } else if t.is_char_device() {
        FileKind::CharDevice
    } else {
        FileKind::Other
    }
}

#[cfg(windows)]
pub fn file_kind(t: &FileType) -> FileKind {
    if t.is_symlink() {
        FileKind::Link
    } else if t.is_file() {
        FileKind::Regular
    } else if t.is_dir() {
        FileKind::Dir
    } else {
        FileKind::Other
    }
}

/// Clears the non-blocking flag an open used to not wait for a FIFO's
/// reader, so that a long write waits for the reader instead of failing.
#[cfg(unix)]
pub fn set_blocking(file: &File) -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(())
}

/// Nothing to clear: Windows opens never asked not to block.
#[cfg(windows)]
pub fn set_blocking(_file: &File) -> std::io::Result<()> {
    Ok(())
}

/// Whether a non-blocking open for writing failed because the FIFO has no
/// reader (`ENXIO`).
#[cfg(unix)]
pub fn is_no_reader(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENXIO)
}

#[cfg(windows)]
pub fn is_no_reader(_e: &std::io::Error) -> bool {
    false
}

/// Whether `path` (after links) is the null device, the usual way to say
/// "no file" (`VF_CONFIG=/dev/null`): the same device as `/dev/null`, so
/// another device (`/dev/zero`, a terminal) is not taken for it.
#[cfg(unix)]
pub fn is_null_device(path: &std::path::Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let rdev = |p: &std::path::Path| {
        std::fs::metadata(p)
            .ok()
            .filter(|m| m.file_type().is_char_device())
            .map(|m| m.rdev())
    };
    rdev(path).is_some_and(|d| rdev(std::path::Path::new("/dev/null")) == Some(d))
}

/// `NUL` (any case, also as `\\.\NUL`): Windows' null device.
#[cfg(windows)]
pub fn is_null_device(path: &std::path::Path) -> bool {
    let s = path.as_os_str().to_string_lossy().to_ascii_lowercase();
    s == "nul" || s == r"\\.\nul"
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_what_a_path_holds() {
        let t = tempfile::tempdir().unwrap();
        let (f, fifo, link) = (
            t.path().join("f"),
            t.path().join("fifo"),
            t.path().join("l"),
        );
        std::fs::write(&f, b"x").unwrap();
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let kind =
            |p: &std::path::Path| file_kind(&std::fs::symlink_metadata(p).unwrap().file_type());
        assert_eq!(kind(&f), FileKind::Regular);
        assert_eq!(kind(t.path()), FileKind::Dir);
        assert_eq!(kind(&fifo), FileKind::Fifo);
        assert_eq!(kind(&link), FileKind::Link);
        assert_eq!(
            kind(std::path::Path::new("/dev/null")),
            FileKind::CharDevice
        );
        assert!(FileKind::Fifo.is_stream() && !FileKind::Link.is_stream());
        let null = std::path::Path::new("/dev/null");
        assert!(is_null_device(null));
        std::os::unix::fs::symlink(null, t.path().join("to-null")).unwrap();
        assert!(is_null_device(&t.path().join("to-null")));
        for not in [&f, &fifo, t.path(), std::path::Path::new("/dev/zero")] {
            assert!(!is_null_device(not), "{}", not.display());
        }
    }

    #[test]
    fn a_fifo_without_a_reader_is_told_apart() {
        use crate::sys::OpenExt;
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = std::fs::OpenOptions::new()
            .write(true)
            .no_block()
            .open_checked(&fifo)
            .unwrap_err();
        assert!(is_no_reader(&e), "{e}");
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .no_block()
            .open_checked(&fifo)
            .unwrap();
        let w = std::fs::OpenOptions::new()
            .write(true)
            .no_block()
            .open_checked(&fifo)
            .unwrap();
        let nonblocking = |f: &File| {
            use nix::fcntl::{FcntlArg, OFlag, fcntl};
            OFlag::from_bits_truncate(fcntl(f, FcntlArg::F_GETFL).unwrap())
                .contains(OFlag::O_NONBLOCK)
        };
        assert!(nonblocking(&w));
        set_blocking(&w).unwrap();
        assert!(!nonblocking(&w));
        drop(reader);
    }
}
