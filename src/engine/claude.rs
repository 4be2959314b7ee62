//! Claude Code (`@anthropic-ai/claude-code`).
//!
//! Fresh:  `claude -p --output-format stream-json --verbose [--dangerously-skip-permissions] [--append-system-prompt-file=P]...`
//! Resume: `claude -p -r <session_id> --output-format stream-json --verbose ...`
//! The prompt goes on stdin. Variadic flags (`--allowedTools`) would swallow a
//! following positional prompt, so vf never puts a positional in argv at all.

use super::sandbox_policy::StatePath;
use super::{
    AttachmentKind, EffortFlag, Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags,
    OutputTransport, PromptTransport, Request, SchemaFlag, SessionIds, Spec, options,
};
use crate::ground::error::Result;

pub struct Claude;

/// Where claude keeps its state (ENGINES.md, "Sandbox"): `~/.claude` and
/// `~/.claude.json`, both moved by `CLAUDE_CONFIG_DIR`.
pub const STATE_PATHS: &[StatePath] = &[
    StatePath::home(".claude").moved_by("CLAUDE_CONFIG_DIR", ""),
    StatePath::home_file(".claude.json").moved_by("CLAUDE_CONFIG_DIR", ".claude.json"),
];

static SPEC: Spec = Spec {
    id: EngineId::Claude,
    binary: "claude",
    verified_versions: &["2.1.332", "2.1.220", "2.1.207"],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[AttachmentKind::Text],
    attachment_flag: Some("--append-system-prompt-file"),
    skip_permissions_flag: Some("--dangerously-skip-permissions"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck::new(&["--help"], "--print", "-p/--print"),
        FlagCheck::new(&["--help"], "--output-format", "--output-format"),
        FlagCheck::new(&["--help"], "--verbose", "--verbose"),
        FlagCheck::new(&["--help"], "--resume", "-r/--resume"),
        FlagCheck::new(
            &["--help"],
            "--dangerously-skip-permissions",
            "--dangerously-skip-permissions",
        ),
        FlagCheck::new(&["--help"], "--model", "--model"),
        FlagCheck::new(&["--help"], "--effort", "--effort"),
        FlagCheck::new(&["--help"], "--json-schema", "--json-schema"),
    ],
    install_hint: "npm install -g @anthropic-ai/claude-code",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: false,
    options: OptionFlags {
        model: Some("--model"),
        model_needs_provider: false,
        effort: Some(EffortFlag::Flag("--effort")),
        effort_levels: &["low", "medium", "high", "xhigh", "max"],
        schema: Some(SchemaFlag::Inline("--json-schema")),
    },
    command: None,
    guardrails: Guardrails::Native,
    // From the pinned binary's strings: its config dir and credentials.
    account_env: &[
        "CLAUDE_CONFIG_DIR",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_OAUTH_TOKEN",
    ],
    state_paths: STATE_PATHS,
};

impl Engine for Claude {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
        // `-r` only works together with `-p`.
        let mut args: Vec<String> = vec!["-p".into()];
        args.extend(req.resume_args("-r"));
        // Read-only and the variadic tool flags (`engine::policy`, `=` form),
        // always followed by `--output-format`: nothing after them is a value.
        args.extend(req.policy_args(SPEC.id));
        args.extend(["--output-format", "stream-json", "--verbose"].map(String::from));
        args.extend(SPEC.permission_arg(req));
        args.extend(SPEC.attachment_args(req));
        args.extend(options::args(&SPEC, req.options));
        Ok(Invocation {
            warnings: options::warnings(&SPEC, req.options),
            ..Invocation::over_stdin(SPEC.binary, args, req)
        })
    }

    fn explain_stderr(&self, line: &str) -> Option<&'static str> {
        explain_stderr(line)
    }

    /// `--max-budget-usd <amount>`: in the help of 2.1.207, 2.1.220 and 2.1.332.
    fn max_cost_args(&self, usd: f64) -> Option<Vec<String>> {
        Some(vec!["--max-budget-usd".into(), usd.to_string()])
    }
}

/// What claude prints on stderr (then exit 1) when `--dangerously-skip-permissions`
/// is given as root without `IS_SANDBOX=1` (2.1.207, 2.1.220 and 2.1.332, seen in the
/// real-engine tier, which runs as root).
const ROOT_REFUSAL: &str = "--dangerously-skip-permissions cannot be used with root/sudo";

/// The refusal in words that say what to do about it.
pub const ROOT_REFUSAL_HINT: &str = "claude refuses --dangerously-skip-permissions as root; \
in a container or CI set IS_SANDBOX=1 (vf never sets it for you)";

/// Maps a line of claude's stderr to a better failure reason, when vf knows one.
pub fn explain_stderr(line: &str) -> Option<&'static str> {
    line.contains(ROOT_REFUSAL).then_some(ROOT_REFUSAL_HINT)
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_refusal_is_explained() {
        let real = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons";
        assert_eq!(super::explain_stderr(real), Some(super::ROOT_REFUSAL_HINT));
        assert_eq!(super::explain_stderr("error: unknown option"), None);
    }
}
