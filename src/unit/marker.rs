//! The dispatch marker: one JSON file per unit, the durable crash-resume state.
//!
//! Every write goes through [`crate::ground::fsutil::write_atomic`]; a corrupt marker
//! is reported and never overwritten silently.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::ground::fsutil::{now_rfc3339, write_atomic};
use crate::ground::procinfo::{Liveness, ProcIdentity};
use crate::unit::layout;

pub mod asked;
mod load;
pub mod logs;
pub mod resume_rule;
pub mod rounds;

pub use asked::Asked;
pub use load::MAX_MARKER_BYTES;
pub use rounds::{Round, RoundKind, RoundOutcome};

pub const MARKER_FORMAT: u32 = 1;

/// One attempt of a unit in a plan run (`engineAttempts`, oldest first),
/// recorded under an `on_rate_limit` policy ([`crate::plan::ratelimit`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub engine: EngineId,
    pub reason: Option<crate::ground::error::Reason>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitState {
    Pending,
    Running,
    Done,
    Failed,
    Blocked,
}

impl UnitState {
    pub fn as_str(self) -> &'static str {
        match self {
            UnitState::Pending => "pending",
            UnitState::Running => "running",
            UnitState::Done => "done",
            UnitState::Failed => "failed",
            UnitState::Blocked => "blocked",
        }
    }
}

/// Who owns a running unit: the supervising vf and the CLI it spawned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub supervisor: ProcIdentity,
    pub cli: Option<ProcIdentity>,
    /// The CLI's process group (it is the group leader).
    pub pgid: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    pub format: u32,
    pub unit: String,
    pub engine: EngineId,
    pub engine_version: Option<String>,
    /// `--model` / `--effort` of the latest attempt (absent when not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// A command engine's command (`--bridge`, its output family): `vf resume`
    /// and `vf status` read it here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<crate::engine::EngineCommand>,
    /// `--summary-schema` of the latest attempt (absolute; `vf resume` keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_schema: Option<PathBuf>,
    pub state: UnitState,
    /// Validated native session id, stored as soon as the first frame carrying it arrives.
    pub engine_session_id: Option<String>,
    pub attempts: u32,
    pub cwd: PathBuf,
    pub owner: Option<Owner>,
    pub created_at: String,
    pub updated_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub exit_code: Option<i32>,
    pub summary: Option<Value>,
    pub summary_error: Option<String>,
    /// Why the unit is failed/blocked, in one line.
    pub error: Option<String>,
    /// Machine-readable failure class (see [`crate::ground::error::Reason`]).
    pub reason: Option<crate::ground::error::Reason>,
    /// What the latest attempt consumed (see [`crate::engine::usage`]).
    #[serde(default)]
    pub usage: Option<crate::engine::usage::Usage>,
    /// The session's running total so far, for engines that report that
    /// (codex's tokens, claude's cost on a resume): the next resumed run's
    /// figures are the reported ones less these. Absent when it equals
    /// `usage` (a session's first run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_usage: Option<crate::engine::usage::Usage>,
    /// Each attempt of the unit's latest plan run under an `on_rate_limit`
    /// policy, oldest first (`attempts` is the attempt counter).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_attempts: Vec<Attempt>,
    /// When the provider said its rate limit resets (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    /// Raw logs of the latest attempt (events' rawRange points into stdout).
    pub stdout_log: Option<PathBuf>,
    pub stderr_log: Option<PathBuf>,
    /// The unit's git worktree (`--worktree`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::Workspace>,
    /// How the latest attempt's read-only and tool policy was held
    /// (`engine::policy`); absent in markers of an older vf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::engine::tool_policy::PolicyStatus>,
    /// What the latest run asked for: policy, path guards, hooks (see
    /// [`asked`]); `vf resume` keeps it. Absent when nothing was asked.
    #[serde(default, skip_serializing_if = "Asked::is_empty")]
    pub asked: Asked,
    /// The rounds of the unit's closed loops (fix, review, resolve), oldest
    /// first (see [`rounds`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Round>,
    /// A unit with loops whose final state is not decided yet: `done` with
    /// this set means the author is done and a gate (review) is pending, so
    /// the unit is not done for `orchestrate --resume`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loop_open: bool,
    /// The declared account of the latest run (docs/QUOTA.md); its session
    /// resumes exactly only on it. Absent: the engine's default account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The unit whose engine started this one (`unit::lineage`); absent for
    /// a unit vf started directly. Set at the first run, never changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Its depth in the tree; absent when 1 (a top unit).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub depth: u32,
}

