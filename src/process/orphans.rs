//! The core of `vf doctor --fix`: find owned-process records left behind by a
//! dead vf and end exactly the process groups that are provably ours.
//!
//! Fail closed: a group is ended only when its supervisor is provably dead and
//! its CLI leader is provably the recorded process (pid + start time + boot
//! id). Everything else is reported and left alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::engine::EngineId;
use crate::ground::procinfo::{self, Liveness, Presence};
use crate::process::owned::{self, ProcRecord, StepKind};
use crate::sys;

/// What a record turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Class {
    /// Its supervisor is alive: a running vf owns it.
    Owned,
    /// Supervisor provably dead, CLI provably the recorded process: ours to end.
    Orphan,
    /// Supervisor and CLI provably gone, no group left: only the record remains.
    Stale,
    /// Something cannot be proven (pid reuse, other boot or host, processes
    /// not readable, leftover group members without a leader): left alone.
    Unproven,
    /// The record itself cannot be read.
    Corrupt,
}

/// What `fix` did about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    None,
    /// The group was ended (SIGTERM, then SIGKILL if needed) and the record released.
    Ended,
    /// The record of a gone process was deleted.
    Released,
    /// `fix` tried and failed (see `detail`).
    Failed,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub record: PathBuf,
    pub unit: Option<String>,
    pub attempt: Option<u32>,
    pub engine: Option<EngineId>,
    /// The record is of the unit's `setup` / `verify` command, not its engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepKind>,
    pub supervisor_pid: Option<u32>,
    pub cli_pid: Option<u32>,
    pub pgid: Option<i32>,
    pub class: Class,
    /// Why it was classified so, in one line.
    pub reason: String,
    pub action: Action,
    pub detail: Option<String>,
    /// A group whose leader is gone while members run on: unproven, so never
    /// ended by vf, but listed with what runs and how to end it by hand.
    pub leftover: Option<Leftover>,
}

/// What still runs in a leaderless group, and the command that ends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Leftover {
    pub members: Vec<Member>,
    /// Run it yourself once you have checked these processes are yours.
    pub manual: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub pid: u32,
    /// Its command line (escaped, cut to a line).
    pub command: String,
    /// Seconds since it started.
    pub age_secs: Option<u64>,
}

impl Finding {
    /// What its record's process is: `engine`, or the `setup` / `verify` command.
    pub fn what(&self) -> &'static str {
        self.step.map_or("engine", StepKind::what)
    }

    /// What a take-over that ended it says.
    pub fn ended_notice(&self) -> String {
        format!(
            "ended the {} left running by a dead vf (process group {})",
            self.what(),
            self.pgid.unwrap_or(0)
        )
    }
}

/// Reads every record under `<state>/procs` and classifies it. Touches nothing.
pub fn scan(state_dir: &Path) -> Vec<Finding> {
    scan_named(state_dir, |_| true)
}

/// [`scan`] of the records of one unit only: `<unit>-<attempt>.json` and its
/// steps' `<unit>-<attempt>-<step>.json`. A run starts with it, so it must
/// not read (and prove) every other unit's record.
fn scan_unit(state_dir: &Path, unit: &str) -> Vec<Finding> {
    scan_named(state_dir, |name| owned::is_record_of(name, unit))
}

/// The records whose file name `keep` accepts, classified.
fn scan_named(state_dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<Finding> {
    let dir = owned::procs_dir(state_dir);
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !n.starts_with('.') && keep(n))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    paths.into_iter().map(|p| classify(&p)).collect()
}

fn classify(path: &Path) -> Finding {
    let rec = match ProcRecord::load(path) {
        Ok(r) => r,
        Err(e) => {
            return Finding {
                record: path.to_path_buf(),
                unit: None,
                attempt: None,
                engine: None,
                step: None,
                supervisor_pid: None,
                cli_pid: None,
                pgid: None,
                class: Class::Corrupt,
                reason: format!("record {e}"),
                action: Action::None,
                detail: None,
                leftover: None,
            };
        }
    };
    let (class, reason) = class_of(&rec);
    let leftover = (class == Class::Unproven).then(|| leftover(&rec)).flatten();
    Finding {
        record: path.to_path_buf(),
        unit: Some(rec.unit.clone()),
        attempt: Some(rec.attempt),
        engine: EngineId::parse(&rec.engine),
        step: rec.step,
        supervisor_pid: Some(rec.supervisor.pid),
        cli_pid: Some(rec.cli.pid),
        pgid: Some(rec.pgid),
        class,
        reason,
        action: Action::None,
        detail: None,
        leftover,
    }
}

