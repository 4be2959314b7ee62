//! The real-engine tier of `--sandbox` (`vf::engine::sandbox_policy`,
//! `vf::dispatch::confine`): each real CLI at its pin, in a fresh sandbox HOME
//! (loopback only, the fake model server), confined by vf's sandbox. The normal
//! scenarios still pass (a fresh answer, its exact resume, a shell tool), a shell
//! write outside the cwd and the CLI's state (`LAB-ESCAPE`) is refused while one in
//! the cwd (`LAB-INSIDE`) lands, and `read-only` refuses that one too. Every run
//! must say `policy.sandbox.state == "enforced"`: a machine that cannot enforce
//! the sandbox fails the tier (no skip), since `VF_REAL_ENGINES=1` means required.
//!
//! One test per engine, its runs in sequence (the CLI's state dir is made by vf
//! on the first run, reused by the next ones). Linux only, like the tier.

use std::ffi::OsStr;

use crate::common;
use crate::sandbox;
use sandbox::{Run, Sandbox, available, is_root, memo_id, versions};

const TOOL: &str = "LAB-TOOL Run the shell command 'echo hello' and report what it printed.";
const ESCAPE: &str = "LAB-ESCAPE Write the files.";
const INSIDE: &str = "LAB-INSIDE Write the file.";

/// The variables a tool run needs: as root claude refuses
/// `--dangerously-skip-permissions` unless the user set `IS_SANDBOX=1`.
fn tool_env(sb: &Sandbox) -> &'static [(&'static str, &'static str)] {
    match sb.engine == "claude" && is_root() {
        true => &[("IS_SANDBOX", "1")],
        false => &[],
    }
}

/// The run was confined in `mode` by a mechanism that holds (here: Landlock).
fn assert_enforced(run: &Run, mode: &str, what: &str) {
    let sandbox = &run.result["policy"]["sandbox"];
    assert_eq!(sandbox["mode"], mode, "{what}: {}", run.result);
    assert_eq!(
        sandbox["state"], "enforced",
        "{what}: the sandbox is not enforced on this machine: {sandbox}"
    );
}

fn answer(run: &Run) -> &str {
    run.result["answer"].as_str().unwrap_or("")
}

/// LAB-JSON fresh, then the exact resume of its session (`--session`; `vf
/// resume` takes failed units only): the same id, turn 1 sent again.
fn fresh_then_resume(sb: &Sandbox, what: &str) {
    let memo = memo_id();
    let prompt = format!(
        "LAB-JSON Reply with a fenced json block containing confidence and files_changed. \
         (LAB-MEMO-{memo})"
    );
    let json = sb.dispatch("json", &prompt, &["--sandbox", "workspace"]);
    json.assert_done(&format!("{what}: LAB-JSON"));
    assert_enforced(&json, "workspace", what);
    assert_eq!(json.result["summary"]["confidence"], 1.0, "{what}");
    let sid = json.result["sessionId"].as_str().unwrap().to_string();

    let prompt = format!("LAB-RESUME Continue. (LAB-RECALL-{memo})");
    let args = ["--sandbox", "workspace", "--session", &sid];
    let resumed = sb.dispatch("json-resumed", &prompt, &args);
    sb.assert_continuity(&resumed, &memo, &format!("{what}: --session"));
    assert_eq!(resumed.result["sessionId"], sid.as_str(), "{what}");
    assert_enforced(&resumed, "workspace", &format!("{what}: --session"));
}

/// A shell tool runs confined and its output comes back.
fn tool(sb: &Sandbox, what: &str) {
    let args = ["--sandbox", "workspace", "--skip-permissions"];
    let run = sb.dispatch_env("tool", TOOL, &args, tool_env(sb));
    run.assert_done(&format!("{what}: LAB-TOOL"));
    assert_enforced(&run, "workspace", what);
    assert!(
        run.kinds().contains(&"toolBurst"),
        "{what}: {:?}",
        run.events
    );
    assert!(answer(&run).contains("hello"), "{what}: {}", run.result);
}

