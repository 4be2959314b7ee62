//! `vf orchestrate --hard-budget` (`[budget] hard = true`): once the plan's
//! total reaches the budget, running units are ended like a timeout (SIGTERM
//! to the group, SIGKILL after the grace) and are `failed` with reason
//! `budget`. And the total counts every attempt, rate-limited ones included.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::*;

const CODEX: &str = "codex/0.171.0/a_json.stdout.jsonl";

/// Units `a`, `b`, `c` (after `b`) on the codex fake (120 tokens each), two
/// at a time, each in its own dir with `fake.env` `<unit>_env` (plus the capture); `a`
/// ends only once `b` has started. `(result, exit code, seconds taken)`.
fn hard_plan(env: &Env, budget: &str, b_env: &str, extra: &[&str]) -> (Value, i32, f64) {
    std::fs::create_dir_all(env.path().join("runs")).unwrap();
    let mut plan = format!("{budget}\n");
    let deps = |u| {
        if u == "c" {
            "depends_on = [\"b\"]\n"
        } else {
            ""
        }
    };
    for (u, more) in [("a", "FAKE_BARRIER=2\n"), ("b", b_env), ("c", "")] {
        let cap = fixture(CODEX);
        env.write(
            &format!("{u}/fake.env"),
            format!("FAKE_STDOUT={}\n{more}", cap.display()),
        );
        plan.push_str(&format!(
            "[[unit]]\nname = \"{u}\"\nengine = \"codex\"\nprompt = \"task\"\ncwd = \"{u}\"\n{}\n",
            deps(u)
        ));
    }
    let plan = env.write("plan.toml", plan);
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--jobs", "2"]);
    c.args(["--json"])
        .args(extra)
        .env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_RUN_DIR", env.path().join("runs"));
    let t = Instant::now();
    let out = run_bounded(c, Duration::from_secs(60));
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let secs = t.elapsed().as_secs_f64();
    (v, out.status.code().unwrap(), secs)
}

/// `{unit: [state, reason, error]}` of every unit.
fn outcome(result: &Value) -> Value {
    let units = result["units"].as_array().cloned().unwrap_or_default();
    let each = units.iter().map(|u| {
        let row = json!([u["state"], u.get("reason"), u["error"]]);
        (u["unit"].as_str().unwrap_or("?").to_string(), row)
    });
    Value::Object(each.collect())
}

/// `b` prints its capture slowly (about 4 s, its usage last): `a` (120
/// tokens) has long ended when `b`'s usage brings the total to 240, over the
/// budget (200).
const SLOW: &str = "FAKE_DELAY=1\nFAKE_SLEEP_BEFORE=1\n";

#[test]
fn without_hard_budget_a_running_unit_finishes() {
    let env = Env::new();
    let (r, code, _) = hard_plan(&env, "", SLOW, &["--max-tokens", "200"]);
    let reached = "budget reached: 240 of 200 tokens";
    let want = json!({
        "a": ["done", null, null],
        "b": ["done", null, null],
        "c": ["notStarted", "budget", reached],
    });
    assert_eq!(outcome(&r), want, "{r}");
    assert_eq!(code, 1);
}

#[test]
fn hard_budget_ends_running_units_and_their_whole_group() {
    for (budget, flags) in [
        ("", &["--max-tokens", "200", "--hard-budget"][..]),
        ("[budget]\ntokens = 200\nhard = true", &[][..]),
    ] {
        let env = Env::new();
        // `b` ignores SIGTERM and never ends by itself: only the SIGKILL after
        // the grace ends it, once its live usage reaches the budget.
        let hang = format!("{SLOW}FAKE_MODE=ignore-term\n");
        let (r, code, secs) = hard_plan(&env, budget, &hang, flags);
        let reached = "budget reached: 240 of 200 tokens";
        let want = json!({
            "a": ["done", null, null],
            "b": ["failed", "budget", format!("{reached}; the engine was ended")],
            "c": ["notStarted", "budget", reached],
        });
        assert_eq!(outcome(&r), want, "{budget}: {r}");
        assert_eq!(code, 1);
        assert!(secs < 20.0, "b was ended, not waited for ({secs}s)");
        let m = env.marker("b");
        assert_eq!(
            (&m["state"], &m["reason"]),
            (&json!("failed"), &json!("budget"))
        );
        let pgid = m["owner"]["pgid"].as_i64().unwrap_or(0) as i32;
        assert!(pgid > 1, "{m}");
        // Killed members may linger a moment as zombies until init reaps them.
        wait_for("b's group to be gone", Duration::from_secs(5), || {
            !group_alive(pgid)
        });
    }
}

