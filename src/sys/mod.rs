//! Everything that differs by operating system, behind one interface. The
//! rest of vf does not know which OS it runs on: it asks this module.
//!
//! - **Process identity**: [`process`] (start time, zombie, group), the
//!   boot identity [`boot_id`], [`command_line`], [`age_secs`],
//!   [`hostname`], [`group_members`]. Linux reads `/proc`, macOS
//!   `sysctl(KERN_PROC_PID)` and `kern.bootsessionuuid`, Windows the process
//!   creation time. Where nothing can be proven, the answer is `None`
//!   and callers fail closed.
//! - **Containment**: [`contain`] prepares a command so that it and
//!   everything it starts can be ended as one ([`Container`]): a POSIX
//!   process group whose lifeline watcher ends it when vf dies
//!   (`lifeline.rs`), or a kill-on-close Job Object assigned before the
//!   child runs. [`Signals`] are the stop requests vf itself receives.
//! - **Files**: no-follow and non-blocking opens ([`OpenExt`]), the atomic
//!   replace and the directory sync the durable write is made of
//!   ([`replace_file`], [`sync_dir`]), [`is_executable`], [`shell`]; what
//!   kind a path holds ([`file_kind`]) and writing into a FIFO or a device
//!   as a stream ([`set_blocking`], [`is_no_reader`]).
//!
//! - **The engine's output**: [`stoppable`] reads a child's pipe with
//!   blocking reads on a thread of vf's own, and stops that read on request
//!   ([`ReadStop`]): `poll` on the pipe and a stop pipe on Unix; on Windows a
//!   flag checked after each read, since ending the job closes the pipe.
//!
//! - **The unit lock**: [`try_lock`], std's `File::try_lock` (`flock`) on
//!   Unix; on Windows `LockFileEx` on one byte past the pid the holder writes,
//!   since a Windows lock is mandatory and would hide it.
//!
//! - **The sandbox** ([`sandbox`]): what this machine can confine an
//!   engine's process tree to (Landlock, Seatbelt), and the confinement.
//!
//! Files: `unix` (POSIX, shared), `linux`, `macos` (+ `macos_decode`, pure),
//! `other_unix`, `windows` (+ `windows_files`, `windows_pipe`), `files` (the
//! file interface), `lifeline` (the POSIX watcher of an engine's group).

use std::path::Path;

use serde::{Deserialize, Serialize};

#[cfg(unix)]
mod lifeline;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
/// What macOS's `sysctl` answers, decoded: pure, so tested on every platform.
#[cfg(any(test, target_os = "macos"))]
mod macos_decode;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
mod windows_files;
#[cfg(windows)]
mod windows_pipe;

#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "macos")]
use macos as os;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
mod other_unix;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
use other_unix as os;
#[cfg(unix)]
use unix as family;
#[cfg(windows)]
use windows as family;
#[cfg(windows)]
use windows as os;

pub use family::{ChildHandle, Contained, Container, Signals};

pub mod sandbox;

mod files;
pub use files::{FileKind, file_kind, is_no_reader, is_null_device, set_blocking};

/// A child's stdout or stderr, taken off tokio's reactor to be read with
/// blocking reads ([`stoppable`]).
pub trait ChildPipe {
    fn into_file(self) -> std::io::Result<std::fs::File>;
}

/// What one read of a [`StoppableReader`] brought.
#[derive(Debug, PartialEq, Eq)]
pub enum Got {
    Bytes(usize),
    /// End of the stream, or an error reading it.
    End,
    /// Its [`ReadStop`] was dropped: nothing more is to be read or reported.
    Stopped,
}

/// A pipe read with blocking reads that its [`ReadStop`] can interrupt.
pub struct StoppableReader {
    src: std::fs::File,
    stop: family::StopWait,
}

/// Dropped, it stops its reader: a read waiting for bytes returns
/// [`Got::Stopped`] (on Windows once the read in progress returns: the
/// job's end closes the pipe), and so does every read after.
pub struct ReadStop {
    _stop: family::StopSignal,
}

/// A reader of `pipe` and the handle that stops it.
pub fn stoppable(pipe: impl ChildPipe) -> std::io::Result<(StoppableReader, ReadStop)> {
    let src = pipe.into_file()?;
    let (stop, signal) = family::stop_pair()?;
    Ok((StoppableReader { src, stop }, ReadStop { _stop: signal }))
}

impl StoppableReader {
    /// Waits for bytes, the end of the stream, or the stop.
    pub fn read(&mut self, buf: &mut [u8]) -> Got {
        family::read_unless_stopped(&mut self.src, &self.stop, buf)
    }
}

