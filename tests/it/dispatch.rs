//! Integration tests of `vf dispatch` / `vf resume` / `vf status` against a
//! fake engine executable that replays genuine captures.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::*;

#[path = "dispatch/ending.rs"]
mod ending;
#[path = "dispatch/hardening.rs"]
mod hardening;
#[path = "dispatch/policy.rs"]
mod policy;
#[path = "dispatch/private.rs"]
mod private;
#[path = "dispatch/split_secrets.rs"]
mod split_secrets;

const SUCCESS: &[(&str, &str)] = &[
    ("codex", "codex/0.171.0/a_json.stdout.jsonl"),
    ("codex", "codex/0.171.0/b_tool.stdout.jsonl"),
    ("claude", "claude/2.1.332/a_json_stream.stdout.jsonl"),
    ("claude", "claude/2.1.332/b_tool.stdout.jsonl"),
    ("gemini", "gemini/0.61.0/a_json_stream.stdout.jsonl"),
    ("gemini", "gemini/0.61.0/b_tool.stdout.jsonl"),
    ("opencode", "opencode/1.18.33/a_json.stdout.jsonl"),
    ("opencode", "opencode/1.18.33/b_tool.stdout.jsonl"),
    ("copilot", "copilot/1.0.102/a_json.stdout.jsonl"),
    ("copilot", "copilot/1.0.102/b_tool.stdout.jsonl"),
];

#[test]
fn every_engine_success_shape() {
    let env = Env::new();
    for (i, (engine, cap)) in SUCCESS.iter().enumerate() {
        let unit = format!("ok{i}");
        let out = env.dispatch(
            engine,
            &unit,
            &[
                fake_stdout(cap),
                ("FAKE_VERSION", version_of(engine).into()),
            ],
            &[],
        );
        let r = env.normalized(&last_json(&out));
        assert_eq!(out.status.code(), Some(0), "{cap}: {r}");
        assert!(
            r["answer"].as_str().is_some_and(|a| !a.is_empty()),
            "{cap}: {r}"
        );
        let mut want =
            finished_result(engine, &unit, 1, "done", 0, &capture_session_id(cap).into());
        answered(&mut want, &r);
        assert_json_eq(&r, &want);
        assert_json_eq(
            &env.normalized(&env.marker(&unit)),
            &finished_marker(&want, 1),
        );
        // The raw log is byte-for-byte what the engine printed.
        assert_eq!(
            std::fs::read(
                env.state()
                    .join(format!("units/{unit}/attempt-1.stdout.log"))
            )
            .unwrap(),
            std::fs::read(fixture(cap)).unwrap()
        );
    }
}

#[test]
fn every_engine_failure_shape() {
    let env = Env::new();
    for engine in ["codex", "claude", "gemini", "opencode", "copilot"] {
        let dir = format!("{engine}/{}", version_of(engine));
        let cap = format!("{dir}/d_error500.stdout.jsonl");
        let code = recorded_exit(&read_text(&fixture(&format!("{dir}/d_error500.cmd.txt"))));
        let unit = format!("fail-{engine}");
        let out = env.dispatch(
            engine,
            &unit,
            &[
                fake_stdout(&cap),
                ("FAKE_VERSION", version_of(engine).into()),
                ("FAKE_EXIT", code.to_string()),
            ],
            &[],
        );
        let r = env.normalized(&last_json(&out));
        assert_eq!(out.status.code(), Some(1), "{engine}: {r}");
        // The engine's own words (tests/it/engine_captures.rs pins them).
        assert!(
            r["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{engine}: {r}"
        );
        let session = first_session_id(&read_text(&fixture(&cap))).map_or(Value::Null, Value::from);
        let mut want = finished_result(engine, &unit, 1, "failed", code.into(), &session);
        want["error"] = r["error"].clone();
        want["answer"] = r["answer"].clone();
        used(&mut want, &r);
        assert_json_eq(&r, &want);
        let mut marker = finished_marker(&want, 1);
        if engine == "gemini" {
            // A gemini session is resumable only once it has answered (ENGINES.md).
            marker["engineSessionId"] = Value::Null;
        }
        assert_json_eq(&env.normalized(&env.marker(&unit)), &marker);
    }
}

#[test]
fn gemini_in_stream_error_with_exit_zero_is_failure() {
    let env = Env::new();
    let p = env.path().join("gem.jsonl");
    std::fs::write(
        &p,
        concat!(
            r#"{"type":"init","timestamp":"t","session_id":"3e94d0ea-b8f4-4335-834c-590cbe21b4aa","model":"auto"}"#,
            "\n",
            r#"{"type":"error","timestamp":"t","severity":"error","message":"Model stream ended without a finish reason"}"#,
            "\n",
            r#"{"type":"result","timestamp":"t","status":"error","error":{"type":"unknown","message":"[API Error: Model stream ended]"},"stats":{}}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = env.dispatch(
        "gemini",
        "g",
        &[
            ("FAKE_STDOUT", p.display().to_string()),
            ("FAKE_VERSION", "0.61.0".into()),
        ],
        &[],
    );
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(1));
    let mut want = finished_result(
        "gemini",
        "g",
        1,
        "failed",
        0,
        &"3e94d0ea-b8f4-4335-834c-590cbe21b4aa".into(),
    );
    want["error"] = "[API Error: Model stream ended]".into();
    assert_json_eq(&r, &want);
}

#[test]
fn nonzero_exit_after_good_output_is_failure() {
    let env = Env::new();
    let out = env.dispatch(
        "codex",
        "nz",
        &[
            fake_stdout("codex/0.171.0/a_json.stdout.jsonl"),
            ("FAKE_EXIT", "3".into()),
        ],
        &[],
    );
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(1));
    let cap = "codex/0.171.0/a_json.stdout.jsonl";
    let mut want = finished_result(
        "codex",
        "nz",
        1,
        "failed",
        3,
        &capture_session_id(cap).into(),
    );
    want["error"] = "codex exited with status 3".into();
    answered(&mut want, &r);
    assert_json_eq(&r, &want);
    assert_json_eq(
        &env.normalized(&env.marker("nz")),
        &finished_marker(&want, 1),
    );
}

