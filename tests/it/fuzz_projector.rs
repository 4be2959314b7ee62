//! Bounded fuzz of the frame projector (issue 11; docs/FUZZING.md). Every
//! event of every case is checked by `fuzz_support::invariants`: valid JSON,
//! `rawRange` within the lines pushed so far, unknown frames carry their kind
//! and nothing else, the tracker keeps only a well-shaped session id.
//! Budget: `VF_FUZZ_CASES=N` runs N cases of each property.

use crate::fuzz_support;

use fuzz_support::invariants::{Checked, project_stream};
use fuzz_support::mutate::{
    Injection, Mutation, apply, frames_of, frames_to_lines, inject, injection, join_lines,
    mutation, odd_line, secret, split_lines,
};
use fuzz_support::{
    CASE_LIMIT, Target, all_targets, bounded, capture, captures, config, json_captures, targets_of,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use vf::engine::OutputTransport;
use vf::engine::frames::ConversationEvent;

/// Line caps of the reader: tiny ones turn ordinary frames into oversized lines.
const CAPS: [usize; 4] = [16, 300, 4096, 8 << 20];

#[derive(Debug, Clone)]
enum Item {
    Line(Vec<u8>),
    Oversized(u64),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        12 => odd_line().prop_map(Item::Line),
        1 => any::<u64>().prop_map(Item::Oversized),
    ]
}

fn feed(t: &Target, items: &[Item]) -> Result<(), String> {
    let mut c = Checked::new(t.cli, t.version.as_ref(), t.transport, &[]);
    for it in items {
        match it {
            Item::Line(l) => c.line(l)?,
            Item::Oversized(n) => c.oversized(*n)?,
        }
    }
    c.finish().map(drop).map_err(|e| format!("{t:?}: {e}"))
}

proptest! {
    // Each case runs every one of the 60 set-ups: the costliest property.
    #![proptest_config(config(32))]

    /// (a) arbitrary lines, through every engine × family × transport.
    #[test]
    fn arbitrary_lines_hold_the_invariants_for_every_target(
        items in prop::collection::vec(item(), 0..24)
    ) {
        let r = bounded(CASE_LIMIT, move || {
            all_targets().iter().try_for_each(|t| feed(t, &items))
        });
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// (b) genuine captures, damaged, through every family and transport of their engine.
    #[test]
    fn mutated_captures_hold_the_invariants(
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..8),
        trailing_newline in any::<bool>(),
        cap in prop::sample::select(CAPS.to_vec()),
    ) {
        let c = pick.get(captures());
        let bytes = c.damaged(&mutations, trailing_newline);
        let mut targets = targets_of(c.cli);
        targets.push(c.target());
        let r = bounded(CASE_LIMIT, move || {
            targets.iter().try_for_each(|t| {
                project_stream(t.cli, t.version.as_ref(), t.transport, &bytes, cap, &[])
                    .map(drop)
                    .map_err(|e| format!("{t:?}: {e}"))
            })
        });
        prop_assert!(r.is_ok(), "{}: {} after {mutations:?}", c.name, r.unwrap_err());
    }

    /// (b) frames turned into unknown kinds (top-level or one nested block),
    /// and new unknown frames, all full of secret words: none may show.
    #[test]
    fn unknown_frames_never_carry_their_payload(
        pick in any::<prop::sample::Index>(),
        injections in prop::collection::vec(injection(), 1..6),
        pretty in prop::collection::vec(any::<bool>(), 0..40),
    ) {
        let c = *pick.get(&json_captures());
        let t = c.target();
        let mut frames = frames_of(&c.bytes).expect("a JSON capture parses as frames");
        for (i, inj) in injections.iter().enumerate() {
            inject(&mut frames, &t, i, inj);
        }
        let added = injections.iter().filter(|i| matches!(i, Injection::Unknown { .. })).count();
        let bytes = join_lines(&frames_to_lines(&frames, &pretty), true);
        let secrets: Vec<String> = (0..injections.len()).chain([999]).map(secret).collect();
        let r = bounded(CASE_LIMIT, move || {
            let ev = project_stream(t.cli, t.version.as_ref(), t.transport, &bytes, 8 << 20, &secrets)?;
            let unknown = ev.iter().filter(|e| e.kind() == "system.unknownFrame").count();
            if unknown < added {
                return Err(format!("{added} unknown frames added, {unknown} reported"));
            }
            Ok(())
        });
        prop_assert!(r.is_ok(), "{}: {} with {injections:?}", c.name, r.unwrap_err());
    }
}

