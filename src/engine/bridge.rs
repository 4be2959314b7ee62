//! The bridge: any agent CLI vf does not know, run from a command string
//! (`--bridge "CMD"`, `VIBEFLOW_AI`, plan key `bridge`).
//!
//! The prompt goes on stdin. The command is launched by the rules of
//! [`super::launch_plan`] (`/bin/sh -c` on POSIX; tokenized, no shell, on
//! Windows). The output is plain text (every line the answer's, the fenced
//! json its summary), or with `--bridge-output <cli>` that CLI's newest JSON
//! family. No session vf could name: no exact resume; a re-run gets the
//! bounded replay. Usage is never invented: unknown.

use super::{
    CommandSource, Engine, EngineCommand, EngineId, Guardrails, Invocation, OptionFlags,
    OutputTransport, PromptTransport, Request, SessionIds, Spec,
};
use crate::ground::error::{Result, VfError};
use crate::ground::version::Version;

pub struct Bridge;

/// Where the bridge's command comes from.
pub const SOURCE: CommandSource = CommandSource {
    flag: "--bridge",
    env: "VIBEFLOW_AI",
    plan_key: "bridge",
};

/// What an account of a command engine may set: the config dirs and API
/// keys of the CLIs such a command usually runs (ENGINES.md, "Accounts").
pub const COMMAND_ACCOUNT_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "CLAUDE_CONFIG_DIR",
    "OPENAI_API_KEY",
    "CODEX_HOME",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_CLI_HOME",
    "OPENCODE_CONFIG_DIR",
];

static SPEC: Spec = Spec {
    id: EngineId::Bridge,
    binary: "",
    verified_versions: &[],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Text,
    attachment_kinds: &[],
    attachment_flag: None,
    skip_permissions_flag: None,
    prompt_limit_bytes: None,
    required_flags: &[],
    install_hint: "give the agent's command with --bridge \"CMD\", VIBEFLOW_AI or the plan key `bridge`",
    session_ids: SessionIds::None,
    resumable_after_answer: false,
    // An unknown CLI: no flag of it is known, so --model and --effort are refused.
    options: OptionFlags::NONE,
    command: Some(SOURCE),
    guardrails: Guardrails::PostHoc,
    account_env: COMMAND_ACCOUNT_ENV,
    state_paths: &[],
};

impl Engine for Bridge {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        let command = req
            .command
            .ok_or_else(|| VfError::usage("bridge: no command to run"))?;
        let mut argv = command.argv_here()?;
        let args = argv.split_off(1);
        let mut warnings = Vec::new();
        if req.skip_permissions {
            warnings.push(
                "bridge: vf knows no permission flag of this command; --skip-permissions was ignored"
                    .into(),
            );
        }
        Ok(Invocation {
            warnings,
            ..Invocation::over_stdin(&argv[0], args, req)
        })
    }

    fn frames(
        &self,
        command: Option<&EngineCommand>,
        _version: Option<&Version>,
    ) -> (EngineId, OutputTransport) {
        match command.and_then(|c| c.output) {
            Some(family) => (family, family.engine().output_transport(None)),
            None => (EngineId::Bridge, OutputTransport::Text),
        }
    }
}
