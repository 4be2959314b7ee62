//! Every genuine capture under `fixtures/<cli>/<version>/` replayed through
//! the projector, whose tracker reads the run's outcome off the manifest's
//! lifecycle rows: session id, success/failure, final answer, summary.
//!
//! Expected values were read off the captures independently of the code
//! (the `thread.started` line, the `result` envelope, ...), and the exit code
//! comes from each case's `cmd.txt`.

use serde_json::{Value, json};
use vf::engine::frames::{Projector, Tracker};
use vf::engine::summary::{Summary, extract};
use vf::engine::{EngineId, Outcome, OutputTransport};
use vf::ground::version::Version;

use crate::common;
use common::{fixtures, read_text, recorded_exit};

/// How the capture's stdout is framed (the projector's transport).
#[derive(Clone, Copy, Debug)]
enum Feed {
    /// One JSON frame per line.
    Jsonl,
    /// One (pretty-printed) JSON document.
    Document,
    /// Plain text, line by line.
    Text,
}

struct Case {
    cli: &'static str,
    version: &'static str,
    case: &'static str,
    feed: Feed,
    session: Option<&'static str>,
    failed: bool,
    answer: Option<&'static str>,
    summary: Option<Value>,
}

const A: &str =
    "Done. Here is the result:\n\n```json\n{\"confidence\":1.0,\"files_changed\":[]}\n```\n";
const B: &str =
    "The command printed: hello\n\n```json\n{\"confidence\":0.9,\"files_changed\":[]}\n```\n";
const C: &str = "Resumed. I still remember the previous answer.\n\n```json\n{\"confidence\":0.8,\"files_changed\":[\"a.txt\"]}\n```\n";
const DENIED: &str = "Finished (the shell tool may have been refused).\n\n```json\n{\"confidence\":0.5,\"files_changed\":[\"lab-written.txt\"]}\n```\n";
const T: &str = "Thought it through.\n\n```json\n{\"confidence\":0.7,\"files_changed\":[]}\n```\n";
/// The answer of vf's own verification runs (the `v_` captures).
const V: &str = "Done.\n\n```json\n{\"confidence\": 0.9, \"files_changed\": []}\n```";

fn sa() -> Option<Value> {
    Some(json!({"confidence": 1.0, "files_changed": []}))
}
fn sb() -> Option<Value> {
    Some(json!({"confidence": 0.9, "files_changed": []}))
}
fn sc() -> Option<Value> {
    Some(json!({"confidence": 0.8, "files_changed": ["a.txt"]}))
}
fn st() -> Option<Value> {
    Some(json!({"confidence": 0.7, "files_changed": []}))
}
fn sd() -> Option<Value> {
    Some(json!({"confidence": 0.5, "files_changed": ["lab-written.txt"]}))
}

