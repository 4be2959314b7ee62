//! The workflow's queue under its quota governor, without a server: the
//! run loop's steps (claim, start what is due, settle) driven by hand.

use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::engine::EngineId;
use crate::ground::held::{HeldBy, HoldKind};
use crate::plan::ratelimit::Policy;
use crate::plan::temporal::payload::UnitInput;

const T0: u64 = 1_800_000_000_000;
const STAGGER: u64 = 1_000;

fn unit(name: &str, engine: EngineId) -> UnitInput {
    UnitInput {
        name: name.into(),
        depends_on: Vec::new(),
        engine,
        toml: String::new(),
        retries: 0,
        stall_ms: None,
        timeout_ms: None,
        rate_limit: Policy::default(),
        merge: Vec::new(),
        fetch_from: Default::default(),
        model: None,
        stagger_ms: Some(STAGGER),
    }
}

/// Three claude units and a codex one, two at once.
fn driver() -> Driver {
    use EngineId::{Claude, Codex};
    let units = vec![
        unit("c1", Claude),
        unit("c2", Claude),
        unit("c3", Claude),
        unit("x", Codex),
    ];
    let input = PlanInput {
        plan: "plan.toml".into(),
        units,
        parallel: 2,
        task_queue: "q".into(),
        cost_usd: None,
        tokens: None,
        affinity_ms: 1_000,
        history_limit: 10_000,
        carried: Vec::new(),
        runs_before: 0,
        quota: Governor::default(),
    };
    Driver::new(&input, "wf".into())
}

/// The claude account held until the returned time (the engine's reset,
/// scaled as every wait is).
fn hold_claude(d: &mut Driver, now: u64, after: u64) -> u64 {
    let at = crate::quota::entry::rfc3339_ms(now + after);
    d.gov
        .learn_limit((EngineId::Claude, "default"), "c0", Some(&at), (now, "h1"));
    now + holds::scaled_ms(Duration::from_millis(after))
}

/// What is due at `now`, each counted as started (as the loop's `attempt`).
fn start_due(d: &mut Driver, now: u64) -> Vec<String> {
    let due = d.due(now).unwrap();
    d.inflight += due.len();
    due.into_iter().map(|(_, o)| o.unit).collect()
}

fn held(d: &Driver, i: usize) -> Option<HoldKind> {
    d.units[i].row.held_by.as_ref().map(|h| h.kind)
}

/// Held units wait in the workflow, shown held, and take no room: the
/// plan's other engine runs meanwhile. At the reset they start one per
/// `stagger`, within `--jobs`.
#[test]
fn held_units_wait_take_no_room_and_start_one_per_stagger_at_the_reset() {
    let mut d = driver();
    let reset = hold_claude(&mut d, T0, 60_000);
    d.sweep().unwrap();
    assert!(start_due(&mut d, T0).is_empty());
    assert_eq!(
        (held(&d, 0), held(&d, 1)),
        (Some(HoldKind::RateLimited), Some(HoldKind::RateLimited))
    );
    assert_eq!(d.units[0].row.state, RunState::Waiting);
    // Held, they take no room: the next claude unit is claimed (and
    // held), and the codex unit runs.
    d.sweep().unwrap();
    assert_eq!(start_due(&mut d, T0), ["x"]);
    assert_eq!(held(&d, 2), Some(HoldKind::RateLimited));
    assert_eq!(d.wake(T0), Some(reset));
    assert!(start_due(&mut d, reset - 1).is_empty());
    // The reset: one start (room for one beside x), the next a stagger on.
    assert_eq!(start_due(&mut d, reset), ["c1"]);
    d.inflight -= 1; // x ended
    assert!(start_due(&mut d, reset + 1).is_empty());
    assert_eq!(held(&d, 1), Some(HoldKind::Stagger));
    assert_eq!(d.wake(reset + 1), Some(reset + STAGGER));
    assert_eq!(start_due(&mut d, reset + STAGGER), ["c2"]);
    // --jobs 2: c3 waits for room, not for the governor.
    assert!(start_due(&mut d, reset + 2 * STAGGER).is_empty());
    d.inflight -= 1;
    assert_eq!(start_due(&mut d, reset + 2 * STAGGER), ["c3"]);
    assert!(d.queue.is_empty());
}

