//! Process identity on macOS, from `sysctl`. A process is its `kinfo_proc`
//! (`KERN_PROC_PID`): the start time `p_starttime`, kept exactly as
//! microseconds since the epoch, the state `p_stat` (`SZOMB`: a zombie) and
//! the group `e_pgid`. The boot identity is `kern.bootsessionuuid`, a UUID
//! the kernel makes at each boot. The command line is `KERN_PROCARGS2`.
//!
//! Only the system calls are here; what they answer is decoded in
//! `macos_decode.rs`, which is tested on every platform.
//!
//! Not `kern.boottime` for the boot identity: the kernel moves it whenever
//! the clock is set (`clock_set_calendar_microtime` shifts the boot time by
//! the step to keep the uptime), so a clock correction would read as a new
//! boot, and a live process as gone. The start times do not move.

use std::ffi::{c_int, c_uint};
use std::io;

use super::ProcSnapshot;
use super::macos_decode::{self as decode, KINFO_PROC_SIZE, Kinfo};

// The decoder keeps its own copies of these header values.
const _: () = assert!(decode::SZOMB as u32 == libc::SZOMB);

/// `sysctl(mib)`: the bytes written into `buf`, or with no `buf` the size
/// the answer would need.
fn sysctl(mib: &mut [c_int], buf: Option<&mut [u8]>) -> io::Result<usize> {
    let (ptr, mut len) = match buf {
        Some(b) => (b.as_mut_ptr().cast(), b.len()),
        None => (std::ptr::null_mut(), 0),
    };
    let cap = len;
    // SAFETY: `mib` holds `mib.len()` ints. `ptr` is null (a size query:
    // the kernel only writes `len`) or writable for `len` bytes, of which the
    // kernel writes at most `len` and then sets `len` to what it wrote.
    // Nothing is set (new value null, length 0).
    let r = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            mib.len() as c_uint,
            ptr,
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(if ptr.is_null() { len } else { len.min(cap) })
}

/// The `kinfo_proc` of `pid`; `Ok(None)` when there is no such process (the
/// kernel then answers with success and nothing written, never `ESRCH`).
fn kinfo(pid: i32) -> io::Result<Option<Kinfo>> {
    let mut mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid];
    // One pid has one record; room for two keeps a surprise from being an
    // `ENOMEM`.
    let mut buf = vec![0u8; 2 * KINFO_PROC_SIZE];
    let n = sysctl(&mut mib, Some(&mut buf))?;
    if n == 0 {
        return Ok(None);
    }
    match decode::decode_kinfo_list(&buf[..n]).find(|k| k.pid == pid) {
        Some(k) => Ok(Some(k)),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("kern.proc.pid.{pid} answered {n} bytes without its record"),
        )),
    }
}

/// `proc_pidinfo(PROC_PIDTBSDINFO)`: the same facts through another call and
/// a layout libc declares, to check the decoder's offsets against.
fn bsdinfo(pid: i32) -> Option<libc::proc_bsdinfo> {
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as c_int;
    // SAFETY: `proc_bsdinfo` is integers and byte arrays only: all zeroes is
    // a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is writable for `size` bytes, the most the call writes.
    let n =
        unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size) };
    (n == size).then_some(info)
}

/// Whether a decoded record says what `proc_pidinfo` says of the same
/// process: start time, state, group and pid.
fn agrees(k: &Kinfo, b: &libc::proc_bsdinfo) -> bool {
    let start = i64::try_from(b.pbi_start_tvsec)
        .ok()
        .zip(i64::try_from(b.pbi_start_tvusec).ok())
        .and_then(|(s, us)| decode::micros(s, us));
    start == Some(k.snapshot.start_time)
        && (b.pbi_status == libc::SZOMB) == k.snapshot.zombie
        && i32::try_from(b.pbi_pgid).ok() == k.snapshot.group
        && i32::try_from(b.pbi_pid).ok() == Some(k.pid)
}

/// Whether answers can be trusted here: this process decodes to what
/// `proc_pidinfo` and `getpgrp` say of it (the offsets are right on this
/// macOS), and launchd (pid 1) is readable (no sandbox hides other
/// processes). Otherwise every liveness answer is "unknown".
pub fn can_inspect_processes() -> bool {
    let Ok(me) = i32::try_from(std::process::id()) else {
        return false;
    };
    let Ok(Some(k)) = kinfo(me) else {
        return false;
    };
    let launchd = matches!(kinfo(1), Ok(Some(l)) if l.pid == 1 && !l.snapshot.zombie);
    launchd
        && !k.snapshot.zombie
        && k.snapshot.group == Some(nix::unistd::getpgrp().as_raw())
        && bsdinfo(me).is_some_and(|b| agrees(&k, &b))
}