/// Each genuine frame of each JSON capture retyped in every way an injection
/// can (top-level kind, subtype, each of the first blocks), one at a time;
/// `check` sees the projection and the tracker's outcome.
fn every_frame_retyped(mut check: impl FnMut(&str, &Injection, &[ConversationEvent], &str)) {
    let secrets = vec![secret(0)];
    for c in json_captures() {
        let t = c.target();
        let frames = frames_of(&c.bytes).unwrap();
        for frame in 0..frames.len() {
            let kind = || "vfz_new".to_string();
            let mut all = vec![
                Injection::Retype {
                    frame,
                    kind: kind(),
                },
                Injection::RetypeSubkind {
                    frame,
                    kind: kind(),
                },
            ];
            all.extend((0..3).map(|block| Injection::RetypeNested {
                frame,
                block,
                kind: kind(),
            }));
            for inj in all {
                let mut changed = frames.clone();
                inject(&mut changed, &t, 0, &inj);
                if changed == frames {
                    continue;
                }
                let bytes = join_lines(&frames_to_lines(&changed, &[]), true);
                let mut p = Checked::new(t.cli, t.version.as_ref(), t.transport, &secrets);
                for l in split_lines(&bytes) {
                    p.line(&l)
                        .unwrap_or_else(|e| panic!("{} {inj:?}: {e}", c.name));
                }
                let (ev, outcome) = p
                    .finish_with_outcome()
                    .unwrap_or_else(|e| panic!("{} {inj:?}: {e}", c.name));
                check(&c.name, &inj, &ev, &outcome);
            }
        }
    }
}

/// Exhaustive over the captures: the events never show a retyped frame's payload.
#[test]
fn every_genuine_frame_retyped_keeps_its_payload_out_of_the_events() {
    let mut runs = 0;
    every_frame_retyped(|_, _, ev, _| {
        runs += 1;
        assert!(ev.iter().any(|e| e.kind() == "system.unknownFrame"));
    });
    assert!(runs > 300, "only {runs} retyped streams");
}

/// Fuzz finding 1 (docs/FUZZING.md): a retyped frame's payload reached the
/// run's outcome (`answer`, `error`, `usage` of `dispatch.result`) although
/// the projector reported the frame as unknown. The outcome is now read off
/// the projection, so an unknown frame contributes nothing to it.
#[test]
fn every_genuine_frame_retyped_keeps_its_payload_out_of_the_outcome() {
    let mut leaks = Vec::new();
    every_frame_retyped(|name, inj, _, outcome| {
        if outcome.contains("zqxsecret") {
            leaks.push(format!("{name} {inj:?}: {outcome}"));
        }
    });
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}

/// Projects `name` with `retype` applied to every frame, then takes the
/// outcome of a run that exited 0.
fn outcome_with(name: &str, retype: impl Fn(&mut Value)) -> vf::engine::Outcome {
    let c = capture(name);
    let t = c.target();
    let mut frames = frames_of(&c.bytes).unwrap();
    frames.iter_mut().for_each(retype);
    let mut p = vf::engine::frames::Projector::new(t.cli, t.version.as_ref(), t.transport);
    for l in split_lines(&join_lines(&frames_to_lines(&frames, &[]), true)) {
        p.push_line(&l);
    }
    p.finish();
    p.tracker().finish(Some(0))
}