fn one() -> u32 {
    1
}

fn is_one(d: &u32) -> bool {
    *d == 1
}

impl Marker {
    pub fn new(unit: &str, engine: EngineId, cwd: &Path) -> Marker {
        let now = now_rfc3339();
        Marker {
            format: MARKER_FORMAT,
            unit: unit.to_string(),
            engine,
            engine_version: None,
            command: None,
            model: None,
            effort: None,
            summary_schema: None,
            state: UnitState::Pending,
            engine_session_id: None,
            attempts: 0,
            cwd: cwd.to_path_buf(),
            owner: None,
            created_at: now.clone(),
            updated_at: now,
            started_at: None,
            finished_at: None,
            exit_code: None,
            summary: None,
            summary_error: None,
            error: None,
            reason: None,
            usage: None,
            thread_usage: None,
            engine_attempts: Vec::new(),
            retry_at: None,
            stdout_log: None,
            stderr_log: None,
            workspace: None,
            policy: None,
            asked: Asked::default(),
            rounds: Vec::new(),
            loop_open: false,
            account: None,
            parent: None,
            depth: 1,
        }
    }

    /// Points `stdoutLog`/`stderrLog` at the current attempt's raw logs,
    /// relative to the state dir (see [`logs`]).
    pub fn point_at_logs(&mut self) {
        let [out, err] = logs::STREAMS;
        self.stdout_log = Some(logs::relative(&self.unit, self.attempts, out));
        self.stderr_log = Some(logs::relative(&self.unit, self.attempts, err));
    }

    /// True when a `running` marker's supervisor is provably still alive.
    pub fn owner_alive(&self) -> Liveness {
        match &self.owner {
            Some(o) => o.supervisor.liveness(),
            None => Liveness::Dead,
        }
    }
}

/// Why a marker file cannot be used. vf never overwrites such a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// It exists but cannot be read (permissions, I/O).
    Unreadable,
    /// It does not parse, or it contradicts its own file name or the state
    /// dir (a hostile or damaged marker).
    Corrupt,
    /// Written by a newer vf (`format` above [`MARKER_FORMAT`]).
    UnsupportedFormat(u64),
    /// Unit `A`'s marker, found under `a` on a file system that does not
    /// tell cases apart: the two names share every file.
    OtherCase(String),
}

/// A marker file vf cannot use, with a one-line explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    pub unit: String,
    pub path: PathBuf,
    pub problem: Problem,
    pub message: String,
}

impl Unusable {
    /// Short label for tables: `corrupt`, `unreadable`, `unsupported format N`.
    pub fn label(&self) -> String {
        match self.problem {
            Problem::Unreadable => "unreadable".into(),
            Problem::Corrupt => "corrupt".into(),
            Problem::UnsupportedFormat(n) => format!("unsupported format {n}"),
            Problem::OtherCase(_) => "name clash".into(),
        }
    }
}

impl From<Unusable> for VfError {
    fn from(u: Unusable) -> VfError {
        match u.problem {
            // Nothing is damaged: the name asked for is the problem.
            Problem::OtherCase(_) => VfError::usage(u.message),
            _ => VfError::state(u.message),
        }
    }
}

/// Each unit's marker and raw logs live in its directory `<state>/units/<unit>/`
/// ([`crate::unit::layout`]); an older vf's marker `<state>/units/<unit>.json` is read too.
pub struct MarkerStore {
    dir: PathBuf,
}

impl MarkerStore {
    pub fn new(state_dir: &Path) -> MarkerStore {
        MarkerStore {
            dir: layout::units_dir(state_dir),
        }
    }

    /// Where the unit's marker is written.
    pub fn path(&self, unit: &str) -> PathBuf {
        layout::marker_path(self.state_dir(), unit)
    }

