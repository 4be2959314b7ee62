//! Gemini CLI (`@google/gemini-cli`).
//!
//! Fresh:  `gemini --output-format stream-json [--yolo]`
//! Resume: `gemini --output-format stream-json -r <session_id> [--yolo]`
//! The prompt goes on stdin. Exit codes are the HTTP status mod 256 on API
//! errors, and an in-stream failure exits 0 with `result.status: "error"`.

use serde_json::Value;

use super::{
    Engine, EngineId, FlagCheck, Invocation, Outcome, OutputTransport, PromptTransport, Request,
    Spec, Tracker, check_request, is_uuid, str_at,
};
use crate::error::Result;
use crate::version::Version;

pub struct Gemini;

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
        FlagCheck {
            help_args: &["--help"],
            flag: "--output-format",
            label: "--output-format",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--resume",
            label: "-r/--resume",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--yolo",
            label: "--yolo",
        },
    ],
    install_hint: "npm install -g @google/gemini-cli",
};

impl Engine for Gemini {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self, req)?;
        let mut args: Vec<String> = vec!["--output-format".into(), "stream-json".into()];
        if let Some(id) = req.session {
            args.push("-r".into());
            args.push(id.into());
        }
        if req.skip_permissions {
            args.push(SPEC.skip_permissions_flag.unwrap().into());
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
        Box::<GeminiTracker>::default()
    }
}

#[derive(Default)]
struct GeminiTracker {
    session_id: Option<String>,
    /// Assistant deltas since the last tool call.
    answer: String,
    saw_answer: bool,
    /// `--output-format json`: the single document's `response`.
    response: Option<String>,
    result_status: Option<String>,
    error: Option<String>,
    usage: Option<Value>,
    /// The model answered at least once: only then does gemini keep the session
    /// (a run whose first request failed cannot be resumed: `-r` exits 42).
    answered: bool,
}

impl Tracker for GeminiTracker {
    fn observe(&mut self, frame: &Value) {
        if self.session_id.is_none()
            && let Some(id) = str_at(frame, &["session_id"]).filter(|id| is_uuid(id))
        {
            self.session_id = Some(id.to_string());
        }
        match str_at(frame, &["type"]) {
            Some("message") if str_at(frame, &["role"]) == Some("assistant") => {
                if let Some(t) = str_at(frame, &["content"]) {
                    self.answer.push_str(t);
                    self.saw_answer = true;
                    self.answered = true;
                }
            }
            // Text before a tool call is narration, not the answer.
            Some("tool_use") => {
                self.answer.clear();
                self.saw_answer = false;
                self.answered = true;
            }
            Some("result") => {
                self.result_status = str_at(frame, &["status"]).map(str::to_string);
                self.answered |= self.result_status.as_deref() == Some("success");
                self.usage = frame.get("stats").cloned();
                if let Some(m) = str_at(frame, &["error", "message"]) {
                    self.error = Some(m.to_string());
                }
            }
            Some("error") => {
                if self.error.is_none() {
                    self.error = str_at(frame, &["message"]).map(str::to_string);
                }
            }
            Some(_) => {}
            // The single `--output-format json` document has no `type`.
            None => {
                if let Some(r) = str_at(frame, &["response"]) {
                    self.response = Some(r.to_string());
                    self.result_status = Some("success".into());
                    self.answered = true;
                    self.usage = frame.get("stats").cloned();
                }
                if let Some(m) = str_at(frame, &["error", "message"]) {
                    self.error = Some(m.to_string());
                    self.result_status = Some("error".into());
                }
            }
        }
    }

    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn resumable(&self) -> bool {
        self.session_id.is_some() && self.answered
    }

    fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let answer = self
            .response
            .clone()
            .or_else(|| self.saw_answer.then(|| self.answer.clone()));
        let error = match (self.result_status.as_deref(), exit_code) {
            (Some("error"), _) => Some(
                self.error
                    .clone()
                    .unwrap_or_else(|| "gemini reported an error".into()),
            ),
            (_, Some(c)) if c != 0 => Some(
                self.error
                    .clone()
                    .unwrap_or_else(|| super::exit_text(EngineId::Gemini, Some(c))),
            ),
            (_, None) => Some(super::exit_text(EngineId::Gemini, None)),
            (None, Some(_)) => Some("the stream ended without a result frame".into()),
            _ => None,
        };
        Outcome {
            session_id: self.session_id.clone(),
            answer,
            failed: error.is_some(),
            error,
            usage: self.usage.clone(),
        }
    }
}
