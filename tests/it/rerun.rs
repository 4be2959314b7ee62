//! A re-run (`vf dispatch` of an existing unit that is not done) and a
//! `vf resume` of a unit whose engine has no exact resume authority: a fresh
//! session primed with the bounded replay of the unit's own earlier answers.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::process::Output;

const CAP: &str = "copilot/1.0.102/a_json.stdout.jsonl";
/// A copilot version without verified exact resume.
const UNVERIFIED: &str = "1.0.50";

/// One copilot run of `unit` on the fake: the result and the argv + stdin it got.
fn run(env: &Env, unit: &str, exit: &str, args: &[&str]) -> (Output, String) {
    run_at(env, UNVERIFIED, unit, exit, args)
}

/// [`run`] with the fake copilot reporting `version`.
fn run_at(env: &Env, version: &str, unit: &str, exit: &str, args: &[&str]) -> (Output, String) {
    let log = env.path().join(format!("{unit}.args"));
    let bin = env.fake_for("copilot");
    let mut c = env.cmd(args);
    c.args(["--engine-bin", bin.to_str().unwrap(), "--output", "json"])
        .env("FAKE_STDOUT", fixture(CAP))
        .env("FAKE_VERSION", version)
        .env("FAKE_EXIT", exit)
        .env("FAKE_ARGS_LOG", &log);
    let out = run_bounded(c, std::time::Duration::from_secs(60));
    let argv = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    (out, argv)
}

fn dispatch(env: &Env, unit: &str, exit: &str) -> (Output, String) {
    let args = [
        "dispatch", "--engine", "copilot", "--unit", unit, "--prompt", "the task",
    ];
    run(env, unit, exit, &args)
}

/// The parts of a result that say how it started, and its attempt.
fn start_of(r: &Value) -> Value {
    json!({"attempt": r["attempt"], "start": r["start"], "replay": r["replay"]})
}

fn history(env: &Env, unit: &str) -> Vec<Value> {
    let p = env.state().join(format!("units/{unit}/responses.jsonl"));
    jsonl(&std::fs::read(p).unwrap_or_default())
}

#[test]
fn a_rerun_of_a_failed_unit_is_primed_with_its_earlier_answer() {
    let env = Env::new();
    let (out, argv) = dispatch(&env, "u", "1");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let first = last_json(&out);
    // A first run starts plainly (no replay fields) and records its answer.
    let want = json!({"attempt": 1, "start": null, "replay": null});
    assert_json_eq(&start_of(&first), &want);
    assert!(!argv.contains("vf replay"), "{argv}");
    let answer = first["answer"].as_str().unwrap().to_string();
    let h = history(&env, "u");
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0]["attempt"], 1);
    assert_eq!(h[0]["bytes"], answer.len());

    let (out, argv) = dispatch(&env, "u", "0");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let truncated = usize::from(answer.len() > 2048);
    let want = json!({"attempt": 2, "start": "replay",
        "replay": {"source": 1, "replayed": 1, "truncated": truncated}});
    assert_json_eq(&start_of(&last_json(&out)), &want);
    assert!(argv.contains("NOT a continued session"), "{argv}");
    assert!(argv.contains(h[0]["sha256"].as_str().unwrap()), "{argv}");
    assert!(
        argv.contains("unit u · engine copilot · attempt 1"),
        "{argv}"
    );
    assert!(argv.contains(answer.lines().next().unwrap()), "{argv}");
    assert!(argv.contains("The task:\nthe task"), "{argv}");
    // The prompt is never recorded, only answers.
    assert_eq!(history(&env, "u").len(), 2);
    assert_nowhere_under(&env.state(), "the task");

    // A done unit is still refused, nothing replayed.
    let (out, argv) = dispatch(&env, "u", "0");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(argv.is_empty(), "{argv}");
}

