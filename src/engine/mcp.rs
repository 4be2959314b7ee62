//! MCP servers per unit (`--mcp FILE`, plan key `mcp`): the common
//! `{"mcpServers": {NAME: {...}}}` shape, validated once, then translated
//! into each engine's verified mechanism (ENGINES.md, "MCP servers"):
//!
//! - claude: `--mcp-config=<file>` (variadic `<configs...>` in the saved
//!   help of 2.1.207, 2.1.220, 2.1.332: the `=` form binds one value). The
//!   file is the servers as given.
//! - copilot (1.0.83, 1.0.102): `--additional-mcp-config=@<file>` ("JSON
//!   string or file path (prefix with @)"); each server gets copilot's
//!   `type` (`local` for a command, `http` for a url) and `tools: ["*"]`
//!   unless it says otherwise.
//! - codex, gemini: refused. The real-engine tier (tests/it/real_mcp.rs)
//!   saw neither reach the model: codex 0.171.0 starts a server given as
//!   `-c mcp_servers.<name>.*` but never offers its tools (openai/codex#17904);
//!   gemini 0.61.0 never starts one from a `GEMINI_CLI_SYSTEM_SETTINGS_PATH`
//!   settings file in `-p` mode (google-gemini/gemini-cli#26021).
//! - opencode: a config file named by `OPENCODE_CONFIG` ("load an additional
//!   explicit config", 1.18.33's binary), servers as `mcp.<name>` with
//!   `type: local`, `command: [command, args…]`, `environment`, or `type:
//!   remote`, `url`, `headers` (its `McpLocalConfig` / remote schema).
//! - acp: no argv, no file: the session sends the servers as `session/new`'s
//!   (or `session/load`'s) `mcpServers` (`acp::mcp`: a url server only to an
//!   agent that advertises `mcpCapabilities.http`/`.sse`; the raw log's copy
//!   has every env and header value hidden).
//! - agy, bridge: refused (agy: `vf workspace init --mcp` writes
//!   `.agents/mcp_config.json`).
//!
//! A server that is `vf mcp` (an engine handing work on through vf) learns
//! its caller from `VF_PARENT_UNIT`/`VF_DEPTH` in the engine's environment:
//! claude, copilot and opencode start their MCP servers with their whole
//! environment (measured at their pins: ENGINES.md, "vf as an MCP server"),
//! so vf adds no `env` for them; codex, which clears it, is refused here.
//!
//! Every file is written into the unit's own directory
//! (`<state>/units/<unit>/`) by the launch, 0600, never into the user's
//! files, and removed when the engine has ended (failed or not; one a
//! `kill -9` of vf left is removed by the unit's next run, which writes its
//! own). Env values and headers never reach argv, a result or a log: an
//! engine that echoes one has it redacted ([`McpServers::secrets`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::EngineId;
use crate::ground::error::{Result, VfError};

/// The validated `mcpServers` object.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServers {
    servers: Map<String, Value>,
}

impl McpServers {
    /// The servers' names, sorted: what a result or marker may carry.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.servers.keys().cloned().collect();
        names.sort();
        names
    }

    /// `{"mcpServers": {...}}`, as validated.
    pub fn to_value(&self) -> Value {
        json!({ "mcpServers": self.servers })
    }
}

/// The common shape: each server a `command` (string, optional `args`
/// strings and `env` strings) or a `url`/`serverUrl` (string, optional
/// `headers` strings); each name a safe identifier.
pub fn parse(text: &str) -> Result<McpServers> {
    let bad = |why: String| VfError::usage(format!("--mcp: {why}"));
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let servers = v
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no `mcpServers` object".into()))?;
    if servers.is_empty() {
        return Err(bad("`mcpServers` names no server".into()));
    }
    for (name, s) in servers {
        crate::ground::names::check("MCP server name", name)?;
        let s = s
            .as_object()
            .ok_or_else(|| bad(format!("server {name:?} is not an object")))?;
        let has = |k: &str| s.get(k).is_some_and(Value::is_string);
        if !has("command") && !has("url") && !has("serverUrl") {
            return Err(bad(format!(
                "server {name:?} has no `command` or `url` string"
            )));
        }
        if let Some(args) = s.get("args") {
            let ok = args
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string));
            if !ok {
                return Err(bad(format!(
                    "server {name:?}: `args` is not an array of strings"
                )));
            }
        }
        for k in ["env", "headers"] {
            if let Some(m) = s.get(k) {
                let ok = m
                    .as_object()
                    .is_some_and(|m| m.values().all(Value::is_string));
                if !ok {
                    return Err(bad(format!(
                        "server {name:?}: `{k}` is not an object of strings"
                    )));
                }
            }
        }
    }
    Ok(McpServers {
        servers: servers.clone(),
    })
}

impl McpServers {
    /// Every `env` and `headers` value: what vf redacts from whatever it
    /// writes of the run (`dispatch::redact`).
    pub fn secrets(&self) -> Vec<String> {
        let values = self
            .servers
            .values()
            .flat_map(|s| ["env", "headers"].map(|k| s.get(k)))
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.values().filter_map(Value::as_str));
        values.map(str::to_string).collect()
    }
}

/// Removes the unit's MCP config files a killed vf left (every engine's
/// name) from the unit's directory `unit_dir`.
pub fn remove_files(unit_dir: &Path) {
    for engine in EngineId::ALL {
        let _ = std::fs::remove_file(file_path(unit_dir, engine));
    }
}

