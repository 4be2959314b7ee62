//! Fixture tiers for the frame projector (see docs/PROJECTOR.md):
//! 1. content payload snapshots, 2. full event snapshots per capture,
//! 3. novelty probes for every manifest family.

use std::fs;

use serde_json::{Value, json};
use vf::engine::frames::manifests::families;
use vf::engine::frames::{ConversationEvent, Projector, RawRange};
use vf::engine::{EngineId, OutputTransport};
use vf::ground::version::Version;

use crate::common;
use common::fixtures;

struct Capture {
    cli: EngineId,
    version: String,
    case: String,
    transport: OutputTransport,
    bytes: Vec<u8>,
}

/// The transport a capture was recorded with, read from its `.cmd.txt`.
fn transport_of(cli: EngineId, cmd: &str) -> OutputTransport {
    let command = cmd
        .lines()
        .skip_while(|l| !l.starts_with("# command:"))
        .nth(1)
        .unwrap_or("");
    match cli {
        EngineId::Claude | EngineId::Gemini if command.contains("--output-format json") => {
            OutputTransport::Json
        }
        EngineId::Copilot if !command.contains("--output-format") => OutputTransport::Text,
        EngineId::Agy => OutputTransport::Text,
        _ => OutputTransport::Jsonl,
    }
}

fn captures() -> Vec<Capture> {
    let mut out = Vec::new();
    for cli in EngineId::ALL {
        let dir = fixtures().join(cli.as_str());
        let Ok(versions) = fs::read_dir(&dir) else {
            continue;
        };
        for v in versions {
            let v = v.unwrap().path();
            for f in fs::read_dir(&v).unwrap() {
                let f = f.unwrap().path();
                let name = f.file_name().unwrap().to_str().unwrap().to_string();
                let Some(case) = name.strip_suffix(".stdout.jsonl") else {
                    continue;
                };
                let cmd = fs::read_to_string(v.join(format!("{case}.cmd.txt"))).unwrap();
                out.push(Capture {
                    cli,
                    version: v.file_name().unwrap().to_str().unwrap().to_string(),
                    case: case.to_string(),
                    transport: transport_of(cli, &cmd),
                    bytes: fs::read(&f).unwrap(),
                });
            }
        }
    }
    out.sort_by(|a, b| (a.cli, &a.case).cmp(&(b.cli, &b.case)));
    assert!(out.len() >= 30, "fixtures missing: {}", out.len());
    out
}

/// Lines as the runtime's reader hands them over (no trailing empty line).
fn split(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if bytes.ends_with(b"\n") || bytes.is_empty() {
        lines.pop();
    }
    lines
}

fn project_lines(
    cli: EngineId,
    version: &str,
    t: OutputTransport,
    lines: &[&[u8]],
) -> Vec<ConversationEvent> {
    let v = Version::parse(version).unwrap();
    let mut p = Projector::new(cli, Some(&v), t);
    let mut out = Vec::new();
    for l in lines {
        out.extend(p.push_line(l));
    }
    out.extend(p.finish());
    assert_eq!(
        p.unknown_frames(),
        out.iter()
            .filter(|e| e.kind() == "system.unknownFrame")
            .count() as u64
    );
    out
}

fn project(c: &Capture) -> Vec<ConversationEvent> {
    project_lines(c.cli, &c.version, c.transport, &split(&c.bytes))
}

// ---- tier 2: full protocol event snapshots --------------------------------

#[test]
fn tier2_event_snapshots_and_no_drift_on_genuine_captures() {
    let _snapshots = common::snapshot_settings();
    for c in captures() {
        let events = project(&c);
        let unknown: Vec<_> = events
            .iter()
            .filter(|e| e.kind() == "system.unknownFrame")
            .collect();
        assert!(unknown.is_empty(), "{} {}: {unknown:?}", c.cli, c.case);
        let warnings = events.iter().filter(|e| {
            matches!(e, ConversationEvent::Status { level, .. } if *level == vf::engine::frames::Level::Warning)
        });
        // Genuine output has no malformed lines; retries/denials are the only warnings.
        for w in warnings {
            let s = serde_json::to_string(w).unwrap();
            assert!(
                !s.contains("Malformed") && !s.contains("Truncated JSON"),
                "{s}"
            );
        }
        insta::assert_json_snapshot!(
            format!("projector__events__{}__{}__{}", c.cli, c.version, c.case),
            events
        );
    }
}

// ---- tier 1: content payloads ---------------------------------------------

/// Fenced ```json blocks inside Markdown: typed payloads, not frames.
fn fenced_json(md: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("```json\n") {
        let body = &rest[i + 8..];
        let Some(end) = body.find("```") else { break };
        out.push(serde_json::from_str(body[..end].trim()).unwrap_or(Value::Null));
        rest = &body[end + 3..];
    }
    out
}