#[test]
fn resume_without_exact_authority_replays_the_unit() {
    let env = Env::new();
    let (out, _) = dispatch(&env, "r", "1");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sha = history(&env, "r")[0]["sha256"]
        .as_str()
        .unwrap()
        .to_string();

    let (out, argv) = run(&env, "r", "0", &["resume", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = last_json(&out);
    let truncated = usize::from(r["answer"].as_str().unwrap().len() > 2048);
    let want = json!({"attempt": 2, "start": "replay",
        "replay": {"source": 1, "replayed": 1, "truncated": truncated}});
    assert_json_eq(&start_of(&r), &want);
    assert!(argv.contains("NOT a continued session"), "{argv}");
    assert!(argv.contains(&sha), "{argv}");
    // A fresh session: no resume flag.
    assert!(!argv.contains("--resume"), "{argv}");
    assert!(
        argv.contains("Continue the task from where you stopped"),
        "{argv}"
    );
    assert_eq!(history(&env, "r").len(), 2);
}

/// Issue 25, defect 7: a copilot unit that failed at a version with exact
/// resume, resumed once copilot left its proven versions, has no authority
/// any more (the contract's stale-authority rule): it is replayed, not refused.
#[test]
fn resume_after_the_engine_left_its_proven_version_replays_the_unit() {
    let env = Env::new();
    let args = [
        "dispatch", "--engine", "copilot", "--unit", "up", "--prompt", "the task",
    ];
    let (out, argv) = run_at(&env, "1.0.102", "up", "1", &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!argv.contains("--resume"), "{argv}");
    let marker = env.marker("up");
    assert_eq!(marker["engineVersion"], "1.0.102");
    assert!(marker["engineSessionId"].is_string(), "{marker}");
    let sha = history(&env, "up")[0]["sha256"]
        .as_str()
        .unwrap()
        .to_string();

    // Copilot upgraded: a new file (vf remembers `--version` per file).
    let bin = env.fake_for("copilot");
    std::fs::remove_file(&bin).unwrap();
    assert_eq!(env.fake_for("copilot"), bin);
    let (out, argv) = run_at(&env, "1.0.999", "up", "0", &["resume", "up"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(r["engineVersion"], "1.0.999");
    let truncated = usize::from(r["answer"].as_str().unwrap().len() > 2048);
    let want = json!({"attempt": 2, "start": "replay",
        "replay": {"source": 1, "replayed": 1, "truncated": truncated}});
    assert_json_eq(&start_of(&r), &want);
    assert!(!argv.contains("--resume"), "{argv}");
    assert!(
        argv.contains("NOT a continued session") && argv.contains(&sha),
        "{argv}"
    );
}

#[test]
fn resume_without_authority_or_history_is_refused() {
    let env = Env::new();
    // A failed run that answered nothing: nothing to replay.
    let empty = env.write("empty.jsonl", "");
    let bin = env.fake_for("copilot");
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "copilot",
        "--unit",
        "n",
        "--prompt",
        "t",
        "--output",
        "json",
        "--engine-bin",
        bin.to_str().unwrap(),
    ]);
    c.env("FAKE_STDOUT", &empty)
        .env("FAKE_VERSION", UNVERIFIED)
        .env("FAKE_EXIT", "1");
    let out = run_bounded(c, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let before = env.marker_bytes("n");
    let (out, argv) = run(&env, "n", "0", &["resume", "n"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "vf: cannot resume unit \"n\": copilot has no exact resume by session id, \
         and no earlier answer is recorded to replay"
    );
    assert!(argv.is_empty(), "{argv}");
    assert_eq!(env.marker_bytes("n"), before);
}

#[test]
fn human_output_says_the_run_was_primed_with_a_replay() {
    let env = Env::new();
    let (out, _) = dispatch(&env, "h", "1");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let mut c = env.command("copilot", "h", "again", "human", &[]);
    c.env("FAKE_STDOUT", fixture(CAP))
        .env("FAKE_VERSION", UNVERIFIED);
    let out = run_bounded(c, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("start: a fresh session with a replay of 1 of 1 earlier answers\n"),
        "{text}"
    );
}

/// A `responses.jsonl` that is a FIFO (a cloned state dir can carry one) is
/// never waited on: the re-run is refused at once, exit 5, saying what the
/// file is, and no engine starts.
#[test]
fn a_fifo_for_the_recorded_answers_is_refused_not_waited_on() {
    let env = Env::new();
    let (out, _) = dispatch(&env, "u", "1");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let p = env.state().join("units/u/responses.jsonl");
    std::fs::remove_file(&p).unwrap();
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (out, argv) = dispatch(&env, "u", "0");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("responses.jsonl") && e.contains("it is a FIFO, not a regular file"),
        "{e}"
    );
    assert!(argv.is_empty(), "an engine was started: {argv}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&p).unwrap().file_type().is_fifo());
}
