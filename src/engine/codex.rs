//! OpenAI Codex CLI (`@openai/codex`).
//!
//! Fresh:  `codex exec --json [--skip-git-repo-check] [--dangerously-bypass-approvals-and-sandbox] [--image=P]... -`
//! Resume: `codex exec resume <thread_id> --json [...] -`
//! `[--model M] [--config model_reasoning_effort=L] [--output-schema F]` come before `-`.
//! The prompt goes on stdin (`-`), and stdin is then closed: with an open
//! stdin pipe codex waits for EOF forever.

use super::sandbox_policy::StatePath;
use super::{
    AttachmentKind, EffortFlag, Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags,
    OutputTransport, PromptTransport, Request, SchemaFlag, SessionIds, Spec, options,
};
use crate::ground::error::Result;

pub struct Codex;

/// Where codex keeps its state (ENGINES.md, "Sandbox"): `$CODEX_HOME`,
/// else `~/.codex`.
pub const STATE_PATHS: &[StatePath] = &[StatePath::home(".codex").moved_by("CODEX_HOME", "")];

static SPEC: Spec = Spec {
    id: EngineId::Codex,
    binary: "codex",
    verified_versions: &["0.171.0", "0.146.0", "0.144.1"],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[AttachmentKind::Image],
    attachment_flag: Some("--image"),
    skip_permissions_flag: Some("--dangerously-bypass-approvals-and-sandbox"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck::new(&["exec", "--help"], "--json", "exec --json"),
        FlagCheck::new(
            &["exec", "--help"],
            "--skip-git-repo-check",
            "exec --skip-git-repo-check",
        ),
        FlagCheck::new(
            &["exec", "--help"],
            "--dangerously-bypass-approvals-and-sandbox",
            "exec --dangerously-bypass-approvals-and-sandbox",
        ),
        FlagCheck::new(&["exec", "--help"], "--image", "exec --image"),
        FlagCheck::new(
            &["exec", "resume", "--help"],
            "--json",
            "exec resume --json",
        ),
        // The id is `exec resume`'s first positional, before the prompt
        // (`-`): the usage line says `[SESSION_ID] [PROMPT]`.
        FlagCheck::new(
            &["exec", "resume", "--help"],
            "[SESSION_ID] [PROMPT]",
            "exec resume SESSION_ID (positional, before PROMPT)",
        ),
        FlagCheck::new(&["exec", "--help"], "--model", "exec -m/--model"),
        FlagCheck::new(
            &["exec", "resume", "--help"],
            "--model",
            "exec resume -m/--model",
        ),
        FlagCheck::new(
            &["exec", "--help"],
            "--output-schema",
            "exec --output-schema",
        ),
        FlagCheck::new(
            &["exec", "resume", "--help"],
            "--output-schema",
            "exec resume --output-schema",
        ),
        FlagCheck::new(&["exec", "--help"], "--config", "exec -c/--config"),
        FlagCheck::new(
            &["exec", "resume", "--help"],
            "--config",
            "exec resume -c/--config",
        ),
    ],
    install_hint: "npm install -g @openai/codex",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: false,
    // Effort: `--config model_reasoning_effort=<level>`. `-c/--config` is in the
    // help; the key and its levels are codex's config docs (docs/config.md), and
    // the real-engine tier sees the level reach the request (`reasoning.effort`).
    options: OptionFlags {
        model: Some("--model"),
        effort: Some(EffortFlag::Config {
            flag: "--config",
            key: "model_reasoning_effort",
        }),
        effort_levels: &["minimal", "low", "medium", "high", "xhigh"],
        model_needs_provider: false,
        schema: Some(SchemaFlag::File("--output-schema")),
    },
    command: None,
    guardrails: Guardrails::Native,
    // From the pinned binary's strings: its home and credentials.
    account_env: &[
        "CODEX_HOME",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "CODEX_ACCESS_TOKEN",
    ],
    state_paths: STATE_PATHS,
};

impl Engine for Codex {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        let mut args: Vec<String> = vec!["exec".into()];
        args.extend(req.resume_args("resume"));
        args.push("--json".into());
        if !req.in_git_repo {
            args.push("--skip-git-repo-check".into());
        }
        args.extend(SPEC.permission_arg(req));
        // Inside vf's sandbox codex's own cannot start (bwrap, Seatbelt do not
        // nest): its tools would all fail. vf's holds the run instead.
        if req.policy.in_sandbox && !req.skip_permissions {
            args.extend(["-c".into(), "sandbox_mode=\"danger-full-access\"".into()]);
        }
        args.extend(req.policy_args(SPEC.id));
        args.extend(SPEC.attachment_args(req));
        args.extend(options::args(&SPEC, req.options));
        args.push("-".into());
        Ok(Invocation::over_stdin(SPEC.binary, args, req))
    }
}
