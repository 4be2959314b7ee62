//! `--summary-schema FILE` / plan `summary_schema`: the summary is checked
//! against a JSON Schema (draft 2020-12); a violating or missing summary fails
//! the unit with reason `summary-schema` (exit 1) and `summaryError` holds the
//! validator's messages. A bad schema file is exit 2 before anything is written.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use common::*;

const SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["confidence", "files_changed"],
  "properties": {
    "confidence": {"type": "number", "maximum": 1},
    "files_changed": {"type": "array", "items": {"type": "string"}}
  }
}"#;

/// A codex stdout (the a_json capture) whose answer is `answer`.
fn codex_answering(env: &Env, name: &str, answer: &str) -> String {
    let capture = read_text(&fixture("codex/0.171.0/a_json.stdout.jsonl"));
    let lines: Vec<String> = capture
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["item"]["type"] == "agent_message" {
                v["item"]["text"] = answer.into();
            }
            v.to_string()
        })
        .collect();
    let p = env.write(&format!("{name}.jsonl"), lines.join("\n") + "\n");
    p.display().to_string()
}

/// `vf dispatch --engine codex --summary-schema schema.json` answering `answer`.
fn run(env: &Env, unit: &str, answer: &str) -> (Option<i32>, Value, String) {
    let schema = env.write("schema.json", SCHEMA);
    let stdout = codex_answering(env, unit, answer);
    let args_log = env.path().join(format!("{unit}.args"));
    let out = env.dispatch(
        "codex",
        unit,
        &[
            ("FAKE_STDOUT", stdout),
            ("FAKE_ARGS_LOG", args_log.display().to_string()),
        ],
        &["--summary-schema", schema.to_str().unwrap()],
    );
    let args = std::fs::read_to_string(&args_log).unwrap_or_default();
    (out.status.code(), stdout_json(&out), args)
}

/// The fields the schema decides, from a result or a marker.
fn verdict(v: &Value) -> Value {
    json!({
        "state": v["state"], "reason": v["reason"], "error": v["error"],
        "summary": v["summary"], "summaryError": v["summaryError"],
    })
}

#[test]
fn a_matching_summary_passes_and_codex_gets_the_native_flag() {
    let env = Env::new();
    let answer = "Done.\n```json\n{\"confidence\":0.9,\"files_changed\":[\"a.rs\"]}\n```\n";
    let (code, r, args) = run(&env, "ok", answer);
    assert_eq!(code, Some(0), "{r}");
    let want = json!({"state": "done", "reason": null, "error": null,
        "summary": {"confidence": 0.9, "files_changed": ["a.rs"]}, "summaryError": null});
    assert_eq!(verdict(&r), want);
    assert_eq!(verdict(&env.marker("ok")), want);
    let schema = env.path().join("schema.json").display().to_string();
    assert!(
        args.contains(&format!("--output-schema\n{schema}\n-\n")),
        "{args}"
    );
}

#[test]
fn a_violating_summary_fails_the_unit_with_the_validators_messages() {
    let env = Env::new();
    let answer = "Done.\n```json\n{\"confidence\":3,\"files_changed\":[1]}\n```\n";
    let (code, r, _) = run(&env, "bad", answer);
    assert_eq!(code, Some(1), "{r}");
    let msg = "the summary does not match the schema: /confidence: 3 is greater than \
               the maximum of 1; /files_changed/0: 1 is not of type \"string\"";
    let want = json!({"state": "failed", "reason": "summary-schema", "error": msg,
        "summary": null, "summaryError": msg});
    assert_eq!(verdict(&r), want);
    assert_eq!(verdict(&env.marker("bad")), want);
}

#[test]
fn a_missing_summary_is_a_violation_and_a_bare_json_answer_counts() {
    let env = Env::new();
    let (code, r, _) = run(&env, "none", "Done, nothing to report.");
    assert_eq!(code, Some(1), "{r}");
    let msg = "no summary: the answer has no ```json block";
    assert_eq!(
        verdict(&r),
        json!({"state": "failed", "reason": "summary-schema", "error": msg,
            "summary": null, "summaryError": msg})
    );
    // What `--output-schema` makes codex answer: the JSON alone.
    let (code, r, _) = run(&env, "bare", "{\"confidence\":1,\"files_changed\":[]}");
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["summary"], json!({"confidence": 1, "files_changed": []}));
}

