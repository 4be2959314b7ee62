//! The lifeline: a contained child's process group ends when the vf that
//! supervises it dies, whatever killed vf (`kill -9` included).
//!
//! vf holds the only write end of a pipe (close-on-exec: no other child
//! inherits it). Before the child execs, in its own new group, it starts a
//! watcher in that group whose stdin is the pipe's read end. The watcher
//! reads until end of file, which comes only when the kernel has closed
//! vf's end (vf died, or dropped the [`super::Container`]), then sends
//! SIGKILL to its own group: the engine and whatever it started, itself
//! included. The child execs only once the watcher runs, so there is no
//! moment in which the engine runs unwatched.
//!
//! Why this shape:
//! - `PR_SET_PDEATHSIG` follows the spawning *thread* on Linux (tokio's
//!   blocking threads come and go) and does not exist on macOS; a pipe's end
//!   of file holds everywhere.
//! - The watcher is a grandchild of the engine's first process (a double
//!   fork): never the engine's own child (an engine that reaps every child
//!   or counts them would see it), never vf's (no zombie for vf to reap);
//!   init reaps it.
//! - It is `/bin/sh` (argv[0] `vf-lifeline`) running builtins only, with
//!   stdout and stderr on the null device (it never holds the engine's
//!   pipes open), and the stop signals vf forwards (HUP, INT, QUIT, TERM)
//!   ignored: the engine's `kill 0` or a forwarded Ctrl-C does not end it,
//!   vf's final SIGKILL to the group does.
//! - The engine's pid, exit status and stdio are its own: the watcher is
//!   started between std's set-up of the child and its exec.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::sync::Arc;

/// What the watcher runs: wait for end of file on stdin, then end the group.
const WATCH: &str = "while read -r _; do :; done; kill -s KILL 0";
/// Its name in `ps`.
pub const WATCHER_NAME: &str = "vf-lifeline";

/// vf's end of a child's lifeline: while one clone is open, the group lives.
#[derive(Debug, Clone)]
pub struct Held {
    _write: Arc<OwnedFd>,
}

/// Prepares `cmd` so that the child starts its watcher before it execs.
/// The returned end must be kept for as long as the child may run.
pub fn attach(cmd: &mut std::process::Command) -> std::io::Result<Held> {
    let (read, write) = std::io::pipe()?;
    let read: Arc<OwnedFd> = Arc::new(read.into());
    let null: Arc<OwnedFd> = Arc::new(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")?
            .into(),
    );
    let args = [WATCHER_NAME, "-c", WATCH].map(|a| CString::new(a).expect("no NUL"));
    let shell = CString::new(super::POSIX_SHELL).expect("no NUL");
    // SAFETY: the hook runs in the forked child before exec and calls only
    // async-signal-safe functions on memory prepared here (no allocation).
    unsafe {
        cmd.pre_exec(move || start_watcher(&shell, &args, read.as_raw_fd(), null.as_raw_fd()));
    }
    Ok(Held {
        _write: Arc::new(write.into()),
    })
}

