//! What a user sees of the quota governor (docs/QUOTA.md, "Seeing it"):
//! `vf quota` over each kind of ledger (empty, held, paused, corrupt, a
//! FIFO, a link), `vf quota clear` with each argument form, and the hold in
//! `vf status` and `vf report`. Each ledger is the test's own
//! (`VF_QUOTA_FILE` under its dir, as `Env::cmd` sets it).

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};

use crate::common;
use common::*;
use vf::quota::entry::rfc3339_ms;

/// Epoch ms, `secs` from now.
fn at(secs: i64) -> u64 {
    (vf::quota::now_ms() as i64 + secs * 1000) as u64
}

fn ledger(env: &Env) -> PathBuf {
    env.path().join("quota.json")
}

/// Writes the ledger with these entries.
fn write_ledger(env: &Env, entries: Value) {
    let v = json!({"version": 1, "entries": entries});
    std::fs::write(ledger(env), serde_json::to_vec(&v).unwrap()).unwrap();
}

/// claude/work refused until ten minutes from now, a unit waiting on it in
/// `state_dir`; codex at 93 % of its five-hour window.
fn held_and_warm(state_dir: &str) -> Value {
    let until = rfc3339_ms(at(600));
    json!([
        {"engine": "claude", "account": "work", "heldUntil": until, "hold": "rate-limited",
         "window": {"status": "rejected", "name": "five_hour", "resetsAt": until},
         "learnedAt": rfc3339_ms(at(-5)), "unit": "api", "source": "rate_limit_event (claude)",
         "waiting": [{"unit": "web", "stateDir": state_dir,
                      "owner": {"pid": std::process::id(), "host": "h"},
                      "since": rfc3339_ms(at(-1))}]},
        {"engine": "codex", "account": "default",
         "window": {"status": "allowed", "utilization": 93.0, "name": "five_hour",
                    "resetsAt": rfc3339_ms(at(3600))}}
    ])
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(engine/account, state)` of each entry `vf quota --json` shows.
fn states(env: &Env, extra: &[&str]) -> Vec<(String, String)> {
    let mut args = vec!["quota", "--json"];
    args.extend_from_slice(extra);
    let out = env.run(&args);
    ok(&out);
    stdout_json(&out)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let key = format!(
                "{}/{}",
                e["engine"].as_str().unwrap(),
                e["account"].as_str().unwrap()
            );
            (key, e["state"].as_str().unwrap().to_string())
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn an_empty_ledger_shows_every_account_open() {
    let env = Env::new();
    let text = ok(&env.run(&["quota"]));
    assert!(
        text.starts_with("no engine account in the quota ledger"),
        "{text}"
    );
    let out = env.run(&["quota", "--json"]);
    let v = stdout_json(&out);
    assert_eq!(v["entries"], json!([]), "{v}");
    assert_eq!(v["ledger"], ledger(&env).display().to_string());
    assert_eq!(stderr(&out), "");
}

/// A hold is `held` until its reset with its source and waiting units; a
/// window at 93 % is `open` to a process with no `pause_at`, `paused` to
/// one that pauses at 90, `open` again to one at 95.
#[test]
fn held_and_paused_accounts_show_their_state_reset_and_waiters() {
    let env = Env::new();
    write_ledger(&env, held_and_warm("/elsewhere/.vibeflow"));
    let before = std::fs::read(ledger(&env)).unwrap();
    let held = ("claude/work", "held");
    assert_eq!(states(&env, &[]), pairs(&[held, ("codex/default", "open")]));
    assert_eq!(
        states(&env, &["--pause-at", "90"]),
        pairs(&[held, ("codex/default", "paused")])
    );
    assert_eq!(
        states(&env, &["--pause-at", "95"]),
        pairs(&[held, ("codex/default", "open")])
    );
    let out = env.run(&["quota", "--json"]);
    let claude = &stdout_json(&out)["entries"][0];
    assert_eq!(claude["until"], claude["heldUntil"], "{claude}");
    assert_eq!(claude["waiting"][0]["unit"], "web");
    assert_eq!(claude["source"], "rate_limit_event (claude)");

    let text = ok(&env.run(&["quota", "--pause-at", "90"]));
    let until = claude["heldUntil"].as_str().unwrap();
    let shown_until = until[..19].replace('T', " ");
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[0].starts_with("ENGINE"), "{text}");
    let cells: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(&cells[..4], ["claude", "work", "held", "-"], "{text}");
    assert!(rows[1].contains(&shown_until), "{text}");
    assert!(
        rows[1].contains("rate_limit_event (claude), unit api"),
        "{text}"
    );
    assert!(
        rows[2]
            .trim_start()
            .starts_with("waiting: web (/elsewhere/.vibeflow)"),
        "{text}"
    );
    let cells: Vec<&str> = rows[3].split_whitespace().collect();
    assert_eq!(
        &cells[..6],
        ["codex", "default", "paused", "93", "%", "five_hour"],
        "{text}"
    );
    // Showing never changes the ledger.
    assert_eq!(std::fs::read(ledger(&env)).unwrap(), before);
    // A pause_at outside 1–100 is a usage error.
    for bad in ["0", "101", "NaN"] {
        let out = env.run(&["quota", "--pause-at", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
    }
}

/// A ledger vf cannot use is a warning on stderr; the command still
/// answers (exit 0) and leaves the file as it was.
#[test]
fn a_corrupt_fifo_or_linked_ledger_is_a_warning_and_left_alone() {
    let env = Env::new();
    std::fs::write(ledger(&env), "{not json").unwrap();
    let out = env.run(&["quota", "--json"]);
    assert_eq!(stdout_json(&out)["entries"], json!([]));
    assert!(stderr(&out).contains("cannot be used"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(ledger(&env)).unwrap(), "{not json");
    let out = env.run(&["quota", "clear"]);
    ok(&out);
    assert!(stderr(&out).contains("cannot be used"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(ledger(&env)).unwrap(), "{not json");

    let env = Env::new();
    let made = std::process::Command::new("mkfifo")
        .arg(ledger(&env))
        .status()
        .unwrap();
    assert!(made.success());
    // Bounded by `run`: a FIFO is refused before it is opened, never waited on.
    let out = env.run(&["quota"]);
    let text = ok(&out);
    assert!(text.starts_with("no engine account"), "{text}");
    assert!(stderr(&out).contains("cannot be used"), "{}", stderr(&out));
    let meta = std::fs::symlink_metadata(ledger(&env)).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));

    let env = Env::new();
    let target = env.write("elsewhere.json", "{}");
    std::os::unix::fs::symlink(&target, ledger(&env)).unwrap();
    let out = env.run(&["quota", "clear", "claude"]);
    ok(&out);
    assert!(stderr(&out).contains("cannot be used"), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(ledger(&env))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
}

/// `clear ENGINE/ACCOUNT` drops that account, `clear ENGINE` every account
/// of the engine, `clear` everything; a bad argument is exit 2 and nothing
/// is written.
#[test]
fn clear_drops_what_its_argument_names() {
    let env = Env::new();
    let mut entries = held_and_warm("/x");
    let mut other = entries[0].clone();
    other["account"] = "home".into();
    entries.as_array_mut().unwrap().push(other);
    write_ledger(&env, entries);
    let before = std::fs::read(ledger(&env)).unwrap();
    for bad in ["bogus", "claude/../x", "claude/", "/work", "claude/a b"] {
        let out = env.run(&["quota", "clear", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert_eq!(std::fs::read(ledger(&env)).unwrap(), before, "{bad}");
    }
    let out = env.run(&["quota", "clear", "claude/work", "--json"]);
    ok(&out);
    let gone = &stdout_json(&out)["cleared"];
    assert_eq!(gone.as_array().unwrap().len(), 1, "{gone}");
    assert_eq!(
        (&gone[0]["engine"], &gone[0]["account"]),
        (&json!("claude"), &json!("work"))
    );
    assert_eq!(
        states(&env, &[]),
        pairs(&[("claude/home", "held"), ("codex/default", "open")])
    );
    let text = ok(&env.run(&["quota", "clear", "claude/work"]));
    assert_eq!(text, "nothing to drop: no such entry in the quota ledger\n");
    let text = ok(&env.run(&["quota", "clear", "claude"]));
    assert!(
        text.starts_with("dropped claude/home (rate-limited until "),
        "{text}"
    );
    assert_eq!(states(&env, &[]), pairs(&[("codex/default", "open")]));
    let text = ok(&env.run(&["quota", "clear"]));
    assert_eq!(text, "dropped codex/default\n");
    assert_eq!(states(&env, &[]), vec![]);
}

/// A unit rate-limited with a known reset: `vf status` shows the hold the
/// ledger keeps on its account (`--json`: `heldBy`), the report a held span
/// to its `retryAt` and a Quota section; cleared, the hold is gone from both.
#[test]
fn status_and_report_show_the_hold_of_a_rate_limited_unit() {
    let env = Env::new();
    let cap = "claude/2.1.207/d_error429.stdout.jsonl";
    let mut lines: Vec<String> = read_text(&fixture(cap))
        .lines()
        .map(str::to_string)
        .collect();
    let reset = at(600) / 1000;
    let event = format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{reset},"rateLimitType":"five_hour"}},"session_id":"6194bcf3-613b-4938-813a-96fd27dc6521"}}"#
    );
    lines.insert(1, event);
    let derived = env.write("claude-429.jsonl", lines.join("\n") + "\n");
    let envs = [
        ("FAKE_STDOUT", derived.display().to_string()),
        ("FAKE_VERSION", "2.1.207".into()),
        ("FAKE_EXIT", "1".into()),
    ];
    let out = env.dispatch("claude", "api", &envs, &[]);
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    let until = rfc3339_ms(reset * 1000);
    let short = format!("quota: claude/default until {}", &until[11..19]);

    let text = ok(&env.run(&["status"]));
    assert!(text.contains(&short), "{text}");
    let v = stdout_json(&env.run(&["status", "--json"]));
    let held = &v[0]["heldBy"];
    assert_eq!(
        (&held["engine"], &held["account"]),
        (&json!("claude"), &json!("default"))
    );
    assert_eq!(
        (&held["until"], &held["kind"]),
        (&json!(until), &json!("rate-limited"))
    );

    let r = stdout_json(&env.run(&["report", "--json"]));
    let bar = r["bars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["outcome"] == "held");
    let bar = bar.unwrap_or_else(|| panic!("no held bar: {}", r["bars"]));
    assert_eq!(bar["endMs"], json!(reset * 1000), "{bar}");
    assert_eq!(
        bar["reason"],
        format!("claude/default until {} UTC", &until[11..19])
    );
    assert_eq!(r["quota"][0]["state"], "held", "{}", r["quota"]);
    assert_eq!(r["quota"][0]["until"], json!(until));
    let page = env.path().join("r.html");
    ok(&env.run(&["report", "-o", page.to_str().unwrap()]));
    let html = read_text(&page);
    assert!(
        html.contains("<section id=\"quota\"><h2>Quota</h2>"),
        "no quota section"
    );
    assert!(html.contains("class=\"bar o-held\""), "no held bar");

    ok(&env.run(&["quota", "clear", "claude/default"]));
    let text = ok(&env.run(&["status"]));
    assert!(!text.contains("quota:"), "{text}");
    let v = stdout_json(&env.run(&["status", "--json"]));
    assert_eq!(v[0].get("heldBy"), None, "{}", v[0]);
    let r = stdout_json(&env.run(&["report", "--json"]));
    assert_eq!(r["quota"], json!([]));
}

/// Units a running plan holds on the governor (the ledger's waiting list,
/// this state dir): `waiting` in `vf status`, a unit with a marker and one
/// without; another state dir's waiter is not this one's.
#[test]
fn status_shows_the_units_a_plan_holds_as_waiting() {
    let env = Env::new();
    std::fs::create_dir_all(env.state()).unwrap();
    let mut entries = held_and_warm(&env.state().display().to_string());
    entries[0]["waiting"].as_array_mut().unwrap().push(
        json!({"unit": "far", "stateDir": "/elsewhere", "owner": {"pid": 1, "host": "h"},
                     "since": rfc3339_ms(at(-1))}),
    );
    write_ledger(&env, entries);
    let until = rfc3339_ms(at(600));
    let text = ok(&env.run(&["status"]));
    let web = text
        .lines()
        .find(|l| l.starts_with("web "))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = web.split_whitespace().collect();
    assert_eq!(&cells[..3], ["web", "waiting", "claude"], "{text}");
    assert!(web.contains("quota: claude/work until "), "{web}");
    assert!(!text.contains("far"), "{text}");
    let v = stdout_json(&env.run(&["status", "--json"]));
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["state"], "waiting");
    assert_eq!(v[0]["heldBy"]["until"].as_str().unwrap()[..19], until[..19]);
    // Its hold dropped, it no longer shows as held.
    ok(&env.run(&["quota", "clear"]));
    let text = ok(&env.run(&["status"]));
    assert!(text.starts_with("no units under"), "{text}");
}

/// Showing the ledger creates nothing: with no ledger file, `vf quota`,
/// `vf status` and `vf report` leave its directory as it was.
#[test]
fn showing_a_ledger_that_does_not_exist_creates_nothing() {
    let env = Env::new();
    let dir = env.path().join("data");
    let file = dir.join("vf").join("quota.json");
    std::fs::create_dir_all(env.state()).unwrap();
    for args in [&["quota"][..], &["status"], &["report", "--json"]] {
        let out = env.cmd(args).env("VF_QUOTA_FILE", &file).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
        assert!(!dir.exists(), "{args:?} created {}", dir.display());
    }
}
