//! `vf mcp install`: the entry that starts `vf mcp` in an engine's own MCP
//! configuration (ENGINES.md, "vf as an MCP server"), printed, or merged
//! into that file with `--write`.
//!
//! Where and in what shape (measured with the pinned CLIs in the loopback
//! sandbox: each started the server from this file with no vf flag):
//!
//! - claude: `<dir>/.mcp.json`, `mcpServers.vf` = `{command, args}`;
//! - gemini: `<dir>/.gemini/settings.json`, the same shape;
//! - copilot: `$COPILOT_HOME/mcp-config.json` (default `~/.copilot/`), the same
//!   with `type: local` and `tools: ["*"]`;
//! - opencode: `<dir>/opencode.json`, `mcp.vf` = `{type: local, command: [vf,
//!   mcp, …], enabled: true}`;
//! - codex: `$CODEX_HOME/config.toml` (default `~/.codex/`), `[mcp_servers.vf]`
//!   with `env_vars`: codex clears an MCP server's environment down to a few
//!   names (HOME, PATH, …), so the variables that carry a unit's lineage and
//!   state dir must be named to pass.
//!
//! The merge keeps every other byte of the file: the entry is spliced into
//! the text (JSON: into the `mcpServers`/`mcp` object, or a new one at the
//! top; TOML: a table appended), then the result is parsed again and must
//! hold exactly the entry. A second run is "unchanged"; a different `vf`
//! entry is refused without `force`; a file that does not parse is refused,
//! named. The file is never written through a link, never replaces anything
//! but a regular file (`ground::fsutil::user_file`), and a new one is 0600.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::engine::EngineId;
use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};

/// The server's name in every engine's file (claude then calls its tool
/// `mcp__vf__dispatch`, opencode `vf_dispatch`, copilot `vf-dispatch`).
pub const SERVER: &str = "vf";

/// What a CLI that clears its MCP servers' environment must pass on.
pub const PASSED_VARS: [&str; 3] = [
    EnvVars::VF_PARENT_UNIT,
    EnvVars::VF_DEPTH,
    EnvVars::VF_STATE_DIR,
];

/// How an engine's file holds MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"mcpServers": {NAME: {command, args, …}}}`; `copilot`: with
    /// `type: local` and `tools: ["*"]`.
    McpServers { copilot: bool },
    /// opencode's `{"mcp": {NAME: {type: local, command: [...]}}}`.
    Opencode,
    /// codex's `[mcp_servers.NAME]` in TOML.
    CodexToml,
}

/// The file an engine reads and its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub path: PathBuf,
    pub format: Format,
}

/// Where `engine` reads MCP servers: `dir` for a project file, else the
/// engine's home (`home_var` when set and not empty, else `~/<dot>`).
pub fn target(
    engine: EngineId,
    dir: &Path,
    var: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Result<Target> {
    let engine_home = |name: &str, dot: &str| -> Result<PathBuf> {
        if let Some(h) = var(name).filter(|h| !h.is_empty()) {
            return Ok(PathBuf::from(h));
        }
        home.map(|h| h.join(dot)).ok_or_else(|| {
            VfError::usage(format!(
                "vf mcp install: {engine}'s configuration is in the home directory, and none is known (set {name})"
            ))
        })
    };
    let (path, format) = match engine {
        EngineId::Claude => (dir.join(".mcp.json"), Format::McpServers { copilot: false }),
        EngineId::Gemini => (
            dir.join(".gemini").join("settings.json"),
            Format::McpServers { copilot: false },
        ),
        EngineId::Opencode => (dir.join("opencode.json"), Format::Opencode),
        EngineId::Copilot => (
            engine_home("COPILOT_HOME", ".copilot")?.join("mcp-config.json"),
            Format::McpServers { copilot: true },
        ),
        EngineId::Codex => (
            engine_home("CODEX_HOME", ".codex")?.join("config.toml"),
            Format::CodexToml,
        ),
        other => {
            return Err(VfError::usage(format!(
                "vf mcp install: no verified MCP configuration for {other}; supported: claude, codex, gemini, opencode, copilot"
            )));
        }
    };
    Ok(Target { path, format })
}

/// The command that starts the server: this vf's absolute path, `mcp`, flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub command: String,
    pub args: Vec<String>,
}

impl Entry {
    pub fn new(vf: &Path, flags: &[String]) -> Entry {
        let mut args = vec!["mcp".to_string()];
        args.extend(flags.iter().cloned());
        Entry {
            command: vf.display().to_string(),
            args,
        }
    }

