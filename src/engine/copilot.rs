//! GitHub Copilot CLI (`@github/copilot`).
//!
//! `copilot --output-format json --no-auto-update [--disable-client-telemetry] [--attachment=P]... [--allow-all] [--resume=<id>] -p <prompt>`
//! Every option comes before `-p`; the prompt is an argv value (stdin is
//! `/dev/null`). A prompt above 32 KiB goes to `<state>/dispatch/<unit>.md`
//! and argv carries a short pointer to it instead. A prompt starting with `-`
//! is passed as `--prompt=<prompt>`: 1.0.102 rejects `-p -...`.

use super::{
    AttachmentKind, EffortFlag, Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags,
    OutputTransport, PromptTransport, Request, SessionIds, Spec, options,
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

/// The built-in permission intents (its help: `shell(git:*)`, `write`, …).
const INTENTS: &[&str] = &["shell", "write", "read", "url", "memory"];

/// `--allow-tool` / `--deny-tool` (any name) from this version on.
const ALLOW_DENY_SINCE: Version = Version {
    major: 1,
    minor: 0,
    patch: 102,
};
/// `--available-tools` / `--excluded-tools` (MCP tool names only) from this
/// version on, up to [`ALLOW_DENY_SINCE`].
const MCP_ONLY_SINCE: Version = Version {
    major: 1,
    minor: 0,
    patch: 83,
};

/// The allow and deny flags at `version` (an unreadable one is run as the
/// newest family): `engine::policy` maps `--allow-tool`/`--deny-tool` here.
pub(super) fn tool_flags(
    version: Option<&Version>,
) -> (Option<&'static str>, Option<&'static str>) {
    match version {
        Some(v) if *v < MCP_ONLY_SINCE => (None, None),
        Some(v) if *v < ALLOW_DENY_SINCE => (Some("--available-tools"), Some("--excluded-tools")),
        _ => (Some("--allow-tool"), Some("--deny-tool")),
    }
}

/// `shell`, `shell(git:*)`, `write`…: a built-in intent, not an MCP tool name.
pub(super) fn is_intent(name: &str) -> bool {
    let head = name.split('(').next().unwrap_or(name).trim();
    INTENTS.contains(&head)
}

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
        FlagCheck::new(&["--help"], "--prompt", "-p/--prompt"),
        FlagCheck::new(&["--help"], "--allow-all", "--allow-all"),
        FlagCheck::new(&["--help"], "--output-format", "--output-format"),
        FlagCheck::new(&["--help"], "--resume", "--resume"),
        FlagCheck::new(&["--help"], "--attachment", "--attachment"),
        FlagCheck::new(&["--help"], "--no-auto-update", "--no-auto-update"),
        FlagCheck::new(&["--help"], "--model", "--model"),
        FlagCheck::new(&["--help"], "--reasoning-effort", "--reasoning-effort"),
    ],
    install_hint: "npm install -g @github/copilot",
    session_ids: SessionIds::Uuid,
    resumable_after_answer: false,
    options: OptionFlags {
        model: Some("--model"),
        model_needs_provider: false,
        effort: Some(EffortFlag::Flag("--reasoning-effort")),
        effort_levels: &["none", "minimal", "low", "medium", "high", "xhigh", "max"],
        schema: None,
    },
    command: None,
    guardrails: Guardrails::NativeToolsOnly,
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

    fn invocation(&self, req: &Request<'_>) -> Result<Invocation> {
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
        args.extend(SPEC.attachment_args(req));
        // Tool flags by version family; read-only is unenforced (`engine::policy`).
        args.extend(req.policy_args(SPEC.id));
        args.extend(SPEC.permission_arg(req));
        args.extend(options::args(&SPEC, req.options));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_are_told_from_mcp_names() {
        let intents: Vec<bool> = [
            "shell(git:*)",
            "write",
            "url",
            "MyMCP(x)",
            "github",
            "shellx",
        ]
        .iter()
        .map(|n| is_intent(n))
        .collect();
        assert_eq!(intents, [true, true, true, false, false, false]);
    }
}