#[test]
fn an_engine_failure_keeps_its_own_reason() {
    let env = Env::new();
    let schema = env.write("schema.json", SCHEMA);
    let out = env.dispatch(
        "codex",
        "err",
        &[fake_stdout("codex/0.171.0/d_error500.stdout.jsonl")],
        &["--summary-schema", schema.to_str().unwrap()],
    );
    let r = stdout_json(&out);
    assert_eq!(
        (r["state"].clone(), r["reason"].clone()),
        (json!("failed"), json!("engine"))
    );
}

#[test]
fn a_bad_schema_file_is_exit_2_and_nothing_is_written() {
    let env = Env::new();
    env.write("notjson.json", "{");
    env.write("notschema.json", r#"{"type": 12}"#);
    for (file, part) in [
        ("missing.json", "cannot read it"),
        ("notjson.json", "not JSON"),
        ("notschema.json", "not a valid JSON Schema (draft 2020-12)"),
        ("/dev/zero", "not a regular file"),
    ] {
        let out = env.dispatch(
            "codex",
            "u",
            &[fake_stdout("codex/0.171.0/a_json.stdout.jsonl")],
            &["--summary-schema", file],
        );
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).contains(part), "{file}: {}", stderr(&out));
        assert!(!env.state().exists(), "{file}: state written");
    }
}

#[test]
fn a_plan_default_schema_fails_its_unit_and_blocks_the_dependent() {
    let env = Env::new();
    env.write("schemas/s.json", SCHEMA);
    let answer = codex_answering(&env, "bad-answer", "no summary here");
    env.write("a/fake.env", format!("FAKE_STDOUT={answer}\n"));
    let plan = env.write(
        "plan.toml",
        r#"
[defaults]
engine = "codex"
summary_schema = "schemas/s.json"

[[unit]]
name = "a"
prompt = "x"
cwd = "a"

[[unit]]
name = "b"
prompt = "y"
depends_on = ["a"]
"#,
    );
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--json"]);
    c.env("VF_CODEX_BIN", env.fake_for("codex"));
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let states: Vec<Value> = ["a", "b"]
        .iter()
        .map(|u| {
            let m = env.marker(u);
            json!([u, m["state"], m["reason"]])
        })
        .collect();
    assert_eq!(
        states,
        [
            json!(["a", "failed", "summary-schema"]),
            json!(["b", "blocked", "dependency"])
        ]
    );
    // A schema path that does not resolve: the plan is refused whole.
    std::fs::remove_file(env.path().join("schemas/s.json")).unwrap();
    let out = run_bounded(
        env.cmd(&["orchestrate", plan.to_str().unwrap(), "--json", "--resume"]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("schemas/s.json"), "{}", stderr(&out));
}

#[test]
fn vf_resume_keeps_the_units_schema() {
    let env = Env::new();
    // Fails the schema with its session recorded: resumable.
    let (code, r, _) = run(&env, "again", "no summary yet");
    assert_eq!((code, &r["reason"]), (Some(1), &json!("summary-schema")));
    let schema = env.path().join("schema.json");
    assert_eq!(env.marker("again")["summarySchema"], json!(schema));
    let resume = |answer: &str| {
        let stdout = codex_answering(&env, "resumed", answer);
        let fake = env.fake_for("codex");
        let mut c = env.cmd(&[
            "resume",
            "again",
            "--json",
            "--engine-bin",
            fake.to_str().unwrap(),
        ]);
        c.env("FAKE_STDOUT", stdout);
        let out = run_bounded(c, Duration::from_secs(60));
        (out.status.code(), verdict(&stdout_json(&out)))
    };
    let msg = "no summary: the answer has no ```json block";
    assert_eq!(
        resume("still none"),
        (
            Some(1),
            json!({"state": "failed", "reason": "summary-schema", "error": msg,
                "summary": null, "summaryError": msg})
        )
    );
    let good = "```json\n{\"confidence\":1,\"files_changed\":[]}\n```";
    assert_eq!(
        resume(good),
        (
            Some(0),
            json!({"state": "done", "reason": null, "error": null,
                "summary": {"confidence": 1, "files_changed": []}, "summaryError": null})
        )
    );
}
