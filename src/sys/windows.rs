//! Windows: containment in a kill-on-close Job Object, identity from the
//! process creation time, write-through replaces.
//!
//! - **Containment.** The child is created suspended in a new console
//!   process group; [`Container::adopt`] puts it into a fresh Job Object
//!   (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`) and only then resumes it, so
//!   nothing it starts is ever outside the job: `kernel-contained`. When vf's
//!   last handle to the job closes (vf ends, even killed), Windows ends every
//!   process in it.
//! - **Stops.** There are no POSIX signals. [`Sig::Interrupt`] and
//!   [`Sig::Terminate`] are a polite stop: `CTRL_BREAK_EVENT` to the child's
//!   console process group (the child was made a group leader, and Ctrl-C is
//!   disabled in a new group, so Ctrl-Break is the one event it can get).
//!   When that event cannot be sent (vf has no console, or the child is on
//!   another one), and for every other signal, the whole job is terminated
//!   with exit code 128 + the signal number. The grace rule (`process/grace.rs`)
//!   still ends the job (`Sig::Kill`) if a polite stop is ignored.
//! - **Identity.** The creation time of a process (100 ns units since 1601,
//!   wall clock) names it together with its pid; no PowerShell, no `ps`.
//! - **Files.** No flag makes an open fail on a link: [`OpenExt::no_follow`]
//!   opens the link itself (`FILE_FLAG_OPEN_REPARSE_POINT`) and
//!   [`OpenExt::open_checked`] refuses it with `ERROR_STOPPED_ON_SYMLINK`.
//!   Windows has no directory fsync: a durable replace is a write-through
//!   `MoveFileExW`, and [`sync_dir`] has nothing left to do.

use std::ffi::OsStr;
use std::os::windows::ffi::OsStringExt;
use std::os::windows::fs::MetadataExt;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::sync::Arc;

use windows_sys::Win32::Foundation::{
    ERROR_INVALID_PARAMETER, FILETIME, HANDLE, INVALID_HANDLE_VALUE, STILL_ACTIVE, WAIT_OBJECT_0,
};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectExtendedLimitInformation, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::SystemInformation::GetTickCount64;
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, GetExitCodeProcess, GetProcessTimes, INFINITE,
    OpenProcess, OpenThread, PROCESS_NAME_WIN32, PROCESS_QUERY_LIMITED_INFORMATION,
    QueryFullProcessImageNameW, ResumeThread, THREAD_SUSPEND_RESUME, TerminateProcess,
    WaitForSingleObject,
};

pub use super::windows_files::{
    create_private_dir, is_link_refusal, replace_file, sync_dir, try_lock,
};
pub use super::windows_pipe::{StopSignal, StopWait, read_unless_stopped, stop_pair};
use super::{ProcSnapshot, Sig};

pub const CONTAINMENT: (super::Scope, super::Proof) =
    (super::Scope::WindowsJob, super::Proof::KernelContained);

/// An owned handle from a raw one a Win32 call returned (`None` for null
/// or `INVALID_HANDLE_VALUE`, the two failure values).
fn owned(h: HANDLE) -> Option<OwnedHandle> {
    if h.is_null() || h == INVALID_HANDLE_VALUE {
        return None;
    }
    // SAFETY: `h` was just returned open by the system and nothing else
    // owns it: the OwnedHandle closes it once.
    Some(unsafe { OwnedHandle::from_raw_handle(h) })
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle()
}

// ---------------------------------------------------------------- identity

/// A FILETIME as one number (100 ns units since 1601-01-01 UTC).
fn filetime_u64(ft: FILETIME) -> u64 {
    (u64::from(ft.dwHighDateTime) << 32) | u64::from(ft.dwLowDateTime)
}

/// 100 ns units between 1601-01-01 and 1970-01-01.
const UNIX_EPOCH_AS_FILETIME: u64 = 116_444_736_000_000_000;

/// Now, as a FILETIME number.
fn now_filetime() -> Option<u64> {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(UNIX_EPOCH_AS_FILETIME + (since.as_nanos() / 100) as u64)
}

