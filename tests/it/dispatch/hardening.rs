//! Issue 11: one writer per unit, the session id durable before it is shown,
//! validation before any state is written, the prompt cap, clear messages.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::*;

/// Waits (bounded) until one of `children` has exited; returns its index.
fn first_exit(children: &mut [Child]) -> (usize, ExitStatus) {
    let mut found = None;
    wait_for("a dispatch to exit", Duration::from_secs(20), || {
        found = children
            .iter_mut()
            .enumerate()
            .find_map(|(i, c)| c.try_wait().unwrap().map(|s| (i, s)));
        found.is_some()
    });
    found.unwrap()
}

#[test]
fn two_dispatches_of_one_unit_exactly_one_runs() {
    let env = Env::new();
    let release = env.path().join("release");
    let runs = env.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    // Both start at once, and a slow `--version` keeps each one in its
    // preparation long enough for the other to read the marker too; the
    // winner's engine then waits until the loser has exited.
    let barrier = Arc::new(Barrier::new(2));
    let spawners: Vec<_> = (0..2)
        .map(|_| {
            let mut c = env.command("codex", "u", "x", "json", &[]);
            c.env("FAKE_STDOUT", fixture("codex/0.171.0/a_json.stdout.jsonl"))
                .env("FAKE_WAIT_FILE", &release)
                .env("FAKE_VERSION_DELAY", "1")
                .env("FAKE_RUN_DIR", &runs)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                c.spawn().unwrap()
            })
        })
        .collect();
    let mut children: Vec<Child> = spawners.into_iter().map(|h| h.join().unwrap()).collect();
    let (loser, status) = first_exit(&mut children);
    let winner = children.remove(1 - loser);
    let loser = children.remove(0);
    let refused = loser.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("unit u is running under vf pid {}", winner.id())),
        "{}",
        stderr(&refused)
    );
    // `vf resume` takes the same lock.
    let resumed = run_bounded(env.cmd(&["resume", "u"]), Duration::from_secs(30));
    assert_eq!(resumed.status.code(), Some(2));
    let holder = format!("unit u is running under vf pid {}", winner.id());
    assert!(stderr(&resumed).contains(&holder), "{}", stderr(&resumed));
    std::fs::write(&release, "").unwrap();
    let mut winner = winner;
    let (_, status) = first_exit(std::slice::from_mut(&mut winner));
    assert_eq!(status.code(), Some(0));
    let events = std::fs::read_to_string(runs.join("events.log")).unwrap();
    assert_eq!(
        events.lines().filter(|l| l.starts_with("start ")).count(),
        1,
        "{events}"
    );
    let m = env.normalized(&env.marker("u"));
    let id = capture_session_id("codex/0.171.0/a_json.stdout.jsonl").into();
    let mut want = finished_marker(&finished_result("codex", "u", 1, "done", 0, &id), 1);
    assert!(m["summary"]["confidence"].is_number(), "{m}");
    want["summary"] = m["summary"].clone();
    used(&mut want, &m);
    assert_json_eq(&m, &want);
}

#[test]
fn kill_9_right_after_the_id_is_printed_finds_it_saved() {
    let env = Env::new();
    let cap = "codex/0.171.0/b_tool.stdout.jsonl";
    let id = capture_session_id(cap);
    // Kill at the id's line, and at each of the lines after it.
    for extra in 0..5 {
        let unit = format!("k{extra}");
        let mut c = env.live("codex", &unit, "x", &[]);
        c.env("FAKE_STDOUT", fixture(cap))
            .env("FAKE_DELAY", "0.05")
            .env("FAKE_MODE", "hang")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = Vec::new();
        let mut after_id = None;
        while after_id != Some(extra) {
            let line = lines.next().expect("vf ended early").unwrap();
            after_id = after_id.map(|n| n + 1).or(line.contains(&id).then_some(0));
            printed.push(line);
        }
        child.kill().unwrap(); // SIGKILL: no cleanup at all
        child.wait().unwrap();
        let m = env.marker(&unit);
        // Every id that was printed is the id saved.
        let shown: Vec<&String> = printed.iter().filter(|l| l.contains(&id)).collect();
        assert!(!shown.is_empty());
        assert_eq!(
            m["engineSessionId"], id,
            "printed {shown:?} but the marker has {m}"
        );
        signal(
            -(m["owner"]["pgid"].as_i64().unwrap() as i32),
            libc::SIGKILL,
        );
    }
}

