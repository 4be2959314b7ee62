//! The quota governor across a fleet (issue 42): after one unit meets the
//! provider's wall, no start of that engine happens before the reset, in
//! this plan or in another vf process that shares the ledger; the held
//! units then start one at a time. The fake engine keeps a wall of its own
//! (`FAKE_WALL_AT`): a run that starts while it stands is refused, so every
//! `wall` line in its log is a start vf should not have made.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// Every wait is scaled by this (the fake's 150 s reset holds about 1.5 s,
/// longer than any wall the fake puts up here).
const SCALE: &str = "0.01";
/// The session of claude's genuine 429 run.
const SID: &str = "6194bcf3-613b-4938-813a-96fd27dc6521";

/// claude's genuine 429 run with a `rate_limit_event` that names a reset
/// `reset_in` seconds from now.
fn limited_stdout(env: &Env, reset_in: u64) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut lines: Vec<String> = read_text(&fixture("claude/2.1.207/d_error429.stdout.jsonl"))
        .lines()
        .map(str::to_string)
        .collect();
    let event = format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{},"rateLimitType":"five_hour"}},"session_id":"6194bcf3-613b-4938-813a-96fd27dc6521"}}"#,
        now + reset_in
    );
    lines.insert(1, event);
    env.write("claude-429.jsonl", lines.join("\n") + "\n")
}

/// A plan dir whose claude fake puts up a wall of `wall_ms` at its
/// `wall_at`-th run, shared by every process that uses `wall_dir`.
fn fleet(env: &Env, wall_at: u32, wall_ms: u32, wall_dir: &std::path::Path) {
    std::fs::create_dir_all(env.path().join("runs")).unwrap();
    std::fs::create_dir_all(wall_dir).unwrap();
    let limited = limited_stdout(env, 150);
    // The run after the wall resumes the limited run's session.
    let ok = read_text(&fixture("claude/2.1.332/a_json_stream.stdout.jsonl"))
        .replace("5e0e0c89-f301-4ba6-8327-7b41f84dc493", SID)
        .replace("a45120f2-ed10-406b-8dbb-c2e6151c6f7f", SID);
    let ok = env.write("claude-ok.jsonl", ok);
    env.fake_for("claude");
    env.write(
        "bin/claude.env",
        format!(
            "FAKE_VERSION=2.1.332\nFAKE_STDOUT={}\nFAKE_DELAY=0.05\nFAKE_WALL_AT={wall_at}\nFAKE_WALL_MS={wall_ms}\nFAKE_WALL_DIR={}\nFAKE_RATE_LIMIT_STDOUT={}\n",
            ok.display(),
            wall_dir.display(),
            limited.display()
        ),
    );
}

/// A plan of `n` claude units, each in its own dir, with `keys` on each.
fn plan(env: &Env, n: usize, keys: &str) {
    let mut text = String::new();
    for i in 0..n {
        std::fs::create_dir_all(env.path().join(format!("u{i:02}"))).unwrap();
        text.push_str(&format!(
            "[[unit]]\nname = \"u{i:02}\"\nengine = \"claude\"\nprompt = \"task {i}\"\ncwd = \"u{i:02}\"\n{keys}\n"
        ));
    }
    env.write("plan.toml", text);
}

/// `vf orchestrate plan.toml --output jsonl` on the fakes, waits scaled,
/// the ledger at `ledger`.
fn orchestrate(env: &Env, ledger: &std::path::Path, extra: &[&str]) -> std::process::Command {
    let plan = env.path().join("plan.toml");
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--output", "jsonl"]);
    c.args(extra)
        .env("FAKE_RUN_DIR", env.path().join("runs"))
        .env("VF_CLAUDE_BIN", env.fake_for("claude"))
        .env("VF_TEST_RATE_LIMIT_WAIT_SCALE", SCALE)
        .env("VF_QUOTA_FILE", ledger);
    c
}

