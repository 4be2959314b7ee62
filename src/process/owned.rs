//! Owned-process records: one file per spawned engine CLI, under
//! `<state>/procs/<unit>-<attempt>.json`, and one per `setup` / `verify`
//! command, `<unit>-<attempt>-<step>.json`, so that a later `vf doctor --fix`
//! (or the unit's next run) can prove which process groups a dead vf left
//! behind. No two (unit, attempt, step) share a file name: an engine's ends
//! in its attempt's digits, a step's in `-setup` / `-verify`.
//!
//! The record is written (atomically) right after the spawn, before the
//! supervisor does anything else with the child, updated when the CLI exits,
//! and released (deleted) only once the CLI has exited AND both of its output
//! streams were drained.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ground::fsutil::{now_rfc3339, write_atomic_volatile};
use crate::ground::procinfo::ProcIdentity;
use crate::sys::{Proof, Scope};

pub const RECORD_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcRecord {
    pub format: u32,
    pub unit: String,
    pub attempt: u32,
    pub engine: String,
    /// The vf process that spawned and supervises the CLI.
    pub supervisor: ProcIdentity,
    /// The CLI itself (leader of its own process group).
    pub cli: ProcIdentity,
    pub pgid: i32,
    /// A `setup` / `verify` command of the unit rather than its engine (the
    /// shell then is `cli`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepKind>,
    /// What the CLI is contained in (older records: a process group).
    #[serde(default)]
    pub scope: Scope,
    /// How strongly (older records: cooperative lineage).
    #[serde(default)]
    pub proof: Proof,
    pub host: String,
    pub boot_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A command vf runs around a unit's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    Setup,
    Verify,
    /// The notification hooks (`crate::dispatch::notify`).
    OnFinish,
    OnFail,
    OnPlanFinish,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Setup => "setup",
            StepKind::Verify => "verify",
            StepKind::OnFinish => "on-finish",
            StepKind::OnFail => "on-fail",
            StepKind::OnPlanFinish => "on-plan-finish",
        }
    }

    /// What it is, in words.
    pub fn what(self) -> &'static str {
        match self {
            StepKind::Setup => "setup command",
            StepKind::Verify => "verify command",
            StepKind::OnFinish | StepKind::OnFail | StepKind::OnPlanFinish => "notification hook",
        }
    }

    /// The step a record file name's tail (`setup`, `verify`, a hook's) names.
    pub fn parse(s: &str) -> Option<StepKind> {
        [
            StepKind::Setup,
            StepKind::Verify,
            StepKind::OnFinish,
            StepKind::OnFail,
            StepKind::OnPlanFinish,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// The records directory of a state dir.
pub fn procs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("procs")
}

pub fn record_path(state_dir: &Path, unit: &str, attempt: u32) -> PathBuf {
    procs_dir(state_dir).join(file_name(unit, attempt, None))
}

/// The record of a unit's `setup` or `verify` command.
pub fn step_record_path(state_dir: &Path, unit: &str, attempt: u32, step: StepKind) -> PathBuf {
    procs_dir(state_dir).join(file_name(unit, attempt, Some(step)))
}

fn file_name(unit: &str, attempt: u32, step: Option<StepKind>) -> String {
    match step {
        None => format!("{unit}-{attempt}.json"),
        Some(k) => format!("{unit}-{attempt}-{}.json", k.as_str()),
    }
}

/// Whether `name` is a record file name of `unit` (any attempt, engine or step).
pub fn is_record_of(name: &str, unit: &str) -> bool {
    let Some(rest) = name
        .strip_prefix(unit)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| r.strip_suffix(".json"))
    else {
        return false;
    };
    let attempt = match rest.split_once('-') {
        Some((attempt, step)) if StepKind::parse(step).is_some() => attempt,
        Some(_) => return false,
        None => rest,
    };
    !attempt.is_empty() && attempt.bytes().all(|b| b.is_ascii_digit())
}

