//! Notification hooks of `vf dispatch` (`--on-finish`, `--on-fail`): the
//! exact result JSON on stdin, their output kept off stdout, a failing or
//! hanging hook only a warning (the hanging one ended, nothing left behind).

use super::*;

fn plain_cmd(r: &Repo, unit: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "dispatch", "--engine", "codex", "--unit", unit, "--prompt", "go", "--json",
    ];
    args.extend_from_slice(extra);
    r.vf(&args)
}

#[test]
fn on_finish_gets_the_printed_result_and_on_fail_runs_only_on_failure() {
    let r = Repo::new();
    let out_dir = r.env.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let hooks = [
        "--on-finish",
        "echo noise; echo to-stderr >&2; cat > \"$HOOK_OUT/finish-$VF_UNIT.json\"",
        "--on-fail",
        "cat > \"$HOOK_OUT/fail-$VF_UNIT.json\"",
    ];
    let mut c = plain_cmd(&r, "h1", &hooks);
    c.env("HOOK_OUT", &out_dir);
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // stdout is the result alone (`--json | jq` works): the hook's noise is in its log.
    let printed = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(read_text(&out_dir.join("finish-h1.json")), printed);
    assert_eq!(stdout_json(&out)["state"], "done");
    assert!(!out_dir.join("fail-h1.json").exists());
    let log = r.env.state().join("units/h1/attempt-1.on-finish.log");
    assert_eq!(read_text(&log), "noise\nto-stderr\n");
    // A failed unit runs both.
    let mut c = plain_cmd(&r, "h2", &hooks);
    c.env("HOOK_OUT", &out_dir).env("FAKE_EXIT", "1");
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let printed = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(read_text(&out_dir.join("fail-h2.json")), printed);
    assert_eq!(read_text(&out_dir.join("finish-h2.json")), printed);
}

#[test]
fn a_failing_hook_is_a_warning_and_changes_no_exit_code() {
    let r = Repo::new();
    let c = plain_cmd(&r, "f1", &["--on-finish", "echo broken; exit 3"]);
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["state"], "done");
    let err = stderr(&out);
    assert!(
        err.contains("vf: warning: f1: on-finish hook exited with status 3 (log ")
            && err.contains("): broken"),
        "{err}"
    );
    assert_eq!(r.env.marker("f1")["state"], "done");
}

/// Whether `pid` runs: exists and is not a zombie (an orphaned zombie may
/// wait for a PID 1 that does not reap), as `ps` says on every POSIX system.
fn running(pid: i32) -> bool {
    let out = Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .unwrap();
    let stat = String::from_utf8_lossy(&out.stdout);
    !stat.trim().is_empty() && !stat.trim().starts_with('Z')
}

#[test]
fn a_hanging_hook_is_ended_at_its_timeout_and_leaves_no_process() {
    let r = Repo::new();
    let pid_file = r.env.path().join("sleep.pid");
    let hook = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
    let mut c = plain_cmd(&r, "t1", &["--on-finish", &hook]);
    c.env("VF_HOOK_TIMEOUT_MS", "700");
    let started = std::time::Instant::now();
    let out = run_bounded(c, Duration::from_secs(60));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("on-finish hook timed out after 0.7s and was ended"),
        "{}",
        stderr(&out)
    );
    let pid: i32 = read_text(&pid_file).trim().parse().unwrap();
    wait_for("the hook's sleep to end", Duration::from_secs(5), || {
        !running(pid)
    });
    // A bad timeout is refused before anything runs.
    let mut c = plain_cmd(&r, "t2", &["--on-finish", "true"]);
    c.env("VF_HOOK_TIMEOUT_MS", "soon");
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!r.env.state().join("units/t2").exists());
}
