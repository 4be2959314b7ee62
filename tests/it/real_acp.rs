//! The real-engine tier for ACP: `gemini --acp` and `opencode acp` run inside
//! scripts/engine-sandbox.sh (loopback only, the fake model server) with their
//! stdio driven from here by `vf::engine::acp::run_session`: a JSON run with the fake
//! server's usage figures, an exact resume with `session/load` (the fake server
//! answers "Resumed." only when the earlier turn was sent back), and a write
//! the default policy rejects: the file stays unwritten.
//!
//! Skips like tests/it/real_engines.rs when the CLIs are absent, and fails then
//! under `VF_REAL_ENGINES=1`. Linux only (`unshare -n`).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vf::engine::acp::{AcpError, Outcome, Policy, PromptPart, SessionRequest, SessionSink};
use vf::engine::frames::ConversationEvent;

use crate::common;
use crate::sandbox::{self, Sandbox, available, versions};

/// The events, and the raw log in a file of the sandbox (for a failure's message).
struct Events(Arc<Mutex<Vec<ConversationEvent>>>, std::fs::File);

impl SessionSink for Events {
    fn raw_line(&mut self, line: &str) -> std::io::Result<()> {
        use std::io::Write;
        writeln!(self.1, "{line}")
    }
    fn session_id(&mut self, _: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn event(&mut self, e: ConversationEvent) {
        self.0.lock().unwrap().push(e);
    }
}

/// The agent command, and what it needs to ask before it acts (opencode's
/// sandbox config allows bash and edit outright).
fn agent(
    engine: &str,
) -> (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
) {
    match engine {
        "gemini" => (&["gemini", "--acp"], &[]),
        _ => (
            &["opencode", "acp"],
            &[(
                "OPENCODE_PERMISSION",
                r#"{"bash":"ask","edit":"ask","webfetch":"deny"}"#,
            )],
        ),
    }
}

fn append(p: &std::path::Path) -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p);
    f.unwrap()
}

/// One session of the real agent in `sb`, driven from this process.
fn session(
    sb: &Sandbox,
    prompt: &str,
    resume: Option<String>,
) -> (Result<Outcome, AcpError>, Vec<ConversationEvent>) {
    let (argv, envs) = agent(sb.engine);
    let home = sb.workdir().parent().unwrap().to_path_buf();
    // The sandbox's own command line (`Sandbox::command`), the agent's argv after it.
    let mut c = sb.command(argv[0].as_ref());
    c.args(&argv[1..])
        .env(
            "VF_SANDBOX_PASS",
            envs.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(" "),
        )
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(append(&home.join("agent.stderr")));
    let mut c = tokio::process::Command::from(c);
    let req = SessionRequest {
        cwd: sb.workdir(),
        prompt: vec![PromptPart::Text(prompt.to_string())],
        resume,
        policy: Policy::Default,
        mcp: Vec::new(),
        deadline: Some(Duration::from_secs(180)),
        handshake: vf::engine::acp::DEFAULT_HANDSHAKE_TIMEOUT,
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("acp.jsonl"));
    let sink = Box::new(Events(events.clone(), log.unwrap()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = rt.block_on(async move {
        let mut child = c.spawn().unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let r = vf::engine::acp::run_session(stdout, stdin, req, sink, rx).await;
        // The agent's stdin is closed now; the sandbox ends with it, or is ended.
        let pid = child.id().unwrap() as i32;
        if tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .is_err()
        {
            common::signal(pid, 15);
            let _ = child.wait().await;
        }
        r
    });
    let events = std::mem::take(&mut *events.lock().unwrap());
    (result, events)
}

fn permission_rows(events: &[ConversationEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ConversationEvent::Status { label, .. } if label.starts_with("Permission") => {
                Some(label.clone())
            }
            _ => None,
        })
        .collect()
}

/// Fails with the session's raw log and the agent's stderr.
fn failed(sb: &Sandbox, what: &str, e: AcpError) -> Outcome {
    let home = sb.workdir().parent().unwrap().to_path_buf();
    let read = |f: &str| std::fs::read_to_string(home.join(f)).unwrap_or_default();
    panic!(
        "{what}: {e}\n--- raw log\n{}\n--- stderr\n{}",
        read("acp.jsonl"),
        read("agent.stderr")
    );
}

/// Waits for the next minute of the clock. gemini 0.61.0 names a session's
/// file by the minute it starts (`session-<date>T<HH-MM>-<id8>.jsonl`), and a
/// `session/load` starts a recording of the loaded id: in the minute the
/// session began, that recording replaces the session's own file, and the load
/// finds "No previous sessions found for this project." (docs/ACP.md).
pub(crate) fn next_minute() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(Duration::from_secs(61 - now.as_secs() % 60));
}

fn acp_tier(engine: &'static str) {
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let what = format!("{engine} {version}");
        let sb = Sandbox::new(engine, &version);
        let memo = sandbox::memo_id();
        let p1 = format!("LAB-JSON Reply with a fenced json block. (LAB-MEMO-{memo})");
        let out = session(&sb, &p1, None)
            .0
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out.failure(), None, "{what}");
        let summary = serde_json::json!({"confidence": 1.0, "files_changed": []});
        assert_eq!(out.summary().value(), Some(&summary), "{what}");
        let u = out.usage.clone().unwrap();
        let figures = (u.input_tokens, u.output_tokens, u.total_tokens);
        assert_eq!(figures, (Some(100), Some(20), Some(120)), "{what}: {u:?}");

        if engine == "gemini" {
            next_minute();
        }
        let p2 = format!("LAB-RESUME Continue and report again. (LAB-RECALL-{memo})");
        let again = session(&sb, &p2, out.session_id.clone()).0;
        let again = again.unwrap_or_else(|e| failed(&sb, &what, e));
        assert_eq!(again.session_id, out.session_id, "{what}");
        let answer = again.answer.unwrap_or_default();
        assert!(answer.starts_with("Resumed."), "{what}: {answer}");

        let (r, events) = session(
            &sb,
            "LAB-WRITE Create lab-written.txt with the shell.",
            None,
        );
        assert_eq!(r.unwrap().failure(), None, "{what}");
        assert_eq!(permission_rows(&events), ["Permission rejected"], "{what}");
        assert!(
            !sb.workdir().join("lab-written.txt").exists(),
            "{what}: the file was written"
        );
    }
}

#[test]
fn gemini_acp_runs_resumes_and_is_refused_a_write() {
    acp_tier("gemini");
}

#[test]
fn opencode_acp_runs_resumes_and_is_refused_a_write() {
    acp_tier("opencode");
}