pub fn boot_id() -> Option<String> {
    let mut buf = [0u8; 128];
    let mut len = buf.len();
    // SAFETY: the name is a NUL-terminated C string; `buf` is writable for
    // `len` bytes, the most the kernel writes (it then sets `len`). Nothing
    // is set.
    let r = unsafe {
        libc::sysctlbyname(
            c"kern.bootsessionuuid".as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return None;
    }
    decode::boot_session(&buf[..len.min(buf.len())])
}

/// `None` only when the kernel says there is no such process. A failed read
/// cannot be told apart here (the interface has no "unknown"); it is
/// logged and reads as `None`, as a failed `/proc` read does on Linux.
/// `can_inspect_processes` has proved the reader on this process and on
/// launchd before any of it is used.
pub fn process(pid: u32) -> io::Result<Option<ProcSnapshot>> {
    // No process has a pid past i32's range.
    let Ok(pid) = i32::try_from(pid) else {
        return Ok(None);
    };
    Ok(kinfo(pid)?.map(|k| k.snapshot))
}

/// Seconds since `start_time` (microseconds since the epoch), by the wall
/// clock: a clock set back or forward moves it, the start time not.
pub fn age_secs(start_time: u64) -> Option<u64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(decode::age_secs(
        u64::try_from(now.as_micros()).ok()?,
        start_time,
    ))
}

/// The arguments (`KERN_PROCARGS2`: this user's processes, or any as root)
/// joined by spaces, else `[p_comm]` (any process).
pub fn command_line(pid: u32) -> Option<String> {
    let pid = i32::try_from(pid).ok()?;
    if let Some(args) = procargs(pid).as_deref().and_then(decode::decode_procargs2) {
        return Some(args);
    }
    let comm = kinfo(pid).ok()??.comm;
    (!comm.is_empty()).then(|| format!("[{comm}]"))
}

fn procargs(pid: i32) -> Option<Vec<u8>> {
    let mut argmax = [0u8; 4];
    let max = match sysctl(&mut [libc::CTL_KERN, libc::KERN_ARGMAX], Some(&mut argmax)) {
        Ok(4) => i32::from_ne_bytes(argmax),
        _ => 0,
    };
    let size = usize::try_from(max)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(1 << 20)
        .clamp(4096, 16 << 20);
    let mut buf = vec![0u8; size];
    let n = sysctl(
        &mut [libc::CTL_KERN, libc::KERN_PROCARGS2, pid],
        Some(&mut buf),
    )
    .ok()?;
    buf.truncate(n);
    Some(buf)
}

/// The group's live members, from `KERN_PROC_PGRP` (zombies dropped).
pub fn group_members(group: i32) -> Vec<u32> {
    if group <= 0 {
        return Vec::new();
    }
    let mut mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PGRP, group];
    // The group can grow between the size query and the read: `ENOMEM`,
    // asked again.
    for _ in 0..4 {
        let Ok(needed) = sysctl(&mut mib, None) else {
            break;
        };
        let mut buf = vec![0u8; needed + 4 * KINFO_PROC_SIZE];
        match sysctl(&mut mib, Some(&mut buf)) {
            Ok(n) => {
                return decode::decode_kinfo_list(&buf[..n])
                    .filter(|k| !k.snapshot.zombie && k.snapshot.group == Some(group))
                    .filter_map(|k| u32::try_from(k.pid).ok())
                    .collect();
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => continue,
            Err(_) => break,
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    #[test]
    fn this_process_is_readable_and_agrees_with_proc_pidinfo() {
        assert!(can_inspect_processes());
        let pid = std::process::id();
        let k = kinfo(pid as i32).unwrap().unwrap();
        let b = bsdinfo(pid as i32).unwrap();
        assert!(agrees(&k, &b), "{k:?}");
        // The name too: `pbi_comm` keeps at most 15 of its bytes, `p_comm` 16.
        let short: Vec<u8> = b
            .pbi_comm
            .iter()
            .map(|&c| c as u8)
            .take_while(|&c| c != 0)
            .collect();
        assert!(!short.is_empty());
        assert_eq!(
            k.comm.as_bytes().get(..short.len()),
            Some(&short[..]),
            "{k:?}"
        );
        let me = process(pid).unwrap().unwrap();
        assert_eq!(me.group, Some(nix::unistd::getpgrp().as_raw()));
        assert!(!me.zombie);
        // Started within the last day, by the wall clock.
        assert!(age_secs(me.start_time).is_some_and(|a| a < 86_400));
        assert!(matches!(process(0x3fff_fff0), Ok(None)));
        assert!(kinfo(0x3fff_fff0).unwrap().is_none());
    }

    #[test]
    fn the_boot_identity_is_a_stable_uuid() {
        let id = boot_id().unwrap();
        assert_eq!(id.len(), 36, "{id}");
        assert_eq!(boot_id(), Some(id));
    }

    #[test]
    fn the_command_line_is_argv() {
        let want: Vec<String> = std::env::args().filter(|a| !a.is_empty()).collect();
        assert_eq!(command_line(std::process::id()), Some(want.join(" ")));
    }

    #[test]
    fn a_group_lists_its_live_members_only() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(command_line(pid).as_deref(), Some("sleep 30"));
        assert_eq!(group_members(pid as i32), [pid]);
        let started = process(pid).unwrap().unwrap().start_time;
        child.kill().unwrap();
        let t = Instant::now();
        while !process(pid).unwrap().unwrap().zombie {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(process(pid).unwrap().unwrap().start_time, started);
        assert_eq!(group_members(pid as i32), Vec::<u32>::new());
        child.wait().unwrap();
        assert!(matches!(process(pid), Ok(None)));
    }
}
