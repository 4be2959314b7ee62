//! opencode (`opencode-ai`).
//!
//! Fresh:  `opencode run --format json [--auto] [--file=P]...`
//! Resume: `opencode run --session <ses_...> --format json ...`
//! The prompt goes on stdin (no positional message: `run` then reads stdin).

use super::sandbox_policy::{Base, StatePath};
use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags,
    OutputTransport, PromptTransport, Request, SessionIds, Spec, options,
};
use crate::ground::error::Result;

pub struct Opencode;

/// Where opencode keeps its state (ENGINES.md, "Sandbox"): its XDG dirs.
pub const STATE_PATHS: &[StatePath] = &[
    StatePath::under(Base::XdgConfig, "opencode"),
    StatePath::under(Base::XdgData, "opencode"),
    StatePath::under(Base::XdgState, "opencode"),
    StatePath::under(Base::XdgCache, "opencode"),
];

static SPEC: Spec = Spec {
    id: EngineId::Opencode,
    binary: "opencode",
    verified_versions: &["1.18.33", "1.18.22"],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[
        AttachmentKind::Text,
        AttachmentKind::Image,
        AttachmentKind::Document,
    ],
    attachment_flag: Some("--file"),
    skip_permissions_flag: Some("--auto"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck::new(&["run", "--help"], "--format", "run --format"),
        FlagCheck::new(&["run", "--help"], "--session", "run --session"),
        FlagCheck::new(&["run", "--help"], "--file", "run --file"),
        FlagCheck::new(&["run", "--help"], "--auto", "run --auto"),
        FlagCheck::new(&["run", "--help"], "--model", "run -m/--model"),
    ],
    install_hint: "npm install -g opencode-ai",
    session_ids: SessionIds::Prefixed {
        prefix: "ses_",
        len: 26,
    },
    resumable_after_answer: false,
    // `--variant` (effort) lists its values only as examples: not offered.
    options: OptionFlags {
        model: Some("--model"),
        model_needs_provider: true,
        ..OptionFlags::NONE
    },
    command: None,
    guardrails: Guardrails::PostHoc,
    // Its config (`OPENCODE_CONFIG*`), its data dir (auth.json) and provider keys.
    account_env: &[
        "OPENCODE_CONFIG",
        "OPENCODE_CONFIG_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
    ],
    state_paths: STATE_PATHS,
};

impl Engine for Opencode {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        let mut args: Vec<String> = vec!["run".into()];
        args.extend(req.resume_args("--session"));
        args.extend(["--format", "json"].map(String::from));
        args.extend(SPEC.permission_arg(req));
        args.extend(SPEC.attachment_args(req));
        args.extend(options::args(&SPEC, req.options));
        Ok(Invocation::over_stdin(SPEC.binary, args, req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn id_shape() {
        let valid_id = |id| Opencode.valid_session_id(id);
        assert!(valid_id("ses_dd6038aa0ffepDEX7skMCMq13N"));
        assert!(!valid_id("ses_dd6038aa0ffepDEX7skMCMq13"));
        assert!(!valid_id("ses_../../../etc/passwd00000"));
        assert!(!valid_id("--session"));
    }
}