    /// The variables the engine must be told to pass (codex only).
    pub fn passed_vars(format: Format) -> &'static [&'static str] {
        match format {
            Format::CodexToml => &PASSED_VARS,
            _ => &[],
        }
    }

    /// The server's value as the file holds it (codex's table as JSON, for
    /// `--json`).
    pub fn json(&self, format: Format) -> Value {
        match format {
            Format::McpServers { copilot: false } => {
                json!({"command": self.command, "args": self.args})
            }
            Format::McpServers { copilot: true } => json!({
                "type": "local", "command": self.command, "args": self.args, "tools": ["*"]
            }),
            Format::Opencode => {
                let mut command = vec![self.command.clone()];
                command.extend(self.args.iter().cloned());
                json!({"type": "local", "command": command, "enabled": true})
            }
            Format::CodexToml => {
                json!({"command": self.command, "args": self.args, "env_vars": PASSED_VARS})
            }
        }
    }

    /// The whole snippet for `format`, as printed.
    pub fn snippet(&self, format: Format) -> String {
        match format {
            Format::CodexToml => self.toml_table(),
            _ => {
                let key = container_key(format);
                let v = json!({ key: { SERVER: self.json(format) } });
                serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
            }
        }
    }

    fn toml_table(&self) -> String {
        let s = |t: &str| toml::Value::String(t.to_string()).to_string();
        let list = |items: &[String]| {
            let parts: Vec<String> = items.iter().map(|a| s(a)).collect();
            format!("[{}]", parts.join(", "))
        };
        let vars: Vec<String> = PASSED_VARS.iter().map(|v| v.to_string()).collect();
        format!(
            "[mcp_servers.{SERVER}]\ncommand = {}\nargs = {}\nenv_vars = {}\n",
            s(&self.command),
            list(&self.args),
            list(&vars)
        )
    }
}

fn container_key(format: Format) -> &'static str {
    match format {
        Format::Opencode => "mcp",
        _ => "mcpServers",
    }
}

pub use super::mcp_install_text::Outcome;

fn refuse(path: &Path, why: impl std::fmt::Display) -> VfError {
    VfError::usage(format!("vf mcp install: {}: {why}", path.display()))
}

/// The file's new text with the entry merged into `old` (`None`: no file),
/// and what that is; `Unchanged` keeps `old` as it is.
pub fn merge(
    old: Option<&str>,
    entry: &Entry,
    t: &Target,
    force: bool,
) -> Result<(String, Outcome)> {
    let (text, outcome) = match t.format {
        Format::CodexToml => {
            super::mcp_install_text::merge_toml(old, SERVER, &entry.snippet(t.format), force)
                .map_err(|why| refuse(&t.path, why))?
        }
        f => super::mcp_install_text::merge_json(
            old,
            container_key(f),
            SERVER,
            &entry.json(f),
            force,
        )
        .map_err(|why| refuse(&t.path, why))?,
    };
    let outcome = match (old, outcome) {
        (None, _) => Outcome::Created,
        (Some(_), o) => o,
    };
    Ok((text, outcome))
}

/// Reads the target (none there: `None`), refusing a link, a device, a
/// directory, or a parent directory that is a link.
pub fn read(t: &Target) -> Result<Option<String>> {
    if let Some(parent) = t.path.parent()
        && std::fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(refuse(
            parent,
            "it is a symbolic link: vf does not write through one",
        ));
    }
    use crate::ground::fsutil::user_file::{Streams, check};
    check(&t.path, Streams::Refused).map_err(|e| refuse(&t.path, e))?;
    match crate::ground::fsutil::read_no_follow(&t.path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| refuse(&t.path, "it is not UTF-8 text")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(refuse(&t.path, e)),
    }
}

/// Writes `text` to the target by `user_file`'s rule (a new file is 0600;
/// an existing one keeps its permissions).
pub fn write(t: &Target, text: &str) -> Result<()> {
    use crate::ground::fsutil::user_file::{Streams, write};
    let before = std::fs::symlink_metadata(&t.path)
        .ok()
        .map(|m| m.permissions());
    write(&t.path, text.as_bytes(), Streams::Refused).map_err(|e| refuse(&t.path, e))?;
    if let Some(p) = before {
        std::fs::set_permissions(&t.path, p).map_err(|e| refuse(&t.path, e))?;
    }
    Ok(())
}