#[test]
fn missing_binary_exits_3_with_marker() {
    let env = Env::new();
    let out = run_bounded(
        env.cmd(&[
            "dispatch",
            "--engine",
            "codex",
            "--unit",
            "m",
            "--prompt",
            "x",
            "--engine-bin",
            "/nonexistent/codex",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/codex"), "{err}");
    let m = env.normalized(&env.marker("m"));
    assert_eq!(m["reason"], "missing", "{m}");
    let mut want = unstarted_marker("m", "codex", "<tmp>");
    want["error"] = m["error"].clone();
    assert_json_eq(&m, &want);
    assert!(
        m["error"].as_str().unwrap().contains("/nonexistent/codex"),
        "{m}"
    );

    // Not on PATH either: the message names the engine and how to install it.
    let mut c = env.cmd(&[
        "dispatch", "--engine", "opencode", "--unit", "m2", "--prompt", "x",
    ]);
    c.env("PATH", env.path()).env_remove("VF_OPENCODE_BIN");
    let out = run_bounded(c, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("opencode") && err.contains("npm install"),
        "{err}"
    );
}

#[test]
fn prompt_goes_to_stdin_and_stdin_is_closed() {
    let env = Env::new();
    let log = env.path().join("args.log");
    let out = env.dispatch(
        "codex",
        "stdin",
        &[
            fake_stdout("codex/0.171.0/a_json.stdout.jsonl"),
            ("FAKE_MODE", "read-stdin-forever".into()),
            ("FAKE_ARGS_LOG", log.display().to_string()),
        ],
        &["--timeout", "30"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.ends_with("--stdin--\ndo the thing"), "{logged:?}");
    assert!(logged.starts_with("exec\n--json\n"), "{logged:?}");

    // Argv engines get the prompt in argv and /dev/null as stdin.
    let out = env.dispatch(
        "copilot",
        "argv",
        &[
            fake_stdout("copilot/1.0.102/a_json.stdout.jsonl"),
            ("FAKE_VERSION", "1.0.102".into()),
            ("FAKE_ARGS_LOG", log.display().to_string()),
        ],
        &["--timeout", "30"],
    );
    assert_eq!(out.status.code(), Some(0));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.ends_with("-p\ndo the thing\n--stdin--\n"),
        "{logged:?}"
    );
}

/// A prompt larger than a pipe holds reaches the engine whole through stdin
/// (the part the pipe takes at once, then the rest), followed by EOF.
#[test]
fn a_prompt_larger_than_the_pipe_reaches_stdin_whole() {
    let env = Env::new();
    let log = env.path().join("args.log");
    // Under the 128 KiB limit of one argv string, over a 64 KiB pipe buffer.
    let prompt: String = (0..100_000)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let mut c = env.command("codex", "big", &prompt, "json", &["--timeout", "30"]);
    c.env(
        "FAKE_STDOUT",
        common::fixture("codex/0.171.0/a_json.stdout.jsonl"),
    )
    .env("FAKE_ARGS_LOG", &log);
    let out = common::run_bounded(c, std::time::Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    let (_, stdin) = logged.split_once("--stdin--\n").unwrap();
    assert_eq!(stdin.len(), prompt.len());
    assert!(stdin == prompt, "the prompt arrived altered");
}

#[test]
fn resumed_run_with_another_session_id_fails_and_keeps_the_old_one() {
    let env = Env::new();
    // First run fails but records its session id.
    let first = "codex/0.171.0/d_error500.stdout.jsonl";
    let out = env.dispatch(
        "codex",
        "mm",
        &[fake_stdout(first), ("FAKE_EXIT", "1".into())],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let original = capture_session_id(first);
    assert_eq!(env.marker("mm")["engineSessionId"], original);
    // The "resumed" engine answers from a different session.
    let other = "codex/0.171.0/a_json.stdout.jsonl";
    assert_ne!(capture_session_id(other), original);
    let mut c = env.cmd(&[
        "resume",
        "mm",
        "--output",
        "json",
        "--engine-bin",
        fake().to_str().unwrap(),
    ]);
    c.env("FAKE_STDOUT", fixture(other));
    let out = run_bounded(c, Duration::from_secs(60));
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(1), "{r}");
    // The unit keeps the session it had: the one a resume must go back to.
    let mut want = finished_result("codex", "mm", 2, "failed", 0, &original.clone().into());
    want["reason"] = "sessionMismatch".into();
    want["error"] = format!(
        "resumed run reported session {}, not the requested {original}: \
         the native session was not found",
        capture_session_id(other)
    )
    .into();
    answered(&mut want, &r);
    want["engineReason"] = Value::Null;
    assert_json_eq(&r, &want);
    assert_json_eq(
        &env.normalized(&env.marker("mm")),
        &finished_marker(&want, 2),
    );
}

#[test]
fn resume_refuses_without_exact_authority() {
    let env = Env::new();
    let out = run_bounded(env.cmd(&["resume", "nope"]), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !env.path().join("state").exists(),
        "a refused resume wrote state"
    );
    // A failed run that never printed a session id has nothing to resume.
    let p = env.path().join("empty.jsonl");
    std::fs::write(&p, "").unwrap();
    let out = env.dispatch(
        "codex",
        "noid",
        &[
            ("FAKE_STDOUT", p.display().to_string()),
            ("FAKE_EXIT", "1".into()),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let out = run_bounded(env.cmd(&["resume", "noid"]), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no engine session id"));
    // Hostile unit names are refused before touching the file system.
    let out = run_bounded(
        env.cmd(&["resume", "../../etc/passwd"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn huge_line_and_invalid_utf8_do_not_stop_the_stream() {
    let env = Env::new();
    let cap = std::fs::read(fixture("codex/0.171.0/b_tool.stdout.jsonl")).unwrap();
    let mut lines: Vec<&[u8]> = cap.split(|b| *b == b'\n').collect();
    let huge = vec![b'x'; 20 * 1024 * 1024];
    let bad: &[u8] = b"\xff\xfe not utf8 \x00 nul";
    lines.insert(2, &huge);
    lines.insert(3, bad);
    let p = env.path().join("hostile.jsonl");
    std::fs::write(&p, lines.join(&b'\n')).unwrap();
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "hostile",
        "--prompt",
        "x",
        "--output",
        "jsonl",
        "--engine-bin",
        fake().to_str().unwrap(),
    ]);
    c.env("FAKE_STDOUT", &p);
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let r = events.last().unwrap();
    assert_eq!(r["kind"], "dispatch.result");
    assert_eq!(r["state"], "done");
    assert_eq!(r["summary"]["confidence"], 0.9);
    // The huge line (line 3) is reported, not projected.
    assert!(
        events.iter().any(|e| e["kind"] == "system.status"
            && e["level"] == "warning"
            && e["rawRange"]["start"] == 3),
        "{stdout}"
    );
    // Nothing lost: the raw log holds every byte.
    let log = r["stdoutLog"].as_str().unwrap();
    assert_eq!(std::fs::read(log).unwrap(), std::fs::read(&p).unwrap());
    // One line splitter: replaying the raw log gives exactly the live events.
    let replay = run_bounded(
        env.cmd(&[
            "replay",
            log,
            "--cli",
            "codex",
            "--cli-version",
            "0.171.0",
            "--output",
            "jsonl",
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(replay.status.code(), Some(0));
    let replayed: Vec<Value> = String::from_utf8(replay.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replayed, events[..events.len() - 1]);
}

#[test]
fn events_stream_live_before_the_engine_finishes() {
    let env = Env::new();
    let done = env.path().join("fake.done");
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "live",
        "--prompt",
        "x",
        "--output",
        "jsonl",
        "--engine-bin",
        fake().to_str().unwrap(),
    ]);
    c.env("FAKE_STDOUT", fixture("codex/0.171.0/b_tool.stdout.jsonl"))
        .env("FAKE_DELAY", "0.5")
        .env("FAKE_DONE_FILE", &done)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let ev: Value = serde_json::from_str(&first).unwrap();
    assert_ne!(ev["kind"], "dispatch.result");
    assert!(
        !done.exists(),
        "the first event arrived only after the engine finished"
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(done.exists());
    assert!(rest.lines().last().unwrap().contains("dispatch.result"));
}

#[test]
fn status_lists_units_and_reports_corruption() {
    let env = Env::new();
    let out = env.dispatch(
        "opencode",
        "s1",
        &[
            fake_stdout("opencode/1.18.33/a_json.stdout.jsonl"),
            ("FAKE_VERSION", "1.18.33".into()),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let out = run_bounded(env.cmd(&["status", "--json"]), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["unit"], "s1");
    assert_eq!(v[0]["state"], "done");
    assert_eq!(
        v[0]["engineSessionId"],
        capture_session_id("opencode/1.18.33/a_json.stdout.jsonl")
    );
    std::fs::create_dir_all(env.path().join("state/units/s2")).unwrap();
    std::fs::write(env.path().join("state/units/s2/marker.json"), "{ torn").unwrap();
    let out = run_bounded(env.cmd(&["status", "--json"]), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt"));
    // A corrupt marker is never overwritten by a new dispatch.
    let out = env.dispatch("codex", "s2", &[], &[]);
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(
        std::fs::read_to_string(env.path().join("state/units/s2/marker.json")).unwrap(),
        "{ torn"
    );
}

#[test]
fn doctor_fix_ends_exactly_the_orphaned_group() {
    let env = Env::new();
    let mut c = env.live("codex", "orphan", "x", &[]);
    c.env("FAKE_STDOUT", fixture("codex/0.171.0/a_json.stdout.jsonl"))
        .env("FAKE_MODE", "ignore-term")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut vf_proc = c.spawn().unwrap();
    let record = env.path().join("state/procs/orphan-1.json");
    wait_for("the owned-process record", Duration::from_secs(20), || {
        record.exists()
    });
    let rec: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let pgid = rec["pgid"].as_i64().unwrap() as i32;
    assert!(pgid > 1 && group_alive(pgid));
    // Without its watcher the group outlives vf (src/sys/lifeline.rs).
    cut_lifeline(pgid);
    vf_proc.kill().unwrap(); // kill -9 the supervisor: the engine is now an orphan
    vf_proc.wait().unwrap();
    assert!(
        group_alive(pgid),
        "the orphan should still run before --fix"
    );

    // An unrelated live process whose record carries a recycled-looking identity
    // (same pid, other start time): never proof enough to kill it.
    let mut bystander = Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap();
    let mut fake_rec = rec.clone();
    fake_rec["unit"] = "bystander".into();
    fake_rec["pgid"] = (bystander.id() as i64).into();
    fake_rec["cli"]["pid"] = bystander.id().into();
    fake_rec["cli"]["startTime"] = 1.into();
    std::fs::write(
        env.path().join("state/procs/bystander-1.json"),
        serde_json::to_vec(&fake_rec).unwrap(),
    )
    .unwrap();

    let out = run_bounded(
        env.cmd(&["doctor", "--fix", "--json"]),
        Duration::from_secs(30),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let findings: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_unit = |u: &str| {
        findings
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["unit"] == u)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_unit("orphan")["class"], "orphan");
    assert_eq!(by_unit("orphan")["action"], "ended");
    assert_eq!(by_unit("bystander")["action"], "none");
    wait_for("the orphaned group to end", Duration::from_secs(10), || {
        !group_alive(pgid)
    });
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander was killed"
    );
    assert!(!record.exists(), "the orphan's record was not released");
    let _ = bystander.kill();
    let _ = bystander.wait();
}

#[test]
fn a_bare_nonzero_exit_reports_the_clis_last_stderr_line() {
    let env = Env::new();
    let err = env.path().join("stderr.txt");
    std::fs::write(
        &err,
        "noise\n\x1b[31m--dangerously-skip-permissions cannot be used with root\x1b[0m\n\n",
    )
    .unwrap();
    let empty = env.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = env.dispatch(
        "claude",
        "bare",
        &[
            ("FAKE_STDOUT", empty.display().to_string()),
            ("FAKE_STDERR", err.display().to_string()),
            ("FAKE_EXIT", "1".into()),
            ("FAKE_VERSION", "2.1.332".into()),
        ],
        &[],
    );
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        r["error"],
        "claude exited with status 1: --dangerously-skip-permissions cannot be used with root"
    );
    // An error the engine stated in its frames is kept as it is.
    let out = env.dispatch(
        "codex",
        "framed",
        &[
            fake_stdout("codex/0.171.0/d_error500.stdout.jsonl"),
            ("FAKE_STDERR", err.display().to_string()),
            ("FAKE_EXIT", "1".into()),
        ],
        &[],
    );
    let r = last_json(&out);
    assert!(!r["error"].as_str().unwrap().contains("root"), "{r}");
}
