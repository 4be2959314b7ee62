//! OpenAI Codex CLI (`@openai/codex`).
//!
//! Fresh:  `codex exec --json [--skip-git-repo-check] [--dangerously-bypass-approvals-and-sandbox] [--image=P]... -`
//! Resume: `codex exec resume <thread_id> --json [...] -`
//! The prompt goes on stdin (`-`), and stdin is then closed: with an open
//! stdin pipe codex waits for EOF forever.

use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Invocation, OutputTransport, PromptTransport,
    Request, SessionIds, Spec, check_request,
};
use crate::error::Result;

pub struct Codex;

static SPEC: Spec = Spec {
    id: EngineId::Codex,
    binary: "codex",
    verified_versions: &["0.171.0", "0.146.0"],
    prompt_transport: PromptTransport::Stdin,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[AttachmentKind::Image],
    attachment_flag: Some("--image"),
    skip_permissions_flag: Some("--dangerously-bypass-approvals-and-sandbox"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck {
            help_args: &["exec", "--help"],
            flag: "--json",
            label: "exec --json",
        },
        FlagCheck {
            help_args: &["exec", "--help"],
            flag: "--skip-git-repo-check",
            label: "exec --skip-git-repo-check",
        },
        FlagCheck {
            help_args: &["exec", "--help"],
            flag: "--dangerously-bypass-approvals-and-sandbox",
            label: "exec --dangerously-bypass-approvals-and-sandbox",
        },
        FlagCheck {
            help_args: &["exec", "--help"],
            flag: "--image",
            label: "exec --image",
        },
        FlagCheck {
            help_args: &["exec", "resume", "--help"],
            flag: "--json",
            label: "exec resume --json",
        },
    ],
    install_hint: "npm install -g @openai/codex",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: false,
};

impl Engine for Codex {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self, req)?;
        let mut args: Vec<String> = vec!["exec".into()];
        if let Some(id) = req.session {
            args.push("resume".into());
            args.push(id.into());
        }
        args.push("--json".into());
        if !req.in_git_repo {
            args.push("--skip-git-repo-check".into());
        }
        if req.skip_permissions {
            args.push(SPEC.skip_permissions_flag.unwrap().into());
        }
        // `--image` takes several values: the `=` form keeps it from eating `-`.
        for a in req.attachments {
            args.push(format!("--image={}", a.path.display()));
        }
        args.push("-".into());
        Ok(Invocation::over_stdin(SPEC.binary, args, req))
    }
}