/// Seconds from a creation time to `now` (both FILETIME numbers); 0 when
/// the clock went back.
fn age_between(start: u64, now: u64) -> u64 {
    now.saturating_sub(start) / 10_000_000
}

/// How coarse the boot identity is, in seconds. The boot time is derived
/// (now − time since boot), so two reads differ by the time between the two
/// clock reads and by any step of the wall clock since boot; a coarse
/// bucket keeps it the same across every vf of one boot. Two boots inside
/// one bucket share it, which is harmless here: a process's identity is its
/// pid *and* its creation time, a wall-clock instant no process of another
/// boot has.
const BOOT_BUCKET_SECS: u64 = 600;

/// The boot identity from the Unix time now and the milliseconds since boot.
fn boot_id_from(now_unix_secs: u64, uptime_ms: u64) -> String {
    let boot = now_unix_secs.saturating_sub(uptime_ms / 1000);
    format!(
        "windows-boot-{}",
        boot / BOOT_BUCKET_SECS * BOOT_BUCKET_SECS
    )
}

pub fn can_inspect_processes() -> bool {
    true
}

pub fn boot_id() -> Option<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    // SAFETY: GetTickCount64 takes nothing and only reads a counter.
    let uptime_ms = unsafe { GetTickCount64() };
    Some(boot_id_from(now, uptime_ms))
}

/// A handle to query `pid`, or `None` when there is no such process (or it
/// is not ours to inspect).
fn open_process(pid: u32) -> Option<OwnedHandle> {
    // SAFETY: plain call; a failure returns null, which `owned` rejects.
    owned(unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) })
}

/// What a failed `OpenProcess` says: no such process (`ERROR_INVALID_PARAMETER`),
/// or one vf may not read (another user's, `ERROR_ACCESS_DENIED`): unknown.
fn gone_or_unknown(e: std::io::Error) -> std::io::Result<Option<ProcSnapshot>> {
    match e.raw_os_error() {
        Some(code) if code == ERROR_INVALID_PARAMETER as i32 => Ok(None),
        _ => Err(e),
    }
}

pub fn process(pid: u32) -> std::io::Result<Option<ProcSnapshot>> {
    let Some(h) = open_process(pid) else {
        return gone_or_unknown(std::io::Error::last_os_error());
    };
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: `h` is an open process handle; the four pointers are valid
    // FILETIMEs owned by this frame.
    let ok = unsafe { GetProcessTimes(raw(&h), &mut created, &mut exited, &mut kernel, &mut user) };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut code = 0u32;
    // SAFETY: `h` is an open process handle, `code` a valid u32.
    let ok = unsafe { GetExitCodeProcess(raw(&h), &mut code) };
    Ok(Some(ProcSnapshot {
        start_time: filetime_u64(created),
        // Exited while some handle keeps it known: it runs nothing. (A
        // process that exits with code 259 reads as running: then vf
        // refuses rather than acts, which is the safe side.)
        zombie: ok != 0 && code != STILL_ACTIVE as u32,
        group: None,
    }))
}

pub fn age_secs(start_time: u64) -> Option<u64> {
    Some(age_between(start_time, now_filetime()?))
}

/// The image path (Windows keeps no argv vf can read without reading the
/// process's memory).
pub fn command_line(pid: u32) -> Option<String> {
    let h = open_process(pid)?;
    let mut buf = vec![0u16; 32_768];
    let mut len = buf.len() as u32;
    // SAFETY: `buf` holds `len` u16s; the call writes at most that many
    // and sets `len` to what it wrote.
    let ok = unsafe {
        QueryFullProcessImageNameW(raw(&h), PROCESS_NAME_WIN32, buf.as_mut_ptr(), &mut len)
    };
    if ok == 0 {
        return None;
    }
    buf.truncate(len as usize);
    Some(
        std::ffi::OsString::from_wide(&buf)
            .to_string_lossy()
            .into_owned(),
    )
}

/// No process groups: a job holds the engine's descendants, and the job
/// dies with vf.
pub fn group_members(_group: i32) -> Vec<u32> {
    Vec::new()
}

