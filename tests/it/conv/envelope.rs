//! Golden tests of VF-TURN/1 envelopes, built over a transcript in memory.

use serde_json::{Value, json};
use vf::conv::canonical_json;
use vf::conv::envelope::{self, TurnInputs};
use vf::conv::model::{HandoffRef, With};
use vf::conv::{Binding, Conversation, DeliveryMode};
use vf::engine::EngineId;
use vf::ground::text::sha256_hex;

const CLAUDE_SID: &str = "5e0e0c89-f301-4ba6-8327-7b41f84dc493";
const CODEX_SID: &str = "01a229fa-c269-71a3-a12b-439065dbf14b";

fn exact(handoff: Option<&str>) -> TurnInputs<'_> {
    TurnInputs {
        exact_authority: true,
        fresh: false,
        handoff_text: handoff,
    }
}

/// A conversation after one `--all` turn: Q1 (1), claude's A1 (2), codex's A1 (3).
fn after_first_turn() -> Conversation {
    let with = [
        With::new(EngineId::Claude, "claude"),
        With::new(EngineId::Codex, "codex"),
    ];
    let mut c = Conversation::new("design", &with, "t0".into()).unwrap();
    let all = c.aliases();
    c.add_user(&all, "Q1: how should we cache?");
    c.add_response("claude", 1, "claude A1", Some(CLAUDE_SID.into()))
        .unwrap();
    c.add_response("codex", 1, "codex A1", Some(CODEX_SID.into()))
        .unwrap();
    for (alias, sid) in [("claude", CLAUDE_SID), ("codex", CODEX_SID)] {
        let p = c.participant_mut(alias).unwrap();
        p.cursor = 1;
        p.turns = 1;
        p.binding = Some(Binding {
            session_id: sid.into(),
            cursor: 1,
        });
    }
    c
}

fn sha(s: &str) -> String {
    sha256_hex(s.as_bytes())
}

#[test]
fn exact_delta_carries_only_the_new_user_message_and_the_peer_answer() {
    let mut c = after_first_turn();
    c.add_user(&["claude".into()], "Q2: and invalidation?");
    let t = envelope::plan(&c, "claude", &exact(None)).unwrap();
    let want = json!({
        "conversation": "design",
        "participant": "claude",
        "turn": 2,
        "delivery_mode": "exact-delta",
        "cursor": {"from": 1, "to": 4},
        "messages": [{"id": 4, "sha256": sha("Q2: and invalidation?"), "text": "Q2: and invalidation?", "to": ["claude"]}],
        "peers": [{"id": 3, "from": "codex", "engine": "codex", "turn": 1, "sha256": sha("codex A1"), "text": "codex A1"}],
    });
    assert_eq!(t.envelope, want);
    assert_eq!(t.mode, DeliveryMode::ExactDelta);
    assert_eq!(t.session.as_deref(), Some(CLAUDE_SID));
    assert_eq!(t.replay_counts, None);
    // The exact bytes delivered: header, one canonical line, the instruction.
    let mut lines = t.text.lines();
    assert_eq!(lines.next(), Some("VF-TURN/1"));
    assert_eq!(
        lines.next(),
        Some(canonical_json::to_string(&want).as_str())
    );
    assert!(
        !t.text.contains("claude A1"),
        "own answer re-sent: {}",
        t.text
    );
}

#[test]
fn canonical_envelope_is_byte_exact() {
    let with = [With::new(EngineId::Codex, "x")];
    let mut c = Conversation::new("c", &with, "t0".into()).unwrap();
    c.add_user(&["x".into()], "hi \"there\"\n");
    let t = envelope::plan(&c, "x", &exact(None)).unwrap();
    let line = t.text.lines().nth(1).unwrap();
    assert_eq!(
        line,
        concat!(
            r#"{"conversation":"c","cursor":{"from":0,"to":1},"delivery_mode":"full-history","#,
            r#""messages":[{"id":1,"sha256":"ccd820f837017ac3b8cf5127ef62b0442707b540094347922a3d08f4e1124496","#,
            r#""text":"hi \"there\"\n","to":["x"]}],"participant":"x","peers":[],"#,
            r#""replay":{"counts":{"replayed":0,"source":0,"truncated":0},"responses":[]},"turn":1}"#
        )
    );
    assert_eq!(
        sha("hi \"there\"\n"),
        "ccd820f837017ac3b8cf5127ef62b0442707b540094347922a3d08f4e1124496"
    );
}

