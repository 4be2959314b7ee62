//! Read-only and tool policy: per engine and version family, the one place
//! that says how `--read-only`, `--allow-tool` and `--deny-tool` are
//! enforced, what goes into argv, and what is recorded
//! (`policy: {readOnly, tools}`, each `enforced | unenforced | off`).
//! Pure: every mapping is checked against the saved help in `fixtures/`.
//!
//! - claude (2.1.207, 2.1.220, 2.1.332): `--permission-mode plan`,
//!   `--allowedTools=NAME`, `--disallowedTools=NAME`. Both tool flags are
//!   variadic (`<tools...>`): the `=` form binds one value and never takes
//!   the next word (capture `b_tool_argorder_pitfall` shows the other form
//!   swallowing a prompt), and the argv builder puts them before
//!   `--output-format`.
//! - codex (0.144.1, 0.146.0, 0.171.0): `exec --sandbox read-only`; `exec
//!   resume --help` has no `--sandbox`, so a resume is unenforced. No tool
//!   allow or deny list: tools are unenforced.
//! - gemini (0.47.0, 0.61.0): `--approval-mode plan` ("plan (read-only
//!   mode)"), `--allowed-tools=NAME` (an array: the `=` form again). No deny
//!   flag (its policy engine is unverified): a deny list is unenforced. An
//!   allowed tool runs even in plan mode (the real-engine tier saw
//!   `run_shell_command` write under `--approval-mode plan`): with read-only,
//!   the allow list is not sent (a warning; tools unenforced).
//! - copilot: no read-only mode. 1.0.102 (and an unreadable version, run as
//!   the newest): `--allow-tool=NAME`, `--deny-tool=NAME` (permission
//!   patterns: `shell`, `write`, `url` or an MCP server, with or without
//!   `(…)`). 1.0.83 up to 1.0.102: `--available-tools=NAME`,
//!   `--excluded-tools=NAME`, which filter the model's tool names (`bash`,
//!   `view`, `grep`, …, an MCP tool as `server-tool`). A name the family does
//!   not know (claude's `Read`) is dropped with a warning, never sent, and
//!   tools are unenforced. Older versions: unenforced. (The families, their
//!   flags and names are copilot's own description: `engine::copilot`.)
//! - acp: read-only is vf's own answer to permission requests
//!   (`acp::policy`), nothing in argv; a permission request names no tool
//!   vf could match, so tools are unenforced.
//! - opencode, agy, bridge: no verified flag: unenforced.

use serde::{Deserialize, Serialize};

use super::EngineId;
use crate::ground::error::{Result, VfError};
use crate::ground::version::Version;

/// What the caller asked for (`--read-only`, `--allow-tool`, `--deny-tool`,
/// `--require-enforced`, or the plan keys).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    pub read_only: bool,
    pub allow_tools: Vec<String>,
    pub deny_tools: Vec<String>,
    /// Any unenforced part refuses the run (exit 2) before anything is written.
    pub require_enforced: bool,
    /// The sandbox holds the working directory read-only on this machine
    /// (`dispatch::confine`): read-only is enforced whatever the engine has.
    pub sandbox_holds_read_only: bool,
    /// vf's sandbox confines this run (`dispatch::confine`): an engine
    /// whose own sandbox cannot nest in it (codex's) runs without its own.
    pub in_sandbox: bool,
}

pub use super::enforcement::Enforcement;

/// The recorded `policy` of a run (result and marker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    pub read_only: Enforcement,
    pub tools: Enforcement,
    /// The sandbox (`dispatch::confine`); absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::sandbox_policy::SandboxStatus>,
}

impl PolicyStatus {
    pub const OFF: PolicyStatus = PolicyStatus {
        read_only: Enforcement::Off,
        tools: Enforcement::Off,
        sandbox: None,
    };

    /// Whether any part was asked for and is not held.
    pub fn unenforced(&self) -> bool {
        self.read_only == Enforcement::Unenforced
            || self.tools == Enforcement::Unenforced
            || self
                .sandbox
                .as_ref()
                .is_some_and(|s| s.state == Enforcement::Unenforced)
    }
}

/// What the policy amounts to for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Spliced into argv by the engine's builder.
    pub args: Vec<String>,
    pub status: PolicyStatus,
    /// One per unenforced part or dropped name; each says "unenforced" or "dropped".
    pub warnings: Vec<String>,
}

/// The policy's checks that need no engine: a tool name is a non-empty line
/// without control characters, never in both lists; read-only or an allow
/// list contradict `--skip-permissions` (which approves every tool).
pub fn check(p: &ToolPolicy, skip_permissions: bool) -> Result<()> {
    for name in p.allow_tools.iter().chain(&p.deny_tools) {
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            return Err(VfError::usage(format!(
                "a tool name must be a non-empty line without control characters, not {name:?}"
            )));
        }
    }
    if let Some(both) = p.allow_tools.iter().find(|a| p.deny_tools.contains(a)) {
        return Err(VfError::usage(format!(
            "tool {both:?} is both allowed and denied"
        )));
    }
    if skip_permissions && (p.read_only || !p.allow_tools.is_empty()) {
        let what = if p.read_only {
            "read-only"
        } else {
            "an allow-tool list"
        };
        return Err(VfError::usage(format!(
            "{what} contradicts skip-permissions (which approves every tool): give one"
        )));
    }
    Ok(())
}

/// The refusal of `--require-enforced` when any part is unenforced.
pub fn require(engine: EngineId, p: &ToolPolicy, applied: &Applied) -> Result<()> {
    if !p.require_enforced || !applied.status.unenforced() {
        return Ok(());
    }
    Err(VfError::usage(format!(
        "require-enforced: {engine} cannot enforce this policy: {}",
        applied.warnings.join("; ")
    )))
}

