//! The ACP session driver (`vf::engine::acp::run_session`) against a fake agent
//! (`tests/support/fake_acp_agent.py`): a JSON run, a tool run whose
//! permission the policy rejects, `session/load`, a cancel, a refusal, and
//! the hostile ones (a hang, garbage, an exit mid-prompt, an error answer,
//! a refused session id). Whole events and outcomes are compared.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use vf::engine::acp::{AcpError, Outcome, Policy, PromptPart, SessionRequest, SessionSink};
use vf::engine::frames::ConversationEvent;

use crate::common::{self, assert_json_eq};

#[derive(Default)]
pub(crate) struct Rec {
    pub(crate) raw: Vec<String>,
    pub(crate) ids: Vec<String>,
    pub(crate) events: Vec<ConversationEvent>,
    /// How many events had gone out when each session id was saved.
    events_before_id: Vec<usize>,
}

/// Records everything; with a sender, turns the cancel signal on when the
/// first agent message chunk arrives.
struct Mem(Arc<Mutex<Rec>>, Option<tokio::sync::watch::Sender<bool>>);

impl SessionSink for Mem {
    fn raw_line(&mut self, line: &str) -> std::io::Result<()> {
        if line.contains("agent_message_chunk")
            && let Some(tx) = self.1.take()
        {
            let _ = tx.send(true);
        }
        self.0.lock().unwrap().raw.push(line.to_string());
        Ok(())
    }
    fn session_id(&mut self, id: &str) -> std::io::Result<()> {
        let mut r = self.0.lock().unwrap();
        let n = r.events.len();
        r.events_before_id.push(n);
        r.ids.push(id.to_string());
        Ok(())
    }
    fn event(&mut self, event: ConversationEvent) {
        self.0.lock().unwrap().events.push(event);
    }
}

pub(crate) fn request(prompt: &str) -> SessionRequest {
    SessionRequest {
        cwd: common::root(),
        prompt: vec![PromptPart::Text(prompt.to_string())],
        resume: None,
        policy: Policy::Default,
        mcp: Vec::new(),
        deadline: Some(Duration::from_secs(20)),
        handshake: vf::engine::acp::DEFAULT_HANDSHAKE_TIMEOUT,
    }
}

fn within(deadline: Duration) -> SessionRequest {
    SessionRequest {
        deadline: Some(deadline),
        ..request("hi")
    }
}

fn agent_script() -> PathBuf {
    common::root().join("tests/support/fake_acp_agent.py")
}

/// Runs one session against the fake agent in `args`; with `cancel`, the
/// cancel signal turns on at the agent's first message chunk.
pub(crate) fn run(
    args: &[&str],
    req: SessionRequest,
    cancel: bool,
) -> (Result<Outcome, AcpError>, Rec) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rec = Arc::new(Mutex::new(Rec::default()));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let sink = Box::new(Mem(rec.clone(), cancel.then_some(tx)));
    let result = rt.block_on(async move {
        let mut child = tokio::process::Command::new("python3")
            .arg(agent_script())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let r = vf::engine::acp::run_session(stdout, stdin, req, sink, rx).await;
        let _ = child.start_kill();
        r
    });
    let rec = std::mem::take(&mut *rec.lock().unwrap());
    (result, rec)
}

pub(crate) fn events(rec: &Rec) -> Value {
    serde_json::to_value(&rec.events).unwrap()
}

fn status(level: &str, label: &str, detail: Option<&str>, line: u64) -> Value {
    let mut v = json!({"kind": "system.status", "level": level, "label": label,
                       "rawRange": {"start": line, "end": line}});
    if let Some(d) = detail {
        v["detail"] = json!(d);
    }
    v
}

fn turn_end(line: u64, answer: &str) -> Value {
    let mut end = status("info", "Turn ended (end_turn)", None, line);
    end["answer"] = json!(answer);
    end
}

fn started(line: u64) -> Value {
    json!({"kind": "system.status", "level": "info", "label": "Session started",
           "sessionId": "sess-1", "rawRange": {"start": line, "end": line}})
}