    /// Whether the unit has a marker (here, or where an older vf put it).
    pub fn exists(&self, unit: &str) -> bool {
        self.path(unit).exists()
            || layout::kind(&layout::legacy_marker(self.state_dir(), unit)) == layout::Kind::File
    }

    pub fn logs_dir(&self, unit: &str) -> PathBuf {
        layout::unit_dir(self.state_dir(), unit)
    }

    pub fn state_dir(&self) -> &Path {
        self.dir.parent().unwrap_or(Path::new("."))
    }

    /// Where `unit`'s raw `stream` log of `attempt` is written.
    pub fn log_path(&self, unit: &str, attempt: u32, stream: &str) -> PathBuf {
        under(self.state_dir(), &logs::relative(unit, attempt, stream))
    }

    /// The marker's log paths made absolute under this state dir, for output
    /// (the marker stores them relative, see [`logs`]).
    pub fn absolute_logs(&self, m: &mut Marker) {
        for p in [&mut m.stdout_log, &mut m.stderr_log].into_iter().flatten() {
            *p = under(self.state_dir(), p);
        }
    }

    /// Before an attempt writes anything: none of the paths it writes in or
    /// through (the unit's logs, and the state dir's `units/`, `procs/` and
    /// `dispatch/` directories) may be a symbolic link, or vf would write
    /// outside its state dir; and where a log goes, only a regular file may
    /// already be.
    pub fn check_attempt_paths(&self, unit: &str, attempt: u32) -> Result<()> {
        let state = self.state_dir();
        let logs = logs::STREAMS.map(|s| self.log_path(unit, attempt, s));
        let paths = [
            self.dir.clone(),
            self.logs_dir(unit),
            logs[0].clone(),
            logs[1].clone(),
            state.join("procs"),
            state.join("dispatch"),
        ];
        if let Some(p) = paths.iter().find(|p| is_symlink(p)) {
            return Err(VfError::state(format!(
                "{} is a symbolic link; vf writes nothing outside its state dir: move it aside",
                p.display()
            )));
        }
        // A FIFO or a device where a log goes would block or misdirect its writes.
        let odd = |p: &&PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_file());
        match logs.iter().find(odd) {
            Some(p) => Err(VfError::state(format!(
                "{} is not a regular file; vf writes its raw log there: move it aside",
                p.display()
            ))),
            None => Ok(()),
        }
    }

    pub fn save(&self, marker: &mut Marker) -> Result<()> {
        marker.updated_at = now_rfc3339();
        let mut bytes = serde_json::to_vec_pretty(marker).map_err(anyhow::Error::from)?;
        bytes.push(b'\n');
        // Not every writer holds the unit's lock (a plan's `blocked` marker):
        // an older vf's file where the directory goes is moved aside here too.
        layout::make_unit_dir(self.state_dir(), &marker.unit)?;
        let path = self.path(&marker.unit);
        write_atomic(&path, &bytes)
            .map_err(|e| VfError::state(format!("cannot write marker {}: {e}", path.display())))?;
        if let Some(parent) = &marker.parent {
            // Without its entry the parent's result misses this child: a
            // view lost, never the unit's run.
            if let Err(e) = layout::note_child(self.state_dir(), parent, &marker.unit) {
                tracing::warn!("cannot note {} as a child of {parent}: {e}", marker.unit);
            }
        }
        Ok(())
    }

    /// All markers, sorted by unit name; the unusable ones in place.
    pub fn list(&self) -> Result<Vec<std::result::Result<Marker, Unusable>>> {
        let mut names = Vec::new();
        match std::fs::read_dir(&self.dir) {
            Ok(rd) => names.extend(rd.flatten().filter_map(|e| listed_unit(&e))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(VfError::state(format!(
                    "cannot list {}: {e}",
                    self.dir.display()
                )));
            }
        }
        // An older vf's unit `x.json` has both a directory and `x.json.json`.
        names.sort();
        names.dedup();
        Ok(self
            .load_all(&names)
            .into_iter()
            .filter_map(|r| r.transpose())
            .collect())
    }
}