/// What the servers amount to for one run of `engine`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpApplied {
    /// Spliced into argv (with the policy's part).
    pub args: Vec<String>,
    /// Added to the engine's environment (a path, never a secret).
    pub env: Vec<(String, String)>,
    /// Written 0600 by the launch before the spawn.
    pub file: Option<(PathBuf, String)>,
}

/// The file's path: `mcp-<engine>.json` in the unit's directory (which the
/// request brings), absolute.
fn file_path(unit_dir: &Path, engine: EngineId) -> PathBuf {
    let p = unit_dir.join(format!("mcp-{engine}.json"));
    std::path::absolute(&p).unwrap_or(p)
}

fn text(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

fn refuse(engine: EngineId, why: &str) -> VfError {
    VfError::usage(format!("--mcp: {engine}: {why}"))
}

fn is_url(s: &Map<String, Value>) -> bool {
    !s.contains_key("command")
}

/// Whether `engine` takes these servers (the plan's check, before a state dir).
pub fn check(engine: EngineId, servers: &McpServers) -> Result<()> {
    apply(engine, servers, Path::new("check")).map(|_| ())
}

/// Translates the servers for `engine`, or refuses (exit 2) where the
/// mechanism is not verified. A config file goes into `unit_dir`.
pub fn apply(engine: EngineId, servers: &McpServers, unit_dir: &Path) -> Result<McpApplied> {
    let path = file_path(unit_dir, engine);
    let each = || {
        servers
            .servers
            .iter()
            .filter_map(|(n, s)| s.as_object().map(|s| (n, s)))
    };
    let with_file = |body: Value, args: Vec<String>, env: Vec<(String, String)>| McpApplied {
        args,
        env,
        file: Some((path.clone(), text(&body))),
    };
    match engine {
        EngineId::Claude => {
            let body = json!({ "mcpServers": servers.servers });
            let arg = format!("--mcp-config={}", path.display());
            Ok(with_file(body, vec![arg], Vec::new()))
        }
        EngineId::Copilot => {
            let mut out = Map::new();
            for (name, s) in each() {
                let mut s = s.clone();
                let kind = if is_url(&s) { "http" } else { "local" };
                s.entry("type").or_insert_with(|| json!(kind));
                s.entry("tools").or_insert_with(|| json!(["*"]));
                out.insert(name.clone(), Value::Object(s));
            }
            let arg = format!("--additional-mcp-config=@{}", path.display());
            Ok(with_file(
                json!({ "mcpServers": out }),
                vec![arg],
                Vec::new(),
            ))
        }
        EngineId::Codex => Err(refuse(
            engine,
            "not verified: with codex 0.171.0 a server given as `-c mcp_servers.<name>.*` starts, \
             but the model is never offered its tools (upstream openai/codex#17904); \
             --mcp works with claude, copilot and opencode",
        )),
        EngineId::Gemini => Err(refuse(
            engine,
            "not verified: gemini 0.61.0 never starts a server from the settings file named by \
             GEMINI_CLI_SYSTEM_SETTINGS_PATH in `-p` mode (upstream google-gemini/gemini-cli#26021); \
             --mcp works with claude, copilot and opencode",
        )),
        EngineId::Opencode => {
            let mut out = Map::new();
            for (name, s) in each() {
                out.insert(name.clone(), opencode_server(s));
            }
            let body = json!({ "$schema": "https://opencode.ai/config.json", "mcp": out });
            let env = vec![("OPENCODE_CONFIG".to_string(), path.display().to_string())];
            Ok(with_file(body, Vec::new(), env))
        }
        EngineId::Acp => Ok(McpApplied::default()),
        EngineId::Agy => Err(refuse(
            engine,
            "no verified per-run mechanism; `vf workspace init --engine agy --mcp FILE` writes `.agents/mcp_config.json`",
        )),
        _ => Err(refuse(
            engine,
            "no verified mechanism for MCP servers on this engine",
        )),
    }
}

fn opencode_server(s: &Map<String, Value>) -> Value {
    let pick = |k: &str| s.get(k).cloned().unwrap_or_else(|| json!({}));
    match s.get("command") {
        Some(cmd) => {
            let mut command = vec![cmd.clone()];
            if let Some(Value::Array(a)) = s.get("args") {
                command.extend(a.iter().cloned());
            }
            json!({ "type": "local", "command": command, "environment": pick("env") })
        }
        None => {
            let url = s.get("url").or_else(|| s.get("serverUrl")).cloned();
            json!({ "type": "remote", "url": url, "headers": pick("headers") })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let bad = [
            "",
            "[]",
            r#"{"mcpServers": {}}"#,
            r#"{"mcpServers": {"../x": {"command": "a"}}}"#,
            r#"{"mcpServers": {"x": {"args": ["a"]}}}"#,
            r#"{"mcpServers": {"x": {"command": "a", "args": "b"}}}"#,
            r#"{"mcpServers": {"x": {"command": "a", "env": {"K": 1}}}}"#,
        ];
        for b in bad {
            assert_eq!(parse(b).unwrap_err().exit_code(), 2, "{b}");
        }
        let ok = parse(r#"{"mcpServers": {"b": {"url": "http://x"}, "a": {"command": "c"}}}"#);
        assert_eq!(ok.unwrap().names(), ["a", "b"]);
    }
}