/// A record's group when vf and the CLI are gone, no process holds the
/// group's id as its pid (so it was not reused for a new group), and members
/// still run: most likely the CLI's own children, but nothing proves it.
fn leftover(rec: &ProcRecord) -> Option<Leftover> {
    if rec.supervisor.liveness() != Liveness::Dead
        || rec.cli.presence() != Presence::Gone
        || rec.pgid <= 1
        // A process holds the group's id, or may: not proven free.
        || !matches!(sys::process(rec.pgid as u32), Ok(None))
    {
        return None;
    }
    let members: Vec<Member> = group_members(rec.pgid)
        .into_iter()
        .map(|pid| Member {
            pid,
            command: procinfo::command_line(pid).unwrap_or_else(|| "?".into()),
            age_secs: procinfo::start_time(pid).and_then(sys::age_secs),
        })
        .collect();
    (!members.is_empty()).then(|| Leftover {
        members,
        manual: format!("kill -TERM -- -{}", rec.pgid),
    })
}

fn class_of(rec: &ProcRecord) -> (Class, String) {
    match rec.supervisor.liveness() {
        Liveness::Alive => {
            return (
                Class::Owned,
                format!("its vf (pid {}) is alive", rec.supervisor.pid),
            );
        }
        Liveness::Unknown => {
            return (
                Class::Unproven,
                format!(
                    "cannot prove whether its vf (pid {}) is alive (other host, or this OS does not show it)",
                    rec.supervisor.pid
                ),
            );
        }
        Liveness::Dead => {}
    }
    if rec.pgid != rec.cli.pid as i32 || rec.pgid <= 1 {
        return (
            Class::Unproven,
            format!("the record's group is not led by its {}", rec.what()),
        );
    }
    cli_class(rec)
}

/// The class of a record whose vf is provably dead, from its CLI leader.
fn cli_class(rec: &ProcRecord) -> (Class, String) {
    let presence = rec.cli.presence();
    let what = rec.what();
    match presence {
        Presence::Running => {
            return (
                Class::Orphan,
                format!(
                    "vf (pid {}) is dead and its {what} (pid {}) still runs with the recorded identity",
                    rec.supervisor.pid, rec.cli.pid
                ),
            );
        }
        Presence::Unknown => {
            return (
                Class::Unproven,
                format!(
                    "the identity of pid {} cannot be proven (other host, or this OS does not show it)",
                    rec.cli.pid
                ),
            );
        }
        Presence::Zombie | Presence::Gone => {}
    }
    let members = group_members(rec.pgid).len();
    match (presence, members) {
        (Presence::Zombie, 0) => (
            Class::Stale,
            format!("vf is dead and the {what} has exited; only the record is left"),
        ),
        (_, 0) => (
            Class::Stale,
            format!("vf and its {what} are gone; only the record is left"),
        ),
        // A zombie leader still holds the group's id: the members are its own.
        (Presence::Zombie, n) => (
            Class::Orphan,
            format!(
                "vf is dead; the {what} (pid {}) has exited but {n} member(s) of its group still run",
                rec.cli.pid
            ),
        ),
        // The leader is gone, so nothing proves these processes are ours.
        (_, n) => (
            Class::Unproven,
            format!(
                "the recorded {what} is gone (or its pid was reused) but process group {} has {n} member(s); not proven ours",
                rec.pgid
            ),
        ),
    }
}

/// Ends every exact orphan's group (SIGTERM, then SIGKILL after `grace`) and
/// releases its record; releases stale records. Returns the findings with the
/// action taken; everything else is left alone.
pub fn fix(state_dir: &Path, grace: Duration) -> Vec<Finding> {
    act_on(scan(state_dir), grace)
}