#[allow(clippy::too_many_arguments)]
fn case(
    cli: &'static str,
    version: &'static str,
    case: &'static str,
    feed: Feed,
    session: Option<&'static str>,
    failed: bool,
    answer: Option<&'static str>,
    summary: Option<Value>,
) -> Case {
    Case {
        cli,
        version,
        case,
        feed,
        session,
        failed,
        answer,
        summary,
    }
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    use Feed::*;
    const CL: &str = "2.1.332";
    const CX: &str = "0.171.0";
    const CP: &str = "1.0.102";
    const GM: &str = "0.61.0";
    const OC: &str = "1.18.33";
    let claude_a = Some("5e0e0c89-f301-4ba6-8327-7b41f84dc493");
    let codex_a = Some("01a229fa-c269-71a3-a12b-439065dbf14b");
    let copilot_a = Some("23a3694b-6367-494d-aa02-ae5d5602995f");
    let gemini_a = Some("d40ec370-b510-4397-9950-47c6add9e2ec");
    let opencode_a = Some("ses_dd6038aa0ffepDEX7skMCMq13N");
    let copilot_83 = Some("7834b0c5-24fe-4980-a264-ee0755314937");
    const CL207: &str = "2.1.207";
    const CX144: &str = "0.144.1";
    const GM47: &str = "0.47.0";
    vec![
        // claude: `--output-format json` (one envelope) and stream-json.
        case("claude", CL, "a_json", Jsonl, claude_a, false, Some(A), sa()),
        case("claude", CL, "a_json_partial", Jsonl, Some("fb4f1f73-314d-45ca-8bee-78f11161d236"), false, Some(A), sa()),
        case("claude", CL, "a_json_stream", Jsonl, Some("a45120f2-ed10-406b-8dbb-c2e6151c6f7f"), false, Some(A), sa()),
        case("claude", CL, "b_tool", Jsonl, Some("7c17dcf2-5636-43f8-8a35-03f46bb9d92c"), false, Some(B), sb()),
        // The prompt was eaten by --allowedTools: exit 1, nothing on stdout.
        case("claude", CL, "b_tool_argorder_pitfall", Jsonl, None, true, None, None),
        case("claude", CL, "b_tool_denied", Jsonl, Some("66abd721-e87b-49a4-9ac4-13ee9f530611"), false, Some(DENIED), sd()),
        case("claude", CL, "b_tool_json", Jsonl, Some("75892337-66ff-4d6f-bb9f-f3f56581541a"), false, Some(B), sb()),
        case("claude", CL, "b_tool_readonly_noallow", Jsonl, Some("bf63d170-8284-455e-bdfe-d23e65d3a47e"), false, Some(B), sb()),
        case("claude", CL, "c_resume", Jsonl, claude_a, false, Some(C), sc()),
        case("claude", CL, "c_resume_stream", Jsonl, claude_a, false, Some(C), sc()),
        // is_error:true with subtype "success": failed, and the text is the error, not an answer.
        case("claude", CL, "d_error500", Jsonl, Some("efba3329-036f-44bc-b578-35f78544f34d"), true, None, None),
        case("claude", CL, "v_stdin_append_file", Jsonl, Some("5c3cb759-b260-4ba2-8cd5-96b9a693ce4a"), false, Some(V), sb()),
        case("claude", "2.1.220", "v_a_stream", Jsonl, Some("c1a41d45-cb79-44f3-8d3a-a23a9d3f9120"), false, Some(V), sb()),
        case("claude", "2.1.220", "v_c_stream", Jsonl, Some("c1a41d45-cb79-44f3-8d3a-a23a9d3f9120"), false, Some(V), sb()),
        // codex
        case("codex", CX, "a_json", Jsonl, codex_a, false, Some(A), sa()),
        case("codex", CX, "b_tool", Jsonl, Some("01a229fa-c37b-7e73-b0a3-717af64fe884"), false, Some(B), sb()),
        case("codex", CX, "c_resume", Jsonl, codex_a, false, Some(C), sc()),
        case("codex", CX, "d_error500", Jsonl, Some("01a229fa-c603-7b92-9c6b-93f1b52dd97e"), true, None, None),
        case("codex", CX, "v_a_image", Jsonl, Some("01a22a2c-a7e0-7fa3-ba24-ede4d191138a"), false, Some(V), sb()),
        case("codex", CX, "v_c_resume_image", Jsonl, Some("01a22a2c-a7e0-7fa3-ba24-ede4d191138a"), false, Some(V), sb()),
        case("codex", "0.146.0", "v_a_image", Jsonl, Some("01a22a2c-9fda-7f12-90c4-146db0b50509"), false, Some(V), sb()),
        case("codex", "0.146.0", "v_c_resume_image", Jsonl, Some("01a22a2c-9fda-7f12-90c4-146db0b50509"), false, Some(V), sb()),
        // copilot
        case("copilot", CP, "a_json", Jsonl, copilot_a, false, Some(A), sa()),
        case("copilot", CP, "b_tool", Jsonl, Some("35a7955e-a35e-4e55-9635-50a19b7f8e45"), false, Some(B), sb()),
        case("copilot", CP, "b_tool_noallow", Jsonl, Some("d19e610f-881a-4958-a227-30f8a5cf94dc"), false, Some(DENIED), sd()),
        case("copilot", CP, "c_resume", Jsonl, copilot_a, false, Some(C), sc()),
        case("copilot", CP, "d_error500", Jsonl, Some("300fa13f-1b1d-4b00-b368-a1f7a3077291"), true, None, None),
        // With `--mcp`: the server's frames are no part of the outcome.
        case("copilot", CP, "h_mcp", Jsonl, Some("ec8ce325-8671-4ef3-95bc-0f00475067fa"), false, Some(A), sa()),
        case("copilot", CP, "h_mcp_failed", Jsonl, Some("c3ddafd5-336c-409c-ae6a-e5bbff058837"), false, Some(A), sa()),
        case("copilot", CP, "g_text_mode", Text, None, false, Some("Done. Here is the result:\n\n```json\n{\"confidence\":1.0,\"files_changed\":[]}\n```"), sa()),
        case("copilot", "1.0.83", "v_a_json", Jsonl, copilot_83, false, Some(V), sb()),
        case("copilot", "1.0.83", "v_c_resume", Jsonl, copilot_83, false, Some(V), sb()),
        // gemini: json mode is one multi-line document.
        case("gemini", GM, "a_json", Document, gemini_a, false, Some(A), sa()),
        case("gemini", GM, "a_json_stream", Jsonl, Some("d3f6ac9f-7916-4e67-bc5e-ec6210584553"), false, Some(A), sa()),
        case("gemini", GM, "b_tool", Jsonl, Some("3e94d0ea-b8f4-4335-834c-590cbe21b4aa"), false, Some(B), sb()),
        case("gemini", GM, "b_tool_json", Document, Some("42d8b642-c127-4ef4-902a-acc2d4ad9326"), false, Some(B), sb()),
        case("gemini", GM, "b_tool_noyolo", Jsonl, Some("b5a13e3e-5340-48b7-bc82-c698d272fb65"), false, Some(DENIED), sd()),
        case("gemini", GM, "c_resume", Document, gemini_a, false, Some(C), sc()),
        case("gemini", GM, "c_resume_stream", Jsonl, gemini_a, false, Some(C), sc()),
        case("gemini", GM, "d_error500", Jsonl, Some("4b945cec-a522-4a40-b06d-477e3bb2726b"), true, None, None),
        // The token limit ran out before any answer (LAB-MAXTOKENS): the runner's
        // truncation frame, a failing result, exit 0.
        case("gemini", GM, "d_max_tokens", Jsonl, Some("3b5366c2-9d2b-4069-9fc2-f824cd420655"), true, None, None),
        case("gemini", GM, "d_max_tokens_json", Document, Some("f928eba4-35b4-43c2-b653-bc08a363fbca"), true, None, None),
        // opencode
        case("opencode", OC, "a_json", Jsonl, opencode_a, false, Some(A), sa()),
        case("opencode", OC, "b_tool", Jsonl, Some("ses_dd6038044ffeJjYH64fakXdqJQ"), false, Some(B), sb()),
        // Permission auto-rejected: the run stops after the tool call, exit 0.
        case("opencode", OC, "b_tool_ask", Jsonl, Some("ses_dd60372d6ffeFmEVs8wxcDuuQh"), true, Some("I will create a file."), None),
        case("opencode", OC, "c_resume", Jsonl, opencode_a, false, Some(C), sc()),
        // The API error comes before any step: the id is on the error frame.
        case("opencode", OC, "d_error500", Jsonl, Some("ses_dd6035e31ffeiHU4ZjjkjUTU4K"), true, None, None),
        case("opencode", "1.18.22", "v_a_stdin", Jsonl, Some("ses_dd5d5e3d7ffeNkd6hjHO3lUqbz"), false, Some(V), sb()),
        case("opencode", "1.18.22", "v_c_stdin", Jsonl, Some("ses_dd5d5e3d7ffeNkd6hjHO3lUqbz"), false, Some(V), sb()),
        case("opencode", OC, "v_stdin_file", Jsonl, Some("ses_dd5de8ad4ffeLP5vMvw7PferlN"), false, Some(V), sb()),
        // The seed-verified baselines (scripts/capture.sh). A gemini json-mode error
        // leaves stdout empty (the error document is on stderr).
        case("claude", CL207, "a_json", Jsonl, Some("ec838037-a275-46e3-b8d2-164dd0bd76dc"), false, Some(A), sa()),
        case("claude", CL207, "a_json_partial", Jsonl, Some("96e82086-9fc1-437a-8c07-fb8416a930c5"), false, Some(A), sa()),
        case("claude", CL207, "a_json_stream", Jsonl, Some("51ae2ecf-d2b7-4e8c-b48f-f4c8c2e4b306"), false, Some(A), sa()),
        case("claude", CL207, "b_tool", Jsonl, Some("682348f7-f066-400b-8f6e-107570b779df"), false, Some(B), sb()),
        case("claude", CL207, "b_tool_json", Jsonl, Some("cb8d3582-05aa-479b-a494-3c2490c6d857"), false, Some(B), sb()),
        case("claude", CL207, "c_resume", Jsonl, Some("ec838037-a275-46e3-b8d2-164dd0bd76dc"), false, Some(C), sc()),
        case("claude", CL207, "c_resume_stream", Jsonl, Some("ec838037-a275-46e3-b8d2-164dd0bd76dc"), false, Some(C), sc()),
        case("claude", CL207, "d_error400", Jsonl, Some("1e557167-e924-40c1-b8a4-235478414e4b"), true, None, None),
        case("claude", CL207, "d_error429", Jsonl, Some("6194bcf3-613b-4938-813a-96fd27dc6521"), true, None, None),
        case("claude", CL207, "d_error500", Jsonl, Some("853554d8-e424-42dd-9d2b-dedc592070d4"), true, None, None),
        case("claude", CL207, "d_error500_json", Jsonl, Some("45e13ef9-d0b0-4c66-b49f-a59956a203e5"), true, None, None),
        case("claude", CL207, "d_stream_error", Jsonl, Some("218e56ff-5fd9-460c-8613-aa7ed75c9fff"), true, None, None),
        case("claude", CL207, "e_thinking", Jsonl, Some("ca3e6ec3-2da8-4726-bced-2111fae4957a"), false, Some(T), st()),
        case("codex", CX144, "a_json", Jsonl, Some("01a22d41-5c9a-7371-8dd2-5f210908522a"), false, Some(A), sa()),
        case("codex", CX144, "b_tool", Jsonl, Some("01a22d41-5f41-72f1-bc92-ddda0641588e"), false, Some(B), sb()),
        case("codex", CX144, "c_resume", Jsonl, Some("01a22d41-5c9a-7371-8dd2-5f210908522a"), false, Some(C), sc()),
        case("codex", CX144, "d_error400", Jsonl, Some("01a22d41-6b6e-7ff3-b284-73f3940f7308"), true, None, None),
        case("codex", CX144, "d_error429", Jsonl, Some("01a22d41-691d-7301-a05d-0c2fc11b48c0"), true, None, None),
        case("codex", CX144, "d_error500", Jsonl, Some("01a22d41-6485-7321-8715-b01525ca9bfb"), true, None, None),
        case("codex", CX144, "d_stream_error", Jsonl, Some("01a22d41-6d43-7390-849a-021258c9fe6a"), true, None, None),
        case("codex", CX144, "e_reasoning", Jsonl, Some("01a22d41-70d6-7063-925b-f714e195144d"), false, Some(T), st()),
        case("gemini", GM47, "a_json", Document, Some("df1bb3cf-6789-4f4e-a852-bba5d31d521d"), false, Some(A), sa()),
        case("gemini", GM47, "a_json_stream", Jsonl, Some("e96011de-514d-418e-a5e2-40483300ffe9"), false, Some(A), sa()),
        case("gemini", GM47, "b_tool", Jsonl, Some("38e97413-ad65-4f88-9c92-c969abee94ba"), false, Some(B), sb()),
        case("gemini", GM47, "b_tool_json", Document, Some("790845f6-60a2-4382-9e06-623c4a56ddb2"), false, Some(B), sb()),
        case("gemini", GM47, "c_resume", Document, Some("df1bb3cf-6789-4f4e-a852-bba5d31d521d"), false, Some(C), sc()),
        case("gemini", GM47, "c_resume_stream", Jsonl, Some("df1bb3cf-6789-4f4e-a852-bba5d31d521d"), false, Some(C), sc()),
        case("gemini", GM47, "d_error400", Jsonl, Some("c80608c5-099a-46d9-9d90-f3c28c803f75"), true, None, None),
        case("gemini", GM47, "d_error429", Jsonl, Some("f2a80cdf-941e-48e9-b930-58aade58eda2"), true, None, None),
        case("gemini", GM47, "d_error500", Jsonl, Some("8c64227c-eba2-4e08-bda4-5f02f4a424e3"), true, None, None),
        case("gemini", GM47, "d_error500_json", Jsonl, None, true, None, None),
        // A failing closing row leaves no answer (frames/tracker.rs), so the partial text is not one.
        case("gemini", GM47, "d_stream_error", Jsonl, Some("c80b8835-e26b-46fa-9452-b18149a6af0e"), true, None, None),
        case("gemini", GM47, "e_thinking", Jsonl, Some("4f7d6ae4-4608-4d21-915e-ff8e57212c49"), false, Some(T), st()),
    ]
}