/// Opens that refuse what a hostile state dir could plant, implemented for
/// `OpenOptions` by each platform. Each of the first three sets the whole of
/// the extra flags: call one of them, not two. Open with
/// [`OpenExt::open_checked`].
pub trait OpenExt {
    /// Never through a symbolic link (or junction) at the last component.
    fn no_follow(&mut self) -> &mut Self;
    /// Never blocking on a FIFO (a regular file ignores it).
    fn no_block(&mut self) -> &mut Self;
    /// Both: for files in the state dir.
    fn no_follow_no_block(&mut self) -> &mut Self;
    /// Readable and writable by the owner only, when created.
    fn owner_only(&mut self) -> &mut Self;
    /// Opens `path`, refusing a link that [`OpenExt::no_follow`] asked to refuse.
    fn open_checked(&self, path: &Path) -> std::io::Result<std::fs::File>;
}

/// A stop request, in POSIX terms: vf forwards what it receives to the
/// engine's container and exits 128 + [`Sig::number`]. On Windows, Ctrl-C
/// is [`Sig::Interrupt`], Ctrl-Break [`Sig::Terminate`] and the console
/// closing [`Sig::Hangup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sig {
    Hangup,
    Interrupt,
    Quit,
    Terminate,
    Kill,
}

impl Sig {
    /// The POSIX signal number (the same on every platform vf supports, and
    /// the base of vf's exit codes 129, 130, 131, 143).
    pub fn number(self) -> i32 {
        match self {
            Sig::Hangup => 1,
            Sig::Interrupt => 2,
            Sig::Quit => 3,
            Sig::Kill => 9,
            Sig::Terminate => 15,
        }
    }

    pub fn from_number(n: i32) -> Option<Sig> {
        [
            Sig::Hangup,
            Sig::Interrupt,
            Sig::Quit,
            Sig::Kill,
            Sig::Terminate,
        ]
        .into_iter()
        .find(|s| s.number() == n)
    }

    /// `SIGTERM`, ... as people know them.
    pub fn as_str(self) -> &'static str {
        match self {
            Sig::Hangup => "SIGHUP",
            Sig::Interrupt => "SIGINT",
            Sig::Quit => "SIGQUIT",
            Sig::Kill => "SIGKILL",
            Sig::Terminate => "SIGTERM",
        }
    }
}

/// What a process is now, as far as this OS can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSnapshot {
    /// When it started, in this OS's unit (Linux: clock ticks since boot;
    /// macOS: microseconds since the epoch; Windows: 100 ns since 1601).
    /// Only ever compared with what the same OS recorded.
    pub start_time: u64,
    /// Exited, not yet reaped: runs nothing, owns nothing.
    pub zombie: bool,
    /// Its process group, where the OS has them.
    pub group: Option<i32>,
}

/// The process `pid` now: `Ok(None)` when there is no such process, an
/// error when there may be one vf cannot read (another user's process on
/// Windows, a `/proc` that refuses): callers then fail closed.
pub fn process(pid: u32) -> std::io::Result<Option<ProcSnapshot>> {
    os::process(pid)
}

/// Whether this OS lets vf inspect processes at all (`/proc` mounted, ...).
/// Without it nothing about another process can be proven.
pub fn can_inspect_processes() -> bool {
    os::can_inspect_processes()
}

/// An identity of the current boot: it changes when the machine restarts.
/// Read once per process by the caller.
pub fn boot_id() -> Option<String> {
    os::boot_id()
}

/// Seconds since a process started, from its [`ProcSnapshot::start_time`].
pub fn age_secs(start_time: u64) -> Option<u64> {
    os::age_secs(start_time)
}

/// The command line of `pid`, raw (the caller escapes it for printing).
pub fn command_line(pid: u32) -> Option<String> {
    os::command_line(pid)
}

/// Live (not zombie) processes of the group `group`.
pub fn group_members(group: i32) -> Vec<u32> {
    os::group_members(group)
}

/// This machine's name, or `unknown`.
pub fn hostname() -> String {
    family::hostname()
}

/// What tells two versions of a file apart besides its size and mtime
/// (Unix: device, inode, change time in ns).
pub fn file_stamp(m: &std::fs::Metadata) -> (u64, u64, i128) {
    family::file_stamp(m)
}

/// Whether vf runs with administrator rights (root, elevated).
pub fn is_superuser() -> bool {
    family::is_superuser()
}

/// Prepares `cmd` to start contained: its own process group with a
/// lifeline watcher that ends the group when vf dies, or suspended until
/// [`Container::adopt`] has put it into its kill-on-close job. What it
/// returns goes to [`Container::adopt`] once the child is spawned.
pub fn contain(cmd: &mut std::process::Command) -> std::io::Result<Contained> {
    family::contain(cmd)
}