/// `(starts, walls)`: runs of the fake that started, and those the wall refused.
fn counts(env: &Env) -> (usize, usize) {
    let log = std::fs::read_to_string(env.path().join("runs/events.log")).unwrap_or_default();
    let n = |p: &str| log.lines().filter(|l| l.starts_with(p)).count();
    (n("start "), n("wall "))
}

fn units(result: &Value) -> Vec<(String, String)> {
    result["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let s = |k: &str| u[k].as_str().unwrap_or("").to_string();
            (s("unit"), s("state"))
        })
        .collect()
}

#[test]
fn after_the_wall_no_unit_of_the_plan_starts_that_engine_before_the_reset() {
    let env = Env::new();
    let ledger = env.path().join("quota.json");
    fleet(&env, 3, 800, &env.path().join("wall"));
    plan(&env, 16, "on_rate_limit = \"wait\"\nmax_wait = 600");
    let out = run_bounded(
        orchestrate(&env, &ledger, &["--jobs", "8"]),
        Duration::from_secs(90),
    );
    let lines = jsonl(&out.stdout);
    let result = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(out.status.code(), Some(0), "{result}\n{}", stderr(&out));
    assert!(units(&result).iter().all(|(_, s)| s == "done"), "{result}");
    let (starts, walls) = counts(&env);
    // The eight that start together may meet the wall (the third puts it
    // up); once vf knows of it, no start meets it again.
    assert!((1..=8).contains(&walls), "{walls} runs met the wall");
    assert_eq!(starts, 16 + walls, "each walled unit ran once more");
    // The units held show so in the stream.
    let held: Vec<&Value> = lines.iter().filter(|l| !l["heldBy"].is_null()).collect();
    for l in &held {
        assert_eq!(l["state"], "waiting", "{l}");
        assert_eq!(l["heldBy"]["engine"], "claude", "{l}");
        assert_eq!(l["heldBy"]["account"], "default", "{l}");
    }
}

#[test]
fn a_hold_learned_by_one_vf_process_holds_another_and_outlives_it() {
    let first = Env::new();
    let ledger = first.path().join("quota.json");
    let wall = first.path().join("wall");
    fleet(&first, 1, 700, &wall);
    plan(&first, 1, "");
    let out = run_bounded(orchestrate(&first, &ledger, &[]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    let learned = Instant::now();
    let text = std::fs::read_to_string(&ledger).unwrap();
    assert!(
        text.contains("\"heldUntil\"") && text.contains("\"unit\": \"u00\""),
        "{text}"
    );
    // A second plan, in another dir and another process, same ledger.
    let second = Env::new();
    fleet(&second, 1, 700, &wall);
    plan(&second, 3, "");
    let out = run_bounded(orchestrate(&second, &ledger, &[]), Duration::from_secs(60));
    let result = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{result}\n{}", stderr(&out));
    assert_eq!(counts(&second), (3, 0), "no start met the wall");
    // It waited for the reset (about 1 s after the first learned it).
    assert!(learned.elapsed() >= Duration::from_millis(700));
}

#[test]
fn a_dispatch_on_a_held_account_exits_75_without_starting_its_engine() {
    let env = Env::new();
    let ledger = env.path().join("quota.json");
    fleet(&env, 1, 60_000, &env.path().join("wall"));
    let limited = |unit: &str| {
        let mut c = env.cmd(&[
            "dispatch", "--engine", "claude", "--unit", unit, "--prompt", "x", "--output", "json",
        ]);
        c.env("VF_CLAUDE_BIN", env.fake_for("claude"))
            .env("FAKE_RUN_DIR", env.path().join("runs"))
            .env("VF_QUOTA_FILE", &ledger);
        run_bounded(c, Duration::from_secs(30))
    };
    let out = limited("first");
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert_eq!(counts(&env), (1, 1));
    let out = limited("second");
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("claude/default is held (rate-limited) until"),
        "{err}"
    );
    assert!(err.contains("learned from unit first"), "{err}");
    assert_eq!(counts(&env), (1, 1), "the engine did not start again");
    assert!(
        !env.state()
            .join("units/second")
            .join("marker.json")
            .exists()
    );
}
