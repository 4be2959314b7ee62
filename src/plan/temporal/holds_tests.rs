use super::*;

const CODEX: EngineId = EngineId::Codex;
const T0: u64 = 1_800_000_000_000;

fn lim(stagger_ms: u64) -> Limits {
    Limits {
        pause_at: None,
        stagger_ms,
    }
}

/// RFC 3339 of `ms` (an engine's `retryAt`).
fn at(ms: u64) -> String {
    crate::quota::entry::rfc3339_ms(ms)
}

/// Teaches `g` a limit of codex/default from `unit` at `now` whose reset
/// the engine names `after` ms later; the hold's end (waits are scaled).
fn limit(g: &mut Governor, unit: &str, now: u64, after: u64) -> u64 {
    g.learn_limit(
        (CODEX, "default"),
        unit,
        Some(&at(now + after)),
        (now, "h1"),
    );
    now + scaled_ms(Duration::from_millis(after))
}

fn held_until(r: Result<(), Box<HeldBy>>) -> (u64, HoldKind) {
    let h = r.expect_err("held");
    let until = crate::quota::entry::parse_ms(&h.until).unwrap();
    (until, h.kind)
}

/// A limit learned from one unit's attempt holds that engine's account
/// for every unit of the plan until the reset; other engines and accounts
/// stay open, and a unit whose account is not known yet is held too (the
/// plan knows no other account of the engine).
#[test]
fn a_limit_holds_its_engine_and_account_for_every_unit_until_the_reset() {
    let mut g = Governor::default();
    assert_eq!(g.admit(CODEX, None, T0, &lim(5_000)), Ok(()));
    let reset = limit(&mut g, "a", T0, 60_000);
    let h = g
        .admit(CODEX, Some("default"), T0 + 1, &lim(5_000))
        .unwrap_err();
    assert_eq!(
        (
            h.engine.as_str(),
            h.account.as_str(),
            h.kind,
            h.unit.as_deref()
        ),
        ("codex", "default", HoldKind::RateLimited, Some("a"))
    );
    assert_eq!(h.until, at(reset));
    assert!(h.source.unwrap().contains("worker h1"));
    assert_eq!(
        held_until(g.admit(CODEX, None, reset - 1, &lim(5_000))).0,
        reset
    );
    assert_eq!(g.admit(EngineId::Claude, None, T0, &lim(5_000)), Ok(()));
    assert_eq!(g.admit(CODEX, Some("work"), T0, &lim(5_000)), Ok(()));
    // The order tells the workers which accounts are held.
    let held = g.held_of(CODEX, T0 + 1);
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].account, "default");
    assert!(g.held_of(CODEX, reset).is_empty());
    assert!(g.held_of(EngineId::Claude, T0).is_empty());
}

/// At the reset the held units start one at a time, `stagger` apart; a
/// run done after the release opens the account for all again.
#[test]
fn at_the_reset_held_units_start_one_per_stagger() {
    let mut g = Governor::default();
    let reset = limit(&mut g, "a", T0, 10_000);
    let l = lim(5_000);
    assert_eq!(g.admit(CODEX, None, reset, &l), Ok(()));
    // The second waits out the stagger from the first start.
    assert_eq!(
        held_until(g.admit(CODEX, None, reset + 1, &l)),
        (reset + 5_000, HoldKind::Stagger)
    );
    assert_eq!(
        held_until(g.admit(CODEX, None, reset + 4_999, &l)),
        (reset + 5_000, HoldKind::Stagger)
    );
    assert_eq!(g.admit(CODEX, None, reset + 5_000, &l), Ok(()));
    assert!(g.admit(CODEX, None, reset + 5_001, &l).is_err());
    // A run started after the release ended done: open for everyone.
    g.learn_ok(CODEX, "default", reset);
    assert_eq!(g.admit(CODEX, None, reset + 5_002, &l), Ok(()));
    assert_eq!(g.admit(CODEX, None, reset + 5_003, &l), Ok(()));
    g.prune();
    assert!(g.entries.is_empty(), "{:?}", g.entries);
}

