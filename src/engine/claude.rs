//! Claude Code (`@anthropic-ai/claude-code`).
//!
//! Fresh:  `claude -p --output-format stream-json --verbose [--dangerously-skip-permissions] [--append-system-prompt-file=P]...`
//! Resume: `claude -p -r <session_id> --output-format stream-json --verbose ...`
//! The prompt goes on stdin. Variadic flags (`--allowedTools`) would swallow a
//! following positional prompt, so vf never puts a positional in argv at all.

use serde_json::Value;

use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Invocation, Outcome, OutputTransport,
    PromptTransport, Request, Spec, Tracker, check_request, is_uuid, str_at,
};
use crate::error::Result;
use crate::version::Version;

pub struct Claude;

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

    fn valid_session_id(&self, id: &str) -> bool {
        is_uuid(id)
    }

    fn exact_resume(&self, _version: Option<&Version>) -> bool {
        true
    }

    fn tracker(&self) -> Box<dyn Tracker> {
        Box::<ClaudeTracker>::default()
    }
}

#[derive(Default)]
struct ClaudeTracker {
    session_id: Option<String>,
    /// The `result` envelope (the last one wins: it is authoritative).
    result: Option<Value>,
    /// Assistant text blocks, in case no `result` envelope arrives.
    last_text: Option<String>,
}

impl Tracker for ClaudeTracker {
    fn observe(&mut self, frame: &Value) {
        if let Some(id) = str_at(frame, &["session_id"]).filter(|id| is_uuid(id)) {
            // Every frame carries it; the result envelope's value is final.
            if self.session_id.is_none() || str_at(frame, &["type"]) == Some("result") {
                self.session_id = Some(id.to_string());
            }
        }
        match str_at(frame, &["type"]) {
            Some("result") => self.result = Some(frame.clone()),
            Some("assistant") => {
                if let Some(blocks) = frame.pointer("/message/content").and_then(Value::as_array) {
                    for b in blocks {
                        if str_at(b, &["type"]) == Some("text")
                            && let Some(t) = str_at(b, &["text"])
                        {
                            self.last_text = Some(t.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let mut out = Outcome {
            session_id: self.session_id.clone(),
            ..Outcome::default()
        };
        match &self.result {
            Some(r) => {
                let text = str_at(r, &["result"]).map(str::to_string);
                out.usage = r.get("usage").cloned();
                // `subtype` says "success" even on API errors: `is_error` decides.
                let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                if is_error {
                    out.error = Some(text.clone().unwrap_or_else(|| {
                        format!(
                            "claude reported an error ({})",
                            str_at(r, &["subtype"]).unwrap_or("?")
                        )
                    }));
                } else if exit_code != Some(0) {
                    out.error = Some(exit_text(exit_code));
                    out.answer = text;
                } else {
                    out.answer = text;
                }
            }
            None => {
                out.answer = self.last_text.clone();
                out.error = Some(if exit_code == Some(0) {
                    "the stream ended without a result frame".to_string()
                } else {
                    exit_text(exit_code)
                });
            }
        }
        out.failed = out.error.is_some();
        out
    }
}

fn exit_text(code: Option<i32>) -> String {
    super::exit_text(EngineId::Claude, code)
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
