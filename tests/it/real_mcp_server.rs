//! The real-engine tier of `vf mcp` (docs/MCP.md; ENGINES.md, "vf as an MCP
//! server"): a real CLI, in the loopback-only sandbox of every CLI at its pin,
//! runs a unit with `vf mcp` as one of its MCP servers; the fake model server
//! (`LAB-DELEGATE`) calls vf's `dispatch` tool as that CLI names it, asking
//! for a codex unit, then answers with a fenced summary quoting the tool's
//! result. The proof, from vf's own records and the fake server's log:
//!
//! - the codex child ran: its marker is `done`, its `parent` the unit, its
//!   `depth` 2, its name `<unit>.1`, and the fake server answered a codex
//!   request with the child's prompt;
//! - the parent's result lists the child in `children`, and its `treeUsage`
//!   is its own usage plus the child's;
//! - the parent's summary quotes the child's name and `done`: the CLI gave
//!   its model the tool's result.
//!
//! claude is wired by `vf mcp install --engine claude --write` (its project's
//! `.mcp.json`), opencode and copilot by the unit's own `--mcp FILE` naming
//! `vf mcp`. Headless claude and copilot ask before an MCP tool runs, so the
//! unit allows it (`--allow-tool`). Skips like tests/it/real_engines.rs
//! without the CLIs, and fails when `VF_REAL_ENGINES=1` and one is missing.
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::vf;
use crate::sandbox;
use sandbox::{Run, Sandbox, every_available, is_root};

/// The child's prompt (LAB-DELEGATE's): how the fake server's log shows codex ran it.
const CHILD_PROMPT: &str = "A sub-task handed over through vf.";

/// How the parent engine gets `vf mcp` and may call its tool: the extra
/// dispatch arguments.
fn wire(sb: &Sandbox, parent: &str) -> Vec<String> {
    let server = ["--", "--allow-engines", "codex"];
    match parent {
        "claude" => {
            let dir = sb.workdir();
            let mut args = vec!["mcp", "install", "--engine", "claude", "--write", "--dir"];
            args.push(dir.to_str().unwrap());
            args.extend_from_slice(&server);
            let out = sb.vf(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "vf mcp install: {err}");
            vec!["--allow-tool".into(), "mcp__vf__dispatch".into()]
        }
        _ => {
            let servers = json!({"mcpServers": {"vf": {
                "command": vf(),
                "args": ["mcp", "--allow-engines", "codex"],
            }}});
            let path = sb.workdir().join("servers.json");
            std::fs::write(&path, servers.to_string()).unwrap();
            let mut args = vec!["--mcp".to_string(), path.display().to_string()];
            if parent == "copilot" {
                args.extend(["--allow-tool".to_string(), "vf".to_string()]);
            }
            args
        }
    }
}

fn marker(sb: &Sandbox, unit: &str) -> Value {
    let path: PathBuf = sb.state_dir().join("units").join(unit).join("marker.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn tokens(usage: &Value, key: &str) -> u64 {
    usage[key].as_u64().unwrap_or(0)
}

/// The requests the fake server answered for codex (its port) with the child's prompt.
fn codex_served_child(sb: &Sandbox) -> bool {
    sb.server_log().iter().any(|e| {
        e["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/responses"))
            && e["body"].to_string().contains(CHILD_PROMPT)
    })
}

fn delegate(parent: &'static str) {
    if !every_available() {
        return;
    }
    let sb = Sandbox::every(parent);
    let what = format!("{parent} -> vf mcp -> codex");
    let extra = wire(&sb, parent);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let envs: &[(&str, &str)] = match parent == "claude" && is_root() {
        true => &[("IS_SANDBOX", "1")],
        false => &[],
    };
    let unit = "lead";
    let run: Run = sb.dispatch_env(unit, "LAB-DELEGATE Hand this to codex.", &extra, envs);
    run.assert_done(&what);
    let child = format!("{unit}.1");

    // The parent's model got the child's result through the tool.
    let summary = &run.result["summary"];
    assert_eq!(summary["child_unit"], json!(child), "{what}: {summary}");
    assert_eq!(summary["child_state"], "done", "{what}: {summary}");

    // The child ran on codex, below the parent.
    let m = marker(&sb, &child);
    assert_eq!(m["engine"], "codex", "{what}: {m}");
    assert_eq!(m["state"], "done", "{what}: {m}");
    assert_eq!(m["parent"], unit, "{what}: {m}");
    assert_eq!(m["depth"], 2, "{what}: {m}");
    assert!(
        codex_served_child(&sb),
        "{what}: codex never asked for the child's prompt"
    );
    let top = marker(&sb, unit);
    assert!(
        top.get("parent").is_none() && top.get("depth").is_none(),
        "{what}: {top}"
    );

    // The tree adds up in the parent's result.
    let r = &run.result;
    assert_eq!(r["children"], json!([child]), "{what}: {r}");
    for key in ["inputTokens", "outputTokens"] {
        let sum = tokens(&r["usage"], key) + tokens(&m["usage"], key);
        assert_eq!(tokens(&r["treeUsage"], key), sum, "{what}: {key}: {r}");
    }
    eprintln!("{what}: child {child} done, treeUsage {}", r["treeUsage"]);
}

#[test]
fn real_mcp_server_claude_delegates_to_codex() {
    delegate("claude");
}

#[test]
fn real_mcp_server_opencode_delegates_to_codex() {
    delegate("opencode");
}

#[test]
fn real_mcp_server_copilot_delegates_to_codex() {
    delegate("copilot");
}

/// copilot 1.0.102 relays `vf mcp`'s progress notifications as
/// `tool.execution_progress` frames (two of them in the copilot case above,
/// verbatim but for the ids): known, quiet, no drift.
#[test]
fn copilots_progress_frames_of_an_mcp_tool_are_known() {
    use vf::engine::frames::Projector;
    use vf::engine::{EngineId, OutputTransport};
    let lines = [
        r#"{"type":"tool.execution_progress","data":{"toolCallId":"call_lab0002","progressMessage":"1.0: system.status: Session started"},"ephemeral":true,"id":"418b5aa8-bf4e-40a7-ae3d-6b08c00cff08","timestamp":"2026-12-06T01:13:40.046Z","parentId":"1a60d1fd-f303-4e1b-8463-a807120e22db"}"#,
        r#"{"type":"tool.execution_progress","data":{"toolCallId":"call_lab0002","progressMessage":"4.0: system.status: Turn completed"},"ephemeral":true,"id":"daa4adb1-33ff-4025-88b7-15a2b964132f","timestamp":"2026-12-06T01:13:40.249Z","parentId":"1a60d1fd-f303-4e1b-8463-a807120e22db"}"#,
    ];
    let v = vf::ground::version::Version::parse("1.0.102").unwrap();
    let mut p = Projector::new(EngineId::Copilot, Some(&v), OutputTransport::Jsonl);
    let mut events = Vec::new();
    for l in lines {
        events.extend(p.push_line(l.as_bytes()));
    }
    events.extend(p.finish());
    assert_eq!(p.unknown_frames(), 0, "{events:?}");
}
