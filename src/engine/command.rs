//! Command engines: the unit carries the command vf runs (the bridge's
//! `--bridge "CMD"`), instead of the engine naming a binary found on PATH.
//! The command travels with the unit: the run request, the plan unit and the
//! marker (so `vf resume`, `vf orchestrate --resume` and `vf status` see the
//! same one). How the string is launched is [`super::launch_plan`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::launch_plan::{self, Launches};
use super::{EngineId, OutputTransport};
use crate::ground::error::{Result, VfError};
use crate::sys::{self, CommandLaunch};

/// Where a command engine's command comes from, for messages and lookups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandSource {
    /// The dispatch flag (`--bridge`).
    pub flag: &'static str,
    /// The environment variable read when the flag is absent (`VIBEFLOW_AI`).
    pub env: &'static str,
    /// The plan key (`bridge`).
    pub plan_key: &'static str,
}

impl CommandSource {
    /// The variable's value when it is set (empty included: refused later,
    /// in words, rather than silently ignored).
    pub fn from_env(&self) -> Option<String> {
        std::env::var_os(self.env).map(|v| v.to_string_lossy().into_owned())
    }
}

/// A known agent of a command engine: `--engine KIND:NAME` runs `command`
/// with `env` added (a static table keeps `EngineChoice` `Copy`).
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preset {
    pub name: &'static str,
    pub command: &'static str,
    pub env: &'static [(&'static str, &'static str)],
    /// What vf knows of it, for `vf engines`.
    pub note: &'static str,
}

impl Preset {
    /// Its command, checked, with its environment.
    pub fn command(&self) -> Result<EngineCommand> {
        let mut cmd = EngineCommand::new(self.command.to_string(), None, "the preset")?;
        cmd.env = self
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(cmd)
    }
}

/// What a command engine's unit runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineCommand {
    /// The command string, as given.
    pub line: String,
    /// The known engine whose JSON family the output is projected as
    /// (`--bridge-output`); plain text when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<EngineId>,
    /// Variables added to its environment (an ACP preset's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
}

impl EngineCommand {
    /// A checked command: not blank, no NUL, not too long; `output` a known
    /// CLI with a JSON transport. `what` names the source in errors.
    pub fn new(line: String, output: Option<EngineId>, what: &str) -> Result<EngineCommand> {
        launch_plan::check(&line, what).map_err(VfError::usage)?;
        if let Some(e) = output {
            check_output_family(e)?;
        }
        Ok(EngineCommand {
            line,
            output,
            env: Vec::new(),
        })
    }

    /// The argv this platform starts (`sys::COMMAND_LAUNCH`).
    pub fn argv_here(&self) -> Result<Vec<String>> {
        // A marker of an older vf may carry a command it no longer accepts.
        launch_plan::check(&self.line, "the command").map_err(VfError::usage)?;
        match sys::COMMAND_LAUNCH {
            CommandLaunch::Shell => Ok(launch_plan::posix(&self.line)),
            CommandLaunch::Direct => launch_plan::windows(&self.line, resolves_to_batch)
                .map_err(|e| VfError::usage(format!("the command does not tokenize: {e}"))),
        }
    }

    /// Both platforms' launches (`--dry-run`): the Windows one resolved as the
    /// spawn would when vf runs there, else judged by the token's extension.
    pub fn launches(&self) -> Launches {
        match sys::COMMAND_LAUNCH {
            CommandLaunch::Direct => launch_plan::both(&self.line, resolves_to_batch),
            CommandLaunch::Shell => launch_plan::both(&self.line, launch_plan::names_batch_file),
        }
    }

    /// The program the command runs, as `vf doctor` resolves it: its first
    /// token by the Windows tokenization, else its first whitespace-separated
    /// word; where a shell runs the line, leading `NAME=value` assignments
    /// and `exec` are passed over (`FOO=1 exec agent --yes` runs `agent`).
    pub fn first_token(&self) -> String {
        let words: Vec<String> = match launch_plan::tokenize(&self.line) {
            Ok(t) => t.into_iter().map(|t| t.text).collect(),
            Err(_) => self.line.split_whitespace().map(str::to_string).collect(),
        };
        let shell = matches!(sys::COMMAND_LAUNCH, sys::CommandLaunch::Shell);
        let program = words
            .iter()
            .find(|w| !(shell && (is_assignment(w) || w.as_str() == "exec")));
        program.or(words.first()).cloned().unwrap_or_default()
    }
}

/// A POSIX shell's `NAME=value` prefix word.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut c = name.chars();
        c.next()
            .is_some_and(|f| f == '_' || f.is_ascii_alphabetic())
            && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}

/// `--bridge-output`: a known CLI whose output is JSON frames.
fn check_output_family(e: EngineId) -> Result<()> {
    let spec = e.engine().spec();
    if spec.command.is_some() || spec.output_transport == OutputTransport::Text {
        let json: Vec<&str> = EngineId::ALL
            .into_iter()
            .filter(|e| e.engine().spec().output_transport != OutputTransport::Text)
            .map(EngineId::as_str)
            .collect();
        return Err(VfError::usage(format!(
            "the output of {e} is not a JSON family; name one of: {}",
            json.join(", ")
        )));
    }
    Ok(())
}

/// Whether a program token resolves, as the spawn resolves it, to a `.cmd`
/// or `.bat` file: a path by its own name, a bare name on PATH (PATHEXT).
fn resolves_to_batch(token: &str) -> bool {
    let found: Option<PathBuf> = if sys::has_separator(std::ffi::OsStr::new(token)) {
        Some(PathBuf::from(token))
    } else {
        sys::find_on_path(token, std::env::var_os("PATH").as_deref())
    };
    found.is_some_and(|p| launch_plan::names_batch_file(&p.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(line: &str) -> String {
        EngineCommand::new(line.to_string(), None, "test")
            .unwrap()
            .first_token()
    }

    #[test]
    fn doctor_resolves_the_program_a_line_runs() {
        let shell = matches!(sys::COMMAND_LAUNCH, sys::CommandLaunch::Shell);
        let cases = [
            ("agent --yes", "agent", "agent"),
            ("FOO=1 _B2=x agent --yes", "agent", "FOO=1"),
            ("FOO=1 exec agent", "agent", "FOO=1"),
            ("\"my agent\" -p", "my agent", "my agent"),
            // Not assignments: a word that starts with `=` or a digit.
            ("=x agent", "=x", "=x"),
            ("1A=2 agent", "1A=2", "1A=2"),
            // Nothing but assignments: the first word is what there is.
            ("A=1", "A=1", "A=1"),
        ];
        for (line, posix, windows) in cases {
            let want = if shell { posix } else { windows };
            assert_eq!(program(line), want, "{line}");
        }
    }
}