const AGENT: &str = "fake-acp 1.0.0, protocol 1, loadSession, prompt: image, embeddedContext";

fn agent_facts() -> Value {
    json!({"name": "fake-acp", "version": "1.0.0", "protocolVersion": 1, "loadSession": true,
           "prompt": ["image", "embeddedContext"],
           "capabilities": {"loadSession": true,
                            "promptCapabilities": {"image": true, "embeddedContext": true}}})
}

fn outcome(stop: Option<&str>, answer: Option<&str>, usage: Value) -> Value {
    json!({"agent": agent_facts(), "sessionId": "sess-1", "badSession": false,
           "stopReason": stop, "answer": answer, "usage": usage, "error": null,
           "failedMethod": null, "cancelSent": false, "garbage": null})
}

#[test]
fn a_json_run_streams_merges_and_ends_with_usage_and_summary() {
    let (r, rec) = run(&["json"], request("hi"), false);
    let out = r.unwrap();
    let answer = "Done.\n\n```json\n{\"confidence\":1}\n```\n";
    let usage = json!({"inputTokens": 11, "cachedInputTokens": null, "outputTokens": 7,
                       "reasoningTokens": null, "totalTokens": 18, "costUsd": null,
                       "source": "session/prompt.usage"});
    assert_json_eq(
        &serde_json::to_value(&out).unwrap(),
        &outcome(Some("end_turn"), Some(answer), usage.clone()),
    );
    assert_eq!(out.failure(), None);
    assert_eq!(out.summary().value(), Some(&json!({"confidence": 1})));
    let mut end = turn_end(8, answer);
    end["usage"] = usage;
    let head = [status("info", "ACP agent", Some(AGENT), 2), started(4)];
    let message = json!({"kind": "message.taskAgent", "text": answer, "final": true,
                         "rawRange": {"start": 6, "end": 7}});
    assert_json_eq(&events(&rec), &json!([head[0], head[1], message, end]));
    // The id was saved before the row that shows it went out.
    assert_eq!(
        (rec.ids.clone(), rec.events_before_id.clone()),
        (vec!["sess-1".to_string()], vec![1])
    );
    assert_replays(&rec);
}

/// The raw log, projected again, gives the live events and outcome.
#[track_caller]
pub(crate) fn assert_replays(rec: &Rec) {
    let (replayed, _) = vf::engine::acp::project_log(&rec.raw.join("\n"));
    assert_json_eq(&serde_json::to_value(&replayed).unwrap(), &events(rec));
}

