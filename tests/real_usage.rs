//! The real-engine tier for usage and rate limits: each real CLI, driven by
//! `vf dispatch` in the loopback sandbox against the fake model server
//! (tests/support/fake_model_server.py answers every model call with
//! USAGE_IN = 100 input and USAGE_OUT = 20 output tokens).
//!
//! Skips like tests/real_engines.rs when the CLIs are absent, and fails then
//! under `VF_REAL_ENGINES=1`.
#![cfg(unix)] // POSIX sh fakes, signals or process groups (docs/PLATFORMS.md)

use serde_json::{Value, json};

mod common;
// Shared with tests/real_engines.rs, which uses the rest of it.
#[allow(dead_code)]
#[path = "real-engines/sandbox.rs"]
mod sandbox;
use sandbox::{Sandbox, available, versions};

/// The fake server's figures for one model call.
const USAGE_IN: u64 = 100;
const USAGE_OUT: u64 = 20;

/// How many model calls an engine's usage covers for one plain answer (gemini
/// also counts its routing classifier call; opencode's title request is not in
/// its steps), and whether it reports a cost.
fn expected(engine: &str) -> Option<(u64, bool)> {
    match engine {
        "claude" => Some((1, true)),
        "codex" => Some((1, false)),
        "gemini" => Some((2, false)),
        "opencode" => Some((1, true)),
        // copilot's frames carry no token figures.
        _ => None,
    }
}

fn usage_tier(engine: &'static str) {
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let sb = Sandbox::new(engine, &version);
        let run = sb.dispatch("usage", "LAB-JSON Reply with a fenced json block.", &[]);
        run.assert_done("LAB-JSON");
        let u = &run.result["usage"];
        match expected(engine) {
            None => assert_eq!(u, &Value::Null, "{engine} {version}"),
            Some((calls, priced)) => {
                let (i, o) = (USAGE_IN * calls, USAGE_OUT * calls);
                let got = json!([u["inputTokens"], u["outputTokens"], u["totalTokens"]]);
                assert_eq!(got, json!([i, o, i + o]), "{engine} {version}: {u}");
                assert_eq!(u["costUsd"].is_number(), priced, "{engine} {version}: {u}");
            }
        }
        rate_limits(&sb);
    }
}

/// LAB-ERR429 is `rate-limited` with exit 75; LAB-ERR500 and LAB-STREAMERR are not.
fn rate_limits(sb: &Sandbox) {
    let mut got = Vec::new();
    for (unit, word) in [
        ("r429", "LAB-ERR429"),
        ("r500", "LAB-ERR500"),
        ("rstream", "LAB-STREAMERR"),
    ] {
        let run = sb.dispatch(
            unit,
            &format!("{word} Reply with a fenced json block."),
            &[],
        );
        assert_eq!(run.result["state"], "failed", "{word}: {}", run.result);
        got.push((run.result["reason"].clone(), run.code));
    }
    let want = [
        ("rate-limited".into(), Some(75)),
        ("engine".into(), Some(1)),
        ("engine".into(), Some(1)),
    ];
    assert_eq!(got, want, "{} {}", sb.engine, sb.version);
}

#[test]
fn real_usage_codex() {
    usage_tier("codex");
}

#[test]
fn real_usage_claude() {
    usage_tier("claude");
}

#[test]
fn real_usage_gemini() {
    usage_tier("gemini");
}

#[test]
fn real_usage_opencode() {
    usage_tier("opencode");
}

#[test]
fn real_usage_copilot() {
    usage_tier("copilot");
}
