//! GitHub Copilot CLI (`@github/copilot`).
//!
//! `copilot --output-format json --no-auto-update [--disable-client-telemetry] [--attachment=P]... [--allow-all] [--resume=<id>] -p <prompt>`
//! Every option comes before `-p`; the prompt is an argv value (stdin is
//! `/dev/null`). A prompt above 32 KiB goes to `<state>/dispatch/<unit>.md`
//! and argv carries a short pointer to it instead. A prompt starting with `-`
//! is passed as `--prompt=<prompt>`: 1.0.102 rejects `-p -...`.

use serde_json::Value;

use super::{
    AttachmentKind, Engine, EngineId, FlagCheck, Invocation, Outcome, OutputTransport,
    PromptTransport, Request, SessionIds, Spec, Tracker, check_request, is_uuid, str_at,
};
use crate::error::Result;
use crate::version::Version;

pub struct Copilot;

/// Above this many bytes the prompt is passed through a file.
pub const ARGV_PROMPT_LIMIT: usize = 32 * 1024;

/// Oldest version whose `--output-format json` was verified (help text and a capture).
const JSON_MODE_SINCE: Version = Version {
    major: 1,
    minor: 0,
    patch: 83,
};

/// First version with `--disable-client-telemetry` (1.0.83 rejects it).
const TELEMETRY_FLAG_SINCE: Version = Version {
    major: 1,
    minor: 0,
    patch: 102,
};

/// Versions whose captures prove `--resume=<id>` keeps the session id.
const EXACT_RESUME_VERIFIED: &[&str] = &["1.0.102", "1.0.83"];

static SPEC: Spec = Spec {
    id: EngineId::Copilot,
    binary: "copilot",
    verified_versions: &["1.0.102", "1.0.83"],
    prompt_transport: PromptTransport::Argv,
    output_transport: OutputTransport::Jsonl,
    attachment_kinds: &[AttachmentKind::Image, AttachmentKind::Document],
    attachment_flag: Some("--attachment"),
    skip_permissions_flag: Some("--allow-all"),
    prompt_limit_bytes: None,
    required_flags: &[
        FlagCheck {
            help_args: &["--help"],
            flag: "--prompt",
            label: "-p/--prompt",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--allow-all",
            label: "--allow-all",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--output-format",
            label: "--output-format",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--resume",
            label: "--resume",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--attachment",
            label: "--attachment",
        },
        FlagCheck {
            help_args: &["--help"],
            flag: "--no-auto-update",
            label: "--no-auto-update",
        },
    ],
    install_hint: "npm install -g @github/copilot",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: false,
};

impl Copilot {
    fn json_mode(version: Option<&Version>) -> bool {
        // An unreadable version proceeds (with a warning) in the newest verified mode.
        version.is_none_or(|v| *v >= JSON_MODE_SINCE)
    }
}

