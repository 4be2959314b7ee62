//! GitHub Copilot CLI (`@github/copilot`).
//!
//! `copilot --output-format json --no-auto-update [--disable-client-telemetry] [--attachment=P]... [--allow-all] [--resume=<id>] -p <prompt>`
//! Every option comes before `-p`; the prompt is an argv value (stdin is
//! `/dev/null`). A prompt above 32 KiB goes to `<state>/dispatch/<unit>.md`
//! and argv carries a short pointer to it instead. A prompt starting with `-`
//! is passed as `--prompt=<prompt>`: 1.0.102 rejects `-p -...`.

use super::sandbox_policy::{Base, StatePath};
use super::{
    AttachmentKind, EffortFlag, Engine, EngineId, FlagCheck, Guardrails, Invocation, OptionFlags,
    OutputTransport, PromptTransport, Request, SessionIds, Spec, options,
};
use crate::ground::error::Result;
use crate::ground::version::Version;

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

/// `--allow-tool` / `--deny-tool` (permission patterns) from this version on.
const ALLOW_DENY_SINCE: Version = Version {
    major: 1,
    minor: 0,
    patch: 102,
};
/// `--available-tools` / `--excluded-tools` (the model's tool names) from
/// this version on, up to [`ALLOW_DENY_SINCE`].
const AVAILABLE_TOOLS_SINCE: Version = Version {
    major: 1,
    minor: 0,
    patch: 83,
};

/// The permission kinds `--allow-tool`/`--deny-tool` take (`kind(argument)`,
/// the argument optional): 1.0.102's `copilot help permissions`
/// (`fixtures/copilot/1.0.102/help/permissions.txt`). Any other name is read
/// by copilot as an MCP server's name, which vf cannot check.
const PERMISSION_KINDS: &[&str] = &["shell", "write", "url"];

/// The tools copilot offers its model, the names `--available-tools` and
/// `--excluded-tools` filter: the 17 of 1.0.102's requests
/// (`COPILOT_OFFLINE`, which drops the web tools), and `web_fetch` from
/// copilot's own documentation. An MCP server's tool is `<server>-<tool>`.
/// Claude's names (`Read`, `Grep`, `WebFetch`) are not among them: copilot
/// ignores them, so they are never called enforced.
const MODEL_TOOLS: &[&str] = &[
    "bash",
    "create",
    "edit",
    "fetch_copilot_cli_documentation",
    "glob",
    "grep",
    "list_agents",
    "list_bash",
    "read_agent",
    "read_bash",
    "session_store_sql",
    "skill",
    "sql",
    "stop_bash",
    "task",
    "view",
    "web_fetch",
    "write_agent",
];

/// The allow and deny flags at `version` (an unreadable one is run as the
/// newest family): `engine::policy` maps `--allow-tool`/`--deny-tool` here.
pub(super) fn tool_flags(
    version: Option<&Version>,
) -> (Option<&'static str>, Option<&'static str>) {
    match version {
        Some(v) if *v < AVAILABLE_TOOLS_SINCE => (None, None),
        Some(v) if *v < ALLOW_DENY_SINCE => (Some("--available-tools"), Some("--excluded-tools")),
        _ => (Some("--allow-tool"), Some("--deny-tool")),
    }
}

/// Whether `name` means something to the tool flags of `version`'s family
/// (`None`: the newest). A name it does not know is never sent: copilot
/// would ignore it, and the policy would be called enforced when it is not.
pub(super) fn knows_tool(version: Option<&Version>, name: &str) -> bool {
    let name = name.trim();
    if version.is_some_and(|v| *v < ALLOW_DENY_SINCE) {
        return MODEL_TOOLS.contains(&name) || is_mcp_tool(name);
    }
    let kind = name.split('(').next().unwrap_or(name).trim();
    let argument_closed = kind.len() == name.len() || name.ends_with(')');
    argument_closed && !kind.is_empty() && (PERMISSION_KINDS.contains(&kind) || is_identifier(kind))
}

/// `<server>-<tool>`: how copilot names an MCP server's tool to its model.
fn is_mcp_tool(name: &str) -> bool {
    name.split_once('-')
        .is_some_and(|(server, tool)| is_identifier(server) && is_identifier(tool))
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// Where copilot keeps its state (ENGINES.md, "Sandbox"): `$COPILOT_HOME`,
/// else `~/.copilot`, and its unpacked package: `$COPILOT_PKG_CACHE_HOME`,
/// else `$COPILOT_CACHE_HOME`, else `$XDG_CACHE_HOME/copilot` (its loader's order).
pub const STATE_PATHS: &[StatePath] = &[
    StatePath::home(".copilot").moved_by("COPILOT_HOME", ""),
    StatePath::under(Base::XdgCache, "copilot").moved_by("COPILOT_CACHE_HOME", ""),
    StatePath::under(Base::XdgCache, "copilot").moved_by("COPILOT_PKG_CACHE_HOME", ""),
];

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
    // Its home and the tokens it reads, in its README's order.
    account_env: &[
        "COPILOT_HOME",
        "COPILOT_GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "GH_HOST",
    ],
    state_paths: STATE_PATHS,
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
    fn tool_names_are_known_per_family() {
        let v83 = Version::parse("1.0.83");
        let names = [
            "Read",
            "WebFetch",
            "view",
            "grep",
            "shell(git:*)",
            "MyMCP-drop_db",
            "MyMCP(x)",
        ];
        let known =
            |v: Option<&Version>| -> Vec<bool> { names.iter().map(|n| knows_tool(v, n)).collect() };
        assert_eq!(
            known(v83.as_ref()),
            [false, false, true, true, false, true, false]
        );
        // The permission patterns: a kind or an MCP server, `(…)` closed.
        assert_eq!(known(None), [true, true, true, true, true, true, true]);
        assert!(!knows_tool(None, "shell(git:*"));
        assert!(!knows_tool(None, "(x)"));
    }
}
