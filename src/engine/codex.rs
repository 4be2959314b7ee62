//! OpenAI Codex CLI (`@openai/codex`).
//!
//! Fresh:  `codex exec --json [--skip-git-repo-check] [--dangerously-bypass-approvals-and-sandbox] [--image=P]... -`
//! Resume: `codex exec resume <thread_id> --json [...] -`
//! The prompt goes on stdin (`-`), and stdin is then closed: with an open
//! stdin pipe codex waits for EOF forever.

use serde_json::Value;

use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Invocation, Outcome, OutputTransport,
    PromptTransport, Request, Spec, Tracker, check_request, is_uuid, str_at,
};
use crate::error::Result;
use crate::version::Version;

pub struct Codex;

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

    fn valid_session_id(&self, id: &str) -> bool {
        is_uuid(id)
    }

    fn exact_resume(&self, _version: Option<&Version>) -> bool {
        true
    }

    fn tracker(&self) -> Box<dyn Tracker> {
        Box::<CodexTracker>::default()
    }
}

#[derive(Default)]
struct CodexTracker {
    session_id: Option<String>,
    answer: Option<String>,
    failure: Option<String>,
    last_error: Option<String>,
    completed: bool,
    usage: Option<Value>,
}

impl Tracker for CodexTracker {
    fn observe(&mut self, frame: &Value) {
        match str_at(frame, &["type"]) {
            // The first thread.started names the session; a resume repeats the same id.
            Some("thread.started") => {
                if self.session_id.is_none()
                    && let Some(id) = str_at(frame, &["thread_id"]).filter(|id| is_uuid(id))
                {
                    self.session_id = Some(id.to_string());
                }
            }
            // Only agent_message is the answer; reasoning often echoes the same json.
            Some("item.completed") => {
                if str_at(frame, &["item", "type"]) == Some("agent_message")
                    && let Some(t) = str_at(frame, &["item", "text"])
                {
                    self.answer = Some(t.to_string());
                }
            }
            Some("turn.completed") => {
                self.completed = true;
                self.usage = frame.get("usage").cloned();
            }
            Some("turn.failed") => {
                self.failure = Some(
                    str_at(frame, &["error", "message"])
                        .unwrap_or("turn failed")
                        .to_string(),
                );
            }
            // Top-level errors are retries in progress until turn.failed says otherwise.
            Some("error") => {
                self.last_error = str_at(frame, &["message"]).map(str::to_string);
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let error = if let Some(f) = &self.failure {
            Some(f.clone())
        } else if exit_code != Some(0) {
            Some(match (exit_code, &self.last_error) {
                (_, Some(e)) => e.clone(),
                (code, None) => super::exit_text(EngineId::Codex, code),
            })
        } else if !self.completed {
            Some("the stream ended without turn.completed".to_string())
        } else {
            None
        };
        Outcome {
            session_id: self.session_id.clone(),
            answer: self.answer.clone(),
            failed: error.is_some(),
            error,
            usage: self.usage.clone(),
        }
    }
}
