//! The real-engine tier of `--mcp FILE` (`vf::engine::mcp`, ENGINES.md "MCP
//! servers"): each real CLI, in the loopback-only sandbox against the fake
//! model server, gets a unit with one stdio MCP server,
//! `tests/support/lab_mcp_server.py` (one tool, `lab_mcp_probe`). The proof
//! is what the model was offered: a request the fake server recorded lists a
//! tool whose name contains `lab_mcp_probe` (each CLI prefixes MCP tools its
//! own way). The server's own log says whether the CLI started it at all.
//! Skips like tests/it/real_engines.rs without the CLIs, and fails when
//! `VF_REAL_ENGINES=1` and one is missing.
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::root;
use crate::sandbox;
use sandbox::{Sandbox, available, is_root, versions};

const PROBE: &str = "lab_mcp_probe";

/// The interpreter's own path: the sandbox's PATH need not hold `python3`.
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs the lab MCP server");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `servers.json` in the project: server `lab`, logging what it reads to `log`.
fn servers_file(sb: &Sandbox, log: &Path) -> PathBuf {
    let script = root().join("tests/support/lab_mcp_server.py");
    let servers = json!({"mcpServers": {"lab": {
        "command": python(),
        "args": [script, log],
    }}});
    let path = sb.workdir().join("servers.json");
    std::fs::write(&path, serde_json::to_string_pretty(&servers).unwrap()).unwrap();
    path
}

/// Every `name` string under a request body's `tools`: anthropic and the
/// responses API (`tools[].name`), chat completions (`tools[].function.name`),
/// gemini (`tools[].functionDeclarations[].name`).
fn tool_names(body: &Value, out: &mut Vec<String>) {
    match body {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("name", Value::String(s)) => out.push(s.clone()),
                    _ => tool_names(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| tool_names(v, out)),
        _ => {}
    }
}

/// The tool names of every request the fake model server saw, deduplicated.
fn offered(sb: &Sandbox) -> Vec<String> {
    let mut names = Vec::new();
    for entry in sb.server_log() {
        tool_names(&entry["body"]["tools"], &mut names);
    }
    names.sort();
    names.dedup();
    names
}

fn mcp_offered(sb: &Sandbox) {
    let what = format!("{} {}", sb.engine, sb.version);
    let log = sb.workdir().join("lab-mcp.log");
    let servers = servers_file(sb, &log);
    let envs: &[(&str, &str)] = match sb.engine == "claude" && is_root() {
        true => &[("IS_SANDBOX", "1")],
        false => &[],
    };
    let prompt = "LAB-JSON Reply with a fenced json block.";
    let run = sb.dispatch_env("mcp", prompt, &["--mcp", servers.to_str().unwrap()], envs);
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    let names = offered(sb);
    let probe = names.iter().find(|n| n.contains(PROBE));
    assert!(
        probe.is_some(),
        "{what}: no tool containing {PROBE} was offered; offered {names:?}; \
         the MCP server read {seen:?}; result {}\nstderr {}",
        run.result,
        run.stderr
    );
    eprintln!("{what}: the model was offered {:?}", probe.unwrap());
    assert!(seen.contains("\"tools/list\""), "{what}: {seen:?}");
    assert_eq!(run.result["mcp"], json!(["lab"]), "{what}: {}", run.result);
    run.assert_done(&what);
}

fn tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            mcp_offered(&Sandbox::new(engine, &version));
        }
    }
}

#[test]
fn real_mcp_claude() {
    tier("claude");
}

#[test]
fn real_mcp_codex() {
    tier("codex");
}

#[test]
fn real_mcp_gemini() {
    tier("gemini");
}

#[test]
fn real_mcp_opencode() {
    tier("opencode");
}

#[test]
fn real_mcp_copilot() {
    tier("copilot");
}