#[test]
fn a_refused_dispatch_leaves_the_marker_byte_identical() {
    let env = Env::new();
    let failing = fake_stdout("codex/0.171.0/d_error500.stdout.jsonl");
    let out = env.dispatch("codex", "keep", &[failing, ("FAKE_EXIT", "1".into())], &[]);
    assert_eq!(out.status.code(), Some(1));
    let before = env.marker_bytes("keep");
    assert!(env.marker("keep")["engineSessionId"].is_string());

    // A mistyped --session, short and pasted 10 KB long.
    let long = format!("01a229fa-TYPO{}", "x".repeat(10_000));
    for typo in ["01a229fa-TYPO", long.as_str()] {
        let out = env.dispatch("codex", "keep", &[], &["--session", typo]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("01a229fa-TYPO") && err.len() < 400, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(env.marker_bytes("keep"), before);
    }
    // Another engine whose binary is missing.
    let out = run_bounded(
        env.cmd(&[
            "dispatch",
            "--engine",
            "gemini",
            "--unit",
            "keep",
            "--prompt",
            "x",
            "--engine-bin",
            "/nonexistent/gemini",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(env.marker_bytes("keep"), before);
    // An invalid invocation: a NUL byte in an argv engine's prompt.
    let nul = env.path().join("nul.md");
    std::fs::write(&nul, "look at\0this").unwrap();
    let bin = env.fake_for("copilot");
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "copilot",
        "--unit",
        "keep",
        "--prompt-file",
        nul.to_str().unwrap(),
        "--engine-bin",
        bin.to_str().unwrap(),
    ]);
    c.env("FAKE_VERSION", "1.0.102");
    let out = run_bounded(c, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("prompt contains a NUL byte"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.marker_bytes("keep"), before);
}

/// `vf dispatch` with its address space capped, so a runaway read fails
/// instead of exhausting the machine.
fn capped(env: &Env, extra: &[&str]) -> Command {
    let mut args = vec!["dispatch", "--engine", "codex", "--unit", "big"];
    args.extend_from_slice(extra);
    let mut c = env.cmd(&args);
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    c
}

#[test]
fn prompts_over_16_mib_are_refused_before_anything_is_written() {
    let env = Env::new();
    let big = env.path().join("big.md");
    std::fs::write(&big, vec![b'a'; 16 * 1024 * 1024 + 1]).unwrap();
    for file in ["/dev/zero", big.to_str().unwrap()] {
        let out = run_bounded(
            capped(&env, &["--prompt-file", file]),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).contains("16 MiB"), "{}", stderr(&out));
    }
    // An endless stdin.
    let mut c = capped(&env, &[]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let chunk = vec![b'y'; 1 << 16];
        while stdin.write_all(&chunk).is_ok() {}
    });
    let (_, status) = first_exit(std::slice::from_mut(&mut child));
    assert_eq!(status.code(), Some(2));
    feeder.join().unwrap();
    assert!(!env.path().join("state").exists(), "state was written");
}

#[test]
fn a_deleted_working_directory_and_a_missing_interpreter_are_named() {
    let env = Env::new();
    let sub = env.path().join("work");
    std::fs::create_dir(&sub).unwrap();
    let failing = fake_stdout("codex/0.171.0/d_error500.stdout.jsonl");
    let out = env.dispatch(
        "codex",
        "gone",
        &[failing, ("FAKE_EXIT", "1".into())],
        &["--cwd", sub.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_dir(&sub).unwrap();
    let out = run_bounded(
        env.cmd(&["resume", "gone", "--engine-bin", fake().to_str().unwrap()]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "the working directory {} is missing",
            sub.display()
        )),
        "{}",
        stderr(&out)
    );

    let script = std::fs::read_to_string(fake()).unwrap();
    let body = script.split_once('\n').unwrap().1;
    let bin = env.path().join("bin-interp");
    std::fs::write(&bin, format!("#!/nonexistent/interp/bash\n{body}")).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = run_bounded(
        env.cmd(&[
            "dispatch",
            "--engine",
            "codex",
            "--unit",
            "interp",
            "--prompt",
            "x",
            "--engine-bin",
            bin.to_str().unwrap(),
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("its interpreter /nonexistent/interp/bash (from the #! line) does not exist"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn kill_9_mid_stream_then_resume_with_exact_id() {
    let env = Env::new();
    let cap = "codex/0.171.0/b_tool.stdout.jsonl";
    let mut c = env.live("codex", "crash", "x", &[]);
    c.env("FAKE_STDOUT", fixture(cap))
        .env("FAKE_DELAY", "0.5")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let pgid = env.wait_running("crash", true);
    child.kill().unwrap(); // SIGKILL: no cleanup at all
    child.wait().unwrap();
    // What a killed run leaves: `running`, with its owner and the session id.
    let mut want = finished_marker(
        &finished_result(
            "codex",
            "crash",
            1,
            "running",
            0,
            &capture_session_id(cap).into(),
        ),
        1,
    );
    want["finishedAt"] = Value::Null;
    want["exitCode"] = Value::Null;
    want["reason"] = Value::Null;
    assert_json_eq(&env.normalized(&env.marker("crash")), &want);
    // The orphaned fake engine keeps running; end it so it does not leak.
    signal(-pgid, libc::SIGKILL);

    let log = env.path().join("resume-args.log");
    let mut c = env.cmd(&[
        "resume",
        "crash",
        "--prompt",
        "go on",
        "--output",
        "json",
        "--engine-bin",
        fake().to_str().unwrap(),
    ]);
    c.env("FAKE_STDOUT", fixture(cap))
        .env("FAKE_ARGS_LOG", &log);
    let out = run_bounded(c, Duration::from_secs(60));
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(0), "{r}");
    let mut want = finished_result(
        "codex",
        "crash",
        2,
        "done",
        0,
        &capture_session_id(cap).into(),
    );
    want["engineReason"] = Value::Null;
    answered(&mut want, &r);
    assert_json_eq(&r, &want);
    assert_json_eq(
        &env.normalized(&env.marker("crash")),
        &finished_marker(&want, 2),
    );
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.starts_with(&format!(
            "exec\nresume\n{}\n--json\n",
            capture_session_id(cap)
        )),
        "{args}"
    );
    assert!(args.ends_with("--stdin--\ngo on"), "{args}");

    // A done unit is never resumed.
    let out = run_bounded(env.cmd(&["resume", "crash"]), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("done"));
}
