//! `setup` and `verify` around the engine: their failures, logs, environment,
//! timeout; and a failing verify blocking its dependents in a plan.

use super::*;

#[test]
fn a_failing_verify_fails_the_unit_and_blocks_its_dependent() {
    let r = Repo::new();
    let out = r.plan(&diamond(
        "verify = \"echo checking; echo broken >&2; exit 3\"",
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = last_json(&out);
    let b = unit_of(&res, "b");
    assert_eq!(
        (&b["state"], &b["reason"], &b["error"]),
        (
            &json!("failed"),
            &json!("verify"),
            &json!("verify exited with status 3: checking | broken")
        )
    );
    let d = unit_of(&res, "d");
    assert_eq!(
        (&d["state"], &d["reason"]),
        (&json!("blocked"), &json!("dependency"))
    );
    for u in ["a", "c"] {
        assert_eq!(unit_of(&res, u)["state"], "done");
    }
    // The engine's work was committed before verify ran; its output is logged.
    assert_eq!(r.files_of("vf/b"), ["README.md", "b.txt"]);
    let log = r.env.state().join("units/b/attempt-1.verify.log");
    assert_eq!(read_text(&log), "checking\nbroken\n");
}

#[test]
fn a_failing_setup_fails_the_unit_before_the_engine_starts() {
    let r = Repo::new();
    let runs = r.env.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let mut c = r.vf(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "s1",
        "--prompt",
        "go",
        "--json",
        "--worktree",
        "--setup",
        "echo \"$VF_UNIT $VF_ENGINE $VF_WORKTREE [$VF_SESSION_ID]\" > env.out; echo nope; exit 4",
    ]);
    c.env("FAKE_RUN_DIR", &runs);
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["state"], &res["reason"], &res["error"]),
        (
            &json!("failed"),
            &json!("setup"),
            &json!("setup exited with status 4: nope")
        )
    );
    assert!(!runs.join("events.log").exists(), "the engine started");
    let wt = r.worktree("s1");
    assert_eq!(
        read_text(&wt.join("env.out")),
        format!("s1 codex {} []\n", wt.display())
    );
    let log = r.env.state().join("units/s1/attempt-1.setup.log");
    assert_eq!(read_text(&log), "nope\n");
    let m = r.env.marker("s1");
    assert_eq!(
        (&m["state"], &m["reason"]),
        (&json!("failed"), &json!("setup"))
    );
}

#[test]
fn setup_and_verify_run_around_a_successful_engine() {
    let r = Repo::new();
    let out = r.dispatch(
        "s2",
        &[
            "--setup",
            "echo prepared > setup.out",
            "--verify",
            "test -f s2.txt && test -f setup.out && echo \"$VF_SESSION_ID\" > verify.out",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(res["state"], "done", "{res}");
    let session = res["sessionId"].as_str().unwrap();
    assert_eq!(
        read_text(&r.worktree("s2").join("verify.out")),
        format!("{session}\n")
    );
    // setup's file is part of the unit's commit; verify's comes after it.
    assert_eq!(r.files_of("vf/s2"), ["README.md", "s2.txt", "setup.out"]);
}

#[test]
fn a_verify_over_the_timeout_is_ended_with_its_whole_group() {
    let r = Repo::new();
    let pid_file = r.env.path().join("verify.pid");
    let verify = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
    let out = r.dispatch("s3", &["--verify", &verify, "--timeout", "2"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["state"], &res["reason"], &res["error"]),
        (
            &json!("failed"),
            &json!("timeout"),
            &json!("verify timed out after 2s")
        )
    );
    let pid: i32 = read_text(&pid_file).trim().parse().unwrap();
    wait_for(
        "the verify's sleep to be gone",
        Duration::from_secs(5),
        || !signal(pid, 0),
    );
}

#[test]
fn a_signal_during_verify_ends_its_group_and_fails_the_unit_as_interrupted() {
    let r = Repo::new();
    let pid_file = r.env.path().join("verify.pid");
    let verify = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
    let mut c = r.vf(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "sig",
        "--prompt",
        "go",
        "--json",
        "--worktree",
        "--verify",
        &verify,
    ]);
    c.stdout(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    wait_for("the verify step", Duration::from_secs(30), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
    });
    signal(child.id() as i32, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["state"], &res["reason"], &res["error"]),
        (
            &json!("failed"),
            &json!("interrupted"),
            &json!("verify interrupted by SIGTERM")
        )
    );
    let pid: i32 = read_text(&pid_file).trim().parse().unwrap();
    wait_for(
        "the verify's sleep to be gone",
        Duration::from_secs(5),
        || !signal(pid, 0),
    );
}

/// Ends a process group when dropped: what a failed test leaves is not leaked.
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.0 > 1 {
            signal(-self.0, libc::SIGKILL);
        }
    }
}

