//! What every Unix shares: process groups and their signals, no-follow
//! opens, rename and directory fsync, the execute bit, `/bin/sh`.

use std::fs::OpenOptions;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};

use super::{OpenExt, Sig};

pub const CONTAINMENT: (super::Scope, super::Proof) = (
    super::Scope::PosixProcessGroup,
    super::Proof::CooperativeLineage,
);

fn signal_of(sig: Sig) -> Signal {
    match sig {
        Sig::Hangup => Signal::SIGHUP,
        Sig::Interrupt => Signal::SIGINT,
        Sig::Quit => Signal::SIGQUIT,
        Sig::Kill => Signal::SIGKILL,
        Sig::Terminate => Signal::SIGTERM,
    }
}

/// The child leads a new process group (pgid = its pid) and, before it
/// execs, starts the group's lifeline watcher (`super::lifeline`).
pub fn contain(cmd: &mut std::process::Command) -> std::io::Result<Contained> {
    cmd.process_group(0);
    Ok(Contained {
        lifeline: super::lifeline::attach(cmd)?,
    })
}

/// What [`contain`] made for the child's container: vf's end of its lifeline.
#[derive(Debug)]
pub struct Contained {
    lifeline: super::lifeline::Held,
}

/// A process group: the engine and whatever it starts (unless something
/// leaves the group on purpose: hence "cooperative"). The group is killed
/// by its lifeline's watcher when the last clone is dropped or vf dies.
#[derive(Debug, Clone)]
pub struct Container {
    pgid: i32,
    _lifeline: super::lifeline::Held,
}

impl Container {
    /// The group of a child started from a [`contain`]ed command.
    pub fn adopt(child: &impl ChildHandle, made: Contained) -> std::io::Result<Container> {
        let pid = child
            .pid()
            .ok_or_else(|| std::io::Error::other("the child has no pid"))?;
        Ok(Container {
            pgid: pid as i32,
            _lifeline: made.lifeline,
        })
    }

    /// What the owned-process record keeps: the process group id.
    pub fn id(&self) -> i32 {
        self.pgid
    }

    pub fn signal(&self, sig: Sig) {
        // Never pgid 0 or 1 (our own group, or init's).
        if self.pgid > 1 {
            let _ = killpg(Pid::from_raw(self.pgid), signal_of(sig));
        }
    }

    pub fn kill(&self) {
        self.signal(Sig::Kill);
    }

    /// Whether the group's leader has exited, without reaping it: while it
    /// is a zombie its pid keeps naming the group, so a signal to the group
    /// cannot reach an unrelated process that took the pid.
    pub fn leader_exited(&self) -> bool {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: `info` is a valid, writable siginfo_t.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pgid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
                )
            };
            if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // SAFETY: reading the pid field of the siginfo filled in above.
            return r == -1 || unsafe { info.si_pid() } != 0;
        }
    }

    /// Blocks until the group's leader has exited, without reaping it (as
    /// [`Container::leader_exited`], which polls): for a brief command with
    /// no timeout, whose end is then seen at once rather than at a poll.
    pub fn wait_leader_exit(&self) {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: `info` is a valid, writable siginfo_t.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pgid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
    }
}

/// A spawned child vf can adopt into a container (std's or tokio's).
pub trait ChildHandle {
    fn pid(&self) -> Option<u32>;
}

impl ChildHandle for std::process::Child {
    fn pid(&self) -> Option<u32> {
        Some(self.id())
    }
}

impl ChildHandle for tokio::process::Child {
    fn pid(&self) -> Option<u32> {
        self.id()
    }
}

