//! What holds an engine's account when the quota governor refuses a start
//! (`crate::quota`): plain data, so an error, a unit's row and a result can
//! carry it without knowing the governor.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an account is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldKind {
    /// A run was refused by the provider; its reset is known.
    RateLimited,
    /// A run was refused and the reset is unknown: the shared back-off.
    Backoff,
    /// Utilization reached `pause_at` (or the engine warned) before the wall.
    Paused,
    /// The hold has ended: starts go one at a time, `stagger` apart.
    Stagger,
}

impl HoldKind {
    pub fn name(self) -> &'static str {
        match self {
            HoldKind::RateLimited => "rate-limited",
            HoldKind::Backoff => "back-off",
            HoldKind::Paused => "paused",
            HoldKind::Stagger => "staggered",
        }
    }
}

/// An engine's account, held until `until`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldBy {
    pub engine: String,
    pub account: String,
    /// RFC 3339, UTC, with milliseconds.
    pub until: String,
    pub kind: HoldKind,
    /// The unit whose run taught the ledger, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Where the figure came from (`rate_limit_event`, `exit 75`...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The utilization (percent) that paused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    /// The window the engine named (`five_hour`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

impl HeldBy {
    /// `HH:MM:SS` of `until` (UTC), as the live table shows it.
    pub fn clock(&self) -> &str {
        self.until.get(11..19).unwrap_or(&self.until)
    }

    /// `quota: claude/work until 14:05:09`, the row's text.
    pub fn short(&self) -> String {
        format!(
            "quota: {}/{} until {}",
            self.engine,
            self.account,
            self.clock()
        )
    }
}

impl fmt::Display for HeldBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} is held ({}) until {} UTC",
            self.engine,
            self.account,
            self.kind.name(),
            self.clock()
        )?;
        if let (Some(u), Some(w)) = (self.utilization, &self.window) {
            write!(f, " at {u:.0} % of {w}")?;
        }
        if let Some(unit) = &self.unit {
            write!(f, ", learned from unit {unit}")?;
        }
        if let Some(s) = &self.source {
            write!(f, " ({s})")?;
        }
        write!(
            f,
            "; no run of {} on account {} starts before then (`vf quota clear {}/{}` drops the hold)",
            self.engine, self.account, self.engine, self.account
        )
    }
}
