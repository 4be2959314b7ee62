//! `--model` / `--effort` end to end: passed to the engine, recorded in the
//! marker and the result (and orchestrate's unit entries), kept by `vf resume`,
//! and refused (exit 2, nothing written) where the engine has no verified flag.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use common::*;

const CODEX: &str = "codex/0.171.0/a_json.stdout.jsonl";
/// codex's argv for `--model gpt-5.4` (the temp dir is no git work tree).
const WITH_MODEL: [&str; 6] = [
    "exec",
    "--json",
    "--skip-git-repo-check",
    "--model",
    "gpt-5.4",
    "-",
];

/// argv lines the fake received (up to the stdin marker).
fn argv_of(log: &std::path::Path) -> Vec<String> {
    read_text(log)
        .lines()
        .take_while(|l| *l != "--stdin--")
        .map(String::from)
        .collect()
}

#[test]
fn the_model_reaches_the_engine_is_recorded_and_kept_on_resume() {
    let env = Env::new();
    let log = env.path().join("args");
    let fake_log = ("FAKE_ARGS_LOG", log.display().to_string());
    let out = env.dispatch(
        "codex",
        "m",
        // Fails with its session recorded, so that it can be resumed.
        &[
            fake_stdout(CODEX),
            fake_log.clone(),
            ("FAKE_EXIT", "1".into()),
        ],
        &["--model", "gpt-5.4"],
    );
    let r = stdout_json(&out);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(argv_of(&log), WITH_MODEL);
    let m = env.marker("m");
    assert_eq!(
        [&r["model"], &m["model"], &r["state"]],
        [&json!("gpt-5.4"), &json!("gpt-5.4"), &json!("failed")]
    );
    let sid = m["engineSessionId"].as_str().unwrap().to_string();
    let fake = env.fake_for("codex");
    let resume = |extra: &[&str]| {
        let mut args = vec![
            "resume",
            "m",
            "--json",
            "--engine-bin",
            fake.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let mut c = env.cmd(&args);
        c.env("FAKE_STDOUT", fixture(CODEX))
            .env(fake_log.0, &fake_log.1)
            .env("FAKE_EXIT", "1");
        let out = run_bounded(c, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        (stdout_json(&out)["model"].clone(), argv_of(&log))
    };
    let resumed = |model: &str| {
        let skip = "--skip-git-repo-check";
        [
            "exec", "resume", &sid, "--json", skip, "--model", model, "-",
        ]
        .map(String::from)
        .to_vec()
    };
    assert_eq!(resume(&[]), (json!("gpt-5.4"), resumed("gpt-5.4")));
    assert_eq!(resume(&["--model", "o4"]), (json!("o4"), resumed("o4")));
    assert_eq!(env.marker("m")["model"], "o4");
}

#[test]
fn what_the_engine_cannot_take_is_exit_2_and_nothing_is_written() {
    let env = Env::new();
    for (engine, extra, part) in [
        (
            "agy",
            &["--model", "x"][..],
            "agy: its verified help has no --model flag",
        ),
        (
            "gemini",
            &["--effort", "high"][..],
            "gemini: its verified help has no --effort flag",
        ),
        (
            "claude",
            &["--effort", "huge"][..],
            "not one of the levels it takes: low, medium",
        ),
        (
            "opencode",
            &["--model", "sonnet"][..],
            "--model takes provider/model",
        ),
    ] {
        let out = env.dispatch(engine, "u", &[fake_stdout(CODEX)], extra);
        assert_eq!(out.status.code(), Some(2), "{engine}: {}", stderr(&out));
        assert!(stderr(&out).contains(part), "{engine}: {}", stderr(&out));
        assert!(!env.state().exists(), "{engine}: state written");
    }
}

#[test]
fn a_plan_model_is_passed_and_reported_and_an_impossible_one_refused_up_front() {
    let env = Env::new();
    env.write(
        "a/fake.env",
        format!("FAKE_STDOUT={}\n", fixture(CODEX).display()),
    );
    let log = env.path().join("args");
    let plan = env.write(
        "plan.toml",
        "[defaults]\nmodel = \"gpt-5.4\"\n\n[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"x\"\ncwd = \"a\"\n",
    );
    let orchestrate = |plan: &std::path::Path| {
        let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--json"]);
        c.env("VF_CODEX_BIN", env.fake_for("codex"))
            .env("FAKE_ARGS_LOG", &log);
        run_bounded(c, Duration::from_secs(60))
    };
    let out = orchestrate(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = stdout_json(&out);
    let unit: Vec<Value> = r["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| json!([u["unit"], u["model"]]))
        .collect();
    assert_eq!(unit, [json!(["a", "gpt-5.4"])]);
    assert_eq!(argv_of(&log), WITH_MODEL);
    let env2 = Env::new();
    let plan = env2.write(
        "plan.toml",
        "[[unit]]\nname = \"a\"\nengine = \"agy\"\nprompt = \"x\"\nmodel = \"m\"\n",
    );
    let out = run_bounded(
        env2.cmd(&["orchestrate", plan.to_str().unwrap(), "--json"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unit \"a\": agy: its verified help has no --model flag"),
        "{}",
        stderr(&out)
    );
    assert!(!env2.state().exists());
}

#[test]
fn the_effort_reaches_copilot_and_is_recorded() {
    let env = Env::new();
    let log = env.path().join("args");
    let out = env.dispatch(
        "copilot",
        "e",
        &[
            fake_stdout("copilot/1.0.102/a_json.stdout.jsonl"),
            ("FAKE_VERSION", "1.0.102".into()),
            ("FAKE_ARGS_LOG", log.display().to_string()),
        ],
        &["--effort", "xhigh"],
    );
    let r = stdout_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    let m = env.marker("e");
    assert_eq!(
        [&r["effort"], &m["effort"], &r["model"]],
        [&json!("xhigh"), &json!("xhigh"), &Value::Null]
    );
    let argv = argv_of(&log);
    let at = argv.iter().position(|a| a == "--reasoning-effort").unwrap();
    assert_eq!(argv[at + 1], "xhigh", "{argv:?}");
}
