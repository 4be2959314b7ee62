//! A conversation's state: participants and the public transcript.

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::ground::names;
use crate::ground::text::sha256_hex;

/// The on-disk format of `conversation.json`.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub format: u32,
    pub name: String,
    pub created_at: String,
    pub participants: Vec<Participant>,
    /// The public transcript, in order; ids are 1, 2, 3, ...
    pub transcript: Vec<Entry>,
    /// The current handoff document, when one is set.
    pub handoff: Option<HandoffRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Participant {
    pub alias: String,
    pub engine: EngineId,
    /// `--with ENGINE@MODEL`: passed on every turn (checked at `conv new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The last transcript entry delivered to it (0: none yet).
    pub cursor: u64,
    pub binding: Option<Binding>,
    /// Turns it has answered.
    pub turns: u32,
    pub last_delivery: Option<super::DeliveryMode>,
    /// The handoff digest its last delivered envelope carried.
    pub handoff_seen: Option<String>,
    /// A turn under way (left behind by a killed vf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingTurn>,
}

/// The unit of a turn that has started and not yet been settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingTurn {
    pub unit: String,
}

/// A native session that holds the participant's context up to `cursor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// Validated against the engine's session id shape.
    pub session_id: String,
    pub cursor: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EntryKind {
    User,
    Response,
}

/// One public transcript entry (a private range is never part of one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: u64,
    pub kind: EntryKind,
    /// `user`, or the answering participant's alias.
    pub from: String,
    /// The participants a user message was addressed to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    pub text: String,
    /// sha256 of `text`, hex.
    pub sha256: String,
    /// For a response: the participant's turn, engine and session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// For a response: how its turn's envelope delivered the transcript
    /// (absent in conversations of an older vf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<super::DeliveryMode>,
}

/// `{format, digest, bytes}` of the shared handoff document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffRef {
    /// sha256 of the document, hex.
    pub digest: String,
    pub bytes: usize,
}

/// One `--with` of `vf conv new`.
#[derive(Debug, Clone, PartialEq)]
pub struct With {
    pub engine: EngineId,
    pub alias: String,
    pub model: Option<String>,
}

impl With {
    pub fn new(engine: EngineId, alias: &str) -> With {
        With {
            engine,
            alias: alias.to_string(),
            model: None,
        }
    }
}

/// `ENGINE[:ALIAS][@MODEL]` of `vf conv new --with`; the model must be one
/// the engine's verified `--model` flag takes.
pub fn parse_with(s: &str) -> Result<With> {
    let (head, model) = match s.split_once('@') {
        Some((h, m)) => (h, Some(m)),
        None => (s, None),
    };
    let (engine, alias) = match head.split_once(':') {
        Some((e, a)) => (e, a),
        None => (head, head),
    };
    let id = EngineId::parse(engine)
        .filter(|e| e.engine().spec().command.is_none())
        .ok_or_else(|| {
            VfError::usage(format!(
                "--with {}: unknown engine {} (a participant is one of: {})",
                crate::ground::text::shown(s, 80),
                crate::ground::text::shown(engine, 40),
                crate::engine::engine_list(&EngineId::ALL)
            ))
        })?;
    names::check("participant alias", alias)?;
    if let Some(m) = model {
        let opts = crate::engine::RunOptions::new(Some(m.to_string()), None, None);
        crate::engine::options::check(id.engine().spec(), &opts).map_err(|e| {
            VfError::usage(format!("--with {}: {e}", crate::ground::text::shown(s, 80)))
        })?;
    }
    Ok(With {
        engine: id,
        alias: alias.to_string(),
        model: model.map(str::to_string),
    })
}

/// The unit that runs turn `turn` of `alias`: one unit per turn, so each turn
/// has its own marker, logs and lock, and a finished turn never blocks the next.
pub fn turn_unit(conv: &str, alias: &str, turn: u32) -> String {
    format!("conv-{conv}-{alias}-t{turn}")
}

