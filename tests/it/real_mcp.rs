//! The real-engine tier of `--mcp FILE` (`vf::engine::mcp`, ENGINES.md "MCP
//! servers"): each real CLI, in the loopback-only sandbox against the fake
//! model server, gets a unit with one stdio MCP server,
//! `tests/support/lab_mcp_server.py` (one tool, `lab_mcp_probe`). The proof
//! is what the model was offered: a request the fake server recorded lists a
//! tool whose name contains `lab_mcp_probe` (each CLI prefixes MCP tools its
//! own way). The server's own log says whether the CLI started it at all.
//! codex and gemini are refused (their real runs never offered the tool:
//! ENGINES.md, "What a real run proves"): their cases check the refusal in
//! the same sandbox, beside the real CLI, which is never started.
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

/// Every word of the requests' text that names the probe (a tool listed by
/// name only, as claude's deferred tools are).
fn listed_names(sb: &Sandbox) -> Vec<String> {
    fn words(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => {
                let sep = |c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-');
                out.extend(s.split(sep).filter(|w| w.contains(PROBE)).map(String::from));
            }
            Value::Array(a) => a.iter().for_each(|v| words(v, out)),
            Value::Object(m) => m.values().for_each(|v| words(v, out)),
            _ => {}
        }
    }
    let mut names = Vec::new();
    for entry in sb.server_log() {
        words(&entry["body"], &mut names);
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
    let listed = listed_names(sb);
    // claude 2.1.332 defers MCP tools behind its ToolSearch tool: the request
    // names `mcp__lab__lab_mcp_probe` in its deferred-tools list, the schema
    // comes when the model asks. Only claude gets that allowance.
    let probe = names.iter().find(|n| n.contains(PROBE)).or_else(|| {
        (sb.engine == "claude")
            .then(|| listed.iter().find(|n| n.contains(PROBE)))
            .flatten()
    });
    let unknown: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e["kind"] == "system.unknownFrame")
        .collect();
    assert!(
        probe.is_some(),
        "{what}: no tool containing {PROBE} was offered; offered {names:?}; named {listed:?}; \
         the MCP server read {seen:?}; result {}\nstderr {}",
        run.result,
        run.stderr
    );
    eprintln!(
        "{what}: the model was offered {:?}; unknown frames {unknown:?}",
        probe.unwrap()
    );
    assert!(seen.contains("\"tools/list\""), "{what}: {seen:?}");
    assert_eq!(run.result["mcp"], json!(["lab"]), "{what}: {}", run.result);
    run.assert_done(&what);
}

/// `--mcp` on an engine vf refuses it for: exit 2 naming why, and nothing
/// happens: no state dir, no request to the model, the MCP server never started.
fn mcp_refused(sb: &Sandbox, why: &str) {
    let what = format!("{} {}", sb.engine, sb.version);
    let log = sb.workdir().join("lab-mcp.log");
    let servers = servers_file(sb, &log);
    let out = sb.vf(&[
        "dispatch",
        "--engine",
        sb.engine,
        "--unit",
        "mcp",
        "--prompt",
        "LAB-JSON Reply with a fenced json block.",
        "--output",
        "jsonl",
        "--mcp",
        servers.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    let head = format!("vf: --mcp: {}: not verified: ", sb.engine);
    assert!(err.starts_with(&head) && err.contains(why), "{what}: {err}");
    assert!(out.stdout.is_empty(), "{what}");
    assert!(
        !sb.state_dir().exists(),
        "{what}: the state dir was written"
    );
    let requests = sb.server_log();
    assert!(
        requests.iter().all(|e| e.get("body").is_none()),
        "{what}: the model was called: {requests:?}"
    );
    assert!(!log.exists(), "{what}: the MCP server was started");
}

fn tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            mcp_offered(&Sandbox::new(engine, &version));
        }
    }
}

fn refused_tier(engine: &'static str, why: &str) {
    for version in versions(engine) {
        if available(engine, &version) {
            mcp_refused(&Sandbox::new(engine, &version), why);
        }
    }
}

#[test]
fn real_mcp_claude() {
    tier("claude");
}

/// codex 0.171.0 started the server from `-c mcp_servers.lab.command/args`
/// (initialize, notifications/initialized, tools/list answered) but never
/// offered lab_mcp_probe: the request's tools were apply_patch, create_goal,
/// exec_command, get_goal, list_mcp_resource_templates, list_mcp_resources,
/// read_mcp_resource, request_user_input, update_goal, view_image,
/// write_stdin (upstream openai/codex#17904). So vf refuses it.
#[test]
fn real_mcp_codex_is_refused() {
    refused_tier("codex", "openai/codex#17904");
}

/// gemini 0.61.0 never started the server named in
/// GEMINI_CLI_SYSTEM_SETTINGS_PATH's mcpServers (the server read nothing);
/// the request's tools were enter_plan_mode, glob, google_web_search,
/// grep_search, invoke_agent, list_directory, read_file, update_topic
/// (upstream google-gemini/gemini-cli#26021). So vf refuses it.
#[test]
fn real_mcp_gemini_is_refused() {
    refused_tier("gemini", "google-gemini/gemini-cli#26021");
}

#[test]
fn real_mcp_opencode() {
    tier("opencode");
}

#[test]
fn real_mcp_copilot() {
    tier("copilot");
}