/// A replayed run: its projector, read through the tracker.
struct Run(Projector);

impl std::ops::Deref for Run {
    type Target = Tracker;
    fn deref(&self) -> &Tracker {
        self.0.tracker()
    }
}

/// Feeds stdout through a projector, line by line, as `vf dispatch` and
/// `vf replay` do.
fn replay(engine: EngineId, version: Option<&str>, stdout: &str, feed: Feed) -> Run {
    let transport = match feed {
        Feed::Jsonl => OutputTransport::Jsonl,
        Feed::Document => OutputTransport::Json,
        Feed::Text => OutputTransport::Text,
    };
    let version = version.map(|v| Version::parse(v).unwrap());
    let mut p = Projector::new(engine, version.as_ref(), transport);
    for line in stdout.strip_suffix('\n').unwrap_or(stdout).split('\n') {
        p.push_line(line.as_bytes());
    }
    p.finish();
    Run(p)
}

fn check(c: &Case) -> Outcome {
    let dir = fixtures().join(c.cli).join(c.version);
    let stdout = read_text(&dir.join(format!("{}.stdout.jsonl", c.case)));
    let exit = recorded_exit(&read_text(&dir.join(format!("{}.cmd.txt", c.case))));
    let engine = EngineId::parse(c.cli).unwrap();
    let t = replay(engine, Some(c.version), &stdout, c.feed);
    let id = format!("{}/{}/{}", c.cli, c.version, c.case);
    assert_eq!(t.session_id(), c.session, "{id}: live session id");
    let out = t.finish(Some(exit));
    assert_eq!(out.session_id.as_deref(), c.session, "{id}: session id");
    assert_eq!(out.failed, c.failed, "{id}: failed ({:?})", out.error);
    assert_eq!(out.error.is_some(), c.failed, "{id}: error text");
    if exit != 0 {
        assert!(out.failed, "{id}: non-zero exit {exit} must be a failure");
    }
    assert_eq!(out.answer.as_deref(), c.answer, "{id}: answer");
    let summary = out.answer.as_deref().map(extract);
    match (&c.summary, summary) {
        (Some(want), Some(Summary::Valid { value })) => assert_eq!(&value, want, "{id}"),
        (None, None | Some(Summary::Absent)) => {}
        (want, got) => panic!("{id}: summary {got:?}, want {want:?}"),
    }
    if let Some(sid) = c.session {
        assert!(
            engine.engine().valid_session_id(sid),
            "{id}: the recorded id has the engine's shape"
        );
    }
    out
}

