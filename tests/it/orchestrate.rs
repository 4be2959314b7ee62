//! Integration tests of `vf orchestrate` (plans, DAG, --jobs, --resume, the
//! crash loop) and of the orphan finder, against the fake engine.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::*;

#[path = "orchestrate/crash.rs"]
mod crash;
#[path = "orchestrate/lifeline.rs"]
mod lifeline;

const CODEX: &str = "codex/0.171.0/b_tool.stdout.jsonl";
const CLAUDE: &str = "claude/2.1.332/b_tool.stdout.jsonl";
const COPILOT: &str = "copilot/1.0.102/a_json.stdout.jsonl";
const CODEX_FAIL: &str = "codex/0.171.0/d_error500.stdout.jsonl";

/// A plan's work dir: an [`Env`] with copies of the fake as codex, claude and
/// copilot, each unit's settings in `<unit>/fake.env`, and the fake's run log.
struct PlanEnv {
    env: Env,
}

impl std::ops::Deref for PlanEnv {
    type Target = Env;
    fn deref(&self) -> &Env {
        &self.env
    }
}

impl PlanEnv {
    fn new() -> PlanEnv {
        let env = Env::new();
        std::fs::create_dir_all(env.path().join("runs")).unwrap();
        for e in ["codex", "claude", "copilot"] {
            env.fake_for(e);
        }
        // Copilot at an unverified version: no exact resume, so it gets a replay.
        env.write("bin/copilot.env", "FAKE_VERSION=1.0.50\n");
        env.write("bin/claude.env", "FAKE_VERSION=2.1.332\n");
        PlanEnv { env }
    }
    fn runs(&self) -> PathBuf {
        self.path().join("runs")
    }
    /// A unit's working directory, with the fake's per-unit settings.
    fn unit_dir(&self, name: &str, capture: &str, delay: &str, extra: &str) {
        self.write(
            &format!("{name}/fake.env"),
            format!(
                "FAKE_STDOUT={}\nFAKE_DELAY={delay}\nFAKE_SLEEP_BEFORE=1\n{extra}\n",
                fixture(capture).display()
            ),
        );
    }
    fn plan(&self, text: &str) -> PathBuf {
        self.write("plan.toml", text)
    }
    /// `vf orchestrate plan.toml --state-dir <state> EXTRA`, the fakes as engines.
    fn orchestrate(&self, extra: &[&str]) -> Command {
        let plan = self.path().join("plan.toml");
        let state = self.state();
        let mut c = self.cmd(&["orchestrate", plan.to_str().unwrap(), "--state-dir"]);
        c.arg(state).args(extra).env("FAKE_RUN_DIR", self.runs());
        for e in ["codex", "claude", "copilot"] {
            c.env(format!("VF_{}_BIN", e.to_uppercase()), self.fake_for(e));
        }
        c
    }
    fn run_plan(&self, extra: &[&str]) -> Output {
        run_bounded(self.orchestrate(extra), Duration::from_secs(90))
    }
    /// `(kind, unit, pid, exit)` lines written by the fake, in order.
    fn events(&self) -> Vec<(String, String, String, Option<i32>)> {
        let text = std::fs::read_to_string(self.runs().join("events.log")).unwrap_or_default();
        text.lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].to_string(),
                    f[1].to_string(),
                    f[2].to_string(),
                    f.get(3).and_then(|x| x.parse().ok()),
                )
            })
            .collect()
    }
    fn args_of(&self, unit: &str, pid: &str) -> String {
        std::fs::read_to_string(self.runs().join(format!("{unit}.{pid}.args"))).unwrap_or_default()
    }
}

