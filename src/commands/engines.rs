//! `vf engines`: the engine contract table.

use std::io::Write;

use serde::Serialize;

use crate::cli::EnginesArgs;
use crate::engine::{
    AttachmentKind, CommandSource, Engine, EngineId, Guardrails, OutputTransport, Preset,
    PromptTransport,
};
use crate::ground::error::Result;
use crate::ground::version::Version;

/// How `--session` / `vf resume` continue a unit on an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
enum Resume {
    /// Exact resume of the native session, whatever the version.
    Exact,
    /// Never exact: a fresh session with a bounded replay (`vf orchestrate`).
    Replay,
    /// Exact on the versions in `exactResumeVersions` only, replay on the others.
    ByVersion,
    /// An ACP agent: exact (`session/load`) when it advertises `loadSession`,
    /// else the replay.
    LoadSession,
}

/// The resume mode across versions, found by asking the engine about each verified
/// version, an unreadable one and ones just outside the verified range.
fn resume_support(e: &dyn Engine) -> (Resume, Vec<&'static str>) {
    let verified = e.spec().verified_versions;
    let exact: Vec<&'static str> = verified
        .iter()
        .copied()
        .filter(|v| e.exact_resume(Version::parse(v).as_ref()))
        .collect();
    let parsed: Vec<Version> = verified.iter().filter_map(|v| Version::parse(v)).collect();
    let mut probes: Vec<Option<Version>> = vec![None, Some(Version::new(0, 0, 0))];
    if let Some(newest) = parsed.iter().max() {
        probes.push(Some(Version::new(
            newest.major,
            newest.minor,
            newest.patch + 1,
        )));
        probes.push(Some(Version::new(newest.major + 1, 0, 0)));
    }
    let others: Vec<bool> = probes.iter().map(|v| e.exact_resume(v.as_ref())).collect();
    let mode = if exact.len() == verified.len() && others.iter().all(|&x| x) {
        Resume::Exact
    } else if exact.is_empty() && others.iter().all(|&x| !x) {
        Resume::Replay
    } else {
        Resume::ByVersion
    };
    (mode, exact)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    name: &'static str,
    binary: &'static str,
    /// The newest verified version (null when none is verified yet).
    verified_version: Option<&'static str>,
    verified_versions: &'static [&'static str],
    prompt_transport: PromptTransport,
    output_transport: OutputTransport,
    /// Exact resume on the newest verified version.
    exact_resume: bool,
    resume: Resume,
    /// The verified versions with exact resume.
    exact_resume_versions: Vec<&'static str>,
    attachment_kinds: &'static [AttachmentKind],
    attachment_flag: Option<&'static str>,
    skip_permissions_flag: Option<&'static str>,
    prompt_limit_bytes: Option<usize>,
    /// A command engine: where its unit's command comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<CommandSource>,
    /// Its known agents (`--engine KIND:NAME`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    presets: &'static [Preset],
    /// Who enforces read-only runs and permissions: the engine's own flags,
    /// or vf (an ACP agent's permission requests are answered by vf).
    #[serde(skip_serializing_if = "Option::is_none")]
    enforced_by: Option<&'static str>,
    /// How `--read-only` and `--allow-tool`/`--deny-tool` are held (`engine::policy`).
    policy: PolicySupport,
    /// What holds the engine to a unit's policy while it runs (from its `Spec`).
    guardrails: Guardrails,
}

/// `readOnly`: `enforced`, `freshRunsOnly` or `unenforced`; `tools`:
/// `allowAndDeny`, `allowOnly`, `unenforced`, or `byVersion` (ENGINES.md).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PolicySupport {
    read_only: &'static str,
    tools: &'static str,
}

/// Read off `engine::policy` for each verified version (or none known).
fn policy_support(id: EngineId) -> PolicySupport {
    use crate::engine::tool_policy::{Enforcement, ToolPolicy, apply};
    let ro = ToolPolicy {
        read_only: true,
        ..ToolPolicy::default()
    };
    let held = |resume| apply(id, None, resume, &ro).status.read_only == Enforcement::Enforced;
    let read_only = match (held(false), held(true)) {
        (true, true) => "enforced",
        (true, false) => "freshRunsOnly",
        _ => "unenforced",
    };
    let one = |allow: &str, deny: &str, v: Option<&Version>| {
        let p = ToolPolicy {
            allow_tools: vec![allow.into()],
            deny_tools: vec![deny.into()],
            ..ToolPolicy::default()
        };
        let args = apply(id, v, false, &p).args;
        match (args.len(), args.iter().any(|a| a.contains("=mcp-allow"))) {
            (2, _) => "allowAndDeny",
            (1, true) => "allowOnly",
            _ => "unenforced",
        }
    };
    let versions: Vec<Option<Version>> = match id.engine().spec().verified_versions {
        [] => vec![None],
        vs => vs.iter().map(|v| Version::parse(v)).collect(),
    };
    // An MCP server's tool (`<server>-<tool>`): a name every family knows,
    // so the table says what the flags hold, not which names a version knows.
    let each: Vec<&str> = versions
        .iter()
        .map(|v| one("mcp-allow", "mcp-deny", v.as_ref()))
        .collect();
    let tools = match each.iter().all(|t| *t == each[0]) {
        true => each[0],
        false => "byVersion",
    };
    PolicySupport { read_only, tools }
}