impl ProcRecord {
    pub fn new(unit: &str, attempt: u32, engine: &str, cli_pid: u32) -> ProcRecord {
        let cli = ProcIdentity::of(cli_pid);
        let now = now_rfc3339();
        ProcRecord {
            format: RECORD_FORMAT,
            unit: unit.to_string(),
            attempt,
            engine: engine.to_string(),
            supervisor: ProcIdentity::current(),
            host: cli.host.clone(),
            boot_id: cli.boot_id.clone(),
            pgid: cli_pid as i32,
            step: None,
            scope: crate::sys::CONTAINMENT.0,
            proof: crate::sys::CONTAINMENT.1,
            cli,
            created_at: now.clone(),
            updated_at: now,
        }
    }

    /// The record of a unit's `setup` / `verify` command, its shell `pid`.
    pub fn for_step(unit: &str, attempt: u32, engine: &str, step: StepKind, pid: u32) -> Self {
        ProcRecord {
            step: Some(step),
            ..ProcRecord::new(unit, attempt, engine, pid)
        }
    }

    /// What the recorded process is, in words: the engine's `CLI` or the step's command.
    pub fn what(&self) -> &'static str {
        self.step.map_or("CLI", StepKind::what)
    }

    pub fn save(&mut self, path: &Path) -> std::io::Result<()> {
        self.updated_at = now_rfc3339();
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        // Only meaningful within this boot: atomic, no fsync (see fsutil).
        write_atomic_volatile(path, &bytes)
    }

    /// Reads a record and checks it against its own file name: the unit
    /// comes from `<unit>-<attempt>.json` and must be a safe name, the engine
    /// a known one. Anything else is corrupt (a hostile or damaged record).
    pub fn load(path: &Path) -> Result<ProcRecord, String> {
        let bytes = crate::ground::fsutil::read_no_follow(path).map_err(|e| {
            if crate::sys::is_link_refusal(&e) {
                "corrupt: it is a symbolic link".to_string()
            } else {
                format!("cannot read: {e}")
            }
        })?;
        let rec: ProcRecord =
            serde_json::from_slice(&bytes).map_err(|e| format!("corrupt: {e}"))?;
        rec.check_against(path)
            .map_err(|why| format!("corrupt: {why}"))?;
        Ok(rec)
    }

    fn check_against(&self, path: &Path) -> Result<(), String> {
        if self.format != RECORD_FORMAT {
            return Err(format!("unsupported format {}", self.format));
        }
        crate::ground::names::check("unit name", &self.unit).map_err(|e| e.to_string())?;
        let expected = file_name(&self.unit, self.attempt, self.step);
        if path.file_name().and_then(|n| n.to_str()) != Some(expected.as_str()) {
            return Err(format!(
                "its unit {:?} and attempt {} do not match its file name",
                self.unit, self.attempt
            ));
        }
        if crate::engine::EngineId::parse(&self.engine).is_none() {
            return Err(format!(
                "unknown engine {:?}",
                crate::ground::text::cut(&self.engine, 40)
            ));
        }
        Ok(())
    }
}

