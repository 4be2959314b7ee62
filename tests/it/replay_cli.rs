//! `vf replay` through the binary.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common;
use common::{fixture, jsonl, vf_cli as vf};

#[test]
fn jsonl_output_is_one_event_per_line() {
    let out = vf()
        .args([
            "replay",
            fixture("codex/0.171.0/b_tool.stdout.jsonl")
                .to_str()
                .unwrap(),
        ])
        .args([
            "--cli",
            "codex",
            "--cli-version",
            "0.171.0",
            "--output",
            "jsonl",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ev = jsonl(&out.stdout);
    let kinds: Vec<&str> = ev.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "system.status",
            "system.status",
            "message.taskAgent",
            "toolBurst",
            "message.taskAgent",
            "system.status"
        ]
    );
    assert_eq!(ev[0]["sessionId"], "01a229fa-c37b-7e73-b0a3-717af64fe884");
    assert_eq!(ev[1]["label"], "Turn started");
    assert_eq!(ev[3]["tools"][0]["exitCode"], 0);
    assert_eq!(ev[3]["rawRange"]["start"], 4);
    assert_eq!(ev[3]["rawRange"]["end"], 5);
    // The last message was shown live; the row completing the turn names it.
    assert!(ev[4].get("final").is_none());
    assert_eq!(ev[5]["answer"], ev[4]["text"]);
    assert!(ev[5]["usage"]["output_tokens"].is_number());
}

#[test]
fn human_output_has_trace_refs_drift_rows_and_truncation() {
    let mut log = std::fs::read(fixture("codex/0.171.0/a_json.stdout.jsonl")).unwrap();
    log.extend_from_slice(b"{\"type\":\"vf.future_kind\",\"secret\":\"hunter2\"}\n");
    log.extend_from_slice(b"{\"type\":\"output.truncated\"}\n");
    let out = vf()
        .args(["replay", "-", "--cli", "codex"])
        .write_stdin(log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[line 1] info: Session started"), "{text}");
    assert!(
        text.contains(
            "[line 5] warning: Protocol drift — Unknown frame (kind vf.future_kind, cli codex v0.171.x)"
        ),
        "{text}"
    );
    assert!(
        text.contains("[line 6] warning: Output truncated"),
        "{text}"
    );
    assert!(!text.contains("hunter2"));
}

/// The engine's text is untrusted: a terminal escape in a message or a tool's
/// output is shown escaped in the human transcript, never written raw (it
/// would retitle, clear or recolour the user's terminal); JSON keeps it exact.
#[test]
fn human_output_never_writes_an_engines_escape_raw() {
    let capture = std::fs::read_to_string(fixture("claude/2.1.332/b_tool.stdout.jsonl")).unwrap();
    let hostile = capture
        .replace(
            "I will run",
            r"I\u001b]52;c;aGk=\u0007 will\r\u001b[31m run",
        )
        .replace("\"hello\"", r#""he\u001b[2Jllo\u009b""#);
    let human = vf()
        .args(["replay", "-", "--cli", "claude"])
        .write_stdin(hostile.clone())
        .output()
        .unwrap();
    assert!(human.status.success());
    let text = String::from_utf8(human.stdout).unwrap();
    let said = r"    I\u{1b}]52;c;aGk=\u{7} will\r\u{1b}[31m run the command.";
    assert!(text.lines().any(|l| l == said), "{text}");
    assert!(text.contains(r"he\u{1b}[2Jllo\u{9b}"), "{text}");
    let raw = ['\u{1b}', '\u{7}', '\r', '\u{9b}'];
    assert!(!text.contains(raw), "{text:?}");
    let json = vf()
        .args(["replay", "-", "--cli", "claude", "--output", "jsonl"])
        .write_stdin(hostile)
        .output()
        .unwrap();
    let ev = jsonl(&json.stdout);
    assert_eq!(
        ev[1]["text"],
        "I\u{1b}]52;c;aGk=\u{7} will\r\u{1b}[31m run the command."
    );
}

#[test]
fn a_huge_line_is_skipped_with_a_warning_and_the_stream_goes_on() {
    let mut log = Vec::new();
    log.extend_from_slice(
        b"{\"type\":\"thread.started\",\"thread_id\":\"01a229e6-b739-7472-9ac7-c8fe37200f9b\"}\n",
    );
    log.extend_from_slice(b"{\"type\":\"error\",\"message\":\"");
    log.resize(log.len() + (9 << 20), b'x');
    log.extend_from_slice(b"\"}\n");
    log.extend_from_slice(b"{\"type\":\"turn.completed\",\"usage\":{}}");
    let out = vf()
        .args(["replay", "-", "--cli", "codex", "--output", "jsonl"])
        .write_stdin(log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let ev = jsonl(&out.stdout);
    assert_eq!(ev.len(), 3, "{ev:?}");
    assert_eq!(ev[1]["label"], "Line too long");
    assert_eq!(ev[1]["rawRange"]["start"], 2);
    assert_eq!(ev[2]["label"], "Turn completed");
    assert_eq!(ev[2]["rawRange"]["start"], 3);
}

#[test]
fn json_transport_and_text_transport() {
    let out = vf()
        .args([
            "replay",
            fixture("gemini/0.61.0/a_json.stdout.jsonl")
                .to_str()
                .unwrap(),
        ])
        .args([
            "--cli",
            "gemini",
            "--transport",
            "json",
            "--output",
            "jsonl",
        ])
        .output()
        .unwrap();
    let ev = jsonl(&out.stdout);
    assert_eq!(ev[0]["kind"], "message.taskAgent");
    assert_eq!(ev[0]["rawRange"]["end"], 91);
    let out = vf()
        .args([
            "replay",
            fixture("copilot/1.0.102/g_text_mode.stdout.jsonl")
                .to_str()
                .unwrap(),
        ])
        .args([
            "--cli",
            "copilot",
            "--transport",
            "text",
            "--output",
            "jsonl",
        ])
        .output()
        .unwrap();
    // One row per non-blank line (lines 1, 3, 4, 5), each at its own line.
    let rows: Vec<(String, String, u64)> = jsonl(&out.stdout)
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().unwrap_or_default().to_string();
            let label = e["label"].as_str().unwrap_or_default().to_string();
            (kind, label, e["rawRange"]["start"].as_u64().unwrap_or(0))
        })
        .collect();
    let row = |n| ("system.status".to_string(), "Text output".to_string(), n);
    assert_eq!(rows, vec![row(1), row(3), row(4), row(5)]);
}

#[test]
fn bad_arguments_are_usage_errors() {
    vf().args(["replay", "/nonexistent/log", "--cli", "codex"])
        .assert()
        .code(2);
    vf().args(["replay", "-", "--cli", "codex", "--cli-version", "banana"])
        .write_stdin("")
        .assert()
        .code(2);
    vf().args(["replay", "-", "--cli", "nope"]).assert().code(2);
}

#[test]
fn a_closed_stdout_is_success() {
    let mut child = Command::new(common::vf())
        .env("VF_CONFIG", common::no_config())
        .args(["replay", "-", "--cli", "codex", "--output", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let line = b"{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"hello\"}}\n{\"type\":\"turn.completed\"}\n";
    // Enough output to overflow any buffer; vf may exit before all is written.
    for _ in 0..100_000 {
        if stdin.write_all(line).is_err() {
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
}