/// If the first unit let through at the reset is limited again, the rest
/// stay held until the new reset.
#[test]
fn the_first_start_limited_again_keeps_the_rest_held() {
    let mut g = Governor::default();
    let reset = limit(&mut g, "a", T0, 10_000);
    let l = lim(1_000);
    assert_eq!(g.admit(CODEX, None, reset, &l), Ok(()));
    let again = limit(&mut g, "b", reset + 500, 30_000);
    for t in [reset + 1_000, again - 1] {
        let (until, kind) = held_until(g.admit(CODEX, None, t, &l));
        assert_eq!((until, kind), (again, HoldKind::RateLimited), "at {t}");
    }
    assert_eq!(g.admit(CODEX, None, again, &l), Ok(()));
}

/// A limit with no reset named holds for the shared back-off, which grows
/// with each refusal in a row.
#[test]
fn no_reset_named_is_the_shared_back_off() {
    let mut g = Governor::default();
    g.learn_limit((CODEX, "default"), "a", None, (T0, "h1"));
    let first = held_until(g.admit(CODEX, None, T0, &lim(0)));
    assert_eq!(
        first,
        (T0 + scaled_ms(crate::quota::backoff(0)), HoldKind::Backoff)
    );
    let later = first.0;
    assert_eq!(g.admit(CODEX, None, later, &lim(0)), Ok(()));
    g.learn_limit((CODEX, "default"), "a", None, (later, "h1"));
    let second = held_until(g.admit(CODEX, None, later, &lim(0)));
    assert_eq!(second.0, later + scaled_ms(crate::quota::backoff(1)));
    assert!(second.0 - later > first.0 - T0);
}

/// A worker's own ledger refused a start: the plan holds that account as
/// long, for every worker; a later, shorter fact never shortens it.
#[test]
fn a_workers_refusal_holds_the_account_for_the_plan() {
    let mut g = Governor::default();
    let until = T0 + 42_000;
    let held = HeldBy {
        engine: "codex".into(),
        account: "work".into(),
        until: at(until),
        kind: HoldKind::Paused,
        unit: Some("x".into()),
        source: Some("rate_limit_event".into()),
        utilization: Some(93.0),
        window: Some("five_hour".into()),
    };
    g.learn_held(CODEX, &held, (T0, "h2"));
    assert_eq!(
        held_until(g.admit(CODEX, Some("work"), T0 + 1, &lim(0))),
        (until, HoldKind::Paused)
    );
    // Unknown account: the only account the plan knows of is held.
    assert!(g.admit(CODEX, None, T0 + 1, &lim(0)).is_err());
    let shorter = HeldBy {
        until: at(T0 + 1_000),
        ..held.clone()
    };
    g.learn_held(CODEX, &shorter, (T0, "h1"));
    assert_eq!(
        held_until(g.admit(CODEX, Some("work"), T0 + 2, &lim(0))).0,
        until
    );
    // A refusal whose time is already past by the workflow's clock still
    // holds a moment: the order is not sent straight back.
    let past = HeldBy {
        until: at(T0 - 5_000),
        account: "other".into(),
        ..held
    };
    g.learn_held(CODEX, &past, (T0, "h1"));
    assert_eq!(
        held_until(g.admit(CODEX, Some("other"), T0, &lim(0))).0,
        T0 + MIN_HOLD_MS
    );
    // Another account of the engine is open: a unit of unknown account
    // goes (its worker chooses among the open ones).
    g.learn_ok(CODEX, "other", T0);
    let mut g2 = g.clone();
    g2.entries.push(Entry::new("codex", "spare"));
    assert_eq!(g2.admit(CODEX, None, T0 + 2, &lim(0)), Ok(()));
}

/// What the workflow carries across a continue-as-new keeps its holds.
#[test]
fn the_governor_travels_as_json() {
    let mut g = Governor::default();
    limit(&mut g, "a", T0, 9_000);
    let back: Governor = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
    assert_eq!(back, g);
}