/// If the first unit let through at the reset meets the limit again, the
/// others stay held until the new reset.
#[test]
fn the_first_start_limited_again_keeps_the_others_held() {
    let mut d = driver();
    let reset = hold_claude(&mut d, T0, 10_000);
    d.sweep().unwrap();
    assert!(start_due(&mut d, T0).is_empty());
    assert_eq!(start_due(&mut d, reset), ["c1"]);
    let again = hold_claude(&mut d, reset + 10, 30_000);
    d.inflight -= 1;
    assert!(start_due(&mut d, reset + 5 * STAGGER).is_empty());
    assert_eq!(held(&d, 1), Some(HoldKind::RateLimited));
    assert_eq!(d.wake(reset + 5 * STAGGER), Some(again));
    assert_eq!(start_due(&mut d, again), ["c2"]);
}

/// A start a worker's own ledger refused is no attempt: the row and the
/// count of tries are as before, and the unit waits, held in the workflow
/// for every worker, until the time the worker's ledger gave.
#[test]
fn a_workers_refusal_is_no_attempt_and_holds_the_unit_in_the_workflow() {
    let mut d = driver();
    d.sweep().unwrap();
    let due = d.due(T0).unwrap();
    assert_eq!(due.len(), 2);
    let (i, order) = due.into_iter().next().unwrap();
    // What `attempt` does before the activity runs.
    d.before[i] = Some((d.units[i].row.clone(), order.clone()));
    d.units[i]
        .row
        .start(crate::plan::scheduler::StartMode::Fresh)
        .unwrap();
    d.units[i].tries += 1;
    d.inflight += 1;
    let until = T0 + 42_000;
    let by = HeldBy {
        engine: "claude".into(),
        account: "default".into(),
        until: crate::quota::entry::rfc3339_ms(until),
        kind: HoldKind::Paused,
        unit: Some("other".into()),
        source: Some("rate_limit_event".into()),
        utilization: Some(95.0),
        window: Some("five_hour".into()),
    };
    let mut row = UnitReport::running("c1", EngineId::Claude, None, 1);
    row.fail(Reason::RateLimited, by.to_string()).unwrap();
    let out = Outcome {
        row,
        exit: crate::ground::error::exit::RATE_LIMITED,
        host: "h2".into(),
        retry_at: None,
        answers: Vec::new(),
        held: Some(by),
    };
    let now = UNIX_EPOCH + Duration::from_millis(T0 + 5);
    d.settle(i, Ok(out), (Some(now), 0.5)).unwrap();
    let u = &d.units[i];
    assert_eq!(
        (u.row.state, u.row.ran, u.tries),
        (RunState::Waiting, false, 0)
    );
    assert_eq!(u.row.reason, None);
    assert_eq!(d.inflight, 0);
    assert!(d.busy[i]);
    assert!(start_due(&mut d, T0 + 10).is_empty());
    assert_eq!(held(&d, i), Some(HoldKind::Paused));
    assert_eq!(d.wake(T0 + 10), Some(until));
    let again = start_due(&mut d, until);
    assert_eq!(again, ["c1"]);
}

/// Cancelled, the queued units are dropped: a first attempt's row is left
/// waiting (reported not started), not held; a queued retry's row is its
/// last attempt's end again.
#[test]
fn a_cancel_drops_the_queued_units() {
    let mut d = driver();
    hold_claude(&mut d, T0, 60_000);
    d.sweep().unwrap();
    assert!(start_due(&mut d, T0).is_empty());
    // x's attempt was handed back (a stopped worker): its retry is queued.
    let x = 3;
    let row = &mut d.units[x].row;
    *row = UnitReport::running("x", EngineId::Codex, None, 1);
    row.fail(Reason::Interrupted(None), "stopped".into())
        .unwrap();
    d.ended[x] = Some(row.clone());
    row.again().unwrap();
    d.units[x].tries = 1;
    d.busy[x] = true;
    let order = d.order(x, Start::Fresh);
    d.queue.push(Queued {
        unit: x,
        order,
        not_before: T0 + 1_000,
        held_until: None,
    });
    d.drop_queued(true).unwrap();
    assert!(d.queue.is_empty() && d.settled());
    let p = d.progress(true).unwrap();
    let states: Vec<_> = p
        .units
        .iter()
        .map(|u| (u.state, u.reason, u.held_by.is_some()))
        .collect();
    let never = (RunState::NotStarted, None, false);
    let retry = (RunState::Failed, Some(Reason::Interrupted(None)), false);
    assert_eq!(states, [never, never, never, retry]);
    assert_eq!(p.units[x].error.as_deref(), Some("stopped"));
}