#[test]
fn every_capture_replays() {
    for c in cases() {
        check(&c);
    }
}

#[test]
fn every_capture_is_in_the_table() {
    let table: Vec<String> = cases()
        .iter()
        .map(|c| format!("{}/{}/{}", c.cli, c.version, c.case))
        .collect();
    let mut found = Vec::new();
    for cli in std::fs::read_dir(fixtures()).unwrap().flatten() {
        if !cli.path().is_dir() {
            continue;
        }
        for ver in std::fs::read_dir(cli.path()).unwrap().flatten() {
            for f in std::fs::read_dir(ver.path()).unwrap().flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if let Some(case) = name.strip_suffix(".stdout.jsonl") {
                    found.push(format!(
                        "{}/{}/{case}",
                        cli.file_name().to_string_lossy(),
                        ver.file_name().to_string_lossy()
                    ));
                    assert!(
                        ver.path().join(format!("{case}.cmd.txt")).exists(),
                        "{name} has a cmd.txt"
                    );
                }
            }
        }
    }
    found.sort();
    let mut want = table.clone();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn failure_texts_come_from_the_engine() {
    let by = |cli: &str, case: &str| {
        let c = cases()
            .into_iter()
            .find(|c| c.cli == cli && c.case == case)
            .unwrap();
        check(&c).error.unwrap()
    };
    assert!(by("claude", "d_error500").starts_with("API Error: 500"));
    assert_eq!(
        by("codex", "d_error500"),
        "We’re currently experiencing high demand, which may cause temporary errors."
    );
    assert!(by("copilot", "d_error500").starts_with("Failed to get response from the AI model"));
    assert!(by("gemini", "d_error500").starts_with("[API Error:"));
    let truncated = "Model response was truncated because it exceeded the token limit.";
    assert!(by("gemini", "d_max_tokens").starts_with(truncated));
    assert!(by("gemini", "d_max_tokens_json").starts_with(truncated));
    assert_eq!(by("opencode", "d_error500"), "lab: internal server error");
    assert!(by("opencode", "b_tool_ask").contains("rejected permission"));
}