/// Ends the orphans and releases the stale records among `findings`.
fn act_on(mut findings: Vec<Finding>, grace: Duration) -> Vec<Finding> {
    for f in &mut findings {
        match f.class {
            Class::Orphan => {
                let pgid = f.pgid.unwrap_or(0);
                // Re-prove right before acting: time has passed since the scan.
                let rec = match ProcRecord::load(&f.record) {
                    Ok(r) => r,
                    Err(e) => {
                        f.action = Action::Failed;
                        f.detail = Some(format!("record {e}"));
                        continue;
                    }
                };
                if class_of(&rec).0 != Class::Orphan {
                    f.detail = Some("no longer a proven orphan; left alone".into());
                    continue;
                }
                match crate::process::grace::end_recorded_group(pgid, grace) {
                    Ok(how) => {
                        f.action = Action::Ended;
                        f.detail = Some(how);
                        if let Err(e) = owned::release(&f.record) {
                            f.detail = Some(format!("group ended; cannot release record: {e}"));
                        }
                    }
                    Err(e) => {
                        f.action = Action::Failed;
                        f.detail = Some(e);
                    }
                }
            }
            Class::Stale => match owned::release(&f.record) {
                Ok(()) => f.action = Action::Released,
                Err(e) => {
                    f.action = Action::Failed;
                    f.detail = Some(format!("cannot release record: {e}"));
                }
            },
            _ => {}
        }
    }
    findings
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<u32> {
    sys::group_members(pgid)
}

/// Before a unit runs again, nothing of an earlier attempt may still run.
/// Ends the unit's proven orphans (SIGTERM, SIGKILL after `grace`) and
/// releases its stale records; any other record of the unit (owned by a live
/// vf, or not provable) refuses, fail closed. Returns the groups it ended.
/// `vf resume` and `vf orchestrate --resume` both go through here.
pub fn take_over(state_dir: &Path, unit: &str, grace: Duration) -> Result<Vec<Finding>, String> {
    // The file name is checked against the record's unit when it loads, so
    // these are exactly the records whose unit is `unit`.
    let scanned = scan_unit(state_dir, unit);
    let found = act_on(scanned, grace);
    let mut ended = Vec::new();
    for f in found {
        match (f.class, f.action) {
            (Class::Orphan, Action::Ended) => ended.push(f),
            (Class::Stale, _) | (_, Action::Released) => {}
            _ => {
                return Err(format!(
                    "an earlier attempt's {} process is not proven gone ({}); see {} and `vf doctor --fix`",
                    f.what(),
                    f.reason,
                    f.record.display()
                ));
            }
        }
    }
    Ok(ended)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::ground::procinfo::ProcIdentity;

    fn write(state: &Path, name: &str, rec: &ProcRecord) -> PathBuf {
        let p = owned::procs_dir(state).join(format!("{name}.json"));
        rec.clone().save(&p).unwrap();
        p
    }

    #[cfg(unix)]
    fn dead_supervisor() -> ProcIdentity {
        let me = ProcIdentity::current();
        ProcIdentity {
            start_time: me.start_time.map(|t| t + 1),
            ..me
        }
    }

    #[test]
    fn a_unit_scan_reads_only_that_units_records() {
        let t = tempfile::tempdir().unwrap();
        let me = std::process::id();
        for (name, unit, attempt) in [
            ("u-1", "u", 1),
            ("u-12", "u", 12),
            ("u-1-1", "u-1", 1),
            ("uu-1", "uu", 1),
        ] {
            write(t.path(), name, &ProcRecord::new(unit, attempt, "codex", me));
        }
        // Another unit's unreadable record is none of this unit's business.
        std::fs::write(owned::procs_dir(t.path()).join("v-1.json"), b"{").unwrap();
        std::fs::write(owned::procs_dir(t.path()).join("u-x.json"), b"{").unwrap();
        let names = |f: Vec<Finding>| -> Vec<String> {
            f.iter()
                .map(|f| f.record.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(scan_unit(t.path(), "u")), ["u-1.json", "u-12.json"]);
        assert_eq!(names(scan_unit(t.path(), "u-1")), ["u-1-1.json"]);
        // Both records of `u` belong to this live process: the run is refused.
        assert!(take_over(t.path(), "u", Duration::ZERO).is_err());
        assert_eq!(names(scan(t.path())).len(), 6);
    }

    #[cfg(unix)]
    #[test]
    fn classes_without_touching_anything() {
        let t = tempfile::tempdir().unwrap();
        let me = std::process::id();
        // Owned: supervisor is this (live) process.
        let owned_rec = ProcRecord::new("a", 1, "codex", me);
        write(t.path(), "a-1", &owned_rec);
        // CLI identity with another start time: pid reused. The group (ours, the
        // test process's) has members, so it is unproven, never an orphan.
        let mut reused = ProcRecord::new("b", 1, "codex", me);
        reused.supervisor = dead_supervisor();
        reused.cli.start_time = reused.cli.start_time.map(|t| t + 7);
        reused.pgid = nix::unistd::getpgrp().as_raw();
        reused.cli.pid = reused.pgid as u32;
        write(t.path(), "b-1", &reused);
        // Both gone: stale.
        let mut stale = ProcRecord::new("c", 1, "codex", me);
        stale.supervisor = dead_supervisor();
        stale.cli.pid = 0x3fff_fff0;
        stale.pgid = 0x3fff_fff0;
        write(t.path(), "c-1", &stale);
        // Other boot: the supervisor is provably dead, the CLI too.
        let mut other_host = ProcRecord::new("d", 1, "codex", me);
        other_host.supervisor.host = "elsewhere.invalid".into();
        write(t.path(), "d-1", &other_host);
        std::fs::write(owned::procs_dir(t.path()).join("e-1.json"), b"{").unwrap();

        let f = scan(t.path());
        let classes: Vec<Class> = f.iter().map(|f| f.class).collect();
        assert_eq!(
            classes,
            vec![
                Class::Owned,
                Class::Unproven,
                Class::Stale,
                Class::Unproven,
                Class::Corrupt
            ],
            "{f:#?}"
        );
        // fix only releases the stale record.
        let fixed = fix(t.path(), Duration::from_millis(100));
        let actions: Vec<Action> = fixed.iter().map(|f| f.action).collect();
        assert_eq!(
            actions,
            vec![
                Action::None,
                Action::None,
                Action::Released,
                Action::None,
                Action::None
            ]
        );
        assert_eq!(scan(t.path()).len(), 4);
        let json = serde_json::to_value(&fixed).unwrap();
        assert_eq!(json[2]["class"], "stale");
        assert!(json[0]["supervisorPid"].is_number());
    }
}
