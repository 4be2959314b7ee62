//! An engine never outlives its vf (src/sys/lifeline.rs): `kill -9` of
//! `vf dispatch`, at the first moment the engine runs or mid-run, and its
//! group is gone within a second; the watcher leaves the engine's output
//! and exit status alone.

use std::process::Stdio;
use std::time::Duration;

use super::*;
use common::{cut_lifeline, group_ends_within, lifeline_watchers, signal, wait_for};

/// After vf is reaped (its pipe end closed by the kernel), the group must
/// be gone within this.
const WITHIN: Duration = Duration::from_secs(1);

/// `(kind, pid)` lines of a fake's log (`start <pid>`, `end <pid>`).
fn log_lines(log: &std::path::Path) -> Vec<(String, i32)> {
    read_text_opt(log)
        .lines()
        .filter_map(|l| {
            let (kind, pid) = l.split_once(' ')?;
            Some((kind.to_string(), pid.parse().ok()?))
        })
        .collect()
}

fn read_text_opt(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Issue 38: in 3 of 56 `kill -9`s within the first 100 ms of a dispatch,
/// the engine ran on with neither its record nor the marker written. Here
/// the engine itself kills vf at its very first step (before vf can write
/// either): the lifeline ends it all the same.
#[test]
fn kill_9_of_dispatch_at_the_engines_first_step_ends_its_group() {
    let env = Env::new();
    let log = env.path().join("engine.log");
    let engine = write_exe(
        &env.path().join("codex"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 0.171.0; exit 0; }}\n\
             echo \"start $$\" >> '{log}'\nkill -9 $PPID\nsleep 30\necho \"end $$\" >> '{log}'\n",
            log = log.display()
        ),
    );
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "w",
        "--prompt",
        "p",
        "--engine-bin",
    ]);
    c.arg(&engine).stdout(Stdio::null()).stderr(Stdio::null());
    let mut vf_proc = c.spawn().unwrap();
    let status = wait_exit(&mut vf_proc);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL),
        "vf was not killed by its engine: {status:?}"
    );
    wait_for("the engine's start line", Duration::from_secs(10), || {
        !log_lines(&log).is_empty()
    });
    let pgid = log_lines(&log)[0].1;
    let took = group_ends_within(pgid, WITHIN);
    eprintln!("group {pgid} gone {took:?} after vf was reaped");
    assert_eq!(log_lines(&log), vec![("start".to_string(), pgid)]);
}

/// `kill -9` of `vf dispatch` mid-engine (the engine printed its session and
/// works on, with a child of its own): the group is gone within a second,
/// the work never ends on its own, and the next dispatch of the unit runs
/// it to its end once.
#[test]
fn kill_9_of_dispatch_mid_engine_ends_its_group() {
    let env = Env::new();
    let runs = env.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let capture = fixture("codex/0.171.0/b_tool.stdout.jsonl");
    let mut c = env.live("codex", "mid", "x", &[]);
    c.env("FAKE_STDOUT", &capture)
        .env("FAKE_MODE", "hang")
        .env("FAKE_RUN_DIR", &runs)
        .env("FAKE_NAME", "mid")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut vf_proc = c.spawn().unwrap();
    let pgid = env.wait_running("mid", true);
    // The watcher is a member of the group and not the engine's child.
    let watchers = lifeline_watchers(pgid);
    assert_eq!(watchers.len(), 1, "{watchers:?}");
    assert_ne!(parent_of(watchers[0]), pgid);
    vf_proc.kill().unwrap();
    vf_proc.wait().unwrap();
    let took = group_ends_within(pgid, WITHIN);
    eprintln!("group {pgid} gone {took:?} after vf was reaped");
    let events = read_text_opt(&runs.join("events.log"));
    assert_eq!(events, format!("start mid {pgid}\n"));

    let mut again = env.live("codex", "mid", "again", &[]);
    again
        .env("FAKE_STDOUT", &capture)
        .env("FAKE_RUN_DIR", &runs)
        .env("FAKE_NAME", "mid");
    let out = run_bounded(again, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let events = read_text_opt(&runs.join("events.log"));
    let ends = events.lines().filter(|l| l.starts_with("end mid ")).count();
    assert_eq!(ends, 1, "{events}");
}

/// The parent pid of `pid` (field 4 of `/proc/<pid>/stat`).
fn parent_of(pid: u32) -> i32 {
    let stat = read_text_opt(std::path::Path::new(&format!("/proc/{pid}/stat")));
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// What the watcher must not change: the engine's own output, stdin and
/// exit status reach vf as before, the unit ends as the engine did, and
/// no watcher is left once vf is done.
#[test]
fn the_watcher_leaves_output_and_exit_status_alone() {
    let env = Env::new();
    let cap = "codex/0.171.0/d_error500.stdout.jsonl";
    let out = env.dispatch(
        "codex",
        "st",
        &[
            ("FAKE_STDOUT", fixture(cap).display().to_string()),
            ("FAKE_EXIT", "7".into()),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let m = env.marker("st");
    assert_eq!(m["exitCode"], 7, "{m}");
    let raw = files_under(&env.state())
        .into_iter()
        .find(|f| f.ends_with("attempt-1.stdout.log"))
        .expect("the raw log");
    assert_eq!(read_text(&raw), read_text(&fixture(cap)));
    let pgid = m["owner"]["pgid"].as_i64().unwrap() as i32;
    assert!(vf::process::orphans::group_members(pgid).is_empty());
}

/// A watcher someone killed: the group then outlives vf (what `vf doctor
/// --fix` is still for), and nothing else about the run changes.
#[test]
fn a_cut_lifeline_leaves_the_orphan_to_doctor() {
    let env = Env::new();
    let mut c = env.live("codex", "cut", "x", &[]);
    c.env("FAKE_STDOUT", fixture("codex/0.171.0/a_json.stdout.jsonl"))
        .env("FAKE_MODE", "hang")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut vf_proc = c.spawn().unwrap();
    let pgid = env.wait_running("cut", false);
    cut_lifeline(pgid);
    vf_proc.kill().unwrap();
    vf_proc.wait().unwrap();
    let still = !vf::process::orphans::group_members(pgid).is_empty();
    let out = env.run(&["doctor", "--fix", "--json"]);
    let left = !vf::process::orphans::group_members(pgid).is_empty();
    if left {
        signal(-pgid, libc::SIGKILL);
    }
    assert!(still, "the group ended without its watcher");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!left, "doctor --fix left the orphan running");
}
