//! The quota ledger as vf shows it (`vf quota`, `vf status`, the report's
//! "Quota" section): each entry with the state the gate gives it now, for a
//! process that pauses at a given `pause_at`. The ledger records facts; the
//! state is decided here, on a copy, never written back.

use serde::Serialize;

use crate::quota::entry::{self, Entry};
use crate::quota::{Account, Gate, HeldBy, HoldKind, Limits, gate};

/// What an account is to a start asked for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Open,
    /// Utilization reached `pause_at` (or the engine warned): until the reset.
    Paused,
    /// Refused by the provider (a known reset, or the shared back-off).
    Held,
    /// A hold ended: the next start waits its `stagger`.
    Staggered,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Paused => "paused",
            State::Held => "held",
            State::Staggered => "staggered",
        }
    }
}

/// One engine account as shown: its ledger entry, its state and, when not
/// open, until when (epoch ms).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct View {
    #[serde(flatten)]
    pub entry: Entry,
    pub state: State,
    #[serde(
        with = "entry::ms_opt",
        skip_serializing_if = "Option::is_none",
        rename = "until"
    )]
    pub until: Option<u64>,
}

/// The state of `e` at `now` for a process governed by `lim`.
pub fn view(e: &Entry, now: u64, lim: &Limits) -> View {
    // `gate` ends what has expired on its way: on a copy, shown not kept.
    let mut copy = e.clone();
    let (state, until) = match gate::gate(&mut copy, now, lim) {
        Gate::Open { .. } => (State::Open, None),
        Gate::Held { until, kind } => (
            match kind {
                HoldKind::RateLimited | HoldKind::Backoff => State::Held,
                HoldKind::Paused => State::Paused,
                HoldKind::Stagger => State::Staggered,
            },
            Some(until),
        ),
    };
    View {
        entry: e.clone(),
        state,
        until,
    }
}

/// The ledger's entries to show. No ledger file yet: none, and nothing is
/// created (showing never makes the data dir or the lock file; `vf demo`
/// leaves HOME as it was). Anything else at its path is read, or refused
/// with the ledger's warning.
pub fn entries() -> (Vec<Entry>, crate::quota::Warning) {
    match crate::quota::ledger::path() {
        Some(p) if std::fs::symlink_metadata(&p).is_err() => (Vec::new(), None),
        _ => crate::quota::entries(),
    }
}

/// What holds `e` at `now` for a process governed by `lim`; `None`: open.
pub fn held_by(e: &Entry, now: u64, lim: &Limits) -> Option<HeldBy> {
    match gate::gate(&mut e.clone(), now, lim) {
        Gate::Open { .. } => None,
        Gate::Held { until, kind } => Some(gate::held_by(e, until, kind)),
    }
}

/// Every entry, then each declared account the ledger knows nothing of
/// (open), sorted by engine and account.
pub fn views(entries: &[Entry], declared: &[Account], now: u64, lim: &Limits) -> Vec<View> {
    let mut out: Vec<View> = entries.iter().map(|e| view(e, now, lim)).collect();
    for a in declared {
        let key = (a.engine.as_str(), a.name.as_str());
        if !entries.iter().any(|e| e.key() == key) {
            out.push(view(&Entry::new(key.0, key.1), now, lim));
        }
    }
    out.sort_by(|a, b| a.entry.key().cmp(&b.entry.key()));
    out
}

/// `2026-12-05 14:05:09` (UTC) of epoch milliseconds.
pub fn utc(ms: u64) -> String {
    entry::rfc3339_ms(ms)
        .get(..19)
        .unwrap_or_default()
        .replace('T', " ")
}

/// When the account's figure resets: its hold, else its window's reset.
pub fn reset_of(v: &View) -> Option<u64> {
    v.until
        .or(v.entry.held_until)
        .or(v.entry.window.as_ref().and_then(|w| w.resets_at))
}

/// `93 %` of the window's utilization, `-` when none was reported.
pub fn utilization(e: &Entry) -> String {
    e.window
        .as_ref()
        .and_then(|w| w.utilization)
        .map_or_else(|| "-".into(), |u| format!("{u:.0} %"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::entry::Window;

    const NOW: u64 = 1_800_000_000_000;

    fn lim(pause_at: Option<f64>) -> Limits {
        Limits {
            pause_at,
            ..Limits::default()
        }
    }

    #[test]
    fn each_phase_of_an_entry_has_its_state() {
        let mut held = Entry::new("claude", "work");
        (held.held_until, held.hold) = (Some(NOW + 60_000), Some(HoldKind::RateLimited));
        let v = view(&held, NOW, &lim(None));
        assert_eq!((v.state, v.until), (State::Held, Some(NOW + 60_000)));
        // Past its reset, a hold says nothing: open, and the entry is kept as read.
        let v = view(&held, NOW + 61_000, &lim(None));
        assert_eq!(v.state, State::Open);
        assert_eq!(v.entry, held);

        let mut warm = Entry::new("claude", "default");
        warm.window = Some(Window {
            status: Some("allowed".into()),
            utilization: Some(93.0),
            name: Some("five_hour".into()),
            resets_at: Some(NOW + 3_600_000),
        });
        assert_eq!(view(&warm, NOW, &lim(None)).state, State::Open);
        let v = view(&warm, NOW, &lim(Some(90.0)));
        assert_eq!((v.state, v.until), (State::Paused, Some(NOW + 3_600_000)));
        assert_eq!(view(&warm, NOW, &lim(Some(95.0))).state, State::Open);

        let mut rel = Entry::new("codex", "default");
        (rel.releasing, rel.released_at, rel.last_start) = (true, Some(NOW - 10), Some(NOW - 1));
        assert_eq!(view(&rel, NOW, &lim(None)).state, State::Staggered);
    }

    #[test]
    fn a_declared_account_with_no_entry_is_open_and_sorted_in() {
        let held = Entry::new("codex", "b");
        let declared = [Account {
            name: "a".into(),
            engine: crate::engine::EngineId::Codex,
            env: vec![("CODEX_HOME".into(), "/secret".into())],
        }];
        let v = views(&[held], &declared, NOW, &lim(None));
        let keys: Vec<_> = v.iter().map(|v| (v.entry.key(), v.state)).collect();
        assert_eq!(
            keys,
            [(("codex", "a"), State::Open), (("codex", "b"), State::Open)]
        );
        let json = serde_json::to_string(&v).unwrap();
        assert!(!json.contains("secret"), "{json}");
    }
}