impl Conversation {
    pub fn new(name: &str, with: &[With], now: String) -> Result<Conversation> {
        names::check("conversation name", name)?;
        if with.is_empty() {
            return Err(VfError::usage("a conversation needs at least one --with"));
        }
        let mut participants: Vec<Participant> = Vec::new();
        for With {
            engine,
            alias,
            model,
        } in with
        {
            if participants.iter().any(|p| &p.alias == alias) {
                return Err(VfError::usage(format!(
                    "participant alias {alias:?} is used twice; name one `{engine}:OTHER`"
                )));
            }
            // The longest unit name a turn can get must be a valid unit name.
            names::check("unit name", &turn_unit(name, alias, 99999))
                .map_err(|_| VfError::usage(format!(
                    "conversation {name:?} with participant {alias:?}: the names are too long for the turn units (conv-NAME-ALIAS-tN, at most {} bytes)",
                    names::MAX_NAME_LEN
                )))?;
            participants.push(Participant {
                alias: alias.clone(),
                engine: *engine,
                model: model.clone(),
                cursor: 0,
                binding: None,
                turns: 0,
                last_delivery: None,
                handoff_seen: None,
                pending: None,
            });
        }
        Ok(Conversation {
            format: FORMAT,
            name: name.to_string(),
            created_at: now,
            participants,
            transcript: Vec::new(),
            handoff: None,
        })
    }

    pub fn participant(&self, alias: &str) -> Result<&Participant> {
        self.participants
            .iter()
            .find(|p| p.alias == alias)
            .ok_or_else(|| {
                VfError::usage(format!(
                    "conversation {:?} has no participant {}; it has: {}",
                    self.name,
                    crate::ground::text::shown(alias, 40),
                    self.aliases().join(", ")
                ))
            })
    }

    pub fn participant_mut(&mut self, alias: &str) -> Result<&mut Participant> {
        self.participant(alias)?;
        Ok(self
            .participants
            .iter_mut()
            .find(|p| p.alias == alias)
            .expect("checked above"))
    }

    pub fn aliases(&self) -> Vec<String> {
        self.participants.iter().map(|p| p.alias.clone()).collect()
    }

    fn push(&mut self, mut e: Entry) -> u64 {
        e.id = self.transcript.len() as u64 + 1;
        e.sha256 = sha256_hex(e.text.as_bytes());
        let id = e.id;
        self.transcript.push(e);
        id
    }

    /// The user message of a `say` that a killed vf left unanswered, when
    /// the same `say` (same text, same addressees) is run again: the last
    /// user entry, if it matches and one of `pending` (the participants whose
    /// turn was left pending) has not been delivered it yet.
    pub fn interrupted_say(&self, to: &[String], text: &str, pending: &[String]) -> Option<u64> {
        let last = self
            .transcript
            .iter()
            .rev()
            .find(|e| e.kind == EntryKind::User)?;
        let same = last.to == to && last.text == text;
        let unanswered = self
            .participants
            .iter()
            .any(|p| pending.contains(&p.alias) && to.contains(&p.alias) && p.cursor < last.id);
        (same && unanswered).then_some(last.id)
    }

    /// Appends a user message addressed to `to`; returns its id.
    pub fn add_user(&mut self, to: &[String], text: &str) -> u64 {
        self.push(Entry {
            id: 0,
            kind: EntryKind::User,
            from: "user".into(),
            to: to.to_vec(),
            text: text.to_string(),
            sha256: String::new(),
            turn: None,
            engine: None,
            session_id: None,
            delivery: None,
        })
    }

    /// Appends `alias`'s answer to its turn `turn`; returns its id.
    pub fn add_response(
        &mut self,
        alias: &str,
        turn: u32,
        text: &str,
        session_id: Option<String>,
    ) -> Result<u64> {
        let engine = self.participant(alias)?.engine;
        Ok(self.push(Entry {
            id: 0,
            kind: EntryKind::Response,
            from: alias.to_string(),
            to: Vec::new(),
            text: text.to_string(),
            sha256: String::new(),
            turn: Some(turn),
            engine: Some(engine),
            session_id,
            delivery: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_unanswered_say_is_continued() {
        let with = [
            With::new(EngineId::Codex, "a"),
            With::new(EngineId::Claude, "b"),
        ];
        let mut c = Conversation::new("c", &with, "t0".into()).unwrap();
        let both = c.aliases();
        let pending = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Nothing said yet.
        assert_eq!(c.interrupted_say(&both, "Q", &pending(&["a"])), None);
        let id = c.add_user(&both, "Q");
        // `a` answered before the crash; `b` was left pending.
        c.add_response("a", 1, "A", None).unwrap();
        c.participant_mut("a").unwrap().cursor = id;
        assert_eq!(c.interrupted_say(&both, "Q", &pending(&["b"])), Some(id));
        // Other text, other addressees, or no turn left pending: a new message.
        assert_eq!(c.interrupted_say(&both, "Q2", &pending(&["b"])), None);
        assert_eq!(c.interrupted_say(&both[1..], "Q", &pending(&["b"])), None);
        assert_eq!(c.interrupted_say(&both, "Q", &[]), None);
        // The pending one had been delivered it (its answer was settled).
        assert_eq!(c.interrupted_say(&both, "Q", &pending(&["a"])), None);
    }
}
