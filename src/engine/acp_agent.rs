//! The ACP engine: any agent that speaks the Agent Client Protocol over its
//! stdio (`--acp "CMD"`, `VF_ACP_CMD`, plan key `acp`; presets
//! `acp:gemini`, `acp:opencode`). vf is the ACP client (`crate::engine::acp`): it
//! sends the prompt as `session/prompt`, answers permission requests by the
//! unit's policy, resumes with `session/load`. stdin stays open for the
//! session; the stdout raw log holds the tagged JSON-RPC lines of both
//! directions (docs/ACP.md).

use super::{
    AttachmentKind, CommandSource, Engine, EngineId, Guardrails, Invocation, OptionFlags,
    OutputTransport, Preset, PromptTransport, Request, SessionIds, Spec,
};
use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};

pub struct Acp;

/// Where the ACP engine's command comes from.
pub const SOURCE: CommandSource = CommandSource {
    flag: "--acp",
    env: EnvVars::VF_ACP_CMD,
    plan_key: "acp",
};

/// The verified ACP agents (docs/ACP.md, `fixtures/acp/`).
pub static PRESETS: &[Preset] = &[
    Preset {
        name: "gemini",
        command: "gemini --acp",
        env: &[],
        note: "gemini-cli 0.61, captured",
    },
    Preset {
        name: "opencode",
        command: "opencode acp",
        // opencode asks permission only when its config says `ask`: this
        // makes vf's policy the one that decides.
        env: &[(
            "OPENCODE_PERMISSION",
            r#"{"bash":"ask","edit":"ask","webfetch":"deny"}"#,
        )],
        note: "opencode 1.18, captured; OPENCODE_PERMISSION set to ask",
    },
];

static SPEC: Spec = Spec {
    id: EngineId::Acp,
    binary: "",
    verified_versions: &[],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    // Sent as prompt blocks (`image`, `resource`); an agent whose
    // promptCapabilities lack one refuses the unit before any session.
    attachment_kinds: &[AttachmentKind::Text, AttachmentKind::Image],
    attachment_flag: None,
    skip_permissions_flag: None,
    prompt_limit_bytes: None,
    required_flags: &[],
    install_hint: "give the agent's ACP command with --acp \"CMD\", a preset (acp:gemini, \
                   acp:opencode), VF_ACP_CMD or the plan key `acp`",
    session_ids: SessionIds::Acp,
    resumable_after_answer: false,
    options: OptionFlags::NONE,
    command: Some(SOURCE),
    guardrails: Guardrails::VfEnforced,
    // An ACP agent is any CLI: the bridge's short list.
    account_env: super::bridge::COMMAND_ACCOUNT_ENV,
    state_paths: &[],
};

impl Engine for Acp {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// The agent's argv. stdin is piped and stays open for the session's
    /// JSON-RPC: `Invocation::stdin` holds the prompt, which goes as
    /// `session/prompt`, never written raw.
    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        let command = req
            .command
            .ok_or_else(|| VfError::usage("acp: no command to run"))?;
        let mut argv = command.argv_here()?;
        let args = argv.split_off(1);
        Ok(Invocation {
            env: command.env.clone(),
            ..Invocation::over_stdin(&argv[0], args, req)
        })
    }

    fn speaks_acp(&self) -> bool {
        true
    }

    /// No frame manifest reads an ACP agent (`acp::Projector` does): the
    /// frames projector the supervisor keeps sees no line, in plain text.
    fn frames(
        &self,
        _command: Option<&super::EngineCommand>,
        _version: Option<&crate::ground::version::Version>,
    ) -> (EngineId, OutputTransport) {
        (EngineId::Acp, OutputTransport::Text)
    }

    fn presets(&self) -> &'static [Preset] {
        PRESETS
    }
}
