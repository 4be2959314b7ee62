//! Gemini CLI (`@google/gemini-cli`).
//!
//! Fresh:  `gemini --output-format stream-json [--yolo]`
//! Resume: `gemini --output-format stream-json -r <session_id> [--yolo]`
//! The prompt goes on stdin. Exit codes are the HTTP status mod 256 on API
//! errors, and an in-stream failure exits 0 with `result.status: "error"`.

use super::sandbox_policy::StatePath;
use super::{
    Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags, OutputTransport,
    PromptTransport, Request, SessionIds, Spec, options,
};
use crate::ground::error::Result;

pub struct Gemini;

/// Where gemini keeps its state (ENGINES.md, "Sandbox"): `~/.gemini`
/// (under `$GEMINI_CLI_HOME` when set).
pub const STATE_PATHS: &[StatePath] =
    &[StatePath::home(".gemini").moved_by("GEMINI_CLI_HOME", ".gemini")];

static SPEC: Spec = Spec {
    id: EngineId::Gemini,
    binary: "gemini",
    verified_versions: &["0.61.0", "0.47.0"],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    // Not yet proven against a capture: refused until it is.
    attachment_kinds: &[],
    attachment_flag: None,
    skip_permissions_flag: Some("--yolo"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck::new(&["--help"], "--output-format", "--output-format"),
        FlagCheck::new(&["--help"], "--resume", "-r/--resume"),
        FlagCheck::new(&["--help"], "--yolo", "--yolo"),
        FlagCheck::new(&["--help"], "--model", "-m/--model"),
    ],
    install_hint: "npm install -g @google/gemini-cli",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: true,
    options: OptionFlags {
        model: Some("--model"),
        ..OptionFlags::NONE
    },
    command: None,
    guardrails: Guardrails::Native,
    // From the pinned bundle: its home (`GEMINI_CLI_HOME`) and credentials.
    account_env: &[
        "GEMINI_CLI_HOME",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GEMINI_BASE_URL",
    ],
    state_paths: STATE_PATHS,
};

impl Engine for Gemini {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        // Read-only and the array flag `--allowed-tools` (`engine::policy`,
        // `=` form), followed by `--output-format`: nothing after is a value.
        let mut args: Vec<String> = req.policy_args(SPEC.id);
        args.extend(["--output-format", "stream-json"].map(String::from));
        args.extend(req.resume_args("-r"));
        args.extend(SPEC.permission_arg(req));
        args.extend(options::args(&SPEC, req.options));
        Ok(Invocation::over_stdin(SPEC.binary, args, req))
    }
}