fn rows() -> Vec<Row> {
    EngineId::every()
        .map(|id| {
            let e = id.engine();
            let s = e.spec();
            let newest = s.verified_versions.first().and_then(|v| Version::parse(v));
            let (mut resume, exact_resume_versions) = resume_support(e);
            if e.speaks_acp() {
                resume = Resume::LoadSession;
            }
            Row {
                name: id.as_str(),
                binary: s.binary,
                verified_version: s.verified_versions.first().copied(),
                verified_versions: s.verified_versions,
                prompt_transport: s.prompt_transport,
                output_transport: s.output_transport,
                exact_resume: e.exact_resume(newest.as_ref()),
                resume,
                exact_resume_versions,
                attachment_kinds: s.attachment_kinds,
                attachment_flag: s.attachment_flag,
                skip_permissions_flag: s.skip_permissions_flag,
                prompt_limit_bytes: s.prompt_limit_bytes,
                command: s.command,
                presets: e.presets(),
                enforced_by: e.speaks_acp().then_some("vf"),
                policy: policy_support(id),
                guardrails: s.guardrails,
            }
        })
        .collect()
}

/// `exact`, `replay`, or `exact on 1.0.102, 1.0.83 (other versions: replay)`.
fn resume_text(r: &Row) -> String {
    match r.resume {
        Resume::Exact => "exact".into(),
        Resume::Replay => "replay".into(),
        Resume::LoadSession => "exact if the agent has loadSession, else replay".into(),
        Resume::ByVersion => format!(
            "exact on {} (other versions: replay)",
            r.exact_resume_versions.join(", ")
        ),
    }
}

pub fn run(args: &EnginesArgs) -> Result<i32> {
    let rows = rows();
    if args.json {
        super::print_json(&rows)?;
        return Ok(0);
    }
    let mut out = super::stdio::out();
    writeln!(
        out,
        "{:<9} {:<9} {:<10} {:<7} {:<24} {:<19} RESUME",
        "ENGINE", "BINARY", "VERIFIED", "PROMPT", "ATTACHMENTS", "GUARDRAILS"
    )?;
    for r in rows {
        let kinds: Vec<&str> = r.attachment_kinds.iter().map(|k| k.as_str()).collect();
        writeln!(
            out,
            "{:<9} {:<9} {:<10} {:<7} {:<24} {:<19} {}",
            r.name,
            match r.command {
                Some(c) => c.flag,
                // The recorded engine: vf itself plays it.
                None if r.binary.is_empty() => "built-in",
                None => r.binary,
            },
            r.verified_version.unwrap_or("none"),
            match r.prompt_transport {
                PromptTransport::Stdin => "stdin",
                PromptTransport::Argv => "argv",
            },
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(",")
            },
            r.guardrails.as_str(),
            resume_text(&r),
        )?;
    }
    for r in self::rows().iter().filter(|r| !r.presets.is_empty()) {
        writeln!(out, "\n{} presets (--engine {}:NAME):", r.name, r.name)?;
        for p in r.presets {
            writeln!(out, "  {:<9} {:<14} {}", p.name, p.command, p.note)?;
        }
        if r.enforced_by == Some("vf") {
            writeln!(
                out,
                "  read-only and permissions are enforced by vf: it answers the agent's \
                 session/request_permission by the unit's policy"
            )?;
        }
    }
    writeln!(
        out,
        "\nRun `vf doctor` to check what is installed on this machine."
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str) -> Row {
        rows().into_iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn resume_shows_where_it_depends_on_the_version() {
        // copilot resumes exactly only on the versions whose captures prove it.
        let c = row("copilot");
        assert_eq!(c.resume, Resume::ByVersion);
        assert_eq!(c.exact_resume_versions, ["1.0.102", "1.0.83"]);
        assert_eq!(
            resume_text(&c),
            "exact on 1.0.102, 1.0.83 (other versions: replay)"
        );
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["resume"], "byVersion");
        assert_eq!(
            v["exactResumeVersions"],
            serde_json::json!(["1.0.102", "1.0.83"])
        );
        for name in ["claude", "codex", "opencode", "gemini"] {
            assert_eq!(row(name).resume, Resume::Exact, "{name}");
            assert_eq!(resume_text(&row(name)), "exact");
        }
        assert_eq!(row("agy").resume, Resume::Replay);
        assert_eq!(row("bridge").resume, Resume::Replay);
        assert!(row("agy").exact_resume_versions.is_empty());
    }

    #[test]
    fn policy_support_per_engine() {
        let table: Vec<(&str, &str, &str)> = rows()
            .iter()
            .map(|r| (r.name, r.policy.read_only, r.policy.tools))
            .collect();
        assert_eq!(
            table,
            [
                ("claude", "enforced", "allowAndDeny"),
                ("codex", "freshRunsOnly", "unenforced"),
                ("copilot", "unenforced", "allowAndDeny"),
                ("opencode", "unenforced", "unenforced"),
                ("gemini", "enforced", "allowOnly"),
                ("agy", "unenforced", "unenforced"),
                ("bridge", "unenforced", "unenforced"),
                ("acp", "enforced", "unenforced"),
                ("recorded", "unenforced", "unenforced"),
            ]
        );
    }

    #[test]
    fn guardrails_advertise_nothing_native_for_agy() {
        let all: Vec<(&str, Guardrails)> = rows().iter().map(|r| (r.name, r.guardrails)).collect();
        assert_eq!(
            all,
            [
                ("claude", Guardrails::Native),
                ("codex", Guardrails::Native),
                ("copilot", Guardrails::NativeToolsOnly),
                ("opencode", Guardrails::PostHoc),
                ("gemini", Guardrails::Native),
                ("agy", Guardrails::PostHoc),
                ("bridge", Guardrails::PostHoc),
                ("acp", Guardrails::VfEnforced),
                ("recorded", Guardrails::PostHoc),
            ]
        );
        assert_eq!(
            serde_json::to_value(row("agy")).unwrap()["guardrails"],
            "post-hoc"
        );
    }
}