/// The unit an entry of `units/` stands for: a directory is its unit's (a
/// valid name: vf made it); a `<unit>.json` not a directory is an older
/// vf's marker (a link too, shown corrupt). Dot files are vf's temporaries,
/// `<unit>.lock` an older vf's lock. A directory without a marker is no unit.
fn listed_unit(entry: &std::fs::DirEntry) -> Option<String> {
    let name = entry.file_name().into_string().ok()?;
    if name.starts_with('.') {
        return None;
    }
    let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
    match name.strip_suffix(".json") {
        _ if is_dir => crate::ground::names::check("unit name", &name)
            .is_ok()
            .then_some(name),
        Some(unit) if !unit.starts_with('.') => Some(unit.to_string()),
        _ => None,
    }
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `rel` (a marker's `/`-separated log path) below `dir`, joined part by part:
/// the OS's separator throughout, which a Windows `\\?\` (verbatim) path needs.
fn under(dir: &Path, rel: &Path) -> PathBuf {
    let mut p = dir.to_path_buf();
    p.extend(rel.components());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let t = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        assert!(store.load("u1").unwrap().is_none());
        let mut m = Marker::new("u1", EngineId::Codex, t.path());
        m.engine_session_id = Some("01a229e6-b739-7472-9ac7-c8fe37200f9b".into());
        store.save(&mut m).unwrap();
        assert_eq!(store.load("u1").unwrap().unwrap(), m);
        std::fs::create_dir_all(store.logs_dir("u2")).unwrap();
        std::fs::write(store.path("u2"), b"{\"format\":1,\"unit\":").unwrap();
        let err = store.load("u2").unwrap_err().to_string();
        assert!(err.contains("corrupt"), "{err}");
        let all = store.list().unwrap();
        assert_eq!(all.len(), 2);
        assert!(all[0].is_ok() && all[1].is_err());
    }

    fn problem_of(store: &MarkerStore, unit: &str) -> Problem {
        store.load_checked(unit).unwrap_err().problem
    }

    #[test]
    fn the_unit_and_its_log_paths_come_from_the_file_name() {
        let t = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        let mut m = Marker::new("u1", EngineId::Codex, t.path());
        m.attempts = 1;
        m.point_at_logs();
        store.save(&mut m).unwrap();
        assert_eq!(store.load("u1").unwrap().unwrap(), m);
        let hostile: [(&str, serde_json::Value); 8] = [
            ("unit", "../../escaped".into()),
            ("unit", "u2".into()),
            ("stdoutLog", "/tmp/elsewhere.log".into()),
            ("stdoutLog", "/etc/passwd".into()),
            ("stdoutLog", "units/u2/attempt-1.stdout.log".into()),
            ("stdoutLog", "../../units/u1/attempt-1.stdout.log".into()),
            (
                "stderrLog",
                format!("{}/../x.log", store.logs_dir("u1").display()).into(),
            ),
            ("format", 0.into()),
        ];
        for (key, value) in hostile {
            let mut v = serde_json::to_value(&m).unwrap();
            v[key] = value.clone();
            std::fs::write(store.path("u1"), serde_json::to_vec(&v).unwrap()).unwrap();
            let err = store.load("u1").unwrap_err();
            assert_eq!(err.exit_code(), 5, "{key}={value}: {err}");
            assert!(err.to_string().contains("corrupt"), "{err}");
        }
        // An older marker stored them absolute, under wherever the state dir
        // was then: it loads, in the relative form.
        let mut v = serde_json::to_value(&m).unwrap();
        v["stdoutLog"] = "/old/repo/.vibeflow/units/u1/attempt-1.stdout.log".into();
        v["stderrLog"] =
            format!("{}/../s/units/u1/attempt-1.stderr.log", t.path().display()).into();
        std::fs::write(store.path("u1"), serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(store.load("u1").unwrap().unwrap(), m);
        // For output they are absolute under this state dir.
        let mut shown = m.clone();
        store.absolute_logs(&mut shown);
        let log = |s: &str| Some(t.path().join(format!("units/u1/attempt-1.{s}.log")));
        assert_eq!(
            (shown.stdout_log, shown.stderr_log),
            (log("stdout"), log("stderr"))
        );
        // An unsafe file name is never taken as a unit.
        std::fs::write(t.path().join("units/a b.json"), b"{}").unwrap();
        let listed = store.list().unwrap();
        assert_eq!(listed[0].as_ref().unwrap_err().problem, Problem::Corrupt);
    }

    #[test]
    fn errors_are_one_line_with_the_bad_value_escaped_and_cut() {
        let t = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        let mut m = Marker::new("u1", EngineId::Codex, t.path());
        store.save(&mut m).unwrap();
        for (key, bad) in [
            ("engine", "codex\n\u{1b}[7mINJECTED\u{1b}[0m".to_string()),
            ("attempts", "x".repeat(20_000)),
            ("stdoutLog", format!("/etc/\u{1b}[2J{}", "y".repeat(20_000))),
        ] {
            let mut v = serde_json::to_value(&m).unwrap();
            v[key] = bad.into();
            std::fs::write(store.path("u1"), serde_json::to_vec(&v).unwrap()).unwrap();
            let msg = store.load("u1").unwrap_err().to_string();
            assert!(!msg.contains('\n') && !msg.contains('\u{1b}'), "{msg:?}");
            assert!(msg.len() < 1024, "{key}: {} bytes", msg.len());
            assert!(
                msg.contains(&store.path("u1").display().to_string()),
                "{msg}"
            );
        }
        // Not a regular file: refused at once, never read (a FIFO would block).
        #[cfg(unix)]
        {
            std::fs::remove_file(store.path("u1")).unwrap();
            let c = std::ffi::CString::new(store.path("u1").to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert_eq!(problem_of(&store, "u1"), Problem::Corrupt);
        }
    }

    #[test]
    fn a_newer_format_is_refused_and_left_as_is() {
        let t = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        std::fs::create_dir_all(store.logs_dir("u1")).unwrap();
        let text = r#"{"format":2,"unit":"u1","whatever":{"new":true}}"#;
        std::fs::write(store.path("u1"), text).unwrap();
        assert_eq!(problem_of(&store, "u1"), Problem::UnsupportedFormat(2));
        let err = store.load("u1").unwrap_err();
        assert_eq!(err.exit_code(), 5);
        assert!(err.to_string().contains("format 2"), "{err}");
        assert_eq!(
            store.load_checked("u1").unwrap_err().label(),
            "unsupported format 2"
        );
        assert_eq!(std::fs::read_to_string(store.path("u1")).unwrap(), text);
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_in_the_state_layout_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        let mut m = Marker::new("u1", EngineId::Codex, t.path());
        store.save(&mut m).unwrap();
        // A symlinked marker is not read.
        let real = outside.path().join("m.json");
        std::fs::copy(store.path("u1"), &real).unwrap();
        std::fs::remove_file(store.path("u1")).unwrap();
        std::os::unix::fs::symlink(&real, store.path("u1")).unwrap();
        assert_eq!(problem_of(&store, "u1"), Problem::Corrupt);
        std::fs::remove_file(store.path("u1")).unwrap();
        store.save(&mut m).unwrap();
        // Nor is a unit whose directory leads elsewhere.
        let moved = outside.path().join("u1");
        std::fs::rename(store.logs_dir("u1"), &moved).unwrap();
        std::os::unix::fs::symlink(&moved, store.logs_dir("u1")).unwrap();
        assert_eq!(problem_of(&store, "u1"), Problem::Corrupt);
        assert_eq!(
            store.check_attempt_paths("u1", 1).unwrap_err().exit_code(),
            5
        );
        std::fs::remove_file(store.logs_dir("u1")).unwrap();
        // Nor a log file that is a link.
        std::fs::create_dir_all(store.logs_dir("u1")).unwrap();
        let log = store.logs_dir("u1").join("attempt-2.stderr.log");
        std::os::unix::fs::symlink(outside.path().join("x"), &log).unwrap();
        assert!(store.check_attempt_paths("u1", 1).is_ok());
        assert!(store.check_attempt_paths("u1", 2).is_err());
        // Nor the directories of process records and prompt files.
        for dir in ["procs", "dispatch"] {
            std::os::unix::fs::symlink(outside.path(), t.path().join(dir)).unwrap();
            assert!(store.check_attempt_paths("u1", 1).is_err(), "{dir}");
            std::fs::remove_file(t.path().join(dir)).unwrap();
        }
    }
}
