//! Claude Code (`@anthropic-ai/claude-code`).
//!
//! Fresh:  `claude -p --output-format stream-json --verbose [--dangerously-skip-permissions] [--append-system-prompt-file=P]...`
//! Resume: `claude -p -r <session_id> --output-format stream-json --verbose ...`
//! The prompt goes on stdin. Variadic flags (`--allowedTools`) would swallow a
//! following positional prompt, so vf never puts a positional in argv at all.

use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Invocation, OutputTransport, PromptTransport,
    Request, SessionIds, Spec, check_request,
};
use crate::error::Result;

pub struct Claude;

static SPEC: Spec = Spec {
    id: EngineId::Claude,
    binary: "claude",
    verified_versions: &["2.1.332", "2.1.220"],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[AttachmentKind::Text],
    attachment_flag: Some("--append-system-prompt-file"),
    skip_permissions_flag: Some("--dangerously-skip-permissions"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck {
            help_args: &["--help"],
            flag: "--print",
            label: "-p/--print",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--output-format",
            label: "--output-format",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--verbose",
            label: "--verbose",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--resume",
            label: "-r/--resume",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--dangerously-skip-permissions",
            label: "--dangerously-skip-permissions",
        },
    ],
    install_hint: "npm install -g @anthropic-ai/claude-code",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: false,
};

impl Engine for Claude {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self, req)?;
        // `-r` only works together with `-p`.
        let mut args: Vec<String> = vec!["-p".into()];
        if let Some(id) = req.session {
            args.push("-r".into());
            args.push(id.into());
        }
        args.extend(["--output-format", "stream-json", "--verbose"].map(String::from));
        if req.skip_permissions {
            args.push(SPEC.skip_permissions_flag.unwrap().into());
        }
        for a in req.attachments {
            args.push(format!("--append-system-prompt-file={}", a.path.display()));
        }
        Ok(Invocation::over_stdin(SPEC.binary, args, req))
    }
}