#[test]
fn a_rejected_permission_is_answered_recorded_and_the_tool_fails() {
    let (r, rec) = run(&["tool"], request("hi"), false);
    let out = r.unwrap();
    let answer = "Tool failed.\n\n```json\n{\"ok\":false}\n```\n";
    assert_eq!(
        (out.stop_reason.as_deref(), out.answer.as_deref()),
        (Some("end_turn"), Some(answer))
    );
    let tool = |status: &str, output: Value, end: u64| {
        json!({"kind": "toolBurst", "rawRange": {"start": 6, "end": end}, "tools": [
            {"name": "execute", "inputSummary": "touch x.txt", "status": status,
             "outputSummary": output, "exitCode": null}]})
    };
    let end = turn_end(16, answer);
    assert_json_eq(
        &events(&rec),
        &json!([
            status("info", "ACP agent", Some(AGENT), 2),
            started(4),
            status("warning", "Permission rejected", Some("execute touch x.txt: reject_once (no)"), 8),
            tool("failed", json!("chosen: no"), 9),
            status("info", "Plan", Some("[completed] look\n[pending] answer"), 10),
            {"kind": "system.unknownFrame", "frameKind": "session/update/future_kind",
             "cli": "fake-acp", "cliVersion": "1.0.0", "transport": "acp",
             "message": "Unknown frame (kind session/update/future_kind, cli fake-acp v1.0.0)",
             "rawRange": {"start": 12, "end": 12}},
            // Unknown frames do not flush what is merging (docs/PROJECTOR.md).
            status("info", "Reasoning", Some("thinking"), 11),
            status("warning", "Agent request refused",
                   Some("fs/read_text_file: not implemented by vf (method not found)"), 14),
            {"kind": "message.taskAgent", "text": answer, "final": true,
             "rawRange": {"start": 15, "end": 15}},
            end,
        ]),
    );
    assert!(
        !rec.raw
            .iter()
            .any(|l| l.contains("payload-must-not-show") && !l.contains(r#""dir":"in""#))
    );
    assert!(!events(&rec).to_string().contains("payload-must-not-show"));
    assert_replays(&rec);
}

#[test]
fn skip_permissions_allows_the_tool() {
    let req = SessionRequest {
        policy: Policy::SkipPermissions,
        ..request("hi")
    };
    let (r, rec) = run(&["tool"], req, false);
    assert_eq!(
        r.unwrap().answer.as_deref(),
        Some("Tool completed.\n\n```json\n{\"ok\":true}\n```\n")
    );
    assert_json_eq(
        &events(&rec)[2],
        &status(
            "info",
            "Permission allowed",
            Some("execute touch x.txt: allow_once (yes)"),
            8,
        ),
    );
}

#[test]
fn session_load_replays_history_then_prompts_on_the_same_session() {
    let req = SessionRequest {
        resume: Some("sess-1".to_string()),
        ..request("again")
    };
    let (r, rec) = run(&["json"], req, false);
    let out = r.unwrap();
    assert_eq!(
        (out.session_id.as_deref(), out.answer.as_deref()),
        (
            Some("sess-1"),
            Some("Done.\n\n```json\n{\"confidence\":1}\n```\n")
        )
    );
    let e = events(&rec);
    assert_json_eq(
        &json!([e[1], e[2], e[3]]),
        &json!([
            {"kind": "message.user", "text": "earlier prompt", "rawRange": {"start": 4, "end": 4}},
            {"kind": "message.taskAgent", "text": "earlier answer", "rawRange": {"start": 5, "end": 5}},
            {"kind": "system.status", "level": "info", "label": "Session loaded",
             "sessionId": "sess-1", "rawRange": {"start": 6, "end": 6}},
        ]),
    );
    assert_replays(&rec);
}

#[test]
fn a_resume_is_refused_when_the_agent_cannot_load() {
    let req = SessionRequest {
        resume: Some("sess-1".to_string()),
        ..request("again")
    };
    let (r, rec) = run(&["json", "--no-load"], req, false);
    assert_eq!(r.unwrap_err(), AcpError::NoLoad("fake-acp".to_string()));
    assert_eq!(rec.raw.len(), 2, "nothing after initialize: {:?}", rec.raw);
}

#[test]
fn an_image_is_refused_when_the_agent_takes_none() {
    let mut req = request("look");
    req.prompt.push(PromptPart::Image {
        mime_type: "image/png".into(),
        data: "AAAA".into(),
    });
    let (r, rec) = run(&["json", "--no-image"], req, false);
    assert_eq!(
        r.unwrap_err(),
        AcpError::Unsupported("image", "fake-acp".to_string())
    );
    assert_eq!(rec.raw.len(), 2, "no session was opened: {:?}", rec.raw);
}

#[test]
fn a_cancel_sends_session_cancel_and_the_turn_ends_cancelled() {
    let (r, rec) = run(&["cancel"], request("hi"), true);
    let out = r.unwrap();
    assert_eq!(
        (out.stop_reason.as_deref(), out.cancel_sent),
        (Some("cancelled"), true)
    );
    assert_eq!(
        out.failure(),
        Some((
            vf::ground::error::Reason::Cancelled,
            "the agent stopped: cancelled".to_string()
        ))
    );
    let e = events(&rec);
    assert_json_eq(
        &json!([e[2], e[3]]),
        &json!([
            {"kind": "message.taskAgent", "text": "working", "rawRange": {"start": 6, "end": 6}},
            status("warning", "Cancel requested (session/cancel)", None, 7),
        ]),
    );
}

#[test]
fn each_stop_reason_and_error_answer_is_its_own_failure() {
    use vf::ground::error::Reason;
    let (r, _) = run(&["refusal"], request("hi"), false);
    assert_eq!(
        r.unwrap().failure(),
        Some((Reason::Refusal, "the agent stopped: refusal".to_string()))
    );
    let (r, rec) = run(&["error"], request("hi"), false);
    let out = r.unwrap();
    let why = "session/prompt: model exploded".to_string();
    assert_eq!(out.failure(), Some((Reason::Engine, why.clone())));
    assert_json_eq(
        &events(&rec)[2],
        &status("error", "Request failed", Some(&why), 6),
    );
    for (stop, reason) in [
        ("max_tokens", Reason::MaxTokens),
        ("max_turn_requests", Reason::MaxTurnRequests),
        ("cancelled", Reason::Cancelled),
        ("new_reason", Reason::Engine),
    ] {
        assert_eq!(
            vf::engine::acp::stop_failure(stop).map(|f| f.0),
            Some(reason),
            "{stop}"
        );
    }
    assert_eq!(vf::engine::acp::stop_failure("end_turn"), None);
}

#[test]
fn a_hung_agent_is_a_timeout() {
    let (r, _) = run(&["hang"], within(Duration::from_millis(800)), false);
    let e = r.unwrap_err();
    assert_eq!(e, AcpError::Timeout(Duration::from_millis(800), None));
    assert_eq!(e.reason(), vf::ground::error::Reason::Timeout);
}

#[test]
fn garbage_is_logged_shown_and_named_in_the_error() {
    let (r, rec) = run(&["garbage"], within(Duration::from_secs(3)), false);
    let first = "Welcome to the agent!".to_string();
    assert_eq!(
        r.unwrap_err(),
        AcpError::Timeout(Duration::from_secs(3), Some(first))
    );
    assert_eq!(
        rec.raw[1..],
        [
            r#"{"dir":"in","text":"Welcome to the agent!"}"#.to_string(),
            "{\"dir\":\"in\",\"text\":\"\u{fffd}\u{fffd} not utf-8\"}".to_string(),
        ]
    );
    assert_json_eq(
        &events(&rec),
        &json!([
            status(
                "warning",
                "Non-JSON line from the agent",
                Some("Welcome to the agent!"),
                2
            ),
            status(
                "warning",
                "Non-JSON line from the agent",
                Some("\u{fffd}\u{fffd} not utf-8"),
                3
            ),
        ]),
    );
}

#[test]
fn an_agent_that_exits_mid_prompt_is_an_error_not_a_hang() {
    let (r, rec) = run(&["exit"], request("hi"), false);
    let e = r.unwrap_err();
    assert_eq!(
        (e.clone(), e.reason()),
        (AcpError::Closed(None), vf::ground::error::Reason::Engine)
    );
    // What it said before it went is still shown.
    assert_json_eq(
        &events(&rec)[2],
        &json!(
        {"kind": "message.taskAgent", "text": "bye", "rawRange": {"start": 6, "end": 6}}),
    );
}

/// An agent that closes its stdin and then explains itself on stdout: vf's
/// next write meets a broken pipe, and the error still carries what it said
/// (it was a bare "broken pipe" protocol error before).
#[test]
fn an_agent_that_closes_its_input_is_named_by_its_last_words() {
    let (r, rec) = run(&["slam"], request("hi"), false);
    let e = r.unwrap_err();
    let said = Some("goodbye: out of credits".to_string());
    assert_eq!(
        (e.clone(), e.reason()),
        (AcpError::Closed(said), vf::ground::error::Reason::Engine)
    );
    let last = rec.raw.last().unwrap();
    assert_eq!(last, r#"{"dir":"in","text":"goodbye: out of credits"}"#);
}

/// An agent that closes its stdin and stays alive can never be asked
/// anything again: the session ends soon after the broken pipe, not at its
/// (here distant) deadline.
#[test]
fn an_agent_alive_with_its_input_closed_ends_the_session_soon() {
    let started = std::time::Instant::now();
    let (r, _) = run(&["deaf"], within(Duration::from_secs(30)), false);
    let took = started.elapsed();
    assert!(
        matches!(r, Err(AcpError::Protocol(ref e)) if e.contains("Broken pipe")),
        "{r:?}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[test]
fn a_session_id_of_a_refused_shape_is_never_surfaced() {
    let (r, rec) = run(&["badid"], request("hi"), false);
    assert_eq!(
        r.unwrap_err(),
        AcpError::BadSessionId("bad id/../x".to_string())
    );
    assert!(rec.ids.is_empty());
    assert_json_eq(
        &events(&rec)[1],
        &status("error", "Invalid session id", Some("bad id/../x"), 4),
    );
}

// ---- doctor's handshake -----------------------------------------------------

fn handshake(
    argv: &[&str],
    timeout: Duration,
) -> Result<vf::engine::acp::AgentFacts, vf::readiness::doctor::acp_handshake::HandshakeError> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    vf::readiness::doctor::acp_check::gather_acp("", &argv, &[], &common::root(), timeout)
}

/// The handshake runs the agent with the variables a dispatch adds (a
/// preset's), as its session would be run.
#[test]
fn the_handshake_passes_the_agents_variables() {
    let script = agent_script();
    let argv: Vec<String> = ["python3", script.to_str().unwrap(), "json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let env = [("FAKE_ACP_NAME".to_string(), "named-by-env".to_string())];
    let facts = vf::readiness::doctor::acp_check::gather_acp(
        "",
        &argv,
        &env,
        &common::root(),
        Duration::from_secs(20),
    );
    assert_eq!(facts.unwrap().name, "named-by-env");
}

#[test]
fn the_handshake_names_the_agent_and_judges_it_ready() {
    let script = agent_script();
    let facts = handshake(
        &["python3", script.to_str().unwrap(), "json"],
        Duration::from_secs(20),
    );
    assert_json_eq(
        &serde_json::to_value(facts.as_ref().unwrap()).unwrap(),
        &agent_facts(),
    );
    let argv = vec!["python3".to_string()];
    let report = vf::readiness::doctor::acp_check::judge_acp(&argv, facts);
    assert_json_eq(
        &serde_json::to_value(&report).unwrap(),
        &json!({"command": ["python3"], "agent": agent_facts(), "verdict": "ready",
                "reasons": [], "warnings": []}),
    );
}

#[test]
fn the_handshake_says_what_is_wrong_with_a_command() {
    use vf::readiness::doctor::acp_handshake::HandshakeError as E;
    let script = agent_script();
    let script = script.to_str().unwrap();
    let short = Duration::from_millis(1500);
    assert_eq!(handshake(&[], short), Err(E::Empty));
    assert_eq!(
        handshake(&["no-such-acp-agent-here"], short),
        Err(E::Missing("no-such-acp-agent-here".to_string()))
    );
    assert_eq!(
        handshake(&["sleep", "30"], short),
        Err(E::Hung("sleep".to_string(), 1.5, String::new()))
    );
    assert_eq!(
        handshake(&["python3", script, "garbage"], Duration::from_secs(8)),
        Err(E::Hung(
            "python3".to_string(),
            8.0,
            " (it wrote: Welcome to the agent!)".to_string()
        ))
    );
    assert_eq!(
        handshake(&["sh", "-c", "echo hello; exit 0"], Duration::from_secs(10)),
        Err(E::Garbage("sh".to_string(), "hello".to_string()))
    );
    assert_eq!(
        handshake(&["sh", "-c", "exit 0"], Duration::from_secs(10)),
        Err(E::Garbage(
            "sh".to_string(),
            "it ended without answering initialize".to_string()
        ))
    );
}

#[test]
fn a_line_over_the_cap_is_skipped_with_a_warning_and_the_run_goes_on() {
    let (r, rec) = run(&["huge"], request("hi"), false);
    assert_eq!(r.unwrap().stop_reason.as_deref(), Some("end_turn"));
    let n = (9 << 20) + 63;
    assert_eq!(rec.raw[5], format!(r#"{{"dir":"in","oversized":{n}}}"#));
    let detail = format!("{n} bytes skipped (over the line cap)");
    assert_json_eq(
        &events(&rec)[2],
        &status("warning", "Oversized line from the agent", Some(&detail), 6),
    );
}
