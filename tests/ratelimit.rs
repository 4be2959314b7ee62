//! A provider's rate limit as its own outcome: state `failed`, reason
//! `rate-limited`, exit 75, read from each engine's genuine behaviour, and
//! never confused with a 500 or a failure inside the stream.

use serde_json::Value;

mod common;
use common::*;

/// `(reason, vf's exit code, retryAt)` of a replayed capture.
fn outcome(env: &Env, engine: &str, unit: &str, cap: &str) -> (Value, i32, Value) {
    let out = env.replay_capture(engine, unit, cap, &[]);
    let r = last_json(&out);
    assert_eq!(r["state"], "failed", "{cap}: {r}");
    assert_eq!(env.marker(unit)["reason"], r["reason"], "{cap}");
    let retry = r.get("retryAt").cloned().unwrap_or(Value::Null);
    (r["reason"].clone(), out.status.code().unwrap(), retry)
}

#[test]
fn a_429_is_rate_limited_and_a_500_or_stream_error_is_not() {
    let env = Env::new();
    for dir in ["claude/2.1.207", "codex/0.144.1", "gemini/0.47.0"] {
        let engine = dir.split('/').next().unwrap();
        let got: Vec<(Value, i32)> = ["d_error429", "d_error500", "d_stream_error"]
            .iter()
            .map(|case| {
                let cap = format!("{dir}/{case}.stdout.jsonl");
                let (reason, code, retry) =
                    outcome(&env, engine, &format!("{engine}-{case}"), &cap);
                // None of these captures says when the limit resets.
                assert_eq!(retry, Value::Null, "{cap}");
                (reason, code)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("rate-limited".into(), 75),
                ("engine".into(), 1),
                ("engine".into(), 1)
            ],
            "{dir}"
        );
    }
}

/// opencode and copilot have no 429 capture: their 500 capture with the
/// status their error frame names changed to 429 (the frame shape is genuine).
#[test]
fn opencode_and_copilot_error_frames_name_the_429() {
    let env = Env::new();
    for (engine, dir, from, to) in [
        (
            "opencode",
            "opencode/1.18.33",
            "\"statusCode\":500",
            "\"statusCode\":429",
        ),
        (
            "copilot",
            "copilot/1.0.102",
            "\"statusCode\":500",
            "\"statusCode\":429",
        ),
    ] {
        let cap = format!("{dir}/d_error500.stdout.jsonl");
        let text = read_text(&fixture(&cap));
        assert!(text.contains(from), "{cap}");
        let derived = env.write(&format!("{engine}-429.jsonl"), text.replace(from, to));
        let (reason, code, _) = outcome(&env, engine, &format!("{engine}-500"), &cap);
        assert_eq!((reason, code), ("engine".into(), 1), "{cap}");
        let out = env.dispatch(
            engine,
            &format!("{engine}-429"),
            &[
                ("FAKE_STDOUT", derived.display().to_string()),
                ("FAKE_VERSION", version_of(engine).into()),
                ("FAKE_EXIT", "1".into()),
            ],
            &[],
        );
        let r = last_json(&out);
        assert_eq!(
            (r["reason"].clone(), out.status.code()),
            ("rate-limited".into(), Some(75)),
            "{engine}: {r}"
        );
    }
}

/// claude's `rate_limit_event` names when the limit resets: the result and
/// the marker carry it as `retryAt`.
#[test]
fn a_reset_time_becomes_retry_at() {
    let env = Env::new();
    let cap = "claude/2.1.207/d_error429.stdout.jsonl";
    let mut lines: Vec<String> = read_text(&fixture(cap))
        .lines()
        .map(str::to_string)
        .collect();
    let event = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796000753,"rateLimitType":"five_hour"},"session_id":"6194bcf3-613b-4938-813a-96fd27dc6521"}"#;
    lines.insert(1, event.to_string());
    let derived = env.write("claude-429.jsonl", lines.join("\n") + "\n");
    let out = env.dispatch(
        "claude",
        "reset",
        &[
            ("FAKE_STDOUT", derived.display().to_string()),
            ("FAKE_VERSION", "2.1.207".into()),
            ("FAKE_EXIT", "1".into()),
        ],
        &[],
    );
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(75), "{r}");
    assert_eq!(r["retryAt"], "2026-11-30T01:05:53.000Z", "{r}");
    assert_eq!(env.marker("reset")["retryAt"], r["retryAt"]);
}
