//! Process identity on Linux, from `/proc`: the start time is field 22 of
//! `/proc/<pid>/stat` (clock ticks since boot), the boot identity
//! `/proc/sys/kernel/random/boot_id`.

use super::ProcSnapshot;

pub fn can_inspect_processes() -> bool {
    std::path::Path::new("/proc/self/stat").exists()
}

pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

pub fn process(pid: u32) -> std::io::Result<Option<ProcSnapshot>> {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => parse_stat(&text).map(Some).ok_or_else(|| {
            let why = format!("/proc/{pid}/stat does not read as a stat line");
            std::io::Error::new(std::io::ErrorKind::InvalidData, why)
        }),
        // ESRCH: it exited between the open and the read.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The fields of a `/proc/<pid>/stat` line vf uses. The command name (field
/// 2) is in parentheses and may itself contain spaces or parentheses:
/// fields are counted after the LAST `)`.
fn parse_stat(text: &str) -> Option<ProcSnapshot> {
    let rest: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    // `rest[0]` is field 3 (the state: `Z` zombie, `X` dead), `rest[2]`
    // field 5 (the group), `rest[19]` field 22.
    let state = rest.first()?.chars().next()?;
    Some(ProcSnapshot {
        start_time: rest.get(19)?.parse().ok()?,
        zombie: matches!(state, 'Z' | 'X'),
        group: Some(rest.get(2)?.parse().ok()?),
    })
}

/// Seconds since `start_time` (clock ticks since boot), from `/proc/uptime`.
pub fn age_secs(start_time: u64) -> Option<u64> {
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return None;
    }
    let started = start_time as f64 / ticks as f64;
    Some((uptime - started).max(0.0) as u64)
}

/// The NUL-separated argv joined by spaces, else `[comm]`.
pub fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.iter().any(|&b| b != 0) {
        return Some(super::join_args(&raw));
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(format!("[{}]", comm.trim_end()))
}

pub fn group_members(group: i32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| live_in(*pid, group))
        .collect()
}

/// Whether `pid` is a running member of `group` (a process vf cannot read
/// is none: the group's members are only reported, never signalled one by one).
fn live_in(pid: u32, group: i32) -> bool {
    matches!(process(pid), Ok(Some(s)) if s.group == Some(group) && !s.zombie)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_with_parentheses_in_the_name() {
        let line = "4242 (a) b (c)) S 1 4240 4240 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
        assert_eq!(
            parse_stat(line),
            Some(ProcSnapshot {
                start_time: 987_654,
                zombie: false,
                group: Some(4240)
            })
        );
        let zombie = line.replace(") S ", ") Z ");
        assert!(parse_stat(&zombie).unwrap().zombie);
        assert_eq!(parse_stat("4242 (x) S 1"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn this_process_is_readable() {
        let me = process(std::process::id()).unwrap().unwrap();
        assert_eq!(me.group, Some(nix::unistd::getpgrp().as_raw()));
        assert!(!me.zombie);
        assert!(age_secs(me.start_time).is_some());
        assert!(boot_id().is_some_and(|b| b.len() >= 32));
        assert!(matches!(process(0x3fff_fff0), Ok(None)));
    }
}
