//! One engine account's line in the quota ledger: what vf learned of its
//! limit, and the phase it is in. Times are milliseconds since the epoch in
//! memory and RFC 3339 (UTC, milliseconds) in the file.

use serde::{Deserialize, Serialize};

use crate::ground::held::HoldKind;

/// What the engine said of its window the last time it said anything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    /// `allowed`, `allowed_warning` or `rejected`, as the engine names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Percent (0–100) of the window used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    /// The window's own name (`five_hour`, `seven_day`...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When the window resets.
    #[serde(default, with = "ms_opt", skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<u64>,
}

/// An engine account in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub engine: String,
    pub account: String,
    /// No start before this (a refusal by the provider).
    #[serde(default, with = "ms_opt", skip_serializing_if = "Option::is_none")]
    pub held_until: Option<u64>,
    /// What the hold is (`rate-limited` with a known reset, else `back-off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldKind>,
    /// Refusals in a row with no known reset (the back-off grows with them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub strikes: u32,
    /// The engine's last word on its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// A hold or pause ended: starts go one at a time until one succeeds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub releasing: bool,
    /// When the release began (a run started before it proves nothing).
    #[serde(default, with = "ms_opt", skip_serializing_if = "Option::is_none")]
    pub released_at: Option<u64>,
    /// The last start let through while releasing.
    #[serde(default, with = "ms_opt", skip_serializing_if = "Option::is_none")]
    pub last_start: Option<u64>,
    /// When the ledger learned the latest fact, and from whom.
    #[serde(default, with = "ms_opt", skip_serializing_if = "Option::is_none")]
    pub learned_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Where the fact came from (`rate_limit_event`, `exit 75`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The units held on it now, in any vf process (`vf quota` lists them);
    /// a waiter whose process is gone is dropped on the next update.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<Waiter>,
}

/// A unit that waits on an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiter {
    pub unit: String,
    /// The state dir the unit belongs to.
    pub state_dir: String,
    /// The vf process that holds it.
    pub owner: crate::ground::procinfo::ProcIdentity,
    #[serde(with = "ms")]
    pub since: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Entry {
    pub fn new(engine: &str, account: &str) -> Entry {
        Entry {
            engine: engine.to_string(),
            account: account.to_string(),
            held_until: None,
            hold: None,
            strikes: 0,
            window: None,
            releasing: false,
            released_at: None,
            last_start: None,
            learned_at: None,
            unit: None,
            source: None,
            waiting: Vec::new(),
        }
    }

    /// Nothing left to remember: the ledger drops it.
    pub fn is_idle(&self) -> bool {
        self.held_until.is_none()
            && self.window.is_none()
            && !self.releasing
            && self.strikes == 0
            && self.waiting.is_empty()
    }

    /// Drops the waiters whose vf process is provably gone (a `kill -9`).
    pub fn drop_dead_waiters(&mut self) {
        use crate::ground::procinfo::Liveness;
        self.waiting
            .retain(|w| w.owner.liveness() != Liveness::Dead);
    }

    pub fn key(&self) -> (&str, &str) {
        (&self.engine, &self.account)
    }
}

/// `Option<u64>` milliseconds as an RFC 3339 string; an unreadable one is none.
pub mod ms_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(ms) => s.serialize_str(&super::rfc3339_ms(*ms)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        Ok(s.as_deref().and_then(super::parse_ms))
    }
}

/// `u64` milliseconds as an RFC 3339 string (an unreadable one is 0).
pub mod ms {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::rfc3339_ms(*v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        Ok(super::parse_ms(&s).unwrap_or(0))
    }
}

/// RFC 3339 (UTC, milliseconds) of epoch milliseconds.
pub fn rfc3339_ms(ms: u64) -> String {
    crate::ground::fsutil::rfc3339(ms / 1000, (ms % 1000) as u32)
}

/// Epoch milliseconds of an RFC 3339 UTC timestamp (its first three
/// fraction digits count).
pub fn parse_ms(s: &str) -> Option<u64> {
    let secs = crate::ground::fsutil::parse_rfc3339(s)?;
    let frac = s.get(19..).and_then(|r| r.strip_prefix('.')).unwrap_or("");
    let digits: String = frac
        .chars()
        .take_while(char::is_ascii_digit)
        .chain(std::iter::repeat('0'))
        .take(3)
        .collect();
    Some(secs * 1000 + digits.parse::<u64>().unwrap_or(0))
}
