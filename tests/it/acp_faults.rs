//! The ACP driver against a fake agent that replays a loaded session's history
//! at every point around the new prompt (issue 38), and against agents that
//! break the protocol (issue 39): malformed responses, a silent handshake,
//! another session's updates, results and ids of the wrong shape.

use std::time::Duration;

use serde_json::{Value, json};
use vf::engine::acp::{AcpError, SessionRequest};
use vf::engine::frames::ConversationEvent;
use vf::ground::error::Reason;

use crate::acp::{assert_replays, events, request, run};

const NEW: &str = "New answer.\n\n```json\n{\"new\":1}\n```\n";
const OLD: &str = "Old answer.\n\n```json\n{\"old\":1}\n```\n";

fn resume() -> SessionRequest {
    SessionRequest {
        resume: Some("sess-1".to_string()),
        ..request("go on")
    }
}

/// Each place a loaded session's history can come, with the bookkeeping
/// update before, between, after or nowhere: the answer is the new turn's,
/// the old turn is a row of its own, never final, and the raw log projects
/// to the same events.
#[test]
fn replayed_history_is_never_the_answer_in_any_order() {
    for place in ["before", "after", "prompt", "split"] {
        for acu in ["none", "before", "between", "after"] {
            let what = format!("--replay={place} --acu={acu}");
            let (replay, bookkeeping) = (format!("--replay={place}"), format!("--acu={acu}"));
            let (r, rec) = run(&["json", &replay, &bookkeeping], resume(), false);
            let out = r.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(out.answer.as_deref(), Some(NEW), "{what}");
            assert_eq!(out.summary().value(), Some(&json!({"new": 1})), "{what}");
            let agent: Vec<(String, bool)> = rec
                .events
                .iter()
                .filter_map(|e| match e {
                    ConversationEvent::TaskAgent { text, is_final, .. } => {
                        Some((text.clone(), *is_final))
                    }
                    _ => None,
                })
                .collect();
            let want = vec![(OLD.to_string(), false), (NEW.to_string(), true)];
            assert_eq!(agent, want, "{what}");
            assert_replays(&rec);
            let (_, replayed) = vf::engine::acp::project_log(&rec.raw.join("\n"));
            assert_eq!(replayed.answer.as_deref(), Some(NEW), "{what}: replayed");
        }
    }
}

/// History of several messages (text, a tool, the answer) that the agent
/// replays after `session/load`'s answer is drained before the prompt goes
/// out: logged before it, it is history, live and replayed.
#[test]
fn history_replayed_after_the_loads_answer_is_drained_before_the_prompt() {
    for place in ["before", "after"] {
        let replay = format!("--replay={place}");
        let (r, rec) = run(&["json", &replay, "--history=tool"], resume(), false);
        assert_eq!(r.unwrap().answer.as_deref(), Some(NEW), "{place}");
        let prompt_at = rec.raw.iter().position(|l| l.contains("session/prompt"));
        let old_at = rec.raw.iter().position(|l| l.contains("Old answer."));
        let before = matches!((old_at, prompt_at), (Some(o), Some(p)) if o < p);
        assert!(before, "{place}: {:?}", rec.raw);
        assert_replays(&rec);
    }
}

/// A user chunk that only echoes the prompt just sent replays nothing: the
/// agent text after it is the answer.
#[test]
fn an_echo_of_the_prompt_is_no_replay() {
    let lines = [
        r#"{"dir":"out","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"do it"}]}}}"#,
        r#"{"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"do it"}}}}}"#,
        r#"{"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}}}}"#,
        r#"{"dir":"in","msg":{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}}"#,
    ];
    let (_, out) = vf::engine::acp::project_log(&lines.join("\n"));
    assert_eq!(out.answer.as_deref(), Some("done"));
}

