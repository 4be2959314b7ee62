//! Process identity: a pid alone is never proof that a process is ours.
//! A process is the one we recorded only if pid, start time and boot
//! identity all match (read by the platform layer, `sys`). A zombie is
//! dead: it matches the identity but runs nothing and owns nothing any more.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::sys;

/// The boot identity (`sys::boot_id`). Read once per process: it cannot
/// change while this process lives (every liveness check needs it).
pub fn boot_id() -> Option<String> {
    static BOOT_ID: OnceLock<Option<String>> = OnceLock::new();
    BOOT_ID.get_or_init(sys::boot_id).clone()
}

/// Whether the OS lets vf prove anything about a process (checked once).
fn can_inspect() -> bool {
    static CAN: OnceLock<bool> = OnceLock::new();
    *CAN.get_or_init(sys::can_inspect_processes)
}

/// Start time of `pid` in the OS's unit (see `sys::ProcSnapshot`).
pub fn start_time(pid: u32) -> Option<u64> {
    sys::process(pid).ok().flatten().map(|s| s.start_time)
}

/// The command line of `pid`, with control characters escaped so it is
/// safe to print, cut to 200 characters.
pub fn command_line(pid: u32) -> Option<String> {
    const MAX_CHARS: usize = 200;
    Some(
        sys::command_line(pid)?
            .escape_debug()
            .take(MAX_CHARS)
            .collect(),
    )
}

/// Read once per process, like the boot id: a run records and compares it
/// many times (every marker, record and temporary it checks).
pub fn hostname() -> String {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(sys::hostname).clone()
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
    /// Cannot be proven either way (other host, processes not readable, missing fields).
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
        if !can_inspect() {
            return Presence::Unknown;
        }
        match (self.start_time, sys::process(self.pid)) {
            (_, Err(_)) => Presence::Unknown,
            (_, Ok(None)) => Presence::Gone,
            (Some(rec), Ok(Some(now))) if rec == now.start_time => {
                if now.zombie {
                    Presence::Zombie
                } else {
                    Presence::Running
                }
            }
            (Some(_), Ok(Some(_))) => Presence::Gone,
            (None, Ok(Some(_))) => Presence::Unknown,
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
        let child = sys::shell("exit 0").spawn().unwrap();
        let start = std::time::Instant::now();
        while !matches!(sys::process(child.id()), Ok(Some(s)) if s.zombie) {
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
        // Reaped, and its last handle closed (Windows; wine frees the
        // process a moment later).
        drop(child);
        let t0 = std::time::Instant::now();
        while id.presence() != Presence::Gone && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(id.presence(), Presence::Gone);
    }

    #[test]
    fn command_lines_are_printable() {
        let cmd = command_line(std::process::id()).unwrap();
        assert!(!cmd.contains('\n') && !cmd.is_empty(), "{cmd:?}");
    }
}
