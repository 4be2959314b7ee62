//! The quota governor (docs/QUOTA.md): one per engine and account, shared
//! by every vf process on this machine through the ledger file. Every start
//! of an engine asks it first ([`admit`]); every run's end and every quota
//! frame an engine prints teach it ([`learn_limit`], [`learn_signal`],
//! [`learn_ok`]).
//!
//! - `entry`: one account's line in the ledger (its hold, window, release);
//! - `gate`: the rules, pure (hold, pause at `pause_at`, staggered release);
//! - `ledger`: the file, its lock, and the process-local fallback;
//! - `accounts`: declared accounts, the variables they may set, the order
//!   a unit tries them in.

use std::time::Duration;

pub mod accounts;
pub mod entry;
pub mod gate;
pub mod ledger;

pub use crate::engine::frames::QuotaSignal as Signal;
pub use crate::ground::held::{HeldBy, HoldKind};
pub use accounts::{Account, DEFAULT_ACCOUNT, Rule};
pub use entry::Entry;
pub use gate::{Gate, Limits};
pub use ledger::Warning;

use crate::engine::EngineId;
use crate::ground::env::EnvVars;
use gate::Learned;

/// What a unit's runs are governed by (its `UnitSpec`'s).
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The account chosen for this run (`None`: the engine's default one).
    pub account: Option<Account>,
    pub limits: Limits,
    /// Every declared account (a reviewer of another engine picks among its own).
    pub accounts: Vec<Account>,
    pub rule: Rule,
    /// The caller took the first start already ([`admit`]): the run's first
    /// attempt does not ask again (it would meet its own stagger).
    pub admitted: Admitted,
}

/// A start taken by whoever launched the unit, spent by its first attempt.
#[derive(Clone, Default)]
pub struct Admitted(Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl Admitted {
    /// A start taken now.
    pub fn taken() -> Admitted {
        Admitted(Some(std::sync::Arc::new(true.into())))
    }

    /// True once: the attempt that spends the start.
    pub fn spend(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .as_ref()
            .is_some_and(|a| a.swap(false, Ordering::AcqRel))
    }
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Admitted(taken)"
        } else {
            "Admitted(none)"
        })
    }
}

/// Whether a start was taken is not part of what a unit asked.
impl PartialEq for Admitted {
    fn eq(&self, _: &Admitted) -> bool {
        true
    }
}

impl Default for Ask {
    /// No account declared, no `pause_at`, the default `stagger` (scaled
    /// for tests as every wait is).
    fn default() -> Ask {
        Ask {
            account: None,
            limits: Limits {
                pause_at: None,
                stagger_ms: scaled_ms(gate::DEFAULT_STAGGER),
            },
            accounts: Vec::new(),
            rule: Rule::default(),
            admitted: Admitted::default(),
        }
    }
}

