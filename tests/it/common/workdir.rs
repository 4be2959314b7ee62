//! [`Env`]: a temporary working dir with its own state dir (`<dir>/state`),
//! and `vf` commands run in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{fake, run_bounded, vf, wait_for};

/// The engine versions the fake reports for each engine in dispatch tests.
pub fn version_of(engine: &str) -> &'static str {
    match engine {
        "codex" => "0.171.0",
        "claude" => "2.1.332",
        "gemini" => "0.61.0",
        "opencode" => "1.18.33",
        "copilot" => "1.0.102",
        _ => "1.0.0",
    }
}

/// The env entry that makes the fake replay a capture.
pub fn fake_stdout(capture: &str) -> (&'static str, String) {
    ("FAKE_STDOUT", super::fixture(capture).display().to_string())
}

pub struct Env {
    _dir: super::TempDir,
    /// The canonical path of the dir, as vf reports it.
    path: PathBuf,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = super::tempdir();
        let path = dir.path().canonicalize().unwrap();
        Env { _dir: dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn state(&self) -> PathBuf {
        self.path.join("state")
    }

    /// Writes `rel` (below the dir, parents created) and returns its path.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// `vf ARGS` in the dir with `VF_STATE_DIR` set, a 500 ms kill grace, no
    /// stdin, the doctor cache and the quota ledger under the dir (never the
    /// user's), and none of
    /// the caller's `FAKE_*`, `VF_*` or `IS_SANDBOX`.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(vf());
        c.args(args).current_dir(&self.path).stdin(Stdio::null());
        for k in super::callers_settings() {
            c.env_remove(k);
        }
        c.env("VF_STATE_DIR", self.state())
            .env("VF_CONFIG", super::no_config())
            .env("VF_KILL_GRACE_MS", "500")
            .env("XDG_CACHE_HOME", self.path.join("cache"))
            // The quota ledger is the test's own, never the user's.
            .env("VF_QUOTA_FILE", self.path.join("quota.json"));
        c
    }

    /// [`Env::cmd`] run to the end (bounded).
    pub fn run(&self, args: &[&str]) -> Output {
        run_bounded(self.cmd(args), Duration::from_secs(60))
    }

    /// A copy of the fake per engine under `bin/`, like distinct installs: vf
    /// caches each executable's `--version` by file identity.
    pub fn fake_for(&self, engine: &str) -> PathBuf {
        let dir = self.path.join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(engine);
        if !p.exists() {
            std::fs::copy(fake(), &p).unwrap();
        }
        p
    }

    /// `vf dispatch` of `unit` on a copy of the fake, printing `output`, with
    /// `extra` arguments.
    pub fn command(
        &self,
        engine: &str,
        unit: &str,
        prompt: &str,
        output: &str,
        extra: &[&str],
    ) -> Command {
        let bin = self.fake_for(engine);
        let mut args = vec![
            "dispatch",
            "--engine",
            engine,
            "--unit",
            unit,
            "--prompt",
            prompt,
            "--output",
            output,
            "--engine-bin",
            bin.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.cmd(&args)
    }

    /// Runs `vf dispatch --output json` to the end (see [`Env::command`]).
    pub fn dispatch(
        &self,
        engine: &str,
        unit: &str,
        envs: &[(&str, String)],
        extra: &[&str],
    ) -> Output {
        let mut c = self.command(engine, unit, "do the thing", "json", extra);
        for (k, v) in envs {
            c.env(k, v);
        }
        run_bounded(c, Duration::from_secs(60))
    }

    /// [`Env::dispatch`] of a capture (`<cli>/<version>/<case>.stdout.jsonl`)
    /// replayed as the CLI printed it: its version, stderr and exit status.
    pub fn replay_capture(&self, engine: &str, unit: &str, cap: &str, extra: &[&str]) -> Output {
        let dir = super::fixture(cap).parent().unwrap().to_path_buf();
        let case = cap.rsplit('/').next().unwrap().split('.').next().unwrap();
        let version = dir.file_name().unwrap().to_str().unwrap().to_string();
        let exit = super::recorded_exit(&super::read_text(&dir.join(format!("{case}.cmd.txt"))));
        let stderr = dir.join(format!("{case}.stderr.txt"));
        let envs = [
            fake_stdout(cap),
            ("FAKE_VERSION", version),
            ("FAKE_EXIT", exit.to_string()),
            ("FAKE_STDERR", stderr.display().to_string()),
        ];
        self.dispatch(engine, unit, &envs, extra)
    }

    /// [`Env::command`] printing JSONL: for tests that watch or signal the run.
    pub fn live(&self, engine: &str, unit: &str, prompt: &str, extra: &[&str]) -> Command {
        self.command(engine, unit, prompt, "jsonl", extra)
    }

    /// Waits for the unit's `running` marker (with a session id when
    /// `with_id`); returns the engine's process group.
    pub fn wait_running(&self, unit: &str, with_id: bool) -> i32 {
        let mut pgid = 0;
        wait_for("a running marker", Duration::from_secs(20), || {
            match self.marker_opt(unit) {
                Some(m)
                    if m["state"] == "running"
                        && (!with_id || m["engineSessionId"].is_string()) =>
                {
                    pgid = m["owner"]["pgid"].as_i64().unwrap() as i32;
                    true
                }
                _ => false,
            }
        });
        assert!(pgid > 1, "the marker has no process group");
        pgid
    }

    pub fn marker_path(&self, unit: &str) -> PathBuf {
        self.state().join("units").join(unit).join("marker.json")
    }

    pub fn marker_bytes(&self, unit: &str) -> Vec<u8> {
        let p = self.marker_path(unit);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The unit's marker as JSON; fails the test when there is none.
    pub fn marker(&self, unit: &str) -> Value {
        serde_json::from_slice(&self.marker_bytes(unit)).unwrap()
    }

    /// The unit's marker, when there is one that parses.
    pub fn marker_opt(&self, unit: &str) -> Option<Value> {
        std::fs::read(self.marker_path(unit))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    /// `v` with the volatile fields replaced and this dir shown as `<tmp>`
    /// (see [`super::normalized`]).
    pub fn normalized(&self, v: &Value) -> Value {
        super::normalized(v, &self.path)
    }
}
