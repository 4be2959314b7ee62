//! `vf doctor --probe`: the live canary through the normal runtime, against
//! the fake engine replaying genuine captures; and `--engine auto`, which
//! takes the first ready engine.

use super::*;

/// `vf doctor --probe --json -e <engine>` with the fake told what to replay.
fn probe_json(dir: &Path, engine: &str, envs: &[(&str, String)], extra: &[&str]) -> (i32, Value) {
    let mut c = vf(dir);
    c.args(["doctor", "--json", "--probe", "-e", engine])
        .args(extra);
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let v = json_of(&out);
    (out.status.code().unwrap(), v[0].clone())
}

#[test]
fn probe_passes_on_a_healthy_engine() {
    let t = Env::new();
    Fake::new(EngineId::Codex).replaying().install(t.path());
    let cap = "codex/0.171.0/a_json.stdout.jsonl";
    let (code, r) = probe_json(
        t.path(),
        "codex",
        &[("FAKE_STDOUT", fixture(cap).display().to_string())],
        &[],
    );
    let mut want = ready_report("codex", &t.path().join("codex"));
    want["probe"] = json!({"result": "pass", "reason": null, "sessionId": capture_session_id(cap)});
    assert_json_eq(&r, &want);
    assert_eq!(code, 0);
}

#[test]
fn probe_reports_the_api_error_text() {
    let t = Env::new();
    Fake::new(EngineId::Codex).replaying().install(t.path());
    let (code, r) = probe_json(
        t.path(),
        "codex",
        &[
            (
                "FAKE_STDOUT",
                fixture("codex/0.171.0/d_error500.stdout.jsonl")
                    .display()
                    .to_string(),
            ),
            ("FAKE_EXIT", "1".into()),
        ],
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(r["verdict"], "ready");
    assert_eq!(r["probe"]["result"], "fail");
    let reason = r["probe"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("API error:") && reason.contains("high demand"),
        "{reason}"
    );
}

#[test]
fn probe_names_missing_auth() {
    let t = Env::new();
    Fake::new(EngineId::Claude).replaying().install(t.path());
    let stream = t.path().join("noauth.jsonl");
    std::fs::write(
        &stream,
        concat!(
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"a45120f2-ed10-406b-8dbb-c2e6151c6f7f"}"#,
            "\n"
        ),
    )
    .unwrap();
    let (code, r) = probe_json(
        t.path(),
        "claude",
        &[
            ("FAKE_STDOUT", stream.display().to_string()),
            ("FAKE_EXIT", "1".into()),
        ],
        &[],
    );
    assert_eq!(code, 1);
    let reason = r["probe"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("auth missing"), "{reason}");
}

#[test]
fn probe_fails_on_a_novel_frame() {
    let t = Env::new();
    Fake::new(EngineId::Codex).replaying().install(t.path());
    let cap = std::fs::read_to_string(fixture("codex/0.171.0/a_json.stdout.jsonl")).unwrap();
    let mut lines: Vec<&str> = cap.lines().collect();
    lines.insert(2, r#"{"type":"thread.archived","reason":"future"}"#);
    let stream = t.path().join("novel.jsonl");
    std::fs::write(&stream, lines.join("\n") + "\n").unwrap();
    let (code, r) = probe_json(
        t.path(),
        "codex",
        &[("FAKE_STDOUT", stream.display().to_string())],
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(r["probe"]["result"], "fail");
    assert!(
        r["probe"]["reason"]
            .as_str()
            .unwrap()
            .contains("unknown frame"),
        "{r}"
    );
}

#[test]
fn probe_times_out_without_hanging() {
    let t = Env::new();
    Fake::new(EngineId::Codex).replaying().install(t.path());
    let empty = t.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let (code, r) = probe_json(
        t.path(),
        "codex",
        &[
            ("FAKE_STDOUT", empty.display().to_string()),
            ("FAKE_MODE", "hang".into()),
        ],
        &["--probe-timeout", "1"],
    );
    assert_eq!(code, 1);
    assert!(
        r["probe"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("timeout"),
        "{r}"
    );
}

#[test]
fn probe_skips_engines_that_are_not_ready() {
    let t = Env::new();
    Fake::new(EngineId::Codex)
        .replaying()
        .omit("--json")
        .install(t.path());
    let (code, r) = probe_json(t.path(), "codex", &[], &[]);
    assert_eq!(code, 1);
    assert_eq!(r["verdict"], "degraded");
    assert!(r.get("probe").is_none(), "{r}");
}

#[test]
fn auto_engine_dispatch_takes_the_first_ready_capable_engine() {
    let t = Env::new();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // codex (first in matrix order for images) is installed but degraded;
    // copilot is ready and answers.
    Fake::new(EngineId::Codex)
        .replaying()
        .omit("--json")
        .install(&bin);
    Fake::new(EngineId::Copilot).replaying().install(&bin);
    let work = t.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("shot.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    let run = |args: &[&str]| {
        vf(&bin)
            .current_dir(&work)
            .env("VF_STATE_DIR", work.join("state"))
            .env(
                "FAKE_STDOUT",
                fixture("copilot/1.0.102/a_json.stdout.jsonl"),
            )
            .args(args)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap()
    };
    assert!(run(&["attach", "add", "shot.png"]).status.success());
    let out = run(&[
        "dispatch", "--engine", "auto", "--attach", "shot.png", "--prompt", "look", "--unit", "a",
        "--output", "json",
    ]);
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["engine"], "copilot", "{r}");
    let why = r["engineReason"].as_str().unwrap();
    assert!(
        why.contains("first ready") && why.contains("codex, opencode not ready"),
        "{why}"
    );
    assert_eq!(r["state"], "done", "{r}");
    assert_eq!(out.status.code(), Some(0));
}