/// The plan's result: the last line, an `orchestrate.result`, with every
/// `usage` (null or a usage object) written `<usage>`: the figures are
/// pinned by tests/it/usage.rs and tests/it/ratelimit.rs.
fn final_json(out: &Output) -> Value {
    let mut v = last_json(out);
    assert_eq!(v["kind"], "orchestrate.result", "{v}");
    let placeholder = |u: &mut Value| {
        let mut want = Value::Null;
        used(&mut want, u);
        u["usage"] = "<usage>".into();
    };
    v["units"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .for_each(placeholder);
    placeholder(&mut v);
    v
}

/// A unit's entry in the plan's result after it ran (attempt 1, no error,
/// no summary: the caller sets what differs).
fn ran(unit: &str, engine: &str, state: &str, start: &str, session: impl Into<Value>) -> Value {
    json!({
        "unit": unit,
        "engine": engine,
        "state": state,
        "ran": true,
        "start": start,
        "attempt": 1,
        "sessionId": session.into(),
        "replay": null,
        "summary": null,
        "error": null,
        "durationMs": "<ms>",
        "usage": "<usage>",
    })
}

/// A unit's entry in the plan's result when it never ran, and why.
fn not_run(unit: &str, engine: &str, state: &str, why: impl Into<Value>) -> Value {
    json!({
        "unit": unit,
        "engine": engine,
        "state": state,
        "ran": false,
        "start": null,
        "attempt": null,
        "sessionId": null,
        "replay": null,
        "summary": null,
        "error": why.into(),
        "durationMs": null,
        "usage": "<usage>",
    })
}

/// `r` done with the summary every capture used here ends with.
fn done(mut r: Value) -> Value {
    r["summary"] = json!({"confidence": 0.9, "files_changed": []});
    r
}

/// The plan's whole result.
fn plan_result(ok: bool, units: Vec<Value>) -> Value {
    json!({"kind": "orchestrate.result", "ok": ok, "plan": "<tmp>/plan.toml", "units": units, "usage": "<usage>"})
}

fn blocked(unit: &str, engine: &str, why: &str) -> Value {
    let mut v = not_run(unit, engine, "blocked", why);
    v["reason"] = "dependency".into();
    v
}

/// The marker of a unit blocked by a dependency: it never started.
fn blocked_marker(unit: &str, engine: &str, why: &str) -> Value {
    let mut m = unstarted_marker(unit, engine, &format!("<tmp>/{unit}"));
    m["state"] = "blocked".into();
    m["reason"] = "dependency".into();
    m["attempts"] = 0.into();
    m["error"] = why.into();
    m
}

/// The marker of a plan's unit that ran once on codex and ended `state`.
fn ran_marker(unit: &str, state: &str, exit_code: i64, capture: &str) -> Value {
    let id = capture_session_id(capture).into();
    let mut m = finished_marker(&finished_result("codex", unit, 1, state, exit_code, &id), 1);
    m["cwd"] = format!("<tmp>/{unit}").into();
    m
}

/// A unit's entry after a done exact resume of its codex session (attempt 2).
fn resumed(unit: &str) -> Value {
    let mut r = done(ran(
        unit,
        "codex",
        "done",
        "exactResume",
        capture_session_id(CODEX),
    ));
    r["attempt"] = 2.into();
    r
}

fn unit_toml(name: &str, engine: &str, deps: &[&str]) -> String {
    let deps: Vec<String> = deps.iter().map(|d| format!("{d:?}")).collect();
    format!(
        "[[unit]]\nname = {name:?}\nengine = {engine:?}\nprompt = \"task {name}\"\ncwd = {name:?}\ndepends_on = [{}]\n\n",
        deps.join(", ")
    )
}

#[test]
fn plan_validation_errors_start_nothing() {
    let env = PlanEnv::new();
    for u in ["a", "b", "c"] {
        env.unit_dir(u, CODEX, "0", "");
    }
    let ok = "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"x\"\ncwd = \"a\"\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("{ok}colour = \"red\"\n"), "unknown field `colour`"),
        (
            "[[unit]]\nname = \"a\"\nengine = \"codex\"\n".into(),
            "no `prompt` or `prompt_file`",
        ),
        (
            format!("{ok}prompt_file = \"p.md\"\n"),
            "both `prompt` and `prompt_file`",
        ),
        (
            "[[unit]]\nname = \"a\"\nengine = \"gpt5\"\nprompt = \"x\"\n".into(),
            "unknown engine \"gpt5\"",
        ),
        (
            format!("{ok}depends_on = [\"ghost\"]\n"),
            "unknown unit \"ghost\"",
        ),
        (format!("{ok}{ok}"), "duplicate unit name \"a\""),
        (
            "[[unit]]\nname = \"../evil\"\nengine = \"codex\"\nprompt = \"x\"\n".into(),
            "invalid unit name",
        ),
        (
            format!(
                "{}{}{}",
                unit_toml("a", "codex", &["c"]),
                unit_toml("b", "codex", &["a"]),
                unit_toml("c", "codex", &["b"])
            ),
            "dependency cycle: a -> c -> b -> a",
        ),
        (
            "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt_file = \"nope.md\"\n".into(),
            "cannot read prompt_file",
        ),
        (
            format!("{ok}attachments = [\"nope.png\"]\n"),
            "unit \"a\": ",
        ),
        ("not toml at all [".into(), "plan"),
        (String::new(), "no units"),
        (
            format!("{ok}deny_paths = [\"a/[\"]\n"),
            "unit \"a\": deny_paths / allow_paths: bad path glob",
        ),
        // Guards that could not be checked after the run: refused up front.
        (
            format!("{ok}allow_paths = [\"src/**\"]\n"),
            "is not in a git work tree",
        ),
        (
            format!("on_plan_finish = 3\n{ok}"),
            "line 1: invalid type: integer `3`, expected a string",
        ),
    ];
    for (text, want) in cases {
        env.plan(&text);
        let out = env.run_plan(&["--output", "json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{want}: {stderr}");
        assert!(stderr.contains(want), "wanted {want:?} in {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "one clear error: {stderr}"
        );
        assert!(out.stdout.is_empty());
        assert!(env.events().is_empty(), "something started for {want}");
        assert!(
            !env.state().join("units").exists(),
            "markers written for {want}"
        );
    }
}

