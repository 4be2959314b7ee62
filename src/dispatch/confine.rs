//! The sandbox of one unit's run (docs/SANDBOX.md): the request resolved
//! and checked before anything is written ([`Sandbox::of`]), then, for each
//! process vf starts for the unit (the engine, `setup`, `verify`), the
//! rules it is held to ([`Sandbox::rules`]) and what the run records
//! (`policy.sandbox`). The mechanism is `sys::sandbox`'s.

use std::path::{Path, PathBuf};

use crate::engine::sandbox_policy::{
    DEFAULT_DENY_READ, SandboxMode, SandboxStatus, StatePath, user_path,
};
use crate::engine::tool_policy::Enforcement;
use crate::engine::{EngineCommand, EngineId};
use crate::ground::env::EnvVars;
use crate::ground::{Result, VfError};
use crate::sys::sandbox::{Prepared, Rules, Support};
use crate::unit::Asked;

/// The devices every sandboxed process may write: output thrown away, and
/// the terminal (a CLI may open `/dev/tty` to ask or draw).
const DEVICES: &[&str] = &["/dev/null", "/dev/tty", "/dev/pts", "/dev/ptmx"];

/// A unit's sandbox, resolved from its request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    pub mode: SandboxMode,
    /// Checked, absolute; the built-in list when the user gave none.
    pub deny_read: Vec<PathBuf>,
    /// The user's extra writable paths, checked, absolute.
    pub writable: Vec<PathBuf>,
    /// `verify_sandbox = false`: `setup` and `verify` run outside it.
    pub steps_outside: bool,
    /// `--require-enforced`: checked by [`Sandbox::of`] already.
    pub require_enforced: bool,
}

impl Sandbox {
    /// The unit's request (`asked`: the flags over the kept or configured
    /// one) resolved for a run in `cwd`: each path checked (exit 2), the
    /// built-in deny list when none was given, `--read-only` making the
    /// mode `read-only`, and with `--require-enforced` refused (exit 2)
    /// when this machine cannot hold it. A working directory inside a
    /// denied path is refused too.
    pub fn of(asked: &Asked, cwd: &Path) -> Result<Sandbox> {
        let mut mode = asked.sandbox.unwrap_or_default();
        if mode == SandboxMode::Workspace && asked.read_only {
            mode = SandboxMode::ReadOnly;
        }
        let home = home();
        let paths = |list: &[String], what: &str| -> Result<Vec<PathBuf>> {
            list.iter()
                .map(|p| user_path(p, home.as_deref(), what))
                .collect()
        };
        let mut deny_read = paths(&asked.deny_read, "deny_read")?;
        let writable = paths(&asked.writable, "writable")?;
        if mode.is_on() && deny_read.is_empty() {
            deny_read = DEFAULT_DENY_READ
                .iter()
                .filter_map(|p| user_path(p, home.as_deref(), "deny_read").ok())
                .collect();
        }
        let sb = Sandbox {
            mode,
            deny_read,
            writable,
            steps_outside: asked.steps_unsandboxed,
            require_enforced: asked.require_enforced,
        };
        if mode.is_on() {
            sb.check_cwd(cwd)?;
            sb.check_enforceable()?;
        }
        Ok(sb)
    }

    pub fn is_on(&self) -> bool {
        self.mode.is_on()
    }

    /// Something confines the run on this machine (enforced or not).
    pub fn applies(&self) -> bool {
        self.is_on() && support().mechanism().is_some()
    }

    /// The policy's sandbox facts for the engine's argv.
    pub fn mark(&self, p: &mut crate::engine::ToolPolicy) {
        p.sandbox_holds_read_only = p.read_only && self.holds_read_only();
        p.in_sandbox = self.applies();
    }

    /// Holds the working directory read-only on this machine.
    pub fn holds_read_only(&self) -> bool {
        self.mode == SandboxMode::ReadOnly && missing(&support()).is_empty()
    }

    fn check_cwd(&self, cwd: &Path) -> Result<()> {
        let here = real(cwd);
        match self.deny_read.iter().find(|d| here.starts_with(real(d))) {
            None => Ok(()),
            Some(d) => Err(VfError::usage(format!(
                "the working directory {} is inside deny_read path {}: the engine could not read its own files",
                cwd.display(),
                d.display()
            ))),
        }
    }

    fn check_enforceable(&self) -> Result<()> {
        let missing = missing(&support());
        if !self.require_enforced || missing.is_empty() {
            return Ok(());
        }
        Err(VfError::usage(format!(
            "require-enforced: the sandbox cannot be enforced on this machine: {}",
            missing.join("; ")
        )))
    }
}

/// The home dir, as the engine will see it.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()))
}

/// A path as the file system resolves it (itself when it does not exist).
fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What this machine offers (`VF_TEST_SANDBOX` plays another machine).
pub fn support() -> Support {
    let simulated = std::env::var(EnvVars::VF_TEST_SANDBOX).ok();
    crate::sys::sandbox::support(simulated.as_deref())
}

