//! opencode (`opencode-ai`).
//!
//! Fresh:  `opencode run --format json [--auto] [--file=P]...`
//! Resume: `opencode run --session <ses_...> --format json ...`
//! The prompt goes on stdin (no positional message: `run` then reads stdin).

use serde_json::Value;

use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Invocation, Outcome, OutputTransport,
    PromptTransport, Request, SessionIds, Spec, Tracker, check_request, str_at,
};
use crate::error::Result;

pub struct Opencode;

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
        FlagCheck {
            help_args: &["run", "--help"],
            flag: "--format",
            label: "run --format",
        },
        FlagCheck {
            help_args: &["run", "--help"],
            flag: "--session",
            label: "run --session",
        },
        FlagCheck {
            help_args: &["run", "--help"],
            flag: "--file",
            label: "run --file",
        },
        FlagCheck {
            help_args: &["run", "--help"],
            flag: "--auto",
            label: "run --auto",
        },
    ],
    install_hint: "npm install -g opencode-ai",
    session_ids: SessionIds::Prefixed {
        prefix: "ses_",
        len: 26,
    },
    resumable_after_answer: false,
};

impl Engine for Opencode {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self, req)?;
        let mut args: Vec<String> = vec!["run".into()];
        if let Some(id) = req.session {
            args.push("--session".into());
            args.push(id.into());
        }
        args.extend(["--format", "json"].map(String::from));
        if req.skip_permissions {
            args.push(SPEC.skip_permissions_flag.unwrap().into());
        }
        // `--file` is an array option: the `=` form keeps each value bound to it.
        for a in req.attachments {
            args.push(format!("--file={}", a.path.display()));
        }
        Ok(Invocation::over_stdin(SPEC.binary, args, req))
    }

    fn tracker(&self) -> Box<dyn Tracker> {
        Box::<OpencodeTracker>::default()
    }
}

/// `ses_` followed by 26 ASCII alphanumerics.
fn valid_id(id: &str) -> bool {
    id.strip_prefix("ses_")
        .is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[derive(Default)]
struct OpencodeTracker {
    session_id: Option<String>,
    answer: Option<String>,
    error: Option<String>,
    finished_step: bool,
    /// `part.reason` of the latest `step_finish` ("stop", "tool-calls", ...).
    last_reason: Option<String>,
    /// The latest tool error (e.g. a rejected permission).
    tool_error: Option<String>,
    usage: Option<Value>,
}

impl Tracker for OpencodeTracker {
    fn observe(&mut self, frame: &Value) {
        if self.session_id.is_none()
            && let Some(id) = str_at(frame, &["sessionID"]).filter(|id| valid_id(id))
        {
            self.session_id = Some(id.to_string());
        }
        match str_at(frame, &["type"]) {
            // Each text frame holds a whole part, not a delta: the last one is the answer.
            Some("text") => {
                if let Some(t) = str_at(frame, &["part", "text"]) {
                    self.answer = Some(t.to_string());
                }
            }
            Some("step_finish") => {
                self.finished_step = true;
                self.last_reason = str_at(frame, &["part", "reason"]).map(str::to_string);
                self.usage = frame.pointer("/part/tokens").cloned();
            }
            Some("tool_use") if str_at(frame, &["part", "state", "status"]) == Some("error") => {
                self.tool_error = str_at(frame, &["part", "state", "error"]).map(str::to_string);
            }
            Some("error") => {
                let e = frame.get("error");
                let msg = e
                    .and_then(|e| str_at(e, &["data", "message"]).or_else(|| str_at(e, &["name"])))
                    .unwrap_or("opencode reported an error");
                self.error = Some(msg.to_string());
            }
            _ => {}
        }
    }

    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let error = if let Some(e) = &self.error {
            Some(e.clone())
        } else if exit_code != Some(0) {
            Some(super::exit_text(EngineId::Opencode, exit_code))
        } else if !self.finished_step {
            Some("the stream ended without step_finish".into())
        } else if self.last_reason.as_deref() == Some("tool-calls") {
            // opencode calls the model again after every tool call; a stream
            // that ends right after one was cut short (a rejected permission
            // stops the run with exit 0).
            Some(match &self.tool_error {
                Some(e) => format!("opencode stopped after a failed tool call: {e}"),
                None => "opencode stopped after a tool call without a final answer".into(),
            })
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn id_shape() {
        assert!(valid_id("ses_dd6038aa0ffepDEX7skMCMq13N"));
        assert!(!valid_id("ses_dd6038aa0ffepDEX7skMCMq13"));
        assert!(!valid_id("ses_../../../etc/passwd00000"));
        assert!(!valid_id("--session"));
    }
}