/// In the child (after std's stdio and group set-up, before exec): forks a
/// child that forks the watcher and exits, reaps it, and waits until the
/// watcher has exec'd, so that the engine never runs unwatched.
fn start_watcher(
    shell: &CString,
    args: &[CString; 3],
    read: i32,
    null: i32,
) -> std::io::Result<()> {
    // SAFETY: plain calls in a single-threaded child; every pointer refers
    // to memory owned by the closure or to this stack frame.
    unsafe {
        // The group must be the child's own before the watcher is forked
        // into it (std has set it already; setting it again is harmless).
        if libc::setpgid(0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Closed (both ends close-on-exec) once the watcher has exec'd; a
        // byte on it says that the exec failed.
        let mut status = [0i32; 2];
        if libc::pipe(status.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for fd in status {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        let middle = libc::fork();
        if middle == 0 {
            let watcher = libc::fork();
            if watcher == 0 {
                exec_watcher(shell, args, read, null, status[1]);
            }
            libc::_exit(if watcher < 0 { 1 } else { 0 });
        }
        libc::close(status[1]);
        if middle < 0 {
            libc::close(status[0]);
            return Err(std::io::Error::last_os_error());
        }
        let mut how = 0;
        while libc::waitpid(middle, &mut how, 0) < 0 && errno() == libc::EINTR {}
        let forked = libc::WIFEXITED(how) && libc::WEXITSTATUS(how) == 0;
        // The watcher's exec error, if it failed; end of file once it exec'd.
        let mut code = 0i32;
        let got = loop {
            let n = libc::read(status[0], (&raw mut code).cast(), size_of::<i32>());
            if n >= 0 || errno() != libc::EINTR {
                break n;
            }
        };
        libc::close(status[0]);
        // No watcher: the engine does not run unwatched. (std hands the
        // parent only an error number; nothing here may allocate.)
        if !forked {
            return Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
        }
        if got != 0 {
            return Err(std::io::Error::from_raw_os_error(code));
        }
        Ok(())
    }
}

/// The watcher, just forked: the pipe on stdin, the null device on stdout
/// and stderr, stop signals ignored, then the shell. Never returns.
unsafe fn exec_watcher(
    shell: &CString,
    args: &[CString; 3],
    read: i32,
    null: i32,
    status: i32,
) -> ! {
    // SAFETY: as in `start_watcher`: async-signal-safe calls only.
    unsafe {
        libc::dup2(read, 0);
        libc::dup2(null, 1);
        libc::dup2(null, 2);
        for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let argv = [
            args[0].as_ptr(),
            args[1].as_ptr(),
            args[2].as_ptr(),
            std::ptr::null(),
        ];
        let envp = [std::ptr::null::<libc::c_char>()];
        libc::execve(shell.as_ptr(), argv.as_ptr(), envp.as_ptr());
        let code = errno();
        libc::write(status, (&raw const code).cast(), size_of::<i32>());
        libc::_exit(127)
    }
}

/// The last error number (std reads errno without allocating).
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::super::{Container, contain};

    /// The group's live members, once `done` holds or 10 s have passed.
    #[cfg(target_os = "linux")]
    fn members_when(group: i32, done: impl Fn(&[u32]) -> bool) -> Vec<u32> {
        use super::super::group_members;
        use std::time::{Duration, Instant};
        let start = Instant::now();
        loop {
            let m = group_members(group);
            if done(&m) || start.elapsed() > Duration::from_secs(10) {
                return m;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// vf's end closing (here: the last clone of the container dropped, as
    /// the kernel closes it when vf dies) ends the group, its leader by
    /// SIGKILL; until then the watcher is one more member, in the group.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_group_ends_when_vfs_end_closes() {
        use super::super::group_members;
        use std::os::unix::process::ExitStatusExt;
        let mut cmd = super::super::shell("sleep 30 & wait");
        let made = contain(&mut cmd).unwrap();
        let mut child = cmd.spawn().unwrap();
        let group = Container::adopt(&child, made).unwrap();
        let pgid = group.id();
        let running = members_when(pgid, |m| m.len() >= 3);
        assert_eq!(running.len(), 3, "shell, sleep and watcher: {running:?}");
        let kept = group.clone();
        drop(group);
        assert_eq!(group_members(pgid).len(), 3, "a clone keeps it alive");
        drop(kept);
        let left = members_when(pgid, <[u32]>::is_empty);
        let status = child.wait().unwrap();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    /// The engine's own exit status and output are untouched by the watcher.
    #[test]
    fn the_childs_status_and_output_are_its_own() {
        let mut cmd = super::super::shell("echo out; exit 7");
        cmd.stdout(std::process::Stdio::piped());
        let made = contain(&mut cmd).unwrap();
        let child = cmd.spawn().unwrap();
        let _group = Container::adopt(&child, made).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(out.stdout, b"out\n");
    }
}