/// The two cases of finding 1, whole: an unknown closing frame gives no
/// answer, usage or error of its own, and the run's failure rules still apply
/// (no known row closed the turn).
#[test]
fn an_unknown_closing_frame_gives_nothing_to_the_outcome() {
    let claude = outcome_with("claude/2.1.207/a_json_stream", |f| {
        if f["type"] == "result" {
            f["subtype"] = json!("vfz_new");
            f["result"] = json!("zqxsecret answer");
        }
    });
    let expected = vf::engine::Outcome {
        session_id: Some("51ae2ecf-d2b7-4e8c-b48f-f4c8c2e4b306".into()),
        // A failed run keeps its last (known) agent message for the record.
        answer: Some(
            "Done. Here is the result:\n\n```json\n{\"confidence\":1.0,\"files_changed\":[]}\n```\n"
                .into(),
        ),
        failed: true,
        error: Some("the stream ended without a result frame".into()),
        usage: None,
        ..Default::default()
    };
    assert_eq!(claude, expected);
    let opencode = outcome_with("opencode/1.18.33/a_json", |f| {
        if let Some(kind @ ("text" | "step-finish")) = f["part"]["type"].as_str() {
            f["part"]["type"] = json!(format!("vfz_{kind}"));
        }
    });
    let expected = vf::engine::Outcome {
        session_id: Some("ses_dd6038aa0ffepDEX7skMCMq13N".into()),
        answer: None,
        failed: true,
        error: Some("the stream ended without step_finish".into()),
        usage: None,
        ..Default::default()
    };
    assert_eq!(opencode, expected);
}

#[test]
fn no_capture_contains_a_secret_word() {
    for c in captures() {
        let text = String::from_utf8_lossy(&c.bytes);
        assert!(!text.contains("zqxsecret"), "{}", c.name);
    }
}

#[test]
fn the_mutations_reach_every_kind_of_damage() {
    // A check on the harness itself: each mutation changes a genuine capture.
    let c = capture("codex/0.171.0/b_tool");
    let lines = split_lines(&c.bytes);
    let all = [
        Mutation::FlipByte {
            line: 1,
            at: 3,
            xor: 0x80,
        },
        Mutation::Truncate { line: 1, at: 10 },
        Mutation::Split { line: 1, at: 10 },
        Mutation::Join { line: 1 },
        Mutation::Splice {
            a: 1,
            b: 2,
            at_a: 5,
            at_b: 9,
        },
        Mutation::Duplicate { line: 1 },
        Mutation::Swap { a: 0, b: 1 },
        Mutation::Delete { line: 1 },
        Mutation::Insert {
            at: 1,
            bytes: b"x".to_vec(),
        },
        Mutation::CutStream { at: 2 },
        Mutation::SwapType {
            line: 1,
            node: 2,
            choice: 0,
        },
        Mutation::Retype {
            line: 1,
            kind: "new".into(),
        },
        Mutation::Pretty { line: 1 },
    ];
    for m in &all {
        let mut l = lines.clone();
        apply(&mut l, m);
        assert_ne!(l, lines, "{m:?} changed nothing");
    }
}

/// The unknown-frame injection really produces unknown frames, and the
/// secret of a retyped nested block stays out while its siblings still show.
#[test]
fn a_retyped_block_is_reported_and_its_siblings_still_show() {
    let c = capture("claude/2.1.332/b_tool");
    let t = c.target();
    let mut frames = frames_of(&c.bytes).unwrap();
    let assistant = frames
        .iter()
        .position(|f| f["type"] == "assistant")
        .unwrap();
    let inj = Injection::RetypeNested {
        frame: assistant,
        block: 0,
        kind: "vfz_block".into(),
    };
    inject(&mut frames, &t, 0, &inj);
    let bytes = join_lines(&frames_to_lines(&frames, &[]), true);
    let secrets = vec![secret(0)];
    let ev = project_stream(
        t.cli,
        t.version.as_ref(),
        t.transport,
        &bytes,
        8 << 20,
        &secrets,
    )
    .unwrap();
    let unknown: Vec<&ConversationEvent> = ev
        .iter()
        .filter(|e| e.kind() == "system.unknownFrame")
        .collect();
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    let kind = serde_json::to_value(unknown[0]).unwrap()["frameKind"].clone();
    assert_eq!(kind, "assistant/vfz_block");
}

// ---- huge inputs: every memory bound of the projector, at its edge ---------

fn huge_run(t: &Target, lines: &[Vec<u8>]) -> Vec<ConversationEvent> {
    let mut c = Checked::new(t.cli, t.version.as_ref(), t.transport, &[]);
    for l in lines {
        c.line(l).unwrap();
    }
    c.finish().unwrap()
}

fn target(cli: vf::engine::EngineId, version: &str, transport: OutputTransport) -> Target {
    Target {
        cli,
        version: vf::ground::version::Version::parse(version),
        transport,
    }
}

