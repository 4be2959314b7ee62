//! Issue 11: how a run ends. An unwritable raw log, SIGHUP/SIGQUIT, and the
//! one grace rule (also for the drain after the engine's leader exits).

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use super::*;

/// Lines of every event's `rawRange` are within the log's lines.
fn ranges_within(stdout: &str, log_lines: u64) {
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(end) = v["rawRange"]["end"].as_u64() {
            assert!(
                end <= log_lines,
                "{line} points past the log's {log_lines} lines"
            );
        }
    }
}

#[test]
fn an_unwritable_raw_log_is_a_state_failure_that_ends_the_engine() {
    let env = Env::new();
    // Far more output than the 64 KiB the log may hold, then the engine keeps running.
    let cap = std::fs::read_to_string(fixture("codex/0.171.0/b_tool.stdout.jsonl")).unwrap();
    let (first, rest) = cap.split_once('\n').unwrap();
    let filler = r#"{"type":"item.completed","item":{"id":"item_9","type":"agent_message","text":"padding padding padding padding padding padding padding padding"}}"#;
    let mut big = format!("{first}\n");
    for _ in 0..2000 {
        big.push_str(filler);
        big.push('\n');
    }
    big.push_str(rest);
    let out_file = env.path().join("big.jsonl");
    std::fs::write(&out_file, &big).unwrap();
    let mut c = env.live("codex", "full", "x", &[]);
    c.env("FAKE_STDOUT", &out_file).env("FAKE_MODE", "hang");
    // A full disk, for this process only: writes past 64 KiB fail (EFBIG).
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
    let out = run_bounded(c, Duration::from_secs(60));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(5), "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("cannot write the raw log") && error.contains("the engine was ended"),
        "{r}"
    );
    let session = capture_session_id("codex/0.171.0/b_tool.stdout.jsonl");
    let mut want = finished_result("codex", "full", 1, "failed", 0, &session.into());
    want["kind"] = "dispatch.result".into();
    want["reason"] = "state".into();
    want["error"] = error.into();
    // Ended by vf, so no exit status; the answer so far is the last message.
    want["exitCode"] = Value::Null;
    want["answer"] = "padding padding padding padding padding padding padding padding".into();
    assert_json_eq(&r, &want);
    assert_json_eq(
        &env.normalized(&env.marker("full")),
        &finished_marker(&want, 1),
    );
    let pgid = env.marker("full")["owner"]["pgid"].as_i64().unwrap() as i32;
    wait_for("the engine's group to end", Duration::from_secs(5), || {
        !group_alive(pgid)
    });
    let log = std::fs::read(env.state().join("units/full/attempt-1.stdout.log")).unwrap();
    let log_lines = log.iter().filter(|b| **b == b'\n').count() as u64;
    assert!(log.len() <= 64 << 10 && log_lines > 0);
    ranges_within(&stdout, log_lines);
}

#[test]
fn the_kill_grace_also_governs_the_drain_after_the_leader_exits() {
    let env = Env::new();
    let cleaned = env.path().join("cleaned");
    // The leader exits at once; its grandchild holds stdout for 3.5 s while it
    // cleans up, longer than the drain vf used to allow whatever the grace.
    let out = env.dispatch(
        "codex",
        "drain",
        &[
            fake_stdout("codex/0.171.0/a_json.stdout.jsonl"),
            ("FAKE_MODE", "spawn-cleanup".into()),
            ("FAKE_CLEANUP_SECS", "3.5".into()),
            ("FAKE_CLEANUP_FILE", cleaned.display().to_string()),
            ("VF_KILL_GRACE_MS", "15000".into()),
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        cleaned.exists(),
        "the grandchild was killed before its grace ran out"
    );

    // An invalid grace is a usage error, before anything is written.
    let out = env.dispatch(
        "codex",
        "badgrace",
        &[("VF_KILL_GRACE_MS", "abc".into())],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("VF_KILL_GRACE_MS"));
    assert!(env.marker_opt("badgrace").is_none());
}

#[test]
fn stall_timeout_kills_and_exits_4() {
    let env = Env::new();
    let out = env.dispatch(
        "codex",
        "stall",
        &[
            fake_stdout("codex/0.171.0/a_json.stdout.jsonl"),
            ("FAKE_MODE", "hang".into()),
        ],
        &["--stall-timeout", "1"],
    );
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(4), "{r}");
    let cap = "codex/0.171.0/a_json.stdout.jsonl";
    // All was printed, then nothing: the answer and its summary are kept.
    assert!(r["summary"]["confidence"].is_number(), "{r}");
    let want = ended_by_vf(&r, "stall", cap, "stalled", "stalled: no output for 1s");
    assert_json_eq(&r, &want);
    assert_json_eq(
        &env.normalized(&env.marker("stall")),
        &finished_marker(&want, 1),
    );
}

