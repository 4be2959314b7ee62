//! Antigravity (`agy`).
//!
//! `agy -p <prompt>`: plain-text output; the fenced json is parsed when
//! present. No exact resume. A UTF-8 prompt at or above 30 KiB is refused
//! before spawn.

use super::{
    Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags, OutputTransport,
    PromptTransport, Request, SessionIds, Spec,
};
use crate::error::Result;

pub struct Agy;

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
    required_flags: &[FlagCheck::new(&["--help"], "-p", "-p")],
    install_hint: "install Antigravity and put `agy` on PATH",
    session_ids: SessionIds::None,
    resumable_after_answer: false,
    // No verified help: --model and --effort are refused; no native schema flag.
    options: OptionFlags::NONE,
    command: None,
    guardrails: Guardrails::PostHoc,
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
        Ok(Invocation {
            warnings,
            ..Invocation::over_argv(SPEC.binary, vec!["-p".into(), req.prompt.to_string()], req)
        })
    }
}
