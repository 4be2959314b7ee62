//! The real-engine tier at the vf level: the real, pinned CLIs driven by
//! `vf dispatch` / `vf resume` / `vf doctor` inside a loopback-only network
//! namespace against the fake model server (`scripts/engine-sandbox.sh`).
//!
//! Needs the pinned CLIs (`scripts/install-engines.sh --current`) and root.
//! Without them the tests say so and pass, unless `VF_REAL_ENGINES=1` (as in
//! CI), where a missing engine is a failure.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;
use common::{first_session_id, root};

const ENGINES: [(&str, &str); 5] = [
    ("codex", "0.171.0"),
    ("claude", "2.1.332"),
    ("gemini", "0.61.0"),
    ("opencode", "1.18.33"),
    ("copilot", "1.0.102"),
];

fn version_of(engine: &str) -> &'static str {
    ENGINES.iter().find(|(e, _)| *e == engine).unwrap().1
}

/// `None` when the tier cannot run here (and is not required to).
fn available(engine: &str) -> Option<()> {
    let dir = root()
        .join(".engines")
        .join(format!("{engine}-{}", version_of(engine)));
    let required = std::env::var("VF_REAL_ENGINES").is_ok_and(|v| v == "1");
    let is_root = nix_is_root();
    if dir.is_dir() && is_root {
        return Some(());
    }
    let why = if is_root {
        format!("{} is not installed", dir.display())
    } else {
        "not root".into()
    };
    assert!(
        !required,
        "VF_REAL_ENGINES=1 but the real-engine tier cannot run: {why}"
    );
    eprintln!("skipping the real {engine} tier: {why} (scripts/install-engines.sh --current)");
    None
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// One engine's sandbox: a HOME kept across calls (the CLIs keep sessions there).
struct Sandbox {
    engine: &'static str,
    home: tempfile::TempDir,
}

impl Sandbox {
    fn new(engine: &'static str) -> Sandbox {
        let home = tempfile::Builder::new()
            .prefix(&format!("vf-real-{engine}-"))
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(home.path().join("project")).unwrap();
        Sandbox { engine, home }
    }

    fn workdir(&self) -> PathBuf {
        self.home.path().join("project")
    }

    /// Runs `vf <args>` inside the sandbox.
    fn vf(&self, args: &[&str]) -> Output {
        let mut c = Command::new(root().join("scripts/engine-sandbox.sh"));
        c.arg(self.engine)
            .arg("--home")
            .arg(self.home.path())
            .arg("--workdir")
            .arg(self.workdir())
            .arg("--timeout")
            .arg("240")
            .arg("--")
            .arg(common::vf())
            .args(args)
            .env("VF_STATE_DIR", self.workdir().join(".vibeflow"))
            .stdin(Stdio::null());
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

    fn dispatch(&self, unit: &str, prompt: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "dispatch",
            "--engine",
            self.engine,
            "--unit",
            unit,
            "--prompt",
            prompt,
            "--output",
            "jsonl",
        ];
        args.extend_from_slice(extra);
        Run::from(self.vf(&args), unit)
    }
}

/// One `vf ... --output jsonl` run: its events and the final result.
struct Run {
    code: Option<i32>,
    events: Vec<Value>,
    result: Value,
    stderr: String,
}

impl Run {
    fn from(out: Output, what: &str) -> Run {
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
            events,
            result,
            stderr,
        }
    }

    fn kinds(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .collect()
    }

    /// The session id the CLI itself printed, read from the raw log, not from vf's parse.
    fn raw_session_id(&self) -> Option<String> {
        let log = self.result["stdoutLog"].as_str()?;
        first_session_id(&std::fs::read_to_string(log).ok()?)
    }

    fn assert_done(&self, what: &str) {
        assert_eq!(
            self.code,
            Some(0),
            "{what}: {}\n{}",
            self.result,
            self.stderr
        );
        assert_eq!(self.result["state"], "done", "{what}: {}", self.result);
        assert_eq!(self.result["unknownFrames"], 0, "{what}: {}", self.result);
        assert!(
            !self.kinds().contains(&"system.unknownFrame"),
            "{what}: {:?}",
            self.events
        );
        let sid = self.raw_session_id().expect("the CLI printed a session id");
        assert_eq!(self.result["sessionId"], sid, "{what}");
        assert!(
            self.result["summary"].is_object(),
            "{what}: {}",
            self.result
        );
        assert!(
            self.kinds().contains(&"message.taskAgent"),
            "{what}: {:?}",
            self.kinds()
        );
    }
}

