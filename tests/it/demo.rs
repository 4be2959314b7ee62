//! `vf demo`: a three-unit plan in worktrees of a temporary repository on
//! the recorded engine (an embedded capture, never a model), then status and
//! report; nothing written outside TMPDIR; never chosen by `--engine auto`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::*;

/// `vf demo ARGS` with its own HOME and TMPDIR, and a user config that would
/// be refused if it were read.
fn demo(home: &Path, tmp: &Path, path: &str, args: &[&str]) -> Output {
    let config = tmp.parent().unwrap().join("bad-config.toml");
    std::fs::write(&config, "no_such_key = 1\n").unwrap();
    let mut c = Command::new(vf());
    for k in callers_settings() {
        c.env_remove(k);
    }
    c.arg("demo")
        .args(args)
        .current_dir(tmp)
        .env("HOME", home)
        .env("TMPDIR", tmp)
        // Windows' temp dir comes from TMP (then TEMP), not TMPDIR.
        .env("TMP", tmp)
        .env("TEMP", tmp)
        .env("PATH", path)
        .env("VF_CONFIG", config);
    git_env(&mut c);
    run_bounded(c, Duration::from_secs(60))
}

fn dirs() -> (TempDir, PathBuf, PathBuf) {
    let top = tempdir();
    let (home, tmp) = (top.path().join("home"), top.path().join("tmp"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    (top, home, tmp)
}

fn marker(state: &Path, unit: &str) -> Value {
    let text = read_text(&state.join("units").join(unit).join("marker.json"));
    serde_json::from_str(&text).unwrap()
}

fn at(m: &Value, key: &str) -> String {
    m[key].as_str().unwrap().to_string()
}

#[test]
fn demo_runs_the_plan_on_the_recorded_engine_inside_tmpdir() {
    let (_top, home, tmp) = dirs();
    let started = std::time::Instant::now();
    let out = demo(&home, &tmp, &std::env::var("PATH").unwrap(), &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20));
    let result = stdout_json(&out);
    let units: Vec<(&str, &str, &str)> = result["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let s = |k: &str| u[k].as_str().unwrap();
            (s("unit"), s("engine"), s("state"))
        })
        .collect();
    assert_eq!(
        units,
        [
            ("docs", "recorded", "done"),
            ("tests", "recorded", "done"),
            ("release", "recorded", "done")
        ]
    );
    // Everything is in the one directory it names, under TMPDIR.
    let entries: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let dir = &entries[0];
    assert!(stderr(&out).contains(&format!("working in {}", dir.display())));
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        0,
        "HOME was written"
    );
    let state = dir.join("state");
    let (docs, tests, release) = (
        marker(&state, "docs"),
        marker(&state, "tests"),
        marker(&state, "release"),
    );
    for m in [&docs, &tests, &release] {
        assert_eq!(
            (m["engine"].as_str(), m["engineVersion"].as_str()),
            (Some("recorded"), Some("claude 2.1.332 capture"))
        );
    }
    // RFC 3339 UTC with millis: ordered as text.
    let release_start = at(&release, "startedAt");
    assert!(release_start >= at(&docs, "finishedAt"));
    assert!(release_start >= at(&tests, "finishedAt"));
    assert!(
        at(&docs, "startedAt") < at(&tests, "finishedAt"),
        "docs and tests ran in parallel"
    );
    // The release branch merged both others, and holds the three edits.
    let repo = dir.join("repo");
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        c.arg("-C").arg(&repo).args(args);
        git_env(&mut c);
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    };
    let merges = git(&["log", "--merges", "--format=%s", "vf/release"]);
    assert_eq!(
        merges.lines().collect::<Vec<_>>(),
        [
            "vf: merge vf/tests into vf/release",
            "vf: merge vf/docs into vf/release"
        ]
    );
    let files = git(&["ls-tree", "--name-only", "vf/release"]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        [
            "README.md",
            "docs.txt",
            "plan.toml",
            "release.txt",
            "tests.txt"
        ]
    );
    let page = read_text(&dir.join("report.html"));
    assert!(page.contains("recorded"));
}

#[test]
fn demo_without_git_is_not_ready_and_writes_nothing() {
    let (_top, home, tmp) = dirs();
    let empty = tmp.parent().unwrap().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = demo(&home, &tmp, empty.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("vf demo needs git on PATH"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
}

#[test]
fn auto_never_picks_the_recorded_engine() {
    let (_top, home, tmp) = dirs();
    let empty = tmp.parent().unwrap().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = Command::new(vf());
    for k in callers_settings() {
        c.env_remove(k);
    }
    c.args([
        "dispatch",
        "--engine",
        "auto",
        "--dry-run",
        "--json",
        "--prompt",
        "hi",
    ])
    .current_dir(&tmp)
    .env("HOME", &home)
    .env("PATH", &empty)
    .env("VF_CONFIG", no_config());
    let out = run_bounded(c, Duration::from_secs(30));
    let engine = stdout_json(&out)["engine"].as_str().map(String::from);
    assert_ne!(engine.as_deref(), Some("recorded"), "{}", stderr(&out));
    assert!(engine.is_some(), "{}", stderr(&out));
}

#[test]
fn play_refuses_an_unknown_capture() {
    let (_top, _home, tmp) = dirs();
    let out = vf_cli()
        .current_dir(&tmp)
        .args(["__play", "nope", "--file", "x.txt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

#[test]
fn demo_prints_the_status_table_and_the_report_path_ignoring_a_bad_user_config() {
    let (_top, home, tmp) = dirs();
    let out = demo(&home, &tmp, &std::env::var("PATH").unwrap(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = std::fs::read_dir(&tmp)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = String::from_utf8(out.stdout).unwrap();
    let status_rows: Vec<(&str, &str, &str)> = text
        .lines()
        .skip_while(|l| !l.starts_with("UNIT "))
        .skip(1)
        .take(3)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[1], f[2])
        })
        .collect();
    assert_eq!(
        status_rows,
        [
            ("docs", "done", "recorded"),
            ("release", "done", "recorded"),
            ("tests", "done", "recorded")
        ],
        "{text}"
    );
    let report = dir.join("report.html");
    assert!(
        text.contains(&format!("wrote {} (3 unit(s), ", report.display())),
        "{text}"
    );
    assert!(report.is_file());
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        0,
        "HOME was written"
    );
}