impl Ask {
    /// The ledger's name of the chosen account.
    pub fn account_name(&self) -> &str {
        self.account.as_ref().map_or(DEFAULT_ACCOUNT, |a| &a.name)
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// The real length of a wait of `d`: scaled down only by the test variable
/// (`VF_TEST_RATE_LIMIT_WAIT_SCALE`).
pub fn scaled(d: Duration) -> Duration {
    match std::env::var(EnvVars::VF_TEST_RATE_LIMIT_WAIT_SCALE)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
    {
        Some(f) if (0.0..=1.0).contains(&f) => d.mul_f64(f),
        _ => d,
    }
}

fn scaled_ms(d: Duration) -> u64 {
    scaled(d).as_millis() as u64
}

/// The shared back-off after `n` refusals in a row with no known reset: 1 s
/// doubling to 15 minutes.
pub fn backoff(n: u32) -> Duration {
    Duration::from_secs(1u64 << n.min(10)).min(Duration::from_secs(15 * 60))
}

fn on_entry<T>(
    engine: EngineId,
    account: &str,
    mut f: impl FnMut(&mut Entry) -> T,
) -> (T, Warning) {
    ledger::update(|entries| {
        let i = match entries
            .iter()
            .position(|e| e.key() == (engine.as_str(), account))
        {
            Some(i) => i,
            None => {
                entries.push(Entry::new(engine.as_str(), account));
                entries.len() - 1
            }
        };
        f(&mut entries[i])
    })
}

/// Whether `engine` may start on `account` now, without taking a start.
pub fn check(engine: EngineId, account: &str, lim: &Limits) -> (Result<(), Box<HeldBy>>, Warning) {
    let now = now_ms();
    on_entry(engine, account, |e| match gate::gate(e, now, lim) {
        Gate::Open { .. } => Ok(()),
        Gate::Held { until, kind } => Err(Box::new(gate::held_by(e, until, kind))),
    })
}

/// Takes a start of `engine` on `account`, or says what holds it. A start
/// after a hold is noted, so the next waits its `stagger`.
pub fn admit(engine: EngineId, account: &str, lim: &Limits) -> (Result<(), Box<HeldBy>>, Warning) {
    let now = now_ms();
    on_entry(engine, account, |e| {
        let g = gate::gate(e, now, lim);
        gate::started(e, now, &g);
        match g {
            Gate::Open { .. } => Ok(()),
            Gate::Held { until, kind } => Err(Box::new(gate::held_by(e, until, kind))),
        }
    })
}

/// The account a run of `engine` starts on: the first of the unit's
/// candidates (`prefer`, the account its session belongs to, first) that is
/// open; with `rotate = false` only the first of them. When
/// every one is held, the hold that ends first. `Ok(None)`: no account
/// declared, and the default one is open.
pub fn choose(
    ask: &Ask,
    engine: EngineId,
    prefer: Option<&str>,
) -> (Result<Option<Account>, Box<HeldBy>>, Vec<String>) {
    let mut warnings = Vec::new();
    let cands = accounts::candidates(&ask.accounts, engine, &ask.rule, prefer);
    if cands.is_empty() {
        let (r, w) = check(engine, DEFAULT_ACCOUNT, &ask.limits);
        warnings.extend(w);
        return (r.map(|()| None), warnings);
    }
    // `rotate = false`: the unit's own account only (its session's, else
    // the first declared), held or not.
    let tries = if ask.rule.no_rotate { 1 } else { cands.len() };
    let mut first_free: Option<Box<HeldBy>> = None;
    for a in cands.into_iter().take(tries) {
        let (r, w) = check(engine, &a.name, &ask.limits);
        warnings.extend(w);
        match r {
            Ok(()) => return (Ok(Some(a.clone())), warnings),
            Err(h) if first_free.as_ref().is_none_or(|f| h.until < f.until) => first_free = Some(h),
            Err(_) => {}
        }
    }
    (Err(first_free.expect("at least one candidate")), warnings)
}

/// A run of `engine` on `account` ended refused by the provider; `retry_at`
/// (RFC 3339) is the reset when the engine named one.
pub fn learn_limit(
    engine: EngineId,
    account: &str,
    unit: &str,
    retry_at: Option<&str>,
    source: &str,
) -> Warning {
    let now = now_ms();
    let reset = retry_at
        .and_then(entry::parse_ms)
        .map(|at| now + scaled_ms(Duration::from_millis(at.saturating_sub(now))));
    let by = Learned { now, unit, source };
    let backoff = |n| scaled_ms(backoff(n));
    on_entry(engine, account, |e| {
        gate::learn_limit(e, reset, backoff, by)
    })
    .1
}

/// A quota frame of a running unit.
pub fn learn_signal(engine: EngineId, account: &str, unit: &str, signal: &Signal) -> Warning {
    let now = now_ms();
    let mut s = signal.clone();
    s.resets_at = s
        .resets_at
        .map(|at| now + scaled_ms(Duration::from_millis(at.saturating_sub(now))));
    let source = format!("{} ({engine})", signal.source);
    let by = Learned {
        now,
        unit,
        source: &source,
    };
    on_entry(engine, account, |e| gate::learn_signal(e, &s, by)).1
}

/// A run that started at `started_ms` ended done: the account is open.
pub fn learn_ok(engine: EngineId, account: &str, started_ms: u64) -> Warning {
    on_entry(engine, account, |e| gate::learn_ok(e, started_ms)).1
}

/// Drops the entries of `engine` (every engine: `None`) and `account`
/// (every account: `None`); returns what was dropped.
pub fn clear(engine: Option<&str>, account: Option<&str>) -> (Vec<Entry>, Warning) {
    ledger::update(|entries| {
        let hit = |e: &Entry| {
            engine.is_none_or(|x| x == e.engine) && account.is_none_or(|x| x == e.account)
        };
        let (gone, kept) = std::mem::take(entries).into_iter().partition(hit);
        *entries = kept;
        gone
    })
}

/// Unit `unit` of `state_dir` waits on `engine`'s `account` (`on`), or no
/// longer does: `vf quota` lists the waiters of every vf process.
pub fn waiting(
    engine: EngineId,
    account: &str,
    (unit, state_dir): (&str, &std::path::Path),
    on: bool,
) -> Warning {
    let me = crate::ground::procinfo::ProcIdentity::current();
    let dir = state_dir.display().to_string();
    on_entry(engine, account, |e| {
        e.drop_dead_waiters();
        e.waiting
            .retain(|w| !(w.unit == unit && w.state_dir == dir && w.owner == me));
        if on {
            e.waiting.push(entry::Waiter {
                unit: unit.to_string(),
                state_dir: dir.clone(),
                owner: me.clone(),
                since: now_ms(),
            });
        }
    })
    .1
}

/// Every entry as it stands.
pub fn entries() -> (Vec<Entry>, Warning) {
    ledger::read()
}
