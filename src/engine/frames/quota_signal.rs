//! What an engine says of its quota while it runs (claude's
//! `rate_limit_event`), as the projector reads it from the frames its
//! manifest names (`QuotaFrame`). The governor (`crate::quota`) learns it.

use serde::Serialize;

/// One reading of an engine's window.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signal {
    /// `allowed`, `allowed_warning` or `rejected`.
    pub status: Option<String>,
    /// Percent (0–100).
    pub utilization: Option<f64>,
    /// The window's name (`five_hour`).
    pub window: Option<String>,
    /// When the window resets, epoch milliseconds.
    pub resets_at: Option<u64>,
    /// The frame it came from (`rate_limit_event`).
    pub source: String,
}

impl Signal {
    /// The engine refused: the wall itself.
    pub fn rejected(&self) -> bool {
        self.status.as_deref() == Some("rejected")
    }

    /// Whether the window is at or past `pause_at` percent: the figure when
    /// there is one, else a warning status counts as reaching it.
    pub fn reaches(&self, pause_at: f64) -> bool {
        match self.utilization {
            Some(u) => u >= pause_at,
            None => matches!(self.status.as_deref(), Some("allowed_warning" | "rejected")),
        }
    }
}