#[test]
fn recorded_ids_match_the_raw_text() {
    // A plain-text cross-check that needs no JSON parsing at all.
    for c in cases() {
        let Some(sid) = c.session else { continue };
        let p = fixtures()
            .join(c.cli)
            .join(c.version)
            .join(format!("{}.stdout.jsonl", c.case));
        assert!(read_text(&p).contains(sid), "{}: {sid}", c.case);
    }
    let codex = read_text(&fixtures().join("codex/0.171.0/a_json.stdout.jsonl"));
    let first = codex.lines().next().unwrap();
    assert!(first.starts_with(r#"{"type":"thread.started","thread_id":"01a229fa-c269"#));
}

// ---------- crafted variants for rules the captures do not exercise ----------

/// Crafted frames, one per line, through the newest family's projector.
fn frames(engine: EngineId, lines: &[Value]) -> Run {
    let stdout: String = lines.iter().map(|l| format!("{l}\n")).collect();
    replay(engine, None, &stdout, Feed::Jsonl)
}

const TID: &str = "01a229fa-c269-71a3-a12b-439065dbf14b";

#[test]
fn codex_reasoning_echo_is_never_the_answer() {
    let fenced = "```json\n{\"confidence\":1.0}\n```";
    let t = frames(
        EngineId::Codex,
        &[
            json!({"type":"thread.started","thread_id":TID}),
            json!({"type":"turn.started"}),
            json!({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":fenced}}),
            json!({"type":"turn.completed","usage":{"input_tokens":1}}),
        ],
    );
    let out = t.finish(Some(0));
    assert!(!out.failed);
    assert_eq!(out.answer, None);
    assert_eq!(out.session_id.as_deref(), Some(TID));
}

#[test]
fn codex_reasoning_before_the_answer_is_skipped() {
    let t = frames(
        EngineId::Codex,
        &[
            json!({"type":"thread.started","thread_id":TID}),
            json!({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"```json\n{\"wrong\":1}\n```"}}),
            json!({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"ok\n```json\n{\"right\":2}\n```"}}),
            json!({"type":"item.completed","item":{"id":"item_2","type":"reasoning","text":"```json\n{\"wrong\":3}\n```"}}),
            json!({"type":"turn.completed"}),
        ],
    );
    let out = t.finish(Some(0));
    assert_eq!(
        extract(out.answer.as_deref().unwrap()).value(),
        Some(&json!({"right": 2}))
    );
}

#[test]
fn codex_item_error_is_not_fatal_but_turn_failed_is() {
    let ok = frames(
        EngineId::Codex,
        &[
            json!({"type":"thread.started","thread_id":TID}),
            json!({"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `lab-model` not found"}}),
            json!({"type":"turn.started"}),
            json!({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"fine"}}),
            json!({"type":"turn.completed"}),
        ],
    )
    .finish(Some(0));
    assert!(!ok.failed, "{:?}", ok.error);
    assert_eq!(ok.answer.as_deref(), Some("fine"));

    let bad = frames(
        EngineId::Codex,
        &[
            json!({"type":"thread.started","thread_id":TID}),
            json!({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"partial"}}),
            json!({"type":"turn.failed","error":{"message":"boom"}}),
        ],
    )
    .finish(Some(0));
    assert!(bad.failed);
    assert_eq!(bad.error.as_deref(), Some("boom"));
}

