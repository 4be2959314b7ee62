//! `vf engines`: the engine contract table.

use std::io::Write;

use serde::Serialize;

use crate::cli::EnginesArgs;
use crate::engine::{AttachmentKind, EngineId, OutputTransport, PromptTransport};
use crate::error::Result;

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
    exact_resume: bool,
    attachment_kinds: &'static [AttachmentKind],
    attachment_flag: Option<&'static str>,
    skip_permissions_flag: Option<&'static str>,
    prompt_limit_bytes: Option<usize>,
}

fn rows() -> Vec<Row> {
    EngineId::ALL
        .iter()
        .map(|id| {
            let e = id.engine();
            let s = e.spec();
            let newest = s
                .verified_versions
                .first()
                .and_then(|v| crate::version::Version::parse(v));
            Row {
                name: id.as_str(),
                binary: s.binary,
                verified_version: s.verified_versions.first().copied(),
                verified_versions: s.verified_versions,
                prompt_transport: s.prompt_transport,
                output_transport: s.output_transport,
                exact_resume: e.exact_resume(newest.as_ref()),
                attachment_kinds: s.attachment_kinds,
                attachment_flag: s.attachment_flag,
                skip_permissions_flag: s.skip_permissions_flag,
                prompt_limit_bytes: s.prompt_limit_bytes,
            }
        })
        .collect()
}

pub fn run(args: &EnginesArgs) -> Result<i32> {
    let rows = rows();
    if args.json {
        super::print_json(&rows)?;
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<9} {:<9} {:<10} {:<7} {:<7} {:<24}",
        "ENGINE", "BINARY", "VERIFIED", "PROMPT", "RESUME", "ATTACHMENTS"
    )?;
    for r in rows {
        let kinds: Vec<&str> = r.attachment_kinds.iter().map(|k| k.as_str()).collect();
        writeln!(
            out,
            "{:<9} {:<9} {:<10} {:<7} {:<7} {:<24}",
            r.name,
            r.binary,
            r.verified_version.unwrap_or("none"),
            match r.prompt_transport {
                PromptTransport::Stdin => "stdin",
                PromptTransport::Argv => "argv",
            },
            if r.exact_resume { "exact" } else { "no" },
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(",")
            },
        )?;
    }
    writeln!(
        out,
        "\nRun `vf doctor` to check what is installed on this machine."
    )?;
    Ok(0)
}