/// Sends `sig` to a recorded container of a process vf no longer holds
/// (`vf doctor --fix`). `Ok(false)` when it is gone already.
pub fn signal_recorded(id: i32, sig: Sig) -> std::io::Result<bool> {
    family::signal_recorded(id, sig)
}

/// Sends `sig` to one process vf started itself and still holds (`vf mcp`'s
/// own `vf` children), or to a unit's vf whose identity (pid, start time,
/// boot id) was proven just before (`vf mcp`'s `cancel`). `Ok(false)` when
/// it is gone already. On Windows the process is terminated.
pub fn signal_child(pid: u32, sig: Sig) -> std::io::Result<bool> {
    family::signal_child(pid, sig)
}

/// Renames `from` over `to` in one step: a reader sees one or the other.
/// Durable as far as the OS allows when `durable` (Windows: write-through).
pub fn replace_file(from: &Path, to: &Path, durable: bool) -> std::io::Result<()> {
    family::replace_file(from, to, durable)
}

/// Makes a directory only its owner can use (0700 on POSIX).
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    family::create_private_dir(path)
}

/// Makes the entries of `dir` (a rename into it) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    family::sync_dir(dir)
}

/// An exclusive lock on `file`, held until its handle closes; `WouldBlock`
/// while another open file holds it.
pub fn try_lock(file: &std::fs::File) -> Result<(), std::fs::TryLockError> {
    family::try_lock(file)
}

/// Whether file names of devices (`con`, `nul`, `com1`, with any
/// extension) are taken by the system in every directory: on Windows.
pub const RESERVES_DEVICE_NAMES: bool = cfg!(windows);

/// The file names a command `name` (no directory) may have on disk: itself
/// on Unix; on Windows itself with each `PATHEXT` extension, unless it has
/// one already.
pub fn executable_names(name: &str) -> Vec<String> {
    family::executable_names(name)
}

/// Whether `path` (a regular file, after links) is something vf may run.
pub fn is_executable(path: &Path) -> bool {
    family::is_executable(path)
}

/// A path as git prints it (`-z` output: raw bytes on Unix, where a name
/// need not be UTF-8; UTF-8 on Windows, read lossily).
pub fn path_from_bytes(bytes: &[u8]) -> std::path::PathBuf {
    family::path_from_bytes(bytes)
}

/// `CMD` run by the system shell (`/bin/sh -c`, `cmd.exe /d /c`).
pub fn shell(command: &str) -> std::process::Command {
    family::shell(command)
}

/// The command that opens a file in the user's default application
/// (`vf report --open`): `open` on macOS, `explorer` on Windows, else
/// `xdg-open`. Its output is discarded; vf does not wait for the viewer.
pub fn opener(path: &std::path::Path) -> std::process::Command {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let mut c = std::process::Command::new(program);
    c.arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

/// The POSIX shell: what a command string is handed to on POSIX (the
/// POSIX launch plan is shown on every platform, `engine::launch_plan`).
pub const POSIX_SHELL: &str = "/bin/sh";

/// How a command string (the bridge's) is launched on this platform: handed
/// to the POSIX shell, or tokenized and run directly (`engine::launch_plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandLaunch {
    Shell,
    Direct,
}

/// This platform's [`CommandLaunch`].
pub const COMMAND_LAUNCH: CommandLaunch = if cfg!(windows) {
    CommandLaunch::Direct
} else {
    CommandLaunch::Shell
};

/// `program` with `args`, as the spawn passes them: each argument one argv
/// element. On Windows a `cmd.exe` program gets its arguments quoted for
/// cmd.exe ([`cmd_arg`]) instead of the C runtime's rules, which cmd.exe does
/// not read: `>` or `&&` reach the program literally.
pub fn command(program: &Path, args: &[String]) -> std::process::Command {
    family::command(program, args)
}

/// One argument on a `cmd.exe` command line: as is when it holds only
/// characters cmd.exe passes on untouched, else in double quotes with each
/// quote doubled. (cmd.exe still expands `%NAME%` inside quotes.)
pub fn cmd_arg(a: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./\\:+@".contains(c);
    if !a.is_empty() && a.chars().all(plain) {
        a.to_string()
    } else {
        format!("\"{}\"", a.replace('"', "\"\""))
    }
}

/// The first executable file named `name` in the directories of `path_var`.
/// Empty entries (which POSIX reads as the current directory) are skipped:
/// vf never runs a binary just because it sits in the working directory.
///
/// The names tried in each directory are [`executable_names`] (on Windows
/// `codex` is found as `codex.cmd`, `codex.exe`, ..., in `PATHEXT` order).
pub fn find_on_path(name: &str, path_var: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    if name.is_empty() || has_separator(std::ffi::OsStr::new(name)) {
        return None;
    }
    let names = executable_names(name);
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| is_executable(p))
}