#[test]
fn codex_first_thread_started_wins_and_bad_ids_are_ignored() {
    let t = frames(
        EngineId::Codex,
        &[
            json!({"type":"thread.started","thread_id":"../etc"}),
            json!({"type":"thread.started","thread_id":TID}),
            json!({"type":"thread.started","thread_id":"01a229fa-0000-71a3-a12b-439065dbf14b"}),
        ],
    );
    assert_eq!(t.session_id(), Some(TID));
}

#[test]
fn claude_success_subtype_with_is_error_is_a_failure() {
    let sid = "5e0e0c89-f301-4ba6-8327-7b41f84dc493";
    let t = frames(
        EngineId::Claude,
        &[json!({"type":"result","subtype":"success","is_error":true,
                 "result":"API Error: 429 slow down","session_id":sid})],
    );
    let out = t.finish(Some(0));
    assert!(out.failed);
    assert_eq!(out.error.as_deref(), Some("API Error: 429 slow down"));
    assert_eq!(out.answer, None);
    assert_eq!(out.session_id.as_deref(), Some(sid));
}

#[test]
fn claude_result_session_id_is_authoritative() {
    let first = "11111111-1111-4111-8111-111111111111";
    let last = "22222222-2222-4222-8222-222222222222";
    let t = frames(
        EngineId::Claude,
        &[
            json!({"type":"system","subtype":"init","session_id":first}),
            json!({"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":last}),
        ],
    );
    assert_eq!(t.session_id(), Some(last));
}

#[test]
fn claude_without_result_frame_fails() {
    let t = frames(
        EngineId::Claude,
        &[
            json!({"type":"assistant","session_id":"5e0e0c89-f301-4ba6-8327-7b41f84dc493",
                 "message":{"content":[{"type":"text","text":"half"}]}}),
        ],
    );
    let out = t.finish(Some(0));
    assert!(out.failed);
    assert_eq!(out.answer.as_deref(), Some("half"));
}