/// A response to a pending request that is not JSON-RPC 2.0 ends the
/// session at once (never at the 20 s deadline), saying what was wrong.
#[test]
fn a_malformed_response_fails_at_once_and_says_why() {
    let shapes = [
        ("both", "the response has both a result and an error"),
        ("neither", "the response has neither a result nor an error"),
        ("nojsonrpc", "the response has no \"jsonrpc\""),
        ("v1", "the response says \"jsonrpc\": \"1.0\", not \"2.0\""),
    ];
    for step in ["session/prompt", "initialize", "session/new"] {
        for (shape, why) in shapes {
            let args = [
                "malformed",
                &format!("--step={step}"),
                &format!("--shape={shape}"),
            ];
            let (r, rec) = run(&args, request("hi"), false);
            let want = AcpError::Malformed(format!("{step}: {why}"));
            assert_eq!(r, Err(want), "{step} {shape}");
            assert_eq!(AcpError::Malformed(String::new()).reason(), Reason::Engine);
            let rows = events(&rec).to_string();
            assert!(
                rows.contains("Malformed response"),
                "{step} {shape}: {rows}"
            );
        }
    }
}

fn handshake_within(limit: Duration, req: SessionRequest) -> SessionRequest {
    SessionRequest {
        handshake: limit,
        ..req
    }
}

/// An agent silent at a handshake step fails after the handshake deadline
/// (well before the session's own 20 s), naming the step. The deadline is
/// long enough for the fake to answer the steps before it on a busy machine.
#[test]
fn a_silent_handshake_step_fails_at_its_deadline_naming_it() {
    let limit = Duration::from_secs(3);
    let cases = [
        ("silent", request("hi"), "initialize"),
        ("mute-new", request("hi"), "session/new"),
        ("mute-load", resume(), "session/load"),
    ];
    for (mode, req, step) in cases {
        let (r, _) = run(&[mode], handshake_within(limit, req), false);
        let e = r.unwrap_err();
        assert_eq!(e, AcpError::Handshake(step, limit), "{mode}");
        assert_eq!(e.reason(), Reason::Timeout);
        let text = e.to_string();
        assert!(text.contains(step) && text.contains("3.0 s"), "{text}");
    }
}

/// Updates of another session are drift: counted as unknown frames without
/// their payload, never in the answer.
#[test]
fn another_sessions_updates_are_drift_not_the_answer() {
    let (r, rec) = run(&["foreign"], request("hi"), false);
    let out = r.unwrap();
    assert_eq!(
        out.answer.as_deref(),
        Some("Done.\n\n```json\n{\"confidence\":1}\n```\n")
    );
    let rows = events(&rec);
    let kinds: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "system.unknownFrame")
        .map(|e| &e["frameKind"])
        .collect();
    assert_eq!(
        kinds,
        vec![&json!("session/update (another session)"); 2],
        "{rows}"
    );
    let text = rows.to_string();
    assert!(
        !text.contains("FOREIGN") && !text.contains("secret-foreign-payload"),
        "{text}"
    );
    assert_replays(&rec);
}

/// A prompt result of the wrong shape and a session id of the wrong JSON
/// type are each one line that says what was wrong.
#[test]
fn wrong_shapes_are_named_in_one_line() {
    let (r, _) = run(&["badstop"], request("hi"), false);
    let why = r.unwrap().failure();
    let want = "session/prompt: the result's stopReason is a number, not a string";
    assert_eq!(why, Some((Reason::Engine, want.to_string())));
    let (r, _) = run(&["badstop", "--shape=none"], request("hi"), false);
    let want = "session/prompt: the result has no stopReason";
    assert_eq!(
        r.unwrap().failure(),
        Some((Reason::Engine, want.to_string()))
    );
    let (r, rec) = run(&["numid"], request("hi"), false);
    let e = r.unwrap_err();
    let want = AcpError::BadSessionId("sessionId is a number, not a string".to_string());
    assert_eq!(e, want);
    assert!(!e.to_string().contains('\n'), "{e}");
    assert!(rec.ids.is_empty());
}
