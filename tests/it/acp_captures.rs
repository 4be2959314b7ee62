//! The ACP projector over the genuine captures of `gemini --acp` and
//! `opencode acp` (`fixtures/acp/<cli>/<version>/`, made by
//! scripts/capture-acp.sh): every capture's events and outcome are a
//! snapshot (`acp__<cli>__<version>__<case>`), no genuine line is an unknown
//! frame, and each case's outcome is the one the fake model server scripted.

use std::path::PathBuf;

use serde_json::{Value, json};
use vf::engine::acp::{Outcome, project_log};
use vf::engine::frames::ConversationEvent;
use vf::ground::error::Reason;

use crate::common::{self, assert_json_eq};

struct Capture {
    cli: String,
    version: String,
    case: String,
    text: String,
}

fn captures() -> Vec<Capture> {
    let root = common::fixtures().join("acp");
    let mut out = Vec::new();
    for cli in sorted(root) {
        for version in sorted(cli.clone()) {
            for f in sorted(version.clone()) {
                let name = file_name(&f);
                let Some(case) = name.strip_suffix(".acp.jsonl") else {
                    continue;
                };
                out.push(Capture {
                    cli: file_name(&cli),
                    version: file_name(&version),
                    case: case.to_string(),
                    text: common::read_text(&f),
                });
            }
        }
    }
    assert!(out.len() >= 12, "{}", out.len());
    out
}

fn sorted(dir: PathBuf) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn capture_snapshots_with_no_unknown_frame() {
    let _snapshots = common::snapshot_settings();
    for c in captures() {
        let (events, outcome) = project_log(&c.text);
        let unknown: Vec<&ConversationEvent> = events
            .iter()
            .filter(|e| e.kind() == "system.unknownFrame")
            .collect();
        assert!(unknown.is_empty(), "{} {}: {unknown:?}", c.cli, c.case);
        let name = format!("acp__{}__{}__{}", c.cli, c.version, c.case);
        insta::assert_json_snapshot!(name, json!({"events": events, "outcome": outcome}));
    }
}

/// What the fake model server scripted for the case, read off the outcome:
/// stop reason, failure, usage figures, the summary, the session.
fn facts(o: &Outcome) -> Value {
    let usage = o
        .usage
        .as_ref()
        .map(|u| json!([u.input_tokens, u.output_tokens, u.total_tokens, u.source]));
    json!({
        "stop": o.stop_reason,
        "failure": o.failure().map(|f| f.0),
        "usage": usage,
        "summary": o.summary().value(),
        "session": o.session_id.is_some(),
        "agent": o.agent.as_ref().map(|a| a.describe()),
    })
}

fn expected(c: &Capture) -> Value {
    let gemini = c.cli == "gemini";
    let agent = if gemini {
        "gemini-cli 0.61.0, protocol 1, loadSession, prompt: image, audio, embeddedContext"
    } else {
        "OpenCode 1.18.33, protocol 1, loadSession, prompt: image, embeddedContext"
    };
    let one = if gemini {
        json!([100, 20, 120, "session/prompt._meta.quota.token_count"])
    } else {
        json!([100, 20, 120, "session/prompt.usage"])
    };
    // gemini's tool turns make two model calls (their sum is reported).
    let two = if gemini {
        json!([200, 40, 240, "session/prompt._meta.quota.token_count"])
    } else {
        one.clone()
    };
    let end = |usage: Value, summary: Value| {
        json!({"stop": "end_turn", "failure": null, "usage": usage, "summary": summary,
               "session": true, "agent": agent})
    };
    match c.case.as_str() {
        "a_json" => end(one, json!({"confidence": 1.0, "files_changed": []})),
        "b_tool" => end(two, json!({"confidence": 0.9, "files_changed": []})),
        "b_write_rejected" if gemini => end(
            two,
            json!({"confidence": 0.5, "files_changed": ["lab-written.txt"]}),
        ),
        // opencode ends the turn at a rejected permission, without a word.
        "b_write_rejected" => end(one, Value::Null),
        "c_resume" => end(one, json!({"confidence": 0.8, "files_changed": ["a.txt"]})),
        // opencode answers a cancel that races its first model call with an
        // internal error (-32603), not stopReason cancelled.
        "d_error500" | "e_cancel" if c.case == "d_error500" || !gemini => {
            json!({"stop": null, "failure": Reason::Engine, "usage": null,
                   "summary": null, "session": true, "agent": agent})
        }
        "e_cancel" if gemini => json!({"stop": "cancelled", "failure": Reason::Cancelled,
                               "usage": null, "summary": null, "session": true, "agent": agent}),
        other => panic!("no expectation for {} {other}", c.cli),
    }
}

#[test]
fn each_capture_ends_as_the_fake_server_scripted() {
    for c in captures() {
        let (_, outcome) = project_log(&c.text);
        assert_json_eq(&facts(&outcome), &expected(&c));
    }
}

/// The rejected write: vf's answer is recorded as a row, and the tool the
/// agent asked for shows it did not run (opencode: failed; gemini reports no
/// tool row at all for a refused call).
#[test]
fn a_rejected_permission_is_a_row_in_both_captures() {
    for c in captures().iter().filter(|c| c.case == "b_write_rejected") {
        let (events, _) = project_log(&c.text);
        let rows: Vec<Value> = events
            .iter()
            .filter_map(|e| match e {
                ConversationEvent::Status { label, detail, .. }
                    if label.starts_with("Permission") =>
                {
                    Some(json!([label, detail]))
                }
                _ => None,
            })
            .collect();
        let want = if c.cli == "gemini" {
            json!([[
                "Permission rejected",
                "execute touch lab-written.txt && echo written: reject_once (cancel)"
            ]])
        } else {
            json!([[
                "Permission rejected",
                "execute touch lab-written.txt && echo written: reject_once (reject)"
            ]])
        };
        assert_json_eq(&Value::Array(rows), &want);
    }
}
