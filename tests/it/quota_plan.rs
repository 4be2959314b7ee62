//! The quota governor inside a plan (docs/QUOTA.md, "In a plan"): a unit at
//! the wall rotates to another open account of its engine (and a later one
//! goes back once the first is open again), `pause_at` holds the next start
//! before the wall, and after a hold the starts go one per `stagger`, the
//! rest staying held when the first meets the wall again.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::common::*;

const SID: &str = "6194bcf3-613b-4938-813a-96fd27dc6521";

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// claude's genuine run, ending in success or at the wall, with a
/// `rate_limit_event` (`status`, `utilization`, a reset `reset_in` s away).
fn stdout(env: &Env, name: &str, limited: bool, event: Option<(&str, f64, u64)>) -> PathBuf {
    let cap = match limited {
        true => "claude/2.1.207/d_error429.stdout.jsonl",
        false => "claude/2.1.332/a_json_stream.stdout.jsonl",
    };
    let text = read_text(&fixture(cap))
        .replace("5e0e0c89-f301-4ba6-8327-7b41f84dc493", SID)
        .replace("a45120f2-ed10-406b-8dbb-c2e6151c6f7f", SID);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some((status, utilization, reset_in)) = event {
        lines.insert(1, format!(
            r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"{status}","utilization":{utilization},"resetsAt":{},"rateLimitType":"five_hour"}},"session_id":"{SID}"}}"#,
            now_s() + reset_in
        ));
    }
    env.write(name, lines.join("\n") + "\n")
}

/// A fake claude whose settings are `script` (shell, sourced per run); every
/// start logs `<ms> <CLAUDE_CONFIG_DIR>` to `starts.log`.
fn fake(env: &Env, script: &str) {
    env.fake_for("claude");
    let log = env.path().join("starts.log");
    env.write(
        "bin/claude.env",
        format!(
            "FAKE_VERSION=2.1.332\n{script}\n[ \"${{1:-}}\" != --version ] && echo \"$(date +%s%3N) ${{CLAUDE_CONFIG_DIR:-none}}\" >> {}\n",
            log.display()
        ),
    );
}

/// `(ms, config dir)` of each start, in order.
fn starts(env: &Env) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(env.path().join("starts.log")).unwrap_or_default();
    let mut v: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(t, d)| (t.parse().unwrap(), d.to_string()))
        .collect();
    v.sort();
    v
}

/// A plan of units `names` run in order (each depends on the one before).
fn plan(env: &Env, names: &[&str], defaults: &str, keys: &str) {
    let mut text = format!("[defaults]\n{defaults}\n");
    let mut before: Option<&str> = None;
    for n in names {
        std::fs::create_dir_all(env.path().join(n)).unwrap();
        text.push_str(&format!(
            "[[unit]]\nname = \"{n}\"\nengine = \"claude\"\nprompt = \"task {n}\"\ncwd = \"{n}\"\n{keys}\n"
        ));
        if let Some(b) = before {
            text.push_str(&format!("depends_on = [\"{b}\"]\n"));
        }
        before = Some(n);
    }
    env.write("plan.toml", text);
}

fn orchestrate(env: &Env, config: Option<&Path>) -> (Vec<Value>, i32) {
    let plan = env.path().join("plan.toml");
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--output", "jsonl"]);
    c.env("VF_CLAUDE_BIN", env.fake_for("claude"))
        .env("VF_TEST_RATE_LIMIT_WAIT_SCALE", "0.01");
    if let Some(cfg) = config {
        c.env("VF_CONFIG", cfg);
    }
    let out = run_bounded(c, Duration::from_secs(60));
    (jsonl(&out.stdout), out.status.code().unwrap_or(-1))
}

fn unit<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    let result = lines.last().unwrap();
    let units = result["units"].as_array().unwrap();
    units.iter().find(|u| u["unit"] == name).unwrap()
}

const ACCOUNTS: &str = r#"
[[accounts]]
name = "a"
engine = "claude"
env = { CLAUDE_CONFIG_DIR = "/cfg/acct-a" }

[[accounts]]
name = "b"
engine = "claude"
env = { CLAUDE_CONFIG_DIR = "/cfg/acct-b" }
"#;