/// Every scenario for one engine, in one sandbox HOME.
fn engine_tier(engine: &'static str) {
    if available(engine).is_none() {
        return;
    }
    let sb = Sandbox::new(engine);

    let json = sb.dispatch(
        "json",
        "LAB-JSON Reply with a fenced json block containing confidence and files_changed.",
        &[],
    );
    json.assert_done("LAB-JSON");
    assert_eq!(json.result["engineVersion"], version_of(engine));
    assert_eq!(json.result["summary"]["confidence"], 1.0);
    let sid = json.result["sessionId"].as_str().unwrap().to_string();

    // A shell tool call, then the answer (gemini offers its shell tool only with --yolo).
    // Claude refuses --dangerously-skip-permissions as root (and runs `echo` without it).
    let claude_as_root = engine == "claude" && nix_is_root();
    if claude_as_root {
        let refused = sb.dispatch(
            "tool-root",
            "LAB-TOOL Run the shell command 'echo hello'.",
            &["--skip-permissions"],
        );
        assert_eq!(refused.code, Some(1));
        let e = refused.result["error"].as_str().unwrap();
        assert!(
            e.contains("cannot be used with root"),
            "the CLI's own reason is surfaced: {e}"
        );
    }
    let tool = sb.dispatch(
        "tool",
        "LAB-TOOL Run the shell command 'echo hello' and report what it printed.",
        if claude_as_root {
            &[]
        } else {
            &["--skip-permissions"]
        },
    );
    tool.assert_done("LAB-TOOL");
    assert!(tool.kinds().contains(&"toolBurst"), "{:?}", tool.events);
    assert!(
        tool.result["answer"].as_str().unwrap().contains("hello"),
        "{}",
        tool.result
    );

    // Exact resume of the finished session: the same id is kept.
    let resumed = sb.dispatch("json-resumed", "LAB-RESUME Continue.", &["--session", &sid]);
    resumed.assert_done("resume by --session");
    assert_eq!(resumed.result["sessionId"], sid);

    // An API error on every try: failed, exit class 1, the engine's error text.
    let err = sb.dispatch("err", "LAB-ERR500 Reply with a fenced json block.", &[]);
    assert_eq!(err.code, Some(1), "{}\n{}", err.result, err.stderr);
    assert_eq!(err.result["state"], "failed");
    assert_eq!(err.result["reason"], "engine");
    assert!(
        err.result["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{}",
        err.result
    );
    assert_eq!(err.result["unknownFrames"], 0, "{}", err.result);

    // The other scenarios: a reasoning/thinking block (projected, never drift),
    // a 429, and an error inside the stream (gemini exits 0 there: still failed).
    let think = sb.dispatch(
        "think",
        "LAB-THINK Think first, then reply with a fenced json block.",
        &[],
    );
    think.assert_done("LAB-THINK");
    for (unit, prompt) in [
        ("err429", "LAB-ERR429 Reply with a fenced json block."),
        ("streamerr", "LAB-STREAMERR Reply with a fenced json block."),
    ] {
        let r = sb.dispatch(unit, prompt, &[]);
        assert_eq!(
            r.result["state"], "failed",
            "{unit}: {}\n{}",
            r.result, r.stderr
        );
        assert_eq!(r.code, Some(1), "{unit}: {}", r.result);
        assert_eq!(r.result["unknownFrames"], 0, "{unit}: {}", r.result);
        assert!(
            r.result["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{unit}: {}",
            r.result
        );
    }

    // `vf resume` of that failed unit continues its exact session when the marker
    // holds one (the engine said the session exists natively), and refuses otherwise
    // (gemini keeps no session whose first request failed: its `-r` would exit 42).
    let marker: Value = serde_json::from_slice(
        &std::fs::read(sb.workdir().join(".vibeflow/units/err.json")).unwrap(),
    )
    .unwrap();
    let resume = sb.vf(&[
        "resume",
        "err",
        "--prompt",
        "LAB-JSON Try again.",
        "--output",
        "jsonl",
    ]);
    match marker["engineSessionId"].as_str() {
        Some(failed_sid) => {
            let r = Run::from(resume, "resume");
            r.assert_done("vf resume");
            assert_eq!(r.result["sessionId"], failed_sid);
        }
        None => {
            assert_eq!(
                engine, "gemini",
                "only gemini withholds resume authority after a failed first request"
            );
            assert_eq!(resume.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&resume.stderr).contains("no engine session id"));
        }
    }

    // doctor: ready, verified; the probe passes through the real CLI.
    let out = sb.vf(&[
        "doctor",
        "--json",
        "--probe",
        "--probe-timeout",
        "180",
        "-e",
        engine,
    ]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let r = &v[0];
    assert_eq!(r["verdict"], "ready", "{r}");
    assert_eq!(r["verification"], "verified", "{r}");
    assert_eq!(r["missingFlags"], serde_json::json!([]), "{r}");
    assert_eq!(r["probe"]["result"], "pass", "{r}");
    assert!(r["probe"]["sessionId"].is_string(), "{r}");
    assert_eq!(out.status.code(), Some(0), "{r}");
}

#[test]
fn real_codex() {
    engine_tier("codex");
}

#[test]
fn real_claude() {
    engine_tier("claude");
}

#[test]
fn real_gemini() {
    engine_tier("gemini");
}

#[test]
fn real_opencode() {
    engine_tier("opencode");
}

#[test]
fn real_copilot() {
    engine_tier("copilot");
}