#[test]
fn dependency_failure_blocks_dependents() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX_FAIL, "0", "FAKE_EXIT=1");
    env.unit_dir("b", CODEX, "0", "");
    env.unit_dir("c", CODEX, "0", "");
    env.unit_dir("d", CODEX, "0", "");
    env.unit_dir("g", CODEX, "0", "");
    env.unit_dir("h", CODEX, "0", "");
    env.plan(&format!(
        "{}{}{}{}{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "codex", &["a"]),
        unit_toml("c", "codex", &["b"]),
        unit_toml("d", "codex", &[]),
        unit_toml("g", "gemini", &[]),
        unit_toml("h", "codex", &["d", "g"])
    ));
    let mut c = env.orchestrate(&["--output", "jsonl"]);
    // g's engine cannot start at all.
    c.env("VF_GEMINI_BIN", env.path().join("no-such-gemini"));
    let out = run_bounded(c, Duration::from_secs(90));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fin = env.normalized(&final_json(&out));
    let a_error = fin["units"][0]["error"].clone();
    assert!(a_error.as_str().is_some_and(|e| !e.is_empty()), "{fin}");
    let mut a = ran(
        "a",
        "codex",
        "failed",
        "fresh",
        capture_session_id(CODEX_FAIL),
    );
    a["error"] = a_error.clone();
    a["reason"] = "engine".into();
    let mut d = ran("d", "codex", "done", "fresh", capture_session_id(CODEX));
    d["summary"] = json!({"confidence": 0.9, "files_changed": []});
    // g never started: no attempt to report, the binary it lacks named, and why.
    let mut g = ran("g", "gemini", "failed", "fresh", Value::Null);
    g["attempt"] = Value::Null;
    g["reason"] = "missing".into();
    g["error"] = "gemini: VF_GEMINI_BIN=<tmp>/no-such-gemini: no such file".into();
    let want = json!({
        "kind": "orchestrate.result",
        "ok": false,
        "plan": "<tmp>/plan.toml",
        "usage": "<usage>",
        "units": [
            a,
            blocked("b", "codex", "dependency \"a\" is failed"),
            blocked("c", "codex", "dependency \"b\" is blocked"),
            d,
            g,
            blocked("h", "codex", "dependency \"g\" is failed"),
        ],
    });
    assert_json_eq(&fin, &want);
    let mut a = ran_marker("a", "failed", 1, CODEX_FAIL);
    a["error"] = a_error;
    assert_json_eq(&env.normalized(&env.marker("a")), &a);
    assert_json_eq(
        &env.normalized(&env.marker("b")),
        &blocked_marker("b", "codex", "dependency \"a\" is failed"),
    );
    assert_json_eq(
        &env.normalized(&env.marker("c")),
        &blocked_marker("c", "codex", "dependency \"b\" is blocked"),
    );
    let mut g = unstarted_marker("g", "gemini", "<tmp>/g");
    g["error"] = "gemini: VF_GEMINI_BIN=<tmp>/no-such-gemini: no such file".into();
    assert_json_eq(&env.normalized(&env.marker("g")), &g);
    let started: Vec<String> = env
        .events()
        .into_iter()
        .filter(|e| e.0 == "start")
        .map(|e| e.1)
        .collect();
    assert!(!started.contains(&"b".to_string()) && !started.contains(&"c".to_string()));
    // Every JSONL event line is tagged with its unit.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["kind"] != "orchestrate.result" {
            assert!(v["unit"].is_string(), "untagged line {line}");
        }
    }
}