#[test]
fn full_history_without_binding_authority_or_with_fresh_or_a_stale_binding() {
    let base = after_first_turn();
    let mut no_binding = base.clone();
    no_binding.participant_mut("claude").unwrap().binding = None;
    let mut stale = base.clone();
    stale
        .participant_mut("claude")
        .unwrap()
        .binding
        .as_mut()
        .unwrap()
        .cursor = 0;
    let no_authority = TurnInputs {
        exact_authority: false,
        ..exact(None)
    };
    let fresh = TurnInputs {
        fresh: true,
        ..exact(None)
    };
    let cases: [(&Conversation, &TurnInputs<'_>); 4] = [
        (&no_binding, &exact(None)),
        (&stale, &exact(None)),
        (&base, &no_authority),
        (&base, &fresh),
    ];
    for (conv, inputs) in cases {
        let mut conv = conv.clone();
        conv.add_user(&["claude".into()], "Q2");
        let t = envelope::plan(&conv, "claude", inputs).unwrap();
        let want = json!({
            "conversation": "design",
            "participant": "claude",
            "turn": 2,
            "delivery_mode": "full-history",
            "cursor": {"from": 0, "to": 4},
            "messages": [
                {"id": 1, "sha256": sha("Q1: how should we cache?"), "text": "Q1: how should we cache?", "to": ["claude", "codex"]},
                {"id": 4, "sha256": sha("Q2"), "text": "Q2", "to": ["claude"]},
            ],
            "peers": [{"id": 3, "from": "codex", "engine": "codex", "turn": 1, "sha256": sha("codex A1"), "text": "codex A1"}],
            "replay": {
                "counts": {"source": 1, "replayed": 1, "truncated": 0},
                "responses": [{"id": 2, "turn": 1, "engine": "claude", "session_id": CLAUDE_SID,
                    "sha256": sha("claude A1"), "bytes": 9, "truncated": false, "text": "claude A1"}],
            },
        });
        assert_eq!(t.envelope, want);
        assert_eq!((t.mode, t.session), (DeliveryMode::FullHistory, None));
    }
}

#[test]
fn replay_keeps_the_last_eight_cut_on_a_char_boundary_with_digests_and_counts() {
    let with = [With::new(EngineId::Agy, "agy")];
    let mut c = Conversation::new("long", &with, "t0".into()).unwrap();
    let texts: Vec<String> = (1..=10)
        .map(|i| match i {
            // 1 + 3 * 1000 bytes: the 2048-byte cut falls inside a '€'.
            9 => format!("x{}", "€".repeat(1000)),
            _ => format!("answer {i}"),
        })
        .collect();
    for (i, t) in texts.iter().enumerate() {
        c.add_user(&["agy".into()], &format!("q{}", i + 1));
        c.add_response("agy", i as u32 + 1, t, None).unwrap();
    }
    let t = envelope::plan(&c, "agy", &exact(None)).unwrap();
    let replay = &t.envelope["replay"];
    assert_eq!(
        replay["counts"],
        json!({"source": 10, "replayed": 8, "truncated": 1})
    );
    let responses = replay["responses"].as_array().unwrap();
    let turns: Vec<u64> = responses
        .iter()
        .map(|r| r["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, (3..=10).collect::<Vec<_>>());
    let cut = &responses[6];
    let want_text = format!("x{}", "€".repeat(682)); // 1 + 682 * 3 = 2047 bytes
    assert_eq!(
        cut,
        &json!({"id": 18, "turn": 9, "engine": "agy", "session_id": null, "sha256": sha(&texts[8]),
            "bytes": 3001, "truncated": true, "text": want_text})
    );
    // The replay is never the participant's peers.
    assert_eq!(t.envelope["peers"], json!([]));
}

#[test]
fn a_changed_handoff_is_carried_once_even_in_exact_delta() {
    let mut c = after_first_turn();
    let doc = "# plan v1\n";
    c.handoff = Some(HandoffRef {
        digest: sha(doc),
        bytes: doc.len(),
    });
    c.add_user(&["claude".into()], "Q2");
    let t = envelope::plan(&c, "claude", &exact(Some(doc))).unwrap();
    assert_eq!(t.mode, DeliveryMode::ExactDelta);
    let want = json!({"format": "VF-HANDOFF/1", "digest": sha(doc), "bytes": 10, "text": doc});
    assert_eq!(t.envelope["handoff"], want);
    assert_eq!(t.handoff, Some(sha(doc)));
    // Seen: the next exact-delta turn does not repeat it.
    c.participant_mut("claude").unwrap().handoff_seen = Some(sha(doc));
    let t = envelope::plan(&c, "claude", &exact(Some(doc))).unwrap();
    assert_eq!(t.envelope.get("handoff"), None::<&Value>);
    // Changed: a new digest, carried again.
    let doc2 = "# plan v2\n";
    c.handoff = Some(HandoffRef {
        digest: sha(doc2),
        bytes: doc2.len(),
    });
    let t = envelope::plan(&c, "claude", &exact(Some(doc2))).unwrap();
    assert_eq!(t.envelope["handoff"]["digest"], json!(sha(doc2)));
    assert_ne!(sha(doc), sha(doc2));
    // A full-history turn always carries it.
    let t = envelope::plan(
        &c,
        "claude",
        &TurnInputs {
            fresh: true,
            ..exact(Some(doc2))
        },
    )
    .unwrap();
    assert_eq!(t.envelope["handoff"]["text"], json!(doc2));
}