/// Deletes a record; a missing one is fine (already released).
pub fn release(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_release() {
        let t = tempfile::tempdir().unwrap();
        let p = record_path(t.path(), "u1", 3);
        let mut r = ProcRecord::new("u1", 3, "codex", std::process::id());
        r.save(&p).unwrap();
        let back = ProcRecord::load(&p).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.pgid, std::process::id() as i32);
        assert!(back.cli.start_time.is_some());
        release(&p).unwrap();
        assert!(!p.exists());
        release(&p).unwrap();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"{").unwrap();
        assert!(ProcRecord::load(&p).unwrap_err().contains("corrupt"));
    }

    /// A step's record has its own file name, which no engine record of
    /// any unit can have, and is read back as that step's.
    #[test]
    fn step_records_are_named_apart() {
        let t = tempfile::tempdir().unwrap();
        let p = step_record_path(t.path(), "u-1", 2, StepKind::Verify);
        assert_eq!(p.file_name().unwrap(), "u-1-2-verify.json");
        let mut r = ProcRecord::for_step("u-1", 2, "codex", StepKind::Verify, std::process::id());
        r.save(&p).unwrap();
        assert_eq!(ProcRecord::load(&p).unwrap().step, Some(StepKind::Verify));
        assert_eq!(ProcRecord::load(&p).unwrap().what(), "verify command");
        // The same record under an engine's name, or another step's, is corrupt.
        for other in ["u-1-2.json", "u-1-2-setup.json"] {
            let q = procs_dir(t.path()).join(other);
            std::fs::copy(&p, &q).unwrap();
            assert!(ProcRecord::load(&q).unwrap_err().starts_with("corrupt: "));
        }
        for (name, unit, is) in [
            ("u-1-2-verify.json", "u-1", true),
            ("u-1-2-verify.json", "u", false),
            ("u-1-2.json", "u-1", true),
            ("u-1-2.json", "u", false),
            ("u-1-setup.json", "u", true),
            ("u-setup.json", "u", false),
            ("u-1-build.json", "u", false),
            ("u--setup.json", "u", false),
        ] {
            assert_eq!(is_record_of(name, unit), is, "{name} of {unit}");
        }
    }

    /// A record names its containment; one written before records did is
    /// a process group held by lineage, which is what older vfs made.
    #[test]
    fn records_name_their_containment() {
        let t = tempfile::tempdir().unwrap();
        let p = record_path(t.path(), "u1", 1);
        let mut r = ProcRecord::new("u1", 1, "codex", std::process::id());
        r.save(&p).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        let (scope, proof) = if cfg!(windows) {
            ("windows-job", "kernel-contained")
        } else {
            ("posix-process-group", "cooperative-lineage")
        };
        assert_eq!(
            (json["scope"].as_str(), json["proof"].as_str()),
            (Some(scope), Some(proof))
        );
        let mut old = json.clone();
        let obj = old.as_object_mut().unwrap();
        obj.remove("scope");
        obj.remove("proof");
        std::fs::write(&p, serde_json::to_vec(&old).unwrap()).unwrap();
        let loaded = ProcRecord::load(&p).unwrap();
        assert_eq!(
            (loaded.scope, loaded.proof),
            (Scope::PosixProcessGroup, Proof::CooperativeLineage)
        );
    }

    #[test]
    fn hostile_records_are_corrupt() {
        let t = tempfile::tempdir().unwrap();
        let good = ProcRecord::new("u1", 3, "codex", std::process::id());
        let cases: Vec<(&str, ProcRecord)> = vec![
            ("u1-4.json", good.clone()),
            ("other-3.json", good.clone()),
            (
                "x-3.json",
                ProcRecord {
                    unit: "../../x".into(),
                    ..good.clone()
                },
            ),
            (
                "u1-3.json",
                ProcRecord {
                    engine: "evil".into(),
                    ..good.clone()
                },
            ),
            (
                "u1-3.json",
                ProcRecord {
                    format: 9,
                    ..good.clone()
                },
            ),
        ];
        for (name, rec) in cases {
            let p = procs_dir(t.path()).join(name);
            let mut rec = rec;
            rec.save(&p).unwrap();
            let err = ProcRecord::load(&p).unwrap_err();
            assert!(err.starts_with("corrupt: "), "{name}: {err}");
            std::fs::remove_file(&p).unwrap();
        }
        // A symbolic link is never followed.
        #[cfg(unix)]
        {
            let real = t.path().join("elsewhere.json");
            good.clone().save(&real).unwrap();
            let link = record_path(t.path(), "u1", 3);
            std::os::unix::fs::symlink(&real, &link).unwrap();
            assert!(
                ProcRecord::load(&link)
                    .unwrap_err()
                    .contains("symbolic link")
            );
        }
    }
}
