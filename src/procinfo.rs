//! Process identity: a pid alone is never proof that a process is ours.
//! A process is the one we recorded only if pid, start time (field 22 of
//! `/proc/<pid>/stat`) and boot id all match.

use serde::{Deserialize, Serialize};

/// `/proc/sys/kernel/random/boot_id`, trimmed.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Start time of `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may itself contain
    // spaces or parentheses: fields are counted after the LAST ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3; field 22 is the 20th of these.
    rest.split_whitespace().nth(19)?.parse().ok()
}

pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".into())
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
    /// pid, start time, host and boot id all match: it is that process.
    Alive,
    /// Provably not running any more (no such pid, other start time, other boot).
    Dead,
    /// Cannot be proven either way (other host, unreadable /proc, missing fields).
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

    pub fn current() -> ProcIdentity {
        ProcIdentity::of(std::process::id())
    }

    pub fn liveness(&self) -> Liveness {
        if self.host != hostname() {
            return Liveness::Unknown;
        }
        let (Some(rec_boot), Some(now_boot)) = (&self.boot_id, boot_id()) else {
            return Liveness::Unknown;
        };
        if *rec_boot != now_boot {
            return Liveness::Dead;
        }
        if !std::path::Path::new("/proc/self/stat").exists() {
            return Liveness::Unknown;
        }
        match (self.start_time, start_time(self.pid)) {
            (_, None) => Liveness::Dead,
            (Some(rec), Some(now)) if rec == now => Liveness::Alive,
            (Some(_), Some(_)) => Liveness::Dead,
            (None, Some(_)) => Liveness::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
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
}
