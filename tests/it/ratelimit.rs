//! A provider's rate limit as its own outcome: state `failed`, reason
//! `rate-limited`, exit 75, read from each engine's genuine behaviour, and
//! never confused with a 500 or a failure inside the stream.

use serde_json::Value;

use crate::common;
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
    for dir in ["claude/2.1.207", "codex/0.144.1", "gemini/0.47.0"] {
        let engine = dir.split('/').next().unwrap();
        let got: Vec<(Value, i32)> = ["d_error429", "d_error500", "d_stream_error"]
            .iter()
            .map(|case| {
                let cap = format!("{dir}/{case}.stdout.jsonl");
                // Each case its own quota ledger: a 429 holds the engine
                // for the shared back-off (tests/it/quota_fleet.rs).
                let env = Env::new();
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

// ---- on_rate_limit in plans ---------------------------------------------

/// claude's genuine 429 run, and its success under the same session id (a
/// resume of it), for a fake that is rate-limited N times.
const LIMITED: &str = "claude/2.1.207/d_error429.stdout.jsonl";
const LIMITED_SID: &str = "6194bcf3-613b-4938-813a-96fd27dc6521";

/// A plan dir: fakes as claude and codex, claude rate-limited `times` times
/// (counted per plan), each unit's cwd its own dir.
fn plan_env(times: u32) -> Env {
    let env = Env::new();
    std::fs::create_dir_all(env.path().join("runs")).unwrap();
    let ok = read_text(&fixture("claude/2.1.332/a_json_stream.stdout.jsonl"))
        .replace("5e0e0c89-f301-4ba6-8327-7b41f84dc493", LIMITED_SID)
        .replace("a45120f2-ed10-406b-8dbb-c2e6151c6f7f", LIMITED_SID);
    let ok = env.write("claude-ok.jsonl", ok);
    env.fake_for("codex");
    env.fake_for("claude");
    let counter = env.path().join("counter");
    env.write(
        "bin/claude.env",
        format!(
            "FAKE_VERSION=2.1.207\nFAKE_STDOUT={}\nFAKE_RATE_LIMITED={times}\nFAKE_RATE_LIMIT_COUNTER={}\nFAKE_RATE_LIMIT_STDOUT={}\n",
            ok.display(),
            counter.display(),
            fixture(LIMITED).display()
        ),
    );
    env.write(
        "bin/codex.env",
        format!(
            "FAKE_STDOUT={}\n",
            fixture("codex/0.171.0/a_json.stdout.jsonl").display()
        ),
    );
    env
}

/// `vf orchestrate plan.toml --output jsonl EXTRA` with the fakes as engines.
fn orchestrate(env: &Env, extra: &[&str]) -> std::process::Command {
    let plan = env.path().join("plan.toml");
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--output", "jsonl"]);
    c.args(extra).env("FAKE_RUN_DIR", env.path().join("runs"));
    for e in ["codex", "claude"] {
        c.env(format!("VF_{}_BIN", e.to_uppercase()), env.fake_for(e));
    }
    c
}

fn run_plan(env: &Env, unit_keys: &str) -> (Value, i32) {
    std::fs::create_dir_all(env.path().join("u")).unwrap();
    let plan = format!(
        "[[unit]]\nname = \"u\"\nengine = \"claude\"\nprompt = \"the task\"\ncwd = \"u\"\n{unit_keys}\n"
    );
    env.write("plan.toml", plan);
    let mut c = orchestrate(env, &[]);
    c.env("VF_TEST_RATE_LIMIT_WAIT_SCALE", "0.01");
    let out = run_bounded(c, std::time::Duration::from_secs(60));
    let lines = jsonl(&out.stdout);
    let waiting = lines.iter().filter(|l| l["state"] == "waiting").count();
    let result = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(result["kind"], "orchestrate.result", "{}", stderr(&out));
    assert_eq!(
        waiting,
        result["units"][0]["attempts"]
            .as_array()
            .map_or(0, |a| a.len().saturating_sub(1)),
        "one waiting event per retry"
    );
    (result["units"][0].clone(), out.status.code().unwrap())
}

/// `(engine, reason, sessionId)` of each attempt.
fn attempts(unit: &Value) -> Vec<(String, Value, Value)> {
    unit["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["engine"].as_str().unwrap().to_string(),
                a["reason"].clone(),
                a["sessionId"].clone(),
            )
        })
        .collect()
}

/// The argv of every run of the fake, in order.
fn argvs(env: &Env) -> Vec<String> {
    let mut runs: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(env.path().join("runs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".args"))
        .map(|e| {
            (
                e.metadata().unwrap().modified().unwrap(),
                read_text(&e.path()),
            )
        })
        .collect();
    runs.sort();
    runs.into_iter().map(|(_, a)| a).collect()
}

#[test]
fn wait_resumes_the_same_session_until_it_succeeds() {
    let env = plan_env(2);
    let (u, code) = run_plan(&env, "on_rate_limit = \"wait\"\nmax_wait = 60");
    assert_eq!(code, 0, "{u}");
    assert_eq!(
        (u["state"].clone(), u["engine"].clone()),
        ("done".into(), "claude".into())
    );
    let limited = (
        "claude".to_string(),
        Value::from("rate-limited"),
        Value::from(LIMITED_SID),
    );
    let done = ("claude".to_string(), Value::Null, Value::from(LIMITED_SID));
    assert_eq!(attempts(&u), [limited.clone(), limited, done]);
    // The retries resume the exact session the rate-limited run started.
    let args = argvs(&env);
    assert_eq!(args.len(), 3, "{args:?}");
    assert!(!args[0].contains(LIMITED_SID), "{}", args[0]);
    for a in &args[1..] {
        assert!(a.contains(&format!("-r\n{LIMITED_SID}\n")), "{a}");
    }
    assert_eq!(env.marker("u")["engineAttempts"], u["attempts"]);
}

#[test]
fn wait_gives_up_after_max_wait() {
    let env = plan_env(50);
    // Backoff waits 1 s then 2 s (±20 %): the second would pass max_wait.
    let (u, code) = run_plan(&env, "on_rate_limit = \"wait\"\nmax_wait = 2.5");
    // Only a rate limit kept the plan from finishing: EX_TEMPFAIL, retry later.
    assert_eq!(code, 75, "{u}");
    assert_eq!(u["state"], "failed");
    let reasons: Vec<Value> = attempts(&u).into_iter().map(|a| a.1).collect();
    assert_eq!(reasons, vec![Value::from("rate-limited"); 2]);
    assert_eq!(env.marker("u")["reason"], "rate-limited");
}

/// A plan whose only failure is a rate limit exits 75 (`EX_TEMPFAIL`), its
/// dependents blocked behind it included; any other failure makes it 1.
#[test]
fn a_plan_stopped_only_by_rate_limits_exits_75() {
    let env = plan_env(50);
    for d in ["u", "v", "w"] {
        std::fs::create_dir_all(env.path().join(d)).unwrap();
    }
    env.write("w/fake.env", "FAKE_STDOUT=/dev/null\nFAKE_EXIT=1\n");
    let unit = |name: &str, engine: &str, more: &str| {
        format!(
            "[[unit]]\nname = \"{name}\"\nengine = \"{engine}\"\nprompt = \"t\"\ncwd = \"{name}\"\n{more}\n"
        )
    };
    let limited = unit("u", "claude", "") + &unit("v", "codex", "depends_on = [\"u\"]");
    let states = |out: &std::process::Output| -> Vec<(Value, Value)> {
        let result = jsonl(&out.stdout).pop().unwrap_or(Value::Null);
        let units = result["units"].as_array().cloned().unwrap_or_default();
        units
            .iter()
            .map(|u| (u["state"].clone(), u["reason"].clone()))
            .collect()
    };
    env.write("plan.toml", &limited);
    let out = run_bounded(orchestrate(&env, &[]), std::time::Duration::from_secs(60));
    assert_eq!(
        states(&out),
        [
            ("failed".into(), "rate-limited".into()),
            ("blocked".into(), "dependency".into())
        ]
    );
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    // Another unit failing for another reason: the plan failed.
    std::fs::remove_dir_all(env.state()).unwrap();
    env.write("plan.toml", limited + &unit("w", "codex", ""));
    let out = run_bounded(orchestrate(&env, &[]), std::time::Duration::from_secs(60));
    assert_eq!(states(&out)[2], ("failed".into(), "engine".into()));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn fallback_starts_fresh_on_the_next_engine() {
    let env = plan_env(50);
    let (u, code) = run_plan(&env, "on_rate_limit = \"fallback\"\nfallback = [\"codex\"]");
    assert_eq!(code, 0, "{u}");
    assert_eq!(
        (u["state"].clone(), u["engine"].clone()),
        ("done".into(), "codex".into())
    );
    let codex_sid = capture_session_id("codex/0.171.0/a_json.stdout.jsonl");
    assert_eq!(
        attempts(&u),
        [
            (
                "claude".to_string(),
                "rate-limited".into(),
                LIMITED_SID.into()
            ),
            ("codex".to_string(), Value::Null, codex_sid.into()),
        ]
    );
    // Fresh on codex: no claude session carried over, the task itself sent.
    let args = argvs(&env);
    assert_eq!(args.len(), 2, "{args:?}");
    assert!(
        !args[1].contains(LIMITED_SID) && args[1].contains("the task"),
        "{}",
        args[1]
    );
    assert_eq!(env.marker("u")["engine"], "codex");
}

#[test]
fn plan_keys_are_validated() {
    let env = plan_env(0);
    std::fs::create_dir_all(env.path().join("u")).unwrap();
    for (keys, why) in [
        ("on_rate_limit = \"fallback\"", "needs a `fallback` list"),
        ("on_rate_limit = \"soon\"", "unknown variant"),
        ("fallback = [\"codex\"]", "only used with"),
        (
            "on_rate_limit = \"wait\"\nmax_wait = -1",
            "`max_wait` must be",
        ),
    ] {
        let plan = env.write(
            "plan.toml",
            format!(
                "[[unit]]\nname = \"u\"\nengine = \"claude\"\nprompt = \"x\"\ncwd = \"u\"\n{keys}\n"
            ),
        );
        let out = env.run(&["orchestrate", plan.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{keys}");
        assert!(stderr(&out).contains(why), "{keys}: {}", stderr(&out));
    }
}

/// SIGINT while a unit waits for its reset ends the plan at once; `--resume`
/// continues the unit on its session.
#[test]
fn sigint_during_a_wait_ends_the_plan_and_resume_continues_it() {
    use std::io::{BufRead, BufReader};
    let env = plan_env(1);
    // A reset ten minutes away, as claude's rate_limit_event names it.
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let mut lines: Vec<String> = read_text(&fixture(LIMITED))
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(1, format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{reset}}},"session_id":"{LIMITED_SID}"}}"#
    ));
    let limited = env.write("limited.jsonl", lines.join("\n") + "\n");
    let conf = read_text(&env.path().join("bin/claude.env"));
    let conf = conf.replace(
        &fixture(LIMITED).display().to_string(),
        &limited.display().to_string(),
    );
    env.write("bin/claude.env", conf);
    std::fs::create_dir_all(env.path().join("u")).unwrap();
    env.write(
        "plan.toml",
        "[[unit]]\nname = \"u\"\nengine = \"claude\"\nprompt = \"the task\"\ncwd = \"u\"\non_rate_limit = \"wait\"\nmax_wait = 3600\n",
    );
    // Waits scaled: the ten minutes are six seconds, for this run and the resume.
    let mut child = orchestrate(&env, &[])
        .env("VF_TEST_RATE_LIMIT_WAIT_SCALE", "0.01")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    for line in out.lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["state"] == "waiting" {
            seen.push(v);
            break;
        }
    }
    let want_until = vf::ground::fsutil::rfc3339(reset, 0)[11..19].to_string();
    assert_eq!(
        seen[0]["error"],
        format!("rate-limited: waiting until {want_until}")
    );
    let started = std::time::Instant::now();
    signal(child.id() as i32, libc::SIGINT);
    assert_eq!(wait_exit(&mut child).code(), Some(130));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        env.marker("u")["retryAt"],
        vf::ground::fsutil::rfc3339(reset, 0)
    );

    // The hold outlived its process: the resume waits for the reset.
    let mut resume = orchestrate(&env, &["--resume"]);
    resume.env("VF_TEST_RATE_LIMIT_WAIT_SCALE", "0.01");
    let out = run_bounded(resume, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = jsonl(&out.stdout).pop().unwrap();
    let u = &result["units"][0];
    assert_eq!(
        (u["state"].clone(), u["start"].clone()),
        ("done".into(), "exactResume".into()),
        "{u}"
    );
    assert_eq!(u["sessionId"], LIMITED_SID);
}
