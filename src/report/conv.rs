//! Conversations for the page: the public transcript (a private range is
//! never part of one), with the delivery mode of each answered turn.

use serde::Serialize;

use crate::conv::ConvStore;
use crate::conv::model::EntryKind;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConvRow {
    pub name: String,
    pub participants: Vec<ParticipantRow>,
    pub transcript: Vec<TurnRow>,
    /// Why the conversation could not be read (then nothing else is shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParticipantRow {
    pub alias: String,
    pub engine: String,
    pub model: Option<String>,
    pub turns: u32,
    pub last_delivery: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnRow {
    pub id: u64,
    /// `user` or `response`.
    pub kind: &'static str,
    pub from: String,
    pub to: Vec<String>,
    pub turn: Option<u32>,
    pub text: String,
    /// `exact-delta` or `full-history` (a response recorded by this vf).
    pub delivery: Option<&'static str>,
}

/// Every conversation of the state dir; an unreadable one is a row with its error.
pub fn rows(state_dir: &std::path::Path) -> Vec<ConvRow> {
    let store = ConvStore::new(state_dir);
    let names = store.list().unwrap_or_default();
    names
        .into_iter()
        .map(|name| match store.load(&name) {
            Ok(c) => ConvRow {
                name,
                participants: c
                    .participants
                    .iter()
                    .map(|p| ParticipantRow {
                        alias: p.alias.clone(),
                        engine: p.engine.to_string(),
                        model: p.model.clone(),
                        turns: p.turns,
                        last_delivery: p.last_delivery.map(|d| d.as_str()),
                    })
                    .collect(),
                transcript: c
                    .transcript
                    .iter()
                    .map(|e| TurnRow {
                        id: e.id,
                        kind: match e.kind {
                            EntryKind::User => "user",
                            EntryKind::Response => "response",
                        },
                        from: e.from.clone(),
                        to: e.to.clone(),
                        turn: e.turn,
                        text: e.text.clone(),
                        delivery: e.delivery.map(|d| d.as_str()),
                    })
                    .collect(),
                error: None,
            },
            Err(e) => ConvRow {
                name,
                participants: Vec::new(),
                transcript: Vec::new(),
                error: Some(e.to_string()),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::DeliveryMode;
    use crate::conv::model::{Conversation, With};
    use crate::engine::EngineId;

    #[test]
    fn a_transcript_with_each_answer_s_delivery_mode() {
        let t = tempfile::tempdir().unwrap();
        let with = [With::new(EngineId::Codex, "cx")];
        let mut c = Conversation::new("talk", &with, "2026-12-01T00:00:00.000Z".into()).unwrap();
        c.add_user(&["cx".to_string()], "<b>hi</b>");
        c.add_response("cx", 1, "hello", None).unwrap();
        c.transcript[1].delivery = Some(DeliveryMode::FullHistory);
        let store = ConvStore::new(t.path());
        std::fs::create_dir_all(store.dir("talk")).unwrap();
        store.save(&c).unwrap();
        let rows = serde_json::to_value(super::rows(t.path())).unwrap();
        assert_eq!(
            rows,
            serde_json::json!([{
                "name": "talk",
                "participants": [{"alias": "cx", "engine": "codex", "model": null, "turns": 0, "lastDelivery": null}],
                "transcript": [
                    {"id": 1, "kind": "user", "from": "user", "to": ["cx"], "turn": null, "text": "<b>hi</b>", "delivery": null},
                    {"id": 2, "kind": "response", "from": "cx", "to": [], "turn": 1, "text": "hello", "delivery": "full-history"},
                ],
            }])
        );
    }
}