/// The text transport's rows (one per non-blank line) joined back into one
/// row per contiguous run, blank lines restored from the raw ranges: the
/// content a text run carries, whatever its row granularity.
fn merge_text_rows(events: &[ConversationEvent]) -> Vec<ConversationEvent> {
    let mut out: Vec<ConversationEvent> = Vec::new();
    for e in events {
        if let (
            ConversationEvent::Status {
                label,
                detail: Some(d),
                raw_range,
                ..
            },
            Some(ConversationEvent::Status {
                label: prev,
                detail: Some(pd),
                raw_range: pr,
                ..
            }),
        ) = (e, out.last_mut())
            && label == "Text output"
            && prev == "Text output"
        {
            let gap = raw_range.start - pr.end;
            pd.push_str(&"\n".repeat(gap as usize));
            pd.push_str(d);
            pr.end = raw_range.end;
            continue;
        }
        out.push(e.clone());
    }
    out
}

#[test]
fn tier1_content_payload_snapshots() {
    let _snapshots = common::snapshot_settings();
    for c in captures() {
        let content: Vec<Value> = merge_text_rows(&project(&c))
            .iter()
            .filter_map(|e| match e {
                ConversationEvent::TaskAgent { text, is_final, .. } => Some(json!({
                    "role": "taskAgent",
                    "final": is_final,
                    "markdown": text,
                    "fencedJson": fenced_json(text),
                })),
                ConversationEvent::User { text, .. } => {
                    Some(json!({"role": "user", "markdown": text}))
                }
                ConversationEvent::Status { label, detail, .. }
                    if label.starts_with("Text output") =>
                {
                    let d = detail.as_deref().unwrap_or("");
                    Some(json!({"role": "text", "raw": d, "fencedJson": fenced_json(d)}))
                }
                _ => None,
            })
            .collect();
        insta::assert_json_snapshot!(
            format!("projector__content__{}__{}__{}", c.cli, c.version, c.case),
            content
        );
    }
}

#[test]
fn every_successful_capture_has_one_final_answer_matching_the_tracker() {
    for c in captures() {
        let v = Version::parse(&c.version).unwrap();
        let mut p = Projector::new(c.cli, Some(&v), c.transport);
        let mut events = Vec::new();
        for l in split(&c.bytes) {
            events.extend(p.push_line(l));
        }
        events.extend(p.finish());
        let outcome = p.tracker().finish(Some(0));
        let finals: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                ConversationEvent::TaskAgent {
                    text,
                    is_final: true,
                    ..
                } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        // Whole messages are shown live (never held back to learn whether they
        // were final); the row completing the turn names the final answer.
        let answers: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                ConversationEvent::Status {
                    answer: Some(a), ..
                } => Some(a.as_str()),
                _ => None,
            })
            .collect();
        // opencode b_tool_ask stops after the refused tool: its last text is
        // narration before the tool call, not a turn's final answer.
        let narration_only = c.cli == EngineId::Opencode && c.case == "b_tool_ask";
        if outcome.failed || c.transport == OutputTransport::Text || narration_only {
            assert!(finals.is_empty(), "{} {}", c.cli, c.case);
            assert!(answers.is_empty(), "{} {}: {answers:?}", c.cli, c.case);
        } else {
            assert!(finals.len() <= 1, "{} {}: {finals:?}", c.cli, c.case);
            assert_eq!(answers.len(), 1, "{} {}: {answers:?}", c.cli, c.case);
            assert_eq!(
                Some(answers[0]),
                outcome.answer.as_deref(),
                "{} {}",
                c.cli,
                c.case
            );
            // The answer was shown as an agent message before the turn ended.
            let shown = events.iter().any(
                |e| matches!(e, ConversationEvent::TaskAgent { text, .. } if text == answers[0]),
            );
            assert!(shown, "{} {}: answer never shown", c.cli, c.case);
        }
    }
}

// ---- tier 3: novelty probes -------------------------------------------------

fn shift(events: &[ConversationEvent], injected: u64) -> Vec<Value> {
    let mv = |n: u64| if n >= injected { n + 1 } else { n };
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            let r = e.raw_range();
            if r.start != 0 {
                v["rawRange"] = json!({"start": mv(r.start), "end": mv(r.end)});
            }
            v
        })
        .collect()
}

