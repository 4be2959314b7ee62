//! Antigravity (`agy`).
//!
//! `agy [--agent NAME] -p <prompt>`: plain-text output; the fenced json is
//! parsed when present. No exact resume. A UTF-8 prompt at or above 30 KiB
//! is refused before spawn. `--agent NAME` comes from issue 27 and is
//! unverified against a real agy (no help is saved): vf passes it only when
//! the run's directory has `.agents/agents/NAME/agent.md` (what `vf
//! workspace init --engine agy --agent NAME` writes).

use super::sandbox_policy::StatePath;
use super::{
    Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags, OutputTransport,
    PromptTransport, Request, SessionIds, Spec,
};
use crate::ground::error::{Result, VfError};

pub struct Agy;

/// Where agy keeps its state: unverified (no binary was available), the
/// issue's guess: `~/.gemini` (Antigravity's) and `~/.antigravity`.
pub const STATE_PATHS: &[StatePath] =
    &[StatePath::home(".gemini"), StatePath::home(".antigravity")];

static SPEC: Spec = Spec {
    id: EngineId::Agy,
    binary: "agy",
    verified_versions: &[],
    prompt_transport: PromptTransport::Argv,
    output_transport: OutputTransport::Text,
    attachment_kinds: &[],
    attachment_flag: None,
    skip_permissions_flag: None,
    prompt_limit_bytes: Some(30 * 1024),
    required_flags: &[
        // Not `--agent`: vf passes it only when asked, so an agy without it
        // stays ready for every run that does not ask.
        FlagCheck::new(&["--help"], "-p", "-p"),
    ],
    install_hint: "install Antigravity and put `agy` on PATH",
    session_ids: SessionIds::None,
    resumable_after_answer: false,
    // No verified help: --model and --effort are refused; no native schema flag.
    options: OptionFlags::NONE,
    command: None,
    guardrails: Guardrails::PostHoc,
    // No verified help or binary: no variable is known to be its.
    account_env: &[],
    state_paths: STATE_PATHS,
};

impl Engine for Agy {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        let mut warnings = Vec::new();
        if req.skip_permissions {
            warnings.push(
                "agy: no verified permission-skip flag; --skip-permissions was ignored".into(),
            );
        }
        let mut args = Vec::new();
        if let Some(agent) = &req.options.agent {
            require_agent(req.cwd, agent)?;
            args.extend(["--agent".to_string(), agent.clone()]);
        }
        args.extend(["-p".to_string(), req.prompt.to_string()]);
        Ok(Invocation {
            warnings,
            ..Invocation::over_argv(SPEC.binary, args, req)
        })
    }
}

/// Refuses (exit 2) an `--agent NAME` whose `.agents/agents/NAME/agent.md`
/// is not in `cwd`: the commands check it before anything is written, the
/// argv builder again in the run's own directory (a worktree's).
pub fn require_agent(cwd: &std::path::Path, agent: &str) -> Result<()> {
    let file = cwd.join(".agents/agents").join(agent).join("agent.md");
    if file.is_file() {
        return Ok(());
    }
    Err(VfError::usage(format!(
        "agy: --agent {agent}: {} is not there; write it with `vf workspace init --engine agy --agent {agent} --instructions FILE`",
        file.display()
    )))
}