/// The result of a run vf ended for `reason` (`error`) while it replayed
/// `cap`: failed, no exit status, the answer and summary it had given so far.
fn ended_by_vf(r: &Value, unit: &str, cap: &str, reason: &str, error: &str) -> Value {
    let mut want = finished_result(
        "codex",
        unit,
        1,
        "failed",
        0,
        &capture_session_id(cap).into(),
    );
    want["reason"] = reason.into();
    want["error"] = error.into();
    want["exitCode"] = Value::Null;
    want["answer"] = r["answer"].clone();
    want["summary"] = r["summary"].clone();
    used(&mut want, r);
    want
}

#[test]
fn wall_timeout_kills_and_exits_4() {
    let env = Env::new();
    let cap = "codex/0.171.0/b_tool.stdout.jsonl";
    // The capture up to its first answer, printed at once; then the engine
    // hangs. (Lines paced against the timeout made the cut depend on how
    // fast a loaded machine starts the fake.)
    let head: String = std::fs::read_to_string(common::fixture(cap))
        .unwrap()
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    let part = env.path().join("head.jsonl");
    std::fs::write(&part, head).unwrap();
    let out = env.dispatch(
        "codex",
        "slow",
        &[
            ("FAKE_STDOUT", part.display().to_string()),
            ("FAKE_MODE", "hang".into()),
        ],
        &["--timeout", "1", "--stall-timeout", "30"],
    );
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(4), "{r}");
    let want = ended_by_vf(&r, "slow", cap, "timeout", "timed out after 1s");
    // Cut off mid-stream: the answer so far, no summary yet.
    assert_eq!(r["answer"], "I will run the command.", "{r}");
    assert_eq!(r["summary"], Value::Null, "{r}");
    assert_json_eq(&r, &want);
}

#[test]
fn grandchildren_do_not_survive_a_normal_exit() {
    let env = Env::new();
    let pidfile = env.path().join("gc.pid");
    let out = env.dispatch(
        "codex",
        "gc",
        &[
            fake_stdout("codex/0.171.0/a_json.stdout.jsonl"),
            ("FAKE_MODE", "spawn-child".into()),
            ("FAKE_CHILD_PID", pidfile.display().to_string()),
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pgid = env.marker("gc")["owner"]["pgid"].as_i64().unwrap() as i32;
    wait_for("grandchild reaped", Duration::from_secs(5), || {
        !group_alive(pgid)
    });
}

#[test]
fn every_forwarded_signal_reaches_the_whole_group_and_escalates() {
    let env = Env::new();
    // The engine ignores SIGINT and SIGTERM: only the SIGKILL after the grace ends it.
    let cap = "codex/0.171.0/a_json.stdout.jsonl";
    for (sig, code, name) in [
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGHUP, 129, "SIGHUP"),
        (libc::SIGQUIT, 131, "SIGQUIT"),
    ] {
        let unit = format!("sig{sig}");
        let mut c = env.live("codex", &unit, "x", &[]);
        c.env("FAKE_STDOUT", fixture(cap))
            .env("FAKE_MODE", "ignore-term")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let pgid = env.wait_running(&unit, true);
        assert!(group_alive(pgid));
        signal(child.id() as i32, sig);
        assert_eq!(wait_exit(&mut child).code(), Some(code), "signal {sig}");
        // Killed members may linger a moment as zombies until init reaps them.
        wait_for("the group to be gone", Duration::from_secs(5), || {
            !group_alive(pgid)
        });
        let m = env.normalized(&env.marker(&unit));
        let id = capture_session_id(cap).into();
        let mut want = finished_marker(&finished_result("codex", &unit, 1, "failed", 0, &id), 1);
        want["reason"] = "interrupted".into();
        want["error"] = format!("interrupted by {name}").into();
        want["exitCode"] = Value::Null;
        want["summary"] = m["summary"].clone();
        used(&mut want, &m);
        assert_json_eq(&m, &want);
    }
}
