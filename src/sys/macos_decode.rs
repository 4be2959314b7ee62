//! The pure half of process identity on macOS: the bytes `sysctl` answers
//! with, decoded. Nothing here calls the OS, so it compiles and is tested on
//! every platform (`sys/macos.rs` makes the calls).
//!
//! The layouts are those of the LP64 Darwin ABI, the same on both Apple
//! targets (arm64 and x86_64, little-endian): `struct kinfo_proc` of
//! `<sys/sysctl.h>` (an `extern_proc` then an `eproc`, 648 bytes) and the
//! `KERN_PROCARGS2` buffer. The offsets are checked below against a field by
//! field transcription of the header; on a Mac, `can_inspect_processes`
//! also checks them against `proc_pidinfo` before any answer is trusted.

#![cfg_attr(not(target_os = "macos"), allow(dead_code))]

use super::ProcSnapshot;

/// `sizeof(struct kinfo_proc)` for a 64-bit process.
pub const KINFO_PROC_SIZE: usize = 648;
/// `kp_proc.p_un.__p_starttime.tv_sec` (`time_t`, 8 bytes).
const START_SEC: usize = 0;
/// `kp_proc.p_un.__p_starttime.tv_usec` (`suseconds_t`, 4 bytes).
const START_USEC: usize = 8;
/// `kp_proc.p_stat` (one `char`: `SIDL`, `SRUN`, ..., `SZOMB`).
const STAT: usize = 36;
/// `kp_proc.p_pid`.
const PID: usize = 40;
/// `kp_proc.p_comm`: `MAXCOMLEN + 1` bytes, NUL-terminated.
const COMM: usize = 243;
const COMM_LEN: usize = 17;
/// `kp_eproc.e_pgid`: `kp_eproc` starts at 296 (`sizeof(struct extern_proc)`),
/// `e_pgid` is 268 bytes into it.
const PGID: usize = 296 + 268;

/// `p_stat` of a process that exited and was not reaped (`<sys/proc.h>`).
pub const SZOMB: u8 = 5;

/// One `kinfo_proc`, the fields vf uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kinfo {
    pub pid: i32,
    pub snapshot: ProcSnapshot,
    /// The command name (`p_comm`, at most 16 bytes).
    pub comm: String,
}

fn bytes<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    buf.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn i32_at(buf: &[u8], at: usize) -> Option<i32> {
    bytes(buf, at).map(i32::from_ne_bytes)
}

fn i64_at(buf: &[u8], at: usize) -> Option<i64> {
    bytes(buf, at).map(i64::from_ne_bytes)
}

/// A `timeval` as microseconds since the epoch, exactly; `None` for what no
/// kernel writes (a negative time, microseconds out of range, an overflow).
pub fn micros(sec: i64, usec: i64) -> Option<u64> {
    if !(0..1_000_000).contains(&usec) {
        return None;
    }
    u64::try_from(sec)
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(usec as u64)
}

/// The `kinfo_proc` at the start of `rec`; `None` if `rec` is too short or
/// holds an impossible start time.
pub fn decode_kinfo(rec: &[u8]) -> Option<Kinfo> {
    let rec = rec.get(..KINFO_PROC_SIZE)?;
    let start_time = micros(i64_at(rec, START_SEC)?, i64::from(i32_at(rec, START_USEC)?))?;
    let pgid = i32_at(rec, PGID)?;
    let comm = &rec[COMM..COMM + COMM_LEN];
    let comm = &comm[..comm.iter().position(|&b| b == 0).unwrap_or(COMM_LEN)];
    Some(Kinfo {
        pid: i32_at(rec, PID)?,
        snapshot: ProcSnapshot {
            start_time,
            zombie: rec[STAT] == SZOMB,
            // A zombie may have left its group already (the kernel then
            // writes no group): 0 is nobody's group.
            group: (pgid > 0).then_some(pgid),
        },
        comm: String::from_utf8_lossy(comm).into_owned(),
    })
}

