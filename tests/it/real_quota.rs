//! The real-engine tier of the quota governor (issue 42): the real claude in
//! the loopback sandbox, on a subscription (a fake OAuth token: only then
//! does claude print its `rate_limit_event`, fixtures/CAPTURES-README.md ("Quota captures")),
//! against the fake model server's `LAB-ERR429-RESET` / `LAB-QUOTA`.
//!
//! - a plan of three claude units, `--jobs 1`, the first refused with a
//!   reset: the others do not start before the reset (no request reaches the
//!   fake server between the refusal and the reset), then run;
//! - `allowed_warning` at 92 % with `--pause-at 90`: the next unit waits for
//!   the window's reset.
//!
//! Skips like tests/it/real_engines.rs when claude is absent, and fails then
//! under `VF_REAL_ENGINES=1`. Linux only: the sandbox is a network namespace.

use serde_json::Value;

use crate::sandbox;
use sandbox::{Sandbox, available, is_root, versions};

/// Seconds to the reset the fake server names: long enough that a unit that
/// was not held would start well before it.
const RESET: u64 = 20;

/// claude on a subscription: its own key unset, a fake OAuth token (sent to
/// the fake server only), `IS_SANDBOX` for root; the test's own ledger.
fn claude_env(sb: &Sandbox) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("ANTHROPIC_API_KEY", String::new()),
        (
            "CLAUDE_CODE_OAUTH_TOKEN",
            "sk-ant-oat01-lab-fake".to_string(),
        ),
        (
            "VF_QUOTA_FILE",
            sb.workdir()
                .join(".vibeflow-quota.json")
                .display()
                .to_string(),
        ),
    ];
    if is_root() {
        v.push(("IS_SANDBOX", "1".to_string()));
    }
    v
}

fn plan(prompts: &[(&str, &str)]) -> String {
    prompts
        .iter()
        .map(|(name, prompt)| {
            format!("[[unit]]\nname = \"{name}\"\nengine = \"claude\"\nprompt = \"{prompt}\"\n\n")
        })
        .collect()
}

/// `vf orchestrate plan.toml --jobs 1` in the sandbox: the result line.
fn orchestrate(sb: &Sandbox, plan_text: &str, extra: &[&str]) -> Value {
    std::fs::write(sb.workdir().join("plan.toml"), plan_text).unwrap();
    let mut args = vec![
        "orchestrate",
        "plan.toml",
        "--jobs",
        "1",
        "--output",
        "jsonl",
    ];
    args.extend_from_slice(extra);
    let env = claude_env(sb);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = sb.vf_env(&args, &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|v| v["units"].is_array())
        .unwrap_or_else(|| {
            panic!(
                "no result: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The fake server's model requests whose prompt holds `word`: their times.
fn requests_with(sb: &Sandbox, word: &str) -> Vec<f64> {
    sb.server_log()
        .iter()
        .filter(|e| e["path"].as_str().is_some_and(|p| p.contains("/messages")))
        .filter(|e| e["body"].to_string().contains(word))
        .filter_map(|e| e["ts"].as_f64())
        .collect()
}

fn unit<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name || u["unit"] == name)
        .unwrap_or_else(|| panic!("no unit {name}: {result}"))
}

/// The first unit meets the wall with a reset 20 s away; the two after it
/// (`--jobs 1`) wait for the reset instead of starting, then run.
#[test]
fn real_quota_claude_units_wait_for_the_reset() {
    let engine = "claude";
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let sb = Sandbox::new(engine, &version);
        let text = plan(&[
            (
                "wall",
                &format!("LAB-ERR429-RESET={RESET} Reply with a fenced json block."),
            ),
            (
                "second",
                "LAB-JSON lab-second Reply with a fenced json block.",
            ),
            (
                "third",
                "LAB-JSON lab-third Reply with a fenced json block.",
            ),
        ]);
        let result = orchestrate(&sb, &text, &[]);
        let wall = requests_with(&sb, "LAB-ERR429-RESET");
        // claude does not retry a subscription's refusal: one request.
        assert_eq!(wall.len(), 1, "{result}");
        // The reset the fake server named (whole epoch seconds).
        let reset = (wall[0].floor() as u64 + RESET) as f64;
        for name in ["second", "third"] {
            let at = requests_with(&sb, &format!("lab-{name}"));
            assert!(!at.is_empty(), "{name} never ran: {result}");
            assert!(
                at.iter().all(|t| *t >= reset),
                "{name} reached the model before the reset ({at:?} < {reset}): {result}"
            );
            assert_eq!(unit(&result, name)["state"], "done", "{name}: {result}");
        }
        assert_eq!(unit(&result, "wall")["reason"], "rate-limited", "{result}");
    }
}

/// 92 % of the window used (claude lists it in `unifiedWindows` even when it
/// does not warn) and `--pause-at 90`: the next unit waits for the window's
/// reset.
#[test]
fn real_quota_claude_pause_at_holds_the_next_unit() {
    let engine = "claude";
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let sb = Sandbox::new(engine, &version);
        let text = plan(&[
            (
                "near",
                &format!("LAB-QUOTA=allowed_warning:0.92:{RESET} Reply with a fenced json block."),
            ),
            ("next", "LAB-JSON lab-next Reply with a fenced json block."),
        ]);
        let result = orchestrate(&sb, &text, &["--pause-at", "90"]);
        let near = requests_with(&sb, "LAB-QUOTA");
        assert_eq!(near.len(), 1, "{result}");
        assert_eq!(unit(&result, "near")["state"], "done", "{result}");
        let reset = (near[0].floor() as u64 + RESET) as f64;
        let at = requests_with(&sb, "lab-next");
        assert!(!at.is_empty(), "next never ran: {result}");
        assert!(
            at.iter().all(|t| *t >= reset),
            "next reached the model before the window reset ({at:?} < {reset}): {result}"
        );
        assert_eq!(unit(&result, "next")["state"], "done", "{result}");
    }
}