// ------------------------------------------------------------- containment

/// Created suspended, so it runs nothing before [`Container::adopt`] has put
/// it into its job, and as a new console process group, so Ctrl-Break can be
/// sent to it alone and vf's own Ctrl-C does not reach it unasked.
pub fn contain(cmd: &mut std::process::Command) -> std::io::Result<Contained> {
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP);
    Ok(Contained(()))
}

/// What [`contain`] made: nothing yet (the job is made by [`Container::adopt`]).
#[derive(Debug)]
pub struct Contained(());

#[derive(Debug)]
struct Job {
    job: OwnedHandle,
    /// The leader, duplicated: it keeps the pid from being reused while vf
    /// holds it.
    leader: OwnedHandle,
    pid: u32,
}

/// A kill-on-close Job Object holding the engine and all it starts. The job
/// ends with the last clone.
#[derive(Debug, Clone)]
pub struct Container {
    inner: Arc<Job>,
}

impl Container {
    /// Puts a child started from a [`contain`]ed command (still suspended)
    /// into a new kill-on-close job, then lets it run. If any step fails the
    /// child is terminated: an uncontained engine never runs.
    pub fn adopt(child: &impl ChildHandle, _made: Contained) -> std::io::Result<Container> {
        let handle = child
            .process_handle()
            .ok_or_else(|| std::io::Error::other("the child has no process handle"))?;
        // SAFETY: the child owns this handle and outlives this call.
        let borrowed = unsafe { BorrowedHandle::borrow_raw(handle) };
        let leader = borrowed.try_clone_to_owned()?;
        // SAFETY: GetProcessId only reads the handle's process id.
        let pid = unsafe { windows_sys::Win32::System::Threading::GetProcessId(raw(&leader)) };
        match Self::job_for(&leader, pid) {
            Ok(job) => Ok(Container {
                inner: Arc::new(Job { job, leader, pid }),
            }),
            Err(e) => {
                // SAFETY: `leader` is an open handle with terminate access
                // (a duplicate of the creator's handle).
                unsafe { TerminateProcess(raw(&leader), 1) };
                Err(e)
            }
        }
    }

    fn job_for(leader: &OwnedHandle, pid: u32) -> std::io::Result<OwnedHandle> {
        // SAFETY: no attributes, no name: an anonymous job.
        let job = owned(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })
            .ok_or_else(std::io::Error::last_os_error)?;
        // SAFETY: all-zero is a valid JOBOBJECT_EXTENDED_LIMIT_INFORMATION
        // (plain integers).
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags =
            JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
        // SAFETY: `job` is open; the pointer and size describe `limits`.
        let ok = unsafe {
            SetInformationJobObject(
                raw(&job),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both handles are open.
        if unsafe { AssignProcessToJobObject(raw(&job), raw(leader)) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        if resume_threads(pid)? == 0 {
            return Err(std::io::Error::other(
                "the contained child had no thread to resume",
            ));
        }
        Ok(job)
    }

    /// The leader's pid (the owned-process record's `pgid`).
    pub fn id(&self) -> i32 {
        self.inner.pid as i32
    }

    pub fn signal(&self, sig: Sig) {
        if matches!(sig, Sig::Interrupt | Sig::Terminate) {
            // SAFETY: plain call with a process group id (the leader's pid).
            if unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.inner.pid) } != 0 {
                return;
            }
        }
        // SAFETY: the job handle is open for as long as `self`.
        unsafe { TerminateJobObject(raw(&self.inner.job), 128 + sig.number() as u32) };
    }

    pub fn kill(&self) {
        self.signal(Sig::Kill);
    }

    /// Whether the leader has exited. The duplicated handle keeps its pid
    /// from naming another process meanwhile.
    pub fn leader_exited(&self) -> bool {
        // SAFETY: the leader handle is open (with SYNCHRONIZE: a duplicate
        // of the creator's all-access handle); a zero timeout only polls.
        unsafe { WaitForSingleObject(raw(&self.inner.leader), 0) == WAIT_OBJECT_0 }
    }