impl Engine for Copilot {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self, req)?;
        let mut warnings = Vec::new();
        let mut args: Vec<String> = Vec::new();
        if req.version.is_none() {
            warnings.push(
                "copilot: --version could not be read; proceeding as the newest verified version"
                    .into(),
            );
        }
        if Self::json_mode(req.version) {
            args.extend(["--output-format", "json"].map(String::from));
        }
        // Keeps the verified build running instead of a newer downloaded one.
        args.push("--no-auto-update".into());
        if req.version.is_none_or(|v| *v >= TELEMETRY_FLAG_SINCE) {
            args.push("--disable-client-telemetry".into());
        }
        for a in req.attachments {
            args.push(format!("--attachment={}", a.path.display()));
        }
        if req.read_only {
            // Copilot has no read-only mode; an invented flag would be a hard error.
            warnings
                .push("copilot has no read-only mode: the read-only request was dropped".into());
        }
        if req.skip_permissions {
            args.push(SPEC.skip_permissions_flag.unwrap().into());
        }
        if let Some(id) = req.session {
            args.push(format!("--resume={id}"));
        }
        let (prompt_arg, prompt_file, prompt_file_contents) =
            if req.prompt.len() > ARGV_PROMPT_LIMIT {
                let dir = std::path::absolute(req.state_dir.join("dispatch"))
                    .unwrap_or_else(|_| req.state_dir.join("dispatch"));
                let path = dir.join(format!("{}.md", req.unit));
                (
                    format!("Read {} and follow it", path.display()),
                    Some(path),
                    Some(req.prompt.to_string()),
                )
            } else {
                (req.prompt.to_string(), None, None)
            };
        if prompt_arg.starts_with('-') {
            args.push(format!("--prompt={prompt_arg}"));
        } else {
            args.push("-p".into());
            args.push(prompt_arg);
        }
        Ok(Invocation {
            prompt_file,
            prompt_file_contents,
            warnings,
            ..Invocation::over_argv(SPEC.binary, args, req)
        })
    }

    fn exact_resume(&self, version: Option<&Version>) -> bool {
        version.is_some_and(|v| {
            EXACT_RESUME_VERIFIED
                .iter()
                .any(|s| Version::parse(s).as_ref() == Some(v))
        })
    }

    // `build` proceeds as the newest verified version when --version is unreadable.
    fn tolerates_unreadable_version(&self) -> bool {
        true
    }

    fn output_transport(&self, version: Option<&Version>) -> OutputTransport {
        if Self::json_mode(version) {
            OutputTransport::Jsonl
        } else {
            OutputTransport::Text
        }
    }

    fn tracker(&self) -> Box<dyn Tracker> {
        Box::<CopilotTracker>::default()
    }
}

#[derive(Default)]
struct CopilotTracker {
    session_id: Option<String>,
    answer: Option<String>,
    error: Option<String>,
    result_exit: Option<i64>,
    usage: Option<Value>,
    /// Text mode: the plain answer.
    text: String,
    saw_text: bool,
}

impl Tracker for CopilotTracker {
    fn observe(&mut self, frame: &Value) {
        match str_at(frame, &["type"]) {
            Some("assistant.message") => {
                if let Some(t) = str_at(frame, &["data", "content"]) {
                    self.answer = Some(t.to_string());
                }
            }
            Some("session.error") => {
                self.error = str_at(frame, &["data", "message"]).map(str::to_string);
            }
            // The session id appears only here, at the very end.
            Some("result") => {
                if let Some(id) = str_at(frame, &["sessionId"]).filter(|id| is_uuid(id)) {
                    self.session_id = Some(id.to_string());
                }
                self.result_exit = frame.get("exitCode").and_then(Value::as_i64);
                self.usage = frame.get("usage").cloned();
            }
            Some(_) => {}
            // Text mode: a line of the answer that happens to be JSON (e.g. the
            // summary's body) is still answer text; copilot frames always have `type`.
            None => self.observe_text(&frame.to_string()),
        }
    }

    fn observe_text(&mut self, line: &str) {
        if self.saw_text {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.saw_text = true;
    }

    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let text_mode = self.result_exit.is_none() && self.answer.is_none() && self.saw_text;
        let answer = if text_mode {
            // The CLI pads the answer with blank lines; they are not part of it.
            Some(self.text.trim_end_matches(['\n', '\r']).to_string())
        } else {
            self.answer.clone()
        };
        let error = match (self.result_exit, exit_code) {
            (Some(r), _) if r != 0 => Some(
                self.error
                    .clone()
                    .unwrap_or_else(|| format!("copilot reported exit code {r}")),
            ),
            (_, Some(c)) if c != 0 => Some(
                self.error
                    .clone()
                    .unwrap_or_else(|| super::exit_text(EngineId::Copilot, Some(c))),
            ),
            (_, None) => Some(super::exit_text(EngineId::Copilot, None)),
            (None, Some(_)) if !text_mode => Some("the stream ended without a result frame".into()),
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
