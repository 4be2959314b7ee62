//! Bad input, the text path, multi-line documents and version resolution.

use proptest::prelude::*;
use vf::engine::frames::{ConversationEvent, Level, Projector, RawRange};
use vf::engine::{EngineId, OutputTransport};
use vf::ground::version::Version;

fn run(cli: EngineId, t: OutputTransport, lines: &[&[u8]]) -> (Projector, Vec<ConversationEvent>) {
    let v = Version::parse(
        cli.engine()
            .spec()
            .verified_versions
            .first()
            .unwrap_or(&"0.0.0"),
    );
    let mut p = Projector::new(cli, v.as_ref(), t);
    let mut out = Vec::new();
    for l in lines {
        out.extend(p.push_line(l));
    }
    out.extend(p.finish());
    (p, out)
}

fn range(a: u64, b: u64) -> RawRange {
    RawRange { start: a, end: b }
}

fn labels(events: &[ConversationEvent]) -> Vec<(String, RawRange)> {
    events
        .iter()
        .map(|e| match e {
            ConversationEvent::Status { level, label, .. } => {
                (format!("{level:?}:{label}"), e.raw_range())
            }
            other => (other.kind().to_string(), other.raw_range()),
        })
        .collect()
}

const START: &[u8] =
    br#"{"type":"thread.started","thread_id":"01a229e6-b739-7472-9ac7-c8fe37200f9b"}"#;
const DONE: &[u8] = br#"{"type":"turn.completed","usage":{"input_tokens":1}}"#;
const MSG: &[u8] =
    br#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi"}}"#;

#[test]
fn bad_lines_warn_and_the_stream_goes_on() {
    let (p, ev) = run(
        EngineId::Codex,
        OutputTransport::Jsonl,
        &[
            START,
            br#"{"type":"item.completed","item":{"#, // malformed mid-stream
            b"{\"type\":\"x\0\"}",                  // NUL byte
            b"{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"agent_message\",\"text\":\"caf\xe9\"}}",
            DONE,
            br#"{"type":"turn.comp"#, // truncated last line
        ],
    );
    let l = labels(&ev);
    assert_eq!(
        l,
        vec![
            ("Info:Session started".into(), range(1, 1)),
            ("Warning:Truncated JSON frame".into(), range(2, 2)),
            ("Warning:Malformed JSON frame".into(), range(3, 3)),
            ("Warning:Invalid UTF-8".into(), range(4, 4)),
            ("message.taskAgent".into(), range(4, 4)),
            ("Info:Turn completed".into(), range(5, 5)),
            ("Warning:Truncated JSON frame".into(), range(6, 6)),
        ]
    );
    // The frame with a bad byte was kept (bytes replaced) and reached the tracker.
    let out = p.tracker().finish(Some(0));
    assert_eq!(out.answer.as_deref(), Some("caf\u{fffd}"));
    assert_eq!(
        out.session_id.as_deref(),
        Some("01a229e6-b739-7472-9ac7-c8fe37200f9b")
    );
    // No payload in warnings.
    let s = serde_json::to_string(&ev).unwrap();
    assert!(!s.contains("turn.comp\""));
}

#[test]
fn oversized_lines_are_counted_and_reported() {
    let v = Version::parse("0.171.0").unwrap();
    let mut p = Projector::new(EngineId::Codex, Some(&v), OutputTransport::Jsonl);
    let mut ev = p.push_line(START);
    ev.extend(p.push_oversized(300 << 20));
    ev.extend(p.push_line(MSG));
    ev.extend(p.push_line(DONE));
    ev.extend(p.finish());
    let l = labels(&ev);
    assert_eq!(l[1], ("Warning:Line too long".into(), range(2, 2)));
    assert_eq!(l[2], ("message.taskAgent".into(), range(3, 3)));
    assert!(
        serde_json::to_string(&ev[1])
            .unwrap()
            .contains("314572800 bytes skipped")
    );
}

#[test]
fn non_json_runs_are_one_status_row_each_never_chat() {
    let (_, ev) = run(
        EngineId::Codex,
        OutputTransport::Jsonl,
        &[
            b"banner one",
            b"banner two",
            b"",
            START,
            b"Reading additional input",
            MSG,
            DONE,
        ],
    );
    let l = labels(&ev);
    assert_eq!(l[0], ("Info:Non-JSON output (3 lines)".into(), range(1, 3)));
    assert_eq!(l[2], ("Info:Non-JSON output (1 line)".into(), range(5, 5)));
    let chat = ev
        .iter()
        .filter(|e| e.kind().starts_with("message."))
        .count();
    assert_eq!(chat, 1);
}

