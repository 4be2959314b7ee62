//! Windows end to end (run under wine in CI): `vf dispatch` of a fake engine
//! that is a `.cmd` batch file replaying a genuine codex capture, contained
//! in a kill-on-close Job Object.
//!
//! The fake starts a grandchild (`start /b`) that holds the engine's stdout
//! and would write `survived.txt` seconds later. Only the job can end it: vf
//! never learns its pid, and Windows has no process groups to signal. It
//! must be gone when vf settles (first test) and when vf itself is killed
//! (second test: the job closes with vf's last handle).
#![cfg(windows)]

#[path = "it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const CAPTURE: &str = "codex/0.171.0/a_json.stdout.jsonl";

/// A working dir ([`Env`]'s, without the `\\?\` of its canonical form:
/// cmd.exe cannot run in such a path).
struct Win {
    _env: Env,
    path: PathBuf,
}

impl Win {
    fn new() -> Win {
        let env = Env::new();
        let shown = env.path().to_str().unwrap();
        let path = PathBuf::from(shown.strip_prefix(r"\\?\").unwrap_or(shown));
        Win { _env: env, path }
    }

    /// A batch file (CRLF lines, as cmd.exe expects them).
    fn batch(&self, name: &str, lines: &[String]) -> PathBuf {
        let p = self.path.join(name);
        std::fs::write(&p, lines.join("\r\n") + "\r\n").unwrap();
        p
    }

    /// `fake.cmd`: prints the codex version for `--version`; otherwise
    /// starts the grandchild, waits for it to run, prints the capture, then
    /// runs `then`.
    fn fake(&self, then: &str) -> PathBuf {
        let grandchild = self.batch(
            "grandchild.cmd",
            &[
                "@echo off".into(),
                format!("echo started> \"{}\"", self.file("started.txt").display()),
                "ping -n 4 127.0.0.1 >nul".into(),
                format!("echo survived> \"{}\"", self.file("survived.txt").display()),
            ],
        );
        self.batch(
            "fake.cmd",
            &[
                "@echo off".into(),
                "if \"%~1\"==\"--version\" (".into(),
                "  echo 0.171.0".into(),
                "  exit /b 0".into(),
                ")".into(),
                format!("start \"\" /b \"{}\"", grandchild.display()),
                // Only once it runs (wine starts a cmd.exe slowly).
                ":wait".into(),
                format!(
                    "if not exist \"{}\" (ping -n 2 127.0.0.1 >nul & goto wait)",
                    self.file("started.txt").display()
                ),
                format!("type \"{}\"", fixture(CAPTURE).display()),
                then.into(),
            ],
        )
    }

    fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn dispatch(&self, unit: &str, fake: &Path) -> Command {
        let mut c = Command::new(vf());
        c.args(["dispatch", "--engine", "codex", "--unit", unit])
            .args(["--prompt", "do the thing", "--output", "json"])
            .arg("--engine-bin")
            .arg(fake)
            .current_dir(&self.path)
            .stdin(Stdio::null())
            .env("VF_STATE_DIR", self.path.join("state"))
            .env("VF_CONFIG", self.path.join("no-config.toml"))
            .env("VF_KILL_GRACE_MS", "500")
            .env_remove("VF_CODEX_BIN");
        c
    }

    /// The grandchild started, and is still without a `survived.txt`
    /// `secs` seconds on (it writes one 3 s after it started).
    fn assert_grandchild_ended(&self, secs: u64) {
        wait_for("the grandchild", Duration::from_secs(20), || {
            self.file("started.txt").exists()
        });
        std::thread::sleep(Duration::from_secs(secs));
        assert!(
            !self.file("survived.txt").exists(),
            "the engine's grandchild outlived its job"
        );
    }
}

#[test]
fn a_cmd_engine_is_dispatched_inside_a_job_that_ends_with_the_run() {
    let w = Win::new();
    let fake = w.fake("exit /b 0");
    let out = run_bounded(w.dispatch("win1", &fake), Duration::from_secs(120));
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}\n{}", stderr(&out));
    assert_eq!(r["state"], "done", "{r}");
    assert_eq!(r["exitCode"], 0, "{r}");
    assert_eq!(r["engineVersion"], "0.171.0", "{r}");
    assert_eq!(
        r["sessionId"].as_str(),
        Some(capture_session_id(CAPTURE).as_str()),
        "{r}"
    );
    assert!(
        r["answer"]
            .as_str()
            .is_some_and(|a| a.contains("confidence")),
        "{r}"
    );
    // The raw log is what the engine printed.
    let log = w.path.join("state/units/win1/attempt-1.stdout.log");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        std::fs::read(fixture(CAPTURE)).unwrap()
    );
    let marker: Value = serde_json::from_slice(
        &std::fs::read(w.path.join("state/units/win1/marker.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker["state"], "done", "{marker}");
    w.assert_grandchild_ended(6);
}

#[test]
fn killing_vf_ends_the_engine_with_its_job() {
    let w = Win::new();
    // The leader hangs (about a minute) after printing.
    let fake = w.fake("ping -n 60 127.0.0.1 >nul");
    let mut vf = w
        .dispatch("win2", &fake)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let record = w.path.join("state/procs/win2-1.json");
    let mut rec = Value::Null;
    wait_for("the owned-process record", Duration::from_secs(60), || {
        rec = std::fs::read(&record)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        rec.is_object()
    });
    assert_eq!(rec["scope"], "windows-job", "{rec}");
    assert_eq!(rec["proof"], "kernel-contained", "{rec}");
    let cli = rec["cli"]["pid"].as_u64().unwrap() as u32;
    assert_eq!(rec["pgid"].as_u64(), Some(u64::from(cli)), "{rec}");
    assert!(matches!(vf::sys::process(cli), Ok(Some(s)) if !s.zombie));
    wait_for("the grandchild", Duration::from_secs(20), || {
        w.file("started.txt").exists()
    });

    // As `kill -9`: vf gets no chance to end anything itself.
    vf.kill().unwrap();
    vf.wait().unwrap();
    let t0 = Instant::now();
    while matches!(vf::sys::process(cli), Ok(Some(s)) if !s.zombie) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the engine outlived vf"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    w.assert_grandchild_ended(5);
}

/// The bridge (issue 26): a quoted `.cmd` path with a space runs as
/// `cmd.exe /d /c call "<path>" …`, and `>` and `&&` reach it as literal
/// arguments (no file is redirected to, nothing is chained).
#[test]
fn a_quoted_cmd_bridge_runs_with_call_and_literal_operators() {
    let w = Win::new();
    let dir = w.path.join("my agent");
    std::fs::create_dir_all(&dir).unwrap();
    let agent = dir.join("agent.cmd");
    let lines = [
        "@echo off".to_string(),
        format!("echo %*> \"{}\"", w.file("args.txt").display()),
        "echo working".into(),
        "echo ```json".into(),
        "echo {\"ok\": true}".into(),
        "echo ```".into(),
    ];
    std::fs::write(&agent, lines.join("\r\n") + "\r\n").unwrap();
    let line = format!("\"{}\" one > two && three", agent.display());
    let mut c = Command::new(vf());
    c.args([
        "dispatch", "--engine", "bridge", "--unit", "wb1", "--bridge", &line,
    ])
    .args(["--prompt", "do the thing", "--output", "json"])
    .current_dir(&w.path)
    .stdin(Stdio::null())
    .env("VF_STATE_DIR", w.path.join("state"))
    .env("VF_CONFIG", w.path.join("no-config.toml"))
    .env("VF_KILL_GRACE_MS", "500")
    .env_remove("VIBEFLOW_AI");
    let out = run_bounded(c, Duration::from_secs(120));
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}\n{}", stderr(&out));
    assert_eq!(r["summary"], serde_json::json!({"ok": true}), "{r}");
    let args = std::fs::read_to_string(w.file("args.txt")).unwrap();
    assert_eq!(args.trim_end(), r#"one ">" two "&&" three"#);
    assert!(!w.file("two").exists(), "`>` was interpreted");
}
