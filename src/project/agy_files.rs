//! agy's (Antigravity's) workspace files, `vf workspace init --engine agy`
//! (ENGINES.md, "agy workspace files"): `AGENTS.md` (vf's section),
//! `.agents/agents/<name>/agent.md`, `.agents/skills/<skill>/…`,
//! `.agents/mcp_config.json` and `.agents/hooks.json`, written through
//! [`crate::project::scaffold`] (idempotent, never over a user's edit).
//!
//! agy's reading of these files is unverified (no agy version is verified):
//! the hooks in particular are no guardrail, and agy stays post-hoc only.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::ground::error::{Result, VfError};
use crate::ground::fsutil::read_user_text;
use crate::project::scaffold::Item;

/// Largest instructions or MCP file, and largest file of a skill.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most files one skill directory may hold.
pub const MAX_SKILL_FILES: usize = 256;

/// A validated request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The agent's name and its instructions (text).
    pub agent: Option<(String, String)>,
    /// Each skill's name (its directory's) and files (relative path, text).
    pub skills: Vec<(String, Vec<(String, String)>)>,
    /// The `mcpServers` object, validated.
    pub mcp: Option<Value>,
    /// `.agents/hooks.json`, with these tools denied by `vf hook`.
    pub hooks: Option<Vec<String>>,
}

/// Reads a user-named file: regular, at most [`MAX_FILE_BYTES`], UTF-8.
pub fn read_text(what: &str, path: &Path) -> Result<String> {
    read_user_text(what, path, MAX_FILE_BYTES)
}

/// A skill directory: its name (checked) and every regular file below it.
/// A link inside it, a file that is not text, or one without `SKILL.md` is
/// refused.
pub fn read_skill(dir: &Path) -> Result<(String, Vec<(String, String)>)> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| VfError::usage(format!("--skill {}: no directory name", dir.display())))?
        .to_string();
    crate::ground::names::check("skill name", &name)?;
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    files.sort();
    if !files.iter().any(|(rel, _)| rel == "SKILL.md") {
        return Err(VfError::usage(format!(
            "--skill {}: no SKILL.md at its top",
            dir.display()
        )));
    }
    Ok((name, files))
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<()> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| VfError::usage(format!("--skill {}: {e}", dir.display())))?;
    for entry in rd {
        let entry = entry.map_err(|e| VfError::usage(format!("--skill {}: {e}", dir.display())))?;
        let path: PathBuf = entry.path();
        let ty = entry.file_type().map_err(anyhow::Error::from)?;
        if ty.is_symlink() {
            return Err(VfError::usage(format!(
                "--skill: {} is a symbolic link",
                path.display()
            )));
        }
        if ty.is_dir() {
            walk(root, &path, out)?;
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .ok()
            .and_then(|p| p.to_str())
            .ok_or_else(|| {
                VfError::usage(format!("--skill: {} has no UTF-8 name", path.display()))
            })?
            .replace('\\', "/");
        out.push((rel, read_text("--skill file", &path)?));
        if out.len() > MAX_SKILL_FILES {
            return Err(VfError::usage(format!(
                "--skill {}: more than {MAX_SKILL_FILES} files",
                root.display()
            )));
        }
    }
    Ok(())
}

/// The common `{"mcpServers": {NAME: {...}}}` shape, checked by
/// [`crate::engine::mcp::parse`].
pub fn parse_mcp(text: &str) -> Result<Value> {
    crate::engine::mcp::parse(text).map(|m| m.to_value())
}

/// The `vf hook` command line one event runs (`deny`: tools refused).
pub fn hook_command(event: &str, deny: &[String]) -> String {
    let mut c = format!("vf hook {event} --log .vibeflow/agy-hooks.jsonl");
    for d in deny {
        let _ = write!(c, " --deny-tool {d}");
    }
    c
}

/// `.agents/hooks.json`: `PreToolUse` and `PostToolUse` call `vf hook`.
pub fn hooks_json(deny: &[String]) -> Value {
    let entry = |event: &str| json!([{ "matcher": ".*", "hooks": [{ "type": "command", "command": hook_command(event, deny), "timeout": 10 }] }]);
    json!({ "hooks": { "PreToolUse": entry("pre-tool-use"), "PostToolUse": entry("post-tool-use") } })
}

/// The files for `req`.
pub fn items(req: &Request) -> Vec<Item> {
    let mut items = Vec::new();
    let mut index = String::from(
        "# agy workspace (written by `vf workspace init`)\n\n\
         vf checks agy's work after the run (post-hoc); these files are no guardrail.\n",
    );
    if let Some((name, instructions)) = &req.agent {
        let _ = writeln!(index, "- agent `{name}`: `.agents/agents/{name}/agent.md`");
        items.push(Item::File {
            rel: format!(".agents/agents/{name}/agent.md"),
            content: format!(
                "---\nname: {name}\ndescription: The {name} agent of this workspace.\n---\n\n{}",
                ensure_newline(instructions)
            ),
        });
    }
    for (skill, files) in &req.skills {
        let _ = writeln!(index, "- skill `{skill}`: `.agents/skills/{skill}/`");
        items.extend(files.iter().map(|(rel, content)| Item::File {
            rel: format!(".agents/skills/{skill}/{rel}"),
            content: content.clone(),
        }));
    }
    if let Some(mcp) = &req.mcp {
        let names: Vec<&String> = mcp["mcpServers"]
            .as_object()
            .map(Map::keys)
            .into_iter()
            .flatten()
            .collect();
        let _ = writeln!(
            index,
            "- MCP servers ({}): `.agents/mcp_config.json`",
            names.len()
        );
        items.push(json_item(".agents/mcp_config.json", mcp));
    }
    if let Some(deny) = &req.hooks {
        let _ = writeln!(
            index,
            "- hooks: `.agents/hooks.json` (`vf hook`: a log, not a guardrail)"
        );
        items.push(json_item(".agents/hooks.json", &hooks_json(deny)));
    }
    items.insert(
        0,
        Item::Section {
            rel: "AGENTS.md".into(),
            id: "workspace".into(),
            content: index,
        },
    );
    items
}

fn json_item(rel: &str, v: &Value) -> Item {
    Item::File {
        rel: rel.into(),
        content: serde_json::to_string_pretty(v).unwrap_or_default() + "\n",
    }
}

fn ensure_newline(s: &str) -> String {
    if s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n")
    }
}