/// The records of a `KERN_PROC` answer (an array of `kinfo_proc`); a
/// trailing partial record or an undecodable one is skipped.
pub fn decode_kinfo_list(buf: &[u8]) -> impl Iterator<Item = Kinfo> + '_ {
    buf.chunks_exact(KINFO_PROC_SIZE).filter_map(decode_kinfo)
}

/// The arguments in a `KERN_PROCARGS2` buffer, joined by spaces: `argc`
/// (a native `int`), the executable path and the NULs that pad it, then
/// `argc` NUL-terminated arguments, then the environment (never read). A
/// truncated buffer gives the arguments it holds; `None` when it holds none.
pub fn decode_procargs2(buf: &[u8]) -> Option<String> {
    let argc = usize::try_from(i32_at(buf, 0)?).ok().filter(|&n| n > 0)?;
    let rest = &buf[4..];
    let path_end = rest.iter().position(|&b| b == 0)?;
    let args = &rest[path_end..];
    let args = &args[args.iter().position(|&b| b != 0)?..];
    // Up to the NUL that ends argument `argc`, or the end of what is there.
    let end = args
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == 0)
        .nth(argc - 1)
        .map_or(args.len(), |(i, _)| i);
    Some(super::join_args(&args[..end])).filter(|s| !s.is_empty())
}

/// The `kern.bootsessionuuid` string (a UUID made at each boot): up to its
/// NUL, printable, non-empty; anything else proves nothing.
pub fn boot_session(raw: &[u8]) -> Option<String> {
    let s = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
    let s = std::str::from_utf8(s).ok()?.trim();
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())).then(|| s.to_string())
}

