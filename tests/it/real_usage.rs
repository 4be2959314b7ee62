//! The real-engine tier for usage and rate limits: each real CLI, driven by
//! `vf dispatch` in the loopback sandbox against the fake model server
//! (tests/support/fake_model_server.py answers every model call with
//! USAGE_IN = 100 input and USAGE_OUT = 20 output tokens).
//!
//! Skips like tests/it/real_engines.rs when the CLIs are absent, and fails then
//! under `VF_REAL_ENGINES=1`.
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use serde_json::{Value, json};

use crate::sandbox;
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
        if engine == "claude" {
            resumed_costs(&sb);
        }
        rate_limits(&sb);
    }
}

/// Issue 25: on a resume, claude's `total_cost_usd` is the session's so far
/// (2.1.332: 0.0008, 0.0016, 0.0024 for one 100/20 call each; ENGINES.md,
/// "Usage"). Each run's usage is its own: the same tokens and cost every time.
fn resumed_costs(sb: &Sandbox) {
    let what = format!("{} {}", sb.engine, sb.version);
    let first = sb.dispatch("cost", "LAB-JSON Reply with a fenced json block.", &[]);
    first.assert_done("LAB-JSON");
    let id = first.result["sessionId"].as_str().unwrap().to_string();
    let mut runs = vec![first];
    for _ in 0..2 {
        let run = sb.dispatch("cost", "LAB-JSON Once more.", &["--session", &id]);
        run.assert_done("LAB-JSON resumed");
        runs.push(run);
    }
    let cost = |run: &sandbox::Run| run.result["usage"]["costUsd"].as_f64().unwrap();
    let once = cost(&runs[0]);
    assert!(once > 0.0, "{what}: {}", runs[0].result);
    for run in &runs {
        let u = &run.result["usage"];
        let tokens = json!([u["inputTokens"], u["outputTokens"]]);
        assert_eq!(tokens, json!([USAGE_IN, USAGE_OUT]), "{what}: {u}");
        assert!(
            (cost(run) - once).abs() < 1e-9,
            "{what}: {u} (first run: {once})"
        );
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
        // Each case its own quota ledger: the 429 would hold the next one
        // for the shared back-off (tests/it/quota_fleet.rs checks that).
        let ledger = sb.home().join(format!("quota-{unit}.json"));
        let run = sb.dispatch_env(
            unit,
            &format!("{word} Reply with a fenced json block."),
            &[],
            &[("VF_QUOTA_FILE", ledger.to_str().unwrap())],
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