/// The largest number of runs in flight at once, from the fake's start/end order.
fn max_concurrency(events: &[(String, String, String, Option<i32>)]) -> usize {
    let (mut cur, mut max) = (0usize, 0usize);
    for e in events {
        if e.0 == "start" {
            cur += 1;
            max = max.max(cur);
        } else {
            cur -= 1;
        }
    }
    max
}

#[test]
fn jobs_bound_concurrency() {
    for (jobs, barrier) in [(1, ""), (2, "FAKE_BARRIER=2"), (4, "FAKE_BARRIER=4")] {
        let env = PlanEnv::new();
        let mut plan = String::new();
        for u in ["u1", "u2", "u3", "u4"] {
            env.unit_dir(u, CODEX, "0.02", barrier);
            plan.push_str(&unit_toml(u, "codex", &[]));
        }
        env.plan(&plan);
        let out = env.run_plan(&["--jobs", &jobs.to_string(), "--output", "json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let units: Vec<Value> = ["u1", "u2", "u3", "u4"]
            .into_iter()
            .map(|u| done(ran(u, "codex", "done", "fresh", capture_session_id(CODEX))))
            .collect();
        assert_json_eq(
            &env.normalized(&final_json(&out)),
            &plan_result(true, units),
        );
        let ev = env.events();
        assert_eq!(ev.len(), 8);
        assert_eq!(max_concurrency(&ev), jobs, "--jobs {jobs}: {ev:?}");
        // json: only the final object.
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    }
}

/// Human output to a pipe: every row of an event under its unit's name (a
/// message's later lines were dropped), and an engine's terminal escapes shown
/// escaped, never written raw.
#[test]
fn human_lines_carry_each_row_and_no_raw_escape() {
    let env = PlanEnv::new();
    let capture = std::fs::read_to_string(fixture(CLAUDE)).unwrap();
    let hostile = capture.replace("I will run", r"I will\u001b]0;owned\u0007\u001b[2J run");
    assert_ne!(hostile, capture);
    let path = env.write("hostile.jsonl", hostile);
    env.write(
        "a/fake.env",
        format!("FAKE_STDOUT={}\nFAKE_DELAY=0\n", path.display()),
    );
    env.plan(&unit_toml("a", "claude", &[]));
    let out = env.run_plan(&["--output", "human"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let at = |l: &str| lines.iter().position(|x| *x == l);
    let first = at(r"[a]     I will\u{1b}]0;owned\u{7}\u{1b}[2J run the command.");
    let answer = [
        "[a]     The command printed: hello",
        "[a]",
        "[a]     ```json",
        r#"[a]     {"confidence":0.9,"files_changed":[]}"#,
        "[a]     ```",
    ];
    let found: Vec<Option<usize>> = answer.iter().map(|l| at(l)).collect();
    assert!(first.is_some(), "{stdout}");
    assert!(
        found
            .windows(2)
            .all(|w| w[0].is_some() && w[1] == w[0].map(|i| i + 1)),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
}

#[test]
fn existing_markers_need_resume_and_done_units_are_skipped() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX, "0", "");
    env.unit_dir("b", CLAUDE, "0", "");
    env.plan(&format!(
        "{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "claude", &["a"])
    ));
    let out = env.run_plan(&["--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.events().len(), 4);
    let out = env.run_plan(&["--output", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0));
    // Both done before: skipped, reported as they were.
    let skipped = |u: &str, engine: &str, cap: &str| {
        let mut r = done(ran(u, engine, "done", "", capture_session_id(cap)));
        r["ran"] = false.into();
        r["start"] = Value::Null;
        r["durationMs"] = Value::Null;
        r
    };
    let units = vec![skipped("a", "codex", CODEX), skipped("b", "claude", CLAUDE)];
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(true, units),
    );
    assert_eq!(env.events().len(), 4, "a done unit ran again");
}

#[test]
fn resume_uses_exact_id_or_a_labelled_replay() {
    let env = PlanEnv::new();
    // Both fail after producing output: codex records its id, copilot an answer.
    env.unit_dir("x", CODEX, "0", "FAKE_EXIT=1");
    env.unit_dir("y", COPILOT, "0", "FAKE_EXIT=1");
    env.plan(&format!(
        "{}{}",
        unit_toml("x", "codex", &[]),
        unit_toml("y", "copilot", &[])
    ));
    let out = env.run_plan(&["--output", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        env.marker("x")["engineSessionId"],
        capture_session_id(CODEX)
    );
    let history = std::fs::read_to_string(env.state().join("units/y/responses.jsonl")).unwrap();
    let first: Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    let answer_sha = first["sha256"].as_str().unwrap().to_string();

    env.unit_dir("x", CODEX, "0", "");
    env.unit_dir("y", COPILOT, "0", "");
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let x = resumed("x");
    // copilot at an unverified version keeps no session: a labelled replay.
    let mut y = ran("y", "copilot", "done", "replay", Value::Null);
    y["attempt"] = 2.into();
    y["replay"] = json!({"source": 1, "replayed": 1, "truncated": 1});
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(true, vec![x, y]),
    );
    let starts: Vec<_> = env
        .events()
        .into_iter()
        .filter(|e| e.0 == "start")
        .collect();
    let last_x = starts.iter().rev().find(|e| e.1 == "x").unwrap();
    let args = env.args_of("x", &last_x.2);
    assert!(
        args.starts_with(&format!("exec\nresume\n{}\n", capture_session_id(CODEX))),
        "{args}"
    );
    let last_y = starts.iter().rev().find(|e| e.1 == "y").unwrap();
    let args = env.args_of("y", &last_y.2);
    assert!(args.contains("NOT a continued session"), "{args}");
    assert!(args.contains(&format!("sha256 {answer_sha}")), "{args}");
    assert!(
        args.contains("unit y · engine copilot · attempt 1"),
        "{args}"
    );
    assert!(args.contains("source responses: 1 · replayed: 1"), "{args}");
    assert!(args.contains("task y"), "the original task is kept: {args}");
    // The answer itself, not the earlier prompt, is what was replayed.
    assert_eq!(args.matches("task y").count(), 1, "{args}");
    assert!(args.contains(first["text"].as_str().unwrap().lines().next().unwrap()));
}

/// Issue 25, defect 7: copilot's exact resume is proven per version; a unit
/// whose session 1.0.102 made is replayed once copilot is 1.0.999, in a plan
/// as in `vf resume`.
#[test]
fn resume_after_the_engine_left_its_proven_version_replays() {
    let env = PlanEnv::new();
    env.write("bin/copilot.env", "FAKE_VERSION=1.0.102\n");
    env.unit_dir("y", COPILOT, "0", "FAKE_EXIT=1");
    env.plan(&unit_toml("y", "copilot", &[]));
    assert_eq!(env.run_plan(&["--output", "json"]).status.code(), Some(1));
    assert!(env.marker("y")["engineSessionId"].is_string());

    // A new copilot binary (vf remembers `--version` per file).
    std::fs::remove_file(env.path().join("bin/copilot")).unwrap();
    env.fake_for("copilot");
    env.write("bin/copilot.env", "FAKE_VERSION=1.0.999\n");
    env.unit_dir("y", COPILOT, "0", "");
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // JSON mode at 1.0.999: a fresh session with an id of its own.
    let id = capture_session_id(COPILOT);
    let mut y = ran("y", "copilot", "done", "replay", id);
    y["attempt"] = 2.into();
    y["replay"] = json!({"source": 1, "replayed": 1, "truncated": 0});
    y["summary"] = json!({"confidence": 1.0, "files_changed": []});
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(true, vec![y]),
    );
    let last = env
        .events()
        .into_iter()
        .rev()
        .find(|e| e.0 == "start")
        .unwrap();
    let args = env.args_of("y", &last.2);
    assert!(!args.contains("--resume"), "{args}");
    assert!(args.contains("NOT a continued session"), "{args}");
}

#[test]
fn resume_refuses_a_unit_owned_by_a_live_vf() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX, "0", "");
    env.unit_dir("b", CODEX, "0", "");
    env.plan(&format!(
        "{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "codex", &["a"])
    ));
    // A marker claimed by a live supervisor: this test process.
    let store = vf::unit::marker::MarkerStore::new(&env.state());
    let mut m = vf::unit::marker::Marker::new("a", vf::engine::EngineId::Codex, env.path());
    m.state = vf::unit::marker::UnitState::Running;
    m.attempts = 1;
    m.owner = Some(vf::unit::marker::Owner {
        supervisor: vf::ground::procinfo::ProcIdentity::current(),
        cli: None,
        pgid: None,
    });
    store.save(&mut m).unwrap();
    let before = std::fs::read(store.path("a")).unwrap();
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let why = format!(
        "it is running under vf pid {}, a live vf; not touching it",
        std::process::id()
    );
    let mut a = not_run("a", "codex", "refused", why);
    a["attempt"] = 1.into();
    let units = vec![a, blocked("b", "codex", "dependency \"a\" is refused")];
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(false, units),
    );
    assert_eq!(
        std::fs::read(store.path("a")).unwrap(),
        before,
        "marker touched"
    );
    assert!(env.events().is_empty());
}

