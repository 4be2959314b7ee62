//! Shared by the bounded fuzz tests (`tests/it/fuzz_*.rs`, see docs/FUZZING.md):
//! the case budget, a per-case deadline, the genuine captures, the matrix of
//! engine × manifest family × transport, and stream mutations.

pub mod invariants;
pub mod json;
pub mod mutate;

use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use proptest::test_runner::Config;

use crate::common::fixtures;
use vf::engine::frames::manifest::{Entry, Rule};
use vf::engine::frames::manifests::families;
use vf::engine::{EngineId, OutputTransport};
use vf::ground::version::Version;

/// Cases per property: the default keeps CI fast; `VF_FUZZ_CASES=N` runs N
/// cases of every property for a longer local run.
pub fn cases(default: u32) -> u32 {
    std::env::var("VF_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub fn config(default_cases: u32) -> Config {
    // A refused temp dir fails the property here, not as a case to save.
    crate::common::refuse_a_work_tree(&std::env::temp_dir());
    Config {
        cases: cases(default_cases),
        // Shrinking a slow failure must not stall CI for minutes.
        max_shrink_time: 30_000,
        ..Config::default()
    }
}

/// Runs `f` on its own thread; no answer within `limit` is a hang. (The
/// stuck thread is left behind: the failing test ends the process anyway.)
pub fn bounded<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("no answer within {limit:?}: a hang")),
        // The sender was dropped without sending: `f` panicked (its message is on stderr).
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("panicked".into()),
    }
}

/// Per case: generous for a debug build on a loaded 2-core machine.
pub const CASE_LIMIT: Duration = Duration::from_secs(20);

/// One genuine capture from `fixtures/<cli>/<version>/<case>.stdout.jsonl`.
#[derive(Debug)]
pub struct Capture {
    pub name: String,
    pub cli: EngineId,
    pub version: Version,
    pub transport: OutputTransport,
    pub bytes: Vec<u8>,
}

/// The transport a capture was recorded with, from its command line.
fn recorded_transport(cli: EngineId, command: &str) -> OutputTransport {
    let json_doc = command.contains("--output-format json") && !command.contains("stream-json");
    match cli {
        EngineId::Claude | EngineId::Gemini if json_doc => OutputTransport::Json,
        EngineId::Copilot if !command.contains("--output-format") => OutputTransport::Text,
        EngineId::Agy => OutputTransport::Text,
        _ => OutputTransport::Jsonl,
    }
}

fn load_captures() -> Vec<Capture> {
    let mut out = Vec::new();
    for cli in EngineId::ALL {
        let Ok(versions) = std::fs::read_dir(fixtures().join(cli.as_str())) else {
            continue;
        };
        for dir in versions.flatten().map(|d| d.path()) {
            let Some(version) = dir.file_name().and_then(|n| Version::parse(n.to_str()?)) else {
                continue;
            };
            for file in std::fs::read_dir(&dir).unwrap().flatten().map(|f| f.path()) {
                let name = file.file_name().unwrap().to_string_lossy().into_owned();
                let Some(case) = name.strip_suffix(".stdout.jsonl") else {
                    continue;
                };
                let cmd = std::fs::read_to_string(dir.join(format!("{case}.cmd.txt")))
                    .unwrap_or_default();
                out.push(Capture {
                    name: format!("{cli}/{version}/{case}"),
                    cli,
                    transport: recorded_transport(cli, &cmd),
                    version: version.clone(),
                    bytes: std::fs::read(&file).unwrap(),
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 30, "fixtures missing: {} captures", out.len());
    out
}

/// Every genuine capture, sorted by name (read once per test binary).
pub fn captures() -> &'static [Capture] {
    static CAPTURES: OnceLock<Vec<Capture>> = OnceLock::new();
    CAPTURES.get_or_init(load_captures)
}

/// The captures made of JSON frames (not the text transport, not empty).
pub fn json_captures() -> Vec<&'static Capture> {
    captures()
        .iter()
        .filter(|c| c.transport != OutputTransport::Text && !c.bytes.is_empty())
        .collect()
}

/// One capture by name (`codex/0.171.0/b_tool`).
pub fn capture(name: &str) -> &'static Capture {
    let found = captures().iter().find(|c| c.name == name);
    found.unwrap_or_else(|| panic!("no capture {name}"))
}

impl Capture {
    /// The set-up it was recorded with.
    pub fn target(&self) -> Target {
        Target {
            cli: self.cli,
            version: Some(self.version.clone()),
            transport: self.transport,
        }
    }

    /// Its lines after `mutations`, joined back into a stream.
    pub fn damaged(&self, mutations: &[mutate::Mutation], trailing_newline: bool) -> Vec<u8> {
        let mut lines = mutate::split_lines(&self.bytes);
        for m in mutations {
            mutate::apply(&mut lines, m);
        }
        mutate::join_lines(&lines, trailing_newline)
    }
}

/// One projector set-up: an engine, a version (or none), a transport.
#[derive(Debug, Clone)]
pub struct Target {
    pub cli: EngineId,
    pub version: Option<Version>,
    pub transport: OutputTransport,
}

pub const TRANSPORTS: [OutputTransport; 3] = [
    OutputTransport::Jsonl,
    OutputTransport::Json,
    OutputTransport::Text,
];

/// Every manifest family of `cli` (as an exact version), plus no version and
/// a version without a family, each with every transport.
pub fn targets_of(cli: EngineId) -> Vec<Target> {
    let mut versions: Vec<Option<Version>> = families(cli)
        .iter()
        .map(|m| Some(Version::new(m.major, m.minor, 0)))
        .collect();
    versions.push(None);
    versions.push(Some(Version::new(999, 0, 0)));
    let mut out = Vec::new();
    for version in versions {
        for transport in TRANSPORTS {
            out.push(Target {
                cli,
                version: version.clone(),
                transport,
            });
        }
    }
    out
}

pub fn all_targets() -> Vec<Target> {
    EngineId::ALL.into_iter().flat_map(targets_of).collect()
}

/// Every frame kind the manifests name (top-level, `type/subtype` halves and
/// nested), so generated frames reach the real rules, not only the unknown path.
pub fn known_kinds() -> &'static [String] {
    static KINDS: OnceLock<Vec<String>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut out: Vec<String> = Vec::new();
        for cli in EngineId::ALL {
            for m in families(cli) {
                for t in m.transports {
                    collect_kinds(t.entries, &mut out);
                }
            }
        }
        out.sort();
        out.dedup();
        out
    })
}

fn collect_kinds(entries: &[Entry], out: &mut Vec<String>) {
    for e in entries {
        out.push(e.kind.to_string());
        out.extend(e.kind.split('/').map(str::to_string));
        collect_rule_kinds(&e.rule, out);
    }
}

fn collect_rule_kinds(rule: &Rule, out: &mut Vec<String>) {
    match rule {
        Rule::Nested(n) => collect_kinds(n.entries, out),
        Rule::All(rules) => rules.iter().for_each(|r| collect_rule_kinds(r, out)),
        _ => {}
    }
}
