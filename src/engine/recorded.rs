//! The recorded engine: a genuine capture of a real CLI, replayed by vf
//! itself (`vf __play CAPTURE`, a hidden subcommand run as
//! `std::env::current_exe()`: no shell, no model). It exists for `vf demo`
//! (docs/DEMO.md): `--engine auto` never picks it, `vf doctor` never counts
//! it as ready, and its results name it `recorded` with `engineVersion` naming
//! the capture, so nobody mistakes it for a model.
//!
//! Its lines are read by the frame manifest of the CLI that printed them.

use super::{
    Engine, EngineCommand, EngineId, Guardrails, Invocation, OptionFlags, OutputTransport,
    PromptTransport, Request, SessionIds, Spec,
};
use crate::ground::error::{Result, VfError};
use crate::ground::version::Version;

pub struct Recorded;

/// One embedded capture: what a real CLI printed, and the file edit its tool
/// call stands for.
#[derive(Debug)]
pub struct Capture {
    /// The name `vf __play` takes.
    pub name: &'static str,
    /// The CLI whose manifest reads the lines.
    pub cli: EngineId,
    /// `engineVersion` of a unit it runs: `claude 2.1.332 capture`.
    pub version: &'static str,
    /// The CLI's stdout, byte for byte (`fixtures/`).
    pub stdout: &'static str,
    /// What the capture's tool call printed (`echo hello`): the player writes
    /// it to `<unit>.txt` in its cwd, so a worktree has a change to commit.
    pub tool_output: &'static str,
}

/// claude 2.1.332, case `b_tool`: one shell tool call (`echo hello`), then the
/// answer with its fenced json summary.
pub const CAPTURES: &[Capture] = &[Capture {
    name: "claude-2.1.332-b_tool",
    cli: EngineId::Claude,
    version: "claude 2.1.332 capture",
    stdout: include_str!("../../fixtures/claude/2.1.332/b_tool.stdout.jsonl"),
    tool_output: "hello\n",
}];

/// The capture a unit plays (there is one).
pub fn capture() -> &'static Capture {
    &CAPTURES[0]
}

/// The capture named `name`.
pub fn find(name: &str) -> Option<&'static Capture> {
    CAPTURES.iter().find(|c| c.name == name)
}

/// The hidden subcommand the engine runs.
pub const PLAY: &str = "__play";

static SPEC: Spec = Spec {
    id: EngineId::Recorded,
    binary: "",
    verified_versions: &[],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[],
    attachment_flag: None,
    skip_permissions_flag: None,
    prompt_limit_bytes: None,
    required_flags: &[],
    install_hint: "built into vf: `vf demo` runs it (docs/DEMO.md)",
    session_ids: SessionIds::None,
    resumable_after_answer: false,
    options: OptionFlags::NONE,
    command: None,
    guardrails: Guardrails::PostHoc,
    // Built in: it reads no credentials.
    account_env: &[],
    state_paths: &[],
};

impl Engine for Recorded {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        let exe = std::env::current_exe()
            .map_err(|e| VfError::not_ready(format!("recorded: cannot find vf itself: {e}")))?;
        let args = vec![
            PLAY.to_string(),
            capture().name.to_string(),
            "--file".to_string(),
            format!("{}.txt", req.unit),
        ];
        Ok(Invocation::over_stdin(
            &exe.display().to_string(),
            args,
            req,
        ))
    }

    fn frames(
        &self,
        _command: Option<&EngineCommand>,
        _version: Option<&Version>,
    ) -> (EngineId, OutputTransport) {
        let cli = capture().cli;
        (cli, cli.engine().spec().output_transport)
    }

    fn own_program(&self) -> bool {
        true
    }

    fn fixed_version(&self) -> Option<&'static str> {
        Some(capture().version)
    }
}