#[test]
fn sigint_stops_the_plan_and_resume_finishes_it() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX, "0.3", "");
    env.unit_dir("b", CODEX, "0", "");
    env.plan(&format!(
        "{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "codex", &["a"])
    ));
    let mut c = env.orchestrate(&["--output", "json"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let start = Instant::now();
    // Interrupt once the session id is on record.
    while !std::fs::read_to_string(env.marker_path("a"))
        .is_ok_and(|t| t.contains(&capture_session_id(CODEX)))
    {
        assert!(start.elapsed() < Duration::from_secs(20), "no session id");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(child.id() as i32, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut a = ran("a", "codex", "failed", "fresh", capture_session_id(CODEX));
    a["error"] = "interrupted by SIGINT".into();
    a["reason"] = "interrupted".into();
    let units = vec![a, not_run("b", "codex", "notStarted", Value::Null)];
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(false, units),
    );
    assert!(!env.marker_path("b").exists());
    let mut a = ran_marker("a", "failed", 0, CODEX);
    a["reason"] = "interrupted".into();
    a["error"] = "interrupted by SIGINT".into();
    a["exitCode"] = Value::Null;
    assert_json_eq(&env.normalized(&env.marker("a")), &a);
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = resumed("a");
    let b = done(ran(
        "b",
        "codex",
        "done",
        "fresh",
        capture_session_id(CODEX),
    ));
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(true, vec![a, b]),
    );
}

#[test]
fn retries_starts_a_failed_unit_again_and_stops_at_the_limit() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX_FAIL, "0", "FAKE_EXIT=1");
    env.unit_dir("b", CODEX, "0", "");
    env.plan(
        "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"do a\"\ncwd = \"a\"\nretries = 2\n\
         [[unit]]\nname = \"b\"\nengine = \"codex\"\nprompt = \"do b\"\ncwd = \"b\"\ndepends_on = [\"a\"]\n",
    );
    let out = env.run_plan(&["--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &r["units"][0];
    assert_eq!(
        (a["state"].as_str(), a["attempt"].as_u64()),
        (Some("failed"), Some(3)),
        "{a}"
    );
    let starts = env
        .events()
        .iter()
        .filter(|e| e.0 == "start" && e.1 == "a")
        .count();
    assert_eq!(starts, 3, "1 run + 2 retries");
    assert_eq!(r["units"][1]["state"], "blocked");
}
