//! Windows: files. No flag makes an open fail on a link: `no_follow` opens
//! the link itself and `open_checked` refuses it; a durable replace is a
//! write-through `MoveFileExW`; the unit lock is `LockFileEx` on a byte past
//! the holder's pid.

use std::fs::{File, OpenOptions};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Foundation::ERROR_STOPPED_ON_SYMLINK;
use windows_sys::Win32::Storage::FileSystem::{
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_ATTRIBUTE_TAG_INFO, FILE_FLAG_OPEN_REPARSE_POINT,
    FileAttributeTagInfo, GetFileInformationByHandleEx, MOVEFILE_REPLACE_EXISTING,
    MOVEFILE_WRITE_THROUGH, MoveFileExW,
};

use super::OpenExt;

/// Reparse tags that name another file (`IO_REPARSE_TAG_SYMLINK`,
/// `IO_REPARSE_TAG_MOUNT_POINT`: a junction), from winnt.h.
const LINK_TAGS: [u32; 2] = [0xA000_000C, 0xA000_0003];

// ------------------------------------------------------------------- files

/// `no_follow` opens the link itself (`FILE_FLAG_OPEN_REPARSE_POINT`) and
/// `open_checked` refuses it with `ERROR_STOPPED_ON_SYMLINK`; `no_block` is
/// nothing (no FIFOs in a Windows file system); `owner_only` is nothing (a new
/// file takes its directory's ACL: under a user's profile, that user's and the
/// administrators').
impl OpenExt for OpenOptions {
    fn no_follow(&mut self) -> &mut Self {
        self.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
    }
    fn no_block(&mut self) -> &mut Self {
        self.custom_flags(0)
    }
    fn no_follow_no_block(&mut self) -> &mut Self {
        self.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
    }
    fn owner_only(&mut self) -> &mut Self {
        self
    }
    fn open_checked(&self, path: &Path) -> std::io::Result<File> {
        let file = self.open(path)?;
        // Without FILE_FLAG_OPEN_REPARSE_POINT a link is followed, so an
        // open handle to a link means `no_follow` was asked for.
        if is_link_handle(&file)? {
            return Err(std::io::Error::from_raw_os_error(
                ERROR_STOPPED_ON_SYMLINK as i32,
            ));
        }
        Ok(file)
    }
}

/// Whether `file` is itself a symbolic link or a junction.
fn is_link_handle(file: &File) -> std::io::Result<bool> {
    let mut info = FILE_ATTRIBUTE_TAG_INFO {
        FileAttributes: 0,
        ReparseTag: 0,
    };
    // SAFETY: `file` is open; the pointer and size describe `info`.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle(),
            FileAttributeTagInfo,
            (&raw mut info).cast(),
            size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(info.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT != 0
        && LINK_TAGS.contains(&info.ReparseTag))
}

pub fn is_link_refusal(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

fn wide(p: &Path) -> Vec<u16> {
    p.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// The unit lock: `LockFileEx` on one byte far past the end of the file.
/// A Windows lock is mandatory, and std's `File::try_lock` takes the whole
/// file, so a contender could not read the pid the holder wrote at its
/// start; this range leaves those bytes readable. Released when the handle
/// closes, as the whole-file lock is.
pub fn try_lock(file: &File) -> Result<(), std::fs::TryLockError> {
    use windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION;
    use windows_sys::Win32::Storage::FileSystem::{
        LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
    };
    let mut at = windows_sys::Win32::System::IO::OVERLAPPED::default();
    at.Anonymous.Anonymous.Offset = 0;
    at.Anonymous.Anonymous.OffsetHigh = LOCK_OFFSET_HIGH;
    // SAFETY: `file` is open; `at` is a valid OVERLAPPED that outlives the
    // call, which returns at once (LOCKFILE_FAIL_IMMEDIATELY).
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle(),
            LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
            0,
            1,
            0,
            &mut at,
        )
    };
    if ok != 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        Err(std::fs::TryLockError::WouldBlock)
    } else {
        Err(std::fs::TryLockError::Error(e))
    }
}

/// The locked byte is at 2^62 (`OffsetHigh` 2^30): no lock file gets there.
const LOCK_OFFSET_HIGH: u32 = 1 << 30;

/// `MoveFileExW` over the target; with `durable`, write-through: it returns
/// once the move is on the disk.
///
/// Unlike a POSIX rename, it fails while another process has the target
/// open (a reader such as `vf status`, an indexer, an antivirus scan):
/// such holds are brief, so it is tried again for about half a second, then
/// the error is returned and the write fails closed (the old file stays
/// whole; the temporary is removed by the caller).
pub fn replace_file(from: &Path, to: &Path, durable: bool) -> std::io::Result<()> {
    use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION};
    let mut flags = MOVEFILE_REPLACE_EXISTING;
    if durable {
        flags |= MOVEFILE_WRITE_THROUGH;
    }
    let (from, to) = (wide(from), wide(to));
    let mut wait = std::time::Duration::from_millis(1);
    loop {
        // SAFETY: both are NUL-terminated wide strings that outlive the call.
        if unsafe { MoveFileExW(from.as_ptr(), to.as_ptr(), flags) } != 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        let held = [ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION]
            .map(|c| Some(c as i32))
            .contains(&e.raw_os_error());
        if !held || wait > REPLACE_PATIENCE {
            return Err(e);
        }
        std::thread::sleep(wait);
        wait *= 2;
    }
}

/// The longest single wait of [`replace_file`]'s retries (all of them: about
/// twice that).
const REPLACE_PATIENCE: std::time::Duration = std::time::Duration::from_millis(256);

/// A directory (its ACL inherited from the user's state dir).
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir(path)
}

/// Windows has no fsync of a directory. The rename it would make durable
/// was a write-through `MoveFileExW` ([`replace_file`]), which returns
/// only once the move is on the disk: nothing is left to do here.
pub fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replace_is_whole() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::write(&a, "new").unwrap();
        std::fs::write(&b, "old").unwrap();
        replace_file(&a, &b, true).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new");
        assert!(!a.exists());
        sync_dir(t.path()).unwrap();
    }

    /// A reader holding the target open: the replace fails (after its
    /// retries) instead of tearing anything, and works once it is closed.
    #[test]
    fn a_held_target_is_not_replaced_until_released() {
        use std::io::Read;
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::write(&b, "old").unwrap();
        std::fs::write(&a, "new").unwrap();
        let mut held = File::open(&b).unwrap();
        assert!(replace_file(&a, &b, true).is_err());
        let mut seen = String::new();
        held.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, "old");
        drop(held);
        replace_file(&a, &b, true).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new");
    }
}