#[test]
fn text_transport_keeps_json_inside_the_answer_as_content() {
    let (p, ev) = run(
        EngineId::Copilot,
        OutputTransport::Text,
        &[b"Done.", b"```json", br#"{"confidence":1.0}"#, b"```"],
    );
    // One row per line, each pointing at its own line: the text is content
    // (never a frame, never chat), whatever it looks like.
    let rows: Vec<(String, Option<String>, RawRange)> = ev
        .iter()
        .map(|e| match e {
            ConversationEvent::Status {
                label,
                detail,
                raw_range,
                ..
            } => (label.clone(), detail.clone(), *raw_range),
            e => panic!("{e:?}"),
        })
        .collect();
    let want = ["Done.", "```json", r#"{"confidence":1.0}"#, "```"];
    let want: Vec<_> = (1..)
        .zip(want)
        .map(|(n, d)| ("Text output".to_string(), Some(d.to_string()), range(n, n)))
        .collect();
    assert_eq!(rows, want);
    assert_eq!(p.unknown_frames(), 0);
    // observe_text saw every line.
    assert!(
        p.tracker()
            .finish(Some(0))
            .answer
            .unwrap()
            .contains("confidence")
    );
}

#[test]
fn a_pretty_printed_document_is_one_frame_spanning_its_lines() {
    let doc = "{\n  \"session_id\": \"d40ec370-b510-4397-9950-47c6add9e2ec\",\n  \"response\": \"a { b \\\" } c\",\n  \"stats\": {\n    \"x\": [1, 2]\n  }\n}";
    let lines: Vec<&[u8]> = doc.lines().map(str::as_bytes).collect();
    let (p, ev) = run(EngineId::Gemini, OutputTransport::Json, &lines);
    assert_eq!(
        labels(&ev),
        vec![
            ("message.taskAgent".into(), range(1, 7)),
            ("Info:Completed".into(), range(1, 7)),
        ]
    );
    assert_eq!(
        p.tracker().session_id(),
        Some("d40ec370-b510-4397-9950-47c6add9e2ec")
    );
    // Unterminated: one warning at the end, nothing lost silently.
    let (_, ev) = run(EngineId::Gemini, OutputTransport::Json, &lines[..4]);
    assert_eq!(
        labels(&ev),
        vec![("Warning:Truncated JSON document".into(), range(1, 4))]
    );
}

#[test]
fn gemini_error_document_on_json_transport_is_a_failure_row() {
    let doc = br#"{"session_id":"d40ec370-b510-4397-9950-47c6add9e2ec","error":{"type":"x","message":"boom","code":500}}"#;
    let (_, ev) = run(EngineId::Gemini, OutputTransport::Json, &[doc]);
    match &ev[..] {
        [
            ConversationEvent::Status {
                level: Level::Error,
                detail,
                ..
            },
        ] => {
            assert_eq!(detail.as_deref(), Some("boom"))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn claude_user_frames_with_tool_results_are_not_human_turns() {
    let lines: [&[u8]; 4] = [
        br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#,
        br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb","is_error":false}]}}"#,
        br#"{"type":"user","message":{"content":"a real prompt"}}"#,
        br#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"done"}]}}"#,
    ];
    let (_, ev) = run(EngineId::Claude, OutputTransport::Jsonl, &lines);
    let kinds: Vec<_> = labels(&ev);
    assert_eq!(
        kinds,
        vec![
            ("toolBurst".into(), range(1, 2)),
            ("message.user".into(), range(3, 3)),
            ("Info:Thinking".into(), range(4, 4)),
            ("message.taskAgent".into(), range(4, 4)),
        ]
    );
    match &ev[0] {
        ConversationEvent::ToolBurst { tools, .. } => {
            assert_eq!(tools.len(), 1);
            assert_eq!(tools[0].name, "Bash");
            assert_eq!(tools[0].input_summary, "ls");
            assert_eq!(tools[0].status, "completed");
            assert_eq!(tools[0].output_summary.as_deref(), Some("a (+1 lines)"));
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn truncation_markers_are_output_truncated_warnings() {
    let (_, ev) = run(
        EngineId::Codex,
        OutputTransport::Jsonl,
        &[
            br#"{"type":"output.truncated"}"#,
            br#"{"type":"response.output_text.truncated"}"#,
        ],
    );
    let (_, ev2) = run(
        EngineId::Claude,
        OutputTransport::Jsonl,
        &[br#"{"type":"system","subtype":"compact_boundary","session_id":"x"}"#],
    );
    for e in ev.iter().chain(&ev2) {
        assert!(
            matches!(e, ConversationEvent::Status { level: Level::Warning, label, .. } if label == "Output truncated"),
            "{e:?}"
        );
    }
    assert_eq!(ev.len() + ev2.len(), 3);
}

#[test]
fn unknown_versions_use_their_family_or_the_newest_with_a_warning() {
    let first = |cli, v: &str| {
        let v = Version::parse(v).unwrap();
        let mut p = Projector::new(cli, Some(&v), OutputTransport::Jsonl);
        (p.family(), p.finish())
    };
    // A patch its family was never verified at: the family, and a warning.
    let (fam, ev) = first(EngineId::Codex, "0.146.3");
    assert_eq!(fam, "0.146");
    assert_eq!(
        labels(&ev),
        vec![("Warning:Unverified CLI version".into(), range(0, 0))]
    );
    let (_, ev) = first(EngineId::Codex, "0.146.0");
    assert!(ev.is_empty());
    let (fam, ev) = first(EngineId::Codex, "0.199.0");
    assert_eq!(fam, "0.171");
    assert_eq!(
        labels(&ev),
        vec![("Warning:Unverified CLI version".into(), range(0, 0))]
    );
    let (fam, _) = first(EngineId::Gemini, "0.49.1");
    assert_eq!(fam, "0.49");
    // No version: the newest family, reported as `<family>.x`.
    let mut p = Projector::new(EngineId::Codex, None, OutputTransport::Jsonl);
    let ev = p.push_line(br#"{"type":"vf.future"}"#);
    match &ev[..] {
        [
            ConversationEvent::UnknownFrame {
                message,
                cli_version,
                transport,
                ..
            },
        ] => {
            assert_eq!(cli_version, "0.171.x");
            assert_eq!(transport, "jsonl");
            assert_eq!(
                message,
                "Unknown frame (kind vf.future, cli codex v0.171.x)"
            );
        }
        e => panic!("{e:?}"),
    }
}

/// Issue 25: `session.*` frames are codex's lifecycle family, not drift:
/// `session.created` (before `thread.started`, it named the session with
/// `session_id`) is a "Session started" row whose id the tracker takes, any
/// other `session.*` a "Session" row; `turn.started` a compact status row.
#[test]
fn codex_session_frames_are_lifecycle_rows_and_turns_start_with_a_row() {
    const OLD: &str = "01a229e6-b739-7472-9ac7-c8fe37200f9b";
    for v in ["0.144.1", "0.146.0", "0.171.0"] {
        let v = Version::parse(v).unwrap();
        let mut p = Projector::new(EngineId::Codex, Some(&v), OutputTransport::Jsonl);
        let mut ev =
            p.push_line(format!(r#"{{"type":"session.created","session_id":"{OLD}"}}"#).as_bytes());
        ev.extend(p.push_line(br#"{"type":"session.configured","model":"m"}"#));
        ev.extend(p.push_line(br#"{"type":"turn.started"}"#));
        let rows: Vec<(String, Option<String>)> = ev
            .iter()
            .map(|e| match e {
                ConversationEvent::Status {
                    label, session_id, ..
                } => (label.clone(), session_id.clone()),
                other => panic!("{v}: {other:?}"),
            })
            .collect();
        let want = [
            ("Session started".to_string(), Some(OLD.to_string())),
            ("Session".to_string(), None),
            ("Turn started".to_string(), None),
        ];
        assert_eq!(rows, want, "{v}");
        assert_eq!(p.tracker().session_id(), Some(OLD), "{v}");
        assert_eq!(
            p.push_line(br#"{"type":"sessions.x"}"#)[0].kind(),
            "system.unknownFrame"
        );
    }
}

#[test]
fn unknown_kinds_are_sanitised_and_bounded() {
    let long = format!(r#"{{"type":"{}\u0007<script>"}}"#, "k".repeat(500));
    let (p, ev) = run(
        EngineId::Codex,
        OutputTransport::Jsonl,
        &[long.as_bytes(), b"[1,2]", b"{}"],
    );
    assert_eq!(p.unknown_frames(), 3);
    let kinds: Vec<String> = ev
        .iter()
        .map(|e| match e {
            ConversationEvent::UnknownFrame { frame_kind, .. } => frame_kind.clone(),
            e => panic!("{e:?}"),
        })
        .collect();
    assert!(kinds[0].len() < 80 && !kinds[0].contains('<'));
    assert_eq!(kinds[1], "(array)");
    assert_eq!(kinds[2], "(untyped)");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_ranges_stay_in_bounds(
        lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..24),
        cli in 0usize..6,
        t in 0usize..3,
    ) {
        let cli = EngineId::ALL[cli];
        let t = [OutputTransport::Jsonl, OutputTransport::Json, OutputTransport::Text][t];
        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        let (_, ev) = run(cli, t, &refs);
        for e in &ev {
            let r = e.raw_range();
            prop_assert!(r.start <= r.end && r.end <= lines.len() as u64);
        }
    }
}

#[test]
fn the_projector_can_move_to_another_thread() {
    fn send<T: Send>(_: &T) {}
    let p = Projector::new(EngineId::Claude, None, OutputTransport::Jsonl);
    send(&p);
    let h = std::thread::spawn(move || {
        let mut p = p;
        p.push_line(br#"{"type":"system","subtype":"init","session_id":"fb4f1f73-314d-45ca-8bee-78f11161d236"}"#);
        p.tracker().session_id().map(str::to_string)
    });
    assert_eq!(
        h.join().unwrap().as_deref(),
        Some("fb4f1f73-314d-45ca-8bee-78f11161d236")
    );
}
