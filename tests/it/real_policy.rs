//! The real-engine tier of `--read-only` and `--allow-tool` (`vf::engine::tool_policy`):
//! each real CLI that claims read-only enforcement, in the loopback-only
//! sandbox against the fake model server, gets a `LAB-WRITE` unit (the model
//! asks its shell tool for `touch lab-written.txt`). A control run that may
//! write does write, so the read-only run's missing file proves the flag, not
//! a tool the model never had. Skips like tests/it/real_engines.rs without
//! the CLIs, and fails when `VF_REAL_ENGINES=1` and one is missing.
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use serde_json::json;

use crate::sandbox;
use sandbox::{Run, Sandbox, available, is_root, versions};

const WRITE: &str = "LAB-WRITE Create the file lab-written.txt with a shell command.";
const FILE: &str = "lab-written.txt";

/// The flags of a run that may write, and of one that is read-only, per
/// engine: claude's and gemini's allow list (their shell tool) lets them
/// write (claude without the root refusal of `--dangerously-skip-permissions`),
/// and the read-only run keeps that allow list, so read-only alone stops
/// the write. claude's plan mode holds against `Bash` allowed; gemini's does
/// not (this tier saw it write), so vf does not send gemini's allow list
/// under read-only and says `tools: unenforced`.
fn flags(engine: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match engine {
        "claude" => (
            &["--allow-tool", "Bash"],
            &["--read-only", "--allow-tool", "Bash"],
        ),
        "gemini" => (
            &["--allow-tool", "run_shell_command"],
            &["--read-only", "--allow-tool", "run_shell_command"],
        ),
        _ => (&["--skip-permissions"], &["--read-only"]),
    }
}

fn written(sb: &Sandbox) -> bool {
    sb.workdir().join(FILE).exists()
}

fn read_only_holds(sb: &Sandbox) {
    let what = format!("{} {}", sb.engine, sb.version);
    let (may_write, read_only) = flags(sb.engine);
    let envs: &[(&str, &str)] = match sb.engine == "claude" && is_root() {
        true => &[("IS_SANDBOX", "1")],
        false => &[],
    };
    let control = sb.dispatch_env("may-write", WRITE, may_write, envs);
    control.assert_done(&format!("{what}: {may_write:?}"));
    assert!(
        written(sb),
        "{what}: the control run did not write: {}",
        control.result
    );
    std::fs::remove_file(sb.workdir().join(FILE)).unwrap();

    let ro = sb.dispatch_env("read-only", WRITE, read_only, envs);
    assert!(
        !written(sb),
        "{what}: written under {read_only:?}: {}",
        ro.result
    );
    let tools = match sb.engine {
        "claude" => "enforced",
        "gemini" => "unenforced",
        _ => "off",
    };
    assert_eq!(
        ro.result["policy"],
        json!({"readOnly": "enforced", "tools": tools}),
        "{what}"
    );
    let warned = ro.result["warnings"].as_array().unwrap().len();
    assert_eq!(
        warned,
        usize::from(tools == "unenforced"),
        "{what}: {}",
        ro.result
    );
}

fn tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            read_only_holds(&Sandbox::new(engine, &version));
        }
    }
}

#[test]
fn real_read_only_claude() {
    tier("claude");
}

#[test]
fn real_read_only_codex() {
    tier("codex");
}

#[test]
fn real_read_only_gemini() {
    tier("gemini");
}

/// An ACP agent's read-only run: vf rejects the write the agent asks for.
fn acp_read_only_holds(engine: &'static str) {
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let sb = Sandbox::new(engine, &version);
        let preset = format!("acp:{engine}");
        let args = [
            "dispatch",
            "--engine",
            &preset,
            "--unit",
            "read-only",
            "--prompt",
            WRITE,
            "--output",
            "jsonl",
            "--read-only",
        ];
        let ro = Run::from(sb.vf(&args), "acp read-only");
        assert!(!written(&sb), "{preset} {version}: written: {}", ro.result);
        assert_eq!(
            ro.result["policy"],
            json!({"readOnly": "enforced", "tools": "off"}),
            "{preset} {version}"
        );
        let rejected = ro.events.iter().any(|e| {
            e["label"]
                .as_str()
                .is_some_and(|l| l.starts_with("Permission rejected"))
        });
        assert!(
            rejected,
            "{preset} {version}: no rejected permission: {:?}",
            ro.events
        );
    }
}

#[test]
fn real_read_only_acp_gemini() {
    acp_read_only_holds("gemini");
}

#[test]
fn real_read_only_acp_opencode() {
    acp_read_only_holds("opencode");
}