#[test]
fn a_unit_at_the_wall_moves_to_the_next_open_account_and_a_later_one_goes_back() {
    let env = Env::new();
    let ok = stdout(&env, "ok.jsonl", false, None);
    let limited = stdout(&env, "limited.jsonl", true, Some(("rejected", 1.0, 150)));
    // Account a is at its wall for its first run only.
    fake(
        &env,
        &format!(
            "FAKE_STDOUT={}\nif [ \"${{CLAUDE_CONFIG_DIR:-}}\" = /cfg/acct-a ] && [ ! -e {dir}/a-limited ]; then : > {dir}/a-limited; FAKE_STDOUT={}; FAKE_EXIT=1; fi",
            ok.display(),
            limited.display(),
            dir = env.path().display()
        ),
    );
    let cfg = env.write("config.toml", ACCOUNTS);
    plan(&env, &["u1", "u2"], "", "");
    let (lines, code) = orchestrate(&env, Some(&cfg));
    assert_eq!(code, 0, "{lines:?}");
    let u1 = unit(&lines, "u1");
    // Its session belongs to a: on b it starts a new one (primed with its
    // recorded answers; the run at the wall left none).
    assert_eq!(
        (
            u1["account"].clone(),
            u1["rotatedFrom"].clone(),
            u1["start"].clone()
        ),
        ("b".into(), serde_json::json!(["a"]), "fresh".into()),
        "{u1}"
    );
    // u2 starts while a is held: b. Its marker and result say so.
    assert_eq!(unit(&lines, "u2")["account"], "b");
    assert_eq!(env.marker("u1")["account"], "b");
    let dirs: Vec<String> = starts(&env).into_iter().map(|(_, d)| d).collect();
    assert_eq!(dirs, ["/cfg/acct-a", "/cfg/acct-b", "/cfg/acct-b"]);
    // Once a's hold is over, a new unit goes back to a, the first declared.
    let ledger = env.path().join("quota.json");
    let until = |l: &Path| {
        let v: Value = serde_json::from_str(&read_text(l)).unwrap();
        let e = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["account"] == "a")
            .cloned();
        e.and_then(|e| e["heldUntil"].as_str().map(str::to_string))
    };
    let held = until(&ledger).expect("a is held");
    let end = vf::ground::fsutil::parse_rfc3339(&held).unwrap() + 1;
    while now_s() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    plan(&env, &["u3"], "", "");
    let (lines, code) = orchestrate(&env, Some(&cfg));
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(unit(&lines, "u3")["account"], "a");
}

#[test]
fn pause_at_holds_the_next_start_until_the_window_resets() {
    for (pause_at, held) in [("", false), ("pause_at = 90", true)] {
        let env = Env::new();
        let warned = stdout(&env, "warned.jsonl", false, Some(("allowed", 0.95, 150)));
        fake(&env, &format!("FAKE_STDOUT={}", warned.display()));
        plan(&env, &["u1", "u2"], pause_at, "");
        let (lines, code) = orchestrate(&env, None);
        assert_eq!(code, 0, "{lines:?}");
        let holds: Vec<&Value> = lines.iter().filter(|l| !l["heldBy"].is_null()).collect();
        assert_eq!(!holds.is_empty(), held, "{pause_at}: {holds:?}");
        let s = starts(&env);
        assert_eq!(s.len(), 2);
        if held {
            let h = &holds[0]["heldBy"];
            assert_eq!(
                (h["unit"].clone(), h["kind"].clone()),
                ("u1".into(), "paused".into()),
                "{h}"
            );
            assert_eq!(
                (h["utilization"].as_f64(), h["window"].clone()),
                (Some(95.0), "five_hour".into())
            );
            // The window's 150 s are 1.5 s here: u2 waited most of them.
            assert!(s[1].0 - s[0].0 >= 1_000, "{s:?}");
        }
    }
}

#[test]
fn after_a_hold_one_start_per_stagger_and_a_new_wall_holds_the_rest() {
    let env = Env::new();
    let ok = stdout(&env, "ok.jsonl", false, None);
    let limited = stdout(&env, "limited.jsonl", true, Some(("rejected", 1.0, 150)));
    // The first run after the hold meets the wall again; every other runs
    // long enough that the release is still on when the next may start.
    fake(
        &env,
        &format!(
            "FAKE_STDOUT={}\nFAKE_DELAY=0.4\nif [ \"${{1:-}}\" != --version ] && [ ! -e {dir}/limited-once ]; then : > {dir}/limited-once; FAKE_STDOUT={}; FAKE_EXIT=1; FAKE_DELAY=0; fi",
            ok.display(),
            limited.display(),
            dir = env.path().display()
        ),
    );
    // claude/default is held for the next 0.5 s, as if another vf had met the wall.
    let ms = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 500;
    let until = vf::ground::fsutil::rfc3339(ms / 1000, (ms % 1000) as u32);
    env.write("quota.json", format!(
        r#"{{"version": 1, "entries": [{{"engine": "claude", "account": "default", "heldUntil": "{until}", "hold": "rate-limited"}}]}}"#
    ));
    let mut text = String::from("[defaults]\nstagger = 50\non_rate_limit = \"wait\"\n");
    for n in ["u1", "u2", "u3"] {
        std::fs::create_dir_all(env.path().join(n)).unwrap();
        text.push_str(&format!(
            "[[unit]]\nname = \"{n}\"\nengine = \"claude\"\nprompt = \"t\"\ncwd = \"{n}\"\n"
        ));
    }
    env.write("plan.toml", text);
    let (lines, code) = orchestrate(&env, None);
    assert_eq!(code, 0, "{lines:?}");
    let s: Vec<u64> = starts(&env).into_iter().map(|(t, _)| t).collect();
    assert_eq!(s.len(), 4, "three units, one of them twice: {s:?}");
    assert!(s[0] >= ms, "a start {} ms before the hold's end", ms - s[0]);
    // The first met the wall (150 s, scaled 1.5 s): nothing started for most of it.
    assert!(s[1] - s[0] >= 1_200, "{s:?}");
    // Then one start per stagger (50 s, scaled 0.5 s) while none has finished.
    assert!(s[2] - s[1] >= 450 && s[3] - s[2] >= 450, "{s:?}");
}
