//! The vf skill: files that teach an agent to use vf itself (dispatch a
//! sub-task, read its result, resume it), generated from the clap tree (the
//! flags it documents must exist: [`render`] fails on one that does not)
//! and the engines' `Spec`s, and written through [`crate::project::scaffold`].

use std::fmt::Write as _;

use clap::ArgAction;

use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::project::scaffold::Item;

/// The flags the skill documents, per subcommand (long names; a positional
/// by its id). Each must exist in the clap tree.
pub const DOCUMENTED: &[(&str, &[&str])] = &[
    (
        "dispatch",
        &[
            "engine",
            "prompt",
            "prompt-file",
            "unit",
            "cwd",
            "json",
            "timeout",
            "worktree",
            "dry-run",
        ],
    ),
    ("resume", &["unit", "prompt", "json"]),
    ("status", &["unit", "json"]),
];

/// Where the skill goes, per engine (ENGINES.md, "The vf skill").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `.claude/skills/vf/SKILL.md`, with claude's front matter.
    ClaudeSkill,
    /// `.agents/skills/vf/SKILL.md` (agy).
    AgentsSkill,
    /// vf's section of `AGENTS.md` (codex, opencode).
    AgentsMd,
}

impl Target {
    /// The target for `engine`, or the refusal for an engine whose
    /// instruction files vf has not verified.
    pub fn of(engine: EngineId) -> Result<Target> {
        match engine {
            EngineId::Claude => Ok(Target::ClaudeSkill),
            EngineId::Agy => Ok(Target::AgentsSkill),
            EngineId::Codex | EngineId::Opencode => Ok(Target::AgentsMd),
            other => Err(VfError::usage(format!(
                "vf skill install: no verified instructions file for {}; supported: claude, agy, codex, opencode",
                other.as_str()
            ))),
        }
    }

    /// Every target, for an install without `--engine`.
    pub const ALL: [Target; 3] = [Target::ClaudeSkill, Target::AgentsSkill, Target::AgentsMd];
}

pub const NAME: &str = "vf";
pub const DESCRIPTION: &str =
    "Dispatch a sub-task to another coding-agent CLI with vf, read its JSON result, and resume it.";

/// The files for `target` with `body` (from [`render`]).
pub fn item(target: Target, body: &str) -> Item {
    let front = format!("---\nname: {NAME}\ndescription: {DESCRIPTION}\n---\n\n");
    match target {
        Target::ClaudeSkill => Item::File {
            rel: ".claude/skills/vf/SKILL.md".into(),
            content: format!("{front}{body}"),
        },
        Target::AgentsSkill => Item::File {
            rel: ".agents/skills/vf/SKILL.md".into(),
            content: format!("{front}{body}"),
        },
        Target::AgentsMd => Item::Section {
            rel: "AGENTS.md".into(),
            id: "skill".into(),
            content: body.to_string(),
        },
    }
}

/// The skill's text, from the clap tree `root` (the whole `vf` command).
pub fn render(root: &clap::Command) -> Result<String> {
    let mut s = String::from("# Using vf\n\n");
    s.push_str(
        "vf runs one unit of work on a coding-agent CLI and records it under `.vibeflow/`.\n\n\
         1. Dispatch a sub-task: `vf dispatch --engine ENGINE --unit NAME --prompt \"...\" --json`.\n\
         2. Read the result: the one JSON object printed; `state` is `done` or `failed`, `answer` \
         the agent's answer, `summary` its fenced json summary, `reason` why it failed. \
         `vf status NAME --json` shows it again later.\n\
         3. Resume: `vf resume NAME --prompt \"...\" --json` continues the same unit.\n\n\
         Exit codes: 0 done, 1 the engine failed, 2 bad arguments, 3 engine missing, 4 timeout.\n",
    );
    for (sub, flags) in DOCUMENTED {
        let cmd = root.find_subcommand(sub).ok_or_else(|| {
            VfError::usage(format!(
                "the vf skill documents `vf {sub}`, which no longer exists"
            ))
        })?;
        let _ = write!(s, "\n## `vf {sub}`\n\n");
        for flag in *flags {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(flag) || (a.is_positional() && a.get_id() == *flag))
                .ok_or_else(|| {
                    VfError::usage(format!(
                        "the vf skill documents `vf {sub}` {flag}, which no longer exists"
                    ))
                })?;
            let _ = writeln!(s, "- {}: {}", usage(arg), help(arg));
        }
    }
    s.push_str("\n## Engines\n\n");
    for id in EngineId::ALL {
        let spec = id.engine().spec();
        let versions = match spec.verified_versions {
            [] => "no verified version".to_string(),
            v => format!("verified {}", v.join(", ")),
        };
        let _ = writeln!(s, "- `{}` (`{}`, {versions})", id.as_str(), spec.binary);
    }
    s.push_str("\n`vf engines` shows each engine's resume support and guardrails.\n");
    Ok(s)
}

fn usage(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    match (arg.get_long(), arg.get_action()) {
        (None, _) => format!("`{value}`"),
        (Some(l), ArgAction::SetTrue | ArgAction::Count) => format!("`--{l}`"),
        (Some(l), _) => format!("`--{l} {value}`"),
    }
}

/// The first sentence-line of the flag's help.
fn help(arg: &clap::Arg) -> String {
    let text = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    text.split("\n\n")
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