#[test]
fn gemini_answer_is_the_deltas_after_the_last_tool_use() {
    let sid = "d40ec370-b510-4397-9950-47c6add9e2ec";
    let t = frames(
        EngineId::Gemini,
        &[
            json!({"type":"init","session_id":sid,"model":"auto"}),
            json!({"type":"message","role":"user","content":"go"}),
            json!({"type":"message","role":"assistant","content":"first I ","delta":true}),
            json!({"type":"message","role":"assistant","content":"will look","delta":true}),
            json!({"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{}}),
            json!({"type":"tool_result","tool_id":"t1","status":"success","output":"x"}),
            json!({"type":"message","role":"assistant","content":"then more","delta":true}),
            json!({"type":"tool_use","tool_name":"run_shell_command","tool_id":"t2","parameters":{}}),
            json!({"type":"tool_result","tool_id":"t2","status":"success","output":"y"}),
            json!({"type":"message","role":"assistant","content":"Final ","delta":true}),
            json!({"type":"message","role":"assistant","content":"answer.\n```json\n{\"k\":","delta":true}),
            json!({"type":"message","role":"assistant","content":"1}\n```\n","delta":true}),
            json!({"type":"result","status":"success","stats":{}}),
        ],
    );
    let out = t.finish(Some(0));
    assert!(!out.failed);
    assert_eq!(
        out.answer.as_deref(),
        Some("Final answer.\n```json\n{\"k\":1}\n```\n")
    );
    assert_eq!(
        extract(out.answer.as_deref().unwrap()).value(),
        Some(&json!({"k": 1}))
    );
}

#[test]
fn gemini_status_error_with_exit_0_is_a_failure() {
    let stdout = read_text(&fixtures().join("gemini/0.61.0/d_error500.stdout.jsonl"));
    let t = replay(EngineId::Gemini, None, &stdout, Feed::Jsonl);
    let out = t.finish(Some(0));
    assert!(out.failed);
    assert!(out.error.unwrap().contains("API Error"));
}

#[test]
fn gemini_warning_error_frame_alone_is_not_a_failure() {
    let t = frames(
        EngineId::Gemini,
        &[
            json!({"type":"init","session_id":"d40ec370-b510-4397-9950-47c6add9e2ec"}),
            json!({"type":"error","severity":"warning","message":"loop detected"}),
            json!({"type":"message","role":"assistant","content":"ok","delta":true}),
            json!({"type":"result","status":"success"}),
        ],
    );
    assert!(!t.finish(Some(0)).failed);
}

#[test]
fn copilot_result_exit_code_decides_even_with_exit_0() {
    let t = frames(
        EngineId::Copilot,
        &[
            json!({"type":"assistant.message","data":{"content":"partial"}}),
            json!({"type":"result","sessionId":"23a3694b-6367-494d-aa02-ae5d5602995f","exitCode":1}),
        ],
    );
    let out = t.finish(Some(0));
    assert!(out.failed);
    assert_eq!(out.error.as_deref(), Some("copilot reported exit code 1"));
}

#[test]
fn copilot_text_mode_keeps_json_looking_lines() {
    // On the text transport every line is answer text: the summary's body
    // line parses as JSON and must still end up in the answer.
    let stdout = read_text(&fixtures().join("copilot/1.0.102/g_text_mode.stdout.jsonl"));
    let t = replay(EngineId::Copilot, None, &stdout, Feed::Text);
    let out = t.finish(Some(0));
    assert!(!out.failed, "{:?}", out.error);
    assert_eq!(
        extract(out.answer.as_deref().unwrap()).value(),
        Some(&json!({"confidence": 1.0, "files_changed": []}))
    );
}

#[test]
fn opencode_error_frame_is_a_failure_even_with_exit_0() {
    let stdout = read_text(&fixtures().join("opencode/1.18.33/d_error500.stdout.jsonl"));
    let out = replay(EngineId::Opencode, None, &stdout, Feed::Jsonl).finish(Some(0));
    assert!(out.failed);
}

#[test]
fn agy_plain_text_with_summary() {
    let t = replay(
        EngineId::Agy,
        None,
        "Done.\n```json\n{\"ok\": true}\n```\n\n",
        Feed::Text,
    );
    let out = t.finish(Some(0));
    assert_eq!(out.session_id, None);
    assert!(!out.failed);
    assert_eq!(
        extract(out.answer.as_deref().unwrap()).value(),
        Some(&json!({"ok": true}))
    );
    assert!(t.finish(Some(1)).failed);
    assert!(t.finish(None).failed);
}

#[test]
fn killed_runs_fail_for_every_engine() {
    for e in EngineId::ALL {
        let p = Projector::new(e, None, e.engine().output_transport(None));
        let out = p.tracker().finish(None);
        assert_eq!(out.error, Some(format!("{e} was killed")), "{e}");
    }
}

/// gemini keeps a session only once the model answered: the id of a run whose
/// first request failed is reported but gives no resume authority (`-r` exits 42).
#[test]
fn gemini_session_is_resumable_only_after_an_answer() {
    let run = |rel: &str| {
        let stdout = read_text(&fixtures().join(rel));
        let engine = EngineId::parse(rel.split('/').next().unwrap()).unwrap();
        replay(engine, None, &stdout, Feed::Jsonl)
    };
    let failed = run("gemini/0.61.0/d_error500.stdout.jsonl");
    assert!(failed.session_id().is_some());
    assert!(!failed.resumable());
    assert!(run("gemini/0.61.0/a_json_stream.stdout.jsonl").resumable());
    // Live: the id is known from `init`, resumable from the model's first output.
    let mut p = Projector::new(EngineId::Gemini, None, OutputTransport::Jsonl);
    let stdout = read_text(&fixtures().join("gemini/0.61.0/b_tool.stdout.jsonl"));
    let live: Vec<(bool, bool)> = stdout
        .lines()
        .map(|l| {
            p.push_line(l.as_bytes());
            (p.tracker().session_id().is_some(), p.tracker().resumable())
        })
        .collect();
    let first_model_line = stdout
        .lines()
        .position(|l| l.contains(r#""role":"assistant""#) || l.contains(r#""type":"tool_use""#))
        .unwrap();
    for (i, (known, resumable)) in live.into_iter().enumerate() {
        assert!(known, "line {i}");
        assert_eq!(resumable, i >= first_model_line, "line {i}");
    }
    // Other engines keep even a failed first turn's session.
    assert!(run("codex/0.171.0/d_error500.stdout.jsonl").resumable());
}

/// What the engine contract adds to the manifests, one rule each: session-id
/// shape (`Spec::session_ids`), and for a run the manifest's rows do not
/// explain, the exit status (`<engine> exited with status N`, or the latest
/// status row that explains failures, e.g. codex's top-level `error`).
#[test]
fn exit_status_rules_are_the_same_for_every_engine() {
    let codex = frames(
        EngineId::Codex,
        &[
            json!({"type":"thread.started","thread_id":TID}),
            json!({"type":"error","message":"Reconnecting... 1/5"}),
            json!({"type":"error","message":"stream disconnected"}),
        ],
    );
    assert_eq!(
        codex.finish(Some(1)).error.as_deref(),
        Some("stream disconnected")
    );
    assert_eq!(
        codex.finish(None).error.as_deref(),
        Some("codex was killed")
    );
    assert_eq!(
        codex.finish(Some(0)).error.as_deref(),
        Some("the stream ended without turn.completed")
    );
    // An item-level error is not an explanation: it is not fatal.
    let item = frames(
        EngineId::Codex,
        &[json!({"type":"item.completed","item":{"id":"i","type":"error","message":"metadata"}})],
    );
    assert_eq!(
        item.finish(Some(2)).error.as_deref(),
        Some("codex exited with status 2")
    );
    // A successful claude result with a non-zero exit keeps its answer.
    let claude = frames(
        EngineId::Claude,
        &[
            json!({"type":"result","subtype":"success","is_error":false,"result":"ok",
                 "session_id":"5e0e0c89-f301-4ba6-8327-7b41f84dc493"}),
        ],
    );
    let out = claude.finish(Some(1));
    assert_eq!(
        (out.error.as_deref(), out.answer.as_deref()),
        (Some("claude exited with status 1"), Some("ok"))
    );
}

/// A failing closing row leaves no answer, even when text came before it;
/// text before a tool call is never a successful run's answer.
#[test]
fn failing_rows_and_narration_give_no_answer() {
    let failed = frames(
        EngineId::Codex,
        &[
            json!({"type":"item.completed","item":{"id":"a","type":"agent_message","text":"partial"}}),
            json!({"type":"turn.failed","error":{"message":"boom"}}),
        ],
    )
    .finish(Some(1));
    assert_eq!(
        (failed.error.as_deref(), failed.answer),
        (Some("boom"), None)
    );
    let narration = frames(
        EngineId::Gemini,
        &[
            json!({"type":"message","role":"assistant","content":"I will look.","delta":true}),
            json!({"type":"tool_use","tool_name":"ls","tool_id":"t1","parameters":{}}),
            json!({"type":"tool_result","tool_id":"t1","status":"success","output":"x"}),
            json!({"type":"result","status":"success"}),
        ],
    )
    .finish(Some(0));
    assert_eq!((narration.failed, narration.answer), (false, None));
}

/// Issue 39: captures keep no path of the machine that recorded them (an
/// ACP stack trace kept `/tmp/ci-check/.engines/...`): every path is one of
/// the neutral ones the capture scripts rewrite to (`/home/dev`,
/// `/home/dev/tmp`, `/opt/engines`). `scripts/capture.sh` and
/// `capture-acp.sh` fail on the same finding.
#[test]
fn captures_keep_no_path_of_the_capturing_machines_tmp() {
    let mut found = Vec::new();
    for f in common::files_under(&fixtures()) {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        // `/tmp/` not inside a longer path component (`/home/dev/tmp/`).
        let leaks = text.match_indices("/tmp/").any(|(i, _)| {
            !text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        });
        // claude names its project folder by the path with every other
        // character a dash (`/tmp/x/project` -> `-tmp-x-project`).
        let encoded = text.contains("\"/home/dev/.claude/projects/-tmp-");
        if leaks || encoded {
            found.push(f.display().to_string());
        }
    }
    assert_eq!(found, Vec::<String>::new());
}
