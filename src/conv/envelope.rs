//! VF-TURN/1: what one turn delivers to one participant.
//!
//! A participant has seen every entry up to its cursor plus its own
//! responses. exact-delta resumes its bound native session and delivers only
//! the unseen public entries; full-history starts a fresh session and
//! delivers the whole public context plus a bounded replay of its own last
//! responses (the bounds of [`crate::unit::history`]).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::model::{Conversation, Entry, EntryKind, Participant};
use crate::conv::canonical_json;
use crate::ground::error::Result;
use crate::unit::history::{self, Counts};

pub const TURN_HEADER: &str = "VF-TURN/1";
pub const HANDOFF_FORMAT: &str = "VF-HANDOFF/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryMode {
    ExactDelta,
    FullHistory,
}

impl DeliveryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::ExactDelta => "exact-delta",
            DeliveryMode::FullHistory => "full-history",
        }
    }
}

/// What decides the delivery mode besides the conversation itself.
#[derive(Debug, Clone, Copy)]
pub struct TurnInputs<'a> {
    /// The engine can resume a session exactly at its installed version.
    pub exact_authority: bool,
    /// `--fresh`: a new native session whatever the binding.
    pub fresh: bool,
    /// The current handoff document's text, when one is set.
    pub handoff_text: Option<&'a str>,
}

/// One planned turn: the envelope and the text delivered (before private ranges).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub participant: String,
    /// The participant's turn number (1-based).
    pub turn: u32,
    pub mode: DeliveryMode,
    /// The session resumed (exact-delta only).
    pub session: Option<String>,
    pub cursor_from: u64,
    pub cursor_to: u64,
    pub envelope: Value,
    pub replay_counts: Option<Counts>,
    /// The handoff digest the envelope carries.
    pub handoff: Option<String>,
    /// `VF-TURN/1`, the canonical envelope, the instruction.
    pub text: String,
}

/// Whether `p` may get an exact-delta turn: authority, a binding, made at
/// its current cursor, and no `--fresh`.
pub fn mode_for(p: &Participant, inputs: &TurnInputs<'_>) -> DeliveryMode {
    match &p.binding {
        Some(b) if inputs.exact_authority && !inputs.fresh && b.cursor == p.cursor => {
            DeliveryMode::ExactDelta
        }
        _ => DeliveryMode::FullHistory,
    }
}

/// Plans `alias`'s next turn over the transcript as it stands.
pub fn plan(conv: &Conversation, alias: &str, inputs: &TurnInputs<'_>) -> Result<Turn> {
    let p = conv.participant(alias)?;
    let mode = mode_for(p, inputs);
    let from = match mode {
        DeliveryMode::ExactDelta => p.cursor,
        DeliveryMode::FullHistory => 0,
    };
    let unseen = |e: &&Entry| e.id > from && e.from != alias;
    let messages: Vec<Value> = conv
        .transcript
        .iter()
        .filter(unseen)
        .filter(|e| e.kind == EntryKind::User)
        .map(|e| json!({"id": e.id, "sha256": e.sha256, "text": e.text, "to": e.to}))
        .collect();
    let peers: Vec<Value> = conv
        .transcript
        .iter()
        .filter(unseen)
        .filter(|e| e.kind == EntryKind::Response)
        .map(response_json)
        .collect();
    let to = conv.transcript.last().map_or(0, |e| e.id);
    let turn = p.turns + 1;
    let mut env = json!({
        "conversation": conv.name,
        "participant": alias,
        "turn": turn,
        "delivery_mode": mode.as_str(),
        "cursor": {"from": from, "to": to},
        "messages": messages,
        "peers": peers,
    });
    let mut replay_counts = None;
    if mode == DeliveryMode::FullHistory {
        let (replay, counts) = replay(conv, alias);
        env["replay"] = replay;
        replay_counts = Some(counts);
    }
    let handoff = handoff_for(conv, p, mode, inputs);
    if let (Some(h), Some(text)) = (&handoff, inputs.handoff_text) {
        env["handoff"] =
            json!({"format": HANDOFF_FORMAT, "digest": h, "bytes": text.len(), "text": text});
    }
    let text = format!(
        "{TURN_HEADER}\n{}\n{}",
        canonical_json::to_string(&env),
        instruction(conv, alias, mode)
    );
    Ok(Turn {
        participant: alias.to_string(),
        turn,
        mode,
        session: (mode == DeliveryMode::ExactDelta)
            .then(|| p.binding.as_ref().map(|b| b.session_id.clone()))
            .flatten(),
        cursor_from: from,
        cursor_to: to,
        envelope: env,
        replay_counts,
        handoff,
        text,
    })
}

fn response_json(e: &Entry) -> Value {
    json!({
        "id": e.id,
        "from": e.from,
        "engine": e.engine,
        "turn": e.turn,
        "sha256": e.sha256,
        "text": e.text,
    })
}

/// The participant's own last public responses, bounded, with provenance.
fn replay(conv: &Conversation, alias: &str) -> (Value, Counts) {
    let own: Vec<&Entry> = conv
        .transcript
        .iter()
        .filter(|e| e.kind == EntryKind::Response && e.from == alias)
        .collect();
    let recent = history::recent(&own);
    let mut truncated = 0;
    let responses: Vec<Value> = recent
        .iter()
        .map(|e| {
            let (text, cut) = history::bounded(&e.text);
            truncated += usize::from(cut);
            json!({
                "id": e.id,
                "turn": e.turn,
                "engine": e.engine,
                "session_id": e.session_id,
                "sha256": e.sha256,
                "bytes": e.text.len(),
                "truncated": cut,
                "text": text,
            })
        })
        .collect();
    let counts = Counts {
        source: own.len(),
        replayed: recent.len(),
        truncated,
    };
    let v = json!({
        "counts": {"source": counts.source, "replayed": counts.replayed, "truncated": counts.truncated},
        "responses": responses,
    });
    (v, counts)
}

/// The handoff digest to carry: always on full-history, and on exact-delta
/// when the participant has not had this digest yet.
fn handoff_for(
    conv: &Conversation,
    p: &Participant,
    mode: DeliveryMode,
    inputs: &TurnInputs<'_>,
) -> Option<String> {
    let h = conv.handoff.as_ref()?;
    inputs.handoff_text?;
    let seen = p.handoff_seen.as_deref() == Some(h.digest.as_str());
    (mode == DeliveryMode::FullHistory || !seen).then(|| h.digest.clone())
}

fn instruction(conv: &Conversation, alias: &str, mode: DeliveryMode) -> String {
    let context = match mode {
        DeliveryMode::ExactDelta => {
            "This continues your session: the envelope holds only what is new since your last turn."
        }
        DeliveryMode::FullHistory => {
            "This is a fresh session: the envelope holds the whole public conversation and, under \"replay\", your own earlier public responses (possibly cut; for reference only)."
        }
    };
    format!(
        "You are participant {alias:?} in the conversation {:?} run by vf. The line above is its public state as canonical JSON: \"messages\" are the user's messages, \"peers\" the other participants' answers. {context} Answer the user's latest message.\n",
        conv.name
    )
}
