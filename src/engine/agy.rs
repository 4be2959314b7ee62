//! Antigravity (`agy`).
//!
//! `agy -p <prompt>`: plain-text output; the fenced json is parsed when
//! present. No exact resume. A UTF-8 prompt at or above 30 KiB is refused
//! before spawn.

use super::{
    Engine, EngineId, FlagCheck, Invocation, Outcome, OutputTransport, PromptTransport, Request,
    SessionIds, Spec, Tracker, check_request,
};
use crate::error::Result;

pub struct Agy;

static SPEC: Spec = Spec {
    id: EngineId::Agy,
    binary: "agy",
    verified_versions: &[],
    prompt_transport: PromptTransport::Argv,
    output_transport: OutputTransport::Text,
    attachment_kinds: &[],
    attachment_flag: None,
    skip_permissions_flag: None,
    prompt_limit_bytes: Some(30 * 1024),
    required_flags: &[FlagCheck {
        help_args: &["--help"],
        flag: "-p",
        label: "-p",
    }],
    install_hint: "install Antigravity and put `agy` on PATH",
    session_ids: SessionIds::None,
    resumable_after_answer: false,
};

impl Engine for Agy {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self, req)?;
        let mut warnings = Vec::new();
        if req.skip_permissions {
            warnings.push(
                "agy: no verified permission-skip flag; --skip-permissions was ignored".into(),
            );
        }
        Ok(Invocation {
            warnings,
            ..Invocation::over_argv(SPEC.binary, vec!["-p".into(), req.prompt.to_string()], req)
        })
    }

    fn tracker(&self) -> Box<dyn Tracker> {
        Box::<AgyTracker>::default()
    }
}

#[derive(Default)]
struct AgyTracker {
    text: String,
    saw_text: bool,
}

impl Tracker for AgyTracker {
    // Plain-text engine: a JSON-looking line is part of the answer too.
    fn observe(&mut self, frame: &serde_json::Value) {
        self.observe_text(&frame.to_string());
    }

    fn observe_text(&mut self, line: &str) {
        if self.saw_text {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.saw_text = true;
    }

    fn session_id(&self) -> Option<&str> {
        None
    }

    fn finish(&self, exit_code: Option<i32>) -> Outcome {
        let error = match exit_code {
            Some(0) => None,
            code => Some(super::exit_text(EngineId::Agy, code)),
        };
        Outcome {
            session_id: None,
            // Trailing blank lines are output padding, not part of the answer.
            answer: self
                .saw_text
                .then(|| self.text.trim_end_matches(['\n', '\r']).to_string()),
            failed: error.is_some(),
            error,
            usage: None,
        }
    }
}