fn labels(ev: &[ConversationEvent]) -> Vec<String> {
    ev.iter()
        .map(|e| match e {
            ConversationEvent::Status { label, .. } => label.clone(),
            other => other.kind().to_string(),
        })
        .collect()
}

#[test]
fn a_document_over_8_mib_is_skipped_with_one_warning() {
    let t = target(
        vf::engine::EngineId::Gemini,
        "0.61.0",
        OutputTransport::Json,
    );
    let field = format!("  \"k\": \"{}\",", "x".repeat(1 << 20));
    let mut lines = vec![b"{".to_vec()];
    lines.extend(std::iter::repeat_n(field.into_bytes(), 9));
    lines.push(b"  \"end\": 1".to_vec());
    lines.push(b"}".to_vec());
    let ev = huge_run(&t, &lines);
    assert_eq!(labels(&ev), ["JSON document too large"]);
    assert_eq!(ev[0].raw_range().end, lines.len() as u64);
}

#[test]
fn a_line_over_the_reader_cap_is_skipped_and_the_stream_goes_on() {
    let c = capture("codex/0.171.0/a_json");
    let mut bytes = vec![b'{'; 9 << 20];
    bytes.push(b'\n');
    bytes.extend_from_slice(&c.bytes);
    let ev = project_stream(c.cli, Some(&c.version), c.transport, &bytes, 8 << 20, &[]).unwrap();
    assert_eq!(labels(&ev)[0], "Line too long");
    assert!(ev.iter().any(|e| e.kind() == "message.taskAgent"), "{ev:?}");
}

#[test]
fn deltas_over_4_mib_are_split_into_several_messages() {
    let t = target(
        vf::engine::EngineId::Gemini,
        "0.61.0",
        OutputTransport::Jsonl,
    );
    let chunk = "y".repeat(1 << 20);
    let delta =
        serde_json::json!({"type":"message","role":"assistant","content":chunk,"delta":true});
    let lines = vec![delta.to_string().into_bytes(); 5];
    let ev = huge_run(&t, &lines);
    let messages = ev
        .iter()
        .filter(|e| e.kind() == "message.taskAgent")
        .count();
    assert!(messages >= 2, "{messages} messages");
}

#[test]
fn a_burst_of_300_tool_calls_is_flushed_in_pieces() {
    let t = target(
        vf::engine::EngineId::Codex,
        "0.171.0",
        OutputTransport::Jsonl,
    );
    let lines: Vec<Vec<u8>> = (0..300)
        .map(|i| {
            let item = serde_json::json!({"id": format!("item_{i}"), "type": "command_execution",
                "command": "true", "aggregated_output": "", "exit_code": null, "status": "in_progress"});
            serde_json::json!({"type": "item.started", "item": item}).to_string().into_bytes()
        })
        .collect();
    let ev = huge_run(&t, &lines);
    assert_eq!(labels(&ev), ["toolBurst", "toolBurst"]);
}

#[test]
fn a_long_text_run_is_clipped_and_deep_nesting_is_refused() {
    let t = target(
        vf::engine::EngineId::Claude,
        "2.1.332",
        OutputTransport::Jsonl,
    );
    let mut lines = vec![b"z".repeat(40 << 10); 3];
    lines.push(format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes());
    lines.extend(std::iter::repeat_n(b"[".to_vec(), 10_000));
    let ev = huge_run(&t, &lines);
    assert_eq!(
        labels(&ev),
        [
            "Non-JSON output (3 lines)",
            "Malformed JSON frame",
            "Truncated JSON document"
        ]
    );
    let detail = serde_json::to_value(&ev[0]).unwrap()["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.len() < 70 << 10 && detail.ends_with("(clipped)"));
}

#[test]
fn an_oversized_count_of_u64_max_is_reported_as_is() {
    let t = target(
        vf::engine::EngineId::Opencode,
        "1.18.33",
        OutputTransport::Jsonl,
    );
    let mut c = Checked::new(t.cli, t.version.as_ref(), t.transport, &[]);
    c.oversized(u64::MAX).unwrap();
    let ev = c.finish().unwrap();
    let detail = serde_json::to_value(&ev[0]).unwrap()["detail"].clone();
    assert_eq!(detail, format!("{} bytes skipped", u64::MAX));
}