/// Whole seconds from `start` to `now`, both microseconds since the epoch
/// (0 if the clock was set back below the start).
pub fn age_secs(now: u64, start: u64) -> u64 {
    now.saturating_sub(start) / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// `struct kinfo_proc` of `<sys/sysctl.h>` as a 64-bit process receives
    /// it, field by field: pointers as `u64`, `char` arrays as bytes. Only
    /// the tests read it: the decoder reads bytes at the constants above,
    /// and these check the constants.
    #[allow(dead_code)]
    #[repr(C)]
    struct Timeval {
        tv_sec: i64,
        tv_usec: i32,
    }

    #[allow(dead_code)]
    #[repr(C)]
    struct ExternProc {
        p_starttime: Timeval, // the union with two pointers: 16 bytes either way
        p_vmspace: u64,
        p_sigacts: u64,
        p_flag: i32,
        p_stat: u8,
        p_pid: i32,
        p_oppid: i32,
        p_dupfd: i32,
        user_stack: u64,
        exit_thread: u64,
        p_debugger: i32,
        sigwait: i32,
        p_estcpu: u32,
        p_cpticks: i32,
        p_pctcpu: u32,
        p_wchan: u64,
        p_wmesg: u64,
        p_swtime: u32,
        p_slptime: u32,
        p_realtimer: [Timeval; 2],
        p_rtime: Timeval,
        p_uticks: u64,
        p_sticks: u64,
        p_iticks: u64,
        p_traceflag: i32,
        p_tracep: u64,
        p_siglist: i32,
        p_textvp: u64,
        p_holdcnt: i32,
        p_sigmask: u32,
        p_sigignore: u32,
        p_sigcatch: u32,
        p_priority: u8,
        p_usrpri: u8,
        p_nice: i8,
        p_comm: [u8; 17],
        p_pgrp: u64,
        p_addr: u64,
        p_xstat: u16,
        p_acflag: u16,
        p_ru: u64,
    }

    #[allow(dead_code)]
    #[repr(C)]
    struct Pcred {
        pc_lock: [u8; 72],
        pc_ucred: u64,
        p_ruid: u32,
        p_svuid: u32,
        p_rgid: u32,
        p_svgid: u32,
        p_refcnt: i32,
    }

    #[allow(dead_code)]
    #[repr(C)]
    struct Ucred {
        cr_ref: i32,
        cr_uid: u32,
        cr_ngroups: i16,
        cr_groups: [u32; 16],
    }

    #[allow(dead_code)]
    #[repr(C)]
    struct Vmspace {
        vm_refcnt: i32,
        vm_shm: u64,
        vm_sizes: [i32; 5],
        vm_addrs: [u64; 3],
    }

    #[allow(dead_code)]
    #[repr(C)]
    struct Eproc {
        e_paddr: u64,
        e_sess: u64,
        e_pcred: Pcred,
        e_ucred: Ucred,
        e_vm: Vmspace,
        e_ppid: i32,
        e_pgid: i32,
        e_jobc: i16,
        e_tdev: i32,
        e_tpgid: i32,
        e_tsess: u64,
        e_wmesg: [u8; 8],
        e_xsize: i32,
        e_xrssize: i16,
        e_xccount: i16,
        e_xswrss: i16,
        e_flag: i32,
        e_login: [u8; 12],
        e_spare: [i32; 4],
    }

    #[allow(dead_code)]
    #[repr(C)]
    struct KinfoProc {
        kp_proc: ExternProc,
        kp_eproc: Eproc,
    }

    // The transcription's layout is the Darwin one only where `u64` is
    // 8-aligned in a struct, as on every 64-bit host.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn offsets_match_the_header() {
        assert_eq!(size_of::<KinfoProc>(), KINFO_PROC_SIZE);
        assert_eq!(size_of::<ExternProc>(), 296);
        assert_eq!(offset_of!(KinfoProc, kp_proc.p_starttime.tv_sec), START_SEC);
        assert_eq!(
            offset_of!(KinfoProc, kp_proc.p_starttime.tv_usec),
            START_USEC
        );
        assert_eq!(offset_of!(KinfoProc, kp_proc.p_stat), STAT);
        assert_eq!(offset_of!(KinfoProc, kp_proc.p_pid), PID);
        assert_eq!(offset_of!(KinfoProc, kp_proc.p_comm), COMM);
        assert_eq!(offset_of!(KinfoProc, kp_eproc), 296);
        assert_eq!(offset_of!(KinfoProc, kp_eproc.e_pgid), PGID);
    }

    /// A `kinfo_proc` image, each field put where the transcription says.
    struct Rec(Vec<u8>);

    impl Rec {
        fn new() -> Rec {
            Rec(vec![0; size_of::<KinfoProc>()])
        }
        fn put(mut self, at: usize, v: &[u8]) -> Rec {
            self.0[at..at + v.len()].copy_from_slice(v);
            self
        }
        fn process(pid: i32, sec: i64, usec: i32, stat: u8, pgid: i32, comm: &[u8]) -> Rec {
            Rec::new()
                .put(offset_of!(KinfoProc, kp_proc.p_pid), &pid.to_ne_bytes())
                .put(
                    offset_of!(KinfoProc, kp_proc.p_starttime.tv_sec),
                    &sec.to_ne_bytes(),
                )
                .put(
                    offset_of!(KinfoProc, kp_proc.p_starttime.tv_usec),
                    &usec.to_ne_bytes(),
                )
                .put(offset_of!(KinfoProc, kp_proc.p_stat), &[stat])
                .put(offset_of!(KinfoProc, kp_eproc.e_pgid), &pgid.to_ne_bytes())
                .put(offset_of!(KinfoProc, kp_proc.p_comm), comm)
                // Neighbours that must not leak into the fields read.
                .put(offset_of!(KinfoProc, kp_proc.p_flag), &[0xff; 4])
                .put(offset_of!(KinfoProc, kp_eproc.e_ppid), &7i32.to_ne_bytes())
                .put(offset_of!(KinfoProc, kp_eproc.e_jobc), &[0xff; 2])
        }
    }

    #[test]
    fn a_record_decodes_to_its_fields() {
        let r = Rec::process(4242, 1_700_000_123, 456_789, 2, 4240, b"codex\0");
        assert_eq!(
            decode_kinfo(&r.0),
            Some(Kinfo {
                pid: 4242,
                snapshot: ProcSnapshot {
                    start_time: 1_700_000_123_456_789,
                    zombie: false,
                    group: Some(4240),
                },
                comm: "codex".into(),
            })
        );
    }

    #[test]
    fn zombies_and_groupless_records() {
        let r = Rec::process(9, 5, 0, SZOMB, 0, b"sh\0");
        let k = decode_kinfo(&r.0).unwrap();
        assert!(k.snapshot.zombie);
        assert_eq!(k.snapshot.group, None);
        assert_eq!(k.snapshot.start_time, 5_000_000);
        // Every other state is alive (SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4).
        for stat in 1..=4 {
            let r = Rec::process(9, 5, 0, stat, 9, b"sh\0");
            assert!(!decode_kinfo(&r.0).unwrap().snapshot.zombie, "{stat}");
        }
    }

    #[test]
    fn a_full_command_name_is_not_read_past_its_field() {
        let r = Rec::process(1, 1, 1, 2, 1, &[b'x'; 17]);
        assert_eq!(decode_kinfo(&r.0).unwrap().comm, "x".repeat(17));
        let r = Rec::process(1, 1, 1, 2, 1, b"\xffab\0");
        assert_eq!(decode_kinfo(&r.0).unwrap().comm, "\u{fffd}ab");
    }

    #[test]
    fn short_or_impossible_records_decode_to_nothing() {
        let r = Rec::process(4242, 1_700_000_000, 1, 2, 4240, b"a\0");
        assert_eq!(decode_kinfo(&r.0[..KINFO_PROC_SIZE - 1]), None);
        assert_eq!(decode_kinfo(&[]), None);
        let r = Rec::process(4242, 1_700_000_000, 1_000_000, 2, 4240, b"a\0");
        assert_eq!(decode_kinfo(&r.0), None);
        let r = Rec::process(4242, -1, 0, 2, 4240, b"a\0");
        assert_eq!(decode_kinfo(&r.0), None);
        let r = Rec::process(4242, 1, -1, 2, 4240, b"a\0");
        assert_eq!(decode_kinfo(&r.0), None);
    }

    #[test]
    fn lists_skip_a_trailing_partial_record() {
        let mut buf = Rec::process(10, 100, 1, 2, 10, b"a\0").0;
        buf.extend(Rec::process(11, 100, 2, SZOMB, 10, b"b\0").0);
        buf.extend(&Rec::process(12, 100, 3, 2, 10, b"c\0").0[..100]);
        let pids: Vec<(i32, bool)> = decode_kinfo_list(&buf)
            .map(|k| (k.pid, k.snapshot.zombie))
            .collect();
        assert_eq!(pids, [(10, false), (11, true)]);
        assert_eq!(decode_kinfo_list(&[]).count(), 0);
    }

    #[test]
    fn start_times_are_exact_microseconds() {
        assert_eq!(micros(1_700_000_000, 123_456), Some(1_700_000_000_123_456));
        assert_eq!(micros(0, 0), Some(0));
        assert_eq!(micros(0, 999_999), Some(999_999));
        assert_eq!(micros(0, 1_000_000), None);
        assert_eq!(micros(-1, 0), None);
        assert_eq!(micros(1, -1), None);
        assert_eq!(micros(i64::MAX, 0), None);
        assert_eq!(age_secs(10_999_999, 1_000_000), 9);
        assert_eq!(age_secs(1, 2), 0);
    }

    /// `argc`, the executable path, its padding, the arguments, the
    /// environment, as the kernel lays out `KERN_PROCARGS2`.
    fn procargs(argc: i32, path: &str, pad: usize, args: &[&str], env: &[&str]) -> Vec<u8> {
        let mut b = argc.to_ne_bytes().to_vec();
        b.extend(path.as_bytes());
        b.extend(std::iter::repeat_n(0, 1 + pad));
        for a in args.iter().chain(env) {
            b.extend(a.as_bytes());
            b.push(0);
        }
        b
    }

    #[test]
    fn procargs2_gives_the_arguments_not_the_path_nor_the_environment() {
        let b = procargs(
            3,
            "/opt/homebrew/bin/codex",
            7,
            &["codex", "exec", "--json"],
            &["PATH=/usr/bin", "HOME=/Users/me"],
        );
        assert_eq!(decode_procargs2(&b).as_deref(), Some("codex exec --json"));
        // No padding after the path at all.
        let b = procargs(2, "/bin/sh", 0, &["sh", "-c"], &["A=1"]);
        assert_eq!(decode_procargs2(&b).as_deref(), Some("sh -c"));
        // An empty argument in the middle is dropped, as on Linux.
        let b = procargs(3, "/bin/x", 2, &["x", "", "y"], &["A=1"]);
        assert_eq!(decode_procargs2(&b).as_deref(), Some("x y"));
        // Not UTF-8: replaced, not refused.
        let mut b = procargs(1, "/bin/x", 1, &[], &[]);
        b.extend(b"x\xff\0");
        assert_eq!(decode_procargs2(&b).as_deref(), Some("x\u{fffd}"));
    }

    #[test]
    fn truncated_or_hostile_procargs2_never_panics() {
        let full = procargs(3, "/bin/codex", 3, &["codex", "exec", "--json"], &["A=1"]);
        for n in 0..full.len() {
            let _ = decode_procargs2(&full[..n]);
        }
        // Cut inside the arguments: what is there.
        let cut = &full[..full.len() - "on\0A=1\0".len()];
        assert_eq!(decode_procargs2(cut).as_deref(), Some("codex exec --js"));
        // Cut inside the path, or before any argument: nothing.
        assert_eq!(decode_procargs2(&full[..8]), None);
        assert_eq!(decode_procargs2(&full[..4 + 10 + 2]), None);
        assert_eq!(decode_procargs2(&[1, 0, 0]), None);
        // argc of 0 or below.
        for argc in [0, -1, i32::MIN] {
            let b = procargs(argc, "/bin/x", 1, &["x"], &["A=1"]);
            assert_eq!(decode_procargs2(&b), None, "{argc}");
        }
        // An argc beyond what is there: every string, bounded by the buffer.
        let b = procargs(i32::MAX, "/bin/x", 1, &["x", "y"], &[]);
        assert_eq!(decode_procargs2(&b).as_deref(), Some("x y"));
        // Only NULs after the path.
        let b = procargs(2, "/bin/x", 40, &[], &[]);
        assert_eq!(decode_procargs2(&b), None);
    }

    #[test]
    fn boot_sessions_are_read_up_to_their_nul() {
        let uuid = "8F1A3B52-0C55-4E4B-9D6A-2C1E6F0A7B91";
        assert_eq!(
            boot_session(format!("{uuid}\0").as_bytes()).as_deref(),
            Some(uuid)
        );
        assert_eq!(boot_session(uuid.as_bytes()).as_deref(), Some(uuid));
        assert_eq!(boot_session(b"\0garbage"), None);
        assert_eq!(boot_session(b""), None);
        assert_eq!(boot_session(b"a b\0"), None);
        assert_eq!(boot_session(b"\xff\xfe\0"), None);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..1400)) {
            let _ = decode_procargs2(&b);
            let _ = decode_kinfo(&b);
            let _ = decode_kinfo_list(&b).count();
            let _ = boot_session(&b);
        }
    }
}