    /// Blocks until the leader has exited (a brief command with no timeout).
    pub fn wait_leader_exit(&self) {
        // SAFETY: as in `leader_exited`; INFINITE waits for the exit.
        unsafe { WaitForSingleObject(raw(&self.inner.leader), INFINITE) };
    }
}

/// Resumes every thread of `pid` (a process created suspended has one).
/// Returns how many threads were resumed.
fn resume_threads(pid: u32) -> std::io::Result<usize> {
    // SAFETY: plain call; failure is INVALID_HANDLE_VALUE, which `owned` rejects.
    let snap = owned(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })
        .ok_or_else(std::io::Error::last_os_error)?;
    // SAFETY: all-zero is a valid THREADENTRY32 (plain integers).
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: `snap` is an open snapshot, `entry` a THREADENTRY32 with its size set.
    let mut more = unsafe { Thread32First(raw(&snap), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: plain call; failure is null, which `owned` rejects.
            let thread = owned(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })
                .ok_or_else(std::io::Error::last_os_error)?;
            // SAFETY: `thread` is open with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(raw(&thread)) } == u32::MAX {
                return Err(std::io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(raw(&snap), &mut entry) } != 0;
    }
    Ok(resumed)
}

/// A spawned child vf can adopt into a container (std's or tokio's).
pub trait ChildHandle {
    /// Its process handle, while it is not yet reaped.
    fn process_handle(&self) -> Option<RawHandle>;
}

impl ChildHandle for std::process::Child {
    fn process_handle(&self) -> Option<RawHandle> {
        Some(self.as_raw_handle())
    }
}

impl ChildHandle for tokio::process::Child {
    fn process_handle(&self) -> Option<RawHandle> {
        self.raw_handle()
    }
}

/// A job is kill-on-close: once the vf that held it is gone, so is
/// everything in it, and no other process has a handle to it. There is
/// nothing left to signal, so a record of a dead vf is stale on Windows
/// (`vf doctor --fix` removes it).
pub fn signal_recorded(_id: i32, _sig: Sig) -> std::io::Result<bool> {
    Ok(false)
}

/// No signal reaches a console process of another group on Windows: the
/// child `vf` is terminated instead, and its Job Object ends its engine
/// with it (its marker stays `running` with a dead owner, which `vf resume`
/// takes over). The caller holds the child, so its pid is not reused.
pub fn signal_child(pid: u32, _sig: Sig) -> std::io::Result<bool> {
    use windows_sys::Win32::System::Threading::PROCESS_TERMINATE;
    // SAFETY: plain call; a failure returns null, which `owned` rejects.
    let Some(h) = owned(unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid) }) else {
        return gone_or_unknown(std::io::Error::last_os_error()).map(|_| false);
    };
    // SAFETY: `h` is an open process handle with the terminate right.
    if unsafe { TerminateProcess(raw(&h), 1) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(true)
}

/// The stop requests of the console vf runs in: Ctrl-C as SIGINT,
/// Ctrl-Break as SIGTERM, the console closing as SIGHUP.
pub struct Signals {
    c: tokio::signal::windows::CtrlC,
    brk: tokio::signal::windows::CtrlBreak,
    close: tokio::signal::windows::CtrlClose,
}

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            c: tokio::signal::windows::ctrl_c()?,
            brk: tokio::signal::windows::ctrl_break()?,
            close: tokio::signal::windows::ctrl_close()?,
        })
    }

    /// The next stop request received.
    pub async fn recv(&mut self) -> Sig {
        tokio::select! {
            _ = self.c.recv() => Sig::Interrupt,
            _ = self.brk.recv() => Sig::Terminate,
            _ = self.close.recv() => Sig::Hangup,
        }
    }
}

/// The executable extensions: `PATHEXT`, else Windows' default list.
fn path_exts() -> Vec<String> {
    let var = std::env::var("PATHEXT").unwrap_or_default();
    exts_of(&var)
}

