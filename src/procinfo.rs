//! Process identity: a pid alone is never proof that a process is ours.
//! A process is the one we recorded only if pid, start time (field 22 of
//! `/proc/<pid>/stat`) and boot id all match. A zombie is dead: it matches
//! the identity but runs nothing and owns nothing any more.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// `/proc/sys/kernel/random/boot_id`, trimmed. Read once per process: it
/// cannot change while this process lives (every liveness check needs it).
pub fn boot_id() -> Option<String> {
    static BOOT_ID: OnceLock<Option<String>> = OnceLock::new();
    BOOT_ID
        .get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
        .clone()
}

/// Whether `/proc` is there to prove anything (checked once per process).
fn proc_mounted() -> bool {
    static MOUNTED: OnceLock<bool> = OnceLock::new();
    *MOUNTED.get_or_init(|| std::path::Path::new("/proc/self/stat").exists())
}

/// The fields of `/proc/<pid>/stat` vf uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Field 3: `R`, `S`, `Z` (zombie), `X` (dead)...
    pub state: char,
    /// Field 5: the process group.
    pub pgrp: i32,
    /// Field 22: start time in clock ticks since boot.
    pub start_time: u64,
}

impl Stat {
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Reads `/proc/<pid>/stat`; `None` when there is no such process.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may itself contain
    // spaces or parentheses: fields are counted after the LAST ')'.
    let rest: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    // `rest[0]` is field 3.
    Some(Stat {
        state: rest.first()?.chars().next()?,
        pgrp: rest.get(2)?.parse().ok()?,
        start_time: rest.get(19)?.parse().ok()?,
    })
}

/// Start time of `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start_time)
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

/// The command line of `pid` (NUL-separated argv joined by spaces), else its
/// `comm`; control characters are escaped so it is safe to print.
pub fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let text = if raw.iter().any(|&b| b != 0) {
        let args: Vec<String> = raw
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        args.join(" ")
    } else {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        format!("[{}]", comm.trim_end())
    };
    const MAX_CHARS: usize = 200;
    let shown: String = text.escape_debug().take(MAX_CHARS).collect();
    Some(shown)
}

/// Read once per process, like the boot id: a run records and compares it
/// many times (every marker, record and temporary it checks).
pub fn hostname() -> String {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "unknown".into())
    })
    .clone()
}

/// A recorded process identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcIdentity {
    pub pid: u32,
    pub start_time: Option<u64>,
    pub boot_id: Option<String>,
    pub host: String,
}

/// What we can prove about a recorded process now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// pid, start time, host and boot id all match, and it is not a zombie.
    Alive,
    /// Provably not running any more (no such pid, other start time, other
    /// boot, or a zombie).
    Dead,
    /// Cannot be proven either way (other host, unreadable /proc, missing fields).
    Unknown,
}

/// [`Liveness`] with the zombie case kept apart: a zombie leader still names
/// its process group, which `vf doctor --fix` needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Running,
    /// The recorded process, exited but not yet reaped.
    Zombie,
    Gone,
    Unknown,
}

impl ProcIdentity {
    pub fn of(pid: u32) -> ProcIdentity {
        ProcIdentity {
            pid,
            start_time: start_time(pid),
            boot_id: boot_id(),
            host: hostname(),
        }
    }

    /// This process: its identity cannot change while it runs, so it is
    /// read once (keyed by pid, should a forked child ever ask).
    pub fn current() -> ProcIdentity {
        static ME: OnceLock<ProcIdentity> = OnceLock::new();
        let pid = std::process::id();
        let me = ME.get_or_init(|| ProcIdentity::of(pid));
        if me.pid == pid {
            me.clone()
        } else {
            ProcIdentity::of(pid)
        }
    }

    pub fn liveness(&self) -> Liveness {
        match self.presence() {
            Presence::Running => Liveness::Alive,
            Presence::Zombie | Presence::Gone => Liveness::Dead,
            Presence::Unknown => Liveness::Unknown,
        }
    }

    pub fn presence(&self) -> Presence {
        if self.host != hostname() {
            return Presence::Unknown;
        }
        let (Some(rec_boot), Some(now_boot)) = (&self.boot_id, boot_id()) else {
            return Presence::Unknown;
        };
        if *rec_boot != now_boot {
            return Presence::Gone;
        }
        if !proc_mounted() {
            return Presence::Unknown;
        }
        match (self.start_time, stat(self.pid)) {
            (_, None) => Presence::Gone,
            (Some(rec), Some(now)) if rec == now.start_time => {
                if now.is_zombie() {
                    Presence::Zombie
                } else {
                    Presence::Running
                }
            }
            (Some(_), Some(_)) => Presence::Gone,
            (None, Some(_)) => Presence::Unknown,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn self_is_alive_and_fake_start_is_dead() {
        let me = ProcIdentity::current();
        assert!(me.start_time.is_some());
        assert_eq!(me.liveness(), Liveness::Alive);
        let reused = ProcIdentity {
            start_time: me.start_time.map(|t| t + 1),
            ..me.clone()
        };
        assert_eq!(reused.liveness(), Liveness::Dead);
        let other_boot = ProcIdentity {
            boot_id: Some("not-this-boot".into()),
            ..me.clone()
        };
        assert_eq!(other_boot.liveness(), Liveness::Dead);
        let other_host = ProcIdentity {
            host: "elsewhere.invalid".into(),
            ..me
        };
        assert_eq!(other_host.liveness(), Liveness::Unknown);
    }

    /// A child that has exited and is not reaped (yet): a zombie.
    pub(crate) fn zombie() -> std::process::Child {
        let child = std::process::Command::new("true").spawn().unwrap();
        let start = std::time::Instant::now();
        while !stat(child.id()).is_some_and(|s| s.is_zombie()) {
            assert!(start.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child
    }

    #[test]
    fn a_zombie_is_dead_but_still_present() {
        let mut child = zombie();
        let id = ProcIdentity::of(child.id());
        assert!(id.start_time.is_some());
        assert_eq!(id.presence(), Presence::Zombie);
        assert_eq!(id.liveness(), Liveness::Dead);
        child.wait().unwrap();
        assert_eq!(id.presence(), Presence::Gone);
    }

    #[test]
    fn stat_parses_names_with_parentheses_and_command_lines_are_printable() {
        let me = stat(std::process::id()).unwrap();
        assert_eq!(me.pgrp, nix::unistd::getpgrp().as_raw());
        assert!(!me.is_zombie());
        assert!(age_secs(me.start_time).is_some());
        let cmd = command_line(std::process::id()).unwrap();
        assert!(!cmd.contains('\n') && !cmd.is_empty(), "{cmd:?}");
        assert!(stat(0x3fff_fff0).is_none());
    }
}