/// The shell writes outside (`../outside.txt`, `$HOME/escape.txt`) are refused,
/// the one in the cwd lands; under `read-only` the cwd refuses it too.
fn escape_inside_read_only(sb: &Sandbox, what: &str) {
    let outside = sb.workdir().parent().unwrap().join("outside.txt");
    let home = sb.home().join("escape.txt");
    let inside = sb.workdir().join("inside.txt");
    let args = ["--sandbox", "workspace", "--skip-permissions"];

    let escape = sb.dispatch_env("escape", ESCAPE, &args, tool_env(sb));
    escape.assert_done(&format!("{what}: LAB-ESCAPE"));
    assert_enforced(&escape, "workspace", what);
    assert!(!outside.exists(), "{what}: ../outside.txt written");
    assert!(!home.exists(), "{what}: $HOME/escape.txt written");
    let said = answer(&escape);
    assert!(
        said.contains("outside:refused") && said.contains("home:refused"),
        "{what}: LAB-ESCAPE: {said:?}"
    );

    let run = sb.dispatch_env("inside", INSIDE, &args, tool_env(sb));
    run.assert_done(&format!("{what}: LAB-INSIDE"));
    assert_enforced(&run, "workspace", what);
    assert!(
        answer(&run).contains("inside:written"),
        "{what}: {}",
        run.result
    );
    assert_eq!(
        std::fs::read_to_string(&inside).unwrap().trim(),
        "lab-inside"
    );
    std::fs::remove_file(&inside).unwrap();

    let args = ["--sandbox", "read-only", "--skip-permissions"];
    let ro = sb.dispatch_env("inside-ro", INSIDE, &args, tool_env(sb));
    ro.assert_done(&format!("{what}: LAB-INSIDE read-only"));
    assert_enforced(&ro, "read-only", what);
    assert!(
        !inside.exists(),
        "{what}: inside.txt written under read-only"
    );
    assert!(
        answer(&ro).contains("inside:refused"),
        "{what}: {}",
        ro.result
    );
}

/// codex under vf's sandbox with its own one asked for (`workspace-write` in its
/// config, no `--skip-permissions`): vf turns codex's off (bwrap cannot nest in
/// Landlock: every shell command would fail), for `exec` and `exec resume` alike.
fn codex_nested(sb: &Sandbox, what: &str) {
    let vf = common::vf();
    let dispatch = |unit: &str, extra: &str| {
        // The sandbox script writes the lab's config (danger-full-access) at
        // each call: the run's own shell switches it before vf starts.
        let script = format!(
            "sed -i 's/^sandbox_mode = .*/sandbox_mode = \"workspace-write\"/' \
             \"$HOME/.codex/config.toml\" && exec \"$0\" dispatch --engine codex \
             --unit {unit} --prompt \"$1\" --output jsonl --sandbox workspace {extra}"
        );
        let mut c = sb.command(OsStr::new("sh"));
        c.args(["-c", &script]).arg(&vf).arg(TOOL);
        Run::from(sb.output(c, &[]), unit)
    };
    let fresh = dispatch("codex-own", "");
    fresh.assert_done(&format!("{what}: codex's own sandbox asked"));
    assert_enforced(&fresh, "workspace", what);
    assert!(answer(&fresh).contains("hello"), "{what}: {}", fresh.result);
    let sid = fresh.result["sessionId"].as_str().unwrap().to_string();

    let resumed = dispatch("codex-own-resumed", &format!("--session {sid}"));
    resumed.assert_done(&format!("{what}: exec resume, codex's own sandbox asked"));
    assert_eq!(resumed.result["sessionId"], sid.as_str(), "{what}");
    assert!(
        answer(&resumed).contains("hello"),
        "{what}: {}",
        resumed.result
    );
}

fn tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            let sb = Sandbox::new(engine, &version);
            let what = format!("{engine} {version} --sandbox");
            let started = std::time::Instant::now();
            fresh_then_resume(&sb, &what);
            tool(&sb, &what);
            escape_inside_read_only(&sb, &what);
            if engine == "codex" {
                codex_nested(&sb, &what);
            }
            eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
        }
    }
}

#[test]
fn real_sandbox_codex() {
    tier("codex");
}

#[test]
fn real_sandbox_claude() {
    tier("claude");
}

#[test]
fn real_sandbox_gemini() {
    tier("gemini");
}

#[test]
fn real_sandbox_opencode() {
    tier("opencode");
}

#[test]
fn real_sandbox_copilot() {
    tier("copilot");
}
