//! Helpers of tests/it/real_engines.rs: which CLI versions a run covers, one sandbox
//! HOME per CLI version (`scripts/engine-sandbox.sh`), and `vf ... --output jsonl`
//! runs read back as events, result and the fake model server's log.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use super::common::{TempDir, first_session_id, root, tempdir_named};

/// `VF_REAL_ENGINES_SET`: `current` (default: the pins), `baseline` or `all`, as
/// listed in scripts/engines.env (`ENGINES_CURRENT`, `ENGINES_BASELINE`).
pub fn versions(engine: &str) -> Vec<String> {
    let env = std::fs::read_to_string(root().join("scripts/engines.env")).unwrap();
    let set = std::env::var("VF_REAL_ENGINES_SET").unwrap_or_else(|_| "current".into());
    let lists: &[&str] = match set.as_str() {
        "current" => &["ENGINES_CURRENT"],
        "baseline" => &["ENGINES_BASELINE"],
        "all" => &["ENGINES_CURRENT", "ENGINES_BASELINE"],
        other => panic!("VF_REAL_ENGINES_SET={other}: expected current, baseline or all"),
    };
    let mut out = Vec::new();
    for list in lists {
        let line = env
            .lines()
            .find(|l| l.starts_with(&format!("{list}=(")))
            .unwrap_or_else(|| panic!("no {list} in scripts/engines.env"));
        let specs = line.split_once('(').unwrap().1.trim_end_matches(')');
        out.extend(
            specs
                .split_whitespace()
                .filter_map(|s| s.split_once('@'))
                .filter(|(cli, _)| *cli == engine)
                .map(|(_, v)| v.to_string()),
        );
    }
    out
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Whether the tier can run `engine` at `version` here; without it a test passes
/// with a notice, unless `VF_REAL_ENGINES=1` (CI), where that is a failure.
pub fn available(engine: &str, version: &str) -> bool {
    let dir = root().join(".engines").join(format!("{engine}-{version}"));
    let required = std::env::var("VF_REAL_ENGINES").is_ok_and(|v| v == "1");
    if dir.is_dir() && is_root() {
        return true;
    }
    let why = if is_root() {
        format!("{} is not installed", dir.display())
    } else {
        "not root".into()
    };
    assert!(
        !required,
        "VF_REAL_ENGINES=1 but the real-engine tier cannot run: {why}"
    );
    eprintln!("skipping the real {engine} {version} tier: {why} (scripts/install-engines.sh)");
    false
}

/// A word no other run uses: `LAB-MEMO-<it>` in a turn-1 prompt, `LAB-RECALL-<it>`
/// in the resume (see tests/support/fake_model_plan.py).
pub fn memo_id() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{:x}{:x}{}",
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// One CLI version's sandbox: a HOME kept across calls (the CLIs keep sessions there).
pub struct Sandbox {
    pub engine: &'static str,
    pub version: String,
    home: TempDir,
    /// Every CLI at its pin in the one HOME (`engine-sandbox.sh all`), `engine`
    /// the one `dispatch` runs: a unit of one CLI reviewed by another.
    every: bool,
}

/// Whether every CLI can run here at its pin (each one said so when it cannot).
pub fn every_available() -> bool {
    let clis = ["codex", "claude", "gemini", "opencode", "copilot"];
    // Each asked (no short cut), so each missing one says so.
    let there = clis
        .iter()
        .filter(|e| versions(e).first().is_some_and(|v| available(e, v)))
        .count();
    there == clis.len()
}

impl Sandbox {
    pub fn new(engine: &'static str, version: &str) -> Sandbox {
        let home = tempdir_named(&format!("vf-real-{engine}-{version}-"));
        std::fs::create_dir_all(home.path().join("project")).unwrap();
        Sandbox {
            engine,
            version: version.to_string(),
            home,
            every: false,
        }
    }

    /// A sandbox of every CLI at its pin whose `dispatch` runs `engine`
    /// (check [`every_available`] first).
    pub fn every(engine: &'static str) -> Sandbox {
        let version = versions(engine).first().cloned().unwrap_or_default();
        Sandbox {
            every: true,
            ..Sandbox::new(engine, &version)
        }
    }

    pub fn workdir(&self) -> PathBuf {
        self.home.path().join("project")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.workdir().join(".vibeflow")
    }

    /// Runs `vf <args>` inside the sandbox.
    pub fn vf(&self, args: &[&str]) -> Output {
        self.vf_env(args, &[])
    }

    /// Runs `vf <args>` inside the sandbox with extra variables (passed through).
    pub fn vf_env(&self, args: &[&str], envs: &[(&str, &str)]) -> Output {
        let mut c = self.command(super::common::vf().as_os_str());
        c.args(args);
        self.output(c, envs)
    }

    /// `program` inside the sandbox (its arguments still to add), with
    /// `VF_STATE_DIR` set to [`Sandbox::state_dir`].
    pub fn command(&self, program: &std::ffi::OsStr) -> Command {
        let mut c = Command::new(root().join("scripts/engine-sandbox.sh"));
        match self.every {
            true => c.arg("all"),
            false => c.args([self.engine, "--version", &self.version]),
        };
        c.args(["--timeout", "240"])
            .arg("--home")
            .arg(self.home.path())
            .arg("--workdir")
            .arg(self.workdir())
            .arg("--")
            .arg(program)
            .env("VF_STATE_DIR", self.state_dir())
            .stdin(Stdio::null());
        c
    }

    /// Runs a [`Sandbox::command`] with extra variables (passed through).
    pub fn output(&self, mut c: Command, envs: &[(&str, &str)]) -> Output {
        let names: Vec<&str> = envs.iter().map(|(k, _)| *k).collect();
        c.env("VF_SANDBOX_PASS", names.join(" "));
        for (k, v) in envs {
            c.env(k, v);
        }
        if let Ok(cache) = std::env::var("VF_SANDBOX_CACHE") {
            c.env("VF_SANDBOX_CACHE", cache);
        }
        let out = c.output().unwrap();
        // Exit 2 is also vf's usage error; the sandbox's own failures do not start with "vf:".
        if out.status.code() == Some(2) && out.stdout.is_empty() && !out.stderr.starts_with(b"vf:")
        {
            panic!(
                "the sandbox could not be set up: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out
    }

    /// The sandbox's home (the data dir, hence the quota ledger, is below it).
    pub fn home(&self) -> &std::path::Path {
        self.home.path()
    }

    pub fn dispatch(&self, unit: &str, prompt: &str, extra: &[&str]) -> Run {
        self.dispatch_env(unit, prompt, extra, &[])
    }

    pub fn dispatch_env(
        &self,
        unit: &str,
        prompt: &str,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Run {
        let mut args = vec!["dispatch", "--engine", self.engine, "--unit", unit];
        args.extend_from_slice(&["--prompt", prompt, "--output", "jsonl"]);
        args.extend_from_slice(extra);
        Run::from(self.vf_env(&args, envs), unit)
    }

    /// Every request the fake model server saw so far (`$HOME/fake-model.jsonl`).
    pub fn server_log(&self) -> Vec<Value> {
        let text =
            std::fs::read_to_string(self.home.path().join("fake-model.jsonl")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// A resume whose answer must prove the model was sent turn 1 again: the
    /// continuity answer, and the server's own record that it saw `LAB-MEMO-<memo>`.
    pub fn assert_continuity(&self, run: &Run, memo: &str, what: &str) {
        run.assert_done(what);
        let answer = run.result["answer"].as_str().unwrap_or("");
        assert!(
            answer.starts_with("Resumed.") && !answer.contains("NO-CONTINUITY"),
            "{what}: {} {}: the resumed session lost turn 1: {answer:?}",
            self.engine,
            self.version
        );
        let word = format!("LAB-MEMO-{memo}");
        let seen = self
            .server_log()
            .iter()
            .any(|e| e["continuity"]["memo"] == word.as_str() && e["continuity"]["proven"] == true);
        assert!(
            seen,
            "{what}: the server never saw {word} in a resume request"
        );
    }
}

/// One `vf ... --output jsonl` run: its events and the final result.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub events: Vec<Value>,
    pub result: Value,
    pub stderr: String,
}

impl Run {
    pub fn from(out: Output, what: &str) -> Run {
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let mut events: Vec<Value> = stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}\n{stderr}"))
            })
            .collect();
        let result = events
            .pop()
            .unwrap_or_else(|| panic!("{what}: no output; stderr:\n{stderr}"));
        assert_eq!(
            result["kind"], "dispatch.result",
            "{what}: {result}\n{stderr}"
        );
        Run {
            code: out.status.code(),
            stdout,
            events,
            result,
            stderr,
        }
    }

    pub fn kinds(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .collect()
    }

    /// The session id the CLI itself printed, read from the raw log, not from vf's parse.
    pub fn raw_session_id(&self) -> Option<String> {
        let log = self.result["stdoutLog"].as_str()?;
        first_session_id(&std::fs::read_to_string(log).ok()?)
    }

    pub fn assert_done(&self, what: &str) {
        let r = &self.result;
        assert_eq!(self.code, Some(0), "{what}: {r}\n{}", self.stderr);
        assert_eq!(r["state"], "done", "{what}: {r}");
        assert_eq!(r["unknownFrames"], 0, "{what}: {r}");
        let kinds = self.kinds();
        assert!(!kinds.contains(&"system.unknownFrame"), "{what}: {kinds:?}");
        let sid = self.raw_session_id().expect("the CLI printed a session id");
        assert_eq!(r["sessionId"], sid, "{what}");
        assert!(r["summary"].is_object(), "{what}: {r}");
        assert!(kinds.contains(&"message.taskAgent"), "{what}: {kinds:?}");
    }

    /// Failed as the engine said, exit 1, no drift, with the engine's error text.
    pub fn assert_failed(&self, what: &str) {
        let r = &self.result;
        assert_eq!(r["state"], "failed", "{what}: {r}\n{}", self.stderr);
        assert_eq!(self.code, Some(1), "{what}: {r}");
        assert_eq!(r["unknownFrames"], 0, "{what}: {r}");
        let error = r["error"].as_str().unwrap_or("");
        assert!(!error.is_empty(), "{what}: {r}");
    }
}