/// How `engine` (at `version`; `resume`: an exact resume) holds `p`.
pub fn apply(engine: EngineId, version: Option<&Version>, resume: bool, p: &ToolPolicy) -> Applied {
    let mut out = Applied {
        args: Vec::new(),
        status: PolicyStatus {
            read_only: off_or(p.read_only, Enforcement::Unenforced),
            tools: off_or(has_tools(p), Enforcement::Unenforced),
            sandbox: None,
        },
        warnings: Vec::new(),
    };
    if p.read_only
        && let Some(args) = read_only_args(engine, resume, p.in_sandbox)
    {
        out.args.extend(args.iter().map(|s| s.to_string()));
        out.status.read_only = Enforcement::Enforced;
    }
    if has_tools(p) {
        tool_args(engine, version, p, &mut out);
    }
    // The sandbox holds the working directory read-only, whatever the engine has.
    if p.read_only && p.sandbox_holds_read_only {
        out.status.read_only = Enforcement::Enforced;
    }
    if out.status.read_only == Enforcement::Unenforced {
        out.warnings.push(format!(
            "{engine}: read-only unenforced: no verified read-only mode{}; it may edit files",
            if resume { " for a resumed run" } else { "" }
        ));
    }
    out
}

fn off_or(asked: bool, e: Enforcement) -> Enforcement {
    if asked { e } else { Enforcement::Off }
}

fn has_tools(p: &ToolPolicy) -> bool {
    !p.allow_tools.is_empty() || !p.deny_tools.is_empty()
}

/// The verified read-only flags (`Some(&[])`: enforced by vf itself).
/// codex's own sandbox cannot start inside vf's (its `bwrap` is refused,
/// every tool fails): under vf's sandbox it is not asked for.
fn read_only_args(
    engine: EngineId,
    resume: bool,
    in_sandbox: bool,
) -> Option<&'static [&'static str]> {
    match engine {
        EngineId::Claude => Some(&["--permission-mode", "plan"]),
        EngineId::Codex => (!resume && !in_sandbox).then_some(&["--sandbox", "read-only"][..]),
        EngineId::Gemini => Some(&["--approval-mode", "plan"]),
        EngineId::Acp => Some(&[]),
        EngineId::Copilot
        | EngineId::Opencode
        | EngineId::Agy
        | EngineId::Bridge
        | EngineId::Recorded => None,
    }
}

/// The allow and deny flags of `engine` (`None`: it has none of that kind).
fn tool_flags(engine: EngineId, version: Option<&Version>) -> (Option<&str>, Option<&str>) {
    match engine {
        EngineId::Claude => (Some("--allowedTools"), Some("--disallowedTools")),
        EngineId::Gemini => (Some("--allowed-tools"), None),
        EngineId::Copilot => super::copilot::tool_flags(version),
        _ => (None, None),
    }
}

/// Whether the tool flags of `engine` at `version` know `name`: only copilot's
/// names are recorded per family; the others take whatever they are given.
fn knows_tool(engine: EngineId, version: Option<&Version>, name: &str) -> bool {
    engine != EngineId::Copilot || super::copilot::knows_tool(version, name)
}

fn tool_args(engine: EngineId, version: Option<&Version>, p: &ToolPolicy, out: &mut Applied) {
    let (allow, deny) = tool_flags(engine, version);
    // gemini runs an allowed tool even in plan mode: read-only wins.
    let allow_breaks_read_only = engine == EngineId::Gemini && p.read_only;
    let mut unenforced = Vec::new();
    for (flag, names, what) in [
        (allow, &p.allow_tools, "allow"),
        (deny, &p.deny_tools, "deny"),
    ] {
        if names.is_empty() {
            continue;
        }
        let flag = match flag {
            Some(_) if what == "allow" && allow_breaks_read_only => {
                unenforced.push(
                    "its allowed tools run even in plan mode, so under read-only the allow list is not sent"
                        .to_string(),
                );
                continue;
            }
            Some(f) => f,
            None => {
                unenforced.push(format!("{engine} has no verified {what}-tool flag"));
                continue;
            }
        };
        for name in names {
            if !knows_tool(engine, version, name) {
                out.warnings.push(format!(
                    "{engine} {}: tool {name:?} is not a name {flag} knows: not sent",
                    version.map_or_else(|| "(newest)".to_string(), Version::to_string)
                ));
                unenforced.push(format!("{what} {name:?} unknown"));
                continue;
            }
            out.args.push(format!("{flag}={name}"));
        }
    }
    out.status.tools = if unenforced.is_empty() {
        Enforcement::Enforced
    } else {
        out.warnings.push(format!(
            "{engine}: tools unenforced: {}",
            unenforced.join(", ")
        ));
        Enforcement::Unenforced
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contradictions_are_refused() {
        let ro = ToolPolicy {
            read_only: true,
            ..ToolPolicy::default()
        };
        assert!(check(&ro, true).is_err());
        assert!(check(&ro, false).is_ok());
        let both = ToolPolicy {
            allow_tools: vec!["Read".into()],
            deny_tools: vec!["Read".into()],
            ..ToolPolicy::default()
        };
        assert!(check(&both, false).is_err());
        let deny = ToolPolicy {
            deny_tools: vec!["Bash".into()],
            ..ToolPolicy::default()
        };
        assert!(check(&deny, true).is_ok());
        let empty = ToolPolicy {
            deny_tools: vec![" ".into()],
            ..ToolPolicy::default()
        };
        assert!(check(&empty, false).is_err());
    }
}