fn values(events: &[ConversationEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

/// Exactly one unknownFrame of `kind` at `line`, carrying no payload.
fn take_unknown(events: &mut Vec<ConversationEvent>, kind: &str, line: u64, ctx: &str) {
    let idx: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == "system.unknownFrame")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(idx.len(), 1, "{ctx}: {events:?}");
    let ev = events.remove(idx[0]);
    assert_eq!(
        ev.raw_range(),
        RawRange {
            start: line,
            end: line
        },
        "{ctx}"
    );
    let s = serde_json::to_string(&ev).unwrap();
    assert!(!s.contains("SECRET"), "payload leaked: {s}");
    match ev {
        ConversationEvent::UnknownFrame {
            frame_kind,
            message,
            cli,
            ..
        } => {
            assert_eq!(frame_kind, kind, "{ctx}");
            assert!(message.starts_with(&format!("Unknown frame (kind {kind}, cli {cli} v")));
        }
        _ => unreachable!(),
    }
}

/// A future top-level frame and a future nested kind for each CLI.
fn probes(cli: EngineId) -> Vec<(String, &'static str)> {
    let top = match cli {
        EngineId::Copilot => r#"{"type":"vf.future_kind","data":{"content":"SECRET"}}"#,
        _ => r#"{"type":"vf.future_kind","text":"SECRET /home/dev/secret"}"#,
    };
    let mut out = vec![(top.to_string(), "vf.future_kind")];
    let nested = match cli {
        EngineId::Codex => Some((
            r#"{"type":"item.completed","item":{"id":"item_9","type":"future_item","text":"SECRET"}}"#,
            "item.completed/future_item",
        )),
        EngineId::Claude => Some((
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"future_block","text":"SECRET"}]},"session_id":"00000000-0000-4000-8000-000000000000"}"#,
            "assistant/future_block",
        )),
        EngineId::Gemini => Some((
            r#"{"type":"message","role":"system","content":"SECRET"}"#,
            "message/system",
        )),
        EngineId::Opencode => Some((
            r#"{"type":"text","sessionID":"ses_x","part":{"type":"future-part","text":"SECRET"}}"#,
            "text/future-part",
        )),
        EngineId::Copilot => Some((
            r#"{"type":"session.info","data":{"infoType":"future_info","message":"SECRET"}}"#,
            "session.info/future_info",
        )),
        EngineId::Agy | EngineId::Bridge | EngineId::Acp | EngineId::Recorded => None,
    };
    out.extend(nested.map(|(l, k)| (l.to_string(), k)));
    out
}

#[test]
fn tier3_novelty_probes_for_every_family() {
    let mut probed = 0;
    for c in captures() {
        if c.transport == OutputTransport::Text {
            continue; // no frames in text mode: nothing can be novel
        }
        for fam in families(c.cli) {
            let version = format!("{}.{}.0", fam.major, fam.minor);
            let lines = split(&c.bytes);
            let base = project_lines(c.cli, &version, c.transport, &lines);
            // A json-transport document can only be followed or preceded by a frame.
            let positions: Vec<usize> = if c.transport == OutputTransport::Json {
                vec![0, lines.len()]
            } else {
                (0..=lines.len()).collect()
            };
            let probes = probes(c.cli);
            let probes = if c.transport == OutputTransport::Json {
                &probes[..1]
            } else {
                &probes[..]
            };
            for (probe, kind) in probes {
                for &i in &positions {
                    let mut injected = lines.clone();
                    injected.insert(i, probe.as_bytes());
                    let mut events = project_lines(c.cli, &version, c.transport, &injected);
                    let ctx = format!("{} {} v{version} probe {kind} at {i}", c.cli, c.case);
                    take_unknown(&mut events, kind, i as u64 + 1, &ctx);
                    assert_eq!(values(&events), shift(&base, i as u64 + 1), "{ctx}");
                    probed += 1;
                }
            }
            // Claude: a novel block inside a known assistant frame.
            if c.cli == EngineId::Claude {
                for (i, l) in lines.iter().enumerate() {
                    let mut v: Value = serde_json::from_slice(l).unwrap();
                    if v["type"] != "assistant" {
                        continue;
                    }
                    v["message"]["content"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"type": "future_block", "data": "SECRET"}));
                    let changed = serde_json::to_vec(&v).unwrap();
                    let mut injected = lines.clone();
                    injected[i] = &changed;
                    let mut events = project_lines(c.cli, &version, c.transport, &injected);
                    let ctx = format!("{} {} block in line {}", c.cli, c.case, i + 1);
                    take_unknown(&mut events, "assistant/future_block", i as u64 + 1, &ctx);
                    assert_eq!(values(&events), values(&base), "{ctx}");
                    probed += 1;
                }
            }
        }
    }
    assert!(probed > 500, "only {probed} probes ran");
}

#[test]
fn every_cli_with_frames_has_probes_and_families() {
    for cli in EngineId::ALL {
        assert!(!families(cli).is_empty());
        if cli != EngineId::Agy {
            assert_eq!(probes(cli).len(), 2, "{cli}");
        }
    }
}
