//! Progress notifications of a call that runs a unit: one per event row of
//! its jsonl, at most one per [`MIN_GAP`]; rows that come sooner are
//! coalesced into the next one sent, and the last one is always sent.

use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::time::Instant;

/// About four a second.
pub const MIN_GAP: Duration = Duration::from_millis(250);

/// The progress of one call (the client gave a progress token).
pub struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    rows: u64,
    last_sent: Option<Instant>,
    pending: Option<String>,
}

impl Progress {
    pub fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Progress {
        Progress {
            peer,
            token,
            rows: 0,
            last_sent: None,
            pending: None,
        }
    }

    /// One event row read: sent now, or kept for [`Progress::due`].
    pub async fn row(&mut self, row: &Value) {
        let Some(msg) = message(row) else { return };
        self.rows += 1;
        self.pending = Some(msg);
        if self.due().is_none_or(|at| at <= Instant::now()) {
            self.flush().await;
        }
    }

    /// When the kept row may go (`None`: nothing kept).
    pub fn due(&self) -> Option<Instant> {
        self.pending.as_ref()?;
        Some(self.last_sent.map_or_else(Instant::now, |t| t + MIN_GAP))
    }

    /// Sends the kept row, if any. A client that is gone is no error.
    pub async fn flush(&mut self) {
        let Some(msg) = self.pending.take() else {
            return;
        };
        self.last_sent = Some(Instant::now());
        let p =
            ProgressNotificationParam::new(self.token.clone(), self.rows as f64).with_message(msg);
        let _ = self.peer.notify_progress(p).await;
    }
}

/// `kind: first words` of an event row; `None` for the final result row.
pub fn message(row: &Value) -> Option<String> {
    let kind = row.get("kind")?.as_str()?;
    if kind.ends_with(".result") {
        return None;
    }
    let tool = row.pointer("/tools/0");
    let (kind, text) = match tool {
        Some(t) => {
            let input = t.get("inputSummary").and_then(|v| v.as_str()).unwrap_or("");
            let name = t.get("name").and_then(|v| v.as_str()).unwrap_or("");
            ("tool", if input.is_empty() { name } else { input })
        }
        None => (
            kind,
            ["text", "label", "message", "unit", "state"]
                .iter()
                .find_map(|k| row.get(*k).and_then(|v| v.as_str()))
                .unwrap_or(""),
        ),
    };
    let words: Vec<&str> = text.split_whitespace().take(8).collect();
    let mut m = format!("{kind}: {}", words.join(" "));
    if words.is_empty() {
        m = kind.to_string();
    }
    Some(crate::ground::text::cut(&m, 120).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_is_named_by_its_kind_and_first_words_and_the_result_row_is_not_progress() {
        let m = message(
            &json!({"kind": "toolBurst", "tools": [{"name": "shell", "inputSummary": "git status --short a b c d e f g h"}]}),
        );
        assert_eq!(m.as_deref(), Some("tool: git status --short a b c d e"));
        assert_eq!(message(&json!({"kind": "dispatch.result"})), None);
        assert_eq!(message(&json!({"no": 1})), None);
    }
}