fn exts_of(pathext: &str) -> Vec<String> {
    let list: Vec<String> = pathext
        .split(';')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| e.len() > 1 && e.starts_with('.'))
        .collect();
    if list.is_empty() {
        [".com", ".exe", ".bat", ".cmd"].map(String::from).to_vec()
    } else {
        list
    }
}

/// A regular file (after links) whose extension is an executable one.
pub fn path_from_bytes(bytes: &[u8]) -> std::path::PathBuf {
    std::path::PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

pub fn is_executable(p: &Path) -> bool {
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    let Some(ext) = p.extension().and_then(OsStr::to_str) else {
        return false;
    };
    m.is_file() && path_exts().contains(&format!(".{}", ext.to_ascii_lowercase()))
}

/// The names `name` may have on disk when run: itself if it has an
/// executable extension, else itself with each `PATHEXT` extension.
pub fn executable_names(name: &str) -> Vec<String> {
    let exts = path_exts();
    let lower = name.to_ascii_lowercase();
    if exts.iter().any(|e| lower.ends_with(e.as_str())) {
        return vec![name.to_string()];
    }
    exts.iter().map(|e| format!("{name}{e}")).collect()
}

/// `program` with `args`; a `cmd.exe` program's arguments quoted for cmd.exe.
pub fn command(program: &Path, args: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    let is_cmd_exe = program
        .file_name()
        .is_some_and(|n| n.eq_ignore_ascii_case("cmd.exe"));
    if is_cmd_exe {
        for a in args {
            cmd.raw_arg(super::cmd_arg(a));
        }
    } else {
        cmd.args(args);
    }
    cmd
}

/// `cmd.exe /d /s /c "CMD"`: no AutoRun commands, and with `/s` cmd strips
/// exactly the outer quotes and runs the rest as typed.
pub fn shell(command: &str) -> std::process::Command {
    let cmd_exe = std::env::var_os("SystemRoot")
        .map(|r| Path::new(&r).join("System32").join("cmd.exe"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| "cmd.exe".into());
    let mut cmd = std::process::Command::new(cmd_exe);
    cmd.args(["/d", "/s", "/c"])
        .raw_arg(format!("\"{command}\""));
    cmd
}

/// What tells two versions of a file apart besides its size and mtime. The
/// volume serial and file index need a handle (or unstable std), so this is
/// weaker than Unix's: (0, creation time, last write time), 100 ns units.
pub fn file_stamp(m: &std::fs::Metadata) -> (u64, u64, i128) {
    (0, m.creation_time(), i128::from(m.last_write_time()))
}

pub fn hostname() -> String {
    std::env::var("COMPUTERNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Whether vf runs elevated (its token's `TokenElevation`).
pub fn is_superuser() -> bool {
    use windows_sys::Win32::Security::{
        GetTokenInformation, TOKEN_ELEVATION, TOKEN_QUERY, TokenElevation,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo handle of this process; `token` receives a handle.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return false;
    }
    let Some(token) = owned(token) else {
        return false;
    };
    let mut elevation = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut len = 0u32;
    // SAFETY: `token` is open with TOKEN_QUERY; pointer and size describe `elevation`.
    let ok = unsafe {
        GetTokenInformation(
            raw(&token),
            TokenElevation,
            (&raw mut elevation).cast(),
            size_of::<TOKEN_ELEVATION>() as u32,
            &mut len,
        )
    };
    ok != 0 && elevation.TokenIsElevated != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filetimes_and_ages() {
        let ft = FILETIME {
            dwLowDateTime: 0x89AB_CDEF,
            dwHighDateTime: 0x0123_4567,
        };
        assert_eq!(filetime_u64(ft), 0x0123_4567_89AB_CDEF);
        assert_eq!(age_between(10_000_000, 35_000_000), 2);
        assert_eq!(age_between(35_000_000, 10_000_000), 0);
        let me = process(std::process::id()).unwrap().unwrap();
        assert!(!me.zombie && me.group.is_none());
        assert!(age_secs(me.start_time).is_some_and(|a| a < 3600));
        assert!(command_line(std::process::id()).is_some_and(|c| c.ends_with(".exe")));
    }

    #[test]
    fn boot_ids_are_stable_within_a_bucket() {
        // Booted at 1_000_000_200 s: read twice, 1.5 s apart.
        assert_eq!(
            boot_id_from(1_000_000_300, 100_000),
            boot_id_from(1_000_000_301, 101_500)
        );
        assert_eq!(
            boot_id_from(1_000_000_300, 100_000),
            "windows-boot-1000000200"
        );
        // Booted ten minutes later: another boot.
        assert_ne!(
            boot_id_from(1_000_000_300, 100_000),
            boot_id_from(1_000_000_900, 100_000)
        );
        assert_eq!(boot_id().unwrap(), boot_id().unwrap());
    }

    #[test]
    fn executable_extensions() {
        assert_eq!(exts_of(".COM;.EXE; ;bad;.Cmd"), [".com", ".exe", ".cmd"]);
        assert_eq!(exts_of("").len(), 4);
        let t = tempfile::tempdir().unwrap();
        for n in ["a.cmd", "b.EXE", "c.txt", "d"] {
            std::fs::write(t.path().join(n), "").unwrap();
        }
        assert!(is_executable(&t.path().join("a.cmd")));
        assert!(is_executable(&t.path().join("b.EXE")));
        assert!(!is_executable(&t.path().join("c.txt")));
        assert!(!is_executable(&t.path().join("d")));
        assert!(!is_executable(t.path()));
    }

    #[test]
    fn the_shell_runs_a_command_line() {
        let out = shell("echo one& echo \"two three\"").output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
        assert_eq!(text, "one\n\"two three\"\n");
    }

    #[test]
    fn a_contained_child_runs_in_its_job_and_dies_with_it() {
        let mut cmd = shell("ping -n 30 127.0.0.1 >nul");
        let made = contain(&mut cmd).unwrap();
        let mut child = cmd.spawn().unwrap();
        let c = Container::adopt(&child, made).unwrap();
        assert_eq!(c.id() as u32, child.id());
        let mut inside = 0;
        // SAFETY: both handles are open; `inside` receives a BOOL.
        let ok = unsafe {
            windows_sys::Win32::System::JobObjects::IsProcessInJob(
                child.as_raw_handle(),
                raw(&c.inner.job),
                &mut inside,
            )
        };
        assert!(ok != 0 && inside != 0, "not in its job");
        assert!(!c.leader_exited());
        assert!(matches!(process(child.id()), Ok(Some(s)) if !s.zombie));
        c.kill();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(137));
        assert!(c.leader_exited());
        assert!(matches!(process(child.id()), Ok(Some(s)) if s.zombie));
    }

    #[test]
    fn a_process_vf_may_not_read_is_unknown_not_gone() {
        use windows_sys::Win32::Foundation::ERROR_ACCESS_DENIED;
        let no_such = std::io::Error::from_raw_os_error(ERROR_INVALID_PARAMETER as i32);
        assert!(matches!(gone_or_unknown(no_such), Ok(None)));
        let denied = std::io::Error::from_raw_os_error(ERROR_ACCESS_DENIED as i32);
        assert!(gone_or_unknown(denied).is_err());
    }

    /// A polite stop (Ctrl-Break, or the job's end where that cannot be
    /// sent) ends a contained child.
    #[test]
    fn a_polite_stop_ends_a_contained_child() {
        let mut cmd = shell("ping -n 30 127.0.0.1 >nul");
        let made = contain(&mut cmd).unwrap();
        let mut child = cmd.spawn().unwrap();
        let c = Container::adopt(&child, made).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        c.signal(Sig::Terminate);
        let t0 = std::time::Instant::now();
        while !c.leader_exited() {
            assert!(t0.elapsed().as_secs() < 10, "still running");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // 143: the job was ended (no console to send Ctrl-Break on, as
        // under a test runner); STATUS_CONTROL_C_EXIT: Ctrl-Break reached it.
        let code = child.wait().unwrap().code();
        assert!(
            [Some(143), Some(0xC000_013A_u32 as i32)].contains(&code),
            "{code:?}"
        );
    }
}