/// What `support` cannot hold, in words (empty: the sandbox is enforced).
pub fn missing(support: &Support) -> Vec<String> {
    // What `prepare` reports for no rules at all is what the machine lacks.
    match crate::sys::sandbox::prepare(&Rules::default(), support) {
        Ok(p) => p.missing().to_vec(),
        Err(e) => vec![format!("the sandbox cannot be made: {e}")],
    }
}

/// What one process of the unit is held to: where it runs, its temp dir
/// (in the unit's folder), the engine's own state, the worktree's git paths.
/// The rest of the unit's folder (its marker, lock, logs) stays vf's: an
/// engine that could delete the lock would let a second vf run the unit.
pub struct Place<'a> {
    pub cwd: &'a Path,
    pub tmp: &'a Path,
    pub engine: EngineId,
    pub command: Option<&'a EngineCommand>,
    /// The variables vf adds to the process's environment.
    pub env: &'a [(String, String)],
    /// A worktree unit's git paths the engine may write (`git status`, `git add`, commits on its own branch).
    pub git: &'a [PathBuf],
}

impl Sandbox {
    /// The engine's own state paths at `place` (in its environment), each
    /// with whether it is a directory.
    pub fn state_paths(&self, place: &Place) -> Vec<(PathBuf, bool)> {
        let var = |name: &str| {
            place
                .env
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(name).ok())
        };
        state_paths(place.engine, place.command)
            .iter()
            .filter_map(|p| p.resolve(&var).map(|path| (path, !p.file)))
            .collect()
    }

    /// Makes the engine's missing state directories (as it would itself at
    /// its first run): a rule needs its path to exist, and without them
    /// some CLIs cannot start at all (opencode's data dir) or keep no
    /// session (claude's). Files are never made. A failure is a warning.
    pub fn make_state_dirs(&self, place: &Place) -> Vec<String> {
        let mut warnings = Vec::new();
        for (path, is_dir) in self.state_paths(place) {
            if is_dir
                && std::fs::symlink_metadata(&path).is_err()
                && let Err(e) = std::fs::create_dir_all(&path)
            {
                warnings.push(format!(
                    "sandbox: cannot make the engine's state dir {}: {e}",
                    path.display()
                ));
            }
        }
        warnings
    }

    /// The rules for one process at `place`.
    pub fn rules(&self, place: &Place) -> Rules {
        let state: Vec<PathBuf> = self
            .state_paths(place)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let mut writable = Vec::new();
        if self.mode == SandboxMode::Workspace {
            writable.push(place.cwd.to_path_buf());
            writable.extend(place.git.iter().cloned());
        }
        writable.push(place.tmp.to_path_buf());
        writable.extend(state.iter().cloned());
        writable.extend(self.writable.iter().cloned());
        writable.extend(DEVICES.iter().map(PathBuf::from));
        dedup(&mut writable);
        // The engine's own state is never denied to it.
        let deny_read = self
            .deny_read
            .iter()
            .filter(|d| !state.iter().any(|s| d.starts_with(s)))
            .cloned()
            .collect();
        Rules {
            writable,
            deny_read,
        }
    }

    /// What the run records of the rules it was held to.
    pub fn status(&self, rules: &Rules, prepared: Option<&Prepared>) -> SandboxStatus {
        let shown = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect();
        let held = prepared.is_some_and(|p| p.mechanism().is_some() && p.missing().is_empty());
        SandboxStatus {
            mode: self.mode,
            state: match (self.is_on(), held) {
                (false, _) => Enforcement::Off,
                (true, true) => Enforcement::Enforced,
                (true, false) => Enforcement::Unenforced,
            },
            mechanism: prepared.and_then(Prepared::mechanism),
            writable: shown(&rules.writable),
            deny_read: shown(&rules.deny_read),
        }
    }
}

impl Sandbox {
    /// What a run at `place` would record, without making anything (the
    /// dry run): this machine's mechanism, and whether it holds the rules.
    pub fn preview(&self, place: &Place) -> SandboxStatus {
        let rules = self.rules(place);
        let support = support();
        let mut status = self.status(&rules, None);
        status.mechanism = support.mechanism();
        if self.is_on() && missing(&support).is_empty() {
            status.state = Enforcement::Enforced;
        }
        status
    }
}

/// The state paths of `engine`; a command engine's are those of the CLI its
/// command runs (`gemini --acp`: gemini's), when it is one vf knows.
fn state_paths(engine: EngineId, command: Option<&EngineCommand>) -> &'static [StatePath] {
    let own = engine.engine().spec().state_paths;
    let Some(program) = command.and_then(|c| c.line.split_whitespace().next()) else {
        return own;
    };
    let name = Path::new(program).file_name().and_then(|n| n.to_str());
    EngineId::ALL
        .iter()
        .map(|e| e.engine().spec())
        .find(|s| Some(s.binary) == name)
        .map_or(own, |s| s.state_paths)
}

fn dedup(v: &mut Vec<PathBuf>) {
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|p| seen.insert(p.clone()));
}