pub fn signal_recorded(id: i32, sig: Sig) -> std::io::Result<bool> {
    if id <= 1 {
        let bad = format!("not a group vf made: {id}");
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, bad));
    }
    match killpg(Pid::from_raw(id), signal_of(sig)) {
        Ok(()) => Ok(true),
        Err(nix::errno::Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

pub fn signal_child(pid: u32, sig: Sig) -> std::io::Result<bool> {
    let pid = i32::try_from(pid).ok().filter(|p| *p > 1);
    let Some(pid) = pid else {
        let bad = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a child pid");
        return Err(bad);
    };
    match nix::sys::signal::kill(Pid::from_raw(pid), signal_of(sig)) {
        Ok(()) => Ok(true),
        Err(nix::errno::Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The signals vf forwards to the engine's group.
pub struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            quit: signal(SignalKind::quit())?,
        })
    }

    /// The next signal received.
    pub async fn recv(&mut self) -> Sig {
        tokio::select! {
            _ = self.int.recv() => Sig::Interrupt,
            _ = self.term.recv() => Sig::Terminate,
            _ = self.hup.recv() => Sig::Hangup,
            _ = self.quit.recv() => Sig::Quit,
        }
    }
}

/// `O_NOFOLLOW` (a link is `ELOOP`), `O_NONBLOCK`, mode 0600: the flags refuse
/// by themselves, so `open_checked` is a plain open.
impl OpenExt for OpenOptions {
    fn no_follow(&mut self) -> &mut Self {
        self.custom_flags(libc::O_NOFOLLOW)
    }
    fn no_block(&mut self) -> &mut Self {
        self.custom_flags(libc::O_NONBLOCK)
    }
    fn no_follow_no_block(&mut self) -> &mut Self {
        self.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
    }
    fn owner_only(&mut self) -> &mut Self {
        self.mode(0o600)
    }
    fn open_checked(&self, path: &Path) -> std::io::Result<std::fs::File> {
        self.open(path)
    }
}

/// The unit lock: std's `File::try_lock` (`flock`).
pub fn try_lock(file: &std::fs::File) -> Result<(), std::fs::TryLockError> {
    file.try_lock()
}

pub fn is_link_refusal(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

pub fn replace_file(from: &Path, to: &Path, _durable: bool) -> std::io::Result<()> {
    std::fs::rename(from, to)
}

/// A directory only its owner can use (0700).
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// A regular file (after links) with an execute bit that we may execute.
pub fn path_from_bytes(bytes: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

pub fn is_executable(p: &Path) -> bool {
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    m.is_file()
        && m.permissions().mode() & 0o111 != 0
        && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// The names `name` has on disk when run: itself.
pub fn executable_names(name: &str) -> Vec<String> {
    vec![name.to_string()]
}

pub fn command(program: &std::path::Path, args: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    cmd
}

pub fn shell(command: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(command);
    cmd
}

/// What tells two versions of a file apart besides its size and mtime:
/// device, inode and change time (ns).
pub fn file_stamp(m: &std::fs::Metadata) -> (u64, u64, i128) {
    use std::os::unix::fs::MetadataExt;
    let ctime = i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec());
    (m.dev(), m.ino(), ctime)
}

pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".into())
}

pub fn is_superuser() -> bool {
    // SAFETY: geteuid only reads this process's credentials.
    unsafe { libc::geteuid() == 0 }
}

impl super::ChildPipe for tokio::process::ChildStdout {
    fn into_file(self) -> std::io::Result<std::fs::File> {
        Ok(std::fs::File::from(self.into_owned_fd()?))
    }
}

impl super::ChildPipe for tokio::process::ChildStderr {
    fn into_file(self) -> std::io::Result<std::fs::File> {
        Ok(std::fs::File::from(self.into_owned_fd()?))
    }
}

/// The stop is a pipe: its write end dropped, its read end polls as hung up.
pub type StopWait = std::io::PipeReader;
pub type StopSignal = std::io::PipeWriter;

pub fn stop_pair() -> std::io::Result<(StopWait, StopSignal)> {
    std::io::pipe()
}

/// Waits on the engine's pipe and the stop together, then reads what came.
pub fn read_unless_stopped(src: &mut std::fs::File, stop: &StopWait, buf: &mut [u8]) -> super::Got {
    use super::Got;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::io::Read;
    use std::os::fd::AsFd;
    loop {
        let mut fds = [
            PollFd::new(src.as_fd(), PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return Got::End,
            Ok(_) => {}
        }
        let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
        if ready(&fds[1]) {
            return Got::Stopped;
        }
        if !ready(&fds[0]) {
            continue;
        }
        return match src.read(buf) {
            Ok(0) => Got::End,
            Ok(n) => Got::Bytes(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => Got::End,
        };
    }
}
