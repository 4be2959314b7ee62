//! Expected results and markers of `vf dispatch` (and of each unit
//! `vf orchestrate` runs), whole, to compare with [`super::normalized`] output.

use serde_json::{Value, json};

use super::version_of;

/// The result of a run that ended on its own: every field, the volatile ones
/// normalised (`answer` and `summary` are the caller's, checked apart).
pub fn finished_result(
    engine: &str,
    unit: &str,
    attempt: u64,
    state: &str,
    exit_code: i64,
    session: &Value,
) -> Value {
    json!({
        "unit": unit,
        "engine": engine,
        "engineReason": "chosen with --engine",
        "engineVersion": version_of(engine),
        "attempt": attempt,
        "state": state,
        "reason": if state == "done" { Value::Null } else { "engine".into() },
        "error": null,
        "exitCode": exit_code,
        "sessionId": session,
        "answer": null,
        "summary": null,
        "summaryError": null,
        "usage": null,
        "unknownFrames": 0,
        "warnings": [],
        "policy": {"readOnly": "off", "tools": "off"},
        "durationMs": "<ms>",
        "marker": format!("<tmp>/state/units/{unit}/marker.json"),
        "stdoutLog": format!("<tmp>/state/units/{unit}/attempt-{attempt}.stdout.log"),
        "stderrLog": format!("<tmp>/state/units/{unit}/attempt-{attempt}.stderr.log"),
    })
}

/// The marker a finished run leaves: every field, the volatile ones normalised.
pub fn finished_marker(result: &Value, attempts: u64) -> Value {
    let identity =
        json!({"pid": "<pid>", "startTime": "<start>", "bootId": "<boot>", "host": "<host>"});
    json!({
        "format": 1,
        "unit": result["unit"],
        "engine": result["engine"],
        "engineVersion": result["engineVersion"],
        "state": result["state"],
        "engineSessionId": result["sessionId"],
        "attempts": attempts,
        "cwd": "<tmp>",
        "owner": {"supervisor": identity, "cli": identity, "pgid": "<pgid>"},
        "createdAt": "<time>",
        "updatedAt": "<time>",
        "startedAt": "<time>",
        "finishedAt": "<time>",
        "exitCode": result["exitCode"],
        "summary": result["summary"],
        "summaryError": result["summaryError"],
        "error": result["error"],
        "reason": result["reason"],
        "usage": result["usage"],
        "policy": result["policy"],
        // Relative to the state dir, so a moved state dir keeps its markers.
        "stdoutLog": format!("units/{}/attempt-{attempts}.stdout.log", result["unit"].as_str().unwrap()),
        "stderrLog": format!("units/{}/attempt-{attempts}.stderr.log", result["unit"].as_str().unwrap()),
    })
}

/// Copies `answer` and `summary` from `actual` into `want`, once the summary
/// is checked to be a real one (a numeric `confidence`). Their exact text per
/// capture is pinned by tests/it/engine_captures.rs, not by the runtime tests;
/// the same goes for `usage` (pinned by tests/it/usage.rs), see [`used`].
#[track_caller]
pub fn answered(want: &mut Value, actual: &Value) {
    assert!(actual["summary"]["confidence"].is_number(), "{actual}");
    want["answer"] = actual["answer"].clone();
    want["summary"] = actual["summary"].clone();
    used(want, actual);
}

/// Copies `usage` from `actual` into `want` once it is checked to be null or
/// a usage object (its figures per capture are pinned by tests/it/usage.rs).
#[track_caller]
pub fn used(want: &mut Value, actual: &Value) {
    let u = &actual["usage"];
    assert!(u.is_null() || u["source"].is_string(), "{actual}");
    want["usage"] = u.clone();
}

/// The marker of a unit whose engine never started (its binary missing):
/// every field; the caller changes what differs (blocked, its error).
pub fn unstarted_marker(unit: &str, engine: &str, cwd: &str) -> Value {
    json!({
        "format": 1,
        "unit": unit,
        "engine": engine,
        "engineVersion": null,
        "state": "failed",
        "engineSessionId": null,
        "attempts": 1,
        "cwd": cwd,
        "owner": null,
        "createdAt": "<time>",
        "updatedAt": "<time>",
        "startedAt": null,
        "finishedAt": "<time>",
        "exitCode": null,
        "summary": null,
        "summaryError": null,
        "error": null,
        "reason": "missing",
        "usage": null,
        "stdoutLog": null,
        "stderrLog": null,
    })
}