#[test]
fn hard_budget_needs_a_limit() {
    let env = Env::new();
    let (r, code, _) = hard_plan(&env, "", "", &["--hard-budget"]);
    assert_eq!((code, r), (2, Value::Null));
    assert!(env.marker_opt("a").is_none());
}

/// The 429 capture, its result frame reporting 300 input tokens (as a
/// provider that bills a rejected request would).
fn billed_429(env: &Env) -> std::path::PathBuf {
    let text = read_text(&fixture("claude/2.1.207/d_error429.stdout.jsonl"));
    let billed: Vec<String> = text
        .lines()
        .map(|l| match l.contains("\"type\":\"result\"") {
            true => l.replacen(
                "\"usage\":{\"input_tokens\":0,",
                "\"usage\":{\"input_tokens\":300,",
                1,
            ),
            false => l.to_string(),
        })
        .collect();
    assert_ne!(billed.join("\n"), text.trim_end(), "the capture changed");
    env.write("billed429.jsonl", billed.join("\n") + "\n")
}

/// Unit `u` (claude, `on_rate_limit = "wait"`): 300 tokens rate-limited,
/// then 120; `v` (codex, after `u`) would add 120 more. With `[budget]
/// tokens = budget`: the result.
fn retried_plan(budget: u64) -> Value {
    let env = Env::new();
    let sid = "6194bcf3-613b-4938-813a-96fd27dc6521";
    let ok = read_text(&fixture("claude/2.1.332/a_json_stream.stdout.jsonl"))
        .replace("5e0e0c89-f301-4ba6-8327-7b41f84dc493", sid)
        .replace("a45120f2-ed10-406b-8dbb-c2e6151c6f7f", sid);
    let ok = env.write("claude-ok.jsonl", ok);
    let limited = billed_429(&env);
    env.fake_for("claude");
    env.write(
        "bin/claude.env",
        format!(
            "FAKE_VERSION=2.1.207\nFAKE_STDOUT={}\nFAKE_RATE_LIMITED=1\nFAKE_RATE_LIMIT_COUNTER={}\nFAKE_RATE_LIMIT_STDOUT={}\n",
            ok.display(),
            env.path().join("counter").display(),
            limited.display()
        ),
    );
    let plan = env.write(
        "plan.toml",
        format!(
            "[budget]\ntokens = {budget}\n\n\
             [[unit]]\nname = \"u\"\nengine = \"claude\"\nprompt = \"t\"\non_rate_limit = \"wait\"\nmax_wait = 60\n\n\
             [[unit]]\nname = \"v\"\nengine = \"codex\"\nprompt = \"t\"\ndepends_on = [\"u\"]\n"
        ),
    );
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--json"]);
    c.env("VF_CLAUDE_BIN", env.fake_for("claude"))
        .env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_STDOUT", fixture(CODEX))
        .env("VF_TEST_RATE_LIMIT_WAIT_SCALE", "0.01");
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn the_budget_counts_every_attempt_of_a_retried_unit() {
    let tokens = |u: &Value| u["usage"]["totalTokens"].clone();
    // Only the latest attempt (120) would let v start.
    let r = retried_plan(350);
    let want = json!({
        "u": ["done", null, null],
        "v": ["notStarted", "budget", "budget reached: 420 of 350 tokens"],
    });
    assert_eq!(outcome(&r), want, "{r}");
    // The unit's own usage is its latest attempt's; the plan's is every attempt's.
    assert_eq!(
        (tokens(&r["units"][0]), tokens(&r)),
        (json!(120), json!(420))
    );
    // Reached by the rate-limited attempt alone: the retry never starts, and
    // that attempt is counted once.
    let r = retried_plan(200);
    let reached = "budget reached: 300 of 200 tokens";
    let want = json!({
        "u": ["notStarted", "budget", reached],
        "v": ["notStarted", "budget", reached],
    });
    assert_eq!(outcome(&r), want, "{r}");
    assert_eq!(
        (tokens(&r["units"][0]), tokens(&r)),
        (json!(300), json!(300))
    );
}

#[test]
fn hard_budget_ends_a_unit_whose_live_usage_reaches_it() {
    // `h` reports 120 tokens (codex's turn.completed) and then never ends:
    // only its live usage can reach the budget.
    let env = Env::new();
    env.write(
        "h/fake.env",
        format!("FAKE_STDOUT={}\nFAKE_MODE=hang\n", fixture(CODEX).display()),
    );
    let plan = env.write(
        "plan.toml",
        "[budget]\ntokens = 100\nhard = true\n\n\
         [[unit]]\nname = \"h\"\nengine = \"codex\"\nprompt = \"t\"\ncwd = \"h\"\n\n\
         [[unit]]\nname = \"next\"\nengine = \"codex\"\nprompt = \"t\"\ndepends_on = [\"h\"]\n",
    );
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--json"]);
    c.env("VF_CODEX_BIN", env.fake_for("codex"));
    let out = run_bounded(c, Duration::from_secs(30));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let reached = "budget reached: 120 of 100 tokens";
    let want = json!({
        "h": ["failed", "budget", format!("{reached}; the engine was ended")],
        "next": ["notStarted", "budget", reached],
    });
    assert_eq!(outcome(&r), want, "{r} {}", stderr(&out));
    assert_eq!(r["usage"]["totalTokens"], 120);
    assert_eq!(out.status.code(), Some(1));
}

/// Issue 25, defect 4: `--jobs 2 --max-tokens 150 --hard-budget`, units of
/// 120 tokens. `a` and `b1` report their usage live and then never end by
/// themselves: the second report brings the total to 240 and ends both. The
/// first of them to settle frees a slot while the plan's settled total is
/// still 120, but the budget was reached before that: `b2` must never start.
#[test]
fn a_unit_whose_start_comes_after_the_budget_is_reached_never_starts() {
    let env = Env::new();
    std::fs::create_dir_all(env.path().join("runs")).unwrap();
    let mut plan = String::new();
    for u in ["a", "b1", "b2"] {
        env.write(
            &format!("{u}/fake.env"),
            format!("FAKE_STDOUT={}\nFAKE_MODE=hang\n", fixture(CODEX).display()),
        );
        plan.push_str(&format!(
            "[[unit]]\nname = \"{u}\"\nengine = \"codex\"\nprompt = \"t\"\ncwd = \"{u}\"\n\n"
        ));
    }
    let plan = env.write("plan.toml", plan);
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--json"]);
    c.args(["--jobs", "2", "--max-tokens", "150", "--hard-budget"])
        .env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_RUN_DIR", env.path().join("runs"));
    let out = run_bounded(c, Duration::from_secs(60));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let reached = "budget reached: 240 of 150 tokens";
    let ended = format!("{reached}; the engine was ended");
    let want = json!({
        "a": ["failed", "budget", ended],
        "b1": ["failed", "budget", ended],
        "b2": ["notStarted", "budget", reached],
    });
    assert_eq!(outcome(&r), want, "{r} {}", stderr(&out));
    assert_eq!(out.status.code(), Some(1));
    let events = read_text(&env.path().join("runs/events.log"));
    assert!(!events.contains("start b2 "), "b2's engine ran: {events}");
    assert!(env.marker_opt("b2").is_none(), "b2 has a marker");
}