/// Issue 25, defect 6: `kill -9` of vf while its `--verify` runs. Returns
/// the verify's shell and sleep pids (the shell leads its group), both
/// still running, and the guard that ends them should the test fail.
fn orphaned_verify(r: &Repo, unit: &str) -> (i32, i32, GroupGuard) {
    let (sh_file, sleep_file) = (r.env.path().join("sh.pid"), r.env.path().join("sleep.pid"));
    let verify = format!(
        "echo $$ > {}; sleep 37 & echo $! > {}; wait",
        sh_file.display(),
        sleep_file.display()
    );
    let mut c = r.dispatch_cmd(unit, &["--verify", &verify]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut vf = c.spawn().unwrap();
    let pid_in = |f: &Path| -> Option<i32> {
        let text = std::fs::read_to_string(f).ok()?;
        text.strip_suffix('\n')?.parse().ok()
    };
    wait_for("the verify step", Duration::from_secs(30), || {
        pid_in(&sh_file).is_some() && pid_in(&sleep_file).is_some()
    });
    let (sh, sleep) = (pid_in(&sh_file).unwrap(), pid_in(&sleep_file).unwrap());
    let guard = GroupGuard(sh);
    // Without its watcher the group outlives vf (src/sys/lifeline.rs).
    cut_lifeline(sh);
    vf.kill().unwrap(); // SIGKILL: vf ends nothing itself
    vf.wait().unwrap();
    assert!(
        signal(sh, 0) && signal(sleep, 0),
        "the verify did not survive vf"
    );
    (sh, sleep, guard)
}

/// The verify's processes end (killed ones may linger a moment as zombies
/// until init reaps them) and its record is released.
fn assert_ended(r: &Repo, unit: &str, pids: [i32; 2]) {
    wait_for(
        "the verify's processes to end",
        Duration::from_secs(10),
        || pids.iter().all(|p| !signal(*p, 0)),
    );
    let record = r.env.state().join(format!("procs/{unit}-1-verify.json"));
    assert!(!record.exists(), "{} was not released", record.display());
}

#[test]
fn doctor_fix_ends_a_verify_that_outlived_a_killed_vf() {
    let r = Repo::new();
    let (sh, sleep, _guard) = orphaned_verify(&r, "kv");
    let out = r.run(&["doctor", "--fix", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let findings = stdout_json(&out);
    let rows = findings.as_array().cloned().unwrap_or_default();
    let verify: Vec<_> = rows.iter().filter(|f| f["step"] == "verify").collect();
    assert_eq!(verify.len(), 1, "{findings}");
    let f = verify[0];
    assert_eq!(
        (&f["unit"], &f["class"], &f["action"], &f["pgid"]),
        (&json!("kv"), &json!("orphan"), &json!("ended"), &json!(sh)),
        "{f}"
    );
    assert_ended(&r, "kv", [sh, sleep]);
}

#[test]
fn the_units_next_run_ends_a_verify_that_outlived_a_killed_vf() {
    let r = Repo::new();
    let (sh, sleep, _guard) = orphaned_verify(&r, "kr");
    let out = r.run(&["resume", "kr", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(res["state"], "done", "{res}");
    let notice = format!("ended the verify command left running by a dead vf (process group {sh})");
    assert!(stderr(&out).contains(&notice), "{}", stderr(&out));
    assert_ended(&r, "kr", [sh, sleep]);
}

/// Issue 39: `kill -9` of vf while `setup` runs left a worktree and branch
/// but no marker, so `vf status` and `vf resume` did not know the unit. The
/// unit is known (pending, with its workspace) from the moment its
/// workspace exists, and its next run takes it up.
#[test]
fn a_vf_killed_during_setup_leaves_a_unit_status_and_resume_know() {
    let r = Repo::new();
    let (sh_file, sleep_file) = (r.env.path().join("sh.pid"), r.env.path().join("sleep.pid"));
    let setup = format!(
        "[ -e {done} ] && exit 0; echo $$ > {}; sleep 37 & echo $! > {}; wait",
        sh_file.display(),
        sleep_file.display(),
        done = r.env.path().join("setup.done").display(),
    );
    let mut c = r.dispatch_cmd("ks", &["--setup", &setup]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut vf = c.spawn().unwrap();
    let pid_in = |f: &Path| -> Option<i32> {
        let text = std::fs::read_to_string(f).ok()?;
        text.strip_suffix('\n')?.parse().ok()
    };
    wait_for("the setup step", Duration::from_secs(30), || {
        pid_in(&sh_file).is_some() && pid_in(&sleep_file).is_some()
    });
    let _guard = GroupGuard(pid_in(&sh_file).unwrap());
    vf.kill().unwrap(); // SIGKILL: vf writes nothing more
    vf.wait().unwrap();
    assert!(r.worktree("ks").is_dir());
    let out = r.run(&["status", "ks", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m = stdout_json(&out);
    assert_eq!(
        (&m["state"], &m["workspace"]["branch"]),
        (&json!("pending"), &json!("vf/ks")),
        "{m}"
    );
    // `vf resume` knows it (it never reached its engine), and its next
    // dispatch takes the same worktree up and finishes it.
    let out = r.run(&["resume", "ks", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("it never started (pending); dispatch it instead"),
        "{}",
        stderr(&out)
    );
    std::fs::write(r.env.path().join("setup.done"), "").unwrap();
    let out = r.dispatch("ks", &["--setup", &setup]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["state"], &res["attempt"]),
        (&json!("done"), &json!(2)),
        "{res}"
    );
}
