//! The real-engine tier for `--model`, `--effort` and `--summary-schema`: each
//! real CLI, inside the loopback-only sandbox against the fake model server,
//! accepts the flag vf maps the option to, and the model reaches the request.
//! Skips cleanly without the CLIs; `VF_REAL_ENGINES=1` makes that a failure.
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use serde_json::Value;

use crate::sandbox;
use sandbox::{Sandbox, available, versions};

const JSON: &str =
    "LAB-JSON Reply with a fenced json block containing confidence and files_changed.";

const SCHEMA: &str = r#"{"type":"object","required":["confidence","files_changed"],
"properties":{"confidence":{"type":"number"},"files_changed":{"type":"array"}}}"#;

/// Whether the fake server saw a model request naming `model` (in the body,
/// or gemini's `/models/<model>:` path; opencode sends the name without its
/// `provider/`).
fn server_saw_model(sb: &Sandbox, model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    sb.server_log().iter().any(|e| {
        e["body"]["model"] == model
            || e["path"]
                .as_str()
                .is_some_and(|p| p.contains(&format!("/models/{model}:")))
    })
}

/// One `--model` run (plus `extra`) per selected version of `engine`; the
/// sandboxes, for further checks of what the server saw.
fn model_run(engine: &'static str, model: &str, extra: &[&str]) -> Vec<Sandbox> {
    let mut done = Vec::new();
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let sb = Sandbox::new(engine, &version);
        let mut args = vec!["--model", model];
        args.extend_from_slice(extra);
        let run = sb.dispatch("model", JSON, &args);
        run.assert_done(&format!("{engine} {version} --model {model}"));
        assert_eq!(run.result["model"], model, "{}", run.result);
        let seen: Vec<Value> = sb
            .server_log()
            .into_iter()
            .map(|e| e["path"].clone())
            .collect();
        assert!(
            server_saw_model(&sb, model),
            "{engine} {version}: no request for {model}: {seen:?}"
        );
        done.push(sb);
    }
    done
}

/// `--summary-schema`: the engine's native flag (where it has one) is accepted,
/// and vf's own check passes the fake server's summary.
fn schema_run(engine: &'static str) {
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let sb = Sandbox::new(engine, &version);
        let schema = sb.workdir().join("summary.schema.json");
        std::fs::write(&schema, SCHEMA).unwrap();
        let run = sb.dispatch(
            "schema",
            JSON,
            &["--summary-schema", schema.to_str().unwrap()],
        );
        run.assert_done(&format!("{engine} {version} --summary-schema"));
        assert_eq!(run.result["summaryError"], Value::Null, "{}", run.result);
    }
}

#[test]
fn real_claude_model_effort_and_schema() {
    model_run("claude", "claude-sonnet-4-5", &["--effort", "high"]);
    schema_run("claude");
}

#[test]
fn real_codex_model_and_schema() {
    // `--effort low` is `--config model_reasoning_effort=low`: the level
    // reaches the request (`reasoning.effort`), which proves the config key.
    for sb in model_run("codex", "gpt-5.4", &["--effort", "low"]) {
        let efforts: Vec<Value> = sb
            .server_log()
            .into_iter()
            .filter(|e| e["body"]["reasoning"].is_object())
            .map(|e| e["body"]["reasoning"]["effort"].clone())
            .collect();
        assert!(!efforts.is_empty(), "{}: no reasoning request", sb.version);
        assert!(efforts.iter().all(|e| e == "low"), "{efforts:?}");
    }
    schema_run("codex");
}

#[test]
fn real_copilot_model_and_effort() {
    model_run("copilot", "lab-model-2", &["--effort", "high"]);
}

#[test]
fn real_gemini_model() {
    model_run("gemini", "gemini-2.5-flash", &[]);
}

#[test]
fn real_opencode_model() {
    model_run("opencode", "lab/lab-model", &[]);
}