/// Whether `p` names a directory part (this OS's separators: `/`, and `\`
/// on Windows): then it is a path, not a name to look up.
pub fn has_separator(p: &std::ffi::OsStr) -> bool {
    p.as_encoded_bytes()
        .iter()
        .any(|&b| b.is_ascii() && std::path::is_separator(b as char))
}

/// Whether an open failed because the last component is a link, which
/// [`OpenExt::no_follow`] refuses.
pub fn is_link_refusal(e: &std::io::Error) -> bool {
    family::is_link_refusal(e)
}

/// What an engine is contained in, as its owned-process record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// A POSIX process group led by the engine (pgid = its pid).
    #[default]
    PosixProcessGroup,
    /// A Windows Job Object, kill-on-close, assigned before the engine ran.
    WindowsJob,
}

/// How strongly the container holds everything the engine starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Proof {
    /// Descendants stay in the group unless they leave it themselves
    /// (`setsid`): vf can prove the leader, not every descendant.
    #[default]
    CooperativeLineage,
    /// The kernel holds every descendant in the job and ends them all when
    /// vf's handle closes, even on `kill -9` of vf.
    KernelContained,
}

/// This platform's containment: see docs/ORCHESTRATE.md, owned-process records.
pub const CONTAINMENT: (Scope, Proof) = family::CONTAINMENT;

/// NUL-separated arguments (Linux's `cmdline`, macOS's `KERN_PROCARGS2`)
/// joined by spaces, empty ones dropped.
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
fn join_args(raw: &[u8]) -> String {
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    args.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmd_args_are_quoted_for_cmd_exe() {
        let cases = [
            ("agent.cmd", "agent.cmd"),
            (r"C:\tools\a.cmd", r"C:\tools\a.cmd"),
            (r"C:\Program Files\a.cmd", r#""C:\Program Files\a.cmd""#),
            (">", r#"">""#),
            ("&&", r#""&&""#),
            ("", r#""""#),
            (r#"say "hi""#, r#""say ""hi""""#),
            ("a=b", r#""a=b""#),
        ];
        for (arg, want) in cases {
            assert_eq!(cmd_arg(arg), want, "{arg:?}");
        }
    }

    #[test]
    fn signal_numbers_round_trip() {
        for s in [
            Sig::Hangup,
            Sig::Interrupt,
            Sig::Quit,
            Sig::Kill,
            Sig::Terminate,
        ] {
            assert_eq!(Sig::from_number(s.number()), Some(s));
        }
        assert_eq!(Sig::from_number(4), None);
        assert_eq!(Sig::Terminate.as_str(), "SIGTERM");
    }

    /// `command`, run by the shell with stdout piped, and a reader of it.
    fn piped(command: &str) -> (tokio::process::Child, StoppableReader, ReadStop) {
        let mut cmd = tokio::process::Command::from(shell(command));
        cmd.stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("the shell starts");
        let out = child.stdout.take().expect("piped");
        let (reader, stop) = stoppable(out).expect("a reader");
        (child, reader, stop)
    }

    fn runtime() -> tokio::runtime::Runtime {
        let mut b = tokio::runtime::Builder::new_current_thread();
        b.enable_all().build().expect("a runtime")
    }

    #[test]
    fn a_stoppable_reader_reads_to_the_end() {
        let rt = runtime();
        let _guard = rt.enter();
        let (mut child, mut reader, _stop) = piped("echo one");
        let mut buf = [0u8; 64];
        let mut seen = Vec::new();
        loop {
            match reader.read(&mut buf) {
                Got::Bytes(n) => seen.extend_from_slice(&buf[..n]),
                Got::End => break,
                Got::Stopped => panic!("stopped while its stop is held"),
            }
        }
        assert_eq!(String::from_utf8_lossy(&seen).trim_end(), "one");
        assert_eq!(reader.read(&mut buf), Got::End);
        drop(rt.block_on(child.wait()));
    }

    /// A read that waits on a pipe a process holds open ends with the stop
    /// (Windows waits for the pipe to close, which the job's end does).
    #[cfg(unix)]
    #[test]
    fn a_stop_ends_a_read_that_waits() {
        let rt = runtime();
        let _guard = rt.enter();
        let (mut child, mut reader, stop) = piped("sleep 30");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let _ = tx.send(reader.read(&mut buf));
        });
        let waiting = rx.recv_timeout(std::time::Duration::from_millis(200));
        assert!(waiting.is_err(), "the read waits for bytes: {waiting:?}");
        drop(stop);
        let got = rx.recv_timeout(std::time::Duration::from_secs(10));
        let _ = child.start_kill();
        assert_eq!(got, Ok(Got::Stopped));
    }
}
